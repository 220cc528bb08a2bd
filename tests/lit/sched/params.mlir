// RUN: mmcomp-opt %s | filecheck %s
// RUN: mmcomp-opt %s | mmcomp-opt | filecheck %s

// The params attribute round-trips. An attribute written with every key prints in full;
// one that leaves keys out prints the keys it wrote (in the canonical order), so that
// choose-schedule still chooses the others after a round trip. sched.schedule fixes every
// key: the keys left out take their fill (the defaults, a 64-row tile under ping-pong,
// warpgroup and instr derived from the tile).

// CHECK-LABEL: func.func @full
// CHECK-SAME: sched.params = #sched.params<tile = 128x256x64, warpgroup = 64x256, instr = m64n256k16, stages = 4, cluster = 1x1, raster = m, swizzle = 8, strategy = persistent, split_k = 1, warp_specialization = cooperative, registers = 40/232, epilogue = smem>
func.func @full() attributes {sched.params = #sched.params<tile = 128x256x64, warpgroup = 64x256, instr = m64n256k16, stages = 4, cluster = 1x1, raster = m, swizzle = 8, strategy = persistent, split_k = 1, warp_specialization = cooperative, registers = 40/232, epilogue = smem>} {
  func.return
}

// CHECK-LABEL: func.func @defaults
// CHECK-SAME: attributes {sched.params = #sched.params<>}
// CHECK-NEXT: sched.schedule params #sched.params<tile = 128x256x64, warpgroup = 64x256, instr = m64n256k16, stages = 4, cluster = 1x1, raster = m, swizzle = 8, strategy = persistent, split_k = 1, warp_specialization = cooperative, registers = 40/232, epilogue = smem> {
func.func @defaults() attributes {sched.params = #sched.params<>} {
  sched.schedule params #sched.params<> {
  }
  func.return
}

// CHECK-LABEL: func.func @small_tile
// CHECK-SAME: #sched.params<tile = 128x128x64, stages = 6, cluster = 2x1, raster = n, swizzle = 1, strategy = one-tile-per-cta, split_k = 3, epilogue = registers>}
// CHECK-NEXT: sched.schedule params #sched.params<tile = 128x128x64, warpgroup = 64x128, instr = m64n128k16, stages = 6, cluster = 2x1, raster = n, swizzle = 1, strategy = one-tile-per-cta, split_k = 3, warp_specialization = cooperative, registers = 40/232, epilogue = registers> {
func.func @small_tile() attributes {sched.params = #sched.params<epilogue = registers, tile = 128x128x64, stages = 6, cluster = 2x1, raster = n, swizzle = 1, strategy = one-tile-per-cta, split_k = 3>} {
  sched.schedule params #sched.params<epilogue = registers, tile = 128x128x64, stages = 6, cluster = 2x1, raster = n, swizzle = 1, strategy = one-tile-per-cta, split_k = 3> {
  }
  func.return
}

// CHECK-LABEL: func.func @pingpong
// CHECK-SAME: #sched.params<tile = 64x256x64, warp_specialization = pingpong>}
// CHECK-NEXT: sched.schedule params #sched.params<tile = 64x256x64, warpgroup = 64x256, instr = m64n256k16, {{.*}} warp_specialization = pingpong, registers = 40/232
func.func @pingpong() attributes {sched.params = #sched.params<tile = 64x256x64, warp_specialization = pingpong>} {
  sched.schedule params #sched.params<tile = 64x256x64, warp_specialization = pingpong> {
  }
  func.return
}

// Ping-pong alone: the tile left out is filled with 64 rows (one wgmma's rows for each
// consumer), which fits the accumulators; choose-schedule picks the real tile later.
// CHECK-LABEL: func.func @pingpong_alone
// CHECK-SAME: attributes {sched.params = #sched.params<warp_specialization = pingpong>}
// CHECK-NEXT: sched.schedule params #sched.params<tile = 64x256x64, warpgroup = 64x256, instr = m64n256k16, stages = 4, cluster = 1x1, raster = m, swizzle = 8, strategy = persistent, split_k = 1, warp_specialization = pingpong, registers = 40/232, epilogue = smem> {
func.func @pingpong_alone() attributes {sched.params = #sched.params<warp_specialization = pingpong>} {
  sched.schedule params #sched.params<warp_specialization = pingpong> {
  }
  func.return
}

// CHECK-LABEL: func.func @pingpong_registers
// CHECK-SAME: attributes {sched.params = #sched.params<warp_specialization = pingpong, epilogue = registers>}
func.func @pingpong_registers() attributes {sched.params = #sched.params<epilogue = registers, warp_specialization = pingpong>} {
  func.return
}

// The largest swizzle group, one per SM.
// CHECK-LABEL: func.func @widest_swizzle
// CHECK-SAME: attributes {sched.params = #sched.params<swizzle = 132>}
func.func @widest_swizzle() attributes {sched.params = #sched.params<swizzle = 132>} {
  func.return
}

// CHECK-LABEL: func.func @none
// CHECK-SAME: #sched.params<tile = 64x64x64, warp_specialization = none, registers = 248/248, epilogue = registers>
// CHECK-NEXT: sched.schedule params #sched.params<tile = 64x64x64, warpgroup = 64x64, instr = m64n64k16, {{.*}} warp_specialization = none, registers = 248/248, epilogue = registers> {
func.func @none() attributes {sched.params = #sched.params<tile = 64x64x64, warp_specialization = none, registers = 248/248, epilogue = registers>} {
  sched.schedule params #sched.params<tile = 64x64x64, warp_specialization = none, registers = 248/248, epilogue = registers> {
  }
  func.return
}
