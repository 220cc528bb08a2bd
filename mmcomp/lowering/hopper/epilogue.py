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

from collections.abc import Sequence
from dataclasses import dataclass, field

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import Float8E4M3FNType, Float8E5M2Type, Float32Type
from xdsl.ir import Block, BlockArgument, Operation, SSAValue

from mmcomp.analysis.roles import iteration_space
from mmcomp.dialects import hopper, sched
from mmcomp.dialects.fusion import GROUPED_N, QUANTIZE_GROUP, QuantizeOp, QuantizeScaleOp, SplatOp
from mmcomp.errors import ScheduleError
from mmcomp.ir.narrowing import is_memref, is_tensor
from mmcomp.lowering.hopper.addressing import Access, Addressing
from mmcomp.lowering.hopper.context import Accumulator, ConsumerThreads, KernelContext
from mmcomp.lowering.hopper.epilogue_smem import SmemEpilogue
from mmcomp.lowering.hopper.mainloop import ConsumerMainloop
from mmcomp.lowering.hopper.plan import FP8_OUTPUTS, TmaOperand, dtype_of
from mmcomp.lowering.hopper.pointwise import Pointwise, Scalar
from mmcomp.lowering.hopper.quantize import Column, GroupScales
from mmcomp.lowering.hopper.ring import Ring
from mmcomp.lowering.hopper.values import Values

FP8_ELEMENTS = {"f8e4m3": Float8E4M3FNType(), "f8e5m2": Float8E5M2Type()}
"""The element type of each fp8 output's stored pairs."""


def even_extent(shape: Sequence[int]) -> bool:
    """Whether the last axis has a static, even extent: neighbouring columns then lie in
    one 8-byte (f32) or 4-byte (16-bit) aligned pair in every row. A runtime extent
    promises no parity, and an odd row length misaligns the pairs of every other row."""
    return bool(shape) and shape[-1] > 0 and shape[-1] % 2 == 0


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
    quantizing: GroupScales | None = None
    """The current epilogue's group scales and multipliers, where it quantizes."""
    column_stores: list[sched.StoreTileOp] = field(default_factory=list[sched.StoreTileOp])
    """The current epilogue's stores (whose addressing gives the column limit)."""

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
        self.quantizing = self.group_scales(block)
        self.column_stores = stores
        if self.quantizing is not None and any(
            isinstance(inner, QuantizeScaleOp) for inner in block.ops
        ):
            self.emit_by_groups(direct)
            if through_smem:
                SmemEpilogue(self).store(through_smem)
            return
        if self.subtile:
            self.emit_by_subtiles(direct, through_smem)
            return
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

    @property
    def subtile(self) -> int:
        """Columns of the fragment the epilogue computes at once (`epilogue_subtile`); 0:
        the whole tile, its operands loaded where first used."""
        return self.ctx.params.epilogue_subtile

    def emit_by_subtiles(
        self,
        direct: list[tuple[sched.StoreTileOp, SSAValue]],
        through_smem: list[tuple[sched.StoreTileOp, SSAValue]],
    ) -> None:
        """The stores of an epilogue walked subtile by subtile (`epilogue_subtile` columns
        of the fragment): the subtile's operand elements loaded together
        (`load_subtile`), then each output's elements of the subtile stored, from registers
        or box by box through shared memory, before the next subtile's loads. A thread
        then holds the accumulators and one subtile's operands."""
        instr_n = self.ctx.params.instr[1]
        staged = SmemEpilogue(self) if through_smem else None
        if staged is not None:
            staged.begin(through_smem)
        for first in range(0, self.ctx.params.wgmma_warpgroup[1], self.subtile):
            self.load_subtile(first)
            for column in range(first, first + self.subtile, 8):
                chunk, inside = divmod(column, instr_n)
                for row in range(len(self.rows)):
                    self.memo = {}
                    slots = [(chunk, inside // 8, row, e) for e in range(2)]
                    for store, value in direct:
                        scalars = [self.scalar(value, slots[e], column + e) for e in range(2)]
                        self.store_pair(store, scalars, row, column)
            if staged is not None:
                staged.store_columns(first, self.subtile)

    def load_subtile(self, first: int) -> None:
        """Load this thread's elements of every operand of the epilogue in the subtile from
        column `first` (each once a tile: a row operand's first subtile may be prefetched,
        a column operand is loaded in the first subtile)."""
        columns = self.thread_columns(first, self.subtile)
        for bound in self.bound.values():
            if not isinstance(bound, sched.LoadTileOp):
                continue
            roles = self.address.memref_roles(bound.source)
            if GROUPED_N in roles:
                continue
            for half in range(len(self.rows)) if "m" in roles else [0]:
                for col in columns:
                    self.load_scalar(bound, half, col)

    def group_scales(self, block: Block) -> GroupScales | None:
        """The quantizing state of an epilogue body with quantize ops (None without):
        groups of 128 columns, or the warpgroup's row where a scale is per row."""
        quantize = [op for op in block.ops if isinstance(op, QuantizeOp | QuantizeScaleOp)]
        if not quantize:
            return None
        if self.ctx.params.swap_ab:
            raise ScheduleError(
                f"{self.ctx.where}: {quantize[0].name} under swap_ab: a thread of the swapped "
                "fragment holds no row of the group; compile with swap_ab=False"
            )
        per_row = any(
            isinstance(op, QuantizeScaleOp) and op.granularity == "row" for op in quantize
        )
        wg_n = self.ctx.params.wgmma_warpgroup[1]
        span = wg_n if per_row else QUANTIZE_GROUP
        if wg_n % span and any(isinstance(op, QuantizeScaleOp) for op in quantize):
            raise ScheduleError(
                f"{self.ctx.where}: {quantize[0].name}: the warpgroup tile's n = {wg_n} must "
                f"hold whole groups of {span} columns"
            )
        return GroupScales(self.ctx, self.math, span, iteration_space(self.ctx.func)["n"])

    def emit_by_groups(self, direct: list[tuple[sched.StoreTileOp, SSAValue]]) -> None:
        """The stores of a quantizing epilogue, group by group of each row slot: a group's
        elements are computed once, for its amax and its stores; each stored scale once
        per row slot and group, by the lanes of column 0 (`store_group`)."""
        groups = self.quantizing
        assert groups is not None
        by_column = [(store, value) for store, value in direct if self.has_columns(store)]
        per_group = [(store, value) for store, value in direct if not self.has_columns(store)]
        for row in range(len(self.rows)):
            for group in range(groups.groups):
                self.memo = {}
                columns = groups.columns(group)
                for first, second in zip(columns[::2], columns[1::2], strict=True):
                    cols = [groups.column(first), groups.column(second)]
                    slots = [(c[0], c[1], row, c[2]) for c in (first, second)]
                    for store, value in by_column:
                        scalars = [self.scalar(value, slots[e], cols[e]) for e in range(2)]
                        self.store_pair(store, scalars, row, cols[0])
                chunk, block8, _ = columns[0]
                col = groups.column(columns[0])
                for store, value in per_group:
                    scalar = self.scalar(value, (chunk, block8, row, 0), col)
                    self.store_group(store, scalar, row, group)

    def has_columns(self, store: sched.StoreTileOp) -> bool:
        """Whether a stored output has an n axis (its elements are stored by column)."""
        return "n" in self.address.memref_roles(store.dest)

    def store_group(self, store: sched.StoreTileOp, value: Scalar, half: int, group: int) -> None:
        """Store a value of a row slot's group (a scale) once, from the lanes of column 0:
        at the group's element of an n128 axis (the array's last: `group` elements on from
        the tile's first, clipped at its extent), or of an output without one (group 0)."""
        roles = self.address.memref_roles(store.dest)
        if GROUPED_N not in roles and group:
            return
        access = self.address.access(store.dest, list(store.indices), True, store.rows)
        base, offset, pred = self.group_element(store.dest, store.indices, access, half, group)
        data = value.value
        if access.dtype != "f32":
            data = self.math.truncated(value.value, access.dtype)
        self.ctx.put(hopper.GlobalStoreOp(base, [data], offset), pred)

    def group_element(
        self,
        memref: SSAValue,
        indices: Sequence[SSAValue],
        access: Access,
        half: int,
        group: int,
    ) -> tuple[SSAValue, int, SSAValue | None]:
        """(address, byte offset, predicate) of a row slot's element of group `group` of
        an f32 array whose last axis is n128 (or has no n axis: group 0): `group` elements
        past the tile's first, clipped at the axis's extent."""
        base, offset, pred = self.address.element(access, half, 0)
        if not group:
            return base, offset, pred
        roles = self.address.memref_roles(memref)
        memref_type = memref.type
        assert is_memref(memref_type)
        if roles[-1] != GROUPED_N or access.dtype != "f32":
            raise ScheduleError(
                f"{self.ctx.where}: a group scale must be f32 with its n128 axis last, found "
                f"{memref_type} of roles [{', '.join(roles)}]"
            )
        values = Values(self.ctx)
        first = self.ctx.index(indices[-1])
        left = values.signed(values.sub(values.const(memref_type.get_shape()[-1]), first))
        inside = values.greater(left, group)
        pred = inside if pred is None else values.both(pred, inside)
        return base, offset + group * 4, pred

    def column_limit(self) -> SSAValue:
        """The columns left from this thread's col0 to the last of the quantized values
        (N - n0 - col0, a signed i32), from a stored output's addressing: one with an n
        axis, or a group scale's n128 axis (n0 = 128 times its start)."""
        values = Values(self.ctx)
        n = iteration_space(self.ctx.func)["n"]
        for store in self.column_stores:
            roles = self.address.memref_roles(store.dest)
            if "n" in roles:
                access = self.address.access(store.dest, list(store.indices), True, store.rows)
                assert access.col_limit is not None
                return access.col_limit
            if GROUPED_N in roles:
                first = self.ctx.index(store.indices[roles.index(GROUPED_N)])
                n0 = values.mul(first, values.const(QUANTIZE_GROUP))
                left = values.sub(values.sub(values.const(n), n0), self.threads.col0)
                return values.signed(left)
        # A row scale that is not stored with its values: the tile holds the whole row.
        return values.signed(values.sub(values.const(n), self.threads.col0))

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
        if isinstance(op, QuantizeScaleOp):
            return Scalar(self.group_scale(op, slot, col), "f32")
        if isinstance(op, QuantizeOp):
            groups = self.quantizing
            assert groups is not None
            value = self.math.rounded(self.scalar(op.input, slot, col))
            scale = self.math.rounded(self.scalar(op.scale, slot, col))
            result_type = op.result.type
            assert is_tensor(result_type)
            return Scalar(groups.quantized(value, scale), dtype_of(result_type.element_type))
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

    def group_scale(
        self, op: QuantizeScaleOp, slot: tuple[int, int, int, int], col: int
    ) -> SSAValue:
        """The scale of the group of an element (its row slot's, its column's group)."""
        groups = self.quantizing
        assert groups is not None
        half = slot[2]

        def element(column: Column) -> SSAValue:
            chunk, block8, e = column
            at = (chunk, block8, half, e)
            return self.math.rounded(self.scalar(op.input, at, groups.column(column)))

        return groups.scale(op, half, groups.group_of(col), element, self.column_limit)

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

        group = col // QUANTIZE_GROUP if GROUPED_N in roles else None

        def key(column: int) -> tuple[object, ...]:
            return (load, half if "m" in roles else None, column if "n" in roles else None, group)

        found = self.load_memo.get(key(col))
        if found is not None:
            return Scalar(found, access.dtype, exact=True)
        if group is not None:
            # A given group scale [..., M, ceil(N / 128)]: one element per row and group.
            base, offset, pred = self.group_element(load.source, load.indices, access, half, group)
            loaded = self.ctx.put(hopper.GlobalLoadOp(base, Float32Type(), 1, offset), pred)
            self.load_memo[key(col)] = loaded.values[0]
            return Scalar(loaded.values[0], access.dtype, exact=True)
        memref_type = load.source.type
        assert is_memref(memref_type)
        shape = memref_type.get_shape()
        paired = (
            bool(roles)
            and roles[-1] == "n"
            and even_extent(shape)
            and access.col_stride == (4 if access.dtype == "f32" else 2)
        )
        first = col - col % 2 if paired else col
        base, offset, pred = self.address.element(access, half, first)
        element = Float32Type() if access.dtype == "f32" else self.math.sixteen_bit(access.dtype)
        filled = bool(self.subtile) and pred is not None
        vector = hopper.GlobalLoadOp(base, element, 2 if paired else 1, offset, filled)
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
        With an epilogue subtile, the columns of the first subtile only (the others load
        with their subtile).
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
            for col in self.thread_columns(0, self.subtile or None):
                self.load_scalar(op, 0, col)

    def thread_columns(self, first: int = 0, width: int | None = None) -> list[int]:
        """The columns of the warpgroup tile this thread holds (col0 added at run time), of
        `width` columns from `first` (all of them by default)."""
        end = self.ctx.params.wgmma_warpgroup[1] if width is None else first + width
        return [block8 + e for block8 in range(first, end, 8) for e in range(2)]

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
        if roles and roles[-1] == "n" and even_extent(shape):
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
