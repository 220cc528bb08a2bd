// RUN: mmcomp-opt %s --split-input-file --verify-diagnostics -p compile-to-ptx | filecheck %s
// RUN: not mmcomp-opt %s --split-input-file -t ptx 2>&1 | filecheck %s --check-prefix=EMIT

// compile-to-ptx builds the kernel of one fusion function: an empty fusion, a module with
// none and a module with two are refused, saying what was expected and what was found.

// Tensor arguments, nothing computed, nothing returned: an empty fusion.
// CHECK: compile-to-ptx-invalid.mlir:[[# @LINE + 2]]:1: error: func.func @empty: expected at least one output (a func.return operand; Fusion.output in Python), found none
// EMIT: ptx emission: expected exactly one ptx.module, found 0: the ptx target prints one kernel (one fusion func.func lowered by compile-to-ptx)
func.func @empty(%a: tensor<4x8xbf16>) {
  func.return
}

// -----

// An empty module.
// CHECK: compile-to-ptx: expected one fusion func.func (fusion ops on tensors), found none (the module holds nothing)
builtin.module {
}

// -----

// Only a function without fusion ops.
// CHECK: compile-to-ptx: expected one fusion func.func (fusion ops on tensors), found none (the module holds only functions without fusion ops: @plain)
func.func @plain(%x: tensor<4xf32>) -> tensor<4xf32> {
  func.return %x : tensor<4xf32>
}

// -----

// Two fusions: refused before either is compiled.
// CHECK: compile-to-ptx: expected one fusion func.func, found 2 (@f, @g); compile each in a file of its own (or in a chunk of its own, with --split-input-file)
func.func @f(%a: tensor<64x32xbf16>, %w: tensor<48x32xbf16>) -> tensor<64x48xf32> {
  %0 = fusion.linear %a, %w : (tensor<64x32xbf16>, tensor<48x32xbf16>) -> tensor<64x48xf32>
  func.return %0 : tensor<64x48xf32>
}
func.func @g(%a: tensor<64x32xbf16>, %w: tensor<48x32xbf16>) -> tensor<64x48xf32> {
  %0 = fusion.linear %a, %w : (tensor<64x32xbf16>, tensor<48x32xbf16>) -> tensor<64x48xf32>
  func.return %0 : tensor<64x48xf32>
}
