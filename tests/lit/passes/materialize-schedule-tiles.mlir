// RUN: mmcomp-opt %s -p materialize-schedule | filecheck %s
// RUN: mmcomp-opt %s | mmcomp-opt | filecheck %s --check-prefix=SYNTAX

// The tile patterns of materialize-schedule on a work unit's tile ops, as its strategy
// patterns write them: sched.contract_tile becomes a zero tile per contraction and the K
// loop over its blocks (k0 = kb * tile_k from the kernel's #sched.params; each input's
// tile loaded at the starts its roles select, an absent axis at 0), sched.write_tile the
// loads of its inputs, a sched.epilogue of its region and a store per output. The new
// index constants join the kernel's, in value order.
func.func @unit(%a: memref<2x300x200xbf16> {fusion.roles = #fusion.roles<[b0, m, k]>},
                %w: memref<500x1x200xbf16> {fusion.roles = #fusion.roles<[n, _, k]>},
                %bias: memref<500xf32> {fusion.roles = #fusion.roles<[n]>},
                %out0: memref<2x300x500xbf16> {fusion.roles = #fusion.roles<[b0, m, n]>, sched.output})
    attributes {sched.params = #sched.params<tile = 128x128x64>} {
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c128 = arith.constant 128 : index
  %cta = "gpu.block_id"() <{dimension = #gpu<dim x>}> : () -> index
  %b0 = arith.remui %cta, %c4 : index
  %m0 = arith.muli %cta, %c128 : index
  %n0 = arith.muli %b0, %c128 : index
  %acc = sched.contract_tile (%a, %w) at [b0 = %b0, m = %m0, n = %n0] k_blocks %c1 to %c4 step %c1 : (memref<2x300x200xbf16>, memref<500x1x200xbf16>) -> (tensor<1x128x128xf32>) {
  ^bb0(%a_tile: tensor<1x128x64xbf16>, %w_tile: tensor<128x1x64xbf16>):
    %y = fusion.mma %a_tile [b0, m, k], %w_tile [n, _, k] -> [b0, m, n] {fusion.roles = #fusion.roles<[b0, m, n]>} : (tensor<1x128x64xbf16>, tensor<128x1x64xbf16>) -> tensor<1x128x128xf32>
    sched.yield %y : tensor<1x128x128xf32>
  }
  sched.write_tile (%acc) ins (%bias) outs (%out0) at [b0 = %b0, m = %m0, n = %n0] : (tensor<1x128x128xf32>), (memref<500xf32>), (memref<2x300x500xbf16>) {
  ^bb0(%y: tensor<1x128x128xf32>, %t: tensor<128xf32>):
    %b = fusion.broadcast %t new_dims [true, true, false] {fusion.roles = #fusion.roles<[b0, m, n]>} : tensor<128xf32> to tensor<1x128x128xf32>
    %s = fusion.add %y, %b {fusion.roles = #fusion.roles<[b0, m, n]>} : tensor<1x128x128xf32>
    %o = fusion.cast %s {fusion.roles = #fusion.roles<[b0, m, n]>} : tensor<1x128x128xf32> to tensor<1x128x128xbf16>
    sched.yield %o : tensor<1x128x128xbf16>
  }
  func.return
}
// CHECK-LABEL: func.func @unit
// CHECK-NEXT:  %c0 = arith.constant 0 : index
// CHECK-NEXT:  %c1 = arith.constant 1 : index
// CHECK-NEXT:  %c4 = arith.constant 4 : index
// CHECK-NEXT:  %c64 = arith.constant 64 : index
// CHECK-NEXT:  %c128 = arith.constant 128 : index
// CHECK:       %n0 = arith.muli %b0, %c128 : index
// CHECK-NEXT:  %zero = sched.zero_tile : tensor<1x128x128xf32>
// CHECK-NEXT:  %acc = scf.for %kb = %c1 to %c4 step %c1 iter_args(%[[ACC:.*]] = %zero) -> (tensor<1x128x128xf32>) {
// CHECK-NEXT:    %k0 = arith.muli %kb, %c64 : index
// CHECK-NEXT:    %a_tile = sched.load_tile %a[%b0, %m0, %k0] : memref<2x300x200xbf16> -> tensor<1x128x64xbf16>
// CHECK-NEXT:    %w_tile = sched.load_tile %w[%n0, %c0, %k0] : memref<500x1x200xbf16> -> tensor<128x1x64xbf16>
// CHECK-NEXT:    %[[NEXT:.*]] = sched.mma %a_tile [b0, m, k], %w_tile [n, _, k], %[[ACC]] [b0, m, n] : tensor<1x128x64xbf16>, tensor<128x1x64xbf16>, tensor<1x128x128xf32>
// CHECK-NEXT:    scf.yield %[[NEXT]] : tensor<1x128x128xf32>
// CHECK-NEXT:  }
// CHECK-NEXT:  %bias_tile = sched.load_tile %bias[%n0] : memref<500xf32> -> tensor<128xf32>
// CHECK-NEXT:  %o = sched.epilogue(%acc, %bias_tile) : (tensor<1x128x128xf32>, tensor<128xf32>) -> tensor<1x128x128xbf16> {
// CHECK-NEXT:  ^bb0(%y: tensor<1x128x128xf32>, %t: tensor<128xf32>):
// CHECK:         sched.yield %{{.*}} : tensor<1x128x128xbf16>
// CHECK-NEXT:  }
// CHECK-NEXT:  sched.store_tile %o, %out0[%b0, %m0, %n0] : tensor<1x128x128xbf16>, memref<2x300x500xbf16>
// CHECK-NEXT:  func.return

// SYNTAX:      %acc = sched.contract_tile (%a, %w) at [b0 = %b0, m = %m0, n = %n0] k_blocks %c1 to %c4 step %c1 : (memref<2x300x200xbf16>, memref<500x1x200xbf16>) -> (tensor<1x128x128xf32>) {
// SYNTAX-NEXT: ^bb0(%a_tile: tensor<1x128x64xbf16>, %w_tile: tensor<128x1x64xbf16>):
// SYNTAX:      sched.write_tile (%acc) ins (%bias) outs (%out0) at [b0 = %b0, m = %m0, n = %n0] : (tensor<1x128x128xf32>), (memref<500xf32>), (memref<2x300x500xbf16>) {
