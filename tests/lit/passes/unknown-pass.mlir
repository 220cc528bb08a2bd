// RUN: not mmcomp-opt %s -p compile-to-pxt 2>&1 | filecheck %s
// RUN: not mmcomp-opt %s -p 'propagate-axis-mapping,choose-schedul{tile=128x128x64}' 2>&1 | filecheck %s --check-prefix=OPTIONS
// RUN: not mmcomp-opt %s -p no-such-pass 2>&1 | filecheck %s --check-prefix=FAR

// A pass name that is not registered gets the nearest registered names and the list of
// mmcomp's passes, before any pass runs.
// CHECK: mmcomp-opt: error: unknown pass 'compile-to-pxt'; did you mean 'compile-to-ptx'?
// CHECK-NEXT: mmcomp's passes: propagate-axis-mapping, choose-schedule, tile-split, tile-merge, insert-persistent-loop, split-k, materialize-schedule, partition-warp-roles, carry-ring-positions, lower-schedule-to-hopper, convert-arith-to-ptx, convert-hopper-to-ptx, convert-scf-to-ptx, compile-to-ptx
// CHECK-NEXT: (xDSL's own {{[0-9]+}} passes are registered too: mmcomp-opt --help lists every pass)

// OPTIONS: mmcomp-opt: error: unknown pass 'choose-schedul'; did you mean 'choose-schedule'?

// Nothing near: no guess, the list alone.
// FAR: mmcomp-opt: error: unknown pass 'no-such-pass'
// FAR-NOT: did you mean
// FAR: mmcomp's passes:
func.func @f(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = fusion.relu %a : tensor<4x8xf32>
  func.return %0 : tensor<4x8xf32>
}
