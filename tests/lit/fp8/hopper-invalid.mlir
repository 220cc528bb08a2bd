// RUN: mmcomp-opt %s --verify-diagnostics --split-input-file | filecheck %s

// An fp8 wgmma is k32: a k16 shape is refused.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 size 1024
  ptx.entry @k(t : tmap, d : b64) {
    %dr = ptx.ld_param d : !ptx.reg<b64>
    %d = builtin.unrealized_conversion_cast %dr : !ptx.reg<b64> to !hopper.matrix_descriptor<k_major, swizzle 128, mn 64, k 128, bytes 1>
    %f = ptx.const 0.0 : !ptx.reg<f32>
    %acc = hopper.accumulator %f, %f, %f, %f : !hopper.accumulator<64x8xf32>
    %next = hopper.wgmma_mma_async m64n8k16 f8e4m3 %d, %d, %acc : (!hopper.matrix_descriptor<k_major, swizzle 128, mn 64, k 128, bytes 1>, !hopper.matrix_descriptor<k_major, swizzle 128, mn 64, k 128, bytes 1>, !hopper.accumulator<64x8xf32>) -> !hopper.accumulator<64x8xf32>
  }
}
// CHECK: hopper.wgmma_mma_async: shape must be m64nNk32 with N a multiple of 8 in [8, 256], found 'm64n8k16'

// -----

// An fp8 tile is K-major: wgmma transposes 16-bit operands only.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.entry @k(d : b64) {
    %dr = ptx.ld_param d : !ptx.reg<b64>
    %d = builtin.unrealized_conversion_cast %dr : !ptx.reg<b64> to !hopper.matrix_descriptor<mn_major, swizzle 128, mn 128, k 64, bytes 1>
  }
}
// CHECK: an 8-bit (fp8) wgmma operand must be K-major: wgmma transposes 16-bit operands only

// -----

// e4m3 x e5m2 is a wgmma of its own (`b_dtype`); fp8 and bf16 do not mix.
ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 size 1024
  ptx.entry @k(t : tmap, d : b64) {
    %dr = ptx.ld_param d : !ptx.reg<b64>
    %d = builtin.unrealized_conversion_cast %dr : !ptx.reg<b64> to !hopper.matrix_descriptor<k_major, swizzle 128, mn 64, k 128, bytes 1>
    %f = ptx.const 0.0 : !ptx.reg<f32>
    %acc = hopper.accumulator %f, %f, %f, %f : !hopper.accumulator<64x8xf32>
    %next = hopper.wgmma_mma_async m64n8k32 f8e4m3 %d, %d, %acc {b_dtype = "bf16"} : (!hopper.matrix_descriptor<k_major, swizzle 128, mn 64, k 128, bytes 1>, !hopper.matrix_descriptor<k_major, swizzle 128, mn 64, k 128, bytes 1>, !hopper.accumulator<64x8xf32>) -> !hopper.accumulator<64x8xf32>
  }
}
// CHECK: hopper.wgmma_mma_async: A and B differ in type (f8e4m3, bf16); only the fp8 types mix
