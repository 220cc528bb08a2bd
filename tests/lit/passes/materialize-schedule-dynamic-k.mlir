// RUN: mmcomp-opt %s -p materialize-schedule | filecheck %s
// RUN: mmcomp-opt %s -p materialize-schedule | mmcomp-opt | filecheck %s

// A dynamic K (a weight gradient over a runtime token count): both operands MN-major
// ([k, m] and [k, n]). The runtime extent is the index argument %k (sched.extent = "k");
// the K-block loop runs to ceil(K / 64) from it, and the last, ragged block's load is
// clipped like any edge tile. The tile loop and the grid do not depend on K, so the launch
// function takes %k and returns constants.
func.func @wgrad(%dz: tensor<?x200xbf16> {fusion.roles = #fusion.roles<[k, m]>}, %x: tensor<?x136xbf16> {fusion.roles = #fusion.roles<[k, n]>}) -> tensor<200x136xbf16> attributes {fusion.space = #fusion.space<m = 200, n = 136, k = ?>} {
  sched.schedule params #sched.params<tile = 128x64x64, warpgroup = 64x64, instr = m64n64k16, stages = 4, cluster = 1x1, raster = m, swizzle = 2, strategy = persistent, split_k = 1, warp_specialization = cooperative, registers = 40/232, epilogue = smem> {
    %m, %n, %k = sched.space m = 200, n = 136, k = ?
    %m_tile, %m_cta = sched.split %m by 128 : !sched.axis<200>
    %m_wg, %m_wgi = sched.split %m_cta by 64 : !sched.axis<128>
    %m_instr, %m_lane = sched.split %m_wgi by 64 : !sched.axis<64>
    %n_tile, %n_cta = sched.split %n by 64 : !sched.axis<136>
    %n_wg, %n_wgi = sched.split %n_cta by 64 : !sched.axis<64>
    %n_instr, %n_lane = sched.split %n_wgi by 64 : !sched.axis<64>
    %k_blk, %k_cta = sched.split %k by 64 : !sched.axis<?>
    %k_instr, %k_lane = sched.split %k_cta by 16 : !sched.axis<64>
    sched.parallelize %m_wg to warpgroup : !sched.axis<2>
    sched.parallelize %n_wg to warpgroup : !sched.axis<1>
    sched.parallelize %m_lane to instruction : !sched.axis<64>
    sched.parallelize %n_lane to instruction : !sched.axis<64>
    sched.parallelize %k_lane to instruction : !sched.axis<16>
    sched.parallelize %k_blk to serial : !sched.axis<?>
    sched.parallelize %k_instr to serial : !sched.axis<4>
    sched.parallelize %m_instr to serial : !sched.axis<1>
    sched.parallelize %n_instr to serial : !sched.axis<1>
    %tile_mn = sched.swizzle %n_tile, %m_tile group 2 : !sched.axis<3>, !sched.axis<2>
    %iter, %slot = sched.split %tile_mn by 6 : !sched.axis<6>
    sched.parallelize %iter to serial : !sched.axis<1>
    sched.reorder %iter, %k_blk, %k_instr, %m_instr, %n_instr : !sched.axis<1>, !sched.axis<?>, !sched.axis<4>, !sched.axis<1>, !sched.axis<1>
    sched.parallelize %slot to block_x : !sched.axis<6>
  }
  %y = fusion.mma %dz [k, m], %x [k, n] -> [m, n] {fusion.roles = #fusion.roles<[m, n]>} : (tensor<?x200xbf16>, tensor<?x136xbf16>) -> tensor<200x136xf32>
  %o = fusion.cast %y {fusion.roles = #fusion.roles<[m, n]>} : tensor<200x136xf32> to tensor<200x136xbf16>
  func.return %o : tensor<200x136xbf16>
}

// CHECK-LABEL: func.func @wgrad(
// CHECK-SAME:  %dz: memref<?x200xbf16> {fusion.roles = #fusion.roles<[k, m]>}
// CHECK-SAME:  %x: memref<?x136xbf16> {fusion.roles = #fusion.roles<[k, n]>}
// CHECK-SAME:  %out0: memref<200x136xbf16> {fusion.roles = #fusion.roles<[m, n]>, sched.output}
// CHECK-SAME:  %k: index {sched.extent = "k"})
// CHECK-SAME:  sched.grid = @wgrad_launch
// CHECK:       %k_blocks = arith.ceildivui %k, %c64 : index
// CHECK:       scf.for %unit = %cta to %c6 step %grid {
// CHECK:         %acc = scf.for %kb = %c0 to %k_blocks step %c1 iter_args(%acc_1 = %zero) -> (tensor<128x64xf32>) {
// CHECK-NEXT:      %k0 = arith.muli %kb, %c64 : index
// CHECK-NEXT:      %dz_tile = sched.load_tile %dz[%k0, %m0] : memref<?x200xbf16> -> tensor<64x128xbf16>
// CHECK-NEXT:      %x_tile = sched.load_tile %x[%k0, %n0] : memref<?x136xbf16> -> tensor<64x64xbf16>
// CHECK-NEXT:      %acc_2 = sched.mma %dz_tile [k, m], %x_tile [k, n], %acc_1 [m, n]
// CHECK:         sched.store_tile %o, %out0[%m0, %n0] : tensor<128x64xbf16>, memref<200x136xbf16>
// CHECK-LABEL: func.func @wgrad_launch(%k: index {sched.extent = "k"}) -> (index, index, index) {
// CHECK-NEXT:    %c6 = arith.constant 6 : index
// CHECK-NEXT:    %clusters = arith.minui %c6, %c6 : index
// CHECK-NEXT:    func.return %clusters, %c6, %c6 : index, index, index
