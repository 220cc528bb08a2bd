// RUN: mmcomp-opt %s --split-input-file --parsing-diagnostics | filecheck %s

// The group sizes' keyword is missing.
func.func @no_keyword(%x: tensor<?x64xbf16>, %w: tensor<8x128x64xbf16>, %o: tensor<8xi32>) -> tensor<?x128xf32> {
  %0 = fusion.grouped_linear %x, %w : (tensor<?x64xbf16>, tensor<8x128x64xbf16>) -> tensor<?x128xf32>
  func.return %0 : tensor<?x128xf32>
}
// CHECK: fusion.grouped_linear: expected `offsets %o` (x [T, K]) or `counts %c` (x [G, Mmax, K]) after the operands

// -----

// counts with an x of rank 2.
func.func @wrong_keyword(%x: tensor<?x64xbf16>, %w: tensor<8x128x64xbf16>, %o: tensor<8xi32>) -> tensor<?x128xf32> {
  %0 = fusion.grouped_linear %x, %w counts %o : (tensor<?x64xbf16>, tensor<8x128x64xbf16>, tensor<8xi32>) -> tensor<?x128xf32>
  func.return %0 : tensor<?x128xf32>
}
// CHECK: fusion.grouped_linear: `counts` goes with x [G, Mmax, K]; x here has rank 2: write `offsets`
