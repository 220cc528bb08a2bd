// RUN: mmcomp-opt %s -p 'propagate-axis-mapping,choose-schedule{tile=128x128x64 stages=4},tile-split,tile-merge,split-k,insert-persistent-loop,materialize-schedule,partition-warp-roles' | filecheck %s --check-prefix=ROLES
// RUN: mmcomp-opt %s -p 'propagate-axis-mapping,choose-schedule{tile=128x128x64 stages=4},tile-split,tile-merge,split-k,insert-persistent-loop,materialize-schedule,partition-warp-roles,carry-ring-positions,lower-schedule-to-hopper' | filecheck %s
// RUN: mmcomp-opt %s -p 'propagate-axis-mapping,choose-schedule{tile=128x128x64 stages=4},tile-split,tile-merge,split-k,insert-persistent-loop,materialize-schedule,partition-warp-roles,carry-ring-positions,lower-schedule-to-hopper' | mmcomp-opt | filecheck %s
// RUN: mmcomp-opt %s -p 'propagate-axis-mapping,choose-schedule{tile=128x128x64 stages=4},compile-to-ptx{refit-spills=false}' -t ptx | filecheck %s --check-prefix=PTX

// A grouped linear over 8 contiguous groups at the hopper level. Both roles look up each
// tile's group: the producer region holds its own sched.group_tile, which its loads' rows
// and weight tile need. Each lookup is the unrolled binary search over the offsets (steps
// 4, 2, 1 for 8 groups: a probe clamped to the last group, the offset before it loaded as
// an index, `hopper.global_load_index`, its first tile compared with the tile) and one
// load of the group's end; the offsets are a pointer parameter of i32. The stores are
// clipped below the lesser of the group's end and T, the weight is one 3-D tensor map
// whose box starts at the group.

// ROLES:       hopper.warp_specialize cooperative producer {
// ROLES:         %g, %group_start, %group_end = sched.group_tile %offsets[%virtual_m] tile_m 128 : memref<8xi32>
// ROLES:         %has_rows = arith.cmpi ult, %group_unit, %group_units : index
// ROLES:         scf.if %has_rows {
// ROLES:           sched.load_tile %w[%g, %n0, %k0] {hopper.slot = 1 : i64}
// ROLES:       } consumer {
// ROLES:         %g_1, %group_start_1, %group_end_1 = sched.group_tile %offsets[%virtual_m_1] tile_m 128 : memref<8xi32>

// CHECK:       hopper.kernel @grouped({{.*}}arg2 : ptr<role = input, name = "offsets", shape = [8], dtype = i32>{{.*}}tmap1 : tmap<arg = 1, dtype = bf16, shape = [8, 256, 64], box = [1, 128, 64]
// CHECK:         %[[OFFSETS:.*]] = hopper.array_param arg2 : memref<8xi32>
// CHECK:         %[[STEP:.*]] = arith.constant 4 : index
// CHECK-NEXT:    %[[PROBE:.*]] = arith.addi %{{.*}}, %[[STEP]] : index
// CHECK-NEXT:    %[[CLAMPED:.*]] = arith.minui %[[PROBE]], %{{.*}} : index
// CHECK-NEXT:    %[[BEFORE:.*]] = arith.subi %[[CLAMPED]], %{{.*}} : index
// CHECK-NEXT:    %[[BASE:.*]] = builtin.unrealized_conversion_cast %[[OFFSETS]] : memref<8xi32> to i64
// CHECK:         %[[START:.*]] = hopper.global_load_index %{{.*}} : (i64) -> index
// CHECK-NEXT:    %[[FIRST:.*]] = arith.divui %[[START]], %{{.*}} : index
// CHECK-NEXT:    %[[TILE:.*]] = arith.addi %[[FIRST]], %[[CLAMPED]] : index
// CHECK-NEXT:    %[[WITHIN:.*]] = arith.cmpi ule, %[[TILE]], %{{.*}} : index
// CHECK-NEXT:    arith.select %[[WITHIN]], %[[CLAMPED]], %{{.*}} : index
// CHECK-NEXT:    arith.select %[[WITHIN]], %[[START]], %{{.*}} : index
// CHECK:         arith.constant 2 : index
// CHECK:         hopper.global_load_index
// CHECK:         arith.constant 1 : index
// CHECK:         hopper.global_load_index
// CHECK:         %group_end = hopper.global_load_index %{{.*}} : (i64) -> index
// CHECK:         hopper.tma_load
// CHECK:         %group_end_1 = hopper.global_load_index %{{.*}} : (i64) -> index
// CHECK:         arith.minui %group_end_1, %{{.*}} : index

// PTX:         .param .u64 arg2,
// PTX:         ld.param.u64 %[[OFFSETS:rd[0-9]+]], [arg2];
// PTX-COUNT-4: ld.global.u32
// PTX:         cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%{{r[0-9]+}}], [%{{rd[0-9]+}}, {%{{r[0-9]+}}, %{{r[0-9]+}}, %{{r[0-9]+}}}]
// PTX-COUNT-4: ld.global.u32
func.func @grouped(%x: tensor<?x64xbf16>, %w: tensor<8x256x64xbf16>, %offsets: tensor<8xi32>) -> tensor<?x256xbf16> {
  %0 = fusion.grouped_linear %x, %w offsets %offsets : (tensor<?x64xbf16>, tensor<8x256x64xbf16>, tensor<8xi32>) -> tensor<?x256xf32>
  %1 = fusion.cast %0 : tensor<?x256xf32> to tensor<?x256xbf16>
  func.return %1 : tensor<?x256xbf16>
}
