// RUN: not mmcomp-opt %s -t ptx 2>&1 | filecheck %s

// Hopper ops have no PTX text of their own: emitting them unlowered is a clear error.

ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.entry @k() {
    %t = hopper.id thread.x : !ptx.reg<u32>
    ptx.ret
  }
}
// CHECK: hopper.id has no direct PTX text: run convert-hopper-to-ptx before emitting PTX
