// RUN: mmcomp-opt %s -p insert-persistent-loop --split-input-file | filecheck %s

// Stream-K, 12 tiles of 4 K blocks: the CTAs share the 48 K-block iterations, so the tiles
// are split by min(48, 132 SMs) = 48 CTAs (more than the tiles), each bound to blockIdx.x;
// materialize-schedule gives each its range of iterations.
func.func @stream_k(%a: tensor<300x200xbf16> {fusion.roles = #fusion.roles<[m, k]>}, %w: tensor<500x200xbf16> {fusion.roles = #fusion.roles<[n, k]>}) -> tensor<300x500xf32> attributes {fusion.space = #fusion.space<m = 300, n = 500, k = 200>} {
  sched.schedule params #sched.params<tile = 128x128x64, strategy = stream-k> {
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
// CHECK-LABEL: func.func @stream_k
// CHECK:      %tile_mn = sched.swizzle %n_tile, %m_tile group 8
// CHECK-NEXT: %iter, %slot = sched.split %tile_mn by 48 : !sched.axis<12>
// CHECK-NEXT: sched.parallelize %iter to serial : !sched.axis<1>
// CHECK-NEXT: sched.reorder %iter, %k_blk : !sched.axis<1>, !sched.axis<4>
// CHECK-NEXT: sched.parallelize %slot to block_x : !sched.axis<48>

// -----

// The hybrid with 320 tiles of 1 K block: a grid of all 132 SMs, as persistent.
func.func @hybrid(%a: tensor<1024x64xbf16> {fusion.roles = #fusion.roles<[m, k]>}, %w: tensor<2560x64xbf16> {fusion.roles = #fusion.roles<[n, k]>}) -> tensor<1024x2560xf32> attributes {fusion.space = #fusion.space<m = 1024, n = 2560, k = 64>} {
  sched.schedule params #sched.params<tile = 128x64x64, strategy = hybrid-stream-k> {
    %m, %n, %k = sched.space m = 1024, n = 2560, k = 64
    %m_tile, %m_cta = sched.split %m by 128 : !sched.axis<1024>
    %n_tile, %n_cta = sched.split %n by 64 : !sched.axis<2560>
    %k_blk, %k_cta = sched.split %k by 64 : !sched.axis<64>
    %tile_mn = sched.swizzle %n_tile, %m_tile group 8 : !sched.axis<40>, !sched.axis<8>
  }
  %y = fusion.mma %a [m, k], %w [n, k] -> [m, n] {fusion.roles = #fusion.roles<[m, n]>} : (tensor<1024x64xbf16>, tensor<2560x64xbf16>) -> tensor<1024x2560xf32>
  func.return %y : tensor<1024x2560xf32>
}
// CHECK-LABEL: func.func @hybrid
// CHECK:      %iter, %slot = sched.split %tile_mn by 132 : !sched.axis<320>
// CHECK-NEXT: sched.parallelize %iter to serial : !sched.axis<3>
// CHECK:      sched.parallelize %slot to block_x : !sched.axis<132>
