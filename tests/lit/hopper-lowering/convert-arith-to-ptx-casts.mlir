// RUN: mmcomp-opt %s -p convert-arith-to-ptx | filecheck %s

// A runtime extent's tile count: arith.ceildivui becomes (a + b - 1) / b. A register read
// as an index and cast back to its own type (what convert-hopper-to-ptx leaves where a
// copy's coordinate is a register of the lowering) folds to the register.

ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.entry @k(m : u32) {
    %m = ptx.ld_param m : !ptx.reg<u32>
    %m_index = builtin.unrealized_conversion_cast %m : !ptx.reg<u32> to index
    %c128 = arith.constant 128 : index
    %tiles = arith.ceildivui %m_index, %c128 : index
    %tiles_reg = builtin.unrealized_conversion_cast %tiles : index to !ptx.reg<u32>
    %back = builtin.unrealized_conversion_cast %m_index : index to !ptx.reg<u32>
    %sum = ptx.add %tiles_reg, %back : !ptx.reg<u32>
    ptx.ret
  }
}

// CHECK:      %[[M:.*]] = ptx.ld_param m : !ptx.reg<u32>
// CHECK-NEXT: %[[C128:.*]] = ptx.const 128 : !ptx.reg<u32>
// CHECK-NEXT: %[[ONE:.*]] = ptx.const 1 : !ptx.reg<u32>
// CHECK-NEXT: %[[LESS:.*]] = ptx.sub %[[C128]], %[[ONE]] : !ptx.reg<u32>
// CHECK-NEXT: %[[TOTAL:.*]] = ptx.add %[[M]], %[[LESS]] : !ptx.reg<u32>
// CHECK-NEXT: %[[TILES:.*]] = ptx.div %[[TOTAL]], %[[C128]] : !ptx.reg<u32>
// CHECK-NEXT: %{{.*}} = ptx.add %[[TILES]], %[[M]] : !ptx.reg<u32>
// CHECK-NOT:  unrealized_conversion_cast
