// RUN: mmcomp-opt %s | mmcomp-opt | filecheck %s --check-prefix=IR
// RUN: mmcomp-opt %s -p convert-hopper-to-ptx,convert-arith-to-ptx | filecheck %s
// RUN: mmcomp-opt %s -p convert-hopper-to-ptx,convert-arith-to-ptx -t ptx | filecheck %s --check-prefix=PTX

// The epilogue's float math as the hopper level holds it: f32 values (an accumulator
// element or a register read through a cast), arith and math on them, the rounding to a
// 16-bit float (arith.truncf; arith.extf back) and the pair rounded into one register
// (hopper.truncf_pair, which stmatrix takes as it is and a ptx store through a cast). Each op becomes one ptx
// instruction: addf / subf / mulf marked contract add.f32 / sub.f32 / mul.f32, divf
// div.rn.f32, divf of 1.0 marked afn rcp.approx.f32 (the constant goes with it), negf
// neg.f32, maxnumf max.f32, absf abs.f32, exp2 and tanh marked afn ex2.approx.f32 and
// tanh.approx.f32, fma fma.rn.f32, truncf cvt.rn.bf16.f32, extf cvt.f32.bf16, and
// truncf_pair cvt.rn.bf16x2.f32 of the high element and the low one.

hopper.kernel @k() shared @smem align 1024 {
  %smem = ptx.addr_of smem : !ptx.reg<u32>
  %r = ptx.const 1.5 : !ptx.reg<f32>
  %x = builtin.unrealized_conversion_cast %r : !ptx.reg<f32> to f32
  %half = arith.constant 0.5 : f32
  %sum = arith.addf %x, %half fastmath<contract> : f32
  %difference = arith.subf %sum, %x fastmath<contract> : f32
  %product = arith.mulf %difference, %x fastmath<contract> : f32
  %quotient = arith.divf %product, %x : f32
  %one = arith.constant 1.0 : f32
  %reciprocal = arith.divf %one, %quotient fastmath<afn> : f32
  %negated = arith.negf %reciprocal : f32
  %larger = arith.maxnumf %negated, %half : f32
  %magnitude = math.absf %larger : f32
  %power = math.exp2 %magnitude fastmath<afn> : f32
  %tanh = math.tanh %power fastmath<afn> : f32
  %fused = math.fma %tanh, %x, %half : f32
  %rounded = arith.truncf %fused : f32 to bf16
  %widened = arith.extf %rounded : bf16 to f32
  %pair = hopper.truncf_pair %widened, %x : vector<2xbf16>
  %pair_reg = builtin.unrealized_conversion_cast %pair : vector<2xbf16> to !ptx.reg<bf16x2>
  %rounded_reg = builtin.unrealized_conversion_cast %rounded : bf16 to !ptx.reg<bf16>
  ptx.st shared %smem, %pair_reg : (!ptx.reg<u32>, !ptx.reg<bf16x2>) -> ()
  %row = builtin.unrealized_conversion_cast %smem : !ptx.reg<u32> to !hopper.smem<align 16>
  hopper.stmatrix %row, %pair : (!hopper.smem<align 16>, vector<2xbf16>) -> ()
  ptx.st shared %smem, %rounded_reg : (!ptx.reg<u32>, !ptx.reg<bf16>) -> ()
  ptx.ret
}

// IR:      %reciprocal = arith.divf %one, %quotient fastmath<afn> : f32
// IR:      %pair = hopper.truncf_pair %widened, %x : vector<2xbf16>
// IR:      hopper.stmatrix %row, %pair : (!hopper.smem<align 16>, vector<2xbf16>) -> ()

// CHECK:      %[[SMEM:.*]] = ptx.addr_of smem : !ptx.reg<u32>
// CHECK-NEXT: %[[X:.*]] = ptx.const 1.5 : !ptx.reg<f32>
// CHECK-NEXT: %[[HALF:.*]] = ptx.const 0.5 : !ptx.reg<f32>
// CHECK-NEXT: %[[SUM:.*]] = ptx.add %[[X]], %[[HALF]] : !ptx.reg<f32>
// CHECK-NEXT: %[[DIFFERENCE:.*]] = ptx.sub %[[SUM]], %[[X]] : !ptx.reg<f32>
// CHECK-NEXT: %[[PRODUCT:.*]] = ptx.mul %[[DIFFERENCE]], %[[X]] : !ptx.reg<f32>
// CHECK-NEXT: %[[QUOTIENT:.*]] = ptx.div %[[PRODUCT]], %[[X]] : !ptx.reg<f32>
// CHECK-NEXT: %[[RECIPROCAL:.*]] = ptx.rcp %[[QUOTIENT]] : !ptx.reg<f32>
// CHECK-NEXT: %[[NEGATED:.*]] = ptx.neg %[[RECIPROCAL]] : !ptx.reg<f32>
// CHECK-NEXT: %[[LARGER:.*]] = ptx.max %[[NEGATED]], %[[HALF]] : !ptx.reg<f32>
// CHECK-NEXT: %[[MAGNITUDE:.*]] = ptx.abs %[[LARGER]] : !ptx.reg<f32>
// CHECK-NEXT: %[[POWER:.*]] = ptx.ex2 %[[MAGNITUDE]] : !ptx.reg<f32>
// CHECK-NEXT: %[[TANH:.*]] = ptx.tanh %[[POWER]] : !ptx.reg<f32>
// CHECK-NEXT: %[[FUSED:.*]] = ptx.fma %[[TANH]], %[[X]], %[[HALF]] : !ptx.reg<f32>
// CHECK-NEXT: %[[ROUNDED:.*]] = ptx.cvt rn %[[FUSED]] : (!ptx.reg<f32>) -> !ptx.reg<bf16>
// CHECK-NEXT: %[[WIDENED:.*]] = ptx.cvt %[[ROUNDED]] : (!ptx.reg<bf16>) -> !ptx.reg<f32>
// CHECK-NEXT: %[[PAIR:.*]] = ptx.cvt_pack %[[X]], %[[WIDENED]] : (!ptx.reg<f32>, !ptx.reg<f32>) -> !ptx.reg<bf16x2>
// CHECK-NEXT: ptx.st shared %[[SMEM]], %[[PAIR]] : (!ptx.reg<u32>, !ptx.reg<bf16x2>) -> ()
// CHECK-NEXT: ptx.stmatrix %[[SMEM]], %[[PAIR]] : (!ptx.reg<u32>, !ptx.reg<bf16x2>) -> ()
// CHECK-NEXT: ptx.st shared %[[SMEM]], %[[ROUNDED]] : (!ptx.reg<u32>, !ptx.reg<bf16>) -> ()
// CHECK-NEXT: ptx.ret
// CHECK-NOT:  arith.
// CHECK-NOT:  math.
// CHECK-NOT:  builtin.unrealized_conversion_cast

// PTX:      mov.f32 %f1, 0f3FC00000;
// PTX-NEXT: mov.f32 %f2, 0f3F000000;
// PTX-NEXT: add.f32 %f3, %f1, %f2;
// PTX-NEXT: sub.f32 %f4, %f3, %f1;
// PTX-NEXT: mul.f32 %f5, %f4, %f1;
// PTX-NEXT: div.rn.f32 %f6, %f5, %f1;
// PTX-NEXT: rcp.approx.f32 %f7, %f6;
// PTX-NEXT: neg.f32 %f8, %f7;
// PTX-NEXT: max.f32 %f9, %f8, %f2;
// PTX-NEXT: abs.f32 %f10, %f9;
// PTX-NEXT: ex2.approx.f32 %f11, %f10;
// PTX-NEXT: tanh.approx.f32 %f12, %f11;
// PTX-NEXT: fma.rn.f32 %f13, %f12, %f1, %f2;
// PTX-NEXT: cvt.rn.bf16.f32 %rs1, %f13;
// PTX-NEXT: cvt.f32.bf16 %f14, %rs1;
// PTX-NEXT: cvt.rn.bf16x2.f32 %r{{[0-9]+}}, %f1, %f14;
