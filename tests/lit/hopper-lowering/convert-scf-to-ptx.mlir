// RUN: mmcomp-opt %s -p convert-scf-to-ptx | filecheck %s
// RUN: mmcomp-opt %s -p convert-scf-to-ptx,convert-arith-to-ptx -t ptx | filecheck %s --check-prefix=PTX
// RUN: not mmcomp-opt %s -p convert-arith-to-ptx 2>&1 | filecheck %s --check-prefix=ORDER
// RUN: not mmcomp-opt %s -t ptx 2>&1 | filecheck %s --check-prefix=UNLOWERED

// The control flow as lower-schedule-to-hopper leaves it: scf.for on index bounds (a
// register's through a cast), its induction variable read as a register through a cast;
// scf.if on a predicate register cast to i1, on its negation (arith.xori with true) or on
// an i1 of the index arithmetic. Each op carries its labels. convert-scf-to-ptx writes the
// labels and branches: the loop's mov / setp.hs / back edge, the branch around a
// then-block to the else label or the end; the elected thread's scf.if ends at the end
// label of the scf.if around it, which places it once.

ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.entry @k(n : u32) {
    %tid = ptx.sreg tid.x : !ptx.reg<u32>
    %n = ptx.ld_param n : !ptx.reg<u32>
    %zero = ptx.const 0 : !ptx.reg<u32>
    %is_first = ptx.setp eq %tid, %zero : (!ptx.reg<u32>, !ptx.reg<u32>) -> !ptx.reg<pred>
    %first = builtin.unrealized_conversion_cast %is_first : !ptx.reg<pred> to i1
    %c0 = arith.constant 0 : index
    %c2 = arith.constant 2 : index
    %n_index = builtin.unrealized_conversion_cast %n : !ptx.reg<u32> to index
    scf.if %first {
      %elected = builtin.unrealized_conversion_cast %is_first : !ptx.reg<pred> to i1
      scf.if %elected {
        scf.for %i = %c0 to %n_index step %c2 {
          %i_reg = builtin.unrealized_conversion_cast %i : index to !ptx.reg<u32>
          %sum = ptx.add %i_reg, %tid : !ptx.reg<u32>
          scf.yield
        } {ptx.labels = ["loop_3", "loop_end_4"]}
        scf.yield
      } {ptx.labels = ["done_2"]}
      scf.yield
    } else {
      %true = arith.constant true
      %other = arith.xori %first, %true : i1
      scf.if %other {
        ptx.bar sync 1
        scf.yield
      } {ptx.labels = ["skip_5"]}
      %odd = arith.cmpi ult, %c0, %n_index : index
      scf.if %odd {
        ptx.bar sync 2
        scf.yield
      } else {
        ptx.bar sync 3
        scf.yield
      } {ptx.labels = ["else_6", "endif_7"]}
      scf.yield
    } {ptx.labels = ["consumer_1", "done_2"]}
    ptx.ret
  }
}

// CHECK:      %[[IS_FIRST:.*]] = ptx.setp eq %{{.*}}, %{{.*}} : (!ptx.reg<u32>, !ptx.reg<u32>) -> !ptx.reg<pred>
// CHECK:      ptx.bra consumer_1 if not %[[IS_FIRST]]
// CHECK-NEXT: %{{.*}} = builtin.unrealized_conversion_cast %[[IS_FIRST]] : !ptx.reg<pred> to i1
// CHECK-NEXT: ptx.bra done_2 if not %[[IS_FIRST]]
// CHECK-NEXT: %[[LOWER:.*]] = builtin.unrealized_conversion_cast %c0 : index to !ptx.reg<u32>
// CHECK-NEXT: %[[IV:.*]] = ptx.mov %[[LOWER]] : !ptx.reg<u32>
// CHECK-NEXT: %[[I:.*]] = builtin.unrealized_conversion_cast %[[IV]] : !ptx.reg<u32> to index
// CHECK-NEXT: ptx.label loop_3
// CHECK-NEXT: %[[EXIT:.*]] = ptx.setp hs %[[IV]], %n : (!ptx.reg<u32>, !ptx.reg<u32>) -> !ptx.reg<pred>
// CHECK-NEXT: ptx.bra loop_end_4 if %[[EXIT]]
// CHECK-NEXT: %[[I_REG:.*]] = builtin.unrealized_conversion_cast %[[I]] : index to !ptx.reg<u32>
// CHECK-NEXT: %{{.*}} = ptx.add %[[I_REG]], %tid : !ptx.reg<u32>
// CHECK-NEXT: %[[STEP:.*]] = builtin.unrealized_conversion_cast %c2 : index to !ptx.reg<u32>
// CHECK-NEXT: %[[AT:.*]] = builtin.unrealized_conversion_cast %[[I]] : index to !ptx.reg<u32>
// CHECK-NEXT: %[[NEXT:.*]] = ptx.add %[[AT]], %[[STEP]] : !ptx.reg<u32>
// CHECK-NEXT: ptx.assign %[[AT]], %[[NEXT]] : !ptx.reg<u32>
// CHECK-NEXT: ptx.bra loop_3
// CHECK-NEXT: ptx.label loop_end_4
// CHECK-NEXT: ptx.bra done_2
// CHECK-NEXT: ptx.label consumer_1
// CHECK-NEXT: ptx.bra skip_5 if %[[IS_FIRST]]
// CHECK-NEXT: ptx.bar sync 1
// CHECK-NEXT: ptx.label skip_5
// CHECK-NEXT: %[[ODD:.*]] = arith.cmpi ult, %c0, %n_index : index
// CHECK-NEXT: %[[ODD_REG:.*]] = builtin.unrealized_conversion_cast %[[ODD]] : i1 to !ptx.reg<u32>
// CHECK-NEXT: %[[ZERO:.*]] = ptx.const 0 : !ptx.reg<u32>
// CHECK-NEXT: %[[TAKEN:.*]] = ptx.setp ne %[[ODD_REG]], %[[ZERO]] : (!ptx.reg<u32>, !ptx.reg<u32>) -> !ptx.reg<pred>
// CHECK-NEXT: ptx.bra else_6 if not %[[TAKEN]]
// CHECK-NEXT: ptx.bar sync 2
// CHECK-NEXT: ptx.bra endif_7
// CHECK-NEXT: ptx.label else_6
// CHECK-NEXT: ptx.bar sync 3
// CHECK-NEXT: ptx.label endif_7
// CHECK-NEXT: ptx.label done_2
// CHECK-NEXT: ptx.ret
// CHECK-NOT:  scf.
// CHECK-NOT:  arith.xori

// PTX:        setp.eq.u32 %p1, %r1, %r3;
// PTX:        @!%p1 bra consumer_1;
// PTX-NEXT:   @!%p1 bra done_2;
// PTX-NEXT:   mov.b32 %r6, %r4;
// PTX-NEXT: loop_3:
// PTX-NEXT:   setp.hs.u32 %p2, %r6, %r2;
// PTX-NEXT:   @%p2 bra loop_end_4;
// PTX-NEXT:   add.u32 %r7, %r6, %r1;
// PTX-NEXT:   add.u32 %r8, %r6, %r5;
// PTX-NEXT:   mov.b32 %r6, %r8;
// PTX-NEXT:   bra loop_3;
// PTX-NEXT: loop_end_4:
// PTX-NEXT:   bra done_2;
// PTX-NEXT: consumer_1:
// PTX-NEXT:   @%p1 bra skip_5;
// PTX-NEXT:   bar.sync 1;
// PTX-NEXT: skip_5:
// PTX:        setp.ne.u32 %p4, %r11, %r12;
// PTX-NEXT:   @!%p4 bra else_6;
// PTX-NEXT:   bar.sync 2;
// PTX-NEXT:   bra endif_7;
// PTX-NEXT: else_6:
// PTX-NEXT:   bar.sync 3;
// PTX-NEXT: endif_7:
// PTX-NEXT: done_2:
// PTX-NEXT:   ret;

// ORDER:      convert-arith-to-ptx: ptx.entry @k still holds scf.if: run convert-scf-to-ptx first (the loops' bounds and the branches' conditions read the index arithmetic this pass lowers)

// UNLOWERED:  ptx emission: scf.if has no direct PTX text: run convert-scf-to-ptx before emitting PTX
