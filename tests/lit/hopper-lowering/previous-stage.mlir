// RUN: mmcomp-opt %s | mmcomp-opt | filecheck %s --check-prefix=IR
// RUN: mmcomp-opt %s -p convert-hopper-to-ptx | filecheck %s --check-prefix=HOPPER
// RUN: mmcomp-opt %s -p convert-hopper-to-ptx,convert-scf-to-ptx | filecheck %s --check-prefix=SCF
// RUN: mmcomp-opt %s -p convert-hopper-to-ptx,convert-scf-to-ptx,convert-arith-to-ptx -t ptx | filecheck %s --check-prefix=PTX

// The consumers' release of the previous K block's stage, as lower-schedule-to-hopper
// writes it: the K loop carries the previous stage as an index value (iter_args), each
// iteration after the first (the induction variable past the lower bound) arrives on that
// stage's empty barrier, and yields the stage it read before advancing the ring position;
// after the loop the last stage is released if the loop ran at all.
hopper.kernel @k() {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c1 = arith.constant 1 : index
  %base = ptx.const 1024 : !ptx.reg<u32>
  %empty = hopper.barrier_ring %base : (!ptx.reg<u32>) -> !hopper.barrier_ring<stages = 3, count = 1>
  %start = hopper.ring_start : !hopper.ring_position<stages = 3>
  %none = arith.constant 0 : index
  %end, %last = scf.for %i = %c0 to %c4 step %c1 iter_args(%at = %start, %prev = %none) -> (!hopper.ring_position<stages = 3>, index) {
    %stage = hopper.ring_stage %at : !hopper.ring_position<stages = 3>
    %later = arith.cmpi ne, %i, %c0 : index
    %bar = hopper.ring_barrier %empty[%prev] : !hopper.barrier_ring<stages = 3, count = 1>
    hopper.mbarrier_arrive %bar if %later : !hopper.mbarrier<count = 1>
    %next = hopper.ring_advance %at : !hopper.ring_position<stages = 3>
    scf.yield %next, %stage : !hopper.ring_position<stages = 3>, index
  } {ptx.labels = ["loop_1", "loop_end_2"]}
  %ran = arith.cmpi ult, %c0, %c4 : index
  %bar = hopper.ring_barrier %empty[%last] : !hopper.barrier_ring<stages = 3, count = 1>
  hopper.mbarrier_arrive %bar if %ran : !hopper.mbarrier<count = 1>
  ptx.ret
}

// IR:      %{{.*}}, %[[LAST:.*]] = scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[AT:.*]] = %{{.*}}, %[[PREV:.*]] = %{{.*}}) -> (!hopper.ring_position<stages = 3>, index) {
// IR-NEXT:   %[[STAGE:.*]] = hopper.ring_stage %[[AT]] : !hopper.ring_position<stages = 3>
// IR:        scf.yield %{{.*}}, %[[STAGE]] : !hopper.ring_position<stages = 3>, index

// convert-hopper-to-ptx: the stage is read before the advance writes the position's
// registers in place and used after it (by the yield), so the read is a copy of the stage
// register (a mov), not the register itself.
// HOPPER:      %[[STAGE_REG:.*]] = ptx.const 0 : !ptx.reg<u32>
// HOPPER:      scf.for
// HOPPER-NEXT:   %[[COPY:.*]] = ptx.mov %[[STAGE_REG]] : !ptx.reg<u32>
// HOPPER-NEXT:   %[[READ:.*]] = builtin.unrealized_conversion_cast %[[COPY]] : !ptx.reg<u32> to index
// HOPPER:        ptx.assign %[[STAGE_REG]], %{{.*}} : !ptx.reg<u32>
// HOPPER:        scf.yield %{{.*}}, %[[READ]] : !hopper.ring_position<stages = 3>, index

// convert-scf-to-ptx: the carried index lives in a fresh register (its init moved in
// before the loop), read as an index in the body and after the loop; the yield assigns
// the copy to it at the end of the body.
// SCF:      %[[INIT:.*]] = builtin.unrealized_conversion_cast %none : index to !ptx.reg<u32>
// SCF-NEXT: %[[HELD:.*]] = ptx.mov %[[INIT]] : !ptx.reg<u32>
// SCF:      %[[PREV:.*]] = builtin.unrealized_conversion_cast %[[HELD]] : !ptx.reg<u32> to index
// SCF-NEXT: ptx.label loop_1
// SCF:      %[[COPY:.*]] = ptx.mov %{{.*}} : !ptx.reg<u32>
// SCF:      builtin.unrealized_conversion_cast %[[PREV]] : index to !ptx.reg<u32>
// SCF:      ptx.mbarrier_arrive
// SCF:      %[[TARGET:.*]] = builtin.unrealized_conversion_cast %[[PREV]] : index to !ptx.reg<u32>
// SCF-NEXT: ptx.assign %[[TARGET]], %[[COPY]] : !ptx.reg<u32>
// SCF:      ptx.bra loop_1
// SCF-NEXT: ptx.label loop_end_2
// SCF:      builtin.unrealized_conversion_cast %[[PREV]] : index to !ptx.reg<u32>
// SCF-NOT:  scf.

// PTX:      loop_1:
// PTX:      mov.b32 %[[COPY:r[0-9]+]], %[[STAGE:r[0-9]+]];
// PTX-NEXT: setp.ne.u32 %[[LATER:p[0-9]+]], %[[I:r[0-9]+]], %{{r[0-9]+}};
// PTX:      mad.lo.u32 %[[BAR:r[0-9]+]], %[[HELD:r[0-9]+]], %{{r[0-9]+}}, %{{r[0-9]+}};
// PTX-NEXT: @%[[LATER]] mbarrier.arrive.shared::cta.b64 _, [%[[BAR]]];
// PTX:      add.u32 %{{r[0-9]+}}, %[[STAGE]], %{{r[0-9]+}};
// PTX:      mov.b32 %[[HELD]], %[[COPY]];
// PTX:      bra loop_1;
// PTX-NEXT: loop_end_2:
// PTX-NEXT: setp.lo.u32 %[[RAN:p[0-9]+]],
// PTX:      mad.lo.u32 %[[LAST:r[0-9]+]], %[[HELD]],
// PTX-NEXT: @%[[RAN]] mbarrier.arrive.shared::cta.b64 _, [%[[LAST]]];
