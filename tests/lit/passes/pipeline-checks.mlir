// RUN: mmcomp-opt %s --split-input-file --verify-diagnostics -p compile-to-ptx | filecheck %s
// RUN: mmcomp-opt %s --split-input-file --verify-diagnostics -p 'propagate-axis-mapping,choose-schedule{backend=interp}' | filecheck %s --check-prefix=INTERP
// What mmcomp.compile refuses, the pipeline refuses, with the same message.

// f32 contraction operands: the cuda back end's wgmma takes bf16 or f16. Scheduled for the
// CPU executor they are taken (tf32's k of 32 per 128-byte row).
// CHECK: pipeline-checks.mlir:10:8: error: fusion.mma operand 'a' (%a: tensor<64x64xf32>): the cuda back end's wgmma takes bf16, f16, f8e4m3 or f8e5m2 (tf32 is not built), found f32; cast it, or schedule for the CPU executor (backend='interp'; mmcomp-opt: choose-schedule{backend=interp})
// INTERP: sched.params = #sched.params<tile = 128x128x32, warpgroup = 64x128, instr = m64n128k8
func.func @f32_operands(%a: tensor<64x64xf32>, %w: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %0 = fusion.linear %a, %w : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  func.return %0 : tensor<64x64xf32>
}

// -----

// A misspelt attribute in mmcomp's namespaces is an error, not silently ignored.
// CHECK: pipeline-checks.mlir:19:1: error: propagate-axis-mapping: func.func @misspelt: attribute 'sched.param' is read by no mmcomp pass; did you mean 'sched.params'?
// INTERP: attribute 'sched.param' is read by no mmcomp pass
func.func @misspelt(%a: tensor<64x64xbf16>, %w: tensor<64x64xbf16>) -> tensor<64x64xf32> attributes {sched.param = #sched.params<tile = 128x64x64>} {
  %0 = fusion.linear %a, %w : (tensor<64x64xbf16>, tensor<64x64xbf16>) -> tensor<64x64xf32>
  func.return %0 : tensor<64x64xf32>
}

// -----

// On an argument too.
// CHECK: error: propagate-axis-mapping: func.func @on_argument: argument #0: attribute 'fusion.role' is read by no mmcomp pass; did you mean 'fusion.roles'?
func.func @on_argument(%a: tensor<64x64xbf16> {fusion.role = #fusion.roles<[m, k]>}, %w: tensor<64x64xbf16>) -> tensor<64x64xf32> {
  %0 = fusion.linear %a, %w : (tensor<64x64xbf16>, tensor<64x64xbf16>) -> tensor<64x64xf32>
  func.return %0 : tensor<64x64xf32>
}

// -----

// A fusion without outputs computes nothing.
// CHECK: error: func.func @no_outputs: expected at least one output (a func.return operand; Fusion.output in Python), found none
// INTERP: func.func @no_outputs: expected at least one output
func.func @no_outputs(%a: tensor<64x64xbf16>, %w: tensor<64x64xbf16>) {
  %0 = fusion.linear %a, %w : (tensor<64x64xbf16>, tensor<64x64xbf16>) -> tensor<64x64xf32>
  func.return
}

// -----

// An argument mmcomp cannot take (an i32 that is no group sizes), even unused: compile refuses it when it parses the
// fusion, the pipeline in its first pass.
// CHECK: error: @integer_argument: argument 2 (tensor<4xi32>): an i32 input is the group sizes of a fusion.grouped_linear (its offsets or counts), found one no op uses
func.func @integer_argument(%a: tensor<64x64xbf16>, %w: tensor<64x64xbf16>, %s: tensor<4xi32>) -> tensor<64x64xf32> {
  %0 = fusion.linear %a, %w : (tensor<64x64xbf16>, tensor<64x64xbf16>) -> tensor<64x64xf32>
  func.return %0 : tensor<64x64xf32>
}

// -----

// CHECK: error: @returns_input: output 1: expected a value computed in the body, found argument 'a' returned directly
func.func @returns_input(%a: tensor<64x64xbf16>, %w: tensor<64x64xbf16>) -> (tensor<64x64xf32>, tensor<64x64xbf16>) {
  %0 = fusion.linear %a, %w : (tensor<64x64xbf16>, tensor<64x64xbf16>) -> tensor<64x64xf32>
  func.return %0, %a : tensor<64x64xf32>, tensor<64x64xbf16>
}

// -----

// CHECK: pipeline-checks.mlir:65:8: error: @foreign: expected only fusion ops and func.return, found arith.constant
func.func @foreign(%a: tensor<64x64xbf16>, %w: tensor<64x64xbf16>) -> tensor<64x64xf32> {
  %c = arith.constant 1 : i32
  %0 = fusion.linear %a, %w : (tensor<64x64xbf16>, tensor<64x64xbf16>) -> tensor<64x64xf32>
  func.return %0 : tensor<64x64xf32>
}
