"""The shared-memory epilogue (epilogue "smem"): swizzled boxes stored by TMA or by rows.

Each output that TMA can store (`OperandPlan.plan_stores`) is written box by box: 64 rows
x 128 bytes with the 128-byte swizzle, into one of two buffers per consumer warpgroup
after the ring. A box's values are computed first (epilogue math and operand loads, before
any barrier); 16-bit outputs are then written with `stmatrix.m8n8.x4`, f32 outputs with
`hopper.smem_store` (`st.shared.v2.f32`; 16-byte chunk c of box row r at chunk
c ^ (r % 8)); `fence.proxy.async`; the storing thread waits until the previous box's TMA
store has read its buffer; one barrier of the warpgroup; the storing thread issues the TMA
store and commits.

An output whose stores are clipped at a group's end (`OperandPlan.row_stores`), which a
TMA store cannot clip, is staged in the same boxes and stored by the warpgroup's 128
threads after the barrier: thread t reads 16-byte chunk t % 8 of box rows t / 8 + 16 i
(i < 4; `hopper.smem_load`, one `ld.shared.v4`, the same swizzled chunk in each) and
stores it with one `st.global.v4` under its row's test (below the group's end and the
array's rows) and its column's: a warp writes four whole 128-byte row segments per
store. The barrier that ends the next box orders these reads before the box after it
rewrites the buffer; the barrier that starts the tile, before the previous tile's."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from xdsl.ir import BlockArgument, SSAValue

from mmcomp.arch import limits as hw
from mmcomp.dialects import hopper, ptx, sched
from mmcomp.lowering.hopper.addressing import Addressing
from mmcomp.lowering.hopper.context import ConsumerThreads, KernelContext
from mmcomp.lowering.hopper.mainloop import ConsumerMainloop
from mmcomp.lowering.hopper.plan import ELEMENT_SIZE, EPILOGUE_ROW_BYTES, TmaOperand
from mmcomp.lowering.hopper.pointwise import Scalar
from mmcomp.lowering.hopper.ring import Ring
from mmcomp.lowering.hopper.values import Values

CHUNK_BYTES = 16
"""Bytes of one row store: a 16-byte chunk of a box row (`st.global.v4`)."""
ROW_STEPS = (0, 16, 32, 48)
"""The box rows of a thread's row stores past its first (t / 8): the warpgroup's 128
threads cover 16 rows of 8 chunks at a time, four times over the box's 64 rows."""


@dataclass(frozen=True)
class RowCopy:
    """A thread's part of the row stores of a staged box."""

    offset: SSAValue
    """Bytes from a box's start to this thread's chunk of its first row (swizzled: chunk
    t % 8 of row t / 8 at chunk (t % 8) ^ (row % 8)); rows 16 i below it keep the chunk."""
    addressing: Addressing
    """The output addressing of this thread's rows (per m block, each of ROW_STEPS) and
    its chunk's first column."""


class Epilogue(Protocol):
    """What the shared-memory epilogue reads of the tile's epilogue
    (mmcomp.lowering.hopper.epilogue.Epilogue, which makes it)."""

    ctx: KernelContext
    ring: Ring
    mode: ConsumerMainloop
    threads: ConsumerThreads
    memo: dict[tuple[object, ...], Scalar]
    """The values computed at the current element pair."""

    @property
    def address(self) -> Addressing:
        """The current tile's addressing."""
        ...

    def store_map(self, store: sched.StoreTileOp) -> TmaOperand | None:
        """The tensor map of a store's output when it goes through shared memory."""
        ...

    def scalar(self, value: SSAValue, slot: tuple[int, int, int, int], col: int) -> Scalar:
        """The f32 value of epilogue `value` at accumulator element `slot`."""
        ...

    def pair_value(self, values: list[Scalar], dtype: str) -> SSAValue:
        """Two neighbouring f32 values rounded into one pair of the 16-bit `dtype`."""
        ...


class SmemEpilogue:
    """Stores a tile's outputs through shared memory with TMA."""

    def __init__(self, values: Epilogue) -> None:
        self.values = values
        """The tile's epilogue: its element values and addressing."""
        self.ctx = values.ctx
        self.threads = values.threads
        self.ring = values.ring
        self.stores: list[tuple[sched.StoreTileOp, SSAValue]] = []
        """The staged outputs (store, value), from `begin`."""
        self.by_tma: list[TmaOperand | None] = []
        """Each staged output's tensor map, or None where it is stored by rows."""
        self.leader: SSAValue | None = None
        """Whether this thread is its warpgroup's first (it issues the TMA stores)."""
        self.first: SSAValue | None = None
        """Whether this thread is in consumer warpgroup 0 (its barrier's)."""
        self.second: SSAValue | None = None
        """Whether this thread is in the other consumer warpgroup."""
        self.buffers: SSAValue | None = None
        """This warpgroup's buffers."""
        self.count = 0
        """Boxes written so far in this tile (their buffers alternate)."""
        self.lanes: dict[bool, tuple[SSAValue, SSAValue]] = {}
        """This thread's place (`box_lane`) in an f32 box (True) and a 16-bit one (False)."""
        self.copies: dict[bool, RowCopy] = {}
        """This thread's part of the row stores of an f32 box (True) and a 16-bit one."""

    def store(self, stores: list[tuple[sched.StoreTileOp, SSAValue]]) -> None:
        """Epilogue "smem": each warpgroup writes its tile box by box (64 rows x 128 bytes,
        128-byte swizzle) to a shared buffer, and one thread stores each box with TMA
        (clipped at the output's bounds).

        16-bit outputs are written with stmatrix, f32 outputs with st.shared.v2. A box's
        values are computed before the warpgroup's barrier, which then only orders the
        shared-memory writes. Two buffers per warpgroup alternate: before the barrier that
        ends box i, the storing thread waits until the TMA store of box i - 1 has read its
        buffer, which box i + 1 rewrites.
        """
        self.begin(stores)
        for index in range(len(stores)):
            for m_block in range(self.ctx.m_blocks):
                for column in range(0, self.ctx.params.warpgroup[1], self.box_columns(index)):
                    self.store_box(index, m_block, column)

    def store_columns(self, first: int, width: int) -> None:
        """The boxes of every output in `width` columns of the tile from `first` (an
        epilogue subtile, whole boxes: `ScheduleParams.check`), after `begin`."""
        for index in range(len(self.stores)):
            for m_block in range(self.ctx.m_blocks):
                for column in range(first, first + width, self.box_columns(index)):
                    self.store_box(index, m_block, column)

    def begin(self, stores: list[tuple[sched.StoreTileOp, SSAValue]]) -> None:
        """Start a tile's staged stores of `stores` (output, value): the warpgroup's
        buffers, and a barrier after the previous tile's TMA stores have read them."""
        values = Values(self.ctx)
        consumer = self.threads.consumer
        self.stores = stores
        self.leader = values.cmp("eq", self.threads.thread_in_warpgroup, values.const(0))
        self.first = values.cmp("eq", consumer, values.const(0))
        self.second = values.cmp("ne", consumer, values.const(0))
        self.buffers = self.warpgroup_buffers(values.of(consumer))
        self.by_tma = [self.ctx.plan.store_maps.get(self.output_of(store)) for store, _ in stores]
        if any(self.by_tma):
            # The previous tile's last TMA stores may still read the buffers.
            self.ctx.put(ptx.BulkWaitOp(0, read=True), self.leader)
        self.sync()
        self.count = 0
        self.lanes = {}
        self.copies = {}

    def sync(self) -> None:
        """Barrier of this warpgroup's threads."""
        family = self.ctx.barriers.epilogue
        self.ctx.put(ptx.BarOp("sync", family.of(0), family.threads), self.first)
        self.ctx.put(ptx.BarOp("sync", family.of(1), family.threads), self.second)

    def box_columns(self, index: int) -> int:
        """Columns of one box of output `index`."""
        operand = self.values.store_map(self.stores[index][0])
        assert operand is not None
        return operand.box[-1]

    def store_box(self, index: int, m_block: int, column: int) -> None:
        """The box of output `index` at m block `m_block` and `column`: its values written to
        the next buffer, then stored by TMA or by rows."""
        k = self.ctx.k
        store, value = self.stores[index]
        tma = self.by_tma[index]
        operand = self.values.store_map(store)
        assert operand is not None
        wide = operand.dtype == "f32"
        if wide not in self.lanes:
            self.lanes[wide] = self.box_lane(operand.dtype)
        row, chunk = self.lanes[wide]
        if tma is None and wide not in self.copies:
            self.copies[wide] = self.row_copy(operand.dtype)
        slot = self.count % hw.EPILOGUE_BUFFERS
        assert self.buffers is not None, "begin() comes first"
        buffer = self.buffer(self.buffers, slot)
        packed = self.box_values(value, operand.dtype, m_block, column)
        if operand.dtype == "f32":
            self.write_f32_box(self.lane_row(buffer, row), chunk, packed)
        else:
            self.write_16bit_box(self.lane_row(buffer, row), chunk, packed)
        self.count += 1
        if tma is None:
            if any(self.by_tma):
                # A TMA store of another output may still read the buffer that the next
                # box rewrites.
                self.ctx.put(ptx.BulkWaitOp(0, read=True), self.leader)
            self.sync()
            self.store_rows(self.copies[wide], store, buffer, m_block, column)
            return
        k.append(ptx.FenceOp("proxy_async"))
        self.ctx.put(ptx.BulkWaitOp(0, read=True), self.leader)
        self.sync()
        coords = self.store_coordinates(store, m_block, column)
        tmap = self.ctx.maps[self.ctx.plan.store_map_index(tma)]
        self.ctx.put(hopper.TmaStoreOp(tmap, buffer, coords), self.leader)
        self.ctx.put(ptx.BulkCommitOp(), self.leader)

    @staticmethod
    def output_of(store: sched.StoreTileOp) -> int:
        """The kernel argument a store writes."""
        dest = store.dest
        assert isinstance(dest, BlockArgument)
        return dest.index

    def row_copy(self, dtype: str) -> RowCopy:
        """This thread's part of the row stores of a `dtype` output: its chunk of the box
        rows t / 8 + 16 i (`RowCopy`), and their addressing in the output (the chunk's
        first column: 16 bytes of elements per chunk)."""
        v = Values(self.ctx)
        thread = self.threads.thread_in_warpgroup
        row = v.shr(thread, v.const(3))
        chunk = v.and_(thread, v.const(7))
        swizzled = v.xor(chunk, v.and_(row, v.const(7)))
        offset = v.add(v.mul(row, v.const(EPILOGUE_ROW_BYTES)), v.mul(swizzled, v.const(16)))
        rows: list[SSAValue] = []
        part_rows = self.ctx.params.warpgroup[0]
        for m_block in range(self.ctx.m_blocks):
            first = self.values.mode.part_offset(v.const(64 * m_block), part_rows)
            rows += [v.add(v.add(first, row), v.const(step)) for step in ROW_STEPS]
        columns = v.mul(chunk, v.const(CHUNK_BYTES // ELEMENT_SIZE[dtype]))
        return RowCopy(offset, Addressing(self.ctx, rows, columns))

    def store_rows(
        self,
        copy: RowCopy,
        store: sched.StoreTileOp,
        buffer: SSAValue,
        m_block: int,
        column0: int,
    ) -> None:
        """The row stores of one staged box (m block `m_block`, columns from `column0`):
        this thread's chunk of each of its rows read back (`hopper.smem_load`) and stored
        (`hopper.global_store`, 16 bytes) where its row is below the group's end and the
        array's rows and its columns inside the array."""
        k = self.ctx.k
        aligned = hopper.SmemType(CHUNK_BYTES)
        chunk = k.append(hopper.SmemAddOp(buffer, copy.offset, aligned)).result
        access = copy.addressing.access(store.dest, list(store.indices), True, store.rows)
        for step, rows in enumerate(ROW_STEPS):
            words = k.append(hopper.SmemLoadOp(chunk, 4, rows * EPILOGUE_ROW_BYTES)).values
            slot = len(ROW_STEPS) * m_block + step
            base, offset, pred = copy.addressing.element(access, slot, column0)
            self.ctx.put(hopper.GlobalStoreOp(base, list(words), offset), pred)

    def warpgroup_buffers(self, consumer: SSAValue) -> SSAValue:
        """The buffers of consumer warpgroup `consumer` (an index value), after the ring
        and its barriers: `hopper.smem_index` of the shared base, an `!hopper.smem` aligned
        to a box's swizzle pattern (which its verifier checks)."""
        plan = self.ctx.plan
        stride = hw.EPILOGUE_BUFFERS * plan.buffer_bytes()
        aligned = hopper.SmemType(hopper.SLOT_ALIGN)
        op = hopper.SmemIndexOp(self.ring.smem, plan.epilogue_offset(), consumer, stride, aligned)
        return self.ctx.k.append(op).result

    def buffer(self, buffers: SSAValue, slot: int) -> SSAValue:
        """Buffer `slot` of a warpgroup's `buffers` (`hopper.smem_offset`, aligned like
        them)."""
        aligned = hopper.SmemType(hopper.SLOT_ALIGN)
        offset = hopper.SmemOffsetOp(buffers, slot * self.ctx.plan.buffer_bytes(), aligned)
        return self.ctx.k.append(offset).result

    def lane_row(self, buffer: SSAValue, row: SSAValue) -> SSAValue:
        """This lane's row of a 16-bit box in `buffer`, `row` bytes past it (`box_lane`):
        `hopper.smem_add`, aligned to a box row's bytes (`row` is a multiple of them)."""
        aligned = hopper.SmemType(min(EPILOGUE_ROW_BYTES, hopper.SLOT_ALIGN))
        return self.ctx.k.append(hopper.SmemAddOp(buffer, row, aligned)).result

    def box_lane(self, dtype: str) -> tuple[SSAValue, SSAValue]:
        """This thread's (row byte offset, 16-byte chunk xor) in a box of `dtype`, index
        values.

        16-bit outputs: an stmatrix x4 row address, lane l giving row l % 8 of matrix l / 8
        (matrices 0/1: rows 0-7/8-15 of an even 8-column block, 2/3: of the odd one). f32:
        the thread's accumulator row (16 w + l / 4) and its column pair's chunk (columns
        2 (l % 4) are chunk (l % 4) / 2 of the block's two). The 128-byte swizzle stores
        chunk c of row r at chunk c ^ (r % 8).
        """
        v = Values(self.ctx)
        lane = self.threads.lane
        warp_rows = v.mul(self.threads.warp, v.const(16))
        if dtype == "f32":
            quad = v.shr(lane, v.const(2))
            pair = v.shr(v.and_(lane, v.const(3)), v.const(1))
            row, chunk = v.add(warp_rows, quad), v.xor(pair, quad)
        else:
            matrix = v.shr(lane, v.const(3))
            row8 = v.and_(lane, v.const(7))
            half8 = v.mul(v.and_(matrix, v.const(1)), v.const(8))
            row = v.add(v.add(warp_rows, half8), row8)
            chunk = v.xor(v.shr(matrix, v.const(1)), row8)
        return v.mul(row, v.const(EPILOGUE_ROW_BYTES)), chunk

    def box_values(
        self, value: SSAValue, dtype: str, m_block: int, column0: int
    ) -> list[list[SSAValue]]:
        """This thread's values of one box, per 8-column block: f32 values (row half, then
        e) for an f32 output, which `hopper.smem_store` takes; rounded pairs (one per row
        half, `hopper.truncf_pair`, which stmatrix takes) otherwise."""
        instr_n = self.ctx.params.instr[1]
        columns = EPILOGUE_ROW_BYTES // (4 if dtype == "f32" else 2)
        blocks: list[list[SSAValue]] = []
        for column in range(column0, column0 + columns, 8):
            chunk, block8 = divmod(column, instr_n)
            block8 //= 8
            regs: list[SSAValue] = []
            for half in range(2):
                self.values.memo = {}
                slot = (chunk, block8, 2 * m_block + half)
                scalars = [self.values.scalar(value, (*slot, e), column + e) for e in range(2)]
                if dtype == "f32":
                    regs += [scalar.value for scalar in scalars]
                else:
                    regs.append(self.values.pair_value(scalars, dtype))
            blocks.append(regs)
        return blocks

    def write_16bit_box(
        self, base: SSAValue, chunk: SSAValue, blocks: list[list[SSAValue]]
    ) -> None:
        """stmatrix x4 per pair of 8-column blocks: this warp's 16 rows of the box (`base`:
        this lane's row of the buffer, `lane_row`; `chunk`: its chunk xor, from `box_lane`).
        The row address is the swizzled chunk's 16 bytes past the row (`hopper.smem_index`,
        aligned to a matrix row's 16 bytes)."""
        k = self.ctx.k
        v = Values(self.ctx)
        for pair in range(len(blocks) // 2):
            at = v.xor(chunk, v.const(2 * pair))
            address = k.append(hopper.SmemIndexOp(base, 0, at, hopper.STMATRIX_ROW_ALIGN))
            values = [*blocks[2 * pair], *blocks[2 * pair + 1]]
            k.append(hopper.StmatrixOp(address.result, values))

    def write_f32_box(self, base: SSAValue, chunk: SSAValue, blocks: list[list[SSAValue]]) -> None:
        """`hopper.smem_store` (st.shared.v2.f32) of each column pair, in the swizzled rows
        of the box (`base`, `chunk` as for write_16bit_box): the pair's 8 bytes in its
        16-byte chunk (`hopper.smem_add`), the chunk's (`hopper.smem_index`); row half 1
        is 8 rows below."""
        k = self.ctx.k
        v = Values(self.ctx)
        pair_bytes = 8
        aligned = hopper.SmemType(pair_bytes)
        column = v.mul(v.and_(self.threads.lane, v.const(1)), v.const(pair_bytes))
        base = k.append(hopper.SmemAddOp(base, column, aligned)).result
        for block, regs in enumerate(blocks):
            at = v.xor(chunk, v.const(2 * block))
            address = k.append(hopper.SmemIndexOp(base, 0, at, 16, aligned)).result
            for half in range(2):
                pair = regs[2 * half : 2 * half + 2]
                k.append(hopper.SmemStoreOp(address, pair, 8 * EPILOGUE_ROW_BYTES * half))

    def store_coordinates(
        self, store: sched.StoreTileOp, m_block: int, column0: int
    ) -> list[SSAValue]:
        """TMA coordinates (innermost first, index values) of the box of this warpgroup's
        tile at m block `m_block` and column `column0`."""
        v = Values(self.ctx)
        roles = self.values.address.memref_roles(store.dest)
        rows = self.values.mode.part_offset(v.const(64 * m_block), self.ctx.params.warpgroup[0])
        coords: list[SSAValue] = []
        ctx = self.ctx
        for index, role in zip(store.indices, roles, strict=True):
            position = ctx.index(index)
            if role == "m":
                position = ctx.index_add(position, v.of(rows))
            elif role == "n" and column0:
                position = ctx.index_add(position, ctx.index_constant(column0))
            coords.append(position)
        return list(reversed(coords))
