// RUN: mmcomp-opt %s | mmcomp-opt | filecheck %s --check-prefix=IR
// RUN: mmcomp-opt %s -p convert-hopper-to-ptx | filecheck %s --check-prefix=HOPPER
// RUN: mmcomp-opt %s -p convert-hopper-to-ptx,convert-scf-to-ptx | filecheck %s --check-prefix=SCF
// RUN: mmcomp-opt %s -p convert-scf-to-ptx,convert-hopper-to-ptx | filecheck %s --check-prefix=SCF
// RUN: mmcomp-opt %s -p convert-hopper-to-ptx,convert-scf-to-ptx,convert-arith-to-ptx -t ptx | filecheck %s --check-prefix=PTX

// A ring position as a value: a K loop carries it, reads its stage (an index) and phase
// (an i32, flipped by an arith.xori for the second wait), and yields its advance; a branch
// moves it past other K blocks (its then-block, an index count) or keeps it (an
// else-block that only yields), and its result is the position after it.
hopper.kernel @k() {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c1 = arith.constant 1 : index
  %base = ptx.const 1024 : !ptx.reg<u32>
  %full = hopper.barrier_ring %base : (!ptx.reg<u32>) -> !hopper.barrier_ring<stages = 3, count = 1>
  %p = ptx.const 1 : !ptx.reg<pred>
  %c = builtin.unrealized_conversion_cast %p : !ptx.reg<pred> to i1
  %trips = arith.constant 5 : index
  %start = hopper.ring_start : !hopper.ring_position<stages = 3>
  %end = scf.for %i = %c0 to %c4 step %c1 iter_args(%at = %start) -> (!hopper.ring_position<stages = 3>) {
    %stage = hopper.ring_stage %at : !hopper.ring_position<stages = 3>
    %phase = hopper.ring_phase %at : !hopper.ring_position<stages = 3>
    %bar = hopper.ring_barrier %full[%stage] : !hopper.barrier_ring<stages = 3, count = 1>
    hopper.mbarrier_wait %bar, %phase : (!hopper.mbarrier<count = 1>, i32) -> ()
    %one = arith.constant 1 : i32
    %flipped = arith.xori %phase, %one : i32
    hopper.mbarrier_wait %bar, %flipped : (!hopper.mbarrier<count = 1>, i32) -> ()
    %next = hopper.ring_advance %at : !hopper.ring_position<stages = 3>
    scf.yield %next : !hopper.ring_position<stages = 3>
  } {ptx.labels = ["loop_1", "loop_end_2"]}
  %moved = scf.if %c -> (!hopper.ring_position<stages = 3>) {
    %skipped = hopper.ring_advance_by %end, %trips : !hopper.ring_position<stages = 3>
    scf.yield %skipped : !hopper.ring_position<stages = 3>
  } else {
    scf.yield %end : !hopper.ring_position<stages = 3>
  } {ptx.labels = ["skip_3"]}
  %last = hopper.ring_stage %moved : !hopper.ring_position<stages = 3>
  %out = arith.addi %last, %trips : index
  ptx.ret
}

// IR:      %[[START:.*]] = hopper.ring_start : !hopper.ring_position<stages = 3>
// IR-NEXT: %[[END:.*]] = scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[AT:.*]] = %[[START]]) -> (!hopper.ring_position<stages = 3>) {
// IR-NEXT:   hopper.ring_stage %[[AT]] : !hopper.ring_position<stages = 3>
// IR-NEXT:   hopper.ring_phase %[[AT]] : !hopper.ring_position<stages = 3>
// IR:        %[[NEXT:.*]] = hopper.ring_advance %[[AT]] : !hopper.ring_position<stages = 3>
// IR-NEXT:   scf.yield %[[NEXT]] : !hopper.ring_position<stages = 3>
// IR:      %[[MOVED:.*]] = scf.if %{{.*}} -> (!hopper.ring_position<stages = 3>) {
// IR-NEXT:   %[[SKIPPED:.*]] = hopper.ring_advance_by %[[END]], %{{.*}} : !hopper.ring_position<stages = 3>
// IR-NEXT:   scf.yield %[[SKIPPED]] : !hopper.ring_position<stages = 3>
// IR-NEXT: } else {
// IR-NEXT:   scf.yield %[[END]] : !hopper.ring_position<stages = 3>
// IR:      hopper.ring_stage %[[MOVED]] : !hopper.ring_position<stages = 3>

// convert-hopper-to-ptx: the start is two registers set to 0; the reads are those
// registers (the phase read as an i32 through a cast, which the flip reads; the stage's
// cast, unread once the barrier's mad reads its register, is erased); the wait on the
// flip reads its xori through a cast to u32 (convert-arith-to-ptx resolves it); the
// advance writes the registers in place (stage + 1, the predicated wrap) and its result is
// a cast of them, as is the skip's (the division by the depth, of the count's register).
// HOPPER:      %[[STAGE:.*]] = ptx.const 0 : !ptx.reg<u32>
// HOPPER-NEXT: %[[PHASE:.*]] = ptx.const 0 : !ptx.reg<u32>
// HOPPER-NEXT: %[[POS:.*]] = builtin.unrealized_conversion_cast %[[STAGE]], %[[PHASE]] : !ptx.reg<u32>, !ptx.reg<u32> to !hopper.ring_position<stages = 3>
// HOPPER-NEXT: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%{{.*}} = %[[POS]]) -> (!hopper.ring_position<stages = 3>) {
// HOPPER-NEXT:   %[[PHASE_I32:.*]] = builtin.unrealized_conversion_cast %[[PHASE]] : !ptx.reg<u32> to i32
// HOPPER:        ptx.mad %[[STAGE]], %{{.*}}, %{{.*}} : !ptx.reg<u32>
// HOPPER:        ptx.mbarrier_try_wait %{{.*}}, %[[PHASE]] : (!ptx.reg<u32>, !ptx.reg<u32>) -> !ptx.reg<pred>
// HOPPER:        %[[FLIP_ONE:.*]] = arith.constant 1 : i32
// HOPPER-NEXT:   %[[FLIPPED_I32:.*]] = arith.xori %[[PHASE_I32]], %[[FLIP_ONE]] : i32
// HOPPER-NEXT:   %[[FLIPPED_REG:.*]] = builtin.unrealized_conversion_cast %[[FLIPPED_I32]] : i32 to !ptx.reg<u32>
// HOPPER-NEXT:   ptx.label hopper_wait_2
// HOPPER-NEXT:   ptx.mbarrier_try_wait %{{.*}}, %[[FLIPPED_REG]] : (!ptx.reg<u32>, !ptx.reg<u32>) -> !ptx.reg<pred>
// HOPPER:        %[[ONE:.*]] = ptx.const 1 : !ptx.reg<u32>
// HOPPER-NEXT:   %[[ADDED:.*]] = ptx.add %[[STAGE]], %[[ONE]] : !ptx.reg<u32>
// HOPPER-NEXT:   ptx.assign %[[STAGE]], %[[ADDED]] : !ptx.reg<u32>
// HOPPER-NEXT:   %[[DEPTH:.*]] = ptx.const 3 : !ptx.reg<u32>
// HOPPER-NEXT:   %[[WRAP:.*]] = ptx.setp eq %[[STAGE]], %[[DEPTH]] : (!ptx.reg<u32>, !ptx.reg<u32>) -> !ptx.reg<pred>
// HOPPER-NEXT:   %[[ZERO:.*]] = ptx.const 0 : !ptx.reg<u32>
// HOPPER-NEXT:   ptx.assign %[[STAGE]], %[[ZERO]] if %[[WRAP]] : !ptx.reg<u32>
// HOPPER-NEXT:   %[[ONE2:.*]] = ptx.const 1 : !ptx.reg<u32>
// HOPPER-NEXT:   %[[FLIPPED:.*]] = ptx.xor %[[PHASE]], %[[ONE2]] : !ptx.reg<u32>
// HOPPER-NEXT:   ptx.assign %[[PHASE]], %[[FLIPPED]] if %[[WRAP]] : !ptx.reg<u32>
// HOPPER-NEXT:   %[[NEXT:.*]] = builtin.unrealized_conversion_cast %[[STAGE]], %[[PHASE]] : !ptx.reg<u32>, !ptx.reg<u32> to !hopper.ring_position<stages = 3>
// HOPPER-NEXT:   scf.yield %[[NEXT]] : !hopper.ring_position<stages = 3>
// HOPPER:      scf.if %{{.*}} -> (!hopper.ring_position<stages = 3>) {
// HOPPER-NEXT:   %[[COUNT:.*]] = builtin.unrealized_conversion_cast %{{.*}} : index to !ptx.reg<u32>
// HOPPER-NEXT:   %[[BY:.*]] = ptx.const 3 : !ptx.reg<u32>
// HOPPER-NEXT:   %[[TOTAL:.*]] = ptx.add %[[STAGE]], %[[COUNT]] : !ptx.reg<u32>
// HOPPER-NEXT:   %[[LAPS:.*]] = ptx.div %[[TOTAL]], %[[BY]] : !ptx.reg<u32>
// HOPPER-NEXT:   %[[REST:.*]] = ptx.rem %[[TOTAL]], %[[BY]] : !ptx.reg<u32>
// HOPPER-NEXT:   ptx.assign %[[STAGE]], %[[REST]] : !ptx.reg<u32>
// HOPPER-NEXT:   %[[ONE3:.*]] = ptx.const 1 : !ptx.reg<u32>
// HOPPER-NEXT:   %[[FLIP:.*]] = ptx.and %[[LAPS]], %[[ONE3]] : !ptx.reg<u32>
// HOPPER-NEXT:   %[[XORED:.*]] = ptx.xor %[[PHASE]], %[[FLIP]] : !ptx.reg<u32>
// HOPPER-NEXT:   ptx.assign %[[PHASE]], %[[XORED]] : !ptx.reg<u32>
// HOPPER:      } else {
// HOPPER-NEXT:   scf.yield %{{.*}} : !hopper.ring_position<stages = 3>
// HOPPER:      %[[LAST:.*]] = builtin.unrealized_conversion_cast %[[STAGE]] : !ptx.reg<u32> to index
// HOPPER-NEXT: arith.addi %[[LAST]], %{{.*}} : index

// convert-scf-to-ptx (either order): the loop and the branch carry the position in the
// start's registers, with no mov and no assign at the back edge; the branch whose
// else-block only yields has no else label; the code after it reads the same registers.
// SCF:      %[[STAGE:.*]] = ptx.const 0 : !ptx.reg<u32>
// SCF-NEXT: %[[PHASE:.*]] = ptx.const 0 : !ptx.reg<u32>
// SCF:      ptx.label loop_1
// SCF:      ptx.assign %[[PHASE]], %{{.*}} if %{{.*}} : !ptx.reg<u32>
// SCF-NEXT: %{{.*}} = builtin.unrealized_conversion_cast %{{.*}} : index to !ptx.reg<u32>
// SCF-NEXT: %{{.*}} = builtin.unrealized_conversion_cast %{{.*}} : index to !ptx.reg<u32>
// SCF-NEXT: %[[IV:.*]] = ptx.add %{{.*}}, %{{.*}} : !ptx.reg<u32>
// SCF-NEXT: ptx.assign %{{.*}}, %[[IV]] : !ptx.reg<u32>
// SCF-NEXT: ptx.bra loop_1
// SCF-NEXT: ptx.label loop_end_2
// SCF-NEXT: ptx.bra skip_3 if not %{{.*}}
// SCF:      ptx.assign %[[PHASE]], %{{.*}} : !ptx.reg<u32>
// SCF-NEXT: ptx.label skip_3
// SCF-NEXT: %[[LAST:.*]] = builtin.unrealized_conversion_cast %[[STAGE]] : !ptx.reg<u32> to index
// SCF-NEXT: arith.addi %[[LAST]], %{{.*}} : index
// SCF-NOT:  hopper.ring_position
// SCF-NOT:  scf.

// PTX:      mov.u32 %{{r[0-9]+}}, 5;
// PTX-NEXT: mov.u32 %[[S:r[0-9]+]], 0;
// PTX-NEXT: mov.u32 %[[P:r[0-9]+]], 0;
// PTX:      loop_1:
// PTX:      mbarrier.try_wait.parity.shared::cta.b64 %{{p[0-9]+}}, [%{{r[0-9]+}}], %[[P]];
// PTX:      xor.b32 %[[F:r[0-9]+]], %[[P]], %{{r[0-9]+}};
// PTX-NEXT: hopper_wait_2:
// PTX-NEXT: mbarrier.try_wait.parity.shared::cta.b64 %{{p[0-9]+}}, [%{{r[0-9]+}}], %[[F]];
// PTX:      add.u32 %[[A:r[0-9]+]], %[[S]], %{{r[0-9]+}};
// PTX-NEXT: mov.b32 %[[S]], %[[A]];
// PTX:      setp.eq.u32 %[[W:p[0-9]+]], %[[S]], %{{r[0-9]+}};
// PTX:      @%[[W]] mov.b32 %[[S]], %{{r[0-9]+}};
// PTX:      @%[[W]] mov.b32 %[[P]], %{{r[0-9]+}};
// PTX-NEXT: add.u32
// PTX-NEXT: mov.b32
// PTX-NEXT: bra loop_1;
// PTX-NEXT: loop_end_2:
// PTX-NEXT: @!%{{p[0-9]+}} bra skip_3;
// PTX:      rem.u32 %[[R:r[0-9]+]], %{{r[0-9]+}}, %{{r[0-9]+}};
// PTX-NEXT: mov.b32 %[[S]], %[[R]];
// PTX:      mov.b32 %[[P]], %{{r[0-9]+}};
// PTX-NEXT: skip_3:
// PTX-NEXT: add.u32 %{{r[0-9]+}}, %[[S]], %{{r[0-9]+}};
