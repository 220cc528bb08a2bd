// RUN: mmcomp-opt %s -p tile-merge --verify-diagnostics --split-input-file | filecheck %s
// RUN: mmcomp-opt %s -p insert-persistent-loop --verify-diagnostics --split-input-file | filecheck %s --check-prefix=LOOP

// tile-merge before tile-split: m has no tile split.
func.func @unsplit(%a: tensor<300x200xbf16> {fusion.roles = #fusion.roles<[m, k]>}, %w: tensor<500x200xbf16> {fusion.roles = #fusion.roles<[n, k]>}) -> tensor<300x500xf32> attributes {fusion.space = #fusion.space<m = 300, n = 500, k = 200>} {
  sched.schedule params #sched.params<tile = 128x128x64> {
    %m, %n, %k = sched.space m = 300, n = 500, k = 200
  }
  %y = fusion.mma %a [m, k], %w [n, k] -> [m, n] {fusion.roles = #fusion.roles<[m, n]>} : (tensor<300x200xbf16>, tensor<500x200xbf16>) -> tensor<300x500xf32>
  func.return %y : tensor<300x500xf32>
}
// CHECK: tile-merge: @unsplit: axis m is not split into tiles (run tile-split first)
// LOOP: insert-persistent-loop: @unsplit: the m and n tile indices are not merged (run tile-merge first)

// -----

// Merged twice / bound twice.
func.func @twice(%a: tensor<300x200xbf16> {fusion.roles = #fusion.roles<[m, k]>}, %w: tensor<500x200xbf16> {fusion.roles = #fusion.roles<[n, k]>}) -> tensor<300x500xf32> attributes {fusion.space = #fusion.space<m = 300, n = 500, k = 200>} {
  sched.schedule params #sched.params<tile = 128x128x64> {
    %m, %n, %k = sched.space m = 300, n = 500, k = 200
    %m_tile, %m_cta = sched.split %m by 128 : !sched.axis<300>
    %n_tile, %n_cta = sched.split %n by 128 : !sched.axis<500>
    %k_blk, %k_cta = sched.split %k by 64 : !sched.axis<200>
    %tile_mn = sched.swizzle %n_tile, %m_tile group 8 : !sched.axis<4>, !sched.axis<3>
    sched.parallelize %tile_mn to block_x : !sched.axis<12>
  }
  %y = fusion.mma %a [m, k], %w [n, k] -> [m, n] {fusion.roles = #fusion.roles<[m, n]>} : (tensor<300x200xbf16>, tensor<500x200xbf16>) -> tensor<300x500xf32>
  func.return %y : tensor<300x500xf32>
}
// CHECK: tile-merge: @twice: the tile indices are already merged
// LOOP: insert-persistent-loop: @twice: the work index is already bound to block_x
