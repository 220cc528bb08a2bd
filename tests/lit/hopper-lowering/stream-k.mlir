// RUN: mmcomp-opt %s -p propagate-axis-mapping,choose-schedule,tile-split,tile-merge,split-k,insert-persistent-loop,materialize-schedule,partition-warp-roles,carry-ring-positions,lower-schedule-to-hopper | filecheck %s

// Stream-K, 3 x 2 tiles of 128x128 and 16 K blocks: 96 iterations on 96 CTAs. After each
// unit's K loop, a CTA that covered its tile stores it from registers; otherwise each thread
// stores its 64 accumulator elements (f32 values, `hopper.global_store`) to the CTA's slab
// of the f32 workspace (512 bytes apart: register, then thread), the tile's threads count
// the segment with one acq_rel atomic (the arrival that finds segments - 1 resets the
// counter), and the last one sums the slabs
// of CTAs first_cta .. last_cta in that order into 64 fresh registers (slab = CTA x 2 +
// slot, in place: ld, add, assign; the segment loop carries the 64 registers) before its
// own epilogue.
func.func @lin(%a: tensor<300x1000xbf16>, %w: tensor<256x1000xbf16>) -> tensor<300x256xbf16> attributes {sched.params = #sched.params<tile = 128x128x64, stages = 4, strategy = stream-k, epilogue = registers>} {
  %y = fusion.linear %a, %w : (tensor<300x1000xbf16>, tensor<256x1000xbf16>) -> tensor<300x256xf32>
  %o = fusion.cast %y : tensor<300x256xf32> to tensor<300x256xbf16>
  func.return %o : tensor<300x256xbf16>
}

// CHECK:      ptx.setmaxnreg inc 232
// CHECK:      ptx.wgmma_fence
// CHECK:      } {ptx.labels = ["loop_{{[0-9]+}}", "loop_end_{{[0-9]+}}"]}
// CHECK:      %[[COVERED:[0-9]+]] = arith.cmpi eq
// CHECK-NEXT: scf.if %[[COVERED]] {
// CHECK:      hopper.global_store %{{[0-9]+}}, %{{[0-9]+}} if %{{[0-9]+}} : (i64, vector<2xbf16>) -> ()
// CHECK:      } else {
// CHECK:      hopper.global_store %[[SLAB:[0-9]+]], %{{[0-9]+}} : (i64, f32) -> ()
// CHECK-NEXT: hopper.global_store %[[SLAB]], %{{[0-9]+}} {offset = 512} : (i64, f32) -> ()
// CHECK:      hopper.global_store %[[SLAB]], %{{[0-9]+}} {offset = 32256} : (i64, f32) -> ()
// CHECK-NEXT: arith.addi
// CHECK-NEXT: arith.muli
// CHECK-NEXT: arith.subi
// CHECK-NEXT: %[[FIRST:[0-9]+]] = arith.divui
// CHECK-NEXT: arith.addi
// CHECK-NEXT: arith.muli
// CHECK-NEXT: arith.subi
// CHECK-NEXT: %[[LAST_CTA:[0-9]+]] = arith.divui
// CHECK-NEXT: %[[OTHERS:[0-9]+]] = arith.subi %[[LAST_CTA]], %[[FIRST]] : index
// CHECK-NEXT: %[[SEGMENTS:[0-9]+]] = arith.addi %[[OTHERS]], %{{[0-9]+}} : index
// CHECK-NEXT: ptx.fence acq_rel_gpu
// CHECK-NEXT: ptx.bar sync 3 256
// CHECK:      %[[OLD:[0-9]+]] = ptx.inst "atom.global.acq_rel.gpu.add.u32 {0}, [{1}], 1"
// CHECK-NEXT: %[[COUNT:[0-9]+]] = builtin.unrealized_conversion_cast %[[SEGMENTS]] : index to !ptx.reg<u32>
// CHECK-NEXT: %[[ONE:[0-9]+]] = ptx.const 1 : !ptx.reg<u32>
// CHECK-NEXT: %[[LAST:[0-9]+]] = ptx.sub %[[COUNT]], %[[ONE]] : !ptx.reg<u32>
// CHECK-NEXT: %[[IS_LAST:[0-9]+]] = ptx.setp eq %[[OLD]], %[[LAST]]
// CHECK:      ptx.bar sync 3 256
// CHECK-NEXT: %[[SHARED:[0-9]+]] = ptx.ld shared
// CHECK-NEXT: ptx.fence acq_rel_gpu
// CHECK-NEXT: %[[ARRIVED:[0-9]+]] = builtin.unrealized_conversion_cast %[[SHARED]] : !ptx.reg<u32> to index
// CHECK-NEXT: arith.cmpi eq, %[[ARRIVED]], %[[OTHERS]] : index
// CHECK:      %[[SUM0:[0-9]+]] = ptx.const 0.0 : !ptx.reg<f32>
// CHECK:      %[[TOTAL0:[0-9]+]], {{.*}} = scf.for %{{[0-9]+}} = %{{[0-9]+}} to %{{[0-9]+}} step %{{[0-9]+}} iter_args(%[[RUNNING:[0-9]+]] = %[[SUM0]], {{.*}}) -> (!ptx.reg<f32>, {{.*}}) {
// CHECK:      %[[SLOT:[0-9]+]] = arith.select
// CHECK-NEXT: %[[SLOTS:[0-9]+]] = arith.constant 2 : index
// CHECK-NEXT: %[[CTA_SLOTS:[0-9]+]] = arith.muli %{{[0-9]+}}, %[[SLOTS]] : index
// CHECK-NEXT: %{{[0-9]+}} = arith.addi %[[CTA_SLOTS]], %[[SLOT]] {ptx.mad} : index
// CHECK:      %[[PART:[0-9]+]] = ptx.ld global %[[ADDRESS:[0-9]+]] : (!ptx.reg<u64>) -> !ptx.reg<f32>
// CHECK-NEXT: %[[ADDED:[0-9]+]] = ptx.add %[[RUNNING]], %[[PART]] : !ptx.reg<f32>
// CHECK-NEXT: ptx.assign %[[RUNNING]], %[[ADDED]] : !ptx.reg<f32>
// CHECK-NEXT: ptx.ld global %[[ADDRESS]] {offset = 512} : (!ptx.reg<u64>) -> !ptx.reg<f32>
// CHECK:      scf.yield %[[RUNNING]], {{.*}} : !ptx.reg<f32>, {{.*}}
// CHECK-NEXT: } {ptx.labels = ["loop_{{[0-9]+}}", "loop_end_{{[0-9]+}}"]}
// The epilogue reads the sum's registers as f32 values, rounding each pair into bf16.
// CHECK:      %[[TOTAL0_VALUE:[0-9]+]] = builtin.unrealized_conversion_cast %[[TOTAL0]] : !ptx.reg<f32> to f32
// CHECK:      hopper.truncf_pair %[[TOTAL0_VALUE]], %{{[0-9]+}} : vector<2xbf16>
// CHECK:      hopper.global_store %{{[0-9]+}}, %{{[0-9]+}} if %{{[0-9]+}} : (i64, vector<2xbf16>) -> ()
// The consumers' persistent loop carries the ring position (a cooperative kernel counts
// no tiles: only ping-pong's turns read the count).
// CHECK:      scf.yield %{{[0-9]+}} : !hopper.ring_position<stages = {{[0-9]+}}>
// CHECK-NEXT: } {ptx.labels = ["loop_{{[0-9]+}}", "loop_end_{{[0-9]+}}"]}
