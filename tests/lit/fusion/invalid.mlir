// RUN: mmcomp-opt %s --verify-diagnostics --split-input-file | filecheck %s

// K extents differ.
func.func @k_mismatch(%a: tensor<16x32xbf16>, %b: tensor<64x8xbf16>) -> tensor<16x8xf32> {
  %0 = fusion.matmul %a, %b : (tensor<16x32xbf16>, tensor<64x8xbf16>) -> tensor<16x8xf32>
  func.return %0 : tensor<16x8xf32>
}
// CHECK: fusion.matmul: operand 'b': K extent (axis 0): expected 32 (the last axis of 'a'), found 64

// -----

// K extents differ (linear).
func.func @linear_k_mismatch(%a: tensor<16x32xbf16>, %w: tensor<8x16xbf16>) -> tensor<16x8xf32> {
  %0 = fusion.linear %a, %w : (tensor<16x32xbf16>, tensor<8x16xbf16>) -> tensor<16x8xf32>
  func.return %0 : tensor<16x8xf32>
}
// CHECK: fusion.linear: operand 'w': K extent (axis 1): expected 32 (the last axis of 'a'), found 16

// -----

// A bias whose length is not N.
func.func @bias_length(%a: tensor<16x32xbf16>, %w: tensor<8x32xbf16>, %bias: tensor<16xbf16>) -> tensor<16x8xf32> {
  %0 = fusion.linear %a, %w, %bias : (tensor<16x32xbf16>, tensor<8x32xbf16>, tensor<16xbf16>) -> tensor<16x8xf32>
  func.return %0 : tensor<16x8xf32>
}
// CHECK: fusion.linear: operand 'bias': expected shape [8] (N, the first axis of 'w'), found [16]

// -----

// Ranks that do not fit: a weight of rank 3.
func.func @weight_rank(%a: tensor<16x32xbf16>, %w: tensor<2x8x32xbf16>) -> tensor<16x8xf32> {
  %0 = fusion.linear %a, %w : (tensor<16x32xbf16>, tensor<2x8x32xbf16>) -> tensor<16x8xf32>
  func.return %0 : tensor<16x8xf32>
}
// CHECK: fusion.linear: operand 'w': expected rank 2 ([N, K]), found rank 3 ([2, 8, 32])

// -----

// Ranks that do not fit: a matmul operand of rank 1.
func.func @matmul_rank(%a: tensor<32xbf16>, %b: tensor<32x8xbf16>) -> tensor<8xf32> {
  %0 = fusion.matmul %a, %b : (tensor<32xbf16>, tensor<32x8xbf16>) -> tensor<8xf32>
  func.return %0 : tensor<8xf32>
}
// CHECK: fusion.matmul: operand 'a': expected rank >= 2, found rank 1 ([32])

// -----

// Batch dims that do not broadcast.
func.func @batch(%a: tensor<3x16x32xf16>, %b: tensor<4x32x8xf16>) -> tensor<4x16x8xf32> {
  %0 = fusion.matmul %a, %b : (tensor<3x16x32xf16>, tensor<4x32x8xf16>) -> tensor<4x16x8xf32>
  func.return %0 : tensor<4x16x8xf32>
}
// CHECK: fusion.matmul: operand 'b': batch dims [4] do not broadcast with those of 'a', [3]

// -----

// A contraction that does not produce f32.
func.func @result_type(%a: tensor<16x32xbf16>, %b: tensor<32x8xbf16>) -> tensor<16x8xbf16> {
  %0 = fusion.matmul %a, %b : (tensor<16x32xbf16>, tensor<32x8xbf16>) -> tensor<16x8xbf16>
  func.return %0 : tensor<16x8xbf16>
}
// CHECK: fusion.matmul: result: expected type tensor<16x8xf32>, found tensor<16x8xbf16>

// -----

// Operands of different element types.
func.func @mixed(%a: tensor<16x32xbf16>, %w: tensor<8x32xf16>) -> tensor<16x8xf32> {
  %0 = fusion.linear %a, %w : (tensor<16x32xbf16>, tensor<8x32xf16>) -> tensor<16x8xf32>
  func.return %0 : tensor<16x8xf32>
}
// CHECK: fusion.linear: operand 'w': expected element type bf16 (that of 'a'), found f16

// -----

// An unsupported element type.
func.func @f64(%a: tensor<4x8xf64>) -> tensor<4x8xf64> {
  %0 = fusion.relu %a : tensor<4x8xf64>
  func.return %0 : tensor<4x8xf64>
}
// CHECK: fusion.relu: operand 'input': unsupported element type: expected bf16, f16, f32, f8e4m3 or f8e5m2, found f64

// -----

// Not a tensor.
func.func @memref(%a: memref<4x8xf32>) -> memref<4x8xf32> {
  %0 = fusion.exp %a : memref<4x8xf32>
  func.return %0 : memref<4x8xf32>
}
// CHECK: fusion.exp: operand 'input': expected a ranked tensor of bf16, f16, f32, f8e4m3 or f8e5m2, found memref<4x8xf32>

// -----

// Pointwise operands whose shapes differ: broadcasting is explicit in IR.
func.func @pointwise_shapes(%a: tensor<4x8xf32>, %b: tensor<1x8xf32>) -> tensor<4x8xf32> {
  %0 = "fusion.add"(%a, %b) : (tensor<4x8xf32>, tensor<1x8xf32>) -> tensor<4x8xf32>
  func.return %0 : tensor<4x8xf32>
}
// CHECK: fusion.add: operand 'rhs': expected shape [4, 8] (that of 'lhs'; broadcasts are explicit in IR), found [1, 8]

// -----

// Pointwise operands whose element types differ: casts are explicit in IR.
func.func @pointwise_types(%a: tensor<4x8xf32>, %b: tensor<4x8xbf16>) -> tensor<4x8xf32> {
  %0 = "fusion.mul"(%a, %b) : (tensor<4x8xf32>, tensor<4x8xbf16>) -> tensor<4x8xf32>
  func.return %0 : tensor<4x8xf32>
}
// CHECK: fusion.mul: operand 'rhs': expected element type f32 (that of 'lhs'; casts are explicit in IR), found bf16

// -----

// A unary op whose result type differs from its operand's.
func.func @unary_result(%a: tensor<4x8xf32>) -> tensor<8x4xf32> {
  %0 = "fusion.silu"(%a) : (tensor<4x8xf32>) -> tensor<8x4xf32>
  func.return %0 : tensor<8x4xf32>
}
// CHECK: fusion.silu: result: expected type tensor<4x8xf32> (that of 'input'), found tensor<8x4xf32>

// -----

// An unknown gelu approximation (generic syntax; the custom syntax rejects it at parse time).
func.func @gelu(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = "fusion.gelu"(%a) <{approximate = "erf"}> : (tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %0 : tensor<4x8xf32>
}
// CHECK: fusion.gelu: property 'approximate': expected "tanh" or "none", found 'erf'

// -----

// A cast that changes the shape.
func.func @cast_shape(%a: tensor<4x8xf32>) -> tensor<4x4xbf16> {
  %0 = fusion.cast %a : tensor<4x8xf32> to tensor<4x4xbf16>
  func.return %0 : tensor<4x4xbf16>
}
// CHECK: fusion.cast: result: expected shape [4, 8] (that of 'input'), found [4, 4]

// -----

// A broadcast that expands an axis of extent other than 1.
func.func @broadcast_expand(%a: tensor<2x8xf32>) -> tensor<4x8xf32> {
  %0 = fusion.broadcast %a new_dims [false, false] : tensor<2x8xf32> to tensor<4x8xf32>
  func.return %0 : tensor<4x8xf32>
}
// CHECK: fusion.broadcast: result: axis 0: expected extent 2 (axis 0 of 'input'; only size-1 axes expand), found 4

// -----

// A broadcast whose new_dims do not fit the input rank.
func.func @broadcast_dims(%a: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = fusion.broadcast %a new_dims [false, false] : tensor<8xf32> to tensor<4x8xf32>
  func.return %0 : tensor<4x8xf32>
}
// CHECK: fusion.broadcast: property 'new_dims': expected 1 false entries (the rank of 'input'), found 2

// -----

// A broadcast whose new_dims do not fit the result rank.
func.func @broadcast_result_rank(%a: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = fusion.broadcast %a new_dims [true, true, false] : tensor<8xf32> to tensor<4x8xf32>
  func.return %0 : tensor<4x8xf32>
}
// CHECK: fusion.broadcast: property 'new_dims': expected 2 entries (the result rank), found 3

// -----

// fused_multiply_sum over an axis that does not exist.
func.func @fms_axis(%a: tensor<16x1x32xbf16>, %b: tensor<1x8x32xbf16>) -> tensor<16x8xf32> {
  %0 = fusion.fused_multiply_sum %a, %b axes [3] : (tensor<16x1x32xbf16>, tensor<1x8x32xbf16>) -> tensor<16x8xf32>
  func.return %0 : tensor<16x8xf32>
}
// CHECK: fusion.fused_multiply_sum: property 'axes': expected axes in [0, 3), found 3

// -----

// fused_multiply_sum of operands that do not broadcast.
func.func @fms_shapes(%a: tensor<16x2x32xbf16>, %b: tensor<1x8x32xbf16>) -> tensor<16x8xf32> {
  %0 = fusion.fused_multiply_sum %a, %b axes [2] : (tensor<16x2x32xbf16>, tensor<1x8x32xbf16>) -> tensor<16x8xf32>
  func.return %0 : tensor<16x8xf32>
}
// CHECK: fusion.fused_multiply_sum: operand 'b': shape [1, 8, 32] does not broadcast with that of 'a', [16, 2, 32] (extents must match or be 1)

// -----

// fused_multiply_sum of operands of different ranks.
func.func @fms_rank(%a: tensor<16x32xbf16>, %b: tensor<1x8x32xbf16>) -> tensor<16x8xf32> {
  %0 = fusion.fused_multiply_sum %a, %b axes [1] : (tensor<16x32xbf16>, tensor<1x8x32xbf16>) -> tensor<16x8xf32>
  func.return %0 : tensor<16x8xf32>
}
// CHECK: fusion.fused_multiply_sum: operand 'b': expected rank 2 (that of 'a'), found rank 3

// -----

// An mma whose roles give k two extents.
func.func @mma_extent(%a: tensor<16x32xbf16>, %b: tensor<8x64xbf16>) -> tensor<16x8xf32> {
  %0 = fusion.mma %a [m, k], %b [n, k] -> [m, n] : (tensor<16x32xbf16>, tensor<8x64xbf16>) -> tensor<16x8xf32>
  func.return %0 : tensor<16x8xf32>
}
// CHECK: fusion.mma: b_roles: axis 1 (role k): expected extent 32 (as in a_roles), found 64

// -----

// An mma whose output keeps k.
func.func @mma_k_out(%a: tensor<16x32xbf16>, %b: tensor<8x32xbf16>) -> tensor<16x32xf32> {
  %0 = fusion.mma %a [m, k], %b [n, k] -> [m, k] : (tensor<16x32xbf16>, tensor<8x32xbf16>) -> tensor<16x32xf32>
  func.return %0 : tensor<16x32xf32>
}
// CHECK: fusion.mma: out_roles: expected no k (it is summed), found ['m', 'k']

// -----

// An mma with one role too few.
func.func @mma_count(%a: tensor<16x32xbf16>, %b: tensor<8x32xbf16>) -> tensor<16x8xf32> {
  %0 = fusion.mma %a [m, k], %b [k] -> [m, n] : (tensor<16x32xbf16>, tensor<8x32xbf16>) -> tensor<16x8xf32>
  func.return %0 : tensor<16x8xf32>
}
// CHECK: fusion.mma: b_roles: expected 2 roles (the rank of [8, 32]), found 1 (['k'])

// -----

// An mma whose absent axis is not of extent 1.
func.func @mma_absent(%a: tensor<16x2x32xbf16>, %b: tensor<1x8x32xbf16>) -> tensor<16x8xf32> {
  %0 = fusion.mma %a [m, _, k], %b [_, n, k] -> [m, n] : (tensor<16x2x32xbf16>, tensor<1x8x32xbf16>) -> tensor<16x8xf32>
  func.return %0 : tensor<16x8xf32>
}
// CHECK: fusion.mma: a_roles: axis 1 has role _ (absent), so expected extent 1, found 2

// -----

// An mma that drops n from its output.
func.func @mma_drop(%a: tensor<16x32xbf16>, %b: tensor<8x32xbf16>) -> tensor<16xf32> {
  %0 = fusion.mma %a [m, k], %b [n, k] -> [m] : (tensor<16x32xbf16>, tensor<8x32xbf16>) -> tensor<16xf32>
  func.return %0 : tensor<16xf32>
}
// CHECK: fusion.mma: out_roles: expected role n (of a or b; only k is summed), found ['m']

// -----

// A splat of infinity (generic syntax).
func.func @splat_inf() -> tensor<4xf32> {
  %0 = "fusion.splat"() <{value = 0x7FF0000000000000 : f64}> : () -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
// CHECK: fusion.splat: property 'value': expected a finite number, found inf

// -----

// A splat whose value is not an f64 (generic syntax).
func.func @splat_f32() -> tensor<4xf32> {
  %0 = "fusion.splat"() <{value = 1.0 : f32}> : () -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
// CHECK: fusion.splat: property 'value': expected an f64 float, found 1.000000e+00 : f32

// -----

// A value used before the op that defines it (xDSL's parser resolves the forward reference).
func.func @use_before_def(%a: tensor<64x32xbf16>, %w: tensor<48x32xbf16>) -> tensor<64x48xbf16> {
  %1 = fusion.cast %0 : tensor<64x48xf32> to tensor<64x48xbf16>
  %0 = fusion.linear %a, %w : (tensor<64x32xbf16>, tensor<48x32xbf16>) -> tensor<64x48xf32>
  func.return %1 : tensor<64x48xbf16>
}
// CHECK: invalid.mlir:[[# @LINE - 4]]:8: error: fusion.cast: operand 0 is used before it is defined (by the fusion.linear at {{.*}}invalid.mlir:[[# @LINE - 3]]:8, later in the block)

// -----

// The same with a named value: the message gives its name.
func.func @named_use_before_def(%a: tensor<64x32xbf16>, %w: tensor<48x32xbf16>, %t: tensor<64x48xbf16>) -> tensor<64x48xf32> {
  %y = fusion.linear %a, %w : (tensor<64x32xbf16>, tensor<48x32xbf16>) -> tensor<64x48xf32>
  %p = fusion.mul %y, %tf : tensor<64x48xf32>
  %tf = fusion.cast %t : tensor<64x48xbf16> to tensor<64x48xf32>
  func.return %p : tensor<64x48xf32>
}
// CHECK: invalid.mlir:[[# @LINE - 4]]:8: error: fusion.mul: operand 1 (%tf) is used before it is defined (by the fusion.cast at {{.*}}invalid.mlir:[[# @LINE - 3]]:9, later in the block)

// -----

// An op that uses its own result.
func.func @self_use(%a: tensor<64x32xbf16>, %w: tensor<48x32xbf16>) -> tensor<64x48xf32> {
  %0 = fusion.linear %a, %w : (tensor<64x32xbf16>, tensor<48x32xbf16>) -> tensor<64x48xf32>
  %1 = fusion.add %0, %1 : tensor<64x48xf32>
  func.return %1 : tensor<64x48xf32>
}
// CHECK: invalid.mlir:[[# @LINE - 3]]:8: error: fusion.add: operand 1 is the op's own result

// -----

// A splat that overflows f32.
func.func @splat_f32_overflow() -> tensor<4xf32> {
  %0 = fusion.splat 1.0e+300 : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
// CHECK: fusion.splat: value 1e+300 is not finite in f32 (largest finite 3.4028235e+38)

// -----

// A splat that overflows f16 (65520 and above round to infinity).
func.func @splat_f16_overflow() -> tensor<4xf16> {
  %0 = fusion.splat 70000.0 : tensor<4xf16>
  func.return %0 : tensor<4xf16>
}
// CHECK: fusion.splat: value 70000.0 is not finite in f16 (largest finite 65504)

// -----

// A splat that is finite in f32 but overflows bf16.
func.func @splat_bf16_overflow() -> tensor<4xbf16> {
  %0 = fusion.splat 3.4e+38 : tensor<4xbf16>
  func.return %0 : tensor<4xbf16>
}
// CHECK: fusion.splat: value 3.4e+38 is not finite in bf16 (largest finite 3.3895314e+38)
