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
// CHECK: ptx.add: rhs must have the same register kind as lhs (!ptx.reg<u32>), found !ptx.reg<u64>

// -----

// A float register in an integer-only op.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 dynamic
  ptx.entry @k(f : f32) {
    %f = ptx.ld_param f : !ptx.reg<f32>
    %z = ptx.rem %f, %f : !ptx.reg<f32>
  }
}
// CHECK: ptx.rem: lhs must be a bits/unsigned/signed register, found !ptx.reg<f32>

// -----

// An ordering comparison on untyped bits.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 dynamic
  ptx.entry @k(x : b32) {
    %x = ptx.ld_param x : !ptx.reg<b32>
    %p = ptx.setp lt %x, %x : (!ptx.reg<b32>, !ptx.reg<b32>) -> !ptx.reg<pred>
  }
}
// CHECK: ptx.setp: comparison 'lt' on untyped !ptx.reg<b32> is ambiguous; use u32 or s32 registers

// -----

// An unsigned comparison on floats.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 dynamic
  ptx.entry @k(f : f32) {
    %f = ptx.ld_param f : !ptx.reg<f32>
    %p = ptx.setp hs %f, %f : (!ptx.reg<f32>, !ptx.reg<f32>) -> !ptx.reg<pred>
  }
}
// CHECK: ptx.setp: comparison 'hs' is not defined on !ptx.reg<f32>, expected one of eq, ne, lt, le, gt, ge, equ, neu, ltu, leu, gtu, geu, num, nan

// -----

// A narrowing float conversion without rounding.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 dynamic
  ptx.entry @k(f : f32) {
    %f = ptx.ld_param f : !ptx.reg<f32>
    %h = ptx.cvt %f : (!ptx.reg<f32>) -> !ptx.reg<bf16>
  }
}
// CHECK: ptx.cvt: converting !ptx.reg<f32> to !ptx.reg<bf16> needs a rounding mode, one of rn, rz, rm, rp

// -----

// A float rounding on a float-to-int conversion.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 dynamic
  ptx.entry @k(f : f32) {
    %f = ptx.ld_param f : !ptx.reg<f32>
    %h = ptx.cvt rn %f : (!ptx.reg<f32>) -> !ptx.reg<s32>
  }
}
// CHECK: ptx.cvt: rounding 'rn' is not valid from !ptx.reg<f32> to !ptx.reg<s32>, expected rni, rzi, rmi, rpi

// -----

// mov between widths.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 dynamic
  ptx.entry @k(x : u32) {
    %x = ptx.ld_param x : !ptx.reg<u32>
    %y = ptx.mov %x : (!ptx.reg<u32>) -> !ptx.reg<u64>
  }
}
// CHECK: ptx.mov: source !ptx.reg<u32> and result !ptx.reg<u64> differ in width (32 vs 64 bits)

// -----

// mul.wide into a register of the same width.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 dynamic
  ptx.entry @k(x : u32) {
    %x = ptx.ld_param x : !ptx.reg<u32>
    %y = ptx.mul_wide %x, %x : (!ptx.reg<u32>, !ptx.reg<u32>) -> !ptx.reg<u32>
  }
}
// CHECK: ptx.mul_wide: result must be twice as wide as the operands (!ptx.reg<u32>), found !ptx.reg<u32>

// -----

// mad.wide whose addend is as narrow as the factors.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 dynamic
  ptx.entry @k(x : u32) {
    %x = ptx.ld_param x : !ptx.reg<u32>
    %y = ptx.mad_wide %x, %x, %x : (!ptx.reg<u32>, !ptx.reg<u32>, !ptx.reg<u32>) -> !ptx.reg<u32>
  }
}
// CHECK: ptx.mad_wide: c and the result must be twice as wide as a and b (!ptx.reg<u32>), found !ptx.reg<u32>

// -----

// A 32-bit global address.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 dynamic
  ptx.entry @k(x : u32) {
    %x = ptx.ld_param x : !ptx.reg<u32>
    %y = ptx.ld global %x : (!ptx.reg<u32>) -> !ptx.reg<f32>
  }
}
// CHECK: ptx.ld: a global address must be a 64-bit register (32-bit only for shared), found !ptx.reg<u32>

// -----

// A vector load of three registers.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 dynamic
  ptx.entry @k(a : ptr) {
    %a = ptx.ld_param a : !ptx.reg<u64>
    %y:3 = ptx.ld global %a : (!ptx.reg<u64>) -> (!ptx.reg<f32>, !ptx.reg<f32>, !ptx.reg<f32>)
  }
}
// CHECK: ptx.ld: expected 1, 2 or 4 results, found 3

// -----

// An unknown state space.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 dynamic
  ptx.entry @k(a : ptr) {
    %a = ptx.ld_param a : !ptx.reg<u64>
    %y = ptx.ld texture %a : (!ptx.reg<u64>) -> !ptx.reg<f32>
  }
}
// CHECK: ptx.ld: unknown state space 'texture', expected one of global, shared, shared::cta, shared::cluster, local, const, param, generic

// -----

// A special register read into the wrong width.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 dynamic
  ptx.entry @k() {
    %t = ptx.sreg tid.x : !ptx.reg<u64>
  }
}
// CHECK: ptx.sreg: %tid.x is 32 bits wide, the result is !ptx.reg<u64>

// -----

// An unknown special register.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 dynamic
  ptx.entry @k() {
    %t = ptx.sreg tid.w : !ptx.reg<u32>
  }
}
// CHECK: ptx.sreg: unknown special register '%tid.w', expected one of tid.x, tid.y, tid.z, ntid.x, ntid.y, ntid.z, ctaid.x, ctaid.y, ctaid.z, nctaid.x, nctaid.y, nctaid.z, clusterid.x, clusterid.y, clusterid.z, nclusterid.x, nclusterid.y, nclusterid.z, cluster_ctaid.x, cluster_ctaid.y, cluster_ctaid.z, cluster_nctaid.x, cluster_nctaid.y, cluster_nctaid.z, laneid, warpid, nwarpid, smid, nsmid, cluster_ctarank, cluster_nctarank, is_explicit_cluster, dynamic_smem_size, total_smem_size, clock, clock64, globaltimer, lanemask_lt, lanemask_eq

// -----

// ld.param of a parameter that does not exist.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 dynamic
  ptx.entry @k(a : ptr) {
    %b = ptx.ld_param b : !ptx.reg<u64>
  }
}
// CHECK: ptx.ld_param: entry @k has no parameter 'b'

// -----

// ld.param into a register narrower than the parameter.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 dynamic
  ptx.entry @k(a : ptr) {
    %a = ptx.ld_param a : !ptx.reg<u32>
  }
}
// CHECK: ptx.ld_param: result (parameter 'a') must be a u64-compatible register, found !ptx.reg<u32>

// -----

// ld.param of a tensor map.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 dynamic
  ptx.entry @k(t : tmap) {
    %t = ptx.ld_param t : !ptx.reg<u64>
  }
}
// CHECK: ptx.ld_param: parameter 't' is a tensor map; take its address with ptx.addr_of instead

// -----

// A branch to a label that is not there.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 dynamic
  ptx.entry @k() {
    ptx.bra nowhere
  }
}
// CHECK: ptx.entry @k: ptx.bra targets label 'nowhere', which is not defined in this entry

// -----

// A label defined twice.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 dynamic
  ptx.entry @k() {
    ptx.label again
    ptx.label again
  }
}
// CHECK: ptx.entry @k: label 'again' is defined twice

// -----

// bar.arrive without a thread count.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 dynamic
  ptx.entry @k() {
    ptx.bar arrive 1
  }
}
// CHECK: ptx.bar: bar.arrive needs a thread count

// -----

// A barrier thread count that is not a multiple of 32.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 dynamic
  ptx.entry @k() {
    ptx.bar sync 1 100
  }
}
// CHECK: ptx.bar: thread count must be a positive multiple of 32, found 100

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
// CHECK: ptx.wgmma: m64n16k16 needs 8 f32 accumulators, found 4

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
// CHECK: ptx.wgmma: N must be a multiple of 8 in [8, 256], found 12

// -----

// setmaxnreg with a count that is not a multiple of 8.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 dynamic
  ptx.entry @k() {
    ptx.setmaxnreg inc 100
  }
}
// CHECK: ptx.setmaxnreg: count must be a multiple of 8 in [24, 256], found 100

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
// CHECK: ptx.tma_load: the tensor map address must be a 64-bit register, found !ptx.reg<u32>

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
// CHECK: ptx.tma_load: coordinate 0 must be a s32-compatible register, found !ptx.reg<f32>

// -----

// A template placeholder beyond the operands.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 dynamic
  ptx.entry @k() {
    %x = ptx.const 1 : !ptx.reg<u32>
    ptx.inst "st.shared.u32 [{0}], {1}" %x : (!ptx.reg<u32>) -> ()
  }
}
// CHECK: ptx.inst: placeholder '{1}' in 'st.shared.u32 [{0}], {1}' is out of range: the op has 0 results and 1 operands

// -----

// A float immediate into an integer register.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 dynamic
  ptx.entry @k() {
    %x = ptx.const 1.5 : !ptx.reg<u32>
  }
}
// CHECK: ptx.const: float value 1.5 needs an f32 or f64 register, found !ptx.reg<u32>

// -----

// maxnreg out of range.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 dynamic
  ptx.entry @k() maxnreg 300 {
  }
}
// CHECK: ptx.entry @k: maxnreg must be in [24, 255], found 300

// -----

// A register kind that does not exist.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 dynamic
  ptx.entry @k() {
    %x = ptx.const 1 : !ptx.reg<u7>
  }
}
// CHECK: !ptx.reg: unknown register kind 'u7', expected one of pred, b16, u16, s16, b32, u32, s32, b64, u64, s64, f16, bf16, f16x2, bf16x2, e4m3x2, e5m2x2, f32, f64

// -----

// cvta to a 32-bit register (sm_90 has no 32-bit addressing).
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.entry @k(a : ptr) {
    %a = ptx.ld_param a : !ptx.reg<u64>
    %s = ptx.cvta shared to %a : (!ptx.reg<u64>) -> !ptx.reg<u32>
  }
}
// CHECK: ptx.cvta: result must be a 64-bit register (sm_90 has no 32-bit addressing; cvt a shared address to u32 afterwards), found !ptx.reg<u32>

// -----

// An entry holds ptx instructions, labels and (before convert-arith-to-ptx) the index
// arithmetic; nothing else.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.entry @k() {
    %x = "test.op"() : () -> !ptx.reg<u32>
    ptx.ret
  }
}
// CHECK: ptx.entry @k: expected only ptx instructions, labels, index arithmetic and (before convert-scf-to-ptx) scf.for / scf.if in the body, found test.op
