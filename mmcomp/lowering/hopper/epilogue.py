"""The epilogue in registers: `sched.epilogue` on the wgmma accumulator layout.

The epilogue's fusion ops are evaluated element by element on this thread's accumulator
elements (`mmcomp.lowering.hopper.pointwise`); an operand tile is read at the element's
coordinates through its roles, so a bias [n], a [1, n] row or an [m, n] operand all work,
neighbouring columns by one vector load. Each `sched.store_tile` is a predicated,
vectorized `st.global` clipped at the output's bounds (epilogue "registers"); the outputs
that TMA can store, and those clipped at a group's end in the same boxes, go through
shared memory (`mmcomp.lowering.hopper.epilogue_smem`).
Epilogue operands without an m axis are loaded before the last wgmma group completes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import Float8E4M3FNType, Float8E5M2Type, Float32Type
from xdsl.ir import BlockArgument, Operation, SSAValue

from mmcomp.dialects import hopper, sched
from mmcomp.dialects.fusion import SplatOp
from mmcomp.errors import ScheduleError
from mmcomp.ir.narrowing import is_memref, is_tensor
from mmcomp.lowering.hopper.addressing import Addressing
from mmcomp.lowering.hopper.context import Accumulator, ConsumerThreads, KernelContext
from mmcomp.lowering.hopper.epilogue_smem import SmemEpilogue
from mmcomp.lowering.hopper.mainloop import ConsumerMainloop
from mmcomp.lowering.hopper.plan import FP8_OUTPUTS, TmaOperand, dtype_of
from mmcomp.lowering.hopper.pointwise import Pointwise, Scalar
from mmcomp.lowering.hopper.ring import Ring
from mmcomp.lowering.hopper.values import Values

FP8_ELEMENTS = {"f8e4m3": Float8E4M3FNType(), "f8e5m2": Float8E5M2Type()}
"""The element type of each fp8 output's stored pairs."""


@dataclass
class Epilogue:
    """The consumers' epilogue state for the current tile."""

    ctx: KernelContext
    ring: Ring
    mode: ConsumerMainloop
    """The warp-specialization mode: which part of a tile this consumer holds."""
    threads: ConsumerThreads
    math: Pointwise
    epilogue_loads: dict[SSAValue, sched.LoadTileOp] = field(
        default_factory=dict[SSAValue, sched.LoadTileOp]
    )
    """The tile loads after the mainloop (epilogue operands), by result."""
    pending: sched.EpilogueOp | None = None
    """The sched.epilogue whose stores are being collected."""
    stores: list[sched.StoreTileOp] = field(default_factory=list[sched.StoreTileOp])
    """The stores of the pending epilogue seen so far."""
    bound: dict[SSAValue, Accumulator | sched.LoadTileOp] = field(
        default_factory=dict[SSAValue, Accumulator | sched.LoadTileOp]
    )
    """What each block argument of the epilogue's body stands for."""
    memo: dict[tuple[object, ...], Scalar] = field(default_factory=dict[tuple[object, ...], Scalar])
    """The values computed at the current element pair."""
    load_memo: dict[tuple[object, ...], SSAValue] = field(
        default_factory=dict[tuple[object, ...], SSAValue]
    )
    """The operand elements loaded in this tile."""
    rows: list[SSAValue] = field(default_factory=list[SSAValue])
    """This thread's rows in the tile, per row slot."""
    epilogue_begun: bool = False
    """The current tile's epilogue state is set up (operands may be prefetched)."""
    addressing: Addressing | None = None
    """The current tile's addressing."""

    @property
    def address(self) -> Addressing:
        """The current tile's addressing (made by `begin_epilogue`)."""
        assert self.addressing is not None
        return self.addressing

    def collect(self, op: Operation) -> bool:
        """Take an epilogue op of the consumers (loads, epilogue, stores); emit the
        epilogue at its last store. False for any other op."""
        if isinstance(op, sched.LoadTileOp):
            self.epilogue_loads[op.result] = op
            return True
        if isinstance(op, sched.EpilogueOp):
            self.pending = op
            return True
        if not isinstance(op, sched.StoreTileOp):
            return False
        self.stores.append(op)
        if self.pending is not None and len(self.stores) == len(self.pending.outputs):
            self.emit_epilogue()
        return True

    def emit_epilogue(self) -> None:
        """The pending sched.epilogue and its stores, on this thread's elements."""
        op = self.pending
        assert op is not None
        stores = self.stores
        self.pending = None
        self.stores = []
        block = op.body.block
        yielded = block.last_op
        assert isinstance(yielded, sched.YieldOp)
        instr_n = self.ctx.params.instr[1]
        chunks = self.ctx.params.wgmma_warpgroup[1] // instr_n
        # Bind block arguments to accumulators or operand tiles.
        self.bound = {}
        for arg, value in zip(block.args, op.inputs, strict=True):
            if value in self.ctx.accumulators:
                self.bound[arg] = self.ctx.accumulators[value]
            elif value in self.epilogue_loads:
                self.bound[arg] = self.epilogue_loads[value]
            else:
                raise ScheduleError(
                    f"{self.ctx.where}: epilogue input {value} is neither an accumulator nor a "
                    "loaded tile"
                )
        store_of: list[tuple[sched.StoreTileOp, SSAValue]] = []
        outputs: list[SSAValue] = list(op.outputs)
        for store in stores:
            if store.value not in outputs:
                raise ScheduleError(f"{self.ctx.where}: a store_tile must store an epilogue output")
            store_of.append((store, yielded.operands[outputs.index(store.value)]))
        self.begin_epilogue()
        self.epilogue_begun = False
        through_smem = [
            (store, value) for store, value in store_of if self.store_map(store) is not None
        ]
        direct = [(store, value) for store, value in store_of if self.store_map(store) is None]
        for chunk in range(chunks):
            for block8 in range(instr_n // 8):
                for row in range(len(self.rows)):
                    self.memo = {}
                    cols = [chunk * instr_n + block8 * 8 + e for e in range(2)]
                    for store, value in direct:
                        scalars = [
                            self.scalar(value, (chunk, block8, row, e), cols[e]) for e in range(2)
                        ]
                        self.store_pair(store, scalars, row, cols[0])
        if through_smem:
            SmemEpilogue(self).store(through_smem)

    def begin_epilogue(self) -> None:
        """Fresh per-tile epilogue state: row registers, addressing, loaded elements."""
        if self.epilogue_begun:
            return
        self.epilogue_begun = True
        values = Values(self.ctx)
        # Row slot r of this thread: m block r // 2, upper or lower 8 rows (r % 2), index
        # values.
        self.rows = [
            values.add(self.threads.row0, values.const(64 * (r // 2) + 8 * (r % 2)))
            for r in range(2 * self.ctx.m_blocks)
        ]
        self.addressing = Addressing(
            self.ctx, self.rows, self.threads.col0, swapped=self.ctx.params.swap_ab
        )
        self.load_memo = {}

    def store_map(self, store: sched.StoreTileOp) -> TmaOperand | None:
        """The boxes of a store's output when it goes through shared memory: its tensor
        map, or a row-stored output's boxes (`OperandPlan.row_stores`)."""
        dest = store.dest
        if not isinstance(dest, BlockArgument):
            return None
        plan = self.ctx.plan
        return plan.store_maps.get(dest.index) or plan.row_stores.get(dest.index)

    def scalar(self, value: SSAValue, slot: tuple[int, int, int, int], col: int) -> Scalar:
        """The f32 value of epilogue `value` at accumulator element `slot`."""
        key = (value, slot)
        found = self.memo.get(key)
        if found is not None:
            return found
        result = self._scalar(value, slot, col)
        self.memo[key] = result
        return result

    def _scalar(self, value: SSAValue, slot: tuple[int, int, int, int], col: int) -> Scalar:
        """Compute the f32 value of `value` at an element (see `scalar`)."""
        chunk, block8, half, e = slot
        bound = self.bound.get(value)
        if isinstance(bound, Accumulator):
            index = (half // 2) * self.ctx.n_chunks + chunk
            return Scalar(bound.value(self.ctx.k, index, 4 * block8 + 2 * (half % 2) + e), "f32")
        if isinstance(bound, sched.LoadTileOp):
            return self.load_scalar(bound, half, col)
        op = value.owner
        assert isinstance(op, Operation)
        if isinstance(op, SplatOp):
            result_type = op.result.type
            assert is_tensor(result_type)
            return Scalar(self.math.const_f32(op.scalar), dtype_of(result_type.element_type))
        name = op.name
        ins = [self.scalar(operand, slot, col) for operand in op.operands]
        if name == "fusion.broadcast":
            return ins[0]
        if name == "fusion.cast":
            result_type = op.results[0].type
            assert is_tensor(result_type)
            dtype = dtype_of(result_type.element_type)
            widening = ins[0].exact and dtype in ("f32", ins[0].dtype)
            return Scalar(self.math.rounded(ins[0]), dtype, widening)
        values = [self.math.rounded(s) for s in ins]
        out = self.math.pointwise(op, values)
        return Scalar(out, "f32")

    def load_scalar(self, load: sched.LoadTileOp, half: int, col: int) -> Scalar:
        """An epilogue operand's element (row slot `half`, column `col`), loaded once.

        Where the operand's rows are contiguous along n and of even length, the element and
        its neighbour (columns 2j and 2j + 1, which the same thread holds) are loaded
        together by one vector load: a `hopper.global_load` of bf16 / f16 / f32 values
        (guarded by the bounds test, on the element's 64-bit address, an i64); a 16-bit
        element is widened by `arith.extf`.
        """
        k = self.ctx.k
        roles = self.address.memref_roles(load.source)
        access = self.address.access(load.source, list(load.indices))

        def key(column: int) -> tuple[object, ...]:
            return (load, half if "m" in roles else None, column if "n" in roles else None)

        found = self.load_memo.get(key(col))
        if found is not None:
            return Scalar(found, access.dtype, exact=True)
        memref_type = load.source.type
        assert is_memref(memref_type)
        shape = memref_type.get_shape()
        paired = (
            bool(roles)
            and roles[-1] == "n"
            and shape[-1] % 2 == 0
            and access.col_stride == (4 if access.dtype == "f32" else 2)
        )
        first = col - col % 2 if paired else col
        base, offset, pred = self.address.element(access, half, first)
        element = Float32Type() if access.dtype == "f32" else self.math.sixteen_bit(access.dtype)
        vector = hopper.GlobalLoadOp(base, element, 2 if paired else 1, offset)
        loaded = self.ctx.put(vector, pred)
        for column, value in zip((first, first + 1), loaded.values, strict=False):
            if access.dtype != "f32":
                value = k.append(arith.ExtFOp(value, Float32Type())).result
            self.load_memo[key(column)] = value
        return Scalar(self.load_memo[key(col)], access.dtype, exact=True)

    def prefetch_epilogue_operands(self, loop: scf.ForOp) -> None:
        """Load the epilogue operands without an m axis (a bias, a [1, n] row) before the
        last wgmma group completes, so that their latency hides behind it.

        These are the `sched.load_tile`s after the mainloop in its block whose indices
        are already in registers; [m, n] operands (too many registers) load where used.
        """
        block = loop.parent_block()
        if block is None:
            return
        self.begin_epilogue()
        after = False
        for op in block.ops:
            after |= op is loop
            if not after or not isinstance(op, sched.LoadTileOp):
                continue
            if "m" in self.address.memref_roles(op.source):
                continue
            if any(index not in self.ctx.regs for index in op.indices):
                continue
            for col in self.thread_columns():
                self.load_scalar(op, 0, col)

    def thread_columns(self) -> list[int]:
        """The columns of the warpgroup tile this thread holds (col0 added at run time)."""
        instr_n = self.ctx.params.instr[1]
        return [
            chunk * instr_n + block8 * 8 + e
            for chunk in range(self.ctx.params.wgmma_warpgroup[1] // instr_n)
            for block8 in range(instr_n // 8)
            for e in range(2)
        ]

    def store_pair(
        self, store: sched.StoreTileOp, values: list[Scalar], half: int, col: int
    ) -> None:
        """Store two neighbouring elements of an output (clipped): a `hopper.global_store`
        of the f32 values, or of the pair rounded to the output's 16-bit dtype
        (`hopper.truncf_pair`), one element each where the pair is not contiguous."""
        ctx = self.ctx
        roles = self.address.memref_roles(store.dest)
        memref_type = store.dest.type
        assert is_memref(memref_type)
        shape = list(memref_type.get_shape())
        access = self.address.access(store.dest, list(store.indices), True, store.rows)
        dtype = access.dtype
        if roles and roles[-1] == "n" and shape[-1] % 2 == 0:
            base, offset, pred = self.address.element(access, half, col)
            data = [v.value for v in values]
            if dtype != "f32":
                data = [self.pair_value(values, dtype)]
            ctx.put(hopper.GlobalStoreOp(base, data, offset), pred)
            return
        if dtype in FP8_OUTPUTS:
            raise ScheduleError(
                f"{ctx.where}: an fp8 output is stored in pairs of neighbouring columns; "
                f"this one (roles [{', '.join(roles)}], shape {shape}) has none (an odd last "
                "extent, or swap_ab)"
            )
        for e, value in enumerate(values):
            base, offset, pred = self.address.element(access, half, col + e)
            element = value.value
            if dtype != "f32":
                element = self.math.truncated(value.value, dtype)
            ctx.put(hopper.GlobalStoreOp(base, [element], offset), pred)

    def pair_value(self, values: list[Scalar], dtype: str) -> SSAValue:
        """Two neighbouring f32 values rounded into one pair of the 16-bit `dtype`
        (`hopper.truncf_pair`: a vector<2xbf16> / vector<2xf16> value), or of fp8 with
        saturation (vector<2xf8E4M3FN> / vector<2xf8E5M2>)."""
        element = FP8_ELEMENTS[dtype] if dtype in FP8_ELEMENTS else self.math.sixteen_bit(dtype)
        pair = hopper.TruncfPairOp(values[0].value, values[1].value, element)
        return self.ctx.k.append(pair).result
