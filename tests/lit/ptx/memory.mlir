// RUN: mmcomp-opt %s -t ptx | filecheck %s
// RUN: mmcomp-opt %s | mmcomp-opt | filecheck %s --check-prefix=IR

// Special registers, addresses, loads and stores in every space and width, predication,
// labels, branches, a counted loop with a loop-carried register, barriers, exit.

ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @dyn align 1024 dynamic
  ptx.shared @buf align 16 size 4096
  ptx.entry @memory(src : ptr, dst : ptr, tm : tmap, n : u32) maxnreg 128 reqntid [128, 1, 1] {
    %src = ptx.ld_param src : !ptx.reg<u64>
    %dst = ptx.ld_param dst : !ptx.reg<u64>
    %n = ptx.ld_param n : !ptx.reg<u32>
    %tid = ptx.sreg tid.x : !ptx.reg<u32>
    %ntid = ptx.sreg ntid.x : !ptx.reg<u32>
    %cta = ptx.sreg ctaid.x : !ptx.reg<u32>
    %ncta = ptx.sreg nctaid.x : !ptx.reg<u32>
    %lane = ptx.sreg laneid : !ptx.reg<u32>
    %warp = ptx.sreg warpid : !ptx.reg<u32>
    %cid = ptx.sreg clusterid.x : !ptx.reg<u32>
    %crank = ptx.sreg cluster_ctarank : !ptx.reg<u32>
    %clk = ptx.sreg clock64 : !ptx.reg<u64>
    %tma = ptx.addr_of tm : !ptx.reg<u64>
    %tmg = ptx.cvta param %tma : !ptx.reg<u64>
    %sbuf = ptx.addr_of buf : !ptx.reg<u32>
    %sdyn = ptx.addr_of dyn : !ptx.reg<u64>
    %gdyn = ptx.cvta shared %sdyn : !ptx.reg<u64>
    %back64 = ptx.cvta shared to %gdyn : !ptx.reg<u64>
    %back = ptx.cvt %back64 : (!ptx.reg<u64>) -> !ptx.reg<u32>
    %gsrc = ptx.cvta global to %src : !ptx.reg<u64>
    %c16 = ptx.const 16 : !ptx.reg<u32>
    %off = ptx.mul_wide %tid, %c16 : (!ptx.reg<u32>, !ptx.reg<u32>) -> !ptx.reg<u64>
    %a = ptx.add %gsrc, %off : !ptx.reg<u64>
    %v:4 = ptx.ld global %a : (!ptx.reg<u64>) -> (!ptx.reg<f32>, !ptx.reg<f32>, !ptx.reg<f32>, !ptx.reg<f32>)
    %w:2 = ptx.ld global %a {offset = 8, qualifier = "nc"} : (!ptx.reg<u64>) -> (!ptx.reg<u32>, !ptx.reg<u32>)
    %in = ptx.setp lt %tid, %n : (!ptx.reg<u32>, !ptx.reg<u32>) -> !ptx.reg<pred>
    %one = ptx.ld global %a if %in {offset = -4} : (!ptx.reg<u64>) -> !ptx.reg<f32>
    %soff = ptx.mul %tid, %c16 : !ptx.reg<u32>
    %sa = ptx.add %sbuf, %soff : !ptx.reg<u32>
    ptx.st shared %sa, %v#0, %v#1, %v#2, %v#3 : (!ptx.reg<u32>, !ptx.reg<f32>, !ptx.reg<f32>, !ptx.reg<f32>, !ptx.reg<f32>) -> ()
    ptx.st shared %back, %w#0 if not %in : (!ptx.reg<u32>, !ptx.reg<u32>) -> ()
    ptx.bar sync 0
    %r:2 = ptx.ld shared %sa {offset = 8} : (!ptx.reg<u32>) -> (!ptx.reg<u64>, !ptx.reg<u64>)
    %h = ptx.ld generic %gdyn : (!ptx.reg<u64>) -> !ptx.reg<b16>
    %i = ptx.const 0 : !ptx.reg<u32>
    %acc = ptx.const 0.0 : !ptx.reg<f32>
    ptx.label loop
    %i1 = ptx.add %i, %ntid : !ptx.reg<u32>
    %acc1 = ptx.add %acc, %one : !ptx.reg<f32>
    ptx.assign %i, %i1 : !ptx.reg<u32>
    ptx.assign %acc, %acc1 : !ptx.reg<f32>
    %more = ptx.setp lt %i, %n : (!ptx.reg<u32>, !ptx.reg<u32>) -> !ptx.reg<pred>
    ptx.bra loop if %more
    ptx.bar arrive 1 64
    ptx.bar sync 1 64
    %last = ptx.setp eq %warp, %lane : (!ptx.reg<u32>, !ptx.reg<u32>) -> !ptx.reg<pred>
    ptx.bra done if not %last
    ptx.bra skip {uni}
    ptx.label skip
    %gd = ptx.cvta global to %dst : !ptx.reg<u64>
    ptx.st global %gd, %acc : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %gd, %r#0, %r#1 {offset = 16} : (!ptx.reg<u64>, !ptx.reg<u64>, !ptx.reg<u64>) -> ()
    ptx.st global %gd, %h {offset = 32} : (!ptx.reg<u64>, !ptx.reg<b16>) -> ()
    ptx.st global %gd, %clk {offset = 40} : (!ptx.reg<u64>, !ptx.reg<u64>) -> ()
    ptx.st global %gd, %cta, %ncta, %cid, %crank {offset = 48} : (!ptx.reg<u64>, !ptx.reg<u32>, !ptx.reg<u32>, !ptx.reg<u32>, !ptx.reg<u32>) -> ()
    ptx.st global %gd, %tmg {offset = 64} : (!ptx.reg<u64>, !ptx.reg<u64>) -> ()
    ptx.exit
    ptx.label done
    ptx.ret
  }
}

// The PTX text:

// The PTX text:

// The PTX text:
// CHECK: .version 8.0
// CHECK-NEXT: .target sm_90a
// CHECK-NEXT: .address_size 64
// CHECK-EMPTY:
// CHECK-NEXT: .extern .shared .align 1024 .b8 dyn[];
// CHECK-NEXT: .shared .align 16 .b8 buf[4096];
// CHECK-EMPTY:
// CHECK-NEXT: .visible .entry memory(
// CHECK-NEXT: .param .u64 src,
// CHECK-NEXT: .param .u64 dst,
// CHECK-NEXT: .param .align 128 .b8 tm[128],
// CHECK-NEXT: .param .u32 n
// CHECK-NEXT: )
// CHECK-NEXT: .maxnreg 128
// CHECK-NEXT: .reqntid 128, 1, 1
// CHECK-NEXT: {
// CHECK-NEXT: .reg .pred %p<4>;
// CHECK-NEXT: .reg .b16 %rs<2>;
// CHECK-NEXT: .reg .b32 %r<19>;
// CHECK-NEXT: .reg .b64 %rd<15>;
// CHECK-NEXT: .reg .f32 %f<8>;
// CHECK-EMPTY:
// CHECK-NEXT: ld.param.u64 %rd1, [src];
// CHECK-NEXT: ld.param.u64 %rd2, [dst];
// CHECK-NEXT: ld.param.u32 %r1, [n];
// CHECK-NEXT: mov.u32 %r2, %tid.x;
// CHECK-NEXT: mov.u32 %r3, %ntid.x;
// CHECK-NEXT: mov.u32 %r4, %ctaid.x;
// CHECK-NEXT: mov.u32 %r5, %nctaid.x;
// CHECK-NEXT: mov.u32 %r6, %laneid;
// CHECK-NEXT: mov.u32 %r7, %warpid;
// CHECK-NEXT: mov.u32 %r8, %clusterid.x;
// CHECK-NEXT: mov.u32 %r9, %cluster_ctarank;
// CHECK-NEXT: mov.u64 %rd3, %clock64;
// CHECK-NEXT: mov.u64 %rd4, tm;
// CHECK-NEXT: cvta.param.u64 %rd5, %rd4;
// CHECK-NEXT: mov.u32 %r10, buf;
// CHECK-NEXT: mov.u64 %rd6, dyn;
// CHECK-NEXT: cvta.shared.u64 %rd7, %rd6;
// CHECK-NEXT: cvta.to.shared.u64 %rd8, %rd7;
// CHECK-NEXT: cvt.u32.u64 %r11, %rd8;
// CHECK-NEXT: cvta.to.global.u64 %rd9, %rd1;
// CHECK-NEXT: mov.u32 %r12, 16;
// CHECK-NEXT: mul.wide.u32 %rd10, %r2, %r12;
// CHECK-NEXT: add.u64 %rd11, %rd9, %rd10;
// CHECK-NEXT: ld.global.v4.f32 {%f1, %f2, %f3, %f4}, [%rd11];
// CHECK-NEXT: ld.global.nc.v2.u32 {%r13, %r14}, [%rd11+8];
// CHECK-NEXT: setp.lt.u32 %p1, %r2, %r1;
// CHECK-NEXT: @%p1 ld.global.f32 %f5, [%rd11+-4];
// CHECK-NEXT: mul.lo.u32 %r15, %r2, %r12;
// CHECK-NEXT: add.u32 %r16, %r10, %r15;
// CHECK-NEXT: st.shared.v4.f32 [%r16], {%f1, %f2, %f3, %f4};
// CHECK-NEXT: @!%p1 st.shared.u32 [%r11], %r13;
// CHECK-NEXT: bar.sync 0;
// CHECK-NEXT: ld.shared.v2.u64 {%rd12, %rd13}, [%r16+8];
// CHECK-NEXT: ld.b16 %rs1, [%rd7];
// CHECK-NEXT: mov.u32 %r17, 0;
// CHECK-NEXT: mov.f32 %f6, 0f00000000;
// CHECK-NEXT: loop:
// CHECK-NEXT: add.u32 %r18, %r17, %r3;
// CHECK-NEXT: add.f32 %f7, %f6, %f5;
// CHECK-NEXT: mov.b32 %r17, %r18;
// CHECK-NEXT: mov.b32 %f6, %f7;
// CHECK-NEXT: setp.lt.u32 %p2, %r17, %r1;
// CHECK-NEXT: @%p2 bra loop;
// CHECK-NEXT: bar.arrive 1, 64;
// CHECK-NEXT: bar.sync 1, 64;
// CHECK-NEXT: setp.eq.u32 %p3, %r7, %r6;
// CHECK-NEXT: @!%p3 bra done;
// CHECK-NEXT: bra.uni skip;
// CHECK-NEXT: skip:
// CHECK-NEXT: cvta.to.global.u64 %rd14, %rd2;
// CHECK-NEXT: st.global.f32 [%rd14], %f6;
// CHECK-NEXT: st.global.v2.u64 [%rd14+16], {%rd12, %rd13};
// CHECK-NEXT: st.global.b16 [%rd14+32], %rs1;
// CHECK-NEXT: st.global.u64 [%rd14+40], %rd3;
// CHECK-NEXT: st.global.v4.u32 [%rd14+48], {%r4, %r5, %r8, %r9};
// CHECK-NEXT: st.global.u64 [%rd14+64], %rd5;
// CHECK-NEXT: exit;
// CHECK-NEXT: done:
// CHECK-NEXT: ret;
// CHECK-NEXT: }

// The IR round trip:
// IR: builtin.module {
// IR-NEXT: ptx.module version 8.0 target sm_90a address_size 64 {
// IR-NEXT: ptx.shared @dyn align 1024 dynamic
// IR-NEXT: ptx.shared @buf align 16 size 4096
// IR-NEXT: ptx.entry @memory(src : ptr, dst : ptr, tm : tmap, n : u32) maxnreg 128 reqntid [128, 1, 1] {
// IR-NEXT: %src = ptx.ld_param src : !ptx.reg<u64>
// IR-NEXT: %dst = ptx.ld_param dst : !ptx.reg<u64>
// IR-NEXT: %n = ptx.ld_param n : !ptx.reg<u32>
// IR-NEXT: %tid = ptx.sreg tid.x : !ptx.reg<u32>
// IR-NEXT: %ntid = ptx.sreg ntid.x : !ptx.reg<u32>
// IR-NEXT: %cta = ptx.sreg ctaid.x : !ptx.reg<u32>
// IR-NEXT: %ncta = ptx.sreg nctaid.x : !ptx.reg<u32>
// IR-NEXT: %lane = ptx.sreg laneid : !ptx.reg<u32>
// IR-NEXT: %warp = ptx.sreg warpid : !ptx.reg<u32>
// IR-NEXT: %cid = ptx.sreg clusterid.x : !ptx.reg<u32>
// IR-NEXT: %crank = ptx.sreg cluster_ctarank : !ptx.reg<u32>
// IR-NEXT: %clk = ptx.sreg clock64 : !ptx.reg<u64>
// IR-NEXT: %tma = ptx.addr_of tm : !ptx.reg<u64>
// IR-NEXT: %tmg = ptx.cvta param %tma : !ptx.reg<u64>
// IR-NEXT: %sbuf = ptx.addr_of buf : !ptx.reg<u32>
// IR-NEXT: %sdyn = ptx.addr_of dyn : !ptx.reg<u64>
// IR-NEXT: %gdyn = ptx.cvta shared %sdyn : !ptx.reg<u64>
// IR-NEXT: %back64 = ptx.cvta shared to %gdyn : !ptx.reg<u64>
// IR-NEXT: %back = ptx.cvt %back64 : (!ptx.reg<u64>) -> !ptx.reg<u32>
// IR-NEXT: %gsrc = ptx.cvta global to %src : !ptx.reg<u64>
// IR-NEXT: %c16 = ptx.const 16 : !ptx.reg<u32>
// IR-NEXT: %off = ptx.mul_wide %tid, %c16 : (!ptx.reg<u32>, !ptx.reg<u32>) -> !ptx.reg<u64>
// IR-NEXT: %a = ptx.add %gsrc, %off : !ptx.reg<u64>
// IR-NEXT: %v, %v_1, %v_2, %v_3 = ptx.ld global %a : (!ptx.reg<u64>) -> (!ptx.reg<f32>, !ptx.reg<f32>, !ptx.reg<f32>, !ptx.reg<f32>)
// IR-NEXT: %w, %w_1 = ptx.ld global %a {offset = 8, qualifier = "nc"} : (!ptx.reg<u64>) -> (!ptx.reg<u32>, !ptx.reg<u32>)
// IR-NEXT: %in = ptx.setp lt %tid, %n : (!ptx.reg<u32>, !ptx.reg<u32>) -> !ptx.reg<pred>
// IR-NEXT: %one = ptx.ld global %a if %in {offset = -4} : (!ptx.reg<u64>) -> !ptx.reg<f32>
// IR-NEXT: %soff = ptx.mul %tid, %c16 : !ptx.reg<u32>
// IR-NEXT: %sa = ptx.add %sbuf, %soff : !ptx.reg<u32>
// IR-NEXT: ptx.st shared %sa, %v, %v_1, %v_2, %v_3 : (!ptx.reg<u32>, !ptx.reg<f32>, !ptx.reg<f32>, !ptx.reg<f32>, !ptx.reg<f32>) -> ()
// IR-NEXT: ptx.st shared %back, %w if not %in : (!ptx.reg<u32>, !ptx.reg<u32>) -> ()
// IR-NEXT: ptx.bar sync 0
// IR-NEXT: %r, %r_1 = ptx.ld shared %sa {offset = 8} : (!ptx.reg<u32>) -> (!ptx.reg<u64>, !ptx.reg<u64>)
// IR-NEXT: %h = ptx.ld generic %gdyn : (!ptx.reg<u64>) -> !ptx.reg<b16>
// IR-NEXT: %i = ptx.const 0 : !ptx.reg<u32>
// IR-NEXT: %acc = ptx.const 0.0 : !ptx.reg<f32>
// IR-NEXT: ptx.label loop
// IR-NEXT: %i1 = ptx.add %i, %ntid : !ptx.reg<u32>
// IR-NEXT: %acc1 = ptx.add %acc, %one : !ptx.reg<f32>
// IR-NEXT: ptx.assign %i, %i1 : !ptx.reg<u32>
// IR-NEXT: ptx.assign %acc, %acc1 : !ptx.reg<f32>
// IR-NEXT: %more = ptx.setp lt %i, %n : (!ptx.reg<u32>, !ptx.reg<u32>) -> !ptx.reg<pred>
// IR-NEXT: ptx.bra loop if %more
// IR-NEXT: ptx.bar arrive 1 64
// IR-NEXT: ptx.bar sync 1 64
// IR-NEXT: %last = ptx.setp eq %warp, %lane : (!ptx.reg<u32>, !ptx.reg<u32>) -> !ptx.reg<pred>
// IR-NEXT: ptx.bra done if not %last
// IR-NEXT: ptx.bra skip {uni}
// IR-NEXT: ptx.label skip
// IR-NEXT: %gd = ptx.cvta global to %dst : !ptx.reg<u64>
// IR-NEXT: ptx.st global %gd, %acc : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
// IR-NEXT: ptx.st global %gd, %r, %r_1 {offset = 16} : (!ptx.reg<u64>, !ptx.reg<u64>, !ptx.reg<u64>) -> ()
// IR-NEXT: ptx.st global %gd, %h {offset = 32} : (!ptx.reg<u64>, !ptx.reg<b16>) -> ()
// IR-NEXT: ptx.st global %gd, %clk {offset = 40} : (!ptx.reg<u64>, !ptx.reg<u64>) -> ()
// IR-NEXT: ptx.st global %gd, %cta, %ncta, %cid, %crank {offset = 48} : (!ptx.reg<u64>, !ptx.reg<u32>, !ptx.reg<u32>, !ptx.reg<u32>, !ptx.reg<u32>) -> ()
// IR-NEXT: ptx.st global %gd, %tmg {offset = 64} : (!ptx.reg<u64>, !ptx.reg<u64>) -> ()
// IR-NEXT: ptx.exit
// IR-NEXT: ptx.label done
// IR-NEXT: ptx.ret
// IR-NEXT: }
// IR-NEXT: }
// IR-NEXT: }
