// RUN: mmcomp-opt %s | filecheck %s
// RUN: mmcomp-opt %s | mmcomp-opt | filecheck %s

// The hopper types print as they are written and read back: tensor maps of each rank,
// element type and swizzle (extents known only at launch are `?`), barrier rings, single
// mbarriers and wgmma accumulators.

"test.op"() {
  maps = [
    !hopper.tensormap<4096x5120xbf16, box 128x64, swizzle 128>,
    !hopper.tensormap<8x300x264xf16, box 1x64x64, swizzle 128>,
    !hopper.tensormap<4096x14336xf32, box 64x32, swizzle 128>,
    !hopper.tensormap<?x?xbf16, box 64x128, swizzle 0>,
    !hopper.tensormap<1000xbf16, box 64, swizzle 32>
  ],
  rings = [!hopper.barrier_ring<stages = 3, count = 1>, !hopper.barrier_ring<stages = 4, count = 4>],
  barrier = !hopper.mbarrier<count = 2>,
  accumulators = [!hopper.accumulator<64x8xf32>, !hopper.accumulator<64x256xf32>]
} : () -> ()

// CHECK:      maps = [!hopper.tensormap<4096x5120xbf16, box 128x64, swizzle 128>,
// CHECK-SAME: !hopper.tensormap<8x300x264xf16, box 1x64x64, swizzle 128>,
// CHECK-SAME: !hopper.tensormap<4096x14336xf32, box 64x32, swizzle 128>,
// CHECK-SAME: !hopper.tensormap<?x?xbf16, box 64x128, swizzle 0>,
// CHECK-SAME: !hopper.tensormap<1000xbf16, box 64, swizzle 32>]
// CHECK-SAME: rings = [!hopper.barrier_ring<stages = 3, count = 1>, !hopper.barrier_ring<stages = 4, count = 4>]
// CHECK-SAME: barrier = !hopper.mbarrier<count = 2>
// CHECK-SAME: accumulators = [!hopper.accumulator<64x8xf32>, !hopper.accumulator<64x256xf32>]
