// RUN: mmcomp-opt %s | filecheck %s
// RUN: mmcomp-opt %s | mmcomp-opt | filecheck %s
// RUN: mmcomp-opt %s --print-op-generic | mmcomp-opt | filecheck %s

// CHECK-LABEL: func.func @contractions
func.func @contractions(%a: tensor<16x32xbf16>, %b: tensor<32x8xbf16>, %w: tensor<8x32xbf16>,
                        %bias: tensor<8xf16>, %ba: tensor<4x16x32xf16>, %bb: tensor<32x8xf16>,
                        %x: tensor<16x1x32xbf16>, %y: tensor<1x8x32xbf16>)
    -> (tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<4x16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>) {
  // CHECK-NEXT: %0 = fusion.matmul %a, %b : (tensor<16x32xbf16>, tensor<32x8xbf16>) -> tensor<16x8xf32>
  %0 = fusion.matmul %a, %b : (tensor<16x32xbf16>, tensor<32x8xbf16>) -> tensor<16x8xf32>
  // CHECK-NEXT: %1 = fusion.linear %a, %w : (tensor<16x32xbf16>, tensor<8x32xbf16>) -> tensor<16x8xf32>
  %1 = fusion.linear %a, %w : (tensor<16x32xbf16>, tensor<8x32xbf16>) -> tensor<16x8xf32>
  // CHECK-NEXT: %2 = fusion.linear %a, %w, %bias : (tensor<16x32xbf16>, tensor<8x32xbf16>, tensor<8xf16>) -> tensor<16x8xf32>
  %2 = fusion.linear %a, %w, %bias : (tensor<16x32xbf16>, tensor<8x32xbf16>, tensor<8xf16>) -> tensor<16x8xf32>
  // CHECK-NEXT: %3 = fusion.matmul %ba, %bb : (tensor<4x16x32xf16>, tensor<32x8xf16>) -> tensor<4x16x8xf32>
  %3 = fusion.matmul %ba, %bb : (tensor<4x16x32xf16>, tensor<32x8xf16>) -> tensor<4x16x8xf32>
  // CHECK-NEXT: %4 = fusion.fused_multiply_sum %x, %y axes [2] : (tensor<16x1x32xbf16>, tensor<1x8x32xbf16>) -> tensor<16x8xf32>
  %4 = fusion.fused_multiply_sum %x, %y axes [2] : (tensor<16x1x32xbf16>, tensor<1x8x32xbf16>) -> tensor<16x8xf32>
  // CHECK-NEXT: %5 = fusion.mma %x [m, _, k], %y [_, n, k] -> [m, n] : (tensor<16x1x32xbf16>, tensor<1x8x32xbf16>) -> tensor<16x8xf32>
  %5 = fusion.mma %x [m, _, k], %y [_, n, k] -> [m, n] : (tensor<16x1x32xbf16>, tensor<1x8x32xbf16>) -> tensor<16x8xf32>
  // CHECK-NEXT: func.return %0, %1, %2, %3, %4, %5
  func.return %0, %1, %2, %3, %4, %5 : tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<4x16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>
}

// CHECK-LABEL: func.func @pointwise
func.func @pointwise(%p: tensor<16x8xf32>, %q: tensor<16x8xf32>, %row: tensor<8xbf16>, %col: tensor<16x1xf32>)
    -> tensor<16x8xbf16> {
  // CHECK-NEXT: %0 = fusion.add %p, %q : tensor<16x8xf32>
  %0 = fusion.add %p, %q : tensor<16x8xf32>
  // CHECK-NEXT: %1 = fusion.sub %0, %q : tensor<16x8xf32>
  %1 = fusion.sub %0, %q : tensor<16x8xf32>
  // CHECK-NEXT: %2 = fusion.mul %1, %p : tensor<16x8xf32>
  %2 = fusion.mul %1, %p : tensor<16x8xf32>
  // CHECK-NEXT: %3 = fusion.div %2, %q : tensor<16x8xf32>
  %3 = fusion.div %2, %q : tensor<16x8xf32>
  // CHECK-NEXT: %4 = fusion.neg %3 : tensor<16x8xf32>
  %4 = fusion.neg %3 : tensor<16x8xf32>
  // CHECK-NEXT: %5 = fusion.exp %4 : tensor<16x8xf32>
  %5 = fusion.exp %4 : tensor<16x8xf32>
  // CHECK-NEXT: %6 = fusion.tanh %5 : tensor<16x8xf32>
  %6 = fusion.tanh %5 : tensor<16x8xf32>
  // CHECK-NEXT: %7 = fusion.sigmoid %6 : tensor<16x8xf32>
  %7 = fusion.sigmoid %6 : tensor<16x8xf32>
  // CHECK-NEXT: %8 = fusion.silu %7 : tensor<16x8xf32>
  %8 = fusion.silu %7 : tensor<16x8xf32>
  // CHECK-NEXT: %9 = fusion.gelu %8 approximate tanh : tensor<16x8xf32>
  %9 = fusion.gelu %8 approximate tanh : tensor<16x8xf32>
  // CHECK-NEXT: %10 = fusion.gelu %9 approximate none : tensor<16x8xf32>
  %10 = fusion.gelu %9 approximate none : tensor<16x8xf32>
  // CHECK-NEXT: %11 = fusion.relu %10 : tensor<16x8xf32>
  %11 = fusion.relu %10 : tensor<16x8xf32>
  // CHECK-NEXT: %12 = fusion.splat 0.5 : tensor<16x8xf32>
  %12 = fusion.splat 0.5 : tensor<16x8xf32>
  // CHECK-NEXT: %13 = fusion.mul %11, %12 : tensor<16x8xf32>
  %13 = fusion.mul %11, %12 : tensor<16x8xf32>
  // CHECK-NEXT: %14 = fusion.cast %row : tensor<8xbf16> to tensor<8xf32>
  %14 = fusion.cast %row : tensor<8xbf16> to tensor<8xf32>
  // CHECK-NEXT: %15 = fusion.broadcast %14 new_dims [true, false] : tensor<8xf32> to tensor<16x8xf32>
  %15 = fusion.broadcast %14 new_dims [true, false] : tensor<8xf32> to tensor<16x8xf32>
  // CHECK-NEXT: %16 = fusion.broadcast %col new_dims [false, false] : tensor<16x1xf32> to tensor<16x8xf32>
  %16 = fusion.broadcast %col new_dims [false, false] : tensor<16x1xf32> to tensor<16x8xf32>
  // CHECK-NEXT: %17 = fusion.add %13, %15 : tensor<16x8xf32>
  %17 = fusion.add %13, %15 : tensor<16x8xf32>
  // CHECK-NEXT: %18 = fusion.add %17, %16 : tensor<16x8xf32>
  %18 = fusion.add %17, %16 : tensor<16x8xf32>
  // CHECK-NEXT: %19 = fusion.splat -2.0 : tensor<16x8xf32>
  %19 = fusion.splat -2 : tensor<16x8xf32>
  // CHECK-NEXT: %20 = fusion.div %18, %19 : tensor<16x8xf32>
  %20 = fusion.div %18, %19 : tensor<16x8xf32>
  // CHECK-NEXT: %21 = fusion.cast %20 : tensor<16x8xf32> to tensor<16x8xbf16>
  %21 = fusion.cast %20 : tensor<16x8xf32> to tensor<16x8xbf16>
  // CHECK-NEXT: func.return %21 : tensor<16x8xbf16>
  func.return %21 : tensor<16x8xbf16>
}

// CHECK-LABEL: func.func @roles
// CHECK-SAME: fusion.space = #fusion.space<b0 = 4, m = 16, n = 8, k = 32>
// CHECK: fusion.mma %a [b0, m, k], %b [k, n] -> [b0, m, n] {fusion.roles = #fusion.roles<[b0, m, n]>}
func.func @roles(%a: tensor<4x16x32xf16> {fusion.roles = #fusion.roles<[b0, m, k]>}, %b: tensor<32x8xf16>)
    -> tensor<4x16x8xf32> attributes {fusion.space = #fusion.space<b0 = 4, m = 16, n = 8, k = 32>} {
  %0 = fusion.mma %a [b0, m, k], %b [k, n] -> [b0, m, n] {fusion.roles = #fusion.roles<[b0, m, n]>} : (tensor<4x16x32xf16>, tensor<32x8xf16>) -> tensor<4x16x8xf32>
  func.return %0 : tensor<4x16x8xf32>
}
