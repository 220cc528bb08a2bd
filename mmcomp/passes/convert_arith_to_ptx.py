"""`convert-arith-to-ptx`: lower the index arithmetic of each ptx entry to ptx instructions.

After `lower-schedule-to-hopper` the schedule's index arithmetic (persistent loop, split-K
slice, batch, grouped raster) is still `arith` on `index` values (and `i1` comparisons),
with `gpu.block_id` and `gpu.grid_dim` for the grid, in each role's program order. Each op
becomes the 32-bit unsigned ptx instruction(s) of the same meaning, one pattern per op:
a constant a `mov` of its immediate, a grid query a read of %ctaid.x or %nctaid.x, a binary
op the ptx instruction of its name, `arith.ceildivui` an add and a division (the tile
counts of a runtime extent), `arith.cmpi` a `setp` and a `selp` of 1 or 0, and
`arith.select` a `setp.ne` against 0 and a `selp`.

The lowering's own arithmetic (`mmcomp.lowering.hopper.values`) adds three forms, each the
instructions the lowering wrote by hand: an `arith.cmpi` that only ptx ops read as their
guard (an i1 guard) is the `setp` alone; an `arith.addi` marked `ptx.mad` and the
`arith.muli` it adds to (read by nothing else) are one `mad.lo`; an `arith.select` on a
predicate register is a `selp`, or a `mov` guarded by the predicate into its false value
where that is a fresh register that nothing else reads. The thread's identity adds two:
`gpu.thread_id x` is a read of %tid.x, and an `arith.andi` of i1 values read as a
predicate (a conjunction of the lowering's tests) is `and.pred` of its operands'
predicate registers; a comparison that such a conjunction reads counts as read as a
predicate. Replacing the i1 by the register puts each guard in it (wherever the guard
is: an op in a nested region reads the register as it read the i1); a guard that reads a
predicate register through a cast to i1 reads the register, and a guard that is not in a
predicate register after the pass (a comparison also read as a u32 truth value) is an
error naming the op.

The epilogue's math (`mmcomp.lowering.hopper.pointwise`) is `arith` and `math` on f32, each
op one f32 instruction of the same meaning: an f32 constant a `mov.f32`; `arith.addf`,
`subf` and `mulf`, which must be marked `fastmath<contract>` (ptx's add.f32, sub.f32 and
mul.f32, without a rounding modifier, let ptxas fuse a multiply and an add), `add.f32`,
`sub.f32`, `mul.f32`; `arith.divf` `div.rn.f32`, or, marked `fastmath<afn>` with the
constant 1.0 as its dividend (read by it alone), `rcp.approx.f32` of its divisor, which the
constant goes with; `arith.negf` `neg.f32`; `arith.maxnumf` `max.f32` (the other operand
of a NaN, as maxnum); `math.absf` `abs.f32`; `math.exp2` and `math.tanh`, which must be
marked `fastmath<afn>`, `ex2.approx.f32` and `tanh.approx.f32`; `math.fma` `fma.rn.f32`;
`arith.truncf` of f32 to bf16 / f16 `cvt.rn.bf16.f32` (`.f16`), `arith.extf` back the
exact `cvt.f32.bf16`. Every other float form is an error naming the op and what it needs
(a float type other than f32, an approximation without `afn`), and an `arith` or `math`
op that no pattern lowers is an error naming it and its types.

The 64-bit address sums (`mmcomp.lowering.hopper.values`: `add_scaled`, `mad_wide`) are
`arith` on i64, each the instruction the lowering wrote by hand: an i64 `arith.muli` of a
zero-extended index value (an `arith.index_cast` to i32 and an `arith.extui` to i64) and
an i64 constant below 2^32 is one `mul.wide.u32` (the constant a u32 `mov`, the extension
lowered with it); an i64 `arith.addi` marked `ptx.mad` of such a product is one
`mad.wide.u32`; an i64 `arith.addi` is `add.u64`, an i64 constant read otherwise a u64
`mov`. A zero extension read by anything but a widening multiply, a constant factor of
2^32 or more, and a sum of a value held in a 32-bit register are errors.

The hopper level reads registers where it meets an index value: a
`builtin.unrealized_conversion_cast` of the value to `!ptx.reg<u32>` (a hopper op's
coordinate, a branch's condition), or of a register to `index` (a loop's induction
variable, which the loop updates in place). The patterns read their operands through
these casts (`register_of`); once every op is lowered, a cast of a register to its own
type is replaced by the register and a cast no op reads is erased.

The patterns live in `mmcomp.lowering.arith_to_ptx`, one module per family (index and
predicates, 64-bit sums, f32 math); this module applies them and checks what is left.

It runs after `convert-hopper-to-ptx`: an entry that still holds a hopper op is an error
naming that pass. A `func.func` that the pipeline has not yet lowered to a ptx.module (a
partitioned or materialized kernel, a fusion) is an error naming the passes to run first;
plain functions (a kernel's launch function) are left alone.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.context import Context
from xdsl.dialects.builtin import (
    ModuleOp,
    UnrealizedConversionCastOp,
)
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.utils.exceptions import DiagnosticException

from mmcomp.analysis.warp_roles import check_lowered_to_ptx
from mmcomp.dialects import ptx
from mmcomp.dialects.ptx.module import is_structured_control
from mmcomp.lowering.arith_to_ptx.float_math import FLOAT_PATTERNS
from mmcomp.lowering.arith_to_ptx.index import INDEX_PATTERNS
from mmcomp.lowering.arith_to_ptx.registers import is_hopper_op
from mmcomp.lowering.arith_to_ptx.wide import WIDE_PATTERNS

UNLOWERED_DIALECTS = ("arith.", "math.")
"""The dialects whose ops must all be lowered: what is left of them has no pattern."""


def check_all_lowered(entry: ptx.EntryOp) -> None:
    """Raise, naming the op and its types, if an arith or math op is left in `entry`."""
    for op in entry.walk():
        if not op.name.startswith(UNLOWERED_DIALECTS):
            continue
        types = ", ".join(str(value.type) for value in (*op.operands, *op.results))
        raise DiagnosticException(
            f"convert-arith-to-ptx: ptx.entry @{entry.sym_name.data}: no ptx lowering for "
            f"{op.name} ({types})"
        )


def check_guards(entry: ptx.EntryOp) -> None:
    """Raise, naming the op, if a guard in `entry` is not a predicate register."""
    for op in entry.walk():
        if not isinstance(op, ptx.PtxInstruction) or op.guard is None:
            continue
        if op.guard.type == ptx.PRED:
            continue
        raise DiagnosticException(
            f"convert-arith-to-ptx: ptx.entry @{entry.sym_name.data}: the guard of {op.name} "
            f"is held in a {op.guard.type}, expected a !ptx.reg<pred> (an i1 comparison or "
            "conjunction that only predicates read, or a predicate register)"
        )


class FoldRegisterCast(RewritePattern):
    """A cast of a register to its own type becomes the register, as does a cast back to a
    register's type of a cast from it (register -> index -> register); an unread cast of a
    register is erased."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: UnrealizedConversionCastOp, rewriter: PatternRewriter) -> None:
        """Fold or erase a cast of one register."""
        if len(op.inputs) != 1 or len(op.results) != 1:
            return
        (source,) = op.inputs
        (result,) = op.results
        inner = source.owner
        if (
            isinstance(inner, UnrealizedConversionCastOp)
            and len(inner.inputs) == 1
            and inner.inputs[0].type == result.type
            and isinstance(result.type, ptx.RegType)
        ):
            rewriter.replace(op, [], [inner.inputs[0]])
            return
        if not isinstance(source.type, ptx.RegType):
            return
        if result.type == source.type:
            rewriter.replace(op, [], [source])
        elif not result.uses:
            rewriter.erase(op)


def lower_index_arithmetic(entry: ptx.EntryOp) -> None:
    """Rewrite the index arithmetic of `entry` into ptx instructions, in place."""
    PatternRewriteWalker(
        GreedyRewritePatternApplier(
            [*WIDE_PATTERNS, *INDEX_PATTERNS, *FLOAT_PATTERNS], dce_enabled=False
        ),
        apply_recursively=False,
    ).rewrite_region(entry.body)
    PatternRewriteWalker(FoldRegisterCast(), apply_recursively=True).rewrite_region(entry.body)
    check_all_lowered(entry)
    check_guards(entry)


_LOWERED_BEFORE: tuple[tuple[Callable[[Operation], bool], str, str], ...] = (
    (
        is_hopper_op,
        "convert-hopper-to-ptx",
        "the hopper ops read the index arithmetic this pass lowers",
    ),
    (
        is_structured_control,
        "convert-scf-to-ptx",
        "the loops' bounds and the branches' conditions read the index arithmetic this pass lowers",
    ),
)
"""What must be lowered before this pass, by (op test, pass, why)."""


class ConvertArithToPtx(ModulePass):
    """Lower the index arithmetic in the module's ptx entries to ptx instructions."""

    name = "convert-arith-to-ptx"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        """Lower every entry's index arithmetic; a kernel or fusion still in a func.func is
        an error."""
        del ctx
        check_lowered_to_ptx(self.name, op)
        for entry in [entry for entry in op.walk() if isinstance(entry, ptx.EntryOp)]:
            for holds, needed, why in _LOWERED_BEFORE:
                found = next((inner for inner in entry.walk() if holds(inner)), None)
                if found is not None:
                    raise DiagnosticException(
                        f"{self.name}: ptx.entry @{entry.sym_name.data} still holds "
                        f"{found.name}: run {needed} first ({why})"
                    )
            lower_index_arithmetic(entry)
