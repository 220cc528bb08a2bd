// RUN: mmcomp-opt %s -p tile-merge --split-input-file | filecheck %s

// Raster m, swizzle 2: the m tile index varies fastest; n tiles are cut into groups of 2.
// (Only the CTA-tile splits of tile-split are needed.)
func.func @raster_m(%a: tensor<300x200xbf16> {fusion.roles = #fusion.roles<[m, k]>}, %w: tensor<500x200xbf16> {fusion.roles = #fusion.roles<[n, k]>}) -> tensor<300x500xf32> attributes {fusion.space = #fusion.space<m = 300, n = 500, k = 200>} {
  sched.schedule params #sched.params<tile = 128x128x64, raster = m, swizzle = 2> {
    %m, %n, %k = sched.space m = 300, n = 500, k = 200
    %m_tile, %m_cta = sched.split %m by 128 : !sched.axis<300>
    %n_tile, %n_cta = sched.split %n by 128 : !sched.axis<500>
    %k_blk, %k_cta = sched.split %k by 64 : !sched.axis<200>
  }
  %y = fusion.mma %a [m, k], %w [n, k] -> [m, n] {fusion.roles = #fusion.roles<[m, n]>} : (tensor<300x200xbf16>, tensor<500x200xbf16>) -> tensor<300x500xf32>
  func.return %y : tensor<300x500xf32>
}
// CHECK-LABEL: func.func @raster_m
// CHECK:      %k_blk, %k_cta = sched.split %k by 64 : !sched.axis<200>
// CHECK-NEXT: %tile_mn = sched.swizzle %n_tile, %m_tile group 2 : !sched.axis<4>, !sched.axis<3>
// CHECK-NEXT: }

// -----

// Raster n: the n tile index varies fastest; groups of 8 m tiles (more than there are).
func.func @raster_n(%a: tensor<300x200xbf16> {fusion.roles = #fusion.roles<[m, k]>}, %w: tensor<500x200xbf16> {fusion.roles = #fusion.roles<[n, k]>}) -> tensor<300x500xf32> attributes {fusion.space = #fusion.space<m = 300, n = 500, k = 200>} {
  sched.schedule params #sched.params<tile = 128x128x64, raster = n, swizzle = 8> {
    %m, %n, %k = sched.space m = 300, n = 500, k = 200
    %m_tile, %m_cta = sched.split %m by 128 : !sched.axis<300>
    %n_tile, %n_cta = sched.split %n by 128 : !sched.axis<500>
    %k_blk, %k_cta = sched.split %k by 64 : !sched.axis<200>
  }
  %y = fusion.mma %a [m, k], %w [n, k] -> [m, n] {fusion.roles = #fusion.roles<[m, n]>} : (tensor<300x200xbf16>, tensor<500x200xbf16>) -> tensor<300x500xf32>
  func.return %y : tensor<300x500xf32>
}
// CHECK-LABEL: func.func @raster_n
// CHECK: %tile_mn = sched.swizzle %m_tile, %n_tile group 8 : !sched.axis<3>, !sched.axis<4>

// -----

// Raster auto: along m when there are more n tiles than m tiles (4 > 3).
func.func @raster_auto(%a: tensor<300x200xbf16> {fusion.roles = #fusion.roles<[m, k]>}, %w: tensor<500x200xbf16> {fusion.roles = #fusion.roles<[n, k]>}) -> tensor<300x500xf32> attributes {fusion.space = #fusion.space<m = 300, n = 500, k = 200>} {
  sched.schedule params #sched.params<tile = 128x128x64, raster = auto, swizzle = 1> {
    %m, %n, %k = sched.space m = 300, n = 500, k = 200
    %m_tile, %m_cta = sched.split %m by 128 : !sched.axis<300>
    %n_tile, %n_cta = sched.split %n by 128 : !sched.axis<500>
    %k_blk, %k_cta = sched.split %k by 64 : !sched.axis<200>
  }
  %y = fusion.mma %a [m, k], %w [n, k] -> [m, n] {fusion.roles = #fusion.roles<[m, n]>} : (tensor<300x200xbf16>, tensor<500x200xbf16>) -> tensor<300x500xf32>
  func.return %y : tensor<300x500xf32>
}
// CHECK-LABEL: func.func @raster_auto
// CHECK: %tile_mn = sched.swizzle %n_tile, %m_tile group 1

// -----

// A 2x2 cluster: the tile indices are split by the cluster shape, the swizzle orders the
// cluster tiles, and the CTA's rank in its cluster (m fastest) is one merged axis.
func.func @cluster(%a: tensor<300x200xbf16> {fusion.roles = #fusion.roles<[m, k]>}, %w: tensor<500x200xbf16> {fusion.roles = #fusion.roles<[n, k]>}) -> tensor<300x500xf32> attributes {fusion.space = #fusion.space<m = 300, n = 500, k = 200>} {
  sched.schedule params #sched.params<tile = 128x128x64, cluster = 2x2, swizzle = 4> {
    %m, %n, %k = sched.space m = 300, n = 500, k = 200
    %m_tile, %m_cta = sched.split %m by 128 : !sched.axis<300>
    %n_tile, %n_cta = sched.split %n by 128 : !sched.axis<500>
    %k_blk, %k_cta = sched.split %k by 64 : !sched.axis<200>
  }
  %y = fusion.mma %a [m, k], %w [n, k] -> [m, n] {fusion.roles = #fusion.roles<[m, n]>} : (tensor<300x200xbf16>, tensor<500x200xbf16>) -> tensor<300x500xf32>
  func.return %y : tensor<300x500xf32>
}
// CHECK-LABEL: func.func @cluster
// CHECK:      %m_cluster, %m_rank = sched.split %m_tile by 2 : !sched.axis<3>
// CHECK-NEXT: %n_cluster, %n_rank = sched.split %n_tile by 2 : !sched.axis<4>
// CHECK-NEXT: %rank = sched.merge %n_rank, %m_rank : !sched.axis<2>, !sched.axis<2>
// CHECK-NEXT: %tile_mn = sched.swizzle %n_cluster, %m_cluster group 4 : !sched.axis<2>, !sched.axis<2>

// -----

// Batch axes are merged outermost, in order.
func.func @batched(%a: tensor<2x3x100x70xf16> {fusion.roles = #fusion.roles<[b0, b1, m, k]>}, %b: tensor<2x3x70x90xf16> {fusion.roles = #fusion.roles<[b0, b1, k, n]>}) -> tensor<2x3x100x90xf32> attributes {fusion.space = #fusion.space<b0 = 2, b1 = 3, m = 100, n = 90, k = 70>} {
  sched.schedule params #sched.params<tile = 64x64x32, swizzle = 8> {
    %b0, %b1, %m, %n, %k = sched.space b0 = 2, b1 = 3, m = 100, n = 90, k = 70
    %m_tile, %m_cta = sched.split %m by 64 : !sched.axis<100>
    %n_tile, %n_cta = sched.split %n by 64 : !sched.axis<90>
    %k_blk, %k_cta = sched.split %k by 32 : !sched.axis<70>
  }
  %c = fusion.mma %a [b0, b1, m, k], %b [b0, b1, k, n] -> [b0, b1, m, n] {fusion.roles = #fusion.roles<[b0, b1, m, n]>} : (tensor<2x3x100x70xf16>, tensor<2x3x70x90xf16>) -> tensor<2x3x100x90xf32>
  func.return %c : tensor<2x3x100x90xf32>
}
// CHECK-LABEL: func.func @batched
// CHECK:      %mn = sched.swizzle %n_tile, %m_tile group 8 : !sched.axis<2>, !sched.axis<2>
// CHECK-NEXT: %tile = sched.merge %b0, %b1, %mn : !sched.axis<2>, !sched.axis<3>, !sched.axis<4>
