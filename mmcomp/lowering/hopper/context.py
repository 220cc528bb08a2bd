"""The state that every concern of the Hopper lowering shares while one kernel is emitted.

`KernelContext` holds the builder of the `hopper.kernel`, the schedule's parameters and warp
roles, the operand plan, the kernel's `hopper.warp_specialize` (one region per role),
and the map from the materialized kernel's values to the registers that hold them (an
index value may be emitted several times: once per role, once per K block, once more for
the block-wise scales of the K block ahead). `Threads` holds the per-thread registers
made in the prologue, `Cluster` the cluster's rank predicates and multicast mask.
"""

from __future__ import annotations

from collections.abc import Generator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TypeVar

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import (
    Float32Type,
    IndexType,
    IntegerAttr,
    MemRefType,
    UnrealizedConversionCastOp,
    i64,
)
from xdsl.dialects.func import FuncOp
from xdsl.ir import Attribute, Operation, SSAValue

from mmcomp.analysis.warp_roles import WarpRoles
from mmcomp.dialects import hopper, ptx
from mmcomp.dialects.hopper import WarpSpecializeOp
from mmcomp.dialects.sched import ScheduleParams
from mmcomp.errors import ScheduleError
from mmcomp.lowering.hopper.barriers import NamedBarriers
from mmcomp.lowering.hopper.plan import OperandPlan

_OpT = TypeVar("_OpT", bound=ptx.PtxInstruction)


@dataclass
class Accumulator:
    """One accumulator tile, per N chunk (m64nN fragment layout): the `!hopper.accumulator`
    values of a tile that the mainloop accumulates into, or the f32 registers of a sum of
    partial tiles (split-K, stream-K)."""

    chunks: list[list[SSAValue]]
    """Per chunk, the elements of a sum of partial tiles: f32 values (split-K's reduction)
    or f32 registers (stream-K's sum, which its segment loop carries); empty for wgmma
    tiles."""
    fragments: list[SSAValue] = field(default_factory=list[SSAValue])
    """Per chunk, the current `!hopper.accumulator` value (for tiles that the mainloop
    accumulates into: a zero accumulator, a wgmma's result, a K loop's block argument or
    result; empty for the split-K sums)."""
    reads: dict[tuple[int, int], SSAValue] = field(default_factory=dict[tuple[int, int], SSAValue])
    """The `hopper.accumulator_element` read of each (chunk, element) made so far."""
    casts: dict[tuple[int, int], SSAValue] = field(default_factory=dict[tuple[int, int], SSAValue])
    """The cast of each (chunk, element) made so far: a read to its f32 register, or a sum's
    register to an f32 value."""

    def value(self, k: ptx.KernelBuilder, chunk: int, index: int) -> SSAValue:
        """This thread's element `index` of chunk `chunk` as an f32 value (what the
        epilogue's arith and the hopper stores take): a read of the wgmma accumulator
        (`hopper.accumulator_element`), a sum's value, or a sum's register through a
        cast; each made again where the one made before is out of scope."""
        if not self.fragments:
            entry = self.chunks[chunk][index]
            if not isinstance(entry.type, ptx.RegType):
                return entry
            return self._cast(k, chunk, index, entry, Float32Type())
        found = self.reads.get((chunk, index))
        if found is None or not k.sees(found):
            read = hopper.AccumulatorElementOp(self.fragments[chunk], index)
            found = self.reads[(chunk, index)] = k.append(read).result
        return found

    def _cast(
        self, k: ptx.KernelBuilder, chunk: int, index: int, value: SSAValue, type: Attribute
    ) -> SSAValue:
        """`value`, element (chunk, index), read as `type` through one cast (made again
        where the one made before is out of scope or casts another value)."""
        found = self.casts.get((chunk, index))
        owner = None if found is None else found.owner
        fresh = not isinstance(owner, UnrealizedConversionCastOp) or owner.inputs[0] is not value
        if found is None or fresh or not k.sees(found):
            cast = UnrealizedConversionCastOp.get([value], [type])
            found = self.casts[(chunk, index)] = k.append(cast).results[0]
        return found

    def values(self, k: ptx.KernelBuilder) -> list[SSAValue]:
        """Every element of this thread as an f32 value, chunk by chunk, in fragment
        order."""
        sizes = [len(chunk) for chunk in self.chunks]
        if self.fragments:
            types = [fragment.type for fragment in self.fragments]
            sizes = [t.registers for t in types if isinstance(t, hopper.AccumulatorType)]
        return [self.value(k, chunk, i) for chunk, size in enumerate(sizes) for i in range(size)]


@dataclass(eq=False)
class Carried:
    """A register that the hopper level's loops around `scope` carry (an `iter_args`
    value of each): its value where the lowering emits now, the block argument inside
    such a loop, its result after it."""

    value: SSAValue
    """The value at the builder's insertion point."""
    scope: Operation
    """The op of the materialized kernel whose enclosing loops carry the register."""
    inclusive: bool
    """`scope`, a loop, carries it too."""

    def carried_by(self, loop: scf.ForOp) -> bool:
        """The hopper level's copy of `loop` carries the register."""
        if loop is self.scope:
            return self.inclusive
        return loop.is_ancestor(self.scope)


@dataclass(frozen=True)
class Threads:
    """Registers that say which thread this is, made in the prologue."""

    tid: SSAValue
    """%tid.x: an index value (`gpu.thread_id x`)."""
    leader: SSAValue
    """Thread 0 of the CTA (barrier set-up; the producer's elected thread): an i1
    comparison read as a predicate."""


@dataclass(frozen=True)
class ConsumerThreads:
    """Registers of a consumer thread, made once before the consumers' persistent loop."""

    consumer: SSAValue
    """The consumer warpgroup's index (0 or 1)."""
    thread_in_warpgroup: SSAValue
    """%tid.x modulo 128."""
    signaller: SSAValue
    """This thread releases ring stages (thread t of a warpgroup, for t < cluster size):
    an i1 comparison read as a predicate."""
    warp: SSAValue
    """Warp index in the warpgroup."""
    lane: SSAValue
    """Lane index in the warp."""
    row0: SSAValue
    """This thread's first accumulator row in the tile."""
    col0: SSAValue
    """This thread's first accumulator column in an 8-column block."""


@dataclass
class Cluster:
    """The CTAs of a thread-block cluster."""

    size: int
    """CTAs per cluster."""
    rank_is: list[SSAValue] = field(default_factory=list[SSAValue])
    """The predicates "this CTA has cluster rank q" (empty without a cluster)."""
    mask: SSAValue | None = None
    """The 16-bit mask of every CTA of the cluster (multicast destinations)."""


@dataclass
class KernelContext:
    """One kernel being lowered: builder, parameters, roles, plan and value map."""

    func: FuncOp
    params: ScheduleParams
    roles: WarpRoles
    plan: OperandPlan
    k: ptx.KernelBuilder
    barriers: NamedBarriers
    cluster: Cluster
    warp_specialize: WarpSpecializeOp
    """The kernel's body: one region per warp role, each lowered by its role."""
    threads: Threads = field(init=False)
    """Made in the prologue."""
    regs: dict[SSAValue, SSAValue] = field(default_factory=dict[SSAValue, SSAValue])
    """The hopper level's value of each kernel value emitted so far: an index value (a
    copy of the index arithmetic, an induction variable of the hopper level's scf.for, a
    runtime extent, the consumer's index), an i1 (a comparison, thread 0's test), a ring
    position or an array (a `hopper.array_param`)."""
    casts: dict[tuple[SSAValue, Attribute], SSAValue] = field(
        default_factory=dict[tuple[SSAValue, Attribute], SSAValue]
    )
    """The cast of each entry value to each type it has been read as."""
    loops: list[tuple[SSAValue, SSAValue, SSAValue]] = field(
        default_factory=list[tuple[SSAValue, SSAValue, SSAValue]]
    )
    """(induction variable, upper bound, step) of each loop being emitted, outermost first."""
    accumulators: dict[SSAValue, Accumulator] = field(default_factory=dict[SSAValue, Accumulator])
    """The registers of each accumulator tile value."""
    mainloop: scf.ForOp | None = None
    """The consumers' K loop."""
    carried: list[Carried] = field(default_factory=list[Carried])
    """The registers that loops carry, in the order of the loops' iter_args."""
    maps: list[SSAValue] = field(default_factory=list[SSAValue])
    """The tensor maps of the tensor-map parameters (`!hopper.tensormap` values)."""
    launch_function: FuncOp | None = None
    """A kernel with runtime extents: its launch function (extents -> grid, CTA tiles,
    work units)."""
    extents: dict[str, SSAValue] = field(default_factory=dict[str, SSAValue])
    """The index value of each runtime extent (m, b0, ...), read in the prologue."""
    cta_tiles: SSAValue | None = None
    """With runtime extents and split-K: the CTA tiles (the workspaces' `?` extent), an
    index value computed in the prologue by the launch function's arithmetic."""

    @property
    def where(self) -> str:
        """The prefix of every error message."""
        return f"lower-schedule-to-hopper: @{self.func.sym_name.data}"

    def put(self, op: _OpT, pred: SSAValue | None, negated: bool = False) -> _OpT:
        """Append `op`, guarded by `pred` when given (an i1 predicate of the lowering, or a
        predicate register)."""
        if pred is not None:
            guarded = op.set_guard(pred, negated)
            op.erase()
            op = guarded
        return self.k.append(op)

    def carry(self, value: SSAValue, scope: Operation, inclusive: bool = True) -> Carried:
        """Register `value` as carried by the loops around `scope` (and `scope`, a loop, if
        `inclusive`)."""
        carried = Carried(value, scope, inclusive)
        self.carried.append(carried)
        return carried

    def carried_by(self, loop: scf.ForOp) -> list[Carried]:
        """The registers that the hopper level's copy of `loop` carries."""
        return [carried for carried in self.carried if carried.carried_by(loop)]

    @contextmanager
    def carried_kept(self) -> Generator[None]:
        """Restore every carried register's value on leaving this `with` block (a region
        of an scf.if, whose values are not visible after it: the loops inside it carry
        each value in the register it had before)."""
        saved = [(carried, carried.value) for carried in self.carried]
        try:
            yield
        finally:
            for carried, value in saved:
                carried.value = value

    def _found(self, value: SSAValue) -> SSAValue:
        """The entry's value of a kernel value."""
        found = self.regs.get(value)
        if found is None:
            raise ScheduleError(f"{self.where}: value {value} is used before a register holds it")
        return found

    def _cast(self, value: SSAValue, type: Attribute) -> SSAValue:
        """`value` read as `type`, through one cast made at its first read (again where
        that one is out of scope: in a region that does not enclose the builder's block)."""
        found = self.casts.get((value, type))
        if found is None or not self.k.sees(found):
            cast = self.k.append(UnrealizedConversionCastOp.get([value], [type]))
            found = self.casts[(value, type)] = cast.results[0]
        return found

    def cast(self, value: SSAValue, type: Attribute) -> SSAValue:
        """An entry value read as `type` (an index value or comparison of the lowering's
        own arithmetic read by a ptx op, a predicate read as an i1)."""
        return self._cast(value, type)

    def reg(self, value: SSAValue) -> SSAValue:
        """The register holding a value of the kernel (an index value as u32, an array as
        its u64 address)."""
        found = self._found(value)
        if isinstance(found.type, ptx.RegType):
            return found
        if isinstance(found.type, MemRefType):
            return self._cast(found, ptx.U64)
        return self._cast(found, ptx.U32)

    def address(self, array: SSAValue) -> SSAValue:
        """An array of the kernel as its 64-bit address, an i64 of the address arithmetic
        (a cast of its memref, which convert-hopper-to-ptx makes a cast of the parameter's
        u64 register)."""
        found = self._found(array)
        if not isinstance(found.type, MemRefType):
            raise ScheduleError(f"{self.where}: {array} is not an array of the kernel")
        return self._cast(found, i64)

    def index(self, value: SSAValue) -> SSAValue:
        """An index value of the kernel as the hopper level's index arithmetic reads it."""
        found = self._found(value)
        if isinstance(found.type, ptx.RegType):
            return self._cast(found, value.type)
        return found

    def index_constant(self, value: int) -> SSAValue:
        """An index constant of the hopper level's arithmetic (`arith.constant`)."""
        return self.k.append(arith.ConstantOp(IntegerAttr(value, IndexType()))).result

    def index_add(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        """`lhs + rhs` on index values (`arith.addi`)."""
        return self.k.append(arith.AddiOp(lhs, rhs)).result

    def register_index(self, register: SSAValue) -> SSAValue:
        """A register of the lowering's own arithmetic read as an index value."""
        return self._cast(register, IndexType())

    def extent_value(self, name: str) -> SSAValue:
        """A runtime extent of the kernel: its `hopper.extent_param` (an index value)."""
        found = self.extents.get(name)
        if found is None:
            raise ScheduleError(f"{self.where}: the kernel takes no runtime extent {name}")
        return found

    def extent(self, name: str) -> SSAValue:
        """A runtime extent of the kernel as the ptx ops read it: its index value through a
        cast to `!ptx.reg<u32>`."""
        return self._cast(self.extent_value(name), ptx.U32)

    def dimension(self, memref: SSAValue, axis: int, role: str) -> int | SSAValue:
        """An extent of a kernel array: the static one, or its runtime extent's register
        (a workspace's `?` is the CTA tiles)."""
        memref_type = memref.type
        assert isinstance(memref_type, MemRefType)
        extent = memref_type.get_shape()[axis]
        if extent != ptx.DYNAMIC:
            return extent
        if role:
            return self.extent(role)
        if self.cta_tiles is None:
            raise ScheduleError(f"{self.where}: a workspace's runtime extent is not computed")
        return self.reg(self.cta_tiles)

    @property
    def m_blocks(self) -> int:
        """wgmma m64 row blocks per consumer warpgroup (of the tile's N under swap_ab)."""
        return self.params.wgmma_warpgroup[0] // 64

    @property
    def n_chunks(self) -> int:
        """wgmma N chunks per consumer warpgroup (of the tile's M under swap_ab)."""
        return self.params.wgmma_warpgroup[1] // self.params.instr[1]
