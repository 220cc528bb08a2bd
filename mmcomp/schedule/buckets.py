"""M buckets: one compile of a fusion with a dynamic M serves every M, with a schedule per
range of M.

The best schedule depends on M (a decode step's 16 tokens want other tiles and K splits
than a prefill's 8192), but a dynamic kernel runs one schedule at every M. So
`mmcomp.compile` of a fusion whose M is dynamic returns a `BucketedKernel`: at each call it
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

import numbers
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from mmcomp.compiler import Kernel, dynamic_input_roles
from mmcomp.errors import FusionError

if TYPE_CHECKING:
    from mmcomp.frontend.builder import Fusion

M_BUCKETS = (16, 32, 64, 128, 256, 1024, 4096, 16384)
"""The bounds of the M buckets: bucket b holds the M above the previous bound up to b."""

NOMINAL_BUCKET = 4096
"""The bucket compiled at once (mmcomp.schedule.heuristics.NOMINAL_EXTENTS' M)."""
SHAPES_KEPT = 64
"""Input-shape tuples whose kernel a BucketedKernel keeps."""


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


class BucketedKernel(Kernel):
    """A fusion with a dynamic M, compiled once: call it on arrays of any M.

    As a Kernel it is the 4096 bucket's (`params`, `stages`, `ir()`, `module`, `ptx`, ...);
    `kernel_for(m)` gives the kernel that runs at M, and `kernels` the ones built so far.
    """

    def __init__(
        self,
        fusion: Fusion,
        backend: str,
        params: dict[str, Any],
        autotune_budget_s: float | None = None,
    ):
        self.keywords = dict(params)
        """The schedule keywords every bucket's kernel is compiled with."""
        self.autotune_budget_s = autotune_budget_s
        """With `mmcomp.compile(f, autotune=True)`: each bucket's kernel is autotuned (for
        M = its bound, on random inputs, within this many seconds) when first used."""
        self.kernels: dict[int, Kernel] = {}
        """The kernels built so far, by bucket."""
        self._bucket_by_shapes: dict[tuple[tuple[int, ...], ...], Kernel] = {}
        """The kernel of each tuple of input shapes called with (the most recent
        SHAPES_KEPT), so a repeated shape reads no extent again."""
        self._lock = threading.Lock()
        self.fusion = fusion  # kernel_for reads them before Kernel.__init__ sets them
        self.backend = backend
        nominal = self.kernel_for(NOMINAL_BUCKET)
        super().__init__(self.fusion, backend, nominal.params, nominal.stages, None, nominal.runner)

    def kernel_for(self, m: int) -> Kernel:
        """The kernel that runs at M (its bucket's; compiled on first use)."""
        if isinstance(m, bool) or not isinstance(m, numbers.Integral) or m < 0:
            raise FusionError(
                f"kernel @{self.fusion.name}: kernel_for: argument 'm': expected an int >= 0 "
                f"(a runtime extent M), found {m!r}"
            )
        bucket = bucket_for(int(m))
        kernel = self.kernels.get(bucket)
        if kernel is not None:
            return kernel
        import mmcomp

        with self._lock:
            kernel = self.kernels.get(bucket)
            if kernel is None:
                budget = self.autotune_budget_s
                kernel = (
                    mmcomp.compile(self.fusion, self.backend, schedule_m=bucket, **self.keywords)
                    if budget is None
                    else mmcomp.autotune(
                        self.fusion,
                        backend=self.backend,
                        budget_s=budget,
                        schedule_m=bucket,
                        **self.keywords,
                    )
                )
                self.kernels[bucket] = kernel
        return kernel

    def __call__(
        self,
        *arrays: Any,
        out: Any = None,
        stream: Any = None,
        check: bool | None = None,
        **named: Any,
    ) -> tuple[Any, ...]:
        """Run the kernel of the arrays' M (see `mmcomp.Kernel.__call__`)."""
        from mmcomp.backend.arguments import order_inputs

        names = [value.name or f"input{index}" for index, value in enumerate(self.fusion.inputs)]
        ordered = order_inputs(f"kernel @{self.fusion.name}", names, arrays, named)
        shapes = _shapes(ordered)
        kernel = (
            self.kernels[NOMINAL_BUCKET] if shapes is None else self._bucket_by_shapes.get(shapes)
        )
        if kernel is None:
            assert shapes is not None
            kernel = self.kernels[NOMINAL_BUCKET]
            m = kernel.runtime_extents(shapes).get("m")
            if m is not None:
                kernel = self.kernel_for(m)
            if len(self._bucket_by_shapes) >= SHAPES_KEPT:
                self._bucket_by_shapes.pop(next(iter(self._bucket_by_shapes)))
            self._bucket_by_shapes[shapes] = kernel
        return kernel(*ordered, out=out, stream=stream, check=check)

    def __repr__(self) -> str:
        built = ", ".join(str(bucket) for bucket in sorted(self.kernels))
        return (
            f"<mmcomp.BucketedKernel @{self.fusion.name} backend={self.backend} "
            f"buckets built: {built}>"
        )


def _shapes(arrays: Sequence[Any]) -> tuple[tuple[int, ...], ...] | None:
    """The arrays' shapes; None where one has none (the kernel's call says what is wrong)."""
    shapes: list[tuple[int, ...]] = []
    for array in arrays:
        shape = getattr(array, "shape", None)
        if shape is None:
            return None
        shapes.append(tuple(int(extent) for extent in shape))
    return tuple(shapes)
