// RUN: mmcomp-opt %s --split-input-file | filecheck %s
// RUN: mmcomp-opt %s --split-input-file | mmcomp-opt --split-input-file | filecheck %s
// RUN: mmcomp-opt %s --split-input-file -t ptx | filecheck %s --check-prefix=PTX

// The launch data of an entry: each pointer parameter's array, each tensor map's view,
// box and swizzle, and the grid, cluster and shared memory. Keys at their default are
// left out when printed; the PTX text is that of the same entry without them.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @mmcomp_shared align 1024 dynamic
  ptx.entry @linear(arg0 : ptr<role = input, name = "a", shape = [1, 1000, 512], dtype = bf16>, arg1 : ptr<role = output, name = "out0", shape = [1000, 1000], dtype = f32>, arg2 : ptr<role = workspace, name = "partials", shape = [2, 8, 128, 128], dtype = f32>, tmap0 : tmap<arg = 0, dtype = bf16, shape = [1000, 512], box = [128, 64], boxes = 1, major = k, swizzle = 128, multicast = 2, row_pieces = 2, strides = [512, 1], axes = [-1, 1], pitch = 0>) maxnreg 168 reqntid [384] launch<grid = 132, smem = 99328, cluster = 2, persistent = true> {
    ptx.ret
  }
}
// CHECK: ptx.entry @linear(arg0 : ptr<role = input, name = "a", shape = [1, 1000, 512], dtype = bf16>, arg1 : ptr<role = output, name = "out0", shape = [1000, 1000], dtype = f32>, arg2 : ptr<role = workspace, name = "partials", shape = [2, 8, 128, 128], dtype = f32>, tmap0 : tmap<arg = 0, dtype = bf16, shape = [1000, 512], box = [128, 64], boxes = 1, major = k, multicast = 2, row_pieces = 2, strides = [512, 1], axes = [-1, 1]>) maxnreg 168 reqntid [384] launch<grid = 132, smem = 99328, cluster = 2, persistent = true> {
// PTX: .visible .entry linear(
// PTX-NEXT: .param .u64 arg0,
// PTX-NEXT: .param .u64 arg1,
// PTX-NEXT: .param .u64 arg2,
// PTX-NEXT: .param .align 128 .b8 tmap0[128]
// PTX-NEXT: )
// PTX-NEXT: .maxnreg 168
// PTX-NEXT: .reqntid 384

// -----

// Without launch data (hand-written ptx-dialect IR) the entry still prints as PTX; only
// loading it as a kernel (mmcomp.load_kernel) needs the data.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.entry @bare(a : ptr, n : u32) {
    ptx.ret
  }
}
// CHECK: ptx.entry @bare(a : ptr, n : u32) {
// PTX: .visible .entry bare(
