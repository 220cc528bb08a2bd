// REQUIRES: ptxas
// RUN: mmcomp-opt %S/ops.mlir -p convert-hopper-to-ptx -t ptx -o %t.ops.ptx
// RUN: ptxas -arch=sm_90a -v %t.ops.ptx -o %t.ops.cubin 2>&1 | filecheck %s --check-prefix=OPS
// RUN: mmcomp-opt %S/descriptor.mlir -p convert-hopper-to-ptx -t ptx -o %t.desc.ptx
// RUN: ptxas -arch=sm_90a -v %t.desc.ptx -o %t.desc.cubin 2>&1 | filecheck %s --check-prefix=DESC

// The kernels of the other tests in this directory, lowered and assembled for sm_90a:
// ptxas accepts every instruction form, and nothing spills.

// OPS: Compiling entry function 'hopper_ops' for 'sm_90a'
// OPS: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// DESC: Compiling entry function 'descriptors' for 'sm_90a'
// DESC: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
