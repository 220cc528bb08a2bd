// RUN: mmcomp-opt %s --parsing-diagnostics --split-input-file | filecheck %s

// Each value of #sched.params is checked on its own and against the others; the error
// names the value and the limit it breaks.

// A tile not divisible by the instruction shape.
func.func @tile_k() attributes {sched.params = #sched.params<tile = 128x128x40>} {
  func.return
}
// CHECK: tile 128x128x40 with warpgroup tile 64x128 is not divisible by the instruction shape m64n128k16

// -----

// wgmma N must be a multiple of 8 up to 256.
func.func @instr_n() attributes {sched.params = #sched.params<tile = 128x100x64>} {
  func.return
}
// CHECK: instr m64n100k16: wgmma n must be a multiple of 8 from 8 to 256

// -----

// wgmma M is 64.
func.func @instr_m() attributes {sched.params = #sched.params<instr = m128n256k16>} {
  func.return
}
// CHECK: instr m128n256k16: wgmma has m = 64

// -----

// A tile extent over the TMA box limit.
func.func @tma_box() attributes {sched.params = #sched.params<tile = 128x512x64, warpgroup = 64x256>} {
  func.return
}
// CHECK: tile 128x512x64: n = 512 exceeds the TMA box limit of 256

// -----

// Fewer than 2 stages.
func.func @stages() attributes {sched.params = #sched.params<stages = 1>} {
  func.return
}
// CHECK: stages = 1: the TMA/wgmma pipeline needs at least 2 stages

// -----

// A swizzle group below 1.
func.func @swizzle() attributes {sched.params = #sched.params<swizzle = 0>} {
  func.return
}
// CHECK: swizzle = 0: the group size must be at least 1

// -----

// A swizzle group wider than one wave of the SMs.
func.func @swizzle_wide() attributes {sched.params = #sched.params<swizzle = 133>} {
  func.return
}
// CHECK: swizzle = 133: the group size must be at most 132, the SMs of one wave (a wider group loads as many tiles per wave as swizzle = 1)

// -----

// A cluster over the portable limit.
func.func @cluster() attributes {sched.params = #sched.params<cluster = 4x4>} {
  func.return
}
// CHECK: cluster 4x4 has 16 CTAs; the portable limit is 8

// -----

// A register count that setmaxnreg cannot take.
func.func @registers_step() attributes {sched.params = #sched.params<registers = 40/230>} {
  func.return
}
// CHECK: registers 40/230: the consumer count 230 must be a multiple of 8 from 24 to 256 (setmaxnreg)

// -----

// Registers over the SM's budget.
func.func @registers_budget() attributes {sched.params = #sched.params<registers = 64/256>} {
  func.return
}
// CHECK: registers 64/256: (64 + 2 x 256) registers x 128 threads = 73728, over the 65536 registers of an SM

// -----

// Ping-pong gives one warpgroup the whole 128x256 tile: too many accumulators.
func.func @pingpong() attributes {sched.params = #sched.params<tile = 128x256x64, warp_specialization = pingpong>} {
  func.return
}
// CHECK: warpgroup tile 128x256 needs 256 f32 accumulator registers per thread; 232 consumer registers leave 168 after 64 for addresses and the epilogue (pingpong: use cooperative or a smaller tile)

// -----

// The written keys must be valid with the fill of those left out, or with a tile that
// choose-schedule may choose instead: 88 consumer registers leave 24 for accumulators,
// fewer than any ping-pong tile has (32 at 64x64), so the fill's error is reported.
// (With 40/176 a 64x128 tile fits, and the params are valid.)
func.func @pingpong_fill() attributes {sched.params = #sched.params<warp_specialization = pingpong, registers = 40/88>} {
  func.return
}
// CHECK: warpgroup tile 64x256 needs 128 f32 accumulator registers per thread; 88 consumer registers leave 24 after 64 for addresses and the epilogue (pingpong: use cooperative or a smaller tile)

// -----

// Unknown names.
func.func @strategy() attributes {sched.params = #sched.params<strategy = stream-j>} {
  func.return
}
// CHECK: unknown strategy "stream-j"; expected one of "one-tile-per-cta", "persistent", "stream-k", "hybrid-stream-k"

// -----

// Stream-K splits the K blocks itself, and runs without clusters.
func.func @stream_k_split() attributes {sched.params = #sched.params<strategy = stream-k, split_k = 2>} {
  func.return
}
// CHECK: strategy stream-k with split_k = 2: stream-K splits the K blocks itself; split_k must be 1

// -----

func.func @stream_k_cluster() attributes {sched.params = #sched.params<strategy = hybrid-stream-k, cluster = 2x1>} {
  func.return
}
// CHECK: strategy hybrid-stream-k with cluster 2x1: the CTAs of a cluster would need the same K blocks; stream-K runs with cluster 1x1

// -----

func.func @raster() attributes {sched.params = #sched.params<raster = diagonal>} {
  func.return
}
// CHECK: unknown raster "diagonal"; expected one of "m", "n", "auto"

// -----

func.func @epilogue() attributes {sched.params = #sched.params<epilogue = tma>} {
  func.return
}
// CHECK: unknown epilogue "tma"; expected one of "registers", "smem"

// -----

func.func @key() attributes {sched.params = #sched.params<tiles = 128x128x64>} {
  func.return
}
// CHECK: unknown schedule parameter 'tiles'; expected one of tile, warpgroup, instr, stages, cluster, raster, swizzle, strategy, split_k, warp_specialization, registers, epilogue

// -----

func.func @shape() attributes {sched.params = #sched.params<tile = 128x128>} {
  func.return
}
// CHECK: tile: expected 3 extents separated by 'x', found 128x128

// -----

func.func @twice() attributes {sched.params = #sched.params<stages = 3, stages = 4>} {
  func.return
}
// CHECK: schedule parameter 'stages' given twice
