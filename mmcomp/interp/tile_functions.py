"""Tile-level semantics of the materialized schedule, on numpy arrays.

The functions here define exactly what the tile-level ops of the `sched` dialect do; the
Hopper lowering maps the same ops to TMA loads, wgmma and stores. Each works on whole tiles
with numpy slicing and matmul, never element by element:

- `load_tile`: a window of an operand starting at one index per axis; elements outside
  the operand read as zero (TMA's out-of-bounds fill);
- `mma_tile`: acc + A x B in float32, the axes of A, B and acc named by their roles;
- `store_tile`: writes the part of a tile that lies inside the destination (clipped),
  counting the writes of every destination element;
- `reduce_partials`: the split-K partial tiles summed in the fixed order 0, 1, ..., S-1;
- `accumulate_partial`: a stream-K segment's partial tile added to the running sum.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any, TypeVar

import numpy as np
from xdsl.dialects import arith, gpu
from xdsl.dialects.builtin import IndexType, IntegerAttr, TensorType
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    PythonValues,
    ReturnedValues,
    impl,
    impl_terminator,
    register_impls,
)
from xdsl.interpreters.builtin import scalar_attr
from xdsl.ir import Attribute, BlockArgument, SSAValue

from mmcomp.dialects import sched
from mmcomp.dialects.fusion import AxisRolesAttr
from mmcomp.dialects.fusion.scales import SCALE_BLOCK
from mmcomp.errors import ScheduleError
from mmcomp.ir.dtypes import DTYPES, of_element_type

T = TypeVar("T")


def _window(
    shape: Sequence[int], starts: Sequence[int], extents: Sequence[int]
) -> tuple[tuple[slice, ...], tuple[slice, ...]]:
    """The source slices and the tile slices of the in-bounds part of a window."""
    source: list[slice] = []
    tile: list[slice] = []
    for size, start, extent in zip(shape, starts, extents, strict=True):
        low = min(max(start, 0), size)
        high = min(max(start + extent, 0), size)
        source.append(slice(low, high))
        tile.append(slice(low - start, high - start))
    return tuple(source), tuple(tile)


def load_tile(
    operand: np.ndarray, starts: Sequence[int], shape: Sequence[int], what: str = "operand"
) -> np.ndarray:
    """The tile of `shape` at `starts` of `operand`; elements out of bounds are zero."""
    if len(starts) != operand.ndim or len(shape) != operand.ndim:
        raise ScheduleError(
            f"load_tile of {what}: {operand.ndim} axes, but {len(starts)} start indices "
            f"and a tile of rank {len(shape)}"
        )
    tile = np.zeros(tuple(shape), dtype=operand.dtype)
    source, target = _window(operand.shape, starts, shape)
    tile[target] = operand[source]
    return tile


def store_tile(
    destination: np.ndarray,
    tile: np.ndarray,
    starts: Sequence[int],
    writes: np.ndarray | None = None,
    what: str = "output",
    rows: tuple[int, int] | None = None,
) -> None:
    """Write the in-bounds part of `tile` into `destination` at `starts`, counting writes;
    `rows` = (axis, bound) clips that axis below the bound as well (a group's end)."""
    if len(starts) != destination.ndim or tile.ndim != destination.ndim:
        raise ScheduleError(
            f"store_tile to {what}: {destination.ndim} axes, but {len(starts)} start "
            f"indices and a tile of rank {tile.ndim}"
        )
    shape = list(destination.shape)
    if rows is not None:
        axis, bound = rows
        shape[axis] = max(min(shape[axis], bound), 0)
    target, source = _window(shape, starts, tile.shape)
    destination[target] = tile[source].astype(destination.dtype, copy=False)
    if writes is not None:
        writes[target] += 1


def group_tile(offsets: np.ndarray, tile: int, tile_m: int) -> tuple[int, int, int]:
    """(group, group start, group end) of virtual m tile `tile` of contiguous groups whose
    cumulative ends are `offsets` (`sched.group_tile`): the last group g whose first
    virtual tile floor(offsets[g - 1] / tile_m) + g is at most `tile`, found by the binary
    search the GPU runs (the offsets clamped to the last group, as its loads are)."""
    groups = len(offsets)

    def start(group: int) -> int:
        return 0 if group == 0 else int(offsets[group - 1])

    group = 0
    for step in sched.search_steps(groups):
        probe = min(group + step, groups - 1)
        if start(probe) // tile_m + probe <= tile:
            group = probe
    return group, start(group), int(offsets[group])


def _matrix_view(tile: np.ndarray, roles: Sequence[str], rows: str, cols: str) -> np.ndarray:
    """The 2-D (rows x cols) view of a tile whose other axes (batch, absent) have extent 1."""
    if tile.ndim != len(roles):
        raise ScheduleError(f"tile of rank {tile.ndim} has {len(roles)} roles {tuple(roles)}")
    index: list[int | slice] = []
    kept: list[str] = []
    for role, extent in zip(roles, tile.shape, strict=True):
        if role in (rows, cols):
            index.append(slice(None))
            kept.append(role)
            continue
        if extent != 1:
            raise ScheduleError(
                f"tile axis with role {role!r} has extent {extent}; expected 1 "
                f"(only {rows!r} and {cols!r} span the tile)"
            )
        index.append(0)
    matrix = tile[tuple(index)]
    if kept == [rows, cols]:
        return matrix
    if kept == [cols, rows]:
        return matrix.T
    if kept == [rows]:
        return matrix[:, None]
    if kept == [cols]:
        return matrix[None, :]
    # Neither axis: indexing every axis by an integer gives a scalar copy, so view the
    # one-element tile itself (its extents are all 1) to let `+=` reach it.
    return tile.reshape(1, 1)


def mma_tile(
    a: np.ndarray,
    b: np.ndarray,
    acc: np.ndarray,
    a_roles: Sequence[str],
    b_roles: Sequence[str],
    acc_roles: Sequence[str],
    transposed: bool = False,
) -> np.ndarray:
    """acc + A x B in float32; A spans (m, k), B (k, n), acc (m, n), other axes extent 1.
    `transposed`: A spans (n, k) and B (k, m), and the product goes to acc's (n, m) view."""
    rows, cols = ("n", "m") if transposed else ("m", "n")
    a_matrix = _matrix_view(a, a_roles, rows, "k").astype(np.float32)
    b_matrix = _matrix_view(b, b_roles, "k", cols).astype(np.float32)
    result = acc.astype(np.float32, copy=True)
    # einsum without `optimize` runs numpy's own single-threaded loop: multithreaded BLAS
    # spin-waits badly on a loaded 2-core machine (100x slower for one 128x64x128 tile).
    _matrix_view(result, acc_roles, rows, cols)[...] += np.einsum("ik,kj->ij", a_matrix, b_matrix)
    return result


def block_scaled_mma_tile(
    a: np.ndarray,
    b: np.ndarray,
    acc: np.ndarray,
    scale_a: np.ndarray,
    scale_b: np.ndarray,
    a_roles: Sequence[str],
    b_roles: Sequence[str],
    acc_roles: Sequence[str],
) -> np.ndarray:
    """acc + the block-wise scaled A x B in float32, as the mainloop promotes it: per K
    block of 128, the block's product (f32) times its scales, added to the accumulator.
    scale_a spans (m, k128), scale_b (n128, k128) (or (k128, n128)); the tile's columns lie in N
    blocks of 128 from its first (a tile is aligned to its width, which divides 128 or is
    a multiple of it)."""
    a_matrix = _matrix_view(a, a_roles, "m", "k").astype(np.float32)
    b_matrix = _matrix_view(b, b_roles, "k", "n").astype(np.float32)
    blocked_a = tuple("k128" if role == "k" else role for role in a_roles)
    blocked_b = tuple({"k": "k128", "n": "n128"}.get(role, role) for role in b_roles)
    sa = _matrix_view(scale_a, blocked_a, "m", "k128")
    sb = _matrix_view(scale_b, blocked_b, "k128", "n128")
    columns = np.arange(b_matrix.shape[1], dtype=np.int64) // SCALE_BLOCK
    result = acc.astype(np.float32, copy=True)
    view = _matrix_view(result, acc_roles, "m", "n")
    for block in range(sa.shape[1]):
        ks = slice(block * SCALE_BLOCK, (block + 1) * SCALE_BLOCK)
        partial = np.einsum("ik,kj->ij", a_matrix[:, ks], b_matrix[ks, :])
        view[...] += partial * (sa[:, block : block + 1] * sb[block, columns][None, :])
    return result


def reduce_partials(partials: np.ndarray) -> np.ndarray:
    """The sum of partials[0], partials[1], ..., in that order, in float32."""
    total = np.array(partials[0], dtype=np.float32, copy=True)
    for index in range(1, partials.shape[0]):
        total += partials[index]
    return total


def accumulate_partial(total: np.ndarray, partial: np.ndarray) -> np.ndarray:
    """total + partial in float32 (a new array)."""
    return np.add(total, partial, dtype=np.float32)


KBlock = tuple[int, tuple[tuple[str, int], ...], int]
"""One K block's product: (contraction, the tile's start per role, the K block's start)."""


class KBlockLedger:
    """Tracks which (tile, K block) products each accumulator and workspace partial holds.

    Every `sched.mma` adds the product of one K block of one tile (told by the starts of
    its operand loads) to the accumulator's list; a partial stored to the workspace keeps
    its list, and a sum of partials concatenates them in the order it adds them. At each
    epilogue the lists of its accumulators are recorded (`sums`): the executor checks that
    every tile's K blocks were each computed exactly once and summed in a fixed order.
    """

    def __init__(self) -> None:
        self._held: dict[int, tuple[weakref.ref[np.ndarray], tuple[KBlock, ...]]] = {}
        self._loads: dict[int, tuple[weakref.ref[np.ndarray], dict[str, int]]] = {}
        self._partials: dict[tuple[int, tuple[int, ...]], tuple[KBlock, ...]] = {}
        self._contractions: dict[int, int] = {}
        self.computed: dict[KBlock, int] = {}
        """How many times each K block product was computed."""
        self.sums: list[tuple[int, tuple[KBlock, ...]]] = []
        """(CTA, the K blocks of the accumulator in summation order) at each epilogue."""

    def _remember(
        self, table: dict[int, tuple[weakref.ref[np.ndarray], T]], array: np.ndarray, value: T
    ) -> None:
        key = id(array)
        table[key] = (weakref.ref(array, lambda _, key=key: table.pop(key, None)), value)

    def hold(self, array: np.ndarray, blocks: tuple[KBlock, ...]) -> None:
        """`array` holds the products `blocks`, in summation order."""
        self._remember(self._held, array, blocks)

    def of(self, array: np.ndarray) -> tuple[KBlock, ...]:
        """The products `array` holds; () for an array not tracked."""
        entry = self._held.get(id(array))
        if entry is None or entry[0]() is not array:
            return ()
        return entry[1]

    def loaded(self, tile: np.ndarray, roles: Sequence[str], starts: Sequence[int]) -> None:
        """`tile` was loaded at `starts`, one per role."""
        self._remember(self._loads, tile, dict(zip(roles, starts, strict=True)))

    def _starts(self, tile: np.ndarray) -> dict[str, int]:
        entry = self._loads.get(id(tile))
        if entry is None or entry[0]() is not tile:
            return {}
        return entry[1]

    def mma(
        self, op: sched.MmaOp, a: np.ndarray, b: np.ndarray, acc: np.ndarray, result: np.ndarray
    ) -> None:
        """`result` = `acc` + the K block product of the loaded tiles `a` and `b`."""
        contraction = self._contractions.setdefault(id(op), len(self._contractions))
        starts = {**self._starts(b), **self._starts(a)}
        k0 = starts.pop("k", 0)
        tile = tuple(sorted((role, start) for role, start in starts.items() if role != "_"))
        block: KBlock = (contraction, tile, k0)
        self.computed[block] = self.computed.get(block, 0) + 1
        self.hold(result, (*self.of(acc), block))

    def stored(self, tile: np.ndarray, workspace: np.ndarray, where: tuple[int, ...]) -> None:
        """The partial `tile` was stored to the workspace at `where`."""
        self._partials[(id(workspace), where)] = self.of(tile)

    def partials_of(
        self, workspace: np.ndarray, slabs: Sequence[tuple[int, ...]]
    ) -> tuple[KBlock, ...]:
        """The products of the workspace's partials at `slabs`, in that order."""
        blocks: list[KBlock] = []
        for where in slabs:
            blocks.extend(self._partials.get((id(workspace), tuple(where)), ()))
        return tuple(blocks)

    def summed(self, cta: int, accumulators: Sequence[np.ndarray]) -> None:
        """An epilogue of CTA `cta` reads `accumulators`."""
        for accumulator in accumulators:
            self.sums.append((cta, self.of(accumulator)))


def _accumulator_inputs(op: sched.EpilogueOp) -> int:
    """How many of an epilogue's first inputs are f32 accumulators (not loaded tiles)."""
    count = 0
    for value in op.inputs:
        if not isinstance(value.owner, sched.LoadTileOp):
            count += 1
    return count


def _roles_of(value: SSAValue) -> tuple[str, ...]:
    """The fusion.roles of a kernel argument (() where none)."""
    if not isinstance(value, BlockArgument):
        return ()
    owner = value.block.parent_op()
    attrs = getattr(owner, "arg_attrs", None)
    if attrs is None:
        return ()
    roles = attrs.data[value.index].data.get("fusion.roles")
    return tuple(roles.roles) if isinstance(roles, AxisRolesAttr) else ()


def numpy_dtype(element_type: Attribute) -> np.dtype:
    """The numpy dtype of a memref or tile element type."""
    dtype = of_element_type(element_type)
    if dtype is None:
        names = ", ".join(known.name for known in DTYPES)
        raise ScheduleError(
            f"no numpy type for element type {element_type}; expected one of {names}"
        )
    return dtype.numpy_dtype


def _index(value: IntegerAttr) -> int:
    return value.value.data


def _indices(values: Sequence[IntegerAttr]) -> list[int]:
    return [_index(value) for value in values]


def _scalar(interpreter: Interpreter, value: int, value_type: Attribute) -> IntegerAttr:
    result = scalar_attr(value, value_type, interpreter.index_bitwidth)
    assert isinstance(result, IntegerAttr)
    return result


def mma_tile_transposed(
    a: np.ndarray,
    b: np.ndarray,
    acc: np.ndarray,
    a_roles: Sequence[str],
    b_roles: Sequence[str],
    acc_roles: Sequence[str],
) -> np.ndarray:
    """`mma_tile` as a swapped schedule (swap_ab) computes it: the transposed product
    acc^T + B^T x A^T in float32, B's tile (n, k) as the left operand and A's (k, m) as the
    right, accumulated into the (n, m) view of acc."""
    return mma_tile(b, a, acc, b_roles, a_roles, acc_roles, transposed=True)


@register_impls
class TileFunctions(InterpreterFunctions):
    """Implementations of the gpu ids, unsigned index arithmetic and the sched tile ops.

    One instance simulates a grid: set `block_id` before running each CTA. It counts the
    writes of every tracked array (the outputs) and of every partial tile of a workspace.
    """

    def __init__(self, grid: int):
        self.grid = grid
        """CTAs in the grid (gpu.grid_dim x)."""
        self.block_id = 0
        """The CTA being simulated (gpu.block_id x)."""
        self.stores = 0
        """Output tiles stored so far."""
        self.trace: list[tuple[int, str, tuple[int, ...]]] = []
        """(CTA, destination name, start indices) of every stored output tile, in order."""
        self._writes: dict[int, np.ndarray] = {}
        self._partial_writes: dict[int, np.ndarray] = {}
        self.ledger = KBlockLedger()
        """Which (tile, K block) products every accumulator and partial holds."""
        self.swap_ab = False
        """The schedule computes each tile's product transposed (`mma_tile_transposed`)."""
        self.extent_n: int | None = None
        """The problem's N (the kernel's iteration space), where static."""
        self.epilogue_functions: Any = None
        """The fusion ops' implementations (FusionFunctions) that evaluate each epilogue:
        told the columns of the tile inside N while it runs (`columns`)."""

    def track(self, array: np.ndarray) -> None:
        """Count the writes to every element of `array`."""
        self._writes[id(array)] = np.zeros(array.shape, dtype=np.int64)

    def writes_of(self, array: np.ndarray) -> np.ndarray:
        """How many times each element of a tracked array was written."""
        return self._writes[id(array)]

    def partial_writes(self) -> list[np.ndarray]:
        """For each workspace, how many times each (slice, tile) partial was written."""
        return list(self._partial_writes.values())

    @impl(gpu.BlockIdOp)
    def run_block_id(self, interpreter: Interpreter, op: gpu.BlockIdOp, args: PythonValues):
        if op.dimension.data != gpu.DimensionEnum.X:
            return (_scalar(interpreter, 0, op.result.type),)
        return (_scalar(interpreter, self.block_id, op.result.type),)

    @impl(gpu.GridDimOp)
    def run_grid_dim(self, interpreter: Interpreter, op: gpu.GridDimOp, args: PythonValues):
        size = self.grid if op.dimension.data == gpu.DimensionEnum.X else 1
        return (_scalar(interpreter, size, op.result.type),)

    @impl(arith.DivUIOp)
    def run_divui(self, interpreter: Interpreter, op: arith.DivUIOp, args: PythonValues):
        lhs, rhs = _indices(args)
        return (_scalar(interpreter, lhs // rhs, op.result.type),)

    @impl(arith.RemUIOp)
    def run_remui(self, interpreter: Interpreter, op: arith.RemUIOp, args: PythonValues):
        lhs, rhs = _indices(args)
        return (_scalar(interpreter, lhs % rhs, op.result.type),)

    @impl(arith.MinUIOp)
    def run_minui(self, interpreter: Interpreter, op: arith.MinUIOp, args: PythonValues):
        lhs, rhs = _indices(args)
        return (_scalar(interpreter, min(lhs, rhs), op.result.type),)

    @impl(arith.MaxUIOp)
    def run_maxui(self, interpreter: Interpreter, op: arith.MaxUIOp, args: PythonValues):
        lhs, rhs = _indices(args)
        return (_scalar(interpreter, max(lhs, rhs), op.result.type),)

    @impl(arith.CeilDivUIOp)
    def run_ceildivui(self, interpreter: Interpreter, op: arith.CeilDivUIOp, args: PythonValues):
        lhs, rhs = _indices(args)
        return (_scalar(interpreter, -(-lhs // rhs), op.result.type),)

    @impl(sched.ZeroTileOp)
    def run_zero_tile(self, interpreter: Interpreter, op: sched.ZeroTileOp, args: PythonValues):
        tile_type = op.result.type
        assert isinstance(tile_type, TensorType)
        zero = np.zeros(tuple(tile_type.get_shape()), dtype=numpy_dtype(tile_type.element_type))
        self.ledger.hold(zero, ())
        return (zero,)

    @impl(sched.LoadTileOp)
    def run_load_tile(self, interpreter: Interpreter, op: sched.LoadTileOp, args: PythonValues):
        source, *starts = args
        tile_type = op.result.type
        assert isinstance(tile_type, TensorType)
        what = f"{op.name} of {op.source.name_hint or 'operand'}"
        tile = load_tile(source, _indices(starts), tuple(tile_type.get_shape()), what)
        self.ledger.loaded(tile, _roles_of(op.source), _indices(starts))
        return (tile,)

    @impl(sched.StoreTileOp)
    def run_store_tile(self, interpreter: Interpreter, op: sched.StoreTileOp, args: PythonValues):
        tile, destination, *starts = args
        writes = self._writes.get(id(destination))
        what = f"{op.name} to {op.dest.name_hint or 'output'}"
        bound = None
        if op.rows is not None:
            *starts, rows = starts
            bound = (_roles_of(op.dest).index("m"), _index(rows))
        starts = _indices(starts)
        store_tile(destination, np.asarray(tile), starts, writes, what, bound)
        self.stores += 1
        self.trace.append((self.block_id, op.dest.name_hint or "", tuple(starts)))
        return ()

    @impl(sched.GroupTileOp)
    def run_group_tile(self, interpreter: Interpreter, op: sched.GroupTileOp, args: PythonValues):
        offsets, tile = args
        found = group_tile(np.asarray(offsets), _index(tile), op.tile_m.data)
        return tuple(_scalar(interpreter, value, IndexType()) for value in found)

    @impl(sched.GroupRowsOp)
    def run_group_rows(self, interpreter: Interpreter, op: sched.GroupRowsOp, args: PythonValues):
        counts, group = args
        return (_scalar(interpreter, int(counts[_index(group)]), op.rows.type),)

    @impl(sched.MmaOp)
    def run_mma(self, interpreter: Interpreter, op: sched.MmaOp, args: PythonValues):
        a, b, acc, *scales = args
        roles = (op.a_roles.roles, op.b_roles.roles, op.acc_roles.roles)
        if scales:
            result = block_scaled_mma_tile(a, b, acc, scales[0], scales[1], *roles)
        else:
            result = mma_tile(a, b, acc, *roles)
        self.ledger.mma(op, a, b, acc, result)
        return (result,)

    @impl(sched.EpilogueOp)
    def run_epilogue(self, interpreter: Interpreter, op: sched.EpilogueOp, args: PythonValues):
        accumulators = args[: _accumulator_inputs(op)]
        self.ledger.summed(self.block_id, accumulators)
        functions = self.epilogue_functions
        if functions is None:
            return interpreter.run_ssacfg_region(op.body, args, "epilogue")
        functions.columns = self._columns_inside(accumulators)
        try:
            return interpreter.run_ssacfg_region(op.body, args, "epilogue")
        finally:
            functions.columns = None

    def _columns_inside(self, accumulators: Sequence[Any]) -> int | None:
        """How many of the tile's columns lie inside N: N less the tile's first column (from
        the K blocks its accumulators hold), or None where unknown."""
        if self.extent_n is None:
            return None
        for accumulator in accumulators:
            for _, tile, _ in self.ledger.of(accumulator):
                starts = dict(tile)
                if "n" in starts:
                    return max(0, self.extent_n - starts["n"])
        return None

    @impl_terminator(sched.YieldOp)
    def run_yield(self, interpreter: Interpreter, op: sched.YieldOp, args: PythonValues):
        return ReturnedValues(args), ()

    @impl(sched.StorePartialOp)
    def run_store_partial(
        self, interpreter: Interpreter, op: sched.StorePartialOp, args: PythonValues
    ):
        tile, workspace, *indices = args
        where = tuple(_indices(indices))
        workspace[where] = tile
        self.ledger.stored(tile, workspace, where)
        shape: tuple[int, ...] = workspace.shape[: len(where)]
        counts = self._partial_writes.setdefault(id(workspace), np.zeros(shape, dtype=np.int64))
        counts[where] += 1
        return ()

    @impl(sched.ArriveOp)
    def run_arrive(self, interpreter: Interpreter, op: sched.ArriveOp, args: PythonValues):
        counters, *indices = args
        where = tuple(_indices(indices))
        old = int(counters[where])
        counters[where] = old + 1
        return (_scalar(interpreter, old, op.old.type),)

    @impl(sched.ReducePartialsOp)
    def run_reduce_partials(
        self, interpreter: Interpreter, op: sched.ReducePartialsOp, args: PythonValues
    ):
        workspace, *indices = args
        where = (slice(None), *_indices(indices))
        total = reduce_partials(workspace[where])
        slabs = [(piece, *_indices(indices)) for piece in range(workspace.shape[0])]
        self.ledger.hold(total, self.ledger.partials_of(workspace, slabs))
        return (total,)

    @impl(sched.ArriveSegmentOp)
    def run_arrive_segment(
        self, interpreter: Interpreter, op: sched.ArriveSegmentOp, args: PythonValues
    ):
        counters, index, segments = args
        where = _index(index)
        old = int(counters[where])
        if old >= _index(segments):
            raise ScheduleError(
                f"{op.name}: tile {where} has {_index(segments)} segments, but this is "
                f"arrival {old + 1}"
            )
        counters[where] = old + 1
        return (_scalar(interpreter, old, op.old.type),)

    @impl(sched.AccumulatePartialOp)
    def run_accumulate_partial(
        self, interpreter: Interpreter, op: sched.AccumulatePartialOp, args: PythonValues
    ):
        total, workspace, *indices = args
        where = tuple(_indices(indices))
        result = accumulate_partial(total, workspace[where])
        held = self.ledger.of(total) + self.ledger.partials_of(workspace, [where])
        self.ledger.hold(result, held)
        return (result,)
