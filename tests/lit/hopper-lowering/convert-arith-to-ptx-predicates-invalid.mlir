// RUN: mmcomp-opt %s -p convert-arith-to-ptx --verify-diagnostics --split-input-file | filecheck %s

// The kernels' thread blocks are one-dimensional: only %tid.x is read.

ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.entry @k() {
    %tid = "gpu.thread_id"() <{dimension = #gpu<dim y>}> : () -> index
    %tid_reg = builtin.unrealized_conversion_cast %tid : index to !ptx.reg<u32>
    %c1 = ptx.const 1 : !ptx.reg<u32>
    %sum = ptx.add %tid_reg, %c1 : !ptx.reg<u32>
    ptx.ret
  }
}

// CHECK: convert-arith-to-ptx: gpu.thread_id y: expected dimension x (the kernels' thread blocks are one-dimensional)

// -----

// A conjunction read as a predicate combines predicates: here its right operand is a
// comparison that an index op also reads (a u32 truth value), not a predicate.

ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.entry @k() {
    %tid = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index
    %c0 = arith.constant 0 : index
    %leader = arith.cmpi eq, %tid, %c0 : index
    %c4 = arith.constant 4 : index
    %low = arith.cmpi ult, %tid, %c4 : index
    %truth = arith.select %low, %c4, %c0 : index
    %truth_reg = builtin.unrealized_conversion_cast %truth : index to !ptx.reg<u32>
    %both = arith.andi %leader, %low : i1
    ptx.bar sync 1 if %both
    ptx.ret
  }
}

// CHECK: convert-arith-to-ptx: the right operand of an arith.andi read as a predicate is held in a !ptx.reg<u32>, expected a !ptx.reg<pred> (a comparison that only predicates read, or a predicate cast to i1)

// -----

// A guard reads a predicate register: here its comparison is also read as a u32 truth
// value (by an index select), so it is not lowered to the setp alone.

ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.entry @k() {
    %tid = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %low = arith.cmpi ult, %tid, %c4 : index
    %truth = arith.select %low, %c4, %c0 : index
    %truth_reg = builtin.unrealized_conversion_cast %truth : index to !ptx.reg<u32>
    ptx.bar sync 1 if %low
    ptx.ret
  }
}

// CHECK: convert-arith-to-ptx: ptx.entry @k: the guard of ptx.bar is held in a !ptx.reg<u32>, expected a !ptx.reg<pred> (an i1 comparison or conjunction that only predicates read, or a predicate register)
