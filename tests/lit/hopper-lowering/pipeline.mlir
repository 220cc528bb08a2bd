// RUN: mmcomp-opt %s -p propagate-axis-mapping,tile-split,tile-merge,split-k,insert-persistent-loop,materialize-schedule,partition-warp-roles,lower-schedule-to-hopper,convert-hopper-to-ptx -t ptx | filecheck %s

// The whole pipeline, from a fusion with its schedule parameters to PTX text.
func.func @gelu_bias(%a: tensor<300x200xbf16>, %w: tensor<512x200xbf16>, %bias: tensor<512xbf16>) -> tensor<300x512xbf16> attributes {sched.params = #sched.params<tile = 128x128x64, stages = 4, epilogue = registers, swizzle = 2>} {
  %y = fusion.linear %a, %w, %bias : (tensor<300x200xbf16>, tensor<512x200xbf16>, tensor<512xbf16>) -> tensor<300x512xf32>
  %g = fusion.gelu %y approximate tanh : tensor<300x512xf32>
  %o = fusion.cast %g : tensor<300x512xf32> to tensor<300x512xbf16>
  func.return %o : tensor<300x512xbf16>
}
