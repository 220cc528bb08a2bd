"""A dynamic contraction extent K (a weight gradient's token count): one compiled kernel
runs at every K, its K-block loop counted from the runtime extent and its last, ragged
K block zero-filled.

On the CPU executor, each family is compiled once and called at every K of `KS` on fresh
random non-zero inputs, its outputs poisoned, against the float64 reference; the schedule's
rules for a dynamic K (no split-K, no stream-K); on the cuda back end without a GPU, the
kernel's launch plan at a runtime K against the static kernel compiled for that K (an
operand of one column, [T, 1], read as one row of T elements), and the refusal of a dynamic
K as an operand's contiguous axis.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from test_dynamic import check_outputs, dynamic_inputs

import mmcomp
from mmcomp.dialects import ptx
from mmcomp.passes.propagate_axis_mapping import propagate
from mmcomp.schedule.heuristics import PARAMETERS

M, N = 48, 40
"""The weight gradient's rows and columns: ragged against every tile."""
KS = (0, 1, 7, 63, 64, 65, 129, 300)
"""The runtime K (token counts) every family runs at."""


def weight_gradient(m: int = M, n: int = N, dtype: str = "bf16") -> mmcomp.Fusion:
    """dW = dZ^T X over the tokens: both operands MN-major, K = the token count."""
    f = mmcomp.Fusion("wgrad")
    dz = f.input("dz", ("tokens", m), dtype)
    x = f.input("x", ("tokens", n), dtype)
    product = f.fused_multiply_sum(
        f.broadcast(dz, [False, False, True]), f.broadcast(x, [False, True, False]), [0]
    )
    f.output(f.cast(product, dtype))
    return f


def scaled_weight_gradient(m: int = M, n: int = N) -> mmcomp.Fusion:
    """A weight gradient with an epilogue: a row operand and an f32 output beside bf16."""
    f = mmcomp.Fusion("wgrad_scaled")
    dz = f.input("dz", ("tokens", m), "bf16")
    x = f.input("x", ("tokens", n), "bf16")
    scale = f.input("scale", (n,), "f32")
    product = f.fused_multiply_sum(
        f.broadcast(dz, [False, False, True]), f.broadcast(x, [False, True, False]), [0]
    )
    f.output(product)
    f.output(f.cast(product * f.broadcast(scale, [True, False]), "bf16"))
    return f


def matmul_k_major(m: int = M, n: int = N) -> mmcomp.Fusion:
    """A matmul whose A is K-major with K dynamic (the CPU executor takes it)."""
    f = mmcomp.Fusion("matmul_k")
    a = f.input("a", (m, "k"), "bf16")
    b = f.input("b", ("k", n), "bf16")
    f.output(f.matmul(a, b))
    return f


def both_dynamic(n: int = N) -> mmcomp.Fusion:
    """M and K both dynamic."""
    f = mmcomp.Fusion("both")
    a = f.input("a", ("m", "k"), "bf16")
    w = f.input("w", (n, "k"), "bf16")
    f.output(f.linear(a, w))
    return f


FAMILIES = {
    "weight_gradient": weight_gradient,
    "weight_gradient_of_one_column": lambda: weight_gradient(M, 1),
    "weight_gradient_of_one_row": lambda: weight_gradient(1, N),
    "scaled_weight_gradient": scaled_weight_gradient,
    "matmul_k_major": matmul_k_major,
    "both_dynamic": both_dynamic,
}


@pytest.mark.parametrize("family", list(FAMILIES))
def test_family_runs_at_every_k(family: str) -> None:
    fusion = FAMILIES[family]()
    kernel = mmcomp.compile(fusion, backend="interp")
    rng = np.random.default_rng(21)
    for k in KS:
        check_outputs(kernel, fusion, dynamic_inputs(fusion, {"k": k, "m": 65}, rng))


@pytest.mark.parametrize(
    "params",
    [
        {"tile": (64, 64, 32), "stages": 2},
        {"tile": (64, 16, 16), "cluster": (1, 2), "raster": "n", "swizzle": 2},
        {"tile": (64, 64, 32), "strategy": "one-tile-per-cta", "raster": "m", "swizzle": 4},
    ],
)
def test_schedules_run_at_every_k(params: dict[str, object]) -> None:
    fusion = scaled_weight_gradient()
    kernel = mmcomp.compile(fusion, backend="interp", **params)
    rng = np.random.default_rng(8)
    for k in KS:
        check_outputs(kernel, fusion, dynamic_inputs(fusion, {"k": k}, rng))


def test_propagate_takes_a_dynamic_k() -> None:
    text = str(propagate(weight_gradient()))
    assert "#fusion.space<m = 48, n = 40, k = ?>" in text


def test_the_heuristic_does_not_split_a_dynamic_k() -> None:
    kernel = mmcomp.compile(weight_gradient(8, 8), backend="interp")
    assert kernel.params.split_k == 1 and kernel.params.strategy == "persistent"
    static = mmcomp.compile(mmcomp.parse(str(weight_gradient(8, 8)).replace("?x", "8192x")))
    assert static.params.split_k > 1  # the same shape at a static K is split


@pytest.mark.parametrize(
    ("params", "refused"),
    [
        ({"split_k": 2}, r"split_k = 2 with a dynamic K"),
        ({"strategy": "stream-k"}, r"strategy stream-k with a dynamic K"),
        ({"strategy": "hybrid-stream-k"}, r"strategy hybrid-stream-k with a dynamic K"),
    ],
)
def test_a_split_of_a_dynamic_k_is_refused(params: dict[str, object], refused: str) -> None:
    with pytest.raises(mmcomp.ScheduleError, match=refused):
        mmcomp.compile(weight_gradient(), backend="interp", **params)


def test_the_launch_plan_at_a_runtime_k_is_the_static_kernels() -> None:
    fusion = weight_gradient(200, 136)
    dynamic = mmcomp.compile(fusion)
    device = dynamic.device_kernel
    assert ".param .u32 arg" in device.ptx and device.report.spills == 0
    assert device.plan.dynamic and device.plan.extents == ("k",)
    params = {key: getattr(dynamic.params, key) for key in PARAMETERS}
    for k in (1, 129, 8193):
        fixed = mmcomp.compile(mmcomp.parse(str(fusion).replace("?x", f"{k}x")), **params)
        plan = device.specialized({"k": k}).plan
        want = fixed.device_kernel.plan
        assert plan.arrays == tuple(dataclasses.replace(a, extents="") for a in want.arrays)
        assert [t.shape for t in plan.tensor_maps] == [t.shape for t in want.tensor_maps]
        for ours, theirs in zip(plan.tensor_maps, want.tensor_maps, strict=True):
            assert (ours.box, ours.major) == (theirs.box, theirs.major)
            assert ours.byte_strides == theirs.byte_strides
        assert plan.grid == want.grid and plan.extent_values == (k,)


def test_a_runtime_k_of_zero_maps_one_row() -> None:
    device = mmcomp.compile(weight_gradient(200, 136)).device_kernel
    plan = device.specialized({"k": 0}).plan
    assert [t.shape for t in plan.tensor_maps[:2]] == [(1, 200), (1, 136)]
    assert plan.arrays[0].shape == (0, 200) and plan.grid > 0


def test_a_dynamic_k_as_the_contiguous_axis_is_refused_on_cuda() -> None:
    with pytest.raises(
        mmcomp.ScheduleError,
        match=r"mainloop operand %a \(roles \[m, k\]\) has the runtime extent K as its "
        r"contiguous axis: TMA needs 16-byte row strides",
    ):
        mmcomp.compile(matmul_k_major())


@pytest.mark.parametrize(("rows", "columns", "dtype"), [(200, 1, "f16"), (1, 136, "bf16")])
def test_an_operand_of_one_column_is_read_as_one_row_of_tokens(
    rows: int, columns: int, dtype: str
) -> None:
    """dW of a linear with one input or one output feature: its [T, 1] operand has no row
    stride, so its runtime T is the contiguous axis of a K-major view of one row."""
    fusion = weight_gradient(rows, columns, dtype)
    dynamic = mmcomp.compile(fusion)
    device = dynamic.device_kernel
    assert device.report.spills == 0 and device.plan.extents == ("k",)
    vector = 0 if rows == 1 else 1
    (one_row,) = [t for t in device.plan.tensor_maps if t.arg == vector]
    assert (one_row.major, one_row.axes, one_row.pitch) == ("k", (-1, 0), 0)
    assert one_row.shape == (1, ptx.DYNAMIC)
    params = {key: getattr(dynamic.params, key) for key in PARAMETERS}
    for k in (1, 129, 8193):
        fixed = mmcomp.compile(mmcomp.parse(str(fusion).replace("?x", f"{k}x")), **params)
        plan = device.specialized({"k": k}).plan
        want = fixed.device_kernel.plan.tensor_maps
        for ours, theirs in zip(plan.tensor_maps, want, strict=True):
            assert (ours.shape, ours.box, ours.major) == (theirs.shape, theirs.box, theirs.major)
            assert ours.byte_strides == theirs.byte_strides
    empty = device.specialized({"k": 0}).plan
    assert [t.shape for t in empty.tensor_maps if t.arg == vector] == [(1, 1)]


def test_a_strided_column_read_as_a_row_is_refused_at_launch() -> None:
    from mmcomp.backend.kernel import BoundLaunch
    from mmcomp.runtime import DeviceArray

    device = mmcomp.compile(weight_gradient(200, 1)).device_kernel.specialized({"k": 300})
    dz = DeviceArray(1 << 32, (300, 200), "bfloat16")
    column = DeviceArray(1 << 33, (300, 1), "bfloat16", strides=(16, 2))  # wide[:, :1]
    out = DeviceArray(1 << 34, (200, 1), "bfloat16")
    with pytest.raises(
        mmcomp.LaunchError,
        match=r"argument 'x': its axis 0 is the contiguous axis of the kernel's tensor map "
        r"\(rows of 300 elements\): expected byte stride 2, found 16",
    ):
        BoundLaunch(device, [dz, column, out])
    shifted = DeviceArray((1 << 33) + 2, (300, 1), "bfloat16")  # column[1:] of a [301, 1]
    with pytest.raises(
        mmcomp.LaunchError, match=r"argument 'x': base address 0x200000002 is not 16-byte aligned"
    ):
        BoundLaunch(device, [dz, shifted, out])


@pytest.mark.parametrize(("rows", "columns"), [(200, 1), (1, 136), (200, 136)])
def test_the_maps_at_no_tokens_pass_the_drivers_rules(
    rows: int, columns: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At K = 0 the empty operands bind (no layout asked of them) and each map is encoded
    over a placeholder with the plan's strides, which TMA takes (checked by the driver's
    rules, `tensor_map_layout`, in place of the driver)."""
    from mmcomp.backend.kernel import BoundLaunch
    from mmcomp.runtime import DeviceArray, staging, tensormap

    encoded: list[object] = []

    def layout_only(array: DeviceArray, **request: object) -> object:
        layout = tensormap.tensor_map_layout(
            array.dtype, request["shape"], request["strides"], request["box"], request["swizzle"]
        )
        encoded.append(layout)
        return layout

    monkeypatch.setattr(staging, "encode_tensor_map", layout_only)
    monkeypatch.setattr(
        staging, "placeholder", lambda shape, dtype: DeviceArray(1 << 40, shape, dtype)
    )
    device = mmcomp.compile(weight_gradient(rows, columns)).device_kernel.specialized({"k": 0})
    arrays = [
        DeviceArray(1 << 32, (0, rows), "bfloat16"),
        DeviceArray(1 << 33, (0, columns), "bfloat16"),
        DeviceArray(1 << 34, (rows, columns), "bfloat16"),
    ]
    BoundLaunch(device, arrays)
    assert len(encoded) == len(device.plan.tensor_maps)
