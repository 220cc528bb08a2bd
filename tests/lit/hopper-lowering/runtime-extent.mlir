// RUN: not mmcomp-opt %s -p 'propagate-axis-mapping,choose-schedule{backend=interp},tile-split,tile-merge,split-k,insert-persistent-loop,materialize-schedule,partition-warp-roles' 2>&1 | filecheck %s

// A kernel materialized with a runtime extent (its schedule chosen for the CPU executor)
// is refused by the first Hopper pass, naming the extent: the Hopper lowering takes static
// extents only.
func.func @lin(%a: tensor<?x64xbf16>, %w: tensor<64x64xbf16>) -> tensor<?x64xf32> {
  %0 = fusion.linear %a, %w : (tensor<?x64xbf16>, tensor<64x64xbf16>) -> tensor<?x64xf32>
  func.return %0 : tensor<?x64xf32>
}
// CHECK: partition-warp-roles: @lin: %m is the runtime extent M (sched.extent = "m"); the Hopper lowering takes static extents only (compile for backend='interp', or give the extent)
