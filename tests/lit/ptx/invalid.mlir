// RUN: mmcomp-opt %s --verify-diagnostics --split-input-file | filecheck %s

// Register kinds, widths, spaces and instruction shapes are checked before ptxas sees them.
// An add whose operands differ in kind.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 dynamic
  ptx.entry @k(x : u32, y : u64) {
    %x = ptx.ld_param x : !ptx.reg<u32>
    %y = ptx.ld_param y : !ptx.reg<u64>
    %z = ptx.add %x, %y : (!ptx.reg<u32>, !ptx.reg<u64>) -> !ptx.reg<u32>
  }
}
// CHECK: TODO

// -----

// A float register in an integer-only op.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 dynamic
  ptx.entry @k(f : f32) {
    %f = ptx.ld_param f : !ptx.reg<f32>
    %z = ptx.rem %f, %f : !ptx.reg<f32>
  }
}
// CHECK: TODO

// -----

// An ordering comparison on untyped bits.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 dynamic
  ptx.entry @k(x : b32) {
    %x = ptx.ld_param x : !ptx.reg<b32>
    %p = ptx.setp lt %x, %x : (!ptx.reg<b32>, !ptx.reg<b32>) -> !ptx.reg<pred>
  }
}
// CHECK: TODO

// -----

// An unsigned comparison on floats.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 dynamic
  ptx.entry @k(f : f32) {
    %f = ptx.ld_param f : !ptx.reg<f32>
    %p = ptx.setp hs %f, %f : (!ptx.reg<f32>, !ptx.reg<f32>) -> !ptx.reg<pred>
  }
}
// CHECK: TODO

// -----

// A narrowing float conversion without rounding.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 dynamic
  ptx.entry @k(f : f32) {
    %f = ptx.ld_param f : !ptx.reg<f32>
    %h = ptx.cvt %f : (!ptx.reg<f32>) -> !ptx.reg<bf16>
  }
}
// CHECK: TODO

// -----

// A float rounding on a float-to-int conversion.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 dynamic
  ptx.entry @k(f : f32) {
    %f = ptx.ld_param f : !ptx.reg<f32>
    %h = ptx.cvt rn %f : (!ptx.reg<f32>) -> !ptx.reg<s32>
  }
}
// CHECK: TODO

// -----

// mov between widths.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 dynamic
  ptx.entry @k(x : u32) {
    %x = ptx.ld_param x : !ptx.reg<u32>
    %y = ptx.mov %x : (!ptx.reg<u32>) -> !ptx.reg<u64>
  }
}
// CHECK: TODO

// -----

// mul.wide into a register of the same width.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 dynamic
  ptx.entry @k(x : u32) {
    %x = ptx.ld_param x : !ptx.reg<u32>
    %y = ptx.mul_wide %x, %x : (!ptx.reg<u32>, !ptx.reg<u32>) -> !ptx.reg<u32>
  }
}
// CHECK: TODO

// -----

// A 32-bit global address.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 dynamic
  ptx.entry @k(x : u32) {
    %x = ptx.ld_param x : !ptx.reg<u32>
    %y = ptx.ld global %x : (!ptx.reg<u32>) -> !ptx.reg<f32>
  }
}
// CHECK: TODO

// -----

// A vector load of three registers.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 dynamic
  ptx.entry @k(a : ptr) {
    %a = ptx.ld_param a : !ptx.reg<u64>
    %y:3 = ptx.ld global %a : (!ptx.reg<u64>) -> (!ptx.reg<f32>, !ptx.reg<f32>, !ptx.reg<f32>)
  }
}
// CHECK: TODO

// -----

// An unknown state space.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 dynamic
  ptx.entry @k(a : ptr) {
    %a = ptx.ld_param a : !ptx.reg<u64>
    %y = ptx.ld texture %a : (!ptx.reg<u64>) -> !ptx.reg<f32>
  }
}
// CHECK: TODO

// -----

// A guard that is not a predicate is rejected when the types are resolved.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 dynamic
  ptx.entry @k(a : ptr) {
    %a = ptx.ld_param a : !ptx.reg<u64>
    %p = ptx.const 1 : !ptx.reg<pred>
    %c = ptx.cvt rn %a if not %p : (!ptx.reg<u64>) -> !ptx.reg<f32>
    %d = ptx.cvt rn %a if %c : (!ptx.reg<u64>) -> !ptx.reg<f32>
  }
}
// CHECK: TODO

// -----

// A special register read into the wrong width.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 dynamic
  ptx.entry @k() {
    %t = ptx.sreg tid.x : !ptx.reg<u64>
  }
}
// CHECK: TODO

// -----

// An unknown special register.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 dynamic
  ptx.entry @k() {
    %t = ptx.sreg tid.w : !ptx.reg<u32>
  }
}
// CHECK: TODO

// -----

// ld.param of a parameter that does not exist.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 dynamic
  ptx.entry @k(a : ptr) {
    %b = ptx.ld_param b : !ptx.reg<u64>
  }
}
// CHECK: TODO

// -----

// ld.param into a register narrower than the parameter.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 dynamic
  ptx.entry @k(a : ptr) {
    %a = ptx.ld_param a : !ptx.reg<u32>
  }
}
// CHECK: TODO

// -----

// ld.param of a tensor map.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 dynamic
  ptx.entry @k(t : tmap) {
    %t = ptx.ld_param t : !ptx.reg<u64>
  }
}
// CHECK: TODO

// -----

// A branch to a label that is not there.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 dynamic
  ptx.entry @k() {
    ptx.bra nowhere
  }
}
// CHECK: TODO

// -----

// A label defined twice.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 dynamic
  ptx.entry @k() {
    ptx.label again
    ptx.label again
  }
}
// CHECK: TODO

// -----

// bar.arrive without a thread count.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 dynamic
  ptx.entry @k() {
    ptx.bar arrive 1
  }
}
// CHECK: TODO

// -----

// A barrier thread count that is not a multiple of 32.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 dynamic
  ptx.entry @k() {
    ptx.bar sync 1 100
  }
}
// CHECK: TODO

// -----

// wgmma with the wrong number of accumulators.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 dynamic
  ptx.entry @k() {
    %d = ptx.inst "mov.b64 {0}, 0" : () -> !ptx.reg<b64>
    %p = ptx.const 0 : !ptx.reg<pred>
    %f = ptx.const 0.0 : !ptx.reg<f32>
    ptx.wgmma 16 bf16 0 0 %d, %d, %p, %f, %f, %f, %f : (!ptx.reg<b64>, !ptx.reg<b64>, !ptx.reg<pred>, !ptx.reg<f32>, !ptx.reg<f32>, !ptx.reg<f32>, !ptx.reg<f32>) -> ()
  }
}
// CHECK: TODO

// -----

// wgmma with an N that is not a multiple of 8.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 dynamic
  ptx.entry @k() {
    %d = ptx.inst "mov.b64 {0}, 0" : () -> !ptx.reg<b64>
    %p = ptx.const 0 : !ptx.reg<pred>
    %f = ptx.const 0.0 : !ptx.reg<f32>
    ptx.wgmma 12 bf16 0 0 %d, %d, %p, %f, %f, %f, %f, %f, %f : (!ptx.reg<b64>, !ptx.reg<b64>, !ptx.reg<pred>, !ptx.reg<f32>, !ptx.reg<f32>, !ptx.reg<f32>, !ptx.reg<f32>, !ptx.reg<f32>, !ptx.reg<f32>) -> ()
  }
}
// CHECK: TODO

// -----

// setmaxnreg with a count that is not a multiple of 8.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 dynamic
  ptx.entry @k() {
    ptx.setmaxnreg inc 100
  }
}
// CHECK: TODO

// -----

// A TMA load with a 32-bit tensor-map address.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 dynamic
  ptx.entry @k() {
    %s = ptx.addr_of smem : !ptx.reg<u32>
    %c = ptx.const 0 : !ptx.reg<s32>
    ptx.tma_load %s, %s, %s, %c, %c : (!ptx.reg<u32>, !ptx.reg<u32>, !ptx.reg<u32>, !ptx.reg<s32>, !ptx.reg<s32>) -> ()
  }
}
// CHECK: TODO

// -----

// A TMA load with float coordinates.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 dynamic
  ptx.entry @k() {
    %s = ptx.addr_of smem : !ptx.reg<u32>
    %t = ptx.addr_of smem : !ptx.reg<u64>
    %c = ptx.const 0.0 : !ptx.reg<f32>
    ptx.tma_load %s, %t, %s, %c, %c : (!ptx.reg<u32>, !ptx.reg<u64>, !ptx.reg<u32>, !ptx.reg<f32>, !ptx.reg<f32>) -> ()
  }
}
// CHECK: TODO

// -----

// A template placeholder beyond the operands.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 dynamic
  ptx.entry @k() {
    %x = ptx.const 1 : !ptx.reg<u32>
    ptx.inst "st.shared.u32 [{0}], {1}" %x : (!ptx.reg<u32>) -> ()
  }
}
// CHECK: TODO

// -----

// A float immediate into an integer register.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 dynamic
  ptx.entry @k() {
    %x = ptx.const 1.5 : !ptx.reg<u32>
  }
}
// CHECK: TODO

// -----

// maxnreg out of range.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 dynamic
  ptx.entry @k() maxnreg 300 {
  }
}
// CHECK: TODO

// -----

// A register kind that does not exist.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 dynamic
  ptx.entry @k() {
    %x = ptx.const 1 : !ptx.reg<u7>
  }
}
// CHECK: TODO
