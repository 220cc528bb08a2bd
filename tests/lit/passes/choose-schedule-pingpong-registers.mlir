// DEFINE: %{pipeline} = propagate-axis-mapping,choose-schedule,tile-split,tile-merge,split-k,insert-persistent-loop,materialize-schedule,partition-warp-roles,carry-ring-positions,lower-schedule-to-hopper,convert-hopper-to-ptx,convert-scf-to-ptx,convert-arith-to-ptx
// RUN: mmcomp-opt %s -p %{pipeline} -t ptx | filecheck %s
// RUN: mmcomp-opt %s -p %{pipeline} -t ptx | python -m mmcomp.arch.ptxas - | filecheck %s --check-prefix=PTXAS

// A #sched.params that writes only some keys goes down to PTX like the same keywords of
// mmcomp.compile (see choose-schedule-pingpong.mlir).

// Ping-pong with the register epilogue written: the tile is still chosen (128x128x64, two
// m64 blocks per consumer, in 2x1 clusters on this larger problem), the epilogue kept.
func.func @pingpong_registers(%a: tensor<4096x512xbf16>, %w: tensor<14336x512xbf16>) -> tensor<4096x14336xbf16> attributes {sched.params = #sched.params<warp_specialization = pingpong, epilogue = registers>} {
  %y = fusion.linear %a, %w : (tensor<4096x512xbf16>, tensor<14336x512xbf16>) -> tensor<4096x14336xf32>
  %o = fusion.cast %y : tensor<4096x14336xf32> to tensor<4096x14336xbf16>
  func.return %o : tensor<4096x14336xbf16>
}
// CHECK-LABEL: .visible .entry pingpong_registers(
// CHECK:       .reqntid 384
// CHECK:       .multicast::cluster
// CHECK:       bar.sync 2, 256;
// CHECK:       bar.sync 1, 256;
// CHECK-COUNT-8: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// CHECK:       bar.arrive 1, 256;
// CHECK:       bar.arrive 2, 256;
// CHECK-NOT:   stmatrix
// CHECK:       st.global
// CHECK-NOT:   stmatrix
// CHECK:       ret;
// PTXAS:       pingpong_registers: {{.*}} 0 bytes spill stores, 0 bytes spill loads, 0 bytes stack
