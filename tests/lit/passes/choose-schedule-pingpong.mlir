// DEFINE: %{pipeline} = propagate-axis-mapping,choose-schedule,tile-split,tile-merge,split-k,insert-persistent-loop,materialize-schedule,partition-warp-roles,carry-ring-positions,lower-schedule-to-hopper,convert-hopper-to-ptx,convert-scf-to-ptx,convert-arith-to-ptx
// RUN: mmcomp-opt %s -p %{pipeline} -t ptx | filecheck %s
// RUN: mmcomp-opt %s -p %{pipeline} -t ptx | python -m mmcomp.arch.ptxas - | filecheck %s --check-prefix=PTXAS

// A #sched.params that writes only some keys goes down to PTX like the same keywords of
// mmcomp.compile: choose-schedule keeps the written keys and picks the rest, here a
// 64-row tile that ping-pong's two consumer warpgroups can each hold.

// Ping-pong alone: 64x64x64 tiles, the shared-memory epilogue.
func.func @pingpong(%a: tensor<1000x512xbf16>, %w: tensor<1000x512xbf16>) -> tensor<1000x1000xbf16> attributes {sched.params = #sched.params<warp_specialization = pingpong>} {
  %y = fusion.linear %a, %w : (tensor<1000x512xbf16>, tensor<1000x512xbf16>) -> tensor<1000x1000xf32>
  %o = fusion.cast %y : tensor<1000x1000xf32> to tensor<1000x1000xbf16>
  func.return %o : tensor<1000x1000xbf16>
}
// A producer and two consumers; named barriers 1 and 2 (256 threads: both consumers)
// order the consumers' mainloops.
// CHECK-LABEL: .visible .entry pingpong(
// CHECK:       .reqntid 384
// CHECK:       setmaxnreg.dec.sync.aligned.u32 40;
// CHECK:       setmaxnreg.inc.sync.aligned.u32 232;
// CHECK:       bar.sync 2, 256;
// CHECK:       bar.sync 1, 256;
// CHECK-COUNT-4: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16
// CHECK:       bar.arrive 1, 256;
// CHECK:       bar.arrive 2, 256;
// CHECK:       stmatrix.sync.aligned
// CHECK:       cp.async.bulk.tensor.2d.global.shared::cta.bulk_group
// PTXAS:       pingpong: {{.*}} 0 bytes spill stores, 0 bytes spill loads, 0 bytes stack
