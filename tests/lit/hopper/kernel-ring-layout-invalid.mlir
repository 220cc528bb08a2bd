// RUN: mmcomp-opt %s --verify-diagnostics --split-input-file | filecheck %s

// The ring's depth is written in several places of a hopper.kernel: the slot ring's,
// the barrier rings' and the positions' types, the barriers' offsets after the stages,
// the init of each stage's barriers and the launch's shared memory. hopper.kernel's
// verifier checks them together (mmcomp.dialects.hopper.layout), so an edit of
// `stages` in one place is refused, never compiled into barriers inside a stage.

// As lowered: 2 stages of 32 KiB, then 2 full and 2 empty barriers, then the epilogue's
// buffers (which two stores may index alike).
hopper.kernel @k() launch<grid = 1, smem = 83968> shared @s align 1024 {
  %base = hopper.shared_base s : !hopper.smem<align 1024>
  %full_at = hopper.smem_offset %base[65536] : !hopper.smem<align 1024> -> !hopper.smem<align 1024>
  %empty_at = hopper.smem_offset %full_at[16] : !hopper.smem<align 1024> -> !hopper.smem<align 16>
  %full = hopper.barrier_ring %full_at : (!hopper.smem<align 1024>) -> !hopper.barrier_ring<stages = 2, count = 1>
  %empty = hopper.barrier_ring %empty_at : (!hopper.smem<align 16>) -> !hopper.barrier_ring<stages = 2, count = 2>
  %slots = hopper.slot_ring %base[0] : !hopper.smem<align 1024> -> !hopper.slot_ring<stages = 2, bytes = 32768, slots = [0, 16384]>
  %f0 = hopper.ring_barrier %full[0] : !hopper.barrier_ring<stages = 2, count = 1>
  hopper.mbarrier_init %f0 : !hopper.mbarrier<count = 1>
  %f1 = hopper.ring_barrier %full[1] : !hopper.barrier_ring<stages = 2, count = 1>
  hopper.mbarrier_init %f1 : !hopper.mbarrier<count = 1>
  %e0 = hopper.ring_barrier %empty[0] : !hopper.barrier_ring<stages = 2, count = 2>
  hopper.mbarrier_init %e0 : !hopper.mbarrier<count = 2>
  %e1 = hopper.ring_barrier %empty[1] : !hopper.barrier_ring<stages = 2, count = 2>
  hopper.mbarrier_init %e1 : !hopper.mbarrier<count = 2>
  %at = hopper.ring_start : !hopper.ring_position<stages = 2>
  %buffers = hopper.smem_offset %base[66560] : !hopper.smem<align 1024> -> !hopper.smem<align 1024>
  %i = arith.constant 0 : index
  %stored = hopper.smem_index %buffers[0 + %i * 16384] : !hopper.smem<align 1024> -> !hopper.smem<align 1024>
  %again = hopper.smem_index %buffers[0 + %i * 16384] : !hopper.smem<align 1024> -> !hopper.smem<align 1024>
  ptx.ret
}
// CHECK: hopper.kernel @k(

// -----

// The slot ring one stage deeper, its offsets and barriers left as they were: its third
// stage would hold the barriers.
hopper.kernel @k() launch<grid = 1, smem = 99360> shared @s align 1024 {
  %base = hopper.shared_base s : !hopper.smem<align 1024>
  %full_at = hopper.smem_offset %base[65536] : !hopper.smem<align 1024> -> !hopper.smem<align 1024>
  %full = hopper.barrier_ring %full_at : (!hopper.smem<align 1024>) -> !hopper.barrier_ring<stages = 3, count = 1>
  %slots = hopper.slot_ring %base[0] : !hopper.smem<align 1024> -> !hopper.slot_ring<stages = 3, bytes = 32768, slots = [0, 16384]>
  ptx.ret
}
// CHECK: hopper.kernel @k: shared memory overlaps: hopper.slot_ring at [0, 98304) and hopper.barrier_ring at [65536, 65560) (the offsets do not match the ring's stages)

// -----

// The depth edited in one type only.
hopper.kernel @k() launch<grid = 1, smem = 66592> shared @s align 1024 {
  %base = hopper.shared_base s : !hopper.smem<align 1024>
  %full_at = hopper.smem_offset %base[65536] : !hopper.smem<align 1024> -> !hopper.smem<align 1024>
  %full = hopper.barrier_ring %full_at : (!hopper.smem<align 1024>) -> !hopper.barrier_ring<stages = 3, count = 1>
  %slots = hopper.slot_ring %base[0] : !hopper.smem<align 1024> -> !hopper.slot_ring<stages = 2, bytes = 32768, slots = [0, 16384]>
  %at = hopper.ring_start : !hopper.ring_position<stages = 2>
  ptx.ret
}
// CHECK: hopper.kernel @k: the ring's stages disagree (hopper.barrier_ring 3, hopper.slot_ring 2, hopper.ring_start 2): the slot ring, the barrier rings and the ring positions must have one depth (change `stages` in sched.params and lower again)

// -----

// A stage's barrier not initialized.
hopper.kernel @k() launch<grid = 1, smem = 66592> shared @s align 1024 {
  %base = hopper.shared_base s : !hopper.smem<align 1024>
  %full_at = hopper.smem_offset %base[65536] : !hopper.smem<align 1024> -> !hopper.smem<align 1024>
  %full = hopper.barrier_ring %full_at : (!hopper.smem<align 1024>) -> !hopper.barrier_ring<stages = 2, count = 1>
  %f0 = hopper.ring_barrier %full[0] : !hopper.barrier_ring<stages = 2, count = 1>
  hopper.mbarrier_init %f0 : !hopper.mbarrier<count = 1>
  ptx.ret
}
// CHECK: hopper.kernel @k: a barrier ring of 2 stages has the barriers of stages [0] initialized: each stage's barrier must be initialized once

// -----

// A stage's barrier initialized twice.
hopper.kernel @k() launch<grid = 1, smem = 66592> shared @s align 1024 {
  %base = hopper.shared_base s : !hopper.smem<align 1024>
  %full_at = hopper.smem_offset %base[65536] : !hopper.smem<align 1024> -> !hopper.smem<align 1024>
  %full = hopper.barrier_ring %full_at : (!hopper.smem<align 1024>) -> !hopper.barrier_ring<stages = 2, count = 1>
  %f0 = hopper.ring_barrier %full[0] : !hopper.barrier_ring<stages = 2, count = 1>
  hopper.mbarrier_init %f0 : !hopper.mbarrier<count = 1>
  hopper.mbarrier_init %f0 : !hopper.mbarrier<count = 1>
  %f1 = hopper.ring_barrier %full[1] : !hopper.barrier_ring<stages = 2, count = 1>
  hopper.mbarrier_init %f1 : !hopper.mbarrier<count = 1>
  ptx.ret
}
// CHECK: hopper.kernel @k: a barrier ring of 2 stages has the barriers of stages [0, 0, 1] initialized: each stage's barrier must be initialized once

// -----

// The ring past the launch's shared memory (less the base's alignment slack).
hopper.kernel @k() launch<grid = 1, smem = 65536> shared @s align 1024 {
  %base = hopper.shared_base s : !hopper.smem<align 1024>
  %slots = hopper.slot_ring %base[0] : !hopper.smem<align 1024> -> !hopper.slot_ring<stages = 2, bytes = 32768, slots = [0, 16384]>
  ptx.ret
}
// CHECK: hopper.kernel @k: hopper.slot_ring at [0, 65536) ends past the 64528 bytes of shared memory the launch gives (65536, less the base's alignment slack)
