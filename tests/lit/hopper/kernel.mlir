// RUN: mmcomp-opt %s | filecheck %s
// RUN: mmcomp-opt %s | mmcomp-opt | filecheck %s
// RUN: mmcomp-opt %s -p convert-hopper-to-ptx | filecheck %s --check-prefix=PTX
// RUN: mmcomp-opt %s -p convert-hopper-to-ptx,convert-arith-to-ptx -t ptx | filecheck %s --check-prefix=TEXT

// The hopper level's kernel: its signature and launch data (as a ptx.entry's), its dynamic
// shared memory, and a body that reads the parameters as typed values: an array as the
// kernel's memref (`?` where a runtime extent sizes it), a runtime extent as an index, a
// tensor map as a !hopper.tensormap. convert-hopper-to-ptx makes it a ptx.module of the
// shared array and a ptx.entry of the same signature, each read an ld.param in its place;
// the casts of a value to its register become the register.
hopper.kernel @lin(arg0 : ptr<role = input, name = "a", shape = [?, 512], dtype = bf16, extents = "m">, arg1 : ptr<role = output, name = "out0", shape = [?, 64], dtype = f32, extents = "m">, arg2 : u32<name = "m">, tmap0 : tmap<arg = 0, dtype = bf16, shape = [?, 512], box = [128, 64], boxes = 1, major = k, axes = [0, 1]>) maxnreg 168 reqntid [384] launch<grid = 0, smem = 99328, persistent = true, grid_function = "lin_launch"> shared @mmcomp_shared align 1024 {
  %smem = hopper.shared_base mmcomp_shared : !hopper.smem<align 1024>
  %t = hopper.tensormap_param tmap0 : !hopper.tensormap<?x512xbf16, box 128x64, swizzle 128>
  %a = hopper.array_param arg0 : memref<?x512xbf16>
  %out = hopper.array_param arg1 : memref<?x64xf32>
  %m = hopper.extent_param arg2 : index
  %c128 = arith.constant 128 : index
  %tiles = arith.ceildivui %m, %c128 : index
  %m_reg = builtin.unrealized_conversion_cast %m : index to !ptx.reg<u32>
  %tiles_reg = builtin.unrealized_conversion_cast %tiles : index to !ptx.reg<u32>
  %out_reg = builtin.unrealized_conversion_cast %out : memref<?x64xf32> to !ptx.reg<u64>
  ptx.st global %out_reg, %m_reg : (!ptx.reg<u64>, !ptx.reg<u32>) -> ()
  ptx.st global %out_reg, %tiles_reg {offset = 4} : (!ptx.reg<u64>, !ptx.reg<u32>) -> ()
  ptx.ret
}

// CHECK:      hopper.kernel @lin(arg0 : ptr<role = input, name = "a", shape = [?, 512], dtype = bf16, extents = "m">, arg1 : ptr<role = output, name = "out0", shape = [?, 64], dtype = f32, extents = "m">, arg2 : u32<name = "m">, tmap0 : tmap<arg = 0, dtype = bf16, shape = [?, 512], box = [128, 64], boxes = 1, major = k, axes = [0, 1]>) maxnreg 168 reqntid [384] launch<grid = 0, smem = 99328, persistent = true, grid_function = "lin_launch"> shared @mmcomp_shared align 1024 {
// CHECK-NEXT:   %smem = hopper.shared_base mmcomp_shared : !hopper.smem<align 1024>
// CHECK-NEXT:   %t = hopper.tensormap_param tmap0 : !hopper.tensormap<?x512xbf16, box 128x64, swizzle 128>
// CHECK-NEXT:   %a = hopper.array_param arg0 : memref<?x512xbf16>
// CHECK-NEXT:   %out = hopper.array_param arg1 : memref<?x64xf32>
// CHECK-NEXT:   %m = hopper.extent_param arg2 : index
// CHECK:        %out_reg = builtin.unrealized_conversion_cast %out : memref<?x64xf32> to !ptx.reg<u64>
// CHECK:        ptx.ret
// CHECK-NEXT: }

// PTX:      ptx.module version 8.0 target sm_90a address_size 64 {
// PTX-NEXT:   ptx.shared @mmcomp_shared align 1024 dynamic
// PTX-NEXT:   ptx.entry @lin(arg0 : ptr<role = input, name = "a", shape = [?, 512], dtype = bf16, extents = "m">, arg1 : ptr<role = output, name = "out0", shape = [?, 64], dtype = f32, extents = "m">, arg2 : u32<name = "m">, tmap0 : tmap<arg = 0, dtype = bf16, shape = [?, 512], box = [128, 64], boxes = 1, major = k, axes = [0, 1]>) maxnreg 168 reqntid [384] launch<grid = 0, smem = 99328, persistent = true, grid_function = "lin_launch"> {
// PTX:          %[[T:.*]] = ptx.cvta param %{{.*}} : !ptx.reg<b64>
// PTX-NEXT:     %[[A:.*]] = ptx.ld_param arg0 : !ptx.reg<u64>
// PTX-NEXT:     %[[OUT:.*]] = ptx.ld_param arg1 : !ptx.reg<u64>
// PTX-NEXT:     %[[M:.*]] = ptx.ld_param arg2 : !ptx.reg<u32>
// PTX-NEXT:     %m = builtin.unrealized_conversion_cast %[[M]] : !ptx.reg<u32> to index
// PTX-NEXT:     %c128 = arith.constant 128 : index
// PTX-NEXT:     %tiles = arith.ceildivui %m, %c128 : index
// PTX-NEXT:     %tiles_reg = builtin.unrealized_conversion_cast %tiles : index to !ptx.reg<u32>
// PTX-NEXT:     ptx.st global %[[OUT]], %[[M]] : (!ptx.reg<u64>, !ptx.reg<u32>) -> ()
// PTX-NEXT:     ptx.st global %[[OUT]], %tiles_reg {offset = 4} : (!ptx.reg<u64>, !ptx.reg<u32>) -> ()
// PTX-NEXT:     ptx.ret
// PTX-NEXT:   }
// PTX-NEXT: }
// PTX-NOT:  hopper.

// TEXT:      .extern .shared .align 1024 .b8 mmcomp_shared[];
// TEXT:      .visible .entry lin(
// TEXT-NEXT:   .param .u64 arg0,
// TEXT-NEXT:   .param .u64 arg1,
// TEXT-NEXT:   .param .u32 arg2,
// TEXT-NEXT:   .param .align 128 .b8 tmap0[128]
// TEXT:      ld.param.u64 %rd{{[0-9]+}}, [arg0];
// TEXT-NEXT: ld.param.u64 %[[OUT:rd[0-9]+]], [arg1];
// TEXT-NEXT: ld.param.u32 %[[M:r[0-9]+]], [arg2];
// TEXT:      st.global.u32 [%[[OUT]]], %[[M]];
