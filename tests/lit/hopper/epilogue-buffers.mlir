// RUN: mmcomp-opt %s | mmcomp-opt | filecheck %s --check-prefix=IR
// RUN: mmcomp-opt %s -p convert-hopper-to-ptx | filecheck %s --check-prefix=HOPPER
// RUN: mmcomp-opt %s -p convert-hopper-to-ptx,convert-scf-to-ptx,convert-arith-to-ptx -t ptx | filecheck %s --check-prefix=PTX

// The smem epilogue's buffers as typed shared memory: a warpgroup's two buffers an index's
// strides past the base (`hopper.smem_index`), its second buffer an offset from them; the
// TMA store reads a buffer, stmatrix a row address: the buffer itself, or a lane's row of
// it (`hopper.smem_add` of the row's bytes, an index value) and the swizzled chunk's 16
// bytes past the row (`hopper.smem_index`, aligned to 16).
hopper.kernel @k(t : tmap) shared @mmcomp_shared align 1024 {
  %smem = hopper.shared_base mmcomp_shared : !hopper.smem<align 1024>
  %tmap = hopper.tensormap_param t : !hopper.tensormap<256x128xbf16, box 64x64, swizzle 128>
  %wg_reg = hopper.id warpgroup : !ptx.reg<u32>
  %wg = builtin.unrealized_conversion_cast %wg_reg : !ptx.reg<u32> to index
  %bufs = hopper.smem_index %smem[148480 + %wg * 16384] : !hopper.smem<align 1024> -> !hopper.smem<align 1024>
  %buf1 = hopper.smem_offset %bufs[8192] : !hopper.smem<align 1024> -> !hopper.smem<align 1024>
  %lo = arith.constant 1.0 : f32
  %pair = hopper.truncf_pair %lo, %lo : vector<2xbf16>
  hopper.stmatrix %buf1, %pair, %pair, %pair, %pair : (!hopper.smem<align 1024>, vector<2xbf16>, vector<2xbf16>, vector<2xbf16>, vector<2xbf16>) -> ()
  %c128 = arith.constant 128 : index
  %row = hopper.smem_add %buf1[%c128] : !hopper.smem<align 1024> -> !hopper.smem<align 128>
  %c3 = arith.constant 3 : index
  %chunk = hopper.smem_index %row[0 + %c3 * 16] : !hopper.smem<align 128> -> !hopper.smem<align 16>
  hopper.stmatrix %chunk, %pair, %pair, %pair, %pair : (!hopper.smem<align 16>, vector<2xbf16>, vector<2xbf16>, vector<2xbf16>, vector<2xbf16>) -> ()
  ptx.fence proxy_async
  %c0 = arith.constant 0 : index
  hopper.tma_store %buf1 to %tmap[%c0, %c0] : !hopper.tensormap<256x128xbf16, box 64x64, swizzle 128>, !hopper.smem<align 1024>
  ptx.bulk_commit
  ptx.ret
}

// IR:      %[[SMEM:.*]] = hopper.shared_base mmcomp_shared : !hopper.smem<align 1024>
// IR:      %[[WG:.*]] = builtin.unrealized_conversion_cast %{{.*}} : !ptx.reg<u32> to index
// IR-NEXT: %[[BUFS:.*]] = hopper.smem_index %[[SMEM]][148480 + %[[WG]] * 16384] : !hopper.smem<align 1024> -> !hopper.smem<align 1024>
// IR-NEXT: %[[BUF1:.*]] = hopper.smem_offset %[[BUFS]][8192] : !hopper.smem<align 1024> -> !hopper.smem<align 1024>
// IR:      hopper.stmatrix %[[BUF1]], %{{.*}} : (!hopper.smem<align 1024>, vector<2xbf16>, vector<2xbf16>, vector<2xbf16>, vector<2xbf16>) -> ()
// IR:      %[[C128:.*]] = arith.constant 128 : index
// IR-NEXT: %[[ROW:.*]] = hopper.smem_add %[[BUF1]][%[[C128]]] : !hopper.smem<align 1024> -> !hopper.smem<align 128>
// IR-NEXT: %[[C3:.*]] = arith.constant 3 : index
// IR-NEXT: %[[CHUNK:.*]] = hopper.smem_index %[[ROW]][0 + %[[C3]] * 16] : !hopper.smem<align 128> -> !hopper.smem<align 16>
// IR-NEXT: hopper.stmatrix %[[CHUNK]], %{{.*}} : (!hopper.smem<align 16>, vector<2xbf16>, vector<2xbf16>, vector<2xbf16>, vector<2xbf16>) -> ()
// IR:      hopper.tma_store %[[BUF1]] to %{{.*}}[%{{.*}}, %{{.*}}] : !hopper.tensormap<256x128xbf16, box 64x64, swizzle 128>, !hopper.smem<align 1024>

// HOPPER:      %[[BASE:.*]] = ptx.and %{{.*}}, %{{.*}} : !ptx.reg<u32>
// HOPPER:      %[[WG:.*]] = ptx.shr %{{.*}}, %{{.*}} : !ptx.reg<u32>
// HOPPER:      %[[STRIDE:.*]] = ptx.const 16384 : !ptx.reg<u32>
// HOPPER-NEXT: %[[OFF:.*]] = ptx.const 148480 : !ptx.reg<u32>
// HOPPER-NEXT: %[[START:.*]] = ptx.add %[[BASE]], %[[OFF]] : !ptx.reg<u32>
// HOPPER-NEXT: %[[BUFS:.*]] = ptx.mad %[[WG]], %[[STRIDE]], %[[START]] : !ptx.reg<u32>
// HOPPER-NEXT: %[[BOX:.*]] = ptx.const 8192 : !ptx.reg<u32>
// HOPPER-NEXT: %[[BUF1:.*]] = ptx.add %[[BUFS]], %[[BOX]] : !ptx.reg<u32>
// HOPPER:      ptx.stmatrix %[[BUF1]],
// HOPPER:      %[[C128:.*]] = arith.constant 128 : index
// HOPPER-NEXT: %[[BYTES:.*]] = builtin.unrealized_conversion_cast %[[C128]] : index to !ptx.reg<u32>
// HOPPER-NEXT: %[[ROW:.*]] = ptx.add %[[BUF1]], %[[BYTES]] : !ptx.reg<u32>
// HOPPER-NEXT: %[[C3:.*]] = arith.constant 3 : index
// HOPPER-NEXT: %[[AT:.*]] = builtin.unrealized_conversion_cast %[[C3]] : index to !ptx.reg<u32>
// HOPPER-NEXT: %[[SIXTEEN:.*]] = ptx.const 16 : !ptx.reg<u32>
// HOPPER-NEXT: %[[CHUNK:.*]] = ptx.mad %[[AT]], %[[SIXTEEN]], %[[ROW]] : !ptx.reg<u32>
// HOPPER-NEXT: ptx.stmatrix %[[CHUNK]],
// HOPPER:      ptx.tma_store %[[BUF1]],
// HOPPER-NOT:  hopper.

// PTX:      mov.u32 %[[STRIDE:r[0-9]+]], 16384;
// PTX-NEXT: mov.u32 %[[OFF:r[0-9]+]], 148480;
// PTX-NEXT: add.u32 %[[START:r[0-9]+]], %{{r[0-9]+}}, %[[OFF]];
// PTX-NEXT: mad.lo.u32 %[[BUFS:r[0-9]+]], %{{r[0-9]+}}, %[[STRIDE]], %[[START]];
// PTX-NEXT: mov.u32 %[[BOX:r[0-9]+]], 8192;
// PTX-NEXT: add.u32 %[[BUF1:r[0-9]+]], %[[BUFS]], %[[BOX]];
// PTX:      stmatrix.sync.aligned.m8n8.x4.shared.b16 [%[[BUF1]]],
// PTX:      mov.u32 %[[C128:r[0-9]+]], 128;
// PTX-NEXT: add.u32 %[[ROW:r[0-9]+]], %[[BUF1]], %[[C128]];
// PTX-NEXT: mov.u32 %[[C3:r[0-9]+]], 3;
// PTX-NEXT: mov.u32 %[[SIXTEEN:r[0-9]+]], 16;
// PTX-NEXT: mad.lo.u32 %[[CHUNK:r[0-9]+]], %[[C3]], %[[SIXTEEN]], %[[ROW]];
// PTX-NEXT: stmatrix.sync.aligned.m8n8.x4.shared.b16 [%[[CHUNK]]],
// PTX:      cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%{{rd[0-9]+}}, {%{{r[0-9]+}}, %{{r[0-9]+}}}], [%[[BUF1]]];
