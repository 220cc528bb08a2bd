// RUN: mmcomp-opt %s -p tile-split | filecheck %s
// RUN: mmcomp-opt %s -p tile-split | mmcomp-opt | filecheck %s

// A dynamic M: the space has m = ?, and the m tile index has a dynamic extent
// (ceil(M / 128) tiles, known at call time); the splits inside a tile are static.
func.func @lin(%a: tensor<?x200xbf16> {fusion.roles = #fusion.roles<[m, k]>}, %w: tensor<500x200xbf16> {fusion.roles = #fusion.roles<[n, k]>}) -> tensor<?x500xf32> attributes {fusion.space = #fusion.space<m = ?, n = 500, k = 200>, sched.params = #sched.params<tile = 128x128x64, raster = n, swizzle = 2, split_k = 2>} {
  %y = fusion.mma %a [m, k], %w [n, k] -> [m, n] {fusion.roles = #fusion.roles<[m, n]>} : (tensor<?x200xbf16>, tensor<500x200xbf16>) -> tensor<?x500xf32>
  func.return %y : tensor<?x500xf32>
}
// CHECK-LABEL: func.func @lin
// CHECK:      %m, %n, %k = sched.space m = ?, n = 500, k = 200
// CHECK-NEXT: %m_tile, %m_cta = sched.split %m by 128 : !sched.axis<?>
// CHECK-NEXT: %m_wg, %m_wgi = sched.split %m_cta by 64 : !sched.axis<128>
// CHECK-NEXT: %m_instr, %m_lane = sched.split %m_wgi by 64 : !sched.axis<64>
// CHECK-NEXT: %n_tile, %n_cta = sched.split %n by 128 : !sched.axis<500>
// CHECK:      %k_blk, %k_cta = sched.split %k by 64 : !sched.axis<200>
// CHECK:      sched.parallelize %m_wg to warpgroup : !sched.axis<2>
