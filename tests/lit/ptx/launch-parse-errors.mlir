// RUN: mmcomp-opt %s --split-input-file --parsing-diagnostics | filecheck %s

// Launch data is parsed key by key: an unknown key, a missing one, or launch data on a
// scalar parameter other than a runtime extent (u32) is an error at its token.

ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.entry @k(a : ptr<role = input, name = "a", shape = [4], dtype = f32, rows = 2>) {
    ptx.ret
  }
}
// CHECK: parameter 'a': unknown key 'rows'; expected one of role, name, shape, dtype

// -----

ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.entry @k(a : ptr<role = input, name = "a", shape = [4]>) {
    ptx.ret
  }
}
// CHECK: parameter 'a': missing dtype

// -----

ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.entry @k(n : s32<role = input, name = "n", shape = [], dtype = i32>) {
    ptx.ret
  }
}
// CHECK: parameter 'n': a s32 parameter carries no launch data

// -----

ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.entry @k(n : u32<role = input>) {
    ptx.ret
  }
}
// CHECK: parameter 'n': unknown key 'role'; expected one of name
