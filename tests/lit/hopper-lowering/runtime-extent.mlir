// RUN: mmcomp-opt %s --split-input-file -p 'propagate-axis-mapping,choose-schedule{tile=128x64x64 stages=4},tile-split,tile-merge,split-k,insert-persistent-loop,materialize-schedule,partition-warp-roles,carry-ring-positions,lower-schedule-to-hopper' | filecheck %s
// RUN: mmcomp-opt %s --split-input-file -p 'propagate-axis-mapping,choose-schedule{tile=128x64x64 stages=4},tile-split,tile-merge,split-k,insert-persistent-loop,materialize-schedule,partition-warp-roles,carry-ring-positions,lower-schedule-to-hopper' | mmcomp-opt --split-input-file | filecheck %s
// RUN: mmcomp-opt %s --split-input-file -p 'propagate-axis-mapping,choose-schedule{tile=128x64x64 stages=4},compile-to-ptx{refit-spills=false}' -t ptx | filecheck %s --check-prefix=PTX

// A runtime M: the kernel's extent argument %m becomes a u32 parameter (`#ptx.extent`), the
// arrays and tensor maps it sizes have `?` extents (their maps are encoded from the arrays
// at bind time), the grid comes from the launch function @lin_launch, kept beside the
// hopper.kernel, and the schedule's arithmetic reads the parameter as an index
// (`hopper.extent_param`, the `ld.param.u32` of its register once lowered).
// CHECK-LABEL: hopper.kernel @lin(
// CHECK-SAME: arg0 : ptr<role = input, name = "a", shape = [?, 512], dtype = bf16, extents = "m">
// CHECK-SAME: arg2 : ptr<role = output, name = "out0", shape = [?, 64], dtype = f32, extents = "m">
// CHECK-SAME: arg3 : u32<name = "m">
// CHECK-SAME: tmap0 : tmap<arg = 0, dtype = bf16, shape = [?, 512], box = [128, 64], boxes = 1, major = k, axes = [0, 1]>
// CHECK-SAME: launch<grid = 0, smem = {{[0-9]+}}, persistent = true, grid_function = "lin_launch">
// CHECK: hopper.tensormap_param tmap0 : !hopper.tensormap<?x512xbf16, box 128x64, swizzle 128>
// CHECK: hopper.array_param arg0 : memref<?x512xbf16>
// CHECK: %[[M:.*]] = hopper.extent_param arg3 : index
// CHECK: arith.ceildivui %[[M]], %{{.*}} : index
// CHECK: func.func @lin_launch(%m: index {sched.extent = "m"}) -> (index, index, index)
// PTX: .visible .entry lin(
// PTX: .param .u32 arg3,
// PTX: ld.param.u32 %{{.*}}, [arg3];
func.func @lin(%a: tensor<?x512xbf16>, %w: tensor<64x512xbf16>) -> tensor<?x64xf32> attributes {sched.params = #sched.params<split_k = 1>} {
  %0 = fusion.linear %a, %w : (tensor<?x512xbf16>, tensor<64x512xbf16>) -> tensor<?x64xf32>
  func.return %0 : tensor<?x64xf32>
}

// -----

// Split-K at a runtime M: the workspaces' `?` is the CTA tiles, which the prologue computes
// with the launch function's arithmetic (its second result) to address the partial tiles.
// CHECK-LABEL: hopper.kernel @splitk(
// CHECK-SAME: arg3 : ptr<role = workspace, name = "partials0", shape = [2, ?, 128, 64], dtype = f32, extents = "cta_tiles">
// CHECK-SAME: arg4 : ptr<role = workspace, name = "arrivals", shape = [?], dtype = i32, extents = "cta_tiles">
// CHECK-SAME: arg5 : u32<name = "m">
// CHECK: hopper.array_param arg3 : memref<2x?x128x64xf32>
// CHECK: %[[M:.*]] = hopper.extent_param arg5 : index
// CHECK: arith.ceildivui %[[M]], %{{.*}} : index
// CHECK: func.func @splitk_launch
func.func @splitk(%a: tensor<?x512xbf16>, %w: tensor<64x512xbf16>) -> tensor<?x64xf32> attributes {sched.params = #sched.params<split_k = 2>} {
  %0 = fusion.linear %a, %w : (tensor<?x512xbf16>, tensor<64x512xbf16>) -> tensor<?x64xf32>
  func.return %0 : tensor<?x64xf32>
}

// -----

// A runtime K (a weight gradient over the tokens): dz[?, 200] is MN-major (m contiguous,
// K its rows); x[?, 1] (a linear of one input feature) has no row stride, so its runtime K
// is the contiguous axis of a K-major view of one row, [1, ?] (TMA zero-fills the other
// rows of the n tile).
// CHECK-LABEL: hopper.kernel @wgrad_one_feature(
// CHECK-SAME: arg3 : u32<name = "k">
// CHECK-SAME: tmap0 : tmap<arg = 0, dtype = bf16, shape = [?, 200], box = [64, 64], boxes = 2, major = mn, axes = [0, 1]>
// CHECK-SAME: tmap1 : tmap<arg = 1, dtype = bf16, shape = [1, ?], box = [64, 64], boxes = 1, major = k, axes = [-1, 0]>
// CHECK: hopper.tensormap_param tmap1 : !hopper.tensormap<1x?xbf16, box 64x64, swizzle 128>
// PTX: .visible .entry wgrad_one_feature(
func.func @wgrad_one_feature(%dz: tensor<?x200xbf16>, %x: tensor<?x1xbf16>) -> tensor<200x1xbf16> {
  %0 = fusion.broadcast %dz new_dims [false, false, true] : tensor<?x200xbf16> to tensor<?x200x1xbf16>
  %1 = fusion.broadcast %x new_dims [false, true, false] : tensor<?x1xbf16> to tensor<?x1x1xbf16>
  %2 = fusion.fused_multiply_sum %0, %1 axes [0] : (tensor<?x200x1xbf16>, tensor<?x1x1xbf16>) -> tensor<200x1xf32>
  %3 = fusion.cast %2 : tensor<200x1xf32> to tensor<200x1xbf16>
  func.return %3 : tensor<200x1xbf16>
}
