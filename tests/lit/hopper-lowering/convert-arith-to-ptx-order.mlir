// RUN: not mmcomp-opt %s -p convert-arith-to-ptx 2>&1 | filecheck %s --check-prefix=ORDER

// The pass runs after convert-hopper-to-ptx: a hopper op still in the entry reads index
// values that this pass would turn into registers, so it is an error naming the pass to
// run first.

ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.entry @early(t : tmap) {
    %t = hopper.tensormap_param t : !hopper.tensormap<256x128xbf16, box 128x64, swizzle 128>
    hopper.tensor_map_prefetch %t : !hopper.tensormap<256x128xbf16, box 128x64, swizzle 128>
    ptx.ret
  }
}

// ORDER: convert-arith-to-ptx: ptx.entry @early still holds hopper.tensormap_param: run convert-hopper-to-ptx first (the hopper ops read the index arithmetic this pass lowers)
