"""mmcomp.torch on the GPU: a custom op in eager, under torch.compile(fullgraph=True) and
under CUDA-graph capture and replay; FusedLinear and GatedMLP against their torch modules
(transformers' LlamaMLP where transformers is installed) and a float64 reference.

Skipped without torch, and (gpu marker) without an sm_90 GPU.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import cases  # noqa: E402

import mmcomp.torch as mt  # noqa: E402
from mmcomp.interp.reference import reference  # noqa: E402

pytestmark = pytest.mark.gpu

TOLERANCE = 1e-2
"""Relative error allowed of a bf16 output against float64."""


def relative_error(got, want) -> float:
    got, want = got.detach().double(), want.detach().double()
    assert bool(torch.isfinite(got).all()), "non-finite output (an element left unwritten?)"
    return float((got - want).abs().max() / want.abs().max())


def gpu_inputs(fusion) -> tuple[list[np.ndarray], list]:
    host = cases.inputs_for(fusion)
    return host, [mt.ARRAYS.from_numpy(x, None).cuda() for x in host]


def want_of(fusion, host) -> list:
    return [
        torch.from_numpy(np.asarray(w, np.float64))
        for w in reference(fusion, *host, accumulate=np.float64)
    ]


@pytest.fixture(scope="module")
def gelu_op():
    fusion = cases.gelu_bias(1000, 1000, 1000)
    return fusion, mt.op(fusion, epilogue="registers", split_k=1)


def test_op_eager_and_compiled_fullgraph(gelu_op):
    fusion, op = gelu_op
    host, inputs = gpu_inputs(fusion)
    (want,) = want_of(fusion, host)
    got = op(*inputs)
    torch.cuda.synchronize()
    assert got.is_cuda and got.dtype == torch.bfloat16
    assert relative_error(got.cpu(), want) < TOLERANCE
    compiled = torch.compile(lambda a, w, b: op(a, w, b) + 1, fullgraph=True)
    with torch.no_grad():
        shifted = compiled(*inputs)
    torch.cuda.synchronize()
    assert relative_error(shifted.cpu(), want + 1) < TOLERANCE


def test_op_under_cuda_graph_capture_and_replay(gelu_op):
    fusion, op = gelu_op
    _, inputs = gpu_inputs(fusion)
    op(*inputs)  # warm-up: module loaded
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y = op(*inputs)
    for _ in range(2):
        host, fresh = gpu_inputs(fusion)
        for tensor, value in zip(inputs, fresh, strict=True):
            tensor.copy_(value)
        graph.replay()
        torch.cuda.synchronize()
        (want,) = want_of(fusion, host)
        assert relative_error(y.cpu(), want) < TOLERANCE


ACTIVATIONS = {
    "none": lambda y: y,
    "gelu_tanh": lambda y: torch.nn.functional.gelu(y, approximate="tanh"),
    "gelu": torch.nn.functional.gelu,
    "silu": torch.nn.functional.silu,
    "relu": torch.relu,
}


@pytest.mark.parametrize("activation", list(ACTIVATIONS))
def test_fused_linear_matches_float64_beside_the_module(activation):
    linear = torch.nn.Linear(512, 1024, dtype=torch.bfloat16, device="cuda")
    fused = mt.FusedLinear(linear, activation)
    x = torch.randn(4, 250, 512, dtype=torch.bfloat16, device="cuda")
    function = ACTIVATIONS[activation]
    with torch.no_grad():
        got = fused(x)
        module = function(linear(x).float())
    want = function(x.double() @ linear.weight.double().t() + linear.bias.double())
    assert got.shape == (4, 250, 1024) and got.dtype == torch.bfloat16
    ours, theirs = relative_error(got, want), relative_error(module, want)
    assert ours < TOLERANCE, (ours, theirs)


def test_a_module_relaunches_its_kept_launch_for_a_row_count_it_has_run():
    """The second call at a row count goes straight to the launch kept by the first (the
    freed output's memory, poisoned, is what the next output reuses) with the same values."""
    linear = torch.nn.Linear(512, 1024, dtype=torch.bfloat16, device="cuda")
    fused = mt.FusedLinear(linear, "gelu_tanh")
    x = torch.randn(1000, 512, dtype=torch.bfloat16, device="cuda")
    want = torch.nn.functional.gelu(
        x.double() @ linear.weight.double().t() + linear.bias.double(), approximate="tanh"
    )
    family = fused._family
    with torch.no_grad():
        got = fused(x)
        assert relative_error(got, want) < TOLERANCE
        fast = family._fast[1000]
        hits: list[bool] = []

        def counted(arrays):
            found = fast(arrays)
            hits.append(found is not None)
            return found

        family._fast[1000] = counted
        for _ in range(3):
            got.fill_(float("nan"))
            del got
            got = fused(x)
            assert relative_error(got, want) < TOLERANCE
    assert hits == [True, True, True]


def test_backward_through_a_module_gives_the_weight_gradient():
    linear = torch.nn.Linear(256, 256, dtype=torch.bfloat16, device="cuda")
    fused = mt.FusedLinear(linear, "silu")
    x = torch.randn(128, 256, dtype=torch.bfloat16, device="cuda")
    y = fused(x)
    assert y.requires_grad
    y.float().sum().backward()
    z = x.double() @ linear.weight.detach().double().t() + linear.bias.detach().double()
    sigmoid = torch.sigmoid(z)
    dz = sigmoid * (1 + z * (1 - sigmoid))
    assert linear.weight.grad is not None
    assert relative_error(linear.weight.grad, dz.t() @ x.double()) < TOLERANCE


def llama_mlp(hidden: int, intermediate: int):
    """transformers' LlamaMLP with random weights, or skip where transformers is absent."""
    transformers = pytest.importorskip("transformers")
    from transformers.models.llama.modeling_llama import LlamaMLP

    config = transformers.LlamaConfig(
        hidden_size=hidden, intermediate_size=intermediate, hidden_act="silu"
    )
    mlp = LlamaMLP(config).to(device="cuda", dtype=torch.bfloat16)
    with torch.no_grad():
        for parameter in mlp.parameters():
            parameter.normal_(0.0, 0.02)
    return mlp


def mlp_reference(mlp, x):
    x = x.double()
    gate = x @ mlp.gate_proj.weight.double().t()
    up = x @ mlp.up_proj.weight.double().t()
    return (torch.nn.functional.silu(gate) * up) @ mlp.down_proj.weight.double().t()


def test_gated_mlp_from_llama_mlp_eager_compiled_and_graphed():
    mlp = llama_mlp(1024, 2816)
    gated = mt.GatedMLP(mlp)
    assert gated.gate_weight is mlp.gate_proj.weight
    assert gated.up_weight is mlp.up_proj.weight and gated.down.weight is mlp.down_proj.weight
    x = torch.randn(2, 500, 1024, dtype=torch.bfloat16, device="cuda")
    want = mlp_reference(mlp, x)
    with torch.inference_mode():
        theirs = mlp(x)
        ours = gated(x)
        compiled = torch.compile(gated, fullgraph=True)(x)
    torch.cuda.synchronize()
    error, module_error = relative_error(ours, want), relative_error(theirs, want)
    assert error < TOLERANCE, (error, module_error)
    assert relative_error(compiled, want) < TOLERANCE
    static = x.clone()
    with torch.inference_mode():
        gated(static)
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            replayed = gated(static)
        fresh = torch.randn_like(static)
        static.copy_(fresh)
        graph.replay()
    torch.cuda.synchronize()
    assert relative_error(replayed, mlp_reference(mlp, fresh)) < TOLERANCE
