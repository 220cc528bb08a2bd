// RUN: mmcomp-opt %s -p propagate-axis-mapping --split-input-file --verify-diagnostics | filecheck %s

// Block-wise scales are promoted in the mainloop, which is not built: refused with the
// way out (the reference evaluates them; the other modes compile).
// CHECK: fusion.linear: block-wise scales (operands 'scale_a', 'scale_b') are not lowered yet
func.func @block_wise(%a: tensor<64x256xf8E4M3FN>, %w: tensor<96x256xf8E4M3FN>, %sa: tensor<64x2xf32>, %sb: tensor<1x2xf32>) -> tensor<64x96xf32> {
  %y = fusion.linear %a, %w scales %sa, %sb : (tensor<64x256xf8E4M3FN>, tensor<96x256xf8E4M3FN>, tensor<64x2xf32>, tensor<1x2xf32>) -> tensor<64x96xf32>
  func.return %y : tensor<64x96xf32>
}
