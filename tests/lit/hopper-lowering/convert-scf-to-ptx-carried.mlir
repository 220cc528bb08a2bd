// RUN: mmcomp-opt %s -p convert-scf-to-ptx | filecheck %s
// RUN: mmcomp-opt %s -p convert-scf-to-ptx,convert-arith-to-ptx -t ptx | filecheck %s --check-prefix=PTX

// Loop-carried values as lower-schedule-to-hopper leaves them: registers that the loops
// carry as iter_args, as the ring's stage and the tile counter are. The K loop's body writes
// the stage it carries in place (ptx.assign) and yields it; the tile loop yields the K
// loop's result and the counter plus one. convert-scf-to-ptx carries each value in its
// init's register: the K loop in the tile loop's, the tile loop in the constant's, so the
// yields of a register already written in place become nothing, the counter's yield an
// assign at the end of the body (before the back edge), and the results read that register
// after the loop. An init that is a cast of an index value (the arithmetic's register, which
// others may read) is moved into a fresh register before the loop.

ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.entry @k(n : u32) {
    %n = ptx.ld_param n : !ptx.reg<u32>
    %stage0 = ptx.const 0 : !ptx.reg<u32>
    %count0 = ptx.const 0 : !ptx.reg<u32>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %n_index = builtin.unrealized_conversion_cast %n : !ptx.reg<u32> to index
    %start = builtin.unrealized_conversion_cast %c1 : index to !ptx.reg<u32>
    %stage, %count, %offset = scf.for %t = %c0 to %n_index step %c1 iter_args(%tile_stage = %stage0, %tile_count = %count0, %tile_offset = %start) -> (!ptx.reg<u32>, !ptx.reg<u32>, !ptx.reg<u32>) {
      %k_stage = scf.for %kb = %c0 to %c4 step %c1 iter_args(%s = %tile_stage) -> (!ptx.reg<u32>) {
        %one = ptx.const 1 : !ptx.reg<u32>
        %next = ptx.add %s, %one : !ptx.reg<u32>
        ptx.assign %s, %next : !ptx.reg<u32>
        scf.yield %s : !ptx.reg<u32>
      } {ptx.labels = ["loop_2", "loop_end_3"]}
      %one = ptx.const 1 : !ptx.reg<u32>
      %counted = ptx.add %tile_count, %one : !ptx.reg<u32>
      %doubled = ptx.add %tile_offset, %tile_offset : !ptx.reg<u32>
      scf.yield %k_stage, %counted, %doubled : !ptx.reg<u32>, !ptx.reg<u32>, !ptx.reg<u32>
    } {ptx.labels = ["loop_1", "loop_end_4"]}
    %total = ptx.add %stage, %count : !ptx.reg<u32>
    %all = ptx.add %total, %offset : !ptx.reg<u32>
    ptx.ret
  }
}

// CHECK:      %[[STAGE0:.*]] = ptx.const 0 : !ptx.reg<u32>
// CHECK-NEXT: %[[COUNT0:.*]] = ptx.const 0 : !ptx.reg<u32>
// CHECK:      %[[START:.*]] = builtin.unrealized_conversion_cast %c1 : index to !ptx.reg<u32>
// CHECK-NEXT: %[[OFFSET:.*]] = ptx.mov %[[START]] : !ptx.reg<u32>
// CHECK-NEXT: %[[LOWER:.*]] = builtin.unrealized_conversion_cast %c0 : index to !ptx.reg<u32>
// CHECK-NEXT: %[[T:.*]] = ptx.mov %[[LOWER]] : !ptx.reg<u32>
// CHECK:      ptx.label loop_1
// CHECK:      ptx.label loop_2
// CHECK-NEXT: %[[EXIT:.*]] = ptx.setp hs
// CHECK-NEXT: ptx.bra loop_end_3 if %[[EXIT]]
// CHECK-NEXT: %[[ONE:.*]] = ptx.const 1 : !ptx.reg<u32>
// CHECK-NEXT: %[[NEXT:.*]] = ptx.add %[[STAGE0]], %[[ONE]] : !ptx.reg<u32>
// CHECK-NEXT: ptx.assign %[[STAGE0]], %[[NEXT]] : !ptx.reg<u32>
// CHECK-NEXT: %[[STEP:.*]] = builtin.unrealized_conversion_cast %c1 : index to !ptx.reg<u32>
// CHECK-NEXT: %[[KB:.*]] = builtin.unrealized_conversion_cast %kb : index to !ptx.reg<u32>
// CHECK-NEXT: %[[KB_NEXT:.*]] = ptx.add %[[KB]], %[[STEP]] : !ptx.reg<u32>
// CHECK-NEXT: ptx.assign %[[KB]], %[[KB_NEXT]] : !ptx.reg<u32>
// CHECK-NEXT: ptx.bra loop_2
// CHECK-NEXT: ptx.label loop_end_3
// CHECK-NEXT: %[[ONE_1:.*]] = ptx.const 1 : !ptx.reg<u32>
// CHECK-NEXT: %[[COUNTED:.*]] = ptx.add %[[COUNT0]], %[[ONE_1]] : !ptx.reg<u32>
// CHECK-NEXT: %[[DOUBLED:.*]] = ptx.add %[[OFFSET]], %[[OFFSET]] : !ptx.reg<u32>
// CHECK-NEXT: ptx.assign %[[COUNT0]], %[[COUNTED]] : !ptx.reg<u32>
// CHECK-NEXT: ptx.assign %[[OFFSET]], %[[DOUBLED]] : !ptx.reg<u32>
// CHECK-NEXT: %{{.*}} = builtin.unrealized_conversion_cast %c1 : index to !ptx.reg<u32>
// CHECK-NEXT: %{{.*}} = builtin.unrealized_conversion_cast %t : index to !ptx.reg<u32>
// CHECK-NEXT: %{{.*}} = ptx.add
// CHECK-NEXT: ptx.assign
// CHECK-NEXT: ptx.bra loop_1
// CHECK-NEXT: ptx.label loop_end_4
// CHECK-NEXT: %[[TOTAL:.*]] = ptx.add %[[STAGE0]], %[[COUNT0]] : !ptx.reg<u32>
// CHECK-NEXT: %{{.*}} = ptx.add %[[TOTAL]], %[[OFFSET]] : !ptx.reg<u32>
// CHECK-NOT:  scf.

// PTX:      mov.u32 %r2, 0;
// PTX-NEXT: mov.u32 %r3, 0;
// PTX:      mov.u32 %r5, 1;
// PTX:      mov.b32 %r7, %r5;
// PTX-NEXT: mov.b32 %r8, %r4;
// PTX-NEXT: loop_1:
// PTX:      loop_2:
// PTX-NEXT: setp.hs.u32 %p2, %r9, %r6;
// PTX-NEXT: @%p2 bra loop_end_3;
// PTX-NEXT: mov.u32 %r10, 1;
// PTX-NEXT: add.u32 %r11, %r2, %r10;
// PTX-NEXT: mov.b32 %r2, %r11;
// PTX-NEXT: add.u32 %r12, %r9, %r5;
// PTX-NEXT: mov.b32 %r9, %r12;
// PTX-NEXT: bra loop_2;
// PTX-NEXT: loop_end_3:
// PTX-NEXT: mov.u32 %r13, 1;
// PTX-NEXT: add.u32 %r14, %r3, %r13;
// PTX-NEXT: add.u32 %r15, %r7, %r7;
// PTX-NEXT: mov.b32 %r3, %r14;
// PTX-NEXT: mov.b32 %r7, %r15;
// PTX-NEXT: add.u32 %r16, %r8, %r5;
// PTX-NEXT: mov.b32 %r8, %r16;
// PTX-NEXT: bra loop_1;
// PTX-NEXT: loop_end_4:
// PTX-NEXT: add.u32 %r17, %r2, %r3;
// PTX-NEXT: add.u32 %r18, %r17, %r7;
