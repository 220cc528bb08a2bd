"""The named barriers (`bar.sync id, threads`) of a kernel, allocated from its warp roles.

Barrier 0 is the CTA-wide `bar.sync 0` of the prologue. The others come in families of one
barrier per consumer warpgroup, allocated in this order from 1 on:

- `order`: ping-pong, consumer c has finished a mainloop (the other consumer's mainloop
  waits on it), all consumer threads;
- `split_k`: the threads that share a tile meet around the split-K arrival (one consumer
  warpgroup in ping-pong, every consumer otherwise);
- `epilogue`: one consumer warpgroup's epilogue buffers (epilogue "smem").

With the two consumer warpgroups of every kernel that is 1-2, 3-4 and 5-6. The thread
counts come from the roles too.
"""

from __future__ import annotations

from dataclasses import dataclass

from mmcomp.analysis.warp_roles import WarpRoles
from mmcomp.arch import limits as hw

CTA_BARRIER = 0
"""The barrier of every thread of the CTA."""
MAX_NAMED_BARRIERS = 16
"""Named barriers per CTA."""


@dataclass(frozen=True)
class BarrierFamily:
    """One named barrier per consumer warpgroup."""

    first: int
    """The id of consumer 0's barrier; consumer c has first + c."""
    threads: int
    """Threads that meet at each barrier of the family."""

    def of(self, consumer: int) -> int:
        """The id of consumer `consumer`'s barrier."""
        return self.first + consumer


@dataclass(frozen=True)
class NamedBarriers:
    """The named-barrier ids and thread counts of a kernel."""

    order: BarrierFamily
    """Ping-pong: consumer c's mainloop is done."""
    split_k_tile: BarrierFamily
    """The threads of one consumer warpgroup around the split-K arrival (ping-pong)."""
    split_k_all: BarrierFamily
    """Every consumer thread around the split-K arrival (the other modes)."""
    epilogue: BarrierFamily
    """One consumer warpgroup's epilogue buffers."""

    @staticmethod
    def allocate(roles: WarpRoles) -> NamedBarriers:
        """The barriers of a kernel with these roles."""
        consumers = roles.consumers
        warpgroup = hw.WARPGROUP_SIZE
        every = roles.consumer_threads
        first = CTA_BARRIER + 1
        order = BarrierFamily(first, every)
        split_k = first + consumers
        epilogue = BarrierFamily(split_k + consumers, warpgroup)
        if epilogue.first + consumers > MAX_NAMED_BARRIERS:
            raise ValueError(f"{consumers} consumer warpgroups need too many named barriers")
        return NamedBarriers(
            order,
            BarrierFamily(split_k, warpgroup),
            BarrierFamily(split_k, every),
            epilogue,
        )
