"""mmcomp.torch without a GPU: custom ops and modules on CPU tensors through the interp back
end (every CTA simulated), torch.compile(fullgraph=True), the backward, parameter
sharing, and CPU tensors through the public call. Skipped where torch is not installed.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import cases  # noqa: E402

import mmcomp  # noqa: E402
import mmcomp.torch as mt  # noqa: E402
from mmcomp.errors import FusionError  # noqa: E402

INTERP = {"backend": "interp", "tile": (128, 128, 64)}


def relative_error(got, want) -> float:
    got = got.detach().double()
    want = want.detach().double()
    return float((got - want).abs().max() / want.abs().max())


def bf16(*shape, requires_grad=False):
    return torch.randn(*shape, dtype=torch.bfloat16, requires_grad=requires_grad)


def test_cpu_tensors_through_the_public_call_give_cpu_tensors():
    fusion = cases.silu_mul(96, 80, 64)
    kernel = mmcomp.compile(fusion, **INTERP)
    a, w, t = bf16(96, 64), bf16(80, 64, requires_grad=True), bf16(96, 80)
    y, out = kernel(a, w, t)
    assert isinstance(y, torch.Tensor) and y.dtype == torch.float32
    assert out.dtype == torch.bfloat16 and not out.requires_grad
    want_y = a.double() @ w.detach().double().t()
    assert relative_error(y, want_y) < 1e-5
    assert relative_error(out, torch.nn.functional.silu(want_y) * t.double()) < 1e-2
    target = torch.empty(96, 80, dtype=torch.bfloat16)
    _, written = kernel(a, w, t, out={"out1": target})
    assert written is target and torch.equal(target, out)


def test_bfloat16_round_trips_through_numpy():
    x = bf16(5, 7)
    array = mt.ARRAYS.to_numpy(x)
    assert array.dtype == mmcomp.runtime.BFLOAT16
    assert torch.equal(mt.ARRAYS.from_numpy(array, x), x)
    strided = x.t()
    assert np.array_equal(mt.ARRAYS.to_numpy(strided), array.T)


def test_op_in_eager_and_under_torch_compile_fullgraph():
    fusion = cases.linear(64, 48, 32, bias=True)
    op = mt.op(fusion, **INTERP)
    assert mt.op(fusion, **INTERP) is op  # one registration per fusion and schedule
    a, w, b = bf16(64, 32), bf16(48, 32), bf16(48)
    want = a.double() @ w.double().t() + b.double()
    assert relative_error(op(a, w, b), want) < 1e-2
    compiled = torch.compile(lambda a, w, b: op(a, w, b) * 2, fullgraph=True)
    assert relative_error(compiled(a, w, b), 2 * want) < 1e-2


def test_backward_through_an_op_gives_the_gradients():
    op = mt.op(cases.linear(64, 48, 32), **INTERP)
    a, w = bf16(64, 32), bf16(48, 32, requires_grad=True)
    y = op(a, w)
    assert y.requires_grad
    y.float().sum().backward()
    want = torch.ones(64, 48, dtype=torch.float64).t() @ a.double()
    assert w.grad is not None and relative_error(w.grad, want) < 1e-2
    with torch.no_grad():
        assert not op(bf16(64, 32), w).requires_grad


@pytest.mark.parametrize("activation", ["none", "gelu_tanh", "gelu", "silu", "relu"])
def test_fused_linear_shares_the_parameters_and_matches_the_module(activation):
    linear = torch.nn.Linear(32, 48, dtype=torch.bfloat16)
    fused = mt.FusedLinear(linear, activation, **INTERP)
    assert fused.weight is linear.weight and fused.bias is linear.bias
    x = bf16(2, 40, 32)
    functions = {
        "none": lambda y: y,
        "gelu_tanh": lambda y: torch.nn.functional.gelu(y, approximate="tanh"),
        "gelu": torch.nn.functional.gelu,
        "silu": torch.nn.functional.silu,
        "relu": torch.relu,
    }
    with torch.no_grad():
        got = fused(x)
        want = functions[activation](x.double() @ linear.weight.double().t() + linear.bias.double())
    assert got.shape == (2, 40, 48) and got.dtype == torch.bfloat16
    assert relative_error(got, want) < 1e-2
    kernel = fused._family.kernel()  # one compile of the dynamic fusion serves every M
    with torch.no_grad():
        fewer = fused(x[:1, :7])
    assert fewer.shape == (1, 7, 48) and fused._family.kernel() is kernel
    assert relative_error(fewer, want[:1, :7]) < 1e-2


class MLP(torch.nn.Module):
    """transformers' LlamaMLP, as a stand-in where transformers is absent."""

    def __init__(self, hidden: int, intermediate: int, bias: bool = False):
        super().__init__()
        kw = {"bias": bias, "dtype": torch.bfloat16}
        self.gate_proj = torch.nn.Linear(hidden, intermediate, **kw)
        self.up_proj = torch.nn.Linear(hidden, intermediate, **kw)
        self.down_proj = torch.nn.Linear(intermediate, hidden, **kw)
        self.act_fn = torch.nn.SiLU()

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


@pytest.mark.parametrize("bias", [False, True])
def test_gated_mlp_matches_the_module_eager_and_compiled(bias):
    mlp = MLP(32, 64, bias)
    gated = mt.GatedMLP(mlp, gate_up_schedule=INTERP, down_schedule=INTERP)
    assert gated.gate_weight is mlp.gate_proj.weight and gated.down.weight is mlp.down_proj.weight
    assert gated.activation == "silu"
    x = bf16(3, 16, 32)
    with torch.no_grad():
        want = mlp(x)
        got = gated(x)
        compiled = torch.compile(gated, fullgraph=True)(x)
    assert relative_error(got, want) < 2e-2
    assert torch.equal(compiled, got)


def test_module_misuse_names_the_argument():
    with pytest.raises(
        FusionError, match=r"argument 'linear': expected an nn.Linear, found Conv1d"
    ):
        mt.FusedLinear(torch.nn.Conv1d(1, 1, 1))
    linear = torch.nn.Linear(32, 48, dtype=torch.bfloat16)
    with pytest.raises(FusionError, match=r"argument 'activation': expected one of none, "):
        mt.FusedLinear(linear, "tanh")
    with pytest.raises(FusionError, match=r"linear.weight: expected bfloat16 or float16"):
        mt.FusedLinear(torch.nn.Linear(32, 48))
    with pytest.raises(FusionError, match=r"expected a module with nn.Linear gate_proj"):
        mt.GatedMLP(torch.nn.Linear(32, 48))
    fused = mt.FusedLinear(linear, **INTERP)
    with pytest.raises(FusionError, match=r"input: expected \[\.\.\., 32\], found \[4, 31\]"):
        fused(bf16(4, 31))
    with pytest.raises(FusionError, match=r"input: expected dtype torch.bfloat16, found"):
        fused(torch.randn(4, 32))
    assert mt.activation_name(torch.nn.GELU(approximate="tanh"), "w") == "gelu_tanh"
    assert mt.activation_name("gelu_pytorch_tanh", "w") == "gelu_tanh"


def test_the_torch_fast_path_reads_the_keys_the_full_call_keeps(monkeypatch):
    """The torch frame's fast path builds the flat key `CallState.remember` keeps (stream,
    each tensor's TorchArrays.key fields, the new output's pointer), relaunches a hit (the
    last one compared first), and answers None for anything else. CPU tensors pose as
    tensors of device 0 and the output is one tensor handed back, so nothing runs."""
    frame = mt.TorchArrays()
    streams = [7]
    frame._stream = lambda device: streams[0]
    a, w = bf16(4, 8), bf16(6, 8)
    y = torch.empty(4, 6, dtype=torch.bfloat16)
    monkeypatch.setattr(torch.Tensor, "get_device", lambda self: 0)
    monkeypatch.setattr(torch.Tensor, "new_empty", lambda self, shape, dtype=None: y)
    launched: list[str] = []
    launches = {}
    fast = frame.fast_call(2, [((4, 6), np.dtype(mt.BFLOAT16))], launches)
    assert fast([a, w]) is None
    flat = (7, *frame.key(a), *frame.key(w), y.data_ptr())
    launches[flat] = lambda: launched.append("a w")
    for _ in range(2):  # a lookup, then the last hit
        (out,) = fast([a, w])
        assert out is y
    assert launched == ["a w", "a w"]
    assert fast([a, bf16(6, 8)]) is None  # another weight
    assert fast([a, w.t().contiguous().t()]) is None  # the same shape at other strides
    streams[0] = 8
    assert fast([a, w]) is None  # another stream
    streams[0] = 7
    assert fast([a]) is None and fast([a.float().numpy(), w]) is None
    assert launched == ["a w", "a w"]
