"""Fusion families and schedules the cuda back end is checked on (tests and tools/bench.py).

Each case builds a fusion of one family at one shape, picks schedule overrides, and
knows its inputs (fresh random values) and its float64 truth (mmcomp's reference
interpreter with float64 accumulation). The tests import it as `cases` (pytest puts
tests/unit on the path; the tools add it themselves); `python tests/unit/cases.py NAME`
runs one case on the GPU and prints each output's relative error as one JSON line.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from mmcomp.frontend.builder import Fusion

HERE = Path(__file__).resolve().parent
"""tests/unit, the folder of this module."""

TOLERANCE = {"bf16": 1e-2, "f16": 1e-2, "f32": 1e-3}
"""Largest relative error (max |got - want| / max |want|) per output dtype."""


def child_environment() -> dict[str, str]:
    """The environment of a child Python that imports this module: ours, with tests/unit
    first on PYTHONPATH."""
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), *([path] if path else [])])}


def run_child(args: list[str], timeout_s: float, what: str) -> dict[str, Any]:
    """The JSON report (the last line of stdout) of `python args...` run in a child process
    with `child_environment()`: a hang fails the test, and so does a non-zero exit."""
    import json
    import subprocess
    import sys

    import pytest

    try:
        result = subprocess.run(
            [sys.executable, *args],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            env=child_environment(),
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{what} did not finish in {timeout_s} s (a hang?)")
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def linear(m: int, n: int, k: int, dtype: str = "bf16", bias: bool = False) -> Fusion:
    """C = A W^T (+ bias), cast to the input dtype."""
    f = Fusion("linear")
    a = f.input("a", [m, k], dtype)
    w = f.input("w", [n, k], dtype)
    b = f.input("bias", [n], dtype) if bias else None
    f.output(f.cast(f.linear(a, w, b), dtype))
    return f


def matmul(m: int, n: int, k: int, dtype: str = "bf16", batch: int = 0) -> Fusion:
    """C = A B with B[K, N] (MN-major B), optionally batched."""
    f = Fusion("matmul")
    lead = [batch] if batch else []
    a = f.input("a", [*lead, m, k], dtype)
    b = f.input("b", [*lead, k, n], dtype)
    f.output(f.cast(f.matmul(a, b), dtype))
    return f


def gelu_bias(m: int, n: int, k: int, approximate: str = "tanh") -> Fusion:
    """gelu(A W^T + bias) in bf16 (tanh approximation, or erf with "none")."""
    f = Fusion("gelu_bias")
    a = f.input("a", [m, k], "bf16")
    w = f.input("w", [n, k], "bf16")
    b = f.input("bias", [n], "bf16")
    f.output(f.cast(f.gelu(f.linear(a, w, b), approximate), "bf16"))
    return f


def silu_mul(m: int, n: int, k: int) -> Fusion:
    """y = A W^T (also an output), silu(y) * t with t[M, N]."""
    f = Fusion("silu_mul")
    a = f.input("a", [m, k], "bf16")
    w = f.input("w", [n, k], "bf16")
    t = f.input("t", [m, n], "bf16")
    y = f.output(f.linear(a, w))
    f.output(f.cast(f.silu(y) * t, "bf16"))
    return f


def horizontal(m: int, n: int, k: int) -> Fusion:
    """gate = A W1^T, up = A W2^T, silu(gate) * up: three outputs."""
    f = Fusion("horizontal")
    a = f.input("a", [m, k], "bf16")
    w1 = f.input("w1", [n, k], "bf16")
    w2 = f.input("w2", [n, k], "bf16")
    gate = f.output(f.linear(a, w1))
    up = f.output(f.linear(a, w2))
    f.output(f.cast(f.silu(gate) * up, "bf16"))
    return f


def gelu_residual(m: int, n: int, k: int) -> Fusion:
    """gelu(A W^T + bias) + residual[M, N], in bf16: an [M, N] epilogue operand."""
    f = Fusion("gelu_residual")
    a = f.input("a", [m, k], "bf16")
    w = f.input("w", [n, k], "bf16")
    b = f.input("bias", [n], "bf16")
    r = f.input("residual", [m, n], "bf16")
    f.output(f.cast(f.gelu(f.linear(a, w, b), "tanh") + r, "bf16"))
    return f


def gated_residual(m: int, n: int, k: int) -> Fusion:
    """silu(A W1^T) * (A W2^T) * t + residual, t and residual [M, N], in bf16: a
    horizontal fusion with two [M, N] epilogue operands."""
    f = Fusion("gated_residual")
    a = f.input("a", [m, k], "bf16")
    w1 = f.input("w1", [n, k], "bf16")
    w2 = f.input("w2", [n, k], "bf16")
    t = f.input("t", [m, n], "bf16")
    r = f.input("residual", [m, n], "bf16")
    f.output(f.cast(f.silu(f.linear(a, w1)) * f.linear(a, w2) * t + r, "bf16"))
    return f


def row_ops(m: int, n: int, k: int) -> Fusion:
    """relu(A B * row[1, N] + col[M, 1]) - an [M, N] operand: broadcast epilogue operands."""
    f = Fusion("row_ops")
    a = f.input("a", [m, k], "bf16")
    b = f.input("b", [k, n], "bf16")
    row = f.input("row", [1, n], "bf16")
    col = f.input("col", [m, 1], "bf16")
    other = f.input("other", [m, n], "bf16")
    y = f.relu(f.matmul(a, b) * row + col)
    f.output(f.cast(y - other, "bf16"))
    return f


def broadcast_inputs(m: int, n: int, k: int) -> Fusion:
    """fused_multiply_sum of a[M, 1, K] and b[1, N, K] over K."""
    f = Fusion("broadcast_inputs")
    a = f.input("a", [m, 1, k], "bf16")
    b = f.input("b", [1, n, k], "bf16")
    f.output(f.cast(f.fused_multiply_sum(a, b, [2]), "bf16"))
    return f


def broadcast_silu_mul(m: int, n: int, k: int) -> Fusion:
    """The seed system's failing case: silu(fms(a[M,1,K], b[1,N,K])) * t[M,N], in bf16."""
    f = Fusion("broadcast_silu_mul")
    a = f.input("a", [m, 1, k], "bf16")
    b = f.input("b", [1, n, k], "bf16")
    t = f.input("t", [m, n], "bf16")
    y = f.fused_multiply_sum(a, b, [2])
    f.output(f.cast(f.silu(y) * t, "bf16"))
    return f


@dataclass
class Case:
    """One GPU test: a fusion, schedule overrides, and its name."""

    name: str
    build: Callable[[], Fusion]
    params: dict[str, Any] = field(default_factory=dict[str, Any])

    def fusion(self) -> Fusion:
        """The fusion."""
        return self.build()


def inputs_for(fusion: Fusion) -> list[np.ndarray]:
    """Fresh random inputs (standard normal), new on every call."""
    rng = np.random.default_rng()
    arrays: list[np.ndarray] = []
    for value in fusion.inputs:
        data = rng.standard_normal(value.shape).astype(np.float32)
        arrays.append(data.astype(value.numpy_dtype))
    return arrays


REG = {"epilogue": "registers", "split_k": 1}
PING = {**REG, "warp_specialization": "pingpong"}
SMEM = {"epilogue": "smem", "split_k": 1, "tile": (128, 128, 64)}
CLUSTER = {**REG, "cluster": (2, 1), "tile": (128, 128, 64)}
NONE = {**REG, "warp_specialization": "none", "tile": (128, 128, 64)}

CASES: list[Case] = [
    Case("linear_256", lambda: linear(256, 256, 128), REG),
    Case("linear_ragged", lambda: linear(300, 500, 200), REG),
    Case("linear_1000", lambda: linear(1000, 1000, 1000), REG),
    Case("linear_m1", lambda: linear(1, 256, 256), {**REG, "tile": (128, 128, 64)}),
    Case("linear_f16", lambda: linear(300, 264, 192, "f16"), REG),
    Case("linear_bias", lambda: linear(384, 512, 256, bias=True), REG),
    Case("linear_128x256", lambda: linear(1000, 1000, 1000), {**REG, "tile": (128, 256, 64)}),
    Case(
        "linear_one_tile", lambda: linear(1000, 1000, 1000), {**REG, "strategy": "one-tile-per-cta"}
    ),
    Case("linear_raster_n", lambda: linear(1000, 1000, 1000), {**REG, "raster": "n", "swizzle": 1}),
    Case("matmul_mn_major", lambda: matmul(1000, 1000, 1000), REG),
    Case("matmul_128x256", lambda: matmul(1000, 1024, 512), {**REG, "tile": (128, 256, 64)}),
    Case("matmul_batch", lambda: matmul(300, 264, 200, batch=3), REG),
    Case("matmul_f16", lambda: matmul(256, 512, 256, "f16"), REG),
    Case("gelu_bias", lambda: gelu_bias(1000, 1000, 1000), REG),
    Case("gelu_erf", lambda: gelu_bias(1000, 1000, 1000, "none"), REG),
    Case("silu_mul", lambda: silu_mul(1000, 1000, 1000), REG),
    Case("horizontal", lambda: horizontal(1000, 1000, 1000), REG),
    Case("horizontal_small", lambda: horizontal(256, 256, 128), REG),
    Case("row_ops", lambda: row_ops(500, 512, 320), REG),
    Case("broadcast_inputs", lambda: broadcast_inputs(300, 256, 192), REG),
    Case(
        "broadcast_silu_mul",
        lambda: broadcast_silu_mul(1000, 1000, 1000),
        {**REG, "strategy": "persistent", "swizzle": 4},
    ),
    Case(
        "split_k_linear",
        lambda: linear(300, 264, 2048),
        {**REG, "split_k": 3, "tile": (128, 128, 64)},
    ),
    Case(
        "split_k_batch",
        lambda: matmul(200, 256, 1024, batch=2),
        {**REG, "split_k": 2, "tile": (128, 128, 64)},
    ),
    Case(
        "split_k_silu_mul",
        lambda: silu_mul(256, 256, 1024),
        {**REG, "split_k": 4, "tile": (128, 128, 64)},
    ),
    Case(
        "split_k_pingpong",
        lambda: gelu_bias(256, 384, 1024),
        {**PING, "split_k": 2, "tile": (128, 128, 64)},
    ),
    Case("default_1000", lambda: linear(1000, 1000, 1000), {"epilogue": "registers"}),
    Case("none_linear", lambda: linear(1000, 1000, 1000), {**NONE, "tile": (128, 128, 64)}),
    Case("none_128x256", lambda: matmul(1000, 1024, 512), {**NONE, "tile": (128, 256, 64)}),
    Case(
        "none_one_tile", lambda: gelu_bias(300, 500, 200), {**NONE, "strategy": "one-tile-per-cta"}
    ),
    Case("none_split_k", lambda: linear(300, 264, 2048), {**NONE, "split_k": 3}),
    Case("smem_linear", lambda: linear(1000, 1000, 1000), {**SMEM, "tile": (128, 256, 64)}),
    Case("smem_ragged", lambda: gelu_bias(300, 504, 200), SMEM),
    Case("smem_batch", lambda: matmul(300, 264, 200, batch=3), SMEM),
    Case("smem_horizontal", lambda: horizontal(1000, 1000, 1000), SMEM),
    Case("smem_silu_mul", lambda: silu_mul(1000, 1000, 1000), SMEM),
    Case("smem_f16", lambda: matmul(256, 512, 256, "f16"), SMEM),
    Case(
        "smem_pingpong",
        lambda: linear(1000, 1000, 1000),
        {**SMEM, "warp_specialization": "pingpong"},
    ),
    Case("smem_none", lambda: linear(1000, 1000, 1000), {**SMEM, "warp_specialization": "none"}),
    Case("smem_split_k", lambda: linear(300, 264, 2048), {**SMEM, "split_k": 3}),
    Case("default_smem", lambda: gelu_bias(1000, 1000, 1000), {}),
    Case("cluster_linear", lambda: linear(1000, 1000, 1000), {**CLUSTER, "tile": (128, 256, 64)}),
    Case("cluster_1x2", lambda: linear(1000, 1000, 1000), {**CLUSTER, "cluster": (1, 2)}),
    Case("cluster_matmul", lambda: matmul(1000, 1024, 512), {**CLUSTER, "tile": (128, 256, 64)}),
    Case("cluster_horizontal", lambda: horizontal(1000, 1000, 1000), CLUSTER),
    Case(
        "cluster_pingpong",
        lambda: linear(1000, 1000, 1000),
        {**CLUSTER, "warp_specialization": "pingpong"},
    ),
    Case("cluster_smem", lambda: gelu_bias(1000, 1000, 1000), {**CLUSTER, "epilogue": "smem"}),
    Case(
        "cluster_4x1_persistent",
        lambda: linear(2048, 4096, 256),
        {**CLUSTER, "cluster": (4, 1), "epilogue": "smem"},
    ),
    Case(
        "pingpong_heuristic",
        lambda: gelu_bias(2048, 2048, 256),
        {"warp_specialization": "pingpong"},
    ),
    Case("pingpong_linear", lambda: linear(1000, 1000, 1000), {**PING, "tile": (128, 128, 64)}),
    Case("pingpong_64x256", lambda: linear(1000, 1000, 1000), {**PING, "tile": (64, 256, 64)}),
    Case("pingpong_matmul", lambda: matmul(1000, 1000, 1000), {**PING, "tile": (128, 128, 64)}),
    Case("pingpong_silu_mul", lambda: silu_mul(1000, 1000, 1000), {**PING, "tile": (64, 128, 64)}),
    Case(
        "pingpong_one_tile",
        lambda: gelu_bias(300, 500, 200),
        {**PING, "tile": (128, 128, 64), "strategy": "one-tile-per-cta"},
    ),
    Case("swap_ab_silu_mul", lambda: silu_mul(33, 200, 300), {"swap_ab": True, "split_k": 2}),
    Case("swap_ab_horizontal", lambda: horizontal(7, 1000, 1000), {"swap_ab": True}),
    Case(
        "swap_ab_pingpong",
        lambda: gelu_bias(1, 500, 200),
        {"swap_ab": True, "warp_specialization": "pingpong", "tile": (8, 64, 64)},
    ),
]
"""Every case, by name."""


def case(name: str) -> Case:
    """The case of that name."""
    for found in CASES:
        if found.name == name:
            return found
    raise KeyError(name)


CONTROL_FLOW_CASES = (
    "linear_ragged",
    "none_split_k",
    "pingpong_linear",
    "smem_split_k",
    "cluster_pingpong",
    "swap_ab_silu_mul",
)
"""One case per shape of the kernel's control flow: cooperative, non-specialized (loads
ahead), ping-pong (turns), split-K, a cluster with ping-pong, swap-AB."""


def partitioned(name: str, positions: bool = True, **changes: object) -> Any:
    """The partitioned kernel of a case (a func.func after partition-warp-roles and, with
    `positions`, carry-ring-positions), compiled with `changes` to its params."""
    from xdsl.dialects.func import FuncOp

    from mmcomp.passes.partition_warp_roles import partition
    from mmcomp.pipeline import run_pipeline

    selected = case(name)
    params = {**selected.params, **changes}
    module, _, _ = run_pipeline(selected.fusion().module, params, until="materialize-schedule")
    func = next(op for op in module.ops if isinstance(op, FuncOp)).clone()
    partition(func)
    if positions:
        carry_positions(func)
    return func


def carry_positions(func: Any) -> None:
    """Run carry-ring-positions on a partitioned kernel (a func.func of no module)."""
    from xdsl.dialects.builtin import ModuleOp

    from mmcomp.ir.registry import context
    from mmcomp.passes.carry_ring_positions import CarryRingPositions

    CarryRingPositions().apply(context(), ModuleOp([func]))
    func.detach()


def hopper_module(name: str) -> Any:
    """The module after lower-schedule-to-hopper for a case."""
    from mmcomp.pipeline import run_pipeline

    selected = case(name)
    module, _, _ = run_pipeline(
        selected.fusion().module, selected.params, until="lower-schedule-to-hopper"
    )
    return module


def lowered_in_both_orders(name: str) -> list[Any]:
    """A case's hopper-level module lowered to ptx twice: convert-hopper-to-ptx before
    convert-scf-to-ptx, and after it (then convert-arith-to-ptx)."""
    from mmcomp.ir.registry import context
    from mmcomp.passes.convert_arith_to_ptx import ConvertArithToPtx
    from mmcomp.passes.convert_hopper_to_ptx import ConvertHopperToPtx
    from mmcomp.passes.convert_scf_to_ptx import ConvertScfToPtx

    modules: list[Any] = []
    for passes in (
        (ConvertHopperToPtx(), ConvertScfToPtx()),
        (ConvertScfToPtx(), ConvertHopperToPtx()),
    ):
        module = hopper_module(name)
        for lowering in (*passes, ConvertArithToPtx()):
            lowering.apply(context(), module)
        modules.append(module)
    return modules


def relative_error(got: np.ndarray, want: np.ndarray) -> float:
    """max |got - want| / max |want| (inf when got has NaN or inf)."""
    got64 = np.asarray(got).astype(np.float64)
    if not np.all(np.isfinite(got64)):
        return float("inf")
    scale = max(float(np.max(np.abs(want))), 1e-30)
    return float(np.max(np.abs(got64 - want)) / scale)


def run_case(name: str) -> dict[str, object]:
    """Compile and run one case on the GPU; each output's relative error against float64."""
    selected = case(name)
    return {"case": name, **run_fusion(selected.fusion(), selected.params)}


FAMILIES: dict[str, Callable[[int, int, int], Fusion]] = {
    "linear": linear,
    "matmul": matmul,
    "gelu_bias": gelu_bias,
    "silu_mul": silu_mul,
    "horizontal": horizontal,
}
"""The families `probe` knows, by name."""


def probe(family: str, params_json: str, shape: tuple[int, int, int] = (1000, 1000, 1000)) -> None:
    """Run one family under a schedule at a small ragged shape; exit 1 unless correct.

    tools/bench.py runs this in a child process with a timeout before timing a schedule,
    so that a schedule that hangs or computes wrong numbers stays out of the table.
    """
    import json
    import sys

    params = json.loads(params_json)
    if "tile" in params:
        params["tile"] = tuple(params["tile"])
    if "cluster" in params:
        params["cluster"] = tuple(params["cluster"])
    result = run_fusion(FAMILIES[family](*shape), params)
    print(json.dumps(result), flush=True)
    for entry in result["errors"]:  # pyright: ignore[reportGeneralTypeIssues]
        if not entry["error"] < TOLERANCE[entry["dtype"]]:
            sys.exit(1)


def run_fusion(fusion: Fusion, overrides: dict[str, Any]) -> dict[str, Any]:
    """Compile `fusion` under `overrides`, run it on the GPU, compare with float64."""
    from mmcomp.backend import build_cuda_kernel
    from mmcomp.interp.reference import reference
    from mmcomp.pipeline import run_pipeline

    module, params, _ = run_pipeline(fusion.module, overrides)
    kernel = build_cuda_kernel(module)
    inputs = inputs_for(fusion)
    got = kernel(*inputs)
    want = reference(fusion, *inputs, accumulate=np.float64)
    errors: list[dict[str, object]] = []
    for index, (g, w) in enumerate(zip(got, want, strict=True)):
        errors.append(
            {
                "output": index,
                "dtype": fusion.outputs[index].dtype,
                "error": relative_error(g, np.asarray(w)),
            }
        )
    return {"params": params.format(), "errors": errors}


if __name__ == "__main__":
    import json
    import sys

    print(json.dumps(run_case(sys.argv[1])), flush=True)
