// RUN: mmcomp-opt %s -p convert-arith-to-ptx | filecheck %s
// RUN: mmcomp-opt %s -p convert-arith-to-ptx -t ptx | filecheck %s --check-prefix=PTX

// The 64-bit address sums as the lowering writes them: a pointer parameter read as i64
// through a cast, a 32-bit index value zero-extended to i64 (arith.index_cast to i32, then
// arith.extui), its product with an i64 constant below 2^32 one mul.wide.u32 (the constant
// a u32 mov), the sum with the pointer add.u64, and a product added by an addi marked
// ptx.mad one mad.wide.u32. An i64 constant that a plain add reads is a u64 mov. The
// stores read the addresses through casts to !ptx.reg<u64>.

ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.entry @k(arg0 : ptr<role = workspace, name = "partials", shape = [4], dtype = f32>) {
    %ptr = ptx.ld_param arg0 : !ptx.reg<u64>
    %tid = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index
    %base = builtin.unrealized_conversion_cast %ptr : !ptx.reg<u64> to i64
    %narrow = arith.index_cast %tid : index to i32
    %wide = arith.extui %narrow : i32 to i64
    %c4 = arith.constant 4 : i64
    %bytes = arith.muli %wide, %c4 : i64
    %address = arith.addi %base, %bytes : i64
    %c2 = arith.constant 2 : index
    %slab = arith.muli %tid, %c2 : index
    %slab_narrow = arith.index_cast %slab : index to i32
    %slab_wide = arith.extui %slab_narrow : i32 to i64
    %c_slab = arith.constant 131072 : i64
    %slab_bytes = arith.muli %slab_wide, %c_slab : i64
    %slab_address = arith.addi %slab_bytes, %address {ptx.mad} : i64
    %big = arith.constant 8589934592 : i64
    %far = arith.addi %slab_address, %big : i64
    %at = builtin.unrealized_conversion_cast %address : i64 to !ptx.reg<u64>
    %at_slab = builtin.unrealized_conversion_cast %far : i64 to !ptx.reg<u64>
    %zero = ptx.const 0.0 : !ptx.reg<f32>
    ptx.st global %at, %zero : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %at_slab, %zero : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.ret
  }
}

// CHECK:      %[[PTR:.*]] = ptx.ld_param arg0 : !ptx.reg<u64>
// CHECK-NEXT: %[[TID:.*]] = ptx.sreg tid.x : !ptx.reg<u32>
// CHECK-NEXT: %[[C4:.*]] = ptx.const 4 : !ptx.reg<u32>
// CHECK-NEXT: %[[BYTES:.*]] = ptx.mul_wide %[[TID]], %[[C4]] : (!ptx.reg<u32>, !ptx.reg<u32>) -> !ptx.reg<u64>
// CHECK-NEXT: %[[ADDRESS:.*]] = ptx.add %[[PTR]], %[[BYTES]] : !ptx.reg<u64>
// CHECK-NEXT: %[[C2:.*]] = ptx.const 2 : !ptx.reg<u32>
// CHECK-NEXT: %[[SLAB:.*]] = ptx.mul %[[TID]], %[[C2]] : !ptx.reg<u32>
// CHECK-NEXT: %[[CSLAB:.*]] = ptx.const 131072 : !ptx.reg<u32>
// CHECK-NEXT: %[[SLAB_ADDRESS:.*]] = ptx.mad_wide %[[SLAB]], %[[CSLAB]], %[[ADDRESS]] : (!ptx.reg<u32>, !ptx.reg<u32>, !ptx.reg<u64>) -> !ptx.reg<u64>
// CHECK-NEXT: %[[BIG:.*]] = ptx.const 8589934592 : !ptx.reg<u64>
// CHECK-NEXT: %[[FAR:.*]] = ptx.add %[[SLAB_ADDRESS]], %[[BIG]] : !ptx.reg<u64>
// CHECK-NEXT: %[[ZERO:.*]] = ptx.const 0.0 : !ptx.reg<f32>
// CHECK-NEXT: ptx.st global %[[ADDRESS]], %[[ZERO]] : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
// CHECK-NEXT: ptx.st global %[[FAR]], %[[ZERO]] : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
// CHECK-NEXT: ptx.ret
// CHECK-NOT:  arith.
// CHECK-NOT:  builtin.unrealized_conversion_cast

// PTX:      ld.param.u64 [[PTR:%rd[0-9]+]], [arg0];
// PTX-NEXT: mov.u32 [[TID:%r[0-9]+]], %tid.x;
// PTX-NEXT: mov.u32 [[C4:%r[0-9]+]], 4;
// PTX-NEXT: mul.wide.u32 [[BYTES:%rd[0-9]+]], [[TID]], [[C4]];
// PTX-NEXT: add.u64 [[ADDRESS:%rd[0-9]+]], [[PTR]], [[BYTES]];
// PTX:      mad.wide.u32 [[SLAB_ADDRESS:%rd[0-9]+]], {{%r[0-9]+}}, {{%r[0-9]+}}, [[ADDRESS]];
// PTX-NEXT: mov.u64 [[BIG:%rd[0-9]+]], 8589934592;
// PTX-NEXT: add.u64 {{%rd[0-9]+}}, [[SLAB_ADDRESS]], [[BIG]];
