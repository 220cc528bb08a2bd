// RUN: mmcomp-opt %s --parsing-diagnostics --split-input-file | filecheck %s

// A missing type separator.
func.func @missing_colon(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
// CHECK: parse-errors.mlir:[[# @LINE + 2]]:23
// CHECK: Expected ':'
  %0 = fusion.relu %a tensor<4x8xf32>
  func.return %0 : tensor<4x8xf32>
}

// -----

// An unknown gelu approximation.
func.func @gelu(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
// CHECK: parse-errors.mlir:[[# @LINE + 2]]:35
// CHECK: Expected one of 'none', 'tanh' as gelu's approximation
  %0 = fusion.gelu %a approximate erf : tensor<4x8xf32>
  func.return %0 : tensor<4x8xf32>
}

// -----

// new_dims that are not booleans.
func.func @new_dims(%a: tensor<8xf32>) -> tensor<4x8xf32> {
// CHECK: parse-errors.mlir:[[# @LINE + 2]]:38
// CHECK: Expected boolean literal in new_dims
  %0 = fusion.broadcast %a new_dims [1, 0] : tensor<8xf32> to tensor<4x8xf32>
  func.return %0 : tensor<4x8xf32>
}

// -----

// A linear with four operands.
func.func @linear_arity(%a: tensor<16x32xbf16>, %w: tensor<8x32xbf16>, %b: tensor<8xbf16>) -> tensor<16x8xf32> {
// CHECK: parse-errors.mlir:[[# @LINE + 2]]:22
// CHECK: fusion.linear: expected 2 or 3 operands (a, w, optional bias), found 4 operands
  %0 = fusion.linear %a, %w, %b, %b : (tensor<16x32xbf16>, tensor<8x32xbf16>, tensor<8xbf16>, tensor<8xbf16>) -> tensor<16x8xf32>
  func.return %0 : tensor<16x8xf32>
}

// -----

// Fewer operand types than operands.
func.func @type_count(%a: tensor<16x32xbf16>, %b: tensor<32x8xbf16>) -> tensor<16x8xf32> {
// CHECK: parse-errors.mlir:[[# @LINE + 2]]:31
// CHECK: fusion.matmul: expected 2 operand types, found 1
  %0 = fusion.matmul %a, %b : (tensor<16x32xbf16>) -> tensor<16x8xf32>
  func.return %0 : tensor<16x8xf32>
}

// -----

// An operand whose written type differs from its definition's.
func.func @operand_type(%a: tensor<16x32xbf16>, %b: tensor<32x8xbf16>) -> tensor<16x8xf32> {
// CHECK: parse-errors.mlir:[[# @LINE + 2]]:22
// CHECK: operand is used with type tensor<16x32xf16>, but has been previously used or defined with type tensor<16x32xbf16>
  %0 = fusion.matmul %a, %b : (tensor<16x32xf16>, tensor<32x8xbf16>) -> tensor<16x8xf32>
  func.return %0 : tensor<16x8xf32>
}

// -----

// An unknown axis role.
// CHECK: parse-errors.mlir:[[# @LINE + 2]]:70
// CHECK: expected b<i>, g, m, n, n128, k, k128 or _ as an axis role, found 'x'
func.func @role(%a: tensor<16x32xbf16> {fusion.roles = #fusion.roles<[m, x]>}) {
  func.return
}

// -----

// An iteration space out of order.
// CHECK: parse-errors.mlir:[[# @LINE + 2]]:60
// CHECK: expected axes in the order ['m', 'k'], found ['k', 'm']
func.func @space() attributes {fusion.space = #fusion.space<k = 4, m = 16>} {
  func.return
}

// -----

// An unknown op.
func.func @unknown(%a: tensor<4xf32>) -> tensor<4xf32> {
// CHECK: parse-errors.mlir:[[# @LINE + 2]]:23
// CHECK: Operation fusion.softmax is not registered
  %0 = fusion.softmax %a : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

// A hexadecimal splat value (MLIR would read it as a bit pattern).
func.func @splat_hex() -> tensor<4xf32> {
// CHECK: parse-errors.mlir:[[# @LINE + 2]]:21
// CHECK: fusion.splat: expected a decimal literal as the splat value, found the hexadecimal 0x7FC00000 (MLIR reads hexadecimal float literals as bit patterns; write the value in decimal)
  %0 = fusion.splat 0x7FC00000 : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

// An exponent without a '.' before it.
func.func @splat_exponent() -> tensor<4xf32> {
// CHECK: parse-errors.mlir:[[# @LINE + 2]]:21
// CHECK: fusion.splat: a float literal with an exponent needs a '.' before it: write 1.0e-50, not 1e-50
  %0 = fusion.splat 1e-50 : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
