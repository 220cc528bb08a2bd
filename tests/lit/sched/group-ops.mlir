// RUN: mmcomp-opt %s | filecheck %s
// RUN: mmcomp-opt %s | mmcomp-opt | filecheck %s
// RUN: mmcomp-opt %s --print-op-generic | mmcomp-opt | filecheck %s

// A grouped kernel's lookups of its groups, read on the device: the group of a virtual m
// tile of contiguous groups and that group's start and end (offsets: cumulative group ends), a
// masked group's rows (counts), and the stores clipped at the group's end.

// CHECK-LABEL: func.func @contiguous
// CHECK-NEXT:    %group, %start, %end = sched.group_tile %offsets[%tile] tile_m 128 : memref<8xi32>
// CHECK-NEXT:    sched.store_tile %y, %out[%m0, %n0] rows %end : tensor<128x128xf32>, memref<?x256xf32>
// CHECK-NEXT:    sched.store_tile %y, %out[%m0, %n0] : tensor<128x128xf32>, memref<?x256xf32>
func.func @contiguous(%offsets: memref<8xi32>, %out: memref<?x256xf32>, %tile: index, %m0: index, %n0: index, %y: tensor<128x128xf32>) {
  %group, %start, %end = sched.group_tile %offsets[%tile] tile_m 128 : memref<8xi32>
  sched.store_tile %y, %out[%m0, %n0] rows %end : tensor<128x128xf32>, memref<?x256xf32>
  sched.store_tile %y, %out[%m0, %n0] : tensor<128x128xf32>, memref<?x256xf32>
  func.return
}

// CHECK-LABEL: func.func @masked
// CHECK-NEXT:    %rows = sched.group_rows %counts[%g] : memref<64xi32>
func.func @masked(%counts: memref<64xi32>, %g: index) -> index {
  %rows = sched.group_rows %counts[%g] : memref<64xi32>
  func.return %rows : index
}

// CHECK-LABEL: func.func @write
// CHECK:         sched.write_tile (%acc) ins () outs (%out) at [g = %g, m = %m0, n = %n0] rows %end : (tensor<128x128xf32>), (), (memref<?x256xf32>) {
func.func @write(%out: memref<?x256xf32>, %acc: tensor<128x128xf32>, %g: index, %m0: index, %n0: index, %end: index) {
  sched.write_tile (%acc) ins () outs (%out) at [g = %g, m = %m0, n = %n0] rows %end : (tensor<128x128xf32>), (), (memref<?x256xf32>) {
  ^bb0(%y: tensor<128x128xf32>):
    sched.yield %y : tensor<128x128xf32>
  }
  func.return
}
