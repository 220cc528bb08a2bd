// RUN: mmcomp-opt %s -p insert-persistent-loop --split-input-file | filecheck %s
// RUN: mmcomp-opt %s -p insert-persistent-loop --split-input-file | mmcomp-opt --split-input-file | filecheck %s

// Persistent over a dynamic work count: split by the most CTAs the SMs hold (132); the
// launch takes min(units, 132) and the loop runs to the runtime count of units.
func.func @persistent(%a: tensor<?x200xbf16> {fusion.roles = #fusion.roles<[m, k]>}, %w: tensor<500x200xbf16> {fusion.roles = #fusion.roles<[n, k]>}) -> tensor<?x500xf32> attributes {fusion.space = #fusion.space<m = ?, n = 500, k = 200>} {
  sched.schedule params #sched.params<tile = 128x128x64, raster = n, swizzle = 2, cluster = 2x1> {
    %m, %n, %k = sched.space m = ?, n = 500, k = 200
    %m_tile, %m_cta = sched.split %m by 128 : !sched.axis<?>
    %n_tile, %n_cta = sched.split %n by 128 : !sched.axis<500>
    %k_blk, %k_cta = sched.split %k by 64 : !sched.axis<200>
    %m_cluster, %m_rank = sched.split %m_tile by 2 : !sched.axis<?>
    %tile_mn = sched.swizzle %m_cluster, %n_tile group 2 : !sched.axis<?>, !sched.axis<4>
  }
  %y = fusion.mma %a [m, k], %w [n, k] -> [m, n] {fusion.roles = #fusion.roles<[m, n]>} : (tensor<?x200xbf16>, tensor<500x200xbf16>) -> tensor<?x500xf32>
  func.return %y : tensor<?x500xf32>
}
// CHECK-LABEL: func.func @persistent
// CHECK:      %iter, %slot = sched.split %tile_mn by 66 : !sched.axis<?>
// CHECK-NEXT: sched.parallelize %iter to serial : !sched.axis<?>
// CHECK:      %cta = sched.merge %slot, %m_rank : !sched.axis<66>, !sched.axis<2>
// CHECK-NEXT: sched.parallelize %cta to block_x : !sched.axis<132>

// -----

// One tile per CTA: the dynamic work index itself is bound to blockIdx.x.
func.func @one_tile(%a: tensor<?x200xbf16> {fusion.roles = #fusion.roles<[m, k]>}, %w: tensor<500x200xbf16> {fusion.roles = #fusion.roles<[n, k]>}) -> tensor<?x500xf32> attributes {fusion.space = #fusion.space<m = ?, n = 500, k = 200>} {
  sched.schedule params #sched.params<tile = 128x128x64, raster = n, swizzle = 2, strategy = one-tile-per-cta> {
    %m, %n, %k = sched.space m = ?, n = 500, k = 200
    %m_tile, %m_cta = sched.split %m by 128 : !sched.axis<?>
    %n_tile, %n_cta = sched.split %n by 128 : !sched.axis<500>
    %k_blk, %k_cta = sched.split %k by 64 : !sched.axis<200>
    %tile_mn = sched.swizzle %m_tile, %n_tile group 2 : !sched.axis<?>, !sched.axis<4>
  }
  %y = fusion.mma %a [m, k], %w [n, k] -> [m, n] {fusion.roles = #fusion.roles<[m, n]>} : (tensor<?x200xbf16>, tensor<500x200xbf16>) -> tensor<?x500xf32>
  func.return %y : tensor<?x500xf32>
}
// CHECK-LABEL: func.func @one_tile
// CHECK:      %tile_mn = sched.swizzle %m_tile, %n_tile group 2 : !sched.axis<?>, !sched.axis<4>
// CHECK-NEXT: sched.parallelize %tile_mn to block_x : !sched.axis<?>
