// RUN: mmcomp-opt %s | mmcomp-opt | filecheck %s --check-prefix=IR
// RUN: mmcomp-opt %s -p convert-hopper-to-ptx | filecheck %s --check-prefix=HOPPER
// RUN: mmcomp-opt %s -p convert-hopper-to-ptx,convert-scf-to-ptx | filecheck %s --check-prefix=SCF
// RUN: mmcomp-opt %s -p convert-scf-to-ptx,convert-hopper-to-ptx | filecheck %s --check-prefix=SCF
// RUN: mmcomp-opt %s -p convert-hopper-to-ptx,convert-scf-to-ptx,convert-arith-to-ptx -t ptx | filecheck %s --check-prefix=PTX

// The accumulator as a value, as lower-schedule-to-hopper leaves a K loop: a zero
// accumulator (no registers at this level), carried by the loop as an iter_arg, each
// wgmma taking it and returning the next, the body yielding the last, and the code after
// the loop reading the loop's result element by element (f32 values, rounded in pairs
// into bf16 by hopper.truncf_pair).
//
// convert-hopper-to-ptx makes the zero accumulator four f32 registers set to 0.0 and
// holds every accumulator the loop carries in them (its init's): the wgmmas update them
// in place and the element reads are those registers (the pair one cvt of two of them).
// convert-scf-to-ptx then carries the accumulator with no move and no assign (its yield is
// held in the same registers), and erases the casts that carried it. Lowering the loop first gives the same instructions.

hopper.kernel @k() shared @smem align 1024 {
  %smem = ptx.addr_of smem : !ptx.reg<u32>
  %tile = builtin.unrealized_conversion_cast %smem : !ptx.reg<u32> to !hopper.smem<align 1024>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = hopper.zero_accumulator : !hopper.accumulator<64x8xf32>
  %sum = scf.for %kb = %c0 to %c4 step %c1 iter_args(%acc = %zero) -> (!hopper.accumulator<64x8xf32>) {
    %a = hopper.matrix_descriptor %tile {mn = 0, k = 0} : (!hopper.smem<align 1024>) -> !hopper.matrix_descriptor<k_major, swizzle 128, mn 64, k 64>
    %b = hopper.matrix_descriptor %tile {mn = 0, k = 16} : (!hopper.smem<align 1024>) -> !hopper.matrix_descriptor<k_major, swizzle 128, mn 8, k 64>
    ptx.wgmma_fence
    %d1 = hopper.wgmma_mma_async m64n8k16 bf16 %a, %b, %acc {a_major = "k", b_major = "k", scale_d = 1} : (!hopper.matrix_descriptor<k_major, swizzle 128, mn 64, k 64>, !hopper.matrix_descriptor<k_major, swizzle 128, mn 8, k 64>, !hopper.accumulator<64x8xf32>) -> !hopper.accumulator<64x8xf32>
    %d2 = hopper.wgmma_mma_async m64n8k16 bf16 %b, %a, %d1 {a_major = "k", b_major = "k", scale_d = 1} : (!hopper.matrix_descriptor<k_major, swizzle 128, mn 8, k 64>, !hopper.matrix_descriptor<k_major, swizzle 128, mn 64, k 64>, !hopper.accumulator<64x8xf32>) -> !hopper.accumulator<64x8xf32>
    ptx.wgmma_commit
    ptx.wgmma_wait 0
    scf.yield %d2 : !hopper.accumulator<64x8xf32>
  } {ptx.labels = ["loop_1", "loop_end_2"]}
  %e0 = hopper.accumulator_element %sum[0] : !hopper.accumulator<64x8xf32>
  %e3 = hopper.accumulator_element %sum[3] : !hopper.accumulator<64x8xf32>
  %pair = hopper.truncf_pair %e0, %e3 : vector<2xbf16>
  %pair_reg = builtin.unrealized_conversion_cast %pair : vector<2xbf16> to !ptx.reg<bf16x2>
  ptx.st shared %smem, %pair_reg : (!ptx.reg<u32>, !ptx.reg<bf16x2>) -> ()
  ptx.ret
}

// IR:      %zero = hopper.zero_accumulator : !hopper.accumulator<64x8xf32>
// IR-NEXT: %sum = scf.for %kb = %c0 to %c4 step %c1 iter_args(%acc = %zero) -> (!hopper.accumulator<64x8xf32>) {
// IR:      %d1 = hopper.wgmma_mma_async m64n8k16 bf16 %a, %b, %acc {a_major = "k", b_major = "k", scale_d = 1} : (!hopper.matrix_descriptor<k_major, swizzle 128, mn 64, k 64>, !hopper.matrix_descriptor<k_major, swizzle 128, mn 8, k 64>, !hopper.accumulator<64x8xf32>) -> !hopper.accumulator<64x8xf32>
// IR-NEXT: %d2 = hopper.wgmma_mma_async m64n8k16 bf16 %b, %a, %d1
// IR:      scf.yield %d2 : !hopper.accumulator<64x8xf32>
// IR:      %e0 = hopper.accumulator_element %sum[0] : !hopper.accumulator<64x8xf32>
// IR-NEXT: %e3 = hopper.accumulator_element %sum[3] : !hopper.accumulator<64x8xf32>
// IR-NEXT: %pair = hopper.truncf_pair %e0, %e3 : vector<2xbf16>

// HOPPER:      %[[R0:.*]] = ptx.const 0.0 : !ptx.reg<f32>
// HOPPER-NEXT: %[[R1:.*]] = ptx.const 0.0 : !ptx.reg<f32>
// HOPPER-NEXT: %[[R2:.*]] = ptx.const 0.0 : !ptx.reg<f32>
// HOPPER-NEXT: %[[R3:.*]] = ptx.const 0.0 : !ptx.reg<f32>
// HOPPER-NEXT: %[[ZERO:.*]] = builtin.unrealized_conversion_cast %[[R0]], %[[R1]], %[[R2]], %[[R3]] : !ptx.reg<f32>, !ptx.reg<f32>, !ptx.reg<f32>, !ptx.reg<f32> to !hopper.accumulator<64x8xf32>
// HOPPER-NEXT: %[[SUM:.*]] = scf.for %{{.*}} = %c0 to %c4 step %c1 iter_args(%{{.*}} = %[[ZERO]]) -> (!hopper.accumulator<64x8xf32>) {
// HOPPER:      ptx.wgmma 8 bf16 0 0 %{{.*}}, %{{.*}}, %{{.*}}, %[[R0]], %[[R1]], %[[R2]], %[[R3]]
// HOPPER:      ptx.wgmma 8 bf16 0 0 %{{.*}}, %{{.*}}, %{{.*}}, %[[R0]], %[[R1]], %[[R2]], %[[R3]]
// HOPPER-NEXT: %[[D2:.*]] = builtin.unrealized_conversion_cast %[[R0]], %[[R1]], %[[R2]], %[[R3]] : {{.*}} to !hopper.accumulator<64x8xf32>
// HOPPER:      scf.yield %[[D2]] : !hopper.accumulator<64x8xf32>
// HOPPER:      ptx.cvt_pack %[[R3]], %[[R0]]
// HOPPER-NOT:  hopper.

// SCF:          %[[R0:.*]] = ptx.const 0.0 : !ptx.reg<f32>
// SCF-NEXT:     %[[R1:.*]] = ptx.const 0.0 : !ptx.reg<f32>
// SCF-NEXT:     %[[R2:.*]] = ptx.const 0.0 : !ptx.reg<f32>
// SCF-NEXT:     %[[R3:.*]] = ptx.const 0.0 : !ptx.reg<f32>
// SCF-NOT:      ptx.mov %[[R0]]
// SCF:          ptx.label loop_1
// SCF:          ptx.wgmma 8 bf16 0 0 %{{.*}}, %{{.*}}, %{{.*}}, %[[R0]], %[[R1]], %[[R2]], %[[R3]]
// SCF:          ptx.wgmma 8 bf16 0 0 %{{.*}}, %{{.*}}, %{{.*}}, %[[R0]], %[[R1]], %[[R2]], %[[R3]]
// SCF-NEXT:     ptx.wgmma_commit
// SCF-NEXT:     ptx.wgmma_wait 0
// SCF-NOT:      ptx.assign %[[R0]]
// SCF:          ptx.bra loop_1
// SCF-NEXT:     ptx.label loop_end_2
// SCF-NEXT:     ptx.cvt_pack %[[R3]], %[[R0]]
// SCF-NOT:      hopper.
// SCF-NOT:      builtin.unrealized_conversion_cast {{.*}} to !hopper.accumulator

// PTX:      mov.f32 %f1, 0f00000000;
// PTX:      mov.f32 %f4, 0f00000000;
// PTX:      wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%f1, %f2, %f3, %f4}
// PTX:      wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%f1, %f2, %f3, %f4}
// PTX:      cvt.rn.bf16x2.f32 %{{.*}}, %f4, %f1;
