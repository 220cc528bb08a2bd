// RUN: mmcomp-opt %s --verify-diagnostics --split-input-file | filecheck %s

// The verifiers of hopper.kernel and of the typed parameter reads: each error names the
// op (the kernel by name) and what was expected.

// A kernel name that PTX cannot take.
hopper.kernel @"2k"() {
}
// CHECK: hopper.kernel @2k: the name is not a valid PTX identifier

// -----

// A parameter declared twice.
hopper.kernel @k(a : ptr, a : u32) {
}
// CHECK: hopper.kernel @k: parameter 'a' is declared twice

// -----

// A register cap out of PTX's range.
hopper.kernel @k() maxnreg 16 {
}
// CHECK: hopper.kernel @k: maxnreg must be in [24, 255], found 16

// -----

// A block size of four dimensions.
hopper.kernel @k() reqntid [128, 1, 1, 1] {
}
// CHECK: hopper.kernel @k: reqntid must be 1 to 3 positive sizes, found [128, 1, 1, 1]

// -----

// Dynamic shared memory aligned to a size that is not a power of two.
hopper.kernel @k() shared @mmcomp_shared align 48 {
}
// CHECK: hopper.kernel @k: the shared memory's alignment must be a power of two, found 48

// -----

// A shared base of an array the kernel does not declare.
hopper.kernel @k() shared @mmcomp_shared align 1024 {
  %smem = hopper.shared_base other : !hopper.smem<align 1024>
}
// CHECK: hopper.kernel @k: hopper.shared_base reads the shared array 'other', but the kernel's dynamic shared memory is 'mmcomp_shared'

// -----

// A shared base in a kernel without dynamic shared memory.
hopper.kernel @k() {
  %smem = hopper.shared_base mmcomp_shared : !hopper.smem<align 1024>
}
// CHECK: hopper.kernel @k: hopper.shared_base reads the shared array 'mmcomp_shared', but the kernel's dynamic shared memory declares none

// -----

// An array read of a parameter the kernel does not have.
hopper.kernel @k(a : ptr) {
  %a = hopper.array_param b : memref<16xf32>
}
// CHECK: hopper.array_param: 'b' must be a ptr parameter of hopper.kernel @k, found no such parameter

// -----

// An array read of a runtime extent.
hopper.kernel @k(m : u32) {
  %a = hopper.array_param m : memref<16xf32>
}
// CHECK: hopper.array_param: 'm' must be a ptr parameter of hopper.kernel @k, found a u32 parameter

// -----

// An array read whose memref is not the array of the launch data.
hopper.kernel @k(a : ptr<role = input, name = "a", shape = [16, 32], dtype = bf16>) {
  %a = hopper.array_param a : memref<16x32xf32>
}
// CHECK: hopper.array_param: the type of 'a' must be a view that fits in the array its launch data describes ([16, 32] of bf16: no more elements, the same `?` extents and element type), found memref<16x32xf32>

// -----

// An array read whose view has more elements than the array (a view with fewer, such as
// an M = 1 fusion's view of a split-K workspace of whole tiles, is taken).
hopper.kernel @k(a : ptr<role = input, name = "a", shape = [16, 32], dtype = bf16>) {
  %a = hopper.array_param a : memref<16x33xbf16>
}
// CHECK: hopper.array_param: the type of 'a' must be a view that fits in the array its launch data describes ([16, 32] of bf16: no more elements, the same `?` extents and element type), found memref<16x33xbf16>

// -----

// An array read with a static extent where the launch data's is a runtime one.
hopper.kernel @k(a : ptr<role = input, name = "a", shape = [?, 32], dtype = bf16, extents = "m">) {
  %a = hopper.array_param a : memref<16x32xbf16>
}
// CHECK: hopper.array_param: the type of 'a' must be a view that fits in the array its launch data describes ([?, 32] of bf16: no more elements, the same `?` extents and element type), found memref<16x32xbf16>

// -----

// An extent read of a pointer parameter.
hopper.kernel @k(a : ptr) {
  %m = hopper.extent_param a : index
}
// CHECK: hopper.extent_param: 'a' must be a u32 parameter of hopper.kernel @k, found a ptr parameter

// -----

// An extent read as another type than index.
hopper.kernel @k(m : u32) {
  %m = hopper.extent_param m : i32
}
// CHECK: result 'result' at position 0 does not verify

// -----

// A parameter read outside a kernel.
func.func @f() {
  %a = hopper.array_param a : memref<16xf32>
  func.return
}
// CHECK: 'hopper.array_param' expects parent op 'hopper.kernel'
