// RUN: mmcomp-opt %s -p convert-hopper-to-ptx --split-input-file | filecheck %s

// convert-hopper-to-ptx on the hopper level's container: the kernel becomes a ptx.module
// whose ptx.entry has the kernel's signature, launch data and body. Each parameter read
// becomes the ld.param of its register where it stood, also where nothing reads it (the
// PTX keeps its load); a cast of an array to its u64 register is that register, a cast of
// it to i64 (its address in the address arithmetic) a cast of that register, an extent's
// other reads take its u32 register through a cast to index.
hopper.kernel @k(a : ptr<role = input, name = "a", shape = [64], dtype = f32>, out : ptr<role = output, name = "out0", shape = [64], dtype = f32>, n : u32<name = "m">) reqntid [128] launch<grid = 1, smem = 0> {
  %a = hopper.array_param a : memref<64xf32>
  %out = hopper.array_param out : memref<64xf32>
  %n = hopper.extent_param n : index
  %c1 = arith.constant 1 : index
  %last = arith.subi %n, %c1 : index
  %address = builtin.unrealized_conversion_cast %out : memref<64xf32> to !ptx.reg<u64>
  %wide = builtin.unrealized_conversion_cast %out : memref<64xf32> to i64
  %c4 = arith.constant 4 : i64
  %next = arith.addi %wide, %c4 : i64
  %next_address = builtin.unrealized_conversion_cast %next : i64 to !ptx.reg<u64>
  %value = builtin.unrealized_conversion_cast %last : index to !ptx.reg<u32>
  ptx.st global %address, %value : (!ptx.reg<u64>, !ptx.reg<u32>) -> ()
  ptx.st global %next_address, %value : (!ptx.reg<u64>, !ptx.reg<u32>) -> ()
  ptx.ret
}
// A kernel without dynamic shared memory: the module holds the entry alone.
// CHECK:      ptx.module version 8.0 target sm_90a address_size 64 {
// CHECK-NEXT:   ptx.entry @k(a : ptr<role = input, name = "a", shape = [64], dtype = f32>, out : ptr<role = output, name = "out0", shape = [64], dtype = f32>, n : u32<name = "m">) reqntid [128] launch<grid = 1, smem = 0> {
// CHECK-NEXT:     %{{.*}} = ptx.ld_param a : !ptx.reg<u64>
// CHECK-NEXT:     %[[OUT:.*]] = ptx.ld_param out : !ptx.reg<u64>
// CHECK-NEXT:     %[[N:.*]] = ptx.ld_param n : !ptx.reg<u32>
// CHECK-NEXT:     %[[NI:.*]] = builtin.unrealized_conversion_cast %[[N]] : !ptx.reg<u32> to index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %last = arith.subi %[[NI]], %c1 : index
// CHECK-NEXT:     %wide = builtin.unrealized_conversion_cast %[[OUT]] : !ptx.reg<u64> to i64
// CHECK-NEXT:     %c4 = arith.constant 4 : i64
// CHECK-NEXT:     %next = arith.addi %wide, %c4 : i64
// CHECK-NEXT:     %next_address = builtin.unrealized_conversion_cast %next : i64 to !ptx.reg<u64>
// CHECK-NEXT:     %value = builtin.unrealized_conversion_cast %last : index to !ptx.reg<u32>
// CHECK-NEXT:     ptx.st global %[[OUT]], %value : (!ptx.reg<u64>, !ptx.reg<u32>) -> ()
// CHECK-NEXT:     ptx.st global %next_address, %value : (!ptx.reg<u64>, !ptx.reg<u32>) -> ()
// CHECK-NEXT:     ptx.ret
// CHECK-NEXT:   }
// CHECK-NEXT: }

// -----

// Two kernels side by side: each its own ptx.module, in place, the function beside them
// left alone.
hopper.kernel @first() shared @mmcomp_shared align 1024 {
  %smem = hopper.shared_base mmcomp_shared : !hopper.smem<align 1024>
  ptx.ret
}
func.func @plain() {
  func.return
}
hopper.kernel @second() maxnreg 168 {
  ptx.ret
}
// CHECK:      ptx.module version 8.0 target sm_90a address_size 64 {
// CHECK-NEXT:   ptx.shared @mmcomp_shared align 1024 dynamic
// CHECK-NEXT:   ptx.entry @first() {
// CHECK-NEXT:     %smem = ptx.addr_of mmcomp_shared : !ptx.reg<u32>
// CHECK:          ptx.ret
// CHECK-NEXT:   }
// CHECK-NEXT: }
// CHECK-NEXT: func.func @plain() {
// CHECK-NEXT:   func.return
// CHECK-NEXT: }
// CHECK-NEXT: ptx.module version 8.0 target sm_90a address_size 64 {
// CHECK-NEXT:   ptx.entry @second() maxnreg 168 {
// CHECK-NEXT:     ptx.ret
// CHECK-NEXT:   }
// CHECK-NEXT: }
