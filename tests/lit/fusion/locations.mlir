// RUN: not mmcomp-opt %s --split-input-file 2>&1 | filecheck %s
// A verifier error names the failing op's place in the file, as MLIR prints it: with two
// linears, the second one is the culprit.

func.func @second_is_wrong(%a: tensor<64x32xbf16>, %w: tensor<128x32xbf16>, %v: tensor<96x32xbf16>)
    -> (tensor<64x128xf32>, tensor<64x64xf32>) {
  %y = fusion.linear %a, %w : (tensor<64x32xbf16>, tensor<128x32xbf16>) -> tensor<64x128xf32>
  // CHECK: locations.mlir:9:8: error: fusion.linear: result: expected type tensor<64x96xf32>, found tensor<64x64xf32>
  %z = fusion.linear %a, %v : (tensor<64x32xbf16>, tensor<96x32xbf16>) -> tensor<64x64xf32>
  func.return %y, %z : tensor<64x128xf32>, tensor<64x64xf32>
}
