// DEFINE: %{schedule} = propagate-axis-mapping,choose-schedule,tile-split,tile-merge,split-k,insert-persistent-loop,materialize-schedule
// DEFINE: %{hopper} = %{schedule},partition-warp-roles,carry-ring-positions,lower-schedule-to-hopper
// DEFINE: %{assemble} = import sys; from mmcomp.arch.ptxas import assemble_checked; r = assemble_checked(sys.stdin.read()); [print(e.entry, 'spills', e.spills, 'stack', e.stack_frame) for e in r.resources.values()]
// RUN: mmcomp-opt %s -p %{schedule} | filecheck %s --check-prefix=SCHED
// RUN: mmcomp-opt %s -p %{hopper} | filecheck %s
// RUN: mmcomp-opt %s -p %{hopper},convert-hopper-to-ptx,convert-scf-to-ptx,convert-arith-to-ptx -t ptx | filecheck %s --check-prefix=PTX
// RUN: mmcomp-opt %s -p %{hopper},convert-hopper-to-ptx,convert-scf-to-ptx,convert-arith-to-ptx -t ptx | python -c "%{assemble}" | filecheck %s --check-prefix=PTXAS

// gelu(A W^T + bias) + residual at the 128x256 tile: beside the 128 accumulators of a
// consumer thread, the whole tile's residual (128) and bias (64) do not fit its 232
// registers, so choose-schedule walks the epilogue in subtiles of 64 columns (32 + 16
// registers of operands).
func.func @gelu_residual(%a: tensor<256x512xbf16>, %w: tensor<512x512xbf16>, %bias: tensor<512xbf16>, %r: tensor<256x512xbf16>) -> tensor<256x512xbf16> attributes {sched.params = #sched.params<tile = 128x256x64, epilogue = registers, split_k = 1>} {
  %y = fusion.linear %a, %w, %bias : (tensor<256x512xbf16>, tensor<512x512xbf16>, tensor<512xbf16>) -> tensor<256x512xf32>
  %g = fusion.gelu %y approximate tanh : tensor<256x512xf32>
  %rf = fusion.cast %r : tensor<256x512xbf16> to tensor<256x512xf32>
  %s = fusion.add %g, %rf : tensor<256x512xf32>
  %o = fusion.cast %s : tensor<256x512xf32> to tensor<256x512xbf16>
  func.return %o : tensor<256x512xbf16>
}

// SCHED:      sched.params = #sched.params<tile = 128x256x64, warpgroup = 64x256,
// SCHED-SAME: epilogue = registers, epilogue_subtile = 64>

// The bias of the first subtile (8 column pairs) is loaded before the last wgmma group
// completes. Each subtile then loads its operands together before its stores: subtile 0
// the residual (8 pairs in each of 2 row slots), subtile 1 (columns 64 to 127: 128 bytes
// on) its bias and residual. Every guarded operand load is zero-filled.
// CHECK:          hopper.global_load %[[BIAS:.*]] if %{{.*}} {zero_fill} : (i64) -> (bf16, bf16)
// CHECK-COUNT-7:  hopper.global_load %[[BIAS]] if %{{.*}} {offset = {{.*}}, zero_fill}
// CHECK:          ptx.wgmma_wait 0
// CHECK-COUNT-16: hopper.global_load %{{.*}} if %{{.*}}zero_fill}
// CHECK-NOT:      hopper.global_load
// CHECK:          hopper.global_store
// CHECK:          hopper.global_load %[[BIAS]] if %{{.*}} {offset = 128, zero_fill}

// The loaded registers are set to 0 just before the guarded load writes them.
// PTX:      mov.b16 %[[LO:rs[0-9]+]], 0;
// PTX-NEXT: mov.b16 %[[HI:rs[0-9]+]], 0;
// PTX-NEXT: @%p{{[0-9]+}} ld.global.v2.b16 {%[[LO]], %[[HI]]}, [%rd{{[0-9]+}}];

// PTXAS: gelu_residual spills 0 stack 0
