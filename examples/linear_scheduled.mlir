// A linear fusion with its schedule parameters written on the function: the input of the
// whole pipeline from mmcomp-opt (the Python API chooses them with mmcomp.schedule.heuristics).
builtin.module {
  func.func @linear(%a: tensor<4096x5120xbf16>, %w: tensor<14336x5120xbf16>) -> tensor<4096x14336xbf16> attributes {sched.params = #sched.params<tile = 128x256x64, stages = 4, raster = m, swizzle = 16, epilogue = smem>} {
    %0 = fusion.linear %a, %w : (tensor<4096x5120xbf16>, tensor<14336x5120xbf16>) -> tensor<4096x14336xf32>
    %1 = fusion.cast %0 : tensor<4096x14336xf32> to tensor<4096x14336xbf16>
    func.return %1 : tensor<4096x14336xbf16>
  }
}
