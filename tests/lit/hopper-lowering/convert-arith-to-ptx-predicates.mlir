// RUN: mmcomp-opt %s -p convert-scf-to-ptx | filecheck %s --check-prefix=BRANCHES
// RUN: mmcomp-opt %s -p convert-scf-to-ptx,convert-arith-to-ptx | filecheck %s
// RUN: mmcomp-opt %s -p convert-scf-to-ptx,convert-arith-to-ptx -t ptx | filecheck %s --check-prefix=PTX

// The thread's identity as the lowering writes it: the thread index an index value
// (gpu.thread_id x, a read of %tid.x), thread 0 and the warpgroup as arith on it, the
// tests arith.cmpi giving i1. The i1 tests guard ptx ops themselves (`if %p`, `if not %p`,
// here also inside an scf.if, of a test made outside it; a ptx-only predicate read as an
// i1 guards as its register). A comparison that only predicates read (a guard, an
// arith.andi of i1 read so, an scf.if marked ptx.predicate) is the setp alone, and its
// guards read its predicate register; a conjunction of predicates (here with a ptx-only
// predicate cast to i1) is and.pred; the marked branch is guarded by its i1 condition
// until convert-arith-to-ptx. The unmarked branch on an i1 of the index arithmetic keeps
// its truth value: setp, selp of 1 or 0, setp.ne.

ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.entry @k() {
    %tid = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index
    %c0 = arith.constant 0 : index
    %leader = arith.cmpi eq, %tid, %c0 : index
    ptx.fence mbarrier_init if %leader
    %c7 = arith.constant 7 : index
    %warpgroup = arith.shrui %tid, %c7 : index
    %c0_1 = arith.constant 0 : index
    %is_producer = arith.cmpi eq, %warpgroup, %c0_1 : index
    scf.if %is_producer {
      ptx.setmaxnreg dec 40
    } else {
      %zero = ptx.const 0 : !ptx.reg<u32>
      %flag = ptx.const 1 : !ptx.reg<u32>
      %has_prev = ptx.setp ne %flag, %zero : (!ptx.reg<u32>, !ptx.reg<u32>) -> !ptx.reg<pred>
      %has_prev_cond = builtin.unrealized_conversion_cast %has_prev : !ptx.reg<pred> to i1
      %release = arith.andi %has_prev_cond, %leader : i1
      ptx.bar arrive 1 128 if %release
      ptx.bar sync 3 128 if not %leader
      ptx.bar sync 4 128 if %has_prev_cond
      scf.yield
    } {ptx.labels = ["consumer_1", "done_2"], ptx.predicate}
    %c4 = arith.constant 4 : index
    %low = arith.cmpi ult, %tid, %c4 : index
    scf.if %low {
      ptx.bar sync 2 128
    } {ptx.labels = ["end_3"]}
    ptx.ret
  }
}

// BRANCHES:      %[[LEADER:.*]] = arith.cmpi eq, %{{.*}}, %{{.*}} : index
// BRANCHES-NEXT: ptx.fence mbarrier_init if %[[LEADER]]
// BRANCHES:      %[[PRODUCER:.*]] = arith.cmpi eq, %{{.*}}, %{{.*}} : index
// BRANCHES-NEXT: ptx.bra consumer_1 if not %[[PRODUCER]]
// BRANCHES:      %[[RELEASE:.*]] = arith.andi %{{.*}}, %[[LEADER]] : i1
// BRANCHES-NEXT: ptx.bar arrive 1 128 if %[[RELEASE]]
// BRANCHES-NEXT: ptx.bar sync 3 128 if not %[[LEADER]]
// BRANCHES-NOT:  to !ptx.reg<pred>

// CHECK:      ptx.entry @k() {
// CHECK-NEXT:   %[[TID:.*]] = ptx.sreg tid.x : !ptx.reg<u32>
// CHECK-NEXT:   %[[C0:.*]] = ptx.const 0 : !ptx.reg<u32>
// CHECK-NEXT:   %[[LEADER:.*]] = ptx.setp eq %[[TID]], %[[C0]] : (!ptx.reg<u32>, !ptx.reg<u32>) -> !ptx.reg<pred>
// CHECK-NEXT:   ptx.fence mbarrier_init if %[[LEADER]]
// CHECK-NEXT:   %[[C7:.*]] = ptx.const 7 : !ptx.reg<u32>
// CHECK-NEXT:   %[[WG:.*]] = ptx.shr %[[TID]], %[[C7]] : !ptx.reg<u32>
// CHECK-NEXT:   %[[C0B:.*]] = ptx.const 0 : !ptx.reg<u32>
// CHECK-NEXT:   %[[PRODUCER:.*]] = ptx.setp eq %[[WG]], %[[C0B]] : (!ptx.reg<u32>, !ptx.reg<u32>) -> !ptx.reg<pred>
// CHECK-NEXT:   ptx.bra consumer_1 if not %[[PRODUCER]]
// CHECK-NEXT:   ptx.setmaxnreg dec 40
// CHECK-NEXT:   ptx.bra done_2
// CHECK-NEXT:   ptx.label consumer_1
// CHECK-NEXT:   %[[ZERO:.*]] = ptx.const 0 : !ptx.reg<u32>
// CHECK-NEXT:   %[[FLAG:.*]] = ptx.const 1 : !ptx.reg<u32>
// CHECK-NEXT:   %[[PREV:.*]] = ptx.setp ne %[[FLAG]], %[[ZERO]] : (!ptx.reg<u32>, !ptx.reg<u32>) -> !ptx.reg<pred>
// CHECK-NEXT:   %[[RELEASE:.*]] = ptx.and %[[PREV]], %[[LEADER]] : !ptx.reg<pred>
// CHECK-NEXT:   ptx.bar arrive 1 128 if %[[RELEASE]]
// CHECK-NEXT:   ptx.bar sync 3 128 if not %[[LEADER]]
// CHECK-NEXT:   ptx.bar sync 4 128 if %[[PREV]]
// CHECK-NEXT:   ptx.label done_2
// CHECK-NEXT:   %[[C4:.*]] = ptx.const 4 : !ptx.reg<u32>
// CHECK-NEXT:   %[[LOW:.*]] = ptx.setp lo %[[TID]], %[[C4]] : (!ptx.reg<u32>, !ptx.reg<u32>) -> !ptx.reg<pred>
// CHECK-NEXT:   %[[ONE:.*]] = ptx.const 1 : !ptx.reg<u32>
// CHECK-NEXT:   %[[NONE:.*]] = ptx.const 0 : !ptx.reg<u32>
// CHECK-NEXT:   %[[TRUTH:.*]] = ptx.selp %[[ONE]], %[[NONE]], %[[LOW]] : (!ptx.reg<u32>, !ptx.reg<u32>, !ptx.reg<pred>) -> !ptx.reg<u32>
// CHECK-NEXT:   %[[Z:.*]] = ptx.const 0 : !ptx.reg<u32>
// CHECK-NEXT:   %[[TAKEN:.*]] = ptx.setp ne %[[TRUTH]], %[[Z]] : (!ptx.reg<u32>, !ptx.reg<u32>) -> !ptx.reg<pred>
// CHECK-NEXT:   ptx.bra end_3 if not %[[TAKEN]]
// CHECK-NEXT:   ptx.bar sync 2 128
// CHECK-NEXT:   ptx.label end_3
// CHECK-NEXT:   ptx.ret
// CHECK-NEXT: }
// CHECK-NOT:  arith.
// CHECK-NOT:  unrealized_conversion_cast

// PTX:        mov.u32 %r1, %tid.x;
// PTX-NEXT:   mov.u32 %r2, 0;
// PTX-NEXT:   setp.eq.u32 %p1, %r1, %r2;
// PTX-NEXT:   @%p1 fence.mbarrier_init.release.cluster;
// PTX-NEXT:   mov.u32 %r3, 7;
// PTX-NEXT:   shr.u32 %r4, %r1, %r3;
// PTX-NEXT:   mov.u32 %r5, 0;
// PTX-NEXT:   setp.eq.u32 %p2, %r4, %r5;
// PTX-NEXT:   @!%p2 bra consumer_1;
// PTX:        and.pred %p4, %p3, %p1;
// PTX-NEXT:   @%p4 bar.arrive 1, 128;
// PTX-NEXT:   @!%p1 bar.sync 3, 128;
// PTX-NEXT:   @%p3 bar.sync 4, 128;
