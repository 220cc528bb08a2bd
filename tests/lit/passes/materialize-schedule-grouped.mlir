// RUN: mmcomp-opt %s -p propagate-axis-mapping,choose-schedule{backend=interp},tile-split,tile-merge,split-k,insert-persistent-loop,materialize-schedule --split-input-file | filecheck %s

// A grouped linear materialized. Contiguous groups (offsets): the persistent loop walks
// floor(T / 128) + G virtual m tiles by the n tiles, group by group: the group of a unit's
// virtual m tile (unit / n tiles), its start and end come from sched.group_tile (read on
// the device); the unit's index within the group's units (from its first virtual m tile
// on) is swizzled over the group's own (m tiles x n tiles) grid; a unit past the group's
// tiles is skipped. The weight tile starts at the group along g (its group axis absent
// on the tile), the bias row is the group's, and the stores are clipped at the group's
// end.

// CHECK-LABEL: func.func @contiguous
// CHECK-SAME:    %offsets: memref<8xi32> {fusion.roles = #fusion.roles<[g]>}
// CHECK-SAME:    %m: index {sched.extent = "m"}
// CHECK-SAME:    sched.grid = @contiguous_launch
// CHECK:         %whole_tiles_m = arith.divui %m, %c128 : index
// CHECK-NEXT:    %tiles_m = arith.addi %whole_tiles_m, %c8 : index
// CHECK:         scf.for %unit = %cta to %{{.*}} step %grid {
// CHECK-NEXT:      %virtual_m = arith.divui %unit, %c2 : index
// CHECK-NEXT:      %g, %group_start, %group_end = sched.group_tile %offsets[%virtual_m] tile_m 128 : memref<8xi32>
// CHECK-NEXT:      %[[START_TILE:.*]] = arith.divui %group_start, %c128 : index
// CHECK-NEXT:      %group_first_m = arith.addi %[[START_TILE]], %g : index
// CHECK-NEXT:      %group_rows = arith.subi %group_end, %group_start : index
// CHECK-NEXT:      %group_m_tiles = arith.ceildivui %group_rows, %c128 : index
// CHECK-NEXT:      %[[FIRST_UNIT:.*]] = arith.muli %group_first_m, %c2 : index
// CHECK-NEXT:      %group_unit = arith.subi %unit, %[[FIRST_UNIT]] : index
// CHECK-NEXT:      %group_units = arith.muli %group_m_tiles, %c2 : index
// CHECK-NEXT:      %has_rows = arith.cmpi ult, %group_unit, %group_units : index
// CHECK-NEXT:      %group_local = arith.select %has_rows, %group_unit, %c0 : index
// CHECK-NEXT:      %group_span = arith.maxui %group_m_tiles, %c1 : index
// CHECK:           %tile_m = arith.addi
// CHECK:           %tile_n = arith.divui
// CHECK-NEXT:      %[[ROW:.*]] = arith.muli %tile_m, %c128 : index
// CHECK-NEXT:      %m0 = arith.addi %group_start, %[[ROW]] : index
// CHECK-NEXT:      %n0 = arith.muli %tile_n, %c128 : index
// CHECK-NEXT:      scf.if %has_rows {
// CHECK:             sched.load_tile %x[%m0, %k0] : memref<?x64xbf16> -> tensor<128x64xbf16>
// CHECK-NEXT:        sched.load_tile %w[%g, %n0, %k0] : memref<8x256x64xbf16> -> tensor<1x128x64xbf16>
// CHECK-NEXT:        sched.mma %x_tile [m, k], %w_tile [_, n, k], %acc_1 [m, n]
// CHECK:           sched.load_tile %bias[%g, %n0] : memref<8x256xbf16> -> tensor<1x128xbf16>
// CHECK:             %bias_row = fusion.broadcast %{{.*}} new_dims [false, false] : tensor<1x128xf32> to tensor<128x128xf32>
// CHECK:           sched.store_tile %{{.*}}, %out0[%m0, %n0] rows %group_end : tensor<128x128xbf16>, memref<?x256xbf16>
// CHECK:       func.func @contiguous_launch(%m: index {sched.extent = "m"})
// CHECK:         %clusters = arith.minui %mn_units, %c132 : index
func.func @contiguous(%x: tensor<?x64xbf16>, %w: tensor<8x256x64xbf16>, %offsets: tensor<8xi32>, %bias: tensor<8x256xbf16>) -> tensor<?x256xbf16> {
  %0 = fusion.grouped_linear %x, %w, %bias offsets %offsets : (tensor<?x64xbf16>, tensor<8x256x64xbf16>, tensor<8x256xbf16>, tensor<8xi32>) -> tensor<?x256xf32>
  %1 = fusion.cast %0 : tensor<?x256xf32> to tensor<?x256xbf16>
  func.return %1 : tensor<?x256xbf16>
}

// -----

// Masked groups (counts): the group is a batch index; a tile at or past the group's count
// is skipped, and the stores are clipped at the count.

// CHECK-LABEL: func.func @masked
// CHECK:         %group_rows = sched.group_rows %counts[%batch] : memref<4xi32>
// CHECK-NEXT:    %has_rows = arith.cmpi ult, %m0, %group_rows : index
// CHECK-NEXT:    scf.if %has_rows {
// CHECK:           sched.load_tile %x[%batch, %m0, %k0] : memref<4x200x64xbf16> -> tensor<1x64x64xbf16>
// CHECK:           sched.store_tile %{{.*}}, %out0[%batch, %m0, %n0] rows %group_rows
func.func @masked(%x: tensor<4x200x64xbf16>, %w: tensor<4x128x64xbf16>, %counts: tensor<4xi32>) -> tensor<4x200x128xf32> {
  %0 = fusion.grouped_linear %x, %w counts %counts : (tensor<4x200x64xbf16>, tensor<4x128x64xbf16>, tensor<4xi32>) -> tensor<4x200x128xf32>
  func.return %0 : tensor<4x200x128xf32>
}
