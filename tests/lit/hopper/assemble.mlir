// DEFINE: %{assemble} = import sys; from mmcomp.arch.ptxas import assemble_checked; r = assemble_checked(sys.stdin.read()); [print(e.entry, 'spills', e.spills, 'stack', e.stack_frame) for e in r.resources.values()]
// RUN: mmcomp-opt %S/ops.mlir -p convert-hopper-to-ptx,convert-scf-to-ptx,convert-arith-to-ptx -t ptx | python -c "%{assemble}" | filecheck %s --check-prefix=OPS
// RUN: mmcomp-opt %S/descriptor.mlir -p convert-hopper-to-ptx -t ptx | python -c "%{assemble}" | filecheck %s --check-prefix=DESC

// The kernels of the other tests in this directory, lowered and assembled for sm_90a by
// mmcomp.arch.ptxas (ptxas from PATH, CUDA_HOME or the nvidia-cuda-nvcc wheel): ptxas accepts
// every instruction form, and nothing spills.

// OPS: hopper_ops spills 0 stack 0
// DESC: descriptors spills 0 stack 0
