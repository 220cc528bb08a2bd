"""The ring's depth at the hopper level: an edit of `stages` that leaves the kernel
inconsistent is refused, naming what disagrees, never compiled into a kernel whose barriers
sit inside a stage (mmcomp.dialects.hopper.layout)."""

from __future__ import annotations

import re

import pytest
from cases import case
from xdsl.parser import Parser
from xdsl.utils.exceptions import DiagnosticException, VerifyException

from mmcomp.ir.registry import context
from mmcomp.passes.convert_hopper_to_ptx import ConvertHopperToPtx
from mmcomp.pipeline import run_pipeline

NAMES = [
    "default_smem",
    "silu_mul",
    "pingpong_linear",
    "none_split_k",
    "cluster_linear",
    "swap_ab_horizontal",
]


def hopper_level(name: str) -> str:
    """The hopper-level IR of a GPU test case, as mmcomp-opt prints it."""
    selected = case(name)
    _, _, stages = run_pipeline(
        selected.fusion().module, dict(selected.params), until="lower-schedule-to-hopper"
    )
    return stages["lower-schedule-to-hopper"]


def lower(text: str) -> None:
    """Parse hopper-level IR (verifying it) and lower its hopper ops."""
    module = Parser(context(), text).parse_module()
    module.verify()
    ConvertHopperToPtx().apply(context(), module)


def stages_of(text: str) -> int:
    found = {int(depth) for depth in re.findall(r"stages = (\d+)", text)}
    assert len(found) == 1
    return found.pop()


@pytest.mark.parametrize("name", NAMES)
def test_as_lowered_is_consistent(name: str):
    lower(hopper_level(name))


@pytest.mark.parametrize("name", NAMES)
def test_every_depth_edited_overlaps_the_barriers(name: str):
    text = hopper_level(name)
    deeper = text.replace(f"stages = {stages_of(text)}", f"stages = {stages_of(text) + 1}")
    with pytest.raises((VerifyException, DiagnosticException), match="shared memory overlaps"):
        lower(deeper)


@pytest.mark.parametrize("name", NAMES)
def test_one_depth_edited_disagrees(name: str):
    """The full barriers one stage deeper than the slot ring and the positions: no op's
    own verifier relates them, the kernel's does."""
    text = hopper_level(name)
    stages = stages_of(text)
    full = f"!hopper.barrier_ring<stages = {stages}, count = 1>"
    assert full in text
    edited = text.replace(full, f"!hopper.barrier_ring<stages = {stages + 1}, count = 1>")
    with pytest.raises((VerifyException, DiagnosticException), match="stages disagree"):
        lower(edited)


@pytest.mark.parametrize("name", NAMES)
def test_a_stage_not_initialized(name: str):
    """Dropping one stage's barrier init leaves a barrier a wait would never see complete."""
    text = hopper_level(name)
    lines = text.splitlines()
    init = next(i for i, line in enumerate(lines) if "hopper.mbarrier_init" in line)
    edited = "\n".join(lines[:init] + lines[init + 1 :])
    with pytest.raises((VerifyException, DiagnosticException), match="initialized"):
        lower(edited)
