// RUN: mmcomp-opt %s | mmcomp-opt | filecheck %s --check-prefix=IR
// RUN: mmcomp-opt %s -p convert-hopper-to-ptx | filecheck %s --check-prefix=HOPPER
// RUN: mmcomp-opt %s -p convert-hopper-to-ptx,convert-scf-to-ptx,convert-arith-to-ptx -t ptx | filecheck %s --check-prefix=PTX

// The epilogue's element accesses on typed values: a bias pair loaded as two bf16 values
// at an i64 address (the array's address, read as an i64, plus a byte offset), guarded by
// a signed column test (the columns left, an index cast to i32, greater than the pair's
// column); an output pair stored as a truncf_pair, and two f32 values stored to a shared
// row; a 16-byte chunk of a staged box read back as four words and stored to the output
// under the same test. convert-hopper-to-ptx makes each one ld / st of registers (the
// values' registers through casts), convert-arith-to-ptx the signed test a mov.s32 and a
// setp.gt.s32.
hopper.kernel @k(arg0 : ptr<role = input, name = "bias", shape = [256], dtype = bf16>, arg1 : ptr<role = output, name = "out0", shape = [64, 256], dtype = bf16>) shared @mmcomp_shared align 1024 {
  %smem = hopper.shared_base mmcomp_shared : !hopper.smem<align 1024>
  %bias = hopper.array_param arg0 : memref<256xbf16>
  %out = hopper.array_param arg1 : memref<64x256xbf16>
  %tid = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index
  %c256 = arith.constant 256 : index
  %left_index = arith.subi %c256, %tid : index
  %left = arith.index_cast %left_index : index to i32
  %c8 = arith.constant 8 : i32
  %in_bounds = arith.cmpi sgt, %left, %c8 : i32
  %base = builtin.unrealized_conversion_cast %bias : memref<256xbf16> to i64
  %lo, %hi = hopper.global_load %base if %in_bounds {offset = 16} : (i64) -> (bf16, bf16)
  %lo_f32 = arith.extf %lo : bf16 to f32
  %hi_f32 = arith.extf %hi : bf16 to f32
  %sum = arith.addf %lo_f32, %hi_f32 fastmath<contract> : f32
  %pair = hopper.truncf_pair %sum, %hi_f32 : vector<2xbf16>
  %out_base = builtin.unrealized_conversion_cast %out : memref<64x256xbf16> to i64
  hopper.global_store %out_base, %pair if %in_bounds {offset = 16} : (i64, vector<2xbf16>) -> ()
  %c64 = arith.constant 64 : index
  %row = hopper.smem_add %smem[%c64] : !hopper.smem<align 1024> -> !hopper.smem<align 8>
  hopper.smem_store %row, %sum, %lo_f32 {offset = 1024} : (!hopper.smem<align 8>, f32, f32) -> ()
  %chunk = hopper.smem_add %smem[%c64] : !hopper.smem<align 1024> -> !hopper.smem<align 16>
  %w0, %w1, %w2, %w3 = hopper.smem_load %chunk {offset = 2048} : (!hopper.smem<align 16>) -> (f32, f32, f32, f32)
  hopper.global_store %out_base, %w0, %w1, %w2, %w3 if %in_bounds {offset = 128} : (i64, f32, f32, f32, f32) -> ()
  ptx.ret
}

// IR:      %[[LEFT:.*]] = arith.index_cast %{{.*}} : index to i32
// IR-NEXT: %[[C8:.*]] = arith.constant 8 : i32
// IR-NEXT: %[[OK:.*]] = arith.cmpi sgt, %[[LEFT]], %[[C8]] : i32
// IR-NEXT: %[[BASE:.*]] = builtin.unrealized_conversion_cast %{{.*}} : memref<256xbf16> to i64
// IR-NEXT: %[[LO:.*]], %[[HI:.*]] = hopper.global_load %[[BASE]] if %[[OK]] {offset = 16} : (i64) -> (bf16, bf16)
// IR:      %[[PAIR:.*]] = hopper.truncf_pair %{{.*}}, %{{.*}} : vector<2xbf16>
// IR:      hopper.global_store %{{.*}}, %[[PAIR]] if %[[OK]] {offset = 16} : (i64, vector<2xbf16>) -> ()
// IR:      %[[ROW:.*]] = hopper.smem_add %{{.*}}[%{{.*}}] : !hopper.smem<align 1024> -> !hopper.smem<align 8>
// IR-NEXT: hopper.smem_store %[[ROW]], %{{.*}}, %{{.*}} {offset = 1024} : (!hopper.smem<align 8>, f32, f32) -> ()
// IR-NEXT: %[[CHUNK:.*]] = hopper.smem_add %{{.*}}[%{{.*}}] : !hopper.smem<align 1024> -> !hopper.smem<align 16>
// IR-NEXT: %[[W0:.*]], %[[W1:.*]], %[[W2:.*]], %[[W3:.*]] = hopper.smem_load %[[CHUNK]] {offset = 2048} : (!hopper.smem<align 16>) -> (f32, f32, f32, f32)
// IR-NEXT: hopper.global_store %{{.*}}, %[[W0]], %[[W1]], %[[W2]], %[[W3]] if %[[OK]] {offset = 128} : (i64, f32, f32, f32, f32) -> ()

// HOPPER:      %[[BIAS:.*]] = ptx.ld_param arg0 : !ptx.reg<u64>
// HOPPER-NEXT: %[[OUT:.*]] = ptx.ld_param arg1 : !ptx.reg<u64>
// HOPPER:      %[[OK:.*]] = arith.cmpi sgt, %{{.*}}, %{{.*}} : i32
// HOPPER-NEXT: %[[R0:.*]], %[[R1:.*]] = ptx.ld global %[[BIAS]] if %[[OK]] {offset = 16} : (!ptx.reg<u64>) -> (!ptx.reg<bf16>, !ptx.reg<bf16>)
// HOPPER-NEXT: %{{.*}} = builtin.unrealized_conversion_cast %[[R0]] : !ptx.reg<bf16> to bf16
// HOPPER-NEXT: %{{.*}} = builtin.unrealized_conversion_cast %[[R1]] : !ptx.reg<bf16> to bf16
// HOPPER:      %[[PACK:.*]] = ptx.cvt_pack %{{.*}}, %{{.*}} : (!ptx.reg<f32>, !ptx.reg<f32>) -> !ptx.reg<bf16x2>
// HOPPER-NEXT: ptx.st global %[[OUT]], %[[PACK]] if %[[OK]] {offset = 16} : (!ptx.reg<u64>, !ptx.reg<bf16x2>) -> ()
// HOPPER:      ptx.st shared %{{.*}}, %{{.*}}, %{{.*}} {offset = 1024} : (!ptx.reg<u32>, !ptx.reg<f32>, !ptx.reg<f32>) -> ()
// HOPPER:      ptx.ld shared %{{.*}} {offset = 2048} : (!ptx.reg<u32>) -> (!ptx.reg<f32>, !ptx.reg<f32>, !ptx.reg<f32>, !ptx.reg<f32>)
// HOPPER:      ptx.st global %[[OUT]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} if %[[OK]] {offset = 128} : (!ptx.reg<u64>, !ptx.reg<f32>, !ptx.reg<f32>, !ptx.reg<f32>, !ptx.reg<f32>) -> ()
// HOPPER-NOT:  hopper.global
// HOPPER-NOT:  hopper.smem_store
// HOPPER-NOT:  hopper.smem_load

// PTX:      ld.param.u64 %rd1, [arg0];
// PTX-NEXT: ld.param.u64 %rd2, [arg1];
// PTX:      sub.u32 %r[[LEFT:[0-9]+]], %r{{[0-9]+}}, %r{{[0-9]+}};
// PTX-NEXT: mov.b32 %r[[COUNT:[0-9]+]], %r[[LEFT]];
// PTX-NEXT: mov.s32 %r[[C8:[0-9]+]], 8;
// PTX-NEXT: setp.gt.s32 %p[[OK:[0-9]+]], %r[[COUNT]], %r[[C8]];
// PTX-NEXT: @%p[[OK]] ld.global.v2.b16 {%rs1, %rs2}, [%rd1+16];
// PTX-NEXT: cvt.f32.bf16 %f1, %rs1;
// PTX-NEXT: cvt.f32.bf16 %f2, %rs2;
// PTX-NEXT: add.f32 %f3, %f1, %f2;
// PTX-NEXT: cvt.rn.bf16x2.f32 %r[[PAIR:[0-9]+]], %f2, %f3;
// PTX-NEXT: @%p[[OK]] st.global.b32 [%rd2+16], %r[[PAIR]];
// PTX:      st.shared.v2.f32 [%r{{[0-9]+}}+1024], {%f3, %f1};
// PTX:      ld.shared.v4.f32 {%f[[W0:[0-9]+]], %f{{[0-9]+}}, %f{{[0-9]+}}, %f{{[0-9]+}}}, [%r{{[0-9]+}}+2048];
// PTX-NEXT: @%p[[OK]] st.global.v4.f32 [%rd2+128], {%f[[W0]], %f{{[0-9]+}}, %f{{[0-9]+}}, %f{{[0-9]+}}};
