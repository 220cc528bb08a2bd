// RUN: not mmcomp-opt %s -p convert-arith-to-ptx 2>&1 | filecheck %s

// An arith.addi marked ptx.mad lowers with the arith.muli it adds to as one mad: that
// product must be its left operand and read by nothing else (here a ptx op reads it too).

ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.entry @k() {
    %tid = ptx.sreg tid.x : !ptx.reg<u32>
    %tid_index = builtin.unrealized_conversion_cast %tid : !ptx.reg<u32> to index
    %c16 = arith.constant 16 : index
    %scaled = arith.muli %tid_index, %c16 : index
    %address = arith.addi %scaled, %tid_index {ptx.mad} : index
    %scaled_reg = builtin.unrealized_conversion_cast %scaled : index to !ptx.reg<u32>
    %address_reg = builtin.unrealized_conversion_cast %address : index to !ptx.reg<u32>
    %sum = ptx.add %address_reg, %scaled_reg : !ptx.reg<u32>
    ptx.ret
  }
}

// CHECK: convert-arith-to-ptx: an arith.addi marked ptx.mad must add to the result of an arith.muli that nothing else reads
