// RUN: mmcomp-opt %s --verify-diagnostics --split-input-file | filecheck %s

// A sched.schedule checks its params against the function it schedules: the operands each
// stage loads, the K blocks, the tile counts.

// Shared memory over the limit: 256x128x64 with 5 stages.
func.func @smem(%a: tensor<4096x4096xbf16>, %w: tensor<4096x4096xbf16>) -> tensor<4096x4096xf32> attributes {fusion.space = #fusion.space<m = 4096, n = 4096, k = 4096>} {
  sched.schedule params #sched.params<tile = 256x128x64, stages = 5, epilogue = registers> {
    %m, %n, %k = sched.space m = 4096, n = 4096, k = 4096
  }
  %y = fusion.mma %a [m, k], %w [n, k] -> [m, n] : (tensor<4096x4096xbf16>, tensor<4096x4096xbf16>) -> tensor<4096x4096xf32>
  func.return %y : tensor<4096x4096xf32>
}
// CHECK: sched.schedule: tile 256x128x64 with 5 stages needs 246880 bytes of shared memory (a 163840, b 81920, barriers 96, alignment 1024); the device allows 232448

// -----

// A horizontal fusion loads two B tiles per stage: 128x256x64 with 4 stages no longer fits.
func.func @horizontal(%a: tensor<512x512xbf16>, %w1: tensor<1024x512xbf16>, %w2: tensor<1024x512xbf16>) -> tensor<512x1024xbf16> attributes {fusion.space = #fusion.space<m = 512, n = 1024, k = 512>} {
  sched.schedule params #sched.params<tile = 128x256x64, stages = 4> {
    %m, %n, %k = sched.space m = 512, n = 1024, k = 512
  }
  %y1 = fusion.mma %a [m, k], %w1 [n, k] -> [m, n] : (tensor<512x512xbf16>, tensor<1024x512xbf16>) -> tensor<512x1024xf32>
  %y2 = fusion.mma %a [m, k], %w2 [n, k] -> [m, n] : (tensor<512x512xbf16>, tensor<1024x512xbf16>) -> tensor<512x1024xf32>
  %p = fusion.mul %y1, %y2 : tensor<512x1024xf32>
  %o = fusion.cast %p : tensor<512x1024xf32> to tensor<512x1024xbf16>
  func.return %o : tensor<512x1024xbf16>
}
// CHECK: sched.schedule: tile 128x256x64 with 4 stages for 1 A and 2 B operand tiles needs 362496 bytes of shared memory (a 65536, b 262144, barriers 80, epilogue 32768, alignment 1968); the device allows 232448

// -----

// Split-K larger than the number of K blocks.
func.func @split_k(%a: tensor<300x200xbf16>, %w: tensor<500x200xbf16>) -> tensor<300x500xf32> attributes {fusion.space = #fusion.space<m = 300, n = 500, k = 200>} {
  sched.schedule params #sched.params<tile = 128x128x64, split_k = 5> {
    %m, %n, %k = sched.space m = 300, n = 500, k = 200
  }
  %y = fusion.mma %a [m, k], %w [n, k] -> [m, n] : (tensor<300x200xbf16>, tensor<500x200xbf16>) -> tensor<300x500xf32>
  func.return %y : tensor<300x500xf32>
}
// CHECK: sched.schedule: split_k = 5 is larger than the 4 K blocks of k = 200 with tile k = 64

// -----

// A cluster wider than the tile grid.
func.func @cluster(%a: tensor<1x200xbf16>, %w: tensor<500x200xbf16>) -> tensor<1x500xf32> attributes {fusion.space = #fusion.space<m = 1, n = 500, k = 200>} {
  sched.schedule params #sched.params<tile = 128x128x64, cluster = 2x1> {
    %m, %n, %k = sched.space m = 1, n = 500, k = 200
  }
  %y = fusion.mma %a [m, k], %w [n, k] -> [m, n] : (tensor<1x200xbf16>, tensor<500x200xbf16>) -> tensor<1x500xf32>
  func.return %y : tensor<1x500xf32>
}
// CHECK: sched.schedule: cluster 2x1: 2 CTAs along m but the problem has only 1 tiles along m

// -----

// f32 inputs need wgmma k = 8 (tf32), not 16.
func.func @tf32(%a: tensor<64x64xf32>, %w: tensor<64x64xf32>) -> tensor<64x64xf32> attributes {fusion.space = #fusion.space<m = 64, n = 64, k = 64>} {
  sched.schedule params #sched.params<tile = 64x64x32> {
    %m, %n, %k = sched.space m = 64, n = 64, k = 64
  }
  %y = fusion.mma %a [m, k], %w [n, k] -> [m, n] : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  func.return %y : tensor<64x64xf32>
}
// CHECK: sched.schedule: instr m64n32k16: inputs of 4 bytes need wgmma k = 8

// -----

func.func @split_extents() {
  sched.schedule params #sched.params<> {
    %m = sched.space m = 300
    %o, %i = "sched.split"(%m) <{factor = #builtin.int<128>}> : (!sched.axis<300>) -> (!sched.axis<2>, !sched.axis<128>)
  }
  func.return
}
// CHECK: sched.split of an axis of 300 by 128: expected outer x inner 3 x 128, found 2 x 128

// -----

func.func @parallelize() {
  sched.schedule params #sched.params<> {
    %m = sched.space m = 300
    "sched.parallelize"(%m) <{to = "thread"}> : (!sched.axis<300>) -> ()
  }
  func.return
}
// CHECK: sched.parallelize to 'thread': expected one of block_x, block_y, block_z, warpgroup, instruction, serial

// -----

func.func @mma_extents(%a: tensor<128x64xbf16>, %b: tensor<64x32xbf16>, %acc: tensor<128x128xf32>) -> tensor<128x128xf32> {
  %r = sched.mma %a [m, k], %b [k, n], %acc [m, n] : tensor<128x64xbf16>, tensor<64x32xbf16>, tensor<128x128xf32>
  func.return %r : tensor<128x128xf32>
}
// CHECK: sched.mma operand 'acc': axis n has extent 128, expected 32

// -----

func.func @load_rank(%a: memref<300x200xbf16>, %i: index) -> tensor<128x64xbf16> {
  %t = sched.load_tile %a[%i] : memref<300x200xbf16> -> tensor<128x64xbf16>
  func.return %t : tensor<128x64xbf16>
}
// CHECK: sched.load_tile: memref memref<300x200xbf16> has rank 2, tile tensor<128x64xbf16> rank 2, with 1 indices; all three must agree

// -----

func.func @store_dtype(%t: tensor<128x64xf32>, %c: memref<300x200xbf16>, %i: index) {
  sched.store_tile %t, %c[%i, %i] : tensor<128x64xf32>, memref<300x200xbf16>
  func.return
}
// CHECK: sched.store_tile: tile element type f32 differs from the memref's bf16

// -----

func.func @workspace(%t: tensor<128x128xf32>, %ws: memref<2x12x64x128xf32>, %i: index) {
  sched.store_partial %t, %ws[%i, %i] : tensor<128x128xf32>, memref<2x12x64x128xf32>
  func.return
}
// CHECK: sched.store_partial: workspace memref<2x12x64x128xf32> must be [2 leading dims] x the tile shape 128x128, with one index per leading dim (2 given)
