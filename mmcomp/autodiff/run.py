"""Running a differentiated fusion on numpy arrays: kernels through mmcomp.compile (the
interp back end by default), pointwise steps through the reference interpreter in f32."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from mmcomp.autodiff.plan import POINTWISE, Gradient, Step
from mmcomp.errors import FusionError
from mmcomp.frontend.builder import Fusion, numpy_dtype


class KernelCache:
    """The compiled kernels of a plan's steps, one per step: a kernel over the tokens
    takes the token count as its dynamic K, so one compile serves every count."""

    def __init__(
        self,
        gradient: Gradient,
        backend: str = "interp",
        schedules: Mapping[str, Mapping[str, Any]] | None = None,
    ):
        self.gradient = gradient
        """The plan."""
        self.backend = backend
        """The back end every kernel is compiled for."""
        self.schedules = dict(schedules or {})
        """mmcomp.compile keywords by step name (the forward kernels'; a step not named,
        such as every backward kernel, takes the heuristic's schedule)."""
        self._kernels: dict[str, Any] = {}
        self._lock = threading.Lock()
        self.compiles = 0
        """How many kernels this cache compiled (mmcomp.compile calls)."""

    def kernel(self, step: Step, fusion: Fusion) -> Any:
        """The step's compiled kernel (of its fusion), compiled once."""
        from mmcomp import compiler

        found = self._kernels.get(step.name)
        if found is None:
            with self._lock:
                found = self._kernels.get(step.name)
                if found is None:
                    keywords = self.schedules.get(step.name, {})
                    found = compiler.compile(fusion, backend=self.backend, **keywords)
                    self._kernels[step.name] = found
                    self.compiles += 1
        return found


class NumpyRunner:
    """Runs steps on numpy arrays."""

    def __init__(self, kernels: KernelCache):
        self.kernels = kernels
        """The compiled kernels."""

    def run(self, step: Step, fusion: Fusion, arrays: list[Any]) -> list[Any]:
        """The step's outputs."""
        if step.kind == POINTWISE:
            from mmcomp.interp.reference import reference

            return list(reference(fusion, *arrays, accumulate=np.float32))
        return list(self.kernels.kernel(step, fusion)(*arrays))

    def column_sum(self, arrays: list[Any], dtype: str) -> Any:
        """The rows of each array summed in f32, the sums added, rounded to `dtype`."""
        total = np.zeros(arrays[0].shape[-1], np.float32)
        for array in arrays:
            total = total + np.asarray(array).astype(np.float32).sum(axis=0, dtype=np.float32)
        return total.astype(numpy_dtype(dtype))

    def empty(self, shape: Sequence[int], dtype: str, like: Any) -> Any:
        """An empty array of a fusion dtype."""
        del like
        return np.empty(tuple(shape), numpy_dtype(dtype))


def run_forward(
    gradient: Gradient, inputs: Mapping[str, Any], kernels: KernelCache
) -> dict[str, Any]:
    """The forward kernels on numpy `inputs` (by name): every array by name."""
    missing = [name for name in gradient.inputs if name not in inputs]
    if missing:
        raise FusionError(f"mmcomp.autodiff: missing inputs {missing}")
    return gradient.run_steps(gradient.forward_steps, inputs, NumpyRunner(kernels))


def run_backward(
    gradient: Gradient,
    values: Mapping[str, Any],
    grad_outputs: Sequence[Any],
    kernels: KernelCache,
    wanted: Sequence[str] | None = None,
) -> dict[str, Any]:
    """The gradients (by input name) from the forward's arrays `values` and the outputs'
    adjoints, on numpy arrays."""
    arrays = dict(values)
    arrays.update(zip(gradient.grad_outputs, grad_outputs, strict=True))
    steps = gradient.needed(wanted if wanted is not None else list(gradient.gradients))
    found = gradient.run_steps(steps, arrays, NumpyRunner(kernels))
    return gradient.gradients_of(found, arrays)
