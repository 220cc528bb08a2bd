// RUN: mmcomp-opt %s -p propagate-axis-mapping --verify-diagnostics --split-input-file | filecheck %s

// A dynamic N (the rows of W) is refused at the contraction, naming the operand.
func.func @dynamic_n(%a: tensor<8x64xbf16>, %w: tensor<?x64xbf16>) -> tensor<8x?xf32> {
  %y = fusion.linear %a, %w : (tensor<8x64xbf16>, tensor<?x64xbf16>) -> tensor<8x?xf32>
  func.return %y : tensor<8x?xf32>
}
// CHECK: fusion.linear: operand 'b': axis 0 is dynamic (?) but has role n (N); only M, K and batch extents may be dynamic, N is static

// -----

// A dynamic M in one contraction and a static one in the other: one iteration space.
func.func @two_m(%a: tensor<?x64xbf16>, %c: tensor<16x64xbf16>, %w: tensor<32x64xbf16>)
    -> (tensor<?x32xf32>, tensor<16x32xf32>) {
  %y = fusion.linear %a, %w : (tensor<?x64xbf16>, tensor<32x64xbf16>) -> tensor<?x32xf32>
  %z = fusion.linear %c, %w : (tensor<16x64xbf16>, tensor<32x64xbf16>) -> tensor<16x32xf32>
  func.return %y, %z : tensor<?x32xf32>, tensor<16x32xf32>
}
// CHECK: fusion.linear: M is 16 here, but the iteration space has m = ? (from the first contraction, fusion.linear); every contraction of a fusion shares one iteration space
