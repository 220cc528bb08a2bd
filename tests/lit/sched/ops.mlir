// RUN: mmcomp-opt %s | filecheck %s
// RUN: mmcomp-opt %s | mmcomp-opt | filecheck %s
// RUN: mmcomp-opt %s --print-op-generic | mmcomp-opt | filecheck %s

// The schedule of a linear fusion 300x500x200 with 128x128x64 tiles: the iteration space,
// CTA / warpgroup / instruction splits, split-K into 2 slices, a swizzled tile order and a
// persistent loop over a grid of 24 CTAs.

// CHECK-LABEL: func.func @linear
// CHECK-NEXT:    sched.schedule params #sched.params<tile = 128x128x64, warpgroup = 64x128, instr = m64n128k16, stages = 4, cluster = 1x1, raster = m, swizzle = 4, strategy = persistent, split_k = 2, warp_specialization = cooperative, registers = 40/232, epilogue = smem> {
// CHECK-NEXT:      %m, %n, %k = sched.space m = 300, n = 500, k = 200
// CHECK-NEXT:      %m_tile, %m_cta = sched.split %m by 128 : !sched.axis<300>
// CHECK-NEXT:      %m_wg, %m_wgi = sched.split %m_cta by 64 : !sched.axis<128>
// CHECK-NEXT:      %n_tile, %n_cta = sched.split %n by 128 : !sched.axis<500>
// CHECK-NEXT:      %k_blk, %k_cta = sched.split %k by 64 : !sched.axis<200>
// CHECK-NEXT:      %slice, %k_iter = sched.split %k_blk into 2 : !sched.axis<4>
// CHECK-NEXT:      %tile_mn = sched.swizzle %n_tile, %m_tile group 4 : !sched.axis<4>, !sched.axis<3>
// CHECK-NEXT:      %work = sched.merge %tile_mn, %slice : !sched.axis<12>, !sched.axis<2>
// CHECK-NEXT:      %iter, %slot = sched.split %work by 24 {persistent} : !sched.axis<24>
// CHECK-NEXT:      sched.parallelize %slot to block_x {grid = 24 : i64} : !sched.axis<24>
// CHECK-NEXT:      sched.parallelize %iter to serial : !sched.axis<1>
// CHECK-NEXT:      sched.parallelize %m_wg to warpgroup : !sched.axis<2>
// CHECK-NEXT:      sched.reorder %iter, %k_iter : !sched.axis<1>, !sched.axis<2>
// CHECK-NEXT:    }
func.func @linear(%a: tensor<300x200xbf16>, %w: tensor<500x200xbf16>) -> tensor<300x500xf32> attributes {fusion.space = #fusion.space<m = 300, n = 500, k = 200>} {
  sched.schedule params #sched.params<tile = 128x128x64, stages = 4, swizzle = 4, split_k = 2> {
    %m, %n, %k = sched.space m = 300, n = 500, k = 200
    %m_tile, %m_cta = sched.split %m by 128 : !sched.axis<300>
    %m_wg, %m_wgi = sched.split %m_cta by 64 : !sched.axis<128>
    %n_tile, %n_cta = sched.split %n by 128 : !sched.axis<500>
    %k_blk, %k_cta = sched.split %k by 64 : !sched.axis<200>
    %slice, %k_iter = sched.split %k_blk into 2 : !sched.axis<4>
    %tile_mn = sched.swizzle %n_tile, %m_tile group 4 : !sched.axis<4>, !sched.axis<3>
    %work = sched.merge %tile_mn, %slice : !sched.axis<12>, !sched.axis<2>
    %iter, %slot = sched.split %work by 24 {persistent} : !sched.axis<24>
    sched.parallelize %slot to block_x {grid = 24 : i64} : !sched.axis<24>
    sched.parallelize %iter to serial : !sched.axis<1>
    sched.parallelize %m_wg to warpgroup : !sched.axis<2>
    sched.reorder %iter, %k_iter : !sched.axis<1>, !sched.axis<2>
  }
  %y = fusion.mma %a [m, k], %w [n, k] -> [m, n] : (tensor<300x200xbf16>, tensor<500x200xbf16>) -> tensor<300x500xf32>
  func.return %y : tensor<300x500xf32>
}

// The tile-level ops of a materialized kernel.

// CHECK-LABEL: func.func @tiles
// CHECK-NEXT:    %a_tile = sched.load_tile %a[%i, %k0] : memref<300x200xbf16> -> tensor<128x64xbf16>
// CHECK-NEXT:    %w_tile = sched.load_tile %w[%j, %k0] : memref<500x200xbf16> -> tensor<128x64xbf16>
// CHECK-NEXT:    %zero = sched.zero_tile : tensor<128x128xf32>
// CHECK-NEXT:    %acc = sched.mma %a_tile [m, k], %w_tile [n, k], %zero [m, n] : tensor<128x64xbf16>, tensor<128x64xbf16>, tensor<128x128xf32>
// CHECK-NEXT:    sched.store_partial %acc, %ws[%s, %t] : tensor<128x128xf32>, memref<2x12x128x128xf32>
// CHECK-NEXT:    %old = sched.arrive %count[%t] : memref<12xi32> -> index
// CHECK-NEXT:    %sum = sched.reduce_partials %ws[%t] : memref<2x12x128x128xf32> -> tensor<128x128xf32>
// CHECK-NEXT:    %bias_tile = sched.load_tile %bias[%j] : memref<500xf32> -> tensor<128xf32>
// CHECK-NEXT:    %out = sched.epilogue(%sum, %bias_tile) : (tensor<128x128xf32>, tensor<128xf32>) -> tensor<128x128xbf16> {
// CHECK-NEXT:    ^bb0(%y: tensor<128x128xf32>, %b: tensor<128xf32>):
// CHECK-NEXT:      %row = fusion.broadcast %b
// CHECK:           sched.yield %cast : tensor<128x128xbf16>
// CHECK-NEXT:    }
// CHECK-NEXT:    sched.store_tile %out, %c[%i, %j] : tensor<128x128xbf16>, memref<300x500xbf16>
func.func @tiles(%a: memref<300x200xbf16>, %w: memref<500x200xbf16>, %bias: memref<500xf32>, %c: memref<300x500xbf16>, %ws: memref<2x12x128x128xf32>, %count: memref<12xi32>, %i: index, %j: index, %k0: index, %s: index, %t: index) {
  %a_tile = sched.load_tile %a[%i, %k0] : memref<300x200xbf16> -> tensor<128x64xbf16>
  %w_tile = sched.load_tile %w[%j, %k0] : memref<500x200xbf16> -> tensor<128x64xbf16>
  %zero = sched.zero_tile : tensor<128x128xf32>
  %acc = sched.mma %a_tile [m, k], %w_tile [n, k], %zero [m, n] : tensor<128x64xbf16>, tensor<128x64xbf16>, tensor<128x128xf32>
  sched.store_partial %acc, %ws[%s, %t] : tensor<128x128xf32>, memref<2x12x128x128xf32>
  %old = sched.arrive %count[%t] : memref<12xi32> -> index
  %sum = sched.reduce_partials %ws[%t] : memref<2x12x128x128xf32> -> tensor<128x128xf32>
  %bias_tile = sched.load_tile %bias[%j] : memref<500xf32> -> tensor<128xf32>
  %out = sched.epilogue(%sum, %bias_tile) : (tensor<128x128xf32>, tensor<128xf32>) -> tensor<128x128xbf16> {
  ^bb0(%y: tensor<128x128xf32>, %b: tensor<128xf32>):
    %row = fusion.broadcast %b new_dims [true, false] : tensor<128xf32> to tensor<128x128xf32>
    %sum2 = fusion.add %y, %row : tensor<128x128xf32>
    %cast = fusion.cast %sum2 : tensor<128x128xf32> to tensor<128x128xbf16>
    sched.yield %cast : tensor<128x128xbf16>
  }
  sched.store_tile %out, %c[%i, %j] : tensor<128x128xbf16>, memref<300x500xbf16>
  func.return
}

// A batched fused multiply-sum tile: A [b0, m, _, k] x B [b0, _, n, k].

// CHECK-LABEL: func.func @fms
// CHECK-NEXT:    %r = sched.mma %a [b0, m, _, k], %b [b0, _, n, k], %acc [b0, m, n] : tensor<1x64x1x32xf16>, tensor<1x1x16x32xf16>, tensor<1x64x16xf32>
func.func @fms(%a: tensor<1x64x1x32xf16>, %b: tensor<1x1x16x32xf16>, %acc: tensor<1x64x16xf32>) -> tensor<1x64x16xf32> {
  %r = sched.mma %a [b0, m, _, k], %b [b0, _, n, k], %acc [b0, m, n] : tensor<1x64x1x32xf16>, tensor<1x1x16x32xf16>, tensor<1x64x16xf32>
  func.return %r : tensor<1x64x16xf32>
}
