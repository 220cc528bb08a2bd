// RUN: mmcomp-opt %s --split-input-file --verify-diagnostics 2>&1 | filecheck %s

// CHECK: fusion.linear: operand 'scale_b': expected shape [] (per-tensor), [32] (row-wise) or [1, 2] (block-wise) for 'w' of shape [32, 200], found [3]
func.func @wrong_shape(%a: tensor<64x200xf8E4M3FN>, %w: tensor<32x200xf8E4M3FN>, %sa: tensor<f32>, %sb: tensor<3xf32>) -> tensor<64x32xf32> {
  %0 = fusion.linear %a, %w scales %sa, %sb : (tensor<64x200xf8E4M3FN>, tensor<32x200xf8E4M3FN>, tensor<f32>, tensor<3xf32>) -> tensor<64x32xf32>
  func.return %0 : tensor<64x32xf32>
}

// -----

// CHECK: fusion.linear: operand 'scale_b': expected shape [32] (row-wise, as 'scale_a'), found the per-tensor []; both scales have one mode
func.func @mixed_modes(%a: tensor<64x200xf8E4M3FN>, %w: tensor<32x200xf8E4M3FN>, %sa: tensor<64xf32>, %sb: tensor<f32>) -> tensor<64x32xf32> {
  %0 = fusion.linear %a, %w scales %sa, %sb : (tensor<64x200xf8E4M3FN>, tensor<32x200xf8E4M3FN>, tensor<64xf32>, tensor<f32>) -> tensor<64x32xf32>
  func.return %0 : tensor<64x32xf32>
}

// -----

// CHECK: fusion.linear: operand 'a': scales dequantize fp8 factors (f8E4M3FN, f8E5M2), found bf16; a bf16 contraction takes no scales
func.func @bf16_scaled(%a: tensor<64x200xbf16>, %w: tensor<32x200xbf16>, %sa: tensor<f32>, %sb: tensor<f32>) -> tensor<64x32xf32> {
  %0 = fusion.linear %a, %w scales %sa, %sb : (tensor<64x200xbf16>, tensor<32x200xbf16>, tensor<f32>, tensor<f32>) -> tensor<64x32xf32>
  func.return %0 : tensor<64x32xf32>
}

// -----

// CHECK: fusion.linear: operand 'scale_a': expected element type f32, found bf16
func.func @bf16_scale(%a: tensor<64x200xf8E4M3FN>, %w: tensor<32x200xf8E4M3FN>, %sa: tensor<bf16>, %sb: tensor<f32>) -> tensor<64x32xf32> {
  %0 = fusion.linear %a, %w scales %sa, %sb : (tensor<64x200xf8E4M3FN>, tensor<32x200xf8E4M3FN>, tensor<bf16>, tensor<f32>) -> tensor<64x32xf32>
  func.return %0 : tensor<64x32xf32>
}

// -----

// CHECK: fusion.linear: operand 'w': expected element type f8E4M3FN (that of 'a'), found bf16
func.func @fp8_with_bf16(%a: tensor<64x200xf8E4M3FN>, %w: tensor<32x200xbf16>) -> tensor<64x32xf32> {
  %0 = fusion.linear %a, %w : (tensor<64x200xf8E4M3FN>, tensor<32x200xbf16>) -> tensor<64x32xf32>
  func.return %0 : tensor<64x32xf32>
}

// -----

// CHECK: fusion.fused_multiply_sum: operand 'scale_a': expected shape [] (per-tensor) or [64, 1] (row-wise) for 'a' of shape [64, 1, 200], found [64, 1, 2]
func.func @fms_block(%a: tensor<64x1x200xf8E4M3FN>, %b: tensor<1x32x200xf8E4M3FN>, %sa: tensor<64x1x2xf32>, %sb: tensor<1x1x2xf32>) -> tensor<64x32xf32> {
  %0 = fusion.fused_multiply_sum %a, %b axes [2] scales %sa, %sb : (tensor<64x1x200xf8E4M3FN>, tensor<1x32x200xf8E4M3FN>, tensor<64x1x2xf32>, tensor<1x1x2xf32>) -> tensor<64x32xf32>
  func.return %0 : tensor<64x32xf32>
}
