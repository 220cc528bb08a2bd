"""The differential fuzzer: random fusions, shapes and schedules against the reference.

    python tools/fuzz.py --backend interp --seed 1 --cases 200
    python tools/fuzz.py --backend cuda --seed 1 --cases 2000 --jobs 15
    python tools/fuzz.py --backend cuda --compile-only --seed 1 --budget 600
    python tools/fuzz.py --backend cuda --seed 1 --case 17      # one case, in full

Case `i` of seed `s` is drawn from its own random stream (`numpy.random.default_rng([s,
i])`): a fusion from the grammar below, edge-biased extents, schedule keywords for
`mmcomp.compile` (or none: the heuristic chooses), and fresh random inputs, never zero.
Each case is compiled, run on the chosen back end and compared with `mmcomp.reference`
(float64 accumulation) by the relative error of each whole output, max |got - want| /
max |want|, against a bound from the dtypes and K (`tolerance`). `interp` runs the CPU
schedule executor; `cuda` compiles in worker processes (the passes and ptxas are CPU
work) and runs and checks on the GPU in one process of its own, each launch on outputs
poisoned with NaN, under a timeout, so that a hung kernel is reported and the run goes on.

Outcomes: `pass`; `refused`, when `mmcomp.compile` rejects pinned schedule keywords with
mmcomp's own error (FusionError, ScheduleError), counted by message; and failures: a
crash (any other exception), a wrong result, NaN where the reference has none, an
element written other than once (the executor's CoverageError), spills, a hang, or a
refusal of a fusion the grammar holds supported under the heuristic's own schedule.
Every failure prints the command that reruns it, the schedule and the fusion's IR.

The grammar, features and tolerances are documented in docs/fuzzing.md.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import math
import multiprocessing
import os
import pickle
import re
import signal
import sys
import tempfile
import time
import traceback
from collections import Counter, deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import mmcomp  # noqa: E402
from mmcomp.errors import FusionError, ScheduleError  # noqa: E402
from mmcomp.frontend.builder import Fusion, Value, numpy_dtype  # noqa: E402
from mmcomp.schedule.heuristics import PARAMETERS  # noqa: E402

# ---------------------------------------------------------------------------------------
# The grammar

FAMILIES = ("linear", "matmul", "batched", "fms", "fms_broadcast", "horizontal")
"""Contraction families: linear A W^T (+ bias), matmul A B with B[K, N], a batched
matmul or linear, fused_multiply_sum of inputs declared with size-1 axes, the same with
the size-1 axes made by `Fusion.broadcast` (nvFuser's form), and 2-3 contractions
sharing A (a horizontal fusion)."""

FEATURES = {
    "unaligned-k": "K (and a matmul's N) not a multiple of 8: rows that are not 16-byte multiples",
    "broadcast-form": "fused_multiply_sum of Fusion.broadcast inputs (nvFuser's classic form)",
    "broadcast-m1": "fused_multiply_sum with M = 1 or N = 1 (an operand without its m/n axis)",
    "split-k-over": "split_k larger than the K blocks (clamped to them)",
    "one-row-tile": "64-row cooperative tiles (on cuda the consumers split their N; one "
    "whose halves are not whole 8-column blocks is refused)",
    "dynamic-m": "M (and a batch extent) dynamic in a share of the cases: one kernel, its "
    "schedule chosen for the bound of the M bucket of the case's M, run at that M",
    "swap-ab": "swap_ab=True in a share of the cases (C^T = W A^T: M as wgmma's n)",
    "grouped": "in a share of the linear and all-linear horizontal cases (their own random "
    "stream), grouped linears: w [G, N, K], the rows split into G groups by offsets "
    "(contiguous) or counts (masked, x [G, M, K]) drawn on the host and read on the device, "
    "empty groups and rows of no group included",
    "grouped-only": "every case a grouped one (the grouped family alone: specs drawn from "
    "streams of their own until a linear or all-linear horizontal one comes)",
    "fp8": "in a share of the dense cases (their own random stream), fp8: e4m3 / e5m2 "
    "factors (mixed too) with per-tensor, row-wise, block-wise or no scales, fp8 outputs, "
    "Fusion.quantize of the chain's last value (interp only: refused by cuda)",
    "fp8-only": "every case an fp8 one (specs drawn from streams of their own)",
    "grad": "in a share of the cases (their own random stream), one backward kernel of "
    "mmcomp.grad (the epilogue adjoint under recompute, a dgrad, a dW over the tokens: its "
    "token count a dynamic K, run at a drawn count, 0 and 1 included) of a drawn linear, "
    "matmul or horizontal fusion, against the reference of that kernel's fusion; the "
    "gradients of the whole plan against float64 torch autograd of the forward",
    "grad-only": "every case a backward one (the grad family alone)",
}
"""Features that widen the grammar, each enabled by `--feature NAME`. They hold what the
cuda back end does not take yet (or is being fixed); the default grammar is what both back
ends are documented to run."""

DEFAULT_FEATURES: frozenset[str] = frozenset(
    {
        "split-k-over",
        "unaligned-k",
        "broadcast-m1",
        "broadcast-form",
        "dynamic-m",
        "swap-ab",
        "grouped",
        "one-row-tile",
    }
)
"""Features in the default grammar (those that both back ends run)."""

INTERP_FEATURES: frozenset[str] = frozenset()
"""Features the CPU executor runs, in its default grammar too."""

UNARY = ("relu", "neg", "silu", "sigmoid", "tanh", "gelu_tanh", "gelu_none", "exp")
BINARY = ("add", "sub", "mul", "div")
CONSTANTS = (0.5, 2.0, -1.5, 0.125, 3.0, -0.75, 1.25)
OPERAND_KINDS = ("bias", "row", "col", "full")
"""Epilogue operands: bias [N], row [1, N], col [M, 1], full [M, N] ([B, M, N] batched)."""

MAX_MAGNITUDE = 1.0e4
"""Bound on any value of a chain (estimated), so f16 never overflows."""
EXP_LIMIT = 6.0
"""exp is applied only to values bounded by this (estimated)."""


@dataclass(frozen=True)
class Operand:
    """An epilogue input."""

    name: str
    kind: str
    """One of OPERAND_KINDS."""
    dtype: str
    positive: bool = False
    """Values in [0.5, 2] (a divisor), else of either sign with |x| in [0.25, 2]."""


@dataclass(frozen=True)
class Step:
    """One pointwise op applied to the chain value `v`."""

    op: str
    """A UNARY or BINARY name, or "cast" (round `v` to `dtype`)."""
    arg: float | str | None = None
    """A binary op's other side: a constant, an Operand name, or "y1"/"y2" (another
    contraction of a horizontal fusion)."""
    swap: bool = False
    """The other side on the left (`c - v`)."""
    dtype: str | None = None
    """The dtype of a cast."""
    output: str | None = None
    """Make `v` after this step an output, cast to this dtype."""


@dataclass(frozen=True)
class Spec:
    """One fusion of the grammar, as plain data (printable, comparable, rebuildable)."""

    family: str
    m: int
    n: int
    k: int
    dtype: str
    """The contraction operands' dtype (bf16 or f16)."""
    batch: int = 0
    """Batch extent (batched family), 0 for none."""
    layout: str = ""
    """matmul in a horizontal fusion: "linear" / "matmul" per contraction, joined by ",";
    batched: "matmul", "matmul-bcast" (B without batch) or "linear"; fms: "mnk" (a[M,1,K],
    b[1,N,K], over axis 2) or "mkn" (a[M,K,1], b[1,K,N], over axis 1)."""
    bias: str | None = None
    """dtype of a linear's bias, None for no bias."""
    operands: tuple[Operand, ...] = ()
    steps: tuple[Step, ...] = ()
    raw_output: str | None = None
    """Make the contraction's f32 result an output, cast to this dtype."""
    final: str = "bf16"
    """dtype of the chain's last value, always an output."""
    others_out: tuple[str | None, ...] = ()
    """Horizontal: the other contractions' results as outputs (dtype), or not (None)."""
    groups: int = 0
    """Grouped (the feature grouped): the contractions are grouped linears over this
    many groups (w [G, N, K], the bias [G, N]); 0 for dense ones."""
    group_layout: str = ""
    """Grouped: "offsets" (x [M, K], cumulative group ends) or "counts" (x [G, M, K], the
    rows of each group; every [M, ...] operand and output gets the leading G)."""
    fp8: str = ""
    """fp8 factors (the feature fp8): the dtypes of A and of B (every B of a horizontal
    fusion), joined by ",", e.g. "f8e4m3,f8e5m2"; "" for factors of `dtype`."""
    scales: str = ""
    """fp8: the scales' mode, "tensor", "row" or "block" (docs/fp8.md), "" for none."""
    quantize: str = ""
    """The chain's last value also quantized (`Fusion.quantize`): "<fp8 dtype>/<granularity>",
    the granularity "128" or "row" (scales computed, both outputs) or "static-tensor",
    "static-row", "static-block" (a given scale input; the values alone are an output)."""

    @property
    def contractions(self) -> int:
        """The contractions (2-3 for horizontal)."""
        return len(self.layout.split(",")) if self.family == "horizontal" else 1


DYNAMIC_SHARE = 0.3
"""With the feature dynamic-m: the share of cases whose M (and batch extent) is dynamic."""
DYNAMIC_ROLES = {"m": "m", "b": "b"}
"""The input roles made dynamic in such a case, and the extent names they get."""


@dataclass
class Built:
    """A Spec as a Fusion, with what the inputs and checks need to know of it."""

    fusion: Fusion
    """The fusion at the spec's extents (inputs, reference and checks read it)."""
    roles: list[tuple[str, ...]]
    """Per input, a role per axis: "b", "m", "n", "k" or "1" (a size-1 axis)."""
    kinds: list[str]
    """Per input: "a", "b" (contraction operands), "bias", "signed" or "positive"."""
    rounding: list[list[str]] = field(default_factory=list)
    """Per output, the low-precision dtypes its chain value was rounded to before its own
    cast (epilogue ops in bf16/f16, casts inside the chain)."""
    approx: list[set[str]] = field(default_factory=list)
    """Per output, the transcendental ops in its chain."""
    chained: list[bool] = field(default_factory=list)
    """Per output, whether an epilogue op lies between the contraction and it (its
    relative error may grow from the contraction's)."""
    sources: list[str] = field(default_factory=list)
    """Per output of the grammar's chain, what it is: "y<j>" (a contraction's result),
    "step<i>" (the value after step i) or "final"."""
    step_dtypes: list[str] = field(default_factory=list)
    """The dtype of the chain's value after each step."""
    quantized: dict[int, int | None] = field(default_factory=dict)
    """The outputs of `Fusion.quantize` values: the index of the output of their computed
    scale, or None for a static scale (an input)."""
    compiled: Fusion | None = None
    """A dynamic case: the same fusion with its M and batch extents dynamic, the one
    compiled (None: `fusion` is)."""
    k: int = 0
    """The contraction extent where it is not the spec's K (a backward kernel), else 0."""
    tokens: int | None = None
    """A dW kernel: the token count (its K) it runs at; at 0 its inputs' K axes have no
    elements, and the reference is the fusion's at 1 token of zeros (a zero accumulator
    through the epilogue)."""

    def compile(self, spec: Spec, backend: str, params: dict[str, Any]) -> mmcomp.Kernel:
        """`mmcomp.compile` of the case: a dynamic case's one kernel is scheduled for the
        bound of the spec's M bucket (schedule_m) and runs at the spec's M."""
        if self.compiled is None:
            return mmcomp.compile(self.fusion, backend=backend, **params)
        from mmcomp.schedule.buckets import has_dynamic_m

        if not has_dynamic_m(self.compiled):
            return mmcomp.compile(self.compiled, backend=backend, **params)
        return mmcomp.compile(
            self.compiled, backend=backend, schedule_m=schedule_m_of(spec), **params
        )


def _contraction(f: Fusion, spec: Spec, index: int, inputs: dict[str, Value]) -> Value:
    """The `index`-th contraction of the spec, on the inputs created in `inputs`."""
    if spec.groups:
        w = inputs["w" if spec.family == "linear" else f"b{index}"]
        bias = inputs.get("bias")
        if spec.group_layout == "counts":
            return f.grouped_linear(inputs["a"], w, bias=bias, counts=inputs["sizes"])
        return f.grouped_linear(inputs["a"], w, inputs["sizes"], bias=bias)
    scales: dict[str, Value] = {}
    if spec.scales:
        other_scale = "sb" if spec.family != "horizontal" else f"sb{index}"
        scales = {"scale_a": inputs["sa"], "scale_b": inputs[other_scale]}
    if spec.family == "linear":
        return f.linear(inputs["a"], inputs["w"], inputs.get("bias"), **scales)
    if spec.family == "matmul":
        return f.matmul(inputs["a"], inputs["b"], **scales)
    if spec.family == "batched":
        if spec.layout == "linear":
            return f.linear(inputs["a"], inputs["w"], inputs.get("bias"), **scales)
        return f.matmul(inputs["a"], inputs["b"], **scales)
    if spec.family == "fms":
        axis = 2 if spec.layout == "mnk" else 1
        return f.fused_multiply_sum(inputs["a"], inputs["b"], [axis], **scales)
    if spec.family == "fms_broadcast":
        if spec.layout == "mnk":
            a3 = f.broadcast(inputs["a"], [False, True, False])
            b3 = f.broadcast(inputs["b"], [True, False, False])
            return f.fused_multiply_sum(a3, b3, [2], **scales)
        a3 = f.broadcast(inputs["a"], [False, False, True])
        b3 = f.broadcast(inputs["b"], [True, False, False])
        return f.fused_multiply_sum(a3, b3, [1], **scales)
    assert spec.family == "horizontal"
    kind = spec.layout.split(",")[index]
    other = inputs[f"b{index}"]
    if kind == "linear":
        return f.linear(inputs["a"], other, **scales)
    return f.matmul(inputs["a"], other, **scales)


def _contraction_inputs(spec: Spec) -> list[tuple[str, tuple[int, ...], tuple[str, ...], str]]:
    """(name, shape, roles, kind) of each contraction operand and the bias."""
    m, n, k, batch = spec.m, spec.n, spec.k, spec.batch
    result: list[tuple[str, tuple[int, ...], tuple[str, ...], str]] = []
    if spec.groups:
        return _grouped_inputs(spec)
    if spec.family in ("linear", "matmul"):
        result.append(("a", (m, k), ("m", "k"), "a"))
        if spec.family == "linear":
            result.append(("w", (n, k), ("n", "k"), "b"))
        else:
            result.append(("b", (k, n), ("k", "n"), "b"))
    elif spec.family == "batched":
        result.append(("a", (batch, m, k), ("b", "m", "k"), "a"))
        if spec.layout == "linear":
            result.append(("w", (n, k), ("n", "k"), "b"))
        elif spec.layout == "matmul-bcast":
            result.append(("b", (k, n), ("k", "n"), "b"))
        else:
            result.append(("b", (batch, k, n), ("b", "k", "n"), "b"))
    elif spec.family == "fms":
        if spec.layout == "mnk":
            result.append(("a", (m, 1, k), ("m", "1", "k"), "a"))
            result.append(("b", (1, n, k), ("1", "n", "k"), "b"))
        else:
            result.append(("a", (m, k, 1), ("m", "k", "1"), "a"))
            result.append(("b", (1, k, n), ("1", "k", "n"), "b"))
    elif spec.family == "fms_broadcast":
        result.append(("a", (m, k), ("m", "k"), "a"))
        if spec.layout == "mnk":
            result.append(("b", (n, k), ("n", "k"), "b"))
        else:
            result.append(("b", (k, n), ("k", "n"), "b"))
    else:
        result.append(("a", (m, k), ("m", "k"), "a"))
        for index, kind in enumerate(spec.layout.split(",")):
            if kind == "linear":
                result.append((f"b{index}", (n, k), ("n", "k"), "b"))
            else:
                result.append((f"b{index}", (k, n), ("k", "n"), "b"))
    if spec.bias is not None:
        result.append(("bias", (n,), ("n",), "bias"))
    if spec.scales:
        result.extend(_scale_inputs(spec, result))
    return result


KB = "kb"
"""The role of a block-wise scale's K-block axis (ceil(K/128) blocks)."""
NB = "nb"
"""The role of a block-wise scale's N-block axis (ceil(N/128) blocks)."""


def _scale_inputs(
    spec: Spec, factors: list[tuple[str, tuple[int, ...], tuple[str, ...], str]]
) -> list[tuple[str, tuple[int, ...], tuple[str, ...], str]]:
    """(name, shape, roles, kind) of the fp8 scales of each factor in `factors`: `sa` of A
    (shared by a horizontal fusion's contractions), `sb` (`sb<j>`) of each B, their shapes
    those of the spec's mode (docs/fp8.md)."""
    blocks = {"k": (-(-spec.k // 128), KB), "n": (-(-spec.n // 128), NB)}
    result: list[tuple[str, tuple[int, ...], tuple[str, ...], str]] = []
    for name, shape, roles, kind in factors:
        if kind not in ("a", "b"):
            continue
        scale = "sa" if kind == "a" else "sb" + name.removeprefix("w").removeprefix("b")
        axes = list(zip(shape, roles, strict=True))
        if spec.family == "fms_broadcast":
            # The factors are the inputs broadcast to rank 3 (their size-1 axis added).
            axes.insert(1 if kind == "a" else 0, (1, "1"))
            if kind == "a" and spec.layout == "mkn":
                axes = [axes[0], axes[2], axes[1]]
        if spec.scales == "tensor":
            axes = []
        elif spec.scales == "row":
            axes = [(e, r) for e, r in axes if r != "k"]
        else:
            axes = [blocks.get(r, (e, r)) for e, r in axes]
        shape_, roles_ = tuple(e for e, _ in axes), tuple(r for _, r in axes)
        result.append((scale, shape_, roles_, f"scale_{kind}"))
    return result


def _grouped_inputs(spec: Spec) -> list[tuple[str, tuple[int, ...], tuple[str, ...], str]]:
    """(name, shape, roles, kind) of a grouped spec's x, weights, group sizes and bias; the
    group axes' role is "g" (never dynamic)."""
    groups, m, n, k = spec.groups, spec.m, spec.n, spec.k
    result: list[tuple[str, tuple[int, ...], tuple[str, ...], str]]
    if spec.group_layout == "counts":
        result = [("a", (groups, m, k), ("g", "m", "k"), "a")]
    else:
        result = [("a", (m, k), ("m", "k"), "a")]
    names = ["w"] if spec.family == "linear" else [f"b{i}" for i in range(spec.contractions)]
    result += [(name, (groups, n, k), ("g", "n", "k"), "b") for name in names]
    result.append(("sizes", (groups,), ("g",), "sizes"))
    if spec.bias is not None:
        result.append(("bias", (groups, n), ("g", "n"), "bias"))
    return result


def operand_shape(spec: Spec, operand: Operand) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """Shape and roles of an epilogue operand."""
    if spec.group_layout == "counts" and operand.kind in ("col", "full"):
        if operand.kind == "col":
            return (spec.groups, spec.m, 1), ("g", "m", "1")
        return (spec.groups, spec.m, spec.n), ("g", "m", "n")
    if operand.kind == "bias":
        return (spec.n,), ("n",)
    if operand.kind == "row":
        return (1, spec.n), ("1", "n")
    if operand.kind == "col":
        return (spec.m, 1), ("m", "1")
    if spec.batch:
        return (spec.batch, spec.m, spec.n), ("b", "m", "n")
    return (spec.m, spec.n), ("m", "n")


def schedule_m_of(spec: Spec) -> int:
    """The M a dynamic case is scheduled for: the bound of the M bucket its M runs in, as
    the kernel of `mmcomp.compile` runs it (mmcomp.schedule.buckets)."""
    from mmcomp.schedule.buckets import bucket_for

    return bucket_for(spec.m)


def _extents(shape: Sequence[int], roles: Sequence[str], dynamic: bool) -> list[int | str]:
    """An input's extents, those of the DYNAMIC_ROLES named instead where `dynamic`."""
    return [
        DYNAMIC_ROLES[role] if dynamic and role in DYNAMIC_ROLES else extent
        for extent, role in zip(shape, roles, strict=True)
    ]


TRANSCENDENTAL = {"tanh", "gelu_tanh", "gelu_none", "exp", "sigmoid", "silu", "div"}


def build(spec: Spec, name: str = "fuzz", dynamic: bool = False) -> Built:
    """The Fusion of `spec`; with `dynamic`, also its form with dynamic M and batch extents
    (`Built.compiled`)."""
    built = _build(spec, name, False)
    if dynamic:
        compiled = _build(spec, name, True).fusion
        if any(value.dynamic_axes for value in compiled.inputs):
            built.compiled = compiled
    return built


def _build(spec: Spec, name: str, dynamic: bool) -> Built:
    """The Fusion of `spec`, its M and batch extents dynamic where `dynamic`."""
    f = Fusion(name)
    inputs: dict[str, Value] = {}
    roles: list[tuple[str, ...]] = []
    kinds: list[str] = []
    for input_name, shape, input_roles, kind in _contraction_inputs(spec):
        dtype = _input_dtype(spec, kind)
        inputs[input_name] = f.input(input_name, _extents(shape, input_roles, dynamic), dtype)
        roles.append(input_roles)
        kinds.append(kind)
    for operand in spec.operands:
        shape, operand_roles = operand_shape(spec, operand)
        extents = _extents(shape, operand_roles, dynamic)
        inputs[operand.name] = f.input(operand.name, extents, operand.dtype)
        roles.append(operand_roles)
        kinds.append("positive" if operand.positive else "signed")
    if spec.quantize.split("/")[-1].startswith("static"):
        shape, scale_roles = quantize_scale_shape(spec)
        extents = _extents(shape, scale_roles, dynamic)
        inputs[QUANTIZE_SCALE] = f.input(QUANTIZE_SCALE, extents, "f32")
        roles.append(scale_roles)
        kinds.append("quantize_scale")
    ys = [_contraction(f, spec, index, inputs) for index in range(spec.contractions)]
    built = Built(f, roles, kinds)
    outputs: list[Value] = []

    def emit(
        value: Value,
        dtype: str,
        rounding: list[str],
        approx: set[str],
        source: str,
        chained: bool = True,
    ) -> None:
        out = f.cast(value, dtype)
        if any(out.ssa is previous.ssa for previous in outputs):
            return
        outputs.append(f.output(out))
        built.sources.append(source)
        built.rounding.append(list(rounding))
        built.approx.append(set(approx))
        built.chained.append(chained)

    if spec.raw_output is not None:
        emit(ys[0], spec.raw_output, [], set(), "y0", False)
    for index, dtype in enumerate(spec.others_out):
        if dtype is not None:
            emit(ys[index + 1], dtype, [], set(), f"y{index + 1}", False)
    value = ys[0]
    rounding: list[str] = []
    approx: set[str] = set()
    for step in spec.steps:
        value = _apply(f, value, step, inputs, ys)
        built.step_dtypes.append(value.dtype)
        if step.op in TRANSCENDENTAL:
            approx.add(step.op)
        if value.dtype != "f32":
            rounding.append(value.dtype)
        if step.output is not None:
            emit(value, step.output, rounding, approx, f"step{len(built.step_dtypes) - 1}")
    emit(value, spec.final, rounding, approx, "final", bool(spec.steps))
    if spec.quantize:
        _quantize(f, spec, value, inputs, built, outputs, rounding, approx)
    return built


def _input_dtype(spec: Spec, kind: str) -> str:
    """The dtype of a contraction input of `kind`."""
    if kind == "sizes":
        return "i32"
    if kind == "bias" and spec.bias is not None:
        return spec.bias
    if kind.startswith("scale"):
        return "f32"
    if spec.fp8 and kind in ("a", "b"):
        return spec.fp8.split(",")[0 if kind == "a" else 1]
    return spec.dtype


QUANTIZE_SCALE = "qs"
"""The name of a static quantization's scale input."""


def quantize_scale_shape(spec: Spec) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """Shape and roles of a static quantization's scale input (its granularity's)."""
    rows: tuple[tuple[int, ...], tuple[str, ...]] = ((spec.m,), ("m",))
    if spec.batch:
        rows = ((spec.batch, spec.m), ("b", "m"))
    granularity = spec.quantize.split("/")[1]
    if granularity == "static-tensor":
        return (), ()
    if granularity == "static-row":
        return rows
    return (*rows[0], -(-spec.n // 128)), (*rows[1], NB)


def _quantize(
    f: Fusion,
    spec: Spec,
    value: Value,
    inputs: dict[str, Value],
    built: Built,
    outputs: list[Value],
    rounding: list[str],
    approx: set[str],
) -> None:
    """The chain's last value quantized to fp8: its values and (computed) scales as
    outputs, recorded in `built.quantized`."""
    dtype, granularity = spec.quantize.split("/")
    if granularity.startswith("static"):
        q, _ = f.quantize(value, dtype, scale=inputs[QUANTIZE_SCALE])
        outputs.append(f.output(q))
        built.quantized[len(outputs) - 1] = None
    else:
        group = 128 if granularity == "128" else None
        q, scale = f.quantize(value, dtype, group=group)
        outputs.append(f.output(q))
        outputs.append(f.output(scale))
        built.quantized[len(outputs) - 2] = len(outputs) - 1
    for _ in range(len(built.rounding), len(outputs)):
        built.rounding.append(list(rounding))
        built.approx.append(set(approx))
        built.chained.append(True)


def _apply(f: Fusion, value: Value, step: Step, inputs: dict[str, Value], ys: list[Value]):
    """`value` after one step."""
    if step.op == "cast":
        assert step.dtype is not None
        return f.cast(value, step.dtype)
    if step.op in UNARY:
        if step.op == "gelu_tanh":
            return f.gelu(value, "tanh")
        if step.op == "gelu_none":
            return f.gelu(value, "none")
        return getattr(f, step.op)(value)
    other: Value | float
    if isinstance(step.arg, str):
        other = ys[int(step.arg[1:])] if re.fullmatch(r"y\d", step.arg) else inputs[step.arg]
    else:
        assert step.arg is not None
        other = float(step.arg)
    method = getattr(f, step.op)
    return method(other, value) if step.swap else method(value, other)


# ---------------------------------------------------------------------------------------
# Drawing cases

PRIMES = (3, 5, 11, 13, 17, 31, 37, 61, 67, 97, 101, 131, 137, 193, 251, 257, 509, 521)


def _choice(rng: np.random.Generator, options: Sequence[Any], p: Sequence[float] | None = None):
    """One of `options` (any objects), optionally weighted."""
    if p is not None:
        weights = np.asarray(p, dtype=np.float64)
        return options[int(rng.choice(len(options), p=weights / weights.sum()))]
    return options[int(rng.integers(len(options)))]


def draw_extent(rng: np.random.Generator, limit: int) -> int:
    """An M or N extent biased to the edges of tiles: 1, 2, 7, 63-65, 127-129, primes."""
    pool = _choice(
        rng,
        ("tiny", "edge64", "edge128", "edge256", "prime", "round", "uniform"),
        (3, 3, 3, 2, 2, 1, 2),
    )
    if pool == "tiny":
        value = _choice(rng, (1, 2, 3, 7, 8, 9, 15, 16, 17))
    elif pool == "edge64":
        value = _choice(rng, (63, 64, 65))
    elif pool == "edge128":
        value = _choice(rng, (127, 128, 129))
    elif pool == "edge256":
        value = _choice(rng, (191, 192, 193, 255, 256, 257, 383, 384, 385))
    elif pool == "prime":
        value = _choice(rng, PRIMES)
    elif pool == "round":
        value = _choice(rng, (320, 448, 512, 576))
    else:
        value = int(rng.integers(1, limit + 1))
    return max(1, min(int(value), limit))


def draw_k(rng: np.random.Generator, aligned: bool, limit: int) -> int:
    """A K extent: multiples of 8 near the K-block edges, or any (unaligned-k)."""
    if not aligned and rng.random() < 0.5:
        value = _choice(rng, (1, 2, 3, 7, 9, 13, 31, 63, 65, 100, 127, 129, 255, 700, 1001))
        return min(int(value), limit)
    value = _choice(
        rng,
        (8, 16, 24, 40, 56, 64, 72, 120, 128, 136, 192, 200, 256, 264, 320, 504, 512, 520, 1024),
        (2, 2, 1, 1, 1, 3, 2, 1, 3, 2, 1, 1, 2, 1, 1, 1, 1, 1, 1),
    )
    return min(int(value), limit - limit % 8 if limit >= 8 else limit)


@dataclass(frozen=True)
class Limits:
    """Extent limits of a back end."""

    mn: int
    """Largest ordinary M and N."""
    k: int
    """Largest ordinary K."""
    large: float
    """Probability of a large case (checked on sampled rows and columns)."""


LIMITS = {
    "interp": Limits(mn=400, k=520, large=0.0),
    "cuda": Limits(mn=700, k=1024, large=0.02),
}


def _large_shape(rng: np.random.Generator) -> tuple[int, int, int]:
    """A large problem, cheap to check on sampled rows and columns."""
    shape = _choice(
        rng,
        (
            (4096, 4096, 1024),
            (2049, 3073, 520),
            (8191, 1024, 264),
            (65537, 128, 64),
            (128, 65536, 128),
            (3000, 5000, 2048),
            (1, 16384, 4096),
        ),
    )
    return tuple(int(x) for x in shape)  # pyright: ignore[reportReturnType]


def draw_spec(
    rng: np.random.Generator,
    backend: str,
    features: frozenset[str],
    extra: np.random.Generator | None = None,
) -> Spec:
    """A random fusion of the grammar; `extra` draws what later versions of the grammar
    added, leaving the draws from `rng` as they were."""
    extra = extra if extra is not None else np.random.default_rng(rng.integers(1 << 32))
    limits = LIMITS[backend]
    aligned = "unaligned-k" not in features
    families = [f for f in FAMILIES if f != "fms_broadcast" or "broadcast-form" in features]
    family = _choice(rng, families, [3 if f == "linear" else 2 for f in families])
    dtype = _choice(rng, ("bf16", "f16"), (3, 1))
    large = rng.random() < limits.large
    if large:
        m, n, k = _large_shape(rng)
    else:
        m = draw_extent(rng, limits.mn)
        n = draw_extent(rng, limits.mn)
        k = draw_k(rng, aligned, limits.k)
    batch = 0
    layout = ""
    if family == "batched":
        batch = _choice(rng, (1, 2, 3, 5))
        layout = _choice(rng, ("matmul", "matmul-bcast", "linear"))
        if large:
            m = max(1, m // 8)
    elif family in ("fms", "fms_broadcast"):
        layout = _choice(rng, ("mnk", "mkn"), (3, 1))
    elif family == "horizontal":
        count = _choice(rng, (2, 3), (3, 1))
        layout = ",".join(_choice(rng, ("linear", "matmul"), (3, 1)) for _ in range(count))
    if family in ("fms", "fms_broadcast") and "broadcast-m1" not in features:
        m, n = max(m, 2), max(n, 2)
    elif family in ("fms", "fms_broadcast") and not large and extra.random() < 0.2:
        # An operand with no m (n) axis at all: M = 1, N = 1 or both (a dot product), from
        # a stream of its own so that the other draws stay those of earlier versions.
        m, n = _choice(extra, ((1, n), (m, 1), (1, 1)))
    b_is_kn = family in ("matmul", "horizontal", "batched", "fms", "fms_broadcast") and (
        "matmul" in layout or family == "matmul" or layout == "mkn"
    )
    if aligned and b_is_kn and n % 8:
        n = n + (8 - n % 8)
    bias = None
    if family == "linear" or (family == "batched" and layout == "linear"):
        bias = _choice(rng, (None, dtype, "f32"), (2, 2, 1))
    spec = Spec(family, m, n, k, dtype, batch, layout, bias)
    return _draw_epilogue(rng, spec)


def _draw_epilogue(rng: np.random.Generator, spec: Spec) -> Spec:
    """Epilogue steps, operands and outputs for a spec's contractions."""
    out_dtypes = ("f32", "bf16", "f16")
    steps: list[Step] = []
    operands: list[Operand] = []
    others = [f"y{index}" for index in range(1, spec.contractions)]
    magnitude = 5.0 + (4.0 if spec.bias is not None else 0.0)
    dtype = "f32"
    length = int(_choice(rng, (0, 1, 2, 3, 4, 5, 6), (2, 2, 2, 2, 1, 1, 1)))
    if others:
        length = max(length, len(others))
    pending = list(others)
    for position in range(length):
        step, magnitude, dtype, operand = _draw_step(
            rng, spec, magnitude, dtype, len(operands), pending, length - position
        )
        if operand is not None:
            operands.append(operand)
        if isinstance(step.arg, str) and step.arg in pending:
            pending.remove(step.arg)
        if rng.random() < 0.2:
            step = dataclasses.replace(step, output=_choice(rng, out_dtypes, (1, 2, 1)))
        steps.append(step)
    raw = _choice(rng, (None, "f32", "bf16"), (4, 2, 1)) if steps else None
    others_out = tuple(_choice(rng, (None, "f32", "bf16"), (3, 1, 1)) for _ in others)
    final = _choice(rng, out_dtypes, (1, 3, 1))
    return dataclasses.replace(
        spec,
        operands=tuple(operands),
        steps=tuple(steps),
        raw_output=raw,
        final=final,
        others_out=others_out,
    )


def _draw_step(
    rng: np.random.Generator,
    spec: Spec,
    magnitude: float,
    dtype: str,
    operand_count: int,
    pending: list[str],
    left: int,
) -> tuple[Step, float, str, Operand | None]:
    """One step: (step, magnitude after it, dtype after it, a new operand or None)."""
    if pending and (left <= len(pending) or rng.random() < 0.5):
        other = pending[0]
        op = _choice(rng, ("mul", "add", "sub"))
        return Step(op, other, swap=bool(rng.random() < 0.3)), magnitude * 5.0, "f32", None
    kind = _choice(rng, ("unary", "operand", "constant", "cast"), (4, 4, 2, 1))
    if kind == "cast" and dtype == "f32":
        low = _choice(rng, ("bf16", "f16")) if magnitude < 6e4 else "bf16"
        return Step("cast", dtype=low), magnitude, low, None
    if kind == "unary" or kind == "cast":
        choices = [u for u in UNARY if u != "exp" or magnitude <= EXP_LIMIT]
        op = _choice(rng, choices)
        if op == "exp":
            return Step(op), math.exp(magnitude), dtype, None
        bounded = op in ("sigmoid", "tanh")
        return Step(op), 1.0 if bounded else magnitude, dtype, None
    if kind == "constant":
        op = _choice(rng, BINARY)
        constant = _choice(rng, CONSTANTS)
        if op == "div":
            grown = magnitude / abs(constant)
            swap = False
        else:
            swap = op != "mul" and bool(rng.random() < 0.3)
            grown = magnitude * abs(constant) if op == "mul" else magnitude + abs(constant)
        if grown > MAX_MAGNITUDE:
            return Step("mul", 0.5), magnitude * 0.5, dtype, None
        return Step(op, constant, swap=swap), grown, dtype, None
    op = _choice(rng, BINARY)
    positive = op == "div"
    operand_dtype = _choice(rng, (spec.dtype, "f32", dtype), (2, 1, 1))
    operand_kind = _choice(rng, OPERAND_KINDS)
    operand = Operand(f"t{operand_count}", operand_kind, operand_dtype, positive)
    grown = magnitude * 2.0 if op in ("div", "mul") else magnitude + 2.0
    if grown > MAX_MAGNITUDE:
        op, grown = "add", magnitude + 2.0
        operand = dataclasses.replace(operand, positive=False)
    swap = op in ("add", "sub", "mul") and bool(rng.random() < 0.3)
    result_dtype = dtype if operand_dtype == dtype else "f32"
    return Step(op, operand.name, swap=swap), grown, result_dtype, operand


SCHEDULE_KEYS = PARAMETERS
"""The keywords of mmcomp.compile that a case may pin (the heuristic's parameter names)."""
DRAWN_KEYS = tuple(key for key in SCHEDULE_KEYS if key not in ("swap_ab", "epilogue_subtile"))
"""The keys `draw_schedule` draws from the case's generator; swap_ab is drawn from a
generator of its own (`draw_swap_ab`, with the feature swap-ab), so that every case it
leaves unswapped is the case it was before; epilogue_subtile is left to the heuristic
(which takes one where a drawn schedule's whole-tile epilogue does not fit), so that the
draws stay those they were."""
SWAP_AB_SHARE = 0.15
"""Cases that pin swap_ab=True (their tile and epilogue made to fit it), with swap-ab."""


def draw_swap_ab(rng: np.random.Generator, params: dict[str, Any]) -> dict[str, Any]:
    """`params` with swap_ab=True in SWAP_AB_SHARE of the cases: a drawn tile gets rows a
    multiple of 8 (wgmma's n) up to 256 and a width a multiple of 64 (wgmma's m; 128 or
    more unless ping-pong, whose two consumers do not split it), a drawn smem epilogue
    becomes registers; the rest stays drawn."""
    if rng.random() >= SWAP_AB_SHARE:
        return params
    swapped = {**params, "swap_ab": True}
    if "tile" in params:
        _, tile_n, tile_k = params["tile"]
        tile_m = _choice(rng, (8, 16, 24, 32, 40, 64, 128, 8 * int(rng.integers(1, 33))))
        pingpong = params.get("warp_specialization") == "pingpong"
        tile_n = max(-(-tile_n // 64) * 64, 64 if pingpong else 128)
        swapped["tile"] = (tile_m, tile_n, tile_k)
    if params.get("epilogue") == "smem":
        swapped["epilogue"] = "registers"
    return swapped


STRATEGY_CHOICES = ("persistent", "stream-k", "hybrid-stream-k", "one-tile-per-cta")
"""The strategies a case may pin."""
STRATEGY_WEIGHTS = (4, 1, 1, 3)
"""Their weights: persistent 4/9, each stream-K strategy 1/9, one tile per CTA 3/9."""


def draw_schedule(rng: np.random.Generator, spec: Spec, features: frozenset[str]) -> dict[str, Any]:
    """Keywords of mmcomp.compile, each present or left to the heuristic; {} often."""
    if rng.random() < 0.3:
        return {}
    present = {key for key in DRAWN_KEYS if rng.random() < 0.35}
    if not present:
        present = {_choice(rng, DRAWN_KEYS)}
    params: dict[str, Any] = {}
    ws = _choice(rng, ("cooperative", "pingpong", "none"), (5, 3, 2))
    if "warp_specialization" in present:
        params["warp_specialization"] = ws
    else:
        ws = "cooperative"
    tile_k = 64
    if "tile" in present:
        if ws == "pingpong":
            tile_m = _choice(rng, (64, 128), (3, 1))
        elif "one-row-tile" in features:
            tile_m = _choice(rng, (64, 128, 256), (1, 3, 1))
        else:
            tile_m = _choice(rng, (128, 256), (4, 1))
        tile_n = _choice(rng, (64, 128, 256, 8 * int(rng.integers(1, 33))), (3, 3, 2, 2))
        if ws == "pingpong" and tile_m * tile_n > 64 * 256:
            tile_n = 128
        tile_k = _choice(rng, (64, 32, 128, 16), (6, 1, 1, 1))
        params["tile"] = (tile_m, tile_n, tile_k)
    if "stages" in present:
        params["stages"] = int(rng.integers(2, 9))
    if "cluster" in present:
        tile_m, tile_n = params.get("tile", (128, 128))[:2]
        tiles_m, tiles_n = -(-spec.m // tile_m), -(-spec.n // tile_n)
        clusters = [(1, 1), (2, 1), (1, 2), (4, 1), (2, 2)]
        fitting = [(cm, cn) for cm, cn in clusters if cm <= tiles_m and cn <= tiles_n]
        if rng.random() < 0.9:
            clusters = fitting
        params["cluster"] = _choice(rng, clusters)
    if "raster" in present:
        params["raster"] = _choice(rng, ("m", "n", "auto"))
    if "swizzle" in present:
        params["swizzle"] = _choice(rng, (1, 2, 3, 4, 8, 16, int(rng.integers(1, 133))))
    if "strategy" in present:
        # Persistent's share is split with the stream-K strategies: one-tile-per-CTA keeps
        # its draws, so a case drawn before stream-K existed keeps that strategy.
        params["strategy"] = _choice(rng, STRATEGY_CHOICES, STRATEGY_WEIGHTS)
    if "split_k" in present:
        k_blocks = -(-spec.k // tile_k)
        split = int(rng.integers(1, 5))
        if "split-k-over" in features and rng.random() < 0.2:
            split = k_blocks + int(rng.integers(1, 3))
        params["split_k"] = split if "split-k-over" in features else min(split, k_blocks)
    if "registers" in present:
        if ws == "none":
            params["registers"] = _choice(rng, ((168, 168), (128, 128), (232, 232)))
        else:
            params["registers"] = _choice(rng, ((40, 232), (24, 240), (32, 232), (56, 224)))
    if "epilogue" in present:
        params["epilogue"] = _choice(rng, ("registers", "smem"))
    if params.get("strategy") in STRATEGY_CHOICES[1:3]:
        # Stream-K splits K itself and runs without clusters (refused with either pinned):
        # the case runs stream-K instead of a refusal.
        params.pop("split_k", None)
        params.pop("cluster", None)
    return params


@dataclass(frozen=True)
class Case:
    """One fuzz case: where it comes from, its fusion and its schedule keywords."""

    seed: int
    index: int
    backend: str
    features: frozenset[str]
    spec: Spec
    params: dict[str, Any]
    dynamic: bool = False
    """Compiled with its M and batch extents dynamic (the feature dynamic-m)."""
    backward: tuple[bool, int, int] | None = None
    """A backward case (the features grad, grad-only): (recompute, which kernel step of the
    spec's gradient, the token count a dW runs at)."""

    @property
    def name(self) -> str:
        """The fusion's symbol name."""
        return f"fuzz_{self.seed}_{self.index}"

    def command(self) -> str:
        """The command line that reruns this case alone."""
        flags = "".join(
            f" --feature {feature}"
            for feature in sorted(self.features - default_features(self.backend))
        )
        return (
            f"python tools/fuzz.py --backend {self.backend} --seed {self.seed} "
            f"--case {self.index}{flags}"
        )


def default_features(backend: str) -> frozenset[str]:
    """The features of the default grammar of a back end."""
    return DEFAULT_FEATURES | (INTERP_FEATURES if backend == "interp" else frozenset())


def draw_case(seed: int, index: int, backend: str, features: frozenset[str]) -> Case:
    """Case `index` of `seed`: the same on every machine and in every process."""
    if "grad-only" in features or (
        "grad" in features and np.random.default_rng([seed, index, 15]).random() < GRAD_SHARE
    ):
        return draw_backward_case(seed, index, backend, features)
    if "grouped-only" in features:
        return draw_grouped_case(seed, index, backend, features)
    if "fp8-only" in features:
        return draw_fp8_case(seed, index, backend, features)
    rng = np.random.default_rng([seed, index])
    spec = draw_spec(rng, backend, features, np.random.default_rng([seed, index, 3]))
    params = draw_schedule(rng, spec, features)
    if "swap-ab" in features:
        params = draw_swap_ab(np.random.default_rng([seed, index, 5]), params)
    if "grouped" in features:
        spec, params = draw_grouped(np.random.default_rng([seed, index, 9]), spec, params)
    if "fp8" in features:
        spec, params = draw_fp8(np.random.default_rng([seed, index, 14]), spec, params, backend)
    dynamic = "dynamic-m" in features and (
        np.random.default_rng([seed, index, 4]).random() < DYNAMIC_SHARE
    )
    return Case(seed, index, backend, features, spec, params, bool(dynamic))


GROUPED_SHARE = 0.35
"""With the feature grouped: the share of the linear and all-linear horizontal cases made
grouped."""
GROUPED_FIXED = ("split_k", "cluster", "strategy", "swap_ab", "warp_specialization")
"""The keywords a grouped kernel fixes (mmcomp.schedule.grouped): a grouped case drops
their pins, so that it runs instead of a refusal."""


def _groupable(spec: Spec) -> bool:
    """A linear or all-linear horizontal spec (grouped linears can replace its
    contractions)."""
    return spec.family == "linear" or (
        spec.family == "horizontal" and set(spec.layout.split(",")) == {"linear"}
    )


def draw_grouped(
    rng: np.random.Generator, spec: Spec, params: dict[str, Any], share: float = GROUPED_SHARE
) -> tuple[Spec, dict[str, Any]]:
    """`spec` made grouped in `share` of its linear and all-linear horizontal cases (not
    the large ones, which are checked on sampled rows): G groups, contiguous or masked,
    the bias per group; the other cases as they were."""
    if not _groupable(spec) or rng.random() >= share:
        return spec, params
    groups = int(_choice(rng, (1, 2, 3, 5, 8, 16, 64, 128), (1, 1, 1, 1, 3, 1, 1, 1)))
    layout = str(_choice(rng, ("offsets", "counts"), (3, 1)))
    if (groups if layout == "counts" else 1) * spec.m * spec.n > SAMPLE_ELEMENTS:
        return spec, params
    kept = {key: value for key, value in params.items() if key not in GROUPED_FIXED}
    tile = kept.get("tile")
    if tile is not None and tile[0] not in (128, 256):
        # A tile drawn for ping-pong or swap-AB (rows of 64 or of wgmma's n): the grouped
        # kernel's cooperative consumers take 128 rows.
        kept["tile"] = (128, *tile[1:])
    return dataclasses.replace(spec, groups=groups, group_layout=layout), kept


def draw_grouped_case(seed: int, index: int, backend: str, features: frozenset[str]) -> Case:
    """A case of the feature grouped-only: a groupable spec (redrawn from streams of its
    own until one comes) made grouped, its schedule and dynamic M drawn as any case's."""
    for attempt in range(1000):
        rng = np.random.default_rng([seed, index, 10, attempt])
        spec = draw_spec(rng, backend, features, np.random.default_rng([seed, index, 11, attempt]))
        params = draw_schedule(rng, spec, features)
        grouped, params = draw_grouped(
            np.random.default_rng([seed, index, 9, attempt]), spec, params, share=1.0
        )
        if grouped.groups:
            dynamic = "dynamic-m" in features and rng.random() < DYNAMIC_SHARE
            return Case(seed, index, backend, features, grouped, params, bool(dynamic))
    raise RuntimeError(f"case {index} of seed {seed}: no grouped spec in 1000 draws")


FP8_SHARE = 0.35
"""With the feature fp8: the share of the (dense) cases given fp8 factors, outputs or a
quantization."""
FP8_TYPES = ("f8e4m3", "f8e5m2")
SCALE_MODES = ("tensor", "row", "block", "")
"""The scales' modes of fp8 factors ("" for no scales)."""
QUANTIZE_GRANULARITIES = ("128", "row", "static-tensor", "static-row", "static-block")


def _is_fp8(dtype: str | None) -> bool:
    return dtype is not None and dtype.startswith("f8")


def has_fp8(spec: Spec) -> bool:
    """Whether the spec has fp8 factors, an fp8 output or a quantization."""
    outputs = (spec.final, spec.raw_output, *(step.output for step in spec.steps))
    return bool(spec.fp8 or spec.quantize or any(_is_fp8(dtype) for dtype in outputs))


def _mn_major_b(spec: Spec) -> bool:
    """Whether a B factor of the spec is [..., K, N] (N contiguous)."""
    kinds = spec.layout.split(",") if spec.family == "horizontal" else [spec.layout]
    return (
        spec.family == "matmul"
        or spec.layout == "mkn"
        or any(kind.startswith("matmul") for kind in kinds)
    )


def draw_fp8(
    rng: np.random.Generator,
    spec: Spec,
    params: dict[str, Any],
    backend: str,
    share: float = FP8_SHARE,
) -> tuple[Spec, dict[str, Any]]:
    """`spec` given fp8 in `share` of the dense cases: e4m3 / e5m2 factors (mixed too) with
    per-tensor, row-wise, block-wise or no scales, fp8 outputs (casts), a quantization of
    the chain's last value; a pinned tile made to fit fp8 (K tile 128, block-wise tiles no
    wider than an N block) in most cases, so that the rest test the refusals. On cuda,
    where fp8 factors must be K-major and fp8 outputs have an even N, most of the drawn
    fp8 cases keep to that."""
    if spec.groups or rng.random() >= share:
        return spec, params
    sampled = spec.m * spec.n * max(spec.batch, 1) > SAMPLE_ELEMENTS
    changes: dict[str, Any] = {}
    factors = rng.random() < 0.85
    if backend == "cuda" and _mn_major_b(spec) and rng.random() < 0.8:
        factors = False  # refused by cuda: a share of them only
    if factors:
        a = _choice(rng, FP8_TYPES, (3, 1))
        b = _choice(rng, FP8_TYPES, (3, 1))
        modes = [
            mode
            for mode in SCALE_MODES
            if mode != "block" or (spec.family not in ("fms", "fms_broadcast") and not sampled)
        ]
        changes["fp8"] = f"{a},{b}"
        changes["scales"] = _choice(rng, modes, [1 if mode == "" else 3 for mode in modes])
    if rng.random() < 0.3:
        changes["final"] = _choice(rng, FP8_TYPES)
    if spec.raw_output is not None and rng.random() < 0.2:
        changes["raw_output"] = _choice(rng, FP8_TYPES)
    steps = tuple(
        dataclasses.replace(step, output=_choice(rng, FP8_TYPES))
        if step.output is not None and rng.random() < 0.3
        else step
        for step in spec.steps
    )
    if steps != spec.steps:
        changes["steps"] = steps
    if not sampled and rng.random() < (0.25 if backend == "interp" else 0.1):
        granularity = _choice(rng, QUANTIZE_GRANULARITIES)
        changes["quantize"] = f"{_choice(rng, FP8_TYPES, (3, 1))}/{granularity}"
    if not changes:
        changes["final"] = _choice(rng, FP8_TYPES)
    spec = dataclasses.replace(spec, **changes)
    outputs_fp8 = has_fp8(dataclasses.replace(spec, fp8=""))
    if backend == "cuda" and outputs_fp8 and spec.n % 2 and rng.random() < 0.8:
        spec = dataclasses.replace(spec, n=spec.n + 1)  # fp8 outputs are stored in pairs
    if backend == "cuda" and spec.fp8 and spec.k % 16 and spec.k % 2 and rng.random() < 0.7:
        spec = dataclasses.replace(spec, k=spec.k + 1)  # staged fp8 rows: 16-bit words
    tile = params.get("tile")
    if tile is not None and spec.fp8 and rng.random() < 0.8:
        tile_m, tile_n, _ = tile
        if spec.scales == "block":
            if tile_n > 128 or 128 % tile_n:
                tile_n = _choice(rng, (32, 64, 128), (1, 2, 4))
            params = {**params, "tile": (tile_m, tile_n, 128)}
        else:
            params = {**params, "tile": (tile_m, tile_n, _choice(rng, (128, 64, 256), (4, 2, 1)))}
    return spec, params


def fp8_refusal(case: Case, message: str = "") -> str:
    """Why the back end refuses the fp8 parts of a case whatever its schedule (docs/fp8.md),
    or "" where the heuristic's schedule must compile; `message`, the refusal's, tells a
    row quantization that no tile holds with the epilogue's other registers."""
    spec = case.spec
    if spec.quantize.endswith("/row") and "no tile fits" in message:
        return "a row's amax in one tile: no tile of the whole row fits the registers"
    if spec.quantize and spec.n == 1:
        return "groups along an axis of one element (no n axis)"
    if spec.quantize.endswith("/row") and spec.n > 128:
        return "a row's amax in one tile: 256 columns at most, held in registers"
    if case.backend != "cuda":
        return ""
    if spec.quantize:
        return "the quantizing epilogue"
    if spec.fp8:
        if _mn_major_b(spec):
            return "an MN-major fp8 operand"
        if spec.k % 16 and spec.k % 2:
            return "an fp8 operand staged with an odd K"
    outputs = (spec.final, spec.raw_output, *(step.output for step in spec.steps))
    if spec.n % 2 and any(_is_fp8(dtype) for dtype in outputs):
        return "an fp8 output of odd N"
    return ""


def draw_fp8_case(seed: int, index: int, backend: str, features: frozenset[str]) -> Case:
    """A case of the feature fp8-only: a dense spec (redrawn from streams of its own until
    one comes) given fp8, its schedule and dynamic M drawn as any case's."""
    for attempt in range(1000):
        rng = np.random.default_rng([seed, index, 12, attempt])
        spec = draw_spec(rng, backend, features, np.random.default_rng([seed, index, 13, attempt]))
        params = draw_schedule(rng, spec, features)
        if "swap-ab" in features:
            params = draw_swap_ab(np.random.default_rng([seed, index, 5, attempt]), params)
        fp8, params = draw_fp8(
            np.random.default_rng([seed, index, 14, attempt]), spec, params, backend, share=1.0
        )
        if has_fp8(fp8):
            dynamic = "dynamic-m" in features and rng.random() < DYNAMIC_SHARE
            return Case(seed, index, backend, features, fp8, params, bool(dynamic))
    raise RuntimeError(f"case {index} of seed {seed}: no fp8 spec in 1000 draws")


def build_case(case: Case) -> Built:
    """The fusions of a case."""
    if case.backward is not None:
        return build_backward(case.spec, case.name, *case.backward)
    return build(case.spec, case.name, case.dynamic)


BACKWARD_FAMILIES = ("linear", "matmul", "horizontal")
"""The families whose fusions mmcomp.grad differentiates (its contractions read inputs)."""
BACKWARD_VOLUME = 1 << 28
"""The largest M x N x K of a backward case (its reference runs in full, unsampled)."""


def _differentiable(spec: Spec) -> bool:
    if spec.family not in BACKWARD_FAMILIES or spec.m * spec.n * spec.k > BACKWARD_VOLUME:
        return False
    if any(operand.kind == "col" for operand in spec.operands):
        return False  # a column's adjoint is a row sum, which grad does not build
    from mmcomp.autodiff import KERNEL

    try:
        gradient = mmcomp.grad(build(spec, "probe").fusion)
    except FusionError:
        return False
    return any(step.kind == KERNEL for step in gradient.steps)


def draw_backward_case(seed: int, index: int, backend: str, features: frozenset[str]) -> Case:
    """A case of the feature backward: a differentiable spec (redrawn from streams of its
    own until mmcomp.grad takes it), a policy and one of its gradient's kernels."""
    for attempt in range(1000):
        rng = np.random.default_rng([seed, index, 7, attempt])
        spec = draw_spec(rng, backend, features, np.random.default_rng([seed, index, 8, attempt]))
        if _differentiable(spec):
            break
    else:
        raise RuntimeError(f"case {index}: no differentiable fusion in 1000 draws")
    params = draw_schedule(rng, spec, features)
    choice = np.random.default_rng([seed, index, 6])
    backward = (bool(choice.random() < 0.5), int(choice.integers(1 << 16)))
    tokens = draw_tokens(np.random.default_rng([seed, index, 16]), spec, LIMITS[backend])
    return Case(seed, index, backend, features, spec, params, False, (*backward, tokens))


GRAD_SHARE = 0.25
"""With the feature grad: the share of the cases that are backward ones."""
TOKEN_COUNTS = (0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 63, 64, 65, 127, 128, 129, 255, 256, 257)


def draw_tokens(rng: np.random.Generator, spec: Spec, limits: Limits) -> int:
    """The token count a dW kernel (its K dynamic) runs at: the edges of K blocks, 0 and 1
    often, the spec's own M, or any up to the back end's limit, within BACKWARD_VOLUME."""
    pool = _choice(rng, ("zero-one", "edge", "spec", "uniform"), (2, 4, 2, 2))
    if pool == "zero-one":
        tokens = _choice(rng, (0, 1))
    elif pool == "edge":
        tokens = _choice(rng, TOKEN_COUNTS)
    elif pool == "spec":
        tokens = spec.m
    else:
        tokens = int(rng.integers(1, limits.k + 1))
    return min(int(tokens), max(1, BACKWARD_VOLUME // max(1, spec.n * spec.k)))


_ROLE_NAMES = {"_": "1", "m": "m", "n": "n", "k": "k"}


def build_backward(spec: Spec, name: str, recompute: bool, which: int, tokens: int) -> Built:
    """One kernel of the gradient of `spec`'s fusion (at its token count), as a Built:
    the roles from its axis mapping, its contraction operands as "a" and "b", every other
    input "signed". A dW compiles with the token count dynamic (its K; `Built.compiled`)
    and runs at `tokens` (its fusion at max(tokens, 1): at 0 the inputs have no rows, and
    the reference is that of zero factors, `Built.tokens`)."""
    from mmcomp.analysis.roles import infer_axis_mapping
    from mmcomp.autodiff import KERNEL

    gradient = mmcomp.grad(build(spec, name).fusion, recompute=recompute)
    steps = [step for step in gradient.steps if step.kind == KERNEL]
    step = steps[which % len(steps)]
    fusion = step.fusion(max(tokens, 1) if step.over_tokens else gradient.tokens)
    mapping = infer_axis_mapping(fusion.func)
    from mmcomp.dialects import fusion as fd

    operands: dict[Any, str] = {}
    for op in fusion.func.body.block.ops:
        if isinstance(op, fd.LinearOp | fd.MatmulOp | fd.FusedMultiplySumOp):
            for kind, value in zip(("a", "b"), op.operands[:2], strict=True):
                while isinstance(value.owner, fd.BroadcastOp):
                    value = value.owner.input
                operands.setdefault(value, kind)
    roles: list[tuple[str, ...]] = []
    kinds: list[str] = []
    for value in fusion.inputs:
        roles.append(tuple(_ROLE_NAMES.get(role, "b") for role in mapping.roles[value.ssa]))
        kinds.append(operands.get(value.ssa, "signed"))
    built = Built(fusion, roles, kinds, k=mapping.space.get("k", spec.k))
    if step.over_tokens:
        built.compiled = step.fusion()
        built.tokens = tokens
    approx = {
        op.name.removeprefix("fusion.")
        for op in fusion.func.body.block.ops
        if op.name.removeprefix("fusion.") in TRANSCENDENTAL | {"gelu"}
    }
    if "gelu" in approx:
        approx.add("gelu_tanh")
    rounding = [
        dtype
        for op in fusion.func.body.block.ops
        if isinstance(op, fd.CastOp)
        for dtype in [fd.dtype_name(op.result.type.element_type)]  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType, reportUnknownArgumentType]
        if dtype in ("bf16", "f16")
    ]
    for _ in fusion.outputs:
        built.rounding.append(list(rounding))
        built.approx.append(set(approx))
        built.chained.append(True)
    return built


class ReferenceRunner:
    """Runs a gradient plan's steps through the reference interpreter (float64
    accumulation, each output rounded to its dtype): the plan's own arithmetic, free of any
    kernel's."""

    def run(self, step: Any, fusion: Fusion, arrays: list[Any]) -> list[Any]:
        """The step's outputs."""
        del step
        return [np.asarray(out) for out in mmcomp.reference(fusion, *arrays)]

    def column_sum(self, arrays: list[Any], dtype: str) -> Any:
        """The rows of each array summed in float64, rounded to `dtype`."""
        total = sum(np.asarray(array).astype(np.float64).sum(axis=0) for array in arrays)
        return np.asarray(total).astype(numpy_dtype(dtype))

    def empty(self, shape: Sequence[int], dtype: str, like: Any) -> Any:
        """An empty array of a fusion dtype."""
        del like
        return np.empty(tuple(shape), numpy_dtype(dtype))


GRADIENT_CHECK_VOLUME = 1 << 22
"""The largest M x N x K of a backward case whose whole gradient is also checked against
float64 autograd (the plan's every step through the reference, the forward in torch)."""
GRADIENT_ADJOINT = 8.0
"""The gradients' bound beyond an output's (`tolerance`), in units of the operand dtype's
roundoff: the contractions' adjoints dC are rounded to it (2 units each, which the sum of
a dgrad or dW keeps relative to its largest value), with room for a factor 4."""


def _torch_forward(spec: Spec, named: dict[str, Any], built: Built, recompute: bool) -> list[Any]:
    """The spec's forward in torch float64 (its outputs before their final casts), rounded
    where the plan's replay rounds, with the gradient passing straight through each
    rounding: each contraction result to the dtype the plan saves it in (the operand
    dtype; f32 where recomputed), each chain value of a 16-bit dtype to it. A derivative
    that jumps (relu after an offset) then jumps where the plan's does."""
    import torch

    def rounded(value: Any, dtype: str) -> Any:
        low = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}[dtype]
        return value + (value.to(low).to(torch.float64) - value).detach()

    ys: list[Any] = []
    for index in range(spec.contractions):
        a = named["a"]
        if spec.family == "linear":
            y = a @ named["w"].T
            if "bias" in named:
                y = y + named["bias"]
        elif spec.family == "matmul":
            y = a @ named["b"]
        else:
            other = named[f"b{index}"]
            y = a @ (other.T if spec.layout.split(",")[index] == "linear" else other)
        ys.append(rounded(y, "f32" if recompute else spec.dtype))
    values = {f"y{index}": y for index, y in enumerate(ys)}
    value = ys[0]
    for step in spec.steps:
        if step.op == "cast":
            pass
        elif step.op in UNARY:
            functions: dict[str, Callable[[Any], Any]] = {
                "relu": torch.relu,
                "neg": torch.neg,
                "silu": torch.nn.functional.silu,
                "sigmoid": torch.sigmoid,
                "tanh": torch.tanh,
                "gelu_tanh": lambda x: torch.nn.functional.gelu(x, approximate="tanh"),
                "gelu_none": lambda x: torch.nn.functional.gelu(x, approximate="none"),
                "exp": torch.exp,
            }
            value = functions[step.op](value)
        else:
            if isinstance(step.arg, str) and re.fullmatch(r"y\d", step.arg):
                other = ys[int(step.arg[1:])]
            elif isinstance(step.arg, str):
                other = named[step.arg]
            else:
                other = torch.tensor(float(step.arg or 0.0), dtype=torch.float64)
            left, right = (other, value) if step.swap else (value, other)
            value = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div}[
                step.op
            ](left, right)
        position = len(values) - len(ys)
        value = rounded(value, built.step_dtypes[position])
        values[f"step{position}"] = value
    values["final"] = value
    return [values[source] for source in built.sources]


def check_gradients(case: Case) -> tuple[Outcome | None, float]:
    """The whole gradient of a backward case's forward (`mmcomp.grad`, its plan run through
    the reference: `ReferenceRunner`) against float64 torch autograd of the spec, for the
    random adjoints of its outputs: (a `gradient` failure, or None where every gradient is
    within its bound or the case is too large to check; the largest error / bound)."""
    import torch

    spec = case.spec
    if case.backward is None or spec.m * spec.n * spec.k > GRADIENT_CHECK_VOLUME:
        return None, 0.0
    built = build(spec, case.name)
    gradient = mmcomp.grad(built.fusion, recompute=case.backward[0])
    inputs = make_inputs(dataclasses.replace(case, backward=None), built)
    names = [str(value.name) for value in built.fusion.inputs]
    rng = np.random.default_rng([case.seed, case.index, 17])
    douts = [
        rng.standard_normal(value.shape).astype(value.numpy_dtype) for value in built.fusion.outputs
    ]
    runner = ReferenceRunner()
    arrays = gradient.run_steps(
        gradient.forward_steps, dict(zip(names, inputs, strict=True)), runner
    )
    arrays.update(zip(gradient.grad_outputs, douts, strict=True))
    found = gradient.run_steps(gradient.needed(list(gradient.gradients)), arrays, runner)
    grads = gradient.gradients_of(found, arrays)
    tensors = {
        name: torch.tensor(array.astype(np.float64), requires_grad=True)
        for name, array in zip(names, inputs, strict=True)
    }
    outputs = _torch_forward(spec, tensors, built, case.backward[0])
    loss = torch.zeros((), dtype=torch.float64)
    for output, dout in zip(outputs, douts, strict=True):
        loss = loss + (output * torch.tensor(dout.astype(np.float64))).sum()
    wanted = [name for name in names if name in grads]
    exact = torch.autograd.grad(loss, [tensors[name] for name in wanted], allow_unused=True)
    rounding = [dtype for dtype in built.step_dtypes if dtype != "f32"]
    approx = {step.op for step in spec.steps if step.op in TRANSCENDENTAL}
    bad: list[str] = []
    worst = 0.0
    for name, want in zip(wanted, exact, strict=True):
        have = np.asarray(grads[name]).astype(np.float64)
        want64 = np.zeros(have.shape) if want is None else want.detach().numpy()
        dtype = built.fusion.inputs[names.index(name)].dtype
        bound = tolerance(dtype, rounding, approx, max(spec.m, spec.n, spec.k))
        bound += GRADIENT_ADJOINT * UNIT_ROUNDOFF[spec.dtype]
        scale = float(np.max(np.abs(want64), initial=0.0))
        error = float(np.max(np.abs(have - want64), initial=0.0))
        error = error / scale if scale > 0 else error
        worst = max(worst, error / bound)
        if not error <= bound:
            bad.append(f"gradient of {name!r}: relative error {error:.3g} (bound {bound:.3g})")
    if bad:
        outcome = _outcome(case, "fail", "gradient", "; ".join(bad))
        outcome.ratio = worst
        return outcome, worst
    return None, worst


# ---------------------------------------------------------------------------------------
# Inputs, reference, tolerances

SAMPLE_ELEMENTS = 1 << 22
"""Outputs larger than this are checked on sampled rows and columns."""
SAMPLES = 48


def make_inputs(case: Case, built: Built) -> list[np.ndarray]:
    """Fresh random inputs, none of them zero, the same for every process."""
    rng = np.random.default_rng([case.seed, case.index, 1])
    arrays: list[np.ndarray] = []
    scale_b = 1.0 / math.sqrt(case.spec.k)
    for value, kind in zip(built.fusion.inputs, built.kinds, strict=True):
        shape = value.shape
        if kind == "sizes":
            arrays.append(group_sizes(rng, case.spec))
            continue
        if kind in ("a", "b", "bias"):
            data = rng.standard_normal(shape, dtype=np.float32)
            data = np.where(np.abs(data) < 1e-2, np.float32(0.5), data)
            if kind == "b" and not case.spec.scales:
                data = data * np.float32(scale_b)
        elif kind.startswith("scale"):
            # fp8 factors of magnitude 1, the scales bringing the result to about N(0, 1)
            data = rng.uniform(0.5, 1.5, shape).astype(np.float32)
            if kind == "scale_b":
                data = data * np.float32(scale_b)
        elif kind == "quantize_scale":
            # a static scale mapping the chain's estimated magnitude near the fp8 range
            largest = float(ml_dtypes.finfo(numpy_dtype(case.spec.quantize.split("/")[0])).max)
            data = rng.uniform(1.0, 2.0, shape).astype(np.float32) * np.float32(
                QUANTIZE_MAGNITUDE / largest
            )
        elif kind == "positive":
            data = rng.uniform(0.5, 2.0, shape).astype(np.float32)
        else:
            data = rng.uniform(0.25, 2.0, shape).astype(np.float32)
            data = data * np.where(rng.random(shape) < 0.5, -1.0, 1.0).astype(np.float32)
        arrays.append(np.asarray(data, dtype=value.numpy_dtype))
    if built.tokens == 0:
        arrays = [
            _token_rows(array, roles, 0) for array, roles in zip(arrays, built.roles, strict=True)
        ]
    return arrays


def _token_rows(array: np.ndarray, roles: Sequence[str], rows: int) -> np.ndarray:
    """A dW input with `rows` tokens (its K axes) of zeros, or as it is without one."""
    if "k" not in roles:
        return array
    shape = tuple(
        rows if role == "k" else extent for extent, role in zip(array.shape, roles, strict=True)
    )
    return np.zeros(shape, array.dtype)


QUANTIZE_MAGNITUDE = 4.0
"""A static quantization's scale maps values of about this magnitude to the fp8 type's
largest (larger ones saturate)."""


def group_sizes(rng: np.random.Generator, spec: Spec) -> np.ndarray:
    """A grouped case's routing: counts in [0, M] (masked; a share of them 0 or M), or the
    cumulative ends of ragged groups (contiguous: a share of them empty, some cases
    ending before M, some with every row in one group)."""
    groups, rows = spec.groups, spec.m
    if spec.group_layout == "counts":
        counts = rng.integers(0, rows + 1, size=groups)
        edges = rng.random(groups)
        counts = np.where(edges < 0.15, 0, np.where(edges > 0.85, rows, counts))
        return counts.astype(np.int32)
    draw = rng.random()
    if draw < 0.1:
        sizes = np.zeros(groups, np.int64)
        sizes[rng.integers(groups)] = rows
    else:
        shares = rng.dirichlet(np.full(groups, 1.0))
        sizes = np.floor(shares * rows).astype(np.int64)
        sizes[rng.integers(groups)] += rows - int(sizes.sum())
        sizes = np.where(rng.random(groups) < 0.2, 0, sizes)
        if draw > 0.3:
            sizes[rng.integers(groups)] += rows - int(sizes.sum())
    return np.cumsum(sizes).astype(np.int32)


def sample(case: Case, built: Built) -> tuple[np.ndarray, np.ndarray] | None:
    """(rows, cols) of M and N to check for a large case, None to check everything."""
    outputs = built.fusion.outputs
    if case.backward is not None:
        return None  # a backward kernel's reference runs in full (BACKWARD_VOLUME)
    if max(math.prod(value.shape) for value in outputs) <= SAMPLE_ELEMENTS:
        return None
    rng = np.random.default_rng([case.seed, case.index, 2])

    def pick(extent: int) -> np.ndarray:
        if extent <= SAMPLES:
            return np.arange(extent)
        edges = [0, 1, 63, 64, 127, 128, extent // 2, extent - 2, extent - 1]
        chosen = set(e for e in edges if 0 <= e < extent)
        chosen.update(int(x) for x in rng.integers(0, extent, SAMPLES - len(chosen)))
        return np.array(sorted(chosen))

    return pick(case.spec.m), pick(case.spec.n)


def take(array: np.ndarray, roles: Sequence[str], rows: np.ndarray, cols: np.ndarray):
    """`array` restricted to the sampled rows (its m axis) and columns (its n axis)."""
    for axis, role in enumerate(roles):
        if role == "m":
            array = np.take(array, rows, axis=axis)
        elif role == "n":
            array = np.take(array, cols, axis=axis)
    return array


def output_roles(ndim: int) -> tuple[str, ...]:
    """The roles of an output's axes: every output of the grammar is [..., M, N]."""
    return ("b",) * (ndim - 2) + ("m", "n")


def reference_outputs(
    case: Case, built: Built, inputs: list[np.ndarray], rows_cols: Any
) -> list[np.ndarray]:
    """The float64-accumulated reference, on the sampled rows and columns if any."""
    if built.tokens == 0:
        # No token: the fusion's epilogue on a zero accumulator, i.e. its reference at one
        # token of zeros.
        inputs = [_token_rows(x, r, 1) for x, r in zip(inputs, built.roles, strict=True)]
    if rows_cols is None:
        return [np.asarray(out) for out in mmcomp.reference(built.fusion, *inputs)]
    rows, cols = rows_cols
    small_spec = dataclasses.replace(case.spec, m=len(rows), n=len(cols))
    small = build(small_spec, case.name)
    sliced = [
        take(array, roles, rows, cols) for array, roles in zip(inputs, built.roles, strict=True)
    ]
    return [np.asarray(out) for out in mmcomp.reference(small.fusion, *sliced)]


UNIT_ROUNDOFF = {"bf16": 2.0**-8, "f16": 2.0**-11, "f32": 2.0**-24}
TANH_APPROX = 2.0**-9
"""The kernels' tanh.approx.f32 (2^-11 relative) with room for what follows it."""
OTHER_APPROX = 2.0**-16
"""ex2.approx, rcp.approx, div and the polynomial erf (2^-22 relative or better)."""
CHAIN_GROWTH = 8.0
"""Ops after an intermediate rounding grow its 1-ulp difference by at most this much."""


def tolerance(out_dtype: str, rounding: Sequence[str], approx: set[str], k: int) -> float:
    """The bound on max |got - want| / max |want| of one output.

    2 ulps of the output dtype (the reference rounds its float64 value once, the kernel
    its f32 value, which may fall on the other side), 2 ulps times CHAIN_GROWTH for each
    rounding to bf16/f16 inside the chain, the approximate transcendentals, and the f32
    accumulation over K (2 K + 16 sqrt(K) units of f32 rounding: the tensor cores' adder
    tree need not round to nearest).
    """
    if _is_fp8(out_dtype):
        out_dtype = "f32"  # compare takes one fp8 ulp off each element first
    bound = 4.0 * UNIT_ROUNDOFF[out_dtype]
    bound += sum(4.0 * CHAIN_GROWTH * UNIT_ROUNDOFF[dtype] for dtype in rounding)
    if approx & {"tanh", "gelu_tanh"}:
        bound += TANH_APPROX
    elif approx:
        bound += OTHER_APPROX
    bound += (2.0 * k + 16.0 * math.sqrt(k)) * UNIT_ROUNDOFF["f32"]
    return bound


@dataclass
class Check:
    """The comparison of one output."""

    index: int
    dtype: str
    shape: tuple[int, ...]
    error: float
    bound: float
    nans: int
    """Elements that are NaN or infinite where the reference is finite."""

    @property
    def ok(self) -> bool:
        """Within the bound and no NaN."""
        return self.nans == 0 and self.error <= self.bound

    def describe(self) -> str:
        """One line."""
        text = (
            f"output {self.index} ({self.dtype} {list(self.shape)}): relative error "
            f"{self.error:.3g} (bound {self.bound:.3g})"
        )
        if self.nans:
            text += f", {self.nans} NaN/inf where the reference is finite"
        return text


def fp8_spacing(values: np.ndarray, dtype: str) -> np.ndarray:
    """The spacing of the fp8 type `dtype` at each of `values` (float64): one ulp of the
    binade, the subnormal step below the smallest normal."""
    info = ml_dtypes.finfo(numpy_dtype(dtype))
    smallest = float(info.smallest_normal)
    magnitude = np.maximum(np.abs(values), smallest)
    return np.exp2(np.floor(np.log2(magnitude)) - info.nmant)


def _expand_scale(scale: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """A quantization's scale broadcast to its values' `shape` (per tensor, row or 1 x 128
    group of the last axis)."""
    if scale.ndim == len(shape):
        return np.repeat(scale, 128, axis=-1)[..., : shape[-1]]
    if scale.ndim == len(shape) - 1:
        return scale[..., None]
    return scale


def compare(
    case: Case,
    built: Built,
    got: Sequence[np.ndarray],
    want: Sequence[np.ndarray],
    accumulation: float = 0.0,
) -> list[Check]:
    """Each output against the reference. `accumulation` is the fp8 accumulator's bound
    relative to the contraction's result (`fp8_accumulation`), grown by CHAIN_GROWTH for an
    output after epilogue ops.

    An fp8 output may differ from the reference by one fp8 ulp per element where the f32
    values fall on either side of a rounding boundary: that much is taken off each
    element's difference, and the rest is bounded as an f32 output's. A quantization's
    values are compared dequantized (times their scales: each side's own computed scale,
    or the static one)."""
    checks: list[Check] = []
    for index, (value, have, expected) in enumerate(
        zip(built.fusion.outputs, got, want, strict=True)
    ):
        have64 = np.asarray(have).astype(np.float64)
        want64 = np.asarray(expected).astype(np.float64)
        k = built.k or case.spec.k
        fp8 = _is_fp8(value.dtype)
        rounding = built.rounding[index]
        bound = tolerance(value.dtype, rounding, built.approx[index], k)
        if accumulation:
            chained = built.chained[index] if index < len(built.chained) else True
            bound += accumulation * (CHAIN_GROWTH if chained else 1.0)
        if have64.shape != want64.shape:
            checks.append(Check(index, value.dtype, have64.shape, math.inf, bound, 0))
            continue
        slack = np.zeros_like(want64)
        if fp8:
            slack = np.maximum(fp8_spacing(have64, value.dtype), fp8_spacing(want64, value.dtype))
            scale_index = built.quantized.get(index)
            if scale_index is not None and scale_index < len(got):
                have_scale = _expand_scale(np.asarray(got[scale_index], np.float64), have64.shape)
                want_scale = _expand_scale(np.asarray(want[scale_index], np.float64), want64.shape)
                have64, want64 = have64 * have_scale, want64 * want_scale
                slack = slack * np.maximum(have_scale, want_scale)
            elif index in built.quantized:
                bound *= STATIC_SCALE_SPREAD
        finite = np.isfinite(want64)
        nans = int(np.count_nonzero(finite & ~np.isfinite(have64)))
        scale = float(np.max(np.abs(want64[finite]), initial=0.0))
        usable = finite & np.isfinite(have64)
        difference = np.maximum(np.abs(have64 - want64) - slack, 0.0)[usable]
        worst = float(np.max(difference, initial=0.0))
        error = worst / scale if scale > 0 else worst
        checks.append(Check(index, value.dtype, value.shape, error, bound, nans))
    return checks


STATIC_SCALE_SPREAD = 2.0
"""A static quantization's values are compared as they are (not dequantized): their
scales vary by this factor across the tensor (QUANTIZE_MAGNITUDE's draw), which bounds how
much a value's relative error grows against the largest value."""

FP8_ACCUMULATOR = 2.0**-13
"""The fp8 wgmma's accumulator keeps about 14 mantissa bits (docs/fp8.md): each k32 step
may lose up to this much of the magnitude it adds (its products) and of what the
accumulator holds (the running sum). The GPU measured about 2^-15 of the products'
magnitudes at K = 1024."""
FP8_STEP = 32
"""The K of one fp8 wgmma (k32)."""
FP8_BLOCK = 128
"""The K block whose accumulator block-wise scaling promotes into f32."""


def dequantized_factors(spec: Spec, named: dict[str, np.ndarray]) -> list[tuple[Any, Any]]:
    """Per contraction, (A [..., M, K], B [..., N, K]) in float64 times their scales."""
    a = named["a"].astype(np.float64)
    if spec.family == "fms":
        a = a.reshape(a.shape[0], -1)
    pairs: list[tuple[Any, Any]] = []
    for index in range(spec.contractions):
        name = {"linear": "w", "horizontal": f"b{index}"}.get(spec.family, "b")
        if spec.family == "batched" and spec.layout == "linear":
            name = "w"
        b = named[name].astype(np.float64)
        kn = spec.layout == "mkn" or (
            spec.family in ("matmul", "batched", "horizontal")
            and (spec.layout.split(",")[index] if spec.family == "horizontal" else spec.layout)
            != "linear"
        )
        if spec.family == "fms":
            b = b.reshape(b.shape[-2], b.shape[-1])
        if kn:
            b = b.swapaxes(-1, -2)
        sa = named.get("sa")
        sb = named.get("sb" + name.removeprefix("w").removeprefix("b"))
        left, right = a, b
        if sa is not None and sb is not None:
            left = a * _dequantizing(sa.astype(np.float64), a.shape, spec.scales, False)
            right = b * _dequantizing(sb.astype(np.float64), b.shape, spec.scales, kn)
        pairs.append((left, right))
    return pairs


def _dequantizing(scale: np.ndarray, shape: tuple[int, ...], mode: str, kn: bool) -> Any:
    """A scale broadcast to its factor's [..., rows, K] `shape` (`kn`: a block-wise scale
    of a [K, N] factor, [..., K blocks, N blocks])."""
    if mode == "tensor":
        return scale
    if mode == "row":
        return scale.reshape(*shape[:-1], 1)
    if kn:
        scale = scale.swapaxes(-1, -2)
    if scale.shape[-2] != shape[-2]:  # B's [N blocks, K blocks]
        scale = np.repeat(scale, FP8_BLOCK, axis=-2)[..., : shape[-2], :]
    return np.repeat(scale, FP8_BLOCK, axis=-1)[..., : shape[-1]]


def fp8_accumulation(case: Case, built: Built, inputs: list[np.ndarray], rows_cols: Any) -> float:
    """The fp8 accumulator's error bound relative to the largest contraction result, for a
    case with fp8 factors on cuda (0 otherwise: the CPU executor accumulates in f32).

    Per element, FP8_ACCUMULATOR times the sum of the products' magnitudes plus the sum
    over the k32 steps of the running sum's magnitude; the running sum is the whole K for
    per-tensor and row-wise scales (and none), one 128-wide K block for block-wise scales
    (each block starts a fresh accumulator, promoted into f32)."""
    spec = case.spec
    if not spec.fp8 or case.backend != "cuda" or case.backward is not None:
        return 0.0
    arrays = inputs
    if rows_cols is not None:
        rows, cols = rows_cols
        arrays = [take(x, r, rows, cols) for x, r in zip(inputs, built.roles, strict=True)]
    named = {
        str(value.name): array for value, array in zip(built.fusion.inputs, arrays, strict=True)
    }
    worst = 0.0
    for left, right in dequantized_factors(spec, named):
        extent = left.shape[-1]
        run = FP8_BLOCK if spec.scales == "block" else extent
        magnitudes = np.abs(left) @ np.abs(right).swapaxes(-1, -2)
        result = np.zeros_like(magnitudes)
        running = np.zeros_like(magnitudes)
        trace = np.zeros_like(magnitudes)
        for start in range(0, extent, FP8_STEP):
            if start % run == 0:
                result, running = result + running, np.zeros_like(running)
            stop = min(start + FP8_STEP, extent)
            running = running + left[..., start:stop] @ right[..., start:stop].swapaxes(-1, -2)
            trace = trace + np.abs(running)
        result = result + running
        largest = float(np.max(np.abs(result), initial=0.0))
        if largest > 0:
            bound = FP8_ACCUMULATOR * float(np.max(magnitudes + trace))
            worst = max(worst, bound / largest)
    return worst


# ---------------------------------------------------------------------------------------
# Running one case

MMCOMP_ERRORS = (FusionError, ScheduleError)
"""mmcomp's own errors for what it does not take: a refusal, not a failure."""


@dataclass
class Outcome:
    """What became of a case."""

    seed: int
    index: int
    status: str
    """"pass", "refused" or "fail"."""
    kind: str = ""
    """For a failure: crash, wrong, nan, coverage, spills, hang, refused-heuristic; for
    a refusal: the error's class."""
    message: str = ""
    family: str = ""
    params: dict[str, Any] = field(default_factory=dict[str, Any])
    chosen: str = ""
    """The params the kernel ran with (kernel.params), when it compiled."""
    seconds: float = 0.0
    """Seconds in a worker: compiling (with the reference), or for interp the whole case."""
    gpu_seconds: float = 0.0
    """Seconds of the case's GPU runs (from the GPU process's start on it)."""
    ratio: float = 0.0
    """The largest error / bound over the outputs of a case that ran."""


def _outcome(case: Case, status: str, kind: str = "", message: str = "") -> Outcome:
    family = f"grouped-{case.spec.family}" if case.spec.groups else case.spec.family
    if case.backward is not None:
        family = f"grad-{family}"
    elif has_fp8(case.spec):
        family = f"fp8-{family}"
    return Outcome(case.seed, case.index, status, kind, message, family, case.params)


def classify_error(case: Case, error: BaseException) -> Outcome:
    """A refusal (mmcomp's own error on pinned keywords) or a failure."""
    message = f"{type(error).__name__}: {error}"
    if isinstance(error, MMCOMP_ERRORS):
        default = not (case.features - default_features(case.backend))
        fp8 = has_fp8(case.spec) and case.backward is None
        expected = fp8_refusal(case, message)
        strict = default or case.backward is not None or (fp8 and not expected)
        if not case.params and strict:
            return _outcome(case, "fail", "refused-heuristic", message)
        return _outcome(case, "refused", type(error).__name__, message)
    from mmcomp.arch.ptxas import PtxasError

    if isinstance(error, PtxasError) and "spill" in str(error).lower():
        return _outcome(case, "fail", "spills", message)
    detail = "".join(traceback.format_exception(error)[-12:])
    name = type(error).__name__
    kind = "coverage" if name == "CoverageError" else "crash"
    return _outcome(case, "fail", kind, detail if kind == "crash" else message)


def judge(
    case: Case,
    built: Built,
    got: Sequence[np.ndarray],
    want: Sequence[np.ndarray],
    accumulation: float = 0.0,
):
    """The outcome of a run whose outputs are `got` (`accumulation`: see `compare`)."""
    checks = compare(case, built, got, want, accumulation)
    bad = [check for check in checks if not check.ok]
    ratio = max((check.error / check.bound for check in checks), default=0.0)
    if not bad:
        outcome = _outcome(case, "pass")
    else:
        kind = "nan" if any(check.nans for check in bad) else "wrong"
        outcome = _outcome(case, "fail", kind, "; ".join(check.describe() for check in bad))
    outcome.ratio = ratio
    return outcome


def run_interp(case: Case) -> Outcome:
    """Compile for the CPU executor, run, compare (a backward case's whole gradient too:
    `check_gradients`)."""
    failed, gradient_ratio = check_gradients(case)
    if failed is not None:
        return failed
    built = build_case(case)
    try:
        kernel = built.compile(case.spec, "interp", case.params)
    except Exception as error:  # noqa: BLE001 - every exception is an outcome
        return classify_error(case, error)
    inputs = make_inputs(case, built)
    want = reference_outputs(case, built, inputs, None)
    try:
        got = kernel(*inputs)
    except Exception as error:  # noqa: BLE001
        return classify_error(case, error)
    outcome = judge(case, built, got, want, fp8_accumulation(case, built, inputs, None))
    outcome.ratio = max(outcome.ratio, gradient_ratio)
    outcome.chosen = kernel.params.format()
    return outcome


@dataclass
class Compiled:
    """A cuda case compiled in a worker: what the GPU process needs to run and check it."""

    kernel: bytes
    """The pickled mmcomp.backend.CudaKernel."""
    inputs: list[np.ndarray]
    want: list[np.ndarray]
    rows_cols: Any
    chosen: str
    seconds: float = 0.0
    """Compile and reference time in the worker."""
    accumulation: float = 0.0
    """The fp8 accumulator's relative bound (`fp8_accumulation`)."""


def compile_cuda(case: Case, compile_only: bool, cli: bool = False) -> Outcome | Compiled:
    """Compile (ptxas included, 0 spills checked); the reference too unless compile-only.

    With `cli`, mmcomp-opt's pipeline also compiles the fusion's IR with the keywords
    written as its `#sched.params`: it must refuse what `mmcomp.compile` refuses and
    print the same PTX for the rest. A backward case's whole gradient is checked first
    (`check_gradients`, on the CPU).
    """
    failed, _ = check_gradients(case)
    if failed is not None:
        return failed
    built = build_case(case)
    try:
        kernel = built.compile(case.spec, "cuda", case.params)
    except Exception as error:  # noqa: BLE001
        outcome = classify_error(case, error)
        if outcome.kind == "spills":
            outcome.chosen = scheduled_params(built, case.params)
        if cli and outcome.status == "refused":
            return compare_cli(case, built, None, outcome) or outcome
        return outcome
    report = kernel.report
    if report is not None and (report.spill_stores or report.spill_loads):
        return _outcome(case, "fail", "spills", f"ptxas: {report}")
    if cli:
        mismatch = compare_cli(case, built, kernel.ptx, None)
        if mismatch is not None:
            return mismatch
    if compile_only:
        outcome = _outcome(case, "pass")
        outcome.chosen = kernel.params.format()
        return outcome
    inputs = make_inputs(case, built)
    rows_cols = sample(case, built)
    want = reference_outputs(case, built, inputs, rows_cols)
    device_kernel = pickle.dumps(kernel.device_kernel)
    accumulation = fp8_accumulation(case, built, inputs, rows_cols)
    chosen = kernel.params.format()
    return Compiled(device_kernel, inputs, want, rows_cols, chosen, accumulation=accumulation)


def scheduled_params(built: Built, params: dict[str, Any]) -> str:
    """The params choose-schedule gives the fusion (for a kernel that failed later), or ""."""
    from mmcomp.pipeline import run_pipeline

    try:
        return run_pipeline(built.fusion.module, params, "cuda")[1].format()
    except Exception:  # noqa: BLE001 - only a detail of a failure's report
        return ""


def params_attribute(params: dict[str, Any]) -> str:
    """The schedule keywords as the `#sched.params<...>` that mmcomp-opt reads."""
    keys: list[str] = []
    for key, value in params.items():
        if key in ("tile", "cluster"):
            text = "x".join(str(v) for v in value)
        elif key == "registers":
            text = "/".join(str(v) for v in value)
        elif isinstance(value, bool):
            text = "true" if value else "false"
        else:
            text = str(value)
        keys.append(f"{key} = {text}")
    return "#sched.params<" + ", ".join(keys) + ">"


def with_params(text: str, params: dict[str, Any]) -> str:
    """Fusion IR text with the schedule keywords written on its function."""
    if not params:
        return text
    return re.sub(
        r"(func\.func @\S+\(.*\) -> .*?) \{\n",
        lambda match: (
            f"{match.group(1)} attributes {{sched.params = {params_attribute(params)}}} {{\n"
        ),
        text,
        count=1,
    )


def run_cli(text: str, schedule_m: int | None = None) -> tuple[str | None, str]:
    """mmcomp-opt -p compile-to-ptx -t ptx on IR text (`compile-to-ptx{schedule-m=M}` for
    a dynamic case), in this process: (PTX, "") or (None, its error). An exception
    mmcomp-opt does not report as an error propagates."""
    from xdsl.utils.exceptions import DiagnosticException, ParseError, VerifyException

    from mmcomp.cli import MmcompOptMain

    with tempfile.TemporaryDirectory(prefix="mmcomp-fuzz-cli-") as directory:
        source = Path(directory) / "fusion.mlir"
        target = Path(directory) / "kernel.ptx"
        source.write_text(text)
        passes = (
            "compile-to-ptx" if schedule_m is None else f"compile-to-ptx{{schedule-m={schedule_m}}}"
        )
        args = [str(source), "-p", passes, "-t", "ptx", "-o", str(target)]
        try:
            MmcompOptMain(description="mmcomp-opt", args=args).run()
        except (ParseError, VerifyException, DiagnosticException, ValueError) as error:
            return None, f"{type(error).__name__}: {error}"
        return target.read_text(), ""


def compare_cli(
    case: Case, built: Built, ptx: str | None, refusal: Outcome | None
) -> Outcome | None:
    """A `cli` failure where mmcomp-opt and mmcomp.compile disagree, else None."""
    if built.compiled is None:
        cli_ptx, error = run_cli(with_params(str(built.fusion), case.params))
    else:
        text = with_params(str(built.compiled), case.params)
        cli_ptx, error = run_cli(text, schedule_m_of(case.spec))
    if ptx is None and cli_ptx is not None:
        assert refusal is not None
        return _outcome(
            case,
            "fail",
            "cli",
            f"mmcomp-opt compiles what mmcomp.compile refuses: {refusal.message}",
        )
    if ptx is not None and cli_ptx is None:
        return _outcome(
            case, "fail", "cli", f"mmcomp-opt refuses what mmcomp.compile takes: {error}"
        )
    if ptx is not None and cli_ptx is not None and cli_ptx.strip() != ptx.strip():
        return _outcome(case, "fail", "cli", "mmcomp-opt prints other PTX than mmcomp.compile")
    return None


def _load_cubin(device_kernel: Any) -> Any:
    """Load the worker's cubin straight away (ptxas already ran); None where it fails."""
    if device_kernel.cubin is None:
        return None
    from mmcomp.runtime import Module, ensure_context
    from mmcomp.runtime.driver import driver_api
    from mmcomp.runtime.module import CompiledKernel, entry_parameter_sizes

    context = ensure_context()
    driver = driver_api()
    result, handle = driver.cuModuleLoadData(device_kernel.cubin)
    if result != driver.CUresult.CUDA_SUCCESS:
        return None
    compiled = CompiledKernel(device_kernel.cubin, "fuzz worker ptxas", False, "")
    module = Module(handle, compiled, context.info, entry_parameter_sizes(device_kernel.ptx))
    device_kernel._function = module.function(device_kernel.plan.entry)
    return module


RELOADED = "the worker's cubin did not load (ptxas newer than the driver?): PTX compiled again"


LAUNCHES = ("host arrays", "device arrays")
"""How each launch of a case gets its arrays: numpy in and out (copied, outputs poisoned),
then the same inputs as device buffers (outputs allocated on the device, poisoned by the
debug mode; a split-K kernel reuses its cached workspace, its counters zeroed again)."""


def _launch(device_kernel: Any, inputs: list[np.ndarray]) -> list[list[np.ndarray]]:
    """The outputs of each of the LAUNCHES of a kernel."""
    from mmcomp.runtime import DeviceBuffer

    first = [np.asarray(out) for out in device_kernel(*inputs, check=True)]
    device_inputs = [DeviceBuffer.from_host(array) for array in inputs]
    outputs = device_kernel(*device_inputs, check=True)
    second = [out.to_host() for out in outputs]
    for buffer in (*device_inputs, *outputs):
        buffer.free()
    return [first, second]


def run_on_gpu(
    case: Case, compiled: Compiled, stand_in: bool = False
) -> tuple[list[list[np.ndarray]] | None, str]:
    """Launch on the GPU (see LAUNCHES): (the outputs of each launch on the sampled rows and
    columns, note), or (None, the error).

    The note is empty, or RELOADED where the worker's cubin did not load (its ptxas is newer
    than the driver): the kernel is then compiled again here, through load_module.

    With `stand_in` the CPU executor runs the case in the GPU's place (the kernel is still
    unpickled): this tests the cuda mode's processes and checks on a machine without a GPU.
    """
    inputs = compiled.inputs
    device_kernel = pickle.loads(compiled.kernel)
    note = ""
    if stand_in:
        kernel = build_case(case).compile(case.spec, "interp", case.params)
        runs = [list(kernel(*inputs))]
    else:
        module = _load_cubin(device_kernel)
        if module is None:
            note = RELOADED
        runs = _launch(device_kernel, inputs)
        if module is not None:
            # Only after a good run: after a fault the context is lost, and the process
            # ends (the parent starts another), so the fault is what gets reported.
            module.unload()
    if compiled.rows_cols is not None:
        rows, cols = compiled.rows_cols
        runs = [[take(out, output_roles(out.ndim), rows, cols) for out in run] for run in runs]
    return runs, note


def check_gpu(case: Case, compiled: Compiled, runs: list[list[np.ndarray]]) -> Outcome:
    """The outcome of a case's GPU launches: the first that fails, else a pass."""
    built = build_case(dataclasses.replace(case, dynamic=False))
    if compiled.rows_cols is not None:
        rows, cols = compiled.rows_cols
        built = build(dataclasses.replace(case.spec, m=len(rows), n=len(cols)), case.name)
    outcomes = [judge(case, built, got, compiled.want, compiled.accumulation) for got in runs]
    failed = [index for index, outcome in enumerate(outcomes) if outcome.status == "fail"]
    outcome = outcomes[failed[0]] if failed else outcomes[0]
    if failed and len(runs) > 1:
        outcome.message = f"launch {failed[0] + 1} ({LAUNCHES[failed[0]]}): {outcome.message}"
    outcome.ratio = max(o.ratio for o in outcomes)
    outcome.chosen = compiled.chosen
    return outcome


# ---------------------------------------------------------------------------------------
# Worker processes


def _compile_worker(conn: Connection) -> None:
    """Serve compile jobs: (case, compile_only, cli) -> Outcome | Compiled."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    conn.send("ready")
    while True:
        job = conn.recv()
        if job is None:
            return
        case, compile_only, cli = job
        start = time.monotonic()
        try:
            if case.backend == "interp":
                result: Outcome | Compiled = run_interp(case)
            else:
                result = compile_cuda(case, compile_only, cli)
        except Exception as error:  # noqa: BLE001 - a crash in the fuzzer's own steps too
            result = classify_error(case, error)
        result.seconds = time.monotonic() - start
        conn.send(result)


def _gpu_worker(conn: Connection) -> None:
    """Serve GPU jobs: (case, compiled, stand_in) -> (outputs, "") or (None, error text)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    conn.send("ready")
    while True:
        job = conn.recv()
        if job is None:
            return
        case, compiled, stand_in = job
        try:
            conn.send(run_on_gpu(case, compiled, stand_in))
        except Exception as error:  # noqa: BLE001
            text = "".join(traceback.format_exception(error)[-12:])
            conn.send((None, f"{type(error).__name__}: {error}\n{text}"))
            from mmcomp.errors import CudaError

            if isinstance(error, CudaError):
                return  # the context may be lost: the parent starts a fresh process


STARTUP_TIMEOUT = 120.0
"""Seconds a worker process may take to import mmcomp."""


class Worker:
    """A child process serving one job at a time, killed and restarted on a timeout."""

    def __init__(self, target: Callable[[Connection], None]):
        self.target = target
        self.process: Any = None
        self.conn: Connection | None = None
        self.job: Any = None
        self.started = 0.0
        self.start()

    def start(self) -> None:
        """A fresh process."""
        context = multiprocessing.get_context("spawn")
        parent, child = context.Pipe()
        self.process = context.Process(target=self.target, args=(child,), daemon=True)
        self.process.start()
        child.close()
        self.conn = parent
        self.job = None
        # Wait for the imports, so that a job's timeout counts the job alone.
        if not parent.poll(STARTUP_TIMEOUT) or parent.recv() != "ready":
            raise RuntimeError(f"fuzz: a worker process did not start in {STARTUP_TIMEOUT} s")

    def submit(self, job: Any, tag: Any) -> None:
        """Send a job; `tag` identifies it when the result comes back."""
        assert self.conn is not None
        self.conn.send(job)
        self.job = tag
        self.started = time.monotonic()

    def kill(self) -> None:
        """End this worker's process (it is ours) and start a fresh one."""
        if self.process is not None and self.process.is_alive():
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.join(5)
        if self.conn is not None:
            self.conn.close()
        self.start()

    def stop(self) -> None:
        """Ask the process to end."""
        if self.conn is None:
            return
        with contextlib.suppress(OSError):
            self.conn.send(None)
        if self.process is not None:
            self.process.join(5)
            if self.process.is_alive():
                os.kill(self.process.pid, signal.SIGKILL)


# ---------------------------------------------------------------------------------------
# The run


@dataclass
class Summary:
    """Counts of a run."""

    outcomes: list[Outcome] = field(default_factory=list[Outcome])
    started: float = field(default_factory=time.monotonic)
    notes: Counter[str] = field(default_factory=Counter[str])
    """What the GPU process remarked, with how many cases."""

    def add(self, outcome: Outcome) -> None:
        """Record an outcome."""
        self.outcomes.append(outcome)

    @property
    def failures(self) -> list[Outcome]:
        """The failed cases."""
        return [o for o in self.outcomes if o.status == "fail"]

    def report(self) -> str:
        """The run's summary."""
        statuses = Counter(o.status for o in self.outcomes)
        lines = [
            f"{len(self.outcomes)} cases in {time.monotonic() - self.started:.0f} s: "
            f"{statuses['pass']} passed, {statuses['refused']} refused, "
            f"{statuses['fail']} failed"
        ]
        families = Counter((o.family, o.status) for o in self.outcomes)
        names = sorted({family for family, _ in families})
        lines.append(
            "  by family: "
            + ", ".join(
                f"{name} {families[(name, 'pass')]}/{families[(name, 'refused')]}/"
                f"{families[(name, 'fail')]}"
                for name in names
            )
            + "  (passed/refused/failed)"
        )
        ran = [o for o in self.outcomes if o.status == "pass"]
        if ran and max(o.ratio for o in ran) > 0:
            worst = max(ran, key=lambda o: o.ratio)
            lines.append(
                f"  largest error / bound of a passing case: {worst.ratio:.3f} "
                f"(case {worst.index}, {worst.family})"
            )
        kinds = Counter(o.kind for o in self.failures)
        if kinds:
            lines.append("  failures: " + ", ".join(f"{k} {n}" for k, n in kinds.most_common()))
            for kind, _ in kinds.most_common():
                indices = sorted(o.index for o in self.failures if o.kind == kind)
                shown = " ".join(str(i) for i in indices[:60])
                more = f" ... ({len(indices) - 60} more)" if len(indices) > 60 else ""
                lines.append(f"    {kind}: cases {shown}{more}")
        timed = [o for o in self.outcomes if o.seconds > 0]
        if timed:
            slowest = max(timed, key=lambda o: o.seconds)
            lines.append(
                f"  worker seconds a case: mean {sum(o.seconds for o in timed) / len(timed):.2f},"
                f" max {slowest.seconds:.1f} (case {slowest.index})"
            )
        on_gpu = [o for o in self.outcomes if o.gpu_seconds > 0]
        if on_gpu:
            slowest = max(on_gpu, key=lambda o: o.gpu_seconds)
            mean = sum(o.gpu_seconds for o in on_gpu) / len(on_gpu)
            lines.append(
                f"  GPU seconds a case: mean {mean:.3f}, max {slowest.gpu_seconds:.2f} "
                f"(case {slowest.index})"
            )
        for note, count in self.notes.items():
            lines.append(f"  {count} cases: {note}")
        refusals = Counter(normalize(o.message) for o in self.outcomes if o.status == "refused")
        if refusals:
            lines.append("  refusals by message:")
            for message, count in refusals.most_common():
                lines.append(f"    {count:5d}  {message}")
        return "\n".join(lines)


def normalize(message: str) -> str:
    """A refusal message with its numbers and names replaced, for counting."""
    message = message.splitlines()[0] if message else message
    message = message.split(";")[0]
    message = re.sub(r" \([^()]*\)", "", message)
    message = re.sub(r"@fuzz_\d+_\d+", "@fuzz", message)
    message = re.sub(r"\d+", "#", message)
    return message[:200]


def mode_flags(options: Options) -> str:
    """The command-line flags of a run's mode (compile-only, cli, stand-in)."""
    flags = [("--compile-only", options.compile_only), ("--cli", options.cli)]
    flags.append(("--stand-in", options.stand_in))
    return "".join(f" {flag}" for flag, on in flags if on)


def reproducer(case: Case, outcome: Outcome, flags: str = "") -> str:
    """A failure in full: the command, the schedule and the fusion's IR."""
    built = build_case(case)
    params = dict(case.params)
    if built.compiled is not None:
        params = {"schedule_m": schedule_m_of(case.spec), **params}
    keywords = ", ".join(f"{key}={value!r}" for key, value in params.items())
    lines = [
        f"FAIL {outcome.kind}: seed {case.seed} case {case.index} ({case.spec.family}, "
        f"{case.backend})",
        f"  {outcome.message.strip()}",
        f"  rerun: {case.command()}{flags}",
        f"  schedule: mmcomp.compile(f, backend={case.backend!r}"
        + (f", {keywords}" if keywords else "")
        + ")",
    ]
    if outcome.chosen:
        lines.append(f"  kernel.params: {outcome.chosen}")
    lines.append(f"  spec: {case.spec}")
    lines.append(
        "  fusion:" if built.compiled is None else "  fusion (dynamic, run at the spec's M):"
    )
    compiled = built.fusion if built.compiled is None else built.compiled
    lines.extend("    " + line for line in str(compiled).rstrip().splitlines())
    return "\n".join(lines)


def case_indices(first: int, cases: int | None) -> Iterator[int]:
    """first, first + 1, ... (cases of them, or without end)."""
    index = first
    while cases is None or index < first + cases:
        yield index
        index += 1


@dataclass
class Options:
    """What to run."""

    backend: str
    seed: int
    features: frozenset[str]
    cases: int | None = 100
    budget: float | None = None
    first: int = 0
    jobs: int = 0
    """Worker processes; 0 runs everything in this process (interp only)."""
    compile_only: bool = False
    cli: bool = False
    """cuda: compare mmcomp-opt's pipeline with mmcomp.compile (see compile_cuda)."""
    timeout: float = 300.0
    """Seconds a compile (and interp run) may take."""
    gpu_timeout: float = 60.0
    """Seconds a GPU run may take before it counts as a hang."""
    verbose: bool = False
    stand_in: bool = False
    """cuda: run the GPU stage on the CPU executor (see run_on_gpu)."""
    out: Callable[[str], None] = print


@contextlib.contextmanager
def fresh_cache() -> Iterator[None]:
    """Compile caches in a new, empty directory (for this process and its workers), so
    every case is compiled now: no kernel of an earlier run or another checkout is used,
    and the user's cache is not filled with thousands of fuzz kernels."""
    from mmcomp.runtime.cache import CACHE_DIR_VARIABLE

    previous = os.environ.get(CACHE_DIR_VARIABLE)
    with tempfile.TemporaryDirectory(prefix="mmcomp-fuzz-") as directory:
        os.environ[CACHE_DIR_VARIABLE] = directory
        try:
            yield
        finally:
            if previous is None:
                del os.environ[CACHE_DIR_VARIABLE]
            else:
                os.environ[CACHE_DIR_VARIABLE] = previous


def run(options: Options) -> Summary:
    """Run the cases; print each failure's reproducer and return the summary."""
    with fresh_cache():
        if options.jobs == 0:
            return _run_inline(options)
        return _run_workers(options)


def _emit_failure(options: Options, case: Case, outcome: Outcome) -> None:
    if outcome.status == "fail":
        options.out(reproducer(case, outcome, mode_flags(options)))
    elif options.verbose:
        options.out(
            f"case {case.index}: {outcome.status} {outcome.kind} {outcome.message[:160]}".rstrip()
        )


def _run_inline(options: Options) -> Summary:
    """Every case in this process, one after another (the CPU executor only)."""
    summary = Summary()
    deadline = None if options.budget is None else time.monotonic() + options.budget
    for index in case_indices(options.first, options.cases):
        if deadline is not None and time.monotonic() > deadline:
            break
        case = draw_case(options.seed, index, options.backend, options.features)
        outcome = run_case(case, options.compile_only, options.stand_in, options.cli)
        summary.add(outcome)
        _emit_failure(options, case, outcome)
    return summary


def _run_workers(options: Options) -> Summary:
    """Compile (and for interp run) in worker processes; run cuda cases in a GPU process."""
    summary = Summary()
    deadline = None if options.budget is None else time.monotonic() + options.budget
    indices = case_indices(options.first, options.cases)
    compilers = [Worker(_compile_worker) for _ in range(options.jobs)]
    needs_gpu = options.backend == "cuda" and not options.compile_only
    gpu = Worker(_gpu_worker) if needs_gpu else None
    ready: deque[tuple[Case, Compiled]] = deque()
    exhausted = False
    cases: dict[int, Case] = {}

    def finish(case: Case, outcome: Outcome) -> None:
        summary.add(outcome)
        _emit_failure(options, case, outcome)

    try:
        while True:
            if deadline is not None and time.monotonic() > deadline:
                exhausted = True
            for worker in compilers:
                if worker.job is not None or exhausted or len(ready) > 4 * options.jobs:
                    continue
                index = next(indices, None)
                if index is None:
                    exhausted = True
                    break
                case = draw_case(options.seed, index, options.backend, options.features)
                cases[index] = case
                worker.submit((case, options.compile_only, options.cli), index)
            if gpu is not None and gpu.job is None and ready:
                case, compiled = ready.popleft()
                gpu.submit((case, compiled, options.stand_in), (case.index, compiled))
            busy = [w for w in [*compilers, gpu] if w is not None and w.job is not None]
            if not busy and not ready and exhausted:
                break
            connections = [w.conn for w in busy if w.conn is not None]
            for conn in wait(connections, timeout=0.5):
                worker = next(w for w in busy if w.conn is conn)
                assert worker.conn is not None
                try:
                    result = worker.conn.recv()
                except (EOFError, OSError):
                    result = None
                if worker is gpu:
                    index, compiled = worker.job
                    worker.job = None
                    case = cases.pop(index)
                    if result is None:
                        finish(case, _outcome(case, "fail", "crash", "the GPU process died"))
                        worker.kill()
                        continue
                    runs, note = result
                    if runs is None:
                        finish(case, _outcome(case, "fail", "crash", note))
                        if not worker.process.is_alive() or "CudaError" in note:
                            worker.kill()
                        continue
                    if note:
                        summary.notes[note] += 1
                    outcome = check_gpu(case, compiled, runs)
                    outcome.seconds = compiled.seconds
                    outcome.gpu_seconds = time.monotonic() - worker.started
                    finish(case, outcome)
                    continue
                index = worker.job
                worker.job = None
                case = cases[index]
                if result is None:
                    cases.pop(index)
                    finish(case, _outcome(case, "fail", "crash", "the worker process died"))
                    worker.kill()
                elif isinstance(result, Compiled):
                    ready.append((case, result))
                else:
                    cases.pop(index)
                    finish(case, result)
            now = time.monotonic()
            for worker in busy:
                limit = options.gpu_timeout if worker is gpu else options.timeout
                if worker.job is None or now - worker.started <= limit:
                    continue
                index = worker.job[0] if worker is gpu else worker.job
                case = cases.pop(index)
                what = "GPU run" if worker is gpu else "compile"
                finish(case, _outcome(case, "fail", "hang", f"{what} exceeded {limit:g} s"))
                worker.kill()
    finally:
        for worker in [*compilers, gpu]:
            if worker is not None:
                worker.stop()
    return summary


# ---------------------------------------------------------------------------------------
# One case in full


def run_case(
    case: Case, compile_only: bool = False, stand_in: bool = False, cli: bool = False
) -> Outcome:
    """One case in this process, from compile to check."""
    start = time.monotonic()
    try:
        if case.backend == "interp":
            outcome = run_interp(case)
        else:
            result = compile_cuda(case, compile_only, cli)
            if isinstance(result, Outcome):
                outcome = result
            else:
                runs, error = run_on_gpu(case, result, stand_in)
                if runs is None:
                    outcome = _outcome(case, "fail", "crash", error)
                else:
                    outcome = check_gpu(case, result, runs)
    except Exception as error:  # noqa: BLE001 - a crash in the fuzzer's own steps too
        outcome = classify_error(case, error)
    outcome.seconds = time.monotonic() - start
    return outcome


def _smaller_extents(extent: int, step: int) -> list[int]:
    """Smaller extents to try in place of `extent` (multiples of `step`), smallest first."""
    options = [1, 2, 8, 16, 64, 65, 128, 129, 256, extent // 2]
    return sorted({e for e in options if 0 < e < extent and e % step == 0})


def shrink_candidates(case: Case) -> Iterator[Case]:
    """Simpler variants of a case: fewer schedule keywords, steps, outputs, smaller extents."""
    spec = case.spec
    for key in case.params:
        yield dataclasses.replace(case, params={k: v for k, v in case.params.items() if k != key})
    for position in range(len(spec.steps)):
        steps = spec.steps[:position] + spec.steps[position + 1 :]
        removed = spec.steps[position]
        if isinstance(removed.arg, str) and removed.arg.startswith("y"):
            continue
        used = {step.arg for step in steps if isinstance(step.arg, str)}
        operands = tuple(operand for operand in spec.operands if operand.name in used)
        yield dataclasses.replace(
            case, spec=dataclasses.replace(spec, steps=steps, operands=operands)
        )
    for position, step in enumerate(spec.steps):
        if step.output is not None:
            steps = list(spec.steps)
            steps[position] = dataclasses.replace(step, output=None)
            yield dataclasses.replace(case, spec=dataclasses.replace(spec, steps=tuple(steps)))
    if spec.raw_output is not None:
        yield dataclasses.replace(case, spec=dataclasses.replace(spec, raw_output=None))
    if any(dtype is not None for dtype in spec.others_out):
        others = (None,) * len(spec.others_out)
        yield dataclasses.replace(case, spec=dataclasses.replace(spec, others_out=others))
    if spec.bias is not None:
        yield dataclasses.replace(case, spec=dataclasses.replace(spec, bias=None))
    if spec.quantize:
        yield dataclasses.replace(case, spec=dataclasses.replace(spec, quantize=""))
    if spec.scales:
        yield dataclasses.replace(case, spec=dataclasses.replace(spec, scales=""))
    if spec.batch > 1:
        yield dataclasses.replace(case, spec=dataclasses.replace(spec, batch=1))
    n_step = 8 if spec.n % 8 == 0 else 1
    k_step = 8 if spec.k % 8 == 0 else 1
    for axis, step in (("m", 1), ("n", n_step), ("k", k_step)):
        for extent in _smaller_extents(getattr(spec, axis), step):
            smaller = dataclasses.replace(spec, **{axis: extent})
            yield dataclasses.replace(case, spec=smaller)


def minimize(
    case: Case,
    outcome: Outcome,
    compile_only: bool = False,
    stand_in: bool = False,
    cli: bool = False,
) -> tuple[Case, Outcome]:
    """The simplest variant of a failing case found greedily that fails the same way."""
    tries = 0
    improved = True
    while improved and tries < 400:
        improved = False
        for candidate in shrink_candidates(case):
            tries += 1
            result = run_case(candidate, compile_only, stand_in, cli)
            if result.status == "fail" and result.kind == outcome.kind:
                case, outcome, improved = candidate, result, True
                break
    return case, outcome


def python_reproducer(case: Case, compile_only: bool = False, cli: bool = False) -> str:
    """A snippet that reruns `case` (a drawn or a minimized one) from the repository root."""
    return "\n".join(
        [
            "import sys; sys.path.insert(0, 'tools'); import fuzz",
            "from fuzz import Case, Operand, Spec, Step",
            f"case = Case({case.seed}, {case.index}, {case.backend!r}, "
            f"frozenset({sorted(case.features)!r}), {case.spec!r}, {case.params!r}, "
            f"{case.dynamic!r}, {case.backward!r})",
            f"print(fuzz.run_case(case, compile_only={compile_only}, cli={cli}))",
        ]
    )


def show_case(options: Options, index: int, shrink: bool = False) -> int:
    """Run one case in this process and print everything about it (minimized if asked)."""
    case = draw_case(options.seed, index, options.backend, options.features)
    outcome = run_case(case, options.compile_only, options.stand_in, options.cli)
    out = options.out
    if shrink and outcome.status == "fail":
        out(f"{outcome.status} {outcome.kind} {outcome.message}".rstrip())
        out("minimizing ...")
        case, outcome = minimize(case, outcome, options.compile_only, options.stand_in, options.cli)
    built = build_case(dataclasses.replace(case, dynamic=False))
    out(f"seed {case.seed} case {case.index}: {case.spec.family}, backend {case.backend}")
    if case.backward is not None:
        out(f"backward: recompute={case.backward[0]}, fusion @{built.fusion.name}")
    out(f"spec: {case.spec}")
    out(f"schedule keywords: {case.params or '(the heuristic chooses)'}")
    if built.compiled is not None:
        bound = schedule_m_of(case.spec)
        out(f"dynamic: compiled with M and batch extents dynamic, schedule_m = {bound}")
    out(str(built.fusion if built.compiled is None else built.compiled).rstrip())
    if outcome.chosen:
        out(f"kernel.params: {outcome.chosen}")
    for index_, (rounding, approx) in enumerate(zip(built.rounding, built.approx, strict=True)):
        value = built.fusion.outputs[index_]
        bound = tolerance(value.dtype, rounding, approx, built.k or case.spec.k)
        out(f"output {index_}: {value.dtype} {list(value.shape)}, bound {bound:.3g}")
    out(f"{outcome.status} {outcome.kind} {outcome.message}".rstrip())
    if shrink:
        out("reproducer:\n" + python_reproducer(case, options.compile_only, options.cli))
    return 0 if outcome.status != "fail" else 1


FEATURE_ALIASES = {"backward": "grad-only"}
"""Earlier names of features, as recorded runs name them."""


def parse_features(names: Sequence[str], backend: str, everything: bool) -> frozenset[str]:
    """The features of a run: the default grammar's plus those named."""
    names = [FEATURE_ALIASES.get(name, name) for name in names]
    unknown = [name for name in names if name not in FEATURES]
    if unknown:
        raise SystemExit(
            f"fuzz: unknown feature {unknown[0]!r}; the features are {', '.join(FEATURES)}"
        )
    chosen = set(names) | default_features(backend)
    if everything:  # every feature that widens the grammar (not those that narrow it)
        chosen |= {feature for feature in FEATURES if not feature.endswith("-only")}
    return frozenset(chosen)


def main(argv: Sequence[str] | None = None) -> int:
    """The command line."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--backend", choices=("interp", "cuda"), default="interp")
    parser.add_argument("--seed", type=int, default=None, help="default: from the clock")
    parser.add_argument("--cases", type=int, default=None, help="cases to run (default 100)")
    parser.add_argument("--budget", type=float, default=None, help="seconds to run for")
    parser.add_argument("--first", type=int, default=0, help="index of the first case")
    parser.add_argument("--case", type=int, default=None, help="run this one case, verbosely")
    parser.add_argument(
        "--jobs",
        type=int,
        default=None,
        help="worker processes (default: the CPUs less one; 0: in this process)",
    )
    parser.add_argument("--compile-only", action="store_true", help="cuda: compile, no GPU")
    parser.add_argument(
        "--cli",
        action="store_true",
        help="cuda: also compile with mmcomp-opt's pipeline; it must agree with mmcomp.compile",
    )
    parser.add_argument(
        "--feature",
        action="append",
        default=[],
        metavar="NAME",
        help="widen the grammar: " + "; ".join(f"{k}: {v}" for k, v in FEATURES.items()),
    )
    parser.add_argument("--all-features", action="store_true")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per compile")
    parser.add_argument("--gpu-timeout", type=float, default=60.0, help="seconds per GPU run")
    parser.add_argument("--verbose", action="store_true", help="print every refusal too")
    parser.add_argument(
        "--minimize", action="store_true", help="with --case: shrink a failing case greedily"
    )
    parser.add_argument(
        "--stand-in",
        action="store_true",
        help="cuda: run the GPU stage on the CPU executor (tests the processes without a GPU)",
    )
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else int(time.time()) % 100000
    features = parse_features(args.feature, args.backend, args.all_features)
    jobs = args.jobs if args.jobs is not None else max(1, (os.cpu_count() or 2) - 1)
    cases = args.cases if args.cases is not None or args.budget is not None else 100
    options = Options(
        backend=args.backend,
        seed=seed,
        features=features,
        cases=cases,
        budget=args.budget,
        first=args.first,
        jobs=jobs,
        compile_only=args.compile_only,
        cli=args.cli,
        timeout=args.timeout,
        gpu_timeout=args.gpu_timeout,
        verbose=args.verbose,
        stand_in=args.stand_in,
    )
    if args.case is not None:
        with fresh_cache():
            return show_case(options, args.case, args.minimize)
    extra = sorted(features - default_features(args.backend))
    print(
        f"fuzz: backend {args.backend}{' (compile only)' if args.compile_only else ''}, "
        f"seed {seed}, "
        + (f"{cases} cases" if cases is not None else "no case limit")
        + (f", budget {args.budget:.0f} s" if args.budget else "")
        + f", {jobs} jobs"
        + (f", features {', '.join(extra)}" if extra else ""),
        flush=True,
    )
    summary = run(options)
    print(summary.report(), flush=True)
    return 1 if summary.failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
