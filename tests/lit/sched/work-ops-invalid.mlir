// RUN: mmcomp-opt %s --verify-diagnostics --split-input-file | filecheck %s

// sched.contract_tile and sched.write_tile check their starts, regions and results.

func.func @starts(%a: memref<300x200xbf16>, %w: memref<500x200xbf16>, %m0: index, %c0: index) {
  %acc = sched.contract_tile (%a, %w) at [m = %m0, n = %m0] k_blocks %c0 to %c0 step %c0 : (memref<300x200xbf16>, memref<500x200xbf16>) -> (tensor<128x128xf32>) {
  ^bb0(%a_tile: tensor<128x64xbf16>):
    %z = sched.zero_tile : tensor<128x128xf32>
    sched.yield %z : tensor<128x128xf32>
  }
  func.return
}
// CHECK: sched.contract_tile: 1 block arguments for 2 inputs; one tile per input

// -----

func.func @yields(%a: memref<300x200xbf16>, %m0: index, %c0: index) {
  %acc = sched.contract_tile (%a) at [m = %m0] k_blocks %c0 to %c0 step %c0 : (memref<300x200xbf16>) -> (tensor<128x128xf32>) {
  ^bb0(%a_tile: tensor<128x64xbf16>):
    %z = sched.zero_tile : tensor<64x128xf32>
    sched.yield %z : tensor<64x128xf32>
  }
  func.return
}
// CHECK: sched.contract_tile yields (tensor<64x128xf32>) but its results are (tensor<128x128xf32>)

// -----

func.func @outputs(%acc: tensor<128x128xf32>, %out0: memref<300x500xf32>, %out1: memref<300x500xf32>, %m0: index) {
  sched.write_tile (%acc) ins () outs (%out0, %out1) at [m = %m0] : (tensor<128x128xf32>), (), (memref<300x500xf32>, memref<300x500xf32>) {
  ^bb0(%y: tensor<128x128xf32>):
    sched.yield %y : tensor<128x128xf32>
  }
  func.return
}
// CHECK: sched.write_tile yields 1 tiles for 2 outputs

// -----

func.func @arguments(%acc: tensor<128x128xf32>, %out0: memref<300x500xf32>, %m0: index) {
  sched.write_tile (%acc) ins () outs (%out0) at [m = %m0] : (tensor<128x128xf32>), (), (memref<300x500xf32>) {
  ^bb0(%y: tensor<64x128xf32>):
    sched.yield %y : tensor<64x128xf32>
  }
  func.return
}
// CHECK: sched.write_tile: block argument types (tensor<64x128xf32>) differ from (tensor<128x128xf32>)
