// RUN: mmcomp-opt %s -p compile-to-ptx -t ptx | filecheck %s
// RUN: mmcomp-opt %s -p compile-to-ptx -t ptx | python -m mmcomp.arch.ptxas - --sass HGMMA | filecheck %s --check-prefix=PTXAS

// The named default pipeline takes a plain fusion (no schedule written) down to PTX: the
// heuristic's 128x256x64 cooperative kernel, with TMA loads, wgmma m64n256k16 and the
// shared-memory epilogue's TMA store.
// CHECK: .target sm_90a
// CHECK: .visible .entry gelu_bias(
// CHECK: .maxnreg 168
// CHECK: setmaxnreg.dec.sync.aligned.u32 40;
// CHECK: cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes
// CHECK: setmaxnreg.inc.sync.aligned.u32 232;
// CHECK: wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16
// CHECK: tanh.approx.f32
// CHECK: cp.async.bulk.tensor.2d.global.shared::cta.bulk_group
// PTXAS: gelu_bias
// PTXAS-SAME: 0 bytes spill stores, 0 bytes spill loads, 0 bytes stack
func.func @gelu_bias(%a: tensor<4096x5120xbf16>, %w: tensor<14336x5120xbf16>, %bias: tensor<14336xbf16>) -> tensor<4096x14336xbf16> {
  %0 = fusion.linear %a, %w, %bias : (tensor<4096x5120xbf16>, tensor<14336x5120xbf16>, tensor<14336xbf16>) -> tensor<4096x14336xf32>
  %1 = fusion.gelu %0 approximate tanh : tensor<4096x14336xf32>
  %2 = fusion.cast %1 : tensor<4096x14336xf32> to tensor<4096x14336xbf16>
  func.return %2 : tensor<4096x14336xbf16>
}
