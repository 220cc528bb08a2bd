// RUN: mmcomp-opt %s -p tile-split --verify-diagnostics --split-input-file | filecheck %s

// No iteration space: propagate-axis-mapping has not run.
func.func @no_space(%a: tensor<300x200xbf16> {fusion.roles = #fusion.roles<[m, k]>}, %w: tensor<500x200xbf16> {fusion.roles = #fusion.roles<[n, k]>}) -> tensor<300x500xf32> attributes {sched.params = #sched.params<tile = 128x128x64>} {
  %y = fusion.mma %a [m, k], %w [n, k] -> [m, n] {fusion.roles = #fusion.roles<[m, n]>} : (tensor<300x200xbf16>, tensor<500x200xbf16>) -> tensor<300x500xf32>
  func.return %y : tensor<300x500xf32>
}
// CHECK: tile-split: @no_space: no 'fusion.space' attribute (run propagate-axis-mapping first)

// -----

// split_k larger than the K blocks: 200 / 64 -> 4 blocks.
func.func @split_k_too_large(%a: tensor<300x200xbf16> {fusion.roles = #fusion.roles<[m, k]>}, %w: tensor<500x200xbf16> {fusion.roles = #fusion.roles<[n, k]>}) -> tensor<300x500xf32> attributes {fusion.space = #fusion.space<m = 300, n = 500, k = 200>, sched.params = #sched.params<tile = 128x128x64, split_k = 5>} {
  %y = fusion.mma %a [m, k], %w [n, k] -> [m, n] {fusion.roles = #fusion.roles<[m, n]>} : (tensor<300x200xbf16>, tensor<500x200xbf16>) -> tensor<300x500xf32>
  func.return %y : tensor<300x500xf32>
}
// CHECK: tile-split: @split_k_too_large: split_k = 5 is larger than the 4 K blocks of k = 200 with tile k = 64

// -----

// Shared memory over the limit for a horizontal fusion (one A and two B tiles per stage).
func.func @smem(%a: tensor<300x200xbf16> {fusion.roles = #fusion.roles<[m, k]>}, %w1: tensor<500x200xbf16> {fusion.roles = #fusion.roles<[n, k]>}, %w2: tensor<500x200xbf16> {fusion.roles = #fusion.roles<[n, k]>}) -> (tensor<300x500xf32>, tensor<300x500xf32>) attributes {fusion.space = #fusion.space<m = 300, n = 500, k = 200>, sched.params = #sched.params<tile = 128x256x64, stages = 4>} {
  %g = fusion.mma %a [m, k], %w1 [n, k] -> [m, n] {fusion.roles = #fusion.roles<[m, n]>} : (tensor<300x200xbf16>, tensor<500x200xbf16>) -> tensor<300x500xf32>
  %u = fusion.mma %a [m, k], %w2 [n, k] -> [m, n] {fusion.roles = #fusion.roles<[m, n]>} : (tensor<300x200xbf16>, tensor<500x200xbf16>) -> tensor<300x500xf32>
  func.return %g, %u : tensor<300x500xf32>, tensor<300x500xf32>
}
// CHECK: tile-split: @smem: tile 128x256x64 with 4 stages for 1 A and 2 B operand tiles needs {{[0-9]+}} bytes of shared memory
