// RUN: mmcomp-opt %s -t ptx | filecheck %s
// RUN: mmcomp-opt %s | mmcomp-opt | filecheck %s --check-prefix=IR

// Every arithmetic, logic, comparison and conversion form, on every kind it accepts.

ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.entry @arith(x : u32, y : s32, f : f32, w : u64, o : ptr) {
    %x = ptx.ld_param x : !ptx.reg<u32>
    %y = ptx.ld_param y : !ptx.reg<s32>
    %f = ptx.ld_param f : !ptx.reg<f32>
    %w = ptx.ld_param w : !ptx.reg<u64>
    %o = ptx.ld_param o : !ptx.reg<u64>
    %c5 = ptx.const 5 : !ptx.reg<u32>
    %cm = ptx.const -3 : !ptx.reg<s32>
    %c1f = ptx.const 1.0 : !ptx.reg<f32>
    %ch = ptx.const 0.5 : !ptx.reg<f64>
    %ct = ptx.const 1 : !ptx.reg<pred>
    %b = ptx.mov %x : (!ptx.reg<u32>) -> !ptx.reg<b32>
    %fb = ptx.mov %f : (!ptx.reg<f32>) -> !ptx.reg<b32>
    %a0 = ptx.add %x, %c5 : !ptx.reg<u32>
    %a1 = ptx.add %y, %cm : !ptx.reg<s32>
    %a2 = ptx.add %f, %c1f : !ptx.reg<f32>
    %a3 = ptx.add %b, %fb : !ptx.reg<b32>
    %s0 = ptx.sub %a0, %x : !ptx.reg<u32>
    %s1 = ptx.sub %f, %a2 : !ptx.reg<f32>
    %m0 = ptx.mul %a0, %s0 : !ptx.reg<u32>
    %m1 = ptx.mul %s1, %a2 : !ptx.reg<f32>
    %m2 = ptx.mul_hi %a1, %y : !ptx.reg<s32>
    %m3 = ptx.mul_wide %x, %c5 : (!ptx.reg<u32>, !ptx.reg<u32>) -> !ptx.reg<u64>
    %m4 = ptx.mul_wide %y, %a1 : (!ptx.reg<s32>, !ptx.reg<s32>) -> !ptx.reg<s64>
    %d0 = ptx.div %m0, %c5 : !ptx.reg<u32>
    %d1 = ptx.div %m1, %a2 : !ptx.reg<f32>
    %r0 = ptx.rem %d0, %c5 : !ptx.reg<u32>
    %n0 = ptx.min %r0, %x : !ptx.reg<u32>
    %n1 = ptx.max %a1, %m2 : !ptx.reg<s32>
    %n2 = ptx.max %d1, %f : !ptx.reg<f32>
    %n3 = ptx.min %n2, %c1f : !ptx.reg<f32>
    %ma = ptx.mad %x, %c5, %n0 : !ptx.reg<u32>
    %mf = ptx.mad %f, %n3, %c1f : !ptx.reg<f32>
    %fm = ptx.fma %f, %mf, %n2 : !ptx.reg<f32>
    %l0 = ptx.and %ma, %x : !ptx.reg<u32>
    %a4 = ptx.mov %a3 : (!ptx.reg<b32>) -> !ptx.reg<u32>
    %l1 = ptx.or %l0, %a4 : !ptx.reg<u32>
    %l2 = ptx.xor %a3, %b : !ptx.reg<b32>
    %l3 = ptx.not %l2 : !ptx.reg<b32>
    %sh0 = ptx.shl %l0, %c5 : !ptx.reg<u32>
    %sh1 = ptx.shr %a1, %c5 : (!ptx.reg<s32>, !ptx.reg<u32>) -> !ptx.reg<s32>
    %sh2 = ptx.shr %sh0, %c5 : !ptx.reg<u32>
    %sh3 = ptx.shl %w, %c5 : (!ptx.reg<u64>, !ptx.reg<u32>) -> !ptx.reg<u64>
    %e0 = ptx.ex2 %fm : !ptx.reg<f32>
    %e1 = ptx.lg2 %e0 : !ptx.reg<f32>
    %e2 = ptx.tanh %e1 : !ptx.reg<f32>
    %e3 = ptx.rcp %e2 : !ptx.reg<f32>
    %e4 = ptx.sqrt %e3 : !ptx.reg<f32>
    %e5 = ptx.rsqrt %e4 : !ptx.reg<f32>
    %ng0 = ptx.neg %e5 : !ptx.reg<f32>
    %ng1 = ptx.neg %n1 : !ptx.reg<s32>
    %ab0 = ptx.abs %ng0 : !ptx.reg<f32>
    %ab1 = ptx.abs %ng1 : !ptx.reg<s32>
    %p0 = ptx.setp lt %ab1, %y : (!ptx.reg<s32>, !ptx.reg<s32>) -> !ptx.reg<pred>
    %p1 = ptx.setp hs %sh2, %x : (!ptx.reg<u32>, !ptx.reg<u32>) -> !ptx.reg<pred>
    %p2 = ptx.setp gtu %ab0, %f : (!ptx.reg<f32>, !ptx.reg<f32>) -> !ptx.reg<pred>
    %p3 = ptx.setp eq %l3, %b : (!ptx.reg<b32>, !ptx.reg<b32>) -> !ptx.reg<pred>
    %p4 = ptx.and %p0, %p1 : !ptx.reg<pred>
    %p5 = ptx.or %p4, %p2 : !ptx.reg<pred>
    %p6 = ptx.xor %p5, %p3 : !ptx.reg<pred>
    %p7 = ptx.not %p6 : !ptx.reg<pred>
    %p8 = ptx.and %p7, %ct : !ptx.reg<pred>
    %sel = ptx.selp %ab0, %e5, %p8 : (!ptx.reg<f32>, !ptx.reg<f32>, !ptx.reg<pred>) -> !ptx.reg<f32>
    %cv0 = ptx.cvt %x : (!ptx.reg<u32>) -> !ptx.reg<u64>
    %cv1 = ptx.cvt rn %y : (!ptx.reg<s32>) -> !ptx.reg<f32>
    %cv2 = ptx.cvt rzi %sel : (!ptx.reg<f32>) -> !ptx.reg<s32>
    %cv3 = ptx.cvt rn %sel : (!ptx.reg<f32>) -> !ptx.reg<bf16>
    %cv4 = ptx.cvt %cv3 : (!ptx.reg<bf16>) -> !ptx.reg<f32>
    %cv5 = ptx.cvt rn %cv4 : (!ptx.reg<f32>) -> !ptx.reg<f16>
    %cv6 = ptx.cvt %sel : (!ptx.reg<f32>) -> !ptx.reg<f64>
    %cv7 = ptx.cvt rn %ch : (!ptx.reg<f64>) -> !ptx.reg<f32>
    %pk0 = ptx.cvt_pack %cv4, %cv7 : (!ptx.reg<f32>, !ptx.reg<f32>) -> !ptx.reg<bf16x2>
    %pk1 = ptx.cvt_pack %cv1, %sel : (!ptx.reg<f32>, !ptx.reg<f32>) -> !ptx.reg<f16x2>
    %sum = ptx.add %m3, %cv0 : !ptx.reg<u64>
    %sum2 = ptx.add %sum, %sh3 : !ptx.reg<u64>
    %ad = ptx.add %o, %sum2 : !ptx.reg<u64>
    %pk2 = ptx.mov %pk1 : (!ptx.reg<f16x2>) -> !ptx.reg<bf16x2>
    ptx.st global %ad, %pk0, %pk2 : (!ptx.reg<u64>, !ptx.reg<bf16x2>, !ptx.reg<bf16x2>) -> ()
    %l4 = ptx.mov %l1 : (!ptx.reg<u32>) -> !ptx.reg<s32>
    ptx.st global %ad, %cv2, %l4 {offset = 8} : (!ptx.reg<u64>, !ptx.reg<s32>, !ptx.reg<s32>) -> ()
    ptx.st global %ad, %cv5 {offset = 16} : (!ptx.reg<u64>, !ptx.reg<f16>) -> ()
    ptx.st global %ad, %m4 {offset = 24} : (!ptx.reg<u64>, !ptx.reg<s64>) -> ()
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
// CHECK-NEXT: .visible .entry arith(
// CHECK-NEXT: .param .u32 x,
// CHECK-NEXT: .param .s32 y,
// CHECK-NEXT: .param .f32 f,
// CHECK-NEXT: .param .u64 w,
// CHECK-NEXT: .param .u64 o
// CHECK-NEXT: )
// CHECK-NEXT: {
// CHECK-NEXT: .reg .pred %p<11>;
// CHECK-NEXT: .reg .b16 %rs<3>;
// CHECK-NEXT: .reg .b32 %r<33>;
// CHECK-NEXT: .reg .b64 %rd<10>;
// CHECK-NEXT: .reg .f32 %f<23>;
// CHECK-NEXT: .reg .f64 %fd<3>;
// CHECK-EMPTY:
// CHECK-NEXT: ld.param.u32 %r1, [x];
// CHECK-NEXT: ld.param.s32 %r2, [y];
// CHECK-NEXT: ld.param.f32 %f1, [f];
// CHECK-NEXT: ld.param.u64 %rd1, [w];
// CHECK-NEXT: ld.param.u64 %rd2, [o];
// CHECK-NEXT: mov.u32 %r3, 5;
// CHECK-NEXT: mov.s32 %r4, -3;
// CHECK-NEXT: mov.f32 %f2, 0f3F800000;
// CHECK-NEXT: mov.f64 %fd1, 0d3FE0000000000000;
// CHECK-NEXT: setp.ne.u32 %p1, 1, 0;
// CHECK-NEXT: mov.b32 %r5, %r1;
// CHECK-NEXT: mov.b32 %r6, %f1;
// CHECK-NEXT: add.u32 %r7, %r1, %r3;
// CHECK-NEXT: add.s32 %r8, %r2, %r4;
// CHECK-NEXT: add.f32 %f3, %f1, %f2;
// CHECK-NEXT: add.u32 %r9, %r5, %r6;
// CHECK-NEXT: sub.u32 %r10, %r7, %r1;
// CHECK-NEXT: sub.f32 %f4, %f1, %f3;
// CHECK-NEXT: mul.lo.u32 %r11, %r7, %r10;
// CHECK-NEXT: mul.f32 %f5, %f4, %f3;
// CHECK-NEXT: mul.hi.s32 %r12, %r8, %r2;
// CHECK-NEXT: mul.wide.u32 %rd3, %r1, %r3;
// CHECK-NEXT: mul.wide.s32 %rd4, %r2, %r8;
// CHECK-NEXT: div.u32 %r13, %r11, %r3;
// CHECK-NEXT: div.rn.f32 %f6, %f5, %f3;
// CHECK-NEXT: rem.u32 %r14, %r13, %r3;
// CHECK-NEXT: min.u32 %r15, %r14, %r1;
// CHECK-NEXT: max.s32 %r16, %r8, %r12;
// CHECK-NEXT: max.f32 %f7, %f6, %f1;
// CHECK-NEXT: min.f32 %f8, %f7, %f2;
// CHECK-NEXT: mad.lo.u32 %r17, %r1, %r3, %r15;
// CHECK-NEXT: mad.rn.f32 %f9, %f1, %f8, %f2;
// CHECK-NEXT: fma.rn.f32 %f10, %f1, %f9, %f7;
// CHECK-NEXT: and.b32 %r18, %r17, %r1;
// CHECK-NEXT: mov.b32 %r19, %r9;
// CHECK-NEXT: or.b32 %r20, %r18, %r19;
// CHECK-NEXT: xor.b32 %r21, %r9, %r5;
// CHECK-NEXT: not.b32 %r22, %r21;
// CHECK-NEXT: shl.b32 %r23, %r18, %r3;
// CHECK-NEXT: shr.s32 %r24, %r8, %r3;
// CHECK-NEXT: shr.u32 %r25, %r23, %r3;
// CHECK-NEXT: shl.b64 %rd5, %rd1, %r3;
// CHECK-NEXT: ex2.approx.f32 %f11, %f10;
// CHECK-NEXT: lg2.approx.f32 %f12, %f11;
// CHECK-NEXT: tanh.approx.f32 %f13, %f12;
// CHECK-NEXT: rcp.approx.f32 %f14, %f13;
// CHECK-NEXT: sqrt.approx.f32 %f15, %f14;
// CHECK-NEXT: rsqrt.approx.f32 %f16, %f15;
// CHECK-NEXT: neg.f32 %f17, %f16;
// CHECK-NEXT: neg.s32 %r26, %r16;
// CHECK-NEXT: abs.f32 %f18, %f17;
// CHECK-NEXT: abs.s32 %r27, %r26;
// CHECK-NEXT: setp.lt.s32 %p2, %r27, %r2;
// CHECK-NEXT: setp.hs.u32 %p3, %r25, %r1;
// CHECK-NEXT: setp.gtu.f32 %p4, %f18, %f1;
// CHECK-NEXT: setp.eq.b32 %p5, %r22, %r5;
// CHECK-NEXT: and.pred %p6, %p2, %p3;
// CHECK-NEXT: or.pred %p7, %p6, %p4;
// CHECK-NEXT: xor.pred %p8, %p7, %p5;
// CHECK-NEXT: not.pred %p9, %p8;
// CHECK-NEXT: and.pred %p10, %p9, %p1;
// CHECK-NEXT: selp.f32 %f19, %f18, %f16, %p10;
// CHECK-NEXT: cvt.u64.u32 %rd6, %r1;
// CHECK-NEXT: cvt.rn.f32.s32 %f20, %r2;
// CHECK-NEXT: cvt.rzi.s32.f32 %r28, %f19;
// CHECK-NEXT: cvt.rn.bf16.f32 %rs1, %f19;
// CHECK-NEXT: cvt.f32.bf16 %f21, %rs1;
// CHECK-NEXT: cvt.rn.f16.f32 %rs2, %f21;
// CHECK-NEXT: cvt.f64.f32 %fd2, %f19;
// CHECK-NEXT: cvt.rn.f32.f64 %f22, %fd1;
// CHECK-NEXT: cvt.rn.bf16x2.f32 %r29, %f21, %f22;
// CHECK-NEXT: cvt.rn.f16x2.f32 %r30, %f20, %f19;
// CHECK-NEXT: add.u64 %rd7, %rd3, %rd6;
// CHECK-NEXT: add.u64 %rd8, %rd7, %rd5;
// CHECK-NEXT: add.u64 %rd9, %rd2, %rd8;
// CHECK-NEXT: mov.b32 %r31, %r30;
// CHECK-NEXT: st.global.v2.b32 [%rd9], {%r29, %r31};
// CHECK-NEXT: mov.b32 %r32, %r20;
// CHECK-NEXT: st.global.v2.s32 [%rd9+8], {%r28, %r32};
// CHECK-NEXT: st.global.b16 [%rd9+16], %rs2;
// CHECK-NEXT: st.global.s64 [%rd9+24], %rd4;
// CHECK-NEXT: ret;
// CHECK-NEXT: }

// The IR round trip:
// IR: builtin.module {
// IR-NEXT: ptx.module version 8.0 target sm_90a address_size 64 {
// IR-NEXT: ptx.entry @arith(x : u32, y : s32, f : f32, w : u64, o : ptr) {
// IR-NEXT: %x = ptx.ld_param x : !ptx.reg<u32>
// IR-NEXT: %y = ptx.ld_param y : !ptx.reg<s32>
// IR-NEXT: %f = ptx.ld_param f : !ptx.reg<f32>
// IR-NEXT: %w = ptx.ld_param w : !ptx.reg<u64>
// IR-NEXT: %o = ptx.ld_param o : !ptx.reg<u64>
// IR-NEXT: %c5 = ptx.const 5 : !ptx.reg<u32>
// IR-NEXT: %cm = ptx.const -3 : !ptx.reg<s32>
// IR-NEXT: %c1f = ptx.const 1.0 : !ptx.reg<f32>
// IR-NEXT: %ch = ptx.const 0.5 : !ptx.reg<f64>
// IR-NEXT: %ct = ptx.const 1 : !ptx.reg<pred>
// IR-NEXT: %b = ptx.mov %x : (!ptx.reg<u32>) -> !ptx.reg<b32>
// IR-NEXT: %fb = ptx.mov %f : (!ptx.reg<f32>) -> !ptx.reg<b32>
// IR-NEXT: %a0 = ptx.add %x, %c5 : !ptx.reg<u32>
// IR-NEXT: %a1 = ptx.add %y, %cm : !ptx.reg<s32>
// IR-NEXT: %a2 = ptx.add %f, %c1f : !ptx.reg<f32>
// IR-NEXT: %a3 = ptx.add %b, %fb : !ptx.reg<b32>
// IR-NEXT: %s0 = ptx.sub %a0, %x : !ptx.reg<u32>
// IR-NEXT: %s1 = ptx.sub %f, %a2 : !ptx.reg<f32>
// IR-NEXT: %m0 = ptx.mul %a0, %s0 : !ptx.reg<u32>
// IR-NEXT: %m1 = ptx.mul %s1, %a2 : !ptx.reg<f32>
// IR-NEXT: %m2 = ptx.mul_hi %a1, %y : !ptx.reg<s32>
// IR-NEXT: %m3 = ptx.mul_wide %x, %c5 : (!ptx.reg<u32>, !ptx.reg<u32>) -> !ptx.reg<u64>
// IR-NEXT: %m4 = ptx.mul_wide %y, %a1 : (!ptx.reg<s32>, !ptx.reg<s32>) -> !ptx.reg<s64>
// IR-NEXT: %d0 = ptx.div %m0, %c5 : !ptx.reg<u32>
// IR-NEXT: %d1 = ptx.div %m1, %a2 : !ptx.reg<f32>
// IR-NEXT: %r0 = ptx.rem %d0, %c5 : !ptx.reg<u32>
// IR-NEXT: %n0 = ptx.min %r0, %x : !ptx.reg<u32>
// IR-NEXT: %n1 = ptx.max %a1, %m2 : !ptx.reg<s32>
// IR-NEXT: %n2 = ptx.max %d1, %f : !ptx.reg<f32>
// IR-NEXT: %n3 = ptx.min %n2, %c1f : !ptx.reg<f32>
// IR-NEXT: %ma = ptx.mad %x, %c5, %n0 : !ptx.reg<u32>
// IR-NEXT: %mf = ptx.mad %f, %n3, %c1f : !ptx.reg<f32>
// IR-NEXT: %fm = ptx.fma %f, %mf, %n2 : !ptx.reg<f32>
// IR-NEXT: %l0 = ptx.and %ma, %x : !ptx.reg<u32>
// IR-NEXT: %a4 = ptx.mov %a3 : (!ptx.reg<b32>) -> !ptx.reg<u32>
// IR-NEXT: %l1 = ptx.or %l0, %a4 : !ptx.reg<u32>
// IR-NEXT: %l2 = ptx.xor %a3, %b : !ptx.reg<b32>
// IR-NEXT: %l3 = ptx.not %l2 : !ptx.reg<b32>
// IR-NEXT: %sh0 = ptx.shl %l0, %c5 : !ptx.reg<u32>
// IR-NEXT: %sh1 = ptx.shr %a1, %c5 : (!ptx.reg<s32>, !ptx.reg<u32>) -> !ptx.reg<s32>
// IR-NEXT: %sh2 = ptx.shr %sh0, %c5 : !ptx.reg<u32>
// IR-NEXT: %sh3 = ptx.shl %w, %c5 : (!ptx.reg<u64>, !ptx.reg<u32>) -> !ptx.reg<u64>
// IR-NEXT: %e0 = ptx.ex2 %fm : !ptx.reg<f32>
// IR-NEXT: %e1 = ptx.lg2 %e0 : !ptx.reg<f32>
// IR-NEXT: %e2 = ptx.tanh %e1 : !ptx.reg<f32>
// IR-NEXT: %e3 = ptx.rcp %e2 : !ptx.reg<f32>
// IR-NEXT: %e4 = ptx.sqrt %e3 : !ptx.reg<f32>
// IR-NEXT: %e5 = ptx.rsqrt %e4 : !ptx.reg<f32>
// IR-NEXT: %ng0 = ptx.neg %e5 : !ptx.reg<f32>
// IR-NEXT: %ng1 = ptx.neg %n1 : !ptx.reg<s32>
// IR-NEXT: %ab0 = ptx.abs %ng0 : !ptx.reg<f32>
// IR-NEXT: %ab1 = ptx.abs %ng1 : !ptx.reg<s32>
// IR-NEXT: %p0 = ptx.setp lt %ab1, %y : (!ptx.reg<s32>, !ptx.reg<s32>) -> !ptx.reg<pred>
// IR-NEXT: %p1 = ptx.setp hs %sh2, %x : (!ptx.reg<u32>, !ptx.reg<u32>) -> !ptx.reg<pred>
// IR-NEXT: %p2 = ptx.setp gtu %ab0, %f : (!ptx.reg<f32>, !ptx.reg<f32>) -> !ptx.reg<pred>
// IR-NEXT: %p3 = ptx.setp eq %l3, %b : (!ptx.reg<b32>, !ptx.reg<b32>) -> !ptx.reg<pred>
// IR-NEXT: %p4 = ptx.and %p0, %p1 : !ptx.reg<pred>
// IR-NEXT: %p5 = ptx.or %p4, %p2 : !ptx.reg<pred>
// IR-NEXT: %p6 = ptx.xor %p5, %p3 : !ptx.reg<pred>
// IR-NEXT: %p7 = ptx.not %p6 : !ptx.reg<pred>
// IR-NEXT: %p8 = ptx.and %p7, %ct : !ptx.reg<pred>
// IR-NEXT: %sel = ptx.selp %ab0, %e5, %p8 : (!ptx.reg<f32>, !ptx.reg<f32>, !ptx.reg<pred>) -> !ptx.reg<f32>
// IR-NEXT: %cv0 = ptx.cvt %x : (!ptx.reg<u32>) -> !ptx.reg<u64>
// IR-NEXT: %cv1 = ptx.cvt rn %y : (!ptx.reg<s32>) -> !ptx.reg<f32>
// IR-NEXT: %cv2 = ptx.cvt rzi %sel : (!ptx.reg<f32>) -> !ptx.reg<s32>
// IR-NEXT: %cv3 = ptx.cvt rn %sel : (!ptx.reg<f32>) -> !ptx.reg<bf16>
// IR-NEXT: %cv4 = ptx.cvt %cv3 : (!ptx.reg<bf16>) -> !ptx.reg<f32>
// IR-NEXT: %cv5 = ptx.cvt rn %cv4 : (!ptx.reg<f32>) -> !ptx.reg<f16>
// IR-NEXT: %cv6 = ptx.cvt %sel : (!ptx.reg<f32>) -> !ptx.reg<f64>
// IR-NEXT: %cv7 = ptx.cvt rn %ch : (!ptx.reg<f64>) -> !ptx.reg<f32>
// IR-NEXT: %pk0 = ptx.cvt_pack %cv4, %cv7 : (!ptx.reg<f32>, !ptx.reg<f32>) -> !ptx.reg<bf16x2>
// IR-NEXT: %pk1 = ptx.cvt_pack %cv1, %sel : (!ptx.reg<f32>, !ptx.reg<f32>) -> !ptx.reg<f16x2>
// IR-NEXT: %sum = ptx.add %m3, %cv0 : !ptx.reg<u64>
// IR-NEXT: %sum2 = ptx.add %sum, %sh3 : !ptx.reg<u64>
// IR-NEXT: %ad = ptx.add %o, %sum2 : !ptx.reg<u64>
// IR-NEXT: %pk2 = ptx.mov %pk1 : (!ptx.reg<f16x2>) -> !ptx.reg<bf16x2>
// IR-NEXT: ptx.st global %ad, %pk0, %pk2 : (!ptx.reg<u64>, !ptx.reg<bf16x2>, !ptx.reg<bf16x2>) -> ()
// IR-NEXT: %l4 = ptx.mov %l1 : (!ptx.reg<u32>) -> !ptx.reg<s32>
// IR-NEXT: ptx.st global %ad, %cv2, %l4 {offset = 8} : (!ptx.reg<u64>, !ptx.reg<s32>, !ptx.reg<s32>) -> ()
// IR-NEXT: ptx.st global %ad, %cv5 {offset = 16} : (!ptx.reg<u64>, !ptx.reg<f16>) -> ()
// IR-NEXT: ptx.st global %ad, %m4 {offset = 24} : (!ptx.reg<u64>, !ptx.reg<s64>) -> ()
// IR-NEXT: ptx.ret
// IR-NEXT: }
// IR-NEXT: }
// IR-NEXT: }
