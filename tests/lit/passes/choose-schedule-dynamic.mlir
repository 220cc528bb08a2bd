// RUN: mmcomp-opt %s --split-input-file -p 'propagate-axis-mapping,choose-schedule{backend=interp}' | filecheck %s
// RUN: mmcomp-opt %s --split-input-file --verify-diagnostics -p propagate-axis-mapping,choose-schedule | filecheck %s --check-prefix=CUDA
// RUN: mmcomp-opt %s --split-input-file --verify-diagnostics -p compile-to-ptx | filecheck %s --check-prefix=CUDA

// A dynamic M: the heuristic chooses for M = 4096 (NOMINAL_EXTENTS), the same schedule as
// for that static M (choose-schedule.mlir's @linear); the parameters that depend on M are
// checked at call time. The cuda back end refuses the runtime extent, naming the axis.
// CHECK-LABEL: func.func @linear
// CHECK-SAME: sched.params = #sched.params<tile = 128x256x64, warpgroup = 64x256, instr = m64n256k16, stages = 3, cluster = 1x1, raster = m, swizzle = 8, strategy = persistent, split_k = 1, warp_specialization = cooperative, registers = 40/232, epilogue = smem>
// CUDA: @linear: %a (tensor<?x5120xbf16>) axis 0 is the dynamic extent M (iteration axis m = ?): the cuda back end does not take a runtime extent yet; compile it for a fixed extent, or schedule for the CPU executor (backend='interp'; mmcomp-opt: choose-schedule{backend=interp})
func.func @linear(%a: tensor<?x5120xbf16>, %w: tensor<14336x5120xbf16>) -> tensor<?x14336xbf16> {
  %0 = fusion.linear %a, %w : (tensor<?x5120xbf16>, tensor<14336x5120xbf16>) -> tensor<?x14336xf32>
  %1 = fusion.cast %0 : tensor<?x14336xf32> to tensor<?x14336xbf16>
  func.return %1 : tensor<?x14336xbf16>
}

// -----

// A dynamic batch extent: taken as 1 where the heuristic chooses.
// CHECK-LABEL: func.func @bmm
// CHECK-SAME: fusion.space = #fusion.space<b0 = ?, m = 256, n = 128, k = 64>
// CHECK-SAME: sched.params = #sched.params<tile = 128x128x64,
// CUDA: @bmm: %a (tensor<?x256x64xbf16>) axis 0 is the dynamic extent batch axis b0 (iteration axis b0 = ?): the cuda back end does not take a runtime extent yet
func.func @bmm(%a: tensor<?x256x64xbf16>, %b: tensor<?x64x128xbf16>) -> tensor<?x256x128xf32> {
  %y = fusion.matmul %a, %b : (tensor<?x256x64xbf16>, tensor<?x64x128xbf16>) -> tensor<?x256x128xf32>
  func.return %y : tensor<?x256x128xf32>
}
