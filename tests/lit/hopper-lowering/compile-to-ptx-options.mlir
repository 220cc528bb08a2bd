// RUN: mmcomp-opt %s -p 'compile-to-ptx{tile=128x128x64 stages=4 warp-specialization=pingpong}' -t ptx > %t.options
// RUN: filecheck %s < %t.options
// RUN: mmcomp-opt %s -t ptx -p 'propagate-axis-mapping,choose-schedule{tile=128x128x64 stages=4 warp-specialization=pingpong},tile-split,tile-merge,split-k,insert-persistent-loop,materialize-schedule,partition-warp-roles,carry-ring-positions,lower-schedule-to-hopper,convert-hopper-to-ptx,convert-scf-to-ptx,convert-arith-to-ptx' > %t.list
// RUN: cmp %t.options %t.list
// RUN: mmcomp-opt %s -p 'compile-to-ptx{tile=128x128x64 stages=4}' | filecheck %s --check-prefix=IR
// RUN: not mmcomp-opt %s -p 'compile-to-ptx{tile=128x128}' 2>&1 | filecheck %s --check-prefix=BAD

// compile-to-ptx takes choose-schedule's options and hands them to it: the PTX is that of
// the pass list written out with choose-schedule{...}. The heuristic alone would take
// 128x256x64 tiles here (wgmma m64n256k16).
// CHECK: .visible .entry linear(
// CHECK: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// CHECK-NOT: m64n256k16

// Four stages of a 128x64 A box and a 128x64 W box (32 KiB each stage): the barriers
// start at 4 x 32 KiB.
// IR: ptx.entry @linear(
// IR: ptx.const 131072 : !ptx.reg<u32>

// A malformed option is refused, naming it.
// BAD: compile-to-ptx: option tile=128x128: expected 3 integers, written NxNxN or N,N,N
func.func @linear(%a: tensor<2048x1024xbf16>, %w: tensor<4096x1024xbf16>) -> tensor<2048x4096xbf16> {
  %0 = fusion.linear %a, %w : (tensor<2048x1024xbf16>, tensor<4096x1024xbf16>) -> tensor<2048x4096xf32>
  %1 = fusion.cast %0 : tensor<2048x4096xf32> to tensor<2048x4096xbf16>
  func.return %1 : tensor<2048x4096xbf16>
}
