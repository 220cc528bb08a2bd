// RUN: mmcomp-opt %s --verify-diagnostics --split-input-file | filecheck %s

// The hopper types' verifiers: each error names the type and what was expected (syntax
// errors: parse-errors.mlir).

// A tensor map whose box has another rank than its shape.
"test.op"() {type = !hopper.tensormap<256x128xbf16, box 64, swizzle 128>} : () -> ()
// CHECK: !hopper.tensormap: box [64] must have the rank of the shape [256, 128]

// -----

// A tensor map of six dimensions (TMA takes at most five).
"test.op"() {type = !hopper.tensormap<2x2x2x2x2x2xbf16, box 1x1x1x1x1x2, swizzle 0>} : () -> ()
// CHECK: !hopper.tensormap: rank must be 1 to 5, found 6

// -----

// A tensor map of integers.
"test.op"() {type = !hopper.tensormap<256x128xi32, box 128x64, swizzle 128>} : () -> ()
// CHECK: !hopper.tensormap: element type must be bf16, f16, f32, f8e4m3 or f8e5m2, found i32

// -----

// A swizzle TMA does not have.
"test.op"() {type = !hopper.tensormap<256x128xbf16, box 128x64, swizzle 48>} : () -> ()
// CHECK: !hopper.tensormap: swizzle must be 0, 32, 64 or 128 bytes, found 48

// -----

// An empty box.
"test.op"() {type = !hopper.tensormap<256x128xbf16, box 0x64, swizzle 128>} : () -> ()
// CHECK: !hopper.tensormap: extents must be positive, found shape [256, 128] and box [0, 64]

// -----

// An accumulator wider than one wgmma.
"test.op"() {type = !hopper.accumulator<64x264xf32>} : () -> ()
// CHECK: !hopper.accumulator: n must be a multiple of 8 in [8, 256], found 264

// -----

// A ring position of a ring without stages.
"test.op"() {type = !hopper.ring_position<stages = 0>} : () -> ()
// CHECK: !hopper.ring_position: stages must be at least 1, found 0
