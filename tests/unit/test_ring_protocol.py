"""The mbarrier ring of the emitted kernels across persistent tiles and split-K units (CPU).

A non-specialized kernel (`warp_specialization = "none"`) once re-made thread 0's load
position (stage 0, phase 0) at the top of every tile's K loop, inside the persistent loop,
while the consumers' position went on from tile to tile: wherever a CTA ran a second tile
or split-K unit and the K blocks per unit were not a multiple of 2 x stages, the loads of
the second unit went to other stages than the ones the consumers waited on, and the kernel
hung (fuzzer seed 1, cases 1894 and 713). Two checks here: the PTX makes every ring
position once, outside every loop; and `ptx_ring_model` runs the CTAs' control flow and
mbarriers to the end. The GPU runs the same shapes in test_ring_protocol_gpu.py.
"""

from __future__ import annotations

import re
from typing import Any

import cases
import pytest
from ptx_ring_model import RingDeadlock, RingError, parse, run_grid

import mmcomp
from mmcomp.arch import ptxas
from mmcomp.backend.kernel import lower_to_ptx
from mmcomp.errors import ScheduleError
from mmcomp.frontend.builder import Fusion
from mmcomp.pipeline import run_pipeline

needs_ptxas = pytest.mark.skipif(ptxas.find_tool("ptxas") is None, reason="needs ptxas")


def horizontal_1894(m: int = 8191, n: int = 1024, k: int = 264) -> Fusion:
    """Fuzzer seed 1 case 1894: linear and matmul sharing A, two outputs."""
    f = Fusion("horizontal_1894")
    a = f.input("a", [m, k], "bf16")
    b0 = f.input("b0", [n, k], "bf16")
    b1 = f.input("b1", [k, n], "bf16")
    y0 = f.linear(a, b0)
    y1 = f.matmul(a, b1)
    f.output(f.cast(y1, "bf16"))
    f.output(f.cast(y1 + y0, "f16"))
    return f


def linear_713(m: int = 1, n: int = 16384, k: int = 4096) -> Fusion:
    """Fuzzer seed 1 case 713: f16 linear with an f32 bias and an epilogue chain."""
    f = Fusion("linear_713")
    a = f.input("a", [m, k], "f16")
    w = f.input("w", [n, k], "f16")
    bias = f.input("bias", [n], "f32")
    y = f.linear(a, w, bias)
    f.output(y)
    z = f.cast(f.tanh(y) / 3.0, "bf16")
    f.output(z)
    f.output(f.relu(z) + 1.25)
    return f


NONE_1894 = {
    "warp_specialization": "none",
    "tile": (128, 64, 64),
    "strategy": "persistent",
    "split_k": 1,
}
NONE_713 = {
    "warp_specialization": "none",
    "raster": "auto",
    "swizzle": 3,
    "split_k": 66,
    "registers": (232, 232),
}
NONE = {"warp_specialization": "none", "tile": (128, 128, 64), "strategy": "persistent"}

RING_CASES: list[tuple[str, Fusion, dict[str, Any], int | None]] = [
    # (name, fusion, schedule, CTAs to run: None for every CTA of the grid)
    ("fuzz_1894", horizontal_1894(), NONE_1894, 2),
    ("fuzz_713", linear_713(), NONE_713, 2),
    # stages > K blocks per tile, several tiles per CTA
    ("stages_over_k_blocks", cases.linear(2000, 2000, 128), {**NONE, "stages": 6}, 4),
    ("one_k_block_4_stages", cases.linear(1200, 4096, 64), {**NONE, "stages": 4}, 4),
    ("k_blocks_5_stages_6", horizontal_1894(2100, 1024, 264), {**NONE_1894, "stages": 6}, 4),
    # none + persistent + horizontal
    ("none_horizontal", cases.horizontal(2000, 2000, 200), {**NONE, "split_k": 1}, 2),
    # none + split-K with one (and two) K blocks per unit (the first: every CTA)
    ("none_split_k_1_block", cases.linear(1024, 1024, 256), {**NONE, "split_k": 4}, None),
    ("none_split_k_2_blocks", cases.linear(1024, 1024, 512), {**NONE, "split_k": 4}, 8),
    ("none_split_k_m1", linear_713(1, 2048, 1024), {**NONE_713, "split_k": 16}, 8),
    # the specialized mainloops on the same shapes
    (
        "cooperative_k_blocks_5",
        horizontal_1894(2100, 1024, 264),
        {**NONE_1894, "warp_specialization": "cooperative", "stages": 6},
        4,
    ),
    (
        "pingpong_split_k_1_block",
        cases.linear(1024, 1024, 256),
        {"warp_specialization": "pingpong", "split_k": 4},
        8,
    ),
]


def lowered(fusion: Fusion, params: dict[str, Any]):
    """The PTX and launch plan of `fusion` under `params` (no ptxas)."""
    module, chosen, _ = run_pipeline(fusion.module, dict(params))
    text, plan = lower_to_ptx(module)
    return text, plan, chosen


def loop_ranges(text: str) -> list[tuple[int, int]]:
    """(first, last) line of every counted loop of the PTX (`loop_N:` ... `loop_end_M:`)."""
    lines = text.splitlines()
    stack: list[int] = []
    ranges: list[tuple[int, int]] = []
    for number, line in enumerate(lines):
        if re.fullmatch(r"loop_\d+:", line.strip()):
            stack.append(number)
        elif re.fullmatch(r"loop_end_\d+:", line.strip()):
            ranges.append((stack.pop(), number))
    assert not stack
    return ranges


def outer_loops(text: str) -> list[str]:
    """The labels of the loops not inside another (the persistent loop of each role)."""
    lines = text.splitlines()
    ranges = loop_ranges(text)
    return [
        lines[first].strip()[:-1]
        for first, last in ranges
        if not any(a < first and last < b for a, b in ranges)
    ]


def ring_registers(text: str) -> set[str]:
    """The stage and phase registers of every mbarrier wait: the parity (or the register
    it is xor'ed from) and the stage the barrier address is computed from."""
    definitions: dict[str, str] = {}
    for line in text.splitlines():
        match = re.match(r"\s*(?:@!?%p\d+\s+)?[\w.]+\s+(%r\d+),", line)
        if match and match.group(1) not in definitions:
            definitions[match.group(1)] = line.strip()
    found: set[str] = set()
    for match in re.finditer(r"try_wait\.parity\.\S+\s+%p\d+, \[(%r\d+)\], (%r\d+);", text):
        address, parity = match.groups()
        xor = re.fullmatch(r"xor\.b32 %r\d+, (%r\d+), %r\d+;", definitions[parity])
        found.add(xor.group(1) if xor else parity)
        mad = re.fullmatch(r"mad\.lo\.u32 %r\d+, (%r\d+), %r\d+, %r\d+;", definitions[address])
        assert mad, definitions[address]
        found.add(mad.group(1))
    return found


def initial_lines(text: str, registers: set[str]) -> dict[str, int]:
    """The line of each register's first definition."""
    first: dict[str, int] = {}
    for number, line in enumerate(text.splitlines()):
        match = re.match(r"\s*mov\.u32 (%r\d+), \d+;", line)
        if match and match.group(1) in registers and match.group(1) not in first:
            first[match.group(1)] = number
    assert set(first) == registers, registers - set(first)
    return first


@pytest.mark.parametrize(
    ("fusion", "params"),
    [pytest.param(f, p, id=name) for name, f, p, _ in RING_CASES],
)
def test_ring_positions_are_made_once_outside_every_loop(fusion: Fusion, params: dict[str, Any]):
    """Each ring position (stage and phase of every role) is set to 0 once, before the
    persistent loop, and only advanced after that."""
    text, _, _ = lowered(fusion, params)
    registers = ring_registers(text)
    assert len(registers) >= 4  # the consumers' position and the loads' (stage, phase)
    ranges = loop_ranges(text)
    lines = text.splitlines()
    for register, line in initial_lines(text, registers).items():
        assert not any(first < line < last for first, last in ranges), (register, lines[line])
        for other in lines[line + 1 :]:
            assert not re.match(rf"\s*mov\.u32 {register}, \d+;", other), (register, other)


@pytest.mark.parametrize(
    ("fusion", "params", "ctas"),
    [pytest.param(f, p, c, id=name) for name, f, p, c in RING_CASES],
)
def test_ring_runs_to_the_end(fusion: Fusion, params: dict[str, Any], ctas: int | None):
    """The model of the CTAs (control flow, mbarrier counts, phases and transaction bytes)
    runs every unit to the end, with threads run far ahead of each other and interleaved."""
    text, plan, _ = lowered(fusion, params)
    assert parse(text).threads == plan.threads
    model = run_grid(text, plan, ctas=ctas)
    ran = plan.grid if ctas is None else ctas
    # thread 0's `bra` back to the persistent loop's head ends each of its units: more
    # units than CTAs, so CTAs went on to a second one
    assert sum(model.jumps[label] for label in outer_loops(text)) > ran, model.jumps
    assert model.tma_loads > 0
    # the first and the last CTA (the last has the fewest units), instruction by instruction
    run_grid(text, plan, ctas=[0, plan.grid - 1], quantum=1)


@pytest.mark.parametrize("name", [c.name for c in cases.CASES])
def test_registered_cases_run_to_the_end(name: str):
    """Every case of tests/unit/cases.py without clusters (the model runs CTAs one after
    another, which cluster CTAs waiting on each other cannot): its first two CTAs."""
    case = cases.case(name)
    try:
        text, plan, _ = lowered(case.fusion(), case.params)
    except ScheduleError as error:  # that every case compiles is test_cuda_backend's
        pytest.skip(f"refused: {error}")
    if plan.cluster != 1:
        pytest.skip(f"{plan.cluster}-CTA clusters: the model runs CTAs one after another")
    assert run_grid(text, plan, ctas=2).tma_loads > 0


def test_the_hang_cases_get_the_schedules_that_hung():
    """Both fuzzer cases still get the schedule under which they hung: several units per
    CTA, and (1894) more stages than K blocks, (713) one K block per split-K unit."""
    _, plan, chosen = lowered(horizontal_1894(), NONE_1894)
    assert (chosen.stages, chosen.split_k, chosen.strategy) == (6, 1, "persistent")
    assert plan.grid < -(-8191 // 128) * (1024 // 64) and chosen.stages > -(-264 // 64)
    _, plan, chosen = lowered(linear_713(), NONE_713)
    assert (chosen.split_k, chosen.strategy, chosen.tile[2]) == (64, "persistent", 64)
    assert (16384 // chosen.tile[1]) * 64 > plan.grid


def test_model_finds_a_load_position_reset_per_tile():
    """The defect put back by hand (thread 0's stage and phase set to 0 at the top of the
    persistent loop) is a deadlock of the model, at the first wait of the second tile."""
    text, plan, _ = lowered(horizontal_1894(2100, 1024, 264), NONE_1894)
    registers = sorted(ring_registers(text), key=lambda r: int(r[2:]))
    assert len(registers) == 4
    consumer = set(registers[:2])
    loads = [r for r in registers if r not in consumer]
    reset = "".join(f"\tmov.u32 {r}, 0;\n" for r in loads)
    broken = text.replace("loop_1:\n", "loop_1:\n" + reset, 1)
    assert broken != text
    with pytest.raises(RingDeadlock, match="every live thread is blocked"):
        run_grid(broken, plan, ctas=1)


def test_model_finds_a_short_expect_tx():
    """A stage that expects fewer bytes than its loads bring is a RingError."""
    text, plan, _ = lowered(horizontal_1894(700, 1024, 264), NONE_1894)
    short = re.sub(r"(expect_tx\.shared::cta\.b64 _, \[%r\d+\]), 32768;", r"\1, 16384;", text)
    assert short != text
    with pytest.raises(RingError):
        run_grid(short, plan, ctas=1)


@needs_ptxas
@pytest.mark.parametrize(
    ("fusion", "params"),
    [
        pytest.param(horizontal_1894(), NONE_1894, id="fuzz_1894"),
        pytest.param(linear_713(), NONE_713, id="fuzz_713"),
    ],
)
def test_the_hang_cases_assemble(fusion: Fusion, params: dict[str, Any]):
    """Both assemble with ptxas for sm_90a, no spills, no stack."""
    kernel = mmcomp.compile(fusion, backend="cuda", **params)
    report = kernel.report
    assert report is not None
    assert report.spill_stores == report.spill_loads == 0
