"""Autotuning: time a few candidate schedules of a fusion on the GPU and keep the fastest.

`mmcomp.autotune(f, *arrays, budget_s=30, **params)` (or `mmcomp.compile(f,
autotune=True)`) compiles a bounded set of candidate schedules (`plan_candidates`: the
heuristic's own first, then the heuristic with one group of settings changed: tile and
warp specialization, split_k, cluster, raster and swizzle, stages), checks each one's
output against the reference interpreter, times the correct ones in interleaved rounds
on rotating copies of the inputs, and returns the kernel of the lowest median (a
`TunedKernel`: its `params` the schedule, `autotune_report` the candidates and their
times). The keywords given pin their parameters: no candidate changes them.

The choice is stored next to the compile cache (`$MMCOMP_CACHE_DIR`, mmcomp.cache), one
checksummed entry per fusion IR text, shape (for a dynamic M, the M bucket), pinned
keywords, device name and driver version; a later process compiles the stored schedule
and times nothing. A damaged entry is discarded (with a warning) and tuned again.

Where there is no GPU (or backend="interp") it says so once per process and returns the
heuristic's kernel, as `mmcomp.compile` would. docs/autotune.md describes the method.
"""

from __future__ import annotations

import hashlib
import json
import math
import statistics
import sys
import time
import types
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Protocol, cast

import numpy as np

from mmcomp import hardware as hw
from mmcomp.compiler import Kernel
from mmcomp.errors import FusionError, ScheduleError

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp

    from mmcomp.backend.call import PreparedLaunch
    from mmcomp.dialects.sched import Problem, ScheduleParams
    from mmcomp.frontend import Fusion
    from mmcomp.runtime import KernelCache

DEFAULT_BUDGET_S = 30.0
"""Seconds an autotune may take by default (compiles, the reference, checks and timing)."""
MAX_CANDIDATES = 12
"""Candidate schedules at most by default, the heuristic's included."""
COMPILE_SHARE = 0.75
"""Share of the budget after which no further candidate is compiled (the rest times)."""
MIN_ROUNDS = 3
"""Timing rounds run whatever the budget (each candidate once per round)."""
MAX_ROUNDS = 9
"""Timing rounds at most."""
BATCH = 10
"""Launches queued back to back between two CUDA events."""
BATCHES = 5
"""Batches per candidate per round (the round's figure: their median)."""
L2_BYTES = 50 * 1024 * 1024
"""The H200's L2: input sets smaller than it are copied, and launches rotate over them."""
MAX_INPUT_SETS = 8
"""Copies of the inputs at most, for the rotation."""
TOLERANCE = {"bf16": 1e-2, "f16": 1e-2, "f32": 1e-3}
"""Largest relative error (max |got - want| / max |want|) per output dtype; others 1e-2."""
FORMAT = "mmcomp-autotune-1"
"""The entry format; part of every key."""
SUFFIX = ".autotune"
"""File suffix of an autotune entry in the cache directory."""
SEARCHED = ("tile", "warp_specialization", "split_k", "cluster", "raster", "swizzle", "stages")
"""The parameters the candidates vary."""

_stats = {"tuned": 0, "reused": 0, "fallbacks": 0, "rounds": 0}
_warned = False


def stats() -> dict[str, int]:
    """What this process's autotunes did: tuned (timed), reused (from disk), fallbacks
    (no GPU: the heuristic), rounds (timing rounds run)."""
    return dict(_stats)


# ----------------------------------------------------------------------------------------
# The report
# ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Candidate:
    """One candidate schedule and what became of it."""

    label: str
    """What it changes in the heuristic's schedule ("heuristic" for the heuristic's own)."""
    schedule: str
    """Its whole schedule (`ScheduleParams.format()`), or the keywords where it did not build."""
    status: str
    """"timed", "wrong" (failed the check), "failed" (did not compile), "duplicate" (the
    schedule of an earlier candidate) or "skipped" (the budget ran out before it)."""
    detail: str = ""
    """Why it was not timed."""
    median_ms: float | None = None
    """The median over the rounds of its milliseconds per launch."""
    round_ms: tuple[float, ...] = ()
    """Its milliseconds per launch in each round."""


@dataclass(frozen=True)
class AutotuneReport:
    """What an autotune tried and chose (`TunedKernel.autotune_report`)."""

    chosen: str
    """The schedule kept (`ScheduleParams.format()`)."""
    heuristic: str
    """The heuristic's schedule (under the pins)."""
    candidates: tuple[Candidate, ...]
    """Every candidate, the heuristic's first."""
    keywords: dict[str, Any]
    """The compile keywords of the chosen schedule (JSON values)."""
    device: str
    """The device and driver it was timed on."""
    rounds: int
    """Timing rounds run."""
    budget_s: float
    """The budget it ran under."""
    elapsed_s: float
    """Seconds the autotune took."""
    cached: bool = False
    """True when read from disk (this process timed nothing)."""

    @property
    def speedup(self) -> float:
        """The heuristic's median over the chosen one's (1.0 where either is missing)."""
        times = {c.schedule: c.median_ms for c in self.candidates if c.median_ms is not None}
        heuristic, chosen = times.get(self.heuristic), times.get(self.chosen)
        if not heuristic or not chosen:
            return 1.0
        return heuristic / chosen

    def table(self) -> str:
        """The candidates as a markdown table."""
        lines = ["| candidate | status | median ms | schedule |", "| --- | --- | --- | --- |"]
        for c in self.candidates:
            mark = " (chosen)" if c.schedule == self.chosen and c.status == "timed" else ""
            timing = f"{c.median_ms:.4f}" if c.median_ms is not None else c.detail[:80]
            lines.append(f"| {c.label}{mark} | {c.status} | {timing} | {c.schedule} |")
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        """The report as JSON values."""
        return asdict(self)

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> AutotuneReport:
        """The report of `to_json`'s values; KeyError or TypeError where they do not fit."""
        candidates = tuple(
            Candidate(
                label=str(entry["label"]),
                schedule=str(entry["schedule"]),
                status=str(entry["status"]),
                detail=str(entry["detail"]),
                median_ms=None if entry["median_ms"] is None else float(entry["median_ms"]),
                round_ms=tuple(float(ms) for ms in entry["round_ms"]),
            )
            for entry in data["candidates"]
        )
        keywords = data["keywords"]
        if not isinstance(keywords, dict):
            raise TypeError(f"keywords: expected a mapping, found {type(keywords).__name__}")
        return AutotuneReport(
            chosen=str(data["chosen"]),
            heuristic=str(data["heuristic"]),
            candidates=candidates,
            keywords=cast("dict[str, Any]", keywords),
            device=str(data["device"]),
            rounds=int(data["rounds"]),
            budget_s=float(data["budget_s"]),
            elapsed_s=float(data["elapsed_s"]),
            cached=bool(data["cached"]),
        )


class TunedKernel(Kernel):
    """A Kernel whose schedule an autotune chose: `params` is it, `autotune_report` how."""

    autotune_report: AutotuneReport
    """The candidates, their times and the choice."""

    @staticmethod
    def of(kernel: Kernel, report: AutotuneReport) -> TunedKernel:
        """`kernel` (its artifact shared) with the report."""
        tuned = TunedKernel.__new__(TunedKernel)
        tuned.__dict__.update(kernel.__dict__)
        tuned.autotune_report = report
        return tuned


# ----------------------------------------------------------------------------------------
# The candidates
# ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    """A candidate to compile: what it changes, its compile keywords, its schedule."""

    label: str
    """What it changes in the heuristic's schedule ("heuristic" for the heuristic's own)."""
    keywords: dict[str, Any]
    """The `mmcomp.compile` keywords that build it (the pins, and for the others every
    parameter, so that the spill refit cannot move it onto another candidate)."""
    params: ScheduleParams
    """The schedule the heuristic resolves the keywords to."""


def full_keywords(params: ScheduleParams) -> dict[str, object]:
    """Every compile keyword of a schedule (mmcomp.heuristics.PARAMETERS)."""
    from mmcomp.heuristics import PARAMETERS

    return {key: getattr(params, key) for key in PARAMETERS}


def _moves(
    problem: Problem, heuristic: ScheduleParams
) -> list[list[tuple[str, dict[str, object]]]]:
    """Changes of the heuristic's schedule, by group, the likeliest first in each."""
    from mmcomp.heuristics import MAX_SWIZZLE, tile_count

    tile_k = heuristic.tile[2]
    ws = heuristic.warp_specialization
    shapes = {
        "cooperative": [(128, 256), (128, 128), (128, 64)],
        "none": [(128, 256), (128, 128), (128, 64)],
        "pingpong": [(128, 128), (64, 256), (64, 128), (64, 64)],
    }
    tiles: list[tuple[str, dict[str, object]]] = []
    for kind in [ws, *(w for w in ("cooperative", "pingpong") if w != ws)]:
        for m, n in shapes[kind]:
            tile = (m, n, tile_k)
            if tile == heuristic.tile and kind == ws:
                continue
            tiles.append(_move(tile=tile, warp_specialization=kind))
    tiles_now = tile_count(problem, heuristic.tile)
    k_blocks = -(-problem.k // tile_k)
    splits = [
        s
        for s in (1, 2, 3, 4, 6, 8)
        if s != heuristic.split_k and tiles_now * s <= 2 * hw.SM_COUNT and k_blocks // s >= 2
    ]
    splits.sort(key=lambda s: abs(math.log(s / heuristic.split_k)))
    split = [_move(split_k=s) for s in splits]
    pingpong_cluster: dict[str, object] = {
        "tile": (128, 128, tile_k),
        "warp_specialization": "pingpong",
        "cluster": (2, 1),
    }
    clusters = [
        _move(**pingpong_cluster) if index == 1 else _move(cluster=cluster)
        for index, cluster in enumerate(((2, 1), (2, 1), (1, 2)))
        if index == 1 or cluster != heuristic.cluster
    ]
    other = "m" if heuristic.raster == "n" else "n"
    rasters = [
        _move(raster=other, swizzle=8),
        _move(swizzle=min(2 * heuristic.swizzle, MAX_SWIZZLE)),
        _move(swizzle=max(heuristic.swizzle // 2, 1)),
        _move(raster=other),
    ]
    stages = [_move(stages=s) for s in (heuristic.stages + 1, heuristic.stages - 1) if s >= 2]
    return [tiles, split, clusters, rasters, stages]


def _move(**changes: object) -> tuple[str, dict[str, object]]:
    """A change of the heuristic's schedule, labelled."""
    return _label(changes), changes


def _label(move: Mapping[str, object]) -> str:
    """A change in words: `tile=128x128x64 warp_specialization=pingpong`."""
    words: list[str] = []
    for key, value in move.items():
        shown = (
            "x".join(str(v) for v in cast("tuple[int, ...]", value))
            if isinstance(value, tuple)
            else str(value)
        )
        words.append(f"{key}={shown}")
    return " ".join(words)


def _interleave(groups: Sequence[Sequence[tuple[str, dict[str, object]]]]):
    """The groups' moves taken in turns: the first of each group, then the second, ..."""
    longest = max((len(group) for group in groups), default=0)
    for index in range(longest):
        for group in groups:
            if index < len(group):
                yield group[index]


def _function(module: ModuleOp) -> Any:
    """The one func.func of a module."""
    from xdsl.dialects.func import FuncOp

    functions = [op for op in module.ops if isinstance(op, FuncOp)]
    if len(functions) != 1:
        raise FusionError(f"autotune: expected one func.func, found {len(functions)}")
    return functions[0]


def pins_of(fusion: Fusion, keywords: Mapping[str, object]) -> dict[str, object]:
    """The parameters no candidate may change: those written in the fusion's own
    `#sched.params`, and the keywords (normalized), which win."""
    from mmcomp.heuristics import normalize_overrides
    from mmcomp.passes.choose_schedule import written_params

    written: dict[str, object] = {}
    try:
        written = written_params(_function(fusion.module))
    except ScheduleError:
        written = {}  # choose-schedule reports a bad one when the heuristic compiles
    return {**normalize_overrides(written), **normalize_overrides(keywords)}


def plan_candidates(
    fusion: Fusion,
    keywords: Mapping[str, object] | None = None,
    schedule_m: int | None = None,
    limit: int = MAX_CANDIDATES,
    backend: str = "cuda",
) -> list[Plan]:
    """At most `limit` candidates for `fusion` under the pins `keywords` (and the keys its
    own `#sched.params` writes): the heuristic's first, then the heuristic with one group of
    SEARCHED settings changed, the groups in turns; each accepted by the schedule checks
    (`choose_params`) and unlike every earlier one."""
    from mmcomp.compiler import run_pipeline
    from mmcomp.dialects.sched import problem_of
    from mmcomp.heuristics import choose_params

    given: dict[str, Any] = dict(keywords or {})
    if limit < 1:
        raise ValueError(f"autotune: max_candidates={limit!r}: expected a positive int")
    module, heuristic, _ = run_pipeline(
        fusion.module, given, backend, until="choose-schedule", schedule_m=schedule_m
    )
    problem = problem_of(_function(module))
    pins = pins_of(fusion, given)
    extra: dict[str, Any] = {} if schedule_m is None else {"schedule_m": schedule_m}
    plans = [Plan("heuristic", {**given, **extra}, heuristic)]
    seen = {heuristic.format()}
    for label, move in _interleave(_moves(problem, heuristic)):
        if len(plans) >= limit:
            break
        if any(key in pins and pins[key] != value for key, value in move.items()):
            continue
        try:
            params = choose_params(problem, schedule_m, **{**pins, **move})
        except ScheduleError:
            continue
        if params.format() in seen or any(getattr(params, k) != v for k, v in pins.items()):
            continue
        seen.add(params.format())
        plans.append(Plan(label, {**given, **full_keywords(params), **extra}, params))
    return plans


# ----------------------------------------------------------------------------------------
# Timing
# ----------------------------------------------------------------------------------------


class Timer(Protocol):
    """What runs the candidates: checks each against the reference and times them."""

    def device(self) -> str:
        """The device and driver (part of the cache key)."""
        ...

    def check(self, kernel: Kernel) -> str | None:
        """None when the kernel's outputs match the reference; else what is wrong."""
        ...

    def round(self, kernels: Sequence[Kernel]) -> list[float]:
        """Milliseconds per launch of each kernel, timed one after the other in this order."""
        ...

    def close(self) -> None:
        """Release what the timer holds (device buffers)."""
        ...


def device_identity() -> str:
    """The device's name and driver version (cuDriverGetVersion): 'NVIDIA H200; driver 13000'."""
    from mmcomp.runtime import device_info

    info = device_info()
    return f"{info.name}; driver {info.driver_version}"


CHUNK = 1 << 18
"""Elements compared at a time (the float32 temporaries stay in the CPU's caches)."""


def relative_error(got: np.ndarray, want: np.ndarray, scale: float | None = None) -> float:
    """max |got - want| / max |want| (inf where got has NaN or inf); `scale` is
    max |want| where already known."""
    if scale is None:
        scale = abs_max(want)
    flat_got = np.ascontiguousarray(got).reshape(-1)
    flat_want = np.ascontiguousarray(want).reshape(-1)
    worst = 0.0
    for begin in range(0, flat_got.size, CHUNK):
        end = begin + CHUNK
        difference = np.abs(_float32(flat_got[begin:end]) - _float32(flat_want[begin:end]))
        largest = float(np.max(difference, initial=0.0))
        if not math.isfinite(largest):  # NaN propagates through max, inf stays inf
            return math.inf
        worst = max(worst, largest)
    return worst / max(scale, 1e-30)


def abs_max(array: np.ndarray) -> float:
    """max |array| (0 for an empty one)."""
    flat = np.ascontiguousarray(array).reshape(-1)
    largest = 0.0
    for begin in range(0, flat.size, CHUNK):
        chunk = np.abs(_float32(flat[begin : begin + CHUNK]))
        largest = max(largest, float(np.max(chunk, initial=0.0)))
    return largest


def _float32(array: np.ndarray) -> np.ndarray:
    """The array as float32 (bfloat16 widened by its bits, which is exact and fast)."""
    if array.dtype.name == "bfloat16":
        bits = np.ascontiguousarray(array).view(np.uint16).astype(np.uint32) << 16
        return bits.view(np.float32)
    return np.asarray(array, dtype=np.float32)


def _host_copy(view: Any, name: str) -> np.ndarray:
    """A host copy of a contiguous device array (mmcomp.runtime.DeviceArray)."""
    from mmcomp.runtime.driver import check, driver_api

    if not view.is_c_contiguous:
        raise FusionError(
            f"autotune: input {name!r}: expected a contiguous device array (or a host array), "
            f"found strides {view.strides}"
        )
    host = np.empty(view.shape, view.dtype)
    if host.nbytes:
        check(
            driver_api().cuMemcpyDtoH(host.ctypes.data, view.ptr, host.nbytes),
            f"copying input {name!r} to the host",
        )
    return host


def random_inputs(fusion: Fusion, m: int | None = None) -> list[np.ndarray]:
    """Standard normal inputs of the fusion's shapes and dtypes (a dynamic M: `m`, 1 where
    none is given; another dynamic axis: 1)."""
    from mmcomp.compiler import dynamic_input_roles

    rng = np.random.default_rng()
    roles = dynamic_input_roles(fusion)
    arrays: list[np.ndarray] = []
    for index, value in enumerate(fusion.inputs):
        shape = [
            ((m or 1) if roles is not None and roles[index][axis] == "m" else 1)
            if axis in value.dynamic_axes
            else extent
            for axis, extent in enumerate(value.shape)
        ]
        data = rng.standard_normal(shape, dtype=np.float32)
        arrays.append(data.astype(value.numpy_dtype))
    return arrays


class DeviceTimer:
    """Runs kernels of one fusion on the GPU: the inputs (with copies to rotate past L2),
    the reference outputs, and CUDA-event timing on a stream of its own."""

    def __init__(self, fusion: Fusion, arrays: Sequence[Any]):
        """Inputs from `arrays` (in fusion input order; host or device); the reference is
        computed at the first check."""
        from mmcomp.runtime import DeviceBuffer, Stream, as_device_array, synchronize
        from mmcomp.runtime.stream import stream_handle

        synchronize()  # device inputs written on the caller's streams are complete
        self.fusion = fusion
        """The fusion whose kernels are timed."""
        self.host: list[np.ndarray] = []
        """The first input set on the host (the reference's inputs)."""
        first: list[Any] = []
        for value, array in zip(fusion.inputs, arrays, strict=True):
            name = value.name or "input"
            view = as_device_array(array, name)
            if view is None:
                host = np.ascontiguousarray(np.asarray(array))
                first.append(DeviceBuffer.from_host(host))
            else:
                host = _host_copy(view, name)
                first.append(view)
            self.host.append(host)
        per_set = sum(array.nbytes for array in self.host)
        copies = min(MAX_INPUT_SETS, -(-2 * L2_BYTES // max(per_set, 1)))
        copies = copies if per_set < L2_BYTES else 1
        self.sets: list[list[Any]] = [first]
        """The input sets the launches rotate over (device arrays, in input order)."""
        for _ in range(copies - 1):
            self.sets.append([DeviceBuffer.from_host(array) for array in self.host])
        self._stream = Stream()
        self._handle = stream_handle(self._stream)
        self._reference: tuple[np.ndarray, ...] | None = None
        self._scales: list[float] = []
        self._passed: list[tuple[np.ndarray, float] | None] = []
        self._launches: dict[int, tuple[list[PreparedLaunch], list[list[Any]]]] = {}

    def device(self) -> str:
        """The device and driver."""
        return device_identity()

    def reference(self) -> tuple[np.ndarray, ...]:
        """The reference interpreter's outputs on the first input set (float32 sums)."""
        if self._reference is None:
            from mmcomp.interp.reference import reference

            self._reference = reference(self.fusion, *self.host, accumulate=np.float32)
            self._scales = [abs_max(np.asarray(want)) for want in self._reference]
            self._passed = [None for _ in self._reference]
        return self._reference

    def _prepared(self, kernel: Kernel) -> tuple[list[PreparedLaunch], list[list[Any]]]:
        """The kernel's launches on each input set, and their output and workspace buffers."""
        from mmcomp.backend.call import PreparedLaunch
        from mmcomp.runtime import synchronize

        found = self._launches.get(id(kernel))
        if found is not None:
            return found
        device = kernel.device_kernel
        if device.plan.dynamic:  # the plan at the inputs' extents (the same PTX and module)
            shapes = [tuple(int(e) for e in array.shape) for array in self.sets[0]]
            device = device.specialized(device.runtime_extents(shapes))
        launches: list[PreparedLaunch] = []
        buffers: list[list[Any]] = []
        for inputs in self.sets:
            extra = device.allocate_outputs()
            counters = None
            if len(extra) > device.num_outputs:  # split-K: the tile counters, zeroed per launch
                counters = (extra[-1].ptr, extra[-1].size)
            bound = device.bind([*inputs, *extra])
            launches.append(PreparedLaunch(bound, self._handle, counters, []))
            buffers.append(extra)
        synchronize()  # the outputs' poison (written on the default stream) is in place
        self._launches[id(kernel)] = (launches, buffers)
        return launches, buffers

    def check(self, kernel: Kernel) -> str | None:
        """Launch on the first set into poisoned outputs; compare each with the reference."""
        from mmcomp.backend.kernel import POISON_BYTE
        from mmcomp.runtime import synchronize

        launches, buffers = self._prepared(kernel)
        outputs = buffers[0][: launches[0].bound.kernel.num_outputs]
        self._stream.synchronize()
        for buffer in outputs:
            buffer.fill_bytes(POISON_BYTE)
        synchronize()
        launches[0].launch()
        self._stream.synchronize()
        for index, (buffer, want) in enumerate(zip(outputs, self.reference(), strict=True)):
            got = buffer.to_host()
            passed = self._passed[index]
            if passed is not None and np.array_equal(got.view(np.uint8), passed[0]):
                continue  # the bits of an output that passed: the same error
            dtype = self.fusion.outputs[index].dtype
            error = relative_error(got, np.asarray(want), self._scales[index])
            tolerance = TOLERANCE.get(dtype, 1e-2)
            if not error < tolerance:
                return f"output {index}: relative error {error:.3g} (tolerance {tolerance:g})"
            if passed is None:
                self._passed[index] = (got.view(np.uint8), error)
        return None

    def round(self, kernels: Sequence[Kernel]) -> list[float]:
        """Each kernel: BATCHES batches of BATCH launches between two events (rotating over
        the input sets), after two warm-up launches; the median per launch, in order."""
        from mmcomp.runtime import Event

        times: list[float] = []
        for kernel in kernels:
            launches, _ = self._prepared(kernel)
            turn = 0
            for _ in range(2):
                launches[turn % len(launches)].launch()
                turn += 1
            batches: list[float] = []
            for _ in range(BATCHES):
                start, end = Event(), Event()
                start.record(self._stream)
                for _ in range(BATCH):
                    launches[turn % len(launches)].launch()
                    turn += 1
                end.record(self._stream)
                end.synchronize()
                batches.append(start.elapsed_ms(end) / BATCH)
            times.append(statistics.median(batches))
        return times

    def close(self) -> None:
        """Wait for the stream and drop the buffers."""
        self._stream.synchronize()
        self._launches.clear()
        self.sets = []


# ----------------------------------------------------------------------------------------
# The store
# ----------------------------------------------------------------------------------------


def store() -> KernelCache:
    """The autotune entries: in the compile cache's directory, read at each use."""
    from mmcomp.runtime import KernelCache

    return KernelCache(suffix=SUFFIX)


def tuning_key(fusion_text: str, shape: str, pins: str, device: str) -> str:
    """The hex SHA-256 naming an autotune entry (see the module docstring)."""
    digest = hashlib.sha256()
    for part in (FORMAT, fusion_text, shape, pins, device):
        encoded = part.encode()
        digest.update(len(encoded).to_bytes(8, "little"))
        digest.update(encoded)
    return digest.hexdigest()


def _json_value(value: object) -> object:
    """A keyword's value as JSON (tuples as lists)."""
    return list(cast("tuple[int, ...]", value)) if isinstance(value, tuple) else value


def load_entry(key: str) -> AutotuneReport | None:
    """The report stored under `key`, or None; an entry that does not decode is removed
    with a warning (and so tuned and written again)."""
    entries = store()
    payload = entries.load(key)  # a wrong header or checksum: removed, with a warning
    if payload is None:
        return None
    try:
        data = json.loads(payload.decode())
        if data.get("format") != FORMAT:
            raise ValueError(f"format {data.get('format')!r}")
        report = AutotuneReport.from_json(data["report"])
        _keywords(report)
    except Exception as error:  # noqa: BLE001 - any damage: a miss
        path = entries.path(key)
        warnings.warn(
            f"mmcomp autotune: entry {path} does not decode ({error}); it is discarded and "
            "tuned again",
            stacklevel=3,
        )
        path.unlink(missing_ok=True)
        return None
    return report


def store_entry(key: str, report: AutotuneReport) -> bool:
    """Write the report under `key` (atomically); False where it cannot be written."""
    payload = json.dumps({"format": FORMAT, "report": report.to_json()}, sort_keys=True)
    return store().store(key, payload.encode())


def _keywords(report: AutotuneReport) -> dict[str, Any]:
    """The chosen schedule's compile keywords (checked; tuples for the shapes)."""
    from mmcomp.buckets import check_schedule_m
    from mmcomp.heuristics import normalize_overrides

    values = dict(report.keywords)
    schedule_m = check_schedule_m(values.pop("schedule_m", None))
    keywords: dict[str, Any] = normalize_overrides(values)
    return keywords if schedule_m is None else {**keywords, "schedule_m": schedule_m}


# ----------------------------------------------------------------------------------------
# autotune
# ----------------------------------------------------------------------------------------


def _fusion_of(f: object) -> Fusion:
    """The fusion of an mmcomp.Fusion, IR text or a builtin.module."""
    from xdsl.dialects.builtin import ModuleOp

    from mmcomp.frontend import Fusion, parse

    if isinstance(f, Fusion):
        return f
    if isinstance(f, str):
        return parse(f)
    if isinstance(f, ModuleOp):
        return Fusion.from_module(f.clone())
    raise FusionError(
        f"autotune: argument 'f': expected an mmcomp.Fusion, IR text or a builtin.module, "
        f"found {type(f).__name__}"
    )


def gpu_reason() -> str | None:
    """None where kernels can run here; else why not."""
    from mmcomp.runtime import gpu_unavailable_reason

    return gpu_unavailable_reason()


def _fall_back(reason: str) -> None:
    """Say once per process that autotuning falls back to the heuristic."""
    global _warned
    _stats["fallbacks"] += 1
    if _warned:
        return
    _warned = True
    warnings.warn(
        f"mmcomp autotune: {reason}; the heuristic's schedule is used untimed "
        "(said once per process)",
        stacklevel=3,
    )


def _shape_key(fusion: Fusion, schedule_m: int | None) -> str:
    """The shape part of the key: the inputs' shapes, or for a dynamic M its bucket."""
    from mmcomp.buckets import bucket_for, has_dynamic_m

    if has_dynamic_m(fusion) and schedule_m is not None:
        return f"m bucket {bucket_for(schedule_m)}"
    return "; ".join(
        f"{value.name}: {'x'.join(str(e) for e in value.shape)} {value.dtype}"
        for value in fusion.inputs
    )


def _dynamic_m(fusion: Fusion, arrays: Sequence[Any]) -> int | None:
    """For a fusion with a dynamic M: the bucket of the arrays' M (the nominal one without
    arrays); else None."""
    from mmcomp.argcheck import bind_extents
    from mmcomp.buckets import NOMINAL_BUCKET, bucket_for, has_dynamic_m
    from mmcomp.compiler import dynamic_input_roles

    if not has_dynamic_m(fusion):
        return None
    roles = dynamic_input_roles(fusion)
    if not arrays or roles is None:
        return NOMINAL_BUCKET
    inputs = fusion.inputs
    extents = bind_extents(
        "autotune",
        [value.name or f"input {index}" for index, value in enumerate(inputs)],
        [tuple(int(e) for e in getattr(array, "shape", ())) for array in arrays],
        [value.shape for value in inputs],
        roles,
        FusionError,
    )
    return bucket_for(extents.get("m", NOMINAL_BUCKET))


def _check_arrays(fusion: Fusion, arrays: Sequence[Any]) -> None:
    """FusionError unless `arrays` are one per input, of its shape and dtype."""
    from mmcomp.argcheck import check_shape_and_dtype
    from mmcomp.runtime import as_device_array

    inputs = fusion.inputs
    if len(arrays) != len(inputs):
        names = ", ".join(value.name or "?" for value in inputs)
        raise FusionError(
            f"autotune: expected no arrays or {len(inputs)} ({names}), found {len(arrays)}"
        )
    for value, array in zip(inputs, arrays, strict=True):
        shape, dtype = getattr(array, "shape", None), getattr(array, "dtype", None)
        if shape is None or dtype is None:
            raise FusionError(
                f"autotune: input {value.name!r}: expected an array, found {type(array).__name__}"
            )
        if value.dynamic_axes:
            continue
        view = as_device_array(array, value.name or "input")
        found = view if view is not None else np.asarray(array)
        check_shape_and_dtype(
            f"autotune: input {value.name!r}",
            found.shape,
            found.dtype,
            value.shape,
            value.numpy_dtype,
            FusionError,
        )


def autotune(
    f: Fusion | str | ModuleOp,
    *arrays: Any,
    backend: str = "cuda",
    budget_s: float = DEFAULT_BUDGET_S,
    max_candidates: int = MAX_CANDIDATES,
    timer: Timer | None = None,
    **params: Any,
) -> Kernel:
    """The kernel of the fastest correct candidate schedule of `f` on this GPU.

    `arrays` are the inputs it will run on, in input order (host or device arrays); without
    them, random normal inputs of the fusion's shapes. `params` are `mmcomp.compile`'s
    schedule keywords: they pin their parameters. `budget_s` bounds the whole tune (the
    heuristic's own candidate is compiled, checked and timed for MIN_ROUNDS whatever it
    is); `max_candidates` bounds the candidates, the heuristic's included. `timer`
    replaces the GPU runs (checks and timing; tests inject one). A schedule stored by an
    earlier tune of the same fusion, shape, pins and device is compiled and returned with
    no timing. Without a GPU, or for backend="interp", the heuristic's kernel (warned once
    per process).
    """
    from mmcomp.buckets import check_schedule_m
    from mmcomp.cache import parameters_key
    from mmcomp.compiler import BACKENDS, compile
    from mmcomp.heuristics import normalize_overrides

    if backend not in BACKENDS:
        raise ValueError(
            f"autotune: unknown backend {backend!r}; expected one of {', '.join(BACKENDS)}"
        )
    if isinstance(budget_s, bool) or not isinstance(budget_s, int | float) or budget_s <= 0:
        raise ValueError(f"autotune: budget_s={budget_s!r}: expected a positive number of seconds")
    if isinstance(max_candidates, bool) or not isinstance(max_candidates, int):
        raise ValueError(f"autotune: max_candidates={max_candidates!r}: expected a positive int")
    start = time.monotonic()
    given_m = check_schedule_m(params.pop("schedule_m", None))
    keywords: dict[str, Any] = normalize_overrides(params)
    fusion = _fusion_of(f)
    if arrays:
        _check_arrays(fusion, arrays)
    reason = "backend 'interp' runs on the CPU" if backend != "cuda" else None
    if reason is None and timer is None:
        reason = gpu_reason()
    if reason is not None:
        _fall_back(reason)
        extra: dict[str, Any] = {} if given_m is None else {"schedule_m": given_m}
        return compile(fusion, backend, **keywords, **extra)
    schedule_m = given_m if given_m is not None else _dynamic_m(fusion, arrays)
    pinned = keywords if given_m is None else {**keywords, "schedule_m": given_m}
    device = timer.device() if timer is not None else device_identity()
    key = tuning_key(str(fusion), _shape_key(fusion, schedule_m), parameters_key(pinned), device)
    report = load_entry(key)
    if report is not None:
        try:
            kernel = compile(fusion, backend, **_keywords(report))
        except (FusionError, ScheduleError) as error:
            warnings.warn(
                f"mmcomp autotune: the stored schedule {report.chosen} does not build "
                f"({error}); tuning again",
                stacklevel=2,
            )
        else:
            _stats["reused"] += 1
            return TunedKernel.of(kernel, _replace(report, cached=True))
    plans = plan_candidates(fusion, keywords, schedule_m, max_candidates, backend)
    tuner = _Tuner(fusion, backend, plans, float(budget_s), device, start)
    heuristic = compile(fusion, backend, **plans[0].keywords)
    if timer is None:
        timer = DeviceTimer(fusion, list(arrays) or random_inputs(fusion, schedule_m))
    try:
        kernel, report, verified = tuner.run(timer, heuristic)
    finally:
        timer.close()
    if verified:
        store_entry(key, report)
    return TunedKernel.of(kernel, report)


def _replace(report: Any, **changes: Any) -> Any:
    """A copy of a report or candidate with some fields changed."""
    import dataclasses

    return dataclasses.replace(report, **changes)


@dataclass
class _Tuner:
    """One autotune: compile, check and time the plans, keep the fastest correct one."""

    fusion: Fusion
    """The fusion tuned."""
    backend: str
    """The back end its kernels are compiled for."""
    plans: list[Plan]
    """The candidates, the heuristic's first."""
    budget_s: float
    """Seconds the tune may take."""
    device: str
    """The device and driver (for the report)."""
    start: float
    """When the tune began (time.monotonic)."""

    def elapsed(self) -> float:
        """Seconds since the tune began."""
        return time.monotonic() - self.start

    def run(self, timer: Timer, heuristic: Kernel) -> tuple[Kernel, AutotuneReport, bool]:
        """The chosen kernel, the report, and whether the choice passed its checks (before
        and after the timing): compile and check every plan the budget allows, time the
        correct ones in rounds, take the fastest that is still correct."""
        outcomes: list[Candidate] = []
        timed: list[tuple[Plan, Kernel]] = []
        seen: set[str] = set()
        round_s = 0.0  # seconds one kernel takes in a round (the heuristic's, measured)
        for index, plan in enumerate(self.plans):
            reserve = MIN_ROUNDS * round_s * (len(timed) + 1)
            if index and (
                self.elapsed() > COMPILE_SHARE * self.budget_s
                or self.elapsed() + reserve > self.budget_s
            ):
                outcomes.append(Candidate(plan.label, plan.params.format(), "skipped", "budget"))
                continue
            kernel = heuristic if index == 0 else self._compile(plan, outcomes)
            if kernel is None:
                continue
            schedule = kernel.params.format()
            if schedule in seen:
                outcomes.append(Candidate(plan.label, schedule, "duplicate"))
                continue
            seen.add(schedule)
            wrong = timer.check(kernel)
            if wrong is not None:
                outcomes.append(Candidate(plan.label, schedule, "wrong", wrong))
                continue
            outcomes.append(Candidate(plan.label, schedule, "timed"))
            timed.append((plan, kernel))
            if index == 0:  # a first round of the heuristic, untimed: what a round costs
                began = time.monotonic()
                timer.round([kernel])
                round_s = time.monotonic() - began
        times = self._rounds(timer, [kernel for _, kernel in timed])
        results = {kernel.params.format(): ms for (_, kernel), ms in zip(timed, times, strict=True)}
        chosen: tuple[Plan, Kernel] | None = None
        for plan, kernel in sorted(timed, key=lambda item: _median(results, item[1])):
            if timer.check(kernel) is None:  # again after the timing: still correct
                chosen = (plan, kernel)
                break
            schedule = kernel.params.format()
            outcomes = [
                _replace(c, status="wrong", detail="wrong after the timing")
                if c.schedule == schedule
                else c
                for c in outcomes
            ]
        outcomes = [
            _replace(c, median_ms=_median(results, c.schedule), round_ms=tuple(results[c.schedule]))
            if c.status == "timed"
            else c
            for c in outcomes
        ]
        if chosen is None:
            warnings.warn(
                f"mmcomp autotune: @{self.fusion.name}: no candidate passed the check against "
                "the reference (the heuristic's included); the heuristic's kernel is returned",
                stacklevel=3,
            )
        _stats["tuned"] += 1
        plan, kernel = chosen if chosen is not None else (self.plans[0], heuristic)
        report = AutotuneReport(
            chosen=kernel.params.format(),
            heuristic=heuristic.params.format(),
            candidates=tuple(outcomes),
            keywords={key: _json_value(value) for key, value in plan.keywords.items()},
            device=self.device,
            rounds=len(times[0]) if times else 0,
            budget_s=self.budget_s,
            elapsed_s=self.elapsed(),
        )
        return kernel, report, chosen is not None

    def _compile(self, plan: Plan, outcomes: list[Candidate]) -> Kernel | None:
        """The plan's kernel; None (and a "failed" outcome) where it does not build."""
        from mmcomp.compiler import compile

        try:
            return compile(self.fusion, self.backend, **plan.keywords)
        except Exception as error:  # noqa: BLE001 - a candidate that fails is dropped
            message = f"{type(error).__name__}: {error}"[:300]
            outcomes.append(Candidate(plan.label, plan.params.format(), "failed", message))
            return None

    def _rounds(self, timer: Timer, kernels: list[Kernel]) -> list[list[float]]:
        """Per kernel, its milliseconds in each round: MIN_ROUNDS at least, then while the
        budget allows another round, MAX_ROUNDS at most; the order rotates by round."""
        times: list[list[float]] = [[] for _ in kernels]
        if not kernels:
            return times
        count = len(kernels)
        for turn in range(MAX_ROUNDS):
            began = time.monotonic()
            order = [(turn + i) % count for i in range(count)]
            measured = timer.round([kernels[i] for i in order])
            for i, ms in zip(order, measured, strict=True):
                times[i].append(ms)
            _stats["rounds"] += 1
            cost = time.monotonic() - began
            if turn + 1 >= MIN_ROUNDS and self.elapsed() + cost > self.budget_s:
                break
        return times


def _median(results: Mapping[str, list[float]], kernel: Kernel | str) -> float:
    """The median of a schedule's (or a kernel's) round times."""
    schedule = kernel if isinstance(kernel, str) else kernel.params.format()
    return statistics.median(results[schedule])


class _CallableModule(types.ModuleType):
    """This module, callable as `mmcomp.autotune(f, *arrays, ...)`: importing the module
    binds its name on the package, where the function is exported under the same name."""

    def __call__(self, f: Fusion | str | ModuleOp, *arrays: Any, **keywords: Any) -> Kernel:
        return autotune(f, *arrays, **keywords)


sys.modules[__name__].__class__ = _CallableModule
