"""The registration of compiled fusions as torch custom ops (`mmcomp::<name>`): their names,
schemas and output shapes, with fake implementations so that they run under
torch.compile(fullgraph=True) and CUDA graphs. `mmcomp.torch.op` (mmcomp.torch.autograd)
registers a fusion with them, its backward the differentiated fusion's."""

from __future__ import annotations

import hashlib
import keyword
import re
import threading
from collections.abc import Callable, Sequence, Set
from typing import Any

from mmcomp.torch.arrays import torch

# ----------------------------------------------------------------------------------------

_lock = threading.Lock()
_ops: dict[str, Any] = {}
"""Registered ops by qualified name (registering one name twice is an error in torch)."""

_NAME = re.compile(r"[^A-Za-z0-9_]")
_SCHEMA_RESERVED = {"out", "self", "input", "dtype", "device", "layout", "NoneType"}
"""Names a schema argument may not take (besides Python's keywords): torch's own."""


def op_name(base: str, digest_of: str) -> str:
    """`<base>_<12 hex>`: a valid op name unique to what `digest_of` says."""
    digest = hashlib.sha256(digest_of.encode()).hexdigest()[:12]
    return f"{_NAME.sub('_', base) or 'fusion'}_{digest}"


def _parses(name: str) -> bool:
    """Whether torch's schema parser takes `name` as an argument name."""
    try:
        torch._C.parse_schema(f"f(Tensor {name}) -> Tensor")
    except RuntimeError:
        return False
    return True


def _argument(name: str, index: int, taken: Set[str]) -> str:
    """A schema argument name for an input: its own where torch takes it, else with
    underscores appended (Python keywords, torch's reserved names), none of `taken`."""
    name = _NAME.sub("_", name) or f"x{index}"
    while name in taken or name in _SCHEMA_RESERVED or keyword.iskeyword(name) or not _parses(name):
        name += "_"
    return name


def arguments(names: Sequence[str | None]) -> list[str]:
    """Distinct schema argument names for inputs of these names (None: unnamed)."""
    taken: set[str] = set()
    arguments: list[str] = []
    for index, name in enumerate(names):
        argument = _argument(name or "", index, taken)
        taken.add(argument)
        arguments.append(argument)
    return arguments


def schema(inputs: Sequence[str], optional: Sequence[str], outputs: int) -> str:
    """`(Tensor a, Tensor w, Tensor? bias=None) -> (Tensor, Tensor)`."""
    arguments = [f"Tensor {name}" for name in inputs]
    arguments += [f"Tensor? {name}=None" for name in optional]
    results = "Tensor" if outputs == 1 else "(" + ", ".join(["Tensor"] * outputs) + ")"
    return f"({', '.join(arguments)}) -> {results}"


def _no_backward_impl(grads: list[Any], like: list[Any], where: str) -> list[Any]:
    raise NotImplementedError(where)


def _no_backward_fake(grads: list[Any], like: list[Any], where: str) -> list[Any]:
    return [tensor.new_empty(tensor.shape) for tensor in like]


_no_backward = torch.library.custom_op(
    "mmcomp::no_backward",
    _no_backward_impl,
    mutates_args=(),
    schema="(Tensor[] grads, Tensor[] like, str where) -> Tensor[]",
)
"""Stands in for the gradients of an mmcomp op: its fake gives their shapes (so tracing a
joint forward-backward graph works), running it raises. It takes the incoming gradients,
so it runs in the backward pass, not where the partitioner could move it."""
_no_backward.register_fake(_no_backward_fake)


def register(
    name: str,
    schema: str,
    impl: Callable[..., Any],
    fake: Callable[..., Any],
    where: str,
) -> Any:
    """Register (once per name) the op `mmcomp::<name>` with its fake and no backward."""
    qualified = f"mmcomp::{name}"
    with _lock:
        found = _ops.get(qualified)
        if found is not None:
            return found
        op = torch.library.custom_op(qualified, impl, mutates_args=(), schema=schema)
        op.register_fake(fake)
        message = (
            f"mmcomp: {where} has no backward (autograd through mmcomp kernels is not built); "
            "run it under torch.no_grad() or torch.inference_mode(), or detach its inputs"
        )

        def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
            ctx.positions = [i for i, t in enumerate(inputs) if isinstance(t, torch.Tensor)]
            ctx.count = len(inputs)
            ctx.save_for_backward(*[inputs[i] for i in ctx.positions])

        def backward(ctx: Any, *grads: Any) -> tuple[Any, ...]:
            given = [grad for grad in grads if grad is not None]
            gradients = _no_backward(given, list(ctx.saved_tensors), message)
            result: list[Any] = [None] * ctx.count
            for position, gradient in zip(ctx.positions, gradients, strict=True):
                result[position] = gradient
            return tuple(result)

        op.register_autograd(backward, setup_context=setup_context)
        _ops[qualified] = op
        return op


def output_axes(fusion: Any, output: Any) -> list[int | tuple[int, int]]:
    """Each extent of an output: static, or (input, axis) of an input axis that has the same
    dynamic extent (the fake implementation reads it from the traced inputs)."""
    from mmcomp.analysis.roles import roles_of

    sources: dict[str, tuple[int, int]] = {}
    for index, value in enumerate(fusion.inputs):
        roles: tuple[str, ...] = roles_of(value)
        axes: tuple[int, ...] = value.dynamic_axes
        for axis in axes:
            sources.setdefault(roles[axis], (index, axis))
    dynamic = set(output.dynamic_axes)
    out_roles: tuple[str, ...] = roles_of(output) if dynamic else ()
    return [
        sources[out_roles[axis]] if axis in dynamic else extent
        for axis, extent in enumerate(output.shape)
    ]
