// RUN: mmcomp-opt %s --verify-diagnostics --split-input-file | filecheck %s

// The verifier of hopper.warp_specialize: the regions the specialization requires, and a
// producer region of only mainloop loads (each with its ring slot), index arithmetic and
// loops.

// A store in the producer region: it holds only loads, index arithmetic and loops.
builtin.module {
  func.func @k(%a: memref<256x64xbf16>, %out: memref<256x64xbf16>) {
    hopper.warp_specialize cooperative producer {
      %c0 = arith.constant 0 : index
      %tile = sched.load_tile %a[%c0, %c0] {hopper.slot = 0 : i64} : memref<256x64xbf16> -> tensor<128x64xbf16>
      sched.store_tile %tile, %out[%c0, %c0] : tensor<128x64xbf16>, memref<256x64xbf16>
    } consumer {
      %c0 = arith.constant 0 : index
    }
    func.return
  }
}
// CHECK: hopper.warp_specialize: the producer region holds only mainloop loads, index arithmetic, group lookups and loops, found sched.store_tile

// -----

// A producer load without its ring slot.
builtin.module {
  func.func @k(%a: memref<256x64xbf16>, %out: memref<256x64xbf16>) {
    hopper.warp_specialize cooperative producer {
      %c0 = arith.constant 0 : index
      %tile = sched.load_tile %a[%c0, %c0] : memref<256x64xbf16> -> tensor<128x64xbf16>
    } consumer {
      %c0 = arith.constant 0 : index
    }
    func.return
  }
}
// CHECK: hopper.warp_specialize: a load of the producer region has no hopper.slot

// -----

// Two producer loads into the same slot.
builtin.module {
  func.func @k(%a: memref<256x64xbf16>, %out: memref<256x64xbf16>) {
    hopper.warp_specialize cooperative producer {
      %c0 = arith.constant 0 : index
      %tile = sched.load_tile %a[%c0, %c0] {hopper.slot = 0 : i64} : memref<256x64xbf16> -> tensor<128x64xbf16>
      %again = sched.load_tile %a[%c0, %c0] {hopper.slot = 0 : i64} : memref<256x64xbf16> -> tensor<128x64xbf16>
    } consumer {
      %c0 = arith.constant 0 : index
    }
    func.return
  }
}
// CHECK: hopper.warp_specialize: the producer region's loads repeat a hopper.slot: [0, 0]

// -----

// A producer loop that carries a value: the producer holds no accumulators.
builtin.module {
  func.func @k(%a: memref<256x64xbf16>, %out: memref<256x64xbf16>) {
    hopper.warp_specialize cooperative producer {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %last = scf.for %i = %c0 to %c1 step %c1 iter_args(%x = %c0) -> (index) {
        %tile = sched.load_tile %a[%c0, %c0] {hopper.slot = 0 : i64} : memref<256x64xbf16> -> tensor<128x64xbf16>
        scf.yield %i : index
      }
    } consumer {
      %c0 = arith.constant 0 : index
    }
    func.return
  }
}
// CHECK: hopper.warp_specialize: a loop of the producer region carries values other than its ring position (iter_args); the producer holds no accumulators

// -----

// A producer region that loads nothing.
builtin.module {
  func.func @k(%a: memref<256x64xbf16>, %out: memref<256x64xbf16>) {
    hopper.warp_specialize pingpong producer {
      %c0 = arith.constant 0 : index
    } consumer {
      %c0 = arith.constant 0 : index
    }
    func.return
  }
}
// CHECK: hopper.warp_specialize: the producer region loads nothing

// -----

// A specialized op without a producer region (generic form).
builtin.module {
  func.func @k(%a: memref<256x64xbf16>, %out: memref<256x64xbf16>) {
    "hopper.warp_specialize"() <{specialization = "cooperative"}> ({
    }, {
      %c0 = arith.constant 0 : index
    }) : () -> ()
    func.return
  }
}
// CHECK: hopper.warp_specialize: specialization cooperative needs a producer region of one block

// -----

// A producer region without warp specialization (generic form).
builtin.module {
  func.func @k(%a: memref<256x64xbf16>, %out: memref<256x64xbf16>) {
    "hopper.warp_specialize"() <{specialization = "none"}> ({
      %c0 = arith.constant 0 : index
      %tile = sched.load_tile %a[%c0, %c0] {hopper.slot = 0 : i64} : memref<256x64xbf16> -> tensor<128x64xbf16>
    }, {
      %c0 = arith.constant 0 : index
    }) : () -> ()
    func.return
  }
}
// CHECK: hopper.warp_specialize: specialization none has no producer warpgroup, but the op has a producer region

// -----

// An empty consumer region.
builtin.module {
  func.func @k(%a: memref<256x64xbf16>, %out: memref<256x64xbf16>) {
    hopper.warp_specialize none consumer {
    }
    func.return
  }
}
// CHECK: hopper.warp_specialize: the consumer region is empty

// -----

// An unknown specialization (generic form).
builtin.module {
  func.func @k(%a: memref<256x64xbf16>, %out: memref<256x64xbf16>) {
    "hopper.warp_specialize"() <{specialization = "stream_k"}> ({
    }, {
      %c0 = arith.constant 0 : index
    }) : () -> ()
    func.return
  }
}
// CHECK: hopper.warp_specialize: specialization must be one of cooperative, pingpong, none, found 'stream_k'
