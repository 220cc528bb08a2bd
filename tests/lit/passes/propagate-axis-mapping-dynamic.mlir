// RUN: mmcomp-opt %s -p propagate-axis-mapping --split-input-file | filecheck %s

// A dynamic M: the iteration space has m = ?, and every axis of role m (A's rows, the
// [M, N] epilogue operand, the bias row broadcast along m, the output) is that one extent.
func.func @lin(%a: tensor<?x64xbf16>, %w: tensor<32x64xbf16>, %bias: tensor<32xbf16>,
               %t: tensor<?x32xf32>) -> tensor<?x32xf32> {
  %y = fusion.linear %a, %w, %bias : (tensor<?x64xbf16>, tensor<32x64xbf16>, tensor<32xbf16>) -> tensor<?x32xf32>
  %o = fusion.mul %y, %t : tensor<?x32xf32>
  func.return %o : tensor<?x32xf32>
}
// CHECK-LABEL: func.func @lin(
// CHECK-SAME:  %a: tensor<?x64xbf16> {fusion.roles = #fusion.roles<[m, k]>}
// CHECK-SAME:  %t: tensor<?x32xf32> {fusion.roles = #fusion.roles<[m, n]>}
// CHECK-SAME:  fusion.space = #fusion.space<m = ?, n = 32, k = 64>
// CHECK:       fusion.mma %a [m, k], %w [n, k] -> [m, n] {{.*}} : (tensor<?x64xbf16>, tensor<32x64xbf16>) -> tensor<?x32xf32>
// CHECK:       fusion.broadcast %bias_f32 new_dims [true, false] {fusion.roles = #fusion.roles<[m, n]>} : tensor<32xf32> to tensor<?x32xf32>
// CHECK:       fusion.mul {{.*}} {fusion.roles = #fusion.roles<[m, n]>} : tensor<?x32xf32>

// -----

// fused_multiply_sum of broadcast inputs [?, 1, K] x [1, N, K]: the dynamic axis is m.
func.func @fms(%a: tensor<?x1x64xbf16>, %b: tensor<1x32x64xbf16>) -> tensor<?x32xf32> {
  %y = fusion.fused_multiply_sum %a, %b axes [2] : (tensor<?x1x64xbf16>, tensor<1x32x64xbf16>) -> tensor<?x32xf32>
  func.return %y : tensor<?x32xf32>
}
// CHECK-LABEL: func.func @fms
// CHECK-SAME:  fusion.space = #fusion.space<m = ?, n = 32, k = 64>
// CHECK:       fusion.mma %a [m, _, k], %b [_, n, k] -> [m, n]

// -----

// A dynamic batch extent with a dynamic M: b0 = ?, m = ?.
func.func @bmm(%a: tensor<?x?x64xbf16>, %b: tensor<?x64x32xbf16>) -> tensor<?x?x32xf32> {
  %y = fusion.matmul %a, %b : (tensor<?x?x64xbf16>, tensor<?x64x32xbf16>) -> tensor<?x?x32xf32>
  func.return %y : tensor<?x?x32xf32>
}
// CHECK-LABEL: func.func @bmm
// CHECK-SAME:  %a: tensor<?x?x64xbf16> {fusion.roles = #fusion.roles<[b0, m, k]>}
// CHECK-SAME:  %b: tensor<?x64x32xbf16> {fusion.roles = #fusion.roles<[b0, k, n]>}
// CHECK-SAME:  fusion.space = #fusion.space<b0 = ?, m = ?, n = 32, k = 64>

// -----

// A horizontal fusion: two B operands share the dynamic A.
func.func @horizontal(%a: tensor<?x64xbf16>, %w1: tensor<32x64xbf16>, %w2: tensor<32x64xbf16>) -> tensor<?x32xf32> {
  %g = fusion.linear %a, %w1 : (tensor<?x64xbf16>, tensor<32x64xbf16>) -> tensor<?x32xf32>
  %u = fusion.linear %a, %w2 : (tensor<?x64xbf16>, tensor<32x64xbf16>) -> tensor<?x32xf32>
  %s = fusion.silu %g : tensor<?x32xf32>
  %o = fusion.mul %s, %u : tensor<?x32xf32>
  func.return %o : tensor<?x32xf32>
}
// CHECK-LABEL: func.func @horizontal
// CHECK-SAME:  fusion.space = #fusion.space<m = ?, n = 32, k = 64>
// CHECK-COUNT-2: fusion.mma %a [m, k]

// -----

// A dynamic K (a weight gradient over a token count): dW = dZ^T X as a fused_multiply_sum
// of broadcast [T, M, 1] x [T, 1, N] over axis 0; both operands are MN-major.
func.func @wgrad(%dz: tensor<?x48xbf16>, %x: tensor<?x40xbf16>) -> tensor<48x40xf32> {
  %0 = fusion.broadcast %dz new_dims [false, false, true] : tensor<?x48xbf16> to tensor<?x48x1xbf16>
  %1 = fusion.broadcast %x new_dims [false, true, false] : tensor<?x40xbf16> to tensor<?x1x40xbf16>
  %y = fusion.fused_multiply_sum %0, %1 axes [0] : (tensor<?x48x1xbf16>, tensor<?x1x40xbf16>) -> tensor<48x40xf32>
  func.return %y : tensor<48x40xf32>
}
// CHECK-LABEL: func.func @wgrad(
// CHECK-SAME:  %dz: tensor<?x48xbf16> {fusion.roles = #fusion.roles<[k, m]>}
// CHECK-SAME:  %x: tensor<?x40xbf16> {fusion.roles = #fusion.roles<[k, n]>}
// CHECK-SAME:  fusion.space = #fusion.space<m = 48, n = 40, k = ?>
