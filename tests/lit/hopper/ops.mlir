// RUN: mmcomp-opt %s | mmcomp-opt | filecheck %s --check-prefix=IR
// RUN: mmcomp-opt %s -p convert-hopper-to-ptx,convert-scf-to-ptx,convert-arith-to-ptx | filecheck %s --check-prefix=LOWERED
// RUN: mmcomp-opt %s -p convert-hopper-to-ptx,convert-scf-to-ptx,convert-arith-to-ptx -t ptx | filecheck %s

// Every hopper op form: the IR round trip, the ptx ops it lowers to, and the PTX text.
// Tensor maps, mbarriers and the wgmma accumulator are typed values (a tensor map of each
// rank the copies use, one with extents known only at launch; a ring of two barriers,
// indexed by a constant and by a register; the accumulator's four f32 registers, which each wgmma takes and returns).
// tests/lit/hopper/assemble.mlir assembles this kernel with ptxas.

ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 dynamic
  ptx.shared @bars align 8 size 16
  ptx.entry @hopper_ops(ta : tmap, tb : tmap, tc : tmap) maxnreg 168 reqntid [384] {
    %ta = hopper.tensormap_param ta : !hopper.tensormap<256x128xbf16, box 128x64, swizzle 128>
    %tb = hopper.tensormap_param tb : !hopper.tensormap<4x256x128xbf16, box 1x128x64, swizzle 128>
    %tc = hopper.tensormap_param tc : !hopper.tensormap<?x?xf32, box 64x32, swizzle 128>
    hopper.tensor_map_prefetch %ta : !hopper.tensormap<256x128xbf16, box 128x64, swizzle 128>
    %smem = ptx.addr_of smem : !ptx.reg<u32>
    %bars = ptx.addr_of bars : !ptx.reg<u32>
    %ring = hopper.barrier_ring %bars : (!ptx.reg<u32>) -> !hopper.barrier_ring<stages = 2, count = 1>
    %tid = hopper.id thread.x : !ptx.reg<u32>
    %wg = hopper.id warpgroup : !ptx.reg<u32>
    %warp = hopper.id warp_in_warpgroup : !ptx.reg<u32>
    %lane = hopper.id lane : !ptx.reg<u32>
    %twg = hopper.id thread_in_warpgroup : !ptx.reg<u32>
    %rank = hopper.id cluster_cta_rank : !ptx.reg<u32>
    %cluster = hopper.id cluster.x : !ptx.reg<u32>
    %cta = hopper.id cta_in_cluster.y : !ptx.reg<u32>
    %c0 = ptx.const 0 : !ptx.reg<u32>
    %first = ptx.setp eq %tid, %c0 : (!ptx.reg<u32>, !ptx.reg<u32>) -> !ptx.reg<pred>
    %bar = hopper.ring_barrier %ring[0] : !hopper.barrier_ring<stages = 2, count = 1>
    %bar1 = hopper.ring_barrier %ring[1] : !hopper.barrier_ring<stages = 2, count = 1>
    hopper.mbarrier_init %bar if %first : !hopper.mbarrier<count = 1>
    hopper.mbarrier_init %bar1 if %first : !hopper.mbarrier<count = 1>
    ptx.fence mbarrier_init
    ptx.bar sync 0
    %i0 = builtin.unrealized_conversion_cast %c0 : !ptx.reg<u32> to index
    %stage = hopper.ring_barrier %ring[%i0] : !hopper.barrier_ring<stages = 2, count = 1>
    %elected = ptx.elect_sync : !ptx.reg<pred>
    hopper.mbarrier_arrive_expect_tx 32768 %bar if %elected : !hopper.mbarrier<count = 1>
    %x = arith.constant 64 : index
    %y = arith.constant 128 : index
    %z = arith.constant 2 : index
    hopper.tma_load %ta[%x, %y], %bar to %smem if %elected : !hopper.tensormap<256x128xbf16, box 128x64, swizzle 128>, !hopper.mbarrier<count = 1>, !ptx.reg<u32>
    hopper.tma_load %tb[%x, %y, %z], %stage to %smem : !hopper.tensormap<4x256x128xbf16, box 1x128x64, swizzle 128>, !hopper.mbarrier<count = 1>, !ptx.reg<u32>
    %mask = ptx.const 3 : !ptx.reg<b16>
    hopper.tma_load %ta[%x, %y], %bar to %smem mask %mask : !hopper.tensormap<256x128xbf16, box 128x64, swizzle 128>, !hopper.mbarrier<count = 1>, !ptx.reg<u32>, !ptx.reg<b16>
    %parity = builtin.unrealized_conversion_cast %c0 : !ptx.reg<u32> to i32
    hopper.mbarrier_wait %bar, %parity : (!hopper.mbarrier<count = 1>, i32) -> ()
    hopper.mbarrier_wait %bar, %parity if not %first : (!hopper.mbarrier<count = 1>, i32) -> ()
    hopper.mbarrier_arrive %bar : !hopper.mbarrier<count = 1>
    %remote = hopper.mapa %bar, %rank : (!hopper.mbarrier<count = 1>, !ptx.reg<u32>) -> !hopper.mbarrier<count = 1>
    hopper.mbarrier_arrive cluster %remote : !hopper.mbarrier<count = 1>
    ptx.setmaxnreg inc 232
    %tile = builtin.unrealized_conversion_cast %smem : !ptx.reg<u32> to !hopper.smem<align 1024>
    %da = hopper.matrix_descriptor %tile {mn = 64, k = 16} : (!hopper.smem<align 1024>) -> !hopper.matrix_descriptor<k_major, swizzle 128, mn 128, k 64>
    %db = hopper.matrix_descriptor %tile {mn = 0, k = 32} : (!hopper.smem<align 1024>) -> !hopper.matrix_descriptor<mn_major, swizzle 128, mn 128, k 64>
    %zero = ptx.const 0.0 : !ptx.reg<f32>
    %d0 = ptx.mov %zero : !ptx.reg<f32>
    %d1 = ptx.mov %zero : !ptx.reg<f32>
    %d2 = ptx.mov %zero : !ptx.reg<f32>
    %d3 = ptx.mov %zero : !ptx.reg<f32>
    %acc = hopper.accumulator %d0, %d1, %d2, %d3 : !hopper.accumulator<64x8xf32>
    ptx.wgmma_fence
    %acc1 = hopper.wgmma_mma_async m64n8k16 bf16 %da, %db, %acc {a_major = "k", b_major = "mn", scale_d = 0} : (!hopper.matrix_descriptor<k_major, swizzle 128, mn 128, k 64>, !hopper.matrix_descriptor<mn_major, swizzle 128, mn 128, k 64>, !hopper.accumulator<64x8xf32>) -> !hopper.accumulator<64x8xf32>
    %acc2 = hopper.wgmma_mma_async m64n8k16 f16 %da, %da, %acc1 {a_major = "k", b_major = "k", scale_d = 1} : (!hopper.matrix_descriptor<k_major, swizzle 128, mn 128, k 64>, !hopper.matrix_descriptor<k_major, swizzle 128, mn 128, k 64>, !hopper.accumulator<64x8xf32>) -> !hopper.accumulator<64x8xf32>
    ptx.wgmma_commit
    ptx.wgmma_wait 1
    ptx.wgmma_wait 0
    ptx.bar sync 1 256
    ptx.bar arrive 2 128
    %p01 = ptx.cvt_pack %d1, %d0 : (!ptx.reg<f32>, !ptx.reg<f32>) -> !ptx.reg<bf16x2>
    %p23 = ptx.cvt_pack %d3, %d2 : (!ptx.reg<f32>, !ptx.reg<f32>) -> !ptx.reg<bf16x2>
    hopper.stmatrix %tile, %p01, %p23, %p01, %p23 : (!hopper.smem<align 1024>, !ptx.reg<bf16x2>, !ptx.reg<bf16x2>, !ptx.reg<bf16x2>, !ptx.reg<bf16x2>) -> ()
    hopper.stmatrix %tile, %p01, %p23 {trans} : (!hopper.smem<align 1024>, !ptx.reg<bf16x2>, !ptx.reg<bf16x2>) -> ()
    ptx.fence proxy_async
    hopper.tma_store %smem to %tc[%x, %y] if %elected : !hopper.tensormap<?x?xf32, box 64x32, swizzle 128>, !ptx.reg<u32>
    ptx.bulk_commit
    ptx.bulk_wait 0 {read}
    ptx.bulk_wait 1
    ptx.setmaxnreg dec 40
    ptx.ret
  }
}

// The PTX text, the entry pinned line by line.
// CHECK-LABEL: .visible .entry hopper_ops(
// CHECK-NEXT: .param .align 128 .b8 ta[128],
// CHECK-NEXT: .param .align 128 .b8 tb[128],
// CHECK-NEXT: .param .align 128 .b8 tc[128]
// CHECK-NEXT: )
// CHECK-NEXT: .maxnreg 168
// CHECK-NEXT: .reqntid 384
// CHECK-NEXT: {
// CHECK-NEXT: .reg .pred %p<7>;
// CHECK-NEXT: .reg .b16 %rs<2>;
// CHECK-NEXT: .reg .b32 %r<44>;
// CHECK-NEXT: .reg .b64 %rd<13>;
// CHECK-NEXT: .reg .f32 %f<6>;
// CHECK-EMPTY:
// CHECK-NEXT: mov.u64 %rd1, ta;
// CHECK-NEXT: cvta.param.u64 %rd2, %rd1;
// CHECK-NEXT: mov.u64 %rd3, tb;
// CHECK-NEXT: cvta.param.u64 %rd4, %rd3;
// CHECK-NEXT: mov.u64 %rd5, tc;
// CHECK-NEXT: cvta.param.u64 %rd6, %rd5;
// CHECK-NEXT: prefetch.tensormap [%rd2];
// CHECK-NEXT: mov.u32 %r1, smem;
// CHECK-NEXT: mov.u32 %r2, bars;
// CHECK-NEXT: mov.u32 %r3, %tid.x;
// CHECK-NEXT: mov.u32 %r4, %tid.x;
// CHECK-NEXT: mov.u32 %r5, 7;
// CHECK-NEXT: shr.u32 %r6, %r4, %r5;
// CHECK-NEXT: mov.u32 %r7, %tid.x;
// CHECK-NEXT: mov.u32 %r8, 5;
// CHECK-NEXT: shr.u32 %r9, %r7, %r8;
// CHECK-NEXT: mov.u32 %r10, 3;
// CHECK-NEXT: and.b32 %r11, %r9, %r10;
// CHECK-NEXT: mov.u32 %r12, %laneid;
// CHECK-NEXT: mov.u32 %r13, %tid.x;
// CHECK-NEXT: mov.u32 %r14, 127;
// CHECK-NEXT: and.b32 %r15, %r13, %r14;
// CHECK-NEXT: mov.u32 %r16, %cluster_ctarank;
// CHECK-NEXT: mov.u32 %r17, %clusterid.x;
// CHECK-NEXT: mov.u32 %r18, %cluster_ctaid.y;
// CHECK-NEXT: mov.u32 %r19, 0;
// CHECK-NEXT: setp.eq.u32 %p1, %r3, %r19;
// CHECK-NEXT: mov.u32 %r20, 0;
// CHECK-NEXT: add.u32 %r21, %r2, %r20;
// CHECK-NEXT: mov.u32 %r22, 8;
// CHECK-NEXT: add.u32 %r23, %r2, %r22;
// CHECK-NEXT: @%p1 mbarrier.init.shared::cta.b64 [%r21], 1;
// CHECK-NEXT: @%p1 mbarrier.init.shared::cta.b64 [%r23], 1;
// CHECK-NEXT: fence.mbarrier_init.release.cluster;
// CHECK-NEXT: bar.sync 0;
// CHECK-NEXT: mov.u32 %r24, 8;
// CHECK-NEXT: mad.lo.u32 %r25, %r19, %r24, %r2;
// CHECK-NEXT: elect.sync _|%p2, 0xffffffff;
// CHECK-NEXT: @%p2 mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r21], 32768;
// CHECK-NEXT: mov.u32 %r26, 64;
// CHECK-NEXT: mov.u32 %r27, 128;
// CHECK-NEXT: mov.u32 %r28, 2;
// CHECK-NEXT: @%p2 cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd2, {%r26, %r27}], [%r21];
// CHECK-NEXT: cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd4, {%r26, %r27, %r28}], [%r25];
// CHECK-NEXT: mov.b16 %rs1, 3;
// CHECK-NEXT: cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%r1], [%rd2, {%r26, %r27}], [%r21], %rs1;
// CHECK-NEXT: hopper_wait_1:
// CHECK-NEXT: mbarrier.try_wait.parity.shared::cta.b64 %p3, [%r21], %r19;
// CHECK-NEXT: @!%p3 bra hopper_wait_1;
// CHECK-NEXT: @%p1 bra hopper_wait_skip_3;
// CHECK-NEXT: hopper_wait_2:
// CHECK-NEXT: mbarrier.try_wait.parity.shared::cta.b64 %p4, [%r21], %r19;
// CHECK-NEXT: @!%p4 bra hopper_wait_2;
// CHECK-NEXT: hopper_wait_skip_3:
// CHECK-NEXT: mbarrier.arrive.shared::cta.b64 _, [%r21];
// CHECK-NEXT: mapa.shared::cluster.u32 %r29, %r21, %r16;
// CHECK-NEXT: mbarrier.arrive.shared::cluster.b64 _, [%r29];
// CHECK-NEXT: setmaxnreg.inc.sync.aligned.u32 232;
// CHECK-NEXT: mov.u32 %r30, 8224;
// CHECK-NEXT: add.u32 %r31, %r1, %r30;
// CHECK-NEXT: mov.u32 %r32, 4;
// CHECK-NEXT: shr.u32 %r33, %r31, %r32;
// CHECK-NEXT: mov.u32 %r34, 16383;
// CHECK-NEXT: and.b32 %r35, %r33, %r34;
// CHECK-NEXT: cvt.u64.u32 %rd7, %r35;
// CHECK-NEXT: mov.b64 %rd8, 4611686293305360384;
// CHECK-NEXT: or.b64 %rd9, %rd7, %rd8;
// CHECK-NEXT: mov.u32 %r36, 4096;
// CHECK-NEXT: add.u32 %r37, %r1, %r36;
// CHECK-NEXT: mov.u32 %r38, 4;
// CHECK-NEXT: shr.u32 %r39, %r37, %r38;
// CHECK-NEXT: mov.u32 %r40, 16383;
// CHECK-NEXT: and.b32 %r41, %r39, %r40;
// CHECK-NEXT: cvt.u64.u32 %rd10, %r41;
// CHECK-NEXT: mov.b64 %rd11, 4611686293338849280;
// CHECK-NEXT: or.b64 %rd12, %rd10, %rd11;
// CHECK-NEXT: mov.f32 %f1, 0f00000000;
// CHECK-NEXT: mov.b32 %f2, %f1;
// CHECK-NEXT: mov.b32 %f3, %f1;
// CHECK-NEXT: mov.b32 %f4, %f1;
// CHECK-NEXT: mov.b32 %f5, %f1;
// CHECK-NEXT: wgmma.fence.sync.aligned;
// CHECK-NEXT: setp.ne.u32 %p5, 0, 0;
// CHECK-NEXT: wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%f2, %f3, %f4, %f5}, %rd9, %rd12, %p5, 1, 1, 0, 1;
// CHECK-NEXT: setp.ne.u32 %p6, 1, 0;
// CHECK-NEXT: wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%f2, %f3, %f4, %f5}, %rd9, %rd9, %p6, 1, 1, 0, 0;
// CHECK-NEXT: wgmma.commit_group.sync.aligned;
// CHECK-NEXT: wgmma.wait_group.sync.aligned 1;
// CHECK-NEXT: wgmma.wait_group.sync.aligned 0;
// CHECK-NEXT: bar.sync 1, 256;
// CHECK-NEXT: bar.arrive 2, 128;
// CHECK-NEXT: cvt.rn.bf16x2.f32 %r42, %f3, %f2;
// CHECK-NEXT: cvt.rn.bf16x2.f32 %r43, %f5, %f4;
// CHECK-NEXT: stmatrix.sync.aligned.m8n8.x4.shared.b16 [%r1], {%r42, %r43, %r42, %r43};
// CHECK-NEXT: stmatrix.sync.aligned.m8n8.x2.trans.shared.b16 [%r1], {%r42, %r43};
// CHECK-NEXT: fence.proxy.async.shared::cta;
// CHECK-NEXT: @%p2 cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%rd6, {%r26, %r27}], [%r1];
// CHECK-NEXT: cp.async.bulk.commit_group;
// CHECK-NEXT: cp.async.bulk.wait_group.read 0;
// CHECK-NEXT: cp.async.bulk.wait_group 1;
// CHECK-NEXT: setmaxnreg.dec.sync.aligned.u32 40;
// CHECK-NEXT: ret;
// CHECK-NEXT: }

// After the pass, hopper ops are ptx ops (descriptors, waits and barrier addresses expand;
// the typed values are the registers that hold them).
// LOWERED-LABEL: ptx.entry @hopper_ops(ta : tmap, tb : tmap, tc : tmap) maxnreg 168 reqntid [384] {
// LOWERED-NEXT: %ta = ptx.addr_of ta : !ptx.reg<b64>
// LOWERED-NEXT: %ta_1 = ptx.cvta param %ta : !ptx.reg<b64>
// LOWERED-NEXT: %tb = ptx.addr_of tb : !ptx.reg<b64>
// LOWERED-NEXT: %tb_1 = ptx.cvta param %tb : !ptx.reg<b64>
// LOWERED-NEXT: %tc = ptx.addr_of tc : !ptx.reg<b64>
// LOWERED-NEXT: %tc_1 = ptx.cvta param %tc : !ptx.reg<b64>
// LOWERED-NEXT: ptx.inst "prefetch.tensormap [{0}]" %ta_1 : (!ptx.reg<b64>) -> ()
// LOWERED-NEXT: %smem = ptx.addr_of smem : !ptx.reg<u32>
// LOWERED-NEXT: %bars = ptx.addr_of bars : !ptx.reg<u32>
// LOWERED-NEXT: %tid = ptx.sreg tid.x : !ptx.reg<u32>
// LOWERED-NEXT: %wg = ptx.sreg tid.x : !ptx.reg<u32>
// LOWERED-NEXT: %wg_1 = ptx.const 7 : !ptx.reg<u32>
// LOWERED-NEXT: %wg_2 = ptx.shr %wg, %wg_1 : !ptx.reg<u32>
// LOWERED-NEXT: %warp = ptx.sreg tid.x : !ptx.reg<u32>
// LOWERED-NEXT: %warp_1 = ptx.const 5 : !ptx.reg<u32>
// LOWERED-NEXT: %warp_2 = ptx.shr %warp, %warp_1 : !ptx.reg<u32>
// LOWERED-NEXT: %warp_3 = ptx.const 3 : !ptx.reg<u32>
// LOWERED-NEXT: %warp_4 = ptx.and %warp_2, %warp_3 : !ptx.reg<u32>
// LOWERED-NEXT: %lane = ptx.sreg laneid : !ptx.reg<u32>
// LOWERED-NEXT: %twg = ptx.sreg tid.x : !ptx.reg<u32>
// LOWERED-NEXT: %twg_1 = ptx.const 127 : !ptx.reg<u32>
// LOWERED-NEXT: %twg_2 = ptx.and %twg, %twg_1 : !ptx.reg<u32>
// LOWERED-NEXT: %rank = ptx.sreg cluster_ctarank : !ptx.reg<u32>
// LOWERED-NEXT: %cluster = ptx.sreg clusterid.x : !ptx.reg<u32>
// LOWERED-NEXT: %cta = ptx.sreg cluster_ctaid.y : !ptx.reg<u32>
// LOWERED-NEXT: %c0 = ptx.const 0 : !ptx.reg<u32>
// LOWERED-NEXT: %first = ptx.setp eq %tid, %c0 : (!ptx.reg<u32>, !ptx.reg<u32>) -> !ptx.reg<pred>
// LOWERED-NEXT: %bar = ptx.const 0 : !ptx.reg<u32>
// LOWERED-NEXT: %bar_1 = ptx.add %bars, %bar : !ptx.reg<u32>
// LOWERED-NEXT: %bar1 = ptx.const 8 : !ptx.reg<u32>
// LOWERED-NEXT: %bar1_1 = ptx.add %bars, %bar1 : !ptx.reg<u32>
// LOWERED-NEXT: ptx.mbarrier_init 1 %bar_1 if %first : !ptx.reg<u32>
// LOWERED-NEXT: ptx.mbarrier_init 1 %bar1_1 if %first : !ptx.reg<u32>
// LOWERED-NEXT: ptx.fence mbarrier_init
// LOWERED-NEXT: ptx.bar sync 0
// LOWERED-NEXT: %stage = ptx.const 8 : !ptx.reg<u32>
// LOWERED-NEXT: %stage_1 = ptx.mad %c0, %stage, %bars : !ptx.reg<u32>
// LOWERED-NEXT: %elected = ptx.elect_sync : !ptx.reg<pred>
// LOWERED-NEXT: ptx.mbarrier_arrive %bar_1 if %elected {tx_bytes = 32768} : !ptx.reg<u32>
// LOWERED-NEXT: %x = ptx.const 64 : !ptx.reg<u32>
// LOWERED-NEXT: %y = ptx.const 128 : !ptx.reg<u32>
// LOWERED-NEXT: %z = ptx.const 2 : !ptx.reg<u32>
// LOWERED-NEXT: ptx.tma_load %smem, %ta_1, %bar_1, %x, %y if %elected : (!ptx.reg<u32>, !ptx.reg<b64>, !ptx.reg<u32>, !ptx.reg<u32>, !ptx.reg<u32>) -> ()
// LOWERED-NEXT: ptx.tma_load %smem, %tb_1, %stage_1, %x, %y, %z : (!ptx.reg<u32>, !ptx.reg<b64>, !ptx.reg<u32>, !ptx.reg<u32>, !ptx.reg<u32>, !ptx.reg<u32>) -> ()
// LOWERED-NEXT: %mask = ptx.const 3 : !ptx.reg<b16>
// LOWERED-NEXT: ptx.tma_load_multicast %smem, %ta_1, %bar_1, %mask, %x, %y : (!ptx.reg<u32>, !ptx.reg<b64>, !ptx.reg<u32>, !ptx.reg<b16>, !ptx.reg<u32>, !ptx.reg<u32>) -> ()
// LOWERED-NEXT: ptx.label hopper_wait_1
// LOWERED-NEXT: %0 = ptx.mbarrier_try_wait %bar_1, %c0 : (!ptx.reg<u32>, !ptx.reg<u32>) -> !ptx.reg<pred>
// LOWERED-NEXT: ptx.bra hopper_wait_1 if not %0
// LOWERED-NEXT: ptx.bra hopper_wait_skip_3 if %first
// LOWERED-NEXT: ptx.label hopper_wait_2
// LOWERED-NEXT: %1 = ptx.mbarrier_try_wait %bar_1, %c0 : (!ptx.reg<u32>, !ptx.reg<u32>) -> !ptx.reg<pred>
// LOWERED-NEXT: ptx.bra hopper_wait_2 if not %1
// LOWERED-NEXT: ptx.label hopper_wait_skip_3
// LOWERED-NEXT: ptx.mbarrier_arrive %bar_1 : !ptx.reg<u32>
// LOWERED-NEXT: %remote = ptx.mapa %bar_1, %rank : !ptx.reg<u32>
// LOWERED-NEXT: ptx.mbarrier_arrive cluster %remote : !ptx.reg<u32>
// LOWERED-NEXT: ptx.setmaxnreg inc 232
// LOWERED-NEXT: %da = ptx.const 8224 : !ptx.reg<u32>
// LOWERED-NEXT: %da_1 = ptx.add %smem, %da : !ptx.reg<u32>
// LOWERED-NEXT: %da_2 = ptx.const 4 : !ptx.reg<u32>
// LOWERED-NEXT: %da_3 = ptx.shr %da_1, %da_2 : !ptx.reg<u32>
// LOWERED-NEXT: %da_4 = ptx.const 16383 : !ptx.reg<u32>
// LOWERED-NEXT: %da_5 = ptx.and %da_3, %da_4 : !ptx.reg<u32>
// LOWERED-NEXT: %da_6 = ptx.cvt %da_5 : (!ptx.reg<u32>) -> !ptx.reg<b64>
// LOWERED-NEXT: %da_7 = ptx.const 4611686293305360384 : !ptx.reg<b64>
// LOWERED-NEXT: %da_8 = ptx.or %da_6, %da_7 : !ptx.reg<b64>
// LOWERED-NEXT: %db = ptx.const 4096 : !ptx.reg<u32>
// LOWERED-NEXT: %db_1 = ptx.add %smem, %db : !ptx.reg<u32>
// LOWERED-NEXT: %db_2 = ptx.const 4 : !ptx.reg<u32>
// LOWERED-NEXT: %db_3 = ptx.shr %db_1, %db_2 : !ptx.reg<u32>
// LOWERED-NEXT: %db_4 = ptx.const 16383 : !ptx.reg<u32>
// LOWERED-NEXT: %db_5 = ptx.and %db_3, %db_4 : !ptx.reg<u32>
// LOWERED-NEXT: %db_6 = ptx.cvt %db_5 : (!ptx.reg<u32>) -> !ptx.reg<b64>
// LOWERED-NEXT: %db_7 = ptx.const 4611686293338849280 : !ptx.reg<b64>
// LOWERED-NEXT: %db_8 = ptx.or %db_6, %db_7 : !ptx.reg<b64>
// LOWERED-NEXT: %zero = ptx.const 0.0 : !ptx.reg<f32>
// LOWERED-NEXT: %d0 = ptx.mov %zero : !ptx.reg<f32>
// LOWERED-NEXT: %d1 = ptx.mov %zero : !ptx.reg<f32>
// LOWERED-NEXT: %d2 = ptx.mov %zero : !ptx.reg<f32>
// LOWERED-NEXT: %d3 = ptx.mov %zero : !ptx.reg<f32>
// LOWERED-NEXT: ptx.wgmma_fence
// Each wgmma updates the accumulator's registers in place: both read and write %d0-%d3.
// LOWERED-NEXT: %[[SCALE0:.*]] = ptx.const 0 : !ptx.reg<pred>
// LOWERED-NEXT: ptx.wgmma 8 bf16 0 1 %da_8, %db_8, %[[SCALE0]], %d0, %d1, %d2, %d3 : (!ptx.reg<b64>, !ptx.reg<b64>, !ptx.reg<pred>, !ptx.reg<f32>, !ptx.reg<f32>, !ptx.reg<f32>, !ptx.reg<f32>) -> ()
// LOWERED-NEXT: %[[SCALE1:.*]] = ptx.const 1 : !ptx.reg<pred>
// LOWERED-NEXT: ptx.wgmma 8 f16 0 0 %da_8, %da_8, %[[SCALE1]], %d0, %d1, %d2, %d3 : (!ptx.reg<b64>, !ptx.reg<b64>, !ptx.reg<pred>, !ptx.reg<f32>, !ptx.reg<f32>, !ptx.reg<f32>, !ptx.reg<f32>) -> ()
// LOWERED-NEXT: ptx.wgmma_commit
// LOWERED-NEXT: ptx.wgmma_wait 1
// LOWERED-NEXT: ptx.wgmma_wait 0
// LOWERED-NEXT: ptx.bar sync 1 256
// LOWERED-NEXT: ptx.bar arrive 2 128
// LOWERED-NEXT: %p01 = ptx.cvt_pack %d1, %d0 : (!ptx.reg<f32>, !ptx.reg<f32>) -> !ptx.reg<bf16x2>
// LOWERED-NEXT: %p23 = ptx.cvt_pack %d3, %d2 : (!ptx.reg<f32>, !ptx.reg<f32>) -> !ptx.reg<bf16x2>
// LOWERED-NEXT: ptx.stmatrix %smem, %p01, %p23, %p01, %p23 : (!ptx.reg<u32>, !ptx.reg<bf16x2>, !ptx.reg<bf16x2>, !ptx.reg<bf16x2>, !ptx.reg<bf16x2>) -> ()
// LOWERED-NEXT: ptx.stmatrix trans %smem, %p01, %p23 : (!ptx.reg<u32>, !ptx.reg<bf16x2>, !ptx.reg<bf16x2>) -> ()
// LOWERED-NEXT: ptx.fence proxy_async
// LOWERED-NEXT: ptx.tma_store %smem, %tc_1, %x, %y if %elected : (!ptx.reg<u32>, !ptx.reg<b64>, !ptx.reg<u32>, !ptx.reg<u32>) -> ()
// LOWERED-NEXT: ptx.bulk_commit
// LOWERED-NEXT: ptx.bulk_wait 0 {read}
// LOWERED-NEXT: ptx.bulk_wait 1
// LOWERED-NEXT: ptx.setmaxnreg dec 40
// LOWERED-NEXT: ptx.ret
// LOWERED-NEXT: }
// LOWERED-NEXT: }
// LOWERED-NEXT: }
// LOWERED-EMPTY:

// The round trip prints the input back.
// IR-LABEL: ptx.entry @hopper_ops(ta : tmap, tb : tmap, tc : tmap) maxnreg 168 reqntid [384] {
// IR-NEXT: %ta = hopper.tensormap_param ta : !hopper.tensormap<256x128xbf16, box 128x64, swizzle 128>
// IR-NEXT: %tb = hopper.tensormap_param tb : !hopper.tensormap<4x256x128xbf16, box 1x128x64, swizzle 128>
// IR-NEXT: %tc = hopper.tensormap_param tc : !hopper.tensormap<?x?xf32, box 64x32, swizzle 128>
// IR-NEXT: hopper.tensor_map_prefetch %ta : !hopper.tensormap<256x128xbf16, box 128x64, swizzle 128>
// IR-NEXT: %smem = ptx.addr_of smem : !ptx.reg<u32>
// IR-NEXT: %bars = ptx.addr_of bars : !ptx.reg<u32>
// IR-NEXT: %ring = hopper.barrier_ring %bars : (!ptx.reg<u32>) -> !hopper.barrier_ring<stages = 2, count = 1>
// IR-NEXT: %tid = hopper.id thread.x : !ptx.reg<u32>
// IR-NEXT: %wg = hopper.id warpgroup : !ptx.reg<u32>
// IR-NEXT: %warp = hopper.id warp_in_warpgroup : !ptx.reg<u32>
// IR-NEXT: %lane = hopper.id lane : !ptx.reg<u32>
// IR-NEXT: %twg = hopper.id thread_in_warpgroup : !ptx.reg<u32>
// IR-NEXT: %rank = hopper.id cluster_cta_rank : !ptx.reg<u32>
// IR-NEXT: %cluster = hopper.id cluster.x : !ptx.reg<u32>
// IR-NEXT: %cta = hopper.id cta_in_cluster.y : !ptx.reg<u32>
// IR-NEXT: %c0 = ptx.const 0 : !ptx.reg<u32>
// IR-NEXT: %first = ptx.setp eq %tid, %c0 : (!ptx.reg<u32>, !ptx.reg<u32>) -> !ptx.reg<pred>
// IR-NEXT: %bar = hopper.ring_barrier %ring[0] : !hopper.barrier_ring<stages = 2, count = 1>
// IR-NEXT: %bar1 = hopper.ring_barrier %ring[1] : !hopper.barrier_ring<stages = 2, count = 1>
// IR-NEXT: hopper.mbarrier_init %bar if %first : !hopper.mbarrier<count = 1>
// IR-NEXT: hopper.mbarrier_init %bar1 if %first : !hopper.mbarrier<count = 1>
// IR-NEXT: ptx.fence mbarrier_init
// IR-NEXT: ptx.bar sync 0
// IR-NEXT: %i0 = builtin.unrealized_conversion_cast %c0 : !ptx.reg<u32> to index
// IR-NEXT: %stage = hopper.ring_barrier %ring[%i0] : !hopper.barrier_ring<stages = 2, count = 1>
// IR-NEXT: %elected = ptx.elect_sync : !ptx.reg<pred>
// IR-NEXT: hopper.mbarrier_arrive_expect_tx 32768 %bar if %elected : !hopper.mbarrier<count = 1>
// IR-NEXT: %x = arith.constant 64 : index
// IR-NEXT: %y = arith.constant 128 : index
// IR-NEXT: %z = arith.constant 2 : index
// IR-NEXT: hopper.tma_load %ta[%x, %y], %bar to %smem if %elected : !hopper.tensormap<256x128xbf16, box 128x64, swizzle 128>, !hopper.mbarrier<count = 1>, !ptx.reg<u32>
// IR-NEXT: hopper.tma_load %tb[%x, %y, %z], %stage to %smem : !hopper.tensormap<4x256x128xbf16, box 1x128x64, swizzle 128>, !hopper.mbarrier<count = 1>, !ptx.reg<u32>
// IR-NEXT: %mask = ptx.const 3 : !ptx.reg<b16>
// IR-NEXT: hopper.tma_load %ta[%x, %y], %bar to %smem mask %mask : !hopper.tensormap<256x128xbf16, box 128x64, swizzle 128>, !hopper.mbarrier<count = 1>, !ptx.reg<u32>, !ptx.reg<b16>
// IR-NEXT: %parity = builtin.unrealized_conversion_cast %c0 : !ptx.reg<u32> to i32
// IR-NEXT: hopper.mbarrier_wait %bar, %parity : (!hopper.mbarrier<count = 1>, i32) -> ()
// IR-NEXT: hopper.mbarrier_wait %bar, %parity if not %first : (!hopper.mbarrier<count = 1>, i32) -> ()
// IR-NEXT: hopper.mbarrier_arrive %bar : !hopper.mbarrier<count = 1>
// IR-NEXT: %remote = hopper.mapa %bar, %rank : (!hopper.mbarrier<count = 1>, !ptx.reg<u32>) -> !hopper.mbarrier<count = 1>
// IR-NEXT: hopper.mbarrier_arrive cluster %remote : !hopper.mbarrier<count = 1>
// IR-NEXT: ptx.setmaxnreg inc 232
// IR-NEXT: %tile = builtin.unrealized_conversion_cast %smem : !ptx.reg<u32> to !hopper.smem<align 1024>
// IR-NEXT: %da = hopper.matrix_descriptor %tile {mn = 64, k = 16} : (!hopper.smem<align 1024>) -> !hopper.matrix_descriptor<k_major, swizzle 128, mn 128, k 64>
// IR-NEXT: %db = hopper.matrix_descriptor %tile {mn = 0, k = 32} : (!hopper.smem<align 1024>) -> !hopper.matrix_descriptor<mn_major, swizzle 128, mn 128, k 64>
// IR-NEXT: %zero = ptx.const 0.0 : !ptx.reg<f32>
// IR-NEXT: %d0 = ptx.mov %zero : !ptx.reg<f32>
// IR-NEXT: %d1 = ptx.mov %zero : !ptx.reg<f32>
// IR-NEXT: %d2 = ptx.mov %zero : !ptx.reg<f32>
// IR-NEXT: %d3 = ptx.mov %zero : !ptx.reg<f32>
// IR-NEXT: %acc = hopper.accumulator %d0, %d1, %d2, %d3 : !hopper.accumulator<64x8xf32>
// IR-NEXT: ptx.wgmma_fence
// IR-NEXT: %acc1 = hopper.wgmma_mma_async m64n8k16 bf16 %da, %db, %acc {a_major = "k", b_major = "mn", scale_d = 0} : (!hopper.matrix_descriptor<k_major, swizzle 128, mn 128, k 64>, !hopper.matrix_descriptor<mn_major, swizzle 128, mn 128, k 64>, !hopper.accumulator<64x8xf32>) -> !hopper.accumulator<64x8xf32>
// IR-NEXT: %acc2 = hopper.wgmma_mma_async m64n8k16 f16 %da, %da, %acc1 {a_major = "k", b_major = "k", scale_d = 1} : (!hopper.matrix_descriptor<k_major, swizzle 128, mn 128, k 64>, !hopper.matrix_descriptor<k_major, swizzle 128, mn 128, k 64>, !hopper.accumulator<64x8xf32>) -> !hopper.accumulator<64x8xf32>
// IR-NEXT: ptx.wgmma_commit
// IR-NEXT: ptx.wgmma_wait 1
// IR-NEXT: ptx.wgmma_wait 0
// IR-NEXT: ptx.bar sync 1 256
// IR-NEXT: ptx.bar arrive 2 128
// IR-NEXT: %p01 = ptx.cvt_pack %d1, %d0 : (!ptx.reg<f32>, !ptx.reg<f32>) -> !ptx.reg<bf16x2>
// IR-NEXT: %p23 = ptx.cvt_pack %d3, %d2 : (!ptx.reg<f32>, !ptx.reg<f32>) -> !ptx.reg<bf16x2>
// IR-NEXT: hopper.stmatrix %tile, %p01, %p23, %p01, %p23 : (!hopper.smem<align 1024>, !ptx.reg<bf16x2>, !ptx.reg<bf16x2>, !ptx.reg<bf16x2>, !ptx.reg<bf16x2>) -> ()
// IR-NEXT: hopper.stmatrix %tile, %p01, %p23 {trans} : (!hopper.smem<align 1024>, !ptx.reg<bf16x2>, !ptx.reg<bf16x2>) -> ()
// IR-NEXT: ptx.fence proxy_async
// IR-NEXT: hopper.tma_store %smem to %tc[%x, %y] if %elected : !hopper.tensormap<?x?xf32, box 64x32, swizzle 128>, !ptx.reg<u32>
// IR-NEXT: ptx.bulk_commit
// IR-NEXT: ptx.bulk_wait 0 {read}
// IR-NEXT: ptx.bulk_wait 1
// IR-NEXT: ptx.setmaxnreg dec 40
// IR-NEXT: ptx.ret
// IR-NEXT: }
// IR-NEXT: }
// IR-NEXT: }
// IR-EMPTY:
