// DEFINE: %{schedule} = propagate-axis-mapping,choose-schedule,tile-split,tile-merge,split-k,insert-persistent-loop,materialize-schedule
// RUN: mmcomp-opt %s -p %{schedule} | mmcomp-opt -p lower-schedule-to-hopper --verify-diagnostics | filecheck %s --check-prefix=LOWER
// RUN: mmcomp-opt %s -p %{schedule} | mmcomp-opt -p convert-hopper-to-ptx --verify-diagnostics | filecheck %s --check-prefix=CONV-MAT
// RUN: mmcomp-opt %s -p %{schedule},partition-warp-roles | mmcomp-opt -p convert-hopper-to-ptx --verify-diagnostics | filecheck %s --check-prefix=CONV-PART
// RUN: mmcomp-opt %s -p %{schedule},partition-warp-roles | mmcomp-opt -p convert-arith-to-ptx --verify-diagnostics | filecheck %s --check-prefix=ARITH-PART
// RUN: mmcomp-opt %s -p %{schedule},partition-warp-roles | mmcomp-opt -p partition-warp-roles,carry-ring-positions,lower-schedule-to-hopper,convert-hopper-to-ptx,convert-scf-to-ptx,convert-arith-to-ptx | filecheck %s --check-prefix=DONE

// Kernels between the Hopper passes: a materialized kernel needs partition-warp-roles
// before lower-schedule-to-hopper, a partitioned one lower-schedule-to-hopper before
// convert-arith-to-ptx and convert-hopper-to-ptx. A kernel already partitioned is partitioned again, and the plain
// function beside the kernel goes through every pass untouched.
func.func @linear(%a: tensor<300x200xbf16>, %w: tensor<500x200xbf16>) -> tensor<300x500xbf16> {
  %y = fusion.linear %a, %w : (tensor<300x200xbf16>, tensor<500x200xbf16>) -> tensor<300x500xf32>
  %o = fusion.cast %y : tensor<300x500xf32> to tensor<300x500xbf16>
  func.return %o : tensor<300x500xbf16>
}
func.func @plain(%x: tensor<4xf32>) -> tensor<4xf32> {
  func.return %x : tensor<4xf32>
}
// LOWER: lower-schedule-to-hopper: @linear: no 'hopper.warp_roles' (a materialized kernel): run partition-warp-roles through carry-ring-positions first
// CONV-MAT: convert-hopper-to-ptx: @linear: not lowered to a hopper.kernel (a materialized kernel): run partition-warp-roles through lower-schedule-to-hopper first
// CONV-PART: convert-hopper-to-ptx: @linear: not lowered to a hopper.kernel (a partitioned kernel without ring positions): run carry-ring-positions through lower-schedule-to-hopper first
// ARITH-PART: convert-arith-to-ptx: @linear: not lowered to a ptx.module (a partitioned kernel without ring positions): run carry-ring-positions through convert-scf-to-ptx first
// DONE:      ptx.module
// DONE:      ptx.entry @linear
// DONE-NOT:  {{hopper\.|arith\.|unrealized_conversion_cast}}
// DONE:      func.func @plain(%x: tensor<4xf32>) -> tensor<4xf32> {
// DONE-NEXT:   func.return %x : tensor<4xf32>
