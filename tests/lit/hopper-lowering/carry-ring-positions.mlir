// RUN: mmcomp-opt %s -p carry-ring-positions --split-input-file | filecheck %s
// RUN: mmcomp-opt %s -p carry-ring-positions --split-input-file | mmcomp-opt --split-input-file | filecheck %s
// RUN: mmcomp-opt %s -p carry-ring-positions,carry-ring-positions --split-input-file | filecheck %s
// RUN: mmcomp-opt %s -p carry-ring-positions,lower-schedule-to-hopper --split-input-file | filecheck %s --check-prefix=HOPPER

// A partitioned cooperative kernel (partition-warp-roles' output): each role region opens
// with its ring start, the persistent loop and the K loop carry the position as their
// first iter_arg, the K loop's body yields its advance, and the persistent loop yields the
// position the K loop left. Running the pass again changes nothing.
builtin.module {
  func.func @lin(%a: memref<300x200xbf16> {fusion.roles = #fusion.roles<[m, k]>}, %w: memref<500x200xbf16> {fusion.roles = #fusion.roles<[n, k]>}, %bias: memref<500xbf16> {fusion.roles = #fusion.roles<[n]>}, %out0: memref<300x500xbf16> {fusion.roles = #fusion.roles<[m, n]>, sched.output}) attributes {sched.grid = 12 : i64, sched.cluster = 1 : i64, sched.num_inputs = 3 : i64, sched.num_outputs = 1 : i64, fusion.space = #fusion.space<m = 300, n = 500, k = 200>, sched.params = #sched.params<tile = 128x128x64, warpgroup = 64x128, instr = m64n128k16, stages = 4, cluster = 1x1, raster = m, swizzle = 1, strategy = persistent, split_k = 1, warp_specialization = cooperative, registers = 40/232, epilogue = registers>, hopper.warp_roles = #hopper.warp_roles<slots = 2>} {
    hopper.warp_specialize cooperative producer {
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
        scf.for %kb = %c0 to %c4 step %c1 {
          %k0 = arith.muli %kb, %c64 : index
          %a_tile = sched.load_tile %a[%m0, %k0] {hopper.slot = 0 : i64} : memref<300x200xbf16> -> tensor<128x64xbf16>
          %w_tile = sched.load_tile %w[%n0, %k0] {hopper.slot = 1 : i64} : memref<500x200xbf16> -> tensor<128x64xbf16>
        }
      }
    } consumer {
      %c0_1 = arith.constant 0 : index
      %c1_1 = arith.constant 1 : index
      %c3_1 = arith.constant 3 : index
      %c4_1 = arith.constant 4 : index
      %c12_1 = arith.constant 12 : index
      %c64_1 = arith.constant 64 : index
      %c128_1 = arith.constant 128 : index
      %cta_1 = "gpu.block_id"() <{dimension = #gpu<dim x>}> : () -> index
      %grid_1 = "gpu.grid_dim"() <{dimension = #gpu<dim x>}> : () -> index
      scf.for %unit_1 = %cta_1 to %c12_1 step %grid_1 {
        %tile_n_1 = arith.divui %unit_1, %c3_1 : index
        %tile_m_1 = arith.remui %unit_1, %c3_1 : index
        %m0_1 = arith.muli %tile_m_1, %c128_1 : index
        %n0_1 = arith.muli %tile_n_1, %c128_1 : index
        %zero = sched.zero_tile : tensor<128x128xf32>
        %acc = scf.for %kb_1 = %c0_1 to %c4_1 step %c1_1 iter_args(%acc_1 = %zero) -> (tensor<128x128xf32>) {
          %k0_1 = arith.muli %kb_1, %c64_1 : index
          %a_tile_1 = sched.load_tile %a[%m0_1, %k0_1] {hopper.slot = 0 : i64} : memref<300x200xbf16> -> tensor<128x64xbf16>
          %w_tile_1 = sched.load_tile %w[%n0_1, %k0_1] {hopper.slot = 1 : i64} : memref<500x200xbf16> -> tensor<128x64xbf16>
          %acc_2 = sched.mma %a_tile_1 [m, k], %w_tile_1 [n, k], %acc_1 [m, n] : tensor<128x64xbf16>, tensor<128x64xbf16>, tensor<128x128xf32>
          scf.yield %acc_2 : tensor<128x128xf32>
        }
        %bias_tile = sched.load_tile %bias[%n0_1] : memref<500xbf16> -> tensor<128xbf16>
        %0 = sched.epilogue(%acc, %bias_tile) : (tensor<128x128xf32>, tensor<128xbf16>) -> tensor<128x128xbf16> {
        ^bb0(%1: tensor<128x128xf32>, %bias_1: tensor<128xbf16>):
          %bias_f32 = fusion.cast %bias_1 {fusion.roles = #fusion.roles<[n]>} : tensor<128xbf16> to tensor<128xf32>
          %bias_row = fusion.broadcast %bias_f32 new_dims [true, false] {fusion.roles = #fusion.roles<[m, n]>} : tensor<128xf32> to tensor<128x128xf32>
          %2 = fusion.add %1, %bias_row {fusion.roles = #fusion.roles<[m, n]>} : tensor<128x128xf32>
          %3 = fusion.gelu %2 approximate tanh {fusion.roles = #fusion.roles<[m, n]>} : tensor<128x128xf32>
          %4 = fusion.cast %3 {fusion.roles = #fusion.roles<[m, n]>} : tensor<128x128xf32> to tensor<128x128xbf16>
          sched.yield %4 : tensor<128x128xbf16>
        }
        sched.store_tile %0, %out0[%m0_1, %n0_1] : tensor<128x128xbf16>, memref<300x500xbf16>
      }
    }
    func.return
  }
}

// CHECK:      hopper.warp_specialize cooperative producer {
// CHECK-NEXT:   %ring = hopper.ring_start : !hopper.ring_position<stages = 4>
// CHECK:        %ring_1 = scf.for %unit = %cta to %c12 step %grid iter_args(%at = %ring) -> (!hopper.ring_position<stages = 4>) {
// CHECK:          %ring_2 = scf.for %kb = %c0 to %c4 step %c1 iter_args(%at_1 = %at) -> (!hopper.ring_position<stages = 4>) {
// CHECK-NEXT:       %k0 = arith.muli %kb, %c64 : index
// CHECK-NEXT:       %a_tile = sched.load_tile %a[%m0, %k0] {hopper.slot = 0 : i64}
// CHECK-NEXT:       %w_tile = sched.load_tile %w[%n0, %k0] {hopper.slot = 1 : i64}
// CHECK-NEXT:       %next = hopper.ring_advance %at_1 : !hopper.ring_position<stages = 4>
// CHECK-NEXT:       scf.yield %next : !hopper.ring_position<stages = 4>
// CHECK-NEXT:     }
// CHECK-NEXT:     scf.yield %ring_2 : !hopper.ring_position<stages = 4>
// CHECK-NEXT:   }
// CHECK-NEXT: } consumer {
// CHECK-NEXT:   %ring_3 = hopper.ring_start : !hopper.ring_position<stages = 4>
// CHECK:        %ring_4 = scf.for %unit_1 = %cta_1 to %c12_1 step %grid_1 iter_args(%at_2 = %ring_3) -> (!hopper.ring_position<stages = 4>) {
// CHECK:          %zero = sched.zero_tile : tensor<128x128xf32>
// CHECK-NEXT:     %ring_5, %acc = scf.for %kb_1 = %c0_1 to %c4_1 step %c1_1 iter_args(%at_3 = %at_2, %acc_1 = %zero) -> (!hopper.ring_position<stages = 4>, tensor<128x128xf32>) {
// CHECK:            %acc_2 = sched.mma %a_tile_1 [m, k], %w_tile_1 [n, k], %acc_1 [m, n]
// CHECK-NEXT:       %next_1 = hopper.ring_advance %at_3 : !hopper.ring_position<stages = 4>
// CHECK-NEXT:       scf.yield %next_1, %acc_2 : !hopper.ring_position<stages = 4>, tensor<128x128xf32>
// CHECK-NEXT:     }
// CHECK:          sched.epilogue(%acc, %bias_tile)
// CHECK:          sched.store_tile
// CHECK-NEXT:     scf.yield %ring_5 : !hopper.ring_position<stages = 4>
// CHECK-NEXT:   }
// CHECK-NEXT: }

// lower-schedule-to-hopper: each role's position is the copy of its ring start, carried
// as the copies of its loops' iter_args; each K block advances it and yields the advance.
// HOPPER:      hopper.kernel @lin(
// HOPPER:        %[[PRODUCER:.*]] = hopper.ring_start : !hopper.ring_position<stages = 4>
// HOPPER:        scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[AT:.*]] = %[[PRODUCER]]) -> (!hopper.ring_position<stages = 4>) {
// HOPPER:          scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[AT_K:.*]] = %[[AT]]) -> (!hopper.ring_position<stages = 4>) {
// HOPPER:            hopper.tma_load
// HOPPER:            %[[NEXT:.*]] = hopper.ring_advance %[[AT_K]] : !hopper.ring_position<stages = 4>
// HOPPER-NEXT:       scf.yield %[[NEXT]] : !hopper.ring_position<stages = 4>
// HOPPER:        %[[CONSUMER:.*]] = hopper.ring_start : !hopper.ring_position<stages = 4>
// HOPPER:        scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%{{.*}} = %[[CONSUMER]]) -> (!hopper.ring_position<stages = 4>) {
// HOPPER:          hopper.wgmma_mma_async

// -----

// A K loop inside a branch: the branch returns the position, the K loop's in the region
// that holds it, the one from before it in the other (the producer's branch had no
// else-block: one that only yields is made).
builtin.module {
  func.func @lin(%a: memref<300x200xbf16> {fusion.roles = #fusion.roles<[m, k]>}, %w: memref<500x200xbf16> {fusion.roles = #fusion.roles<[n, k]>}, %bias: memref<500xbf16> {fusion.roles = #fusion.roles<[n]>}, %out0: memref<300x500xbf16> {fusion.roles = #fusion.roles<[m, n]>, sched.output}) attributes {sched.grid = 12 : i64, sched.cluster = 1 : i64, sched.num_inputs = 3 : i64, sched.num_outputs = 1 : i64, fusion.space = #fusion.space<m = 300, n = 500, k = 200>, sched.params = #sched.params<tile = 128x128x64, warpgroup = 64x128, instr = m64n128k16, stages = 4, cluster = 1x1, raster = m, swizzle = 1, strategy = persistent, split_k = 1, warp_specialization = cooperative, registers = 40/232, epilogue = registers>, hopper.warp_roles = #hopper.warp_roles<slots = 2>} {
    hopper.warp_specialize cooperative producer {
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
        %ragged = arith.cmpi ult, %m0, %c128 : index
        scf.if %ragged {
          scf.for %kb = %c0 to %c4 step %c1 {
            %k0 = arith.muli %kb, %c64 : index
            %a_tile = sched.load_tile %a[%m0, %k0] {hopper.slot = 0 : i64} : memref<300x200xbf16> -> tensor<128x64xbf16>
            %w_tile = sched.load_tile %w[%n0, %k0] {hopper.slot = 1 : i64} : memref<500x200xbf16> -> tensor<128x64xbf16>
          }
        }
      }
    } consumer {
      %c0_1 = arith.constant 0 : index
      %c1_1 = arith.constant 1 : index
      %c3_1 = arith.constant 3 : index
      %c4_1 = arith.constant 4 : index
      %c12_1 = arith.constant 12 : index
      %c64_1 = arith.constant 64 : index
      %c128_1 = arith.constant 128 : index
      %cta_1 = "gpu.block_id"() <{dimension = #gpu<dim x>}> : () -> index
      %grid_1 = "gpu.grid_dim"() <{dimension = #gpu<dim x>}> : () -> index
      scf.for %unit_1 = %cta_1 to %c12_1 step %grid_1 {
        %tile_n_1 = arith.divui %unit_1, %c3_1 : index
        %tile_m_1 = arith.remui %unit_1, %c3_1 : index
        %m0_1 = arith.muli %tile_m_1, %c128_1 : index
        %n0_1 = arith.muli %tile_n_1, %c128_1 : index
        %ragged_1 = arith.cmpi ult, %m0_1, %c128_1 : index
        scf.if %ragged_1 {
          %zero = sched.zero_tile : tensor<128x128xf32>
          %acc = scf.for %kb_1 = %c0_1 to %c4_1 step %c1_1 iter_args(%acc_1 = %zero) -> (tensor<128x128xf32>) {
            %k0_1 = arith.muli %kb_1, %c64_1 : index
            %a_tile_1 = sched.load_tile %a[%m0_1, %k0_1] {hopper.slot = 0 : i64} : memref<300x200xbf16> -> tensor<128x64xbf16>
            %w_tile_1 = sched.load_tile %w[%n0_1, %k0_1] {hopper.slot = 1 : i64} : memref<500x200xbf16> -> tensor<128x64xbf16>
            %acc_2 = sched.mma %a_tile_1 [m, k], %w_tile_1 [n, k], %acc_1 [m, n] : tensor<128x64xbf16>, tensor<128x64xbf16>, tensor<128x128xf32>
            scf.yield %acc_2 : tensor<128x128xf32>
          }
          %bias_tile = sched.load_tile %bias[%n0_1] : memref<500xbf16> -> tensor<128xbf16>
          %0 = sched.epilogue(%acc, %bias_tile) : (tensor<128x128xf32>, tensor<128xbf16>) -> tensor<128x128xbf16> {
          ^bb0(%1: tensor<128x128xf32>, %bias_1: tensor<128xbf16>):
            %bias_f32 = fusion.cast %bias_1 {fusion.roles = #fusion.roles<[n]>} : tensor<128xbf16> to tensor<128xf32>
            %bias_row = fusion.broadcast %bias_f32 new_dims [true, false] {fusion.roles = #fusion.roles<[m, n]>} : tensor<128xf32> to tensor<128x128xf32>
            %2 = fusion.add %1, %bias_row {fusion.roles = #fusion.roles<[m, n]>} : tensor<128x128xf32>
            %3 = fusion.gelu %2 approximate tanh {fusion.roles = #fusion.roles<[m, n]>} : tensor<128x128xf32>
            %4 = fusion.cast %3 {fusion.roles = #fusion.roles<[m, n]>} : tensor<128x128xf32> to tensor<128x128xbf16>
            sched.yield %4 : tensor<128x128xbf16>
          }
          sched.store_tile %0, %out0[%m0_1, %n0_1] : tensor<128x128xbf16>, memref<300x500xbf16>
        } else {
        }
      }
    }
    func.return
  }
}

// CHECK:      %ring_1 = scf.for %unit = %cta to %c12 step %grid iter_args(%at = %ring) -> (!hopper.ring_position<stages = 4>) {
// CHECK:        %ragged = arith.cmpi ult, %m0, %c128 : index
// CHECK-NEXT:   %ring_2 = scf.if %ragged -> (!hopper.ring_position<stages = 4>) {
// CHECK-NEXT:     %ring_3 = scf.for %kb = %c0 to %c4 step %c1 iter_args(%at_1 = %at) -> (!hopper.ring_position<stages = 4>) {
// CHECK:          scf.yield %ring_3 : !hopper.ring_position<stages = 4>
// CHECK-NEXT:   } else {
// CHECK-NEXT:     scf.yield %at : !hopper.ring_position<stages = 4>
// CHECK-NEXT:   }
// CHECK-NEXT:   scf.yield %ring_2 : !hopper.ring_position<stages = 4>
// CHECK:      } consumer {
// CHECK:        %ring_6 = scf.if %ragged_1 -> (!hopper.ring_position<stages = 4>) {
// CHECK:          %ring_7, %acc = scf.for %kb_1
// CHECK:          sched.store_tile
// CHECK-NEXT:     scf.yield %ring_7 : !hopper.ring_position<stages = 4>
// CHECK-NEXT:   } else {
// CHECK-NEXT:     scf.yield %at_2 : !hopper.ring_position<stages = 4>
// CHECK-NEXT:   }

// The hopper level's branches return the positions too (the else-block keeps its label).
// HOPPER:      hopper.kernel @lin(
// HOPPER:        scf.if %{{.*}} -> (!hopper.ring_position<stages = 4>) {
// HOPPER:          hopper.tma_load
// HOPPER:        } else {
// HOPPER-NEXT:     scf.yield %{{.*}} : !hopper.ring_position<stages = 4>
// HOPPER-NEXT:   }{ptx.labels = ["else_{{[0-9]+}}", "endif_{{[0-9]+}}"]}

// -----

// Without warp specialization the one region holds the consumers' position and, after it,
// thread 0's load position (carry-ring-positions-loads-ahead.mlir shows its loads ahead);
// a split-K kernel's branch after the K loop holds no K loop and is left as it is.
builtin.module {
  func.func @lin(%a: memref<300x200xbf16> {fusion.roles = #fusion.roles<[m, k]>}, %w: memref<500x200xbf16> {fusion.roles = #fusion.roles<[n, k]>}, %out0: memref<300x500xbf16> {fusion.roles = #fusion.roles<[m, n]>, sched.output}, %partials0: memref<2x12x128x128xf32> {sched.workspace = "partials"}, %arrivals: memref<12xi32> {sched.workspace = "arrivals"}) attributes {sched.grid = 24 : i64, sched.cluster = 1 : i64, sched.num_inputs = 2 : i64, sched.num_outputs = 1 : i64, fusion.space = #fusion.space<m = 300, n = 500, k = 200>, sched.params = #sched.params<tile = 128x128x64, warpgroup = 64x128, instr = m64n128k16, stages = 4, cluster = 1x1, raster = m, swizzle = 4, strategy = persistent, split_k = 2, warp_specialization = none, registers = 248/248, epilogue = smem>, hopper.warp_roles = #hopper.warp_roles<slots = 2>} {
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
// CHECK-NEXT:   %ring = hopper.ring_start : !hopper.ring_position<stages = 4>
// CHECK-NEXT:   %loads = hopper.ring_start : !hopper.ring_position<stages = 4>
// CHECK:        %ring_1, %loads_1 = scf.for %unit = %cta to %c24 step %grid iter_args(%at = %ring, %loading = %loads) -> (!hopper.ring_position<stages = 4>, !hopper.ring_position<stages = 4>) {
// CHECK:          %ring_2, %[[LOADS:.*]], %acc = scf.for %kb = %slice to %c4 step %c2 iter_args(%at_1 = %at, %loading_1 = %{{.*}}, %acc_1 = %zero) -> (!hopper.ring_position<stages = 4>, !hopper.ring_position<stages = 4>, tensor<128x128xf32>) {
// CHECK:            %next = hopper.ring_advance %at_1 : !hopper.ring_position<stages = 4>
// CHECK:            scf.yield %next, %{{.*}}, %acc_2 : !hopper.ring_position<stages = 4>, !hopper.ring_position<stages = 4>, tensor<128x128xf32>
// CHECK:          scf.if %last_slice {
// CHECK:            sched.store_tile %o, %out0[%m0, %n0]
// CHECK-NEXT:     }
// CHECK-NEXT:     scf.yield %ring_2, %[[LOADS]] : !hopper.ring_position<stages = 4>, !hopper.ring_position<stages = 4>

// HOPPER:      hopper.kernel @lin(
