// RUN: mmcomp-opt %s -p propagate-axis-mapping --verify-diagnostics --split-input-file | filecheck %s
// Errors that propagate-axis-mapping finds at an op carry the op's location in the file.

func.func @two_m(%a: tensor<64x32xbf16>, %c: tensor<16x32xbf16>, %w: tensor<128x32xbf16>)
    -> (tensor<64x128xf32>, tensor<16x128xf32>) {
  %y = fusion.linear %a, %w : (tensor<64x32xbf16>, tensor<128x32xbf16>) -> tensor<64x128xf32>
  // CHECK: propagate-axis-mapping-locations.mlir:8:8: error: fusion.linear: M is 16 here, but the iteration space has m = 64
  %z = fusion.linear %c, %w : (tensor<16x32xbf16>, tensor<128x32xbf16>) -> tensor<16x128xf32>
  func.return %y, %z : tensor<64x128xf32>, tensor<16x128xf32>
}

// -----

// The line counts from the top of the file, past the split markers.
func.func @epilogue_fits_nothing(%a: tensor<64x32xbf16>, %w: tensor<128x32xbf16>, %t: tensor<64x100xf32>)
    -> tensor<64x100xf32> {
  %y = fusion.linear %a, %w : (tensor<64x32xbf16>, tensor<128x32xbf16>) -> tensor<64x128xf32>
  // CHECK: propagate-axis-mapping-locations.mlir:19:8: error: fusion.exp: function argument #2 (%t): axis 1 (extent 100) fits no axis of the iteration space
  %e = fusion.exp %t : tensor<64x100xf32>
  func.return %e : tensor<64x100xf32>
}
