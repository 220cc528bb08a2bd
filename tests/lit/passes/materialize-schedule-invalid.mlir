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

