// RUN: mmcomp-opt %s -p propagate-axis-mapping --verify-diagnostics --split-input-file | filecheck %s

// Two contractions with different M.
func.func @two_m(%a: tensor<64x32xbf16>, %c: tensor<16x32xbf16>, %w: tensor<128x32xbf16>)
    -> (tensor<64x128xf32>, tensor<16x128xf32>) {
  %y = fusion.linear %a, %w : (tensor<64x32xbf16>, tensor<128x32xbf16>) -> tensor<64x128xf32>
  %z = fusion.linear %c, %w : (tensor<16x32xbf16>, tensor<128x32xbf16>) -> tensor<16x128xf32>
  func.return %y, %z : tensor<64x128xf32>, tensor<16x128xf32>
}
// CHECK: fusion.linear: M is 16 here, but the iteration space has m = 64 (from the first contraction, fusion.linear); every contraction of a fusion shares one iteration space
// CHECK: %z = "fusion.linear"(%c, %w)
// CHECK-NEXT: ^^^^

// -----

// Two contractions sharing A with different N.
func.func @two_n(%a: tensor<64x32xbf16>, %w1: tensor<128x32xbf16>, %w2: tensor<96x32xbf16>)
    -> (tensor<64x128xf32>, tensor<64x96xf32>) {
  %g = fusion.linear %a, %w1 : (tensor<64x32xbf16>, tensor<128x32xbf16>) -> tensor<64x128xf32>
  %u = fusion.linear %a, %w2 : (tensor<64x32xbf16>, tensor<96x32xbf16>) -> tensor<64x96xf32>
  func.return %g, %u : tensor<64x128xf32>, tensor<64x96xf32>
}
// CHECK: fusion.linear: N is 96 here, but the iteration space has n = 128

// -----

// An epilogue operand whose shape fits neither M nor N.
func.func @neither(%a: tensor<64x32xbf16>, %w: tensor<128x32xbf16>, %t: tensor<64x100xf32>)
    -> (tensor<64x128xf32>, tensor<64x100xf32>) {
  %y = fusion.linear %a, %w : (tensor<64x32xbf16>, tensor<128x32xbf16>) -> tensor<64x128xf32>
  %e = fusion.exp %t : tensor<64x100xf32>
  func.return %y, %e : tensor<64x128xf32>, tensor<64x100xf32>
}
// CHECK: fusion.exp: function argument #2 (%t): axis 1 (extent 100) fits no axis of the iteration space (m = 64, n = 128, k = 32); an epilogue operand must line up with the contraction's result, as [M, N], [1, N], [M, 1] or [N]
// CHECK: %e = "fusion.exp"(%t)
// CHECK-NEXT: ^^^^

// -----

// A pointwise op that meets a K axis with an N axis (M = N = K = 32, so the shapes agree).
func.func @k_meets_n(%a: tensor<32x32xf32>, %w: tensor<32x32xf32>) -> tensor<32x32xf32> {
  %y = fusion.linear %a, %w : (tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<32x32xf32>
  %s = fusion.add %y, %a : tensor<32x32xf32>
  func.return %s : tensor<32x32xf32>
}
// CHECK: fusion.add: operand 'rhs': axis 1 has role k, but axis 1 of the result has role n; pointwise operands line up axis by axis

// -----

// Chained contractions: the result of one is the A of the next.
func.func @chained(%a: tensor<32x32xf32>, %w1: tensor<32x32xf32>, %w2: tensor<32x32xf32>) -> tensor<32x32xf32> {
  %h = fusion.linear %a, %w1 : (tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<32x32xf32>
  %y = fusion.linear %h, %w2 : (tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<32x32xf32>
  func.return %y : tensor<32x32xf32>
}
// CHECK: fusion.linear: operand 'a': axis 1 needs role k here, but has role n elsewhere in the fusion (chained contractions are not one iteration space)

// -----

// A fused_multiply_sum over two axes.
func.func @two_k(%a: tensor<8x1x4x16xbf16>, %b: tensor<1x8x4x16xbf16>) -> tensor<8x8xf32> {
  %s = fusion.fused_multiply_sum %a, %b axes [2, 3] : (tensor<8x1x4x16xbf16>, tensor<1x8x4x16xbf16>) -> tensor<8x8xf32>
  func.return %s : tensor<8x8xf32>
}
// CHECK: fusion.fused_multiply_sum: property 'axes': expected one summed axis (the K axis), found [2, 3]

// -----

// A fused_multiply_sum with two M axes.
func.func @two_m_axes(%a: tensor<8x4x1x16xbf16>, %b: tensor<1x1x8x16xbf16>) -> tensor<8x4x8xf32> {
  %s = fusion.fused_multiply_sum %a, %b axes [3] : (tensor<8x4x1x16xbf16>, tensor<1x1x8x16xbf16>) -> tensor<8x4x8xf32>
  func.return %s : tensor<8x4x8xf32>
}
// CHECK: fusion.fused_multiply_sum: axis 1: a second M axis (extent > 1 in 'a' only); expected one

// -----

// Batched and unbatched contractions in one fusion.
func.func @batch_count(%a: tensor<2x64x32xbf16>, %b: tensor<2x32x128xbf16>, %c: tensor<64x32xbf16>, %w: tensor<128x32xbf16>)
    -> (tensor<2x64x128xf32>, tensor<64x128xf32>) {
  %y = fusion.matmul %a, %b : (tensor<2x64x32xbf16>, tensor<2x32x128xbf16>) -> tensor<2x64x128xf32>
  %z = fusion.linear %c, %w : (tensor<64x32xbf16>, tensor<128x32xbf16>) -> tensor<64x128xf32>
  func.return %y, %z : tensor<2x64x128xf32>, tensor<64x128xf32>
}
// CHECK: fusion.linear: 0 batch axes here, but the iteration space has 1 (from the first contraction, fusion.matmul)

// -----

// M = 1, and an epilogue that expands that M axis.
func.func @expand_m(%a: tensor<1x32xf32>, %w: tensor<128x32xf32>) -> tensor<4x128xf32> {
  %y = fusion.linear %a, %w : (tensor<1x32xf32>, tensor<128x32xf32>) -> tensor<1x128xf32>
  %e = fusion.broadcast %y new_dims [false, false] : tensor<1x128xf32> to tensor<4x128xf32>
  func.return %e : tensor<4x128xf32>
}
// CHECK: fusion.broadcast: operand 'input': axis 0 expands from extent 1, so it must be absent (_), but it has role m elsewhere

// -----

// A fusion function without a contraction.
func.func @no_contraction(%t: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %e = fusion.exp %t : tensor<8x8xf32>
  func.return %e : tensor<8x8xf32>
}
// CHECK: func.func @no_contraction: expected a contraction (fusion.matmul, fusion.linear, fusion.fused_multiply_sum or fusion.mma) to define the iteration space, found none

// -----

// One value as both factors of a contraction: its axis 0 would be both M and N.
func.func @gram(%a: tensor<32x16xf32>) -> tensor<32x32xf32> {
  %y = fusion.linear %a, %a : (tensor<32x16xf32>, tensor<32x16xf32>) -> tensor<32x32xf32>
  func.return %y : tensor<32x32xf32>
}
// CHECK: fusion.linear: operand 'b': axis 0 needs role n here, but has role m elsewhere in the fusion
// CHECK-NOT: chained

// -----

// Two batched contractions with different batch extents.
func.func @batch_extent(%a: tensor<2x64x32xbf16>, %b: tensor<2x32x128xbf16>, %c: tensor<3x64x32xbf16>, %d: tensor<3x32x128xbf16>)
    -> (tensor<2x64x128xf32>, tensor<3x64x128xf32>) {
  %y = fusion.matmul %a, %b : (tensor<2x64x32xbf16>, tensor<2x32x128xbf16>) -> tensor<2x64x128xf32>
  %z = fusion.matmul %c, %d : (tensor<3x64x32xbf16>, tensor<3x32x128xbf16>) -> tensor<3x64x128xf32>
  func.return %y, %z : tensor<2x64x128xf32>, tensor<3x64x128xf32>
}
// CHECK: fusion.matmul: batch axis b0 is 3 here, but the iteration space has b0 = 2
