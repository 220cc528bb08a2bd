"""The launch plan of a kernel and the plan of its operands in shared memory.

`OperandPlan` decides, before any instruction is emitted, what every tile lives in: a
`TmaOperand` per mainloop load (its tensor map's view, box and cluster multicast) and its
slot in a ring stage, the outputs stored by TMA (epilogue "smem"), and the layout of the
dynamic shared memory (ring, barriers, epilogue buffers). `LaunchPlan` is what the back
end needs to launch the lowered kernel.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from xdsl.dialects.builtin import (
    BFloat16Type,
    DictionaryAttr,
    Float8E4M3FNType,
    Float8E5M2Type,
    Float16Type,
    Float32Type,
    IntegerAttr,
    StringAttr,
    SymbolRefAttr,
)
from xdsl.dialects.func import FuncOp
from xdsl.ir import Attribute, BlockArgument, Operation, SSAValue

from mmcomp.analysis.roles import ABSENT, iteration_space
from mmcomp.analysis.schedule_view import EXTENT_ATTR
from mmcomp.analysis.warp_roles import WarpRoles, mainloop_loads, mainloop_of
from mmcomp.arch import limits as hw
from mmcomp.dialects import ptx, sched
from mmcomp.dialects.fusion import AxisRolesAttr
from mmcomp.dialects.sched import ScheduleParams
from mmcomp.dialects.sched.shared_memory import SMEM_ALIGN, SharedMemoryLayout
from mmcomp.errors import ScheduleError
from mmcomp.ir.narrowing import is_memref, is_tensor

MAX_TMA_RANK = 5
"""Dimensions of a tensor map."""
MAX_COORDINATE = (1 << 31) - 1
"""Largest extent a TMA coordinate (signed 32-bit) or a 32-bit column limit reaches."""
TMA_STRIDE_BYTES = 16
"""TMA's global strides are multiples of this many bytes."""
MAINLOOP_TYPES = ("bf16", "f16", "f8e4m3", "f8e5m2")

FP8_OUTPUTS = ("f8e4m3", "f8e5m2")
"""The fp8 output types: stored from registers in pairs (`cvt.rn.satfinite.e4m3x2.f32`)."""

ELEMENT_SIZE = {"f32": 4, "bf16": 2, "f16": 2, "f8e4m3": 1, "f8e5m2": 1}
"""Bytes of each element type the epilogue reads or writes."""
"""The element types wgmma reads from the ring: 16-bit ones, and fp8 (K-major only)."""
SWIZZLE = 128
"""The swizzle span of every operand tile in shared memory (bytes)."""
SHARED_NAME = "mmcomp_shared"
"""The kernel's dynamic shared memory array (a name no fusion is likely to take)."""
EPILOGUE_ROWS = hw.WGMMA_M
"""Rows of one epilogue box (epilogue "smem"): one warpgroup's m64 block."""
EPILOGUE_ROW_BYTES = SWIZZLE
"""Bytes of one epilogue box row: 64 columns of a 16-bit output, 32 of an f32 output,
written with the 128-byte swizzle (stmatrix rows of 16 bytes then never share banks)."""


def dtype_of(element: Attribute) -> str:
    """The dtype name of a builtin float element type."""
    if isinstance(element, BFloat16Type):
        return "bf16"
    if isinstance(element, Float16Type):
        return "f16"
    if isinstance(element, Float32Type):
        return "f32"
    if isinstance(element, Float8E4M3FNType):
        return "f8e4m3"
    if isinstance(element, Float8E5M2Type):
        return "f8e5m2"
    raise ScheduleError(f"lower-schedule-to-hopper: unsupported element type {element}")


def arg_roles(func: FuncOp, index: int) -> tuple[str, ...]:
    """The fusion.roles of a kernel argument."""
    attrs = func.arg_attrs
    if attrs is None:
        return ()
    entry = attrs.data[index]
    assert isinstance(entry, DictionaryAttr)
    roles = entry.data.get("fusion.roles")
    return tuple(roles.roles) if isinstance(roles, AxisRolesAttr) else ()


def is_partials(func: FuncOp, arg: BlockArgument) -> bool:
    """The argument is a split-K workspace of partial tiles."""
    attrs = func.arg_attrs
    if attrs is None:
        return False
    entry = attrs.data[arg.index]
    assert isinstance(entry, DictionaryAttr)
    return entry.data.get("sched.workspace") == StringAttr("partials")


def workspace_shape(params: ScheduleParams, workspace: SSAValue) -> tuple[int, ...]:
    """The f32 workspace as the kernel addresses it: [slices, tiles, tile m, tile n],
    whole tiles even where the accumulator lacks an axis (M or N of 1)."""
    memref_type = workspace.type
    assert is_memref(memref_type)
    shape = tuple(memref_type.get_shape())
    return (*shape[:2], params.tile[0], params.tile[1])


# ----------------------------------------------------------------------------------------
# The launch plan
# ----------------------------------------------------------------------------------------


TmaOperand = ptx.TensorMap
"""A mainloop operand or TMA-stored output: how its tensor map is encoded and where its tile
lands. It is the ptx.entry's launch data for the map (`#ptx.tensor_map`) as it stands."""


@dataclass
class OperandPlan:
    """Where a kernel's tiles live: mainloop operands and ring slots, TMA-stored outputs,
    the layout of dynamic shared memory."""

    func: FuncOp
    params: ScheduleParams
    roles: WarpRoles
    operands: list[TmaOperand] = field(default_factory=list[TmaOperand])
    """The tensor map of each mainloop load, by ring slot."""
    slot_offsets: list[int] = field(default_factory=list[int])
    """Byte offset of each slot in a ring stage."""
    stage_bytes: int = 0
    """Bytes of one ring stage (every slot)."""
    store_maps: dict[int, TmaOperand] = field(default_factory=dict[int, TmaOperand])
    """Epilogue "smem": the tensor map of each output stored by TMA, by argument index."""
    row_stores: dict[int, TmaOperand] = field(default_factory=dict[int, TmaOperand])
    """Epilogue "smem": each output whose stores are clipped at a group's end, staged in
    the same boxes and stored by the warpgroup's threads in 16-byte row vectors (no tensor
    map: the box is the staging's), by argument index."""

    @staticmethod
    def build(func: FuncOp, params: ScheduleParams, roles: WarpRoles) -> OperandPlan:
        """The plan of a partitioned kernel."""
        plan = OperandPlan(func, params, roles)
        plan.plan_operands()
        plan.plan_stores()
        return plan

    @property
    def where(self) -> str:
        """The prefix of every error message."""
        return f"lower-schedule-to-hopper: @{self.func.sym_name.data}"

    @property
    def tensor_maps(self) -> int:
        """Tensor-map parameters: the mainloop operands', then the TMA-stored outputs'."""
        return len(self.operands) + len(self.store_maps)

    @property
    def dynamic_workspaces(self) -> bool:
        """Whether a split-K workspace's extent is known only at launch (the CTA tiles)."""
        return any(
            is_partials(self.func, arg) and ptx.DYNAMIC in arg.type.get_shape()
            for arg in memref_args(self.func)
            if is_memref(arg.type)
        )

    def store_map_index(self, operand: TmaOperand) -> int:
        """The tensor-map parameter of a TMA-stored output."""
        return len(self.operands) + list(self.store_maps).index(operand.arg)

    def plan_operands(self) -> None:
        """A TmaOperand per mainloop load, and the ring's slot offsets."""
        loop = mainloop_of(self.func)
        loads = mainloop_loads(loop)
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
            assert is_memref(memref)
            dtype = dtype_of(memref.element_type)
            if dtype not in MAINLOOP_TYPES:
                raise ScheduleError(
                    f"{self.where}: mainloop operand %{source.name_hint or source.index} is "
                    f"{dtype}; wgmma takes bf16, f16, f8e4m3 or f8e5m2 operands here"
                )
            operand = self.tma_view(load, rows_of.get(load, "m"))
            operand = self.shared_in_cluster(operand, arg_roles(self.func, source.index))
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
        launch; the view's extents stay the true ones, so the padding is never read. A
        runtime extent is contiguous only where it is the view's one axis longer than 1 (a
        [T, 1] operand of a dynamic K: a row of T elements, K-major).
        """
        source = load.source
        assert isinstance(source, BlockArgument)
        memref = source.type
        tile = load.result.type
        assert is_memref(memref) and is_tensor(tile)
        name = f"%{source.name_hint or f'arg{source.index}'}"
        roles = arg_roles(self.func, source.index)
        shape = tuple(memref.get_shape())
        tile_shape = tuple(tile.get_shape())
        dtype = dtype_of(memref.element_type)
        if len(roles) != len(shape):
            raise ScheduleError(f"{self.where}: mainloop operand {name} has no fusion.roles")
        # Axes of extent 1 add nothing to an address: the view drops them (but keeps k, so
        # that a K of 1 stays a K-major operand).
        axes = [
            axis
            for axis, role in enumerate(roles)
            if shape[axis] > 1 or shape[axis] == ptx.DYNAMIC or role == "k"
        ]
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
        element = hw.ELEMENT_BYTES[dtype]
        if element == 1 and major == "mn":
            raise ScheduleError(
                f"{self.where}: mainloop operand {name} (roles [{', '.join(roles)}]) is fp8 "
                f"({dtype}) with {inner_role} contiguous; wgmma reads fp8 operands K-major only "
                "(it transposes 16-bit operands only): store it with K contiguous"
            )
        box_elements = SWIZZLE // element
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
        if box[-1] % box_elements:
            raise ScheduleError(
                f"{self.where}: the contiguous tile extent of {name} is {box[-1]}, not a "
                f"multiple of {box_elements}"
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
        # A runtime extent is at least 1: a stride it multiplies is aligned for every value
        # where it is aligned at 1. Such maps take their strides from the array at bind time.
        static = tuple(1 if extent == ptx.DYNAMIC else extent for extent in shape)
        compact = [math.prod(static[axis + 1 :]) if axis >= 0 else 0 for axis in axes]
        aligned = all(
            extent == 1 or (stride * element) % TMA_STRIDE_BYTES == 0
            for extent, stride in zip(extents[:-1], compact[:-1], strict=True)
        )
        per_chunk = TMA_STRIDE_BYTES // element
        pitch = 0 if aligned else -(-extents[-1] // per_chunk) * per_chunk
        if pitch and (extents[-1] * element) % 2:
            raise ScheduleError(
                f"{self.where}: mainloop operand {name} ({dtype}) has rows of {extents[-1]} "
                f"bytes: not a multiple of 16, so TMA reads it through a padded staging copy, "
                "which moves 16-bit words; an fp8 operand's contiguous extent must be even "
                "there (pad it)"
            )
        # The staging copy keeps the argument's element order with rows of `pitch`.
        # A runtime contiguous extent multiplies the stride of every outer axis; a view whose
        # outer axes all have extent 1 (a [T, 1] operand: one row of T elements) has no
        # stride TMA steps along, so it is read as it is.
        dynamic = ptx.DYNAMIC in shape
        if dynamic and extents[-1] == ptx.DYNAMIC and any(e != 1 for e in extents[:-1]):
            role = roles[axes[-1]]
            other = "k" if role != "k" else row_role
            raise ScheduleError(
                f"{self.where}: mainloop operand {name} (roles [{', '.join(roles)}]) has the "
                f"runtime extent {role.upper()} as its contiguous axis: TMA needs 16-byte row "
                f"strides, which a runtime extent does not promise; store it with {other} "
                "contiguous, or compile it for a fixed extent"
            )
        strides = (
            () if dynamic else ptx.view_strides(shape, tuple(axes), tuple(extents), pitch, element)
        )
        return TmaOperand(
            source.index,
            dtype,
            tuple(extents),
            (*box[:-1], box_elements),
            box[-1] // box_elements,
            major,
            strides=strides,
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

    def shared_memory(self) -> SharedMemoryLayout:
        """The kernel's dynamic shared memory: the ring of the operands' tiles, its barriers,
        and the epilogue buffers where an output is stored through shared memory."""
        staged = self.store_maps or self.row_stores
        buffers = self.roles.consumers * hw.EPILOGUE_BUFFERS if staged else 0
        return SharedMemoryLayout(self.stage_bytes, self.roles.stages, buffers)

    def smem_bytes(self) -> int:
        """Ring + barriers + epilogue buffers + alignment slack."""
        return self.shared_memory().dynamic_bytes

    def epilogue_offset(self) -> int:
        """Offset of the epilogue buffers from the aligned base (after ring and barriers)."""
        return self.shared_memory().epilogue_offset

    def buffer_bytes(self) -> int:
        """One epilogue buffer: a box of 64 rows of 128 bytes (1024-aligned)."""
        return hw.EPILOGUE_BOX_BYTES

    def plan_stores(self) -> None:
        """With epilogue "smem": a tensor map per output that TMA can store, and the
        outputs staged the same way but stored by the threads.

        An output is staged when its innermost axis has role n, its rows are a multiple of
        16 bytes and the warpgroup tile is a whole number of boxes wide (a box row is 128
        bytes). TMA stores it unless its stores are clipped at a group's end (a TMA store
        clips only at the array's bounds): the warpgroup's threads then store the box's
        16-byte chunks, each under its row's and column's test (`row_stores`, not under
        swap_ab). The others are stored from registers.
        """
        if self.params.epilogue != "smem":
            return
        clipped = {
            op.dest.index
            for op in self.func.walk()
            if isinstance(op, sched.StoreTileOp)
            and op.rows is not None
            and isinstance(op.dest, BlockArgument)
        }
        for arg in self.func.body.block.args:
            attrs = self.func.arg_attrs
            if attrs is None:
                return
            entry = attrs.data[arg.index]
            assert isinstance(entry, DictionaryAttr)
            if "sched.output" not in entry.data:
                continue
            if arg.index in clipped and self.params.swap_ab:
                continue
            memref = arg.type
            assert is_memref(memref)
            roles = arg_roles(self.func, arg.index)
            dtype = dtype_of(memref.element_type)
            shape = tuple(memref.get_shape())
            size = 4 if dtype == "f32" else 2
            if dtype in FP8_OUTPUTS:
                continue  # the boxes are stmatrix's 16-bit ones: fp8 goes from registers
            if not roles or roles[-1] != "n" or "m" not in roles or (shape[-1] * size) % 16:
                continue
            columns = EPILOGUE_ROW_BYTES // size
            if self.params.warpgroup[1] % columns:
                continue
            box = tuple(
                EPILOGUE_ROWS if role == "m" else columns if role == "n" else 1 for role in roles
            )
            operand = TmaOperand(arg.index, dtype, shape, box, 1, "n")
            if arg.index in clipped:
                self.row_stores[arg.index] = operand
            else:
                self.store_maps[arg.index] = operand


def memref_args(func: FuncOp) -> list[BlockArgument]:
    """The kernel's array arguments (inputs, outputs, workspaces), before its extents."""
    return [arg for arg in func.body.block.args if is_memref(arg.type)]


def extent_args(func: FuncOp) -> list[tuple[BlockArgument, str]]:
    """The runtime extent arguments of a kernel (or of its launch function) and the extent
    each is (m, b0, ...)."""
    found: list[tuple[BlockArgument, str]] = []
    attrs = func.arg_attrs
    for arg in func.body.block.args:
        if is_memref(arg.type) or attrs is None:
            continue
        entry = attrs.data[arg.index]
        assert isinstance(entry, DictionaryAttr)
        extent = entry.data.get(EXTENT_ATTR)
        assert isinstance(extent, StringAttr)
        found.append((arg, extent.data))
    return found


CTA_TILES = "cta_tiles"
"""The extent of a split-K workspace's `?` axis: the CTA tiles the launch function gives."""


def dynamic_extents(func: FuncOp, arg: BlockArgument) -> str:
    """The runtime extent of each `?` axis of an array argument, space-separated."""
    assert is_memref(arg.type)
    shape = tuple(arg.type.get_shape())
    if ptx.DYNAMIC not in shape:
        return ""
    attrs = func.arg_attrs
    assert attrs is not None
    entry = attrs.data[arg.index]
    assert isinstance(entry, DictionaryAttr)
    if "sched.workspace" in entry.data:
        return " ".join(CTA_TILES for extent in shape if extent == ptx.DYNAMIC)
    roles = arg_roles(func, arg.index)
    return " ".join(
        role for extent, role in zip(shape, roles, strict=True) if extent == ptx.DYNAMIC
    )


def launch_data(plan: OperandPlan) -> tuple[list[ptx.KernelArray], ptx.Launch]:
    """What the entry says of its launch: each pointer parameter's array (role, name,
    shape, dtype) and the grid, cluster and shared memory; a ScheduleError for what cannot
    launch. The tensor maps are the plan's operands and store maps as they stand. A kernel
    with runtime extents names its launch function for the grid."""
    func = plan.func
    where = plan.where
    args = memref_args(func)
    if plan.smem_bytes() > hw.MAX_DYNAMIC_SMEM_PER_BLOCK:
        raise ScheduleError(
            f"{where}: {plan.roles.stages} stages of {plan.stage_bytes} bytes, the "
            f"barriers and {SMEM_ALIGN} bytes of alignment slack need {plan.smem_bytes()} "
            f"bytes of shared memory; the device allows {hw.MAX_DYNAMIC_SMEM_PER_BLOCK} "
            "(use fewer stages)"
        )
    grid_attr = func.attributes.get("sched.grid")
    if isinstance(grid_attr, SymbolRefAttr):
        grid, grid_function = 0, grid_attr.root_reference.data
    elif isinstance(grid_attr, IntegerAttr):
        grid, grid_function = grid_attr.value.data, ""
    else:
        raise ScheduleError(f"{where}: missing sched.grid (run materialize-schedule)")
    if grid % plan.cluster_size:
        raise ScheduleError(
            f"{where}: grid {grid} is not a multiple of the cluster size {plan.cluster_size}"
        )
    for arg in args:
        assert is_memref(arg.type)
        for axis, extent in enumerate(arg.type.get_shape()):
            if extent > MAX_COORDINATE:
                raise ScheduleError(
                    f"{where}: argument %{arg.name_hint or arg.index}: axis {axis} "
                    f"has extent {extent}; the kernel indexes each axis with signed "
                    f"32-bit coordinates, so at most {MAX_COORDINATE}"
                )
    counts = [func.attributes.get(key) for key in ("sched.num_inputs", "sched.num_outputs")]
    inputs, outputs = (
        count.value.data if isinstance(count, IntegerAttr) else 0 for count in counts
    )
    arrays: list[ptx.KernelArray] = []
    for arg in args:
        assert is_memref(arg.type)
        element = arg.type.element_type
        dtype = (
            "i32"
            if not isinstance(
                element,
                BFloat16Type | Float16Type | Float32Type | Float8E4M3FNType | Float8E5M2Type,
            )
            else dtype_of(element)
        )
        shape = tuple(arg.type.get_shape())
        if is_partials(func, arg):
            shape = workspace_shape(plan.params, arg)
        index = arg.index
        role = "input" if index < inputs else "output" if index < inputs + outputs else "workspace"
        name = arg.name_hint or f"arg{index}"
        arrays.append(ptx.KernelArray(role, name, shape, dtype, dynamic_extents(func, arg)))
    persistent = plan.params.strategy == "persistent"
    launch = ptx.Launch(grid, plan.smem_bytes(), plan.cluster_size, persistent, grid_function)
    return arrays, launch
