// RUN: mmcomp-opt %s -p propagate-axis-mapping,choose-schedule,tile-split,tile-merge,split-k,insert-persistent-loop,materialize-schedule,partition-warp-roles,carry-ring-positions,lower-schedule-to-hopper | filecheck %s

// fused_multiply_sum of a[M, 1, K] and b[1, N, K] at M = 1: propagate-axis-mapping gives a
// the roles [_, _, k] (no m axis). Its tensor map views it as [1, K] with a box of the
// tile's 128 rows (TMA zero-fills all but the first), so each ring slot holds whole 16 KiB
// tiles of both operands and the stage expects 2 x 16 KiB; the row coordinate is 0.
func.func @broadcast_m1(%a: tensor<1x1x256xbf16>, %b: tensor<1x512x256xbf16>) -> tensor<1x512xbf16> attributes {sched.params = #sched.params<tile = 128x128x64, stages = 4, split_k = 1, epilogue = registers>} {
  %y = fusion.fused_multiply_sum %a, %b axes [2] : (tensor<1x1x256xbf16>, tensor<1x512x256xbf16>) -> tensor<1x512xf32>
  %o = fusion.cast %y : tensor<1x512xf32> to tensor<1x512xbf16>
  func.return %o : tensor<1x512xbf16>
}

// CHECK:      ptx.setmaxnreg dec 40
// CHECK:      hopper.mbarrier_arrive_expect_tx 32768 %[[FULL:.*]] : !hopper.mbarrier<count = 1>
// CHECK:      %[[ZERO:.*]] = arith.constant 0 : index
// CHECK:      hopper.tma_load %{{.*}}[%[[K0:.*]], %[[ZERO]]], %[[FULL]] to %{{.*}} : !hopper.tensormap<1x256xbf16, box 128x64, swizzle 128>,
// CHECK:      hopper.tma_load %{{.*}}[%[[K0]], %{{.*}}], %[[FULL]] to %{{.*}} :
// The output [1, 512] has no m axis: only the tile's first row stores, its test "row == 0"
// (an i1), with the column's bound test, guarding each packed store.
// CHECK:      ptx.setmaxnreg inc 232
// CHECK:      ptx.wgmma_wait 0
// CHECK:      hopper.mbarrier_arrive
// The first pair of the K loop's accumulator, read through its elements.
// CHECK-NEXT: %{{.*}} = hopper.accumulator_element %[[ACC:.*]][0] : !hopper.accumulator<64x128xf32>
// CHECK-NEXT: %{{.*}} = hopper.accumulator_element %[[ACC]][1] : !hopper.accumulator<64x128xf32>
// CHECK-NEXT: %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT: %[[IS_ROW0:.*]] = arith.cmpi eq, %{{.*}}, %[[C0]] : index
// CHECK:      %[[LEFT:.*]] = arith.index_cast %{{.*}} : index to i32
// CHECK:      %[[OUT:.*]] = builtin.unrealized_conversion_cast %{{.*}} : memref<1x512xbf16> to i64
// CHECK:      %[[ADDRESS:.*]] = arith.addi %[[OUT]], %{{.*}} : i64
// CHECK:      %[[C0_I32:.*]] = arith.constant 0 : i32
// CHECK-NEXT: %[[COL_OK:.*]] = arith.cmpi sgt, %[[LEFT]], %[[C0_I32]] : i32
// CHECK-NEXT: %[[OK:.*]] = arith.andi %[[IS_ROW0]], %[[COL_OK]] : i1
// CHECK-NEXT: %[[PAIR:.*]] = hopper.truncf_pair %{{.*}}, %{{.*}} : vector<2xbf16>
// CHECK-NEXT: hopper.global_store %[[ADDRESS]], %[[PAIR]] if %[[OK]] : (i64, vector<2xbf16>) -> ()
