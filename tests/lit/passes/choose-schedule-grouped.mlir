// RUN: mmcomp-opt %s -p propagate-axis-mapping,choose-schedule --split-input-file | filecheck %s
// RUN: mmcomp-opt %s -p propagate-axis-mapping,choose-schedule{split-k=2} --split-input-file --verify-diagnostics | filecheck %s --check-prefix=FIXED

// A grouped linear's schedule: one CTA per tile of one group with all its K blocks, no
// cluster, cooperative consumers, the staged (smem) epilogue unless one is given; the
// cheaper of the 128-row tile for the rows of all groups (T at the nominal M here) and
// a 64-row one whose consumers split N (at N = 128, 64x128 costs less by grouped_cost).

// CHECK-LABEL: func.func @grouped
// CHECK-SAME:    sched.params = #sched.params<tile = 64x128x64, warpgroup = 64x64, {{.*}}cluster = 1x1, {{.*}}strategy = persistent, split_k = 1, warp_specialization = cooperative, {{.*}}epilogue = smem>
func.func @grouped(%x: tensor<?x64xbf16>, %w: tensor<8x128x64xbf16>, %o: tensor<8xi32>) -> tensor<?x128xf32> {
  %0 = fusion.grouped_linear %x, %w offsets %o : (tensor<?x64xbf16>, tensor<8x128x64xbf16>, tensor<8xi32>) -> tensor<?x128xf32>
  func.return %0 : tensor<?x128xf32>
}

// -----

// Decode-sized groups (Mmax = 16 rows each): swapped, the tile's 16 rows as wgmma's n and
// W's 128 rows split between the two consumers.

// CHECK-LABEL: func.func @masked
// CHECK-SAME:    tile = 16x128x64, warpgroup = 16x64, instr = m64n16k16
// CHECK-SAME:    split_k = 1, warp_specialization = cooperative, {{.*}}epilogue = registers, swap_ab = true>
func.func @masked(%x: tensor<64x16x256xbf16>, %w: tensor<64x512x256xbf16>, %c: tensor<64xi32>) -> tensor<64x16x512xf32> {
  %0 = fusion.grouped_linear %x, %w counts %c : (tensor<64x16x256xbf16>, tensor<64x512x256xbf16>, tensor<64xi32>) -> tensor<64x16x512xf32>
  func.return %0 : tensor<64x16x512xf32>
}

// FIXED: choose-schedule: @grouped: split_k=2: a grouped kernel runs with split_k=1
