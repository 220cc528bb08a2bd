// RUN: mmcomp-opt %s | filecheck %s
// RUN: mmcomp-opt %s | mmcomp-opt | filecheck %s

// The params attribute round-trips; keys left out take their defaults, and warpgroup and
// instr are derived from the tile.

// CHECK-LABEL: func.func @full
// CHECK-SAME: sched.params = #sched.params<tile = 128x256x64, warpgroup = 64x256, instr = m64n256k16, stages = 4, cluster = 1x1, raster = m, swizzle = 8, strategy = persistent, split_k = 1, warp_specialization = cooperative, registers = 40/232, epilogue = smem>
func.func @full() attributes {sched.params = #sched.params<tile = 128x256x64, warpgroup = 64x256, instr = m64n256k16, stages = 4, cluster = 1x1, raster = m, swizzle = 8, strategy = persistent, split_k = 1, warp_specialization = cooperative, registers = 40/232, epilogue = smem>} {
  func.return
}

// CHECK-LABEL: func.func @defaults
// CHECK-SAME: #sched.params<tile = 128x256x64, warpgroup = 64x256, instr = m64n256k16, stages = 4, cluster = 1x1, raster = m, swizzle = 8, strategy = persistent, split_k = 1, warp_specialization = cooperative, registers = 40/232, epilogue = smem>
func.func @defaults() attributes {sched.params = #sched.params<>} {
  func.return
}

// CHECK-LABEL: func.func @small_tile
// CHECK-SAME: #sched.params<tile = 128x128x64, warpgroup = 64x128, instr = m64n128k16, stages = 6, cluster = 2x1, raster = n, swizzle = 1, strategy = one-tile-per-cta, split_k = 3, warp_specialization = cooperative, registers = 40/232, epilogue = registers>
func.func @small_tile() attributes {sched.params = #sched.params<epilogue = registers, tile = 128x128x64, stages = 6, cluster = 2x1, raster = n, swizzle = 1, strategy = one-tile-per-cta, split_k = 3>} {
  func.return
}

// CHECK-LABEL: func.func @pingpong
// CHECK-SAME: #sched.params<tile = 64x256x64, warpgroup = 64x256, instr = m64n256k16, {{.*}} warp_specialization = pingpong, registers = 40/232
func.func @pingpong() attributes {sched.params = #sched.params<tile = 64x256x64, warp_specialization = pingpong>} {
  func.return
}

// CHECK-LABEL: func.func @none
// CHECK-SAME: #sched.params<tile = 64x64x64, warpgroup = 64x64, instr = m64n64k16, {{.*}} warp_specialization = none, registers = 248/248, epilogue = registers>
func.func @none() attributes {sched.params = #sched.params<tile = 64x64x64, warp_specialization = none, registers = 248/248, epilogue = registers>} {
  func.return
}
