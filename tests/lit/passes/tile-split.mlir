// RUN: mmcomp-opt %s -p tile-split --split-input-file | filecheck %s

// linear + bias after propagate-axis-mapping, with the params on the function: tile-split
// moves the params into a sched.schedule and splits m, n, k by the CTA tile, the warpgroup
// tile and the wgmma instruction.
func.func @lin(%a: tensor<300x200xbf16> {fusion.roles = #fusion.roles<[m, k]>},
               %w: tensor<500x200xbf16> {fusion.roles = #fusion.roles<[n, k]>},
               %bias: tensor<500xf32> {fusion.roles = #fusion.roles<[n]>}) -> tensor<300x500xf32>
    attributes {fusion.space = #fusion.space<m = 300, n = 500, k = 200>,
                sched.params = #sched.params<tile = 128x128x64, swizzle = 2>} {
  %y = fusion.mma %a [m, k], %w [n, k] -> [m, n] {fusion.roles = #fusion.roles<[m, n]>} : (tensor<300x200xbf16>, tensor<500x200xbf16>) -> tensor<300x500xf32>
  %b = fusion.broadcast %bias new_dims [true, false] {fusion.roles = #fusion.roles<[m, n]>} : tensor<500xf32> to tensor<300x500xf32>
  %o = fusion.add %y, %b {fusion.roles = #fusion.roles<[m, n]>} : tensor<300x500xf32>
  func.return %o : tensor<300x500xf32>
}
// CHECK-LABEL: func.func @lin
// CHECK-SAME: attributes {fusion.space = #fusion.space<m = 300, n = 500, k = 200>} {
// CHECK-NEXT: sched.schedule params #sched.params<tile = 128x128x64, warpgroup = 64x128, instr = m64n128k16, {{.*}} swizzle = 2, {{.*}}> {
// CHECK-NEXT:   %m, %n, %k = sched.space m = 300, n = 500, k = 200
// CHECK-NEXT:   %m_tile, %m_cta = sched.split %m by 128 : !sched.axis<300>
// CHECK-NEXT:   %m_wg, %m_wgi = sched.split %m_cta by 64 : !sched.axis<128>
// CHECK-NEXT:   %m_instr, %m_lane = sched.split %m_wgi by 64 : !sched.axis<64>
// CHECK-NEXT:   %n_tile, %n_cta = sched.split %n by 128 : !sched.axis<500>
// CHECK-NEXT:   %n_wg, %n_wgi = sched.split %n_cta by 128 : !sched.axis<128>
// CHECK-NEXT:   %n_instr, %n_lane = sched.split %n_wgi by 128 : !sched.axis<128>
// CHECK-NEXT:   %k_blk, %k_cta = sched.split %k by 64 : !sched.axis<200>
// CHECK-NEXT:   %k_instr, %k_lane = sched.split %k_cta by 16 : !sched.axis<64>
// CHECK-NEXT:   sched.parallelize %m_wg to warpgroup : !sched.axis<2>
// CHECK-NEXT:   sched.parallelize %n_wg to warpgroup : !sched.axis<1>
// CHECK-NEXT:   sched.parallelize %m_lane to instruction : !sched.axis<64>
// CHECK-NEXT:   sched.parallelize %n_lane to instruction : !sched.axis<128>
// CHECK-NEXT:   sched.parallelize %k_lane to instruction : !sched.axis<16>
// CHECK-NEXT:   sched.parallelize %k_blk to serial : !sched.axis<4>
// CHECK-NEXT:   sched.parallelize %k_instr to serial : !sched.axis<4>
// CHECK-NEXT:   sched.parallelize %m_instr to serial : !sched.axis<1>
// CHECK-NEXT:   sched.parallelize %n_instr to serial : !sched.axis<1>
// CHECK-NEXT:   sched.reorder %k_blk, %k_instr, %m_instr, %n_instr : !sched.axis<4>, !sched.axis<4>, !sched.axis<1>, !sched.axis<1>
// CHECK-NEXT: }
// CHECK-NEXT: %y = fusion.mma %a [m, k], %w [n, k] -> [m, n]

// -----

// A batched matmul: batch axes stay whole (one batch index per tile); a function without
// params is left alone.
func.func @bmm(%a: tensor<4x100x70xf16> {fusion.roles = #fusion.roles<[b0, m, k]>},
               %b: tensor<4x70x90xf16> {fusion.roles = #fusion.roles<[b0, k, n]>}) -> tensor<4x100x90xf32>
    attributes {fusion.space = #fusion.space<b0 = 4, m = 100, n = 90, k = 70>,
                sched.params = #sched.params<tile = 64x64x32>} {
  %c = fusion.mma %a [b0, m, k], %b [b0, k, n] -> [b0, m, n] {fusion.roles = #fusion.roles<[b0, m, n]>} : (tensor<4x100x70xf16>, tensor<4x70x90xf16>) -> tensor<4x100x90xf32>
  func.return %c : tensor<4x100x90xf32>
}
func.func @unscheduled(%x: tensor<4xf32>) -> tensor<4xf32> {
  func.return %x : tensor<4xf32>
}
// CHECK-LABEL: func.func @bmm
// CHECK:      %b0, %m, %n, %k = sched.space b0 = 4, m = 100, n = 90, k = 70
// CHECK-NEXT: %m_tile, %m_cta = sched.split %m by 64 : !sched.axis<100>
// CHECK:      %n_tile, %n_cta = sched.split %n by 64 : !sched.axis<90>
// CHECK:      %k_blk, %k_cta = sched.split %k by 32 : !sched.axis<70>
// CHECK-LABEL: func.func @unscheduled
// CHECK-NEXT: func.return %x
