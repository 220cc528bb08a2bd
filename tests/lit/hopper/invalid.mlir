// RUN: mmcomp-opt %s --verify-diagnostics --split-input-file | filecheck %s

// The hopper verifiers: each error names the op, the operand and what was expected.

// A wgmma whose accumulator count does not match N/2.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 size 1024
  ptx.entry @k(t : tmap, d : b64) {
    %dr = ptx.ld_param d : !ptx.reg<b64>
    %d = builtin.unrealized_conversion_cast %dr : !ptx.reg<b64> to !hopper.matrix_descriptor<k_major, swizzle 128, mn 64, k 64>
    %f = ptx.const 0.0 : !ptx.reg<f32>
    %acc = hopper.accumulator %f, %f, %f, %f : !hopper.accumulator<64x8xf32>
    %next = hopper.wgmma_mma_async m64n16k16 bf16 %d, %d, %acc : (!hopper.matrix_descriptor<k_major, swizzle 128, mn 64, k 64>, !hopper.matrix_descriptor<k_major, swizzle 128, mn 64, k 64>, !hopper.accumulator<64x8xf32>) -> !hopper.accumulator<64x8xf32>
  }
}
// CHECK: hopper.wgmma_mma_async: m64n16k16 accumulates into a 64x16 tile, found !hopper.accumulator<64x8xf32>

// -----

// A wgmma whose result is not an accumulator of its operand's type.
hopper.kernel @k(d : b64) {
  %dr = ptx.ld_param d : !ptx.reg<b64>
  %d = builtin.unrealized_conversion_cast %dr : !ptx.reg<b64> to !hopper.matrix_descriptor<k_major, swizzle 128, mn 64, k 64>
  %acc = hopper.zero_accumulator : !hopper.accumulator<64x8xf32>
  %next = hopper.wgmma_mma_async m64n8k16 bf16 %d, %d, %acc : (!hopper.matrix_descriptor<k_major, swizzle 128, mn 64, k 64>, !hopper.matrix_descriptor<k_major, swizzle 128, mn 64, k 64>, !hopper.accumulator<64x8xf32>) -> !hopper.accumulator<64x16xf32>
}
// CHECK: hopper.wgmma_mma_async: the result must have the accumulator's type !hopper.accumulator<64x8xf32>, found !hopper.accumulator<64x16xf32>

// -----

// An element past this thread's n / 2 of an accumulator.
hopper.kernel @k() {
  %acc = hopper.zero_accumulator : !hopper.accumulator<64x8xf32>
  %e = hopper.accumulator_element %acc[4] : !hopper.accumulator<64x8xf32>
}
// CHECK: hopper.accumulator_element: index must be in [0, 4) for !hopper.accumulator<64x8xf32> (its elements per thread), found 4

// -----

// An accumulator held in fewer registers than its tile needs.
hopper.kernel @k() {
  %f = ptx.const 0.0 : !ptx.reg<f32>
  %acc = hopper.accumulator %f, %f, %f, %f : !hopper.accumulator<64x16xf32>
}
// CHECK: hopper.accumulator: !hopper.accumulator<64x16xf32> is held in 8 f32 registers per thread, found 4

// -----

// A wgmma N that is not a multiple of 8.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 size 1024
  ptx.entry @k(t : tmap, d : b64) {
    %dr = ptx.ld_param d : !ptx.reg<b64>
    %d = builtin.unrealized_conversion_cast %dr : !ptx.reg<b64> to !hopper.matrix_descriptor<k_major, swizzle 128, mn 64, k 64>
    %f = ptx.const 0.0 : !ptx.reg<f32>
    %acc = hopper.accumulator %f, %f, %f, %f : !hopper.accumulator<64x8xf32>
    %next = hopper.wgmma_mma_async m64n12k16 bf16 %d, %d, %acc : (!hopper.matrix_descriptor<k_major, swizzle 128, mn 64, k 64>, !hopper.matrix_descriptor<k_major, swizzle 128, mn 64, k 64>, !hopper.accumulator<64x8xf32>) -> !hopper.accumulator<64x8xf32>
  }
}
// CHECK: hopper.wgmma_mma_async: shape must be m64nNk16 with N a multiple of 8 in [8, 256], found 'm64n12k16'

// -----

// A wgmma on f32 inputs.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 size 1024
  ptx.entry @k(t : tmap, d : b64) {
    %dr = ptx.ld_param d : !ptx.reg<b64>
    %d = builtin.unrealized_conversion_cast %dr : !ptx.reg<b64> to !hopper.matrix_descriptor<k_major, swizzle 128, mn 64, k 64>
    %f = ptx.const 0.0 : !ptx.reg<f32>
    %acc = hopper.accumulator %f, %f, %f, %f : !hopper.accumulator<64x8xf32>
    %next = hopper.wgmma_mma_async m64n8k16 f32 %d, %d, %acc : (!hopper.matrix_descriptor<k_major, swizzle 128, mn 64, k 64>, !hopper.matrix_descriptor<k_major, swizzle 128, mn 64, k 64>, !hopper.accumulator<64x8xf32>) -> !hopper.accumulator<64x8xf32>
  }
}
// CHECK: hopper.wgmma_mma_async: dtype must be bf16, f16, f8e4m3 or f8e5m2, found 'f32'

// -----

// A wgmma accumulator that is not f32.
"test.op"() {type = !hopper.accumulator<64x8xf16>} : () -> ()
// CHECK: !hopper.accumulator: element type must be f32, found f16

// -----

// An accumulator of more rows than one wgmma's.
"test.op"() {type = !hopper.accumulator<128x8xf32>} : () -> ()
// CHECK: !hopper.accumulator: m must be 64, found 128

// -----

// A wgmma descriptor in a register (a descriptor is a !hopper.matrix_descriptor).
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.entry @k(d : b64) {
    %d = ptx.ld_param d : !ptx.reg<b64>
    %f = ptx.const 0.0 : !ptx.reg<f32>
    %acc = hopper.accumulator %f, %f, %f, %f : !hopper.accumulator<64x8xf32>
    %next = hopper.wgmma_mma_async m64n8k16 bf16 %d, %d, %acc : (!ptx.reg<b64>, !ptx.reg<b64>, !hopper.accumulator<64x8xf32>) -> !hopper.accumulator<64x8xf32>
  }
}
// CHECK: hopper.wgmma_mma_async: the A descriptor must be a !hopper.matrix_descriptor, found !ptx.reg<b64>

// -----

// A wgmma whose B operand's major-ness is not its descriptor's tile's.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 size 1024
  ptx.entry @k() {
    %s = ptx.addr_of smem : !ptx.reg<u32>
    %tile = builtin.unrealized_conversion_cast %s : !ptx.reg<u32> to !hopper.smem<align 1024>
    %a = hopper.matrix_descriptor %tile : (!hopper.smem<align 1024>) -> !hopper.matrix_descriptor<k_major, swizzle 128, mn 64, k 64>
    %acc = hopper.zero_accumulator : !hopper.accumulator<64x8xf32>
    %next = hopper.wgmma_mma_async m64n8k16 bf16 %a, %a, %acc {a_major = "k", b_major = "mn"} : (!hopper.matrix_descriptor<k_major, swizzle 128, mn 64, k 64>, !hopper.matrix_descriptor<k_major, swizzle 128, mn 64, k 64>, !hopper.accumulator<64x8xf32>) -> !hopper.accumulator<64x8xf32>
  }
}
// CHECK: hopper.wgmma_mma_async: b_major is 'mn' but the B descriptor's tile is k_major

// -----

// A descriptor of a tile at a register address (the base is an !hopper.smem).
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 size 1024
  ptx.entry @k() {
    %s = ptx.addr_of smem : !ptx.reg<u32>
    %a = hopper.matrix_descriptor %s : (!ptx.reg<u32>) -> !hopper.matrix_descriptor<k_major, swizzle 128, mn 64, k 64>
  }
}
// CHECK: hopper.matrix_descriptor: the tile base must be an !hopper.smem shared address, found !ptx.reg<u32>

// -----

// A descriptor whose result is a register (a descriptor is a !hopper.matrix_descriptor).
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 size 1024
  ptx.entry @k() {
    %s = ptx.addr_of smem : !ptx.reg<u32>
    %tile = builtin.unrealized_conversion_cast %s : !ptx.reg<u32> to !hopper.smem<align 1024>
    %a = hopper.matrix_descriptor %tile : (!hopper.smem<align 1024>) -> !ptx.reg<b64>
  }
}
// CHECK: hopper.matrix_descriptor: the result must be a !hopper.matrix_descriptor, found !ptx.reg<b64>

// -----

// A descriptor whose K offset is not a whole k16 step.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 size 1024
  ptx.entry @k(t : tmap, d : b64) {
    %s = ptx.addr_of smem : !ptx.reg<u32>
    %s_tile = builtin.unrealized_conversion_cast %s : !ptx.reg<u32> to !hopper.smem<align 1024>
    %a = hopper.matrix_descriptor %s_tile {mn = 0, k = 8} : (!hopper.smem<align 1024>) -> !hopper.matrix_descriptor<k_major, swizzle 128, mn 128, k 64>
  }
}
// CHECK: hopper.matrix_descriptor: a wgmma K offset must be a multiple of 16, found 8

// -----

// A descriptor whose origin lies outside its tile.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 size 1024
  ptx.entry @k(t : tmap, d : b64) {
    %s = ptx.addr_of smem : !ptx.reg<u32>
    %s_tile = builtin.unrealized_conversion_cast %s : !ptx.reg<u32> to !hopper.smem<align 1024>
    %a = hopper.matrix_descriptor %s_tile {mn = 128, k = 0} : (!hopper.smem<align 1024>) -> !hopper.matrix_descriptor<k_major, swizzle 128, mn 128, k 64>
  }
}
// CHECK: hopper.matrix_descriptor: operand origin (mn 128, k 0) lies outside the 128x64 tile

// -----

// An MN-major descriptor that starts inside a swizzled box.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 size 1024
  ptx.entry @k(t : tmap, d : b64) {
    %s = ptx.addr_of smem : !ptx.reg<u32>
    %s_tile = builtin.unrealized_conversion_cast %s : !ptx.reg<u32> to !hopper.smem<align 1024>
    %a = hopper.matrix_descriptor %s_tile {mn = 32, k = 0} : (!hopper.smem<align 1024>) -> !hopper.matrix_descriptor<mn_major, swizzle 128, mn 128, k 64>
  }
}
// CHECK: hopper.matrix_descriptor: an MN-major MN offset must be a multiple of 64, found 32

// -----

// A tile whose K extent does not fill whole 128-byte rows.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 size 1024
  ptx.entry @k(t : tmap, d : b64) {
    %s = ptx.addr_of smem : !ptx.reg<u32>
    %s_tile = builtin.unrealized_conversion_cast %s : !ptx.reg<u32> to !hopper.smem<align 1024>
    %a = hopper.matrix_descriptor %s_tile : (!hopper.smem<align 1024>) -> !hopper.matrix_descriptor<k_major, swizzle 128, mn 64, k 48>
  }
}
// CHECK: #hopper.tile: the contiguous extent of a k-major tile (48 elements) must fill whole 128-byte rows

// -----

// A TMA load with three coordinates of a rank-2 tensor map.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 size 1024
  ptx.entry @k(t : tmap, d : b64) {
    %s = ptx.addr_of smem : !ptx.reg<u32>
    %t = hopper.tensormap_param t : !hopper.tensormap<256x128xbf16, box 128x64, swizzle 128>
    %r = hopper.barrier_ring %s : (!ptx.reg<u32>) -> !hopper.barrier_ring<stages = 2, count = 1>
    %b = hopper.ring_barrier %r[0] : !hopper.barrier_ring<stages = 2, count = 1>
    %c = arith.constant 0 : index
    hopper.tma_load %t[%c, %c, %c], %b to %s : !hopper.tensormap<256x128xbf16, box 128x64, swizzle 128>, !hopper.mbarrier<count = 1>, !ptx.reg<u32>
  }
}
// CHECK: hopper.tma_load: a copy of a rank-2 tensor map takes 2 coordinates, found 3

// -----

// A multicast mask wider than 16 bits.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 size 1024
  ptx.entry @k(t : tmap, d : b64) {
    %s = ptx.addr_of smem : !ptx.reg<u32>
    %t = hopper.tensormap_param t : !hopper.tensormap<256x128xbf16, box 128x64, swizzle 128>
    %r = hopper.barrier_ring %s : (!ptx.reg<u32>) -> !hopper.barrier_ring<stages = 2, count = 1>
    %b = hopper.ring_barrier %r[0] : !hopper.barrier_ring<stages = 2, count = 1>
    %c = arith.constant 0 : index
    hopper.tma_load %t[%c, %c], %b to %s mask %s : !hopper.tensormap<256x128xbf16, box 128x64, swizzle 128>, !hopper.mbarrier<count = 1>, !ptx.reg<u32>, !ptx.reg<u32>
  }
}
// CHECK: hopper.tma_load: the CTA mask must be a 16-bit integer register, found !ptx.reg<u32>

// -----

// The tensor map of a parameter that is not a tensor map.
hopper.kernel @k(t : tmap, d : b64) {
  %t = hopper.tensormap_param d : !hopper.tensormap<256x128xbf16, box 128x64, swizzle 128>
}
// CHECK: hopper.tensormap_param: 'd' must be a tmap parameter of hopper.kernel @k, found a b64 parameter

// -----

// A tensor map whose type is not the map its launch data describes (the box differs).
hopper.kernel @k(a : ptr, t : tmap<arg = 0, dtype = bf16, shape = [256, 128], box = [128, 64], boxes = 2, major = k>) {
  %t = hopper.tensormap_param t : !hopper.tensormap<256x128xbf16, box 64x64, swizzle 128>
}
// CHECK: hopper.tensormap_param: the type of 't' must be the map its launch data describes, !hopper.tensormap<256x128xbf16, box 128x64, swizzle 128>, found !hopper.tensormap<256x128xbf16, box 64x64, swizzle 128>

// -----

// An mbarrier wait on a phase in a register (the parity is an i32: a ring_phase, or its
// flip).
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 size 1024
  ptx.entry @k(t : tmap, d : b64) {
    %s = ptx.addr_of smem : !ptx.reg<u32>
    %r = hopper.barrier_ring %s : (!ptx.reg<u32>) -> !hopper.barrier_ring<stages = 2, count = 1>
    %b = hopper.ring_barrier %r[0] : !hopper.barrier_ring<stages = 2, count = 1>
    %p = ptx.const 0 : !ptx.reg<u32>
    hopper.mbarrier_wait %b, %p : (!hopper.mbarrier<count = 1>, !ptx.reg<u32>) -> ()
  }
}
// CHECK: hopper.mbarrier_wait: the phase must be i32, found !ptx.reg<u32>

// -----

// A ring of mbarriers with no arrivals.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 size 1024
  ptx.entry @k(t : tmap, d : b64) {
    %s = ptx.addr_of smem : !ptx.reg<u32>
    %r = hopper.barrier_ring %s : (!ptx.reg<u32>) -> !hopper.barrier_ring<stages = 2, count = 0>
  }
}
// CHECK: !hopper.barrier_ring: count must be in [1, 2^20), found 0

// -----

// A ring of no stages.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 size 1024
  ptx.entry @k(t : tmap, d : b64) {
    %s = ptx.addr_of smem : !ptx.reg<u32>
    %r = hopper.barrier_ring %s : (!ptx.reg<u32>) -> !hopper.barrier_ring<stages = 0, count = 1>
  }
}
// CHECK: !hopper.barrier_ring: stages must be at least 1, found 0

// -----

// A ring on a 64-bit address.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 size 1024
  ptx.entry @k(t : tmap, d : b64) {
    %d = ptx.ld_param d : !ptx.reg<b64>
    %r = hopper.barrier_ring %d : (!ptx.reg<b64>) -> !hopper.barrier_ring<stages = 2, count = 1>
  }
}
// CHECK: hopper.barrier_ring: the base must be a 32-bit integer register, found !ptx.reg<b64>

// -----

// A constant stage outside the ring.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 size 1024
  ptx.entry @k(t : tmap, d : b64) {
    %s = ptx.addr_of smem : !ptx.reg<u32>
    %r = hopper.barrier_ring %s : (!ptx.reg<u32>) -> !hopper.barrier_ring<stages = 2, count = 1>
    %b = hopper.ring_barrier %r[2] : !hopper.barrier_ring<stages = 2, count = 1>
  }
}
// CHECK: hopper.ring_barrier: stage 2 is outside the ring of 2 stages

// -----

// A stage in a register (the stage is an index: a ring position's ring_stage).
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 size 1024
  ptx.entry @k(t : tmap, d : b64) {
    %s = ptx.addr_of smem : !ptx.reg<u32>
    %r = hopper.barrier_ring %s : (!ptx.reg<u32>) -> !hopper.barrier_ring<stages = 2, count = 1>
    %i = ptx.const 1 : !ptx.reg<u32>
    %b = "hopper.ring_barrier"(%r, %i) : (!hopper.barrier_ring<stages = 2, count = 1>, !ptx.reg<u32>) -> !hopper.mbarrier<count = 1>
  }
}
// CHECK: hopper.ring_barrier: the stage must be index, found !ptx.reg<u32>

// -----

// A remote barrier of another type than the barrier mapped.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 size 1024
  ptx.entry @k(t : tmap, d : b64) {
    %s = ptx.addr_of smem : !ptx.reg<u32>
    %r = hopper.barrier_ring %s : (!ptx.reg<u32>) -> !hopper.barrier_ring<stages = 2, count = 1>
    %b = hopper.ring_barrier %r[0] : !hopper.barrier_ring<stages = 2, count = 1>
    %q = ptx.const 1 : !ptx.reg<u32>
    %m = hopper.mapa %b, %q : (!hopper.mbarrier<count = 1>, !ptx.reg<u32>) -> !hopper.mbarrier<count = 2>
  }
}
// CHECK: hopper.mapa: the result must have the barrier's type !hopper.mbarrier<count = 1>, found !hopper.mbarrier<count = 2>

// -----

// A register budget that is not a multiple of 8.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 size 1024
  ptx.entry @k(t : tmap, d : b64) {
    ptx.setmaxnreg inc 100
  }
}
// CHECK: ptx.setmaxnreg: count must be a multiple of 8 in [24, 256], found 100

// -----

// An stmatrix of three matrices.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 size 1024
  ptx.entry @k(t : tmap, d : b64) {
    %s = ptx.addr_of smem : !ptx.reg<u32>
    %row = builtin.unrealized_conversion_cast %s : !ptx.reg<u32> to !hopper.smem<align 16>
    %v = ptx.const 0 : !ptx.reg<b32>
    hopper.stmatrix %row, %v, %v, %v : (!hopper.smem<align 16>, !ptx.reg<b32>, !ptx.reg<b32>, !ptx.reg<b32>) -> ()
  }
}
// CHECK: hopper.stmatrix: expected 1, 2 or 4 registers, found 3

// -----

// An stmatrix of a pair that is not two 16-bit floats.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 size 1024
  ptx.entry @k() {
    %s = ptx.addr_of smem : !ptx.reg<u32>
    %r = ptx.const 1.5 : !ptx.reg<f32>
    %x = builtin.unrealized_conversion_cast %r : !ptx.reg<f32> to f32
    %v = "test.op"(%x) : (f32) -> vector<2xf32>
    %row = builtin.unrealized_conversion_cast %s : !ptx.reg<u32> to !hopper.smem<align 16>
    hopper.stmatrix %row, %v : (!hopper.smem<align 16>, vector<2xf32>) -> ()
  }
}
// CHECK: hopper.stmatrix: value 0 must be a pair of 16-bit floats (vector<2xbf16>, vector<2xf16>), found vector<2xf32>

// -----

// A pair rounded into a type that is not a pair of 16-bit floats.
hopper.kernel @k() {
  %r = ptx.const 1.5 : !ptx.reg<f32>
  %x = builtin.unrealized_conversion_cast %r : !ptx.reg<f32> to f32
  %p = hopper.truncf_pair %x, %x : vector<4xbf16>
}
// CHECK: hopper.truncf_pair: the result must be vector<2xbf16> or vector<2xf16>, found vector<4xbf16>

// -----

// An id that does not exist.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 size 1024
  ptx.entry @k(t : tmap, d : b64) {
    %w = hopper.id block : !ptx.reg<u32>
  }
}
// CHECK: hopper.id: unknown id 'block', expected one of thread.x

// -----

// A bulk wait with too many groups in flight.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 size 1024
  ptx.entry @k(t : tmap, d : b64) {
    ptx.bulk_wait 64
  }
}
// CHECK: ptx.bulk_wait: pending must be in [0, 63], found 64

// -----

// An advance whose result is a position of another ring.
hopper.kernel @k() {
  %pos = hopper.ring_start : !hopper.ring_position<stages = 4>
  %next = "hopper.ring_advance"(%pos) : (!hopper.ring_position<stages = 4>) -> !hopper.ring_position<stages = 3>
}
// CHECK: hopper.ring_advance: the result must be of the position's type !hopper.ring_position<stages = 4>, found !hopper.ring_position<stages = 3>

// -----

// A skip by a count in a register (the count is an index).
hopper.kernel @k() {
  %pos = hopper.ring_start : !hopper.ring_position<stages = 4>
  %count = ptx.const 0 : !ptx.reg<u32>
  %next = "hopper.ring_advance_by"(%pos, %count) : (!hopper.ring_position<stages = 4>, !ptx.reg<u32>) -> !hopper.ring_position<stages = 4>
}
// CHECK: hopper.ring_advance_by: the count must be index, found !ptx.reg<u32>

// -----

// A stage read as a register (the stage is an index).
hopper.kernel @k() {
  %pos = hopper.ring_start : !hopper.ring_position<stages = 4>
  %stage = "hopper.ring_stage"(%pos) : (!hopper.ring_position<stages = 4>) -> !ptx.reg<u32>
}
// CHECK: hopper.ring_stage: the result must be index, found !ptx.reg<u32>

// -----

// A phase parity read as an i1 (the parity is the i32 that the wait takes).
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.entry @k() {
    %pos = hopper.ring_start : !hopper.ring_position<stages = 4>
    %phase = "hopper.ring_phase"(%pos) : (!hopper.ring_position<stages = 4>) -> i1
  }
}
// CHECK: hopper.ring_phase: the result must be i32, found i1
