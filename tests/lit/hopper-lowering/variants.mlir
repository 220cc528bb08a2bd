// DEFINE: %{pipeline} = propagate-axis-mapping,tile-split,tile-merge,split-k,insert-persistent-loop,materialize-schedule,partition-warp-roles,carry-ring-positions,lower-schedule-to-hopper,convert-hopper-to-ptx,convert-scf-to-ptx,convert-arith-to-ptx
// RUN: mmcomp-opt %s --split-input-file -p %{pipeline} -t ptx | filecheck %s

// Ping-pong: each consumer warpgroup takes alternate tiles (a 128x128 tile is two m64
// blocks per warpgroup); named barriers 1 and 2 order their mainloops; each ring stage is
// released by one thread of the warpgroup that read it.
func.func @pingpong(%a: tensor<1000x512xbf16>, %w: tensor<1000x512xbf16>) -> tensor<1000x1000xbf16> attributes {sched.params = #sched.params<tile = 128x128x64, warp_specialization = pingpong, epilogue = registers, split_k = 1>} {
  %y = fusion.linear %a, %w : (tensor<1000x512xbf16>, tensor<1000x512xbf16>) -> tensor<1000x1000xf32>
  %o = fusion.cast %y : tensor<1000x1000xf32> to tensor<1000x1000xbf16>
  func.return %o : tensor<1000x1000xbf16>
}
// CHECK-LABEL: .visible .entry pingpong(
// CHECK:       .reqntid 384
// CHECK:       mbarrier.init.shared::cta.b64 [{{.*}}], 1;
// CHECK-NOT:   mbarrier.init.shared::cta.b64 [{{.*}}], {{[02-9]}};
// CHECK:       fence.mbarrier_init
// CHECK:       setmaxnreg.dec.sync.aligned.u32 40;
// CHECK:       setmaxnreg.inc.sync.aligned.u32 232;
// CHECK:       bar.sync 2, 256;
// CHECK:       bar.sync 1, 256;
// CHECK-COUNT-8: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// CHECK:       bar.arrive 1, 256;
// CHECK:       bar.arrive 2, 256;

// -----

// Non-specialized: two warpgroups, both compute; thread 0 also loads, stages - 1 K blocks
// ahead (a prologue, then one load per K block); no register split.
func.func @none(%a: tensor<1000x512xbf16>, %w: tensor<1000x512xbf16>) -> tensor<1000x1000xbf16> attributes {sched.params = #sched.params<tile = 128x128x64, stages = 4, warp_specialization = none, epilogue = registers, split_k = 1>} {
  %y = fusion.linear %a, %w : (tensor<1000x512xbf16>, tensor<1000x512xbf16>) -> tensor<1000x1000xf32>
  %o = fusion.cast %y : tensor<1000x1000xf32> to tensor<1000x1000xbf16>
  func.return %o : tensor<1000x1000xbf16>
}
// CHECK-LABEL: .visible .entry none(
// CHECK:       .maxnreg 255
// CHECK-NEXT:  .reqntid 256
// CHECK:       mbarrier.init.shared::cta.b64 [{{.*}}], 2;
// CHECK-NOT:   setmaxnreg
// CHECK-COUNT-3: mbarrier.arrive.expect_tx.shared::cta.b64
// CHECK:       wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// CHECK:       mbarrier.arrive.expect_tx.shared::cta.b64
// CHECK-NOT:   setmaxnreg

// -----

// Split-K: partial tiles to the f32 workspace, a counted arrival, the last slice reduces.
func.func @split(%a: tensor<300x2048xbf16>, %w: tensor<264x2048xbf16>) -> tensor<300x264xbf16> attributes {sched.params = #sched.params<tile = 128x128x64, split_k = 3, epilogue = registers>} {
  %y = fusion.linear %a, %w : (tensor<300x2048xbf16>, tensor<264x2048xbf16>) -> tensor<300x264xf32>
  %o = fusion.cast %y : tensor<300x264xf32> to tensor<300x264xbf16>
  func.return %o : tensor<300x264xbf16>
}
// CHECK-LABEL: .visible .entry split(
// CHECK:       wgmma.wait_group.sync.aligned 0;
// CHECK:       st.global.f32
// CHECK:       fence.acq_rel.gpu;
// CHECK:       bar.sync 3, 256;
// CHECK:       atom.global.acq_rel.gpu.add.u32
// CHECK:       bar.sync 3, 256;
// CHECK:       ld.global.f32
// CHECK:       add.f32

// -----

// Epilogue "smem": each warpgroup writes boxes of 64 rows x 64 bf16 (128 swizzled bytes)
// to its two shared buffers with stmatrix, fences the async proxy, and one thread waits
// until the store before last has read its buffer and stores the box with TMA.
func.func @stores(%a: tensor<1000x512xbf16>, %w: tensor<1000x512xbf16>) -> tensor<1000x1000xbf16> attributes {sched.params = #sched.params<tile = 128x128x64, epilogue = smem, split_k = 1>} {
  %y = fusion.linear %a, %w : (tensor<1000x512xbf16>, tensor<1000x512xbf16>) -> tensor<1000x1000xf32>
  %o = fusion.cast %y : tensor<1000x1000xf32> to tensor<1000x1000xbf16>
  func.return %o : tensor<1000x1000xbf16>
}
// CHECK-LABEL: .visible .entry stores(
// CHECK:       .param .align 128 .b8 tmap2[128]
// CHECK:       wgmma.wait_group.sync.aligned 0;
// CHECK:       cp.async.bulk.wait_group.read 0;
// CHECK:       bar.sync 5, 128;
// CHECK-COUNT-4: stmatrix.sync.aligned.m8n8.x4.shared.b16
// CHECK:       fence.proxy.async.shared::cta;
// CHECK:       cp.async.bulk.wait_group.read 0;
// CHECK:       bar.sync 5, 128;
// CHECK:       cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%rd{{[0-9]+}}, {%r{{[0-9]+}}, %r{{[0-9]+}}}], [%r{{[0-9]+}}];
// CHECK-NEXT:  cp.async.bulk.commit_group;
// CHECK-COUNT-4: stmatrix.sync.aligned.m8n8.x4.shared.b16
// CHECK:       cp.async.bulk.wait_group 0;
