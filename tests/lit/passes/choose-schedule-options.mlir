// The options of choose-schedule set parameters as mmcomp.compile's keywords do: they win
// over the keys a #sched.params already on the function writes, and the heuristic chooses
// the rest around them. Shapes are written MxNxK or as integer lists.
// RUN: mmcomp-opt %s --split-input-file -p 'propagate-axis-mapping,choose-schedule{tile=128x128x64 stages=4 registers=24,240 split-k=2 warp-specialization=pingpong}' | filecheck %s
// RUN: mmcomp-opt %s --split-input-file -p 'propagate-axis-mapping,choose-schedule{tile=64,128,64 cluster=2x1 raster=n swizzle=4 epilogue=registers registers="40/232"}' | filecheck %s --check-prefix=LIST
// Bad options name the option and what it takes:
// RUN: not mmcomp-opt %s --split-input-file -p 'propagate-axis-mapping,choose-schedule{tile=128}' 2>&1 | filecheck %s --check-prefix=SHORT
// RUN: not mmcomp-opt %s --split-input-file -p 'propagate-axis-mapping,choose-schedule{tile=axbxc}' 2>&1 | filecheck %s --check-prefix=WORDS
// RUN: not mmcomp-opt %s --split-input-file -p 'propagate-axis-mapping,choose-schedule{raster=q}' 2>&1 | filecheck %s --check-prefix=CHOICE
// RUN: not mmcomp-opt %s --split-input-file -p 'propagate-axis-mapping,choose-schedule{tile=96x128x64}' 2>&1 | filecheck %s --check-prefix=INVALID

// CHECK-LABEL: func.func @linear
// CHECK-SAME: sched.params = #sched.params<tile = 128x128x64, warpgroup = 128x128, instr = m64n128k16, stages = 4, cluster = 1x1, raster = n, swizzle = {{[0-9]+}}, strategy = persistent, split_k = 2, warp_specialization = pingpong, registers = 24/240, epilogue = smem>
// LIST-LABEL: func.func @linear
// LIST-SAME: sched.params = #sched.params<tile = 64x128x64, warpgroup = 64x64, instr = m64n64k16, stages = 6, cluster = 2x1, raster = n, swizzle = 4, strategy = persistent, split_k = {{[0-9]+}}, warp_specialization = cooperative, registers = 40/232, epilogue = registers>
// SHORT: choose-schedule: option tile=128: expected 3 integers, written NxNxN or N,N,N
// WORDS: choose-schedule: option tile=axbxc: expected 3 integers, written NxNxN or N,N,N
// CHOICE: choose-schedule: option raster='q': expected one of "m", "n", "auto"
// INVALID: choose-schedule: @linear: tile 96x128x64
func.func @linear(%a: tensor<4096x5120xbf16>, %w: tensor<14336x5120xbf16>) -> tensor<4096x14336xbf16> attributes {sched.params = #sched.params<stages = 6, raster = n>} {
  %0 = fusion.linear %a, %w : (tensor<4096x5120xbf16>, tensor<14336x5120xbf16>) -> tensor<4096x14336xf32>
  %1 = fusion.cast %0 : tensor<4096x14336xf32> to tensor<4096x14336xbf16>
  func.return %1 : tensor<4096x14336xbf16>
}
