// RUN: mmcomp-opt %s -p partition-warp-roles,carry-ring-positions,lower-schedule-to-hopper --verify-diagnostics | filecheck %s

// The lowering's last guard on extents (the schedule passes refuse them first): TMA
// coordinates and column limits are signed 32-bit, so no axis may pass 2^31 - 1.
builtin.module {
  func.func @huge(%a: memref<2147483648x200xbf16> {fusion.roles = #fusion.roles<[m, k]>}, %w: memref<500x200xbf16> {fusion.roles = #fusion.roles<[n, k]>}, %bias: memref<500xbf16> {fusion.roles = #fusion.roles<[n]>}, %out0: memref<2147483648x500xbf16> {fusion.roles = #fusion.roles<[m, n]>, sched.output}) attributes {sched.grid = 12 : i64, sched.cluster = 1 : i64, sched.num_inputs = 3 : i64, sched.num_outputs = 1 : i64, fusion.space = #fusion.space<m = 2147483648, n = 500, k = 200>, sched.params = #sched.params<tile = 128x128x64, warpgroup = 64x128, instr = m64n128k16, stages = 4, cluster = 1x1, raster = m, swizzle = 1, strategy = persistent, split_k = 1, warp_specialization = cooperative, registers = 40/232, epilogue = registers>} {
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
        %a_tile = sched.load_tile %a[%m0, %k0] : memref<2147483648x200xbf16> -> tensor<128x64xbf16>
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
      sched.store_tile %0, %out0[%m0, %n0] : tensor<128x128xbf16>, memref<2147483648x500xbf16>
    }
    func.return
  }
}

// CHECK: lower-schedule-to-hopper: @huge: mainloop operand %a: axis 0 has extent 2147483648; TMA coordinates are signed 32-bit, so at most 2147483647
