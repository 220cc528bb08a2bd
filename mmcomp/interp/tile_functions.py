"""Tile-level semantics of the materialized schedule, on numpy arrays.

The functions here define exactly what the tile-level ops of the `sched` dialect do; the
Hopper lowering maps the same ops to TMA loads, wgmma and stores. Each works on whole tiles
with numpy slicing and matmul, never element by element:

- `load_tile`: a window of an operand starting at one index per axis; elements outside
  the operand read as zero (TMA's out-of-bounds fill);
- `mma_tile`: acc + A x B in float32, the axes of A, B and acc named by their roles;
- `store_tile`: writes the part of a tile that lies inside the destination (clipped),
  counting the writes of every destination element;
- `reduce_partials`: the split-K partial tiles summed in the fixed order 0, 1, ..., S-1.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects import arith, gpu
from xdsl.dialects.builtin import IntegerAttr, TensorType
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
from xdsl.ir import Attribute

from mmcomp.dialects import sched
from mmcomp.dtypes import DTYPES, by_name
from mmcomp.errors import ScheduleError


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
) -> None:
    """Write the in-bounds part of `tile` into `destination` at `starts`, counting writes."""
    if len(starts) != destination.ndim or tile.ndim != destination.ndim:
        raise ScheduleError(
            f"store_tile to {what}: {destination.ndim} axes, but {len(starts)} start "
            f"indices and a tile of rank {tile.ndim}"
        )
    target, source = _window(destination.shape, starts, tile.shape)
    destination[target] = tile[source].astype(destination.dtype, copy=False)
    if writes is not None:
        writes[target] += 1


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
) -> np.ndarray:
    """acc + A x B in float32; A spans (m, k), B (k, n), acc (m, n), other axes extent 1."""
    a_matrix = _matrix_view(a, a_roles, "m", "k").astype(np.float32)
    b_matrix = _matrix_view(b, b_roles, "k", "n").astype(np.float32)
    result = acc.astype(np.float32, copy=True)
    # einsum without `optimize` runs numpy's own single-threaded loop: multithreaded BLAS
    # spin-waits badly on a loaded 2-core machine (100x slower for one 128x64x128 tile).
    _matrix_view(result, acc_roles, "m", "n")[...] += np.einsum("mk,kn->mn", a_matrix, b_matrix)
    return result


def reduce_partials(partials: np.ndarray) -> np.ndarray:
    """The sum of partials[0], partials[1], ..., in that order, in float32."""
    total = np.array(partials[0], dtype=np.float32, copy=True)
    for index in range(1, partials.shape[0]):
        total += partials[index]
    return total


def numpy_dtype(element_type: Attribute) -> np.dtype:
    """The numpy dtype of a memref or tile element type."""
    dtype = by_name(str(element_type))
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
    w_matrix = _matrix_view(b, b_roles, "n", "k").astype(np.float32)
    x_matrix = _matrix_view(a, a_roles, "k", "m").astype(np.float32)
    result = acc.astype(np.float32, copy=True)
    _matrix_view(result, acc_roles, "n", "m")[...] += np.einsum("nk,km->nm", w_matrix, x_matrix)
    return result


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
        self.swap_ab = False
        """The schedule computes each tile's product transposed (`mma_tile_transposed`)."""

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

    @impl(arith.CeilDivUIOp)
    def run_ceildivui(self, interpreter: Interpreter, op: arith.CeilDivUIOp, args: PythonValues):
        lhs, rhs = _indices(args)
        return (_scalar(interpreter, -(-lhs // rhs), op.result.type),)

    @impl(sched.ZeroTileOp)
    def run_zero_tile(self, interpreter: Interpreter, op: sched.ZeroTileOp, args: PythonValues):
        tile_type = op.result.type
        assert isinstance(tile_type, TensorType)
        return (np.zeros(tuple(tile_type.get_shape()), dtype=numpy_dtype(tile_type.element_type)),)

    @impl(sched.LoadTileOp)
    def run_load_tile(self, interpreter: Interpreter, op: sched.LoadTileOp, args: PythonValues):
        source, *starts = args
        tile_type = op.result.type
        assert isinstance(tile_type, TensorType)
        what = f"{op.name} of {op.source.name_hint or 'operand'}"
        return (load_tile(source, _indices(starts), tuple(tile_type.get_shape()), what),)

    @impl(sched.StoreTileOp)
    def run_store_tile(self, interpreter: Interpreter, op: sched.StoreTileOp, args: PythonValues):
        tile, destination, *starts = args
        writes = self._writes.get(id(destination))
        what = f"{op.name} to {op.dest.name_hint or 'output'}"
        starts = _indices(starts)
        store_tile(destination, np.asarray(tile), starts, writes, what)
        self.stores += 1
        self.trace.append((self.block_id, op.dest.name_hint or "", tuple(starts)))
        return ()

    @impl(sched.MmaOp)
    def run_mma(self, interpreter: Interpreter, op: sched.MmaOp, args: PythonValues):
        a, b, acc = args
        product = mma_tile_transposed if self.swap_ab else mma_tile
        return (product(a, b, acc, op.a_roles.roles, op.b_roles.roles, op.acc_roles.roles),)

    @impl(sched.EpilogueOp)
    def run_epilogue(self, interpreter: Interpreter, op: sched.EpilogueOp, args: PythonValues):
        return interpreter.run_ssacfg_region(op.body, args, "epilogue")

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
        return (reduce_partials(workspace[where]),)
