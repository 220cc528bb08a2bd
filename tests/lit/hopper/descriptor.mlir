// RUN: mmcomp-opt %s -p convert-hopper-to-ptx -t ptx | filecheck %s

// hopper.matrix_descriptor for each swizzle mode and major-ness (the tile's layout is the
// result type's): the start-address offset of the operand inside its tile (added to the
// base, an !hopper.smem), then the constant fields
// LBO >> 4 << 16 | SBO >> 4 << 32 | swizzle << 62 ORed into (start >> 4) & 0x3FFF. The
// stores read each descriptor's b64 register through a cast.

ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 size 16384
  ptx.entry @descriptors(out : ptr) {
    %address = ptx.addr_of smem : !ptx.reg<u32>
    %smem = builtin.unrealized_conversion_cast %address : !ptx.reg<u32> to !hopper.smem<align 1024>
    %out = ptx.ld_param out : !ptx.reg<u64>
    %d0 = hopper.matrix_descriptor %smem {mn = 8, k = 16} : (!hopper.smem<align 1024>) -> !hopper.matrix_descriptor<k_major, swizzle none, mn 64, k 32>
    %d1 = hopper.matrix_descriptor %smem {mn = 0, k = 16} : (!hopper.smem<align 1024>) -> !hopper.matrix_descriptor<k_major, swizzle 32, mn 64, k 32>
    %d2 = hopper.matrix_descriptor %smem {mn = 0, k = 16} : (!hopper.smem<align 1024>) -> !hopper.matrix_descriptor<k_major, swizzle 64, mn 64, k 32>
    %d3 = hopper.matrix_descriptor %smem {mn = 32, k = 16} : (!hopper.smem<align 1024>) -> !hopper.matrix_descriptor<mn_major, swizzle 64, mn 64, k 32>
    %d4 = hopper.matrix_descriptor %smem {mn = 8, k = 0} : (!hopper.smem<align 1024>) -> !hopper.matrix_descriptor<mn_major, swizzle none, mn 64, k 16>
    %d5 = hopper.matrix_descriptor %smem : (!hopper.smem<align 1024>) -> !hopper.matrix_descriptor<k_major, swizzle 128, mn 64, k 64>
    %r0 = builtin.unrealized_conversion_cast %d0 : !hopper.matrix_descriptor<k_major, swizzle none, mn 64, k 32> to !ptx.reg<b64>
    ptx.st global %out, %r0 : (!ptx.reg<u64>, !ptx.reg<b64>) -> ()
    %r1 = builtin.unrealized_conversion_cast %d1 : !hopper.matrix_descriptor<k_major, swizzle 32, mn 64, k 32> to !ptx.reg<b64>
    ptx.st global %out, %r1 {offset = 8} : (!ptx.reg<u64>, !ptx.reg<b64>) -> ()
    %r2 = builtin.unrealized_conversion_cast %d2 : !hopper.matrix_descriptor<k_major, swizzle 64, mn 64, k 32> to !ptx.reg<b64>
    ptx.st global %out, %r2 {offset = 16} : (!ptx.reg<u64>, !ptx.reg<b64>) -> ()
    %r3 = builtin.unrealized_conversion_cast %d3 : !hopper.matrix_descriptor<mn_major, swizzle 64, mn 64, k 32> to !ptx.reg<b64>
    ptx.st global %out, %r3 {offset = 24} : (!ptx.reg<u64>, !ptx.reg<b64>) -> ()
    %r4 = builtin.unrealized_conversion_cast %d4 : !hopper.matrix_descriptor<mn_major, swizzle none, mn 64, k 16> to !ptx.reg<b64>
    ptx.st global %out, %r4 {offset = 32} : (!ptx.reg<u64>, !ptx.reg<b64>) -> ()
    %r5 = builtin.unrealized_conversion_cast %d5 : !hopper.matrix_descriptor<k_major, swizzle 128, mn 64, k 64> to !ptx.reg<b64>
    ptx.st global %out, %r5 {offset = 40} : (!ptx.reg<u64>, !ptx.reg<b64>) -> ()
    ptx.ret
  }
}

// K-major, no swizzle: core matrices 8 rows x 16 B; LBO = one 64x16B box (1024), SBO = 128.
// Row 8, k 16: two boxes (2048) + one core matrix (128) = 2176.
// CHECK-LABEL: .visible .entry descriptors(
// CHECK: mov.u32 %r2, 2176;
// CHECK-NEXT: add.u32 %r3, %r1, %r2;
// CHECK-NEXT: mov.u32 %r4, 4;
// CHECK-NEXT: shr.u32 %r5, %r3, %r4;
// CHECK-NEXT: mov.u32 %r6, 16383;
// CHECK-NEXT: and.b32 %r7, %r5, %r6;
// CHECK-NEXT: cvt.u64.u32 %rd2, %r7;
// CHECK-NEXT: mov.b64 %rd3, 34363932672;
// CHECK-NEXT: or.b64 %rd4, %rd2, %rd3;
// K-major, 32B swizzle: k 16 starts the second 32-byte box (2048); LBO 16, SBO 256, mode 3.
// CHECK: mov.u32 %r8, 2048;
// CHECK: mov.b64 %rd6, 13835058124001705984;
// K-major, 64B swizzle: k 16 is 32 bytes into the swizzled row; SBO 512, mode 2.
// CHECK: mov.u32 %r14, 32;
// CHECK: mov.b64 %rd9, 9223372174293794816;
// MN-major, 64B swizzle: n 32 is the second box (2048), k 16 adds 16 rows of 64 B (1024);
// LBO = box distance 2048, SBO = 8 rows of 64 B = 512.
// CHECK: mov.u32 %r20, 3072;
// CHECK: mov.b64 %rd12, 9223372174302117888;
// MN-major, no swizzle: n 8 is the second 16x16B box (256); LBO = 128 (k core matrices),
// SBO = 256 (n core matrices).
// CHECK: mov.u32 %r26, 256;
// CHECK: mov.b64 %rd15, 68720001024;
// The tile origin adds nothing: K-major 128B, LBO 16, SBO 1024, mode 1.
// CHECK: shr.u32 %r33, %r1, %r32;
// CHECK: mov.b64 %rd18, 4611686293305360384;
