// RUN: not mmcomp-opt %s -t ptx 2>&1 | filecheck %s

// Hopper ops have no PTX text of their own: emitting them unlowered is a clear error.

ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.entry @k() {
    hopper.wgmma_fence
    ptx.ret
  }
}
// CHECK: hopper.wgmma_fence has no direct PTX text: run convert-hopper-to-ptx before emitting PTX
