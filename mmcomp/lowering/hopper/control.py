"""The schedule's control flow -> labels and branches.

`Walker` emits a block of the materialized kernel in order: index arithmetic
(`mmcomp.lowering.hopper.index`), `scf.for` as a counted loop, `scf.if` as a branch around
its regions; every other op goes to the role's own lowering (`special`). Each role walks
its own region of `hopper.warp_specialize`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from xdsl.dialects import scf
from xdsl.dialects.func import ReturnOp
from xdsl.ir import Operation

from mmcomp.errors import ScheduleError
from mmcomp.lowering.hopper.context import KernelContext
from mmcomp.lowering.hopper.index import place


def emit_loop(ctx: KernelContext, loop: scf.ForOp, body: Callable[[], None]) -> None:
    """A counted loop over `loop`'s range; `body` emits one iteration."""
    k = ctx.k
    iv = k.mov(ctx.reg(loop.lb))
    ctx.regs[loop.body.block.args[0]] = iv
    head = k.fresh_label("loop")
    end = k.fresh_label("loop_end")
    upper = ctx.reg(loop.ub)
    step = ctx.reg(loop.step)
    k.label(head)
    k.bra(end, k.setp("hs", iv, upper))
    ctx.loops.append((iv, upper, step))
    body()
    ctx.loops.pop()
    k.assign(iv, k.add(iv, step))
    k.bra(head)
    k.label(end)


@dataclass
class Walker:
    """Emits the ops of one role: the generic ones here, the rest by `special`."""

    ctx: KernelContext
    special: Callable[[Operation], bool]
    """The role's lowering of an op; False leaves it to the generic one."""
    tile_end: Callable[[], None] | None = None
    """Called after each block that holds the K loop (the end of a tile's work)."""

    def walk(self, ops: Iterable[Operation]) -> None:
        """Emit `ops` in order."""
        holds_mainloop = False
        for op in ops:
            holds_mainloop |= op is self.ctx.mainloop
            if self.special(op):
                continue
            if place(self.ctx, op):
                continue
            if isinstance(op, scf.ForOp):
                emit_loop(self.ctx, op, lambda op=op: self.walk(op.body.block.ops))
                continue
            if isinstance(op, scf.IfOp):
                self.emit_if(op)
                continue
            if isinstance(op, scf.YieldOp | ReturnOp):
                continue
            raise ScheduleError(f"{self.ctx.where}: cannot lower {op.name} here")
        if holds_mainloop and self.tile_end is not None:
            self.tile_end()

    def emit_if(self, op: scf.IfOp) -> None:
        """`scf.if` without results: a branch around its then-block (and else-block)."""
        k = self.ctx.k
        if op.results:
            raise ScheduleError(f"{self.ctx.where}: scf.if with results is not lowered")
        taken = k.setp("ne", self.ctx.reg(op.cond), k.const(0))
        other = k.fresh_label("else")
        end = k.fresh_label("endif")
        k.bra(other, taken, negated=True)
        self.walk(op.true_region.block.ops)
        k.bra(end)
        k.label(other)
        if op.false_region.blocks:
            self.walk(op.false_region.block.ops)
        k.label(end)
