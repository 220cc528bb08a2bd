"""fp8 in PyTorch: mmcomp.torch.scaled_mm against float64 and torch._scaled_mm, quantize,
and the fp8 modules, on the interp back end (the GPU forms: `-m gpu`)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import mmcomp  # noqa: E402
import mmcomp.torch as mt  # noqa: E402
from mmcomp.errors import FusionError  # noqa: E402
from mmcomp.torch.fp8 import GROUP  # noqa: E402


def _relative(got, want) -> float:
    return float((got.detach().double() - want).abs().max() / want.abs().max())


def _operands(m: int, k: int, n: int, seed: int):
    generator = torch.Generator().manual_seed(seed)
    a = torch.randn(m, k, generator=generator).to(torch.float8_e4m3fn)
    b = torch.randn(n, k, generator=generator).to(torch.float8_e5m2).t()  # column-major [K, N]
    return a, b, generator


@pytest.mark.parametrize("mode", ["tensor", "row"])
@pytest.mark.parametrize("out_dtype", [torch.bfloat16, torch.float32])
def test_scaled_mm_matches_float64_and_torch(mode: str, out_dtype):
    m, k, n = 33, 300, 200
    a, b, generator = _operands(m, k, n, seed=7)
    if mode == "tensor":
        scale_a, scale_b = torch.tensor(0.75), torch.tensor(1.25)
    else:
        scale_a = torch.rand(m, 1, generator=generator) + 0.5
        scale_b = torch.rand(1, n, generator=generator) + 0.5
    bias = torch.randn(n, generator=generator).to(torch.bfloat16)
    got = mt.scaled_mm(a, b, scale_a, scale_b, bias=bias, out_dtype=out_dtype, backend="interp")
    assert got.shape == (m, n) and got.dtype == out_dtype
    want = (a.double() * scale_a.double()) @ (b.double() * scale_b.double()) + bias.double()
    bound = 1e-6 if out_dtype == torch.float32 else 4e-3
    assert _relative(got, want) <= bound
    theirs = torch._scaled_mm(a, b, scale_a, scale_b, bias=bias, out_dtype=out_dtype)
    assert _relative(got, theirs.double()) <= 8e-3


def test_scaled_mm_under_torch_compile():
    a, b, _ = _operands(16, 128, 64, seed=1)
    scale_a, scale_b = torch.tensor(0.5), torch.tensor(2.0)

    def run(a, b, scale_a, scale_b):
        return mt.scaled_mm(a, b, scale_a, scale_b, backend="interp") * 2

    compiled = torch.compile(run, fullgraph=True)
    assert torch.equal(compiled(a, b, scale_a, scale_b), run(a, b, scale_a, scale_b))


def test_scaled_mm_refusals():
    a, b, _ = _operands(16, 128, 64, seed=2)
    one = torch.tensor(1.0)
    with pytest.raises(FusionError, match="argument 'b': expected a column-major"):
        mt.scaled_mm(a, b.contiguous(), one, one, backend="interp")
    with pytest.raises(FusionError, match=r"expected shapes \[\] and \[\] \(per tensor\)"):
        mt.scaled_mm(a, b, torch.ones(16), torch.ones(64), backend="interp")
    with pytest.raises(FusionError, match="argument 'scale_a': expected float32"):
        mt.scaled_mm(a, b, one.double(), one, backend="interp")
    with pytest.raises(FusionError, match="argument 'out_dtype'"):
        mt.scaled_mm(a, b, one, one, out_dtype=torch.float8_e4m3fn, backend="interp")


@pytest.mark.parametrize("group", [GROUP, None])
def test_quantize_is_fusion_quantize(group):
    import numpy as np

    x = torch.randn(5, 300, dtype=torch.float32) * 3
    q, scale = mt.quantize(x, group=group)
    f = mmcomp.Fusion("q")
    a = f.input("a", [5, 64], "f32")
    w = f.input("w", [300, 64], "f32")
    qv, sv = f.quantize(f.linear(a, w), group=group)
    f.output(qv)
    f.output(sv)
    # the reference's quantization of the same values (a linear by the identity-like rows)
    a_np = np.eye(5, 64, dtype=np.float32)
    w_np = np.zeros((300, 64), np.float32)
    w_np[:, :5] = x.numpy().T
    want_q, want_scale = mmcomp.reference(f, a_np, w_np)
    assert np.array_equal(q.view(torch.uint8).numpy(), want_q.view(np.uint8))
    np.testing.assert_allclose(scale.numpy(), want_scale, rtol=1e-7)


def _mlp(hidden: int, intermediate: int):
    class MLP(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.gate_proj = torch.nn.Linear(hidden, intermediate, bias=False)
            self.up_proj = torch.nn.Linear(hidden, intermediate, bias=False)
            self.down_proj = torch.nn.Linear(intermediate, hidden, bias=False)
            self.act_fn = torch.nn.SiLU()

    torch.manual_seed(0)
    return MLP().to(torch.bfloat16)


def _mlp64(mlp, x):
    xd = x.double()
    gate = torch.nn.functional.silu(xd @ mlp.gate_proj.weight.double().t())
    return (gate * (xd @ mlp.up_proj.weight.double().t())) @ mlp.down_proj.weight.double().t()


def test_fp8_linear_row_scaling():
    torch.manual_seed(0)
    linear = torch.nn.Linear(256, 192).to(torch.bfloat16)
    module = mt.FusedLinear.fp8(linear, "silu", backend="interp")
    x = torch.randn(3, 10, 256, dtype=torch.bfloat16)
    with torch.no_grad():
        got = module(x)
        want = torch.nn.functional.silu(
            x.double() @ linear.weight.double().t() + linear.bias.double()
        )
    assert got.shape == (3, 10, 192) and got.dtype == torch.bfloat16
    assert _relative(got, want) <= 6e-2  # e4m3 operands: 2^-4 relative per element


def test_fp8_gated_mlp_row_scaling_and_compile():
    mlp = _mlp(256, 384)
    interp = {"backend": "interp"}
    module = mt.GatedMLP.fp8(mlp, scaling="row", gate_up_schedule=interp, down_schedule=interp)
    x = torch.randn(2, 9, 256, dtype=torch.bfloat16)
    with torch.no_grad():
        got = module(x)
        compiled = torch.compile(module, fullgraph=True)(x)
    assert _relative(got, _mlp64(mlp, x)) <= 8e-2
    assert torch.equal(compiled, got)


def test_fp8_gated_mlp_block_scaling_quantizes_h_in_the_gate_up_kernel():
    """The block-scaled module's gate/up fusion writes h as fp8 with its 1 x 128 group
    scales, which the down fusion reads as a and block-wise scale_a (the two fusions run
    through the reference: block-wise contractions are evaluated there)."""
    mlp = _mlp(256, 384)
    interp = {"backend": "interp"}
    module = mt.GatedMLP.fp8(mlp, scaling="block", gate_up_schedule=interp, down_schedule=interp)
    gate_up, down = module.fusion(), module.down.fusion()
    assert [value.dtype for value in gate_up.outputs] == ["f8e4m3", "f32"]
    assert [value.dtype for value in down.inputs[:1]] == ["f8e4m3"]
    # at 12 rows (the reference binds block-wise scales of static fusions)
    gate_up = mmcomp.parse(str(gate_up).replace("<?x", "<12x"))
    down = mmcomp.parse(str(down).replace("<?x", "<12x"))
    x = torch.randn(12, 256, dtype=torch.bfloat16)
    q, scale = mt.quantize(x)
    arrays = [
        t.view(torch.uint8).numpy().view(mmcomp.frontend.builder.numpy_dtype("f8e4m3"))
        if t.dtype == torch.float8_e4m3fn
        else t.numpy()
        for t in (
            q,
            module.gate_weight,
            module.gate_scale,
            module.up_weight,
            module.up_scale,
            scale,
        )
    ]
    h_q, h_scale = mmcomp.reference(gate_up, *arrays)
    assert h_scale.shape == (12, 3)
    down_weight = module.down.weight.view(torch.uint8).numpy()
    (y,) = mmcomp.reference(
        down,
        h_q,
        down_weight.view(mmcomp.frontend.builder.numpy_dtype("f8e4m3")),
        module.down.weight_scale.numpy(),
        h_scale,
    )
    got = torch.from_numpy(y.astype("float32"))
    assert _relative(got, _mlp64(mlp, x)) <= 8e-2
