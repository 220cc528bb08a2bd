"""`lower-schedule-to-hopper`: a partitioned, materialized kernel becomes a hopper/ptx entry.

The input is a kernel after `materialize-schedule` and `partition-warp-roles`. Each such
`func.func` is replaced by a `ptx.module` holding one `ptx.entry` whose body mixes hopper
ops (TMA, mbarriers, wgmma, setmaxnreg) and ptx instructions; `convert-hopper-to-ptx` then
lowers the hopper ops and `-t ptx` prints PTX.

What each piece of the materialized IR becomes:

- index arithmetic (`arith` on `index`, `gpu.block_id`, `gpu.grid_dim`) becomes 32-bit
  integer instructions, one per op: what runs on the GPU is exactly the schedule's
  arithmetic (persistent loop, split-K slice, batch, grouped raster);
- `scf.for` becomes a counted loop of labels and branches;
- the mainloop `sched.load_tile`s (role `producer`) become TMA loads issued by one elected
  thread of the producer warpgroup into slot `hopper.slot` of a `stages`-deep ring in
  dynamic shared memory, after waiting on the stage's empty barrier, with the stage's
  bytes announced on its full barrier (`mbarrier.arrive.expect_tx`). Tensor maps come
  from each operand's roles and layout: the contiguous axis (k for A[M,K] and W[N,K], n
  for B[K,N]) is cut into 64-element boxes written with the 128-byte swizzle; batch and
  absent axes are box dimensions of extent 1. Boundary boxes are zero-filled by TMA;
- `sched.mma` becomes, per K block, a wait on the stage's full barrier, `wgmma.fence`,
  one `wgmma.mma_async` per k16 step and N chunk, `wgmma.commit_group`, then
  `wgmma.wait_group 1` and the release of the previous stage on its empty barrier (one
  group stays in flight). Cooperative: the two consumer warpgroups each take 64 rows of
  every tile. Ping-pong: they take alternate tiles (named barriers order their
  mainloops; each skips the other's K blocks in the ring). Non-specialized: both compute
  and thread 0 also loads, `stages - 1` K blocks ahead;
- `sched.zero_tile` sets the accumulator registers to zero;
- `sched.epilogue` is evaluated in registers on the wgmma accumulator layout, element
  by element (its fusion ops are pointwise; an operand tile is read at the element's
  coordinates through its roles, so a bias [n], a [1, n] row or an [m, n] operand all
  work); each `sched.store_tile` is a predicated, vectorized `st.global` clipped at the
  output's bounds (epilogue "registers"), or 64 x 32 boxes staged in shared memory and
  stored by TMA (epilogue "smem", for outputs with 16-byte rows);
- split-K: `sched.store_partial` / `sched.arrive` / `sched.reduce_partials` become
  coalesced f32 workspace traffic, an acq_rel atomic counter, and a sum in slice order.

`lower_kernel(func)` returns the ptx module and the `LaunchPlan` (parameters, tensor maps,
grid, threads, shared memory) that the cuda back end needs to launch it.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from xdsl.context import Context
from xdsl.dialects import arith, gpu, scf
from xdsl.dialects.builtin import (
    BFloat16Type,
    DictionaryAttr,
    Float16Type,
    Float32Type,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    TensorType,
)
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException

from mmcomp import hardware as hw
from mmcomp.dialects import hopper, ptx, sched
from mmcomp.dialects.fusion import AxisRolesAttr, SplatOp
from mmcomp.dialects.sched import PARAMS_ATTR, ScheduleParams, ScheduleParamsAttr
from mmcomp.errors import ScheduleError
from mmcomp.passes.partition_warp_roles import (
    ROLE_ATTR,
    ROLES_ATTR,
    WarpRoles,
    level_error,
    mainloop_of,
    slot_of,
    warp_roles,
)
from mmcomp.roles import ABSENT, iteration_space

MAX_TMA_RANK = 5
"""Dimensions of a tensor map."""
MAX_COORDINATE = (1 << 31) - 1
"""Largest extent a TMA coordinate (signed 32-bit) or a 32-bit column limit reaches."""
TMA_STRIDE_BYTES = 16
"""TMA's global strides are multiples of this many bytes."""
WIDE_OFFSETS = 1 << 32
"""Arrays of more elements than this get 64-bit element offsets (32-bit ones would wrap)."""
BOX_ELEMENTS = 64
"""Elements of a 16-bit operand per 128-byte swizzled box row."""
SWIZZLE = 128
"""The swizzle span of every operand tile in shared memory (bytes)."""
SHARED_NAME = "mmcomp_shared"
"""The kernel's dynamic shared memory array (a name no fusion is likely to take)."""
SMEM_ALIGN = 1024
"""Alignment of the ring (128-byte swizzle atoms repeat every 1024 bytes)."""
LOG2E = 1.4426950408889634
"""log2(e): exp(x) = 2^(x log2 e)."""
ORDER_BARRIER = 1
"""Named barrier: consumer 0 has finished a mainloop (ping-pong); ORDER_BARRIER + 1 for
consumer 1."""
EPILOGUE_ROWS = hw.WGMMA_M
"""Rows of one epilogue box (epilogue "smem"): one warpgroup's m64 block."""
EPILOGUE_ROW_BYTES = SWIZZLE
"""Bytes of one epilogue box row: 64 columns of a 16-bit output, 32 of an f32 output,
written with the 128-byte swizzle (stmatrix rows of 16 bytes then never share banks)."""
EPILOGUE_BARRIER = 5
"""Named barrier of consumer warpgroup c's epilogue buffers: EPILOGUE_BARRIER + c."""
SPLIT_K_BARRIER = 3
"""Named barrier of the threads sharing a tile around the split-K arrival (+1: consumer 1
in ping-pong)."""
GELU_C = 0.7978845608028654
"""sqrt(2 / pi), of the tanh approximation of GELU."""
ERF_SCALE = 0.7071067811865476
"""1 / sqrt(2): GELU's erf argument is x / sqrt(2)."""
ERF_P = 0.3275911
"""p of the Abramowitz-Stegun 7.1.26 approximation of erf."""
ERF_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)
"""a1..a5 of the Abramowitz-Stegun 7.1.26 approximation of erf."""


def _dtype(element: Attribute) -> str:
    """The dtype name of a builtin float element type."""
    if isinstance(element, BFloat16Type):
        return "bf16"
    if isinstance(element, Float16Type):
        return "f16"
    if isinstance(element, Float32Type):
        return "f32"
    raise ScheduleError(f"lower-schedule-to-hopper: unsupported element type {element}")


def _arg_roles(func: FuncOp, index: int) -> tuple[str, ...]:
    """The fusion.roles of a kernel argument."""
    attrs = func.arg_attrs
    if attrs is None:
        return ()
    entry = attrs.data[index]
    assert isinstance(entry, DictionaryAttr)
    roles = entry.data.get("fusion.roles")
    return tuple(roles.roles) if isinstance(roles, AxisRolesAttr) else ()


# ----------------------------------------------------------------------------------------
# The launch plan
# ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TmaOperand:
    """A mainloop operand: how its tensor map is encoded and where its tile lands."""

    arg: int
    """Index of the kernel argument (memref) it reads."""
    dtype: str
    """Element type: bf16 or f16."""
    shape: tuple[int, ...]
    """The global extents of the map's view of the argument, outermost first."""
    box: tuple[int, ...]
    """The TMA box, outermost first (the innermost is 64 elements)."""
    boxes: int
    """Boxes per tile along the contiguous axis."""
    major: str
    """"k" when the contiguous axis is k, "mn" when it is m or n."""
    swizzle: int = SWIZZLE
    """Swizzle span of the box in shared memory (0 for the epilogue's output boxes)."""
    multicast: int = 1
    """CTAs of the cluster that share this tile: each loads 1 / multicast of it and
    multicasts its part to all (1: loaded by each CTA alone)."""
    row_pieces: int = 1
    """K-major multicast: the tile's rows are loaded as this many boxes (one per CTA)."""
    strides: tuple[int, ...] = ()
    """Element strides of the view, outermost first, in the array the map reads (the
    staging copy when `pitch` is set); () for the compact strides of `shape`."""
    axes: tuple[int, ...] = ()
    """The argument's axis behind each view axis (-1: an axis of extent 1 the argument
    lacks, such as the rows of an operand without its m axis); () for every axis in order."""
    pitch: int = 0
    """Elements per row of the padded staging copy the map reads, when the argument's rows
    are not a multiple of 16 bytes (0: the map reads the argument itself)."""

    @property
    def element_bytes(self) -> int:
        """Bytes per element."""
        return 4 if self.dtype == "f32" else 2

    @property
    def byte_strides(self) -> tuple[int, ...]:
        """Byte strides of the view, outermost first (the innermost is one element)."""
        strides = self.strides or tuple(
            math.prod(self.shape[axis + 1 :]) for axis in range(len(self.shape))
        )
        return tuple(stride * self.element_bytes for stride in strides)

    @property
    def rows(self) -> int:
        """Rows of the argument as the staging copy lays them out (all elements / the
        innermost view extent)."""
        return math.prod(self.shape[:-1])

    @property
    def box_bytes(self) -> int:
        """Bytes of one box in shared memory."""
        return math.prod(self.box) * self.element_bytes

    @property
    def tile_bytes(self) -> int:
        """Bytes of the whole tile (one ring slot)."""
        return self.box_bytes * self.boxes * self.row_pieces


@dataclass(frozen=True)
class LaunchPlan:
    """What the back end needs to launch a lowered kernel."""

    entry: str
    """The kernel's name."""
    arguments: tuple[str, ...]
    """Kernel argument names in order (inputs, outputs, workspaces), passed as pointers."""
    argument_types: tuple[tuple[tuple[int, ...], str], ...]
    """(shape, dtype) of each argument."""
    tensor_maps: tuple[TmaOperand, ...]
    """The tensor maps, passed after the pointers: the mainloop operands', then the
    outputs' written through shared memory (epilogue "smem")."""
    grid: int
    """CTAs in the grid."""
    threads: int
    """Threads per CTA."""
    smem_bytes: int
    """Dynamic shared memory per CTA (including the alignment slack)."""
    roles: WarpRoles
    """The warp-role plan."""
    params: ScheduleParams
    """The schedule parameters."""
    cluster: int = 1
    """CTAs per cluster (the grid is a multiple)."""


# ----------------------------------------------------------------------------------------
# The lowering
# ----------------------------------------------------------------------------------------


_OpT = TypeVar("_OpT", bound=ptx.PtxInstruction)


@dataclass
class _Accumulator:
    """The f32 registers of one accumulator tile, per N chunk (m64nN fragment layout)."""

    chunks: list[list[SSAValue]]


@dataclass
class _Access:
    """How one thread addresses a memref's elements in the current tile's epilogue."""

    bases: list[SSAValue]
    """64-bit address of the element at (row0 + 8 h, col0), per half h (one if no m axis)."""
    row_ok: list[SSAValue | None]
    """Per half: the row lies inside the memref (None without an m axis)."""
    col_limit: SSAValue | None
    """s32: columns left from col0 to the memref's n extent (None without an n axis)."""
    col_stride: int
    """Bytes between neighbouring columns."""
    dtype: str
    """Element type."""


@dataclass
class _Scalar:
    """One epilogue value at one element: an f32 register and the dtype it stands for."""

    reg: SSAValue
    dtype: str
    exact: bool = False
    """The register already holds a value of `dtype` (a loaded element): no rounding."""


@dataclass
class _Lowering:
    """The state of lowering one kernel."""

    func: FuncOp
    params: ScheduleParams
    roles: WarpRoles
    module: ptx.PtxModuleOp = field(init=False)
    k: ptx.KernelBuilder = field(init=False)
    ring: SSAValue = field(init=False)
    """Shared address of the ring (the 1024-aligned base of dynamic shared memory)."""
    full: SSAValue = field(init=False)
    """Shared address of the full barriers, one per stage."""
    empty: SSAValue = field(init=False)
    """Shared address of the empty barriers, one per stage."""
    maps: list[SSAValue] = field(init=False)
    """Generic addresses of the tensor-map parameters."""
    tid: SSAValue = field(init=False)
    """%tid.x."""
    leader: SSAValue = field(init=False)
    """Thread 0 of the CTA (barrier set-up; the producer's elected thread)."""
    consumer: SSAValue = field(init=False)
    """The consumer warpgroup's index (0 or 1)."""
    warp: SSAValue = field(init=False)
    """Warp index in the warpgroup."""
    lane: SSAValue = field(init=False)
    """Lane index in the warp."""
    thread_in_warpgroup: SSAValue = field(init=False)
    """%tid.x modulo 128."""
    signaller: SSAValue = field(init=False)
    """This thread releases ring stages (thread t of a warpgroup, for t < cluster size)."""
    row0: SSAValue = field(init=False)
    """This thread's first accumulator row in the tile."""
    col0: SSAValue = field(init=False)
    """This thread's first accumulator column in an 8-column block."""
    tiles_seen: SSAValue = field(init=False)
    """Tiles the consumer has walked past (ping-pong parity)."""
    stage: SSAValue = field(init=False)
    """The role's ring stage."""
    phase: SSAValue = field(init=False)
    """The role's ring phase parity."""
    order: tuple[SSAValue, SSAValue] = field(init=False)
    """Ping-pong: (this is consumer 1, this is consumer 0) predicates."""
    regs: dict[SSAValue, SSAValue] = field(default_factory=dict[SSAValue, SSAValue])
    operands: list[TmaOperand] = field(default_factory=list[TmaOperand])
    slot_offsets: list[int] = field(default_factory=list[int])
    stage_bytes: int = 0
    accumulators: dict[SSAValue, _Accumulator] = field(default_factory=dict[SSAValue, _Accumulator])
    mainloop: scf.ForOp = field(init=False)
    epilogue_loads: dict[SSAValue, sched.LoadTileOp] = field(
        default_factory=dict[SSAValue, sched.LoadTileOp]
    )
    pending_epilogue: sched.EpilogueOp | None = None
    stores: list[sched.StoreTileOp] = field(default_factory=list[sched.StoreTileOp])
    bound: dict[SSAValue, _Accumulator | sched.LoadTileOp] = field(
        default_factory=dict[SSAValue, _Accumulator | sched.LoadTileOp]
    )
    memo: dict[tuple[object, ...], _Scalar] = field(
        default_factory=dict[tuple[object, ...], _Scalar]
    )
    load_memo: dict[tuple[object, ...], SSAValue] = field(
        default_factory=dict[tuple[object, ...], SSAValue]
    )
    rows: list[SSAValue] = field(default_factory=list[SSAValue])
    epilogue_begun: bool = False
    """The current tile's epilogue state is set up (operands may be prefetched)."""
    skip_label: str | None = None
    store_maps: dict[int, TmaOperand] = field(default_factory=dict[int, TmaOperand])
    """Epilogue "smem": the tensor map of each output stored by TMA, by argument index."""
    rank_is: list[SSAValue] | None = None
    """Clusters: the predicates "this CTA has cluster rank q", once computed."""
    cluster_mask: SSAValue | None = None
    """Clusters: the 16-bit mask of every CTA of the cluster (multicast destinations)."""
    load_stage: SSAValue | None = None
    """Non-specialized kernels: the ring position thread 0 loads into next (set up once at
    the kernel's top level, carried across tiles and split-K units)."""
    load_phase: SSAValue | None = None
    loops: list[tuple[SSAValue, SSAValue, SSAValue]] = field(
        default_factory=list[tuple[SSAValue, SSAValue, SSAValue]]
    )
    """(induction variable, upper bound, step) of each loop being emitted, outermost first."""
    accesses: dict[tuple[SSAValue, ...], _Access] = field(
        default_factory=dict[tuple[SSAValue, ...], _Access]
    )
    col_ok: dict[tuple[int, int], SSAValue] = field(default_factory=dict[tuple[int, int], SSAValue])

    @property
    def where(self) -> str:
        """The prefix of every error message."""
        return f"lower-schedule-to-hopper: @{self.func.sym_name.data}"

    # --- setup -------------------------------------------------------------------------

    def plan_operands(self) -> None:
        """A TmaOperand per mainloop load, and the ring's slot offsets."""
        loop = mainloop_of(self.func)
        loads = [op for op in loop.body.block.ops if isinstance(op, sched.LoadTileOp)]
        rows_of: dict[Operation, str] = {}
        for op in loop.body.block.ops:
            if isinstance(op, sched.MmaOp):
                rows_of[op.a.owner] = "m"  # pyright: ignore[reportArgumentType]
                rows_of[op.b.owner] = "n"  # pyright: ignore[reportArgumentType]
        offset = 0
        for load in loads:
            source = load.source
            if not isinstance(source, BlockArgument) or source.owner is not self.func.body.block:
                raise ScheduleError(f"{self.where}: a mainloop load must read a kernel argument")
            memref = source.type
            assert isinstance(memref, MemRefType)
            dtype = _dtype(memref.element_type)
            if dtype not in ("bf16", "f16"):
                raise ScheduleError(
                    f"{self.where}: mainloop operand %{source.name_hint or source.index} is "
                    f"{dtype}; wgmma takes bf16 or f16 operands here"
                )
            operand = self.tma_view(load, rows_of.get(load, "m"))
            operand = self.shared_in_cluster(operand, _arg_roles(self.func, source.index))
            self.operands.append(operand)
            self.slot_offsets.append(offset)
            offset += operand.tile_bytes
        self.stage_bytes = offset

    def tma_view(self, load: sched.LoadTileOp, row_role: str) -> TmaOperand:
        """The tensor map of a mainloop operand: a view of its argument without its axes of
        extent 1 (absent or not), each remaining axis with its tile extent as the box.

        The wgmma reads a whole tile: `tile m` rows of A (`tile n` of B) by `tile k`. An
        operand without its row axis (A without m: M is 1) gets a view axis of extent 1
        there, whose box still spans the tile's rows: TMA zero-fills all but the first,
        and the epilogue stores only the iteration space's rows. Without m while the
        iteration space has M > 1, every row of the tile would be the same row, which a
        TMA box cannot replicate: refused. Rows that are not a multiple of 16 bytes are
        read from a padded staging copy (`pitch`), which the runtime fills before each
        launch; the view's extents stay the true ones, so the padding is never read.
        """
        source = load.source
        assert isinstance(source, BlockArgument)
        memref = source.type
        tile = load.result.type
        assert isinstance(memref, MemRefType) and isinstance(tile, TensorType)
        name = f"%{source.name_hint or f'arg{source.index}'}"
        roles = _arg_roles(self.func, source.index)
        shape = tuple(memref.get_shape())
        tile_shape = tuple(tile.get_shape())
        dtype = _dtype(memref.element_type)
        if len(roles) != len(shape):
            raise ScheduleError(f"{self.where}: mainloop operand {name} has no fusion.roles")
        # Axes of extent 1 add nothing to an address: the view drops them (but keeps k, so
        # that a K of 1 stays a K-major operand).
        axes = [axis for axis, role in enumerate(roles) if shape[axis] > 1 or role == "k"]
        view_roles = [roles[axis] for axis in axes]
        inner_role = view_roles[-1] if view_roles else ABSENT
        if inner_role not in ("k", row_role):
            raise ScheduleError(
                f"{self.where}: mainloop operand {name} (roles [{', '.join(roles)}]) has its "
                f"contiguous axis with role '{inner_role}'; expected k or {row_role}"
            )
        opposite = "n" if row_role == "m" else "m"
        if opposite in view_roles:
            which = "A" if row_role == "m" else "B"
            raise ScheduleError(
                f"{self.where}: mainloop operand {name} (roles [{', '.join(roles)}]) is the "
                f"{which} of a contraction but has an {opposite} axis; a wgmma {which} "
                f"operand spans {row_role} and k only"
            )
        major = "k" if inner_role == "k" else "mn"
        space = iteration_space(self.func)
        other = row_role if major == "k" else "k"
        extents = [shape[axis] for axis in axes]
        box = [tile_shape[axis] for axis in axes]
        if other not in view_roles:
            if space.get(other, 1) > 1:
                what = "rows" if other == row_role else "K columns"
                raise ScheduleError(
                    f"{self.where}: mainloop operand {name} (roles [{', '.join(roles)}]) has "
                    f"no {other} axis while the iteration space has {other} = "
                    f"{space[other]}: every one of its {what} would be the same, and TMA "
                    f"cannot replicate them; give {name} its {other} axis (broadcast it "
                    "to the full extent before the contraction)"
                )
            position = len(axes) - 1
            axes.insert(position, -1)
            extents.insert(position, 1)
            box.insert(position, self.params.tile["mnk".index(other)])
        if box[-1] % BOX_ELEMENTS:
            raise ScheduleError(
                f"{self.where}: the contiguous tile extent of {name} is {box[-1]}, not a "
                f"multiple of {BOX_ELEMENTS}"
            )
        if len(axes) > MAX_TMA_RANK:
            raise ScheduleError(
                f"{self.where}: mainloop operand {name} has {len(axes)} axes besides its "
                f"absent ones; a tensor map has at most {MAX_TMA_RANK}"
            )
        for axis, extent in zip(axes, extents, strict=True):
            if extent > MAX_COORDINATE:
                raise ScheduleError(
                    f"{self.where}: mainloop operand {name}: axis {axis} has extent {extent}; "
                    f"TMA coordinates are signed 32-bit, so at most {MAX_COORDINATE}"
                )
        element = 4 if dtype == "f32" else 2
        inner = extents[-1]
        compact = [math.prod(shape[axis + 1 :]) if axis >= 0 else 0 for axis in axes]
        aligned = all(
            extent == 1 or (stride * element) % TMA_STRIDE_BYTES == 0
            for extent, stride in zip(extents[:-1], compact[:-1], strict=True)
        )
        per_chunk = TMA_STRIDE_BYTES // element
        pitch = 0 if aligned else -(-inner // per_chunk) * per_chunk
        row = pitch or inner
        # The staging copy keeps the argument's element order with rows of `pitch`.
        strides = [stride // inner * row if pitch else stride for stride in compact[:-1]] + [1]
        filler = -(-row // per_chunk) * per_chunk
        strides = [
            stride if extent > 1 or position == len(axes) - 1 else filler
            for position, (extent, stride) in enumerate(zip(extents, strides, strict=True))
        ]
        return TmaOperand(
            source.index,
            dtype,
            tuple(extents),
            (*box[:-1], BOX_ELEMENTS),
            box[-1] // BOX_ELEMENTS,
            major,
            strides=tuple(strides),
            axes=tuple(axes),
            pitch=pitch,
        )

    @property
    def cluster_size(self) -> int:
        """CTAs per cluster."""
        return self.params.cluster[0] * self.params.cluster[1]

    def shared_in_cluster(self, operand: TmaOperand, roles: Sequence[str]) -> TmaOperand:
        """The operand, multicast when the CTAs of a cluster all load the same tile.

        The cluster extends along m (cluster m x 1) or n (1 x n); an operand without that
        axis (B for clusters along m, A along n) is the same in every CTA of the cluster.
        K-major tiles are split by rows, MN-major tiles by their 64-wide boxes; a tile that
        does not split evenly is loaded by each CTA alone.
        """
        size = self.cluster_size
        if size == 1:
            return operand
        axis = "m" if self.params.cluster[0] > 1 else "n"
        if axis in roles:
            return operand
        if operand.major == "k":
            rows = operand.box[-2]
            if rows % size or (rows // size) % 8:
                return operand
            box = (*operand.box[:-2], rows // size, operand.box[-1])
            return dataclasses.replace(operand, box=box, multicast=size, row_pieces=size)
        if operand.boxes % size:
            return operand
        return dataclasses.replace(operand, multicast=size)

    def smem_bytes(self) -> int:
        """Ring + barriers + epilogue buffers + alignment slack."""
        ring = self.stage_bytes * self.roles.stages
        total = ring + 2 * 8 * self.roles.stages + 16 + SMEM_ALIGN
        if self.store_maps:
            buffers = self.roles.consumers * hw.EPILOGUE_BUFFERS
            total = self.epilogue_offset() + buffers * self.buffer_bytes()
            total += SMEM_ALIGN
        return total

    def epilogue_offset(self) -> int:
        """Offset of the epilogue buffers from the aligned base (after ring and barriers)."""
        barriers = self.stage_bytes * self.roles.stages + 2 * 8 * self.roles.stages + 16
        return -(-barriers // SMEM_ALIGN) * SMEM_ALIGN

    def buffer_bytes(self) -> int:
        """One epilogue buffer: a box of 64 rows of 128 bytes (1024-aligned)."""
        return hw.EPILOGUE_BOX_BYTES

    def plan_stores(self) -> None:
        """With epilogue "smem": a tensor map per output that TMA can store.

        An output qualifies when its innermost axis has role n, its rows are a multiple of
        16 bytes and the warpgroup tile is a whole number of boxes wide (a box row is 128
        bytes); the others are stored from registers.
        """
        if self.params.epilogue != "smem":
            return
        for arg in self.func.body.block.args:
            attrs = self.func.arg_attrs
            if attrs is None:
                return
            entry = attrs.data[arg.index]
            assert isinstance(entry, DictionaryAttr)
            if "sched.output" not in entry.data:
                continue
            memref = arg.type
            assert isinstance(memref, MemRefType)
            roles = _arg_roles(self.func, arg.index)
            dtype = _dtype(memref.element_type)
            shape = tuple(memref.get_shape())
            size = 4 if dtype == "f32" else 2
            if not roles or roles[-1] != "n" or "m" not in roles or (shape[-1] * size) % 16:
                continue
            columns = EPILOGUE_ROW_BYTES // size
            if self.params.warpgroup[1] % columns:
                continue
            box = tuple(
                EPILOGUE_ROWS if role == "m" else columns if role == "n" else 1 for role in roles
            )
            self.store_maps[arg.index] = TmaOperand(arg.index, dtype, shape, box, 1, "n")

    def build(self) -> LaunchPlan:
        """Lower the kernel; return its launch plan (the module is in `self.module`)."""
        self.plan_operands()
        name = self.func.sym_name.data
        args = self.func.body.block.args
        params: list[tuple[str, str]] = [(f"arg{i}", "ptr") for i in range(len(args))]
        self.plan_stores()
        maps = len(self.operands) + len(self.store_maps)
        params += [(f"tmap{j}", "tmap") for j in range(maps)]
        self.module = ptx.PtxModuleOp()
        self.module.body.block.add_op(ptx.SharedOp(SHARED_NAME, SMEM_ALIGN))
        self.k = ptx.KernelBuilder.create(
            self.module,
            name,
            params,
            maxnreg=self.roles.entry_registers,
            reqntid=(self.roles.threads,),
        )
        self.emit_kernel()
        if self.smem_bytes() > hw.MAX_DYNAMIC_SMEM_PER_BLOCK:
            raise ScheduleError(
                f"{self.where}: {self.roles.stages} stages of {self.stage_bytes} bytes, the "
                f"barriers and {SMEM_ALIGN} bytes of alignment slack need {self.smem_bytes()} "
                f"bytes of shared memory; the device allows {hw.MAX_DYNAMIC_SMEM_PER_BLOCK} "
                "(use fewer stages)"
            )
        grid_attr = self.func.attributes.get("sched.grid")
        if not isinstance(grid_attr, IntegerAttr):
            raise ScheduleError(f"{self.where}: missing sched.grid (run materialize-schedule)")
        if grid_attr.value.data % self.cluster_size:
            raise ScheduleError(
                f"{self.where}: grid {grid_attr.value.data} is not a multiple of the cluster "
                f"size {self.cluster_size}"
            )
        for arg in args:
            assert isinstance(arg.type, MemRefType)
            for axis, extent in enumerate(arg.type.get_shape()):
                if extent > MAX_COORDINATE:
                    raise ScheduleError(
                        f"{self.where}: argument %{arg.name_hint or arg.index}: axis {axis} "
                        f"has extent {extent}; the kernel indexes each axis with signed "
                        f"32-bit coordinates, so at most {MAX_COORDINATE}"
                    )
        types: list[tuple[tuple[int, ...], str]] = []
        for arg in args:
            assert isinstance(arg.type, MemRefType)
            element = arg.type.element_type
            dtype = (
                "i32"
                if not isinstance(element, BFloat16Type | Float16Type | Float32Type)
                else _dtype(element)
            )
            shape = tuple(arg.type.get_shape())
            if self.is_partials(arg):
                shape = self.workspace_shape(arg)
            types.append((shape, dtype))
        return LaunchPlan(
            name,
            tuple(arg.name_hint or f"arg{arg.index}" for arg in args),
            tuple(types),
            (*self.operands, *self.store_maps.values()),
            grid_attr.value.data,
            self.roles.threads,
            self.smem_bytes(),
            self.roles,
            self.params,
            self.cluster_size,
        )

    # --- kernel skeleton ---------------------------------------------------------------

    @property
    def pingpong(self) -> bool:
        """Consumers take alternate tiles (rather than halves of each tile)."""
        return self.roles.specialization == "pingpong"

    @property
    def stage_consumers(self) -> int:
        """Consumer warpgroups that read (and release) each ring stage."""
        return 1 if self.pingpong else self.roles.consumers

    def emit_kernel(self) -> None:
        """The whole entry: prologue, then the producer and consumer roles."""
        k = self.k
        stages = self.roles.stages
        tid = k.sreg("tid.x")
        raw = k.addr_of(SHARED_NAME)
        base = k.binary(
            ptx.AndOp,
            k.add(raw, k.const(SMEM_ALIGN - 1)),
            k.const((1 << 32) - SMEM_ALIGN),
        )
        self.ring = base
        self.full = k.add(base, k.const(self.stage_bytes * stages))
        self.empty = k.add(self.full, k.const(8 * stages))
        self.maps = [
            k.append(hopper.TensorMapAddressOp(f"tmap{j}")).result
            for j in range(len(self.operands) + len(self.store_maps))
        ]
        for index, arg in enumerate(self.func.body.block.args):
            self.regs[arg] = k.ld_param(f"arg{index}")
        leader = k.setp("eq", tid, k.const(0))
        for stage in range(stages):
            self.put(hopper.MbarrierInitOp(k.add(self.full, k.const(8 * stage)), 1), leader)
            self.put(
                hopper.MbarrierInitOp(
                    k.add(self.empty, k.const(8 * stage)),
                    self.stage_consumers * self.cluster_size,
                ),
                leader,
            )
        self.put(hopper.FenceMbarrierInitOp(), leader)
        for tmap in self.maps:
            self.put(hopper.TensorMapPrefetchOp(tmap), leader)
        k.bar()
        self.cluster_sync()
        if self.cluster_size > 1:
            rank = k.append(hopper.IdOp("cluster_cta_rank")).result
            self.rank_is = [k.setp("eq", rank, k.const(q)) for q in range(self.cluster_size)]
            self.cluster_mask = k.const((1 << self.cluster_size) - 1, ptx.U16)
        warpgroup = k.shr(tid, k.const(7))
        self.tid = tid
        self.leader = leader
        if not self.roles.producers:
            # Non-specialized: every warpgroup computes; thread 0 also issues the loads.
            self.consumer = warpgroup
            self.emit_consumer()
            self.cluster_sync()
            k.ret()
            return
        is_producer = k.setp("eq", warpgroup, k.const(0))
        consumer_label = k.fresh_label("consumer")
        done_label = k.fresh_label("done")
        k.bra(consumer_label, is_producer, negated=True)
        # Producer warpgroup.
        k.append(hopper.SetmaxnregOp("dec", self.roles.registers[0]))
        k.bra(done_label, leader, negated=True)
        self.emit_producer()
        k.bra(done_label)
        # Consumer warpgroups.
        k.label(consumer_label)
        k.append(hopper.SetmaxnregOp("inc", self.roles.registers[1]))
        self.consumer = k.sub(warpgroup, k.const(1))
        self.emit_consumer()
        k.label(done_label)
        self.cluster_sync()
        k.ret()

    def put(self, op: _OpT, pred: SSAValue | None, negated: bool = False) -> _OpT:
        """Append `op`, guarded by `pred` when given."""
        if pred is not None:
            guarded = op.set_guard(pred, negated)
            op.erase()
            op = guarded
        return self.k.append(op)

    def ring_state(self) -> tuple[SSAValue, SSAValue]:
        """Fresh (stage, phase) registers of a ring position, both 0."""
        k = self.k
        stage = k.const(0)
        phase = k.const(0)
        return stage, phase

    def advance(self, stage: SSAValue, phase: SSAValue) -> None:
        """Move a ring position one stage on (the phase flips at the wrap)."""
        k = self.k
        k.assign(stage, k.add(stage, k.const(1)))
        wrap = k.setp("eq", stage, k.const(self.roles.stages))
        self.put(ptx.AssignOp(stage, k.const(0)), wrap)
        self.put(ptx.AssignOp(phase, k.binary(ptx.XorOp, phase, k.const(1))), wrap)

    def barrier(self, which: SSAValue, stage: SSAValue) -> SSAValue:
        """The address of stage `stage`'s barrier in the array at `which`."""
        return self.k.mad(stage, self.k.const(8), which)

    # --- index arithmetic and loops ------------------------------------------------------

    def reg(self, value: SSAValue) -> SSAValue:
        """The register holding an index value of the kernel."""
        found = self.regs.get(value)
        if found is None:
            raise ScheduleError(f"{self.where}: value {value} is used before a register holds it")
        return found

    def emit_index_op(self, op: Operation) -> bool:
        """Emit an index op; False if `op` is not one."""
        k = self.k
        if isinstance(op, arith.ConstantOp):
            value = op.value
            if not isinstance(value, IntegerAttr):
                raise ScheduleError(f"{self.where}: unsupported constant {value}")
            self.regs[op.result] = k.const(value.value.data & 0xFFFFFFFF)
            return True
        if isinstance(op, gpu.BlockIdOp):
            self.regs[op.result] = k.sreg("ctaid.x")
            return True
        if isinstance(op, gpu.GridDimOp):
            self.regs[op.result] = k.sreg("nctaid.x")
            return True
        binary: dict[type[Operation], type[ptx.BinaryOp]] = {
            arith.AddiOp: ptx.AddOp,
            arith.SubiOp: ptx.SubOp,
            arith.MuliOp: ptx.MulOp,
            arith.DivUIOp: ptx.DivOp,
            arith.RemUIOp: ptx.RemOp,
            arith.MinUIOp: ptx.MinOp,
            arith.MaxUIOp: ptx.MaxOp,
        }
        kind = binary.get(type(op))
        if kind is not None:
            self.regs[op.results[0]] = k.binary(
                kind, self.reg(op.operands[0]), self.reg(op.operands[1])
            )
            return True
        if isinstance(op, arith.CmpiOp):
            names = {0: "eq", 1: "ne", 6: "lo", 7: "ls", 8: "hi", 9: "hs", 2: "lo", 3: "ls"}
            predicate = op.predicate.value.data
            cmp = names.get(predicate)
            if cmp is None:
                raise ScheduleError(f"{self.where}: unsupported arith.cmpi predicate {predicate}")
            pred = k.setp(cmp, self.reg(op.lhs), self.reg(op.rhs))
            self.regs[op.result] = k.selp(k.const(1), k.const(0), pred)
            return True
        if isinstance(op, arith.SelectOp):
            cond = k.setp("ne", self.reg(op.cond), k.const(0))
            self.regs[op.result] = k.selp(self.reg(op.lhs), self.reg(op.rhs), cond)
            return True
        return False

    def emit_loop(self, loop: scf.ForOp, body: Callable[[], None]) -> None:
        """A counted loop over `loop`'s range; `body` emits one iteration."""
        k = self.k
        iv = k.mov(self.reg(loop.lb))
        self.regs[loop.body.block.args[0]] = iv
        head = k.fresh_label("loop")
        end = k.fresh_label("loop_end")
        upper = self.reg(loop.ub)
        step = self.reg(loop.step)
        k.label(head)
        k.bra(end, k.setp("hs", iv, upper))
        self.loops.append((iv, upper, step))
        body()
        self.loops.pop()
        k.assign(iv, k.add(iv, step))
        k.bra(head)
        k.label(end)

    # --- producer ------------------------------------------------------------------------

    def producer_slice(self) -> set[Operation]:
        """The ops the producer needs: the loads, their index slices and enclosing loops."""
        needed: set[Operation] = set()
        work: list[Operation] = [
            op
            for op in self.func.walk()
            if isinstance(op, sched.LoadTileOp)
            and op.attributes.get(ROLE_ATTR) == StringAttr("producer")
        ]
        while work:
            op = work.pop()
            if op in needed:
                continue
            needed.add(op)
            operands = list(op.operands)
            if isinstance(op, scf.ForOp):
                operands = [op.lb, op.ub, op.step]
            parent = op.parent_op()
            if parent is not None and parent is not self.func:
                work.append(parent)
            for value in operands:
                owner = value.owner
                if isinstance(owner, Operation):
                    work.append(owner)
                elif isinstance(owner, BlockArgument):
                    pass
        return needed

    def emit_producer(self) -> None:
        """The elected producer thread: the schedule's loops, only what its loads need."""
        needed = self.producer_slice()
        self.stage, self.phase = self.ring_state()
        self.walk(self.func.body.block.ops, needed, self.producer_op)

    def walk(
        self,
        ops: Sequence[Operation] | object,
        needed: set[Operation] | None,
        special: Callable[[Operation], bool],
    ) -> None:
        """Emit `ops` in order: index arithmetic, loops and ifs here, the rest by `special`."""
        holds_mainloop = False
        for op in ops:  # pyright: ignore[reportGeneralTypeIssues]
            assert isinstance(op, Operation)
            holds_mainloop |= op is self.mainloop
            if needed is not None and op not in needed:
                continue
            if special(op):
                continue
            if self.emit_index_op(op):
                continue
            if isinstance(op, scf.ForOp):
                self.emit_loop(op, lambda op=op: self.walk(op.body.block.ops, needed, special))
                continue
            if isinstance(op, scf.IfOp):
                self.emit_if(op, needed, special)
                continue
            if isinstance(op, scf.YieldOp | ReturnOp):
                continue
            raise ScheduleError(f"{self.where}: cannot lower {op.name} here")
        if holds_mainloop and special == self.consumer_op:
            self.end_of_tile()

    def emit_if(
        self, op: scf.IfOp, needed: set[Operation] | None, special: Callable[[Operation], bool]
    ) -> None:
        """`scf.if` without results: a branch around its then-block (and else-block)."""
        k = self.k
        if op.results:
            raise ScheduleError(f"{self.where}: scf.if with results is not lowered")
        taken = k.setp("ne", self.reg(op.cond), k.const(0))
        other = k.fresh_label("else")
        end = k.fresh_label("endif")
        k.bra(other, taken, negated=True)
        self.walk(op.true_region.block.ops, needed, special)
        k.bra(end)
        k.label(other)
        if op.false_region.blocks:
            self.walk(op.false_region.block.ops, needed, special)
        k.label(end)

    def end_of_tile(self) -> None:
        """After a tile's work: the ping-pong skip target; count the tile."""
        k = self.k
        if self.skip_label is not None:
            k.label(self.skip_label)
            self.skip_label = None
        k.assign(self.tiles_seen, k.add(self.tiles_seen, k.const(1)))

    def producer_op(self, op: Operation) -> bool:
        """The producer's own lowering of `op` (the K loop); False for the generic one."""
        if isinstance(op, scf.ForOp) and op is self.mainloop:
            self.emit_loop(op, lambda: self.producer_k_block(op))
            return True
        return False

    def producer_k_block(self, loop: scf.ForOp) -> None:
        """One K block of the producer: the loads of the current iteration."""
        self.issue_loads(loop, self.stage, self.phase)

    def issue_loads(self, loop: scf.ForOp, stage: SSAValue, phase: SSAValue) -> None:
        """Wait for the ring position (stage, phase) to be empty, fill it with the K loop's
        loads at the iteration its induction variable's register holds, and advance."""
        k = self.k
        for op in loop.body.block.ops:
            if not isinstance(op, sched.LoadTileOp):
                self.emit_index_op(op)
        k.append(
            hopper.MbarrierWaitOp(
                self.barrier(self.empty, stage), k.binary(ptx.XorOp, phase, k.const(1))
            )
        )
        full = self.barrier(self.full, stage)
        k.append(hopper.MbarrierArriveExpectTxOp(full, self.stage_bytes))
        slot_base = k.mad(stage, k.const(self.stage_bytes), self.ring)
        for op in loop.body.block.ops:
            if not isinstance(op, sched.LoadTileOp):
                continue
            slot = slot_of(op)
            operand = self.operands[slot]
            coords = [
                self.reg(op.indices[axis]) if axis >= 0 else k.const(0)
                for axis in reversed(operand.axes)
            ]
            dst = k.add(slot_base, k.const(self.slot_offsets[slot]))
            if operand.multicast > 1:
                self.multicast_loads(operand, slot, dst, coords, full)
                continue
            for box in range(operand.boxes):
                inner = coords[0]
                if box:
                    inner = k.add(inner, k.const(box * BOX_ELEMENTS))
                k.append(
                    hopper.TmaLoadOp(
                        k.add(dst, k.const(box * operand.box_bytes)) if box else dst,
                        self.maps[slot],
                        full,
                        [inner, *coords[1:]],
                    )
                )
        self.advance(stage, phase)

    def multicast_loads(
        self,
        operand: TmaOperand,
        slot: int,
        dst: SSAValue,
        coords: Sequence[SSAValue],
        full: SSAValue,
    ) -> None:
        """This CTA's share of a tile common to the cluster, multicast to every CTA."""
        k = self.k
        size = operand.multicast
        assert self.rank_is is not None and self.cluster_mask is not None
        rows = operand.box[-2]
        unit = 0
        for box in range(operand.boxes):
            for piece in range(operand.row_pieces):
                offset = (box * operand.row_pieces + piece) * operand.box_bytes
                inner = coords[0]
                if box:
                    inner = k.add(inner, k.const(box * BOX_ELEMENTS))
                outer = list(coords[1:])
                if piece:
                    outer[0] = k.add(outer[0], k.const(piece * rows))
                self.put(
                    hopper.TmaLoadMulticastOp(
                        k.add(dst, k.const(offset)) if offset else dst,
                        self.maps[slot],
                        full,
                        self.cluster_mask,
                        [inner, *outer],
                    ),
                    self.rank_is[unit % size],
                )
                unit += 1

    def release(self, stage: SSAValue, pred: SSAValue) -> None:
        """Arrive on the empty barrier of `stage` (if `pred`): one thread of each consumer
        warpgroup arrives once at every CTA of the cluster (thread t at CTA rank t).

        One arrival per warpgroup suffices: `wgmma.wait_group` returns only when the
        warpgroup's wgmma groups, which read the stage, are complete.
        """
        k = self.k
        empty = self.barrier(self.empty, stage)
        signal = k.binary(ptx.AndOp, pred, self.signaller)
        if self.cluster_size == 1:
            self.put(hopper.MbarrierArriveOp(empty), signal)
            return
        remote = k.append(hopper.MapaOp(empty, self.thread_in_warpgroup)).result
        self.put(hopper.MbarrierArriveOp(remote, "cluster"), signal)

    def cluster_sync(self) -> None:
        """All threads of the cluster meet (after barrier init, before exit)."""
        if self.cluster_size == 1:
            return
        self.k.append(ptx.ClusterBarrierOp("arrive"))
        self.k.append(ptx.ClusterBarrierOp("wait"))

    # --- consumers -----------------------------------------------------------------------

    def emit_consumer(self) -> None:
        """The consumer warpgroups: the schedule's loops with mainloop and epilogue."""
        k = self.k
        self.stage, self.phase = self.ring_state()
        if not self.roles.producers:
            # Thread 0's load position, like the consumers' ring position, lives for the
            # whole kernel: it is carried across the persistent loop's tiles and split-K
            # units, never reset per tile (the ring's phases go on from tile to tile).
            self.load_stage, self.load_phase = self.ring_state()
        tid = self.tid
        self.thread_in_warpgroup = k.binary(ptx.AndOp, tid, k.const(127))
        self.signaller = k.setp("lo", self.thread_in_warpgroup, k.const(self.cluster_size))
        self.warp = k.binary(ptx.AndOp, k.shr(tid, k.const(5)), k.const(3))
        self.lane = k.binary(ptx.AndOp, tid, k.const(31))
        wg_m = self.params.warpgroup[0]
        # Row of this thread's first accumulator element in the CTA tile, and its column.
        first = k.add(k.mul(self.warp, k.const(16)), k.shr(self.lane, k.const(2)))
        if not self.pingpong:
            first = k.add(k.mul(self.consumer, k.const(wg_m)), first)
        self.row0 = first
        self.col0 = k.mul(k.binary(ptx.AndOp, self.lane, k.const(3)), k.const(2))
        self.tiles_seen = k.const(0)
        self.walk(self.func.body.block.ops, None, self.consumer_op)
        if self.store_maps:
            # Shared memory must outlive the TMA stores that read it.
            thread = self.thread_in_warpgroup
            self.put(hopper.BulkWaitGroupOp(0, read=False), k.setp("eq", thread, k.const(0)))

    def load_ahead(self, loop: scf.ForOp, base: SSAValue, distances: Sequence[int]) -> None:
        """Non-specialized pipeline: thread 0 loads the K blocks `distance` iterations after
        iteration `base` (a register holding an induction-variable value), if they exist."""
        k = self.k
        iv_arg = loop.body.block.args[0]
        saved = self.regs.get(iv_arg)
        if self.load_stage is None or self.load_phase is None:
            # Made at the kernel's top level by emit_consumer: made here, inside the
            # persistent loop, they would restart at stage 0 on every tile while the
            # consumers' position goes on, and the first wait of the second tile would hang.
            raise ScheduleError(f"{self.where}: the load position of the ring is not set up")
        for distance in distances:
            at = k.mad(k.const(distance), self.reg(loop.step), base)
            skip = k.fresh_label("no_load")
            inside = k.setp("lo", at, self.reg(loop.ub))
            k.bra(skip, k.binary(ptx.AndOp, inside, self.leader), negated=True)
            self.regs[iv_arg] = at
            self.issue_loads(loop, self.load_stage, self.load_phase)
            k.label(skip)
        if saved is None:
            self.regs.pop(iv_arg, None)
        else:
            self.regs[iv_arg] = saved

    def advance_by(self, count: SSAValue) -> None:
        """Move the ring position `count` K blocks ahead (the other consumer's tile)."""
        k = self.k
        stages = k.const(self.roles.stages)
        total = k.add(self.stage, count)
        laps = k.binary(ptx.DivOp, total, stages)
        k.assign(self.stage, k.binary(ptx.RemOp, total, stages))
        flip = k.binary(ptx.AndOp, laps, k.const(1))
        k.assign(self.phase, k.binary(ptx.XorOp, self.phase, flip))

    def consumer_op(self, op: Operation) -> bool:
        """The consumers' own lowering of a tile op; False for the generic one."""
        if isinstance(op, scf.ForOp) and op is self.mainloop:
            self.consumer_mainloop(op)
            return True
        if isinstance(op, sched.ZeroTileOp):
            self.accumulators[op.result] = self.zero_accumulator()
            return True
        if isinstance(op, sched.LoadTileOp):
            self.epilogue_loads[op.result] = op
            return True
        if isinstance(op, sched.EpilogueOp):
            self.pending_epilogue = op
            return True
        if isinstance(op, sched.StoreTileOp):
            self.stores.append(op)
            if (
                len(self.stores) == len(self.pending_epilogue.outputs)
                if self.pending_epilogue
                else False
            ):
                self.emit_epilogue()
            return True
        if isinstance(op, sched.StorePartialOp):
            self.store_partial(op)
            return True
        if isinstance(op, sched.ArriveOp):
            self.arrive(op)
            return True
        if isinstance(op, sched.ReducePartialsOp):
            self.reduce_partials(op)
            return True
        return False

    # --- split-K -------------------------------------------------------------------------

    def partial_address(self, workspace: SSAValue, slab: SSAValue) -> SSAValue:
        """This thread's first float in tile slab `slab` of the f32 workspace.

        A slab holds one partial tile in the accumulator fragment order: warpgroup part,
        then register, then thread (so every store and load is coalesced). A workspace of
        more than 2^32 floats is addressed with a 64-bit slab offset.
        """
        k = self.k
        tile_elements = self.params.tile[0] * self.params.tile[1]
        registers = self.m_blocks * self.n_chunks * self.params.instr[1] // 2
        thread = self.thread_in_warpgroup
        if math.prod(self.workspace_shape(workspace)) > WIDE_OFFSETS:
            inner = thread
            if not self.pingpong:
                inner = k.mad(self.consumer, k.const(registers * 128), inner)
            address = k.add(self.reg(workspace), k.mul_wide(inner, k.const(4)))
            return k.mad_wide(slab, k.const(tile_elements * 4), address)
        first = k.mad(slab, k.const(tile_elements), thread)
        if not self.pingpong:
            first = k.mad(self.consumer, k.const(registers * 128), first)
        return k.add(self.reg(workspace), k.mul_wide(first, k.const(4)))

    def is_partials(self, arg: BlockArgument) -> bool:
        """The argument is a split-K workspace of partial tiles."""
        attrs = self.func.arg_attrs
        if attrs is None:
            return False
        entry = attrs.data[arg.index]
        assert isinstance(entry, DictionaryAttr)
        return entry.data.get("sched.workspace") == StringAttr("partials")

    def workspace_shape(self, workspace: SSAValue) -> tuple[int, ...]:
        """The f32 workspace as the kernel addresses it: [slices, tiles, tile m, tile n],
        whole tiles even where the accumulator lacks an axis (M or N of 1)."""
        memref_type = workspace.type
        assert isinstance(memref_type, MemRefType)
        shape = tuple(memref_type.get_shape())
        return (*shape[:2], self.params.tile[0], self.params.tile[1])

    def workspace_slab(self, indices: Sequence[SSAValue], workspace: SSAValue) -> SSAValue:
        """The linear slab index of [slice, tile] (or [tile]) in the workspace's leading dims."""
        k = self.k
        memref_type = workspace.type
        assert isinstance(memref_type, MemRefType)
        shape = list(memref_type.get_shape())
        slab: SSAValue | None = None
        for dim, index in enumerate(indices):
            term = self.reg(index)
            slab = term if slab is None else k.mad(slab, k.const(shape[dim]), term)
        assert slab is not None
        return slab

    def store_partial(self, op: sched.StorePartialOp) -> None:
        """Write this thread's partial accumulators to its slab of the workspace."""
        k = self.k
        acc = self.accumulators[op.value]
        slab = self.workspace_slab(list(op.indices), op.workspace)
        address = self.partial_address(op.workspace, slab)
        flat = [reg for chunk in acc.chunks for reg in chunk]
        for index, reg in enumerate(flat):
            k.st("global", address, [reg], index * 128 * 4)

    def sync_tile_threads(self) -> None:
        """Barrier of the threads that share the current tile (one or both consumers)."""
        if self.pingpong:
            first = self.k.setp("eq", self.consumer, self.k.const(0))
            self.put(hopper.NamedBarrierOp("sync", SPLIT_K_BARRIER, 128), first)
            second = self.k.setp("ne", self.consumer, self.k.const(0))
            self.put(hopper.NamedBarrierOp("sync", SPLIT_K_BARRIER + 1, 128), second)
            return
        self.k.append(hopper.NamedBarrierOp("sync", SPLIT_K_BARRIER, 256))

    def arrive(self, op: sched.ArriveOp) -> None:
        """Count this slice on the tile's counter; every thread gets the old count."""
        k = self.k
        memref_type = op.counters.type
        assert isinstance(memref_type, MemRefType)
        slices = self.params.split_k
        k.append(ptx.FenceOp("acq_rel_gpu"))
        self.sync_tile_threads()
        counter = k.add(self.reg(op.counters), k.mul_wide(self.reg(op.indices[0]), k.const(4)))
        thread = self.thread_in_warpgroup
        leader = k.setp("eq", thread, k.const(0))
        if not self.pingpong:
            leader = k.binary(ptx.AndOp, leader, k.setp("eq", self.consumer, k.const(0)))
        slot = k.add(self.empty, k.const(8 * self.roles.stages))
        slot = k.mad(self.consumer, k.const(4), slot) if self.pingpong else slot
        old = self.put(
            ptx.InstOp("atom.global.acq_rel.gpu.add.u32 {0}, [{1}], 1", [counter], [ptx.U32]),
            leader,
        ).results[0]
        last = k.setp("eq", old, k.const(slices - 1))
        self.put(ptx.StOp("global", counter, [k.const(0)]), k.binary(ptx.AndOp, leader, last))
        self.put(ptx.StOp("shared", slot, [old]), leader)
        self.sync_tile_threads()
        (shared,) = k.ld("shared", slot, ptx.U32)
        k.append(ptx.FenceOp("acq_rel_gpu"))
        self.regs[op.old] = shared

    def reduce_partials(self, op: sched.ReducePartialsOp) -> None:
        """Sum the slices' partial tiles in slice order 0, 1, ..., S-1 into accumulators."""
        k = self.k
        memref_type = op.workspace.type
        assert isinstance(memref_type, MemRefType)
        shape = list(memref_type.get_shape())
        slices = shape[0]
        tiles = shape[1]
        registers = self.m_blocks * self.n_chunks * self.params.instr[1] // 2
        tile = self.reg(op.indices[0])
        sums: list[SSAValue] = []
        for piece in range(slices):
            slab = k.add(tile, k.const(piece * tiles))
            address = self.partial_address(op.workspace, slab)
            for index in range(registers):
                (value,) = k.ld("global", address, ptx.F32, 1, index * 128 * 4)
                if piece == 0:
                    sums.append(value)
                else:
                    sums[index] = k.add(sums[index], value)
        n = self.params.instr[1] // 2
        self.accumulators[op.result] = _Accumulator(
            [sums[i : i + n] for i in range(0, registers, n)]
        )

    @property
    def m_blocks(self) -> int:
        """wgmma m64 row blocks per consumer warpgroup."""
        return self.params.warpgroup[0] // 64

    @property
    def n_chunks(self) -> int:
        """wgmma N chunks per consumer warpgroup."""
        return self.params.warpgroup[1] // self.params.instr[1]

    def zero_accumulator(self) -> _Accumulator:
        """Fresh zero accumulators: chunk m_block * n_chunks + n_chunk, instr_n / 2 each."""
        k = self.k
        n = self.params.instr[1]
        return _Accumulator(
            [
                [k.const(0.0, ptx.F32) for _ in range(n // 2)]
                for _ in range(self.m_blocks * self.n_chunks)
            ]
        )

    def consumer_mainloop(self, loop: scf.ForOp) -> None:
        """The K loop of the consumers (wgmma on the ring), with the ping-pong skip."""
        k = self.k
        for arg, init in zip(loop.body.block.args[1:], loop.iter_args, strict=True):
            self.accumulators[arg] = self.accumulators[init]
        yielded = loop.body.block.last_op
        assert isinstance(yielded, scf.YieldOp)
        skip_label = None
        if self.pingpong:
            # Tiles alternate between the consumers; the other's K blocks are skipped.
            mine = k.setp("eq", k.binary(ptx.AndOp, self.tiles_seen, k.const(1)), self.consumer)
            work = k.fresh_label("my_tile")
            skip_label = k.fresh_label("tile_done")
            k.bra(work, mine)
            span = k.sub(self.reg(loop.ub), self.reg(loop.lb))
            step = self.reg(loop.step)
            trips = k.binary(ptx.DivOp, k.add(span, k.sub(step, k.const(1))), step)
            over = k.setp("hs", self.reg(loop.lb), self.reg(loop.ub))
            self.put(ptx.AssignOp(trips, k.const(0)), over)
            self.advance_by(trips)
            k.bra(skip_label)
            k.label(work)
            # Mainloops run in tile order: wait until the other consumer has passed all
            # the waits of the previous tile (its ring positions precede ours).
            first = k.setp("eq", self.tiles_seen, k.const(0))
            is_second = k.setp("ne", self.consumer, k.const(0))
            wait_second = k.setp("eq", self.consumer, k.const(0))
            skip_sync = k.fresh_label("no_order_wait")
            k.bra(skip_sync, first)
            self.put(hopper.NamedBarrierOp("sync", ORDER_BARRIER + 1, 256), wait_second)
            self.put(hopper.NamedBarrierOp("sync", ORDER_BARRIER, 256), is_second)
            k.label(skip_sync)
            self.order = (is_second, wait_second)
        if not self.roles.producers:
            self.load_ahead(loop, self.reg(loop.lb), range(self.roles.stages - 1))
        has_prev = k.const(0)
        prev = k.const(0)
        stage, phase = self.stage, self.phase
        instr_n = self.params.instr[1]
        _, tile_n, tile_k = self.params.tile
        tile_m = self.params.tile[0]
        wg_m = self.params.warpgroup[0]

        def k_block() -> None:
            """One K block: wait full, wgmmas, keep one group in flight, release."""
            for op in loop.body.block.ops:
                if not isinstance(op, sched.LoadTileOp | sched.MmaOp | scf.YieldOp):
                    self.emit_index_op(op)
            k.append(hopper.MbarrierWaitOp(self.barrier(self.full, stage), phase))
            slot_base = k.mad(stage, k.const(self.stage_bytes), self.ring)
            k.append(hopper.WgmmaFenceOp())
            for op in loop.body.block.ops:
                if not isinstance(op, sched.MmaOp):
                    continue
                acc = self.accumulators[op.acc]
                self.accumulators[op.result] = acc
                a_load, b_load = op.a.owner, op.b.owner
                assert isinstance(a_load, sched.LoadTileOp)
                assert isinstance(b_load, sched.LoadTileOp)
                a_slot, b_slot = slot_of(a_load), slot_of(b_load)
                a_op = self.operands[a_slot]
                b_op = self.operands[b_slot]
                a_tile = hopper.TileAttr(a_op.major, SWIZZLE, tile_m, tile_k)
                b_tile = hopper.TileAttr(b_op.major, SWIZZLE, tile_n, tile_k)
                a_base = k.add(slot_base, k.const(self.slot_offsets[a_slot]))
                if not self.pingpong:
                    offset = a_tile.layout.start_offset(wg_m, 0)
                    a_base = k.mad(self.consumer, k.const(offset), a_base)
                b_base = k.add(slot_base, k.const(self.slot_offsets[b_slot]))
                for kk in range(tile_k // 16):
                    for m_block in range(self.m_blocks):
                        a_desc = k.append(
                            hopper.MatrixDescriptorOp(a_base, a_tile, 64 * m_block, kk * 16)
                        ).result
                        for chunk in range(self.n_chunks):
                            regs = acc.chunks[m_block * self.n_chunks + chunk]
                            b_desc = k.append(
                                hopper.MatrixDescriptorOp(b_base, b_tile, chunk * instr_n, kk * 16)
                            ).result
                            k.append(
                                hopper.WgmmaMmaAsyncOp(
                                    instr_n,
                                    a_op.dtype,
                                    a_desc,
                                    b_desc,
                                    regs,
                                    a_major=a_op.major,
                                    b_major=b_op.major,
                                )
                            )
            k.append(hopper.WgmmaCommitGroupOp())
            k.append(hopper.WgmmaWaitGroupOp(1))
            self.release(prev, k.setp("ne", has_prev, k.const(0)))
            k.assign(prev, stage)
            k.assign(has_prev, k.const(1))
            self.advance(stage, phase)
            if not self.roles.producers:
                self.load_ahead(loop, self.reg(loop.body.block.args[0]), [self.roles.stages - 1])

        self.emit_loop(loop, k_block)
        if self.pingpong:
            # Let the other consumer start the next tile's mainloop, if there is a next tile.
            is_second, is_first = self.order
            has_next: SSAValue = k.setp("eq", k.const(0), k.const(1))
            if self.loops:
                iv, upper, step = self.loops[-1]
                has_next = k.setp("lo", k.add(iv, step), upper)
            signal_first = k.binary(ptx.AndOp, has_next, is_first)
            signal_second = k.binary(ptx.AndOp, has_next, is_second)
            self.put(hopper.NamedBarrierOp("arrive", ORDER_BARRIER, 256), signal_first)
            self.put(hopper.NamedBarrierOp("arrive", ORDER_BARRIER + 1, 256), signal_second)
        self.prefetch_epilogue_operands(loop)
        k.append(hopper.WgmmaWaitGroupOp(0))
        self.release(prev, k.setp("ne", has_prev, k.const(0)))
        for result, value in zip(loop.results, yielded.operands, strict=True):
            self.accumulators[result] = self.accumulators[value]
        self.skip_label = skip_label

    # --- epilogue ------------------------------------------------------------------------

    def emit_epilogue(self) -> None:
        """The pending sched.epilogue and its stores, on this thread's elements."""
        op = self.pending_epilogue
        assert op is not None
        stores = self.stores
        self.pending_epilogue = None
        self.stores = []
        block = op.body.block
        yielded = block.last_op
        assert isinstance(yielded, sched.YieldOp)
        instr_n = self.params.instr[1]
        chunks = self.params.warpgroup[1] // instr_n
        # Bind block arguments to accumulators or operand tiles.
        self.bound = {}
        for arg, value in zip(block.args, op.inputs, strict=True):
            if value in self.accumulators:
                self.bound[arg] = self.accumulators[value]
            elif value in self.epilogue_loads:
                self.bound[arg] = self.epilogue_loads[value]
            else:
                raise ScheduleError(
                    f"{self.where}: epilogue input {value} is neither an accumulator nor a "
                    "loaded tile"
                )
        store_of: list[tuple[sched.StoreTileOp, SSAValue]] = []
        outputs: list[SSAValue] = list(op.outputs)
        for store in stores:
            if store.value not in outputs:
                raise ScheduleError(f"{self.where}: a store_tile must store an epilogue output")
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
            self.stores_through_smem(through_smem)

    def begin_epilogue(self) -> None:
        """Fresh per-tile epilogue state: row registers, addressing, loaded elements."""
        if self.epilogue_begun:
            return
        self.epilogue_begun = True
        k = self.k
        # Row slot r of this thread: m block r // 2, upper or lower 8 rows (r % 2).
        self.rows = [
            k.add(self.row0, k.const(64 * (r // 2) + 8 * (r % 2))) for r in range(2 * self.m_blocks)
        ]
        self.accesses = {}
        self.col_ok = {}
        self.load_memo = {}

    def store_map(self, store: sched.StoreTileOp) -> TmaOperand | None:
        """The tensor map of a store's output when it goes through shared memory."""
        dest = store.dest
        if not isinstance(dest, BlockArgument):
            return None
        return self.store_maps.get(dest.index)

    def stores_through_smem(self, stores: list[tuple[sched.StoreTileOp, SSAValue]]) -> None:
        """Epilogue "smem": each warpgroup writes its tile box by box (64 rows x 128 bytes,
        128-byte swizzle) to a shared buffer, and one thread stores each box with TMA
        (clipped at the output's bounds).

        16-bit outputs are written with stmatrix, f32 outputs with st.shared.v2. A box's
        values are computed before the warpgroup's barrier, which then only orders the
        shared-memory writes. Two buffers per warpgroup alternate: before the barrier that
        ends box i, the storing thread waits until the TMA store of box i - 1 has read its
        buffer, which box i + 1 rewrites.
        """
        k = self.k
        leader = k.setp("eq", self.thread_in_warpgroup, k.const(0))
        first = k.setp("eq", self.consumer, k.const(0))
        second = k.setp("ne", self.consumer, k.const(0))
        buffers = k.mad(
            self.consumer,
            k.const(hw.EPILOGUE_BUFFERS * self.buffer_bytes()),
            k.add(self.ring, k.const(self.epilogue_offset())),
        )

        def sync() -> None:
            """Barrier of this warpgroup's 128 threads."""
            self.put(hopper.NamedBarrierOp("sync", EPILOGUE_BARRIER, 128), first)
            self.put(hopper.NamedBarrierOp("sync", EPILOGUE_BARRIER + 1, 128), second)

        # The previous tile's last stores may still read the buffers.
        self.put(hopper.BulkWaitGroupOp(0, read=True), leader)
        sync()
        count = 0
        # This thread's place (box_lane) in an f32 box (True) and a 16-bit one (False).
        lanes: dict[bool, tuple[SSAValue, SSAValue]] = {}
        for store, value in stores:
            operand = self.store_map(store)
            assert operand is not None
            box_columns = operand.box[-1]
            tmap = self.maps[len(self.operands) + list(self.store_maps).index(operand.arg)]
            wide = operand.dtype == "f32"
            if wide not in lanes:
                lanes[wide] = self.box_lane(operand.dtype)
            row, chunk = lanes[wide]
            for m_block in range(self.m_blocks):
                for box in range(self.params.warpgroup[1] // box_columns):
                    slot = count % hw.EPILOGUE_BUFFERS
                    buffer = k.add(buffers, k.const(slot * self.buffer_bytes()))
                    packed = self.box_values(value, operand.dtype, m_block, box * box_columns)
                    if operand.dtype == "f32":
                        self.write_f32_box(k.add(buffer, row), chunk, packed)
                    else:
                        self.write_16bit_box(k.add(buffer, row), chunk, packed)
                    k.append(hopper.FenceProxyAsyncOp())
                    self.put(hopper.BulkWaitGroupOp(0, read=True), leader)
                    sync()
                    coords = self.store_coordinates(store, m_block, box * box_columns)
                    self.put(hopper.TmaStoreOp(tmap, buffer, coords), leader)
                    self.put(hopper.BulkCommitGroupOp(), leader)
                    count += 1

    def box_lane(self, dtype: str) -> tuple[SSAValue, SSAValue]:
        """This thread's (row byte offset, 16-byte chunk xor) in a box of `dtype`.

        16-bit outputs: an stmatrix x4 row address, lane l giving row l % 8 of matrix l / 8
        (matrices 0/1: rows 0-7/8-15 of an even 8-column block, 2/3: of the odd one). f32:
        the thread's accumulator row (16 w + l / 4) and its column pair's chunk (columns
        2 (l % 4) are chunk (l % 4) / 2 of the block's two). The 128-byte swizzle stores
        chunk c of row r at chunk c ^ (r % 8).
        """
        k = self.k
        lane = self.lane
        warp_rows = k.mul(self.warp, k.const(16))
        if dtype == "f32":
            quad = k.shr(lane, k.const(2))
            pair = k.shr(k.binary(ptx.AndOp, lane, k.const(3)), k.const(1))
            row, chunk = k.add(warp_rows, quad), k.binary(ptx.XorOp, pair, quad)
        else:
            matrix = k.shr(lane, k.const(3))
            row8 = k.binary(ptx.AndOp, lane, k.const(7))
            half8 = k.mul(k.binary(ptx.AndOp, matrix, k.const(1)), k.const(8))
            row = k.add(k.add(warp_rows, half8), row8)
            chunk = k.binary(ptx.XorOp, k.shr(matrix, k.const(1)), row8)
        return k.mul(row, k.const(EPILOGUE_ROW_BYTES)), chunk

    def box_values(
        self, value: SSAValue, dtype: str, m_block: int, column0: int
    ) -> list[list[SSAValue]]:
        """This thread's values of one box, per 8-column block: f32 registers (row half,
        then e) for an f32 output, packed pairs (one per row half) otherwise."""
        instr_n = self.params.instr[1]
        columns = EPILOGUE_ROW_BYTES // (4 if dtype == "f32" else 2)
        blocks: list[list[SSAValue]] = []
        for column in range(column0, column0 + columns, 8):
            chunk, block8 = divmod(column, instr_n)
            block8 //= 8
            regs: list[SSAValue] = []
            for half in range(2):
                self.memo = {}
                slot = (chunk, block8, 2 * m_block + half)
                scalars = [self.scalar(value, (*slot, e), column + e) for e in range(2)]
                if dtype == "f32":
                    regs += [scalar.reg for scalar in scalars]
                else:
                    regs.append(
                        self.k.cvt_pack(scalars[1].reg, scalars[0].reg, ptx.reg(f"{dtype}x2"))
                    )
            blocks.append(regs)
        return blocks

    def write_16bit_box(
        self, base: SSAValue, chunk: SSAValue, blocks: list[list[SSAValue]]
    ) -> None:
        """stmatrix x4 per pair of 8-column blocks: this warp's 16 rows of the box (`base`:
        the buffer plus this lane's row, `chunk`: its chunk xor, from `box_lane`)."""
        k = self.k
        for pair in range(len(blocks) // 2):
            at = k.binary(ptx.XorOp, chunk, k.const(2 * pair))
            address = k.mad(at, k.const(16), base)
            k.append(hopper.StmatrixOp(address, [*blocks[2 * pair], *blocks[2 * pair + 1]]))

    def write_f32_box(self, base: SSAValue, chunk: SSAValue, blocks: list[list[SSAValue]]) -> None:
        """st.shared.v2.f32 of each column pair, in the swizzled rows of the box (`base`,
        `chunk` as for write_16bit_box); row half 1 is 8 rows below."""
        k = self.k
        base = k.add(base, k.mul(k.binary(ptx.AndOp, self.lane, k.const(1)), k.const(8)))
        for block, regs in enumerate(blocks):
            at = k.binary(ptx.XorOp, chunk, k.const(2 * block))
            address = k.mad(at, k.const(16), base)
            for half in range(2):
                k.st(
                    "shared", address, regs[2 * half : 2 * half + 2], 8 * EPILOGUE_ROW_BYTES * half
                )

    def store_coordinates(
        self, store: sched.StoreTileOp, m_block: int, column0: int
    ) -> list[SSAValue]:
        """TMA coordinates (innermost first) of the box of this warpgroup's tile at m block
        `m_block` and column `column0`."""
        k = self.k
        roles = self.memref_roles(store.dest)
        rows = k.const(64 * m_block)
        if not self.pingpong:
            rows = k.mad(self.consumer, k.const(self.params.warpgroup[0]), rows)
        coords: list[SSAValue] = []
        for index, role in zip(store.indices, roles, strict=True):
            position = self.reg(index)
            if role == "m":
                position = k.add(position, rows)
            elif role == "n" and column0:
                position = k.add(position, k.const(column0))
            coords.append(position)
        return list(reversed(coords))

    def scalar(self, value: SSAValue, slot: tuple[int, int, int, int], col: int) -> _Scalar:
        """The f32 register of epilogue `value` at accumulator element `slot`."""
        key = (value, slot)
        found = self.memo.get(key)
        if found is not None:
            return found
        result = self._scalar(value, slot, col)
        self.memo[key] = result
        return result

    def _scalar(self, value: SSAValue, slot: tuple[int, int, int, int], col: int) -> _Scalar:
        """Compute the register of `value` at an element (see `scalar`)."""
        chunk, block8, half, e = slot
        bound = self.bound.get(value)
        if isinstance(bound, _Accumulator):
            regs = bound.chunks[(half // 2) * self.n_chunks + chunk]
            return _Scalar(regs[4 * block8 + 2 * (half % 2) + e], "f32")
        if isinstance(bound, sched.LoadTileOp):
            return self.load_scalar(bound, half, col)
        op = value.owner
        assert isinstance(op, Operation)
        if isinstance(op, SplatOp):
            result_type = op.result.type
            assert isinstance(result_type, TensorType)
            return _Scalar(self.const_f32(op.scalar), _dtype(result_type.element_type))
        name = op.name
        ins = [self.scalar(operand, slot, col) for operand in op.operands]
        if name == "fusion.broadcast":
            return ins[0]
        if name == "fusion.cast":
            result_type = op.results[0].type
            assert isinstance(result_type, TensorType)
            dtype = _dtype(result_type.element_type)
            widening = ins[0].exact and dtype in ("f32", ins[0].dtype)
            return _Scalar(self.rounded(ins[0]), dtype, widening)
        regs = [self.rounded(s) for s in ins]
        out = self.pointwise(name, op, regs)
        return _Scalar(out, "f32")

    def rounded(self, value: _Scalar) -> SSAValue:
        """The register rounded to the dtype it stands for."""
        k = self.k
        if value.dtype == "f32" or value.exact:
            return value.reg
        low = k.cvt(value.reg, ptx.reg(value.dtype), "rn")
        return k.cvt(low, ptx.F32)

    def const_f32(self, value: float) -> SSAValue:
        """An f32 immediate in a register."""
        return self.k.const(value, ptx.F32)

    def pointwise(self, name: str, op: Operation, regs: list[SSAValue]) -> SSAValue:
        """One pointwise fusion op on f32 registers."""
        k = self.k
        if name == "fusion.add":
            return k.add(regs[0], regs[1])
        if name == "fusion.sub":
            return k.sub(regs[0], regs[1])
        if name == "fusion.mul":
            return k.mul(regs[0], regs[1])
        if name == "fusion.div":
            return k.binary(ptx.DivOp, regs[0], regs[1])
        if name == "fusion.neg":
            return k.unary(ptx.NegOp, regs[0])
        if name == "fusion.relu":
            return k.binary(ptx.MaxOp, regs[0], self.const_f32(0.0))
        if name == "fusion.exp":
            return k.unary(ptx.Ex2Op, k.mul(regs[0], self.const_f32(LOG2E)))
        if name == "fusion.tanh":
            return k.unary(ptx.TanhOp, regs[0])
        if name in ("fusion.sigmoid", "fusion.silu"):
            x = regs[0]
            e = k.unary(ptx.Ex2Op, k.mul(x, self.const_f32(-LOG2E)))
            sig = k.unary(ptx.RcpOp, k.add(e, self.const_f32(1.0)))
            return sig if name == "fusion.sigmoid" else k.mul(x, sig)
        if name == "fusion.gelu":
            approximate = op.properties.get("approximate")
            if approximate is not None and getattr(approximate, "data", "") == "tanh":
                return self.gelu_tanh(regs[0])
            return self.gelu_erf(regs[0])
        raise ScheduleError(f"{self.where}: epilogue op {name} is not lowered yet")

    def gelu_tanh(self, x: SSAValue) -> SSAValue:
        """0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))), with tanh.approx."""
        k = self.k
        x3 = k.mul(k.mul(x, x), x)
        inner = k.mul(k.fma(x3, self.const_f32(0.044715), x), self.const_f32(GELU_C))
        t = k.unary(ptx.TanhOp, inner)
        half_x = k.mul(x, self.const_f32(0.5))
        return k.fma(half_x, t, half_x)

    def gelu_erf(self, x: SSAValue) -> SSAValue:
        """0.5 x (1 + erf(x / sqrt 2)) = 0.5 x + 0.5 |x| erf(|x| / sqrt 2), the erf by
        Abramowitz and Stegun 7.1.26 (absolute error below 1.5e-7, far under bf16's
        rounding): erf(z) = 1 - t (a1 + t (a2 + ... + t a5)) exp(-z^2), t = 1 / (1 + p z)."""
        k = self.k
        half_abs = k.mul(k.unary(ptx.AbsOp, x), self.const_f32(0.5))
        z = k.mul(half_abs, self.const_f32(2.0 * ERF_SCALE))
        t = k.unary(ptx.RcpOp, k.fma(z, self.const_f32(ERF_P), self.const_f32(1.0)))
        poly = self.const_f32(ERF_A[-1])
        for coefficient in reversed(ERF_A[:-1]):
            poly = k.fma(poly, t, self.const_f32(coefficient))
        poly = k.mul(poly, t)
        decay = k.unary(ptx.Ex2Op, k.mul(k.mul(z, z), self.const_f32(-LOG2E)))
        erf = k.fma(k.unary(ptx.NegOp, poly), decay, self.const_f32(1.0))
        return k.fma(half_abs, erf, k.mul(x, self.const_f32(0.5)))

    def access(self, memref: SSAValue, indices: Sequence[SSAValue], store: bool = False) -> _Access:
        """Per-tile addressing of a memref's elements at this thread's accumulator layout.

        Element offsets are 32-bit where the memref has at most 2^32 elements (every
        in-bounds offset then fits; the others are never dereferenced), else 64-bit: one
        mad.wide per axis (a 64-bit multiply for strides of 2^32 bytes or more). An output
        without an m (n) axis is written from the tile's first row (column) only: the
        iteration space then has M = 1 (N = 1), or every row holds the same value.
        """
        key = (memref, *indices)
        found = self.accesses.get(key)
        if found is not None:
            return found
        k = self.k
        memref_type = memref.type
        assert isinstance(memref_type, MemRefType)
        roles = self.memref_roles(memref)
        shape = list(memref_type.get_shape())
        dtype = _dtype(memref_type.element_type)
        size = 4 if dtype == "f32" else 2
        strides = [math.prod(shape[d + 1 :]) for d in range(len(shape))]
        wide = math.prod(shape) > WIDE_OFFSETS
        halves = len(self.rows) if "m" in roles or store else 1
        row_terms: list[list[tuple[SSAValue, int]]] = [[] for _ in range(halves)]
        row_ok: list[SSAValue | None] = [None] * halves
        if store and "m" not in roles:
            row_ok = [k.setp("eq", self.rows[half], k.const(0)) for half in range(halves)]
        col_term: tuple[SSAValue, int] | None = None
        col_limit: SSAValue | None = None
        col_stride = 0
        if store and "n" not in roles:
            col_limit = k.mov(k.sub(k.const(1), self.col0), ptx.S32)
        row_parts: list[SSAValue | None] = [None] * halves
        col_part: SSAValue | None = None
        for dim, (index, role) in enumerate(zip(indices, roles, strict=True)):
            position = self.reg(index)
            if role == "n":
                position = k.add(position, self.col0)
                col_limit = k.mov(k.sub(k.const(shape[dim]), position), ptx.S32)
                col_stride = strides[dim] * size
                col_term = (position, strides[dim])
                if not wide:
                    col_part = k.mul(position, k.const(strides[dim]))
                continue
            for half in range(halves):
                at = k.add(position, self.rows[half]) if role == "m" else position
                if role == "m":
                    row_ok[half] = k.setp("lo", at, k.const(shape[dim]))
                if wide:
                    row_terms[half].append((at, strides[dim]))
                    continue
                term = k.mul(at, k.const(strides[dim])) if strides[dim] != 1 else at
                previous = row_parts[half]
                row_parts[half] = term if previous is None else k.add(previous, term)
        base = self.reg(memref)
        bases: list[SSAValue] = []
        if wide:
            bases = self.wide_bases(base, row_terms, col_term, size)
        for linear in [] if wide else row_parts:
            if col_part is not None:
                linear = col_part if linear is None else k.add(linear, col_part)
            if linear is None:
                bases.append(base)
                continue
            bases.append(k.add(base, k.mul_wide(linear, k.const(size))))
        found = _Access(bases, row_ok, col_limit, col_stride, dtype)
        self.accesses[key] = found
        return found

    def wide_bases(
        self,
        base: SSAValue,
        row_terms: list[list[tuple[SSAValue, int]]],
        col_term: tuple[SSAValue, int] | None,
        size: int,
    ) -> list[SSAValue]:
        """Per row slot: `base` plus the byte offset of its terms, summed in 64 bits."""
        if col_term is not None:
            base = self.add_wide(base, col_term[0], col_term[1] * size)
        bases: list[SSAValue] = []
        for terms in row_terms:
            address = base
            for at, stride in terms:
                address = self.add_wide(address, at, stride * size)
            bases.append(address)
        return bases

    def add_wide(self, address: SSAValue, index: SSAValue, stride_bytes: int) -> SSAValue:
        """`address + index * stride_bytes` in 64 bits (`index` a 32-bit register)."""
        k = self.k
        if stride_bytes < 1 << 32:
            return k.mad_wide(index, k.const(stride_bytes), address)
        product = k.mul(k.cvt(index, ptx.U64), k.const(stride_bytes, ptx.U64))
        return k.add(address, product)

    def element(
        self, access: _Access, half: int, col: int
    ) -> tuple[SSAValue, int, SSAValue | None]:
        """(base register, byte offset, in-bounds predicate) of the element at (half, col)."""
        k = self.k
        half = min(half, len(access.bases) - 1)
        pred = access.row_ok[half]
        if access.col_limit is not None:
            key = (id(access), col)
            col_ok = self.col_ok.get(key)
            if col_ok is None:
                col_ok = k.setp("gt", access.col_limit, k.const(col, ptx.S32))
                self.col_ok[key] = col_ok
            pred = col_ok if pred is None else k.binary(ptx.AndOp, pred, col_ok)
        return access.bases[half], col * access.col_stride, pred

    def memref_roles(self, memref: SSAValue) -> tuple[str, ...]:
        """The roles of a kernel argument's axes."""
        assert isinstance(memref, BlockArgument)
        return _arg_roles(self.func, memref.index)

    def load_scalar(self, load: sched.LoadTileOp, half: int, col: int) -> _Scalar:
        """An epilogue operand's element (row slot `half`, column `col`), loaded once.

        Where the operand's rows are contiguous along n and of even length, the element and
        its neighbour (columns 2j and 2j + 1, which the same thread holds) are loaded
        together by one vector load.
        """
        k = self.k
        roles = self.memref_roles(load.source)
        access = self.access(load.source, list(load.indices))

        def key(column: int) -> tuple[object, ...]:
            return (load, half if "m" in roles else None, column if "n" in roles else None)

        found = self.load_memo.get(key(col))
        if found is not None:
            return _Scalar(found, access.dtype, exact=True)
        kind = ptx.F32 if access.dtype == "f32" else ptx.reg(access.dtype)
        memref_type = load.source.type
        assert isinstance(memref_type, MemRefType)
        extent = memref_type.get_shape()[-1]
        paired = (
            roles[-1] == "n"
            and extent % 2 == 0
            and access.col_stride == (4 if access.dtype == "f32" else 2)
        )
        first = col - col % 2 if paired else col
        base, offset, pred = self.element(access, half, first)
        loaded = self.put(ptx.LdOp("global", base, kind, 2 if paired else 1, offset), pred)
        for column, value in zip((first, first + 1), loaded.values, strict=False):
            if access.dtype != "f32":
                value = k.cvt(value, ptx.F32)
            self.load_memo[key(column)] = value
        return _Scalar(self.load_memo[key(col)], access.dtype, exact=True)

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
            if "m" in self.memref_roles(op.source):
                continue
            if any(index not in self.regs for index in op.indices):
                continue
            for col in self.thread_columns():
                self.load_scalar(op, 0, col)

    def thread_columns(self) -> list[int]:
        """The columns of the warpgroup tile this thread holds (col0 added at run time)."""
        instr_n = self.params.instr[1]
        return [
            chunk * instr_n + block8 * 8 + e
            for chunk in range(self.params.warpgroup[1] // instr_n)
            for block8 in range(instr_n // 8)
            for e in range(2)
        ]

    def store_pair(
        self, store: sched.StoreTileOp, values: list[_Scalar], half: int, col: int
    ) -> None:
        """Store two neighbouring elements of an output from registers (clipped)."""
        k = self.k
        roles = self.memref_roles(store.dest)
        memref_type = store.dest.type
        assert isinstance(memref_type, MemRefType)
        shape = list(memref_type.get_shape())
        access = self.access(store.dest, list(store.indices), store=True)
        dtype = access.dtype
        if roles and roles[-1] == "n" and shape[-1] % 2 == 0:
            base, offset, pred = self.element(access, half, col)
            if dtype == "f32":
                data = [v.reg for v in values]
            else:
                data = [k.cvt_pack(values[1].reg, values[0].reg, ptx.reg(f"{dtype}x2"))]
            self.put(ptx.StOp("global", base, data, offset), pred)
            return
        for e, value in enumerate(values):
            base, offset, pred = self.element(access, half, col + e)
            data = value.reg if dtype == "f32" else k.cvt(value.reg, ptx.reg(dtype), "rn")
            self.put(ptx.StOp("global", base, [data], offset), pred)


def lower_kernel(func: FuncOp) -> tuple[ptx.PtxModuleOp, LaunchPlan]:
    """Lower one partitioned kernel: (the ptx module with hopper ops, its launch plan)."""
    where = f"lower-schedule-to-hopper: @{func.sym_name.data}"
    params_attr = func.attributes.get(PARAMS_ATTR)
    if not isinstance(params_attr, ScheduleParamsAttr) or ROLES_ATTR not in func.attributes:
        raise ScheduleError(f"{where}: run materialize-schedule and partition-warp-roles first")
    lowering = _Lowering(func, params_attr.data, warp_roles(func))
    lowering.mainloop = mainloop_of(func)
    plan = lowering.build()
    return lowering.module, plan


class LowerScheduleToHopper(ModulePass):
    """Replace each partitioned kernel by a ptx.module of hopper and ptx ops."""

    name = "lower-schedule-to-hopper"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        """Lower every partitioned kernel of the module; a kernel not yet partitioned, or a
        fusion not yet materialized, is an error naming the passes to run first."""

        del ctx
        functions = [func for func in op.ops if isinstance(func, FuncOp)]
        for func in functions:
            too_early = level_error(self.name, func, f"no '{ROLES_ATTR}'")
            if too_early is not None:
                raise too_early
        for func in functions:
            if ROLES_ATTR not in func.attributes:
                continue
            try:
                module, _ = lower_kernel(func)
            except ScheduleError as error:
                raise DiagnosticException(str(error)) from error
            op.body.block.insert_op_before(module, func)
            func.detach()
            func.erase()
