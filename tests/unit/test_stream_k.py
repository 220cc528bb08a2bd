"""Stream-K and the hybrid on the CPU: params, materialization, the executor's K-block
ledger, every fusion family on ragged shapes, dynamic M, and the Hopper lowering's PTX.

The executor proves each run: every (tile, K block) product computed exactly once, every
tile's accumulator summed from all its K blocks in K order (the segments in CTA order),
every output element written once. Running the CTAs in reverse changes which CTA arrives
last at every shared tile, and must not change a bit of the outputs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from cases import (
    broadcast_inputs,
    broadcast_silu_mul,
    gelu_bias,
    horizontal,
    linear,
    matmul,
    row_ops,
    silu_mul,
)
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation

import mmcomp
from mmcomp.analysis.schedule_plan import tail_segments
from mmcomp.arch.ptxas import PtxasError, find_tool
from mmcomp.dialects import sched
from mmcomp.dialects.sched import ScheduleParams, ScheduleParamsAttr
from mmcomp.errors import ScheduleError
from mmcomp.frontend.builder import Fusion
from mmcomp.interp.executor import CoverageError, Execution, execute, kernel_of
from mmcomp.interp.reference import reference
from mmcomp.pipeline import run_pipeline

STRATEGIES = ("stream-k", "hybrid-stream-k")
TILE = {"tile": (128, 64, 64)}
TOLERANCE = {"bf16": 1e-2, "f16": 1e-2, "f32": 1e-3}

FAMILIES: dict[str, Callable[[], Fusion]] = {
    "linear": lambda: linear(200, 300, 500),
    "linear_f16_bias": lambda: linear(130, 264, 450, "f16", bias=True),
    "matmul_batch": lambda: matmul(150, 130, 300, batch=2),
    "gelu_bias": lambda: gelu_bias(190, 200, 400),
    "silu_mul": lambda: silu_mul(140, 190, 330),
    "horizontal": lambda: horizontal(130, 200, 350),
    "row_ops": lambda: row_ops(150, 130, 500),
    "broadcast_inputs": lambda: broadcast_inputs(100, 150, 520),
    "broadcast_silu_mul": lambda: broadcast_silu_mul(170, 140, 260),
}
"""Every family of tests/unit/cases.py at a ragged shape whose tiles split over CTAs."""


def random_inputs(fusion: Fusion, seed: int = 0) -> list[np.ndarray]:
    """Fixed random inputs (standard normal) of the fusion's dtypes."""
    rng = np.random.default_rng(seed)
    return [
        rng.standard_normal(value.shape).astype(np.float32).astype(value.numpy_dtype)
        for value in fusion.inputs
    ]


def materialized(fusion: Fusion, **params: Any) -> tuple[ModuleOp, ScheduleParams]:
    """The interp back end's kernel module for `fusion` under `params`."""
    module, chosen, _ = run_pipeline(fusion.module, params, backend="interp")
    return module, chosen


def check_against_float64(fusion: Fusion, inputs: list[np.ndarray], run: Execution) -> None:
    """Every output within its dtype's tolerance of the float64 reference."""
    want = reference(fusion, *inputs, accumulate=np.float64)
    for index, (got, truth) in enumerate(zip(run.outputs, want, strict=True)):
        truth = np.asarray(truth, dtype=np.float64)
        error = np.max(np.abs(np.asarray(got).astype(np.float64) - truth)) / np.max(np.abs(truth))
        assert error < TOLERANCE[fusion.outputs[index].dtype], (index, error)


def tiles_summed(run: Execution) -> dict[tuple[object, ...], list[int]]:
    """The K starts of each (contraction, tile) in the order its epilogue's sum holds them."""
    return {(blocks[0][0], blocks[0][1]): [k0 for _, _, k0 in blocks] for _, blocks in run.sums}


# Params


def hybrid_both_orders(fusion: Fusion) -> tuple[Execution, Execution]:
    """The hybrid at 128x64x64 run by the executor in CTA order and in reverse, the first
    checked against float64 and the two bit for bit."""
    module, _ = materialized(fusion, strategy="hybrid-stream-k", tile=(128, 64, 64))
    inputs = random_inputs(fusion)
    forward = execute(module, inputs)
    backward = execute(module, inputs, cta_order=range(131, -1, -1))
    check_against_float64(fusion, inputs, forward)
    assert forward.outputs[0].tobytes() == backward.outputs[0].tobytes()
    return forward, backward


def test_params_parse_and_print_the_stream_k_strategies():
    """Both strategies are values of `strategy`; printed as written."""
    for strategy in STRATEGIES:
        params = ScheduleParams.partial({"strategy": strategy})
        params.validate()
        assert params.format() == f"strategy = {strategy}"
        assert params.stream_k
    assert not ScheduleParams().stream_k


REFUSED = [
    ({"split_k": 2}, "split_k must be 1"),
    ({"cluster": (2, 1)}, "stream-K runs with cluster 1x1"),
]


@pytest.mark.parametrize(("changes", "named"), REFUSED)
def test_stream_k_refuses_split_k_and_clusters(changes: dict[str, object], named: str):
    """Stream-K splits K itself, and its CTAs load alone."""
    with pytest.raises(ScheduleError, match=named):
        ScheduleParams(strategy="stream-k", **changes).validate()  # pyright: ignore[reportArgumentType]


def test_attribute_text_names_the_bad_combination():
    """The parser reports the combination in #sched.params text."""
    from xdsl.parser import Parser

    from mmcomp.ir.registry import context

    text = "#sched.params<strategy = hybrid-stream-k, split_k = 3>"
    with pytest.raises(Exception, match="split_k must be 1"):
        Parser(context(), text).parse_attribute()
    attr = Parser(context(), "#sched.params<strategy = hybrid-stream-k>").parse_attribute()
    assert isinstance(attr, ScheduleParamsAttr) and attr.params.strategy == "hybrid-stream-k"


def test_heuristic_does_not_split_k_under_stream_k():
    """A small problem the heuristic would split K for keeps split_k = 1 under stream-K."""
    fusion = linear(64, 512, 8192)
    assert mmcomp.compile(fusion, backend="interp").params.split_k > 1
    chosen = mmcomp.compile(fusion, backend="interp", strategy="stream-k").params
    assert chosen.split_k == 1 and chosen.strategy == "stream-k"


def test_static_iteration_products_past_32_bits_are_refused():
    """CTA c's range starts at c x iterations / grid: 32-bit, so the product is bounded."""
    fusion = linear(65536, 65536, 65536)
    with pytest.raises(ScheduleError, match="32-bit iteration arithmetic"):
        mmcomp.compile(fusion, backend="interp", strategy="stream-k", tile=(128, 64, 64))


# Materialization and the executor's proof


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("family", list(FAMILIES))
def test_families_on_ragged_shapes(family: str, strategy: str):
    """Each family under each strategy: the float64 reference, the K-block ledger, and the
    same bits when the CTAs run in reverse (a different last arriver at every tile)."""
    fusion = FAMILIES[family]()
    module, chosen = materialized(fusion, strategy=strategy, **TILE)
    assert chosen.strategy == strategy
    inputs = random_inputs(fusion)
    forward = execute(module, inputs)
    check_against_float64(fusion, inputs, forward)
    summed = tiles_summed(forward)
    assert all(starts == sorted(starts) for starts in summed.values())
    assert any(len(starts) > 1 for starts in summed.values())
    backward = execute(module, inputs, cta_order=range(forward.grid - 1, -1, -1))
    for a, b in zip(forward.outputs, backward.outputs, strict=True):
        assert np.asarray(a).tobytes() == np.asarray(b).tobytes()
    assert tiles_summed(backward) == summed


def test_stream_k_splits_the_iterations_evenly():
    """16 tiles of 5 K blocks on 132 SMs: a grid of 80 CTAs, one K block each; every tile
    summed from its 5 segments in K order, by whichever CTA arrived last."""
    fusion = linear(500, 256, 300)
    module, _ = materialized(fusion, strategy="stream-k", tile=(128, 64, 64))
    run = execute(module, random_inputs(fusion))
    assert run.grid == 4 * 4 * 5
    assert len(run.sums) == 16
    assert all(starts == [0, 64, 128, 192, 256] for starts in tiles_summed(run).values())
    # Each tile is finished by the last of its five CTAs to arrive: run in order, the fifth.
    assert sorted({cta for cta, _ in run.sums}) == list(range(4, 80, 5))


def test_hybrid_runs_whole_waves_data_parallel():
    """288 tiles on 132 CTAs: two whole waves data-parallel (no workspace), the other 24
    tiles split into 5 segments each; pure stream-K splits tiles from the first."""
    fusion = linear(1100, 2000, 100)
    inputs = random_inputs(fusion)
    runs = {}
    for strategy in STRATEGIES:
        module, _ = materialized(fusion, strategy=strategy, tile=(128, 64, 64))
        runs[strategy] = execute(module, inputs)
        check_against_float64(fusion, inputs, runs[strategy])
    hybrid = runs["hybrid-stream-k"]
    assert hybrid.grid == 132
    # Data-parallel wave 0: CTA c stores tile c first, whole.
    first_stores = [next(start for cta, _, start in hybrid.trace if cta == c) for c in range(132)]
    assert len(set(first_stores)) == 132
    for cta in range(132):
        assert hybrid.tiles_per_cta[cta] >= 2


def test_hybrid_tail_in_two_rounds():
    """200 tiles of 3 K blocks on 132 CTAs: 1 wave data-parallel, the 68 tail tiles in 3
    segments, 204 units: CTAs 0 to 71 take a second in slot 1; the reverse CTA order
    gives the same bits."""
    fusion = linear(1250, 1280, 192)
    forward, backward = hybrid_both_orders(fusion)
    assert len(forward.sums) == 200
    # Tail tile t: segments on units t, t + 68 and t + 136 (CTA t + 4, slot 1); unit
    # t + 68 is CTA t - 64's second for t >= 64. In CTA order the highest CTA of the three
    # arrives last (t + 68, or t + 4 for t >= 64), in reverse the lowest (t, or t - 64).
    assert forward.tiles_per_cta == (1,) * 68 + (3,) * 4 + (2,) * 60
    assert backward.tiles_per_cta == (3,) * 4 + (2,) * 60 + (1,) * 68


def test_hybrid_keeps_a_tail_over_two_thirds_whole():
    """360 tiles on 132 CTAs: the 96 tail tiles stay whole (one segment each), so the
    hybrid stores what the persistent schedule stores, CTA by CTA in the same order (tiles
    c, c + 132 and, below 96, c + 264), with the same bits."""
    fusion = linear(2200, 1280, 192)
    inputs = random_inputs(fusion)
    runs = {}
    for strategy in ("hybrid-stream-k", "persistent"):
        module, _ = materialized(fusion, strategy=strategy, tile=(128, 64, 64))
        runs[strategy] = execute(module, inputs)
    hybrid, persistent = runs["hybrid-stream-k"], runs["persistent"]
    check_against_float64(fusion, inputs, hybrid)
    assert hybrid.grid == persistent.grid == 132
    assert hybrid.tiles_per_cta == (3,) * 96 + (2,) * 36
    assert hybrid.trace == persistent.trace
    assert hybrid.outputs[0].tobytes() == persistent.outputs[0].tobytes()


@pytest.mark.parametrize(
    ("tail", "k_blocks", "segments"),
    [(0, 64, 1), (20, 64, 6), (20, 4, 4), (16, 224, 8), (68, 128, 3), (100, 224, 1), (116, 64, 1)],
)
def test_tail_segments(tail: int, k_blocks: int, segments: int):
    """One round of P div R segments, two rounds where that ends sooner (68 tiles: 3
    segments in 2 rounds, 2/3 of a tile, against 1 segment), capped at 8 and the K blocks;
    a tail over half a wave stays whole."""
    assert tail_segments(tail, 132, k_blocks) == segments


def test_hybrid_splits_the_tail_segment_major():
    """284 tiles of 12 K blocks on 132 CTAs: 2 waves data-parallel, the 20 tail tiles in
    6 segments of 2 K blocks; segment j of tail tile t runs on CTA 20 j + t, so the CTAs
    meet the tail tiles side by side at one K offset. In CTA order the last segment
    (CTA t + 100) finishes each tail tile, in reverse order the first (CTA t); the bits
    are the same."""
    fusion = linear(512, 71 * 64, 12 * 64)
    forward, backward = hybrid_both_orders(fusion)
    assert tiles_summed(forward) == tiles_summed(backward)
    assert len(forward.sums) == 284
    finishers = sorted(cta for cta, count in enumerate(forward.tiles_per_cta) if count == 3)
    assert finishers == list(range(100, 120))
    first = sorted(cta for cta, count in enumerate(backward.tiles_per_cta) if count == 3)
    assert first == list(range(20))


def loop_holding(kernel: Operation, op_type: type[Operation]) -> scf.ForOp:
    """The first scf.for of `kernel` whose body holds an op of `op_type`."""
    return next(
        op
        for op in kernel.walk()
        if isinstance(op, scf.ForOp)
        and any(isinstance(inner, op_type) for inner in op.body.block.ops)
    )


def restart_k_loop(module: ModuleOp) -> ModuleOp:
    """The kernel with its K loop starting at block 0 (segments recompute earlier blocks)."""
    module = module.clone()
    kernel = kernel_of(module)
    mainloop = loop_holding(kernel, sched.MmaOp)
    zero = next(op.results[0] for op in kernel.body.block.ops if op.results[0].name_hint == "c0")
    mainloop.operands[0] = zero
    return module


def test_ledger_catches_a_k_block_computed_twice():
    """A K loop that starts every segment at block 0 computes early blocks again."""
    fusion = linear(500, 256, 300)
    module, _ = materialized(fusion, strategy="stream-k", tile=(128, 64, 64))
    with pytest.raises(CoverageError, match="computed [0-9]+ times"):
        execute(restart_k_loop(module), random_inputs(fusion))


def test_ledger_catches_a_partial_left_out():
    """A fixup that skips the first segment sums a tile without its first K blocks."""
    fusion = linear(500, 256, 300)
    module, _ = materialized(fusion, strategy="stream-k", tile=(128, 64, 64))
    module = module.clone()
    kernel = kernel_of(module)
    loop = loop_holding(kernel, sched.AccumulatePartialOp)
    one = next(op.results[0] for op in kernel.body.block.ops if op.results[0].name_hint == "c1")
    later = arith.AddiOp(loop.lb, one)
    loop.parent_block().insert_op_before(later, loop)  # pyright: ignore[reportOptionalMemberAccess]
    loop.operands[0] = later.result
    with pytest.raises(CoverageError, match="expected each of the 5 K blocks"):
        execute(module, random_inputs(fusion))


def test_cta_order_must_be_a_permutation():
    fusion = linear(200, 300, 500)
    module, _ = materialized(fusion, strategy="stream-k", **TILE)
    with pytest.raises(ScheduleError, match="permutation"):
        execute(module, random_inputs(fusion), cta_order=[0, 0])


def test_split_k_sums_in_slice_order_whoever_arrives_last():
    """The ledger holds for split-K too: slice order, the same in reverse CTA order."""
    fusion = linear(300, 264, 2048)
    module, _ = materialized(fusion, split_k=3, tile=(128, 128, 64))
    inputs = random_inputs(fusion)
    forward = execute(module, inputs)
    backward = execute(module, inputs, cta_order=range(forward.grid - 1, -1, -1))
    assert tiles_summed(forward) == tiles_summed(backward)
    assert forward.outputs[0].tobytes() == backward.outputs[0].tobytes()
    starts = next(iter(tiles_summed(forward).values()))
    assert starts[:2] == [0, 3 * 64]


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_dynamic_m(strategy: str):
    """One kernel for every M: the launch function sizes the grid and the counters."""
    fusion = Fusion("dynamic_linear")
    a = fusion.input("a", ("m", 300), "bf16")
    w = fusion.input("w", [500, 300], "bf16")
    b = fusion.input("bias", [500], "bf16")
    fusion.output(fusion.cast(fusion.linear(a, w, b), "bf16"))
    module, _ = materialized(fusion, strategy=strategy, **TILE)
    rng = np.random.default_rng(1)
    for m in (1, 77, 700, 2500):
        inputs = [
            rng.standard_normal((m, 300)).astype(ml_dtypes.bfloat16),
            rng.standard_normal((500, 300)).astype(ml_dtypes.bfloat16),
            rng.standard_normal(500).astype(ml_dtypes.bfloat16),
        ]
        run = execute(module, inputs)
        tiles = -(-m // 128) * -(-500 // 64)
        assert run.grid == min(132, tiles * 5)
        check_against_float64(fusion, inputs, run)


def test_materialized_workspace_is_per_cta():
    """Two partial slots per CTA, one arrival counter per tile."""
    fusion = linear(200, 300, 500)
    module, _ = materialized(fusion, strategy="stream-k", **TILE)
    text = str(module)
    assert 'memref<80x2x128x64xf32> {sched.workspace = "partials"}' in text
    assert 'memref<10xi32> {sched.workspace = "arrivals"}' in text
    assert "sched.arrive_segment" in text and "sched.accumulate_partial" in text


# The Hopper lowering


def _ptxas() -> bool:
    try:
        find_tool("ptxas")
    except PtxasError:
        return False
    return True


@pytest.mark.skipif(not _ptxas(), reason="ptxas is not available")
@pytest.mark.parametrize(
    ("family", "params"),
    [
        ("linear", {"epilogue": "registers"}),
        ("linear", {"epilogue": "smem", "tile": (128, 256, 64)}),
        ("gelu_bias", {"warp_specialization": "pingpong", "tile": (64, 128, 64)}),
        ("horizontal", {"warp_specialization": "none", "tile": (128, 64, 64)}),
        ("silu_mul", {"epilogue": "registers", "tile": (128, 128, 64)}),
    ],
)
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_ptx_assembles_without_spills(family: str, params: dict[str, Any], strategy: str):
    """The kernel counts segments with an acq_rel atomic and sums them from the workspace;
    ptxas assembles it with 0 spills, the schedule as pinned."""
    fusion = {"linear": linear, "gelu_bias": gelu_bias, "horizontal": horizontal}.get(
        family, silu_mul
    )(1000, 1000, 1000)
    kernel = mmcomp.compile(fusion, strategy=strategy, **params)
    assert kernel.params.strategy == strategy
    for key, value in params.items():
        assert getattr(kernel.params, key) == value
    report = kernel.report
    assert report.spill_stores == 0 and report.spill_loads == 0 and report.stack_frame == 0
    ptx = kernel.ptx
    assert "atom.global.acq_rel.gpu.add.u32" in ptx
    assert ptx.count("fence.acq_rel.gpu") >= 2


RING_CASES: list[tuple[str, Callable[[], Fusion], dict[str, Any]]] = [
    ("cooperative", lambda: linear(300, 256, 1000), {"tile": (128, 128, 64)}),
    (
        "pingpong",
        lambda: gelu_bias(300, 256, 1000),
        {"tile": (64, 128, 64), "warp_specialization": "pingpong"},
    ),
    (
        "none",
        lambda: linear(300, 256, 1000),
        {"tile": (128, 128, 64), "warp_specialization": "none"},
    ),
    ("smem", lambda: linear(300, 256, 1000), {"tile": (128, 128, 64), "epilogue": "smem"}),
    (
        "pingpong_smem",
        lambda: gelu_bias(300, 256, 1000),
        {"tile": (64, 128, 64), "warp_specialization": "pingpong", "epilogue": "smem"},
    ),
    ("horizontal", lambda: horizontal(300, 256, 640), {"tile": (128, 64, 64)}),
]
"""Kernels whose every tile is split over several CTAs (96 to 132 of them)."""


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize(("make", "params"), [pytest.param(m, p, id=n) for n, m, p in RING_CASES])
def test_ring_and_counters_run_to_the_end(
    make: Callable[[], Fusion], params: dict[str, Any], strategy: str
):
    """The PTX model of tests/unit/ptx_ring_model.py runs every CTA of the grid to the end
    (mbarrier ring, named barriers, the arrival atomics; no thread waits forever), and
    every tile's counter is back at 0: all its segments arrived, and the last reset it."""
    from ptx_ring_model import run_grid

    from mmcomp.backend.kernel import lower_to_ptx

    module, _, _ = run_pipeline(make().module, {"strategy": strategy, **params})
    text, plan = lower_to_ptx(module)
    assert "atom.global.acq_rel.gpu.add.u32" in text
    model = run_grid(text, plan)
    assert model.tma_loads > 0
    assert model.global_u32 and set(model.global_u32.values()) == {0}


@pytest.mark.parametrize(
    ("m", "n", "k"),
    [
        pytest.param(2200, 2100, 300, id="one_round"),
        pytest.param(1250, 2500, 700, id="two_rounds"),
    ],
)
def test_ring_of_the_hybrid_with_data_parallel_waves(m: int, n: int, k: int):
    """306 tiles on 132 CTAs: two data-parallel waves, then 42 tail tiles in 3 segments
    (one round); 200 tiles: one wave, then 68 tail tiles in 3 segments, 204 units (two
    rounds, the second in slot 1)."""
    from ptx_ring_model import run_grid

    from mmcomp.backend.kernel import lower_to_ptx

    fusion = linear(m, n, k)
    params = {"strategy": "hybrid-stream-k", "tile": (128, 128, 64)}
    module, _, _ = run_pipeline(fusion.module, params)
    text, plan = lower_to_ptx(module)
    model = run_grid(text, plan)
    assert model.global_u32 and set(model.global_u32.values()) == {0}
