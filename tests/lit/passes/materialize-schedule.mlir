// RUN: mmcomp-opt %s -p materialize-schedule --split-input-file | filecheck %s
// RUN: mmcomp-opt %s -p materialize-schedule --split-input-file | mmcomp-opt --split-input-file | filecheck %s

// linear + bias, persistent, raster m, swizzle 2 (3 m tiles x 4 n tiles; groups of 2 n
// tiles). The kernel takes memrefs (inputs, then outputs); each CTA walks its tile loop;
// the tile index is turned into (m tile, n tile) by explicit arithmetic; every load, mma,
// epilogue and store is a tile op whose start indices come from the operand's roles.
func.func @lin(%a: tensor<300x200xbf16> {fusion.roles = #fusion.roles<[m, k]>},
               %w: tensor<500x200xbf16> {fusion.roles = #fusion.roles<[n, k]>},
               %bias: tensor<500xf32> {fusion.roles = #fusion.roles<[n]>}) -> tensor<300x500xf32>
    attributes {fusion.space = #fusion.space<m = 300, n = 500, k = 200>} {
  sched.schedule params #sched.params<tile = 128x128x64, swizzle = 2> {
    %m, %n, %k = sched.space m = 300, n = 500, k = 200
    %m_tile, %m_cta = sched.split %m by 128 : !sched.axis<300>
    %n_tile, %n_cta = sched.split %n by 128 : !sched.axis<500>
    %k_blk, %k_cta = sched.split %k by 64 : !sched.axis<200>
    %tile_mn = sched.swizzle %n_tile, %m_tile group 2 : !sched.axis<4>, !sched.axis<3>
    %iter, %slot = sched.split %tile_mn by 12 : !sched.axis<12>
    sched.parallelize %iter to serial : !sched.axis<1>
    sched.parallelize %slot to block_x : !sched.axis<12>
  }
  %y = fusion.mma %a [m, k], %w [n, k] -> [m, n] {fusion.roles = #fusion.roles<[m, n]>} : (tensor<300x200xbf16>, tensor<500x200xbf16>) -> tensor<300x500xf32>
  %b = fusion.broadcast %bias new_dims [true, false] {fusion.roles = #fusion.roles<[m, n]>} : tensor<500xf32> to tensor<300x500xf32>
  %o = fusion.add %y, %b {fusion.roles = #fusion.roles<[m, n]>} : tensor<300x500xf32>
  func.return %o : tensor<300x500xf32>
}
// CHECK-LABEL: func.func @lin(%a: memref<300x200xbf16> {fusion.roles = #fusion.roles<[m, k]>}, %w: memref<500x200xbf16> {fusion.roles = #fusion.roles<[n, k]>}, %bias: memref<500xf32> {fusion.roles = #fusion.roles<[n]>}, %out0: memref<300x500xf32> {fusion.roles = #fusion.roles<[m, n]>, sched.output})
// CHECK-SAME: sched.grid = 12 : i64, sched.cluster = 1 : i64, sched.num_inputs = 3 : i64, sched.num_outputs = 1 : i64
// CHECK:      %cta = "gpu.block_id"() <{dimension = #gpu<dim x>}> : () -> index
// CHECK-NEXT: %grid = "gpu.grid_dim"() <{dimension = #gpu<dim x>}> : () -> index
// CHECK-NEXT: scf.for %unit = %cta to %c12 step %grid {
// CHECK-NEXT:   %group = arith.divui %unit, %c6 : index
// CHECK-NEXT:   %group_first = arith.muli %group, %c2 : index
// CHECK-NEXT:   %group_offset = arith.remui %unit, %c6 : index
// CHECK-NEXT:   %[[R:.*]] = arith.remui %group_offset, %c2 : index
// CHECK-NEXT:   %tile_n = arith.addi %group_first, %[[R]] : index
// CHECK-NEXT:   %tile_m = arith.divui %group_offset, %c2 : index
// CHECK-NEXT:   %m0 = arith.muli %tile_m, %c128 : index
// CHECK-NEXT:   %n0 = arith.muli %tile_n, %c128 : index
// CHECK-NEXT:   %zero = sched.zero_tile : tensor<128x128xf32>
// CHECK-NEXT:   %acc = scf.for %kb = %c0 to %c4 step %c1 iter_args(%[[ACC:.*]] = %zero) -> (tensor<128x128xf32>) {
// CHECK-NEXT:     %k0 = arith.muli %kb, %c64 : index
// CHECK-NEXT:     %a_tile = sched.load_tile %a[%m0, %k0] : memref<300x200xbf16> -> tensor<128x64xbf16>
// CHECK-NEXT:     %w_tile = sched.load_tile %w[%n0, %k0] : memref<500x200xbf16> -> tensor<128x64xbf16>
// CHECK-NEXT:     %[[NEXT:.*]] = sched.mma %a_tile [m, k], %w_tile [n, k], %[[ACC]] [m, n] : tensor<128x64xbf16>, tensor<128x64xbf16>, tensor<128x128xf32>
// CHECK-NEXT:     scf.yield %[[NEXT]] : tensor<128x128xf32>
// CHECK-NEXT:   }
// CHECK-NEXT:   %bias_tile = sched.load_tile %bias[%n0] : memref<500xf32> -> tensor<128xf32>
// CHECK-NEXT:   %o = sched.epilogue(%acc, %bias_tile) : (tensor<128x128xf32>, tensor<128xf32>) -> tensor<128x128xf32> {
// CHECK-NEXT:   ^bb0(%y: tensor<128x128xf32>, %[[BIAS:.*]]: tensor<128xf32>):
// CHECK-NEXT:     %b = fusion.broadcast %[[BIAS]] new_dims [true, false] {fusion.roles = #fusion.roles<[m, n]>} : tensor<128xf32> to tensor<128x128xf32>
// CHECK-NEXT:     %[[O:.*]] = fusion.add %y, %b {fusion.roles = #fusion.roles<[m, n]>} : tensor<128x128xf32>
// CHECK-NEXT:     sched.yield %[[O]] : tensor<128x128xf32>
// CHECK-NEXT:   }
// CHECK-NEXT:   sched.store_tile %o, %out0[%m0, %n0] : tensor<128x128xf32>, memref<300x500xf32>
// CHECK-NEXT: }
// CHECK-NEXT: func.return

// -----

// split_k = 2, one tile per CTA, a 3-tile-wide last swizzle group of 2 (partial group:
// its size is min(3 - first, 2)). Each slice accumulates the K blocks slice, slice + 2, ...,
// stores its partial, and counts its arrival; the last one reduces the partials in slice
// order and runs the epilogue once.
func.func @split(%a: tensor<300x200xbf16> {fusion.roles = #fusion.roles<[m, k]>},
                 %w: tensor<500x200xbf16> {fusion.roles = #fusion.roles<[n, k]>}) -> tensor<300x500xbf16>
    attributes {fusion.space = #fusion.space<m = 300, n = 500, k = 200>} {
  sched.schedule params #sched.params<tile = 128x128x64, raster = n, swizzle = 2, split_k = 2, strategy = one-tile-per-cta> {
    %m, %n, %k = sched.space m = 300, n = 500, k = 200
    %m_tile, %m_cta = sched.split %m by 128 : !sched.axis<300>
    %n_tile, %n_cta = sched.split %n by 128 : !sched.axis<500>
    %k_blk, %k_cta = sched.split %k by 64 : !sched.axis<200>
    %tile_mn = sched.swizzle %m_tile, %n_tile group 2 : !sched.axis<3>, !sched.axis<4>
    %k_iter, %slice = sched.split %k_blk by 2 : !sched.axis<4>
    %work = sched.merge %tile_mn, %slice : !sched.axis<12>, !sched.axis<2>
    sched.parallelize %work to block_x : !sched.axis<24>
  }
  %y = fusion.mma %a [m, k], %w [n, k] -> [m, n] {fusion.roles = #fusion.roles<[m, n]>} : (tensor<300x200xbf16>, tensor<500x200xbf16>) -> tensor<300x500xf32>
  %o = fusion.cast %y {fusion.roles = #fusion.roles<[m, n]>} : tensor<300x500xf32> to tensor<300x500xbf16>
  func.return %o : tensor<300x500xbf16>
}
// CHECK-LABEL: func.func @split
// CHECK-SAME: %partials0: memref<2x12x128x128xf32> {sched.workspace = "partials"}, %arrivals: memref<12xi32> {sched.workspace = "arrivals"}
// CHECK-SAME: sched.grid = 24 : i64
// CHECK:      %cta = "gpu.block_id"() <{dimension = #gpu<dim x>}> : () -> index
// CHECK-NEXT: %slice = arith.remui %cta, %c2 : index
// CHECK-NEXT: %tile_unit = arith.divui %cta, %c2 : index
// CHECK-NEXT: %group = arith.divui %tile_unit, %c8 : index
// CHECK-NEXT: %group_first = arith.muli %group, %c2 : index
// CHECK-NEXT: %group_offset = arith.remui %tile_unit, %c8 : index
// CHECK-NEXT: %group_left = arith.subi %c3, %group_first : index
// CHECK-NEXT: %group_size = arith.minui %group_left, %c2 : index
// CHECK-NEXT: %[[R:.*]] = arith.remui %group_offset, %group_size : index
// CHECK-NEXT: %tile_m = arith.addi %group_first, %[[R]] : index
// CHECK-NEXT: %tile_n = arith.divui %group_offset, %group_size : index
// CHECK:      %acc = scf.for %kb = %slice to %c4 step %c2 iter_args
// CHECK:      sched.store_partial %acc, %partials0[%slice, %tile_unit] : tensor<128x128xf32>, memref<2x12x128x128xf32>
// CHECK-NEXT: %arrived = sched.arrive %arrivals[%tile_unit] : memref<12xi32> -> index
// CHECK-NEXT: %last_slice = arith.cmpi eq, %arrived, %c1 : index
// CHECK-NEXT: scf.if %last_slice {
// CHECK-NEXT:   %sum = sched.reduce_partials %partials0[%tile_unit] : memref<2x12x128x128xf32> -> tensor<128x128xf32>
// CHECK-NEXT:   %o = sched.epilogue(%sum) : (tensor<128x128xf32>) -> tensor<128x128xbf16> {
// CHECK-NEXT:   ^bb0(%y: tensor<128x128xf32>):
// CHECK-NEXT:     %[[C:.*]] = fusion.cast %y {fusion.roles = #fusion.roles<[m, n]>} : tensor<128x128xf32> to tensor<128x128xbf16>
// CHECK-NEXT:     sched.yield %[[C]] : tensor<128x128xbf16>
// CHECK-NEXT:   }
// CHECK-NEXT:   sched.store_tile %o, %out0[%m0, %n0] : tensor<128x128xbf16>, memref<300x500xbf16>
// CHECK-NEXT: }

// -----

// fused_multiply_sum of A[M, 1, K] and B[1, N, K]: the absent axes load with extent 1 at
// index 0, so neither operand sees the other's axis.
func.func @fms(%a: tensor<100x1x70xbf16> {fusion.roles = #fusion.roles<[m, _, k]>},
               %b: tensor<1x90x70xbf16> {fusion.roles = #fusion.roles<[_, n, k]>}) -> tensor<100x90xf32>
    attributes {fusion.space = #fusion.space<m = 100, n = 90, k = 70>} {
  sched.schedule params #sched.params<tile = 64x64x32, swizzle = 1> {
    %m, %n, %k = sched.space m = 100, n = 90, k = 70
    %m_tile, %m_cta = sched.split %m by 64 : !sched.axis<100>
    %n_tile, %n_cta = sched.split %n by 64 : !sched.axis<90>
    %k_blk, %k_cta = sched.split %k by 32 : !sched.axis<70>
    %tile_mn = sched.swizzle %n_tile, %m_tile group 1 : !sched.axis<2>, !sched.axis<2>
    %iter, %slot = sched.split %tile_mn by 4 : !sched.axis<4>
    sched.parallelize %slot to block_x : !sched.axis<4>
  }
  %y = fusion.mma %a [m, _, k], %b [_, n, k] -> [m, n] {fusion.roles = #fusion.roles<[m, n]>} : (tensor<100x1x70xbf16>, tensor<1x90x70xbf16>) -> tensor<100x90xf32>
  func.return %y : tensor<100x90xf32>
}
// CHECK-LABEL: func.func @fms
// CHECK:      %tile_n = arith.divui %unit, %c2 : index
// CHECK-NEXT: %tile_m = arith.remui %unit, %c2 : index
// CHECK:      %a_tile = sched.load_tile %a[%m0, %c0, %k0] : memref<100x1x70xbf16> -> tensor<64x1x32xbf16>
// CHECK-NEXT: %b_tile = sched.load_tile %b[%c0, %n0, %k0] : memref<1x90x70xbf16> -> tensor<1x64x32xbf16>
// CHECK-NEXT: sched.mma %a_tile [m, _, k], %b_tile [_, n, k], %{{.*}} [m, n]
