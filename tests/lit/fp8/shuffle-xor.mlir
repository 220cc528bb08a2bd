// RUN: mmcomp-opt %s | mmcomp-opt | filecheck %s --check-prefix=IR
// RUN: mmcomp-opt %s -p convert-hopper-to-ptx,convert-arith-to-ptx | filecheck %s
// RUN: mmcomp-opt %s -p convert-hopper-to-ptx,convert-arith-to-ptx -t ptx | filecheck %s --check-prefix=PTX

// The pieces of the quantizing epilogue's reduction and multiplier: hopper.shuffle_xor
// (another lane's f32 value) becomes one shfl.sync.bfly.b32 of the value's f32 register;
// arith.cmpf on f32 a setp.<cmp>.f32 (une: neu), and an arith.select of f32 values on it a
// move into the fresh false value guarded by the predicate (selp.f32 otherwise).

hopper.kernel @k() shared @smem align 1024 {
  %smem = ptx.addr_of smem : !ptx.reg<u32>
  %r = ptx.const 1.5 : !ptx.reg<f32>
  %x = builtin.unrealized_conversion_cast %r : !ptx.reg<f32> to f32
  %other = hopper.shuffle_xor %x, 1 : f32
  %larger = arith.maxnumf %x, %other : f32
  %zero = arith.constant 0.0 : f32
  %nonzero = arith.cmpf une, %larger, %zero : f32
  %one = arith.constant 1.0 : f32
  %inverse = arith.divf %one, %larger : f32
  %none = arith.constant 0.0 : f32
  %multiplier = arith.select %nonzero, %inverse, %none : f32
  %product = arith.mulf %x, %multiplier fastmath<contract> : f32
  %pair = hopper.truncf_pair %product, %product : vector<2xf8E5M2>
  %out = builtin.unrealized_conversion_cast %pair : vector<2xf8E5M2> to !ptx.reg<e5m2x2>
  ptx.ret
}

// IR:      %[[OTHER:.*]] = hopper.shuffle_xor %{{.*}}, 1 : f32
// IR-NEXT: arith.maxnumf %{{.*}}, %[[OTHER]] : f32

// CHECK:      %[[R:.*]] = ptx.const 1.5 : !ptx.reg<f32>
// CHECK-NEXT: %[[OTHER:.*]] = ptx.shfl_sync bfly 1 %[[R]] : !ptx.reg<f32>
// CHECK-NEXT: %[[LARGER:.*]] = ptx.max %[[R]], %[[OTHER]] : !ptx.reg<f32>
// CHECK-NEXT: %[[ZERO:.*]] = ptx.const 0.0 : !ptx.reg<f32>
// CHECK-NEXT: %[[NONZERO:.*]] = ptx.setp neu %[[LARGER]], %[[ZERO]] : (!ptx.reg<f32>, !ptx.reg<f32>) -> !ptx.reg<pred>
// CHECK:      %[[INVERSE:.*]] = ptx.div %{{.*}}, %[[LARGER]] : !ptx.reg<f32>
// CHECK-NEXT: %[[NONE:.*]] = ptx.const 0.0 : !ptx.reg<f32>
// CHECK-NEXT: ptx.assign %[[NONE]], %[[INVERSE]] if %[[NONZERO]] : !ptx.reg<f32>
// CHECK-NEXT: ptx.mul %[[R]], %[[NONE]] : !ptx.reg<f32>

// PTX:      shfl.sync.bfly.b32 %f{{[0-9]+}}, %f{{[0-9]+}}, 1, 31, 0xffffffff;
// PTX:      setp.neu.f32 %p{{[0-9]+}}, %f{{[0-9]+}}, %f{{[0-9]+}};
// PTX:      div.rn.f32
// PTX:      @%p{{[0-9]+}} mov.b32 %f{{[0-9]+}}, %f{{[0-9]+}};
// PTX:      cvt.rn.satfinite.e5m2x2.f32
