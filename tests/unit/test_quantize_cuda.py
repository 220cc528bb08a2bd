"""The quantizing epilogue on the cuda back end (docs/fp8.md, "The quantizing epilogue").

On the CPU: ptxas assembles the kernels of the heuristic's tiles without spills (group and
row scales, e4m3 and e5m2, M = 1, ragged N, a horizontal fp8 gate/up fusion, a given
scale); the PTX value model runs the emitted kernels (every thread: the amax over the
fragment, the quad's butterfly shuffles, the scale's multiplier, the saturating pairs)
and matches the reference's scales and float64 within fp8 rounding. On the GPU (marked
`gpu`, each case in a child process: `python -m test_quantize_cuda CASE`): the same
against float64 on fresh random inputs.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from cases import run_child

import mmcomp
from mmcomp.arch import ptxas
from mmcomp.backend.kernel import lower_to_ptx
from mmcomp.pipeline import run_pipeline

HAS_PTXAS = ptxas.find_tool("ptxas") is not None
RELATIVE = {"f8e4m3": 2.0**-4, "f8e5m2": 2.0**-3}
"""Half an ulp of each fp8 type, relative to the value (3 and 2 mantissa bits)."""
SUBNORMAL = {"f8e4m3": 2.0**-10, "f8e5m2": 2.0**-17}
"""Half the smallest subnormal of each fp8 type (in units of the scale)."""
GROUP = 128


class Case:
    """A quantizing fusion: `quantize(act(linear(a, w)) [* linear(a, u)])`, with its scale
    computed per 1 x 128 group ("group") or per row ("row"), or given ("given": an input
    of a group scale's shape)."""

    def __init__(
        self,
        shape: tuple[int, int, int],
        dtype: str,
        scale: str,
        factor: str = "bf16",
        activation: str = "silu",
        gated: bool = False,
        zero_group: bool = False,
        schedule: dict[str, Any] | None = None,
    ):
        self.shape = shape
        self.dtype = dtype
        self.scale = scale
        self.factor = factor
        self.activation = activation
        self.gated = gated
        self.zero_group = zero_group
        """The second group of every row is 0 (w's rows 128 to 255 are)."""
        self.schedule = schedule or {}

    def fusion(self) -> mmcomp.Fusion:
        """The fusion: its outputs q and (where computed) its scale."""
        m, n, k = self.shape
        f = mmcomp.Fusion("quantizing")
        a = f.input("a", [m, k], self.factor)
        w = f.input("w", [n, k], self.factor)
        scales: dict[str, Any] = {}
        if self.factor != "bf16":
            # per-tensor scales (row-wise ones of two contractions take 64 more registers
            # than the 128-wide tile that the group scale needs leaves)
            scales = {"scale_a": f.input("scale_a", [], "f32")}
            scales["scale_b"] = f.input("scale_b", [], "f32")
        y = getattr(f, self.activation)(f.linear(a, w, **scales))
        if self.gated:
            u = f.input("u", [n, k], self.factor)
            up = {"scale_a": scales["scale_a"], "scale_b": f.input("scale_u", [], "f32")}
            y = y * f.linear(a, u, **up)
        if self.scale == "given":
            given = f.input("s", [m, -(-n // GROUP)], "f32")
            q, _ = f.quantize(y, self.dtype, scale=given)
            f.output(q)
            return f
        q, scale = f.quantize(y, self.dtype, group=GROUP if self.scale == "group" else None)
        f.output(q)
        f.output(scale)
        return f

    def inputs(self, f: mmcomp.Fusion, rng: np.random.Generator) -> list[np.ndarray]:
        """Random inputs: standard normal factors, scales in [0.5, 1.5), a given scale of
        the values' magnitude (some values saturate)."""
        arrays: list[np.ndarray] = []
        for value in f.inputs:
            if value.name == "s":
                arrays.append(rng.uniform(0.002, 0.02, value.shape).astype(np.float32))
            elif value.name is not None and value.name.startswith("scale"):
                arrays.append(rng.uniform(0.5, 1.5, value.shape).astype(np.float32))
            else:
                normal = rng.standard_normal(value.shape).astype(np.float32)
                arrays.append(normal.astype(value.numpy_dtype))
        if self.zero_group:
            arrays[1][GROUP : 2 * GROUP] = 0
        if self.activation == "sigmoid":
            # a >= 0, w <= 0: every sigmoid below 0.5 (the padding's sigmoid(0)), most far
            a, w = (array.astype(np.float32) for array in arrays[:2])
            arrays[0] = (np.abs(a) * 0.3).astype(arrays[0].dtype)
            arrays[1] = (-np.abs(w)).astype(arrays[1].dtype)
        return arrays

    def scale_of(self, f: mmcomp.Fusion, inputs: list[np.ndarray], got: list[Any]) -> np.ndarray:
        """The scale the values were quantized with: the kernel's, or the given one."""
        if self.scale == "given":
            return inputs[[value.name for value in f.inputs].index("s")]
        return np.asarray(got[1])


def linear64(f: mmcomp.Fusion, case: Case, inputs: list[np.ndarray]) -> np.ndarray:
    """The quantized values in float64 (of the dequantized fp8 factors)."""
    named = {
        value.name: array.astype(np.float64) for value, array in zip(f.inputs, inputs, strict=True)
    }

    def linear(w: str, scale_b: str) -> np.ndarray:
        a, b = named["a"], named[w]
        if case.factor != "bf16":
            a, b = a * named["scale_a"], b * named[scale_b]
        return a @ b.T

    y = linear("w", "scale_b")
    y = {"silu": y / (1.0 + np.exp(-y)), "sigmoid": 1.0 / (1.0 + np.exp(-y))}[case.activation]
    return y * linear("u", "scale_u") if case.gated else y


def excess(case: Case, q: np.ndarray, scale: np.ndarray, want: np.ndarray, slack: np.ndarray):
    """How far the dequantized values lie beyond fp8 rounding of float64 (<= 0: within),
    with `slack` for the accumulation's own error."""
    n = want.shape[1]
    if case.scale == "row":
        expanded = np.repeat(scale[:, None].astype(np.float64), n, axis=1)
    else:
        expanded = np.repeat(scale.astype(np.float64), GROUP, axis=1)[:, :n]
    values = q.astype(np.float64)
    got = values * expanded
    largest = float(ml_dtypes.finfo(q.dtype).max)
    bound = RELATIVE[case.dtype] * np.abs(want) + SUBNORMAL[case.dtype] * expanded
    # a given scale saturates what lies beyond the type's range
    beyond = np.abs(want) > largest * expanded * (1 + 1e-3)
    ok = np.where(beyond, np.abs(values) == largest, True)
    assert ok.all(), "saturated values must be the largest finite"
    off = np.abs(got - want) - bound * (1 + 1e-5) - slack - 1e-6 * np.abs(want)
    return float(np.where(beyond, -1.0, off).max())


def accumulation_slack(f: mmcomp.Fusion, case: Case, inputs: list[np.ndarray]) -> np.ndarray:
    """A bound on the wgmma accumulation's error at each output: 2^-20 of the products'
    magnitudes for bf16 (f32 sums), 2^-13 for fp8 (about 14 mantissa bits: docs/fp8.md),
    through the activation (slope below 1.2) and the gate's other factor."""
    named = {
        value.name: np.abs(array.astype(np.float64))
        for value, array in zip(f.inputs, inputs, strict=True)
    }
    a, w = named["a"], named["w"]
    if case.factor != "bf16":
        a, w = a * named["scale_a"], w * named["scale_b"]
    magnitude = 1.2 * (a @ w.T) * (2.0**-13 if case.factor != "bf16" else 2.0**-20)
    if case.gated:
        u = named["u"] * named["scale_u"]
        sums = a @ u.T
        magnitude = magnitude * sums + 2.0**-13 * 1.2 * (a @ w.T) * sums
    return magnitude


def check(case: Case, f: mmcomp.Fusion, inputs: list[np.ndarray], got: list[Any]) -> float:
    """The checks of a kernel's outputs against the reference and float64: the scales
    the reference's (computed ones), a zero group 0 with values 0, the values within fp8
    rounding; returns the excess (<= 0)."""
    q = np.asarray(got[0])
    scale = case.scale_of(f, inputs, got)
    assert not np.isnan(q.astype(np.float32)).any() and not np.isnan(scale).any()
    slack = accumulation_slack(f, case, inputs)
    if case.scale != "given":
        want_scale = mmcomp.reference(f, *inputs)[1]
        # The scale of float64's amax, but for the accumulation's and activation's error.
        # Far below 0 sigmoid(y) is about exp(y): an absolute error dy of the product is a
        # relative error dy of the value (the slack bounds dy), however small the value.
        drift = float(slack.max()) if case.activation == "sigmoid" else 0.0
        rtol = (1e-2 if case.factor != "bf16" else 2e-5) + drift
        np.testing.assert_allclose(scale, want_scale, rtol=rtol)
    if case.zero_group:
        assert np.all(scale[:, 1] == 0) and np.all(q[:, GROUP : 2 * GROUP].astype(np.float32) == 0)
    return excess(case, q, scale, linear64(f, case, inputs), slack)


# On the CPU: ptxas at the heuristic's tiles

ASSEMBLED: dict[str, Case] = {
    "group_e4m3_8192": Case((8192, 8192, 8192), "f8e4m3", "group"),
    "row_e5m2_n256": Case((4096, 256, 4096), "f8e5m2", "row"),
    "group_m1_ragged": Case((1, 4000, 4096), "f8e4m3", "group"),
    "gated_fp8_gate_up": Case((4096, 14336, 4096), "f8e4m3", "group", factor="f8e4m3", gated=True),
    "given_group_scale": Case((2048, 1000, 1024), "f8e5m2", "given"),
    "group_pingpong": Case(
        (512, 1024, 1024), "f8e4m3", "group", schedule={"warp_specialization": "pingpong"}
    ),
}
"""Kernels that ptxas assembles (the heuristic's schedule, or the one given)."""


@pytest.mark.skipif(not HAS_PTXAS, reason="ptxas not found")
@pytest.mark.parametrize("name", list(ASSEMBLED))
def test_quantizing_kernels_assemble_without_spills(name: str):
    """ptxas assembles each quantizing kernel without spills: two shuffles per computed
    scale of each epilogue, the saturating fp8 pairs and their 16-bit stores."""
    case = ASSEMBLED[name]
    kernel = mmcomp.compile(case.fusion(), **case.schedule)
    device = kernel.device_kernel
    assert device.report is not None
    assert device.report.spills == 0 and device.report.stack_frame == 0, device.report
    pair = {"f8e4m3": "e4m3x2", "f8e5m2": "e5m2x2"}[case.dtype]
    assert f"cvt.rn.satfinite.{pair}.f32" in device.ptx
    assert "st.global.b16" in device.ptx
    shuffles = device.ptx.count("shfl.sync.bfly.b32")
    if case.scale == "given":
        assert shuffles == 0
        return
    params = kernel.params
    rows = 2 * params.wgmma_warpgroup[0] // 64
    groups = params.wgmma_warpgroup[1] // GROUP if case.scale == "group" else 1
    # per epilogue (stream-K's segments have one of their own)
    assert shuffles and shuffles % (2 * rows * groups) == 0


@pytest.mark.skipif(not HAS_PTXAS, reason="ptxas not found")
def test_block_scaled_gated_mlp_gate_up_quantizes_in_its_epilogue_without_spills():
    """The fp8 GatedMLP's block-scaled gate/up kernel quantizes h in its epilogue at tile
    n = 128: its two contractions promote chunk by chunk (one partial a chunk), so their
    accumulators, partials and the quantization fit a consumer thread (docs/fp8.md)."""
    torch = pytest.importorskip("torch")
    from mmcomp.torch.fp8 import Fp8GatedMLP

    class Mlp(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.gate_proj = torch.nn.Linear(256, 512, bias=False)
            self.up_proj = torch.nn.Linear(256, 512, bias=False)
            self.down_proj = torch.nn.Linear(512, 256, bias=False)

    module = Fp8GatedMLP(Mlp(), activation="silu", scaling="block")
    kernel = mmcomp.compile(module.fusion()).kernel_for(64)
    assert kernel.params.tile[1] == 128
    report = kernel.device_kernel.report
    assert report is not None and report.spills == 0 and report.stack_frame == 0


@pytest.mark.parametrize("scale", ["group", "row"])
def test_executor_leaves_the_padding_out_of_the_amax(scale: str):
    """The CPU executor's scales are the reference's where the last tile's padding holds
    values that are not 0 (sigmoid(0) = 0.5 past N), as the cuda epilogue's are."""
    case = Case((16, 200, 64), "f8e5m2", scale, activation="sigmoid")
    f = case.fusion()
    inputs = case.inputs(f, np.random.default_rng())
    want = mmcomp.reference(f, *inputs)
    got = mmcomp.compile(f, backend="interp", tile=(128, 256, 64))(*inputs)
    np.testing.assert_allclose(got[1], want[1], rtol=2e-5)
    assert check(case, f, inputs, list(got)) <= 0


# On the CPU: the PTX value model runs the emitted kernel

MODELLED: dict[str, Case] = {
    "group_ragged_e4m3": Case((70, 300, 64), "f8e4m3", "group"),
    "row_e5m2_m5": Case((5, 200, 64), "f8e5m2", "row"),
    "group_m1_zero_group": Case((1, 384, 64), "f8e4m3", "group", zero_group=True),
    "sigmoid_past_n": Case((16, 200, 64), "f8e5m2", "group", activation="sigmoid"),
    "given_group_scale": Case((40, 300, 64), "f8e4m3", "given"),
    "split_k_pingpong": Case(
        (24, 256, 256),
        "f8e4m3",
        "group",
        schedule={"split_k": 2, "warp_specialization": "pingpong", "tile": (64, 128, 64)},
    ),
}
"""Small kernels that the value model runs: ragged N, M = 1, a zero group, values past N
that are not 0 (sigmoid(0) = 0.5 in the last tile's padding), a given group scale, the
sum of split-K's partial tiles under ping-pong."""


@pytest.mark.skipif(not HAS_PTXAS, reason="ptxas not found")
@pytest.mark.parametrize("name", list(MODELLED))
def test_emitted_quantizing_kernel_computes_the_scales(name: str):
    """The emitted PTX, run by the value model on every thread, gives the reference's
    scales and values within fp8 rounding of float64. Without the column mask, the
    sigmoid case's last group takes the padding's 0.5 into its amax."""
    from ptx_value_model import run_values

    case = MODELLED[name]
    f = case.fusion()
    module, _, _ = run_pipeline(f.module, case.schedule)
    text, plan = lower_to_ptx(module)
    inputs = case.inputs(f, np.random.default_rng())
    wanted = mmcomp.reference(f, *inputs)
    poisoned = [np.full(w.shape, 0xFF, np.uint8).view(w.dtype) for w in wanted[:1]]
    poisoned += [np.full(w.shape, np.nan, np.float32) for w in wanted[1:]]
    got = run_values(text, plan, inputs, poisoned)
    assert check(case, f, inputs, got) <= 0


# On the GPU

GPU_CASES: dict[str, Case] = {
    "group_e4m3": Case((1024, 2048, 1024), "f8e4m3", "group"),
    "group_e5m2": Case((512, 1536, 2048), "f8e5m2", "group"),
    "row_e4m3": Case((1000, 256, 1024), "f8e4m3", "row"),
    "row_e5m2_ragged": Case((333, 200, 512), "f8e5m2", "row"),
    "group_m1": Case((1, 4096, 4096), "f8e4m3", "group"),
    "group_ragged_n": Case((257, 1000, 768), "f8e5m2", "group"),
    "zero_group": Case((96, 384, 512), "f8e4m3", "group", zero_group=True),
    "sigmoid_past_n": Case((64, 300, 256), "f8e4m3", "group", activation="sigmoid"),
    "given_group_scale": Case((300, 1000, 512), "f8e4m3", "given"),
    "gated_fp8_gate_up": Case((2048, 2816, 1024), "f8e4m3", "group", factor="f8e4m3", gated=True),
    "group_pingpong": Case(
        (512, 1024, 1024), "f8e4m3", "group", schedule={"warp_specialization": "pingpong"}
    ),
}
"""The GPU cases: group and row scales, e4m3 and e5m2, M = 1, ragged N, a zero group,
values past N that are not 0, a given scale, a horizontal fp8 gate/up fusion."""

GPU_CASE_TIMEOUT_S = 180
"""Seconds one case may take, compilation included (a hang fails it)."""


def run_gpu_case(name: str) -> dict[str, Any]:
    """Compile one GPU case, run it on fresh random inputs, check it (`check`)."""
    case = GPU_CASES[name]
    f = case.fusion()
    kernel = mmcomp.compile(f, **case.schedule)
    inputs = case.inputs(f, np.random.default_rng())
    got = kernel(*inputs)
    got = list(got) if isinstance(got, tuple | list) else [got]
    return {"case": name, "params": kernel.params.format(), "excess": check(case, f, inputs, got)}


@pytest.mark.gpu
@pytest.mark.parametrize("name", list(GPU_CASES))
def test_quantizing_kernel_matches_float64(name: str):
    """The cuda kernel's fp8 values and scales are within fp8 rounding of float64."""
    report = run_child(["-m", "test_quantize_cuda", name], GPU_CASE_TIMEOUT_S, f"case {name}")
    assert report["excess"] <= 0, report


if __name__ == "__main__":
    print(json.dumps(run_gpu_case(sys.argv[1])), flush=True)
