"""One pipeline for both tools: mmcomp.compile and mmcomp-opt print the same PTX, and a
ptx-level file that mmcomp-opt saved launches from Python (mmcomp.load_kernel)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from cases import CASES, Case, case, inputs_for, relative_error

import mmcomp
from mmcomp.backend import launch_plan
from mmcomp.cli import main as mmcomp_opt
from mmcomp.ir.registry import DEFAULT_PIPELINE

CLI_CASES = [
    "linear_256",
    "linear_ragged",
    "linear_m1",
    "linear_bias",
    "smem_ragged",
    "pingpong_linear",
    "cluster_matmul",
    "horizontal_small",
    "broadcast_inputs",
    "split_k_linear",
]
"""GPU test cases compiled both ways in CI (every case of the GPU tests on the device)."""


def options(params: dict[str, Any]) -> str:
    """choose-schedule's options for mmcomp.compile's keywords."""
    written: list[str] = []
    for name, value in params.items():
        if isinstance(value, tuple | list):
            value = (
                "x".join(str(v) for v in value) if name != "registers" else f"{value[0]},{value[1]}"
            )
        written.append(f"{name.replace('_', '-')}={value}")
    return " ".join(written)


def pipeline(params: dict[str, Any]) -> str:
    """The `-p` argument of compile-to-ptx's passes with the schedule as options."""
    stages = list(DEFAULT_PIPELINE)
    stages[stages.index("choose-schedule")] = f"choose-schedule{{{options(params)}}}"
    return ",".join(stages)


def cli_output(tmp_path: Path, selected: Case, *, target: str) -> str:
    """What mmcomp-opt writes for the case's fusion under its schedule keywords."""
    source = tmp_path / f"{selected.name}.mlir"
    source.write_text(str(selected.fusion()))
    out = tmp_path / f"{selected.name}.out.{target}"
    mmcomp_opt([str(source), "-p", pipeline(selected.params), "-t", target, "-o", str(out)])
    return out.read_text()


def known(name: str) -> Case:
    """A case of the GPU tests (the list above must name existing ones)."""
    assert name in {c.name for c in CASES}, name
    return case(name)


@pytest.mark.parametrize("name", CLI_CASES)
def test_compile_and_mmcomp_opt_print_the_same_ptx(tmp_path: Path, name: str):
    """The same fusion and keywords give byte-identical PTX through both tools."""
    selected = known(name)
    kernel = mmcomp.compile(selected.fusion(), **selected.params)
    assert cli_output(tmp_path, selected, target="ptx") == kernel.ptx


def test_options_print_as_the_keywords_do(tmp_path: Path):
    """choose-schedule's options and compile's keywords reach the same #sched.params."""
    selected = known("cluster_matmul")
    kernel = mmcomp.compile(selected.fusion(), **selected.params)
    ir = cli_output(tmp_path, Case("opts", selected.build, selected.params), target="mlir")
    assert "cluster = 2" in ir and f"grid = {kernel.device_kernel.plan.grid}" in ir


@pytest.mark.parametrize("name", ["linear_ragged", "cluster_matmul", "split_k_linear"])
def test_a_saved_ptx_level_file_loads_as_the_compiled_kernel(tmp_path: Path, name: str):
    """load_kernel of mmcomp-opt's ptx-level output: the same PTX and launch plan."""
    selected = known(name)
    kernel = mmcomp.compile(selected.fusion(), **selected.params).device_kernel
    path = tmp_path / "kernel.mlir"
    path.write_text(cli_output(tmp_path, selected, target="mlir"))
    loaded = mmcomp.load_kernel(path)
    assert loaded.ptx == kernel.ptx
    assert loaded.plan == kernel.plan
    assert (loaded.num_inputs, loaded.num_outputs) == (kernel.num_inputs, kernel.num_outputs)


def test_the_entry_carries_every_tensor_map_box_and_swizzle():
    """The ptx-level IR names each map's box and swizzle, and the clustered launch."""
    kernel = mmcomp.compile(known("cluster_matmul").fusion(), **known("cluster_matmul").params)
    text = kernel.ir("convert-arith-to-ptx")
    assert "tmap0 : tmap<arg = 0" in text and "box = [" in text
    assert "cluster = 2" in text
    plan = kernel.device_kernel.plan
    assert plan.cluster == 2 and all(m.swizzle == 128 for m in plan.tensor_maps[:2])


@pytest.mark.parametrize(
    ("family", "params"),
    [
        ("linear", {"tile": (128, 256, 64), "stages": 4, "epilogue": "smem"}),
        ("horizontal", {"tile": (128, 128, 64), "stages": 3, "epilogue": "registers"}),
        ("linear", {"tile": (64, 128, 64), "stages": 5, "warp_specialization": "pingpong"}),
    ],
)
def test_the_launch_takes_the_shared_memory_the_schedule_checked(
    family: str, params: dict[str, Any]
):
    """One shared-memory layout: the lowering launches with the bytes that the schedule's
    check counted (every stage's tiles, barriers, the epilogue buffers of two consumer
    warpgroups, alignment)."""
    from cases import horizontal, linear
    from xdsl.dialects.func import FuncOp
    from xdsl.parser import Parser

    from mmcomp.dialects.sched import problem_of
    from mmcomp.ir.registry import context

    fusion = (linear if family == "linear" else horizontal)(512, 1024, 512)
    kernel = mmcomp.compile(fusion, **params)
    module = Parser(context(), kernel.ir("choose-schedule")).parse_module()
    func = next(op for op in module.walk() if isinstance(op, FuncOp))
    assert kernel.params.consumer_warpgroups == 2
    layout = kernel.params.shared_memory(problem_of(func))
    assert kernel.device_kernel.plan.smem_bytes == layout.dynamic_bytes


def test_a_kernel_that_waits_for_the_previous_grid_launches_programmatically(tmp_path: Path):
    """The lowered entry waits (griddepcontrol.wait) before any global access, so its plan
    launches it with a programmatic dependency; an entry without the wait (an older saved
    file) launches in plain stream order."""
    selected = known("linear_256")
    kernel = mmcomp.compile(selected.fusion(), **selected.params)
    assert kernel.device_kernel.plan.programmatic
    assert "griddepcontrol.wait;" in kernel.ptx
    text = kernel.ir("convert-arith-to-ptx")
    path = tmp_path / "older.mlir"
    path.write_text(
        "\n".join(line for line in text.splitlines() if "ptx.griddepcontrol" not in line)
    )
    older = mmcomp.load_kernel(path)
    assert not older.plan.programmatic
    assert "griddepcontrol" not in older.ptx


def test_load_kernel_refuses_ir_without_launch_data(tmp_path: Path):
    """A materialized (not lowered) file, or a hand-written entry, is a clear LaunchError."""
    selected = known("linear_256")
    kernel = mmcomp.compile(selected.fusion(), **selected.params)
    path = tmp_path / "materialized.mlir"
    path.write_text(kernel.ir("materialize-schedule"))
    with pytest.raises(mmcomp.LaunchError, match="expected a ptx-level module with one ptx.entry"):
        mmcomp.load_kernel(path)
    bare = (
        "ptx.module version 8.0 target sm_90a address_size 64 {\n"
        "  ptx.entry @k(a : ptr) reqntid [128] {\n    ptx.ret\n  }\n}\n"
    )
    with pytest.raises(mmcomp.LaunchError, match="@k: no launch data"):
        launch_plan_of(bare)
    with pytest.raises(mmcomp.LaunchError, match="load_kernel: <text>: <text>:1:25"):
        mmcomp.load_kernel("ptx.module version 8.0 {")


def test_load_kernel_of_a_missing_file_says_so(tmp_path: Path):
    absent = tmp_path / "absent.mlir"
    for source in (absent, str(absent)):
        with pytest.raises(mmcomp.LaunchError, match="cannot read .*absent.mlir: No such file"):
            mmcomp.load_kernel(source)


def launch_plan_of(text: str) -> Any:
    from xdsl.parser import Parser

    from mmcomp.ir.registry import context

    return launch_plan(Parser(context(), text).parse_module())


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["linear_ragged", "cluster_matmul", "split_k_linear"])
def test_a_saved_ptx_level_file_launches_and_is_right(tmp_path: Path, name: str):
    """The kernel loaded from mmcomp-opt's file gives the reference's outputs."""
    selected = known(name)
    fusion = selected.fusion()
    path = tmp_path / "kernel.mlir"
    path.write_text(cli_output(tmp_path, selected, target="mlir"))
    loaded = mmcomp.load_kernel(path)
    inputs = inputs_for(fusion)
    got = loaded(*inputs, check=True)
    want = mmcomp.reference(fusion, *inputs)
    for output, expected in zip(got, want, strict=True):
        assert relative_error(np.asarray(output), expected) < 2e-2
