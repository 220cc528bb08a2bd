// RUN: mmcomp-opt %s -p split-k --split-input-file | filecheck %s

// split_k = 3 after tile-merge: the 4 K blocks are split by the slice (slice j takes the
// blocks j, j + 3, ...), and the slice joins the tile index as the fastest part of the
// work index.
func.func @before_loop(%a: tensor<300x200xbf16> {fusion.roles = #fusion.roles<[m, k]>}, %w: tensor<500x200xbf16> {fusion.roles = #fusion.roles<[n, k]>}) -> tensor<300x500xf32> attributes {fusion.space = #fusion.space<m = 300, n = 500, k = 200>} {
  sched.schedule params #sched.params<tile = 128x128x64, split_k = 3> {
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
// CHECK-LABEL: func.func @before_loop
// CHECK:      %tile_mn = sched.swizzle %n_tile, %m_tile group 8
// CHECK-NEXT: %k_iter, %slice = sched.split %k_blk by 3 : !sched.axis<4>
// CHECK-NEXT: sched.parallelize %k_iter to serial : !sched.axis<2>
// CHECK-NEXT: %work = sched.merge %tile_mn, %slice : !sched.axis<12>, !sched.axis<3>
// CHECK-NEXT: sched.reorder %k_iter : !sched.axis<2>
// CHECK-NEXT: }

// -----

// split_k = 2 after insert-persistent-loop: the grid binding is rebuilt on the work index
// (24 work units, so a grid of 24).
func.func @after_loop(%a: tensor<300x200xbf16> {fusion.roles = #fusion.roles<[m, k]>}, %w: tensor<500x200xbf16> {fusion.roles = #fusion.roles<[n, k]>}) -> tensor<300x500xf32> attributes {fusion.space = #fusion.space<m = 300, n = 500, k = 200>} {
  sched.schedule params #sched.params<tile = 128x128x64, split_k = 2> {
    %m, %n, %k = sched.space m = 300, n = 500, k = 200
    %m_tile, %m_cta = sched.split %m by 128 : !sched.axis<300>
    %n_tile, %n_cta = sched.split %n by 128 : !sched.axis<500>
    %k_blk, %k_cta = sched.split %k by 64 : !sched.axis<200>
    sched.reorder %k_blk : !sched.axis<4>
    %tile_mn = sched.swizzle %n_tile, %m_tile group 8 : !sched.axis<4>, !sched.axis<3>
    %iter, %slot = sched.split %tile_mn by 12 : !sched.axis<12>
    sched.parallelize %iter to serial : !sched.axis<1>
    sched.parallelize %slot to block_x : !sched.axis<12>
  }
  %y = fusion.mma %a [m, k], %w [n, k] -> [m, n] {fusion.roles = #fusion.roles<[m, n]>} : (tensor<300x200xbf16>, tensor<500x200xbf16>) -> tensor<300x500xf32>
  func.return %y : tensor<300x500xf32>
}
// CHECK-LABEL: func.func @after_loop
// CHECK:      %work = sched.merge %tile_mn, %slice : !sched.axis<12>, !sched.axis<2>
// CHECK:      %iter, %slot = sched.split %work by 24 : !sched.axis<24>
// CHECK:      sched.parallelize %slot to block_x : !sched.axis<24>
// CHECK-NOT:  sched.split %tile_mn

// -----

// split_k = 1: nothing changes.
func.func @no_split(%a: tensor<300x200xbf16> {fusion.roles = #fusion.roles<[m, k]>}, %w: tensor<500x200xbf16> {fusion.roles = #fusion.roles<[n, k]>}) -> tensor<300x500xf32> attributes {fusion.space = #fusion.space<m = 300, n = 500, k = 200>} {
  sched.schedule params #sched.params<tile = 128x128x64, split_k = 1> {
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
// CHECK-LABEL: func.func @no_split
// CHECK:      %tile_mn = sched.swizzle %n_tile, %m_tile group 8
// CHECK-NEXT: }
