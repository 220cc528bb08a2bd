// RUN: mmcomp-opt %s --parsing-diagnostics --split-input-file | filecheck %s

// Syntax errors in hopper.warp_specialize, reported at the token.

// The custom form names a specialization.
builtin.module {
  func.func @k(%a: memref<256x64xbf16>, %out: memref<256x64xbf16>) {
    hopper.warp_specialize stream_k consumer {
      %c0 = arith.constant 0 : index
    }
    func.return
  }
}
// CHECK: expected a warp specialization (cooperative, pingpong, none), found 'stream_k'

// -----

// The custom form of none has no producer region.
builtin.module {
  func.func @k(%a: memref<256x64xbf16>, %out: memref<256x64xbf16>) {
    hopper.warp_specialize none producer {
      %c0 = arith.constant 0 : index
    } consumer {
      %c0 = arith.constant 0 : index
    }
    func.return
  }
}
// CHECK: specialization none has no producer region
