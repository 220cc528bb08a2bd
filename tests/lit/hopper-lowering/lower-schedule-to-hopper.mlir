// RUN: mmcomp-opt %s -p partition-warp-roles,carry-ring-positions,lower-schedule-to-hopper | filecheck %s

// The same kernel in the hopper dialect, before convert-hopper-to-ptx and
// convert-arith-to-ptx: the func becomes a hopper.kernel that holds the producer and
// consumer code side by side.
// each into its ring slot; everything else to the consumers.
builtin.module {
  func.func @lin(%a: memref<300x200xbf16> {fusion.roles = #fusion.roles<[m, k]>}, %w: memref<500x200xbf16> {fusion.roles = #fusion.roles<[n, k]>}, %bias: memref<500xbf16> {fusion.roles = #fusion.roles<[n]>}, %out0: memref<300x500xbf16> {fusion.roles = #fusion.roles<[m, n]>, sched.output}) attributes {sched.grid = 12 : i64, sched.cluster = 1 : i64, sched.num_inputs = 3 : i64, sched.num_outputs = 1 : i64, fusion.space = #fusion.space<m = 300, n = 500, k = 200>, sched.params = #sched.params<tile = 128x128x64, warpgroup = 64x128, instr = m64n128k16, stages = 4, cluster = 1x1, raster = m, swizzle = 1, strategy = persistent, split_k = 1, warp_specialization = cooperative, registers = 40/232, epilogue = registers>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %c12 = arith.constant 12 : index
    %c64 = arith.constant 64 : index
    %c128 = arith.constant 128 : index
    %cta = "gpu.block_id"() <{dimension = #gpu<dim x>}> : () -> index
    %grid = "gpu.grid_dim"() <{dimension = #gpu<dim x>}> : () -> index
    scf.for %unit = %cta to %c12 step %grid {
      %tile_n = arith.divui %unit, %c3 : index
      %tile_m = arith.remui %unit, %c3 : index
      %m0 = arith.muli %tile_m, %c128 : index
      %n0 = arith.muli %tile_n, %c128 : index
      %zero = sched.zero_tile : tensor<128x128xf32>
      %acc = scf.for %kb = %c0 to %c4 step %c1 iter_args(%acc_1 = %zero) -> (tensor<128x128xf32>) {
        %k0 = arith.muli %kb, %c64 : index
        %a_tile = sched.load_tile %a[%m0, %k0] : memref<300x200xbf16> -> tensor<128x64xbf16>
        %w_tile = sched.load_tile %w[%n0, %k0] : memref<500x200xbf16> -> tensor<128x64xbf16>
        %acc_2 = sched.mma %a_tile [m, k], %w_tile [n, k], %acc_1 [m, n] : tensor<128x64xbf16>, tensor<128x64xbf16>, tensor<128x128xf32>
        scf.yield %acc_2 : tensor<128x128xf32>
      }
      %bias_tile = sched.load_tile %bias[%n0] : memref<500xbf16> -> tensor<128xbf16>
      %0 = sched.epilogue(%acc, %bias_tile) : (tensor<128x128xf32>, tensor<128xbf16>) -> tensor<128x128xbf16> {
      ^bb0(%1: tensor<128x128xf32>, %bias_1: tensor<128xbf16>):
        %bias_f32 = fusion.cast %bias_1 {fusion.roles = #fusion.roles<[n]>} : tensor<128xbf16> to tensor<128xf32>
        %bias_row = fusion.broadcast %bias_f32 new_dims [true, false] {fusion.roles = #fusion.roles<[m, n]>} : tensor<128xf32> to tensor<128x128xf32>
        %2 = fusion.add %1, %bias_row {fusion.roles = #fusion.roles<[m, n]>} : tensor<128x128xf32>
        %3 = fusion.gelu %2 approximate tanh {fusion.roles = #fusion.roles<[m, n]>} : tensor<128x128xf32>
        %4 = fusion.cast %3 {fusion.roles = #fusion.roles<[m, n]>} : tensor<128x128xf32> to tensor<128x128xbf16>
        sched.yield %4 : tensor<128x128xbf16>
      }
      sched.store_tile %0, %out0[%m0, %n0] : tensor<128x128xbf16>, memref<300x500xbf16>
    }
    func.return
  }
}



// The kernel carries its launch data: each pointer's array, each tensor map's view, box and
// swizzle (the default 128 bytes, left out), the grid and the shared memory, and its
// dynamic shared-memory array.
// CHECK:        hopper.kernel @lin(arg0 : ptr<role = input, name = "a", shape = [300, 200], dtype = bf16>, arg1 : ptr<role = input, name = "w", shape = [500, 200], dtype = bf16>, arg2 : ptr<role = input, name = "bias", shape = [500], dtype = bf16>, arg3 : ptr<role = output, name = "out0", shape = [300, 500], dtype = bf16>, tmap0 : tmap<arg = 0, dtype = bf16, shape = [300, 200], box = [128, 64], boxes = 1, major = k, strides = [200, 1], axes = [0, 1]>, tmap1 : tmap<arg = 1, dtype = bf16, shape = [500, 200], box = [128, 64], boxes = 1, major = k, strides = [200, 1], axes = [0, 1]>) maxnreg 168 reqntid [384] launch<grid = 12, smem = 132176, persistent = true> shared @mmcomp_shared align 1024 {
// The ring's full barriers complete on the producer's one arrival, its empty ones on one
// arrival per consumer warpgroup; each tensor map's type is the view its launch data says.
// The thread index is an index value (gpu.thread_id x, %tid.x once lowered). Shared memory
// is typed: the dynamic array's base aligned to 1024 bytes, the barrier rings after the
// 4 stages of 32 KiB (full, then empty 4 x 8 bytes on), the ring's stages and slots.
// CHECK-NEXT:     %[[TID:.*]] = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index
// CHECK-NEXT:     %[[SMEM:.*]] = hopper.shared_base mmcomp_shared : !hopper.smem<align 1024>
// CHECK-NEXT:     %[[FULL_AT:.*]] = hopper.smem_offset %[[SMEM]][131072] : !hopper.smem<align 1024> -> !hopper.smem<align 1024>
// CHECK-NEXT:     %[[EMPTY_AT:.*]] = hopper.smem_offset %[[FULL_AT]][32] : !hopper.smem<align 1024> -> !hopper.smem<align 32>
// CHECK-NEXT:     %[[FULLS:.*]] = hopper.barrier_ring %[[FULL_AT]] : (!hopper.smem<align 1024>) -> !hopper.barrier_ring<stages = 4, count = 1>
// CHECK-NEXT:     %[[EMPTIES:.*]] = hopper.barrier_ring %[[EMPTY_AT]] : (!hopper.smem<align 32>) -> !hopper.barrier_ring<stages = 4, count = 2>
// CHECK-NEXT:     %[[SLOTS:.*]] = hopper.slot_ring %[[SMEM]][0] : !hopper.smem<align 1024> -> !hopper.slot_ring<stages = 4, bytes = 32768, slots = [0, 16384]>
// CHECK-NEXT:     %[[TMAP0:.*]] = hopper.tensormap_param tmap0 : !hopper.tensormap<300x200xbf16, box 128x64, swizzle 128>
// CHECK-NEXT:     %[[TMAP1:.*]] = hopper.tensormap_param tmap1 : !hopper.tensormap<500x200xbf16, box 128x64, swizzle 128>
// Thread 0, the barriers' initializer and the producer's elected thread, is a comparison
// on it (an i1), which guards the ops itself.
// CHECK:          %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT:     %[[LEADER:.*]] = arith.cmpi eq, %[[TID]], %[[C0]] : index
// CHECK-NEXT:     %[[F0:.*]] = hopper.ring_barrier %[[FULLS]][0] : !hopper.barrier_ring<stages = 4, count = 1>
// CHECK-NEXT:     hopper.mbarrier_init %[[F0]] if %[[LEADER]] : !hopper.mbarrier<count = 1>
// CHECK-NEXT:     %[[E0:.*]] = hopper.ring_barrier %[[EMPTIES]][0] : !hopper.barrier_ring<stages = 4, count = 2>
// CHECK-NEXT:     hopper.mbarrier_init %[[E0]] if %[[LEADER]] : !hopper.mbarrier<count = 2>
// CHECK-COUNT-3:  hopper.mbarrier_init %{{.*}} if %[[LEADER]] : !hopper.mbarrier<count = 2>
// CHECK:          ptx.fence mbarrier_init if %[[LEADER]]
// CHECK-NEXT:     hopper.tensor_map_prefetch %[[TMAP0]] if %[[LEADER]] : !hopper.tensormap<300x200xbf16, box 128x64, swizzle 128>
// The producer's elected thread: wait for an empty stage, expect 2 x 16 KiB, load A and W at
// (k0, m0) and (k0, n0), coordinates innermost first, both completing on the stage's full
// barrier.
// The warp roles' dispatch is an scf.if on the producer warpgroup's test (tid >> 7 == 0, an
// i1): the producer in its then-block, the consumers in its else-block; the producer's
// elected thread runs in an scf.if on the leader that ends where the dispatch does (its
// one label is the dispatch's end label). Each op carries the labels convert-scf-to-ptx
// makes of it, and `ptx.predicate`: it branches on its condition as a predicate.
// CHECK:          %[[C7:.*]] = arith.constant 7 : index
// CHECK-NEXT:     %[[WARPGROUP:.*]] = arith.shrui %[[TID]], %[[C7]] : index
// CHECK-NEXT:     %[[C0_1:.*]] = arith.constant 0 : index
// CHECK-NEXT:     %[[IS_PRODUCER:.*]] = arith.cmpi eq, %[[WARPGROUP]], %[[C0_1]] : index
// CHECK-NEXT:     scf.if %[[IS_PRODUCER]] {
// CHECK-NEXT:       ptx.setmaxnreg dec 40
// CHECK-NEXT:       scf.if %[[LEADER]] {
// The producer's ring position: a `!hopper.ring_position` value (stage 0, phase 0), carried
// by the persistent loop and the K loop (their iter_args; each loop's result the position
// after it).
// CHECK-NEXT:         %[[START:.*]] = hopper.ring_start : !hopper.ring_position<stages = 4>
// The producer's index arithmetic stays arith on index (convert-arith-to-ptx lowers it);
// each loop is an scf.for on the schedule's index bounds, its induction variable the block
// argument (read as its u32 register through a cast where a ptx op needs it, and no cast
// where none does), and an index that a ptx op reads is cast to its u32 register.
// CHECK:          %[[CTA:.*]] = "gpu.block_id"() <{dimension = #gpu<dim x>}> : () -> index
// CHECK:          scf.for %[[UNIT:[0-9]+]] = %[[CTA]] to %{{.*}} step %{{.*}} iter_args(%[[TILE_AT:[0-9]+]] = %[[START]]) -> (!hopper.ring_position<stages = 4>) {
// CHECK-NEXT:       %[[TILE_N:.*]] = arith.divui %[[UNIT]], %{{.*}} : index
// CHECK-NEXT:       %[[TILE_M:.*]] = arith.remui %[[UNIT]], %{{.*}} : index
// CHECK-NEXT:       %[[M0:.*]] = arith.muli %[[TILE_M]], %{{.*}} : index
// CHECK-NEXT:       %[[N0:.*]] = arith.muli %[[TILE_N]], %{{.*}} : index
// CHECK:            %[[K_AT:[0-9]+]] = scf.for %[[KB:[0-9]+]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[AT:[0-9]+]] = %[[TILE_AT]]) -> (!hopper.ring_position<stages = 4>) {
// CHECK-NEXT:         %[[K0:.*]] = arith.muli %[[KB]], %{{.*}} : index
// The waits, the arrival and the stage's address read the position's stage (an index)
// and phase (an i32); the empty barrier's wait flips the phase with an arith.xori.
// CHECK:          %[[STAGE:.*]] = hopper.ring_stage %[[AT]] : !hopper.ring_position<stages = 4>
// CHECK-NEXT:     %[[EMPTY:.*]] = hopper.ring_barrier %[[EMPTIES]][%[[STAGE]]] : !hopper.barrier_ring<stages = 4, count = 2>
// CHECK-NEXT:     %[[PHASE:.*]] = hopper.ring_phase %[[AT]] : !hopper.ring_position<stages = 4>
// CHECK-NEXT:     %[[ONE:.*]] = arith.constant 1 : i32
// CHECK-NEXT:     %[[FLIPPED:.*]] = arith.xori %[[PHASE]], %[[ONE]] : i32
// CHECK-NEXT:     hopper.mbarrier_wait %[[EMPTY]], %[[FLIPPED]] : (!hopper.mbarrier<count = 2>, i32) -> ()
// CHECK-NEXT:     %[[FULL:.*]] = hopper.ring_barrier %[[FULLS]][%[[STAGE]]] : !hopper.barrier_ring<stages = 4, count = 1>
// CHECK-NEXT:     hopper.mbarrier_arrive_expect_tx 32768 %[[FULL]] : !hopper.mbarrier<count = 1>
// The copies take their coordinates as the index values of the schedule's arithmetic, and
// their destinations as the slots of the position's stage.
// CHECK-NEXT:     %[[STAGE_SLOTS:.*]] = hopper.slot_stage %[[SLOTS]][%[[AT]]] : !hopper.slot_ring<stages = 4, bytes = 32768, slots = [0, 16384]>, !hopper.ring_position<stages = 4>
// CHECK-NEXT:     %[[A_SLOT:.*]] = hopper.ring_slot %[[STAGE_SLOTS]][0] : !hopper.stage<slots = [0, 16384]>
// CHECK-NEXT:     hopper.tma_load %[[TMAP0]][%[[K0]], %[[M0]]], %[[FULL]] to %[[A_SLOT]] : !hopper.tensormap<300x200xbf16, box 128x64, swizzle 128>, !hopper.mbarrier<count = 1>, !hopper.smem<align 1024>
// CHECK-NEXT:     %[[W_SLOT:.*]] = hopper.ring_slot %[[STAGE_SLOTS]][1] : !hopper.stage<slots = [0, 16384]>
// CHECK-NEXT:     hopper.tma_load %[[TMAP1]][%[[K0]], %[[N0]]], %[[FULL]] to %[[W_SLOT]] :
// The position moves on (the phase flips at the wrap): the body yields the advance's
// result; the persistent loop yields the K loop's.
// CHECK:          %[[NEXT:.*]] = hopper.ring_advance %[[AT]] : !hopper.ring_position<stages = 4>
// CHECK-NEXT:     scf.yield %[[NEXT]] : !hopper.ring_position<stages = 4>
// CHECK-NEXT:   } {ptx.labels = ["{{loop_[0-9]+}}", "{{loop_end_[0-9]+}}"]}
// CHECK-NEXT:   scf.yield %[[K_AT]] : !hopper.ring_position<stages = 4>
// CHECK-NEXT:   } {ptx.labels = ["{{loop_[0-9]+}}", "{{loop_end_[0-9]+}}"]}
// CHECK-NEXT:     }{ptx.labels = ["[[DONE:done_[0-9]+]]"], ptx.predicate}
// The consumers: wait full, descriptors of 128B-swizzled K-major tiles, wgmma, release.
// CHECK-NEXT:   } else {
// CHECK-NEXT:     ptx.setmaxnreg inc 232
// Each tile's zero accumulator, one 64x128 wgmma tile (no registers at this level), is
// carried by the K loop: the last of the iter_args.
// CHECK:          %[[ZERO:.*]] = hopper.zero_accumulator : !hopper.accumulator<64x128xf32>
// CHECK:          %{{.*}}, %[[RESULT:.*]] = scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args({{.*}}, %[[ACC:.*]] = %[[ZERO]]) -> ({{.*}}, !hopper.accumulator<64x128xf32>) {
// CHECK:          %[[READY:.*]] = hopper.ring_barrier %[[FULLS]][%{{.*}}] : !hopper.barrier_ring<stages = 4, count = 1>
// CHECK-NEXT:     %[[READ_PHASE:.*]] = hopper.ring_phase %{{.*}} : !hopper.ring_position<stages = 4>
// CHECK-NEXT:     hopper.mbarrier_wait %[[READY]], %[[READ_PHASE]] : (!hopper.mbarrier<count = 1>, i32) -> ()
// The stage's slots; the A slot moved to this consumer's rows (a hopper.smem_index of
// the consumer's index, 8192 bytes each: one mad), the W slot read by its descriptors as
// it is; each descriptor's type gives its tile's layout.
// CHECK-NEXT:     %[[STAGE:.*]] = hopper.slot_stage %[[SLOTS]][%{{.*}}] : !hopper.slot_ring<stages = 4, bytes = 32768, slots = [0, 16384]>, !hopper.ring_position<stages = 4>
// CHECK-NEXT:     ptx.wgmma_fence
// CHECK-NEXT:     %[[A_TILE:.*]] = hopper.ring_slot %[[STAGE]][0] : !hopper.stage<slots = [0, 16384]>
// CHECK-NEXT:     %[[MINE:.*]] = hopper.smem_index %[[A_TILE]][0 + %{{.*}} * 8192] : !hopper.smem<align 1024> -> !hopper.smem<align 1024>
// CHECK-NEXT:     %[[W_TILE:.*]] = hopper.ring_slot %[[STAGE]][1] : !hopper.stage<slots = [0, 16384]>
// CHECK-NEXT:     %[[A_DESC:.*]] = hopper.matrix_descriptor %[[MINE]] {mn = 0, k = 0} : (!hopper.smem<align 1024>) -> !hopper.matrix_descriptor<k_major, swizzle 128, mn 128, k 64>
// CHECK-NEXT:     %[[W_DESC:.*]] = hopper.matrix_descriptor %[[W_TILE]] {mn = 0, k = 0} : (!hopper.smem<align 1024>) -> !hopper.matrix_descriptor<k_major, swizzle 128, mn 128, k 64>
// Each wgmma takes the descriptors and the accumulator and returns the next accumulator;
// the body yields the last.
// CHECK-NEXT:     %[[D1:.*]] = hopper.wgmma_mma_async m64n128k16 bf16 %[[A_DESC]], %[[W_DESC]], %[[ACC]] {a_major = "k", b_major = "k", scale_d = 1} : (!hopper.matrix_descriptor<k_major, swizzle 128, mn 128, k 64>, !hopper.matrix_descriptor<k_major, swizzle 128, mn 128, k 64>, !hopper.accumulator<64x128xf32>) -> !hopper.accumulator<64x128xf32>
// CHECK:          %[[D2:.*]] = hopper.wgmma_mma_async m64n128k16 bf16 %{{.*}}, %{{.*}}, %[[D1]]
// CHECK:          %[[D3:.*]] = hopper.wgmma_mma_async m64n128k16 bf16 %{{.*}}, %{{.*}}, %[[D2]]
// CHECK:          hopper.matrix_descriptor %{{.*}} {mn = 0, k = 48} : (!hopper.smem<align 1024>) -> !hopper.matrix_descriptor<k_major, swizzle 128, mn 128, k 64>
// CHECK:          %[[D4:.*]] = hopper.wgmma_mma_async m64n128k16 bf16 %{{.*}}, %{{.*}}, %[[D3]]
// CHECK:          ptx.wgmma_commit
// CHECK-NEXT:     ptx.wgmma_wait 1
// CHECK:          %[[RELEASED:.*]] = hopper.ring_barrier %[[EMPTIES]][%{{.*}}] : !hopper.barrier_ring<stages = 4, count = 2>
// CHECK:          hopper.mbarrier_arrive %[[RELEASED]] if %{{.*}} : !hopper.mbarrier<count = 2>
// CHECK:          scf.yield {{.*}}, %[[D4]] : {{.*}}, !hopper.accumulator<64x128xf32>
// CHECK:          ptx.wgmma_wait 0
// The epilogue reads the loop's result element by element.
// CHECK:          hopper.accumulator_element %[[RESULT]][0] : !hopper.accumulator<64x128xf32>
// CHECK:          hopper.accumulator_element %[[RESULT]][63] : !hopper.accumulator<64x128xf32>
// CHECK:          }{ptx.labels = ["{{consumer_[0-9]+}}", "[[DONE]]"], ptx.predicate}
// CHECK-NEXT:     ptx.ret
// CHECK-NOT:      func.func
