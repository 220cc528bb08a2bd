// RUN: mmcomp-opt %s --parsing-diagnostics --split-input-file | filecheck %s

// Syntax errors in #hopper.tile, in the hopper types and in hopper ops, reported at the
// token.

// A tile whose major-ness is neither k_major nor mn_major.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 size 1024
  ptx.entry @k() {
    %s = ptx.addr_of smem : !ptx.reg<u32>
    %s_tile = builtin.unrealized_conversion_cast %s : !ptx.reg<u32> to !hopper.smem<align 1024>
    %a = hopper.matrix_descriptor %s_tile : (!hopper.smem<align 1024>) -> !hopper.matrix_descriptor<row_major, swizzle 128, mn 64, k 64>
  }
}
// CHECK: expected k_major or mn_major, found 'row_major'

// -----

// A tile without its swizzle.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 size 1024
  ptx.entry @k() {
    %s = ptx.addr_of smem : !ptx.reg<u32>
    %s_tile = builtin.unrealized_conversion_cast %s : !ptx.reg<u32> to !hopper.smem<align 1024>
    %a = hopper.matrix_descriptor %s_tile : (!hopper.smem<align 1024>) -> !hopper.matrix_descriptor<k_major, mn 64, k 64>
  }
}
// CHECK: Expected 'swizzle'

// -----

// An operand-less op takes no operand from the next line: %w stays the id's result.
hopper.kernel @k() {
  ptx.wgmma_fence
  %w = hopper.id warpgroup : !ptx.reg<u32>
  ptx.bar sync 1 128
  %p = ptx.elect_sync : !ptx.reg<pred>
}
// CHECK: ptx.wgmma_fence
// CHECK-NEXT: %w = hopper.id warpgroup : !ptx.reg<u32>
// CHECK-NEXT: ptx.bar sync 1 128
// CHECK-NEXT: %p = ptx.elect_sync : !ptx.reg<pred>


// -----

// #hopper.warp_roles holds only the ring slots; the stages belong to sched.params.
func.func @k() attributes {hopper.warp_roles = #hopper.warp_roles<stages = 4>} {
  func.return
}
// CHECK: #hopper.warp_roles holds only 'slots', found 'stages' (stages, registers and warp_specialization are read from sched.params)

// -----

// A tensor-map box of an extent known only at launch.
"test.op"() {type = !hopper.tensormap<256x128xbf16, box ?x64, swizzle 128>} : () -> ()
// CHECK: !hopper.tensormap: expected a static box, as 128x64

// -----

// A tensor map without its swizzle.
"test.op"() {type = !hopper.tensormap<256x128xbf16, box 128x64>} : () -> ()
// CHECK: Expected ','

// -----

// A barrier ring without its arrival count.
"test.op"() {type = !hopper.barrier_ring<stages = 3>} : () -> ()
// CHECK: Expected ','

// -----

// A stage's barrier taken from something that is not a ring.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 size 1024
  ptx.entry @k() {
    %s = ptx.addr_of smem : !ptx.reg<u32>
    %b = hopper.ring_barrier %s[0] : !ptx.reg<u32>
  }
}
// CHECK: hopper.ring_barrier: expected a !hopper.barrier_ring type, found !ptx.reg<u32>

// -----

// An accumulator of a one-dimensional shape.
"test.op"() {type = !hopper.accumulator<64xf32>} : () -> ()
// CHECK: !hopper.accumulator: expected a static m x n shape, as 64x256xf32

// -----

// An accumulator whose registers are not f32 (its registers are read as f32).
hopper.kernel @k() {
  %h = ptx.const 0 : !ptx.reg<u32>
  %acc = hopper.accumulator %h, %h, %h, %h : !hopper.accumulator<64x8xf32>
}
// CHECK: operand is used with type !ptx.reg<f32>, but has been previously used or defined with type !ptx.reg<u32>

// -----

// A TMA load whose tensor map is a register, not a !hopper.tensormap.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 size 1024
  ptx.entry @k(t : tmap, d : b64) {
    %s = ptx.addr_of smem : !ptx.reg<u32>
    %d = ptx.ld_param d : !ptx.reg<b64>
    %r = hopper.barrier_ring %s : (!ptx.reg<u32>) -> !hopper.barrier_ring<stages = 2, count = 1>
    %b = hopper.ring_barrier %r[0] : !hopper.barrier_ring<stages = 2, count = 1>
    %c = ptx.const 0 : !ptx.reg<s32>
    hopper.tma_load %d[%c, %c], %b to %s : !ptx.reg<b64>, !hopper.mbarrier<count = 1>, !ptx.reg<u32>
  }
}
// CHECK: hopper.tma_load: expected a !hopper.tensormap type, found !ptx.reg<b64>

// -----

// A TMA load whose barrier is a shared address, not a !hopper.mbarrier.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 size 1024
  ptx.entry @k(t : tmap, d : b64) {
    %s = ptx.addr_of smem : !ptx.reg<u32>
    %t = hopper.tensormap_param t : !hopper.tensormap<256x128xbf16, box 128x64, swizzle 128>
    %c = ptx.const 0 : !ptx.reg<s32>
    hopper.tma_load %t[%c, %c], %s to %s : !hopper.tensormap<256x128xbf16, box 128x64, swizzle 128>, !ptx.reg<u32>, !ptx.reg<u32>
  }
}
// CHECK: hopper.tma_load: expected a !hopper.mbarrier type, found !ptx.reg<u32>

// -----

// A TMA store at a register coordinate: the copies take index values (the schedule's
// arithmetic), which convert-arith-to-ptx lowers after them.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 size 1024
  ptx.entry @k(t : tmap, d : b64) {
    %s = ptx.addr_of smem : !ptx.reg<u32>
    %t = hopper.tensormap_param t : !hopper.tensormap<256x128xbf16, box 128x64, swizzle 128>
    %c = ptx.const 0 : !ptx.reg<s32>
    hopper.tma_store %s to %t[%c, %c] : !hopper.tensormap<256x128xbf16, box 128x64, swizzle 128>, !ptx.reg<u32>
  }
}
// CHECK: operand is used with type index, but has been previously used or defined with type !ptx.reg<s32>

// -----

// A kernel's dynamic shared memory without its alignment.
hopper.kernel @k() shared @mmcomp_shared {
}
// CHECK: Expected 'align' (the shared memory's alignment)

// -----

// A parameter read without its parameter's name.
hopper.kernel @k(a : ptr) {
  %a = hopper.array_param : memref<16xf32>
}
// CHECK: identifier expected (a kernel parameter)

// -----

// The ops that only name a value take no guard: `if %p` is no part of their syntax.
hopper.kernel @k() {
  %p = ptx.const 1 : !ptx.reg<pred>
  %acc = hopper.zero_accumulator if %p : !hopper.accumulator<64x8xf32>
}
// CHECK: Expected ':'

// -----

hopper.kernel @k() {
  %p = ptx.const 1 : !ptx.reg<pred>
  %pos = hopper.ring_start if %p : !hopper.ring_position<stages = 4>
}
// CHECK: Expected ':'

// -----

ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 size 1024
  ptx.entry @k() {
    %s = ptx.addr_of smem : !ptx.reg<u32>
    %p = ptx.elect_sync : !ptx.reg<pred>
    %r = hopper.barrier_ring %s : (!ptx.reg<u32>) -> !hopper.barrier_ring<stages = 2, count = 1>
    %b = hopper.ring_barrier %r[0] if %p : !hopper.barrier_ring<stages = 2, count = 1>
  }
}
// CHECK: Expected ':'

// -----

hopper.kernel @k() {
  %p = ptx.const 1 : !ptx.reg<pred>
  %smem = hopper.shared_base mmcomp_shared : !hopper.smem<align 1024>
  %slots = hopper.slot_ring %smem[0] : !hopper.smem<align 1024> -> !hopper.slot_ring<stages = 2, bytes = 32768, slots = [0, 16384]>
  %pos = hopper.ring_start : !hopper.ring_position<stages = 2>
  %stage = hopper.slot_stage %slots[%pos] : !hopper.slot_ring<stages = 2, bytes = 32768, slots = [0, 16384]>, !hopper.ring_position<stages = 2>
  %a = hopper.ring_slot %stage[0] if %p : !hopper.stage<slots = [0, 16384]>
}
// CHECK: Expected ':'
