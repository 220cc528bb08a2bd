"""Dynamic M on the cuda back end, without a GPU: the kernel takes M as a u32 parameter,
its launch data has `?` extents, and at a runtime M its launch plan (shapes, tensor maps,
grid) is the one a kernel compiled for that M with the same schedule has.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from test_dynamic import FAMILIES, dynamic_inputs, epilogue_operand, linear

import mmcomp
from mmcomp.backend import load_kernel
from mmcomp.errors import LaunchError
from mmcomp.schedule.heuristics import PARAMETERS

N, K = 200, 136


def static_of(fusion: mmcomp.Fusion, m: int) -> mmcomp.Fusion:
    """The fusion with its dynamic M fixed."""
    return mmcomp.parse(str(fusion).replace("?x", f"{m}x"))


@pytest.mark.parametrize("family", ["linear", "epilogue_operand", "horizontal"])
def test_plan_at_an_extent_is_the_static_kernels(family: str) -> None:
    fusion = FAMILIES[family](N, K)
    dynamic = mmcomp.compile(fusion, schedule_m=4096).device_kernel
    assert ".param .u32 arg" in dynamic.ptx
    assert dynamic.plan.dynamic and dynamic.plan.grid == 0
    chosen = mmcomp.compile(fusion, schedule_m=4096).params
    params = {key: getattr(chosen, key) for key in PARAMETERS}
    for m in (1, 129, 4095):
        fixed = mmcomp.compile(static_of(fusion, m), **params).device_kernel
        plan = dynamic.specialized({"m": m}).plan
        want = fixed.plan
        assert plan.arrays == tuple(dataclasses.replace(a, extents="") for a in want.arrays)
        assert [dataclasses.replace(t, strides=(), axes=()) for t in plan.tensor_maps] == [
            dataclasses.replace(t, strides=(), axes=()) for t in want.tensor_maps
        ]
        for ours, theirs in zip(plan.tensor_maps, want.tensor_maps, strict=True):
            assert ours.byte_strides == theirs.byte_strides
        assert plan.grid == want.grid
        assert plan.extent_values == (m,)


def test_split_k_workspace_takes_the_cta_tiles() -> None:
    fusion = linear(N, K)
    kernel = mmcomp.compile(fusion, schedule_m=4096, tile=(128, 64, 64), split_k=2)
    plan = kernel.device_kernel.specialized({"m": 300}).plan
    partials, arrivals = plan.arrays[-2:]
    assert partials.shape == (2, 3 * 4, 128, 64)
    assert arrivals.shape == (12,)


def test_empty_m_launches_nothing() -> None:
    fusion = epilogue_operand(N, K)
    kernel = mmcomp.compile(fusion, schedule_m=64)
    inputs = dynamic_inputs(fusion, {"m": 0}, np.random.default_rng(0))
    y, o = kernel(*inputs)  # no GPU needed: nothing runs
    assert y.shape == (0, N) and o.shape == (0, N)
    poisoned = (np.empty((0, N), np.float32), np.empty((0, N), o.dtype))
    assert kernel(*inputs, out=poisoned)[0] is poisoned[0]


def test_bad_extents_name_the_argument() -> None:
    fusion = epilogue_operand(N, K)
    kernel = mmcomp.compile(fusion, schedule_m=64)
    a, w, t = dynamic_inputs(fusion, {"m": 100}, np.random.default_rng(0))
    with pytest.raises(mmcomp.FusionError, match=r"inputs 'a' and 't' disagree on the dynamic"):
        kernel(a, w, t[:99])
    with pytest.raises(mmcomp.FusionError, match=r"input 'w': axis 1 \(K\): expected extent 136"):
        kernel(a, w[:, :135], t)
    rows = 2**31
    big = np.broadcast_to(a[:1], (rows, K))
    with pytest.raises(mmcomp.FusionError, match=r"the dynamic extent M = 2147483648 is past"):
        kernel(big, w, np.broadcast_to(t[:1], (rows, N)))


def test_saved_ptx_level_file_specializes(tmp_path: Path) -> None:
    fusion = linear(N, K)
    kernel = mmcomp.compile(fusion, schedule_m=4096)
    path = tmp_path / "linear.mlir"
    path.write_text(kernel.ir("convert-arith-to-ptx"))
    loaded = load_kernel(path)
    assert loaded.ptx == kernel.device_kernel.ptx
    assert loaded.specialized({"m": 77}).plan == kernel.device_kernel.specialized({"m": 77}).plan
    with pytest.raises(LaunchError, match=r"takes the runtime extents m; bind its"):
        loaded.bind([])


def test_a_loaded_kernel_reads_its_extents_from_the_inputs() -> None:
    fusion = epilogue_operand(N, K)
    device = mmcomp.compile(fusion, schedule_m=64).device_kernel
    a, w, t = dynamic_inputs(fusion, {"m": 100}, np.random.default_rng(0))
    assert device.runtime_extents([a.shape, w.shape, t.shape]) == {"m": 100}
    with pytest.raises(LaunchError, match=r"inputs 'a' and 't' disagree on the dynamic extent M"):
        device.runtime_extents([a.shape, w.shape, t[:99].shape])
    with pytest.raises(LaunchError, match=r"input 'w': axis 1: expected extent 136 \(a static"):
        device.runtime_extents([a.shape, w[:, :135].shape, t.shape])
    empty = [array[:0] if array.shape[0] == 100 else array for array in (a, w, t)]
    y, o = device(*empty)  # M = 0 from the inputs: nothing launched, no GPU needed
    assert y.shape == (0, N) and o.shape == (0, N)


@pytest.mark.parametrize("schedule_m", [16, 4096])
def test_mmcomp_opt_compiles_a_bucket_as_compile_does(tmp_path: Path, schedule_m: int) -> None:
    from mmcomp.cli import MmcompOptMain

    fusion = epilogue_operand(N, K)
    kernel = mmcomp.compile(fusion, schedule_m=schedule_m)
    source = tmp_path / "fusion.mlir"
    source.write_text(str(fusion))
    target = tmp_path / "kernel.ptx"
    passes = f"compile-to-ptx{{schedule-m={schedule_m}}}"
    MmcompOptMain(args=[str(source), "-p", passes, "-t", "ptx", "-o", str(target)]).run()
    assert target.read_text().strip() == kernel.ptx.strip()
