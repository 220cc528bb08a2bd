// DEFINE: %{pipeline} = propagate-axis-mapping,tile-split,tile-merge,split-k,insert-persistent-loop,materialize-schedule,partition-warp-roles,carry-ring-positions,lower-schedule-to-hopper,convert-hopper-to-ptx,convert-scf-to-ptx,convert-arith-to-ptx
// DEFINE: %{assemble} = import sys; from mmcomp.arch.ptxas import assemble_checked; r = assemble_checked(sys.stdin.read()); [print(e.entry, 'spills', e.spills, 'stack', e.stack_frame) for e in r.resources.values()]
// RUN: mmcomp-opt %s -p %{pipeline} -t ptx | filecheck %s
// RUN: mmcomp-opt %s -p %{pipeline} -t ptx | python -c "%{assemble}" | filecheck %s --check-prefix=PTXAS

// The whole pipeline, from a fusion with its schedule parameters to PTX text.
func.func @gelu_bias(%a: tensor<300x200xbf16>, %w: tensor<512x200xbf16>, %bias: tensor<512xbf16>) -> tensor<300x512xbf16> attributes {sched.params = #sched.params<tile = 128x128x64, stages = 4, epilogue = registers, swizzle = 2>} {
  %y = fusion.linear %a, %w, %bias : (tensor<300x200xbf16>, tensor<512x200xbf16>, tensor<512xbf16>) -> tensor<300x512xf32>
  %g = fusion.gelu %y approximate tanh : tensor<300x512xf32>
  %o = fusion.cast %g : tensor<300x512xf32> to tensor<300x512xbf16>
  func.return %o : tensor<300x512xbf16>
}

// A persistent, warp-specialized cooperative kernel: 3 warpgroups, the register cap that
// makes setmaxnreg take effect, tensor maps by parameter.
// CHECK:      .extern .shared .align 1024 .b8 mmcomp_shared[];
// CHECK:      .visible .entry gelu_bias(
// CHECK:      .param .align 128 .b8 tmap0[128],
// CHECK-NEXT: .param .align 128 .b8 tmap1[128]
// CHECK:      .maxnreg 168
// CHECK-NEXT: .reqntid 384
// Ring barriers: full (1 arrival + bytes) and empty (one thread of each of the two
// consumer warpgroups) per stage.
// CHECK:      mbarrier.init.shared::cta.b64 [{{.*}}], 1;
// CHECK:      mbarrier.init.shared::cta.b64 [{{.*}}], 2;
// CHECK:      fence.mbarrier_init.release.cluster;
// CHECK:      bar.sync 0;
// Programmatic dependent launch: no global access before the previous grid completes.
// CHECK-NEXT: griddepcontrol.wait;
// CHECK-NEXT: griddepcontrol.launch_dependents;
// Producer: fewer registers, wait empty, announce the bytes, two TMA loads per K block.
// CHECK:      setmaxnreg.dec.sync.aligned.u32 40;
// CHECK:      mbarrier.try_wait.parity.shared::cta.b64
// CHECK:      mbarrier.arrive.expect_tx.shared::cta.b64 _, [{{.*}}], 32768;
// CHECK:      cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes
// CHECK:      cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes
// Consumers: more registers, wait full, four k16 wgmmas, one group left in flight, release.
// CHECK:      setmaxnreg.inc.sync.aligned.u32 232;
// CHECK:      mbarrier.try_wait.parity.shared::cta.b64
// CHECK:      wgmma.fence.sync.aligned;
// CHECK-COUNT-4: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// CHECK:      wgmma.commit_group.sync.aligned;
// CHECK-NEXT: wgmma.wait_group.sync.aligned 1;
// CHECK:      mbarrier.arrive.shared::cta.b64
// The bias (no m axis) is loaded in pairs while the last wgmma group runs.
// CHECK:      ld.global.v2.b16
// CHECK:      wgmma.wait_group.sync.aligned 0;
// Epilogue in registers: bias by its n role, gelu(tanh), packed bf16 pairs, clipped stores.
// CHECK-NOT:  ld.global
// CHECK:      tanh.approx.f32
// CHECK:      cvt.rn.bf16x2.f32
// CHECK:      st.global.b32

// PTXAS: gelu_bias spills 0 stack 0
