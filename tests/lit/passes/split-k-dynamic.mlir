// RUN: mmcomp-opt %s -p split-k | filecheck %s
// RUN: mmcomp-opt %s -p split-k | mmcomp-opt | filecheck %s

// Split-K over a dynamic m: the work index has a dynamic extent (tiles x slices); the
// persistent binding is rebuilt on it, still split by the SMs.
func.func @lin(%a: tensor<?x200xbf16> {fusion.roles = #fusion.roles<[m, k]>}, %w: tensor<500x200xbf16> {fusion.roles = #fusion.roles<[n, k]>}) -> tensor<?x500xf32> attributes {fusion.space = #fusion.space<m = ?, n = 500, k = 200>} {
  sched.schedule params #sched.params<tile = 128x128x64, raster = n, swizzle = 2, split_k = 2> {
    %m, %n, %k = sched.space m = ?, n = 500, k = 200
    %m_tile, %m_cta = sched.split %m by 128 : !sched.axis<?>
    %n_tile, %n_cta = sched.split %n by 128 : !sched.axis<500>
    %k_blk, %k_cta = sched.split %k by 64 : !sched.axis<200>
    %tile_mn = sched.swizzle %m_tile, %n_tile group 2 : !sched.axis<?>, !sched.axis<4>
    %iter, %slot = sched.split %tile_mn by 132 : !sched.axis<?>
    sched.parallelize %iter to serial : !sched.axis<?>
    sched.reorder %iter, %k_blk : !sched.axis<?>, !sched.axis<4>
    sched.parallelize %slot to block_x : !sched.axis<132>
  }
  %y = fusion.mma %a [m, k], %w [n, k] -> [m, n] {fusion.roles = #fusion.roles<[m, n]>} : (tensor<?x200xbf16>, tensor<500x200xbf16>) -> tensor<?x500xf32>
  func.return %y : tensor<?x500xf32>
}
// CHECK-LABEL: func.func @lin
// CHECK:      %k_iter, %slice = sched.split %k_blk by 2 : !sched.axis<4>
// CHECK:      %work = sched.merge %tile_mn, %slice : !sched.axis<?>, !sched.axis<2>
// CHECK:      %iter, %slot = sched.split %work by 132 : !sched.axis<?>
// CHECK:      sched.parallelize %slot to block_x : !sched.axis<132>
