// DEFINE: %{hopper} = propagate-axis-mapping,tile-split,tile-merge,split-k,insert-persistent-loop,materialize-schedule,partition-warp-roles,carry-ring-positions,lower-schedule-to-hopper
// DEFINE: %{assemble} = import sys; from mmcomp.arch.ptxas import assemble_checked; r = assemble_checked(sys.stdin.read()); [print(e.entry, 'spills', e.spills, 'stack', e.stack_frame) for e in r.resources.values()]
// RUN: mmcomp-opt %s -p %{hopper} | filecheck %s
// RUN: mmcomp-opt %s -p compile-to-ptx -t ptx | filecheck %s --check-prefix=PTX
// RUN: mmcomp-opt %s -p compile-to-ptx -t ptx | python -c "%{assemble}" | filecheck %s --check-prefix=PTXAS

// The quantizing epilogue on the cuda back end: the scale of each row's 1 x 128 group is
// the amax of the thread's 32 elements of it (math.absf, arith.maxnumf) and of its quad's
// (hopper.shuffle_xor with lane masks 1 and 2), divided by 448; the values are multiplied
// by the scale's reciprocal (0 where the scale is 0) and stored in saturated fp8 pairs.
// N = 300: the last tile's group holds 44 columns, so the elements past them are left out
// of its amax (an arith.select of 0 where the column limit says so).
func.func @quantized(%a: tensor<70x64xbf16>, %w: tensor<300x64xbf16>) -> (tensor<70x300xf8E4M3FN>, tensor<70x3xf32>) attributes {sched.params = #sched.params<tile = 128x128x64, stages = 4, epilogue = registers>} {
  %y = fusion.linear %a, %w : (tensor<70x64xbf16>, tensor<300x64xbf16>) -> tensor<70x300xf32>
  %s = fusion.quantize_scale %y for f8E4M3FN group 128 : tensor<70x300xf32> to tensor<70x3xf32>
  %q = fusion.quantize %y, %s : (tensor<70x300xf32>, tensor<70x3xf32>) -> tensor<70x300xf8E4M3FN>
  func.return %q, %s : tensor<70x300xf8E4M3FN>, tensor<70x3xf32>
}

// The first row slot's group: the thread's elements, their magnitudes; those of columns
// 40 on (where the last tile ends, 44 columns in, for lanes with col0 > 4) masked.
// CHECK:      %[[E0:.*]] = hopper.accumulator_element %[[ACC:.*]][0] : !hopper.accumulator<64x128xf32>
// CHECK:      %[[M0:.*]] = math.absf %[[E0]] : f32
// CHECK:      %[[E20:.*]] = hopper.accumulator_element %[[ACC]][20] : !hopper.accumulator<64x128xf32>
// CHECK-NEXT: %[[M20:.*]] = math.absf %[[E20]] : f32
// CHECK-NEXT: %[[C40:.*]] = arith.constant 40 : i32
// CHECK-NEXT: %[[INSIDE:.*]] = arith.cmpi sgt, %{{.*}}, %[[C40]] : i32
// CHECK-NEXT: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: %{{.*}} = arith.select %[[INSIDE]], %[[M20]], %[[ZERO]] : f32
// The thread's amax (a tree of maxnumf), the quad's, the scale.
// CHECK:      arith.maxnumf %{{.*}}, %{{.*}} : f32
// CHECK:      %[[X1:.*]] = hopper.shuffle_xor %[[AMAX:.*]], 1 : f32
// CHECK-NEXT: %[[AMAX1:.*]] = arith.maxnumf %[[AMAX]], %[[X1]] : f32
// CHECK-NEXT: %[[X2:.*]] = hopper.shuffle_xor %[[AMAX1]], 2 : f32
// CHECK-NEXT: %[[AMAX2:.*]] = arith.maxnumf %[[AMAX1]], %[[X2]] : f32
// CHECK-NEXT: %[[LARGEST:.*]] = arith.constant 4.480000e+02 : f32
// CHECK-NEXT: %[[SCALE:.*]] = arith.divf %[[AMAX2]], %[[LARGEST]] : f32
// The multiplier: 1 / scale, 0 where the scale is 0.
// CHECK-NEXT: %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: %[[NONZERO:.*]] = arith.cmpf une, %[[SCALE]], %[[Z]] : f32
// CHECK-NEXT: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT: %[[INVERSE:.*]] = arith.divf %[[ONE]], %[[SCALE]] : f32
// CHECK-NEXT: %[[Z2:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: %[[MULTIPLIER:.*]] = arith.select %[[NONZERO]], %[[INVERSE]], %[[Z2]] : f32
// Each pair: the products, rounded into one saturated fp8 pair, one store.
// CHECK-NEXT: %[[Q0:.*]] = arith.mulf %[[E0]], %[[MULTIPLIER]] fastmath<contract> : f32
// CHECK-NEXT: %[[Q1:.*]] = arith.mulf %{{.*}}, %[[MULTIPLIER]] fastmath<contract> : f32
// CHECK:      %[[PAIR:.*]] = hopper.truncf_pair %[[Q0]], %[[Q1]] : vector<2xf8E4M3FN>
// CHECK-NEXT: hopper.global_store %{{.*}}, %[[PAIR]] if %{{.*}} : (i64, vector<2xf8E4M3FN>) -> ()
// The scale, once per row slot and group, by the lanes of column 0.
// CHECK:      hopper.global_store %{{.*}}, %[[SCALE]] if %{{.*}} : (i64, f32) -> ()

// PTX: shfl.sync.bfly.b32 %f{{[0-9]+}}, %f{{[0-9]+}}, 1, 31, 0xffffffff;
// PTX: shfl.sync.bfly.b32 %f{{[0-9]+}}, %f{{[0-9]+}}, 2, 31, 0xffffffff;
// PTX: div.rn.f32
// PTX: setp.neu.f32 %p{{[0-9]+}}, %f{{[0-9]+}}, %f{{[0-9]+}};
// PTX: cvt.rn.satfinite.e4m3x2.f32 %rs{{[0-9]+}}, %f{{[0-9]+}}, %f{{[0-9]+}};
// PTX: st.global.b16
// PTX: st.global.f32

// PTXAS: quantized spills 0 stack 0
