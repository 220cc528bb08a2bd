"""Training through mmcomp.torch on CPU tensors (the interp back end): gradients of x, the
weights and the biases of mmcomp.torch.op, FusedLinear and GatedMLP against float64 torch
autograd of the reference module (within what bf16 torch autograd of the same module
gives), gradcheck, train steps eager and under torch.compile(fullgraph=True), autocast,
bit-identical reruns; and the same on the GPU (gpu marker) for the cuda back end."""

from __future__ import annotations

import copy

import pytest

torch = pytest.importorskip("torch")

import mmcomp  # noqa: E402
import mmcomp.torch as mt  # noqa: E402

INTERP = {"backend": "interp"}
ACTIVATIONS = {
    "none": lambda y: y,
    "gelu_tanh": lambda y: torch.nn.functional.gelu(y, approximate="tanh"),
    "gelu": torch.nn.functional.gelu,
    "silu": torch.nn.functional.silu,
    "relu": torch.relu,
}
FLOOR = 5e-3
"""The smallest error bound: bf16 torch autograd's own error, on these small shapes, is
about 2-4e-3 of the largest gradient element."""


def relative_error(got, want) -> float:
    got, want = got.detach().double(), want.detach().double()
    assert bool(torch.isfinite(got).all())
    return float((got - want).abs().max() / want.abs().max())


class MLP(torch.nn.Module):
    """transformers' LlamaMLP (silu), as a stand-in where transformers is absent."""

    def __init__(self, hidden: int, intermediate: int, bias: bool = False, dtype=torch.bfloat16):
        super().__init__()
        kw = {"bias": bias, "dtype": dtype}
        self.gate_proj = torch.nn.Linear(hidden, intermediate, **kw)
        self.up_proj = torch.nn.Linear(hidden, intermediate, **kw)
        self.down_proj = torch.nn.Linear(intermediate, hidden, **kw)
        self.act_fn = torch.nn.SiLU()

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class Activated(torch.nn.Module):
    """nn.Linear and an activation: the reference of FusedLinear."""

    def __init__(self, linear, activation):
        super().__init__()
        self.linear = linear
        self.activation = activation

    def forward(self, x):
        return ACTIVATIONS[self.activation](self.linear(x))


def gradients_of(module, x, dy, parameters=None):
    """x's gradient and each of `parameters`' (default: the module's), of `module` at x
    with output adjoint dy."""
    parameters = list(module.parameters()) if parameters is None else parameters
    x = x.detach().clone().requires_grad_()
    for parameter in parameters:
        parameter.grad = None
    module(x).backward(dy)
    return [x.grad] + [p.grad.clone() for p in parameters]


def double(module):
    return copy.deepcopy(module).double()


def check_against_float64(fast, reference, x, bound_scale=3.0):
    """fast's gradients against float64 autograd of `reference`; the bound is what bf16
    autograd of `reference` itself gives (times bound_scale, at least FLOOR)."""
    dy = torch.randn(*x.shape[:-1], fast_out(fast), dtype=x.dtype, device=x.device)
    got = gradients_of(fast, x, dy, list(reference.parameters()))
    want = gradients_of(double(reference), x.double(), dy.double())
    bf16 = gradients_of(reference, x, dy)
    for index, (mine, theirs, exact) in enumerate(zip(got, bf16, want, strict=True)):
        bound = max(bound_scale * relative_error(theirs, exact), FLOOR)
        assert mine.dtype == theirs.dtype and mine.shape == theirs.shape, index
        assert relative_error(mine, exact) < bound, (index, relative_error(mine, exact), bound)


def fast_out(module) -> int:
    return module.out_features if isinstance(module, mt.FusedLinear) else module.down.out_features


@pytest.mark.parametrize("activation", sorted(ACTIVATIONS))
@pytest.mark.parametrize("recompute", [False, True])
def test_fused_linear_gradients_match_float64_autograd(activation, recompute):
    torch.manual_seed(0)
    linear = torch.nn.Linear(32, 48, dtype=torch.bfloat16)
    fused = mt.FusedLinear(linear, activation, recompute=recompute, **INTERP)
    reference = Activated(linear, activation)
    for shape in [(1, 32), (7, 32), (2, 5, 32)]:
        check_against_float64(fused, reference, torch.randn(*shape, dtype=torch.bfloat16))
    assert linear.weight.grad is not None and linear.bias.grad is not None


def test_fused_linear_at_300_tokens_without_bias():
    torch.manual_seed(1)
    linear = torch.nn.Linear(64, 40, bias=False, dtype=torch.bfloat16)
    fused = mt.FusedLinear(linear, "silu", **INTERP)
    check_against_float64(
        fused, Activated(linear, "silu"), torch.randn(300, 64, dtype=torch.bfloat16)
    )


@pytest.mark.parametrize(("features", "activation"), [((1, 48), "silu"), ((32, 1), "gelu")])
def test_fused_linear_of_one_input_or_output_feature(features, activation):
    """dW of one column or one row: its [T, 1] operand (x or dZ) is read as one row."""
    torch.manual_seed(12)
    linear = torch.nn.Linear(*features, dtype=torch.bfloat16)
    fused = mt.FusedLinear(linear, activation, **INTERP)
    for shape in [(1, features[0]), (7, features[0]), (300, features[0])]:
        check_against_float64(
            fused, Activated(linear, activation), torch.randn(*shape, dtype=torch.bfloat16)
        )


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("recompute", [False, True])
def test_gated_mlp_gradients_match_float64_autograd(bias, recompute):
    torch.manual_seed(2)
    mlp = MLP(32, 64, bias)
    gated = mt.GatedMLP(mlp, gate_up_schedule=INTERP, down_schedule=INTERP, recompute=recompute)
    steps = [step.name for step in gated._trainable.gradient.steps]
    assert steps[0] == "linear_none.dgrad.x+gated_silu.epilogue"  # dH computes dZg, dZu
    for shape in [(1, 32), (7, 32), (3, 100, 32)]:
        check_against_float64(gated, mlp, torch.randn(*shape, dtype=torch.bfloat16))


@pytest.mark.parametrize("recompute", [False, True])
def test_4096_tokens_through_both_modules(recompute):
    torch.manual_seed(7)
    linear = torch.nn.Linear(32, 48, dtype=torch.bfloat16)
    fused = mt.FusedLinear(linear, "gelu_tanh", recompute=recompute, **INTERP)
    x = torch.randn(4096, 32, dtype=torch.bfloat16)
    check_against_float64(fused, Activated(linear, "gelu_tanh"), x)
    mlp = MLP(32, 64, bias=True)
    gated = mt.GatedMLP(mlp, gate_up_schedule=INTERP, down_schedule=INTERP, recompute=recompute)
    check_against_float64(gated, mlp, x)


def test_the_pointwise_step_in_torch_matches_the_reference_eager_and_compiled():
    import functools

    import numpy as np

    from mmcomp.autodiff import POINTWISE
    from mmcomp.torch.autograd import program, run_program

    f = mmcomp.Fusion("pointwise")
    x, w = f.input("x", ["m", 16], "bf16"), f.input("w", [24, 16], "bf16")
    z = f.linear(x, w)
    f.output(f.cast(f.gelu(z, "none") * 0.5 + f.relu(z) - f.gelu(z, "tanh") / 3.0, "bf16"))
    gradient = mmcomp.grad(f)
    step = gradient.steps[0]
    assert step.kind == POINTWISE
    tensors = [
        torch.randn(9, 24, dtype=torch.bfloat16),  # the output's adjoint
        torch.randn(9, 24, dtype=torch.bfloat16),  # the saved pre-activation
    ]
    tensors[1][0, :4] = 0.0
    fusion = gradient.step_fusion(step, [t.shape for t in tensors])
    code = program(fusion)
    eager = run_program(code, *tensors)
    compiled = torch.compile(functools.partial(run_program, code), fullgraph=True)(*tensors)
    arrays = [mt.ARRAYS.to_numpy(t) for t in tensors]
    want = mmcomp.reference(fusion, *arrays, accumulate=np.float32)
    for mine, fused, theirs in zip(eager, compiled, want, strict=True):
        reference = torch.from_numpy(np.asarray(theirs, np.float64))
        assert relative_error(mine, reference) < 2e-2
        assert relative_error(fused, reference) < 2e-2


def test_op_gradcheck_in_float32():
    f = mmcomp.Fusion("small")
    x, w = f.input("x", ["m", 8], "f32"), f.input("w", [6, 8], "f32")
    b = f.input("b", [6], "f32")
    f.output(f.gelu(f.linear(x, w, b), "none") * f.sigmoid(f.linear(x, w, b)))
    op = mt.op(f, **INTERP)
    inputs = (
        torch.randn(3, 8, requires_grad=True),
        (torch.randn(6, 8) / 3).requires_grad_(),
        torch.randn(6, requires_grad=True),
    )
    with pytest.warns(UserWarning, match="not a double precision"):
        assert torch.autograd.gradcheck(op, inputs, eps=1e-2, atol=2e-2, rtol=2e-2)


def test_fused_linear_gradcheck_in_float32_on_interp():
    linear = torch.nn.Linear(8, 6, dtype=torch.float32)
    fused = mt.FusedLinear(linear, "gelu_tanh", **INTERP)
    x = torch.randn(4, 8, requires_grad=True)
    with pytest.warns(UserWarning, match="not a double precision"):
        assert torch.autograd.gradcheck(
            lambda x, w, b: torch.func.functional_call(fused, {"weight": w, "bias": b}, (x,)),
            (x, linear.weight, linear.bias),
            eps=1e-2,
            atol=2e-2,
            rtol=2e-2,
        )


def train(module, x, target, steps: int, compiled: bool = False):
    """`steps` SGD steps on an MSE loss; the losses. `compiled`: the forward and the loss
    under torch.compile(fullgraph=True) (the backward is its AOTAutograd graph)."""
    optimizer = torch.optim.SGD(module.parameters(), lr=0.5)

    def loss_of(x, target):
        return torch.nn.functional.mse_loss(module(x).float(), target)

    loss_fn = torch.compile(loss_of, fullgraph=True) if compiled else loss_of
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = loss_fn(x, target)
        loss.backward()
        optimizer.step()
        losses.append(float(loss.detach()))
    return losses


@pytest.mark.parametrize("compiled", [False, True])
def test_gated_mlp_train_step_follows_the_module(compiled):
    torch.manual_seed(3)
    mlp = MLP(32, 64)
    gated = mt.GatedMLP(copy.deepcopy(mlp), gate_up_schedule=INTERP, down_schedule=INTERP)
    x = torch.randn(16, 32, dtype=torch.bfloat16)
    target = torch.randn(16, 32)
    want = train(mlp, x, target, 4)
    got = train(gated, x, target, 4, compiled)
    assert got[-1] < got[0]
    for mine, theirs in zip(got, want, strict=True):
        assert abs(mine - theirs) <= 2e-2 * abs(theirs)


def test_fused_linear_compiles_fullgraph_forward_and_backward():
    torch.manual_seed(4)
    linear = torch.nn.Linear(32, 48, dtype=torch.bfloat16)
    fused = mt.FusedLinear(linear, "gelu_tanh", **INTERP)
    x = torch.randn(7, 32, dtype=torch.bfloat16, requires_grad=True)

    def loss(x):
        return fused(x).float().square().sum()

    loss(x).backward()
    eager = [x.grad.clone(), linear.weight.grad.clone(), linear.bias.grad.clone()]
    x.grad, linear.weight.grad, linear.bias.grad = None, None, None
    torch.compile(loss, fullgraph=True)(x).backward()
    for mine, theirs in zip([x.grad, linear.weight.grad, linear.bias.grad], eager, strict=True):
        assert torch.equal(mine, theirs)


def test_a_dynamic_compile_serves_every_token_count():
    torch.manual_seed(8)
    linear = torch.nn.Linear(32, 48, dtype=torch.bfloat16)
    fused = mt.FusedLinear(linear, "silu", **INTERP)
    compiled = torch.compile(
        lambda x: fused(x).float().square().sum(), fullgraph=True, dynamic=True
    )
    for rows in (5, 9, 17):
        x = torch.randn(rows, 32, dtype=torch.bfloat16)
        linear.weight.grad = None
        compiled(x).backward()
        from_compiled = linear.weight.grad.clone()
        linear.weight.grad = None
        fused(x).float().square().sum().backward()
        assert torch.equal(from_compiled, linear.weight.grad)


def test_no_tokens_give_zero_gradients():
    torch.manual_seed(9)
    linear = torch.nn.Linear(32, 48, dtype=torch.bfloat16)
    fused = mt.FusedLinear(linear, "gelu_tanh", **INTERP)
    x = torch.randn(0, 32, dtype=torch.bfloat16, requires_grad=True)
    fused(x).float().sum().backward()
    assert x.grad is not None and x.grad.shape == (0, 32)
    assert linear.weight.grad is not None and not bool(linear.weight.grad.any())
    assert linear.bias.grad is not None and not bool(linear.bias.grad.any())


def test_autocast_casts_the_input_as_nn_linear_does():
    torch.manual_seed(5)
    linear = torch.nn.Linear(32, 48, dtype=torch.bfloat16)
    fused = mt.FusedLinear(linear, "silu", **INTERP)
    x = torch.randn(7, 32, requires_grad=True)  # float32 under autocast
    with torch.autocast("cpu", dtype=torch.bfloat16):
        got = fused(x)
        want = torch.nn.functional.silu(linear(x))
    assert got.dtype == want.dtype == torch.bfloat16
    assert relative_error(got, want) < 2e-2
    got.float().sum().backward()
    assert x.grad is not None and x.grad.dtype == torch.float32
    assert linear.weight.grad is not None and linear.weight.grad.dtype == torch.bfloat16


def test_gradients_are_bit_identical_across_runs():
    torch.manual_seed(6)
    mlp = MLP(32, 64, bias=True)
    gated = mt.GatedMLP(mlp, gate_up_schedule=INTERP, down_schedule=INTERP)
    x = torch.randn(20, 32, dtype=torch.bfloat16)
    dy = torch.randn(20, 32, dtype=torch.bfloat16)
    first = gradients_of(gated, x, dy)
    again = gradients_of(gated, x, dy)
    assert all(torch.equal(a, b) for a, b in zip(first, again, strict=True))


def test_no_grad_runs_the_plain_op_and_unsupported_fusions_keep_the_error():
    f = mmcomp.Fusion("fms")
    a, b = f.input("a", [16, 1, 8], "f32"), f.input("b", [1, 12, 8], "f32")
    f.output(f.fused_multiply_sum(a, b, [2]))
    op = mt.op(f, **INTERP)
    assert op.trainable is None and "is not differentiated" in str(op.reason)
    w = torch.randn(1, 12, 8, requires_grad=True)
    y = op(torch.randn(16, 1, 8), w)
    with pytest.raises(NotImplementedError, match=r"mmcomp op for @fms has no backward"):
        y.sum().backward()
    with torch.no_grad():
        assert not op(torch.randn(16, 1, 8), w).requires_grad


# The cuda back end (gpu marker): the same gradients, token counts up to 4096.


@pytest.mark.gpu
@pytest.mark.parametrize("activation", sorted(ACTIVATIONS))
@pytest.mark.parametrize("recompute", [False, True])
def test_fused_linear_gradients_on_the_gpu(activation, recompute):
    torch.manual_seed(10)
    linear = torch.nn.Linear(256, 512, dtype=torch.bfloat16, device="cuda")
    fused = mt.FusedLinear(linear, activation, recompute=recompute)
    reference = Activated(linear, activation)
    for shape in [(1, 256), (7, 256), (300, 256), (4096, 256), (2, 333, 256)]:
        check_against_float64(
            fused, reference, torch.randn(*shape, dtype=torch.bfloat16, device="cuda")
        )


@pytest.mark.gpu
@pytest.mark.parametrize(("features", "activation"), [((1, 512), "silu"), ((256, 1), "gelu")])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_fused_linear_of_one_input_or_output_feature_on_the_gpu(features, activation, dtype):
    torch.manual_seed(13)
    linear = torch.nn.Linear(*features, dtype=dtype, device="cuda")
    fused = mt.FusedLinear(linear, activation)
    for rows in (1, 7, 300, 4096, 8193):
        x = torch.randn(rows, features[0], dtype=dtype, device="cuda")
        check_against_float64(fused, Activated(linear, activation), x)
    x = torch.randn(0, features[0], dtype=dtype, device="cuda", requires_grad=True)
    linear.weight.grad = None
    fused(x).float().sum().backward()
    assert linear.weight.grad is not None and not bool(linear.weight.grad.any())


@pytest.mark.gpu
@pytest.mark.parametrize("recompute", [False, True])
def test_gated_mlp_gradients_and_determinism_on_the_gpu(recompute):
    torch.manual_seed(11)
    mlp = MLP(512, 1024, dtype=torch.bfloat16).cuda()
    gated = mt.GatedMLP(mlp, recompute=recompute)
    for shape in [(1, 512), (7, 512), (300, 512), (4096, 512), (2, 333, 512)]:
        check_against_float64(gated, mlp, torch.randn(*shape, dtype=torch.bfloat16, device="cuda"))
    x = torch.randn(4096, 512, dtype=torch.bfloat16, device="cuda")
    dy = torch.randn(4096, 512, dtype=torch.bfloat16, device="cuda")
    first = gradients_of(gated, x, dy)
    again = gradients_of(gated, x, dy)
    assert all(torch.equal(a, b) for a, b in zip(first, again, strict=True))


@pytest.mark.gpu
@pytest.mark.parametrize("compiled", [False, True])
def test_gated_mlp_train_loop_on_the_gpu_follows_the_module(compiled):
    torch.manual_seed(12)
    mlp = MLP(512, 1024).cuda()
    gated = mt.GatedMLP(copy.deepcopy(mlp))
    x = torch.randn(2048, 512, dtype=torch.bfloat16, device="cuda")
    target = torch.randn(2048, 512, device="cuda")
    want = train(mlp, x, target, 10)
    got = train(gated, x, target, 10, compiled)
    for mine, theirs in zip(got, want, strict=True):
        assert abs(mine - theirs) <= 2e-2 * abs(theirs)
