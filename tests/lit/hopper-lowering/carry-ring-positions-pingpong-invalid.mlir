// RUN: mmcomp-opt %s -p carry-ring-positions --verify-diagnostics | filecheck %s

// A ping-pong K loop inside a branch of the loop over tiles is refused: the tile would end
// inside the branch, whose regions do not return the tile counter.
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
        %ragged = arith.cmpi ult, %m0, %c128 : index
        scf.if %ragged {
          scf.for %kb = %slice to %c4 step %c2 {
            %k0 = arith.muli %kb, %c64 : index
            %a_tile = sched.load_tile %a[%m0, %k0] {hopper.slot = 0 : i64} : memref<300x200xbf16> -> tensor<128x64xbf16>
            %w_tile = sched.load_tile %w[%n0, %k0] {hopper.slot = 1 : i64} : memref<500x200xbf16> -> tensor<128x64xbf16>
          }
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
        %ragged_1 = arith.cmpi ult, %m0_1, %c128_1 : index
        scf.if %ragged_1 {
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
    }
    func.return
  }
}

// CHECK: carry-ring-positions: @lin: a ping-pong tile must end in the body of the loop over tiles, not inside a branch of it
