// RUN: mmcomp-opt %s | filecheck %s
// RUN: mmcomp-opt %s | mmcomp-opt | filecheck %s
// RUN: mmcomp-opt %s --print-op-generic | mmcomp-opt | filecheck %s

// fp8 factors (e4m3 x e5m2 mix) and their scales, in each mode the shapes select:
// per-tensor (scalars), row-wise ([M], [N]) and block-wise ([M, ceil(K/128)],
// [ceil(N/128), ceil(K/128)]).

// CHECK-LABEL: func.func @scaled
func.func @scaled(%a: tensor<64x200xf8E4M3FN>, %w: tensor<32x200xf8E5M2>, %bias: tensor<32xbf16>,
                  %sa: tensor<f32>, %sb: tensor<f32>, %ra: tensor<64xf32>, %rb: tensor<32xf32>,
                  %ba: tensor<64x2xf32>, %bb: tensor<1x2xf32>, %b: tensor<200x32xf8E4M3FN>,
                  %mb: tensor<2x1xf32>)
    -> (tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>) {
  // CHECK-NEXT: %0 = fusion.linear %a, %w, %bias scales %sa, %sb : (tensor<64x200xf8E4M3FN>, tensor<32x200xf8E5M2>, tensor<32xbf16>, tensor<f32>, tensor<f32>) -> tensor<64x32xf32>
  %0 = fusion.linear %a, %w, %bias scales %sa, %sb : (tensor<64x200xf8E4M3FN>, tensor<32x200xf8E5M2>, tensor<32xbf16>, tensor<f32>, tensor<f32>) -> tensor<64x32xf32>
  // CHECK-NEXT: %1 = fusion.linear %a, %w scales %ra, %rb : (tensor<64x200xf8E4M3FN>, tensor<32x200xf8E5M2>, tensor<64xf32>, tensor<32xf32>) -> tensor<64x32xf32>
  %1 = fusion.linear %a, %w scales %ra, %rb : (tensor<64x200xf8E4M3FN>, tensor<32x200xf8E5M2>, tensor<64xf32>, tensor<32xf32>) -> tensor<64x32xf32>
  // CHECK-NEXT: %2 = fusion.linear %a, %w scales %ba, %bb : (tensor<64x200xf8E4M3FN>, tensor<32x200xf8E5M2>, tensor<64x2xf32>, tensor<1x2xf32>) -> tensor<64x32xf32>
  %2 = fusion.linear %a, %w scales %ba, %bb : (tensor<64x200xf8E4M3FN>, tensor<32x200xf8E5M2>, tensor<64x2xf32>, tensor<1x2xf32>) -> tensor<64x32xf32>
  // CHECK-NEXT: %3 = fusion.matmul %a, %b scales %ba, %mb : (tensor<64x200xf8E4M3FN>, tensor<200x32xf8E4M3FN>, tensor<64x2xf32>, tensor<2x1xf32>) -> tensor<64x32xf32>
  %3 = fusion.matmul %a, %b scales %ba, %mb : (tensor<64x200xf8E4M3FN>, tensor<200x32xf8E4M3FN>, tensor<64x2xf32>, tensor<2x1xf32>) -> tensor<64x32xf32>
  // CHECK-NEXT: %4 = fusion.mma %a [m, k], %w [n, k] -> [m, n] scales %ra, %rb : (tensor<64x200xf8E4M3FN>, tensor<32x200xf8E5M2>, tensor<64xf32>, tensor<32xf32>) -> tensor<64x32xf32>
  %4 = fusion.mma %a [m, k], %w [n, k] -> [m, n] scales %ra, %rb : (tensor<64x200xf8E4M3FN>, tensor<32x200xf8E5M2>, tensor<64xf32>, tensor<32xf32>) -> tensor<64x32xf32>
  // CHECK-NEXT: %5 = fusion.linear %a, %w : (tensor<64x200xf8E4M3FN>, tensor<32x200xf8E5M2>) -> tensor<64x32xf32>
  %5 = fusion.linear %a, %w : (tensor<64x200xf8E4M3FN>, tensor<32x200xf8E5M2>) -> tensor<64x32xf32>
  func.return %0, %1, %2, %3, %4, %5 : tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>
}
