// RUN: mmcomp-opt %s --split-input-file --verify-diagnostics -p convert-hopper-to-ptx,convert-arith-to-ptx 2>&1 | filecheck %s

// The float forms that convert-arith-to-ptx cannot lower as written, each refused naming
// the op and what it needs. An approximation (math.exp2, math.tanh) lowers only to its
// .approx instruction, so the op must allow one (fastmath<afn>).

hopper.kernel @k() {
  %r = ptx.const 1.5 : !ptx.reg<f32>
  %x = builtin.unrealized_conversion_cast %r : !ptx.reg<f32> to f32
  %y = math.exp2 %x : f32
  ptx.ret
}

// CHECK: convert-arith-to-ptx: math.exp2 lowers to ex2.approx.f32 only, which is an approximation: mark it fastmath<afn>

// -----

// add.f32 without a rounding modifier lets ptxas fuse it with a multiply: the op must allow
// that (fastmath<contract>).

hopper.kernel @k() {
  %r = ptx.const 1.5 : !ptx.reg<f32>
  %x = builtin.unrealized_conversion_cast %r : !ptx.reg<f32> to f32
  %y = arith.addf %x, %x : f32
  ptx.ret
}

// CHECK: convert-arith-to-ptx: arith.addf lowers to add.f32 only, which ptxas may fuse with a multiply or an add: mark it fastmath<contract>

// -----

// An approximate division lowers only as a reciprocal (rcp.approx.f32) of a dividend 1.0.

hopper.kernel @k() {
  %r = ptx.const 1.5 : !ptx.reg<f32>
  %x = builtin.unrealized_conversion_cast %r : !ptx.reg<f32> to f32
  %y = arith.divf %x, %x fastmath<afn> : f32
  ptx.ret
}

// CHECK: convert-arith-to-ptx: an arith.divf marked fastmath<afn> lowers to rcp.approx.f32: its dividend must be an arith.constant 1.0 that nothing else reads

// -----

// The float arithmetic is on f32: an f64 op has no lowering.

hopper.kernel @k() {
  %r = ptx.const 1.5 : !ptx.reg<f64>
  %x = builtin.unrealized_conversion_cast %r : !ptx.reg<f64> to f64
  %y = arith.negf %x : f64
  ptx.ret
}

// CHECK: convert-arith-to-ptx: arith.negf on f64: the float arithmetic lowers on f32 only

// -----

// An op with no ptx instruction of its meaning (math.sin) is named, with its types.

hopper.kernel @k() {
  %r = ptx.const 1.5 : !ptx.reg<f32>
  %x = builtin.unrealized_conversion_cast %r : !ptx.reg<f32> to f32
  %y = math.sin %x : f32
  %y_reg = builtin.unrealized_conversion_cast %y : f32 to !ptx.reg<f32>
  %z = ptx.add %y_reg, %r : !ptx.reg<f32>
  ptx.ret
}

// CHECK: convert-arith-to-ptx: ptx.entry @k: no ptx lowering for math.sin (f32, f32)

// -----

// A rounding lowers from f32 to bf16 or f16 only.

hopper.kernel @k() {
  %r = ptx.const 1.5 : !ptx.reg<f32>
  %x = builtin.unrealized_conversion_cast %r : !ptx.reg<f32> to f32
  %y = arith.truncf %x : f32 to f8E4M3FN
  ptx.ret
}

// CHECK: convert-arith-to-ptx: arith.truncf from f32 to f8E4M3FN: only f32 to bf16 or f16 lowers
