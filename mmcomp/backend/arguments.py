"""The public call's arguments: inputs by position and name, `out=` entries, aliasing.

`order_inputs` puts the arrays of a call in the fusion's input order (an input named like
one of the call's own keywords, RESERVED_KEYWORDS, is passed by position); `out_entries`
reads `out=` (a sequence in output order or a mapping by output name or index);
`check_aliasing` refuses an output that shares memory with an input or another output.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

from mmcomp.errors import FusionError, LaunchError
from mmcomp.runtime.arrays import DeviceArray

RESERVED_KEYWORDS = ("out", "stream", "check")
"""Keywords of the call itself: an input with one of these names is passed by position."""


def order_inputs(
    where: str, names: Sequence[str], arrays: Sequence[Any], named: Mapping[str, Any]
) -> list[Any]:
    """The inputs in fusion input order, from positional arrays and arrays by name."""
    if not named and len(arrays) == len(names):
        return list(arrays)
    if len(arrays) > len(names):
        raise FusionError(
            f"{where}: expected at most {len(names)} inputs {list(names)}, found "
            f"{len(arrays)} positional arrays"
        )
    bound: list[Any] = list(arrays) + [None] * (len(names) - len(arrays))
    for name, array in named.items():
        if name not in names:
            raise FusionError(f"{where}: no input named {name!r}; the inputs are {list(names)}")
        index = names.index(name)
        if bound[index] is not None:
            raise FusionError(f"{where}: input {name!r} given both by position and by name")
        bound[index] = array
    missing = [name for name, array in zip(names, bound, strict=True) if array is None]
    if missing:
        reserved = [name for name in missing if name in RESERVED_KEYWORDS]
        hint = (
            f" (an input named {reserved[0]!r} is passed by position: the keyword "
            f"{reserved[0]}= is the call's own)"
            if reserved
            else ""
        )
        raise FusionError(f"{where}: missing inputs {missing}{hint}")
    return bound


def out_entries(where: str, out: Any, names: Sequence[str]) -> list[Any]:
    """`out=` as one entry (or None) per output, in output order."""
    count = len(names)
    if isinstance(out, Mapping):
        entries: list[Any] = [None] * count
        for key, value in cast("Mapping[object, Any]", out).items():
            if isinstance(key, int) and not isinstance(key, bool) and 0 <= key < count:
                index = key
            elif isinstance(key, str) and key in names:
                index = list(names).index(key)
            else:
                raise LaunchError(
                    f"{where}: out: no output {key!r}; the outputs are {list(names)} "
                    f"(or indices 0 to {count - 1})"
                )
            entries[index] = value
        return entries
    if isinstance(out, tuple | list):
        out = cast("Sequence[Any]", out)
        if len(out) != count:
            raise LaunchError(
                f"{where}: out: expected {count} entries (one per output {list(names)}, None "
                f"to allocate), found {len(out)}"
            )
        return list(out)
    raise LaunchError(
        f"{where}: out: expected a tuple or list in output order, or a dict by output name, "
        f"found {type(out).__name__}"
    )


def _span(ptr: int, shape: Sequence[int], strides: Sequence[int], itemsize: int) -> range:
    """The byte addresses an array's elements occupy, first to last."""
    if any(int(extent) == 0 for extent in shape):
        return range(ptr, ptr)
    low = ptr + sum(min(0, (int(e) - 1) * int(s)) for e, s in zip(shape, strides, strict=True))
    high = ptr + sum(max(0, (int(e) - 1) * int(s)) for e, s in zip(shape, strides, strict=True))
    return range(low, high + itemsize)


def check_aliasing(
    where: str, inputs: Sequence[tuple[str, DeviceArray]], outputs: Sequence[tuple[str, Any]]
) -> None:
    """LaunchError when an output shares memory with an input or another output."""
    spans = [(name, _span(a.ptr, a.shape, a.strides, a.dtype.itemsize)) for name, a in inputs]
    for name, array in outputs:
        span = _span(array.ptr, array.shape, array.strides, array.dtype.itemsize)
        for other, taken in spans:
            if span.start < taken.stop and taken.start < span.stop:
                raise LaunchError(
                    f"{where}: {name} shares memory with {other}; an output must not alias an "
                    "input or another output (pass a separate array)"
                )
        spans.append((name, span))
