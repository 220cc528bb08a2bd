// RUN: mmcomp-opt %s -p materialize-schedule --verify-diagnostics --split-input-file | filecheck %s

// The tile indices were never merged (tile-merge did not run).
func.func @unmerged(%a: tensor<300x200xbf16> {fusion.roles = #fusion.roles<[m, k]>}, %w: tensor<500x200xbf16> {fusion.roles = #fusion.roles<[n, k]>}) -> tensor<300x500xf32> attributes {fusion.space = #fusion.space<m = 300, n = 500, k = 200>} {
  sched.schedule params #sched.params<tile = 128x128x64> {
    %m, %n, %k = sched.space m = 300, n = 500, k = 200
    %m_tile, %m_cta = sched.split %m by 128 : !sched.axis<300>
    %n_tile, %n_cta = sched.split %n by 128 : !sched.axis<500>
    %k_blk, %k_cta = sched.split %k by 64 : !sched.axis<200>
  }
  %y = fusion.mma %a [m, k], %w [n, k] -> [m, n] {fusion.roles = #fusion.roles<[m, n]>} : (tensor<300x200xbf16>, tensor<500x200xbf16>) -> tensor<300x500xf32>
  func.return %y : tensor<300x500xf32>
}
// CHECK: materialize-schedule: @unmerged: the m and n tile indices are not merged (run tile-merge first)

// -----

// The work index is not bound to the grid (insert-persistent-loop did not run).
func.func @unbound(%a: tensor<300x200xbf16> {fusion.roles = #fusion.roles<[m, k]>}, %w: tensor<500x200xbf16> {fusion.roles = #fusion.roles<[n, k]>}) -> tensor<300x500xf32> attributes {fusion.space = #fusion.space<m = 300, n = 500, k = 200>} {
  sched.schedule params #sched.params<tile = 128x128x64> {
    %m, %n, %k = sched.space m = 300, n = 500, k = 200
    %m_tile, %m_cta = sched.split %m by 128 : !sched.axis<300>
    %n_tile, %n_cta = sched.split %n by 128 : !sched.axis<500>
    %k_blk, %k_cta = sched.split %k by 64 : !sched.axis<200>
    %tile_mn = sched.swizzle %n_tile, %m_tile group 8 : !sched.axis<4>, !sched.axis<3>
  }
  %y = fusion.mma %a [m, k], %w [n, k] -> [m, n] {fusion.roles = #fusion.roles<[m, n]>} : (tensor<300x200xbf16>, tensor<500x200xbf16>) -> tensor<300x500xf32>
  func.return %y : tensor<300x500xf32>
}
// CHECK: materialize-schedule: @unbound: the work index is not bound to block_x (run insert-persistent-loop first)

// -----

// k is not split into tiles.
func.func @no_k_split(%a: tensor<300x200xbf16> {fusion.roles = #fusion.roles<[m, k]>}, %w: tensor<500x200xbf16> {fusion.roles = #fusion.roles<[n, k]>}) -> tensor<300x500xf32> attributes {fusion.space = #fusion.space<m = 300, n = 500, k = 200>} {
  sched.schedule params #sched.params<tile = 128x128x64> {
    %m, %n, %k = sched.space m = 300, n = 500, k = 200
    %m_tile, %m_cta = sched.split %m by 128 : !sched.axis<300>
    %n_tile, %n_cta = sched.split %n by 128 : !sched.axis<500>
    %tile_mn = sched.swizzle %n_tile, %m_tile group 8 : !sched.axis<4>, !sched.axis<3>
    sched.parallelize %tile_mn to block_x : !sched.axis<12>
  }
  %y = fusion.mma %a [m, k], %w [n, k] -> [m, n] {fusion.roles = #fusion.roles<[m, n]>} : (tensor<300x200xbf16>, tensor<500x200xbf16>) -> tensor<300x500xf32>
  func.return %y : tensor<300x500xf32>
}
// CHECK: materialize-schedule: @no_k_split: axis k is not split into tiles (run tile-split first)

// -----

// An epilogue op without roles (propagate-axis-mapping did not run on it).
func.func @no_roles(%a: tensor<300x200xbf16> {fusion.roles = #fusion.roles<[m, k]>}, %w: tensor<500x200xbf16> {fusion.roles = #fusion.roles<[n, k]>}) -> tensor<300x500xf32> attributes {fusion.space = #fusion.space<m = 300, n = 500, k = 200>} {
  sched.schedule params #sched.params<tile = 128x128x64> {
    %m, %n, %k = sched.space m = 300, n = 500, k = 200
    %m_tile, %m_cta = sched.split %m by 128 : !sched.axis<300>
    %n_tile, %n_cta = sched.split %n by 128 : !sched.axis<500>
    %k_blk, %k_cta = sched.split %k by 64 : !sched.axis<200>
    %tile_mn = sched.swizzle %n_tile, %m_tile group 8 : !sched.axis<4>, !sched.axis<3>
    sched.parallelize %tile_mn to block_x : !sched.axis<12>
  }
  %y = fusion.mma %a [m, k], %w [n, k] -> [m, n] {fusion.roles = #fusion.roles<[m, n]>} : (tensor<300x200xbf16>, tensor<500x200xbf16>) -> tensor<300x500xf32>
  %r = fusion.relu %y : tensor<300x500xf32>
  func.return %r : tensor<300x500xf32>
}
// CHECK: materialize-schedule: fusion.relu: result has no 'fusion.roles' (run propagate-axis-mapping first)

// -----

// An op reading along k before the contraction (a prologue) cannot be scheduled.
func.func @prologue(%a: tensor<300x200xbf16> {fusion.roles = #fusion.roles<[m, k]>}, %w: tensor<500x200xbf16> {fusion.roles = #fusion.roles<[n, k]>}) -> tensor<300x500xf32> attributes {fusion.space = #fusion.space<m = 300, n = 500, k = 200>} {
  sched.schedule params #sched.params<tile = 128x128x64> {
    %m, %n, %k = sched.space m = 300, n = 500, k = 200
    %m_tile, %m_cta = sched.split %m by 128 : !sched.axis<300>
    %n_tile, %n_cta = sched.split %n by 128 : !sched.axis<500>
    %k_blk, %k_cta = sched.split %k by 64 : !sched.axis<200>
    %tile_mn = sched.swizzle %n_tile, %m_tile group 8 : !sched.axis<4>, !sched.axis<3>
    sched.parallelize %tile_mn to block_x : !sched.axis<12>
  }
  %n = fusion.neg %a {fusion.roles = #fusion.roles<[m, k]>} : tensor<300x200xbf16>
  %y = fusion.mma %n [m, k], %w [n, k] -> [m, n] {fusion.roles = #fusion.roles<[m, n]>} : (tensor<300x200xbf16>, tensor<500x200xbf16>) -> tensor<300x500xf32>
  func.return %y : tensor<300x500xf32>
}
// CHECK: materialize-schedule: fusion.neg: roles ['m', 'k'] have a k axis: only fusion.mma may read along k (prologue fusion is not supported)


// -----

// sched.params asks for two K slices, but split-k did not run: refused, not silently unsplit.
func.func @unsplit(%a: tensor<64x1024xbf16> {fusion.roles = #fusion.roles<[m, k]>}, %w: tensor<64x1024xbf16> {fusion.roles = #fusion.roles<[n, k]>}) -> tensor<64x64xf32> attributes {fusion.space = #fusion.space<m = 64, n = 64, k = 1024>} {
  sched.schedule params #sched.params<tile = 64x64x128, warpgroup = 64x64, instr = m64n64k16, stages = 6, cluster = 1x1, raster = n, swizzle = 1, strategy = persistent, split_k = 2, warp_specialization = pingpong, registers = 40/232, epilogue = smem> {
    %m, %n, %k = sched.space m = 64, n = 64, k = 1024
    %m_tile, %m_cta = sched.split %m by 64 : !sched.axis<64>
    %m_wg, %m_wgi = sched.split %m_cta by 64 : !sched.axis<64>
    %m_instr, %m_lane = sched.split %m_wgi by 64 : !sched.axis<64>
    %n_tile, %n_cta = sched.split %n by 64 : !sched.axis<64>
    %n_wg, %n_wgi = sched.split %n_cta by 64 : !sched.axis<64>
    %n_instr, %n_lane = sched.split %n_wgi by 64 : !sched.axis<64>
    %k_blk, %k_cta = sched.split %k by 128 : !sched.axis<1024>
    %k_instr, %k_lane = sched.split %k_cta by 16 : !sched.axis<128>
    sched.parallelize %m_wg to warpgroup : !sched.axis<1>
    sched.parallelize %n_wg to warpgroup : !sched.axis<1>
    sched.parallelize %m_lane to instruction : !sched.axis<64>
    sched.parallelize %n_lane to instruction : !sched.axis<64>
    sched.parallelize %k_lane to instruction : !sched.axis<16>
    sched.parallelize %k_blk to serial : !sched.axis<8>
    sched.parallelize %k_instr to serial : !sched.axis<8>
    sched.parallelize %m_instr to serial : !sched.axis<1>
    sched.parallelize %n_instr to serial : !sched.axis<1>
    %tile_mn = sched.swizzle %m_tile, %n_tile group 1 : !sched.axis<1>, !sched.axis<1>
    %iter, %slot = sched.split %tile_mn by 1 : !sched.axis<1>
    sched.parallelize %iter to serial : !sched.axis<1>
    sched.reorder %iter, %k_blk, %k_instr, %m_instr, %n_instr : !sched.axis<1>, !sched.axis<8>, !sched.axis<8>, !sched.axis<1>, !sched.axis<1>
    sched.parallelize %slot to block_x : !sched.axis<1>
  }
  %0 = fusion.mma %a [m, k], %w [n, k] -> [m, n] {fusion.roles = #fusion.roles<[m, n]>} : (tensor<64x1024xbf16>, tensor<64x1024xbf16>) -> tensor<64x64xf32>
  func.return %0 : tensor<64x64xf32>
}
// CHECK: materialize-schedule: @unsplit: sched.params split_k = 2, but the schedule splits the K blocks into 1 slice (run split-k after tile-merge)
