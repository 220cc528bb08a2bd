// RUN: mmcomp-opt %s -p propagate-axis-mapping --split-input-file | filecheck %s
// RUN: mmcomp-opt %s -p propagate-axis-mapping --split-input-file | mmcomp-opt --split-input-file -p propagate-axis-mapping | filecheck %s

// linear with bias[N]: the bias becomes a cast to f32, a broadcast and an add on the mma.
func.func @linear_bias(%a: tensor<64x32xbf16>, %w: tensor<128x32xbf16>, %bias: tensor<128xbf16>) -> tensor<64x128xbf16> {
  %y = fusion.linear %a, %w, %bias : (tensor<64x32xbf16>, tensor<128x32xbf16>, tensor<128xbf16>) -> tensor<64x128xf32>
  %g = fusion.gelu %y approximate tanh : tensor<64x128xf32>
  %o = fusion.cast %g : tensor<64x128xf32> to tensor<64x128xbf16>
  func.return %o : tensor<64x128xbf16>
}
// CHECK-LABEL: func.func @linear_bias
// CHECK-SAME: %a: tensor<64x32xbf16> {fusion.roles = #fusion.roles<[m, k]>}
// CHECK-SAME: %w: tensor<128x32xbf16> {fusion.roles = #fusion.roles<[n, k]>}
// CHECK-SAME: %bias: tensor<128xbf16> {fusion.roles = #fusion.roles<[n]>}
// CHECK-SAME: attributes {fusion.space = #fusion.space<m = 64, n = 128, k = 32>}
// CHECK-NEXT: %[[MMA:.*]] = fusion.mma %a [m, k], %w [n, k] -> [m, n] {fusion.roles = #fusion.roles<[m, n]>} : (tensor<64x32xbf16>, tensor<128x32xbf16>) -> tensor<64x128xf32>
// CHECK-NEXT: %[[CAST:.*]] = fusion.cast %bias {fusion.roles = #fusion.roles<[n]>} : tensor<128xbf16> to tensor<128xf32>
// CHECK-NEXT: %[[ROW:.*]] = fusion.broadcast %[[CAST]] new_dims [true, false] {fusion.roles = #fusion.roles<[m, n]>} : tensor<128xf32> to tensor<64x128xf32>
// CHECK-NEXT: %[[Y:.*]] = fusion.add %[[MMA]], %[[ROW]] {fusion.roles = #fusion.roles<[m, n]>} : tensor<64x128xf32>
// CHECK-NEXT: %[[G:.*]] = fusion.gelu %[[Y]] approximate tanh {fusion.roles = #fusion.roles<[m, n]>} : tensor<64x128xf32>
// CHECK-NEXT: %[[O:.*]] = fusion.cast %[[G]] {fusion.roles = #fusion.roles<[m, n]>} : tensor<64x128xf32> to tensor<64x128xbf16>
// CHECK-NEXT: func.return %[[O]]

// -----

// matmul with B as [K, N]; its result is also an output; epilogue operands [M, N], [1, N], [M, 1].
func.func @matmul_epilogue(%a: tensor<64x32xf16>, %b: tensor<32x128xf16>, %t: tensor<64x128xf32>,
                           %row: tensor<1x128xf32>, %col: tensor<64x1xf32>)
    -> (tensor<64x128xf32>, tensor<64x128xf32>) {
  %y = fusion.matmul %a, %b : (tensor<64x32xf16>, tensor<32x128xf16>) -> tensor<64x128xf32>
  %r = fusion.broadcast %row new_dims [false, false] : tensor<1x128xf32> to tensor<64x128xf32>
  %c = fusion.broadcast %col new_dims [false, false] : tensor<64x1xf32> to tensor<64x128xf32>
  %0 = fusion.mul %y, %t : tensor<64x128xf32>
  %1 = fusion.add %0, %r : tensor<64x128xf32>
  %2 = fusion.sub %1, %c : tensor<64x128xf32>
  func.return %y, %2 : tensor<64x128xf32>, tensor<64x128xf32>
}
// CHECK-LABEL: func.func @matmul_epilogue
// CHECK-SAME: %a: tensor<64x32xf16> {fusion.roles = #fusion.roles<[m, k]>}
// CHECK-SAME: %b: tensor<32x128xf16> {fusion.roles = #fusion.roles<[k, n]>}
// CHECK-SAME: %t: tensor<64x128xf32> {fusion.roles = #fusion.roles<[m, n]>}
// CHECK-SAME: %row: tensor<1x128xf32> {fusion.roles = #fusion.roles<[_, n]>}
// CHECK-SAME: %col: tensor<64x1xf32> {fusion.roles = #fusion.roles<[m, _]>}
// CHECK-SAME: attributes {fusion.space = #fusion.space<m = 64, n = 128, k = 32>}
// CHECK-NEXT: %[[Y:.*]] = fusion.mma %a [m, k], %b [k, n] -> [m, n] {fusion.roles = #fusion.roles<[m, n]>}
// CHECK-NEXT: fusion.broadcast %row new_dims [false, false] {fusion.roles = #fusion.roles<[m, n]>}
// CHECK-NEXT: fusion.broadcast %col new_dims [false, false] {fusion.roles = #fusion.roles<[m, n]>}
// CHECK-NEXT: fusion.mul %[[Y]], %t {fusion.roles = #fusion.roles<[m, n]>}
// CHECK-NEXT: fusion.add {{.*}} {fusion.roles = #fusion.roles<[m, n]>}
// CHECK-NEXT: %[[OUT:.*]] = fusion.sub {{.*}} {fusion.roles = #fusion.roles<[m, n]>}
// CHECK-NEXT: func.return %[[Y]], %[[OUT]]

// -----

// Inputs declared with size-1 axes, as nvFuser's BroadcastInputs tests: A[M, 1, K], B[1, N, K].
func.func @broadcast_inputs(%a: tensor<64x1x32xbf16>, %b: tensor<1x128x32xbf16>) -> tensor<64x128xbf16> {
  %s = fusion.fused_multiply_sum %a, %b axes [2] : (tensor<64x1x32xbf16>, tensor<1x128x32xbf16>) -> tensor<64x128xf32>
  %o = fusion.cast %s : tensor<64x128xf32> to tensor<64x128xbf16>
  func.return %o : tensor<64x128xbf16>
}
// CHECK-LABEL: func.func @broadcast_inputs
// CHECK-SAME: %a: tensor<64x1x32xbf16> {fusion.roles = #fusion.roles<[m, _, k]>}
// CHECK-SAME: %b: tensor<1x128x32xbf16> {fusion.roles = #fusion.roles<[_, n, k]>}
// CHECK-SAME: attributes {fusion.space = #fusion.space<m = 64, n = 128, k = 32>}
// CHECK-NEXT: %[[S:.*]] = fusion.mma %a [m, _, k], %b [_, n, k] -> [m, n] {fusion.roles = #fusion.roles<[m, n]>} : (tensor<64x1x32xbf16>, tensor<1x128x32xbf16>) -> tensor<64x128xf32>
// CHECK-NEXT: fusion.cast %[[S]] {fusion.roles = #fusion.roles<[m, n]>}

// -----

// Batch dims: A[B, M, K] x B[1, K, N], where B's batch axis broadcasts.
func.func @batched(%a: tensor<4x64x32xbf16>, %b: tensor<1x32x128xbf16>) -> tensor<4x64x128xf32> {
  %y = fusion.matmul %a, %b : (tensor<4x64x32xbf16>, tensor<1x32x128xbf16>) -> tensor<4x64x128xf32>
  %r = fusion.relu %y : tensor<4x64x128xf32>
  func.return %r : tensor<4x64x128xf32>
}
// CHECK-LABEL: func.func @batched
// CHECK-SAME: %a: tensor<4x64x32xbf16> {fusion.roles = #fusion.roles<[b0, m, k]>}
// CHECK-SAME: %b: tensor<1x32x128xbf16> {fusion.roles = #fusion.roles<[_, k, n]>}
// CHECK-SAME: attributes {fusion.space = #fusion.space<b0 = 4, m = 64, n = 128, k = 32>}
// CHECK-NEXT: %[[Y:.*]] = fusion.mma %a [b0, m, k], %b [_, k, n] -> [b0, m, n] {fusion.roles = #fusion.roles<[b0, m, n]>}
// CHECK-NEXT: fusion.relu %[[Y]] {fusion.roles = #fusion.roles<[b0, m, n]>}

// -----

// Horizontal fusion: two linears share A; silu(A W1^T) * (A W2^T), three outputs.
func.func @horizontal(%a: tensor<64x32xbf16>, %w1: tensor<128x32xbf16>, %w2: tensor<128x32xbf16>)
    -> (tensor<64x128xf32>, tensor<64x128xf32>, tensor<64x128xbf16>) {
  %g = fusion.linear %a, %w1 : (tensor<64x32xbf16>, tensor<128x32xbf16>) -> tensor<64x128xf32>
  %u = fusion.linear %a, %w2 : (tensor<64x32xbf16>, tensor<128x32xbf16>) -> tensor<64x128xf32>
  %s = fusion.silu %g : tensor<64x128xf32>
  %p = fusion.mul %s, %u : tensor<64x128xf32>
  %o = fusion.cast %p : tensor<64x128xf32> to tensor<64x128xbf16>
  func.return %g, %u, %o : tensor<64x128xf32>, tensor<64x128xf32>, tensor<64x128xbf16>
}
// CHECK-LABEL: func.func @horizontal
// CHECK-SAME: %a: tensor<64x32xbf16> {fusion.roles = #fusion.roles<[m, k]>}
// CHECK-SAME: %w1: tensor<128x32xbf16> {fusion.roles = #fusion.roles<[n, k]>}
// CHECK-SAME: %w2: tensor<128x32xbf16> {fusion.roles = #fusion.roles<[n, k]>}
// CHECK-SAME: attributes {fusion.space = #fusion.space<m = 64, n = 128, k = 32>}
// CHECK-NEXT: %[[G:.*]] = fusion.mma %a [m, k], %w1 [n, k] -> [m, n]
// CHECK-NEXT: %[[U:.*]] = fusion.mma %a [m, k], %w2 [n, k] -> [m, n]
// CHECK-NEXT: %[[S:.*]] = fusion.silu %[[G]] {fusion.roles = #fusion.roles<[m, n]>}
// CHECK-NEXT: %[[P:.*]] = fusion.mul %[[S]], %[[U]] {fusion.roles = #fusion.roles<[m, n]>}
// CHECK-NEXT: %[[O:.*]] = fusion.cast %[[P]] {fusion.roles = #fusion.roles<[m, n]>}
// CHECK-NEXT: func.return %[[G]], %[[U]], %[[O]]

// -----

// A bias given as [N] to a matmul, a scale constant, and a prologue op on A.
func.func @prologue_bias_scale(%a: tensor<64x32xf32>, %b: tensor<32x128xf32>, %bias: tensor<128xf32>) -> tensor<64x128xf32> {
  %e = fusion.neg %a : tensor<64x32xf32>
  %y = fusion.matmul %e, %b : (tensor<64x32xf32>, tensor<32x128xf32>) -> tensor<64x128xf32>
  %r = fusion.broadcast %bias new_dims [true, false] : tensor<128xf32> to tensor<64x128xf32>
  %c = fusion.splat 0.125 : tensor<64x128xf32>
  %0 = fusion.add %y, %r : tensor<64x128xf32>
  %1 = fusion.mul %0, %c : tensor<64x128xf32>
  func.return %1 : tensor<64x128xf32>
}
// CHECK-LABEL: func.func @prologue_bias_scale
// CHECK-SAME: %bias: tensor<128xf32> {fusion.roles = #fusion.roles<[n]>}
// CHECK-NEXT: %[[E:.*]] = fusion.neg %a {fusion.roles = #fusion.roles<[m, k]>}
// CHECK-NEXT: fusion.mma %[[E]] [m, k], %b [k, n] -> [m, n]
// CHECK-NEXT: fusion.broadcast %bias new_dims [true, false] {fusion.roles = #fusion.roles<[m, n]>}
// CHECK-NEXT: fusion.splat 0.125 {fusion.roles = #fusion.roles<[m, n]>}
