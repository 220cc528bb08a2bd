"""The grouped schedule on the CPU: the tile list computed from the group sizes, proven by
the executor (every row of every group written exactly once, no row of no group written,
every (tile, K block) product once) against the float64 reference; the group lookup
against a brute-force walk; the cuda kernels assembled by ptxas without spills.

The fusions: a grouped linear over contiguous groups (offsets) with a dynamic T, with the
per-group bias, the per-row scale and casts; the masked layout (counts); the fused gate/up
pair with SwiGLU. The routings: ragged, with empty groups (first, last, runs of them),
all rows in one group, rows past the last group.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
from xdsl.dialects.builtin import IntAttr

import mmcomp
from mmcomp.dialects import sched
from mmcomp.errors import ScheduleError
from mmcomp.interp.executor import CoverageError, execute
from mmcomp.interp.tile_functions import group_tile

N, K = 48, 80
"""N ragged against the tile; K one full and one partial K block of 64."""


def contiguous(groups: int, bias: bool = False, scale: bool = False) -> mmcomp.Fusion:
    """y = (x w[g]^T + bias[g]) * scale, cast to bf16 where there is an epilogue."""
    f = mmcomp.Fusion("grouped")
    x = f.input("x", ("t", K), "bf16")
    w = f.input("w", (groups, N, K), "bf16")
    offsets = f.input("offsets", (groups,), "i32")
    b = f.input("bias", (groups, N), "bf16") if bias else None
    s = f.input("scale", ("t", 1), "f32") if scale else None
    y = f.grouped_linear(x, w, offsets, bias=b, scale=s)
    f.output(f.cast(y, "bf16") if bias or scale else y)
    return f


def masked(groups: int, rows: int) -> mmcomp.Fusion:
    """y = gelu(x[g] w[g]^T + bias[g]) on [G, Mmax, K] with counts."""
    f = mmcomp.Fusion("masked")
    x = f.input("x", (groups, rows, K), "bf16")
    w = f.input("w", (groups, N, K), "bf16")
    counts = f.input("counts", (groups,), "i32")
    b = f.input("bias", (groups, N), "f32")
    f.output(f.gelu(f.grouped_linear(x, w, counts=counts, bias=b)))
    return f


def swiglu(groups: int) -> mmcomp.Fusion:
    """silu(x wg[g]^T) * (x wu[g]^T): the gate/up pair of one kernel."""
    f = mmcomp.Fusion("swiglu")
    x = f.input("x", ("t", K), "bf16")
    gate = f.input("gate", (groups, N, K), "bf16")
    up = f.input("up", (groups, N, K), "bf16")
    offsets = f.input("offsets", (groups,), "i32")
    hidden = f.silu(f.grouped_linear(x, gate, offsets)) * f.grouped_linear(x, up, offsets)
    f.output(f.cast(hidden, "bf16"))
    return f


def ragged_offsets(rng: np.random.Generator, groups: int, rows: int, empty: Sequence[int] = ()):
    """Cumulative ends of `groups` random groups of `rows` rows, the groups in `empty`
    holding none."""
    cuts = np.sort(rng.integers(0, rows + 1, size=groups))
    cuts[-1] = rows
    sizes = np.diff(np.concatenate([[0], cuts]))
    for group in empty:
        sizes[group] = 0
    return np.cumsum(sizes).astype(np.int32)


def _inputs(fusion: mmcomp.Fusion, rng: np.random.Generator, sizes: np.ndarray, rows: int):
    """Random non-zero inputs of `fusion` at `rows` rows (T or Mmax), the group sizes
    `sizes`."""
    arrays: list[np.ndarray] = []
    for value in fusion.inputs:
        if value.dtype == "i32":
            arrays.append(sizes)
            continue
        shape = tuple(rows if extent == mmcomp.DYNAMIC else extent for extent in value.shape)
        data = rng.uniform(0.5, 1.5, size=shape) * rng.choice([-1, 1], size=shape)
        arrays.append(data.astype(ml_dtypes.bfloat16 if value.dtype == "bf16" else np.float32))
    return arrays


def _check(fusion: mmcomp.Fusion, inputs: list[np.ndarray], **params: object) -> object:
    """Execute the interp kernel (the coverage is checked as it runs) and compare with the
    float64 reference on the rows of the groups; the Execution."""
    kernel = mmcomp.compile(fusion, backend="interp", **params)
    rows = inputs[0].shape[0]
    chosen = kernel.kernel_for(rows) if hasattr(kernel, "kernel_for") else kernel  # pyright: ignore[reportAttributeAccessIssue]
    execution = execute(chosen.module, inputs)  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType, reportUnknownArgumentType]
    reference = np.asarray(mmcomp.reference(fusion, *inputs)[0], dtype=np.float64)
    got = execution.outputs[0].astype(np.float64)
    rows_of_groups = ~np.isnan(reference)
    assert (got[~rows_of_groups] == 0).all(), "a row of no group was written"
    scale = max(float(np.abs(reference[rows_of_groups]).max(initial=0.0)), 1e-6)
    error = float(np.abs(got - reference)[rows_of_groups].max(initial=0.0)) / scale
    assert error < 2e-2, error
    return execution


@pytest.mark.parametrize("groups", [1, 8, 64, 128])
def test_contiguous_groups_every_row_once(groups: int) -> None:
    rng = np.random.default_rng(groups)
    fusion = contiguous(groups)
    for rows in (1, 129, 700):
        empty = [0, groups - 1, groups // 2] if groups > 2 else []
        offsets = ragged_offsets(rng, groups, rows, empty)
        _check(fusion, _inputs(fusion, rng, offsets, rows))


def test_routings_with_empty_groups_and_rows_of_no_group() -> None:
    rng = np.random.default_rng(7)
    fusion = contiguous(8, bias=True, scale=True)
    rows = 300
    routings = [
        np.array([0, 0, 0, 300, 300, 300, 300, 300], np.int32),  # one group holds all
        np.array([0, 0, 0, 0, 0, 0, 0, 0], np.int32),  # every group empty
        np.array([1, 2, 3, 4, 5, 6, 7, 200], np.int32),  # rows past the last group
        np.array([128, 256, 256, 257, 257, 300, 300, 300], np.int32),  # tile-aligned ends
        ragged_offsets(rng, 8, rows, [1, 2, 3]),
    ]
    for offsets in routings:
        execution = _check(fusion, _inputs(fusion, rng, offsets, rows))
        writes = execution.writes[0]  # pyright: ignore[reportAttributeAccessIssue]
        assert (writes[: offsets[-1]] == 1).all() and (writes[offsets[-1] :] == 0).all()


def test_dynamic_t_one_compile_and_cta_order() -> None:
    rng = np.random.default_rng(11)
    fusion = contiguous(4, bias=True)
    kernel = mmcomp.compile(fusion, backend="interp", schedule_m=256)
    for rows in (1, 2, 63, 64, 65, 127, 128, 129, 400):
        offsets = ragged_offsets(rng, 4, rows, [1])
        inputs = _inputs(fusion, rng, offsets, rows)
        forward = execute(kernel.module, inputs)
        backward = execute(kernel.module, inputs, cta_order=range(forward.grid)[::-1])
        assert np.array_equal(forward.outputs[0], backward.outputs[0])


def test_masked_layout_skips_rows_past_each_count() -> None:
    rng = np.random.default_rng(5)
    fusion = masked(6, 150)
    counts = np.array([0, 1, 150, 129, 128, 17], np.int32)
    execution = _check(fusion, _inputs(fusion, rng, counts, 6))
    writes = execution.writes[0]  # pyright: ignore[reportAttributeAccessIssue]
    for group, count in enumerate(counts):
        assert (writes[group, :count] == 1).all() and (writes[group, count:] == 0).all()
    # Tiles past a group's count are skipped, not computed: 2 m tiles of 128 rows per
    # group, of which the counts leave 0, 1, 2, 2, 1, 1 (the products of the others only).
    products = {(tile, k0) for _, blocks in execution.sums for _, tile, k0 in blocks}  # pyright: ignore[reportAttributeAccessIssue]
    assert len(products) == 7 * 1 * 2


def test_swiglu_gate_and_up_in_one_kernel() -> None:
    rng = np.random.default_rng(3)
    fusion = swiglu(8)
    offsets = ragged_offsets(rng, 8, 333, [0, 5])
    _check(fusion, _inputs(fusion, rng, offsets, 333))


def test_a_wrong_lookup_is_caught() -> None:
    """A lookup whose tiles are narrower than the loads' and stores' (tile_m 64 against
    128-row tiles) gives overlapping tiles: the write count names a doubled element."""
    rng = np.random.default_rng(2)
    fusion = contiguous(4)
    kernel = mmcomp.compile(fusion, backend="interp", schedule_m=256)
    for op in kernel.module.walk():
        if isinstance(op, sched.GroupTileOp):
            op.properties["tile_m"] = IntAttr(64)
    offsets = ragged_offsets(rng, 4, 500)
    with pytest.raises(CoverageError, match="expected exactly once"):
        execute(kernel.module, _inputs(fusion, rng, offsets, 500))


def test_group_lookup_matches_a_walk_of_the_groups() -> None:
    rng = np.random.default_rng(0)
    for _ in range(300):
        groups = int(rng.choice([1, 2, 3, 7, 8, 64, 128, 256]))
        rows = int(rng.integers(0, 2000))
        tile_m = int(rng.choice([64, 128, 256]))
        offsets = ragged_offsets(rng, groups, rows, list(rng.integers(0, groups, size=3)))
        starts = [0, *(int(end) for end in offsets[:-1])]
        firsts = [start // tile_m + group for group, start in enumerate(starts)]
        covered = np.zeros(rows, np.int64)
        for tile in range(sched.group_tiles_bound(rows, tile_m, groups)):
            group, start, end = group_tile(offsets, tile, tile_m)
            assert group == max(g for g, first in enumerate(firsts) if first <= tile)
            assert (start, end) == (starts[group], offsets[group])
            m0 = start + (tile - firsts[group]) * tile_m
            covered[m0 : min(m0 + tile_m, end)] += 1
        assert (covered[: offsets[-1]] == 1).all() and (covered[offsets[-1] :] == 0).all()


def group_major_order(
    offsets: np.ndarray, rows: int, tile: tuple[int, int], n: int, raster: str, swizzle: int
) -> list[tuple[int, int] | None]:
    """The (m0, n0) of each unit of a contiguous grouped kernel, None for a unit without
    rows: group by group (group g's units from (floor(offsets[g - 1] / tile m) + g) x the
    n tiles), each group's tiles in bands of `swizzle` tiles along the raster's other
    axis (the last band shorter), walked along that axis first."""
    tile_m, tile_n = tile
    groups, tiles_n = len(offsets), -(-n // tile_n)
    bound = rows // tile_m + groups
    order: list[tuple[int, int] | None] = []
    for group in range(groups):
        start = 0 if group == 0 else int(offsets[group - 1])
        tiles = -(-(int(offsets[group]) - start) // tile_m)
        following = int(offsets[group]) // tile_m + group + 1 if group < groups - 1 else bound
        units = (following - (start // tile_m + group)) * tiles_n
        walk: list[tuple[int, int]] = []
        if raster == "n":
            for band in range(0, tiles, swizzle):
                walk += [
                    (j, k) for k in range(tiles_n) for j in range(band, min(band + swizzle, tiles))
                ]
        else:
            for band in range(0, tiles_n, swizzle):
                walk += [
                    (j, k) for j in range(tiles) for k in range(band, min(band + swizzle, tiles_n))
                ]
        order += [(start + j * tile_m, k * tile_n) for j, k in walk]
        order += [None] * (units - len(walk))
    assert len(order) == bound * tiles_n
    return order


@pytest.mark.parametrize(("raster", "swizzle"), [("n", 2), ("n", 1), ("m", 2), ("m", 8)])
def test_tiles_walk_group_by_group(raster: str, swizzle: int) -> None:
    """Each CTA stores its tiles in the group-major order: the units of a group are
    consecutive, swizzled within the group, so no band holds two groups' tiles."""
    rng = np.random.default_rng(13)
    f = mmcomp.Fusion("grouped")
    x = f.input("x", ("t", K), "bf16")
    w = f.input("w", (5, 5 * 64, K), "bf16")
    offsets = f.input("offsets", (5,), "i32")
    f.output(f.grouped_linear(x, w, offsets))
    params = dict(tile=(64, 64, 64), raster=raster, swizzle=swizzle, schedule_m=700)
    for routing in (
        np.array([200, 200, 390, 640, 650], np.int32),
        np.array([0, 64, 64, 700, 700], np.int32),
        ragged_offsets(rng, 5, 700, [2]),
    ):
        execution = _check(f, _inputs(f, rng, routing, 700), **params)
        order = group_major_order(routing, 700, (64, 64), 5 * 64, raster, swizzle)
        grid = execution.grid  # pyright: ignore[reportAttributeAccessIssue]
        for cta in range(grid):
            expected = [unit for unit in order[cta::grid] if unit is not None]
            stored = [starts for block, _, starts in execution.trace if block == cta]  # pyright: ignore[reportAttributeAccessIssue]
            assert stored == expected, cta


def test_group_limit_and_fixed_parameters_are_refused() -> None:
    with pytest.raises(ScheduleError, match="split_k=2: a grouped kernel runs with split_k=1"):
        mmcomp.compile(contiguous(8), backend="interp", split_k=2)
    with pytest.raises(ScheduleError, match="warp_specialization='pingpong'"):
        mmcomp.compile(contiguous(8), warp_specialization="pingpong")
    with pytest.raises(ScheduleError, match="at most 1024 groups"):
        mmcomp.compile(contiguous(1025), backend="interp")


@pytest.mark.parametrize(
    ("groups", "rows", "n", "k"),
    [(8, 16432, 14336, 4096), (64, 8720, 2816, 2048), (128, 5056, 768, 2048)],
)
def test_cuda_kernels_assemble_without_spills(groups: int, rows: int, n: int, k: int) -> None:
    f = mmcomp.Fusion("grouped")
    x = f.input("x", ("t", k), "bf16")
    w = f.input("w", (groups, n, k), "bf16")
    offsets = f.input("offsets", (groups,), "i32")
    f.output(f.cast(f.grouped_linear(x, w, offsets), "bf16"))
    kernel = mmcomp.compile(f, schedule_m=rows)
    report = kernel.report  # pyright: ignore[reportAttributeAccessIssue]
    assert report.spill_stores == 0 and report.spill_loads == 0, report
    assert kernel.params.warp_specialization == "cooperative"
    assert kernel.ptx.count("ld.global.u32") >= 2 * (groups - 1).bit_length()


def test_stages_print_the_lookups() -> None:
    text = str(mmcomp.compile(contiguous(8), backend="interp").module)
    assert "sched.group_tile %offsets" in text and "rows %group_end" in text


@pytest.mark.parametrize("dtype", ["bf16", "f32"])
def test_emitted_row_stores_write_each_group_once(dtype: str) -> None:
    """The cuda kernel of a grouped linear with the staged epilogue (epilogue "smem": boxes
    in shared memory, stored by the threads in 16-byte row vectors clipped at the group's
    end) run by the PTX value model: ragged groups with an empty one and rows of no group,
    N ragged against the tile (its last chunks clipped), outputs poisoned with NaN: each
    group's rows against float64, every other row left as it was."""
    from ptx_value_model import run_values

    from mmcomp.backend.kernel import lower_to_ptx
    from mmcomp.pipeline import run_pipeline

    groups, n, k, rows = 3, 200, 128, 300
    f = mmcomp.Fusion("grouped")
    x = f.input("x", ("t", k), "bf16")
    w = f.input("w", (groups, n, k), "bf16")
    offsets = f.input("offsets", (groups,), "i32")
    y = f.grouped_linear(x, w, offsets)
    f.output(f.cast(y, "bf16") if dtype == "bf16" else y)
    params = {"tile": (128, 128, 64), "epilogue": "smem", "stages": 2}
    module, chosen, _ = run_pipeline(f.module, params, schedule_m=rows)
    assert chosen.epilogue == "smem"
    text, plan = lower_to_ptx(module)
    assert "st.global.v4.f32" in text and "ld.shared.v4.f32" in text
    assert "cp.async.bulk.tensor.2d.global.shared" not in text
    rng = np.random.default_rng(17)
    routing = np.array([100, 100, 290], np.int32)
    inputs = _inputs(f, rng, routing, rows)
    want = np.asarray(mmcomp.reference(f, *inputs)[0], dtype=np.float64)
    element = ml_dtypes.bfloat16 if dtype == "bf16" else np.float32
    poisoned = np.full((rows, n), np.nan, dtype=element)
    (got,) = run_values(text, plan, inputs, [poisoned], extents=(rows,), grid=2)
    got = got.astype(np.float64)
    in_groups = ~np.isnan(want)
    assert in_groups[:290].all() and not in_groups[290:].any()
    assert np.isnan(got[290:]).all(), "a row of no group was written"
    error = np.abs(got - want)[in_groups].max() / np.abs(want[in_groups]).max()
    assert error < (1e-2 if dtype == "bf16" else 1e-5), error


def test_emitted_row_stores_of_masked_groups() -> None:
    """The masked layout's row-stored kernel (out [G, Mmax, N], the group an axis of the
    address) run by the PTX value model: each group's first counts[g] rows against
    float64, the rows past each count (a whole tile of them in group 0) left as NaN."""
    from ptx_value_model import run_values

    from mmcomp.backend.kernel import lower_to_ptx
    from mmcomp.pipeline import run_pipeline

    groups, rows, n, k = 3, 150, 200, 64
    f = mmcomp.Fusion("masked")
    x = f.input("x", (groups, rows, k), "bf16")
    w = f.input("w", (groups, n, k), "bf16")
    counts = f.input("counts", (groups,), "i32")
    f.output(f.cast(f.grouped_linear(x, w, counts=counts), "bf16"))
    params = {"tile": (128, 128, 64), "epilogue": "smem", "stages": 2}
    module, chosen, _ = run_pipeline(f.module, params)
    assert chosen.epilogue == "smem"
    text, plan = lower_to_ptx(module)
    assert "st.global.v4.f32" in text
    sizes = np.array([100, 0, 150], np.int32)
    inputs = _inputs(f, np.random.default_rng(19), sizes, groups)
    want = np.asarray(mmcomp.reference(f, *inputs)[0], dtype=np.float64)
    poisoned = np.full((groups, rows, n), np.nan, dtype=ml_dtypes.bfloat16)
    (got,) = run_values(text, plan, inputs, [poisoned], grid=3)
    got = got.astype(np.float64)
    for group, count in enumerate(sizes):
        assert np.isnan(got[group, count:]).all(), f"group {group}: a row past its count"
        assert not np.isnan(got[group, :count]).any()
    in_groups = ~np.isnan(want)
    error = np.abs(got - want)[in_groups].max() / np.abs(want[in_groups]).max()
    assert error < 1e-2, error


# Decode-sized groups: swap_ab (the tile's rows, tokens, as wgmma's n).


def linear(groups: int, n: int, k: int, rows: int | None = None) -> mmcomp.Fusion:
    """A bf16 grouped linear of `groups` groups: contiguous (T dynamic) where `rows` is
    None, else masked with Mmax = `rows`."""
    f = mmcomp.Fusion("grouped")
    x = f.input("x", ("t", k) if rows is None else (groups, rows, k), "bf16")
    w = f.input("w", (groups, n, k), "bf16")
    sizes = f.input("sizes", (groups,), "i32")
    if rows is None:
        f.output(f.cast(f.grouped_linear(x, w, sizes), "bf16"))
    else:
        f.output(f.cast(f.grouped_linear(x, w, counts=sizes), "bf16"))
    return f


def _params(fusion: mmcomp.Fusion, schedule_m: int | None = None, **given: object):
    """The schedule choose-schedule gives `fusion` (the interp back end: no assembly)."""
    from mmcomp.pipeline import run_pipeline

    _, params, _ = run_pipeline(fusion.module, given, "interp", schedule_m=schedule_m)
    return params


def test_decode_sized_groups_run_swapped() -> None:
    # Masked: Mmax rows per group; contiguous: T / G at the bucket's M.
    masked_decode = _params(linear(64, 2816, 2048, rows=16))
    assert masked_decode.swap_ab and masked_decode.tile[0] == 16
    assert masked_decode.warp_specialization == "cooperative" and masked_decode.split_k == 1
    decode = _params(linear(128, 768, 2048), schedule_m=1024)  # 8 rows per group
    assert decode.swap_ab and decode.tile[0] == 8
    assert _params(linear(8, 256, 256), schedule_m=256).tile[0] == 32
    # Groups of more rows than a wgmma's 64: the 128-row tiles of all groups' rows.
    for fusion, schedule_m in ((linear(8, 14336, 4096), 16384), (linear(8, 256, 256, 100), None)):
        prefill = _params(fusion, schedule_m=schedule_m)
        assert not prefill.swap_ab and prefill.tile[0] == 128
    # N below two m64 blocks (one per consumer), or the unswapped mapping given: no swap.
    assert not _params(linear(64, 64, 2048, rows=16)).swap_ab
    assert not _params(linear(64, 2816, 2048, rows=16), swap_ab=False).swap_ab
    assert not _params(linear(64, 2816, 2048, rows=16), tile=(128, 128, 64)).swap_ab
    assert _params(linear(8, 14336, 4096), schedule_m=16384, swap_ab=True).swap_ab


@pytest.mark.parametrize("tile", [None, (16, 128, 64), (40, 128, 64)])
def test_swapped_tiles_every_row_once(tile: tuple[int, int, int] | None) -> None:
    """The swapped schedule's tile list on ragged routings with empty groups (both
    layouts, the bias and the scale, the SwiGLU pair), proven by the executor."""
    rng = np.random.default_rng(13)
    params: dict[str, object] = {"swap_ab": True, "schedule_m": 64}
    if tile is not None:
        params["tile"] = tile
    for groups in (1, 8, 64):
        fusion = contiguous(groups, bias=True, scale=True)
        for rows in (1, 129, 700):
            empty = [0, groups - 1, groups // 2] if groups > 2 else []
            offsets = ragged_offsets(rng, groups, rows, empty)
            execution = _check(fusion, _inputs(fusion, rng, offsets, rows), **params)
            writes = execution.writes[0]  # pyright: ignore[reportAttributeAccessIssue]
            assert (writes[: offsets[-1]] == 1).all() and (writes[offsets[-1] :] == 0).all()
    del params["schedule_m"]  # the masked layout's Mmax is static
    fusion = masked(6, 40)
    counts = np.array([0, 1, 40, 17, 16, 33], np.int32)
    execution = _check(fusion, _inputs(fusion, rng, counts, 6), **params)
    writes = execution.writes[0]  # pyright: ignore[reportAttributeAccessIssue]
    for group, count in enumerate(counts):
        assert (writes[group, :count] == 1).all() and (writes[group, count:] == 0).all()
    fusion = swiglu(8)
    offsets = ragged_offsets(rng, 8, 333, [0, 5])
    _check(fusion, _inputs(fusion, rng, offsets, 333), **params, schedule_m=64)


def _model_error(fusion: mmcomp.Fusion, inputs: list[np.ndarray], rows: int | None) -> float:
    """The emitted swapped kernel run by the PTX value model (outputs poisoned with NaN,
    a dynamic T on 3 CTAs): its relative error against float64 on the rows of the groups;
    fails where it writes a row of no group or leaves one of a group unwritten."""
    from ptx_value_model import run_values

    from mmcomp.backend.kernel import lower_to_ptx
    from mmcomp.pipeline import run_pipeline

    module, params, _ = run_pipeline(fusion.module, {"swap_ab": True}, schedule_m=64)
    assert params.swap_ab
    text, plan = lower_to_ptx(module)
    want = np.asarray(mmcomp.reference(fusion, *inputs)[0], dtype=np.float64)
    poisoned = [np.full(want.shape, np.nan, dtype=fusion.outputs[0].numpy_dtype)]
    dynamic = {"extents": (rows,), "grid": 3} if rows is not None else {}
    got = run_values(text, plan, inputs, poisoned, **dynamic)[0].astype(np.float64)  # pyright: ignore[reportArgumentType]
    grouped = ~np.isnan(want)
    assert np.isnan(got[~grouped]).all(), "a row of no group was written"
    assert not np.isnan(got[grouped]).any(), "a row of a group was not written"
    scale = max(float(np.abs(want[grouped]).max(initial=0.0)), 1e-6)
    return float(np.abs(got - want)[grouped].max(initial=0.0)) / scale


def test_emitted_swapped_kernel_masked_layout() -> None:
    """The swapped PTX itself (transposed fragment, the store clipped at each count, the
    tiles past a count skipped) on counts from 0 to Mmax."""
    rng = np.random.default_rng(21)
    fusion = masked(4, 40)
    counts = np.array([0, 1, 40, 17], np.int32)
    assert _model_error(fusion, _inputs(fusion, rng, counts, 4), None) < 1e-6


def test_emitted_swapped_kernel_contiguous_groups() -> None:
    """The swapped PTX on contiguous groups with a dynamic T (an empty group, rows past
    the last group), the per-group bias and the per-row scale; the SwiGLU pair (two W
    operands as wgmma's A)."""
    rng = np.random.default_rng(23)
    fusion = contiguous(4, bias=True, scale=True)
    offsets = np.array([13, 13, 25, 60], np.int32)
    assert _model_error(fusion, _inputs(fusion, rng, offsets, 70), 70) < 1e-2
    fusion = swiglu(4)
    offsets = np.array([9, 9, 30, 50], np.int32)
    assert _model_error(fusion, _inputs(fusion, rng, offsets, 50), 50) < 1e-2


@pytest.mark.parametrize(
    ("groups", "rows", "n", "k", "masked_rows"),
    [(64, None, 2816, 2048, 16), (128, 1024, 768, 2048, None), (64, 512, 1408, 2048, None)],
)
def test_swapped_cuda_kernels_assemble_without_spills(
    groups: int, rows: int | None, n: int, k: int, masked_rows: int | None
) -> None:
    """The heuristic's swapped kernels of decode-sized groups (the masked decode row of
    the bench, contiguous groups of 8 rows) assembled by ptxas without spills."""
    kernel = mmcomp.compile(linear(groups, n, k, masked_rows), schedule_m=rows)
    assert kernel.params.swap_ab
    report = kernel.report  # pyright: ignore[reportAttributeAccessIssue]
    assert report.spill_stores == 0 and report.spill_loads == 0, report


# 64-row tiles: the two consumers split the tile's N (a group's last m tile wastes at
# most 63 rows).


def test_the_heuristic_weighs_64_row_tiles(monkeypatch: pytest.MonkeyPatch) -> None:
    """The cost of each tile (`grouped_cost`: the expected m tiles of each group, its last
    one counted whole, in waves of 132 SMs, a 64-row tile's work times ROW64_COST): at the
    cost measured on the H100 the bench rows keep 128-row tiles; at a lower one the same
    weighing picks 64-row tiles for the 64-expert row and 128-row ones for the 8-expert
    row; decode-sized groups stay swapped; a given tile is kept."""
    from mmcomp.schedule import grouped
    from mmcomp.schedule.grouped import expected_m_tiles

    assert expected_m_tiles(137, 128) == Fraction(201, 128)
    assert expected_m_tiles(137, 64) == Fraction(169, 64)
    assert expected_m_tiles(10, 64) == 1
    assert Fraction(3, 2) == grouped.ROW64_COST
    for experts, n, k, rows in ((8, 14336, 4096, 16432), (64, 2816, 2048, 8720)):
        assert _params(linear(experts, n, k), schedule_m=rows).tile[0] == 128
        assert _params(linear(experts, n, k), schedule_m=16384).tile[0] == 128
    assert _params(linear(128, 768, 2048), schedule_m=16384).tile[0] == 128
    monkeypatch.setattr(grouped, "ROW64_COST", Fraction(11, 10))
    sixty_four = _params(linear(64, 2816, 2048), schedule_m=8720)
    assert sixty_four.tile == (64, 256, 64) and sixty_four.warpgroup == (64, 128)
    assert sixty_four.column_split and sixty_four.consumer_warpgroups == 2
    eight = _params(linear(8, 14336, 4096), schedule_m=16432)
    assert eight.tile[0] == 128 and not eight.column_split
    assert _params(linear(128, 768, 2048), schedule_m=5056).swap_ab
    # Masked groups of Mmax = 136 rows: as the contiguous ones of 136 rows each.
    assert _params(linear(64, 2816, 2048, rows=136)).tile == (64, 256, 64)
    given = _params(linear(64, 2816, 2048), schedule_m=8720, tile=(128, 256, 64))
    assert given.tile == (128, 256, 64)
    # N within 128: the 64-row tile is 128 wide (3 waves of 64-row tiles against 2 of
    # 128-row ones, 128 x 137 rows); with 64 groups (1 wave against 2) the 128 rows stay.
    narrow = _params(linear(128, 100, 2048), schedule_m=128 * 137, swap_ab=False)
    assert narrow.tile[:2] == (64, 128) and narrow.warpgroup == (64, 64)
    assert _params(linear(64, 100, 2048), schedule_m=64 * 137).tile[0] == 128


@pytest.mark.parametrize("tile", [(64, 128, 64), (64, 64, 32)])
def test_64_row_tiles_every_row_once(tile: tuple[int, int, int]) -> None:
    """64-row tiles (the lookup's tile_m 64) on ragged routings with empty groups, G in
    {1, 8, 64, 128}, T from 1 to 700, the bias and the scale; the masked layout; the
    SwiGLU pair: every row of every group written once, no row of no group."""
    rng = np.random.default_rng(29)
    params: dict[str, object] = {"tile": tile, "schedule_m": 700}
    for groups in (1, 8, 64, 128):
        fusion = contiguous(groups, bias=True, scale=True)
        for rows in (1, 63, 64, 65, 700):
            empty = [0, groups - 1, groups // 2] if groups > 2 else []
            offsets = ragged_offsets(rng, groups, rows, empty)
            execution = _check(fusion, _inputs(fusion, rng, offsets, rows), **params)
            writes = execution.writes[0]  # pyright: ignore[reportAttributeAccessIssue]
            assert (writes[: offsets[-1]] == 1).all() and (writes[offsets[-1] :] == 0).all()
    del params["schedule_m"]  # the masked layout's Mmax is static
    fusion = masked(6, 150)
    counts = np.array([0, 1, 150, 64, 65, 63], np.int32)
    execution = _check(fusion, _inputs(fusion, rng, counts, 6), **params)
    writes = execution.writes[0]  # pyright: ignore[reportAttributeAccessIssue]
    for group, count in enumerate(counts):
        assert (writes[group, :count] == 1).all() and (writes[group, count:] == 0).all()
    # 3 m tiles of 64 rows per group, of which the counts leave 0, 1, 3, 1, 2, 1.
    products = {(at, k0) for _, blocks in execution.sums for _, at, k0 in blocks}  # pyright: ignore[reportAttributeAccessIssue]
    assert len(products) == 8 * -(-N // tile[1]) * -(-K // tile[2])
    fusion = swiglu(8)
    offsets = ragged_offsets(rng, 8, 333, [0, 5])
    _check(fusion, _inputs(fusion, rng, offsets, 333), **params, schedule_m=333)


def wide(groups: int, epilogue: str, rows: int | None = None) -> mmcomp.Fusion:
    """A grouped fusion of N = 200 (both consumers' columns of a 64x128 tile, the last
    tile ragged) and K = 128: "bias_scale" (contiguous, bias [G, N] and scale [T, 1], bf16
    out), "masked" (counts, Mmax = `rows`, bias, gelu, bf16 out), "swiglu" (the gate/up
    pair)."""
    n, k = 200, 128
    f = mmcomp.Fusion(f"grouped_{epilogue}")
    x = f.input("x", ("t", k) if rows is None else (groups, rows, k), "bf16")
    w = f.input("w", (groups, n, k), "bf16")
    if epilogue == "swiglu":
        up = f.input("up", (groups, n, k), "bf16")
        sizes = f.input("offsets", (groups,), "i32")
        hidden = f.silu(f.grouped_linear(x, w, sizes)) * f.grouped_linear(x, up, sizes)
        f.output(f.cast(hidden, "bf16"))
        return f
    sizes = f.input("sizes", (groups,), "i32")
    bias = f.input("bias", (groups, n), "bf16")
    if epilogue == "masked":
        f.output(f.cast(f.gelu(f.grouped_linear(x, w, counts=sizes, bias=bias)), "bf16"))
        return f
    scale = f.input("scale", ("t", 1), "f32")
    f.output(f.cast(f.grouped_linear(x, w, sizes, bias=bias, scale=scale), "bf16"))
    return f


def _row64_model_error(
    fusion: mmcomp.Fusion, inputs: list[np.ndarray], rows: int | None, epilogue: str
) -> float:
    """The emitted kernel at tile 64x128x64 (the consumers split its N: 64 columns each)
    run by the PTX value model with poisoned outputs (a dynamic T on 3 CTAs): its relative
    error against float64 on the rows of the groups; fails where it writes a row of no
    group or leaves one of a group unwritten."""
    from ptx_value_model import run_values

    from mmcomp.backend.kernel import lower_to_ptx
    from mmcomp.pipeline import run_pipeline

    params = {"tile": (64, 128, 64), "stages": 2, "epilogue": epilogue}
    module, chosen, _ = run_pipeline(fusion.module, params, schedule_m=rows)
    assert chosen.column_split and chosen.warpgroup == (64, 64)
    text, plan = lower_to_ptx(module)
    want = np.asarray(mmcomp.reference(fusion, *inputs)[0], dtype=np.float64)
    poisoned = [np.full(want.shape, np.nan, dtype=fusion.outputs[0].numpy_dtype)]
    dynamic = {"extents": (rows,), "grid": 3} if rows is not None else {"grid": 3}
    got = run_values(text, plan, inputs, poisoned, **dynamic)[0].astype(np.float64)  # pyright: ignore[reportArgumentType]
    grouped = ~np.isnan(want)
    assert np.isnan(got[~grouped]).all(), "a row of no group was written"
    assert not np.isnan(got[grouped]).any(), "a row of a group was not written"
    scale = max(float(np.abs(want[grouped]).max(initial=0.0)), 1e-6)
    return float(np.abs(got - want)[grouped].max(initial=0.0)) / scale


@pytest.mark.parametrize("epilogue", ["registers", "smem"])
def test_emitted_64_row_kernel_contiguous_groups(epilogue: str) -> None:
    """The 64-row PTX (each consumer its half of the B tile and of the columns) on
    contiguous groups with a dynamic T (an empty group, a group ending at a tile's row 64,
    rows past the last group), the bias and the scale; both epilogues."""
    rng = np.random.default_rng(31)
    fusion = wide(4, "bias_scale")
    offsets = np.array([50, 50, 114, 190], np.int32)
    assert _row64_model_error(fusion, _inputs(fusion, rng, offsets, 200), 200, epilogue) < 1e-2


def test_emitted_64_row_kernel_masked_and_swiglu() -> None:
    """The 64-row PTX on the masked layout (counts 0, 1, Mmax, 64) with the bias and gelu,
    and on the SwiGLU pair (two B tiles split between the consumers)."""
    rng = np.random.default_rng(37)
    fusion = wide(4, "masked", rows=100)
    counts = np.array([0, 1, 100, 64], np.int32)
    assert _row64_model_error(fusion, _inputs(fusion, rng, counts, 4), None, "registers") < 1e-2
    fusion = wide(3, "swiglu")
    offsets = np.array([70, 70, 130], np.int32)
    assert _row64_model_error(fusion, _inputs(fusion, rng, offsets, 140), 140, "smem") < 1e-2


@pytest.mark.parametrize(
    ("groups", "rows", "n", "k", "kind"),
    [
        (64, 8720, 2816, 2048, "linear"),
        (8, 16432, 14336, 4096, "linear"),
        (64, 8720, 2816, 2048, "swiglu"),
        (128, 5056, 768, 2048, "bias_scale"),
    ],
)
@pytest.mark.parametrize("width", [256, 128])
def test_64_row_cuda_kernels_assemble_without_spills(
    groups: int, rows: int, n: int, k: int, kind: str, width: int
) -> None:
    """The 64-row kernels of the bench shapes (the linear, the SwiGLU pair: two 64 x
    width / 2 accumulators per consumer thread, the bias and scale), both epilogues,
    assembled by ptxas without spills."""
    f = mmcomp.Fusion("grouped")
    x = f.input("x", ("t", k), "bf16")
    w = f.input("w", (groups, n, k), "bf16")
    offsets = f.input("offsets", (groups,), "i32")
    if kind == "swiglu":
        up = f.input("up", (groups, n, k), "bf16")
        hidden = f.silu(f.grouped_linear(x, w, offsets)) * f.grouped_linear(x, up, offsets)
        f.output(f.cast(hidden, "bf16"))
    elif kind == "bias_scale":
        bias = f.input("bias", (groups, n), "bf16")
        scale = f.input("scale", ("t", 1), "f32")
        f.output(f.cast(f.grouped_linear(x, w, offsets, bias=bias, scale=scale), "bf16"))
    else:
        f.output(f.cast(f.grouped_linear(x, w, offsets), "bf16"))
    for epilogue in ("registers", "smem"):
        kernel = mmcomp.compile(f, schedule_m=rows, tile=(64, width, 64), epilogue=epilogue)
        assert kernel.params.column_split and kernel.params.warpgroup == (64, width // 2)  # pyright: ignore[reportAttributeAccessIssue]
        report = kernel.report  # pyright: ignore[reportAttributeAccessIssue]
        assert report.spill_stores == 0 and report.spill_loads == 0, (epilogue, report)
