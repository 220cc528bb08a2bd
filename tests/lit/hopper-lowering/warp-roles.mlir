// RUN: mmcomp-opt %s -p carry-ring-positions,lower-schedule-to-hopper,convert-hopper-to-ptx,convert-scf-to-ptx,convert-arith-to-ptx -t ptx | filecheck %s

// A partitioned kernel whose sched.params were edited after partition-warp-roles: 2 stages
// (partition-warp-roles saw 4) and registers 24/240. `#hopper.warp_roles` holds only the
// ring slots, so sched.params alone decides the stages, the register split and the warp
// specialization, and the PTX follows the edit: 2 full and 2 empty barriers.
builtin.module {
  func.func @lin(%a: memref<300x200xbf16> {fusion.roles = #fusion.roles<[m, k]>}, %w: memref<500x200xbf16> {fusion.roles = #fusion.roles<[n, k]>}, %bias: memref<500xbf16> {fusion.roles = #fusion.roles<[n]>}, %out0: memref<300x500xbf16> {fusion.roles = #fusion.roles<[m, n]>, sched.output}) attributes {sched.grid = 12 : i64, sched.cluster = 1 : i64, sched.num_inputs = 3 : i64, sched.num_outputs = 1 : i64, fusion.space = #fusion.space<m = 300, n = 500, k = 200>, sched.params = #sched.params<tile = 128x128x64, warpgroup = 64x128, instr = m64n128k16, stages = 2, cluster = 1x1, raster = m, swizzle = 1, strategy = persistent, split_k = 1, warp_specialization = cooperative, registers = 24/240, epilogue = registers>, hopper.warp_roles = #hopper.warp_roles<slots = 2>} {
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

// CHECK:     .maxnreg 168
// CHECK:     .reqntid 384
// CHECK:     mbarrier.init.shared::cta.b64 [{{%r[0-9]+}}], 1;
// CHECK:     mbarrier.init.shared::cta.b64 [{{%r[0-9]+}}], 2;
// CHECK:     mbarrier.init.shared::cta.b64 [{{%r[0-9]+}}], 1;
// CHECK:     mbarrier.init.shared::cta.b64 [{{%r[0-9]+}}], 2;
// CHECK-NOT: mbarrier.init
// CHECK:     setmaxnreg.dec.sync.aligned.u32 24;
// CHECK:     setmaxnreg.inc.sync.aligned.u32 240;
