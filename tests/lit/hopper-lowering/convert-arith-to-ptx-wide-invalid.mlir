// RUN: mmcomp-opt %s -p convert-arith-to-ptx --verify-diagnostics --split-input-file | filecheck %s

// A zero extension of an index value lowers only inside the widening multiply that reads
// it: an add of the extension itself has no 32-bit operand to widen.

ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.entry @k(arg0 : ptr<role = workspace, name = "partials", shape = [4], dtype = f32>) {
    %ptr = ptx.ld_param arg0 : !ptx.reg<u64>
    %tid = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index
    %base = builtin.unrealized_conversion_cast %ptr : !ptx.reg<u64> to i64
    %narrow = arith.index_cast %tid : index to i32
    %wide = arith.extui %narrow : i32 to i64
    %address = arith.addi %base, %wide : i64
    %at = builtin.unrealized_conversion_cast %address : i64 to !ptx.reg<u64>
    %zero = ptx.const 0.0 : !ptx.reg<f32>
    ptx.st global %at, %zero : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.ret
  }
}

// CHECK: convert-arith-to-ptx: an arith.extui of an index value to i64 lowers only into an i64 arith.muli that reads it (mul.wide.u32 or mad.wide.u32); it is read by arith.addi

// -----

// The factor of a widening multiply is 32-bit: an i64 constant of 2^32 or more is not.

ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.entry @k(arg0 : ptr<role = workspace, name = "partials", shape = [4], dtype = f32>) {
    %ptr = ptx.ld_param arg0 : !ptx.reg<u64>
    %tid = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index
    %base = builtin.unrealized_conversion_cast %ptr : !ptx.reg<u64> to i64
    %narrow = arith.index_cast %tid : index to i32
    %wide = arith.extui %narrow : i32 to i64
    %stride = arith.constant 8589934592 : i64
    %bytes = arith.muli %wide, %stride : i64
    %address = arith.addi %base, %bytes : i64
    %at = builtin.unrealized_conversion_cast %address : i64 to !ptx.reg<u64>
    %zero = ptx.const 0.0 : !ptx.reg<f32>
    ptx.st global %at, %zero : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.ret
  }
}

// CHECK: convert-arith-to-ptx: the i64 constant 8589934592 is the factor of a widening multiply (mul.wide.u32), expected a value in [0, 2^32)

// -----

// A 64-bit sum adds 64-bit values: a pointer read through a cast and a u32 index value
// cast to i64 (not a zero extension) leaves the right operand in a 32-bit register.

ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.entry @k(arg0 : ptr<role = workspace, name = "partials", shape = [4], dtype = f32>) {
    %ptr = ptx.ld_param arg0 : !ptx.reg<u64>
    %tid = ptx.sreg tid.x : !ptx.reg<u32>
    %base = builtin.unrealized_conversion_cast %ptr : !ptx.reg<u64> to i64
    %offset = builtin.unrealized_conversion_cast %tid : !ptx.reg<u32> to i64
    %address = arith.addi %base, %offset : i64
    %at = builtin.unrealized_conversion_cast %address : i64 to !ptx.reg<u64>
    %zero = ptx.const 0.0 : !ptx.reg<f32>
    ptx.st global %at, %zero : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.ret
  }
}

// CHECK: convert-arith-to-ptx: the right operand of an i64 address sum is held in a !ptx.reg<u32>, expected a !ptx.reg<u64>
