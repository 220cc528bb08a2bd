// RUN: mmcomp-opt %s --verify-diagnostics --split-input-file | filecheck %s

// The element accesses' verifiers: each error names the op and what was expected.

// Three values: a vector access moves 1, 2 or 4.
hopper.kernel @k() {
  %c0 = arith.constant 0 : i64
  %a, %b, %c = hopper.global_load %c0 : (i64) -> (f32, f32, f32)
}
// CHECK: hopper.global_load: expected 1, 2 or 4 values, found 3

// -----

// An offset that is not a multiple of the vector's bytes.
hopper.kernel @k() {
  %c0 = arith.constant 0 : i64
  %a, %b = hopper.global_load %c0 {offset = 2} : (i64) -> (bf16, bf16)
}
// CHECK: hopper.global_load: offset 2 is not a multiple of the vector's 4 bytes

// -----

// Values of two types in one store.
hopper.kernel @k() {
  %c0 = arith.constant 0 : i64
  %x = arith.constant 1.0 : f32
  %y = arith.constant 1.0 : bf16
  hopper.global_store %c0, %x, %y : (i64, f32, bf16) -> ()
}
// CHECK: hopper.global_store: the values must have one type, found f32, bf16

// -----

// A vector that is not a pair of 16-bit floats.
hopper.kernel @k() {
  %c0 = arith.constant 0 : i64
  %v = arith.constant dense<1.0> : vector<4xbf16>
  hopper.global_store %c0, %v : (i64, vector<4xbf16>) -> ()
}
// CHECK: hopper.global_store: a value must be a pair of 16-bit floats (vector<2xbf16>, vector<2xf16>) or of fp8 (vector<2xf8E4M3FN>, vector<2xf8E5M2>), found vector<4xbf16>

// -----

// A shared row aligned below the stored vector's 8 bytes.
hopper.kernel @k() {
  %smem = hopper.shared_base mmcomp_shared : !hopper.smem<align 1024>
  %c4 = arith.constant 4 : index
  %row = hopper.smem_add %smem[%c4] : !hopper.smem<align 1024> -> !hopper.smem<align 4>
  %x = arith.constant 1.0 : f32
  hopper.smem_store %row, %x, %x : (!hopper.smem<align 4>, f32, f32) -> ()
}
// CHECK: hopper.smem_store: the address must be a !hopper.smem aligned to 8 bytes (the stored vector), found !hopper.smem<align 4>

// -----

// A shared chunk aligned below the loaded vector's 16 bytes.
hopper.kernel @k() {
  %smem = hopper.shared_base mmcomp_shared : !hopper.smem<align 1024>
  %c8 = arith.constant 8 : index
  %chunk = hopper.smem_add %smem[%c8] : !hopper.smem<align 1024> -> !hopper.smem<align 8>
  %a, %b, %c, %d = hopper.smem_load %chunk : (!hopper.smem<align 8>) -> (f32, f32, f32, f32)
}
// CHECK: hopper.smem_load: the address must be a !hopper.smem aligned to 16 bytes (the loaded vector), found !hopper.smem<align 8>
