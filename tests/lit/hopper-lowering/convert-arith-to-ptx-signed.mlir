// RUN: mmcomp-opt %s -p convert-arith-to-ptx | filecheck %s
// RUN: mmcomp-opt %s -p convert-arith-to-ptx -t ptx | filecheck %s --check-prefix=PTX

// A signed count: the columns left of an edge tile, an index difference that may be
// negative, cast to i32 (`arith.index_cast`) and compared signed with i32 constants
// (`arith.cmpi sgt`). The cast is a mov into an s32 register, each constant read only by
// signed comparisons an s32 one, and each comparison that only guards read a setp.gt.s32.

ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.entry @k(arg0 : ptr<role = output, name = "out0", shape = [64], dtype = f32>) {
    %out = ptx.ld_param arg0 : !ptx.reg<u64>
    %tid = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index
    %c64 = arith.constant 64 : index
    %left_index = arith.subi %c64, %tid : index
    %left = arith.index_cast %left_index : index to i32
    %c0 = arith.constant 0 : i32
    %first_ok = arith.cmpi sgt, %left, %c0 : i32
    %c1 = arith.constant 1 : i32
    %second_ok = arith.cmpi sgt, %left, %c1 : i32
    %zero = ptx.const 0.0 : !ptx.reg<f32>
    ptx.st global %out, %zero if %first_ok : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %out, %zero if %second_ok {offset = 4} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.ret
  }
}

// CHECK:      %[[LEFT_U:.*]] = ptx.sub %{{.*}}, %{{.*}} : !ptx.reg<u32>
// CHECK-NEXT: %[[LEFT:.*]] = ptx.mov %[[LEFT_U]] : (!ptx.reg<u32>) -> !ptx.reg<s32>
// CHECK-NEXT: %[[C0:.*]] = ptx.const 0 : !ptx.reg<s32>
// CHECK-NEXT: %[[FIRST:.*]] = ptx.setp gt %[[LEFT]], %[[C0]] : (!ptx.reg<s32>, !ptx.reg<s32>) -> !ptx.reg<pred>
// CHECK-NEXT: %[[C1:.*]] = ptx.const 1 : !ptx.reg<s32>
// CHECK-NEXT: %[[SECOND:.*]] = ptx.setp gt %[[LEFT]], %[[C1]] : (!ptx.reg<s32>, !ptx.reg<s32>) -> !ptx.reg<pred>
// CHECK:      ptx.st global %{{.*}}, %{{.*}} if %[[FIRST]]
// CHECK-NEXT: ptx.st global %{{.*}}, %{{.*}} if %[[SECOND]] {offset = 4}
// CHECK-NOT:  arith.

// PTX:      sub.u32 %r[[LEFT_U:[0-9]+]], %r{{[0-9]+}}, %r{{[0-9]+}};
// PTX-NEXT: mov.b32 %r[[LEFT:[0-9]+]], %r[[LEFT_U]];
// PTX-NEXT: mov.s32 %r[[C0:[0-9]+]], 0;
// PTX-NEXT: setp.gt.s32 %p1, %r[[LEFT]], %r[[C0]];
// PTX-NEXT: mov.s32 %r[[C1:[0-9]+]], 1;
// PTX-NEXT: setp.gt.s32 %p2, %r[[LEFT]], %r[[C1]];
// PTX:      @%p1 st.global.f32 [%rd1], %f1;
// PTX-NEXT: @%p2 st.global.f32 [%rd1+4], %f1;
