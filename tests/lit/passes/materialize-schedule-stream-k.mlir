// RUN: mmcomp-opt %s -p materialize-schedule --split-input-file | filecheck %s
// RUN: mmcomp-opt %s -p materialize-schedule --split-input-file | mmcomp-opt --split-input-file | filecheck %s

// Stream-K, 12 tiles of 4 K blocks on a grid of 48 CTAs (insert-persistent-loop split the
// tiles by min(SMs, 48 iterations)): CTA c takes the iterations [c 48 / 48, (c + 1) 48 / 48)
// of the linear (tile, K block) space and walks the tiles they touch, each with a K loop over
// its blocks [kb_lo, kb_hi). A CTA that covers a whole tile applies the epilogue; otherwise it
// stores its partial in its slot of the workspace [CTAs, 2, tile] (slot 1 for a tile after its
// first), counts it on the tile's counter of `segments` arrivals, and the last to arrive sums
// the partials of CTAs first_cta .. last_cta in that order (the K order) before the epilogue.

func.func @lin(%a: tensor<300x200xbf16> {fusion.roles = #fusion.roles<[m, k]>}, %w: tensor<500x200xbf16> {fusion.roles = #fusion.roles<[n, k]>}, %bias: tensor<500xf32> {fusion.roles = #fusion.roles<[n]>}) -> tensor<300x500xf32> attributes {fusion.space = #fusion.space<m = 300, n = 500, k = 200>} {
  sched.schedule params #sched.params<tile = 128x128x64, warpgroup = 64x128, instr = m64n128k16, stages = 4, cluster = 1x1, raster = m, swizzle = 2, strategy = stream-k, split_k = 1, warp_specialization = cooperative, registers = 40/232, epilogue = smem> {
    %m, %n, %k = sched.space m = 300, n = 500, k = 200
    %m_tile, %m_cta = sched.split %m by 128 : !sched.axis<300>
    %n_tile, %n_cta = sched.split %n by 128 : !sched.axis<500>
    %k_blk, %k_cta = sched.split %k by 64 : !sched.axis<200>
    %tile_mn = sched.swizzle %n_tile, %m_tile group 2 : !sched.axis<4>, !sched.axis<3>
    %iter, %slot = sched.split %tile_mn by 48 : !sched.axis<12>
    sched.parallelize %iter to serial : !sched.axis<1>
    sched.reorder %iter, %k_blk : !sched.axis<1>, !sched.axis<4>
    sched.parallelize %slot to block_x : !sched.axis<48>
  }
  %y = fusion.mma %a [m, k], %w [n, k] -> [m, n] {fusion.roles = #fusion.roles<[m, n]>} : (tensor<300x200xbf16>, tensor<500x200xbf16>) -> tensor<300x500xf32>
  %b = fusion.broadcast %bias new_dims [true, false] {fusion.roles = #fusion.roles<[m, n]>} : tensor<500xf32> to tensor<300x500xf32>
  %o = fusion.add %y, %b {fusion.roles = #fusion.roles<[m, n]>} : tensor<300x500xf32>
  func.return %o : tensor<300x500xf32>
}

// CHECK-LABEL: func.func @lin(%a: memref<300x200xbf16> {fusion.roles = #fusion.roles<[m, k]>}, %w: memref<500x200xbf16> {fusion.roles = #fusion.roles<[n, k]>}, %bias: memref<500xf32> {fusion.roles = #fusion.roles<[n]>}, %out0: memref<300x500xf32> {fusion.roles = #fusion.roles<[m, n]>, sched.output}, %partials0: memref<48x2x128x128xf32> {sched.workspace = "partials"}, %arrivals: memref<12xi32> {sched.workspace = "arrivals"}) attributes {sched.grid = 48 : i64, sched.cluster = 1 : i64, sched.num_inputs = 3 : i64, sched.num_outputs = 1 : i64, fusion.space = #fusion.space<m = 300, n = 500, k = 200>, sched.params = #sched.params<tile = 128x128x64, warpgroup = 64x128, instr = m64n128k16, stages = 4, cluster = 1x1, raster = m, swizzle = 2, strategy = stream-k, split_k = 1, warp_specialization = cooperative, registers = 40/232, epilogue = smem>} {
// CHECK:      %cta = "gpu.block_id"() <{dimension = #gpu<dim x>}> : () -> index
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = arith.addi %cta, %c1 : index
// CHECK-NEXT: %[[V1:[a-z0-9_]+]] = arith.muli %cta, %c48 : index
// CHECK-NEXT: %start = arith.divui %[[V1]], %c48 : index
// CHECK-NEXT: %[[V2:[a-z0-9_]+]] = arith.muli %[[V0]], %c48 : index
// CHECK-NEXT: %end = arith.divui %[[V2]], %c48 : index
// CHECK-NEXT: %first_tile = arith.divui %start, %c4 : index
// CHECK-NEXT: %end_tile = arith.ceildivui %end, %c4 : index
// CHECK-NEXT: %[[V3:[a-z0-9_]+]] = arith.subi %end_tile, %first_tile : index
// CHECK-NEXT: scf.for %unit = %c0 to %[[V3]] step %c1 {
// CHECK-NEXT: %sk_tile = arith.addi %first_tile, %unit : index
// CHECK-NEXT: %kb_base = arith.muli %sk_tile, %c4 : index
// CHECK-NEXT: %[[V4:[a-z0-9_]+]] = arith.maxui %start, %kb_base : index
// CHECK-NEXT: %kb_lo = arith.subi %[[V4]], %kb_base : index
// CHECK-NEXT: %[[V5:[a-z0-9_]+]] = arith.addi %kb_base, %c4 : index
// CHECK-NEXT: %[[V6:[a-z0-9_]+]] = arith.minui %end, %[[V5]] : index
// CHECK-NEXT: %kb_hi = arith.subi %[[V6]], %kb_base : index
// CHECK-NEXT: %group = arith.divui %sk_tile, %c6 : index
// CHECK-NEXT: %group_first = arith.muli %group, %c2 : index
// CHECK-NEXT: %group_offset = arith.remui %sk_tile, %c6 : index
// CHECK-NEXT: %[[V7:[a-z0-9_]+]] = arith.remui %group_offset, %c2 : index
// CHECK-NEXT: %tile_n = arith.addi %group_first, %[[V7]] : index
// CHECK-NEXT: %tile_m = arith.divui %group_offset, %c2 : index
// CHECK-NEXT: %m0 = arith.muli %tile_m, %c128 : index
// CHECK-NEXT: %n0 = arith.muli %tile_n, %c128 : index
// CHECK-NEXT: %zero = sched.zero_tile : tensor<128x128xf32>
// CHECK-NEXT: %acc = scf.for %kb = %kb_lo to %kb_hi step %c1 iter_args(%[[VACC1:[a-z0-9_]+]] = %zero) -> (tensor<128x128xf32>) {
// CHECK-NEXT: %k0 = arith.muli %kb, %c64 : index
// CHECK-NEXT: %a_tile = sched.load_tile %a[%m0, %k0] : memref<300x200xbf16> -> tensor<128x64xbf16>
// CHECK-NEXT: %w_tile = sched.load_tile %w[%n0, %k0] : memref<500x200xbf16> -> tensor<128x64xbf16>
// CHECK-NEXT: %[[VACC2:[a-z0-9_]+]] = sched.mma %a_tile [m, k], %w_tile [n, k], %[[VACC1]] [m, n] : tensor<128x64xbf16>, tensor<128x64xbf16>, tensor<128x128xf32>
// CHECK-NEXT: scf.yield %[[VACC2]] : tensor<128x128xf32>
// CHECK-NEXT: }
// CHECK-NEXT: %[[V8:[a-z0-9_]+]] = arith.subi %kb_hi, %kb_lo : index
// CHECK-NEXT: %whole_tile = arith.cmpi eq, %[[V8]], %c4 : index
// CHECK-NEXT: scf.if %whole_tile {
// CHECK-NEXT: %bias_tile = sched.load_tile %bias[%n0] : memref<500xf32> -> tensor<128xf32>
// CHECK-NEXT: %o = sched.epilogue(%acc, %bias_tile) : (tensor<128x128xf32>, tensor<128xf32>) -> tensor<128x128xf32> {
// CHECK-NEXT: ^bb0(%y: tensor<128x128xf32>, %[[VBIAS1:[a-z0-9_]+]]: tensor<128xf32>):
// CHECK-NEXT: %b = fusion.broadcast %[[VBIAS1]] new_dims [true, false] {fusion.roles = #fusion.roles<[m, n]>} : tensor<128xf32> to tensor<128x128xf32>
// CHECK-NEXT: %[[VO1:[a-z0-9_]+]] = fusion.add %y, %b {fusion.roles = #fusion.roles<[m, n]>} : tensor<128x128xf32>
// CHECK-NEXT: sched.yield %[[VO1]] : tensor<128x128xf32>
// CHECK-NEXT: }
// CHECK-NEXT: sched.store_tile %o, %out0[%m0, %n0] : tensor<128x128xf32>, memref<300x500xf32>
// CHECK-NEXT: } else {
// CHECK-NEXT: %later_tile = arith.cmpi ne, %sk_tile, %first_tile : index
// CHECK-NEXT: %slot = arith.select %later_tile, %c1, %c0 : index
// CHECK-NEXT: sched.store_partial %acc, %partials0[%cta, %slot] : tensor<128x128xf32>, memref<48x2x128x128xf32>
// CHECK-NEXT: %[[V9:[a-z0-9_]+]] = arith.addi %kb_base, %c1 : index
// CHECK-NEXT: %[[V10:[a-z0-9_]+]] = arith.muli %[[V9]], %c48 : index
// CHECK-NEXT: %[[V11:[a-z0-9_]+]] = arith.subi %[[V10]], %c1 : index
// CHECK-NEXT: %first_cta = arith.divui %[[V11]], %c48 : index
// CHECK-NEXT: %[[V12:[a-z0-9_]+]] = arith.addi %kb_base, %c4 : index
// CHECK-NEXT: %[[V13:[a-z0-9_]+]] = arith.muli %[[V12]], %c48 : index
// CHECK-NEXT: %[[V14:[a-z0-9_]+]] = arith.subi %[[V13]], %c1 : index
// CHECK-NEXT: %last_cta = arith.divui %[[V14]], %c48 : index
// CHECK-NEXT: %other_segments = arith.subi %last_cta, %first_cta : index
// CHECK-NEXT: %segments = arith.addi %other_segments, %c1 : index
// CHECK-NEXT: %arrived = sched.arrive_segment %arrivals[%sk_tile] of %segments : memref<12xi32> -> index
// CHECK-NEXT: %last_segment = arith.cmpi eq, %arrived, %other_segments : index
// CHECK-NEXT: scf.if %last_segment {
// CHECK-NEXT: %[[V15:[a-z0-9_]+]] = arith.muli %first_cta, %c48 : index
// CHECK-NEXT: %first_start = arith.divui %[[V15]], %c48 : index
// CHECK-NEXT: %first_later = arith.cmpi ne, %first_start, %kb_base : index
// CHECK-NEXT: %first_slot = arith.select %first_later, %c1, %c0 : index
// CHECK-NEXT: %[[VZERO1:[a-z0-9_]+]] = sched.zero_tile : tensor<128x128xf32>
// CHECK-NEXT: %[[V16:[a-z0-9_]+]] = arith.addi %last_cta, %c1 : index
// CHECK-NEXT: %sum = scf.for %segment = %first_cta to %[[V16]] step %c1 iter_args(%[[VSUM1:[a-z0-9_]+]] = %[[VZERO1]]) -> (tensor<128x128xf32>) {
// CHECK-NEXT: %is_first = arith.cmpi eq, %segment, %first_cta : index
// CHECK-NEXT: %segment_slot = arith.select %is_first, %first_slot, %c0 : index
// CHECK-NEXT: %[[VSUM2:[a-z0-9_]+]] = sched.accumulate_partial %[[VSUM1]], %partials0[%segment, %segment_slot] : tensor<128x128xf32>, memref<48x2x128x128xf32> -> tensor<128x128xf32>
// CHECK-NEXT: scf.yield %[[VSUM2]] : tensor<128x128xf32>
// CHECK-NEXT: }
// CHECK-NEXT: %[[VBIASTILE1:[a-z0-9_]+]] = sched.load_tile %bias[%n0] : memref<500xf32> -> tensor<128xf32>
// CHECK-NEXT: %[[VO2:[a-z0-9_]+]] = sched.epilogue(%sum, %[[VBIASTILE1]]) : (tensor<128x128xf32>, tensor<128xf32>) -> tensor<128x128xf32> {
// CHECK-NEXT: ^bb0(%[[VY1:[a-z0-9_]+]]: tensor<128x128xf32>, %[[VBIAS2:[a-z0-9_]+]]: tensor<128xf32>):
// CHECK-NEXT: %[[VB1:[a-z0-9_]+]] = fusion.broadcast %[[VBIAS2]] new_dims [true, false] {fusion.roles = #fusion.roles<[m, n]>} : tensor<128xf32> to tensor<128x128xf32>
// CHECK-NEXT: %[[VO3:[a-z0-9_]+]] = fusion.add %[[VY1]], %[[VB1]] {fusion.roles = #fusion.roles<[m, n]>} : tensor<128x128xf32>
// CHECK-NEXT: sched.yield %[[VO3]] : tensor<128x128xf32>
// CHECK-NEXT: }
// CHECK-NEXT: sched.store_tile %[[VO2]], %out0[%m0, %n0] : tensor<128x128xf32>, memref<300x500xf32>
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: func.return
// CHECK-NEXT: }
// CHECK-NEXT: }

// -----

// The hybrid: 284 tiles on 132 CTAs. floor(284 / 132) = 2 waves run data-parallel (unit u < 2
// of CTA c is tile 132 u + c, K blocks 0 to 4, no workspace); the 20 tail tiles split into
// min(132 / 20, 8, 4) = 4 segments of one K block, segment j of tail tile t on CTA 20 j + t
// (80 tail units: CTAs 0 to 79 take one each, in their slot 0).

func.func @lin(%a: tensor<9000x200xbf16> {fusion.roles = #fusion.roles<[m, k]>}, %w: tensor<500x200xbf16> {fusion.roles = #fusion.roles<[n, k]>}, %bias: tensor<500xf32> {fusion.roles = #fusion.roles<[n]>}) -> tensor<9000x500xf32> attributes {fusion.space = #fusion.space<m = 9000, n = 500, k = 200>} {
  sched.schedule params #sched.params<tile = 128x128x64, warpgroup = 64x128, instr = m64n128k16, stages = 4, cluster = 1x1, raster = m, swizzle = 2, strategy = hybrid-stream-k, split_k = 1, warp_specialization = cooperative, registers = 40/232, epilogue = smem> {
    %m, %n, %k = sched.space m = 9000, n = 500, k = 200
    %m_tile, %m_cta = sched.split %m by 128 : !sched.axis<9000>
    %n_tile, %n_cta = sched.split %n by 128 : !sched.axis<500>
    %k_blk, %k_cta = sched.split %k by 64 : !sched.axis<200>
    %tile_mn = sched.swizzle %n_tile, %m_tile group 2 : !sched.axis<4>, !sched.axis<71>
    %iter, %slot = sched.split %tile_mn by 132 : !sched.axis<284>
    sched.parallelize %iter to serial : !sched.axis<3>
    sched.reorder %iter, %k_blk : !sched.axis<3>, !sched.axis<4>
    sched.parallelize %slot to block_x : !sched.axis<132>
  }
  %y = fusion.mma %a [m, k], %w [n, k] -> [m, n] {fusion.roles = #fusion.roles<[m, n]>} : (tensor<9000x200xbf16>, tensor<500x200xbf16>) -> tensor<9000x500xf32>
  %b = fusion.broadcast %bias new_dims [true, false] {fusion.roles = #fusion.roles<[m, n]>} : tensor<500xf32> to tensor<9000x500xf32>
  %o = fusion.add %y, %b {fusion.roles = #fusion.roles<[m, n]>} : tensor<9000x500xf32>
  func.return %o : tensor<9000x500xf32>
}

// CHECK-LABEL: func.func @lin(
// CHECK-SAME:  %partials0: memref<132x2x128x128xf32> {sched.workspace = "partials"}, %arrivals: memref<284xi32> {sched.workspace = "arrivals"}) attributes {sched.grid = 132 : i64
// CHECK:       %[[SPARE:[0-9]+]] = arith.subi %c131, %cta : index
// CHECK-NEXT:  %[[UP:[0-9]+]] = arith.addi %c80, %[[SPARE]] : index
// CHECK-NEXT:  %tail_rounds = arith.divui %[[UP]], %c132 : index
// CHECK-NEXT:  %units = arith.addi %c2, %tail_rounds : index
// CHECK-NEXT:  scf.for %unit = %c0 to %units step %c1 {
// CHECK-NEXT:    %data_parallel = arith.cmpi ult, %unit, %c2 : index
// CHECK-NEXT:    %[[PICK:[0-9]+]] = arith.select %data_parallel, %c2, %unit : index
// CHECK-NEXT:    %round = arith.subi %[[PICK]], %c2 : index
// CHECK-NEXT:    %[[R:[0-9]+]] = arith.muli %round, %c132 : index
// CHECK-NEXT:    %tail_unit = arith.addi %[[R]], %cta : index
// CHECK-NEXT:    %tail_tile = arith.remui %tail_unit, %c20 : index
// CHECK-NEXT:    %segment = arith.divui %tail_unit, %c20 : index
// CHECK:         %[[W:[0-9]+]] = arith.muli %unit, %c132 : index
// CHECK-NEXT:    %[[WT:[0-9]+]] = arith.addi %[[W]], %cta : index
// CHECK-NEXT:    %[[TT:[0-9]+]] = arith.addi %c264, %tail_tile : index
// CHECK-NEXT:    %[[TILE:[a-z0-9_]+]] = arith.select %data_parallel, %[[WT]], %[[TT]] : index
// CHECK-NEXT:    %[[LO:[a-z0-9_]+]] = arith.select %data_parallel, %c0, %kb_lo : index
// CHECK-NEXT:    %[[HI:[a-z0-9_]+]] = arith.select %data_parallel, %c4, %kb_hi : index
// CHECK-NEXT:    %group = arith.divui %[[TILE]], %c142 : index
// CHECK:         %acc = scf.for %kb = %[[LO]] to %[[HI]] step %c1
// CHECK:         scf.if %whole_tile {
// CHECK:         } else {
// CHECK:           sched.store_partial %acc, %partials0[%cta, %round]
// CHECK:           %arrived = sched.arrive_segment %arrivals[%[[TILE]]] of %c4 : memref<284xi32> -> index
// CHECK-NEXT:      %last_segment = arith.cmpi eq, %arrived, %c3 : index
// CHECK:           scf.if %last_segment {
// CHECK:             scf.for %{{.*}} = %c0 to %c4 step %c1
// CHECK:               %segment_unit = arith.addi %{{[0-9]+}}, %tail_tile : index
// CHECK-NEXT:          %segment_cta = arith.remui %segment_unit, %c132 : index
// CHECK-NEXT:          %segment_slot = arith.divui %segment_unit, %c132 : index
// CHECK-NEXT:          sched.accumulate_partial %sum_1, %partials0[%segment_cta, %segment_slot]


// -----

// A dynamic M: the tile count comes from %m, the grid from gpu.grid_dim (the launch takes
// min(iterations, 132) CTAs), the counters are sized by the CTA tiles; the launch function's
// third result is the largest product of the 32-bit iteration arithmetic, iterations x grid,
// which the launch checks as it checks work units.

func.func @lin(%a: tensor<?x200xbf16> {fusion.roles = #fusion.roles<[m, k]>}, %w: tensor<500x200xbf16> {fusion.roles = #fusion.roles<[n, k]>}, %bias: tensor<500xf32> {fusion.roles = #fusion.roles<[n]>}) -> tensor<?x500xf32> attributes {fusion.space = #fusion.space<m = ?, n = 500, k = 200>} {
  sched.schedule params #sched.params<tile = 128x128x64, warpgroup = 64x128, instr = m64n128k16, stages = 4, cluster = 1x1, raster = m, swizzle = 2, strategy = stream-k, split_k = 1, warp_specialization = cooperative, registers = 40/232, epilogue = smem> {
    %m, %n, %k = sched.space m = ?, n = 500, k = 200
    %m_tile, %m_cta = sched.split %m by 128 : !sched.axis<?>
    %n_tile, %n_cta = sched.split %n by 128 : !sched.axis<500>
    %k_blk, %k_cta = sched.split %k by 64 : !sched.axis<200>
    %tile_mn = sched.swizzle %n_tile, %m_tile group 2 : !sched.axis<4>, !sched.axis<?>
    %iter, %slot = sched.split %tile_mn by 132 : !sched.axis<?>
    sched.parallelize %iter to serial : !sched.axis<?>
    sched.reorder %iter, %k_blk : !sched.axis<?>, !sched.axis<4>
    sched.parallelize %slot to block_x : !sched.axis<132>
  }
  %y = fusion.mma %a [m, k], %w [n, k] -> [m, n] {fusion.roles = #fusion.roles<[m, n]>} : (tensor<?x200xbf16>, tensor<500x200xbf16>) -> tensor<?x500xf32>
  %b = fusion.broadcast %bias new_dims [true, false] {fusion.roles = #fusion.roles<[m, n]>} : tensor<500xf32> to tensor<?x500xf32>
  %o = fusion.add %y, %b {fusion.roles = #fusion.roles<[m, n]>} : tensor<?x500xf32>
  func.return %o : tensor<?x500xf32>
}

// CHECK-LABEL: func.func @lin(
// CHECK-SAME:  %partials0: memref<132x2x128x128xf32> {sched.workspace = "partials"}, %arrivals: memref<?xi32> {sched.workspace = "arrivals"}, %m: index {sched.extent = "m"}) attributes {sched.grid = @lin_launch
// CHECK:       %tiles_m = arith.ceildivui %m, %c128 : index
// CHECK-NEXT:  %mn_units = arith.muli %tiles_m, %c4 : index
// CHECK-NEXT:  %cta = "gpu.block_id"() <{dimension = #gpu<dim x>}> : () -> index
// CHECK-NEXT:  %grid = "gpu.grid_dim"() <{dimension = #gpu<dim x>}> : () -> index
// CHECK-NEXT:  %iterations = arith.muli %mn_units, %c4 : index
// CHECK-NEXT:  %[[NEXT:[0-9]+]] = arith.addi %cta, %c1 : index
// CHECK-NEXT:  %[[P:[0-9]+]] = arith.muli %cta, %iterations : index
// CHECK-NEXT:  %start = arith.divui %[[P]], %grid : index
// CHECK:       func.func @lin_launch(%m: index {sched.extent = "m"}) -> (index, index, index) {
// CHECK:         %tiles_m = arith.ceildivui %m, %c128 : index
// CHECK-NEXT:    %mn_units = arith.muli %tiles_m, %c4 : index
// CHECK-NEXT:    %iterations = arith.muli %mn_units, %c4 : index
// CHECK-NEXT:    %clusters = arith.minui %iterations, %c132 : index
// CHECK-NEXT:    %iteration_products = arith.muli %iterations, %clusters : index
// CHECK-NEXT:    func.return %clusters, %mn_units, %iteration_products : index, index, index
