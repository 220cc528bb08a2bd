// RUN: mmcomp-opt %s --parsing-diagnostics --split-input-file | filecheck %s
// RUN: mmcomp-opt %s --parsing-diagnostics --split-input-file | not grep "Could not parse entire input"

// An input whose braces do not balance, or that holds no operation, is refused with what
// was expected and where, not xDSL's bare "Could not parse entire input!".

// A region never closed: the error points at the '{' left open.
// CHECK: structure-errors.mlir:[[# @LINE + 2]]:57
// CHECK: this '{' is never closed: the input ends where its '}' was expected (1 region still open)
func.func @open(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = fusion.relu %a : tensor<4x8xf32>
  func.return %0 : tensor<4x8xf32>

// -----

// One '}' too many.
// CHECK: structure-errors.mlir:[[# @LINE + 5]]:1
// CHECK: unmatched '}': no region is open here (a '{' is missing before it, or this '}' is one too many)
func.func @closed_twice(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  func.return %a : tensor<4x8xf32>
}
}

// -----

// Only comments: nothing to parse.
// CHECK: the input holds no operation: expected a func.func (or a builtin.module holding one)

