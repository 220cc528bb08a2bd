// RUN: mmcomp-opt %s --verify-diagnostics --split-input-file | filecheck %s

// A butterfly exchanges with another lane: the mask is 1 to 31.
hopper.kernel @k() {
  %r = ptx.const 1.5 : !ptx.reg<f32>
  %x = builtin.unrealized_conversion_cast %r : !ptx.reg<f32> to f32
  %other = hopper.shuffle_xor %x, 32 : f32
  ptx.ret
}
// CHECK: hopper.shuffle_xor: the lane mask must be in [1, 32), found 32

// -----

// shfl.sync moves 32-bit registers.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.entry @k() {
    %r = ptx.const 1 : !ptx.reg<u64>
    %other = ptx.shfl_sync bfly 1 %r : !ptx.reg<u64>
  }
}
// CHECK: ptx.shfl_sync: the value must be a 32-bit register, found !ptx.reg<u64>

// -----

ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.entry @k() {
    %r = ptx.const 1.0 : !ptx.reg<f32>
    %other = ptx.shfl_sync sideways 1 %r : !ptx.reg<f32>
  }
}
// CHECK: ptx.shfl_sync: mode must be bfly, up, down or idx, found 'sideways'
