// RUN: mmcomp-opt %s -p carry-ring-positions --split-input-file | filecheck %s
// RUN: mmcomp-opt %s -p carry-ring-positions --split-input-file | mmcomp-opt --split-input-file | filecheck %s
// RUN: mmcomp-opt %s -p carry-ring-positions,carry-ring-positions --split-input-file | filecheck %s
// RUN: mmcomp-opt %s -p carry-ring-positions,lower-schedule-to-hopper --split-input-file | filecheck %s --check-prefix=HOPPER

// Ping-pong: the consumer warpgroups take alternate tiles. Besides the positions, the
// consumer region counts the tiles (%tiles, from 0 after the ring start, carried by the
// loop over tiles after the position, one on after each tile) and the rest of each tile,
// from the K loop on, is the else-block of the turn: an scf.if marked hopper.turn on the
// counter's parity against the consumer's index (hopper.consumer_index), whose then-block
// (the other consumer's tile) moves the position past that tile's K blocks
// (hopper.ring_skip over the K loop's range). The turn returns the position after the
// tile, which the loop yields. Running the pass again changes nothing.
builtin.module {
  func.func @lin(%a: memref<300x200xbf16> {fusion.roles = #fusion.roles<[m, k]>}, %w: memref<500x200xbf16> {fusion.roles = #fusion.roles<[n, k]>}, %out0: memref<300x500xbf16> {fusion.roles = #fusion.roles<[m, n]>, sched.output}, %partials0: memref<2x12x128x128xf32> {sched.workspace = "partials"}, %arrivals: memref<12xi32> {sched.workspace = "arrivals"}) attributes {sched.grid = 24 : i64, sched.cluster = 1 : i64, sched.num_inputs = 2 : i64, sched.num_outputs = 1 : i64, fusion.space = #fusion.space<m = 300, n = 500, k = 200>, sched.params = #sched.params<tile = 128x128x64, warpgroup = 128x128, instr = m64n128k16, stages = 4, cluster = 1x1, raster = m, swizzle = 4, strategy = persistent, split_k = 2, warp_specialization = pingpong, registers = 40/232, epilogue = registers>, hopper.warp_roles = #hopper.warp_roles<slots = 2>} {
    hopper.warp_specialize pingpong producer {
      %c0 = arith.constant 0 : index
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
        scf.for %kb = %slice to %c4 step %c2 {
          %k0 = arith.muli %kb, %c64 : index
          %a_tile = sched.load_tile %a[%m0, %k0] {hopper.slot = 0 : i64} : memref<300x200xbf16> -> tensor<128x64xbf16>
          %w_tile = sched.load_tile %w[%n0, %k0] {hopper.slot = 1 : i64} : memref<500x200xbf16> -> tensor<128x64xbf16>
        }
      }
    } consumer {
      %c0_1 = arith.constant 0 : index
      %c1_1 = arith.constant 1 : index
      %c2_1 = arith.constant 2 : index
      %c4_1 = arith.constant 4 : index
      %c24_1 = arith.constant 24 : index
      %c64_1 = arith.constant 64 : index
      %c128_1 = arith.constant 128 : index
      %cta_1 = "gpu.block_id"() <{dimension = #gpu<dim x>}> : () -> index
      %grid_1 = "gpu.grid_dim"() <{dimension = #gpu<dim x>}> : () -> index
      scf.for %unit_1 = %cta_1 to %c24_1 step %grid_1 {
        %slice_1 = arith.remui %unit_1, %c2_1 : index
        %tile_unit_1 = arith.divui %unit_1, %c2_1 : index
        %tile_n_1 = arith.remui %tile_unit_1, %c4_1 : index
        %tile_m_1 = arith.divui %tile_unit_1, %c4_1 : index
        %m0_1 = arith.muli %tile_m_1, %c128_1 : index
        %n0_1 = arith.muli %tile_n_1, %c128_1 : index
        %zero = sched.zero_tile : tensor<128x128xf32>
        %acc = scf.for %kb_1 = %slice_1 to %c4_1 step %c2_1 iter_args(%acc_1 = %zero) -> (tensor<128x128xf32>) {
          %k0_1 = arith.muli %kb_1, %c64_1 : index
          %a_tile_1 = sched.load_tile %a[%m0_1, %k0_1] {hopper.slot = 0 : i64} : memref<300x200xbf16> -> tensor<128x64xbf16>
          %w_tile_1 = sched.load_tile %w[%n0_1, %k0_1] {hopper.slot = 1 : i64} : memref<500x200xbf16> -> tensor<128x64xbf16>
          %acc_2 = sched.mma %a_tile_1 [m, k], %w_tile_1 [n, k], %acc_1 [m, n] : tensor<128x64xbf16>, tensor<128x64xbf16>, tensor<128x128xf32>
          scf.yield %acc_2 : tensor<128x128xf32>
        }
        sched.store_partial %acc, %partials0[%slice_1, %tile_unit_1] : tensor<128x128xf32>, memref<2x12x128x128xf32>
        %arrived = sched.arrive %arrivals[%tile_unit_1] : memref<12xi32> -> index
        %last_slice = arith.cmpi eq, %arrived, %c1_1 : index
        scf.if %last_slice {
          %sum = sched.reduce_partials %partials0[%tile_unit_1] : memref<2x12x128x128xf32> -> tensor<128x128xf32>
          %o = sched.epilogue(%sum) : (tensor<128x128xf32>) -> tensor<128x128xbf16> {
          ^bb0(%y: tensor<128x128xf32>):
            %o_1 = fusion.cast %y {fusion.roles = #fusion.roles<[m, n]>} : tensor<128x128xf32> to tensor<128x128xbf16>
            sched.yield %o_1 : tensor<128x128xbf16>
          }
          sched.store_tile %o, %out0[%m0_1, %n0_1] : tensor<128x128xbf16>, memref<300x500xbf16>
        }
      }
    }
    func.return
  }
}

// CHECK:      } consumer {
// CHECK-NEXT:   %ring_3 = hopper.ring_start : !hopper.ring_position<stages = 4>
// CHECK-NEXT:   %tiles = arith.constant 0 : index
// CHECK-NEXT:   %consumer = hopper.consumer_index : index
// CHECK:        %ring_4, %tiles_1 = scf.for %unit_1 = %cta_1 to %c24_1 step %grid_1 iter_args(%at_2 = %ring_3, %seen = %tiles) -> (!hopper.ring_position<stages = 4>, index) {
// CHECK:          %zero = sched.zero_tile : tensor<128x128xf32>
// CHECK-NEXT:     %[[ONE:.*]] = arith.constant 1 : index
// CHECK-NEXT:     %parity = arith.andi %seen, %[[ONE]] : index
// CHECK-NEXT:     %mine = arith.cmpi eq, %parity, %consumer : index
// CHECK-NEXT:     %true = arith.constant true
// CHECK-NEXT:     %theirs = arith.xori %mine, %true : i1
// CHECK-NEXT:     %ring_5 = scf.if %theirs -> (!hopper.ring_position<stages = 4>) {
// CHECK-NEXT:       %skipped = hopper.ring_skip %at_2, %slice_1 to %c4_1 step %c2_1 : !hopper.ring_position<stages = 4>
// CHECK-NEXT:       scf.yield %skipped : !hopper.ring_position<stages = 4>
// CHECK-NEXT:     } else {
// CHECK-NEXT:       %ring_6, %acc = scf.for %kb_1 = %slice_1 to %c4_1 step %c2_1 iter_args(%at_3 = %at_2, %acc_1 = %zero) -> (!hopper.ring_position<stages = 4>, tensor<128x128xf32>) {
// CHECK:              sched.mma
// CHECK:            }
// CHECK-NEXT:       sched.store_partial %acc
// CHECK:            scf.if %last_slice {
// CHECK:              sched.store_tile %o, %out0[%m0_1, %n0_1]
// CHECK-NEXT:       }
// CHECK-NEXT:       scf.yield %ring_6 : !hopper.ring_position<stages = 4>
// CHECK-NEXT:     }{hopper.turn}
// CHECK-NEXT:     %[[ONE_2:.*]] = arith.constant 1 : index
// CHECK-NEXT:     %tiles_2 = arith.addi %seen, %[[ONE_2]] : index
// CHECK-NEXT:     scf.yield %ring_5, %tiles_2 : !hopper.ring_position<stages = 4>, index
// CHECK-NEXT:   }
// CHECK-NEXT: }

// lower-schedule-to-hopper: the loop over tiles carries the counter's copy after the
// position; the turn is a branch on its condition as a predicate (labels my_tile and
// tile_done), whose then-block advances the position by the K loop's trip count; the
// else-block waits for the other consumer's previous tile (no_order_wait), runs the K loop
// and the rest of the tile.
// HOPPER:      hopper.kernel @lin(
// HOPPER:        scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%{{.*}} = %{{.*}}, %[[SEEN:.*]] = %{{.*}}) -> (!hopper.ring_position<stages = 4>, index) {
// HOPPER:          %[[PARITY:.*]] = arith.andi %[[SEEN]], %{{.*}} : index
// HOPPER-NEXT:     %[[MINE:.*]] = arith.cmpi eq, %[[PARITY]], %{{.*}} : index
// HOPPER-NEXT:     %[[TRUE:.*]] = arith.constant true
// HOPPER-NEXT:     %[[THEIRS:.*]] = arith.xori %[[MINE]], %[[TRUE]] : i1
// HOPPER-NEXT:     %{{.*}} = scf.if %[[THEIRS]] -> (!hopper.ring_position<stages = 4>) {
// HOPPER:            arith.ceildivui
// HOPPER:            %[[SKIPPED:.*]] = hopper.ring_advance_by
// HOPPER-NEXT:       scf.yield %[[SKIPPED]] : !hopper.ring_position<stages = 4>
// HOPPER-NEXT:     } else {
// HOPPER:            ptx.bar sync
// HOPPER:            hopper.wgmma_mma_async
// HOPPER:          }{ptx.labels = ["my_tile_{{[0-9]+}}", "tile_done_{{[0-9]+}}"], ptx.predicate}
// HOPPER-NEXT:     %[[ONE:.*]] = arith.constant 1 : index
// HOPPER-NEXT:     %[[NEXT:.*]] = arith.addi %[[SEEN]], %[[ONE]] : index
// HOPPER-NEXT:     scf.yield %{{.*}}, %[[NEXT]] : !hopper.ring_position<stages = 4>, index

