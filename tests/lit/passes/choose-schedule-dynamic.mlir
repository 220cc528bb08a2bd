// RUN: mmcomp-opt %s --split-input-file -p 'propagate-axis-mapping,choose-schedule{backend=interp}' | filecheck %s
// RUN: mmcomp-opt %s --split-input-file -p propagate-axis-mapping,choose-schedule | filecheck %s

// A dynamic M: the heuristic chooses for M = 4096 (NOMINAL_EXTENTS), the same schedule as
// for that static M (choose-schedule.mlir's @linear); the parameters that depend on M are
// checked at call time. The cuda back end chooses the same (its kernel takes M at launch).
// CHECK-LABEL: func.func @linear
// CHECK-SAME: sched.params = #sched.params<tile = 128x256x64, warpgroup = 64x256, instr = m64n256k16, stages = 3, cluster = 1x1, raster = m, swizzle = 8, strategy = persistent, split_k = 1, warp_specialization = cooperative, registers = 40/232, epilogue = smem>
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
func.func @bmm(%a: tensor<?x256x64xbf16>, %b: tensor<?x64x128xbf16>) -> tensor<?x256x128xf32> {
  %y = fusion.matmul %a, %b : (tensor<?x256x64xbf16>, tensor<?x64x128xbf16>) -> tensor<?x256x128xf32>
  func.return %y : tensor<?x256x128xf32>
}

// -----

// A dynamic K: chosen for K = 4096, never split (split_k = 1, strategy persistent): the
// K-block count is a runtime value. The same 256x256 output at a static K of 8192 splits K.
// CHECK-LABEL: func.func @wgrad
// CHECK-SAME: fusion.space = #fusion.space<m = 256, n = 256, k = ?>
// CHECK-SAME: strategy = persistent, split_k = 1,
func.func @wgrad(%dz: tensor<?x256xbf16>, %x: tensor<?x256xbf16>) -> tensor<256x256xf32> {
  %0 = fusion.broadcast %dz new_dims [false, false, true] : tensor<?x256xbf16> to tensor<?x256x1xbf16>
  %1 = fusion.broadcast %x new_dims [false, true, false] : tensor<?x256xbf16> to tensor<?x1x256xbf16>
  %y = fusion.fused_multiply_sum %0, %1 axes [0] : (tensor<?x256x1xbf16>, tensor<?x1x256xbf16>) -> tensor<256x256xf32>
  func.return %y : tensor<256x256xf32>
}

// -----

// CHECK-LABEL: func.func @wgrad_static
// CHECK-SAME: split_k = {{[2-9]}},
func.func @wgrad_static(%dz: tensor<8192x256xbf16>, %x: tensor<8192x256xbf16>) -> tensor<256x256xf32> {
  %0 = fusion.broadcast %dz new_dims [false, false, true] : tensor<8192x256xbf16> to tensor<8192x256x1xbf16>
  %1 = fusion.broadcast %x new_dims [false, true, false] : tensor<8192x256xbf16> to tensor<8192x1x256xbf16>
  %y = fusion.fused_multiply_sum %0, %1 axes [0] : (tensor<8192x256x1xbf16>, tensor<8192x1x256xbf16>) -> tensor<256x256xf32>
  func.return %y : tensor<256x256xf32>
}
