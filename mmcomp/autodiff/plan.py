"""A differentiated fusion: the forward kernel to run and the backward steps, each a
fusion, with the names of the arrays they read and write."""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from mmcomp.errors import FusionError
from mmcomp.frontend.builder import Fusion

KERNEL = "kernel"
"""A step whose fusion has a contraction: compiled by mmcomp.compile."""
POINTWISE = "pointwise"
"""A step whose fusion is pointwise only (no contraction defines an iteration space, so
the kernel pipeline does not take it): evaluated op by op (mmcomp.reference, or torch)."""
COLUMN_SUM = "column_sum"
"""A step that sums the rows (the tokens) of its inputs, each [tokens, N], in f32 and
rounds the total to its output's dtype once: one pass over memory by the runner's own
reduction (numpy's, torch's), not a GEMM with N = 1. Its fusion states the same sum as a
contraction with a ones factor per dtype (the inputs after the step's), for the
reference interpreter."""


@dataclass(frozen=True)
class Step:
    """One kernel of a forward or backward: a fusion and the arrays it reads and writes."""

    name: str
    """What the step computes, e.g. `dgrad.x`, `wgrad.w`, `sum.bias`, `epilogue`."""
    kind: str
    """KERNEL, POINTWISE or COLUMN_SUM."""
    inputs: tuple[str, ...]
    """The array names the fusion's inputs read, in order."""
    outputs: tuple[str, ...]
    """The array names the fusion's outputs write, in order."""
    build: Callable[[int | None], Fusion] = field(compare=False)
    """The fusion; for a step over the tokens, at that token count (None: dynamic)."""
    over_tokens: bool = False
    """Whether the step reduces over the token count (the rows of the forward's
    contraction): a dW, whose contraction extent K is then the dynamic token count (one
    compiled kernel serves every count), or a column sum. The runner flattens the inputs
    marked in `rows` to [tokens, features]."""
    rows: tuple[bool, ...] = ()
    """Per input: whether it is read as [tokens, features] (its leading axes flattened)."""

    def fusion(self, tokens: int | None = None) -> Fusion:
        """The step's fusion: the one compiled, whose token count is dynamic where it has
        one; for a step over the tokens, at a fixed `tokens` where given."""
        return self.build(tokens if self.over_tokens else None)


class Runner(Protocol):
    """How a plan's steps run on arrays of one kind (numpy, torch)."""

    def run(self, step: Step, fusion: Fusion, arrays: list[Any]) -> list[Any]:
        """The outputs of the KERNEL or POINTWISE `step` (whose fusion at these arrays is
        `fusion`) on `arrays`."""
        ...

    def column_sum(self, arrays: list[Any], dtype: str) -> Any:
        """The sum over the rows of each [tokens, N] array, accumulated in f32 (the
        arrays' sums added in order), rounded to the fusion dtype `dtype`."""
        ...

    def empty(self, shape: Sequence[int], dtype: str, like: Any) -> Any:
        """An array of `shape` and the fusion dtype `dtype` (of no elements), on `like`'s
        device."""
        ...


@dataclass(frozen=True)
class Gradient:
    """A fusion differentiated (`mmcomp.grad`): the forward to run and the backward steps.

    Arrays are named: the fusion's inputs by their names, the forward's outputs
    `<fusion>.out<i>`, the values it saves `<fusion>.saved<j>`, the adjoints of the outputs
    `<fusion>.dout<i>`, and intermediates and gradients `<fusion>.<what>`. `gradients`
    maps each input differentiated to the array holding its gradient (of its shape and
    dtype).
    """

    forward_steps: tuple[Step, ...]
    """The forward kernels: the fusion with the saved values as extra outputs (two or more
    for a chain of fusions)."""
    steps: tuple[Step, ...]
    """The backward steps, in order."""
    inputs: tuple[str, ...]
    """The inputs of the whole forward, in order."""
    outputs: tuple[str, ...]
    """The arrays of the forward's outputs (those of the fusion as written)."""
    saved: tuple[str, ...]
    """The arrays the forward also writes for the backward."""
    grad_outputs: tuple[str, ...]
    """The adjoints of `outputs`, in order (the backward's seeds)."""
    gradients: Mapping[str, str]
    """Input name -> the array of its gradient."""
    tokens: int | None = None
    """The forward's token count (rows of the contraction results) where static, else
    None."""
    _cache: dict[tuple[str, Any], Fusion] = field(
        default_factory=dict[tuple[str, Any], Fusion], compare=False, repr=False
    )

    @property
    def forward(self) -> Fusion:
        """The forward fusion to run (of a single fusion's gradient): the outputs as written,
        then the saved values."""
        if len(self.forward_steps) != 1:
            raise FusionError(
                f"Gradient.forward: a chain has {len(self.forward_steps)} forward kernels; "
                "see forward_steps"
            )
        return self.forward_steps[0].fusion()

    def backward(self, tokens: int | None = None) -> tuple[Fusion, ...]:
        """The backward fusions, in order: those compiled (the token count dynamic in the
        steps over the tokens), or those over the tokens at a fixed `tokens`."""
        return tuple(step.fusion(tokens) for step in self.steps)

    def needed(self, wanted: Iterable[str]) -> tuple[Step, ...]:
        """The backward steps that the gradients of the inputs `wanted` need, in order."""
        names = {self.gradients[name] for name in wanted if name in self.gradients}
        kept: list[Step] = []
        for step in reversed(self.steps):
            if names.intersection(step.outputs):
                kept.append(step)
                names.update(step.inputs)
        return tuple(reversed(kept))

    def reads(self, steps: Iterable[Step]) -> set[str]:
        """The arrays `steps` read that they do not write themselves."""
        written: set[str] = set()
        read: set[str] = set()
        for step in steps:
            read.update(name for name in step.inputs if name not in written)
            written.update(step.outputs)
        return read

    def step_fusion(self, step: Step, shapes: Sequence[Any] = ()) -> Fusion:
        """The step's fusion (built once); a pointwise step's with its dynamic extents
        those of the arrays' `shapes` (the reference interpreter takes a dynamic extent
        only where a contraction gives it a role)."""
        key: tuple[str, Any] = (step.name, None)
        if step.kind == POINTWISE:
            key = (step.name, tuple(tuple(shape) for shape in shapes))
        with _lock:
            found = self._cache.get(key)
            if found is None:
                found = step.fusion()
                if step.kind == POINTWISE:
                    found = specialized(found, shapes)
                self._cache[key] = found
        return found

    def run_steps(
        self, steps: Sequence[Step], arrays: Mapping[str, Any], runner: Runner
    ) -> dict[str, Any]:
        """Run `steps` on the named `arrays`; every array, given and computed, by name."""
        values = dict(arrays)
        for step in steps:
            inputs: list[Any] = []
            for index, name in enumerate(step.inputs):
                array = values[name]
                if step.rows and step.rows[index]:
                    array = array.reshape(math.prod(array.shape[:-1]), array.shape[-1])
                inputs.append(array)
            shapes = [tuple(getattr(a, "shape", ())) for a in inputs]
            empty = _empty_outputs(step, shapes) if step.kind == POINTWISE else None
            if empty is not None:
                # No element to evaluate (a token count of 0, which no fusion extent is).
                outputs = [runner.empty(shape, dtype, inputs[0]) for shape, dtype in empty]
                for name, output in zip(step.outputs, outputs, strict=True):
                    values[name] = output
                continue
            fusion = self.step_fusion(step, shapes)
            if step.kind == COLUMN_SUM:
                outputs = [runner.column_sum(inputs, fusion.outputs[0].dtype)]
            else:
                outputs = runner.run(step, fusion, inputs)
            for name, output in zip(step.outputs, outputs, strict=True):
                values[name] = output
        return values

    def gradients_of(self, values: Mapping[str, Any], inputs: Mapping[str, Any]) -> dict[str, Any]:
        """Each gradient computed in `values`, reshaped to its input's array's shape."""
        found: dict[str, Any] = {}
        for name, where in self.gradients.items():
            if where in values:
                found[name] = values[where].reshape(inputs[name].shape)
        return found

    def renamed(self, mapping: Mapping[str, str]) -> Gradient:
        """The same plan with arrays renamed (names not in `mapping` kept)."""

        def names(found: Iterable[str]) -> tuple[str, ...]:
            return tuple(mapping.get(name, name) for name in found)

        def step(found: Step) -> Step:
            return replace(found, inputs=names(found.inputs), outputs=names(found.outputs))

        return replace(
            self,
            forward_steps=tuple(step(found) for found in self.forward_steps),
            steps=tuple(step(found) for found in self.steps),
            inputs=names(self.inputs),
            outputs=names(self.outputs),
            saved=names(self.saved),
            grad_outputs=names(self.grad_outputs),
            gradients={mapping.get(k, k): mapping.get(v, v) for k, v in self.gradients.items()},
            _cache={},
        )


_lock = threading.Lock()
_TENSOR = re.compile(r"tensor<([0-9?x]+)x([a-z0-9]+)>")


def _known_extents(fusion: Fusion, shapes: Sequence[Sequence[int]]) -> dict[int, int]:
    """The runtime extent of each dynamic axis of `fusion`, by its position from the right
    (the dynamic axes are the leading axes of one space), from its inputs' `shapes`."""
    known: dict[int, int] = {}
    for value, shape in zip(fusion.inputs, shapes, strict=True):
        for axis in value.dynamic_axes:
            known[value.ndim - axis] = int(shape[axis])
    return known


def _empty_outputs(
    step: Step, shapes: Sequence[Sequence[int]]
) -> list[tuple[tuple[int, ...], str]] | None:
    """(shape, dtype) of each output of `step` at inputs of `shapes` where every output has
    no element (a dynamic extent of 0), else None."""
    if all(math.prod(shape) for shape in shapes):
        return None
    fusion = step.fusion()
    known = _known_extents(fusion, shapes)
    found: list[tuple[tuple[int, ...], str]] = []
    for value in fusion.outputs:
        shape = tuple(
            known[value.ndim - axis] if axis in value.dynamic_axes else extent
            for axis, extent in enumerate(value.shape)
        )
        if math.prod(shape):
            return None
        found.append((shape, value.dtype))
    return found


def specialized(fusion: Fusion, shapes: Sequence[Sequence[int]]) -> Fusion:
    """`fusion` with each dynamic extent replaced by the extent the arrays of `shapes` (one
    per input) have there; the dynamic axes are the leading axes of one space, so an axis
    is known by its position from the right."""
    from mmcomp.frontend.builder import parse

    known = _known_extents(fusion, shapes)
    if not known:
        return fusion

    def substitute(match: re.Match[str]) -> str:
        dims = match.group(1).split("x")
        fixed = [
            str(known[len(dims) - axis]) if dim == "?" else dim for axis, dim in enumerate(dims)
        ]
        return f"tensor<{'x'.join(fixed)}x{match.group(2)}>"

    return parse(_TENSOR.sub(substitute, str(fusion)))
