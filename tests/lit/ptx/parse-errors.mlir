// RUN: mmcomp-opt %s --parsing-diagnostics --split-input-file | filecheck %s

// Syntax errors in ptx-dialect IR are reported at the offending token.

// A guard that is neither an i1 nor a predicate register.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.entry @k(a : ptr) {
    %a = ptx.ld_param a : !ptx.reg<u64>
    %c = ptx.cvt rn %a : (!ptx.reg<u64>) -> !ptx.reg<f32>
    %d = ptx.cvt rn %a if %c : (!ptx.reg<u64>) -> !ptx.reg<f32>
  }
}
// CHECK: the guard must be an i1 or a !ptx.reg<pred>, found !ptx.reg<f32>

// -----

// Fewer operand types than operands.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.entry @k(a : ptr) {
    %a = ptx.ld_param a : !ptx.reg<u64>
    %b = ptx.add %a, %a : (!ptx.reg<u64>) -> !ptx.reg<u64>
  }
}
// CHECK: ptx.add: 2 operands but 1 operand types

// -----

// Too many operands for the op.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.entry @k(a : ptr) {
    %a = ptx.ld_param a : !ptx.reg<u64>
    %b = ptx.neg %a, %a : !ptx.reg<u64>
  }
}
// CHECK: ptx.neg: expected 1 operand (src), found 2

// -----

// A parameter without a kind.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.entry @k(a) {
  }
}
// CHECK: Expected ':'

// -----

// A static shared array without a size.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @buf align 16
}
// CHECK: Expected 'size' (or 'dynamic')
