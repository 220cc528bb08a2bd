"""The tile patterns of materialize-schedule: a work unit's tile ops -> the tile-level ops.

`ContractTileToKLoop`: `sched.contract_tile` -> a `sched.zero_tile` per accumulator and
the K loop, an `scf.for` over its K blocks carrying the accumulators, whose body loads
each input's tile at the starts its roles select (k: the block's `kb * tile_k`) and adds
each `fusion.mma` of the region as a `sched.mma`. `WriteTileToEpilogue`:
`sched.write_tile` -> a `sched.load_tile` of each input, a `sched.epilogue` of its region
and a `sched.store_tile` of each output tile. Both read the tile from the kernel's
`#sched.params` and each array's roles from its `fusion.roles`; their index constants
join the kernel's, which head its entry block in value order.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr
from xdsl.ir import Block, BlockArgument, Operation, SSAValue
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint
from xdsl.utils.exceptions import DiagnosticException

from mmcomp.analysis.schedule_plan import IndexBuilder
from mmcomp.dialects import fusion, sched
from mmcomp.dialects.fusion.scales import SCALE_BLOCK
from mmcomp.ir.diagnostics import at
from mmcomp.ir.narrowing import is_tensor
from mmcomp.lowering.materialize_schedule.body import roles_of_value
from mmcomp.lowering.materialize_schedule.kernel import PASS_NAME


def _kernel_of(op: Operation) -> func.FuncOp:
    """The kernel function around a tile op."""
    kernel = op.parent_op()
    while kernel is not None and not isinstance(kernel, func.FuncOp):
        kernel = kernel.parent_op()
    if kernel is None:
        raise DiagnosticException(at(op, f"{PASS_NAME}: {op.name} outside a func.func"))
    return kernel


def _tile_of(op: Operation) -> tuple[int, int, int]:
    """The CTA tile of the kernel around `op`, from its `#sched.params`."""
    params = _kernel_of(op).attributes.get(sched.PARAMS_ATTR)
    if not isinstance(params, sched.ScheduleParamsAttr):
        raise DiagnosticException(
            at(op, f"{PASS_NAME}: {op.name}: its func.func has no '{sched.PARAMS_ATTR}'")
        )
    tile_m, tile_n, tile_k = params.data.tile
    return tile_m, tile_n, tile_k


def _roles_of(op: Operation, array: SSAValue) -> tuple[str, ...]:
    """The roles of an array of the kernel (its argument's `fusion.roles`)."""
    roles = roles_of_value(array)
    if roles is None:
        raise DiagnosticException(at(op, f"{PASS_NAME}: {op.name}: {array} has no roles"))
    return roles


class KernelConstants:
    """An IndexBuilder for a tile op's replacement whose constants are the kernel's: the
    index constants that head its entry block, new ones placed among them in value
    order."""

    def __init__(self, op: Operation):
        self.entry = _kernel_of(op).body.block
        self.known: dict[int, SSAValue] = {}
        for head in self.entry.ops:
            if not isinstance(head, arith.ConstantOp) or not isinstance(head.value, IntegerAttr):
                break
            if not isinstance(head.result.type, IndexType):
                break
            self.known[head.value.value.data] = head.result

    def builder(self, block: Block) -> IndexBuilder:
        """An IndexBuilder into `block` on the kernel's constants."""
        return IndexBuilder(block, dict(self.known))

    def place(self, index: IndexBuilder, rewriter: PatternRewriter) -> None:
        """Put the constants `index` made at their places among the kernel's."""
        for value in sorted(index.constants):
            if value in self.known:
                continue
            constant = index.constants[value].owner
            assert isinstance(constant, Operation)
            later = [self.known[other] for other in sorted(self.known) if other > value]
            if later:
                point = InsertPoint.before(later[0].owner)  # pyright: ignore[reportArgumentType]
            elif self.known:
                last = self.known[max(self.known)].owner
                point = InsertPoint.after(last)  # pyright: ignore[reportArgumentType]
            else:
                point = InsertPoint.at_start(self.entry)
            rewriter.insert(constant, point)
            self.known[value] = index.constants[value]


def _starts(
    index: IndexBuilder, roles: Sequence[str], starts: dict[str, SSAValue]
) -> list[SSAValue]:
    """The start of each of `roles` (0 where the tile op names none; along n128, n's start
    in groups of 128)."""
    return [
        index.div(starts["n"], fusion.QUANTIZE_GROUP)
        if role == fusion.GROUPED_N
        else starts[role]
        if role in starts
        else index.const(0)
        for role in roles
    ]


def _moved(rewriter: PatternRewriter, block: Block, op: Operation) -> None:
    """Move the ops of `block` before `op`."""
    ops = list(block.ops)
    for new in ops:
        new.detach()
    rewriter.insert(ops, InsertPoint.before(op))


class ContractTileToKLoop(RewritePattern):
    """`sched.contract_tile` -> zero tiles and the K loop of loads and `sched.mma`s."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: sched.ContractTileOp, rewriter: PatternRewriter) -> None:
        tile_k = _tile_of(op)[2]
        constants = KernelConstants(op)
        before = Block()
        index = constants.builder(before)
        zeros: list[SSAValue] = []
        for acc_type in op.accumulators.types:
            assert is_tensor(acc_type)
            zero = index.add(sched.ZeroTileOp(acc_type)).results[0]
            zero.name_hint = "zero"
            zeros.append(zero)
        region = op.body.block
        loop = Block(arg_types=[IndexType(), *op.accumulators.types])
        loop.args[0].name_hint = "kb"
        for arg in loop.args[1:]:
            arg.name_hint = "acc"
        inner = index.at(loop)
        starts = dict(zip(op.roles.roles, op.starts, strict=True))
        starts["k"] = inner.mul(loop.args[0], tile_k, "k0")
        mmas = [mma for mma in region.ops if isinstance(mma, fusion.MmaOp)]
        if any(mma.scales for mma in mmas):
            # A block-wise scale's tile starts at the tile's first K block and N block.
            if tile_k % SCALE_BLOCK:
                raise DiagnosticException(
                    at(
                        op,
                        f"{PASS_NAME}: block-wise scales need a tile k that is a multiple of "
                        f"{SCALE_BLOCK} (one scale per K block of {SCALE_BLOCK}), found {tile_k}",
                    )
                )
            starts["k128"] = inner.mul(loop.args[0], tile_k // SCALE_BLOCK, "k128_0")
        tiles: dict[SSAValue, SSAValue] = {}
        products: list[SSAValue] = []
        for mma, acc in zip(mmas, loop.args[1:], strict=True):
            for operand in (mma.a, mma.b, *mma.scales):
                if operand in tiles:
                    continue
                array = op.inputs[region.args.index(operand)]  # pyright: ignore[reportArgumentType]
                roles = _roles_of(op, array)
                load = sched.LoadTileOp(array, _starts(inner, roles, starts), operand.type)  # pyright: ignore[reportArgumentType]
                tiles[operand] = inner.add(load).results[0]
                tiles[operand].name_hint = operand.name_hint
            product = inner.add(
                sched.MmaOp(
                    tiles[mma.a],
                    tiles[mma.b],
                    acc,
                    mma.a_roles,
                    mma.b_roles,
                    mma.out_roles,
                    [tiles[scale] for scale in mma.scales],
                )
            ).results[0]
            product.name_hint = "acc"
            products.append(product)
        loop.add_op(scf.YieldOp(*products))
        k_loop = index.add(scf.ForOp(op.lower, op.upper, op.step, zeros, loop))
        for result in k_loop.results:
            result.name_hint = "acc"
        constants.place(index, rewriter)
        _moved(rewriter, before, op)
        rewriter.replace(op, [], list(k_loop.results))


class WriteTileToEpilogue(RewritePattern):
    """`sched.write_tile` -> the epilogue operands' loads, `sched.epilogue`, the stores."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: sched.WriteTileOp, rewriter: PatternRewriter) -> None:
        constants = KernelConstants(op)
        before = Block()
        index = constants.builder(before)
        starts = dict(zip(op.roles.roles, op.starts, strict=True))
        region = op.body.block
        operands = list(op.accumulators)
        for array, arg in zip(op.inputs, region.args[len(operands) :], strict=True):
            roles = _roles_of(op, array)
            load = sched.LoadTileOp(array, _starts(index, roles, starts), arg.type)  # pyright: ignore[reportArgumentType]
            loaded = index.add(load).results[0]
            position = array.index if isinstance(array, BlockArgument) else 0
            loaded.name_hint = f"{array.name_hint or f'arg{position}'}_tile"
            operands.append(loaded)
        yielded = region.last_op
        assert isinstance(yielded, sched.YieldOp)
        body = rewriter.move_region_contents_to_new_regions(op.body)
        epilogue = index.add(sched.EpilogueOp(operands, yielded.values.types, body))
        for result, value in zip(epilogue.results, yielded.values, strict=True):
            result.name_hint = value.name_hint
        for result, array in zip(epilogue.results, op.outputs, strict=True):
            roles = _roles_of(op, array)
            rows = op.rows if "m" in roles else None
            index.add(sched.StoreTileOp(result, array, _starts(index, roles, starts), rows))
        constants.place(index, rewriter)
        _moved(rewriter, before, op)
        rewriter.erase(op)
