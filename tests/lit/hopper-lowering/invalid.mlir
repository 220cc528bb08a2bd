// RUN: mmcomp-opt %s -p propagate-axis-mapping,tile-split,tile-merge,split-k,insert-persistent-loop,materialize-schedule,partition-warp-roles --verify-diagnostics --split-input-file | filecheck %s

// partition-warp-roles refuses, with a message naming the parameter, what the Hopper
// lowering does not build.

// A non-specialized kernel.
func.func @none(%a: tensor<256x128xbf16>, %w: tensor<256x128xbf16>) -> tensor<256x256xf32> attributes {sched.params = #sched.params<tile = 128x128x64, warp_specialization = none, epilogue = registers>} {
  %y = fusion.linear %a, %w : (tensor<256x128xbf16>, tensor<256x128xbf16>) -> tensor<256x256xf32>
  func.return %y : tensor<256x256xf32>
}
// CHECK: partition-warp-roles: @none: warp_specialization = "none" is not built by the Hopper lowering yet; use "cooperative" or "pingpong"

// -----

// The shared-memory epilogue.
func.func @smem(%a: tensor<256x128xbf16>, %w: tensor<256x128xbf16>) -> tensor<256x256xf32> attributes {sched.params = #sched.params<tile = 128x128x64, epilogue = smem>} {
  %y = fusion.linear %a, %w : (tensor<256x128xbf16>, tensor<256x128xbf16>) -> tensor<256x256xf32>
  func.return %y : tensor<256x256xf32>
}
// CHECK: partition-warp-roles: @smem: epilogue = "smem" is not built by the Hopper lowering yet; use epilogue="registers"

// -----

// A cluster of two CTAs.
func.func @cluster(%a: tensor<256x128xbf16>, %w: tensor<256x128xbf16>) -> tensor<256x256xf32> attributes {sched.params = #sched.params<tile = 128x128x64, cluster = 2x1, epilogue = registers>} {
  %y = fusion.linear %a, %w : (tensor<256x128xbf16>, tensor<256x128xbf16>) -> tensor<256x256xf32>
  func.return %y : tensor<256x256xf32>
}
// CHECK: partition-warp-roles: @cluster: cluster 2x1 is not built by the Hopper lowering yet; use cluster=(1, 1)
