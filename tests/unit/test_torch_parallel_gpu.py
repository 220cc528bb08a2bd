"""mmcomp.torch's tensor-parallel modules on one GPU: a one-rank NCCL group, so every
collective runs (NCCL's all-reduce, all-gather and reduce-scatter of one rank) around the
cuda kernels. TensorParallelGatedMLP on the block one rank of eight holds of Llama-70B's MLP
(hidden 8192, intermediate 28672 / 8, given as shards), plain, micro-batched (the
all-reduce of one part overlapping the next part's kernels), sequence-parallel and under
torch.compile(fullgraph=True) and in a CUDA graph; ColumnParallelLinear and
RowParallelLinear; all against float64 at 16 and 8192 tokens; and the gradients of a
smaller MLP (plain and sequence-parallel) against float64 autograd.
The runs over several GPUs are examples/tp_mlp.py under torchrun (docs/torch.md).

Skipped without torch, and (gpu marker) without an sm_90 GPU.
"""

from __future__ import annotations

import copy

import pytest

torch = pytest.importorskip("torch")

import mmcomp.torch as mt  # noqa: E402
from mmcomp.errors import FusionError  # noqa: E402

pytestmark = pytest.mark.gpu

TOLERANCE = 2e-2
"""Largest relative error of a bf16 output against float64."""
HIDDEN, BLOCK = 8192, 28672 // 8
"""Llama-70B's hidden width and one rank's block of its intermediate width over 8 GPUs."""
TOKENS = (16, 8192)


def relative_error(got, want) -> float:
    got = got.detach().double()
    assert bool(torch.isfinite(got).all()), "non-finite output (an element left unwritten?)"
    return float((got - want).abs().max() / want.abs().max())


@pytest.fixture(scope="module")
def nccl():
    """A one-rank NCCL group on GPU 0 (the world group while the module's tests run)."""
    import torch.distributed as dist

    device = torch.device("cuda", 0)
    torch.cuda.set_device(device)
    dist.init_process_group("nccl", store=dist.HashStore(), rank=0, world_size=1, device_id=device)
    yield device
    dist.destroy_process_group()


def linear(in_features: int, out_features: int, bias: bool, device):
    module = torch.nn.Linear(in_features, out_features, bias=bias, device=device)
    with torch.no_grad():
        module.weight.normal_(0.0, 0.02)
        if bias:
            module.bias.normal_(0.0, 0.02)
    return module.to(torch.bfloat16)


class MLP(torch.nn.Module):
    def __init__(self, hidden: int, intermediate: int, device, bias: bool = False):
        super().__init__()
        self.gate_proj = linear(hidden, intermediate, bias, device)
        self.up_proj = linear(hidden, intermediate, bias, device)
        self.down_proj = linear(intermediate, hidden, bias, device)
        self.act_fn = torch.nn.SiLU()


def mlp_reference(mlp, x):
    def apply(module, value):
        y = value @ module.weight.double().t()
        return y if module.bias is None else y + module.bias.double()

    x64 = x.double()
    gated = torch.nn.functional.silu(apply(mlp.gate_proj, x64)) * apply(mlp.up_proj, x64)
    return apply(mlp.down_proj, gated)


@pytest.mark.parametrize(
    "options",
    [{}, {"micro_batches": 2}, {"sequence_parallel": True}],
    ids=["plain", "micro-batched", "sequence-parallel"],
)
def test_gated_mlp_on_a_llama_70b_block(nccl, options):
    mlp = MLP(HIDDEN, BLOCK, nccl)
    tp = mt.TensorParallelGatedMLP(mlp, sharded=True, **options)
    for tokens in TOKENS:
        x = torch.randn(tokens, HIDDEN, device=nccl, dtype=torch.bfloat16)
        with torch.inference_mode():
            got = tp(x)
        assert got.shape == x.shape and got.device == x.device
        assert relative_error(got, mlp_reference(mlp, x)) < TOLERANCE


@pytest.mark.parametrize("micro_batches", [1, 2])
def test_gated_mlp_under_torch_compile_fullgraph(nccl, micro_batches):
    """Dynamo traces the collectives (as functional collectives) with the two ops."""
    mlp = MLP(HIDDEN, BLOCK, nccl)
    tp = mt.TensorParallelGatedMLP(mlp, sharded=True, micro_batches=micro_batches)
    compiled = torch.compile(tp, fullgraph=True, dynamic=True)
    for tokens in TOKENS:
        x = torch.randn(tokens, HIDDEN, device=nccl, dtype=torch.bfloat16)
        with torch.inference_mode():
            got = compiled(x)
        assert relative_error(got, mlp_reference(mlp, x)) < TOLERANCE


@pytest.mark.parametrize("micro_batches", [1, 2])
def test_gated_mlp_under_cuda_graph_capture_and_replay(nccl, micro_batches):
    """The kernels and NCCL's all-reduce captured in one graph; a replay recomputes from
    new values copied into the static input."""
    mlp = MLP(HIDDEN, BLOCK, nccl)
    tp = mt.TensorParallelGatedMLP(mlp, sharded=True, micro_batches=micro_batches)
    static = torch.randn(16, HIDDEN, device=nccl, dtype=torch.bfloat16)
    with torch.inference_mode():
        tp(static)  # kernels compiled and loaded outside the capture
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            replayed = tp(static)
        fresh = torch.randn_like(static)
        static.copy_(fresh)
        graph.replay()
    torch.cuda.synchronize()
    assert relative_error(replayed, mlp_reference(mlp, fresh)) < TOLERANCE


@pytest.mark.parametrize("sequence_parallel", [False, True])
def test_gated_mlp_gradients(nccl, sequence_parallel):
    """Training through the autograd Functions and the cuda back end's trainable kernels:
    x's and every block's gradient against float64 autograd."""
    mlp = MLP(1024, 2816, nccl, bias=True)
    tp = mt.TensorParallelGatedMLP(mlp, sequence_parallel=sequence_parallel)
    x = torch.randn(300, 1024, device=nccl, dtype=torch.bfloat16)
    grad_y = torch.randn_like(x)
    mlp64 = copy.deepcopy(mlp).double()
    x64 = x.double().requires_grad_()
    (mlp_reference(mlp64, x64) * grad_y.double()).sum().backward()
    x = x.clone().requires_grad_()
    (tp(x).float() * grad_y.float()).sum().backward()
    local = tp.local
    pairs = [
        (x.grad, x64.grad),
        (local.gate_weight.grad, mlp64.gate_proj.weight.grad),
        (local.up_bias.grad, mlp64.up_proj.bias.grad),
        (local.down.weight.grad, mlp64.down_proj.weight.grad),
        (tp.down_bias.grad, mlp64.down_proj.bias.grad),
    ]
    for got, want in pairs:
        assert relative_error(got, want) < TOLERANCE


def test_gated_mlp_with_biases_sharded_here(nccl):
    mlp = MLP(1024, 2816, nccl, bias=True)
    tp = mt.TensorParallelGatedMLP(mlp, micro_batches=3)
    x = torch.randn(2, 300, 1024, device=nccl, dtype=torch.bfloat16)
    with torch.inference_mode():
        assert relative_error(tp(x), mlp_reference(mlp, x)) < TOLERANCE


@pytest.mark.parametrize("sequence_parallel", [False, True])
def test_parallel_linears(nccl, sequence_parallel):
    up, down = linear(1024, 4096, True, nccl), linear(4096, 1024, True, nccl)
    options = {"sequence_parallel": sequence_parallel}
    column = mt.ColumnParallelLinear(up, "gelu_tanh", gather_output=True, **options)
    row = mt.RowParallelLinear(down, **options)
    for tokens in TOKENS:
        x = torch.randn(tokens, 1024, device=nccl, dtype=torch.bfloat16)
        with torch.inference_mode():
            hidden = column(x)
            y = row(hidden)
        want = torch.nn.functional.gelu(
            x.double() @ up.weight.double().t() + up.bias.double(), approximate="tanh"
        )
        assert relative_error(hidden, want) < TOLERANCE
        want_y = hidden.double() @ down.weight.double().t() + down.bias.double()
        assert relative_error(y, want_y) < TOLERANCE


def test_nccl_refuses_weights_off_the_gpu(nccl):
    with pytest.raises(FusionError, match=r"the group's backend is NCCL, but the weights are on"):
        mt.ColumnParallelLinear(torch.nn.Linear(64, 64, dtype=torch.bfloat16))
    column = mt.ColumnParallelLinear(torch.nn.Linear(64, 64, dtype=torch.bfloat16), device=nccl)
    with pytest.raises(FusionError, match=r"input: expected a tensor on cuda:0"):
        column(torch.randn(4, 64, dtype=torch.bfloat16))
