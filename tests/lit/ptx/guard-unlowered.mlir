// RUN: not mmcomp-opt %s -t ptx 2>&1 | filecheck %s

// PTX guards read predicate registers: an instruction still guarded by an i1 (a test of
// the hopper level's arithmetic) is a clear error naming the op and the pass that puts
// its guard in a register.

ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.entry @k() {
    %tid = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index
    %c0 = arith.constant 0 : index
    %leader = arith.cmpi eq, %tid, %c0 : index
    ptx.bar sync 1 if %leader
    ptx.ret
  }
}

// CHECK: ptx.bar: the guard is an i1 value, not a !ptx.reg<pred>: run convert-arith-to-ptx before emitting PTX
