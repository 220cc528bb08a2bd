// RUN: mmcomp-opt %s -p propagate-axis-mapping,choose-schedule,tile-split,tile-merge,split-k,insert-persistent-loop,materialize-schedule,partition-warp-roles,carry-ring-positions,lower-schedule-to-hopper | filecheck %s
// RUN: mmcomp-opt %s -p compile-to-ptx -t ptx | python -m mmcomp.arch.ptxas - --sass "QGMMA\\.64x128x32\\.F32\\.E4M3\\.E4M3" | filecheck %s --check-prefix=PTXAS

// A block-wise fp8 linear on a 128x256 tile: each consumer warpgroup holds 64x256 of the
// tile (two m64n128 chunks, 128 accumulator registers per thread) and one 64x128 partial.
// The tile's columns lie in two N blocks of 128, so two scales of w per K block.
func.func @block_wide(%a: tensor<256x300xf8E4M3FN>, %w: tensor<200x300xf8E4M3FN>, %sa: tensor<256x3xf32>, %sb: tensor<2x3xf32>) -> tensor<256x200xf32> attributes {sched.params = #sched.params<tile = 128x256x128, stages = 3, epilogue = registers>} {
  %y = fusion.linear %a, %w scales %sa, %sb : (tensor<256x300xf8E4M3FN>, tensor<200x300xf8E4M3FN>, tensor<256x3xf32>, tensor<2x3xf32>) -> tensor<256x200xf32>
  func.return %y : tensor<256x200xf32>
}

// CHECK:      ptx.setmaxnreg inc 232
// The main accumulator: two 64x128 chunks.
// CHECK:      %[[MAIN0:.*]] = hopper.zero_accumulator : !hopper.accumulator<64x128xf32>
// CHECK-NEXT: %[[MAIN1:.*]] = hopper.zero_accumulator : !hopper.accumulator<64x128xf32>
// The first K block's scales, loaded before the K loop: a's of the thread's two rows
// (guarded by the rows' bounds and the loop's range), w's of the tile's two N blocks (the
// second 3 floats, 12 bytes, further, guarded by the N blocks' extent 2).
// CHECK:      hopper.global_load %{{.*}} if %{{.*}} : (i64) -> f32
// CHECK:      hopper.global_load %{{.*}} if %{{.*}} : (i64) -> f32
// CHECK:      hopper.global_load %[[SB:.*]] if %{{.*}} : (i64) -> f32
// CHECK:      hopper.global_load %[[SB]] if %{{.*}} {offset = 12} : (i64) -> f32
// The K loop carries the scales of its K block as f32 registers, beside the chunks.
// CHECK:      scf.for
// CHECK-SAME: -> (!hopper.ring_position<stages = 3>, !ptx.reg<f32>, !ptx.reg<f32>, !ptx.reg<f32>, !ptx.reg<f32>, !hopper.accumulator<64x128xf32>, !hopper.accumulator<64x128xf32>)
// CHECK-NEXT: %[[SA0:.*]] = builtin.unrealized_conversion_cast %{{.*}} : !ptx.reg<f32> to f32
// CHECK-NEXT: %[[SA1:.*]] = builtin.unrealized_conversion_cast %{{.*}} : !ptx.reg<f32> to f32
// CHECK-NEXT: %[[SW0:.*]] = builtin.unrealized_conversion_cast %{{.*}} : !ptx.reg<f32> to f32
// CHECK-NEXT: %[[SW1:.*]] = builtin.unrealized_conversion_cast %{{.*}} : !ptx.reg<f32> to f32
// The next K block's scales, loaded before this one's wait for its stage.
// CHECK-COUNT-4: hopper.global_load
// CHECK:      hopper.mbarrier_wait
// Chunk 0 (columns 0-127, N block 0): four k32 steps into a fresh partial, its own
// group, complete before the promotion with a's scales times w's of N block 0.
// CHECK:      ptx.wgmma_fence
// CHECK:      %[[FRESH:.*]] = hopper.zero_accumulator : !hopper.accumulator<64x128xf32>
// CHECK:      hopper.wgmma_mma_async m64n128k32 f8e4m3 %{{.*}}, %{{.*}}, %[[FRESH]] {a_major = "k", b_major = "k", scale_d = 0}
// CHECK-COUNT-2: hopper.wgmma_mma_async m64n128k32 f8e4m3 {{.*}} scale_d = 1
// CHECK:      %[[P0:.*]] = hopper.wgmma_mma_async m64n128k32 f8e4m3 {{.*}} scale_d = 1
// CHECK-NEXT: ptx.wgmma_commit
// CHECK-NEXT: ptx.wgmma_wait 0
// CHECK-NEXT: %[[S00:.*]] = arith.mulf %[[SA0]], %[[SW0]] fastmath<contract> : f32
// CHECK-NEXT: %[[S01:.*]] = arith.mulf %[[SA1]], %[[SW0]] fastmath<contract> : f32
// CHECK-NEXT: %[[NEW0:.*]] = hopper.promote_accumulator %{{.*}}, %[[P0]], %[[S00]], %[[S01]] : !hopper.accumulator<64x128xf32>
// Chunk 1 (columns 128-255, N block 1) takes the promoted partial's registers (scale-d 0
// ignores their values), so that its wgmmas cannot start before the promotion read them:
// one partial per thread.
// CHECK-NEXT: ptx.wgmma_fence
// CHECK-NOT:  hopper.zero_accumulator
// CHECK:      hopper.wgmma_mma_async m64n128k32 f8e4m3 %{{.*}}, %{{.*}}, %[[P0]] {a_major = "k", b_major = "k", scale_d = 0}
// CHECK-COUNT-2: hopper.wgmma_mma_async m64n128k32 f8e4m3 {{.*}} scale_d = 1
// CHECK:      %[[P1:.*]] = hopper.wgmma_mma_async m64n128k32 f8e4m3 {{.*}} scale_d = 1
// CHECK-NEXT: ptx.wgmma_commit
// CHECK-NEXT: ptx.wgmma_wait 0
// CHECK-NEXT: %[[S10:.*]] = arith.mulf %[[SA0]], %[[SW1]] fastmath<contract> : f32
// CHECK-NEXT: %[[S11:.*]] = arith.mulf %[[SA1]], %[[SW1]] fastmath<contract> : f32
// CHECK-NEXT: %[[NEW1:.*]] = hopper.promote_accumulator %{{.*}}, %[[P1]], %[[S10]], %[[S11]] : !hopper.accumulator<64x128xf32>
// No group is left in flight: the K block's own stage is released at once.
// CHECK-NEXT: %[[STAGE:.*]] = hopper.ring_stage
// CHECK-NEXT: %[[EMPTY:.*]] = hopper.ring_barrier %{{.*}}[%[[STAGE]]]
// CHECK-NEXT: hopper.mbarrier_arrive %[[EMPTY]] if %{{.*}} : !hopper.mbarrier<count = 2>
// CHECK:      scf.yield %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[NEW0]], %[[NEW1]]
// CHECK-NOT:  ptx.wgmma_wait

// ptxas: 0 spills at 232 registers.
// PTXAS: block_wide
// PTXAS-SAME: 0 bytes spill stores, 0 bytes spill loads, 0 bytes stack
