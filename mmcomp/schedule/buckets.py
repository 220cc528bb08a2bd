"""M buckets: one compile of a fusion with a dynamic M serves every M, with a schedule per
range of M.

The best schedule depends on M (a decode step's 16 tokens want other tiles and K splits
than a prefill's 8192), but a dynamic kernel runs one schedule at every M. So
`mmcomp.compile` of a fusion whose M is dynamic returns a `BucketedKernel`
(mmcomp.pipeline): at each call it
reads M from the arrays, takes the smallest bucket of M_BUCKETS that holds it (the last
for any larger M), and runs that bucket's kernel: the same dynamic fusion compiled with
its schedule chosen as if M were the bucket's bound (`mmcomp.compile(f,
schedule_m=bucket)`). A bucket's kernel is compiled on its first call and kept, in memory
and, through mmcomp.cache, on disk; the 4096 bucket's is compiled at once, so that what
the back end refuses is refused at compile time. Eight buckets cover M from 1 to 16384,
and the last serves every larger M (its schedule is the one of any larger M but for small
differences of tiles and raster on narrow outputs), so a serving loop compiles at most
eight kernels. The 32 bucket exists because from 17 to 32 rows the swapped (swap-AB) kernel
of 32 rows is faster than the 64-row one.

`mmcomp.compile(f, schedule_m=M)` pins one schedule, chosen for M, for every M: a plain
Kernel.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mmcomp.analysis.roles import dynamic_input_roles

if TYPE_CHECKING:
    from mmcomp.frontend.builder import Fusion

M_BUCKETS = (16, 32, 64, 128, 256, 1024, 4096, 16384)
"""The bounds of the M buckets: bucket b holds the M above the previous bound up to b."""

NOMINAL_BUCKET = 4096
"""The bucket compiled at once (mmcomp.schedule.heuristics.NOMINAL_EXTENTS' M)."""


def bucket_for(m: int) -> int:
    """The bucket of M: the smallest bound that holds it, else the largest."""
    for bound in M_BUCKETS:
        if m <= bound:
            return bound
    return M_BUCKETS[-1]


def has_dynamic_m(fusion: Fusion) -> bool:
    """Whether an input of `fusion` has a dynamic axis of role m."""
    roles = dynamic_input_roles(fusion)
    if roles is None:
        return False
    return any(
        roles[index][axis] == "m"
        for index, value in enumerate(fusion.inputs)
        for axis in value.dynamic_axes
    )
