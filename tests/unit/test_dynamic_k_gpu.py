"""A dynamic contraction extent K on the GPU: one compiled weight-gradient kernel (dW =
dZ^T X, both operands MN-major, K the token count; also with one input or output feature,
its [T, 1] operand read as one row) runs at every token count of `TOKENS`, against
float64, outputs poisoned; the compile count stays one. The training modules' backward
kernels compile once for every token count.

Skipped (gpu marker) without an sm_90 GPU.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from test_dynamic import check_outputs, dynamic_inputs
from test_dynamic_k import scaled_weight_gradient, weight_gradient

import mmcomp
import mmcomp.pipeline

pytestmark = pytest.mark.gpu

TOKENS = (0, 1, 7, 129, 8192, 8193)
"""The runtime K every kernel runs at: empty, one row, ragged against the K block, a whole
number of K blocks, one past."""


@pytest.fixture
def pipeline_runs(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> list[int]:
    """Counts the pipeline runs (compiles) from here on, with empty compile caches."""
    import mmcomp.cache

    monkeypatch.setenv("MMCOMP_CACHE_DIR", str(tmp_path))
    mmcomp.cache.clear_memory()
    runs: list[int] = []
    original = mmcomp.pipeline.run_pipeline

    def counted(*args: Any, **kwargs: Any) -> Any:
        runs.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(mmcomp.pipeline, "run_pipeline", counted)
    return runs


@pytest.mark.parametrize(
    "family",
    [
        weight_gradient,
        scaled_weight_gradient,
        lambda rows, columns: weight_gradient(rows, 1, "f16"),  # x of one feature: [T, 1]
        lambda rows, columns: weight_gradient(1, columns),  # dZ of one feature: [T, 1]
    ],
    ids=["weight_gradient", "scaled_weight_gradient", "one_input_feature", "one_output_feature"],
)
def test_one_weight_gradient_kernel_serves_every_token_count(
    family: Any, pipeline_runs: list[int]
) -> None:
    fusion = family(200, 136)
    kernel = mmcomp.compile(fusion)
    assert len(pipeline_runs) == 1
    rng = np.random.default_rng(31)
    for tokens in TOKENS:
        check_outputs(kernel, fusion, dynamic_inputs(fusion, {"k": tokens}, rng), (2e-2, 1e-2))
    assert len(pipeline_runs) == 1


@pytest.mark.parametrize("shape", [(4096, 14336), (14336, 4096)])
def test_llama_weight_gradients_on_device_tensors(
    shape: tuple[int, int], pipeline_runs: list[int]
) -> None:
    import torch

    rows, columns = shape
    kernel = mmcomp.compile(weight_gradient(rows, columns))
    torch.manual_seed(4)
    for tokens in TOKENS:
        dz = torch.randn(tokens, rows, dtype=torch.bfloat16, device="cuda")
        x = torch.randn(tokens, columns, dtype=torch.bfloat16, device="cuda")
        poisoned = torch.full((rows, columns), float("nan"), dtype=torch.bfloat16, device="cuda")
        (got,) = kernel(dz, x, out=(poisoned,))
        want = dz.double().T @ x.double()
        scale = max(float(want.abs().max()), 1.0)
        error = float((got.double() - want).abs().max()) / scale
        assert error < 1e-2, (tokens, error)
    assert len(pipeline_runs) == 1


def test_module_backward_kernels_compile_once_for_every_token_count() -> None:
    import torch

    import mmcomp.torch as mt

    torch.manual_seed(9)
    linear = torch.nn.Linear(256, 512, dtype=torch.bfloat16, device="cuda")
    fused = mt.FusedLinear(linear, "gelu_tanh")
    compiles: list[int] = []
    for tokens in TOKENS[1:]:
        x = torch.randn(tokens, 256, dtype=torch.bfloat16, device="cuda", requires_grad=True)
        y = fused(x)
        dy = torch.randn_like(y)
        y.backward(dy)
        x64 = x.detach().double().requires_grad_()
        w64 = linear.weight.detach().double().requires_grad_()
        b64 = linear.bias.detach().double().requires_grad_()
        exact = torch.nn.functional.gelu(x64 @ w64.T + b64, approximate="tanh")
        exact.backward(dy.double())
        for got, want in ((x.grad, x64.grad), (linear.weight.grad, w64.grad)):
            assert got is not None and want is not None
            error = float((got.double() - want).abs().max() / want.abs().max())
            assert error < 2e-2, (tokens, error)
        assert linear.bias.grad is not None and b64.grad is not None
        error = float((linear.bias.grad.double() - b64.grad).abs().max() / b64.grad.abs().max())
        assert error < 2e-2, (tokens, error)
        compiles.append(fused._trainable.kernels.compiles)  # pyright: ignore[reportPrivateUsage]
        linear.weight.grad = None
        linear.bias.grad = None
    assert len(set(compiles)) == 1, compiles  # every kernel compiled at the first count
    x = torch.randn(0, 256, dtype=torch.bfloat16, device="cuda", requires_grad=True)
    fused(x).float().sum().backward()
    assert linear.weight.grad is not None and not bool(linear.weight.grad.any())
    assert linear.bias.grad is not None and not bool(linear.bias.grad.any())
    assert fused._trainable.kernels.compiles == compiles[0]  # pyright: ignore[reportPrivateUsage]
