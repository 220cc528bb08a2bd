// RUN: mmcomp-opt %s --verify-diagnostics --split-input-file | filecheck %s

// The shared-memory ops' and types' verifiers: each error names the op or type and what
// was expected.

// A slot past the stage's slots.
hopper.kernel @k() {
  %smem = hopper.shared_base mmcomp_shared : !hopper.smem<align 1024>
  %slots = hopper.slot_ring %smem[0] : !hopper.smem<align 1024> -> !hopper.slot_ring<stages = 2, bytes = 32768, slots = [0, 16384]>
  %pos = hopper.ring_start : !hopper.ring_position<stages = 2>
  %stage = hopper.slot_stage %slots[%pos] : !hopper.slot_ring<stages = 2, bytes = 32768, slots = [0, 16384]>, !hopper.ring_position<stages = 2>
  %c = hopper.ring_slot %stage[2] : !hopper.stage<slots = [0, 16384]>
}
// CHECK: hopper.ring_slot: slot 2 is past the stage's 2 slots

// -----

// A slot ring at an offset from the base that is not a multiple of 1024 bytes.
hopper.kernel @k() {
  %smem = hopper.shared_base mmcomp_shared : !hopper.smem<align 1024>
  %slots = hopper.slot_ring %smem[512] : !hopper.smem<align 1024> -> !hopper.slot_ring<stages = 2, bytes = 32768, slots = [0, 16384]>
}
// CHECK: hopper.slot_ring: the offset 512 from the base is not a non-negative multiple of 1024 bytes

// -----

// A slot ring on a base aligned to less than 1024 bytes.
hopper.kernel @k() {
  %smem = hopper.shared_base mmcomp_shared : !hopper.smem<align 128>
  %slots = hopper.slot_ring %smem[0] : !hopper.smem<align 128> -> !hopper.slot_ring<stages = 2, bytes = 32768, slots = [0, 16384]>
}
// CHECK: hopper.slot_ring: the base must be aligned to 1024 bytes, found !hopper.smem<align 128>

// -----

// An offset whose result claims more alignment than the offset keeps.
hopper.kernel @k() {
  %smem = hopper.shared_base mmcomp_shared : !hopper.smem<align 1024>
  %bars = hopper.smem_offset %smem[24] : !hopper.smem<align 1024> -> !hopper.smem<align 16>
}
// CHECK: hopper.smem_offset: an address 24 bytes past one aligned to 1024 is not aligned to 16 (the result's alignment)

// -----

// The stage of a position of another ring's depth.
hopper.kernel @k() {
  %smem = hopper.shared_base mmcomp_shared : !hopper.smem<align 1024>
  %slots = hopper.slot_ring %smem[0] : !hopper.smem<align 1024> -> !hopper.slot_ring<stages = 2, bytes = 32768, slots = [0, 16384]>
  %pos = hopper.ring_start : !hopper.ring_position<stages = 3>
  %stage = hopper.slot_stage %slots[%pos] : !hopper.slot_ring<stages = 2, bytes = 32768, slots = [0, 16384]>, !hopper.ring_position<stages = 3>
}
// CHECK: hopper.slot_stage: a position of a 3-stage ring does not walk a ring of 2 stages

// -----

// A barrier ring at an address aligned to less than a barrier's 8 bytes.
hopper.kernel @k() {
  %smem = hopper.shared_base mmcomp_shared : !hopper.smem<align 1024>
  %bars = hopper.smem_offset %smem[4] : !hopper.smem<align 1024> -> !hopper.smem<align 4>
  %full = hopper.barrier_ring %bars : (!hopper.smem<align 4>) -> !hopper.barrier_ring<stages = 2, count = 1>
}
// CHECK: hopper.barrier_ring: the base must be aligned to 8 bytes, found !hopper.smem<align 4>

// -----

// A TMA load of a 128-byte swizzled box into an address aligned to less than the swizzle
// pattern's 1024 bytes.
hopper.kernel @k(t : tmap) {
  %smem = hopper.shared_base mmcomp_shared : !hopper.smem<align 1024>
  %dst = hopper.smem_offset %smem[128] : !hopper.smem<align 1024> -> !hopper.smem<align 128>
  %bars = hopper.smem_offset %smem[65536] : !hopper.smem<align 1024> -> !hopper.smem<align 1024>
  %full = hopper.barrier_ring %bars : (!hopper.smem<align 1024>) -> !hopper.barrier_ring<stages = 2, count = 1>
  %bar = hopper.ring_barrier %full[0] : !hopper.barrier_ring<stages = 2, count = 1>
  %tmap = hopper.tensormap_param t : !hopper.tensormap<256x128xbf16, box 128x64, swizzle 128>
  %c0 = arith.constant 0 : index
  hopper.tma_load %tmap[%c0, %c0], %bar to %dst : !hopper.tensormap<256x128xbf16, box 128x64, swizzle 128>, !hopper.mbarrier<count = 1>, !hopper.smem<align 128>
}
// CHECK: hopper.tma_load: the destination must be aligned to 1024 bytes, found !hopper.smem<align 128>

// -----

// A wgmma descriptor of a 128-byte swizzled tile at an address aligned to less than 1024.
hopper.kernel @k() {
  %smem = hopper.shared_base mmcomp_shared : !hopper.smem<align 1024>
  %tile = hopper.smem_offset %smem[512] : !hopper.smem<align 1024> -> !hopper.smem<align 512>
  %desc = hopper.matrix_descriptor %tile {mn = 0, k = 0} : (!hopper.smem<align 512>) -> !hopper.matrix_descriptor<k_major, swizzle 128, mn 128, k 64>
}
// CHECK: hopper.matrix_descriptor: the tile base must be aligned to 1024 bytes, found !hopper.smem<align 512>

// -----

// A slot ring whose slots are not 1024-byte aligned.
"test.op"() {type = !hopper.slot_ring<stages = 2, bytes = 32768, slots = [0, 16000]>} : () -> ()
// CHECK: !hopper.slot_ring: slot offset 16000 is not a multiple of 1024 bytes

// -----

// A slot ring whose last slot lies outside its stage.
"test.op"() {type = !hopper.slot_ring<stages = 2, bytes = 16384, slots = [0, 16384]>} : () -> ()
// CHECK: !hopper.slot_ring: slot offset 16384 lies outside a stage of 16384 bytes

// -----

// An alignment that is not a power of two.
"test.op"() {type = !hopper.smem<align 24>} : () -> ()
// CHECK: !hopper.smem: align must be a power of two, found 24

// -----

// An index's strides whose result claims more alignment than the stride keeps.
hopper.kernel @k() {
  %smem = hopper.shared_base mmcomp_shared : !hopper.smem<align 1024>
  %i = arith.constant 1 : index
  %bufs = hopper.smem_index %smem[2048 + %i * 512] : !hopper.smem<align 1024> -> !hopper.smem<align 1024>
}
// CHECK: hopper.smem_index: an address 2048 + i * 512 bytes past one aligned to 1024 is not aligned to 1024 (the result's alignment)

// -----

// An index with no stride.
hopper.kernel @k() {
  %smem = hopper.shared_base mmcomp_shared : !hopper.smem<align 1024>
  %i = arith.constant 1 : index
  %bufs = hopper.smem_index %smem[0 + %i * 0] : !hopper.smem<align 1024> -> !hopper.smem<align 1024>
}
// CHECK: hopper.smem_index: the stride must be positive, found 0

// -----

// A TMA store from a buffer aligned to less than its box's 128-byte swizzle pattern.
hopper.kernel @k(t : tmap) {
  %smem = hopper.shared_base mmcomp_shared : !hopper.smem<align 1024>
  %tmap = hopper.tensormap_param t : !hopper.tensormap<256x128xbf16, box 64x64, swizzle 128>
  %buf = hopper.smem_offset %smem[512] : !hopper.smem<align 1024> -> !hopper.smem<align 512>
  %c0 = arith.constant 0 : index
  hopper.tma_store %buf to %tmap[%c0, %c0] : !hopper.tensormap<256x128xbf16, box 64x64, swizzle 128>, !hopper.smem<align 512>
}
// CHECK: hopper.tma_store: the source must be aligned to 1024 bytes, found !hopper.smem<align 512>

// -----

// An stmatrix row address aligned to less than a matrix row's 16 bytes.
hopper.kernel @k() {
  %smem = hopper.shared_base mmcomp_shared : !hopper.smem<align 1024>
  %row = hopper.smem_offset %smem[8] : !hopper.smem<align 1024> -> !hopper.smem<align 8>
  %one = arith.constant 1.0 : f32
  %pair = hopper.truncf_pair %one, %one : vector<2xbf16>
  hopper.stmatrix %row, %pair : (!hopper.smem<align 8>, vector<2xbf16>) -> ()
}
// CHECK: hopper.stmatrix: the address must be a !hopper.smem aligned to 16 bytes (a matrix row), found !hopper.smem<align 8>

// -----

// An stmatrix row address that is a register, not typed shared memory.
hopper.kernel @k() {
  %smem = hopper.shared_base mmcomp_shared : !hopper.smem<align 1024>
  %row = builtin.unrealized_conversion_cast %smem : !hopper.smem<align 1024> to !ptx.reg<u32>
  %one = arith.constant 1.0 : f32
  %pair = hopper.truncf_pair %one, %one : vector<2xbf16>
  hopper.stmatrix %row, %pair : (!ptx.reg<u32>, vector<2xbf16>) -> ()
}
// CHECK: operand 'address' at position 0 does not verify:
// CHECK-NEXT: !ptx.reg<u32> should be of base attribute hopper.smem

// -----

// A dynamic offset claiming more alignment than its base has.
hopper.kernel @k() {
  %smem = hopper.shared_base mmcomp_shared : !hopper.smem<align 128>
  %bytes = arith.constant 1024 : index
  %row = hopper.smem_add %smem[%bytes] : !hopper.smem<align 128> -> !hopper.smem<align 1024>
}
// CHECK: hopper.smem_add: an address past one aligned to 128 is not aligned to 1024 (the result's alignment)

