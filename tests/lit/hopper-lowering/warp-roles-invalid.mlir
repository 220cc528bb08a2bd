// RUN: mmcomp-opt %s -p carry-ring-positions,lower-schedule-to-hopper --verify-diagnostics --split-input-file | filecheck %s

// A partitioned kernel whose `hopper.warp_roles`, ring slots, regions or sched.params
// disagree is an error naming what disagrees.

// The old dictionary form repeats sched.params; it is refused, not silently read.
builtin.module {
  func.func @lin(%a: memref<300x200xbf16> {fusion.roles = #fusion.roles<[m, k]>}, %w: memref<500x200xbf16> {fusion.roles = #fusion.roles<[n, k]>}, %bias: memref<500xbf16> {fusion.roles = #fusion.roles<[n]>}, %out0: memref<300x500xbf16> {fusion.roles = #fusion.roles<[m, n]>, sched.output}) attributes {sched.grid = 12 : i64, sched.cluster = 1 : i64, sched.num_inputs = 3 : i64, sched.num_outputs = 1 : i64, fusion.space = #fusion.space<m = 300, n = 500, k = 200>, sched.params = #sched.params<tile = 128x128x64, warpgroup = 64x128, instr = m64n128k16, stages = 4, cluster = 1x1, raster = m, swizzle = 1, strategy = persistent, split_k = 1, warp_specialization = cooperative, registers = 40/232, epilogue = registers>, hopper.warp_roles = {specialization = "cooperative", producers = 1 : i64, consumers = 2 : i64, threads = 384 : i64, registers = [40 : i64, 232 : i64], stages = 2 : i64, slots = 2 : i64}} {
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

// CHECK: carry-ring-positions: @lin: hopper.warp_roles must be a #hopper.warp_roles<slots = N>, found {{.*}}; the stages, registers and warp specialization are read from sched.params (run partition-warp-roles on the materialized kernel)

// -----

// More slots than the K loop loads.
builtin.module {
  func.func @lin(%a: memref<300x200xbf16> {fusion.roles = #fusion.roles<[m, k]>}, %w: memref<500x200xbf16> {fusion.roles = #fusion.roles<[n, k]>}, %bias: memref<500xbf16> {fusion.roles = #fusion.roles<[n]>}, %out0: memref<300x500xbf16> {fusion.roles = #fusion.roles<[m, n]>, sched.output}) attributes {sched.grid = 12 : i64, sched.cluster = 1 : i64, sched.num_inputs = 3 : i64, sched.num_outputs = 1 : i64, fusion.space = #fusion.space<m = 300, n = 500, k = 200>, sched.params = #sched.params<tile = 128x128x64, warpgroup = 64x128, instr = m64n128k16, stages = 4, cluster = 1x1, raster = m, swizzle = 1, strategy = persistent, split_k = 1, warp_specialization = cooperative, registers = 40/232, epilogue = registers>, hopper.warp_roles = #hopper.warp_roles<slots = 3>} {
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

// CHECK: carry-ring-positions: @lin: hopper.warp_roles has slots = 3, but the K loop loads 2 tiles

// -----

// Two loads of the consumer region marked with the same ring slot.
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
          %w_tile_1 = sched.load_tile %w[%n0_1, %k0_1] {hopper.slot = 0 : i64} : memref<500x200xbf16> -> tensor<128x64xbf16>
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

// CHECK: carry-ring-positions: @lin: hopper.warp_roles: the K loop's loads have hopper.slot [0, 0]; each of 0 to 1 must appear once

// -----

// The producer fills the slots in another order than the consumers read them.
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
          %a_tile = sched.load_tile %a[%m0, %k0] {hopper.slot = 1 : i64} : memref<300x200xbf16> -> tensor<128x64xbf16>
          %w_tile = sched.load_tile %w[%n0, %k0] {hopper.slot = 0 : i64} : memref<500x200xbf16> -> tensor<128x64xbf16>
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

// CHECK: carry-ring-positions: @lin: the producer region loads slots [1, 0], the consumer region reads [0, 1]

// -----

// sched.params edited to a combination the lowering does not build.
builtin.module {
  func.func @lin(%a: memref<300x200xbf16> {fusion.roles = #fusion.roles<[m, k]>}, %w: memref<500x200xbf16> {fusion.roles = #fusion.roles<[n, k]>}, %bias: memref<500xbf16> {fusion.roles = #fusion.roles<[n]>}, %out0: memref<300x500xbf16> {fusion.roles = #fusion.roles<[m, n]>, sched.output}) attributes {sched.grid = 12 : i64, sched.cluster = 1 : i64, sched.num_inputs = 3 : i64, sched.num_outputs = 1 : i64, fusion.space = #fusion.space<m = 300, n = 500, k = 200>, sched.params = #sched.params<tile = 128x128x64, warpgroup = 64x128, instr = m64n128k16, stages = 4, cluster = 2x2, raster = m, swizzle = 1, strategy = persistent, split_k = 1, warp_specialization = cooperative, registers = 40/232, epilogue = registers>, hopper.warp_roles = #hopper.warp_roles<slots = 2>} {
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

// CHECK: carry-ring-positions: @lin: cluster 2x2 is not built by the Hopper lowering; use 1x1, or 2 or 4 CTAs along one axis (2x1, 4x1, 1x2, 1x4)

// -----

// sched.params edited to another warp specialization than the regions were built for.
builtin.module {
  func.func @lin(%a: memref<300x200xbf16> {fusion.roles = #fusion.roles<[m, k]>}, %w: memref<500x200xbf16> {fusion.roles = #fusion.roles<[n, k]>}, %bias: memref<500xbf16> {fusion.roles = #fusion.roles<[n]>}, %out0: memref<300x500xbf16> {fusion.roles = #fusion.roles<[m, n]>, sched.output}) attributes {sched.grid = 12 : i64, sched.cluster = 1 : i64, sched.num_inputs = 3 : i64, sched.num_outputs = 1 : i64, fusion.space = #fusion.space<m = 300, n = 500, k = 200>, sched.params = #sched.params<tile = 128x128x64, warpgroup = 64x128, instr = m64n128k16, stages = 4, cluster = 1x1, raster = m, swizzle = 1, strategy = persistent, split_k = 1, warp_specialization = none, registers = 168/168, epilogue = registers>, hopper.warp_roles = #hopper.warp_roles<slots = 2>} {
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

// CHECK: carry-ring-positions: @lin: hopper.warp_specialize is cooperative, but sched.params has warp_specialization = none; the regions are built for one specialization (partition the materialized kernel with the params it is compiled with)

// -----

// Roles as hopper.role marks on the ops, without hopper.warp_specialize.
builtin.module {
  func.func @lin(%a: memref<300x200xbf16> {fusion.roles = #fusion.roles<[m, k]>}, %w: memref<500x200xbf16> {fusion.roles = #fusion.roles<[n, k]>}, %bias: memref<500xbf16> {fusion.roles = #fusion.roles<[n]>}, %out0: memref<300x500xbf16> {fusion.roles = #fusion.roles<[m, n]>, sched.output}) attributes {sched.grid = 12 : i64, sched.cluster = 1 : i64, sched.num_inputs = 3 : i64, sched.num_outputs = 1 : i64, fusion.space = #fusion.space<m = 300, n = 500, k = 200>, sched.params = #sched.params<tile = 128x128x64, warpgroup = 64x128, instr = m64n128k16, stages = 4, cluster = 1x1, raster = m, swizzle = 1, strategy = persistent, split_k = 1, warp_specialization = cooperative, registers = 40/232, epilogue = registers>, hopper.warp_roles = #hopper.warp_roles<slots = 2>} {
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
      %zero = sched.zero_tile {hopper.role = "consumer"} : tensor<128x128xf32>
      %acc = scf.for %kb = %c0 to %c4 step %c1 iter_args(%acc_1 = %zero) -> (tensor<128x128xf32>) {
        %k0 = arith.muli %kb, %c64 : index
        %a_tile = sched.load_tile %a[%m0, %k0] {hopper.role = "producer", hopper.slot = 0 : i64} : memref<300x200xbf16> -> tensor<128x64xbf16>
        %w_tile = sched.load_tile %w[%n0, %k0] {hopper.role = "producer", hopper.slot = 1 : i64} : memref<500x200xbf16> -> tensor<128x64xbf16>
        %acc_2 = sched.mma %a_tile [m, k], %w_tile [n, k], %acc_1 [m, n] {hopper.role = "consumer"} : tensor<128x64xbf16>, tensor<128x64xbf16>, tensor<128x128xf32>
        scf.yield %acc_2 : tensor<128x128xf32>
      }
      %bias_tile = sched.load_tile %bias[%n0] {hopper.role = "consumer"} : memref<500xbf16> -> tensor<128xbf16>
      %0 = sched.epilogue(%acc, %bias_tile) : (tensor<128x128xf32>, tensor<128xbf16>) -> tensor<128x128xbf16> attributes {hopper.role = "consumer"} {
      ^bb0(%1: tensor<128x128xf32>, %bias_1: tensor<128xbf16>):
        %bias_f32 = fusion.cast %bias_1 {fusion.roles = #fusion.roles<[n]>} : tensor<128xbf16> to tensor<128xf32>
        %bias_row = fusion.broadcast %bias_f32 new_dims [true, false] {fusion.roles = #fusion.roles<[m, n]>} : tensor<128xf32> to tensor<128x128xf32>
        %2 = fusion.add %1, %bias_row {fusion.roles = #fusion.roles<[m, n]>} : tensor<128x128xf32>
        %3 = fusion.gelu %2 approximate tanh {fusion.roles = #fusion.roles<[m, n]>} : tensor<128x128xf32>
        %4 = fusion.cast %3 {fusion.roles = #fusion.roles<[m, n]>} : tensor<128x128xf32> to tensor<128x128xbf16>
        sched.yield %4 : tensor<128x128xbf16>
      }
      sched.store_tile %0, %out0[%m0, %n0] {hopper.role = "consumer"} : tensor<128x128xbf16>, memref<300x500xbf16>
    }
    func.return
  }
}

// CHECK: lower-schedule-to-hopper: @lin: a partitioned kernel's body is one hopper.warp_specialize, its ops carry hopper.role marks instead (run partition-warp-roles on the materialized kernel)
