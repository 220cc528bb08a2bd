"""The rewrite patterns of `convert-scf-to-ptx`: scf.for, scf.if and scf.yield as labels and
branches, and the marks (labels, predicates) that the lowering before it writes on them.

`mmcomp.passes.convert_scf_to_ptx` applies them (`lower_control_flow`); its docstring says
what each op becomes. lower-schedule-to-hopper names the labels and marks the predicates
(`labeled`, `mark_predicate`); convert-hopper-to-ptx reads the registers that carried
values live in (`loop_init`, `branch_yielded`).
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import (
    ArrayAttr,
    IndexType,
    IntegerAttr,
    StringAttr,
    UnitAttr,
    UnrealizedConversionCastOp,
    i1,
)
from xdsl.ir import Attribute, BlockArgument, Operation, OpResult, SSAValue
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint
from xdsl.utils.exceptions import DiagnosticException

from mmcomp.dialects import hopper, ptx
from mmcomp.dialects.ptx.module import LABELS_ATTR, carried_labels
from mmcomp.lowering.arith_to_ptx.registers import held_register

NAME = "convert-scf-to-ptx"
"""The pass's name (the prefix of its errors)."""
PREDICATE = "ptx.predicate"
"""The unit attribute of an `scf.if` whose i1 condition is a predicate of the lowering (a
comparison or conjunction that only predicates read): it branches on the condition's
predicate register, where an unmarked i1 of the index arithmetic is tested against 0."""


def mark_predicate(op: scf.IfOp) -> scf.IfOp:
    """`op`, marked to branch on its condition as a predicate register."""
    op.attributes[PREDICATE] = UnitAttr()
    return op


def labeled(op: Operation, labels: tuple[str, ...]) -> None:
    """Give an `scf.for` / `scf.if` the label names it becomes."""
    op.attributes[LABELS_ATTR] = ArrayAttr([StringAttr(label) for label in labels])


def labels_of(op: Operation, count: int | None = None) -> list[str]:
    """The label names `op` carries (`count` of them, if given)."""
    labels = carried_labels(op)
    if labels is None:
        raise DiagnosticException(
            f"{NAME}: {op.name} carries no '{LABELS_ATTR}' (an array of label names)"
        )
    if count is not None and len(labels) != count:
        raise DiagnosticException(
            f"{NAME}: {op.name} must carry {count} label names in '{LABELS_ATTR}', "
            f"found {len(labels)}"
        )
    return labels


def register(value: SSAValue, ops: list[Operation]) -> SSAValue:
    """The register behind `value`: itself, the register a cast reads, or a new cast of
    an index value to u32 (appended to `ops`)."""
    held = held_register(value)
    if held is not None:
        return held
    if not isinstance(value.type, IndexType) and value.type != i1:
        raise DiagnosticException(
            f"{NAME}: a value of type {value.type} is neither a register, a cast of one nor "
            "an index or i1 value of the index arithmetic"
        )
    cast = UnrealizedConversionCastOp.get([value], [ptx.U32])
    ops.append(cast)
    return cast.results[0]


def _is_true(value: SSAValue) -> bool:
    """`value` is the i1 constant true."""
    owner = value.owner
    return (
        isinstance(owner, arith.ConstantOp)
        and isinstance(owner.value, IntegerAttr)
        and owner.value.value.data != 0
    )


def branch_guard(
    cond: SSAValue, ops: list[Operation], predicate: bool = False
) -> tuple[SSAValue, bool]:
    """The guard of the branch around an `scf.if`'s then-region: (the predicate, a
    register or an i1 of the lowering; negated). `@!p` for a cast of a predicate `p`,
    `arith.xori %c, true` flips the negation, an i1 predicate of the lowering
    (`predicate`: the branch is marked) is the guard itself (convert-arith-to-ptx puts it
    in its predicate register), and an i1 of the index arithmetic is tested with `setp.ne`
    against 0 (its instructions appended to `ops`)."""
    owner = cond.owner
    if isinstance(owner, arith.XOrIOp) and _is_true(owner.rhs):
        pred, negated = branch_guard(owner.lhs, ops, predicate)
        return pred, not negated
    if isinstance(owner, UnrealizedConversionCastOp) and len(owner.inputs) == 1:
        (source,) = owner.inputs
        if source.type == ptx.PRED:
            return source, True
    if predicate:
        return cond, True
    truth = register(cond, ops)
    zero = ptx.ConstOp(0, ptx.U32)
    taken = ptx.SetpOp("ne", truth, zero.result)
    ops += [zero, taken]
    return taken.result, True


def _erase_unused_negation(cond: SSAValue, rewriter: PatternRewriter) -> None:
    """Erase the negations (and their constants) behind a condition no op reads now."""
    owner = cond.owner
    if not isinstance(owner, arith.XOrIOp) or cond.uses:
        return
    inner, true = owner.lhs, owner.rhs
    rewriter.erase(owner)
    if not true.uses and isinstance(true.owner, Operation):
        rewriter.erase(true.owner)
    _erase_unused_negation(inner, rewriter)


def loop_init(value: SSAValue) -> SSAValue | None:
    """The init of the `scf.for` iter_arg behind `value`, a block argument of the loop's
    body (past the induction variable) or a result of the loop; None for any other value."""
    if isinstance(value, BlockArgument):
        loop = value.block.parent_op()
        if isinstance(loop, scf.ForOp) and value.index > 0:
            return loop.iter_args[value.index - 1]
        return None
    if isinstance(value, OpResult) and isinstance(value.op, scf.ForOp):
        return value.op.iter_args[value.index]
    return None


def branch_yielded(value: SSAValue) -> SSAValue | None:
    """The value that an `scf.if`'s then-region yields for `value`, a result of the
    branch; None for any other value."""
    if not isinstance(value, OpResult) or not isinstance(value.op, scf.IfOp):
        return None
    yielded = value.op.true_region.block.last_op
    assert isinstance(yielded, scf.YieldOp)
    return yielded.operands[value.index]


def accumulator_storage(value: SSAValue) -> tuple[SSAValue, ...]:
    """What holds an accumulator value: the registers behind a cast of them (a
    `hopper.accumulator`'s registers before convert-hopper-to-ptx), those of the
    accumulator a wgmma took (it updates them in place) or of a loop-carried value's init;
    else the value itself (a `hopper.zero_accumulator` not lowered yet)."""
    owner = value.owner
    if isinstance(owner, hopper.WgmmaMmaAsyncOp):
        return accumulator_storage(owner.accumulator)
    init = loop_init(value)
    if init is not None:
        return accumulator_storage(init)
    if isinstance(owner, UnrealizedConversionCastOp) and all(
        isinstance(source.type, ptx.RegType) for source in owner.inputs
    ):
        return tuple(owner.inputs)
    if isinstance(owner, hopper.AccumulatorOp):
        return tuple(owner.registers)
    return (value,)


def position_storage(value: SSAValue) -> tuple[SSAValue, ...]:
    """What holds a ring position: the (stage, phase) registers behind a cast of them (a
    lowered position), those of the position an advance took (it writes them in place) or
    of a loop-carried value's init; else the value itself (a `hopper.ring_start` not
    lowered yet)."""
    owner = value.owner
    if isinstance(owner, hopper.RingAdvanceOp | hopper.RingAdvanceByOp):
        return position_storage(owner.position)
    yielded = branch_yielded(value)
    if yielded is not None:
        return position_storage(yielded)
    init = loop_init(value)
    if init is not None:
        return position_storage(init)
    if isinstance(owner, UnrealizedConversionCastOp) and all(
        isinstance(source.type, ptx.RegType) for source in owner.inputs
    ):
        return tuple(owner.inputs)
    return (value,)


HELD_IN_PLACE: dict[
    type[Attribute], tuple[Callable[[SSAValue], tuple[SSAValue, ...]], str, str]
] = {
    hopper.AccumulatorType: (accumulator_storage, "accumulator", "accumulator"),
    hopper.RingPositionType: (position_storage, "ring position", "position"),
}
"""The carried types held in their init's registers (written in place: by the wgmmas, by
the advances), with the reader of those registers and the type's names in errors."""


def _carried_in_place(op: scf.ForOp, position: int, init: SSAValue) -> None:
    """Raise if `op` carries `init` (#`position`, of a HELD_IN_PLACE type) in the registers
    of an earlier carried value of its type."""
    kind = type(init.type)
    storage, what, short = HELD_IN_PLACE[kind]
    held = storage(init)
    earlier = [other for other in op.iter_args[:position] if isinstance(other.type, kind)]
    if any(storage(other) == held for other in earlier):
        raise DiagnosticException(
            f"{NAME}: scf.for carries {what} #{position} in the registers of an earlier "
            f"carried {short}; each must have registers of its own"
        )


def carried_registers(op: scf.ForOp, ops: list[Operation]) -> list[SSAValue]:
    """The register of each value `op` carries: its init's register, which the loop then
    writes in place (its results name it), or a fresh register that the init is moved
    into before the loop (`mov`, appended to `ops`) where the init is a cast of an index
    value or already carried by `op` as an earlier value."""
    carried: list[SSAValue] = []
    for position, (init, arg) in enumerate(zip(op.iter_args, op.body.block.args[1:], strict=True)):
        if type(arg.type) in HELD_IN_PLACE:
            _carried_in_place(op, position, init)
            # Held in its init's registers, which the wgmmas or advances write in place.
            carried.append(init)
            continue
        if isinstance(arg.type, IndexType):
            # An index value of the arithmetic: a fresh u32 register, the init moved in.
            moved = ptx.MovOp(register(init, ops))
            ops.append(moved)
            carried.append(moved.result)
            continue
        if not isinstance(arg.type, ptx.RegType):
            raise DiagnosticException(
                f"{NAME}: scf.for carries value #{position} of type {arg.type}; a loop-carried "
                "value of the hopper level must be a register (!ptx.reg), an index value, an "
                "accumulator (!hopper.accumulator) or a ring position (!hopper.ring_position)"
            )
        if isinstance(init.owner, UnrealizedConversionCastOp) or init in carried:
            moved = ptx.MovOp(init)
            ops.append(moved)
            carried.append(moved.result)
            continue
        carried.append(init)
    return carried


def carried_assigns(loop: scf.ForOp, op: scf.YieldOp) -> list[Operation]:
    """The end of an iteration of `loop`: each yielded value assigned to its carried
    register, in order, unless it is that register (the body wrote it in place)."""
    args = loop.body.block.args[1:]
    assigns: list[Operation] = []
    for position, (arg, value) in enumerate(zip(args, op.operands, strict=True)):
        if value is arg:
            continue
        if isinstance(arg.type, hopper.AccumulatorType):
            if accumulator_storage(value) != accumulator_storage(arg):
                raise DiagnosticException(
                    f"{NAME}: scf.yield passes accumulator #{position} in other registers than "
                    "the loop carries it in (its init's); a loop-carried accumulator must be "
                    "its block argument as the wgmmas of the body update it in place"
                )
            continue
        if isinstance(arg.type, hopper.RingPositionType):
            if position_storage(value) != position_storage(arg):
                raise DiagnosticException(
                    f"{NAME}: scf.yield passes ring position #{position} in other registers "
                    "than the loop carries it in (its init's); a loop-carried position must be "
                    "its block argument as the advances of the body move it in place"
                )
            continue
        if value in args:
            raise DiagnosticException(
                f"{NAME}: scf.yield passes carried value #{args.index(value)} as #{position}; "
                "a permutation of the carried registers is not lowered"
            )
        if isinstance(arg.type, IndexType):
            # The carried index value's register (a cast of the block argument, which
            # convert-arith-to-ptx resolves) takes the yielded value's.
            held = UnrealizedConversionCastOp.get([arg], [ptx.U32])
            assigns.append(held)
            assigns.append(ptx.AssignOp(held.results[0], register(value, assigns)))
            continue
        assigns.append(ptx.AssignOp(arg, value))
    return assigns


class YieldToPtx(RewritePattern):
    """An `scf.yield` becomes the end of its block: a loop's carried values assigned and
    its back edge (`add`, `assign`, `bra head`), `bra end` at the end of a then-block that
    an else-block follows, else nothing."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: scf.YieldOp, rewriter: PatternRewriter) -> None:
        """Rewrite the terminator of an scf.for / scf.if block."""
        parent = op.parent_op()
        if not isinstance(parent, scf.ForOp | scf.IfOp):
            return
        if op.operands and isinstance(parent, scf.IfOp):
            # The branch's results: its lowering checks them and ends its blocks.
            return
        if isinstance(parent, scf.ForOp):
            head, _ = labels_of(parent, 2)
            ops = carried_assigns(parent, op)
            step = register(parent.step, ops)
            iv = UnrealizedConversionCastOp.get([parent.body.block.args[0]], [step.type])
            following = ptx.AddOp(iv.results[0], step)
            ops += [
                iv,
                following,
                ptx.AssignOp(iv.results[0], following.result),
                ptx.BraOp(head),
            ]
            rewriter.replace(op, ops, [])
            return
        labels = labels_of(parent)
        if len(labels) == 2 and op.parent_region() is parent.true_region:
            rewriter.replace(op, [ptx.BraOp(labels[1])], [])
            return
        rewriter.erase(op)


class ForToPtx(RewritePattern):
    """An `scf.for` becomes a counted loop: the carried values' registers, `mov` of the
    lower bound into the induction variable's register, the head label, the exit test and
    branch, the body, the end."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: scf.ForOp, rewriter: PatternRewriter) -> None:
        """Rewrite a loop whose yield is already lowered (regions first)."""
        head, end = labels_of(op, 2)
        ops: list[Operation] = []
        carried = carried_registers(op, ops)
        lower = register(op.lb, ops)
        upper = register(op.ub, ops)
        iv = ptx.MovOp(lower)
        index = UnrealizedConversionCastOp.get([iv.result], [op.body.block.args[0].type])
        ops += [iv, index]
        # A carried index value is its register read as an index (before the loop: the
        # body and the code after it read it).
        values = [
            indexed(register, result, ops)
            for register, result in zip(carried, op.results, strict=True)
        ]
        test = ptx.SetpOp("hs", iv.result, upper)
        ops += [ptx.LabelOp(head), test, ptx.BraOp(end).set_guard(test.result)]
        rewriter.insert(ops, InsertPoint.before(op))
        rewriter.inline_block(op.body.block, InsertPoint.before(op), [*index.results, *values])
        rewriter.replace(op, [ptx.LabelOp(end)], values)


def indexed(register: SSAValue, result: SSAValue, ops: list[Operation]) -> SSAValue:
    """The value that stands for a loop-carried value held in `register`: the register
    itself, or for an index value the register read as one (a cast appended to `ops`)."""
    if not isinstance(result.type, IndexType):
        return register
    cast = UnrealizedConversionCastOp.get([register], [IndexType()])
    ops.append(cast)
    return cast.results[0]


def branch_yields(op: scf.IfOp) -> list[scf.YieldOp]:
    """The yields that end `op`'s regions, the then-block's first."""
    yields: list[scf.YieldOp] = []
    for region in op.regions:
        if not region.blocks:
            continue
        last = region.block.last_op
        assert isinstance(last, scf.YieldOp)
        yields.append(last)
    return yields


def check_branch_results(op: scf.IfOp) -> None:
    """Raise unless every result of `op` is a ring position."""
    for index, result in enumerate(op.results):
        if not isinstance(result.type, hopper.RingPositionType):
            raise DiagnosticException(
                f"{NAME}: scf.if result #{index} is of type {result.type}; the results of a "
                "branch of the hopper level must be ring positions (!hopper.ring_position)"
            )


def passes_through(op: scf.IfOp) -> bool:
    """`op`'s else-region holds nothing but the yield of its results (the positions as
    they were before the branch): no code, no label."""
    if not op.results or not op.false_region.blocks:
        return False
    first = op.false_region.block.first_op
    return isinstance(first, scf.YieldOp)


def branch_results(op: scf.IfOp, rewriter: PatternRewriter, has_else: bool) -> list[SSAValue]:
    """The values the code after an `scf.if` reads for its results: each result a ring
    position that both regions yield held in the same registers, read as those registers
    (a cast of them, inserted before the branch) or, where they are not made yet, as the
    position that holds them. The yields are erased (the then-block's becomes `bra end`
    where an else-block with code follows, `has_else`). Any other result is refused."""
    if not op.results:
        return []
    yields = branch_yields(op)
    if len(yields) != 2:
        raise DiagnosticException(
            f"{NAME}: scf.if with results must have an else-region (both regions yield them)"
        )
    values: list[SSAValue] = []
    for index, result in enumerate(op.results):
        then_held, else_held = (position_storage(y.operands[index]) for y in yields)
        if then_held != else_held:
            raise DiagnosticException(
                f"{NAME}: scf.if yields ring position #{index} in other registers in its "
                "else-region than in its then-region; both must be the position before the "
                "branch as the advances of the region moved it in place"
            )
        if len(then_held) == 1 and then_held[0].type == result.type:
            values.append(then_held[0])
            continue
        cast = UnrealizedConversionCastOp.get(then_held, [result.type])
        rewriter.insert(cast, InsertPoint.before(op))
        values.append(cast.results[0])
    then_yield, else_yield = yields
    if has_else:
        rewriter.replace(then_yield, [ptx.BraOp(labels_of(op)[-1])], [])
    else:
        rewriter.erase(then_yield)
    rewriter.erase(else_yield)
    return values


class IfToPtx(RewritePattern):
    """An `scf.if` becomes a branch around its then-block (to its else-block, if it has
    one, else to its end)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: scf.IfOp, rewriter: PatternRewriter) -> None:
        """Rewrite a branch whose yields are already lowered (regions first)."""
        check_branch_results(op)
        labels = labels_of(op)
        # An else-region that only yields has no code: no label, unless the branch names
        # one (a branch of the schedule keeps its else label, as one without results).
        through = passes_through(op)
        has_else = bool(op.false_region.blocks) and (not through or len(labels) == 2)
        if len(labels) != (2 if has_else else 1):
            raise DiagnosticException(
                f"{NAME}: scf.if must carry 2 label names (else, end) with an else-region "
                f"and 1 (end) without (1 or 2 with one that only yields), found {len(labels)}"
            )
        end = labels[-1]
        results = branch_results(op, rewriter, has_else)
        shared = self.ends_outer(op, end)
        ops: list[Operation] = []
        pred, negated = branch_guard(op.cond, ops, PREDICATE in op.attributes)
        cond = op.cond
        ops.append(ptx.BraOp(labels[0]).set_guard(pred, negated))
        rewriter.insert(ops, InsertPoint.before(op))
        rewriter.inline_block(op.true_region.block, InsertPoint.before(op))
        if has_else:
            rewriter.insert(ptx.LabelOp(labels[0]), InsertPoint.before(op))
            rewriter.inline_block(op.false_region.block, InsertPoint.before(op))
        if shared:
            rewriter.replace(op, [], results)
        else:
            rewriter.replace(op, [ptx.LabelOp(end)], results)
        _erase_unused_negation(cond, rewriter)

    @staticmethod
    def ends_outer(op: scf.IfOp, end: str) -> bool:
        """`op`'s end label is the end label of the scf.if around it, which places it (only
        where nothing follows `op` in that one's region)."""
        outer = op.parent_op()
        if not isinstance(outer, scf.IfOp) or labels_of(outer)[-1] != end:
            return False
        if not isinstance(op.next_op, scf.YieldOp):
            raise DiagnosticException(
                f"{NAME}: an scf.if that ends at its parent's end label '{end}' must be the "
                "last op of its region"
            )
        return True


PATTERNS: tuple[RewritePattern, ...] = (YieldToPtx(), ForToPtx(), IfToPtx())
"""The patterns of the structured control flow."""


def lower_control_flow(entry: ptx.EntryOp | hopper.KernelOp) -> None:
    """Rewrite the scf ops of `entry` (a ptx entry, or a hopper kernel before
    convert-hopper-to-ptx) into labels and branches, in place (innermost first: a block's
    yield before its op)."""
    PatternRewriteWalker(
        GreedyRewritePatternApplier(list(PATTERNS), dce_enabled=False),
        walk_regions_first=True,
        apply_recursively=False,
    ).rewrite_region(entry.body)
    erase_accumulator_casts(entry)


def erase_accumulator_casts(entry: ptx.EntryOp | hopper.KernelOp) -> None:
    """Erase the casts of registers to `!hopper.accumulator` and `!hopper.ring_position`
    that no op reads once the loops that carried them are lowered."""
    for op in list(entry.walk()):
        if not isinstance(op, UnrealizedConversionCastOp) or op.results[0].uses:
            continue
        if isinstance(op.results[0].type, hopper.AccumulatorType | hopper.RingPositionType) and all(
            isinstance(source.type, ptx.RegType) for source in op.inputs
        ):
            op.detach()
            op.erase()
