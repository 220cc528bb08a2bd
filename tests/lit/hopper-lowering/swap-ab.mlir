// DEFINE: %{schedule} = propagate-axis-mapping,choose-schedule,tile-split,tile-merge,split-k,insert-persistent-loop,materialize-schedule
// DEFINE: %{assemble} = import sys; from mmcomp.arch.ptxas import assemble_checked; r = assemble_checked(sys.stdin.read()); [print(e.entry, 'spills', e.spills, 'stack', e.stack_frame) for e in r.resources.values()]
// RUN: mmcomp-opt %s -p %{schedule} | filecheck %s --check-prefix=SCHED
// RUN: mmcomp-opt %s -p %{schedule},partition-warp-roles,carry-ring-positions,lower-schedule-to-hopper | filecheck %s
// RUN: mmcomp-opt %s -p %{schedule},partition-warp-roles,carry-ring-positions,lower-schedule-to-hopper,convert-hopper-to-ptx,convert-scf-to-ptx,convert-arith-to-ptx -t ptx | python -c "%{assemble}" | filecheck %s --check-prefix=PTXAS

// Swap-AB: a linear with a bias at M = 7, computed as C^T = W A^T. The schedule keeps
// the problem's coordinates (tile 8x128x64: 8 rows of M by 128 of N); `instr` is the
// wgmma as the hardware runs it, m64 over N and n8 over M.
func.func @linear(%a: tensor<7x300xbf16>, %w: tensor<200x300xbf16>, %bias: tensor<200xbf16>) -> tensor<7x200xbf16> attributes {sched.params = #sched.params<swap_ab = true, tile = 8x128x64, stages = 4, split_k = 1>} {
  %y = fusion.linear %a, %w, %bias : (tensor<7x300xbf16>, tensor<200x300xbf16>, tensor<200xbf16>) -> tensor<7x200xf32>
  %o = fusion.cast %y : tensor<7x200xf32> to tensor<7x200xbf16>
  func.return %o : tensor<7x200xbf16>
}

// The materialized schedule is the unswapped one's (the same tiles, loads, sched.mma over
// [m, k] x [n, k] and stores in problem terms); only its params say swap_ab. The two
// consumer warpgroups split N: warpgroup tile 8x64.
// SCHED:      sched.params = #sched.params<tile = 8x128x64, warpgroup = 8x64, instr = m64n8k16,
// SCHED-SAME: epilogue = registers, swap_ab = true>
// SCHED:      sched.load_tile %a[{{.*}}] : memref<7x300xbf16> -> tensor<8x64xbf16>
// SCHED:      sched.load_tile %w[{{.*}}] : memref<200x300xbf16> -> tensor<128x64xbf16>
// SCHED:      sched.mma

// The hardware mapping is where the swap first shows: the A box holds 8 rows, W's tile
// is wgmma's A operand (its slot after A's 1024 bytes, each consumer 64 of its rows,
// 8192 bytes apart: a hopper.smem_index of the consumer) and A's tile wgmma's B operand (n = 8): the accumulator is
// 64 (N) x 8 (M).
// CHECK:      hopper.tensormap_param tmap0 : !hopper.tensormap<7x300xbf16, box 8x64, swizzle 128>
// CHECK-NEXT: hopper.tensormap_param tmap1 : !hopper.tensormap<200x300xbf16, box 128x64, swizzle 128>
// CHECK:      hopper.zero_accumulator : !hopper.accumulator<64x8xf32>
// CHECK:      %[[STAGE:.*]] = hopper.slot_stage %{{.*}}[%{{.*}}] : !hopper.slot_ring<stages = 4, bytes = 17408, slots = [0, 1024]>, !hopper.ring_position<stages = 4>
// CHECK-NEXT: ptx.wgmma_fence
// CHECK-NEXT: %[[WBASE:.*]] = hopper.ring_slot %[[STAGE]][1] : !hopper.stage<slots = [0, 1024]>
// CHECK-NEXT: %[[WMINE:.*]] = hopper.smem_index %[[WBASE]][0 + %{{.*}} * 8192] : !hopper.smem<align 1024> -> !hopper.smem<align 1024>
// CHECK-NEXT: %[[ABASE:.*]] = hopper.ring_slot %[[STAGE]][0] : !hopper.stage<slots = [0, 1024]>
// CHECK-NEXT: %[[WDESC:.*]] = hopper.matrix_descriptor %[[WMINE]] {mn = 0, k = 0} : (!hopper.smem<align 1024>) -> !hopper.matrix_descriptor<k_major, swizzle 128, mn 128, k 64>
// CHECK-NEXT: %[[ADESC:.*]] = hopper.matrix_descriptor %[[ABASE]] {mn = 0, k = 0} : (!hopper.smem<align 1024>) -> !hopper.matrix_descriptor<k_major, swizzle 128, mn 8, k 64>
// CHECK-NEXT: hopper.wgmma_mma_async m64n8k16 bf16 %[[WDESC]], %[[ADESC]], %{{.*}} {a_major = "k", b_major = "k", scale_d = 1}
// The epilogue writes the transposed fragment: a thread's two neighbouring columns are
// rows m and m + 1 of C, 2 x 200 bytes apart, stored one element at a time.
// CHECK:      hopper.global_store %[[ROW:.*]], %{{.*}} if %{{.*}} : (i64, bf16) -> ()
// CHECK:      %[[ROUNDED:.*]] = arith.truncf %{{.*}} : f32 to bf16
// CHECK-NEXT: hopper.global_store %[[ROW]], %[[ROUNDED]] if %{{.*}} {offset = 400} : (i64, bf16) -> ()

// PTXAS: linear spills 0 stack 0
