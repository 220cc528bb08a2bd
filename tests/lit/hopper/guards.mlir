// RUN: mmcomp-opt %s | mmcomp-opt | filecheck %s --check-prefix=IR
// RUN: mmcomp-opt %s -p convert-hopper-to-ptx | filecheck %s --check-prefix=HOPPER
// RUN: mmcomp-opt %s -p convert-hopper-to-ptx,convert-scf-to-ptx,convert-arith-to-ptx | filecheck %s --check-prefix=LOWERED
// RUN: mmcomp-opt %s -p convert-hopper-to-ptx,convert-scf-to-ptx,convert-arith-to-ptx -t ptx | filecheck %s

// Guards at the hopper level are the i1 tests of its arithmetic: thread 0's comparison
// guards hopper ops and ptx ops (`if %p`, `if not %p`), a conjunction of it guards a
// store, and an op inside an scf.if reads it from outside. convert-hopper-to-ptx keeps the
// i1 on the ptx ops it makes (a guarded wait's skip branch negates it); convert-arith-to-ptx
// lowers the comparison to the setp alone and the conjunction to and.pred, whose registers
// the guards then read.

ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 dynamic
  ptx.shared @bars align 8 size 16
  ptx.entry @guards(tc : tmap) {
    %tc = hopper.tensormap_param tc : !hopper.tensormap<256x128xf32, box 64x32, swizzle 128>
    %bars = ptx.addr_of bars : !ptx.reg<u32>
    %smem = ptx.addr_of smem : !ptx.reg<u32>
    %ring = hopper.barrier_ring %bars : (!ptx.reg<u32>) -> !hopper.barrier_ring<stages = 2, count = 1>
    %tid = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index
    %c0 = arith.constant 0 : index
    %leader = arith.cmpi eq, %tid, %c0 : index
    %bar = hopper.ring_barrier %ring[0] : !hopper.barrier_ring<stages = 2, count = 1>
    hopper.mbarrier_init %bar if %leader : !hopper.mbarrier<count = 1>
    ptx.fence mbarrier_init if %leader
    ptx.bar sync 0
    %parity = arith.constant 0 : i32
    hopper.mbarrier_wait %bar, %parity if not %leader : (!hopper.mbarrier<count = 1>, i32) -> ()
    %c4 = arith.constant 4 : index
    %low = arith.cmpi ult, %tid, %c4 : index
    %store = arith.andi %leader, %low : i1
    %x = arith.constant 64 : index
    %y = arith.constant 128 : index
    hopper.tma_store %smem to %tc[%x, %y] if %store : !hopper.tensormap<256x128xf32, box 64x32, swizzle 128>, !ptx.reg<u32>
    ptx.bulk_commit if %store
    %c7 = arith.constant 7 : index
    %warpgroup = arith.shrui %tid, %c7 : index
    %consumer = arith.cmpi ne, %warpgroup, %c0 : index
    scf.if %consumer {
      ptx.bulk_wait 0 if %leader
      scf.yield
    } {ptx.labels = ["end_1"], ptx.predicate}
    ptx.ret
  }
}

// IR:      %[[LEADER:.*]] = arith.cmpi eq, %{{.*}}, %{{.*}} : index
// IR:      hopper.mbarrier_init %{{.*}} if %[[LEADER]] : !hopper.mbarrier<count = 1>
// IR-NEXT: ptx.fence mbarrier_init if %[[LEADER]]
// IR:      hopper.mbarrier_wait %{{.*}}, %{{.*}} if not %[[LEADER]] : (!hopper.mbarrier<count = 1>, i32) -> ()
// IR:      %[[STORE:.*]] = arith.andi %[[LEADER]], %{{.*}} : i1
// IR:      hopper.tma_store %{{.*}} to %{{.*}}[%{{.*}}, %{{.*}}] if %[[STORE]] :
// IR-NEXT: ptx.bulk_commit if %[[STORE]]
// IR:      ptx.bulk_wait 0 if %[[LEADER]]

// HOPPER:      %[[LEADER:.*]] = arith.cmpi eq, %{{.*}}, %{{.*}} : index
// HOPPER:      ptx.mbarrier_init 1 %{{.*}} if %[[LEADER]] : !ptx.reg<u32>
// HOPPER-NEXT: ptx.fence mbarrier_init if %[[LEADER]]
// HOPPER:      ptx.bra hopper_wait_skip_2 if %[[LEADER]]
// HOPPER:      %[[STORE:.*]] = arith.andi %[[LEADER]], %{{.*}} : i1
// HOPPER:      ptx.tma_store %{{.*}} if %[[STORE]] :
// HOPPER-NEXT: ptx.bulk_commit if %[[STORE]]
// HOPPER:      ptx.bulk_wait 0 if %[[LEADER]]
// HOPPER-NOT:  to !ptx.reg<pred>

// LOWERED:      %[[TID:.*]] = ptx.sreg tid.x : !ptx.reg<u32>
// LOWERED-NEXT: %[[C0:.*]] = ptx.const 0 : !ptx.reg<u32>
// LOWERED-NEXT: %[[LEADER:.*]] = ptx.setp eq %[[TID]], %[[C0]] : (!ptx.reg<u32>, !ptx.reg<u32>) -> !ptx.reg<pred>
// LOWERED:      ptx.mbarrier_init 1 %{{.*}} if %[[LEADER]] : !ptx.reg<u32>
// LOWERED-NEXT: ptx.fence mbarrier_init if %[[LEADER]]
// LOWERED:      ptx.bra hopper_wait_skip_2 if %[[LEADER]]
// LOWERED:      %[[LOW:.*]] = ptx.setp lo %[[TID]], %{{.*}} : (!ptx.reg<u32>, !ptx.reg<u32>) -> !ptx.reg<pred>
// LOWERED-NEXT: %[[STORE:.*]] = ptx.and %[[LEADER]], %[[LOW]] : !ptx.reg<pred>
// LOWERED:      ptx.tma_store %{{.*}} if %[[STORE]] :
// LOWERED-NEXT: ptx.bulk_commit if %[[STORE]]
// LOWERED:      %[[CONSUMER:.*]] = ptx.setp ne %{{.*}}, %{{.*}} : (!ptx.reg<u32>, !ptx.reg<u32>) -> !ptx.reg<pred>
// LOWERED-NEXT: ptx.bra end_1 if not %[[CONSUMER]]
// LOWERED-NEXT: ptx.bulk_wait 0 if %[[LEADER]]
// LOWERED-NEXT: ptx.label end_1
// LOWERED-NOT:  arith.
// LOWERED-NOT:  unrealized_conversion_cast

// CHECK:      mov.u32 %r{{[0-9]+}}, %tid.x;
// CHECK-NEXT: mov.u32 %r{{[0-9]+}}, 0;
// CHECK-NEXT: setp.eq.u32 %p1, %r{{[0-9]+}}, %r{{[0-9]+}};
// CHECK:      @%p1 mbarrier.init.shared::cta.b64 [%r{{[0-9]+}}], 1;
// CHECK-NEXT: @%p1 fence.mbarrier_init.release.cluster;
// CHECK:      @%p1 bra hopper_wait_skip_2;
// CHECK:      setp.lo.u32 %p3, %r{{[0-9]+}}, %r{{[0-9]+}};
// CHECK-NEXT: and.pred %p4, %p1, %p3;
// CHECK:      @%p4 cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%rd{{[0-9]+}}, {%r{{[0-9]+}}, %r{{[0-9]+}}}], [%r{{[0-9]+}}];
// CHECK-NEXT: @%p4 cp.async.bulk.commit_group;
// CHECK:      @!%p5 bra end_1;
// CHECK-NEXT: @%p1 cp.async.bulk.wait_group 0;
// CHECK-NEXT: end_1:
