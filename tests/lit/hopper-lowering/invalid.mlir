// RUN: mmcomp-opt %s -p propagate-axis-mapping,tile-split,tile-merge,split-k,insert-persistent-loop,materialize-schedule,partition-warp-roles --verify-diagnostics --split-input-file | filecheck %s

// partition-warp-roles refuses, with a message naming the parameter, what the Hopper
// lowering does not build.

// A K tile narrower than one 128-byte swizzled row.
func.func @narrow(%a: tensor<256x128xbf16>, %w: tensor<256x128xbf16>) -> tensor<256x256xf32> attributes {sched.params = #sched.params<tile = 128x128x32, epilogue = registers>} {
  %y = fusion.linear %a, %w : (tensor<256x128xbf16>, tensor<256x128xbf16>) -> tensor<256x256xf32>
  func.return %y : tensor<256x256xf32>
}
// CHECK: partition-warp-roles: @narrow: tile k = 32 must be a multiple of 64 (one 128-byte swizzled row of 16-bit elements)

// -----

// A two-dimensional cluster.
func.func @cluster(%a: tensor<256x128xbf16>, %w: tensor<256x128xbf16>) -> tensor<256x256xf32> attributes {sched.params = #sched.params<tile = 128x128x64, cluster = 2x2, epilogue = registers>} {
  %y = fusion.linear %a, %w : (tensor<256x128xbf16>, tensor<256x128xbf16>) -> tensor<256x256xf32>
  func.return %y : tensor<256x256xf32>
}
// CHECK: partition-warp-roles: @cluster: cluster 2x2 is not built by the Hopper lowering; use 1x1, or 2 or 4 CTAs along one axis (2x1, 4x1, 1x2, 1x4)
