"""mmcomp inside PyTorch programs: compiled fusions as torch custom ops, and modules.

Nothing else in mmcomp imports torch; this module does, at import. It holds:

- `ARRAYS`, how the public call (mmcomp.backend.call) reads torch tensors (data_ptr, shape,
  stride and dtype, with no DLPack: a tensor that requires grad is read as a detached
  view), allocates outputs (`Tensor.new_empty`, so torch's caching allocator, and CUDA-graph
  memory pools, serve them), finds the current stream, and moves CPU tensors to and from
  numpy (bfloat16 through an int16 view);
- `op(fusion, **schedule)`: the fusion compiled and registered as the custom op
  `mmcomp::<name>`, with a fake implementation (output shapes and dtypes), so that it runs
  under `torch.compile(fullgraph=True)` and inside CUDA-graph capture;
- `FusedLinear` (linear + bias + activation) and `GatedMLP` (the Llama/Mistral/Qwen MLP),
  built from torch / transformers modules by sharing their parameters;
- fp8 (mmcomp.torch.fp8): `scaled_mm` (torch._scaled_mm's arguments), `quantize`,
  `Fp8Linear` and `Fp8GatedMLP` (`FusedLinear.fp8`, `GatedMLP.fp8`);
- `grouped_mm` (torch._grouped_mm's arguments) and `MoEExperts` (the experts of a
  transformers mixture-of-experts block on two grouped kernels: docs/grouped.md);
- `ColumnParallelLinear`, `RowParallelLinear` and `TensorParallelGatedMLP`: those modules
  split over a torch.distributed process group (Megatron's tensor parallelism, DTensor
  weights accepted), each rank's part one of them.

The ops and modules are differentiable (mmcomp.torch.autograd): their backward is derived
from their fusions by `mmcomp.grad`, as custom ops with fake implementations; a fusion that
is not differentiated keeps a backward that raises NotImplementedError naming mmcomp.

The modules' kernels take their row count (tokens) at run time: each is one fusion with a
dynamic M (mmcomp.schedule.buckets), so a new token count compiles nothing unless it falls in an M
bucket not used before (at most eight), and `torch.compile(dynamic=True)` traces them once
for every token count.
"""

from mmcomp.runtime.arrays import BFLOAT16
from mmcomp.torch.arrays import ARRAYS, FUSION_DTYPES, NUMPY_DTYPES, TORCH_DTYPES, TorchArrays
from mmcomp.torch.autograd import op
from mmcomp.torch.fp8 import Fp8GatedMLP, Fp8Linear, quantize, quantize_weight, scaled_mm
from mmcomp.torch.grouped import MoEExperts, grouped_mm
from mmcomp.torch.module_parts import ACTIVATIONS, activation_name
from mmcomp.torch.modules import FusedLinear, GatedMLP
from mmcomp.torch.parallel import ColumnParallelLinear, RowParallelLinear, TensorParallelGatedMLP

__all__ = [
    "ACTIVATIONS",
    "ARRAYS",
    "BFLOAT16",
    "ColumnParallelLinear",
    "FUSION_DTYPES",
    "NUMPY_DTYPES",
    "TORCH_DTYPES",
    "Fp8GatedMLP",
    "Fp8Linear",
    "FusedLinear",
    "GatedMLP",
    "MoEExperts",
    "RowParallelLinear",
    "TensorParallelGatedMLP",
    "TorchArrays",
    "activation_name",
    "grouped_mm",
    "op",
    "quantize",
    "quantize_weight",
    "scaled_mm",
]
