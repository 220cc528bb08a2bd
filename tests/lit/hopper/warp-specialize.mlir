// RUN: mmcomp-opt %s | filecheck %s
// RUN: mmcomp-opt %s | mmcomp-opt | filecheck %s

// hopper.warp_specialize prints and parses back: the specialization, then one region per
// role (no producer region without specialization).

builtin.module {
  func.func @specialized(%a: memref<256x64xbf16>) {
    hopper.warp_specialize pingpong producer {
      %c0 = arith.constant 0 : index
      %c2 = arith.constant 2 : index
      %c1 = arith.constant 1 : index
      %c128 = arith.constant 128 : index
      scf.for %i = %c0 to %c2 step %c1 {
        %m0 = arith.muli %i, %c128 : index
        %tile = sched.load_tile %a[%m0, %c0] {hopper.slot = 0 : i64} : memref<256x64xbf16> -> tensor<128x64xbf16>
      }
    } consumer {
      %c0 = arith.constant 0 : index
      %tile = sched.load_tile %a[%c0, %c0] {hopper.slot = 0 : i64} : memref<256x64xbf16> -> tensor<128x64xbf16>
    }
    func.return
  }
  func.func @plain(%a: memref<256x64xbf16>) {
    hopper.warp_specialize none consumer {
      %c0 = arith.constant 0 : index
    } {note = "kept"}
    func.return
  }
}

// CHECK:      hopper.warp_specialize pingpong producer {
// CHECK:        scf.for %i = %c0 to %c2 step %c1 {
// CHECK-NEXT:     %m0 = arith.muli %i, %c128 : index
// CHECK-NEXT:     %tile = sched.load_tile %a[%m0, %c0] {hopper.slot = 0 : i64}
// CHECK-NEXT:   }
// CHECK-NEXT: } consumer {
// CHECK:      hopper.warp_specialize none consumer {
// CHECK-NEXT:   %{{.*}} = arith.constant 0 : index
// CHECK-NEXT: } {note = "kept"}
