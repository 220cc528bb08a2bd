// RUN: mmcomp-opt %s --split-input-file -p propagate-axis-mapping,choose-schedule | filecheck %s
// RUN: mmcomp-opt %s --split-input-file --verify-diagnostics -p choose-schedule | filecheck %s --check-prefix=ORDER
// A printed partial #sched.params keeps only its written keys, so a round trip first
// changes nothing:
// RUN: mmcomp-opt %s --split-input-file | mmcomp-opt --split-input-file -p propagate-axis-mapping,choose-schedule | filecheck %s

// The heuristic fills every parameter of a large lone GEMM: the CUTLASS-like 128x256x64
// tile, cooperative warp specialization, 3 stages (about 2 us of tensor-core work in
// flight) and the shared-memory epilogue.
// CHECK-LABEL: func.func @linear
// CHECK-SAME: sched.params = #sched.params<tile = 128x256x64, warpgroup = 64x256, instr = m64n256k16, stages = 3, cluster = 1x1, raster = m, swizzle = 8, strategy = persistent, split_k = 1, warp_specialization = cooperative, registers = 40/232, epilogue = smem>
// ORDER: choose-schedule: @linear: no 'fusion.space': run propagate-axis-mapping first
func.func @linear(%a: tensor<4096x5120xbf16>, %w: tensor<14336x5120xbf16>) -> tensor<4096x14336xbf16> {
  %0 = fusion.linear %a, %w : (tensor<4096x5120xbf16>, tensor<14336x5120xbf16>) -> tensor<4096x14336xf32>
  %1 = fusion.cast %0 : tensor<4096x14336xf32> to tensor<4096x14336xbf16>
  func.return %1 : tensor<4096x14336xbf16>
}

// -----

// Keys already written are kept; the rest are chosen around them (a 128x128 tile leaves
// room for more stages; 64 tiles fill under half the SMs, so K is split in two, and the
// 128 units of one wave take the deepest ring that fits).
// CHECK-LABEL: func.func @written
// CHECK-SAME: sched.params = #sched.params<tile = 128x128x64, warpgroup = 64x128, instr = m64n128k16, stages = 7, cluster = 1x1, raster = n, swizzle = 2,
// CHECK-SAME: split_k = 2, warp_specialization = cooperative, registers = 40/232, epilogue = registers>
// ORDER: choose-schedule: @written: no 'fusion.space': run propagate-axis-mapping first
func.func @written(%a: tensor<1000x1000xbf16>, %w: tensor<1000x1000xbf16>) -> tensor<1000x1000xbf16> attributes {sched.params = #sched.params<tile = 128x128x64, raster = n, swizzle = 2, epilogue = registers>} {
  %0 = fusion.linear %a, %w : (tensor<1000x1000xbf16>, tensor<1000x1000xbf16>) -> tensor<1000x1000xf32>
  %1 = fusion.cast %0 : tensor<1000x1000xf32> to tensor<1000x1000xbf16>
  func.return %1 : tensor<1000x1000xbf16>
}

// -----

// Ping-pong alone: the tile is not written, so the heuristic picks it as for
// `mmcomp.compile(f, warp_specialization="pingpong")`: 64 rows (each consumer takes a whole
// tile), and the widest n whose tiles still reach the SMs.
// CHECK-LABEL: func.func @pingpong
// CHECK-SAME: sched.params = #sched.params<tile = 64x64x64, warpgroup = 64x64, instr = m64n64k16, stages = 8, cluster = 1x1, raster = n, swizzle = 16, strategy = persistent, split_k = 1, warp_specialization = pingpong, registers = 40/232, epilogue = smem>
// ORDER: choose-schedule: @pingpong: no 'fusion.space': run propagate-axis-mapping first
func.func @pingpong(%a: tensor<1000x512xbf16>, %w: tensor<1000x512xbf16>) -> tensor<1000x1000xbf16> attributes {sched.params = #sched.params<warp_specialization = pingpong>} {
  %0 = fusion.linear %a, %w : (tensor<1000x512xbf16>, tensor<1000x512xbf16>) -> tensor<1000x1000xf32>
  %1 = fusion.cast %0 : tensor<1000x1000xf32> to tensor<1000x1000xbf16>
  func.return %1 : tensor<1000x1000xbf16>
}

// -----

// Ping-pong with the register epilogue written: both kept, the tile still chosen. This
// problem fills the SMs with 128x128 tiles, so each consumer takes two m64 blocks and the
// CTAs pair up in 2x1 clusters that multicast B (ping-pong is L2-bound alone).
// CHECK-LABEL: func.func @pingpong_registers
// CHECK-SAME: sched.params = #sched.params<tile = 128x128x64, warpgroup = 128x128, instr = m64n128k16, stages = 6, cluster = 2x1, raster = m, swizzle = 16, strategy = persistent, split_k = 1, warp_specialization = pingpong, registers = 40/232, epilogue = registers>
// ORDER: choose-schedule: @pingpong_registers: no 'fusion.space': run propagate-axis-mapping first
func.func @pingpong_registers(%a: tensor<4096x5120xbf16>, %w: tensor<14336x5120xbf16>) -> tensor<4096x14336xbf16> attributes {sched.params = #sched.params<warp_specialization = pingpong, epilogue = registers>} {
  %0 = fusion.linear %a, %w : (tensor<4096x5120xbf16>, tensor<14336x5120xbf16>) -> tensor<4096x14336xf32>
  %1 = fusion.cast %0 : tensor<4096x14336xf32> to tensor<4096x14336xbf16>
  func.return %1 : tensor<4096x14336xbf16>
}

// -----

// A written key is kept even when it holds the default value: the heuristic would take a
// 128x128 tile for this problem (128x256 tiles fill only 32 SMs), but 128x256x64 is
// written.
// CHECK-LABEL: func.func @written_default
// CHECK-SAME: sched.params = #sched.params<tile = 128x256x64, warpgroup = 64x256, instr = m64n256k16,
// ORDER: choose-schedule: @written_default: no 'fusion.space': run propagate-axis-mapping first
func.func @written_default(%a: tensor<1000x1000xbf16>, %w: tensor<1000x1000xbf16>) -> tensor<1000x1000xbf16> attributes {sched.params = #sched.params<tile = 128x256x64>} {
  %0 = fusion.linear %a, %w : (tensor<1000x1000xbf16>, tensor<1000x1000xbf16>) -> tensor<1000x1000xf32>
  %1 = fusion.cast %0 : tensor<1000x1000xf32> to tensor<1000x1000xbf16>
  func.return %1 : tensor<1000x1000xbf16>
}
