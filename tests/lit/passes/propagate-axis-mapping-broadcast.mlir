// RUN: mmcomp-opt %s -p propagate-axis-mapping --split-input-file | filecheck %s
// The whole pipeline takes the folded form down to ptx text:
// RUN: mmcomp-opt %s -p compile-to-ptx --split-input-file -t ptx | filecheck %s --check-prefix=PTX

// nvFuser's classic form: the broadcasts of the factors fold into the mma's axis map, so
// the mma reads a[M, K] and b[N, K] themselves, as a linear does.
func.func @classic(%a: tensor<300x128xbf16>, %b: tensor<200x128xbf16>) -> tensor<300x200xbf16> {
  %a3 = fusion.broadcast %a new_dims [false, true, false] : tensor<300x128xbf16> to tensor<300x1x128xbf16>
  %b3 = fusion.broadcast %b new_dims [true, false, false] : tensor<200x128xbf16> to tensor<1x200x128xbf16>
  %y = fusion.fused_multiply_sum %a3, %b3 axes [2] : (tensor<300x1x128xbf16>, tensor<1x200x128xbf16>) -> tensor<300x200xf32>
  %o = fusion.cast %y : tensor<300x200xf32> to tensor<300x200xbf16>
  func.return %o : tensor<300x200xbf16>
}
// CHECK-LABEL: func.func @classic
// CHECK-SAME: %a: tensor<300x128xbf16> {fusion.roles = #fusion.roles<[m, k]>}
// CHECK-SAME: %b: tensor<200x128xbf16> {fusion.roles = #fusion.roles<[n, k]>}
// CHECK-SAME: attributes {fusion.space = #fusion.space<m = 300, n = 200, k = 128>}
// CHECK-NEXT: %y = fusion.mma %a [m, k], %b [n, k] -> [m, n] {fusion.roles = #fusion.roles<[m, n]>} : (tensor<300x128xbf16>, tensor<200x128xbf16>) -> tensor<300x200xf32>
// CHECK-NEXT: %o = fusion.cast %y
// CHECK-NOT: fusion.broadcast
// PTX: .entry classic(

// -----

// B as [K, N], summed over the middle axis.
func.func @classic_kn(%a: tensor<64x32xbf16>, %b: tensor<32x128xbf16>) -> tensor<64x128xf32> {
  %a3 = fusion.broadcast %a new_dims [false, false, true] : tensor<64x32xbf16> to tensor<64x32x1xbf16>
  %b3 = fusion.broadcast %b new_dims [true, false, false] : tensor<32x128xbf16> to tensor<1x32x128xbf16>
  %y = fusion.fused_multiply_sum %a3, %b3 axes [1] : (tensor<64x32x1xbf16>, tensor<1x32x128xbf16>) -> tensor<64x128xf32>
  func.return %y : tensor<64x128xf32>
}
// CHECK-LABEL: func.func @classic_kn
// CHECK: fusion.mma %a [m, k], %b [k, n] -> [m, n]
// CHECK-NOT: fusion.broadcast
// PTX: .entry classic_kn(

// -----

// An mma written on a broadcast folds the same way.
func.func @mma_on_broadcast(%a: tensor<64x32xbf16>, %b: tensor<128x32xbf16>) -> tensor<64x128xf32> {
  %a3 = fusion.broadcast %a new_dims [false, true, false] : tensor<64x32xbf16> to tensor<64x1x32xbf16>
  %y = fusion.mma %a3 [m, _, k], %b [n, k] -> [m, n] : (tensor<64x1x32xbf16>, tensor<128x32xbf16>) -> tensor<64x128xf32>
  func.return %y : tensor<64x128xf32>
}
// CHECK-LABEL: func.func @mma_on_broadcast
// CHECK-NEXT: %y = fusion.mma %a [m, k], %b [n, k] -> [m, n]
// CHECK-NOT: fusion.broadcast
// PTX: .entry mma_on_broadcast(
