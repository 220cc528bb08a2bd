// RUN: mmcomp-opt %s -p compile-to-ptx -t ptx | filecheck %s
// RUN: mmcomp-opt %s -p compile-to-ptx -t ptx | python -m mmcomp.arch.ptxas - --sass "QGMMA\\.64x128x32\\.F32\\.E4M3\\.E5M2" | filecheck %s --check-prefix=PTXAS

// An fp8 linear (e4m3 x e5m2) with row-wise scales and a bias: 128-element (128-byte) K
// boxes, wgmma m64nNk32 with both operands K-major (no transpose bits), and the scales
// loaded in the epilogue like the bias. ptxas makes QGMMA (the SASS of fp8 wgmma) of them.
// CHECK: .visible .entry scaled(
// CHECK: cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes
// CHECK: wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e5m2 {{{.*}}}, %{{[a-z0-9]+}}, %{{[a-z0-9]+}}, %{{[a-z0-9]+}}, 1, 1;
// CHECK-NOT: k16
// PTXAS: scaled
// PTXAS-SAME: 0 bytes spill stores, 0 bytes spill loads, 0 bytes stack
func.func @scaled(%a: tensor<1000x4096xf8E4M3FN>, %w: tensor<2048x4096xf8E5M2>, %bias: tensor<2048xbf16>, %sa: tensor<1000xf32>, %sb: tensor<2048xf32>) -> tensor<1000x2048xbf16> {
  %0 = fusion.linear %a, %w, %bias scales %sa, %sb : (tensor<1000x4096xf8E4M3FN>, tensor<2048x4096xf8E5M2>, tensor<2048xbf16>, tensor<1000xf32>, tensor<2048xf32>) -> tensor<1000x2048xf32>
  %1 = fusion.cast %0 : tensor<1000x2048xf32> to tensor<1000x2048xbf16>
  func.return %1 : tensor<1000x2048xbf16>
}
