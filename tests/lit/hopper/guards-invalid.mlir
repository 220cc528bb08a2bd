// RUN: mmcomp-opt %s --verify-diagnostics --split-input-file | filecheck %s

// A guard is an i1 (at the levels above ptx) or a predicate register: the verifier names
// the op and the type found, for a hopper op and for a ptx op alike.

ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @bars align 8 size 16
  ptx.entry @k() {
    %bars = ptx.addr_of bars : !ptx.reg<u32>
    %ring = hopper.barrier_ring %bars : (!ptx.reg<u32>) -> !hopper.barrier_ring<stages = 2, count = 1>
    %bar = hopper.ring_barrier %ring[0] : !hopper.barrier_ring<stages = 2, count = 1>
    %flag = arith.constant 1 : i32
    "hopper.mbarrier_init"(%bar, %flag) <{operandSegmentSizes = array<i32: 1, 1>}> : (!hopper.mbarrier<count = 1>, i32) -> ()
    ptx.ret
  }
}

// CHECK: hopper.mbarrier_init: the guard must be an i1 or a !ptx.reg<pred>, found i32

// -----

ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.entry @k() {
    %flag = ptx.const 1 : !ptx.reg<u32>
    "ptx.bar"(%flag) <{mode = "sync", barrier_id = #builtin.int<1>, operandSegmentSizes = array<i32: 1>}> : (!ptx.reg<u32>) -> ()
    ptx.ret
  }
}

// CHECK: ptx.bar: the guard must be an i1 or a !ptx.reg<pred>, found !ptx.reg<u32>
