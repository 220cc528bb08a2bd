"""Grouped kernels on the GPU: the tile list computed on the device from the group sizes.

Every case runs on fresh random inputs with the outputs poisoned (NaN) before the launch,
and checks the rows of the groups against the float64 reference (relative error) and that
the rows of no group are still NaN (never written). The routings are ragged with empty
groups (first, last, runs), one group holding every row, rows past the last group; G in
{1, 8, 64, 128}, T from 1 to 32768 on one compiled (bucketed) kernel per fusion. The
epilogues: per-group bias, the per-row scale [T, 1], a [T, N] operand, casts, gelu, the
fused gate/up pair with SwiGLU; the masked layout with counts from 0 to Mmax. A CUDA graph
captured once is replayed with new offsets (and counts) each time. The bench shapes run
once each against a float32 torch product per group. The 64-row tiles (the consumers
splitting N) run every epilogue family with both epilogues, the masked layout, and a
dense linear at such a tile.

Skipped (gpu marker) without an sm_90 GPU.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import mmcomp  # noqa: E402

pytestmark = pytest.mark.gpu

N, K = 200, 136
"""N ragged against every tile; K a whole number of 16-byte rows but not of K blocks."""
TOLERANCE = 2e-2
"""Relative error of bf16 inputs accumulated in f32 and rounded to bf16 outputs."""


def contiguous(groups: int, epilogue: str = "") -> mmcomp.Fusion:
    """A grouped linear over `groups` contiguous groups, T dynamic, with the epilogue
    named: "" (the f32 product), "bias_scale" (+ bias[g], * scale[T, 1], cast to bf16),
    "residual_gelu" (gelu(y + r[T, N]) in bf16), "swiglu" (silu(x wg^T) * (x wu^T))."""
    f = mmcomp.Fusion(f"grouped_{epilogue or 'plain'}")
    x = f.input("x", ("t", K), "bf16")
    w = f.input("w", (groups, N, K), "bf16")
    if epilogue == "swiglu":
        up = f.input("up", (groups, N, K), "bf16")
        offsets = f.input("offsets", (groups,), "i32")
        hidden = f.silu(f.grouped_linear(x, w, offsets)) * f.grouped_linear(x, up, offsets)
        f.output(f.cast(hidden, "bf16"))
        return f
    offsets = f.input("offsets", (groups,), "i32")
    if epilogue == "bias_scale":
        bias = f.input("bias", (groups, N), "bf16")
        scale = f.input("scale", ("t", 1), "f32")
        f.output(f.cast(f.grouped_linear(x, w, offsets, bias=bias, scale=scale), "bf16"))
    elif epilogue == "residual_gelu":
        residual = f.input("residual", ("t", N), "bf16")
        f.output(f.cast(f.gelu(f.grouped_linear(x, w, offsets) + residual), "bf16"))
    else:
        f.output(f.grouped_linear(x, w, offsets))
    return f


def masked(groups: int, rows: int) -> mmcomp.Fusion:
    """A masked grouped linear, [G, Mmax, K] with counts, plus a per-group bias."""
    f = mmcomp.Fusion("grouped_masked")
    x = f.input("x", (groups, rows, K), "bf16")
    w = f.input("w", (groups, N, K), "bf16")
    counts = f.input("counts", (groups,), "i32")
    bias = f.input("bias", (groups, N), "f32")
    f.output(f.cast(f.grouped_linear(x, w, counts=counts, bias=bias), "bf16"))
    return f


def routing(rng: np.random.Generator, groups: int, rows: int, kind: str) -> np.ndarray:
    """Cumulative group ends: "ragged" (with empty groups), "one" (every row in one
    group), "short" (rows past the last group)."""
    if kind == "one":
        sizes = np.zeros(groups, np.int64)
        sizes[rng.integers(groups)] = rows
    else:
        sizes = rng.dirichlet(np.full(groups, 2.0)) * rows
        sizes = np.floor(sizes).astype(np.int64)
        sizes[rng.integers(groups)] += rows - sizes.sum()
        if groups > 2:
            sizes[[0, groups - 1, groups // 2]] = 0
            sizes[rng.integers(groups)] += rows - sizes.sum()
        if kind == "short":
            sizes[-1] = max(sizes[-1] - rng.integers(1, 40), 0)
    return np.cumsum(sizes).astype(np.int32)


def host_inputs(
    fusion: mmcomp.Fusion, rng: np.random.Generator, sizes: np.ndarray, rows: int
) -> list[np.ndarray]:
    """Random non-zero inputs at `rows` rows (T or Mmax), the group sizes `sizes`."""
    import ml_dtypes

    arrays: list[np.ndarray] = []
    for value in fusion.inputs:
        if value.dtype == "i32":
            arrays.append(sizes)
            continue
        shape = tuple(rows if extent == mmcomp.DYNAMIC else extent for extent in value.shape)
        data = rng.uniform(0.5, 1.5, size=shape) * rng.choice([-1, 1], size=shape)
        arrays.append(data.astype(ml_dtypes.bfloat16 if value.dtype == "bf16" else np.float32))
    return arrays


def on_gpu(arrays: Sequence[np.ndarray]) -> list[object]:
    """The arrays as CUDA tensors (bf16 through its bits)."""
    tensors: list[object] = []
    for array in arrays:
        if array.dtype.name == "bfloat16":
            bits = torch.from_numpy(array.view(np.int16).copy())
            tensors.append(bits.view(torch.bfloat16).cuda())
        else:
            tensors.append(torch.from_numpy(np.ascontiguousarray(array)).cuda())
    return tensors


def poisoned(fusion: mmcomp.Fusion, rows: int) -> object:
    """The output, NaN everywhere, at `rows` rows."""
    (value,) = fusion.outputs
    shape = tuple(rows if extent == mmcomp.DYNAMIC else extent for extent in value.shape)
    dtype = torch.bfloat16 if value.dtype == "bf16" else torch.float32
    return torch.full(shape, float("nan"), dtype=dtype, device="cuda")


def check(fusion: mmcomp.Fusion, host: list[np.ndarray], got: object) -> None:
    """The rows of the groups against the float64 reference; the others still NaN."""
    reference = np.asarray(
        mmcomp.reference(fusion, *host, accumulate=np.float64)[0], dtype=np.float64
    )
    result = got.float().cpu().numpy().astype(np.float64)  # pyright: ignore[reportAttributeAccessIssue]
    grouped = ~np.isnan(reference)
    assert np.isnan(result[~grouped]).all(), "a row of no group was written"
    assert not np.isnan(result[grouped]).any(), "a row of a group was not written"
    scale = max(float(np.abs(reference[grouped]).max(initial=0.0)), 1e-6)
    error = float(np.abs(result - reference)[grouped].max(initial=0.0)) / scale
    assert error < TOLERANCE, error


@pytest.mark.parametrize("groups", [1, 8, 64, 128])
def test_ragged_routings_at_every_t(groups: int) -> None:
    fusion = contiguous(groups)
    kernel = mmcomp.compile(fusion)
    rng = np.random.default_rng(groups)
    for rows in (1, 7, 129, 1000, 4095, 32768):
        for kind in ("ragged", "one", "short"):
            host = host_inputs(fusion, rng, routing(rng, groups, rows, kind), rows)
            out = poisoned(fusion, rows)
            kernel(*on_gpu(host), out=(out,))
            torch.cuda.synchronize()
            check(fusion, host, out)


@pytest.mark.parametrize("epilogue", ["bias_scale", "residual_gelu", "swiglu"])
def test_epilogues(epilogue: str) -> None:
    fusion = contiguous(8, epilogue)
    kernel = mmcomp.compile(fusion)
    rng = np.random.default_rng(3)
    for rows in (5, 300, 2049):
        host = host_inputs(fusion, rng, routing(rng, 8, rows, "ragged"), rows)
        out = poisoned(fusion, rows)
        kernel(*on_gpu(host), out=(out,))
        torch.cuda.synchronize()
        check(fusion, host, out)


@pytest.mark.parametrize("epilogue", ["", "bias_scale", "residual_gelu", "swiglu"])
def test_staged_row_stores(epilogue: str) -> None:
    """The smem epilogue (the tile staged in shared memory, its rows stored clipped to
    the group) on ragged routings with empty groups and rows past the last group."""
    fusion = contiguous(8, epilogue)
    kernel = mmcomp.compile(fusion, epilogue="smem")
    assert kernel.params.epilogue == "smem"
    rng = np.random.default_rng(5)
    for rows in (1, 130, 2049):
        for kind in ("ragged", "one", "short"):
            host = host_inputs(fusion, rng, routing(rng, 8, rows, kind), rows)
            out = poisoned(fusion, rows)
            kernel(*on_gpu(host), out=(out,))
            torch.cuda.synchronize()
            check(fusion, host, out)


def test_masked_layout_counts_from_zero_to_mmax() -> None:
    rows = 160
    fusion = masked(64, rows)
    kernel = mmcomp.compile(fusion)
    rng = np.random.default_rng(9)
    for counts in (
        rng.integers(0, 17, size=64),
        rng.integers(0, rows + 1, size=64),
        np.where(np.arange(64) % 3 == 0, rows, 0),
    ):
        host = host_inputs(fusion, rng, counts.astype(np.int32), rows)
        out = poisoned(fusion, rows)
        kernel(*on_gpu(host), out=(out,))
        torch.cuda.synchronize()
        check(fusion, host, out)


def test_cuda_graph_replays_with_new_routing() -> None:
    groups, rows = 64, 3000
    fusion = contiguous(groups, "bias_scale")
    kernel = mmcomp.compile(fusion)
    rng = np.random.default_rng(17)
    host = host_inputs(fusion, rng, routing(rng, groups, rows, "ragged"), rows)
    inputs = on_gpu(host)
    out = poisoned(fusion, rows)
    kernel(*inputs, out=(out,))  # warm-up outside the capture: module loaded
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        kernel(*inputs, out=(out,))
    for kind in ("ragged", "one", "short", "ragged"):
        fresh = host_inputs(fusion, rng, routing(rng, groups, rows, kind), rows)
        for tensor, array in zip(inputs, on_gpu(fresh), strict=True):
            tensor.copy_(array)  # pyright: ignore[reportAttributeAccessIssue]
        out.fill_(float("nan"))  # pyright: ignore[reportAttributeAccessIssue]
        graph.replay()
        torch.cuda.synchronize()
        check(fusion, fresh, out)


def test_masked_cuda_graph_replays_with_new_counts() -> None:
    rows = 16
    fusion = masked(64, rows)
    kernel = mmcomp.compile(fusion)
    rng = np.random.default_rng(19)
    host = host_inputs(fusion, rng, rng.integers(0, rows + 1, 64).astype(np.int32), rows)
    inputs = on_gpu(host)
    out = poisoned(fusion, rows)
    kernel(*inputs, out=(out,))
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        kernel(*inputs, out=(out,))
    for _ in range(3):
        fresh = host_inputs(fusion, rng, rng.integers(0, rows + 1, 64).astype(np.int32), rows)
        for tensor, array in zip(inputs, on_gpu(fresh), strict=True):
            tensor.copy_(array)  # pyright: ignore[reportAttributeAccessIssue]
        out.fill_(float("nan"))  # pyright: ignore[reportAttributeAccessIssue]
        graph.replay()
        torch.cuda.synchronize()
        check(fusion, fresh, out)


@pytest.mark.parametrize(
    ("groups", "rows", "n", "k"),
    [(8, 16432, 14336, 4096), (64, 8720, 2816, 2048), (128, 5056, 768, 2048)],
)
def test_bench_shapes_against_torch(groups: int, rows: int, n: int, k: int) -> None:
    """The heuristic's kernels of the bench rows, against a float32 product per group."""
    f = mmcomp.Fusion("grouped_bench")
    x = f.input("x", ("t", k), "bf16")
    w = f.input("w", (groups, n, k), "bf16")
    offsets = f.input("offsets", (groups,), "i32")
    f.output(f.cast(f.grouped_linear(x, w, offsets), "bf16"))
    kernel = mmcomp.compile(f)
    generator = torch.Generator(device="cuda").manual_seed(groups)
    xs = torch.randn(rows, k, device="cuda", generator=generator).bfloat16()
    ws = torch.randn(groups, n, k, device="cuda", generator=generator).bfloat16() / k**0.5
    rng = np.random.default_rng(groups)
    ends = routing(rng, groups, rows, "ragged")
    out = torch.full((rows, n), float("nan"), dtype=torch.bfloat16, device="cuda")
    kernel(xs, ws, torch.from_numpy(ends).cuda(), out=(out,))
    torch.cuda.synchronize()
    start = 0
    for group, end in enumerate(int(value) for value in ends):
        expected = xs[start:end].float() @ ws[group].float().T
        got = out[start:end].float()
        if end > start:
            error = (got - expected).abs().max() / expected.abs().max().clamp_min(1e-6)
            assert float(error) < TOLERANCE, (group, float(error))
        start = end
    assert torch.isnan(out[int(ends[-1]) :].float()).all()


@pytest.mark.parametrize("epilogue", ["", "bias_scale", "residual_gelu", "swiglu"])
@pytest.mark.parametrize(
    ("tile", "staged"), [((64, 256, 64), False), ((64, 128, 64), False), ((64, 256, 64), True)]
)
def test_64_row_tiles(epilogue: str, tile: tuple[int, int, int], staged: bool) -> None:
    """64-row tiles, the two consumers splitting N (each 64 rows by half the columns), with
    the registers and the staged (smem) epilogue: ragged routings with empty groups, one
    group holding every row and rows past the last group, G in {8, 64}, T from 1 to 4095
    on one compile, every epilogue family."""
    rng = np.random.default_rng(41)
    for groups in (8, 64):
        fusion = contiguous(groups, epilogue)
        keywords: dict[str, object] = {"tile": tile, "swap_ab": False}
        if staged:
            keywords["epilogue"] = "smem"
        kernel = mmcomp.compile(fusion, **keywords)
        assert kernel.params.column_split and kernel.params.warpgroup == (64, tile[1] // 2)  # pyright: ignore[reportAttributeAccessIssue]
        for rows in (1, 63, 65, 300, 4095):
            for kind in ("ragged", "one", "short"):
                host = host_inputs(fusion, rng, routing(rng, groups, rows, kind), rows)
                out = poisoned(fusion, rows)
                kernel(*on_gpu(host), out=(out,))
                torch.cuda.synchronize()
                check(fusion, host, out)


@pytest.mark.parametrize("staged", [False, True])
def test_64_row_tiles_masked_layout(staged: bool) -> None:
    """The masked layout at 64-row tiles: counts from 0 to Mmax (64, 65, whole tiles), the
    tiles past each count skipped."""
    rows = 160
    fusion = masked(64, rows)
    keywords: dict[str, object] = {"tile": (64, 256, 64), "swap_ab": False}
    if staged:
        keywords["epilogue"] = "smem"
    kernel = mmcomp.compile(fusion, **keywords)
    assert kernel.params.column_split  # pyright: ignore[reportAttributeAccessIssue]
    rng = np.random.default_rng(43)
    for counts in (
        rng.integers(0, rows + 1, size=64),
        np.where(np.arange(64) % 2 == 0, 64, 65),
        np.where(np.arange(64) % 3 == 0, rows, 0),
    ):
        host = host_inputs(fusion, rng, counts.astype(np.int32), rows)
        out = poisoned(fusion, rows)
        kernel(*on_gpu(host), out=(out,))
        torch.cuda.synchronize()
        check(fusion, host, out)


def test_dense_64_row_cooperative_tiles() -> None:
    """A dense linear at a 64-row cooperative tile (the consumers split N), with the TMA
    store epilogue and the registers one, and split-K, against float64."""
    m, n, k = 300, 520, 384
    f = mmcomp.Fusion("dense_64_rows")
    a = f.input("a", (m, k), "bf16")
    b = f.input("b", (n, k), "bf16")
    bias = f.input("bias", (n,), "bf16")
    f.output(f.cast(f.gelu(f.linear(a, b) + bias), "bf16"))
    rng = np.random.default_rng(47)
    host = host_inputs(f, rng, np.zeros(0, np.int32), m)
    want = np.asarray(mmcomp.reference(f, *host, accumulate=np.float64)[0], dtype=np.float64)
    for keywords in (
        {"epilogue": "smem"},
        {"epilogue": "registers"},
        {"epilogue": "registers", "split_k": 2},
    ):
        kernel = mmcomp.compile(
            f, tile=(64, 128, 64), warp_specialization="cooperative", **keywords
        )
        assert kernel.params.column_split  # pyright: ignore[reportAttributeAccessIssue]
        out = poisoned(f, m)
        kernel(*on_gpu(host), out=(out,))
        torch.cuda.synchronize()
        got = out.float().cpu().numpy().astype(np.float64)  # pyright: ignore[reportAttributeAccessIssue]
        error = float(np.abs(got - want).max()) / float(np.abs(want).max())
        assert error < TOLERANCE, (keywords, error)


@pytest.mark.parametrize("swap_ab", [True, False])
def test_decode_sized_groups_swapped_and_not(swap_ab: bool) -> None:
    """Both mappings of decode-sized groups (the heuristic swaps them): the masked layout
    with counts from 0 to Mmax, contiguous groups of a few rows each with the bias and
    the scale, and the SwiGLU pair, T from 1 up on one compile."""
    rng = np.random.default_rng(23)
    fusion = masked(64, 16)
    kernel = mmcomp.compile(fusion, swap_ab=swap_ab)
    assert kernel.params.swap_ab == swap_ab
    for counts in (rng.integers(0, 17, size=64), np.where(np.arange(64) % 2, 16, 0)):
        host = host_inputs(fusion, rng, counts.astype(np.int32), 16)
        out = poisoned(fusion, 16)
        kernel(*on_gpu(host), out=(out,))
        torch.cuda.synchronize()
        check(fusion, host, out)
    for groups, epilogue in ((128, "bias_scale"), (64, "swiglu"), (8, "residual_gelu")):
        fusion = contiguous(groups, epilogue)
        kernel = mmcomp.compile(fusion, swap_ab=swap_ab)
        for rows in (1, 7, 100, 513):
            for kind in ("ragged", "one", "short"):
                host = host_inputs(fusion, rng, routing(rng, groups, rows, kind), rows)
                out = poisoned(fusion, rows)
                kernel(*on_gpu(host), out=(out,))
                torch.cuda.synchronize()
                check(fusion, host, out)
