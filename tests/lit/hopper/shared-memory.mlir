// RUN: mmcomp-opt %s | mmcomp-opt | filecheck %s --check-prefix=IR
// RUN: mmcomp-opt %s -p convert-hopper-to-ptx | filecheck %s --check-prefix=HOPPER
// RUN: mmcomp-opt %s -p convert-hopper-to-ptx,convert-scf-to-ptx,convert-arith-to-ptx -t ptx | filecheck %s --check-prefix=PTX

// Shared memory as typed values: the base of the dynamic array aligned at run time, the
// barrier rings at offsets from it, the ring's stages and slots; a position's stage is one
// mad, each slot an add of its offset, which the TMA load, the wgmma descriptor and a box
// past the slot (an offset) take. A ptx op and the index arithmetic read the base through
// casts, which convert-hopper-to-ptx resolves to its register.
hopper.kernel @k(t : tmap) shared @mmcomp_shared align 1024 {
  %smem = hopper.shared_base mmcomp_shared : !hopper.smem<align 1024>
  %bars = hopper.smem_offset %smem[65536] : !hopper.smem<align 1024> -> !hopper.smem<align 1024>
  %empties = hopper.smem_offset %bars[16] : !hopper.smem<align 1024> -> !hopper.smem<align 8>
  %full = hopper.barrier_ring %bars : (!hopper.smem<align 1024>) -> !hopper.barrier_ring<stages = 2, count = 1>
  %empty = hopper.barrier_ring %empties : (!hopper.smem<align 8>) -> !hopper.barrier_ring<stages = 2, count = 2>
  %slots = hopper.slot_ring %smem[0] : !hopper.smem<align 1024> -> !hopper.slot_ring<stages = 2, bytes = 32768, slots = [0, 16384]>
  %tmap = hopper.tensormap_param t : !hopper.tensormap<256x128xbf16, box 128x64, swizzle 128>
  %pos = hopper.ring_start : !hopper.ring_position<stages = 2>
  %stage = hopper.slot_stage %slots[%pos] : !hopper.slot_ring<stages = 2, bytes = 32768, slots = [0, 16384]>, !hopper.ring_position<stages = 2>
  %a = hopper.ring_slot %stage[0] : !hopper.stage<slots = [0, 16384]>
  %b = hopper.ring_slot %stage[1] : !hopper.stage<slots = [0, 16384]>
  %b2 = hopper.smem_offset %b[8192] : !hopper.smem<align 1024> -> !hopper.smem<align 1024>
  %bar = hopper.ring_barrier %full[0] : !hopper.barrier_ring<stages = 2, count = 1>
  %c0 = arith.constant 0 : index
  hopper.tma_load %tmap[%c0, %c0], %bar to %a : !hopper.tensormap<256x128xbf16, box 128x64, swizzle 128>, !hopper.mbarrier<count = 1>, !hopper.smem<align 1024>
  hopper.tma_load %tmap[%c0, %c0], %bar to %b2 : !hopper.tensormap<256x128xbf16, box 128x64, swizzle 128>, !hopper.mbarrier<count = 1>, !hopper.smem<align 1024>
  %desc = hopper.matrix_descriptor %b {mn = 64, k = 16} : (!hopper.smem<align 1024>) -> !hopper.matrix_descriptor<k_major, swizzle 128, mn 128, k 64>
  %base = builtin.unrealized_conversion_cast %smem : !hopper.smem<align 1024> to !ptx.reg<u32>
  %word = ptx.const 7 : !ptx.reg<u32>
  ptx.st shared %base, %word : (!ptx.reg<u32>, !ptx.reg<u32>) -> ()
  %index = builtin.unrealized_conversion_cast %a : !hopper.smem<align 1024> to index
  %c4 = arith.constant 4 : index
  %next = arith.addi %index, %c4 : index
  %next_reg = builtin.unrealized_conversion_cast %next : index to !ptx.reg<u32>
  ptx.st shared %next_reg, %word : (!ptx.reg<u32>, !ptx.reg<u32>) -> ()
  ptx.ret
}

// IR:      %[[SMEM:.*]] = hopper.shared_base mmcomp_shared : !hopper.smem<align 1024>
// IR-NEXT: %[[BARS:.*]] = hopper.smem_offset %[[SMEM]][65536] : !hopper.smem<align 1024> -> !hopper.smem<align 1024>
// IR-NEXT: %[[EMPTIES:.*]] = hopper.smem_offset %[[BARS]][16] : !hopper.smem<align 1024> -> !hopper.smem<align 8>
// IR-NEXT: hopper.barrier_ring %[[BARS]] : (!hopper.smem<align 1024>) -> !hopper.barrier_ring<stages = 2, count = 1>
// IR-NEXT: hopper.barrier_ring %[[EMPTIES]] : (!hopper.smem<align 8>) -> !hopper.barrier_ring<stages = 2, count = 2>
// IR-NEXT: %[[SLOTS:.*]] = hopper.slot_ring %[[SMEM]][0] : !hopper.smem<align 1024> -> !hopper.slot_ring<stages = 2, bytes = 32768, slots = [0, 16384]>
// IR:      %[[STAGE:.*]] = hopper.slot_stage %[[SLOTS]][%{{.*}}] : !hopper.slot_ring<stages = 2, bytes = 32768, slots = [0, 16384]>, !hopper.ring_position<stages = 2>
// IR-NEXT: %[[A:.*]] = hopper.ring_slot %[[STAGE]][0] : !hopper.stage<slots = [0, 16384]>
// IR-NEXT: %[[B:.*]] = hopper.ring_slot %[[STAGE]][1] : !hopper.stage<slots = [0, 16384]>
// IR:      hopper.tma_load %{{.*}}[%{{.*}}, %{{.*}}], %{{.*}} to %[[A]] : !hopper.tensormap<256x128xbf16, box 128x64, swizzle 128>, !hopper.mbarrier<count = 1>, !hopper.smem<align 1024>
// IR:      hopper.matrix_descriptor %[[B]] {{.*}} : (!hopper.smem<align 1024>) -> !hopper.matrix_descriptor<k_major, swizzle 128, mn 128, k 64>

// HOPPER:      %[[RAW:.*]] = ptx.addr_of mmcomp_shared : !ptx.reg<u32>
// HOPPER-NEXT: %[[PAD:.*]] = ptx.const 1023 : !ptx.reg<u32>
// HOPPER-NEXT: %[[UP:.*]] = ptx.add %[[RAW]], %[[PAD]] : !ptx.reg<u32>
// HOPPER-NEXT: %[[MASK:.*]] = ptx.const 4294966272 : !ptx.reg<u32>
// HOPPER-NEXT: %[[BASE:.*]] = ptx.and %[[UP]], %[[MASK]] : !ptx.reg<u32>
// HOPPER-NEXT: %[[OFF:.*]] = ptx.const 65536 : !ptx.reg<u32>
// HOPPER-NEXT: %[[BARS:.*]] = ptx.add %[[BASE]], %[[OFF]] : !ptx.reg<u32>
// HOPPER-NEXT: %[[OFF16:.*]] = ptx.const 16 : !ptx.reg<u32>
// HOPPER-NEXT: %{{.*}} = ptx.add %[[BARS]], %[[OFF16]] : !ptx.reg<u32>
// HOPPER:      %[[STAGE0:.*]] = ptx.const 0 : !ptx.reg<u32>
// HOPPER-NEXT: %{{.*}} = ptx.const 0 : !ptx.reg<u32>
// HOPPER-NEXT: %[[BYTES:.*]] = ptx.const 32768 : !ptx.reg<u32>
// HOPPER-NEXT: %[[STAGE:.*]] = ptx.mad %[[STAGE0]], %[[BYTES]], %[[BASE]] : !ptx.reg<u32>
// HOPPER-NEXT: %[[ZERO:.*]] = ptx.const 0 : !ptx.reg<u32>
// HOPPER-NEXT: %[[A:.*]] = ptx.add %[[STAGE]], %[[ZERO]] : !ptx.reg<u32>
// HOPPER-NEXT: %[[SLOT1:.*]] = ptx.const 16384 : !ptx.reg<u32>
// HOPPER-NEXT: %[[B:.*]] = ptx.add %[[STAGE]], %[[SLOT1]] : !ptx.reg<u32>
// HOPPER-NEXT: %[[BOX:.*]] = ptx.const 8192 : !ptx.reg<u32>
// HOPPER-NEXT: %[[B2:.*]] = ptx.add %[[B]], %[[BOX]] : !ptx.reg<u32>
// HOPPER:      ptx.tma_load %[[A]],
// HOPPER:      ptx.tma_load %[[B2]],
// HOPPER:      ptx.add %[[B]], %{{.*}} : !ptx.reg<u32>
// HOPPER:      ptx.st shared %[[BASE]], %{{.*}} : (!ptx.reg<u32>, !ptx.reg<u32>) -> ()
// HOPPER:      %[[INDEX:.*]] = builtin.unrealized_conversion_cast %[[A]] : !ptx.reg<u32> to index
// HOPPER-NEXT: %[[C4:.*]] = arith.constant 4 : index
// HOPPER-NEXT: arith.addi %[[INDEX]], %[[C4]] : index
// HOPPER-NOT:  hopper.

// PTX:      mov.u32 %r1, mmcomp_shared;
// PTX-NEXT: mov.u32 %r2, 1023;
// PTX-NEXT: add.u32 %r3, %r1, %r2;
// PTX-NEXT: mov.u32 %r4, 4294966272;
// PTX-NEXT: and.b32 %r5, %r3, %r4;
// PTX:      mad.lo.u32 %r13, %r10, %r12, %r5;
// PTX:      add.u32 %r19, %r17, %r18;
// PTX:      cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%r15], [%rd2, {%r22, %r22}], [%r21];
// PTX-NEXT: cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%r19], [%rd2, {%r22, %r22}], [%r21];
// PTX:      st.shared.u32 [%r5], %r29;
// PTX:      add.u32 %r31, %r15, %r30;
