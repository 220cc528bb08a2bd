// RUN: mmcomp-opt %s -p carry-ring-positions | filecheck %s
// RUN: mmcomp-opt %s -p carry-ring-positions | mmcomp-opt | filecheck %s
// RUN: mmcomp-opt %s -p carry-ring-positions,carry-ring-positions | filecheck %s
// RUN: mmcomp-opt %s -p carry-ring-positions,lower-schedule-to-hopper | filecheck %s --check-prefix=HOPPER

// Without warp specialization thread 0 of the consumers also loads, `stages - 1` K blocks
// ahead of them (here a 2-stage ring: one). Its position is a second ring start after the
// consumers' (%loads), carried by the loop over tiles and the K loop after theirs; thread
// 0 is hopper.leader. Before the K loop each of the first `stages - 1` K blocks is loaded
// in a branch marked hopper.load_ahead, on thread 0 and the K loop's range: its
// then-block holds a copy of the K block's index arithmetic and ring loads at that
// iteration (`distance * step + lb`, one mad) and advances the load position, its
// else-block returns it unchanged; after each K block's advance, the K block `stages - 1`
// ahead likewise. Running the pass again changes nothing.
builtin.module {
  func.func @lin(%a: memref<300x200xbf16> {fusion.roles = #fusion.roles<[m, k]>}, %w: memref<500x200xbf16> {fusion.roles = #fusion.roles<[n, k]>}, %out0: memref<300x500xbf16> {fusion.roles = #fusion.roles<[m, n]>, sched.output}, %partials0: memref<2x12x128x128xf32> {sched.workspace = "partials"}, %arrivals: memref<12xi32> {sched.workspace = "arrivals"}) attributes {sched.grid = 24 : i64, sched.cluster = 1 : i64, sched.num_inputs = 2 : i64, sched.num_outputs = 1 : i64, fusion.space = #fusion.space<m = 300, n = 500, k = 200>, sched.params = #sched.params<tile = 128x128x64, warpgroup = 64x128, instr = m64n128k16, stages = 2, cluster = 1x1, raster = m, swizzle = 4, strategy = persistent, split_k = 2, warp_specialization = none, registers = 248/248, epilogue = smem>, hopper.warp_roles = #hopper.warp_roles<slots = 2>} {
    hopper.warp_specialize none consumer {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c4 = arith.constant 4 : index
      %c24 = arith.constant 24 : index
      %c64 = arith.constant 64 : index
      %c128 = arith.constant 128 : index
      %cta = "gpu.block_id"() <{dimension = #gpu<dim x>}> : () -> index
      %grid = "gpu.grid_dim"() <{dimension = #gpu<dim x>}> : () -> index
      scf.for %unit = %cta to %c24 step %grid {
        %slice = arith.remui %unit, %c2 : index
        %tile_unit = arith.divui %unit, %c2 : index
        %tile_n = arith.remui %tile_unit, %c4 : index
        %tile_m = arith.divui %tile_unit, %c4 : index
        %m0 = arith.muli %tile_m, %c128 : index
        %n0 = arith.muli %tile_n, %c128 : index
        %zero = sched.zero_tile : tensor<128x128xf32>
        %acc = scf.for %kb = %slice to %c4 step %c2 iter_args(%acc_1 = %zero) -> (tensor<128x128xf32>) {
          %k0 = arith.muli %kb, %c64 : index
          %a_tile = sched.load_tile %a[%m0, %k0] {hopper.slot = 0 : i64} : memref<300x200xbf16> -> tensor<128x64xbf16>
          %w_tile = sched.load_tile %w[%n0, %k0] {hopper.slot = 1 : i64} : memref<500x200xbf16> -> tensor<128x64xbf16>
          %acc_2 = sched.mma %a_tile [m, k], %w_tile [n, k], %acc_1 [m, n] : tensor<128x64xbf16>, tensor<128x64xbf16>, tensor<128x128xf32>
          scf.yield %acc_2 : tensor<128x128xf32>
        }
        sched.store_partial %acc, %partials0[%slice, %tile_unit] : tensor<128x128xf32>, memref<2x12x128x128xf32>
        %arrived = sched.arrive %arrivals[%tile_unit] : memref<12xi32> -> index
        %last_slice = arith.cmpi eq, %arrived, %c1 : index
        scf.if %last_slice {
          %sum = sched.reduce_partials %partials0[%tile_unit] : memref<2x12x128x128xf32> -> tensor<128x128xf32>
          %o = sched.epilogue(%sum) : (tensor<128x128xf32>) -> tensor<128x128xbf16> {
          ^bb0(%y: tensor<128x128xf32>):
            %o_1 = fusion.cast %y {fusion.roles = #fusion.roles<[m, n]>} : tensor<128x128xf32> to tensor<128x128xbf16>
            sched.yield %o_1 : tensor<128x128xbf16>
          }
          sched.store_tile %o, %out0[%m0, %n0] : tensor<128x128xbf16>, memref<300x500xbf16>
        }
      }
    }
    func.return
  }
}

// CHECK:      hopper.warp_specialize none consumer {
// CHECK-NEXT:   %ring = hopper.ring_start : !hopper.ring_position<stages = 2>
// CHECK-NEXT:   %loads = hopper.ring_start : !hopper.ring_position<stages = 2>
// CHECK-NEXT:   %leader = hopper.leader : i1
// CHECK:        %ring_1, %loads_1 = scf.for %unit = %cta to %c24 step %grid iter_args(%at = %ring, %loading = %loads) -> (!hopper.ring_position<stages = 2>, !hopper.ring_position<stages = 2>) {
// CHECK:          %zero = sched.zero_tile : tensor<128x128xf32>
// CHECK-NEXT:     %c0_1 = arith.constant 0 : index
// CHECK-NEXT:     %ahead = arith.muli %c0_1, %c2 : index
// CHECK-NEXT:     %kb_ahead = arith.addi %ahead, %slice {ptx.mad} : index
// CHECK-NEXT:     %in_range = arith.cmpi ult, %kb_ahead, %c4 : index
// CHECK-NEXT:     %load = arith.andi %in_range, %leader : i1
// CHECK-NEXT:     %loads_2 = scf.if %load -> (!hopper.ring_position<stages = 2>) {
// CHECK-NEXT:       %k0 = arith.muli %kb_ahead, %c64 : index
// CHECK-NEXT:       %a_tile = sched.load_tile %a[%m0, %k0] {hopper.slot = 0 : i64}
// CHECK-NEXT:       %w_tile = sched.load_tile %w[%n0, %k0] {hopper.slot = 1 : i64}
// CHECK-NEXT:       %filled = hopper.ring_advance %loading : !hopper.ring_position<stages = 2>
// CHECK-NEXT:       scf.yield %filled : !hopper.ring_position<stages = 2>
// CHECK-NEXT:     } else {
// CHECK-NEXT:       scf.yield %loading : !hopper.ring_position<stages = 2>
// CHECK-NEXT:     }{hopper.load_ahead}
// CHECK-NEXT:     %ring_2, %loads_3, %acc = scf.for %kb = %slice to %c4 step %c2 iter_args(%at_1 = %at, %loading_1 = %loads_2, %acc_1 = %zero) -> (!hopper.ring_position<stages = 2>, !hopper.ring_position<stages = 2>, tensor<128x128xf32>) {
// CHECK:            %acc_2 = sched.mma
// CHECK-NEXT:       %next = hopper.ring_advance %at_1 : !hopper.ring_position<stages = 2>
// CHECK-NEXT:       %c1_1 = arith.constant 1 : index
// CHECK-NEXT:       %ahead_1 = arith.muli %c1_1, %c2 : index
// CHECK-NEXT:       %kb_ahead_1 = arith.addi %ahead_1, %kb {ptx.mad} : index
// CHECK-NEXT:       %in_range_1 = arith.cmpi ult, %kb_ahead_1, %c4 : index
// CHECK-NEXT:       %load_1 = arith.andi %in_range_1, %leader : i1
// CHECK-NEXT:       %loads_4 = scf.if %load_1 -> (!hopper.ring_position<stages = 2>) {
// CHECK-NEXT:         %k0_2 = arith.muli %kb_ahead_1, %c64 : index
// CHECK-NEXT:         %a_tile_2 = sched.load_tile %a[%m0, %k0_2] {hopper.slot = 0 : i64}
// CHECK-NEXT:         %w_tile_2 = sched.load_tile %w[%n0, %k0_2] {hopper.slot = 1 : i64}
// CHECK-NEXT:         %filled_1 = hopper.ring_advance %loading_1 : !hopper.ring_position<stages = 2>
// CHECK-NEXT:         scf.yield %filled_1 : !hopper.ring_position<stages = 2>
// CHECK-NEXT:       } else {
// CHECK-NEXT:         scf.yield %loading_1 : !hopper.ring_position<stages = 2>
// CHECK-NEXT:       }{hopper.load_ahead}
// CHECK-NEXT:       scf.yield %next, %loads_4, %acc_2 : !hopper.ring_position<stages = 2>, !hopper.ring_position<stages = 2>, tensor<128x128xf32>
// CHECK-NEXT:     }
// CHECK:          scf.if %last_slice {
// CHECK:            sched.store_tile %o, %out0[%m0, %n0]
// CHECK-NEXT:     }
// CHECK-NEXT:     scf.yield %ring_2, %loads_3 : !hopper.ring_position<stages = 2>, !hopper.ring_position<stages = 2>

// lower-schedule-to-hopper: each load ahead is a branch on its condition as a predicate
// (one label, no_load: its else-block only yields), whose then-block waits for the stage
// at the load position to be empty, announces its bytes, issues the TMA loads and
// advances the position.
// HOPPER:      hopper.kernel @lin(
// HOPPER:        %[[RING:.*]] = hopper.ring_start : !hopper.ring_position<stages = 2>
// HOPPER-NEXT:   %[[LOADS:.*]] = hopper.ring_start : !hopper.ring_position<stages = 2>
// HOPPER:        scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%{{.*}} = %[[RING]], %[[LOADING:.*]] = %[[LOADS]]) -> (!hopper.ring_position<stages = 2>, !hopper.ring_position<stages = 2>) {
// HOPPER:          scf.if %{{.*}} -> (!hopper.ring_position<stages = 2>) {
// HOPPER:            hopper.mbarrier_wait
// HOPPER:            hopper.mbarrier_arrive_expect_tx 32768
// HOPPER:            hopper.tma_load
// HOPPER:            hopper.tma_load
// HOPPER-NEXT:       %[[FILLED:.*]] = hopper.ring_advance %[[LOADING]] : !hopper.ring_position<stages = 2>
// HOPPER-NEXT:       scf.yield %[[FILLED]] : !hopper.ring_position<stages = 2>
// HOPPER-NEXT:     } else {
// HOPPER-NEXT:       scf.yield %[[LOADING]] : !hopper.ring_position<stages = 2>
// HOPPER-NEXT:     }{ptx.labels = ["no_load_{{[0-9]+}}"], ptx.predicate}
// HOPPER-NEXT:     %{{.*}} = arith.constant 0 : index
// HOPPER-NEXT:     scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) -> (!hopper.ring_position<stages = 2>, !hopper.ring_position<stages = 2>, index, !hopper.accumulator<64x128xf32>) {
// HOPPER:            hopper.wgmma_mma_async
// HOPPER:            hopper.ring_advance
// HOPPER:            hopper.tma_load
// HOPPER:          }{ptx.labels = ["no_load_{{[0-9]+}}"], ptx.predicate}
