// RUN: mmcomp-opt %s -p tile-merge --split-input-file | filecheck %s
// RUN: mmcomp-opt %s -p tile-merge --split-input-file | mmcomp-opt --split-input-file | filecheck %s

// Raster n over a dynamic m: the linear tile index has a dynamic extent; the groups of 2
// m tiles are walked at run time (materialize-schedule computes each group's size).
func.func @raster_n(%a: tensor<?x200xbf16> {fusion.roles = #fusion.roles<[m, k]>}, %w: tensor<500x200xbf16> {fusion.roles = #fusion.roles<[n, k]>}) -> tensor<?x500xf32> attributes {fusion.space = #fusion.space<m = ?, n = 500, k = 200>} {
  sched.schedule params #sched.params<tile = 128x128x64, raster = n, swizzle = 2> {
    %m, %n, %k = sched.space m = ?, n = 500, k = 200
    %m_tile, %m_cta = sched.split %m by 128 : !sched.axis<?>
    %n_tile, %n_cta = sched.split %n by 128 : !sched.axis<500>
    %k_blk, %k_cta = sched.split %k by 64 : !sched.axis<200>
  }
  %y = fusion.mma %a [m, k], %w [n, k] -> [m, n] {fusion.roles = #fusion.roles<[m, n]>} : (tensor<?x200xbf16>, tensor<500x200xbf16>) -> tensor<?x500xf32>
  func.return %y : tensor<?x500xf32>
}
// CHECK-LABEL: func.func @raster_n
// CHECK:      %tile_mn = sched.swizzle %m_tile, %n_tile group 2 : !sched.axis<?>, !sched.axis<4>
// CHECK-NEXT: }

// -----

// `auto` with a dynamic m resolves to raster m (groups cut along n, whose tile count is
// static); a 2x1 cluster splits the dynamic m tile index, a dynamic batch merges outermost.
func.func @auto_cluster(%a: tensor<?x?x200xbf16> {fusion.roles = #fusion.roles<[b0, m, k]>}, %b: tensor<?x200x500xbf16> {fusion.roles = #fusion.roles<[b0, k, n]>}) -> tensor<?x?x500xf32> attributes {fusion.space = #fusion.space<b0 = ?, m = ?, n = 500, k = 200>} {
  sched.schedule params #sched.params<tile = 128x128x64, raster = auto, swizzle = 2, cluster = 2x1> {
    %b0, %m, %n, %k = sched.space b0 = ?, m = ?, n = 500, k = 200
    %m_tile, %m_cta = sched.split %m by 128 : !sched.axis<?>
    %n_tile, %n_cta = sched.split %n by 128 : !sched.axis<500>
    %k_blk, %k_cta = sched.split %k by 64 : !sched.axis<200>
  }
  %y = fusion.mma %a [b0, m, k], %b [b0, k, n] -> [b0, m, n] {fusion.roles = #fusion.roles<[b0, m, n]>} : (tensor<?x?x200xbf16>, tensor<?x200x500xbf16>) -> tensor<?x?x500xf32>
  func.return %y : tensor<?x?x500xf32>
}
// CHECK-LABEL: func.func @auto_cluster
// CHECK:      %m_cluster, %m_rank = sched.split %m_tile by 2 : !sched.axis<?>
// CHECK-NEXT: %mn = sched.swizzle %n_tile, %m_cluster group 2 : !sched.axis<4>, !sched.axis<?>
// CHECK-NEXT: %tile = sched.merge %b0, %mn : !sched.axis<?>, !sched.axis<?>
