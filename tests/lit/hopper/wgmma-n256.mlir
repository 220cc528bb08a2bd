// DEFINE: %{assemble} = import sys; from mmcomp.arch.ptxas import assemble_checked; r = assemble_checked(sys.stdin.read()); [print(e.entry, 'spills', e.spills) for e in r.resources.values()]
// RUN: mmcomp-opt %s -p convert-hopper-to-ptx -t ptx | filecheck %s
// RUN: mmcomp-opt %s -p convert-hopper-to-ptx -t ptx | python -c "%{assemble}" | filecheck %s --check-prefix=PTXAS

// The widest wgmma, m64n256k16: 128 f32 accumulators per thread, f16 inputs, both operands
// MN-major (transpose bits 1, 1), D = A * B (scale-d false). It assembles without spills.

ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.shared @smem align 1024 size 65536
  ptx.entry @wide(out : ptr) maxnreg 232 reqntid [128] {
    %smem = ptx.addr_of smem : !ptx.reg<u32>
    %smem_tile = builtin.unrealized_conversion_cast %smem : !ptx.reg<u32> to !hopper.smem<align 1024>
    %a = hopper.matrix_descriptor %smem_tile {mn = 0, k = 16} : (!hopper.smem<align 1024>) -> !hopper.matrix_descriptor<mn_major, swizzle 128, mn 64, k 64>
    %b = hopper.matrix_descriptor %smem_tile {mn = 64, k = 0} : (!hopper.smem<align 1024>) -> !hopper.matrix_descriptor<mn_major, swizzle 128, mn 256, k 64>
    %d0 = ptx.const 0.0 : !ptx.reg<f32>
    %d1 = ptx.const 0.0 : !ptx.reg<f32>
    %d2 = ptx.const 0.0 : !ptx.reg<f32>
    %d3 = ptx.const 0.0 : !ptx.reg<f32>
    %d4 = ptx.const 0.0 : !ptx.reg<f32>
    %d5 = ptx.const 0.0 : !ptx.reg<f32>
    %d6 = ptx.const 0.0 : !ptx.reg<f32>
    %d7 = ptx.const 0.0 : !ptx.reg<f32>
    %d8 = ptx.const 0.0 : !ptx.reg<f32>
    %d9 = ptx.const 0.0 : !ptx.reg<f32>
    %d10 = ptx.const 0.0 : !ptx.reg<f32>
    %d11 = ptx.const 0.0 : !ptx.reg<f32>
    %d12 = ptx.const 0.0 : !ptx.reg<f32>
    %d13 = ptx.const 0.0 : !ptx.reg<f32>
    %d14 = ptx.const 0.0 : !ptx.reg<f32>
    %d15 = ptx.const 0.0 : !ptx.reg<f32>
    %d16 = ptx.const 0.0 : !ptx.reg<f32>
    %d17 = ptx.const 0.0 : !ptx.reg<f32>
    %d18 = ptx.const 0.0 : !ptx.reg<f32>
    %d19 = ptx.const 0.0 : !ptx.reg<f32>
    %d20 = ptx.const 0.0 : !ptx.reg<f32>
    %d21 = ptx.const 0.0 : !ptx.reg<f32>
    %d22 = ptx.const 0.0 : !ptx.reg<f32>
    %d23 = ptx.const 0.0 : !ptx.reg<f32>
    %d24 = ptx.const 0.0 : !ptx.reg<f32>
    %d25 = ptx.const 0.0 : !ptx.reg<f32>
    %d26 = ptx.const 0.0 : !ptx.reg<f32>
    %d27 = ptx.const 0.0 : !ptx.reg<f32>
    %d28 = ptx.const 0.0 : !ptx.reg<f32>
    %d29 = ptx.const 0.0 : !ptx.reg<f32>
    %d30 = ptx.const 0.0 : !ptx.reg<f32>
    %d31 = ptx.const 0.0 : !ptx.reg<f32>
    %d32 = ptx.const 0.0 : !ptx.reg<f32>
    %d33 = ptx.const 0.0 : !ptx.reg<f32>
    %d34 = ptx.const 0.0 : !ptx.reg<f32>
    %d35 = ptx.const 0.0 : !ptx.reg<f32>
    %d36 = ptx.const 0.0 : !ptx.reg<f32>
    %d37 = ptx.const 0.0 : !ptx.reg<f32>
    %d38 = ptx.const 0.0 : !ptx.reg<f32>
    %d39 = ptx.const 0.0 : !ptx.reg<f32>
    %d40 = ptx.const 0.0 : !ptx.reg<f32>
    %d41 = ptx.const 0.0 : !ptx.reg<f32>
    %d42 = ptx.const 0.0 : !ptx.reg<f32>
    %d43 = ptx.const 0.0 : !ptx.reg<f32>
    %d44 = ptx.const 0.0 : !ptx.reg<f32>
    %d45 = ptx.const 0.0 : !ptx.reg<f32>
    %d46 = ptx.const 0.0 : !ptx.reg<f32>
    %d47 = ptx.const 0.0 : !ptx.reg<f32>
    %d48 = ptx.const 0.0 : !ptx.reg<f32>
    %d49 = ptx.const 0.0 : !ptx.reg<f32>
    %d50 = ptx.const 0.0 : !ptx.reg<f32>
    %d51 = ptx.const 0.0 : !ptx.reg<f32>
    %d52 = ptx.const 0.0 : !ptx.reg<f32>
    %d53 = ptx.const 0.0 : !ptx.reg<f32>
    %d54 = ptx.const 0.0 : !ptx.reg<f32>
    %d55 = ptx.const 0.0 : !ptx.reg<f32>
    %d56 = ptx.const 0.0 : !ptx.reg<f32>
    %d57 = ptx.const 0.0 : !ptx.reg<f32>
    %d58 = ptx.const 0.0 : !ptx.reg<f32>
    %d59 = ptx.const 0.0 : !ptx.reg<f32>
    %d60 = ptx.const 0.0 : !ptx.reg<f32>
    %d61 = ptx.const 0.0 : !ptx.reg<f32>
    %d62 = ptx.const 0.0 : !ptx.reg<f32>
    %d63 = ptx.const 0.0 : !ptx.reg<f32>
    %d64 = ptx.const 0.0 : !ptx.reg<f32>
    %d65 = ptx.const 0.0 : !ptx.reg<f32>
    %d66 = ptx.const 0.0 : !ptx.reg<f32>
    %d67 = ptx.const 0.0 : !ptx.reg<f32>
    %d68 = ptx.const 0.0 : !ptx.reg<f32>
    %d69 = ptx.const 0.0 : !ptx.reg<f32>
    %d70 = ptx.const 0.0 : !ptx.reg<f32>
    %d71 = ptx.const 0.0 : !ptx.reg<f32>
    %d72 = ptx.const 0.0 : !ptx.reg<f32>
    %d73 = ptx.const 0.0 : !ptx.reg<f32>
    %d74 = ptx.const 0.0 : !ptx.reg<f32>
    %d75 = ptx.const 0.0 : !ptx.reg<f32>
    %d76 = ptx.const 0.0 : !ptx.reg<f32>
    %d77 = ptx.const 0.0 : !ptx.reg<f32>
    %d78 = ptx.const 0.0 : !ptx.reg<f32>
    %d79 = ptx.const 0.0 : !ptx.reg<f32>
    %d80 = ptx.const 0.0 : !ptx.reg<f32>
    %d81 = ptx.const 0.0 : !ptx.reg<f32>
    %d82 = ptx.const 0.0 : !ptx.reg<f32>
    %d83 = ptx.const 0.0 : !ptx.reg<f32>
    %d84 = ptx.const 0.0 : !ptx.reg<f32>
    %d85 = ptx.const 0.0 : !ptx.reg<f32>
    %d86 = ptx.const 0.0 : !ptx.reg<f32>
    %d87 = ptx.const 0.0 : !ptx.reg<f32>
    %d88 = ptx.const 0.0 : !ptx.reg<f32>
    %d89 = ptx.const 0.0 : !ptx.reg<f32>
    %d90 = ptx.const 0.0 : !ptx.reg<f32>
    %d91 = ptx.const 0.0 : !ptx.reg<f32>
    %d92 = ptx.const 0.0 : !ptx.reg<f32>
    %d93 = ptx.const 0.0 : !ptx.reg<f32>
    %d94 = ptx.const 0.0 : !ptx.reg<f32>
    %d95 = ptx.const 0.0 : !ptx.reg<f32>
    %d96 = ptx.const 0.0 : !ptx.reg<f32>
    %d97 = ptx.const 0.0 : !ptx.reg<f32>
    %d98 = ptx.const 0.0 : !ptx.reg<f32>
    %d99 = ptx.const 0.0 : !ptx.reg<f32>
    %d100 = ptx.const 0.0 : !ptx.reg<f32>
    %d101 = ptx.const 0.0 : !ptx.reg<f32>
    %d102 = ptx.const 0.0 : !ptx.reg<f32>
    %d103 = ptx.const 0.0 : !ptx.reg<f32>
    %d104 = ptx.const 0.0 : !ptx.reg<f32>
    %d105 = ptx.const 0.0 : !ptx.reg<f32>
    %d106 = ptx.const 0.0 : !ptx.reg<f32>
    %d107 = ptx.const 0.0 : !ptx.reg<f32>
    %d108 = ptx.const 0.0 : !ptx.reg<f32>
    %d109 = ptx.const 0.0 : !ptx.reg<f32>
    %d110 = ptx.const 0.0 : !ptx.reg<f32>
    %d111 = ptx.const 0.0 : !ptx.reg<f32>
    %d112 = ptx.const 0.0 : !ptx.reg<f32>
    %d113 = ptx.const 0.0 : !ptx.reg<f32>
    %d114 = ptx.const 0.0 : !ptx.reg<f32>
    %d115 = ptx.const 0.0 : !ptx.reg<f32>
    %d116 = ptx.const 0.0 : !ptx.reg<f32>
    %d117 = ptx.const 0.0 : !ptx.reg<f32>
    %d118 = ptx.const 0.0 : !ptx.reg<f32>
    %d119 = ptx.const 0.0 : !ptx.reg<f32>
    %d120 = ptx.const 0.0 : !ptx.reg<f32>
    %d121 = ptx.const 0.0 : !ptx.reg<f32>
    %d122 = ptx.const 0.0 : !ptx.reg<f32>
    %d123 = ptx.const 0.0 : !ptx.reg<f32>
    %d124 = ptx.const 0.0 : !ptx.reg<f32>
    %d125 = ptx.const 0.0 : !ptx.reg<f32>
    %d126 = ptx.const 0.0 : !ptx.reg<f32>
    %d127 = ptx.const 0.0 : !ptx.reg<f32>
    ptx.wgmma_fence
    %acc = hopper.accumulator %d0, %d1, %d2, %d3, %d4, %d5, %d6, %d7, %d8, %d9, %d10, %d11, %d12, %d13, %d14, %d15, %d16, %d17, %d18, %d19, %d20, %d21, %d22, %d23, %d24, %d25, %d26, %d27, %d28, %d29, %d30, %d31, %d32, %d33, %d34, %d35, %d36, %d37, %d38, %d39, %d40, %d41, %d42, %d43, %d44, %d45, %d46, %d47, %d48, %d49, %d50, %d51, %d52, %d53, %d54, %d55, %d56, %d57, %d58, %d59, %d60, %d61, %d62, %d63, %d64, %d65, %d66, %d67, %d68, %d69, %d70, %d71, %d72, %d73, %d74, %d75, %d76, %d77, %d78, %d79, %d80, %d81, %d82, %d83, %d84, %d85, %d86, %d87, %d88, %d89, %d90, %d91, %d92, %d93, %d94, %d95, %d96, %d97, %d98, %d99, %d100, %d101, %d102, %d103, %d104, %d105, %d106, %d107, %d108, %d109, %d110, %d111, %d112, %d113, %d114, %d115, %d116, %d117, %d118, %d119, %d120, %d121, %d122, %d123, %d124, %d125, %d126, %d127 : !hopper.accumulator<64x256xf32>
    %next = hopper.wgmma_mma_async m64n256k16 f16 %a, %b, %acc {a_major = "mn", b_major = "mn", scale_d = 0} : (!hopper.matrix_descriptor<mn_major, swizzle 128, mn 64, k 64>, !hopper.matrix_descriptor<mn_major, swizzle 128, mn 256, k 64>, !hopper.accumulator<64x256xf32>) -> !hopper.accumulator<64x256xf32>
    ptx.wgmma_commit
    ptx.wgmma_wait 0
    %o = ptx.ld_param out : !ptx.reg<u64>
    %g = ptx.cvta global %o {direction = "to"} : !ptx.reg<u64>
    ptx.st global %g, %d0 {offset = 0} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d1 {offset = 4} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d2 {offset = 8} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d3 {offset = 12} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d4 {offset = 16} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d5 {offset = 20} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d6 {offset = 24} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d7 {offset = 28} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d8 {offset = 32} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d9 {offset = 36} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d10 {offset = 40} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d11 {offset = 44} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d12 {offset = 48} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d13 {offset = 52} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d14 {offset = 56} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d15 {offset = 60} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d16 {offset = 64} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d17 {offset = 68} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d18 {offset = 72} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d19 {offset = 76} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d20 {offset = 80} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d21 {offset = 84} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d22 {offset = 88} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d23 {offset = 92} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d24 {offset = 96} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d25 {offset = 100} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d26 {offset = 104} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d27 {offset = 108} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d28 {offset = 112} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d29 {offset = 116} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d30 {offset = 120} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d31 {offset = 124} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d32 {offset = 128} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d33 {offset = 132} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d34 {offset = 136} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d35 {offset = 140} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d36 {offset = 144} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d37 {offset = 148} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d38 {offset = 152} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d39 {offset = 156} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d40 {offset = 160} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d41 {offset = 164} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d42 {offset = 168} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d43 {offset = 172} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d44 {offset = 176} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d45 {offset = 180} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d46 {offset = 184} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d47 {offset = 188} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d48 {offset = 192} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d49 {offset = 196} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d50 {offset = 200} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d51 {offset = 204} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d52 {offset = 208} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d53 {offset = 212} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d54 {offset = 216} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d55 {offset = 220} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d56 {offset = 224} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d57 {offset = 228} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d58 {offset = 232} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d59 {offset = 236} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d60 {offset = 240} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d61 {offset = 244} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d62 {offset = 248} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d63 {offset = 252} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d64 {offset = 256} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d65 {offset = 260} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d66 {offset = 264} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d67 {offset = 268} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d68 {offset = 272} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d69 {offset = 276} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d70 {offset = 280} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d71 {offset = 284} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d72 {offset = 288} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d73 {offset = 292} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d74 {offset = 296} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d75 {offset = 300} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d76 {offset = 304} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d77 {offset = 308} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d78 {offset = 312} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d79 {offset = 316} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d80 {offset = 320} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d81 {offset = 324} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d82 {offset = 328} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d83 {offset = 332} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d84 {offset = 336} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d85 {offset = 340} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d86 {offset = 344} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d87 {offset = 348} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d88 {offset = 352} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d89 {offset = 356} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d90 {offset = 360} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d91 {offset = 364} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d92 {offset = 368} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d93 {offset = 372} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d94 {offset = 376} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d95 {offset = 380} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d96 {offset = 384} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d97 {offset = 388} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d98 {offset = 392} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d99 {offset = 396} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d100 {offset = 400} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d101 {offset = 404} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d102 {offset = 408} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d103 {offset = 412} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d104 {offset = 416} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d105 {offset = 420} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d106 {offset = 424} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d107 {offset = 428} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d108 {offset = 432} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d109 {offset = 436} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d110 {offset = 440} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d111 {offset = 444} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d112 {offset = 448} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d113 {offset = 452} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d114 {offset = 456} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d115 {offset = 460} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d116 {offset = 464} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d117 {offset = 468} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d118 {offset = 472} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d119 {offset = 476} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d120 {offset = 480} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d121 {offset = 484} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d122 {offset = 488} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d123 {offset = 492} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d124 {offset = 496} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d125 {offset = 500} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d126 {offset = 504} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.st global %g, %d127 {offset = 508} : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.ret
  }
}

// The MN-major A (64 x 64, one 128-byte box per 64 rows): k 16 is 16 rows of 128 B = 2048;
// the MN-major B (256 x 64): n 64 is the second 8 KiB box; LBO = 8192, SBO = 1024.
// CHECK-LABEL: .visible .entry wide(
// CHECK: mov.u32 %r2, 2048;
// CHECK: mov.b64 %rd2, 4611686293338849280;
// CHECK: mov.u32 %r8, 8192;
// CHECK: mov.b64 %rd5, 4611686293338849280;
// CHECK: wgmma.fence.sync.aligned;
// CHECK-NEXT: setp.ne.u32 %p1, 0, 0;
// CHECK-NEXT: wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 {{[{]}}%f1, %f2, %f3, %f4, %f5, %f6, %f7, %f8, %f9, %f10, %f11, %f12, %f13, %f14, %f15, %f16, %f17, %f18, %f19, %f20, %f21, %f22, %f23, %f24, %f25, %f26, %f27, %f28, %f29, %f30, %f31, %f32, %f33, %f34, %f35, %f36, %f37, %f38, %f39, %f40, %f41, %f42, %f43, %f44, %f45, %f46, %f47, %f48, %f49, %f50, %f51, %f52, %f53, %f54, %f55, %f56, %f57, %f58, %f59, %f60, %f61, %f62, %f63, %f64, %f65, %f66, %f67, %f68, %f69, %f70, %f71, %f72, %f73, %f74, %f75, %f76, %f77, %f78, %f79, %f80, %f81, %f82, %f83, %f84, %f85, %f86, %f87, %f88, %f89, %f90, %f91, %f92, %f93, %f94, %f95, %f96, %f97, %f98, %f99, %f100, %f101, %f102, %f103, %f104, %f105, %f106, %f107, %f108, %f109, %f110, %f111, %f112, %f113, %f114, %f115, %f116, %f117, %f118, %f119, %f120, %f121, %f122, %f123, %f124, %f125, %f126, %f127, %f128{{[}]}}, %rd3, %rd6, %p1, 1, 1, 1, 1;
// CHECK-NEXT: wgmma.commit_group.sync.aligned;
// CHECK-NEXT: wgmma.wait_group.sync.aligned 0;
// PTXAS: wide spills 0
