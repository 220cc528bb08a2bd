// RUN: mmcomp-opt %s -p propagate-axis-mapping --split-input-file | filecheck %s
// RUN: mmcomp-opt %s -p propagate-axis-mapping --split-input-file | mmcomp-opt --split-input-file -p propagate-axis-mapping | filecheck %s

// Per-tensor scales: the mma of the fp8 factors, then the accumulator times each scalar
// scale (rank 0, no roles), then the bias: the epilogue a kernel runs on its accumulator.
// CHECK-LABEL: func.func @per_tensor
// CHECK-SAME: %sa: tensor<f32> {fusion.roles = #fusion.roles<[]>}
// CHECK: %y_acc = fusion.mma %a [m, k], %w [n, k] -> [m, n] {fusion.roles = #fusion.roles<[m, n]>} : (tensor<64x256xf8E4M3FN>, tensor<96x256xf8E5M2>) -> tensor<64x96xf32>
// CHECK-NEXT: %sa_bcast = fusion.broadcast %sa new_dims [true, true]
// CHECK-NEXT: %y_scale_a = fusion.mul %y_acc, %sa_bcast
// CHECK-NEXT: %sb_bcast = fusion.broadcast %sb new_dims [true, true]
// CHECK-NEXT: %y_scale_b = fusion.mul %y_scale_a, %sb_bcast
// CHECK: %y = fusion.add %y_scale_b, %bias_row
func.func @per_tensor(%a: tensor<64x256xf8E4M3FN>, %w: tensor<96x256xf8E5M2>, %bias: tensor<96xbf16>, %sa: tensor<f32>, %sb: tensor<f32>) -> tensor<64x96xf32> {
  %y = fusion.linear %a, %w, %bias scales %sa, %sb : (tensor<64x256xf8E4M3FN>, tensor<96x256xf8E5M2>, tensor<96xbf16>, tensor<f32>, tensor<f32>) -> tensor<64x96xf32>
  func.return %y : tensor<64x96xf32>
}

// -----

// Row-wise scales: a's [M] scale is a column (roles [m]), w's [N] scale a row (roles [n]).
// CHECK-LABEL: func.func @row_wise
// CHECK-SAME: %sa: tensor<64xf32> {fusion.roles = #fusion.roles<[m]>}, %sb: tensor<96xf32> {fusion.roles = #fusion.roles<[n]>}
// CHECK: %y_acc = fusion.mma %a [m, k], %w [n, k] -> [m, n]
// CHECK-NEXT: %sa_bcast = fusion.broadcast %sa new_dims [false, true] {fusion.roles = #fusion.roles<[m, n]>} : tensor<64xf32> to tensor<64x96xf32>
// CHECK-NEXT: %y_scale_a = fusion.mul %y_acc, %sa_bcast
// CHECK-NEXT: %sb_bcast = fusion.broadcast %sb new_dims [true, false] {fusion.roles = #fusion.roles<[m, n]>} : tensor<96xf32> to tensor<64x96xf32>
// CHECK-NEXT: %y = fusion.mul %y_scale_a, %sb_bcast
func.func @row_wise(%a: tensor<64x256xf8E4M3FN>, %w: tensor<96x256xf8E4M3FN>, %sa: tensor<64xf32>, %sb: tensor<96xf32>) -> tensor<64x96xf32> {
  %y = fusion.linear %a, %w scales %sa, %sb : (tensor<64x256xf8E4M3FN>, tensor<96x256xf8E4M3FN>, tensor<64xf32>, tensor<96xf32>) -> tensor<64x96xf32>
  func.return %y : tensor<64x96xf32>
}

// -----

// A batched matmul's row-wise scales: a's [B, M] and b's [N] (b has no batch axes).
// CHECK-LABEL: func.func @batched
// CHECK: %sa_bcast = fusion.broadcast %sa new_dims [false, false, true] {fusion.roles = #fusion.roles<[b0, m, n]>} : tensor<2x64xf32> to tensor<2x64x32xf32>
// CHECK: %sb_bcast = fusion.broadcast %sb new_dims [true, true, false] {fusion.roles = #fusion.roles<[b0, m, n]>} : tensor<32xf32> to tensor<2x64x32xf32>
func.func @batched(%a: tensor<2x64x256xf8E4M3FN>, %b: tensor<256x32xf8E4M3FN>, %sa: tensor<2x64xf32>, %sb: tensor<32xf32>) -> tensor<2x64x32xf32> {
  %y = fusion.matmul %a, %b scales %sa, %sb : (tensor<2x64x256xf8E4M3FN>, tensor<256x32xf8E4M3FN>, tensor<2x64xf32>, tensor<32xf32>) -> tensor<2x64x32xf32>
  func.return %y : tensor<2x64x32xf32>
}

// -----

// Block-wise scales stay on the mma (each K block's product takes its own scales: they
// do not factor out of the sum); their axes take the block roles, k128 for the K blocks of
// 128 and n128 for the N blocks; the bias follows the mma.
// CHECK-LABEL: func.func @block_wise
// CHECK-SAME: %sa: tensor<64x2xf32> {fusion.roles = #fusion.roles<[m, k128]>}, %sb: tensor<1x2xf32> {fusion.roles = #fusion.roles<[n128, k128]>}
// CHECK: %y_acc = fusion.mma %a [m, k], %w [n, k] -> [m, n] scales %sa, %sb {fusion.roles = #fusion.roles<[m, n]>} : (tensor<64x256xf8E4M3FN>, tensor<96x256xf8E4M3FN>, tensor<64x2xf32>, tensor<1x2xf32>) -> tensor<64x96xf32>
// CHECK-NOT: fusion.mul
// CHECK: %y = fusion.add %y_acc, %bias_row
func.func @block_wise(%a: tensor<64x256xf8E4M3FN>, %w: tensor<96x256xf8E4M3FN>, %bias: tensor<96xbf16>, %sa: tensor<64x2xf32>, %sb: tensor<1x2xf32>) -> tensor<64x96xf32> {
  %y = fusion.linear %a, %w, %bias scales %sa, %sb : (tensor<64x256xf8E4M3FN>, tensor<96x256xf8E4M3FN>, tensor<96xbf16>, tensor<64x2xf32>, tensor<1x2xf32>) -> tensor<64x96xf32>
  func.return %y : tensor<64x96xf32>
}

// -----

// A matmul's b [K, N] is blocked along both: its scale [ceil(K/128), ceil(N/128)] has
// roles [k128, n128].
// CHECK-LABEL: func.func @block_wise_matmul
// CHECK-SAME: %sb: tensor<3x2xf32> {fusion.roles = #fusion.roles<[k128, n128]>}
// CHECK: %c = fusion.mma %a [m, k], %b [k, n] -> [m, n] scales %sa, %sb
func.func @block_wise_matmul(%a: tensor<8x300xf8E4M3FN>, %b: tensor<300x200xf8E5M2>, %sa: tensor<8x3xf32>, %sb: tensor<3x2xf32>) -> tensor<8x200xf32> {
  %c = fusion.matmul %a, %b scales %sa, %sb : (tensor<8x300xf8E4M3FN>, tensor<300x200xf8E5M2>, tensor<8x3xf32>, tensor<3x2xf32>) -> tensor<8x200xf32>
  func.return %c : tensor<8x200xf32>
}
