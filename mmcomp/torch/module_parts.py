"""The parts the torch modules share (FusedLinear, GatedMLP and their fp8 forms in
mmcomp.torch.fp8): the activations, the check of a module's schedule keywords, and
RowFamily, a module's kernel over every row count."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

from mmcomp.errors import FusionError, ScheduleError
from mmcomp.torch.arrays import nn

ACTIVATIONS = ("none", "gelu_tanh", "gelu", "silu", "relu")
"""Activations FusedLinear and GatedMLP apply: gelu_tanh is gelu(approximate="tanh"),
gelu the exact (erf) one."""

_ACTIVATION_CLASSES = {
    "Identity": "none",
    "SiLU": "silu",
    "SiLUActivation": "silu",
    "ReLU": "relu",
    "GELUTanh": "gelu_tanh",
    "PytorchGELUTanh": "gelu_tanh",
    "NewGELUActivation": "gelu_tanh",
    "GELUActivation": "gelu",
}
"""torch and transformers activation modules by class name."""


def activation_name(activation: Any, where: str) -> str:
    """One of ACTIVATIONS from a name, None, or an activation module."""
    if activation is None:
        return "none"
    if isinstance(activation, str):
        name = {"gelu_pytorch_tanh": "gelu_tanh", "identity": "none", "swish": "silu"}.get(
            activation, activation
        )
        if name in ACTIVATIONS:
            return name
        raise FusionError(
            f"{where}: argument 'activation': expected one of {', '.join(ACTIVATIONS)}, "
            f"found {activation!r}"
        )
    if isinstance(activation, nn.GELU):
        return "gelu_tanh" if activation.approximate == "tanh" else "gelu"
    found = _ACTIVATION_CLASSES.get(type(activation).__name__)
    if found is None:
        raise FusionError(
            f"{where}: argument 'activation': expected one of {', '.join(ACTIVATIONS)} or a "
            f"SiLU / GELU / ReLU module, found {type(activation).__name__}"
        )
    return found


def activate(f: Any, value: Any, activation: str) -> Any:
    """`activation` applied to a fusion value."""
    if activation == "none":
        return value
    if activation == "gelu_tanh":
        return f.gelu(value, "tanh")
    if activation == "gelu":
        return f.gelu(value, "none")
    if activation == "silu":
        return f.silu(value)
    return f.relu(value)


def check_schedule(schedule: object, where: str) -> dict[str, Any]:
    """A module's mmcomp.compile keywords, checked when it is built (its kernel is
    compiled at the first forward)."""
    from mmcomp.backend.compiled import BACKENDS
    from mmcomp.schedule.heuristics import check_schedule_m, normalize_overrides
    from mmcomp.tuning import check_budget

    if not isinstance(schedule, Mapping):
        raise ScheduleError(
            f"{where}: expected a dict of mmcomp.compile keywords, found {type(schedule).__name__}"
        )
    keywords = dict(cast("Mapping[str, Any]", schedule))
    given = dict(keywords)
    backend = keywords.pop("backend", "cuda")
    if backend not in BACKENDS:
        raise ScheduleError(
            f"{where}: unknown backend {backend!r}; expected one of {', '.join(BACKENDS)}"
        )
    autotune = keywords.pop("autotune", False)
    if not isinstance(autotune, bool):
        raise ScheduleError(f"{where}: autotune={autotune!r}: expected True or False")
    budget = keywords.pop("autotune_budget_s", None)
    try:
        if budget is not None:
            check_budget("autotune_budget_s", budget)
        check_schedule_m(keywords.pop("schedule_m", None))
        normalize_overrides(keywords)
    except ValueError as error:
        raise ScheduleError(f"{where}: {error}") from None
    return given


ROW_COUNTS_KEPT = 64
"""Row counts whose kernel's fast path a module keeps."""


class RowFamily:
    """The kernel of a module: its fusion with a dynamic row count (M), compiled on first
    use; its M buckets serve every row count."""

    def __init__(self, build: Callable[[], Any], schedule: dict[str, Any]):
        self.build = build
        """The fusion, M dynamic."""
        self.schedule = schedule
        """The schedule keywords of the compile."""
        self._kernel: Any = None
        self._fast: dict[int, Callable[[Sequence[Any]], tuple[Any, ...] | None]] = {}
        """By row count: the fast path of the cuda kernel that ran it (its bucket's,
        specialized for it), which answers None unless its launch for the arrays is kept."""
        self.lock = threading.Lock()

    def kernel(self) -> Any:
        """The kernel (compiled now if new)."""
        kernel = self._kernel
        if kernel is not None:
            return kernel
        import mmcomp

        with self.lock:
            if self._kernel is None:
                self._kernel = mmcomp.compile(self.build(), **self.schedule)
        return self._kernel

    def run(self, arrays: Sequence[Any]) -> Any:
        """The kernel's output (a tuple where it has several) on `arrays` (the rows first):
        straight to the launch kept for the arrays where there is one, else through the
        kernel's call."""
        rows = arrays[0].shape[0]
        fast = self._fast.get(rows)
        if fast is not None:
            found = fast(arrays)
            if found is not None:
                return found[0] if len(found) == 1 else found
        kernel = self.kernel()
        outputs = kernel(*arrays)
        if fast is None and kernel.backend == "cuda":
            from mmcomp.pipeline import BucketedKernel

            bucket = kernel.kernel_for(rows) if isinstance(kernel, BucketedKernel) else kernel
            device = bucket.device_kernel
            if device.plan.dynamic:
                shapes = tuple(tuple(int(extent) for extent in array.shape) for array in arrays)
                device = bucket.device_kernel_at(shapes)
            found_path = device.call_state().fast_path()
            if found_path is not None:
                if len(self._fast) >= ROW_COUNTS_KEPT:
                    self._fast.pop(next(iter(self._fast)))
                self._fast[rows] = found_path
        return outputs[0] if len(outputs) == 1 else outputs
