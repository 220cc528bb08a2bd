"""The discardable attributes in mmcomp's namespaces, and the check for any other one.

mmcomp's passes communicate through a few attributes on functions, their arguments and
ops (`sched.params` on a fusion function, `fusion.roles` on every value, ...). One they do
not read would be ignored without a word, so a misspelt `sched.param = #sched.params<...>`
would leave the heuristic choosing every parameter. Each schedule-level pass therefore
starts with `check_attributes`: an attribute named `fusion.*`, `sched.*`, `hopper.*` or
`ptx.*` that is not in `KNOWN` is an error at its op, naming the nearest known name.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator

from xdsl.dialects.builtin import DictionaryAttr
from xdsl.dialects.func import FuncOp
from xdsl.ir import Operation
from xdsl.utils.exceptions import DiagnosticException

from mmcomp.ir.diagnostics import at

NAMESPACES = ("fusion", "sched", "hopper", "ptx")
"""The dialect namespaces whose attribute names mmcomp owns."""

KNOWN: dict[str, str] = {
    "fusion.space": "a fusion function's iteration space (propagate-axis-mapping)",
    "fusion.roles": "the axis roles of a value (propagate-axis-mapping)",
    "sched.params": "a function's schedule parameters (choose-schedule, tile-split, ...)",
    "sched.grid": "a kernel's CTA count, or its launch function where dynamic extents set it "
    "(insert-persistent-loop, materialize-schedule)",
    "sched.extent": "an index argument that is a runtime extent (materialize-schedule)",
    "sched.cluster": "a kernel's CTAs per cluster (materialize-schedule)",
    "sched.num_inputs": "a kernel's fusion inputs (materialize-schedule)",
    "sched.num_outputs": "a kernel's fusion outputs (materialize-schedule)",
    "sched.output": "a kernel argument that is an output (materialize-schedule)",
    "sched.workspace": "a kernel argument that is split-K scratch (materialize-schedule)",
    "hopper.warp_roles": "a kernel's warp-role plan (partition-warp-roles)",
    "hopper.role": "an old mark of a tile op's warpgroup, refused with a message saying so",
    "hopper.slot": "a mainloop load's slot in a ring stage (partition-warp-roles)",
}
"""Every attribute name in mmcomp's namespaces that a pass sets or reads, and its use."""


def _named_attributes(op: Operation) -> Iterator[tuple[str, str]]:
    """(where, name) of each discardable attribute of `op` and, for a function, of its
    arguments and results."""
    function = f"func.func @{op.sym_name.data}" if isinstance(op, FuncOp) else op.name
    for name in op.attributes:
        yield function, name
    if not isinstance(op, FuncOp):
        return
    for what, entries in (("argument", op.arg_attrs), ("result", op.res_attrs)):
        if entries is None:
            continue
        for index, entry in enumerate(entries.data):
            if isinstance(entry, DictionaryAttr):
                for name in entry.data:
                    yield f"{function}: {what} #{index}", name


def unknown_attribute(name: str) -> str | None:
    """Why `name` is not an attribute mmcomp reads, or None when it is one (or is not in
    mmcomp's namespaces)."""
    namespace, _, _ = name.partition(".")
    if namespace not in NAMESPACES or name in KNOWN:
        return None
    close = difflib.get_close_matches(name, list(KNOWN), n=1, cutoff=0.6)
    hint = f"did you mean '{close[0]}'? " if close else ""
    family = ", ".join(known for known in KNOWN if known.startswith(f"{namespace}."))
    return (
        f"attribute '{name}' is read by no mmcomp pass; {hint}"
        f"(the {namespace}.* attributes are {family or 'none'})"
    )


def check_attributes(module: Operation, pass_name: str) -> None:
    """Raise a diagnostic at the first op carrying an attribute in mmcomp's namespaces that
    no pass reads (see KNOWN)."""
    for op in module.walk():
        for where, name in _named_attributes(op):
            problem = unknown_attribute(name)
            if problem is not None:
                raise DiagnosticException(at(op, f"{pass_name}: {where}: {problem}"))
