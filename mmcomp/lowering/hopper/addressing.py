"""Global element addresses of the epilogue at the accumulator layout (64-bit where wide).

Every pointer is 64-bit; what can wrap is an element offset. An array of at most 2^32
elements keeps the 32-bit element offset (`mad.lo.u32` per axis, one `mul.wide` to
bytes): every in-bounds offset is below 2^32, and the offsets of clipped elements are never
dereferenced. A larger one sums its byte offset in 64 bits: one `mad.wide.u32` per axis (a
64-bit multiply for strides of 2^32 bytes or more).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from xdsl.dialects import arith
from xdsl.ir import BlockArgument, SSAValue

from mmcomp.dialects import ptx
from mmcomp.ir.narrowing import is_memref
from mmcomp.lowering.hopper.context import KernelContext
from mmcomp.lowering.hopper.plan import ELEMENT_SIZE, arg_roles, dtype_of
from mmcomp.lowering.hopper.values import Values

WIDE_OFFSETS = 1 << 32
"""Arrays of more elements than this get 64-bit element offsets (32-bit ones would wrap)."""


def fragment_roles(roles: Sequence[str]) -> tuple[str, ...]:
    """A memref's roles with m and n exchanged: how the transposed accumulator of swap_ab
    (rows along the tile's N, columns along M) addresses it."""
    swap = {"m": "n", "n": "m"}
    return tuple(swap.get(role, role) for role in roles)


@dataclass
class Access:
    """How one thread addresses a memref's elements in the current tile's epilogue."""

    bases: list[SSAValue]
    """64-bit address of the element at (row0 + 8 h, col0), per half h (one if no m axis):
    an i64 of the address arithmetic, or a u64 register (the array's own address, a sum
    with a runtime stride)."""
    row_ok: list[SSAValue | None]
    """Per half: the row lies inside the memref, an i1 comparison (None without an m
    axis)."""
    col_limit: SSAValue | None
    """Columns left from col0 to the memref's n extent, a signed i32 (`Values.signed`; None
    without an n axis)."""
    col_stride: int
    """Bytes between neighbouring columns."""
    dtype: str
    """Element type."""


@dataclass
class Addressing:
    """One tile's addressing of the memrefs its epilogue reads and writes."""

    ctx: KernelContext
    rows: list[SSAValue]
    """This thread's rows in the tile, per row slot (m block r // 2, upper or lower 8)."""
    col0: SSAValue
    """This thread's first column in an 8-column block."""
    swapped: bool = False
    """The accumulator holds the tile's C^T (swap_ab): its rows run along the tile's N and
    its columns along M, so each memref's m and n axes are addressed the other way round
    (`fragment_roles`)."""
    accesses: dict[tuple[SSAValue, ...], Access] = field(
        default_factory=dict[tuple[SSAValue, ...], Access]
    )
    col_ok: dict[tuple[int, int], SSAValue] = field(default_factory=dict[tuple[int, int], SSAValue])
    row_limits: dict[tuple[SSAValue, SSAValue], SSAValue] = field(
        default_factory=dict[tuple[SSAValue, SSAValue], SSAValue]
    )

    def memref_roles(self, memref: SSAValue) -> tuple[str, ...]:
        """The roles of a kernel argument's axes as the accumulator fragment sees them:
        "m" along its rows, "n" along its columns (`fragment_roles`)."""
        assert isinstance(memref, BlockArgument)
        roles = arg_roles(self.ctx.func, memref.index)
        return fragment_roles(roles) if self.swapped else roles

    def access(
        self,
        memref: SSAValue,
        indices: Sequence[SSAValue],
        store: bool = False,
        row_bound: SSAValue | None = None,
    ) -> Access:
        """Per-tile addressing of a memref's elements at this thread's accumulator layout.

        Element offsets are 32-bit where the memref has at most 2^32 elements (every
        in-bounds offset then fits; the others are never dereferenced), else 64-bit: one
        mad.wide per axis (a 64-bit multiply for strides of 2^32 bytes or more). An output
        without an m (n) axis is written from the tile's first row (column) only: the
        iteration space then has M = 1 (N = 1), or every row holds the same value.
        `row_bound` (a kernel index value: a grouped tile's group end) clips the rows
        below it as well as below the array's extent.
        """
        key = (memref, *indices, *([] if row_bound is None else [row_bound]))
        found = self.accesses.get(key)
        if found is not None:
            return found
        values = Values(self.ctx)
        memref_type = memref.type
        assert is_memref(memref_type)
        roles = self.memref_roles(memref)
        shape = list(memref_type.get_shape())
        # A runtime extent is named by the axis's own role (m), whatever the fragment's.
        assert isinstance(memref, BlockArgument)
        extent_roles = arg_roles(self.ctx.func, memref.index) if self.swapped else roles
        dims = [
            self.ctx.dimension(memref, axis, extent_roles[axis] if axis < len(extent_roles) else "")
            for axis in range(len(shape))
        ]
        dtype = dtype_of(memref_type.element_type)
        size = ELEMENT_SIZE[dtype]
        strides = [self.stride(dims[d + 1 :]) for d in range(len(dims))]
        # A runtime extent may make the array larger than 32-bit offsets reach.
        wide = ptx.DYNAMIC in shape or math.prod(shape) > WIDE_OFFSETS
        halves = len(self.rows) if "m" in roles or store else 1
        row_terms: list[list[tuple[SSAValue, int | SSAValue]]] = [[] for _ in range(halves)]
        row_ok: list[SSAValue | None] = [None] * halves
        if store and "m" not in roles:
            row_ok = [values.cmp("eq", self.rows[half], values.const(0)) for half in range(halves)]
        col_term: tuple[SSAValue, int | SSAValue] | None = None
        col_limit: SSAValue | None = None
        col_stride = 0
        if store and "n" not in roles:
            col_limit = values.signed(values.sub(values.const(1), self.col0))
        row_parts: list[SSAValue | None] = [None] * halves
        col_part: SSAValue | None = None
        for dim, (index, role) in enumerate(zip(indices, roles, strict=True)):
            position = self.ctx.index(index)
            if role == "n":
                stride = strides[dim]
                assert isinstance(stride, int), "the axes inside the column axis are static"
                position = values.add(position, self.col0)
                # Under swap_ab the columns run along M, whose extent may be a runtime one
                # and which a grouped tile's group end clips too.
                extent = dims[dim]
                if self.swapped and extent_roles[dim] == "m":
                    limit = self.row_limit(extent, row_bound)
                else:
                    limit = extent if isinstance(extent, SSAValue) else values.const(extent)
                col_limit = values.signed(values.sub(limit, position))
                col_stride = stride * size
                col_term = (values.reg(position), stride)
                if not wide:
                    col_part = values.mul(position, values.const(stride))
                continue
            for half in range(halves):
                at = values.add(position, self.rows[half]) if role == "m" else position
                if role == "m":
                    # The group end bounds the memref's own m axis (its N under swap_ab).
                    bound = row_bound if extent_roles[dim] == "m" else None
                    limit = self.row_limit(dims[dim], bound)
                    row_ok[half] = values.cmp("lo", at, limit)
                if wide:
                    row_terms[half].append((values.reg(at), strides[dim]))
                    continue
                stride = strides[dim]
                assert isinstance(stride, int), "narrow offsets have static strides"
                term = values.mul(at, values.const(stride)) if stride != 1 else at
                previous = row_parts[half]
                row_parts[half] = term if previous is None else values.add(previous, term)
        base = self.ctx.address(memref)
        bases: list[SSAValue] = []
        if wide:
            bases = self.wide_bases(base, row_terms, col_term, size)
        for linear in [] if wide else row_parts:
            if col_part is not None:
                linear = col_part if linear is None else values.add(linear, col_part)
            if linear is None:
                bases.append(base)
                continue
            bases.append(values.add_scaled(base, linear, size))
        found = Access(bases, row_ok, col_limit, col_stride, dtype)
        self.accesses[key] = found
        return found

    def row_limit(self, extent: int | SSAValue, row_bound: SSAValue | None) -> SSAValue:
        """The rows below which an access lies: the array's extent, or the lesser of it and
        `row_bound` (made once per tile and bound)."""
        values = Values(self.ctx)
        limit = extent if isinstance(extent, SSAValue) else values.const(extent)
        if row_bound is None:
            return limit
        key = (limit, row_bound)
        found = self.row_limits.get(key)
        if found is None:
            bound = self.ctx.index(row_bound)
            found = self.ctx.k.append(arith.MinUIOp(values.of(bound), values.of(limit))).result
            self.row_limits[key] = found
        return found

    def stride(self, inner: Sequence[int | SSAValue]) -> int | SSAValue:
        """The element stride over these inner extents: an integer where all are static,
        else a u64 register (the product of their runtime and static extents)."""
        k = self.ctx.k
        static = math.prod(extent for extent in inner if isinstance(extent, int))
        product: SSAValue | None = None
        for extent in inner:
            if isinstance(extent, int):
                continue
            if product is None:
                product = k.mul_wide(extent, k.const(static))
            else:
                product = k.mul(product, k.cvt(extent, ptx.U64))
        return static if product is None else product

    def wide_bases(
        self,
        base: SSAValue,
        row_terms: list[list[tuple[SSAValue, int | SSAValue]]],
        col_term: tuple[SSAValue, int | SSAValue] | None,
        size: int,
    ) -> list[SSAValue]:
        """Per row slot: `base` plus the byte offset of its terms, summed in 64 bits."""
        if col_term is not None:
            base = self.add_wide(base, col_term[0], col_term[1], size)
        bases: list[SSAValue] = []
        for terms in row_terms:
            address = base
            for at, stride in terms:
                address = self.add_wide(address, at, stride, size)
            bases.append(address)
        return bases

    def add_wide(
        self, address: SSAValue, index: SSAValue, stride: int | SSAValue, size: int
    ) -> SSAValue:
        """`address + index * stride * size` in 64 bits (`index` a 32-bit register, `stride`
        elements: an integer or a u64 register): an i64 of the address arithmetic, or a u64
        register where a product is a ptx one (a runtime stride, a stride of 2^32 bytes or
        more)."""
        k = self.ctx.k
        values = Values(self.ctx)
        if isinstance(stride, SSAValue):
            stride_bytes = k.mul(stride, k.const(size, ptx.U64))
            return k.add(values.address(address), k.mul(k.cvt(index, ptx.U64), stride_bytes))
        stride_bytes = stride * size
        if stride_bytes < 1 << 32:
            return values.mad_wide(index, stride_bytes, address)
        product = k.mul(k.cvt(index, ptx.U64), k.const(stride_bytes, ptx.U64))
        return k.add(values.address(address), product)

    def element(self, access: Access, half: int, col: int) -> tuple[SSAValue, int, SSAValue | None]:
        """(64-bit base address, an i64; byte offset; in-bounds predicate) of the element at
        (half, col): the predicate an i1 (the row test, the column test, or both)."""
        values = Values(self.ctx)
        half = min(half, len(access.bases) - 1)
        pred = access.row_ok[half]
        if access.col_limit is not None:
            key = (id(access), col)
            col_ok = self.col_ok.get(key)
            if col_ok is None:
                col_ok = values.greater(access.col_limit, col)
                self.col_ok[key] = col_ok
            pred = col_ok if pred is None else values.both(pred, col_ok)
        return values.wide(access.bases[half]), col * access.col_stride, pred
