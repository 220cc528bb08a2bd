// RUN: mmcomp-opt %s -p materialize-schedule --split-input-file | filecheck %s
// RUN: mmcomp-opt %s -p materialize-schedule --split-input-file | mmcomp-opt --split-input-file | filecheck %s

// A dynamic M, persistent, raster n with groups of 2 m tiles, split-K 2, an [M, N] operand.
// The runtime extent is the index argument %m (sched.extent = "m"); the tile count, the
// group sizes and the loop bound are computed from it, and @lin_launch (the kernel's
// sched.grid) gives the grid, the CTA tiles that size the workspaces, and the work units.
func.func @lin(%a: tensor<?x200xbf16> {fusion.roles = #fusion.roles<[m, k]>}, %w: tensor<500x200xbf16> {fusion.roles = #fusion.roles<[n, k]>}, %t: tensor<?x500xf32> {fusion.roles = #fusion.roles<[m, n]>}) -> tensor<?x500xf32> attributes {fusion.space = #fusion.space<m = ?, n = 500, k = 200>} {
  sched.schedule params #sched.params<tile = 128x128x64, warpgroup = 64x128, instr = m64n128k16, stages = 4, cluster = 1x1, raster = n, swizzle = 2, strategy = persistent, split_k = 2, warp_specialization = cooperative, registers = 40/232, epilogue = smem> {
    %m, %n, %k = sched.space m = ?, n = 500, k = 200
    %m_tile, %m_cta = sched.split %m by 128 : !sched.axis<?>
    %m_wg, %m_wgi = sched.split %m_cta by 64 : !sched.axis<128>
    %m_instr, %m_lane = sched.split %m_wgi by 64 : !sched.axis<64>
    %n_tile, %n_cta = sched.split %n by 128 : !sched.axis<500>
    %n_wg, %n_wgi = sched.split %n_cta by 128 : !sched.axis<128>
    %n_instr, %n_lane = sched.split %n_wgi by 128 : !sched.axis<128>
    %k_blk, %k_cta = sched.split %k by 64 : !sched.axis<200>
    %k_instr, %k_lane = sched.split %k_cta by 16 : !sched.axis<64>
    sched.parallelize %m_wg to warpgroup : !sched.axis<2>
    sched.parallelize %n_wg to warpgroup : !sched.axis<1>
    sched.parallelize %m_lane to instruction : !sched.axis<64>
    sched.parallelize %n_lane to instruction : !sched.axis<128>
    sched.parallelize %k_lane to instruction : !sched.axis<16>
    sched.parallelize %k_blk to serial : !sched.axis<4>
    sched.parallelize %k_instr to serial : !sched.axis<4>
    sched.parallelize %m_instr to serial : !sched.axis<1>
    sched.parallelize %n_instr to serial : !sched.axis<1>
    %tile_mn = sched.swizzle %m_tile, %n_tile group 2 : !sched.axis<?>, !sched.axis<4>
    %k_iter, %slice = sched.split %k_blk by 2 : !sched.axis<4>
    sched.parallelize %k_iter to serial : !sched.axis<2>
    %work = sched.merge %tile_mn, %slice : !sched.axis<?>, !sched.axis<2>
    %iter, %slot = sched.split %work by 132 : !sched.axis<?>
    sched.parallelize %iter to serial : !sched.axis<?>
    sched.reorder %iter, %k_iter, %k_instr, %m_instr, %n_instr : !sched.axis<?>, !sched.axis<2>, !sched.axis<4>, !sched.axis<1>, !sched.axis<1>
    sched.parallelize %slot to block_x : !sched.axis<132>
  }
  %y = fusion.mma %a [m, k], %w [n, k] -> [m, n] {fusion.roles = #fusion.roles<[m, n]>} : (tensor<?x200xbf16>, tensor<500x200xbf16>) -> tensor<?x500xf32>
  %o = fusion.mul %y, %t {fusion.roles = #fusion.roles<[m, n]>} : tensor<?x500xf32>
  func.return %o : tensor<?x500xf32>
}

// CHECK-LABEL: func.func @lin(
// CHECK-SAME:  %a: memref<?x200xbf16> {fusion.roles = #fusion.roles<[m, k]>}
// CHECK-SAME:  %t: memref<?x500xf32> {fusion.roles = #fusion.roles<[m, n]>}
// CHECK-SAME:  %out0: memref<?x500xf32> {fusion.roles = #fusion.roles<[m, n]>, sched.output}
// CHECK-SAME:  %partials0: memref<2x?x128x128xf32> {sched.workspace = "partials"}
// CHECK-SAME:  %arrivals: memref<?xi32> {sched.workspace = "arrivals"}
// CHECK-SAME:  %m: index {sched.extent = "m"})
// CHECK-SAME:  sched.grid = @lin_launch
// CHECK:       %tiles_m = arith.ceildivui %m, %c128 : index
// CHECK-NEXT:  %mn_units = arith.muli %tiles_m, %c4 : index
// CHECK-NEXT:  %units = arith.muli %mn_units, %c2 : index
// CHECK:       scf.for %unit = %cta to %units step %grid {
// CHECK:         %group_left = arith.subi %tiles_m, %group_first : index
// CHECK-NEXT:    %group_size = arith.minui %group_left, %c2 : index
// CHECK:         sched.store_partial %acc, %partials0[%slice, %tile_unit] : tensor<128x128xf32>, memref<2x?x128x128xf32>
// CHECK:         sched.store_tile %o, %out0[%m0, %n0] : tensor<128x128xf32>, memref<?x500xf32>
// CHECK-LABEL: func.func @lin_launch(%m: index {sched.extent = "m"}) -> (index, index, index) {
// CHECK:       %tiles_m = arith.ceildivui %m, %c128 : index
// CHECK-NEXT:  %mn_units = arith.muli %tiles_m, %c4 : index
// CHECK-NEXT:  %units = arith.muli %mn_units, %c2 : index
// CHECK-NEXT:  %clusters = arith.minui %units, %c132 : index
// CHECK-NEXT:  func.return %clusters, %mn_units, %units : index, index, index

// -----

// A dynamic batch and M, one tile per CTA, a 2x1 cluster, raster m: the batch index
// divides by the runtime count of m x n cluster tiles; the grid is the work units times
// the cluster.
func.func @bmm(%a: tensor<?x?x200xbf16> {fusion.roles = #fusion.roles<[b0, m, k]>}, %b: tensor<?x200x500xbf16> {fusion.roles = #fusion.roles<[b0, k, n]>}) -> tensor<?x?x500xf32> attributes {fusion.space = #fusion.space<b0 = ?, m = ?, n = 500, k = 200>} {
  sched.schedule params #sched.params<tile = 128x128x64, warpgroup = 64x128, instr = m64n128k16, stages = 4, cluster = 2x1, raster = m, swizzle = 2, strategy = one-tile-per-cta, split_k = 1, warp_specialization = cooperative, registers = 40/232, epilogue = smem> {
    %b0, %m, %n, %k = sched.space b0 = ?, m = ?, n = 500, k = 200
    %m_tile, %m_cta = sched.split %m by 128 : !sched.axis<?>
    %m_wg, %m_wgi = sched.split %m_cta by 64 : !sched.axis<128>
    %m_instr, %m_lane = sched.split %m_wgi by 64 : !sched.axis<64>
    %n_tile, %n_cta = sched.split %n by 128 : !sched.axis<500>
    %n_wg, %n_wgi = sched.split %n_cta by 128 : !sched.axis<128>
    %n_instr, %n_lane = sched.split %n_wgi by 128 : !sched.axis<128>
    %k_blk, %k_cta = sched.split %k by 64 : !sched.axis<200>
    %k_instr, %k_lane = sched.split %k_cta by 16 : !sched.axis<64>
    sched.parallelize %m_wg to warpgroup : !sched.axis<2>
    sched.parallelize %n_wg to warpgroup : !sched.axis<1>
    sched.parallelize %m_lane to instruction : !sched.axis<64>
    sched.parallelize %n_lane to instruction : !sched.axis<128>
    sched.parallelize %k_lane to instruction : !sched.axis<16>
    sched.parallelize %k_blk to serial : !sched.axis<4>
    sched.parallelize %k_instr to serial : !sched.axis<4>
    sched.parallelize %m_instr to serial : !sched.axis<1>
    sched.parallelize %n_instr to serial : !sched.axis<1>
    sched.reorder %k_blk, %k_instr, %m_instr, %n_instr : !sched.axis<4>, !sched.axis<4>, !sched.axis<1>, !sched.axis<1>
    %m_cluster, %m_rank = sched.split %m_tile by 2 : !sched.axis<?>
    %mn = sched.swizzle %n_tile, %m_cluster group 2 : !sched.axis<4>, !sched.axis<?>
    %tile = sched.merge %b0, %mn : !sched.axis<?>, !sched.axis<?>
    %cta = sched.merge %tile, %m_rank : !sched.axis<?>, !sched.axis<2>
    sched.parallelize %cta to block_x : !sched.axis<?>
  }
  %y = fusion.mma %a [b0, m, k], %b [b0, k, n] -> [b0, m, n] {fusion.roles = #fusion.roles<[b0, m, n]>} : (tensor<?x?x200xbf16>, tensor<?x200x500xbf16>) -> tensor<?x?x500xf32>
  func.return %y : tensor<?x?x500xf32>
}
// CHECK-LABEL: func.func @bmm(
// CHECK-SAME:  %b0: index {sched.extent = "b0"}, %m: index {sched.extent = "m"})
// CHECK-SAME:  sched.grid = @bmm_launch
// CHECK:       %cluster_tiles_m = arith.ceildivui %tiles_m, %c2 : index
// CHECK-NEXT:  %mn_units = arith.muli %cluster_tiles_m, %c4 : index
// CHECK:       %batch = arith.divui %cluster, %mn_units : index
// CHECK-NEXT:  %mn_unit = arith.remui %cluster, %mn_units : index
// CHECK-NEXT:  %group_units = arith.muli %cluster_tiles_m, %c2 : index
// CHECK:       sched.store_tile %y, %out0[%batch, %m0, %n0] : tensor<1x128x128xf32>, memref<?x?x500xf32>
// CHECK-LABEL: func.func @bmm_launch(%b0: index {sched.extent = "b0"}, %m: index {sched.extent = "m"})
// CHECK:       %cluster_units = arith.muli %mn_units, %b0 : index
// CHECK:       %grid = arith.muli %cluster_units, %c2 : index
// CHECK-NEXT:  func.return %grid, %cta_tiles, %cluster_units : index, index, index
