// RUN: mmcomp-opt %s -p convert-arith-to-ptx | filecheck %s
// RUN: mmcomp-opt %s -p convert-arith-to-ptx -t ptx | filecheck %s --check-prefix=PTX
// RUN: not mmcomp-opt %s -t ptx 2>&1 | filecheck %s --check-prefix=UNLOWERED

// The index arithmetic as lower-schedule-to-hopper leaves it: arith on index in the entry,
// read by ptx (and hopper) ops through casts to u32, a loop's induction variable a register
// read as an index through a cast. convert-arith-to-ptx lowers each op to the 32-bit
// unsigned instructions of the same meaning and folds the casts away.

ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.entry @k() {
    %c3 = arith.constant 3 : index
    %c128 = arith.constant 128 : index
    %cta = "gpu.block_id"() <{dimension = #gpu<dim x>}> : () -> index
    %grid = "gpu.grid_dim"() <{dimension = #gpu<dim x>}> : () -> index
    %cta_reg = builtin.unrealized_conversion_cast %cta : index to !ptx.reg<u32>
    %unit = ptx.mov %cta_reg : !ptx.reg<u32>
    %iv = builtin.unrealized_conversion_cast %unit : !ptx.reg<u32> to index
    %tile_n = arith.divui %iv, %c3 : index
    %tile_m = arith.remui %iv, %c3 : index
    %m0 = arith.muli %tile_m, %c128 : index
    %sum = arith.addi %m0, %grid : index
    %diff = arith.subi %sum, %tile_n : index
    %low = arith.minui %diff, %c128 : index
    %high = arith.maxui %low, %c3 : index
    %below = arith.cmpi ult, %tile_m, %tile_n : index
    %pick = arith.select %below, %tile_m, %high : index
    %pick_reg = builtin.unrealized_conversion_cast %pick : index to !ptx.reg<u32>
    %below_reg = builtin.unrealized_conversion_cast %below : i1 to !ptx.reg<u32>
    %out = ptx.add %pick_reg, %below_reg : !ptx.reg<u32>
    ptx.ret
  }
}

// CHECK:      ptx.entry @k() {
// CHECK-NEXT:   %[[C3:.*]] = ptx.const 3 : !ptx.reg<u32>
// CHECK-NEXT:   %[[C128:.*]] = ptx.const 128 : !ptx.reg<u32>
// CHECK-NEXT:   %[[CTA:.*]] = ptx.sreg ctaid.x : !ptx.reg<u32>
// CHECK-NEXT:   %[[GRID:.*]] = ptx.sreg nctaid.x : !ptx.reg<u32>
// CHECK-NEXT:   %[[UNIT:.*]] = ptx.mov %[[CTA]] : !ptx.reg<u32>
// CHECK-NEXT:   %[[N:.*]] = ptx.div %[[UNIT]], %[[C3]] : !ptx.reg<u32>
// CHECK-NEXT:   %[[M:.*]] = ptx.rem %[[UNIT]], %[[C3]] : !ptx.reg<u32>
// CHECK-NEXT:   %[[M0:.*]] = ptx.mul %[[M]], %[[C128]] : !ptx.reg<u32>
// CHECK-NEXT:   %[[SUM:.*]] = ptx.add %[[M0]], %[[GRID]] : !ptx.reg<u32>
// CHECK-NEXT:   %[[DIFF:.*]] = ptx.sub %[[SUM]], %[[N]] : !ptx.reg<u32>
// CHECK-NEXT:   %[[LOW:.*]] = ptx.min %[[DIFF]], %[[C128]] : !ptx.reg<u32>
// CHECK-NEXT:   %[[HIGH:.*]] = ptx.max %[[LOW]], %[[C3]] : !ptx.reg<u32>
// CHECK-NEXT:   %[[LT:.*]] = ptx.setp lo %[[M]], %[[N]] : (!ptx.reg<u32>, !ptx.reg<u32>) -> !ptx.reg<pred>
// CHECK-NEXT:   %[[ONE:.*]] = ptx.const 1 : !ptx.reg<u32>
// CHECK-NEXT:   %[[ZERO:.*]] = ptx.const 0 : !ptx.reg<u32>
// CHECK-NEXT:   %[[BELOW:.*]] = ptx.selp %[[ONE]], %[[ZERO]], %[[LT]] : (!ptx.reg<u32>, !ptx.reg<u32>, !ptx.reg<pred>) -> !ptx.reg<u32>
// CHECK-NEXT:   %[[Z:.*]] = ptx.const 0 : !ptx.reg<u32>
// CHECK-NEXT:   %[[NE:.*]] = ptx.setp ne %[[BELOW]], %[[Z]] : (!ptx.reg<u32>, !ptx.reg<u32>) -> !ptx.reg<pred>
// CHECK-NEXT:   %[[PICK:.*]] = ptx.selp %[[M]], %[[HIGH]], %[[NE]] : (!ptx.reg<u32>, !ptx.reg<u32>, !ptx.reg<pred>) -> !ptx.reg<u32>
// CHECK-NEXT:   %{{.*}} = ptx.add %[[PICK]], %[[BELOW]] : !ptx.reg<u32>
// CHECK-NEXT:   ptx.ret
// CHECK-NEXT: }
// CHECK-NOT:  arith.
// CHECK-NOT:  unrealized_conversion_cast

// PTX:        mov.u32 %r1, 3;
// PTX-NEXT:   mov.u32 %r2, 128;
// PTX-NEXT:   mov.u32 %r3, %ctaid.x;
// PTX-NEXT:   mov.u32 %r4, %nctaid.x;
// PTX-NEXT:   mov.b32 %r5, %r3;
// PTX-NEXT:   div.u32 %r6, %r5, %r1;
// PTX-NEXT:   rem.u32 %r7, %r5, %r1;

// UNLOWERED:  ptx emission: arith.constant has no direct PTX text: run convert-arith-to-ptx before emitting PTX
