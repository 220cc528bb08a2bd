"""The grouping of a grouped fusion: its layout and its group-size argument.

A fusion whose contractions are `fusion.grouped_linear`s has one partition of its rows
into groups (propagate-axis-mapping checks that they share it), given by an i32 argument
of the function that the kernel reads on the device: the cumulative group ends
(`offsets`, the contiguous layout, x [T, K]) or each group's rows (`counts`, the masked
layout, x [G, Mmax, K]). Its iteration space has the group axis `g` (G groups) beside m,
n and k. The schedule passes read the grouping here: a masked layout walks g as a batch
axis (each group's own m tiles, skipped past its count); a contiguous one walks the
virtual m tiles of `sched.group_tile` (floor(M / tile m) + G of them), g being no tile
axis.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import func
from xdsl.ir import BlockArgument

from mmcomp.dialects.fusion import GroupedLinearOp

GROUP_ROLE = "g"
"""The role of the group axis."""
CONTIGUOUS = "contiguous"
"""The layout of x [T, K] with cumulative group ends (`offsets`)."""
MASKED = "masked"
"""The layout of x [G, Mmax, K] with each group's rows (`counts`)."""


@dataclass(frozen=True)
class Grouping:
    """How a grouped fusion's rows are partitioned into groups."""

    layout: str
    """CONTIGUOUS or MASKED."""
    sizes: int
    """The position of the group-size argument (offsets or counts) among the inputs."""
    groups: int
    """G, the groups."""


def grouped_ops(function: func.FuncOp) -> list[GroupedLinearOp]:
    """The grouped contractions of a fusion function, in order."""
    return [op for op in function.body.walk() if isinstance(op, GroupedLinearOp)]


def grouping_of(function: func.FuncOp) -> Grouping | None:
    """The grouping of a grouped fusion function (read off its first grouped
    contraction); None for a fusion without one."""
    found = grouped_ops(function)
    if not found:
        return None
    op = found[0]
    sizes = op.group_sizes
    if not isinstance(sizes, BlockArgument):
        return None
    w_type = op.w.type
    groups = w_type.get_shape()[0]  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType, reportUnknownVariableType]
    return Grouping(MASKED if op.masked else CONTIGUOUS, sizes.index, int(groups))  # pyright: ignore[reportUnknownArgumentType]
