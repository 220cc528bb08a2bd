// RUN: mmcomp-opt %s -t ptx | filecheck %s
// RUN: mmcomp-opt %s | mmcomp-opt | filecheck %s --check-prefix=IR

// mad.wide: a 64-bit address plus a 32-bit index times a 32-bit stride, without wrapping.

ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.entry @offset(p : ptr, i : u32, j : s32) {
    %p = ptx.ld_param p : !ptx.reg<u64>
    %i = ptx.ld_param i : !ptx.reg<u32>
    %j = ptx.ld_param j : !ptx.reg<s32>
    %stride = ptx.const 304128 : !ptx.reg<u32>
    %at = ptx.mad_wide %i, %stride, %p : (!ptx.reg<u32>, !ptx.reg<u32>, !ptx.reg<u64>) -> !ptx.reg<u64>
    %w = ptx.mul_wide %j, %j : (!ptx.reg<s32>, !ptx.reg<s32>) -> !ptx.reg<s64>
    %s = ptx.mad_wide %j, %j, %w : (!ptx.reg<s32>, !ptx.reg<s32>, !ptx.reg<s64>) -> !ptx.reg<s64>
    ptx.ret
  }
}

// CHECK: mad.wide.u32 %rd{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %rd{{[0-9]+}};
// CHECK: mad.wide.s32 %rd{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %rd{{[0-9]+}};

// IR: %at = ptx.mad_wide %i, %stride, %p : (!ptx.reg<u32>, !ptx.reg<u32>, !ptx.reg<u64>) -> !ptx.reg<u64>
// IR: %s = ptx.mad_wide %j, %j, %w : (!ptx.reg<s32>, !ptx.reg<s32>, !ptx.reg<s64>) -> !ptx.reg<s64>
