// RUN: mmcomp-opt %s --verify-diagnostics --split-input-file | filecheck %s

// The group lookups take a static int32 array of 1 to 1024 groups.

func.func @element(%offsets: memref<8xi64>, %tile: index) {
  %group, %m0, %end = sched.group_tile %offsets[%tile] tile_m 128 : memref<8xi64>
  func.return
}
// CHECK: sched.group_tile: the offsets must be a memref<Gxi32>, found memref<8xi64>

// -----

func.func @too_many(%counts: memref<2048xi32>, %g: index) {
  %rows = sched.group_rows %counts[%g] : memref<2048xi32>
  func.return
}
// CHECK: sched.group_rows: the counts hold 2048 groups; a grouped kernel takes 1 to 1024

// -----

func.func @tile_m(%offsets: memref<8xi32>, %tile: index) {
  %group, %m0, %end = sched.group_tile %offsets[%tile] tile_m 0 : memref<8xi32>
  func.return
}
// CHECK: sched.group_tile: tile_m must be positive, found #builtin.int<0>
