// RUN: mmcomp-opt %s --verify-diagnostics --split-input-file | filecheck %s

// K of w differs from that of x.
func.func @k_mismatch(%x: tensor<?x64xbf16>, %w: tensor<8x128x32xbf16>, %o: tensor<8xi32>) -> tensor<?x128xf32> {
  %0 = fusion.grouped_linear %x, %w offsets %o : (tensor<?x64xbf16>, tensor<8x128x32xbf16>, tensor<8xi32>) -> tensor<?x128xf32>
  func.return %0 : tensor<?x128xf32>
}
// CHECK: fusion.grouped_linear: operand 'w': K extent (axis 2): expected 64 (the last axis of 'x'), found 32

// -----

// A weight of rank 2 (a dense linear's).
func.func @w_rank(%x: tensor<?x64xbf16>, %w: tensor<128x64xbf16>, %o: tensor<8xi32>) -> tensor<?x128xf32> {
  %0 = fusion.grouped_linear %x, %w offsets %o : (tensor<?x64xbf16>, tensor<128x64xbf16>, tensor<8xi32>) -> tensor<?x128xf32>
  func.return %0 : tensor<?x128xf32>
}
// CHECK: fusion.grouped_linear: operand 'w': expected rank 3 ([G, N, K]), found rank 2 ([128, 64])

// -----

// Offsets of another length than G.
func.func @offsets_length(%x: tensor<?x64xbf16>, %w: tensor<8x128x64xbf16>, %o: tensor<4xi32>) -> tensor<?x128xf32> {
  %0 = fusion.grouped_linear %x, %w offsets %o : (tensor<?x64xbf16>, tensor<8x128x64xbf16>, tensor<4xi32>) -> tensor<?x128xf32>
  func.return %0 : tensor<?x128xf32>
}
// CHECK: fusion.grouped_linear: operand 'offsets': expected shape [8] (G, the first axis of 'w'), found [4]

// -----

// Offsets of a float type.
func.func @offsets_type(%x: tensor<?x64xbf16>, %w: tensor<8x128x64xbf16>, %o: tensor<8xf32>) -> tensor<?x128xf32> {
  %0 = fusion.grouped_linear %x, %w offsets %o : (tensor<?x64xbf16>, tensor<8x128x64xbf16>, tensor<8xf32>) -> tensor<?x128xf32>
  func.return %0 : tensor<?x128xf32>
}
// CHECK: fusion.grouped_linear: operand 'offsets': expected a tensor of i32 (the group sizes, read on the device), found tensor<8xf32>

// -----

// A bias per N only (a dense linear's), not per group.
func.func @bias_shape(%x: tensor<?x64xbf16>, %w: tensor<8x128x64xbf16>, %b: tensor<128xbf16>, %o: tensor<8xi32>) -> tensor<?x128xf32> {
  %0 = fusion.grouped_linear %x, %w, %b offsets %o : (tensor<?x64xbf16>, tensor<8x128x64xbf16>, tensor<128xbf16>, tensor<8xi32>) -> tensor<?x128xf32>
  func.return %0 : tensor<?x128xf32>
}
// CHECK: fusion.grouped_linear: operand 'bias': expected shape [8, 128] (G, N: the first two axes of 'w'), found [128]

// -----

// A masked x whose first axis is not G.
func.func @masked_groups(%x: tensor<4x16x64xbf16>, %w: tensor<8x128x64xbf16>, %c: tensor<8xi32>) -> tensor<4x16x128xf32> {
  %0 = fusion.grouped_linear %x, %w counts %c : (tensor<4x16x64xbf16>, tensor<8x128x64xbf16>, tensor<8xi32>) -> tensor<4x16x128xf32>
  func.return %0 : tensor<4x16x128xf32>
}
// CHECK: fusion.grouped_linear: operand 'x': G extent (axis 0): expected 8 (the first axis of 'w'), found 4

// -----

// A result of the wrong type.
func.func @result_type(%x: tensor<?x64xbf16>, %w: tensor<8x128x64xbf16>, %o: tensor<8xi32>) -> tensor<?x128xbf16> {
  %0 = fusion.grouped_linear %x, %w offsets %o : (tensor<?x64xbf16>, tensor<8x128x64xbf16>, tensor<8xi32>) -> tensor<?x128xbf16>
  func.return %0 : tensor<?x128xbf16>
}
// CHECK: fusion.grouped_linear: result: expected type tensor<?x128xf32>, found tensor<?x128xbf16>

// -----

// fp8 factors (grouped fp8 is not built).
func.func @fp8(%x: tensor<?x64xf8E4M3FN>, %w: tensor<8x128x64xf8E4M3FN>, %o: tensor<8xi32>) -> tensor<?x128xf32> {
  %0 = fusion.grouped_linear %x, %w offsets %o : (tensor<?x64xf8E4M3FN>, tensor<8x128x64xf8E4M3FN>, tensor<8xi32>) -> tensor<?x128xf32>
  func.return %0 : tensor<?x128xf32>
}
// CHECK: fusion.grouped_linear: operand 'x': fp8 grouped contractions (and their scales) are not built; expected bf16, f16 or f32, found f8E4M3FN
