// RUN: mmcomp-opt %s | filecheck %s
// RUN: mmcomp-opt %s | mmcomp-opt | filecheck %s
// RUN: mmcomp-opt %s --print-op-generic | mmcomp-opt | filecheck %s
// RUN: mmcomp-opt %s -p propagate-axis-mapping | filecheck %s --check-prefix=ROLES

// The contiguous layout (offsets) with and without a per-group bias, and the masked one
// (counts).
// CHECK-LABEL: func.func @layouts
// ROLES-LABEL: func.func @layouts
// ROLES-SAME: %x: tensor<?x64xbf16> {fusion.roles = #fusion.roles<[m, k]>}
// ROLES-SAME: %w: tensor<8x128x64xbf16> {fusion.roles = #fusion.roles<[g, n, k]>}
// ROLES-SAME: %bias: tensor<8x128xbf16> {fusion.roles = #fusion.roles<[g, n]>}
// ROLES-SAME: %offsets: tensor<8xi32> {fusion.roles = #fusion.roles<[g]>}
// ROLES-SAME: attributes {fusion.space = #fusion.space<g = 8, m = ?, n = 128, k = 64>}
func.func @layouts(%x: tensor<?x64xbf16>, %w: tensor<8x128x64xbf16>, %bias: tensor<8x128xbf16>,
                   %offsets: tensor<8xi32>) -> (tensor<?x128xf32>, tensor<?x128xf32>) {
  // CHECK-NEXT: %0 = fusion.grouped_linear %x, %w offsets %offsets : (tensor<?x64xbf16>, tensor<8x128x64xbf16>, tensor<8xi32>) -> tensor<?x128xf32>
  // ROLES: fusion.grouped_linear %x, %w offsets %offsets {fusion.roles = #fusion.roles<[m, n]>}
  %0 = fusion.grouped_linear %x, %w offsets %offsets : (tensor<?x64xbf16>, tensor<8x128x64xbf16>, tensor<8xi32>) -> tensor<?x128xf32>
  // CHECK-NEXT: %1 = fusion.grouped_linear %x, %w, %bias offsets %offsets : (tensor<?x64xbf16>, tensor<8x128x64xbf16>, tensor<8x128xbf16>, tensor<8xi32>) -> tensor<?x128xf32>
  %1 = fusion.grouped_linear %x, %w, %bias offsets %offsets : (tensor<?x64xbf16>, tensor<8x128x64xbf16>, tensor<8x128xbf16>, tensor<8xi32>) -> tensor<?x128xf32>
  func.return %0, %1 : tensor<?x128xf32>, tensor<?x128xf32>
}

// CHECK-LABEL: func.func @masked
// ROLES-LABEL: func.func @masked
// ROLES-SAME: %x: tensor<8x16x64xf16> {fusion.roles = #fusion.roles<[g, m, k]>}
// ROLES-SAME: %counts: tensor<8xi32> {fusion.roles = #fusion.roles<[g]>}
// ROLES-SAME: attributes {fusion.space = #fusion.space<g = 8, m = 16, n = 128, k = 64>}
func.func @masked(%x: tensor<8x16x64xf16>, %w: tensor<8x128x64xf16>, %counts: tensor<8xi32>)
    -> tensor<8x16x128xf16> {
  // CHECK-NEXT: %0 = fusion.grouped_linear %x, %w counts %counts : (tensor<8x16x64xf16>, tensor<8x128x64xf16>, tensor<8xi32>) -> tensor<8x16x128xf32>
  // ROLES: fusion.grouped_linear %x, %w counts %counts {fusion.roles = #fusion.roles<[g, m, n]>}
  %0 = fusion.grouped_linear %x, %w counts %counts : (tensor<8x16x64xf16>, tensor<8x128x64xf16>, tensor<8xi32>) -> tensor<8x16x128xf32>
  // CHECK-NEXT: fusion.cast
  // ROLES: fusion.cast %0 {fusion.roles = #fusion.roles<[g, m, n]>}
  %1 = fusion.cast %0 : tensor<8x16x128xf32> to tensor<8x16x128xf16>
  func.return %1 : tensor<8x16x128xf16>
}

// The SwiGLU of two grouped linears sharing x and the offsets, times the router's weight
// per row: every epilogue value is [m, n], the weights [m, _].
// CHECK-LABEL: func.func @swiglu
// ROLES-LABEL: func.func @swiglu
// ROLES-SAME: %r: tensor<?x1xf32> {fusion.roles = #fusion.roles<[m, _]>}
func.func @swiglu(%x: tensor<?x64xbf16>, %wg: tensor<4x32x64xbf16>, %wu: tensor<4x32x64xbf16>,
                  %offsets: tensor<4xi32>, %r: tensor<?x1xf32>) -> tensor<?x32xbf16> {
  // CHECK-NEXT: fusion.grouped_linear %x, %wg offsets %offsets
  %0 = fusion.grouped_linear %x, %wg offsets %offsets : (tensor<?x64xbf16>, tensor<4x32x64xbf16>, tensor<4xi32>) -> tensor<?x32xf32>
  // CHECK-NEXT: fusion.grouped_linear %x, %wu offsets %offsets
  %1 = fusion.grouped_linear %x, %wu offsets %offsets : (tensor<?x64xbf16>, tensor<4x32x64xbf16>, tensor<4xi32>) -> tensor<?x32xf32>
  %2 = fusion.silu %0 : tensor<?x32xf32>
  %3 = fusion.mul %2, %1 : tensor<?x32xf32>
  // ROLES: fusion.broadcast %r new_dims [false, false] {fusion.roles = #fusion.roles<[m, n]>}
  %4 = fusion.broadcast %r new_dims [false, false] : tensor<?x1xf32> to tensor<?x32xf32>
  %5 = fusion.mul %3, %4 : tensor<?x32xf32>
  // ROLES: fusion.cast %5 {fusion.roles = #fusion.roles<[m, n]>}
  %6 = fusion.cast %5 : tensor<?x32xf32> to tensor<?x32xbf16>
  func.return %6 : tensor<?x32xbf16>
}
