// RUN: mmcomp-opt %s | filecheck %s
// RUN: mmcomp-opt %s | mmcomp-opt | filecheck %s

// A dynamic M (`?`) in tensor types and in the iteration space prints and parses back.
func.func @lin(%a: tensor<?x64xbf16>, %w: tensor<32x64xbf16>, %bias: tensor<32xbf16>,
               %t: tensor<?x32xf32>) -> tensor<?x32xf32>
    attributes {fusion.space = #fusion.space<m = ?, n = 32, k = 64>} {
  %y = fusion.linear %a, %w, %bias : (tensor<?x64xbf16>, tensor<32x64xbf16>, tensor<32xbf16>) -> tensor<?x32xf32>
  %g = fusion.gelu %y approximate tanh : tensor<?x32xf32>
  %o = fusion.mul %g, %t : tensor<?x32xf32>
  func.return %o : tensor<?x32xf32>
}
// CHECK-LABEL: func.func @lin(%a: tensor<?x64xbf16>, %w: tensor<32x64xbf16>, %bias: tensor<32xbf16>, %t: tensor<?x32xf32>) -> tensor<?x32xf32>
// CHECK-SAME:  fusion.space = #fusion.space<m = ?, n = 32, k = 64>
// CHECK:       fusion.linear %a, %w, %bias : (tensor<?x64xbf16>, tensor<32x64xbf16>, tensor<32xbf16>) -> tensor<?x32xf32>
// CHECK:       fusion.mul %g, %t : tensor<?x32xf32>

// A dynamic batch extent and a dynamic M in one batched matmul.
func.func @bmm(%a: tensor<?x?x64xbf16>, %b: tensor<?x64x32xbf16>) -> tensor<?x?x32xf32>
    attributes {fusion.space = #fusion.space<b0 = ?, m = ?, n = 32, k = 64>} {
  %y = fusion.matmul %a, %b : (tensor<?x?x64xbf16>, tensor<?x64x32xbf16>) -> tensor<?x?x32xf32>
  func.return %y : tensor<?x?x32xf32>
}
// CHECK-LABEL: func.func @bmm
// CHECK-SAME:  fusion.space = #fusion.space<b0 = ?, m = ?, n = 32, k = 64>
// CHECK:       fusion.matmul %a, %b : (tensor<?x?x64xbf16>, tensor<?x64x32xbf16>) -> tensor<?x?x32xf32>
