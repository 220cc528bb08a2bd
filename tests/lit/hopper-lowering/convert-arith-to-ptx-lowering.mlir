// RUN: mmcomp-opt %s -p convert-arith-to-ptx | filecheck %s
// RUN: mmcomp-opt %s -p convert-arith-to-ptx -t ptx | filecheck %s --check-prefix=PTX

// The lowering's own arithmetic as lower-schedule-to-hopper writes it: a consumer thread's
// lane and warp (andi, shrui, xori on %tid.x read as an index), a slot address as one mad
// (an arith.muli and the arith.addi marked ptx.mad that reads it), comparisons read by ptx
// ops as predicates (a guard, the i1 itself: the setp alone), and the ping-pong trip count, 0 where lb >= ub (a
// select on a predicate into the fresh quotient: one guarded mov; on a register that
// something else reads: a selp).

ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.entry @k() {
    %tid = ptx.sreg tid.x : !ptx.reg<u32>
    %tid_index = builtin.unrealized_conversion_cast %tid : !ptx.reg<u32> to index
    %c31 = arith.constant 31 : index
    %lane = arith.andi %tid_index, %c31 : index
    %c5 = arith.constant 5 : index
    %warp = arith.shrui %tid_index, %c5 : index
    %chunk = arith.xori %lane, %warp : index
    %c16 = arith.constant 16 : index
    %scaled = arith.muli %chunk, %c16 : index
    %address = arith.addi %scaled, %warp {ptx.mad} : index
    %address_reg = builtin.unrealized_conversion_cast %address : index to !ptx.reg<u32>
    %sum = ptx.add %address_reg, %tid : !ptx.reg<u32>
    %c4 = arith.constant 4 : index
    %first = arith.cmpi ult, %lane, %c4 : index
    ptx.bar sync 1 if %first
    %c0 = arith.constant 0 : index
    %c80 = arith.constant 80 : index
    %span = arith.subi %c80, %warp : index
    %trips = arith.ceildivui %span, %c5 : index
    %over = arith.cmpi uge, %warp, %c80 : index
    %over_pred = builtin.unrealized_conversion_cast %over : i1 to !ptx.reg<pred>
    %over_cond = builtin.unrealized_conversion_cast %over_pred : !ptx.reg<pred> to i1
    %counted = arith.select %over_cond, %c0, %trips : index
    %counted_reg = builtin.unrealized_conversion_cast %counted : index to !ptx.reg<u32>
    %picked = arith.select %over_cond, %c0, %lane : index
    %picked_reg = builtin.unrealized_conversion_cast %picked : index to !ptx.reg<u32>
    %both = ptx.add %counted_reg, %picked_reg : !ptx.reg<u32>
    ptx.ret
  }
}

// CHECK:      ptx.entry @k() {
// CHECK-NEXT:   %[[TID:.*]] = ptx.sreg tid.x : !ptx.reg<u32>
// CHECK-NEXT:   %[[C31:.*]] = ptx.const 31 : !ptx.reg<u32>
// CHECK-NEXT:   %[[LANE:.*]] = ptx.and %[[TID]], %[[C31]] : !ptx.reg<u32>
// CHECK-NEXT:   %[[C5:.*]] = ptx.const 5 : !ptx.reg<u32>
// CHECK-NEXT:   %[[WARP:.*]] = ptx.shr %[[TID]], %[[C5]] : !ptx.reg<u32>
// CHECK-NEXT:   %[[CHUNK:.*]] = ptx.xor %[[LANE]], %[[WARP]] : !ptx.reg<u32>
// CHECK-NEXT:   %[[C16:.*]] = ptx.const 16 : !ptx.reg<u32>
// CHECK-NEXT:   %[[ADDRESS:.*]] = ptx.mad %[[CHUNK]], %[[C16]], %[[WARP]] : !ptx.reg<u32>
// CHECK-NEXT:   %{{.*}} = ptx.add %[[ADDRESS]], %[[TID]] : !ptx.reg<u32>
// CHECK-NEXT:   %[[C4:.*]] = ptx.const 4 : !ptx.reg<u32>
// CHECK-NEXT:   %[[FIRST:.*]] = ptx.setp lo %[[LANE]], %[[C4]] : (!ptx.reg<u32>, !ptx.reg<u32>) -> !ptx.reg<pred>
// CHECK-NEXT:   ptx.bar sync 1 if %[[FIRST]]
// CHECK-NEXT:   %[[C0:.*]] = ptx.const 0 : !ptx.reg<u32>
// CHECK-NEXT:   %[[C80:.*]] = ptx.const 80 : !ptx.reg<u32>
// CHECK-NEXT:   %[[SPAN:.*]] = ptx.sub %[[C80]], %[[WARP]] : !ptx.reg<u32>
// CHECK-NEXT:   %[[ONE:.*]] = ptx.const 1 : !ptx.reg<u32>
// CHECK-NEXT:   %[[LESS:.*]] = ptx.sub %[[C5]], %[[ONE]] : !ptx.reg<u32>
// CHECK-NEXT:   %[[TOTAL:.*]] = ptx.add %[[SPAN]], %[[LESS]] : !ptx.reg<u32>
// CHECK-NEXT:   %[[TRIPS:.*]] = ptx.div %[[TOTAL]], %[[C5]] : !ptx.reg<u32>
// CHECK-NEXT:   %[[OVER:.*]] = ptx.setp hs %[[WARP]], %[[C80]] : (!ptx.reg<u32>, !ptx.reg<u32>) -> !ptx.reg<pred>
// CHECK-NEXT:   ptx.assign %[[TRIPS]], %[[C0]] if %[[OVER]] : !ptx.reg<u32>
// CHECK-NEXT:   %[[PICKED:.*]] = ptx.selp %[[C0]], %[[LANE]], %[[OVER]] : (!ptx.reg<u32>, !ptx.reg<u32>, !ptx.reg<pred>) -> !ptx.reg<u32>
// CHECK-NEXT:   %{{.*}} = ptx.add %[[TRIPS]], %[[PICKED]] : !ptx.reg<u32>
// CHECK-NEXT:   ptx.ret
// CHECK-NEXT: }
// CHECK-NOT:  arith.
// CHECK-NOT:  unrealized_conversion_cast

// PTX:        mov.u32 %r1, %tid.x;
// PTX-NEXT:   mov.u32 %r2, 31;
// PTX-NEXT:   and.b32 %r3, %r1, %r2;
// PTX-NEXT:   mov.u32 %r4, 5;
// PTX-NEXT:   shr.u32 %r5, %r1, %r4;
// PTX-NEXT:   xor.b32 %r6, %r3, %r5;
// PTX-NEXT:   mov.u32 %r7, 16;
// PTX-NEXT:   mad.lo.u32 %r8, %r6, %r7, %r5;
// PTX:        setp.lo.u32 %p1, %r3, %r{{[0-9]+}};
// PTX-NEXT:   @%p1 bar.sync 1;
// PTX:        div.u32 %r17, %r16, %r4;
// PTX-NEXT:   setp.hs.u32 %p2, %r5, %r12;
// PTX-NEXT:   @%p2 mov.b32 %r17, %r11;
// PTX-NEXT:   selp.u32 %r18, %r11, %r3, %p2;
// PTX-NEXT:   add.u32 %r19, %r17, %r18;
