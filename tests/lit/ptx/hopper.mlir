// RUN: mmcomp-opt %s -t ptx | filecheck %s
// RUN: mmcomp-opt %s | mmcomp-opt | filecheck %s --check-prefix=IR

// The Hopper instruction forms: mbarrier, TMA loads (plain and multicast) and stores,
// bulk groups, fences, cluster barriers, wgmma, setmaxnreg, elect.sync, stmatrix, mapa,
// and the ptx.inst escape hatch.

ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 dynamic
  ptx.entry @hopper(ta : tmap, tc : tmap) maxnreg 168 reqntid [384] {
    %pa = ptx.addr_of ta : !ptx.reg<u64>
    %tmap = ptx.cvta param %pa : !ptx.reg<u64>
    %pc = ptx.addr_of tc : !ptx.reg<u64>
    %tmapc = ptx.cvta param %pc : !ptx.reg<u64>
    %base = ptx.addr_of smem : !ptx.reg<u32>
    %c8 = ptx.const 8 : !ptx.reg<u32>
    %bar = ptx.add %base, %c8 : !ptx.reg<u32>
    %tile = ptx.const 1024 : !ptx.reg<u32>
    %dst = ptx.add %base, %tile : !ptx.reg<u32>
    %tid = ptx.sreg tid.x : !ptx.reg<u32>
    %c0 = ptx.const 0 : !ptx.reg<u32>
    %first = ptx.setp eq %tid, %c0 : (!ptx.reg<u32>, !ptx.reg<u32>) -> !ptx.reg<pred>
    ptx.mbarrier_init 1 %bar if %first : !ptx.reg<u32>
    ptx.fence mbarrier_init
    ptx.fence proxy_async
    ptx.cluster_barrier arrive
    ptx.cluster_barrier wait
    ptx.bar sync 0
    %elected = ptx.elect_sync : !ptx.reg<pred>
    ptx.mbarrier_arrive %bar if %elected {tx_bytes = 16384} : !ptx.reg<u32>
    ptx.mbarrier_expect_tx 0 %bar if %elected : !ptx.reg<u32>
    %x = ptx.const 64 : !ptx.reg<s32>
    %y = ptx.const 128 : !ptx.reg<s32>
    %z = ptx.const 0 : !ptx.reg<s32>
    ptx.tma_load %dst, %tmap, %bar, %x, %y if %elected : (!ptx.reg<u32>, !ptx.reg<u64>, !ptx.reg<u32>, !ptx.reg<s32>, !ptx.reg<s32>) -> ()
    ptx.tma_load %dst, %tmap, %bar, %x, %y, %z : (!ptx.reg<u32>, !ptx.reg<u64>, !ptx.reg<u32>, !ptx.reg<s32>, !ptx.reg<s32>, !ptx.reg<s32>) -> ()
    %mask = ptx.const 3 : !ptx.reg<b16>
    ptx.tma_load_multicast %dst, %tmap, %bar, %mask, %x, %y : (!ptx.reg<u32>, !ptx.reg<u64>, !ptx.reg<u32>, !ptx.reg<b16>, !ptx.reg<s32>, !ptx.reg<s32>) -> ()
    %rank = ptx.sreg cluster_ctarank : !ptx.reg<u32>
    %remote = ptx.mapa %bar, %rank : (!ptx.reg<u32>, !ptx.reg<u32>) -> !ptx.reg<u32>
    ptx.mbarrier_arrive cluster %remote : !ptx.reg<u32>
    %phase = ptx.const 0 : !ptx.reg<u32>
    ptx.label wait
    %done = ptx.mbarrier_try_wait %bar, %phase : (!ptx.reg<u32>, !ptx.reg<u32>) -> !ptx.reg<pred>
    ptx.bra wait if not %done
    ptx.setmaxnreg inc 232
    %desc_a = ptx.inst "mov.b64 {0}, 4611686293305294848" : () -> !ptx.reg<b64>
    %desc_b = ptx.inst "mov.b64 {0}, 4611686293305294912" : () -> !ptx.reg<b64>
    %zero = ptx.const 0.0 : !ptx.reg<f32>
    %d0 = ptx.mov %zero : !ptx.reg<f32>
    %d1 = ptx.mov %zero : !ptx.reg<f32>
    %d2 = ptx.mov %zero : !ptx.reg<f32>
    %d3 = ptx.mov %zero : !ptx.reg<f32>
    %scale = ptx.setp ne %c0, %c0 : (!ptx.reg<u32>, !ptx.reg<u32>) -> !ptx.reg<pred>
    ptx.griddepcontrol_wait
    ptx.griddepcontrol_launch_dependents
    ptx.wgmma_fence
    ptx.wgmma 8 bf16 0 1 %desc_a, %desc_b, %scale, %d0, %d1, %d2, %d3 : (!ptx.reg<b64>, !ptx.reg<b64>, !ptx.reg<pred>, !ptx.reg<f32>, !ptx.reg<f32>, !ptx.reg<f32>, !ptx.reg<f32>) -> ()
    ptx.wgmma_commit
    ptx.wgmma_wait 0
    %p01 = ptx.cvt_pack %d1, %d0 : (!ptx.reg<f32>, !ptx.reg<f32>) -> !ptx.reg<bf16x2>
    %p23 = ptx.cvt_pack %d3, %d2 : (!ptx.reg<f32>, !ptx.reg<f32>) -> !ptx.reg<bf16x2>
    ptx.stmatrix %dst, %p01, %p23, %p01, %p23 : (!ptx.reg<u32>, !ptx.reg<bf16x2>, !ptx.reg<bf16x2>, !ptx.reg<bf16x2>, !ptx.reg<bf16x2>) -> ()
    ptx.stmatrix trans %dst, %p01 : (!ptx.reg<u32>, !ptx.reg<bf16x2>) -> ()
    ptx.fence proxy_async
    ptx.tma_store %dst, %tmapc, %x, %y if %elected : (!ptx.reg<u32>, !ptx.reg<u64>, !ptx.reg<s32>, !ptx.reg<s32>) -> ()
    ptx.bulk_commit
    ptx.bulk_wait 0 {read}
    ptx.bulk_wait 1
    ptx.setmaxnreg dec 40
    ptx.inst "st.shared.v2.f32 [{0}], {{1}, {2}}" %dst, %d0, %d1 : (!ptx.reg<u32>, !ptx.reg<f32>, !ptx.reg<f32>) -> ()
    ptx.inst "st.shared.v4.f32 [{0}+16], {1:5}" %dst, %d0, %d1, %d2, %d3 if %first : (!ptx.reg<u32>, !ptx.reg<f32>, !ptx.reg<f32>, !ptx.reg<f32>, !ptx.reg<f32>) -> ()
    ptx.inst "fence.proxy.async"
    %q, %q2 = ptx.inst "mov.b32 {0}, 7;\n\tadd.u32 {1}, {0}, {2}" %c8 : (!ptx.reg<u32>) -> (!ptx.reg<u32>, !ptx.reg<u32>)
    ptx.st shared %dst, %q, %q2 : (!ptx.reg<u32>, !ptx.reg<u32>, !ptx.reg<u32>) -> ()
    ptx.ret
  }
}

// The PTX text:
// CHECK: .version 8.0
// CHECK-NEXT: .target sm_90a
// CHECK-NEXT: .address_size 64
// CHECK-EMPTY:
// CHECK-NEXT: .extern .shared .align 1024 .b8 smem[];
// CHECK-EMPTY:
// CHECK-NEXT: .visible .entry hopper(
// CHECK-NEXT: .param .align 128 .b8 ta[128],
// CHECK-NEXT: .param .align 128 .b8 tc[128]
// CHECK-NEXT: )
// CHECK-NEXT: .maxnreg 168
// CHECK-NEXT: .reqntid 384
// CHECK-NEXT: {
// CHECK-NEXT: .reg .pred %p<5>;
// CHECK-NEXT: .reg .b16 %rs<2>;
// CHECK-NEXT: .reg .b32 %r<18>;
// CHECK-NEXT: .reg .b64 %rd<7>;
// CHECK-NEXT: .reg .f32 %f<6>;
// CHECK-EMPTY:
// CHECK-NEXT: mov.u64 %rd1, ta;
// CHECK-NEXT: cvta.param.u64 %rd2, %rd1;
// CHECK-NEXT: mov.u64 %rd3, tc;
// CHECK-NEXT: cvta.param.u64 %rd4, %rd3;
// CHECK-NEXT: mov.u32 %r1, smem;
// CHECK-NEXT: mov.u32 %r2, 8;
// CHECK-NEXT: add.u32 %r3, %r1, %r2;
// CHECK-NEXT: mov.u32 %r4, 1024;
// CHECK-NEXT: add.u32 %r5, %r1, %r4;
// CHECK-NEXT: mov.u32 %r6, %tid.x;
// CHECK-NEXT: mov.u32 %r7, 0;
// CHECK-NEXT: setp.eq.u32 %p1, %r6, %r7;
// CHECK-NEXT: @%p1 mbarrier.init.shared::cta.b64 [%r3], 1;
// CHECK-NEXT: fence.mbarrier_init.release.cluster;
// CHECK-NEXT: fence.proxy.async.shared::cta;
// CHECK-NEXT: barrier.cluster.arrive.release.aligned;
// CHECK-NEXT: barrier.cluster.wait.acquire.aligned;
// CHECK-NEXT: bar.sync 0;
// CHECK-NEXT: elect.sync _|%p2, 0xffffffff;
// CHECK-NEXT: @%p2 mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r3], 16384;
// CHECK-NEXT: @%p2 mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%r3], 0;
// CHECK-NEXT: mov.s32 %r8, 64;
// CHECK-NEXT: mov.s32 %r9, 128;
// CHECK-NEXT: mov.s32 %r10, 0;
// CHECK-NEXT: @%p2 cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%r5], [%rd2, {%r8, %r9}], [%r3];
// CHECK-NEXT: cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%r5], [%rd2, {%r8, %r9, %r10}], [%r3];
// CHECK-NEXT: mov.b16 %rs1, 3;
// CHECK-NEXT: cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%r5], [%rd2, {%r8, %r9}], [%r3], %rs1;
// CHECK-NEXT: mov.u32 %r11, %cluster_ctarank;
// CHECK-NEXT: mapa.shared::cluster.u32 %r12, %r3, %r11;
// CHECK-NEXT: mbarrier.arrive.shared::cluster.b64 _, [%r12];
// CHECK-NEXT: mov.u32 %r13, 0;
// CHECK-NEXT: wait:
// CHECK-NEXT: mbarrier.try_wait.parity.shared::cta.b64 %p3, [%r3], %r13;
// CHECK-NEXT: @!%p3 bra wait;
// CHECK-NEXT: setmaxnreg.inc.sync.aligned.u32 232;
// CHECK-NEXT: mov.b64 %rd5, 4611686293305294848;
// CHECK-NEXT: mov.b64 %rd6, 4611686293305294912;
// CHECK-NEXT: mov.f32 %f1, 0f00000000;
// CHECK-NEXT: mov.b32 %f2, %f1;
// CHECK-NEXT: mov.b32 %f3, %f1;
// CHECK-NEXT: mov.b32 %f4, %f1;
// CHECK-NEXT: mov.b32 %f5, %f1;
// CHECK-NEXT: setp.ne.u32 %p4, %r7, %r7;
// CHECK-NEXT: griddepcontrol.wait;
// CHECK-NEXT: griddepcontrol.launch_dependents;
// CHECK-NEXT: wgmma.fence.sync.aligned;
// CHECK-NEXT: wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%f2, %f3, %f4, %f5}, %rd5, %rd6, %p4, 1, 1, 0, 1;
// CHECK-NEXT: wgmma.commit_group.sync.aligned;
// CHECK-NEXT: wgmma.wait_group.sync.aligned 0;
// CHECK-NEXT: cvt.rn.bf16x2.f32 %r14, %f3, %f2;
// CHECK-NEXT: cvt.rn.bf16x2.f32 %r15, %f5, %f4;
// CHECK-NEXT: stmatrix.sync.aligned.m8n8.x4.shared.b16 [%r5], {%r14, %r15, %r14, %r15};
// CHECK-NEXT: stmatrix.sync.aligned.m8n8.x1.trans.shared.b16 [%r5], {%r14};
// CHECK-NEXT: fence.proxy.async.shared::cta;
// CHECK-NEXT: @%p2 cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%rd4, {%r8, %r9}], [%r5];
// CHECK-NEXT: cp.async.bulk.commit_group;
// CHECK-NEXT: cp.async.bulk.wait_group.read 0;
// CHECK-NEXT: cp.async.bulk.wait_group 1;
// CHECK-NEXT: setmaxnreg.dec.sync.aligned.u32 40;
// CHECK-NEXT: st.shared.v2.f32 [%r5], {%f2, %f3};
// CHECK-NEXT: @%p1 st.shared.v4.f32 [%r5+16], {%f2, %f3, %f4, %f5};
// CHECK-NEXT: fence.proxy.async;
// CHECK-NEXT: mov.b32 %r16, 7;
// CHECK-NEXT: add.u32 %r17, %r16, %r2;
// CHECK-NEXT: st.shared.v2.u32 [%r5], {%r16, %r17};
// CHECK-NEXT: ret;
// CHECK-NEXT: }

// The IR round trip:
// IR: builtin.module {
// IR-NEXT: ptx.module version 8.0 target sm_90a address_size 64 {
// IR-NEXT: ptx.shared @smem align 1024 dynamic
// IR-NEXT: ptx.entry @hopper(ta : tmap, tc : tmap) maxnreg 168 reqntid [384] {
// IR-NEXT: %pa = ptx.addr_of ta : !ptx.reg<u64>
// IR-NEXT: %tmap = ptx.cvta param %pa : !ptx.reg<u64>
// IR-NEXT: %pc = ptx.addr_of tc : !ptx.reg<u64>
// IR-NEXT: %tmapc = ptx.cvta param %pc : !ptx.reg<u64>
// IR-NEXT: %base = ptx.addr_of smem : !ptx.reg<u32>
// IR-NEXT: %c8 = ptx.const 8 : !ptx.reg<u32>
// IR-NEXT: %bar = ptx.add %base, %c8 : !ptx.reg<u32>
// IR-NEXT: %tile = ptx.const 1024 : !ptx.reg<u32>
// IR-NEXT: %dst = ptx.add %base, %tile : !ptx.reg<u32>
// IR-NEXT: %tid = ptx.sreg tid.x : !ptx.reg<u32>
// IR-NEXT: %c0 = ptx.const 0 : !ptx.reg<u32>
// IR-NEXT: %first = ptx.setp eq %tid, %c0 : (!ptx.reg<u32>, !ptx.reg<u32>) -> !ptx.reg<pred>
// IR-NEXT: ptx.mbarrier_init 1 %bar if %first : !ptx.reg<u32>
// IR-NEXT: ptx.fence mbarrier_init
// IR-NEXT: ptx.fence proxy_async
// IR-NEXT: ptx.cluster_barrier arrive
// IR-NEXT: ptx.cluster_barrier wait
// IR-NEXT: ptx.bar sync 0
// IR-NEXT: %elected = ptx.elect_sync : !ptx.reg<pred>
// IR-NEXT: ptx.mbarrier_arrive %bar if %elected {tx_bytes = 16384} : !ptx.reg<u32>
// IR-NEXT: ptx.mbarrier_expect_tx 0 %bar if %elected : !ptx.reg<u32>
// IR-NEXT: %x = ptx.const 64 : !ptx.reg<s32>
// IR-NEXT: %y = ptx.const 128 : !ptx.reg<s32>
// IR-NEXT: %z = ptx.const 0 : !ptx.reg<s32>
// IR-NEXT: ptx.tma_load %dst, %tmap, %bar, %x, %y if %elected : (!ptx.reg<u32>, !ptx.reg<u64>, !ptx.reg<u32>, !ptx.reg<s32>, !ptx.reg<s32>) -> ()
// IR-NEXT: ptx.tma_load %dst, %tmap, %bar, %x, %y, %z : (!ptx.reg<u32>, !ptx.reg<u64>, !ptx.reg<u32>, !ptx.reg<s32>, !ptx.reg<s32>, !ptx.reg<s32>) -> ()
// IR-NEXT: %mask = ptx.const 3 : !ptx.reg<b16>
// IR-NEXT: ptx.tma_load_multicast %dst, %tmap, %bar, %mask, %x, %y : (!ptx.reg<u32>, !ptx.reg<u64>, !ptx.reg<u32>, !ptx.reg<b16>, !ptx.reg<s32>, !ptx.reg<s32>) -> ()
// IR-NEXT: %rank = ptx.sreg cluster_ctarank : !ptx.reg<u32>
// IR-NEXT: %remote = ptx.mapa %bar, %rank : !ptx.reg<u32>
// IR-NEXT: ptx.mbarrier_arrive cluster %remote : !ptx.reg<u32>
// IR-NEXT: %phase = ptx.const 0 : !ptx.reg<u32>
// IR-NEXT: ptx.label wait
// IR-NEXT: %done = ptx.mbarrier_try_wait %bar, %phase : (!ptx.reg<u32>, !ptx.reg<u32>) -> !ptx.reg<pred>
// IR-NEXT: ptx.bra wait if not %done
// IR-NEXT: ptx.setmaxnreg inc 232
// IR-NEXT: %desc_a = ptx.inst "mov.b64 {0}, 4611686293305294848" : () -> !ptx.reg<b64>
// IR-NEXT: %desc_b = ptx.inst "mov.b64 {0}, 4611686293305294912" : () -> !ptx.reg<b64>
// IR-NEXT: %zero = ptx.const 0.0 : !ptx.reg<f32>
// IR-NEXT: %d0 = ptx.mov %zero : !ptx.reg<f32>
// IR-NEXT: %d1 = ptx.mov %zero : !ptx.reg<f32>
// IR-NEXT: %d2 = ptx.mov %zero : !ptx.reg<f32>
// IR-NEXT: %d3 = ptx.mov %zero : !ptx.reg<f32>
// IR-NEXT: %scale = ptx.setp ne %c0, %c0 : (!ptx.reg<u32>, !ptx.reg<u32>) -> !ptx.reg<pred>
// IR-NEXT: ptx.griddepcontrol_wait
// IR-NEXT: ptx.griddepcontrol_launch_dependents
// IR-NEXT: ptx.wgmma_fence
// IR-NEXT: ptx.wgmma 8 bf16 0 1 %desc_a, %desc_b, %scale, %d0, %d1, %d2, %d3 : (!ptx.reg<b64>, !ptx.reg<b64>, !ptx.reg<pred>, !ptx.reg<f32>, !ptx.reg<f32>, !ptx.reg<f32>, !ptx.reg<f32>) -> ()
// IR-NEXT: ptx.wgmma_commit
// IR-NEXT: ptx.wgmma_wait 0
// IR-NEXT: %p01 = ptx.cvt_pack %d1, %d0 : (!ptx.reg<f32>, !ptx.reg<f32>) -> !ptx.reg<bf16x2>
// IR-NEXT: %p23 = ptx.cvt_pack %d3, %d2 : (!ptx.reg<f32>, !ptx.reg<f32>) -> !ptx.reg<bf16x2>
// IR-NEXT: ptx.stmatrix %dst, %p01, %p23, %p01, %p23 : (!ptx.reg<u32>, !ptx.reg<bf16x2>, !ptx.reg<bf16x2>, !ptx.reg<bf16x2>, !ptx.reg<bf16x2>) -> ()
// IR-NEXT: ptx.stmatrix trans %dst, %p01 : (!ptx.reg<u32>, !ptx.reg<bf16x2>) -> ()
// IR-NEXT: ptx.fence proxy_async
// IR-NEXT: ptx.tma_store %dst, %tmapc, %x, %y if %elected : (!ptx.reg<u32>, !ptx.reg<u64>, !ptx.reg<s32>, !ptx.reg<s32>) -> ()
// IR-NEXT: ptx.bulk_commit
// IR-NEXT: ptx.bulk_wait 0 {read}
// IR-NEXT: ptx.bulk_wait 1
// IR-NEXT: ptx.setmaxnreg dec 40
// IR-NEXT: ptx.inst "st.shared.v2.f32 [{0}], {{[{][{]}}1}, {2{{[}][}]}}" %dst, %d0, %d1 : (!ptx.reg<u32>, !ptx.reg<f32>, !ptx.reg<f32>) -> ()
// IR-NEXT: ptx.inst "st.shared.v4.f32 [{0}+16], {1:5}" %dst, %d0, %d1, %d2, %d3 if %first : (!ptx.reg<u32>, !ptx.reg<f32>, !ptx.reg<f32>, !ptx.reg<f32>, !ptx.reg<f32>) -> ()
// IR-NEXT: ptx.inst "fence.proxy.async"
// IR-NEXT: %q, %q2 = ptx.inst "mov.b32 {0}, 7;\0A\09add.u32 {1}, {0}, {2}" %c8 : (!ptx.reg<u32>) -> (!ptx.reg<u32>, !ptx.reg<u32>)
// IR-NEXT: ptx.st shared %dst, %q, %q2 : (!ptx.reg<u32>, !ptx.reg<u32>, !ptx.reg<u32>) -> ()
// IR-NEXT: ptx.ret
// IR-NEXT: }
// IR-NEXT: }
// IR-NEXT: }
