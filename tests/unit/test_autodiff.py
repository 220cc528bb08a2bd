"""mmcomp.grad: every pointwise rule and the contraction gradients against float64 torch
autograd (on the interp back end), the save and recompute policies' kernels, dynamic token
counts, 3-D inputs, the chain's fused dgrad, bit-identical reruns, and the refusals."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import mmcomp  # noqa: E402
from mmcomp.autodiff import (  # noqa: E402
    COLUMN_SUM,
    KERNEL,
    POINTWISE,
    KernelCache,
    NumpyRunner,
    chain,
    run_backward,
    run_forward,
)
from mmcomp.errors import FusionError  # noqa: E402
from mmcomp.frontend.builder import Fusion  # noqa: E402
from mmcomp.runtime import BFLOAT16  # noqa: E402
from mmcomp.runtime.arrays import as_dtype  # noqa: E402

M, N, K = 7, 48, 32


def relative_error(got: np.ndarray, want: np.ndarray) -> float:
    want = np.asarray(want, np.float64)
    return float(np.abs(np.asarray(got, np.float64) - want).max() / np.abs(want).max())


def gradients(fusion: Fusion, arrays: dict[str, np.ndarray], seed: int = 0, **policy):
    """mmcomp's gradients of every input and the output adjoints used."""
    gradient = mmcomp.grad(fusion, **policy)
    kernels = KernelCache(gradient)
    values = run_forward(gradient, arrays, kernels)
    rng = np.random.default_rng(seed)
    douts = [
        rng.standard_normal(values[name].shape).astype(values[name].dtype)
        for name in gradient.outputs
    ]
    return gradient, values, douts, run_backward(gradient, values, douts, kernels)


def torch_gradients(
    function: Callable[..., object], arrays: dict[str, np.ndarray], douts: list[np.ndarray]
) -> dict[str, np.ndarray]:
    """float64 torch autograd of `function` (of the named inputs; one output or a tuple)."""
    tensors = {
        name: torch.tensor(np.asarray(a, np.float64), requires_grad=True)
        for name, a in arrays.items()
    }
    outputs = function(**tensors)
    outputs = outputs if isinstance(outputs, tuple) else (outputs,)
    torch.autograd.backward(list(outputs), [torch.tensor(np.asarray(d, np.float64)) for d in douts])
    return {name: t.grad.numpy() for name, t in tensors.items() if t.grad is not None}


def inputs(rng: np.random.Generator, m: int = M, extra: dict[str, tuple[int, ...]] | None = None):
    arrays = {
        "x": rng.standard_normal((m, K)).astype(np.float32),
        "w": (rng.standard_normal((N, K)) / np.sqrt(K)).astype(np.float32),
    }
    for name, shape in (extra or {}).items():
        arrays[name] = rng.standard_normal(shape).astype(np.float32)
    return arrays


UNARY = {
    "neg": (lambda f, z: f.neg(z), lambda z: -z),
    "exp": (lambda f, z: f.exp(z), torch.exp),
    "tanh": (lambda f, z: f.tanh(z), torch.tanh),
    "sigmoid": (lambda f, z: f.sigmoid(z), torch.sigmoid),
    "silu": (lambda f, z: f.silu(z), torch.nn.functional.silu),
    "relu": (lambda f, z: f.relu(z), torch.relu),
    "gelu_tanh": (
        lambda f, z: f.gelu(z, "tanh"),
        lambda z: torch.nn.functional.gelu(z, approximate="tanh"),
    ),
    "gelu_erf": (lambda f, z: f.gelu(z, "none"), torch.nn.functional.gelu),
    "cast": (lambda f, z: f.cast(f.cast(z, "bf16"), "f32"), lambda z: z),
}


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("recompute", [False, True])
def test_unary_rule_matches_float64_autograd(name, recompute):
    build, reference = UNARY[name]
    f = Fusion(f"unary_{name}")
    x, w = f.input("x", ["m", K], "f32"), f.input("w", [N, K], "f32")
    b = f.input("b", [N], "f32")
    f.output(build(f, f.linear(x, w, b)))
    arrays = inputs(np.random.default_rng(1), extra={"b": (N,)})
    _, _, douts, got = gradients(f, arrays, recompute=recompute)
    want = torch_gradients(lambda x, w, b: reference(x @ w.T + b), arrays, douts)
    tolerance = 1e-2 if name == "cast" else 1e-5
    for input_name in ("x", "w", "b"):
        assert relative_error(got[input_name], want[input_name]) < tolerance, input_name


BINARY = {
    "add": (lambda f, z, t: z + t, lambda z, t: z + t),
    "sub": (lambda f, z, t: z - t, lambda z, t: z - t),
    "mul": (lambda f, z, t: z * t, lambda z, t: z * t),
    "div": (lambda f, z, t: z / (f.exp(t) + 1.0), lambda z, t: z / (torch.exp(t) + 1)),
    "rdiv": (lambda f, z, t: t / (f.exp(z) + 1.0), lambda z, t: t / (torch.exp(z) + 1)),
    "scalars": (
        lambda f, z, t: (1.0 - z) * 2.0 + t / 3.0 - 0.5,
        lambda z, t: (1 - z) * 2 + t / 3 - 0.5,
    ),
}


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_rule_and_epilogue_input_gradients(name):
    build, reference = BINARY[name]
    f = Fusion(f"binary_{name}")
    x, w = f.input("x", ["m", K], "f32"), f.input("w", [N, K], "f32")
    t = f.input("t", ["m", N], "f32")
    f.output(build(f, f.linear(x, w), t))
    arrays = inputs(np.random.default_rng(2), extra={"t": (M, N)})
    gradient, _, douts, got = gradients(f, arrays)
    want = torch_gradients(lambda x, w, t: reference(x @ w.T, t), arrays, douts)
    for input_name in ("x", "w", "t"):
        assert relative_error(got[input_name], want[input_name]) < 1e-5, input_name
    assert set(gradient.gradients) == {"x", "w", "t"}


def test_broadcast_row_and_bf16_bias_gradients_are_column_sums():
    f = Fusion("row")
    x, w = f.input("x", ["m", K], "bf16"), f.input("w", [N, K], "bf16")
    row = f.input("row", [1, N], "f32")
    bias = f.input("bias", [N], "bf16")
    y = f.linear(x, w, bias) * row
    f.output(f.cast(f.tanh(y), "bf16"))
    rng = np.random.default_rng(3)
    arrays = inputs(rng)
    arrays = {
        "x": arrays["x"].astype(BFLOAT16),
        "w": arrays["w"].astype(BFLOAT16),
        "row": rng.standard_normal((1, N)).astype(np.float32),
        "bias": rng.standard_normal(N).astype(BFLOAT16),
    }
    gradient, _, douts, got = gradients(f, arrays)
    want = torch_gradients(
        lambda x, w, row, bias: torch.tanh((x @ w.T + bias) * row), arrays, douts
    )
    assert got["bias"].shape == (N,) and got["bias"].dtype == BFLOAT16
    assert got["row"].shape == (1, N) and got["row"].dtype == np.float32
    for input_name in ("x", "w", "row", "bias"):
        assert relative_error(got[input_name], want[input_name]) < 2e-2, input_name
    names = [step.name for step in gradient.steps]
    assert "row.sum.bias" in names and "row.sum.row" in names


def test_relu_and_exact_gelu_derivatives_at_zero():
    f = Fusion("at_zero")
    x, w = f.input("x", ["m", K], "f32"), f.input("w", [N, K], "f32")
    z = f.linear(x, w)
    f.output(f.relu(z) + f.gelu(z, "none"))
    arrays = inputs(np.random.default_rng(4))
    arrays["x"][:3] = 0.0  # rows whose pre-activation is exactly 0
    _, _, douts, got = gradients(f, arrays)
    want = torch_gradients(
        lambda x, w: torch.relu(x @ w.T) + torch.nn.functional.gelu(x @ w.T), arrays, douts
    )
    assert np.isfinite(got["x"]).all() and np.isfinite(got["w"]).all()
    for input_name in ("x", "w"):
        assert relative_error(got[input_name], want[input_name]) < 1e-5, input_name


def test_matmul_and_horizontal_gradients():
    f = Fusion("two")
    x = f.input("x", ["m", K], "f32")
    b = f.input("b", [K, N], "f32")
    w = f.input("w", [N, K], "f32")
    f.output(f.silu(f.matmul(x, b)) * f.linear(x, w))
    rng = np.random.default_rng(5)
    arrays = {
        "x": rng.standard_normal((M, K)).astype(np.float32),
        "b": rng.standard_normal((K, N)).astype(np.float32) / 6,
        "w": rng.standard_normal((N, K)).astype(np.float32) / 6,
    }
    gradient, _, douts, got = gradients(f, arrays)
    want = torch_gradients(
        lambda x, b, w: torch.nn.functional.silu(x @ b) * (x @ w.T), arrays, douts
    )
    for input_name in ("x", "b", "w"):
        assert relative_error(got[input_name], want[input_name]) < 1e-5, input_name
    dgrad = next(step for step in gradient.steps if step.name == "two.dgrad.x")
    contractions = [
        op.name for op in dgrad.fusion().func.body.block.ops if op.name.startswith("fusion.")
    ]
    assert contractions.count("fusion.matmul") + contractions.count("fusion.linear") == 2


def activation_linear(activation: str, dtype: str = "bf16", rows: object = "m") -> Fusion:
    f = Fusion(f"linear_{activation}")
    x, w = f.input("x", [rows, K], dtype), f.input("w", [N, K], dtype)
    b = f.input("bias", [N], dtype)
    z = f.linear(x, w, b)
    f.output(f.cast(f.gelu(z, "tanh") if activation == "gelu" else z, dtype))
    return f


def test_policies_give_their_kernels():
    saving = mmcomp.grad(activation_linear("gelu"))
    assert saving.saved == ("linear_gelu.saved0",)
    kinds = {step.name: step.kind for step in saving.steps}
    assert kinds == {
        "linear_gelu.epilogue": POINTWISE,
        "linear_gelu.dgrad.x": KERNEL,
        "linear_gelu.wgrad.w": KERNEL,
        "linear_gelu.sum.bias": COLUMN_SUM,
    }
    assert len(saving.forward.outputs) == 2 and saving.forward.outputs[1].dtype == "bf16"
    recomputing = mmcomp.grad(activation_linear("gelu"), recompute=True)
    assert recomputing.saved == () and len(recomputing.forward.outputs) == 1
    assert recomputing.steps[0].kind == KERNEL
    assert set(recomputing.steps[0].inputs) == {"linear_gelu.dout0", "x", "w", "bias"}
    plain = mmcomp.grad(activation_linear("none"))
    assert [step.name for step in plain.steps] == [
        "linear_none.dgrad.x",
        "linear_none.wgrad.w",
        "linear_none.sum.bias",
    ]
    assert plain.steps[0].inputs == ("linear_none.dout0", "w")  # dZ is dY itself
    assert [v.shape for v in plain.steps[1].fusion(300).inputs] == [(300, N), (300, K)]
    wgrad = plain.steps[1].fusion()
    assert [v.dynamic_axes for v in wgrad.inputs] == [(0,), (0,)]
    kernel = mmcomp.compile(wgrad, backend="cuda")  # MN-major A and B, K dynamic
    assert kernel.backend == "cuda" and ".param .u32" in kernel.ptx
    assert kernel.params.split_k == 1 and kernel.report.spills == 0


@pytest.mark.parametrize(("features", "dtype"), [((1, N), "f16"), ((K, 1), "bf16")])
def test_weight_gradient_of_one_input_or_output_feature(features, dtype):
    """x[T, 1] or dZ[T, 1]: the dW kernel reads that operand as one row of T elements (K
    dynamic and contiguous there), compiled once for cuda and right at every token count."""
    inner, outer = features
    f = Fusion("narrow")
    x, w = f.input("x", ["m", inner], dtype), f.input("w", [outer, inner], dtype)
    b = f.input("bias", [outer], dtype)
    f.output(f.cast(f.silu(f.linear(x, w, b)), dtype))
    gradient = mmcomp.grad(f)
    (wgrad,) = [step for step in gradient.steps if step.name == "narrow.wgrad.w"]
    kernel = mmcomp.compile(wgrad.fusion(), backend="cuda")
    assert kernel.report.spills == 0 and kernel.device_kernel.plan.extents == ("k",)
    kernels = KernelCache(gradient)
    rng = np.random.default_rng(43)
    for rows in (0, 1, 7, 300):
        arrays = {
            "x": rng.standard_normal((rows, inner)).astype(as_dtype(dtype)),
            "w": rng.standard_normal((outer, inner)).astype(as_dtype(dtype)),
            "bias": rng.standard_normal(outer).astype(as_dtype(dtype)),
        }
        values = run_forward(gradient, arrays, kernels)
        douts = [rng.standard_normal((rows, outer)).astype(values[gradient.outputs[0]].dtype)]
        got = run_backward(gradient, values, douts, kernels)
        if rows == 0:
            assert not got["w"].astype(np.float32).any() and got["w"].shape == (outer, inner)
            continue
        want = torch_gradients(
            lambda x, w, bias: torch.nn.functional.silu(x @ w.T + bias), arrays, douts
        )
        for name in ("x", "w", "bias"):
            assert relative_error(got[name], want[name]) < 3e-2, (rows, name)


@pytest.mark.parametrize("rows", [1, 7, 300])
def test_dynamic_token_counts_share_one_gradient_and_reruns_are_bit_identical(rows):
    gradient = mmcomp.grad(activation_linear("gelu"))
    kernels = KernelCache(gradient)
    rng = np.random.default_rng(rows)
    arrays = {
        "x": rng.standard_normal((rows, K)).astype(BFLOAT16),
        "w": (rng.standard_normal((N, K)) / 6).astype(BFLOAT16),
        "bias": rng.standard_normal(N).astype(BFLOAT16),
    }
    values = run_forward(gradient, arrays, kernels)
    douts = [rng.standard_normal((rows, N)).astype(BFLOAT16)]
    first = run_backward(gradient, values, douts, kernels)
    again = run_backward(gradient, run_forward(gradient, arrays, kernels), douts, kernels)
    for name in ("x", "w", "bias"):
        assert first[name].tobytes() == again[name].tobytes()
    want = torch_gradients(
        lambda x, w, bias: torch.nn.functional.gelu(x @ w.T + bias, approximate="tanh"),
        arrays,
        douts,
    )
    for name in ("x", "w", "bias"):
        assert relative_error(first[name], want[name]) < 3e-2, name


def test_three_dimensional_inputs():
    f = Fusion("batched")
    x, w = f.input("x", [2, "m", K], "f32"), f.input("w", [N, K], "f32")
    b = f.input("b", [N], "f32")
    f.output(f.silu(f.linear(x, w, b)))
    arrays = inputs(np.random.default_rng(6), extra={"b": (N,)})
    arrays["x"] = np.random.default_rng(7).standard_normal((2, 5, K)).astype(np.float32)
    _, _, douts, got = gradients(f, arrays)
    want = torch_gradients(lambda x, w, b: torch.nn.functional.silu(x @ w.T + b), arrays, douts)
    assert got["x"].shape == (2, 5, K)
    for name in ("x", "w", "b"):
        assert relative_error(got[name], want[name]) < 1e-5, name


def gated_pair(recompute: bool):
    first = Fusion("gated")
    x = first.input("x", ["m", K], "f32")
    wg, wu = first.input("wg", [N, K], "f32"), first.input("wu", [N, K], "f32")
    first.output(first.silu(first.linear(x, wg)) * first.linear(x, wu))
    second = Fusion("down")
    h, wd = second.input("h", ["m", N], "f32"), second.input("wd", [K, N], "f32")
    second.output(second.linear(h, wd))
    return chain(
        mmcomp.grad(first, recompute=recompute), mmcomp.grad(second, recompute=recompute), "h"
    )


@pytest.mark.parametrize("recompute", [False, True])
def test_chain_fuses_the_activation_adjoint_into_the_down_dgrad(recompute):
    gradient = gated_pair(recompute)
    fused = gradient.steps[0]
    assert fused.name == "down.dgrad.h+gated.epilogue" and fused.kind == KERNEL
    assert fused.outputs == ("gated.dc0", "gated.dc1")
    contractions = [
        op.name
        for op in fused.fusion().func.body.block.ops
        if op.name in ("fusion.linear", "fusion.matmul")
    ]
    assert len(contractions) == (3 if recompute else 1)
    kernels = KernelCache(gradient)
    rng = np.random.default_rng(8)
    arrays = {
        "x": rng.standard_normal((M, K)).astype(np.float32),
        "wg": (rng.standard_normal((N, K)) / 6).astype(np.float32),
        "wu": (rng.standard_normal((N, K)) / 6).astype(np.float32),
        "wd": (rng.standard_normal((K, N)) / 7).astype(np.float32),
    }
    values = run_forward(gradient, arrays, kernels)
    douts = [rng.standard_normal((M, K)).astype(np.float32)]
    got = run_backward(gradient, values, douts, kernels)
    want = torch_gradients(
        lambda x, wg, wu, wd: (torch.nn.functional.silu(x @ wg.T) * (x @ wu.T)) @ wd.T,
        arrays,
        douts,
    )
    for name in ("x", "wg", "wu", "wd"):
        assert relative_error(got[name], want[name]) < 1e-5, name


def test_wrt_prunes_and_refusals_name_the_problem():
    f = activation_linear("gelu", "f32")
    only_w = mmcomp.grad(f, wrt=["w"])
    assert set(only_w.gradients) == {"w"}
    with pytest.raises(FusionError, match=r"argument 'wrt': expected input names"):
        mmcomp.grad(f, wrt=["nope"])
    fms = Fusion("fms")
    a, b = fms.input("a", [M, 1, K], "f32"), fms.input("b", [1, N, K], "f32")
    fms.output(fms.fused_multiply_sum(a, b, [2]))
    with pytest.raises(FusionError, match=r"fusion.fused_multiply_sum is not differentiated"):
        mmcomp.grad(fms)
    prologue = Fusion("prologue")
    x, w = prologue.input("x", [M, K], "f32"), prologue.input("w", [N, K], "f32")
    prologue.output(prologue.linear(prologue.exp(x), w))
    with pytest.raises(FusionError, match=r"operand 'a': expected an input of the fusion"):
        mmcomp.grad(prologue)
    column = Fusion("column")
    x, w = column.input("x", [M, K], "f32"), column.input("w", [N, K], "f32")
    c = column.input("c", [M, 1], "f32")
    column.output(column.linear(x, w) * c)
    with pytest.raises(FusionError, match=r"the adjoint of a broadcast is a sum"):
        mmcomp.grad(column)
    with pytest.raises(FusionError, match=r"argument 'fusion': expected an mmcomp.Fusion"):
        mmcomp.grad("fusion")  # type: ignore[arg-type]
    grouped = Fusion("grouped")
    x, w = grouped.input("x", ["t", K], "f32"), grouped.input("w", [3, N, K], "f32")
    grouped.output(grouped.grouped_linear(x, w, grouped.input("offsets", [3], "i32")))
    with pytest.raises(FusionError, match=r"fusion.grouped_linear is not differentiated"):
        mmcomp.grad(grouped)


def test_every_pointwise_op_of_the_dialect_has_a_rule():
    from mmcomp.autodiff import RULES
    from mmcomp.dialects import fusion as fd

    pointwise = {
        op
        for op in fd.Fusion.operations
        if issubclass(op, fd.BinaryOp | fd.UnaryOp) or op in (fd.GeluOp, fd.CastOp)
    }
    assert len(pointwise) == 12 and pointwise <= set(RULES)


def test_one_compile_per_kernel_serves_every_token_count():
    gradient = mmcomp.grad(activation_linear("gelu"))
    kernels = KernelCache(gradient)
    rng = np.random.default_rng(40)
    counts = []
    for rows in (1, 7, 300, 64):
        arrays = {
            "x": rng.standard_normal((rows, K)).astype(BFLOAT16),
            "w": (rng.standard_normal((N, K)) / 6).astype(BFLOAT16),
            "bias": rng.standard_normal(N).astype(BFLOAT16),
        }
        values = run_forward(gradient, arrays, kernels)
        douts = [rng.standard_normal((rows, N)).astype(BFLOAT16)]
        found = run_backward(gradient, values, douts, kernels)
        counts.append(kernels.compiles)
        assert found["w"].shape == (N, K) and found["bias"].shape == (N,)
    kernel_steps = [step for step in gradient.steps if step.kind == KERNEL]
    assert counts == [1 + len(kernel_steps)] * 4  # the forward and each backward kernel, once


def test_no_tokens_give_zero_weight_and_bias_gradients():
    gradient = mmcomp.grad(activation_linear("gelu"))
    kernels = KernelCache(gradient)
    rng = np.random.default_rng(42)
    arrays = {
        "x": np.zeros((0, K), BFLOAT16),
        "w": (rng.standard_normal((N, K)) / 6).astype(BFLOAT16),
        "bias": rng.standard_normal(N).astype(BFLOAT16),
    }
    values = run_forward(gradient, arrays, kernels)
    found = run_backward(gradient, values, [np.zeros((0, N), BFLOAT16)], kernels)
    assert found["x"].shape == (0, K)
    assert found["w"].shape == (N, K) and not found["w"].astype(np.float32).any()
    assert found["bias"].shape == (N,) and not found["bias"].astype(np.float32).any()


def test_the_column_sum_is_the_sum_steps_fusion():
    gradient = mmcomp.grad(activation_linear("none"))
    (step,) = [step for step in gradient.steps if step.kind == COLUMN_SUM]
    rng = np.random.default_rng(41)
    dout = rng.standard_normal((300, N)).astype(BFLOAT16)
    values = gradient.run_steps([step], {step.inputs[0]: dout}, NumpyRunner(KernelCache(gradient)))
    got = values[step.outputs[0]]
    fusion = step.fusion()
    assert [v.dynamic_axes for v in fusion.inputs] == [(0,), (0,)]
    (want,) = mmcomp.reference(fusion, dout, np.ones((300, 1), BFLOAT16))
    assert got.dtype == want.dtype and relative_error(got, want) < 1e-2
