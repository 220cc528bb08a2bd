// RUN: mmcomp-opt %s --split-input-file --verify-diagnostics | filecheck %s

// Launch data that cannot describe a launch is refused, naming the parameter.

ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.entry @k(t : tmap<arg = 0, dtype = bf16, shape = [64, 64], box = [64], boxes = 1, major = k>) {
    ptx.ret
  }
}
// CHECK: #ptx.tensor_map of argument 0: box [64] and shape [64, 64] must have the same rank, 1 to 5

// -----

ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.entry @k(t : tmap<arg = 0, dtype = bf16, shape = [64, 64], box = [64, 64], boxes = 1, major = k, swizzle = 96>) {
    ptx.ret
  }
}
// CHECK: #ptx.tensor_map of argument 0: swizzle must be 0, 32, 64 or 128 bytes, found 96

// -----

ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.entry @k(a : ptr<role = scratch, name = "a", shape = [4], dtype = f32>) {
    ptx.ret
  }
}
// CHECK: #ptx.array 'a': role must be one of input, output, workspace, found 'scratch'

// -----

ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.entry @k(a : ptr) reqntid [128] launch<grid = 3, smem = 0, cluster = 2> {
    ptx.ret
  }
}
// CHECK: #ptx.launch: the grid (3) must be a positive multiple of the cluster (2)
