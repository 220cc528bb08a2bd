// RUN: mmcomp-opt %s -p insert-persistent-loop --split-input-file | filecheck %s

// Persistent, 12 tiles: the grid is min(12, 132 SMs) = 12; the tile index is split by the
// grid (t = iter * 12 + slot), the slot bound to blockIdx.x, the iteration an outermost
// serial loop: for t = blockIdx.x; t < 12; t += gridDim.x.
func.func @persistent(%a: tensor<300x200xbf16> {fusion.roles = #fusion.roles<[m, k]>}, %w: tensor<500x200xbf16> {fusion.roles = #fusion.roles<[n, k]>}) -> tensor<300x500xf32> attributes {fusion.space = #fusion.space<m = 300, n = 500, k = 200>} {
  sched.schedule params #sched.params<tile = 128x128x64, strategy = persistent> {
    %m, %n, %k = sched.space m = 300, n = 500, k = 200
    %m_tile, %m_cta = sched.split %m by 128 : !sched.axis<300>
    %n_tile, %n_cta = sched.split %n by 128 : !sched.axis<500>
    %k_blk, %k_cta = sched.split %k by 64 : !sched.axis<200>
    sched.reorder %k_blk : !sched.axis<4>
    %tile_mn = sched.swizzle %n_tile, %m_tile group 8 : !sched.axis<4>, !sched.axis<3>
  }
  %y = fusion.mma %a [m, k], %w [n, k] -> [m, n] {fusion.roles = #fusion.roles<[m, n]>} : (tensor<300x200xbf16>, tensor<500x200xbf16>) -> tensor<300x500xf32>
  func.return %y : tensor<300x500xf32>
}
// CHECK-LABEL: func.func @persistent
// CHECK:      %tile_mn = sched.swizzle %n_tile, %m_tile group 8
// CHECK-NEXT: %iter, %slot = sched.split %tile_mn by 12 : !sched.axis<12>
// CHECK-NEXT: sched.parallelize %iter to serial : !sched.axis<1>
// CHECK-NEXT: sched.reorder %iter, %k_blk : !sched.axis<1>, !sched.axis<4>
// CHECK-NEXT: sched.parallelize %slot to block_x : !sched.axis<12>

// -----

// Persistent with more tiles than SMs: 8 x 40 = 320 tiles on a grid of 132 CTAs, 3 rounds.
func.func @many_tiles(%a: tensor<1024x64xbf16> {fusion.roles = #fusion.roles<[m, k]>}, %w: tensor<2560x64xbf16> {fusion.roles = #fusion.roles<[n, k]>}) -> tensor<1024x2560xf32> attributes {fusion.space = #fusion.space<m = 1024, n = 2560, k = 64>} {
  sched.schedule params #sched.params<tile = 128x64x64, strategy = persistent> {
    %m, %n, %k = sched.space m = 1024, n = 2560, k = 64
    %m_tile, %m_cta = sched.split %m by 128 : !sched.axis<1024>
    %n_tile, %n_cta = sched.split %n by 64 : !sched.axis<2560>
    %k_blk, %k_cta = sched.split %k by 64 : !sched.axis<64>
    %tile_mn = sched.swizzle %n_tile, %m_tile group 8 : !sched.axis<40>, !sched.axis<8>
  }
  %y = fusion.mma %a [m, k], %w [n, k] -> [m, n] {fusion.roles = #fusion.roles<[m, n]>} : (tensor<1024x64xbf16>, tensor<2560x64xbf16>) -> tensor<1024x2560xf32>
  func.return %y : tensor<1024x2560xf32>
}
// CHECK-LABEL: func.func @many_tiles
// CHECK:      %iter, %slot = sched.split %tile_mn by 132 : !sched.axis<320>
// CHECK-NEXT: sched.parallelize %iter to serial : !sched.axis<3>
// CHECK:      sched.parallelize %slot to block_x : !sched.axis<132>

// -----

// One tile per CTA: the grid is the tile count and the tile index is blockIdx.x.
func.func @one_tile(%a: tensor<300x200xbf16> {fusion.roles = #fusion.roles<[m, k]>}, %w: tensor<500x200xbf16> {fusion.roles = #fusion.roles<[n, k]>}) -> tensor<300x500xf32> attributes {fusion.space = #fusion.space<m = 300, n = 500, k = 200>} {
  sched.schedule params #sched.params<tile = 128x128x64, strategy = one-tile-per-cta> {
    %m, %n, %k = sched.space m = 300, n = 500, k = 200
    %m_tile, %m_cta = sched.split %m by 128 : !sched.axis<300>
    %n_tile, %n_cta = sched.split %n by 128 : !sched.axis<500>
    %k_blk, %k_cta = sched.split %k by 64 : !sched.axis<200>
    sched.reorder %k_blk : !sched.axis<4>
    %tile_mn = sched.swizzle %n_tile, %m_tile group 8 : !sched.axis<4>, !sched.axis<3>
  }
  %y = fusion.mma %a [m, k], %w [n, k] -> [m, n] {fusion.roles = #fusion.roles<[m, n]>} : (tensor<300x200xbf16>, tensor<500x200xbf16>) -> tensor<300x500xf32>
  func.return %y : tensor<300x500xf32>
}
// CHECK-LABEL: func.func @one_tile
// CHECK:      %tile_mn = sched.swizzle %n_tile, %m_tile group 8
// CHECK-NEXT: sched.parallelize %tile_mn to block_x : !sched.axis<12>
// CHECK-NEXT: }

// -----

// A 2x1 cluster: the grid counts clusters, min(6 cluster tiles, 132 / 2); blockIdx.x is
// the cluster slot merged with the CTA's rank in its cluster.
func.func @cluster(%a: tensor<300x200xbf16> {fusion.roles = #fusion.roles<[m, k]>}, %w: tensor<500x200xbf16> {fusion.roles = #fusion.roles<[n, k]>}) -> tensor<300x500xf32> attributes {fusion.space = #fusion.space<m = 300, n = 500, k = 200>} {
  sched.schedule params #sched.params<tile = 128x128x64, cluster = 2x1> {
    %m, %n, %k = sched.space m = 300, n = 500, k = 200
    %m_tile, %m_cta = sched.split %m by 128 : !sched.axis<300>
    %n_tile, %n_cta = sched.split %n by 128 : !sched.axis<500>
    %k_blk, %k_cta = sched.split %k by 64 : !sched.axis<200>
    sched.reorder %k_blk : !sched.axis<4>
    %m_cluster, %m_rank = sched.split %m_tile by 2 : !sched.axis<3>
    %tile_mn = sched.swizzle %n_tile, %m_cluster group 8 : !sched.axis<4>, !sched.axis<2>
  }
  %y = fusion.mma %a [m, k], %w [n, k] -> [m, n] {fusion.roles = #fusion.roles<[m, n]>} : (tensor<300x200xbf16>, tensor<500x200xbf16>) -> tensor<300x500xf32>
  func.return %y : tensor<300x500xf32>
}
// CHECK-LABEL: func.func @cluster
// CHECK:      %iter, %slot = sched.split %tile_mn by 8 : !sched.axis<8>
// CHECK:      %cta = sched.merge %slot, %m_rank : !sched.axis<8>, !sched.axis<2>
// CHECK-NEXT: sched.parallelize %cta to block_x : !sched.axis<16>
