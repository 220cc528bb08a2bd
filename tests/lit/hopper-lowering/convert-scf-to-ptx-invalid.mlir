// RUN: mmcomp-opt %s -p convert-scf-to-ptx --verify-diagnostics --split-input-file | filecheck %s

// convert-scf-to-ptx refuses, naming the op and what it expected, an scf op it cannot
// write as labels and branches.

// A loop without its label names.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.entry @k() {
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %c1 = arith.constant 1 : index
    scf.for %i = %c0 to %c4 step %c1 {
      scf.yield
    }
    ptx.ret
  }
}
// CHECK: convert-scf-to-ptx: scf.for carries no 'ptx.labels' (an array of label names)

// -----

// A loop with one label name (it needs its head and its end).
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.entry @k() {
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %c1 = arith.constant 1 : index
    scf.for %i = %c0 to %c4 step %c1 {
      scf.yield
    } {ptx.labels = ["loop_1"]}
    ptx.ret
  }
}
// CHECK: convert-scf-to-ptx: scf.for must carry 2 label names in 'ptx.labels', found 1

// -----

// A branch with an else-block and only its end label.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.entry @k() {
    %p = ptx.const 1 : !ptx.reg<pred>
    %c = builtin.unrealized_conversion_cast %p : !ptx.reg<pred> to i1
    scf.if %c {
      scf.yield
    } else {
      scf.yield
    } {ptx.labels = ["end_1"]}
    ptx.ret
  }
}
// CHECK: convert-scf-to-ptx: scf.if must carry 2 label names (else, end) with an else-region and 1 (end) without (1 or 2 with one that only yields), found 1

// -----

// A branch that ends at the end label of the one around it, but is not its region's last op.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.entry @k() {
    %p = ptx.const 1 : !ptx.reg<pred>
    %c = builtin.unrealized_conversion_cast %p : !ptx.reg<pred> to i1
    scf.if %c {
      scf.if %c {
        scf.yield
      } {ptx.labels = ["done_2"]}
      ptx.bar sync 0
      scf.yield
    } else {
      scf.yield
    } {ptx.labels = ["other_1", "done_2"]}
    ptx.ret
  }
}
// CHECK: convert-scf-to-ptx: an scf.if that ends at its parent's end label 'done_2' must be the last op of its region

// -----

// A loop-carried value that is neither a register nor an index value (an i1).
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.entry @k() {
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %c1 = arith.constant 1 : index
    %false = arith.constant false
    %seen = scf.for %i = %c0 to %c4 step %c1 iter_args(%flag = %false) -> (i1) {
      scf.yield %flag : i1
    } {ptx.labels = ["loop_1", "loop_end_2"]}
    ptx.ret
  }
}
// CHECK: convert-scf-to-ptx: scf.for carries value #0 of type i1; a loop-carried value of the hopper level must be a register (!ptx.reg), an index value, an accumulator (!hopper.accumulator) or a ring position (!hopper.ring_position)

// -----

// A yield that swaps two carried registers (each assign would read the other's new value).
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.entry @k() {
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %c1 = arith.constant 1 : index
    %a0 = ptx.const 0 : !ptx.reg<u32>
    %b0 = ptx.const 1 : !ptx.reg<u32>
    %a, %b = scf.for %i = %c0 to %c4 step %c1 iter_args(%x = %a0, %y = %b0) -> (!ptx.reg<u32>, !ptx.reg<u32>) {
      scf.yield %y, %x : !ptx.reg<u32>, !ptx.reg<u32>
    } {ptx.labels = ["loop_1", "loop_end_2"]}
    ptx.ret
  }
}
// CHECK: convert-scf-to-ptx: scf.yield passes carried value #1 as #0; a permutation of the carried registers is not lowered

// -----

// A branch with a result that is not a ring position (the only values the hopper level's
// branches yield).
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.entry @k() {
    %p = ptx.const 1 : !ptx.reg<pred>
    %c = builtin.unrealized_conversion_cast %p : !ptx.reg<pred> to i1
    %r0 = ptx.const 0 : !ptx.reg<u32>
    %r = scf.if %c -> (!ptx.reg<u32>) {
      scf.yield %r0 : !ptx.reg<u32>
    } else {
      scf.yield %r0 : !ptx.reg<u32>
    } {ptx.labels = ["else_1", "end_2"]}
    ptx.ret
  }
}
// CHECK: convert-scf-to-ptx: scf.if result #0 is of type !ptx.reg<u32>; the results of a branch of the hopper level must be ring positions (!hopper.ring_position)

// -----

// A loop whose yield is an accumulator held in other registers than the one it carries
// (a fresh zero accumulator, not the block argument as the body's wgmmas updated it).
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.entry @k() {
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %c1 = arith.constant 1 : index
    %zero = hopper.zero_accumulator : !hopper.accumulator<64x8xf32>
    %sum = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %zero) -> (!hopper.accumulator<64x8xf32>) {
      %fresh = hopper.zero_accumulator : !hopper.accumulator<64x8xf32>
      scf.yield %fresh : !hopper.accumulator<64x8xf32>
    } {ptx.labels = ["loop_1", "loop_end_2"]}
    ptx.ret
  }
}
// CHECK: convert-scf-to-ptx: scf.yield passes accumulator #0 in other registers than the loop carries it in (its init's); a loop-carried accumulator must be its block argument as the wgmmas of the body update it in place

// -----

// A loop that carries one accumulator twice (both would be held in the same registers).
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.entry @k() {
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %c1 = arith.constant 1 : index
    %zero = hopper.zero_accumulator : !hopper.accumulator<64x8xf32>
    %x, %y = scf.for %i = %c0 to %c4 step %c1 iter_args(%a = %zero, %b = %zero) -> (!hopper.accumulator<64x8xf32>, !hopper.accumulator<64x8xf32>) {
      scf.yield %a, %b : !hopper.accumulator<64x8xf32>, !hopper.accumulator<64x8xf32>
    } {ptx.labels = ["loop_1", "loop_end_2"]}
    ptx.ret
  }
}
// CHECK: convert-scf-to-ptx: scf.for carries accumulator #1 in the registers of an earlier carried accumulator; each must have registers of its own

// -----

// A loop whose yield is a ring position held in other registers than the one it carries
// (a fresh start, not the block argument as the body's advances moved it).
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.entry @k() {
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %c1 = arith.constant 1 : index
    %start = hopper.ring_start : !hopper.ring_position<stages = 4>
    %end = scf.for %i = %c0 to %c4 step %c1 iter_args(%at = %start) -> (!hopper.ring_position<stages = 4>) {
      %fresh = hopper.ring_start : !hopper.ring_position<stages = 4>
      scf.yield %fresh : !hopper.ring_position<stages = 4>
    } {ptx.labels = ["loop_1", "loop_end_2"]}
    ptx.ret
  }
}
// CHECK: convert-scf-to-ptx: scf.yield passes ring position #0 in other registers than the loop carries it in (its init's); a loop-carried position must be its block argument as the advances of the body move it in place

// -----

// A loop that carries one ring position twice (both would be held in the same registers).
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.entry @k() {
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %c1 = arith.constant 1 : index
    %start = hopper.ring_start : !hopper.ring_position<stages = 4>
    %x, %y = scf.for %i = %c0 to %c4 step %c1 iter_args(%a = %start, %b = %start) -> (!hopper.ring_position<stages = 4>, !hopper.ring_position<stages = 4>) {
      %next = hopper.ring_advance %a : !hopper.ring_position<stages = 4>
      scf.yield %next, %b : !hopper.ring_position<stages = 4>, !hopper.ring_position<stages = 4>
    } {ptx.labels = ["loop_1", "loop_end_2"]}
    ptx.ret
  }
}
// CHECK: convert-scf-to-ptx: scf.for carries ring position #1 in the registers of an earlier carried position; each must have registers of its own

// -----

// A branch whose regions yield ring positions held in different registers.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.entry @k() {
    %p = ptx.const 1 : !ptx.reg<pred>
    %c = builtin.unrealized_conversion_cast %p : !ptx.reg<pred> to i1
    %start = hopper.ring_start : !hopper.ring_position<stages = 4>
    %other = hopper.ring_start : !hopper.ring_position<stages = 4>
    %at = scf.if %c -> (!hopper.ring_position<stages = 4>) {
      %next = hopper.ring_advance %start : !hopper.ring_position<stages = 4>
      scf.yield %next : !hopper.ring_position<stages = 4>
    } else {
      scf.yield %other : !hopper.ring_position<stages = 4>
    } {ptx.labels = ["end_1"]}
    ptx.ret
  }
}
// CHECK: convert-scf-to-ptx: scf.if yields ring position #0 in other registers in its else-region than in its then-region; both must be the position before the branch as the advances of the region moved it in place
