"""The CPU executor: runs a materialized schedule on numpy arrays through xDSL's interpreter.

The kernel is the `func.func` that `materialize-schedule` produced (it carries the
attribute `sched.grid`). Its arguments are the fusion's inputs, then its outputs, then
scratch buffers (split-K workspaces and arrival counters), all memrefs. The executor
simulates every CTA of the grid one after another: each runs the kernel body with its own
`gpu.block_id`, walking its persistent tile loop. The tile-level ops run on whole tiles
with numpy (mmcomp.interp.tile_functions); scf, arith, memref and func run with xDSL's own
interpreter functions.

Every write to an output element is counted. After the grid has run, each element must
have been written exactly once: a missed or doubled tile raises `CoverageError` naming the
output and the first bad element, instead of giving a wrong number. Every (tile, K block)
product is tracked too (`KBlockLedger`): each must have been computed exactly once and
reached its tile's epilogue once, summed in a fixed order (K order under stream-K).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np
from xdsl.dialects import builtin, func
from xdsl.interpreter import Interpreter
from xdsl.interpreters.arith import ArithFunctions
from xdsl.interpreters.func import FuncFunctions
from xdsl.interpreters.scf import ScfFunctions
from xdsl.ir import Attribute, BlockArgument

from mmcomp.analysis.roles import iteration_space
from mmcomp.arch import limits as hw
from mmcomp.dialects import sched
from mmcomp.dialects.fusion import AxisRolesAttr, is_dynamic
from mmcomp.dialects.sched import PARAMS_ATTR, ScheduleParams, ScheduleParamsAttr
from mmcomp.errors import ScheduleError
from mmcomp.frontend.argcheck import bind_extents, check_shape_and_dtype
from mmcomp.interp.tile_functions import KBlock, KBlockLedger, numpy_dtype
from mmcomp.ir.narrowing import is_memref


class CoverageError(RuntimeError):
    """A simulated kernel missed an output element or wrote one more than once."""


@dataclass(frozen=True)
class Execution:
    """The result of simulating a kernel: outputs, write counts and the launch shape."""

    outputs: tuple[np.ndarray, ...]
    """The outputs, in fusion output order."""
    writes: tuple[np.ndarray, ...]
    """For each output, how many times each element was written (all ones on success)."""
    grid: int
    """CTAs in the grid."""
    tiles_per_cta: tuple[int, ...]
    """For each CTA, how many output tiles it stored."""
    trace: tuple[tuple[int, str, tuple[int, ...]], ...]
    """(CTA, output argument name, start indices) of every tile store, in order."""
    sums: tuple[tuple[int, tuple[KBlock, ...]], ...] = ()
    """(CTA, the (contraction, tile, K start) products of the accumulator, in summation
    order) of every accumulator an epilogue read, in order."""


def kernel_of(module: builtin.ModuleOp) -> func.FuncOp:
    """The materialized kernel of `module`: the one func.func carrying `sched.grid`."""
    kernels = [
        op for op in module.walk() if isinstance(op, func.FuncOp) and "sched.grid" in op.attributes
    ]
    if not kernels:
        raise ScheduleError(
            "no materialized kernel in the module: expected a func.func with the attribute "
            "'sched.grid' (run materialize-schedule first)"
        )
    if len(kernels) > 1:
        names = ", ".join(k.sym_name.data for k in kernels)
        raise ScheduleError(f"expected one materialized kernel, found {len(kernels)}: {names}")
    return kernels[0]


def _extent_axis(function: func.FuncOp, index: int) -> str:
    attr = _arg_attr(function, index, "sched.extent")
    if not isinstance(attr, builtin.StringAttr):
        raise ScheduleError(
            f"@{function.sym_name.data}: argument {index} has no 'sched.extent' axis name"
        )
    return attr.data


def _int_attr(kernel: func.FuncOp, name: str) -> int:
    attr = kernel.attributes.get(name)
    if not isinstance(attr, builtin.IntegerAttr):
        raise ScheduleError(
            f"kernel @{kernel.sym_name.data}: expected integer attribute {name!r}, found {attr}"
        )
    return attr.value.data


def _memref_type(kernel: func.FuncOp, index: int) -> builtin.MemRefType:
    arg_type = kernel.function_type.inputs.data[index]
    if not is_memref(arg_type):
        raise ScheduleError(
            f"kernel @{kernel.sym_name.data}: argument {index} has type {arg_type}; "
            "expected a memref"
        )
    return arg_type


def _bind_input(kernel: func.FuncOp, index: int, array: np.ndarray) -> np.ndarray:
    memref_type = _memref_type(kernel, index)
    shape = tuple(memref_type.get_shape())
    dtype = numpy_dtype(memref_type.element_type)
    array = np.asarray(array)
    check_shape_and_dtype(
        f"input {index} of kernel @{kernel.sym_name.data}",
        array.shape,
        array.dtype,
        shape,
        dtype,
        ScheduleError,
        show_shape=tuple,
    )
    return np.require(array, requirements="C")  # keeps the rank, unlike ascontiguousarray


def _arg_attr(kernel: func.FuncOp, index: int, name: str) -> Attribute | None:
    if kernel.arg_attrs is None:
        return None
    return kernel.arg_attrs.data[index].data.get(name)


def _arg_roles(kernel: func.FuncOp, index: int) -> tuple[str, ...]:
    roles = _arg_attr(kernel, index, "fusion.roles")
    if not isinstance(roles, AxisRolesAttr):
        raise ScheduleError(
            f"kernel @{kernel.sym_name.data}: argument {index} has no 'fusion.roles'"
        )
    return roles.roles


def _launch_function(module: builtin.ModuleOp, kernel: func.FuncOp) -> func.FuncOp:
    """The launch function that the kernel's `sched.grid` names."""
    grid = kernel.attributes["sched.grid"]
    assert isinstance(grid, builtin.SymbolRefAttr)
    name = grid.root_reference.data
    for op in module.walk():
        if isinstance(op, func.FuncOp) and op.sym_name.data == name:
            return op
    raise ScheduleError(
        f"kernel @{kernel.sym_name.data}: no launch function @{name} in the module (its "
        "'sched.grid')"
    )


def runtime_extents(
    kernel: func.FuncOp, shapes: Sequence[Sequence[int]], where: str | None = None
) -> dict[str, int]:
    """The runtime extent of each dynamic axis of `kernel`, from its inputs' shapes; a
    ScheduleError for a static extent that differs, inputs that disagree, or an extent
    past what the kernel can index."""
    names = [
        kernel.body.block.args[index].name_hint or f"input {index}" for index in range(len(shapes))
    ]
    extents = bind_extents(
        where or f"kernel @{kernel.sym_name.data}",
        names,
        shapes,
        [tuple(_memref_type(kernel, index).get_shape()) for index in range(len(shapes))],
        [_arg_roles(kernel, index) for index in range(len(shapes))],
        ScheduleError,
    )
    check_runtime_extents(where or f"kernel @{kernel.sym_name.data}", extents)
    return extents


def check_runtime_extents(where: str, extents: dict[str, int]) -> None:
    """A ScheduleError for a runtime extent past what a kernel indexes (32-bit indices)."""
    for axis, extent in extents.items():
        if extent > hw.MAX_EXTENT:
            name = {"m": "M", "k": "K"}.get(axis, f"batch axis {axis}")
            raise ScheduleError(
                f"{where}: the dynamic extent {name} = {extent} is past what the kernel can "
                f"index; each extent must be at most {hw.MAX_EXTENT} (tile indices, loop "
                f"bounds and TMA coordinates are {hw.INDEX_BITS}-bit integers)"
            )


def _resolved(
    kernel: func.FuncOp, index: int, extents: dict[str, int], cta_tiles: int
) -> tuple[int, ...]:
    """The runtime shape of argument `index`: each `?` its role's extent (a workspace's,
    the CTA tiles)."""
    shape = tuple(_memref_type(kernel, index).get_shape())
    if not any(is_dynamic(extent) for extent in shape):
        return shape
    if _arg_attr(kernel, index, "sched.workspace") is not None:
        return tuple(cta_tiles if is_dynamic(extent) else extent for extent in shape)
    roles = _arg_roles(kernel, index)
    return tuple(
        extents[role] if is_dynamic(extent) else extent
        for extent, role in zip(shape, roles, strict=True)
    )


def launch_counts(
    module: builtin.ModuleOp, launch: func.FuncOp, extents: dict[str, int], where: str
) -> tuple[int, int, int]:
    """Run a kernel's launch function on its runtime extents (by name: m, b0, ...):
    (grid, CTA tiles, work units); a ScheduleError for more work units than the kernel's
    32-bit tile loop counts. The CPU executor and the cuda back end both size their
    launches with it."""
    extent_args = [extents[_extent_axis(launch, index)] for index in range(len(launch.args))]
    grid, cta_tiles, units = _launch(module, launch, extent_args)
    if units > hw.MAX_WORK_UNITS:
        raise ScheduleError(
            f"{where}: {units} work units at {extents}; the kernel's {hw.INDEX_BITS}-bit "
            f"tile loop counts at most {hw.MAX_WORK_UNITS}"
        )
    return grid, cta_tiles, units


def _launch(
    module: builtin.ModuleOp, launch: func.FuncOp, extents: Sequence[int]
) -> tuple[int, int, int]:
    """Run the launch function on the runtime extents: (grid, CTA tiles, work units)."""
    from mmcomp.interp.tile_functions import TileFunctions

    interpreter = Interpreter(module)
    interpreter.register_implementations(ArithFunctions())
    interpreter.register_implementations(FuncFunctions())
    interpreter.register_implementations(TileFunctions(grid=0))
    results = interpreter.call_op(launch, _index_values(extents))
    grid, cta_tiles, units = (_int(value) for value in results)
    return grid, cta_tiles, units


def _index_values(values: Sequence[int]) -> tuple[builtin.IntegerAttr, ...]:
    """Index values as xDSL's interpreter holds them."""
    return tuple(builtin.IntegerAttr(value, builtin.IndexType()) for value in values)


def _int(value: object) -> int:
    assert isinstance(value, builtin.IntegerAttr)
    return cast(builtin.IntegerAttr, value).value.data


@dataclass(frozen=True)
class _DynamicLaunch:
    """The inputs of a kernel with dynamic extents and what its launch function gives."""

    arguments: list[np.ndarray]
    """The inputs, C-contiguous."""
    extents: dict[str, int]
    """The runtime extent of each dynamic axis."""
    extent_args: list[int]
    """The extents in the order of the kernel's index arguments."""
    grid: int
    """CTAs in the grid."""
    cta_tiles: int
    """The CTA tiles (the split-K workspaces' dynamic extent)."""


def _bind_dynamic(
    module: builtin.ModuleOp, kernel: func.FuncOp, inputs: Sequence[np.ndarray]
) -> _DynamicLaunch:
    """Check the inputs of a kernel with dynamic extents, read the extents from their
    shapes and run the launch function on them."""
    arrays = [np.asarray(array) for array in inputs]
    extents = runtime_extents(kernel, [array.shape for array in arrays])
    for index, array in enumerate(arrays):
        dtype = numpy_dtype(_memref_type(kernel, index).element_type)
        if array.dtype != dtype:
            raise ScheduleError(
                f"input {index} of kernel @{kernel.sym_name.data}: expected dtype "
                f"{dtype}, found {array.dtype}"
            )
    launch = _launch_function(module, kernel)
    extent_args = [extents[_extent_axis(launch, index)] for index in range(len(launch.args))]
    grid, cta_tiles, _ = launch_counts(module, launch, extents, f"kernel @{kernel.sym_name.data}")
    arguments = [np.require(array, requirements="C") for array in arrays]
    return _DynamicLaunch(arguments, extents, extent_args, grid, cta_tiles)


def swaps_ab(kernel: func.FuncOp) -> bool:
    """Whether the kernel's schedule computes its tile products transposed (swap_ab)."""
    from mmcomp.dialects.sched import PARAMS_ATTR, ScheduleParamsAttr

    params = kernel.attributes.get(PARAMS_ATTR)
    return isinstance(params, ScheduleParamsAttr) and params.data.swap_ab


def _static_n(kernel: func.FuncOp) -> int | None:
    """The kernel's N (its iteration space's n), None where it has none or it is dynamic."""
    from mmcomp.dialects.fusion import IterationSpaceAttr

    space = kernel.attributes.get("fusion.space")
    if not isinstance(space, IterationSpaceAttr):
        return None
    extent = space.extents.get("n")
    return None if extent is None or is_dynamic(extent) else extent


def execute(
    module: builtin.ModuleOp,
    inputs: Sequence[np.ndarray],
    cta_order: Sequence[int] | None = None,
) -> Execution:
    """Simulate every CTA of the module's kernel on `inputs`; check every output write and
    that every (tile, K block) product was computed exactly once and summed into its tile.

    A kernel with dynamic extents takes them from the inputs' shapes; its launch function
    gives the grid and the split-K workspaces' size for them. An extent of 0 launches
    nothing and gives empty outputs. `cta_order` runs the CTAs in that order (a
    permutation of the grid; by default 0, 1, ...): which CTA of a tile's split-K slices
    or stream-K segments arrives last then changes, and the outputs must not.
    """
    from mmcomp.interp.reference import FusionFunctions
    from mmcomp.interp.tile_functions import TileFunctions

    kernel = kernel_of(module)
    num_inputs = _int_attr(kernel, "sched.num_inputs")
    num_outputs = _int_attr(kernel, "sched.num_outputs")
    if len(inputs) != num_inputs:
        raise ScheduleError(
            f"kernel @{kernel.sym_name.data} takes {num_inputs} inputs, {len(inputs)} given"
        )
    if isinstance(kernel.attributes.get("sched.grid"), builtin.SymbolRefAttr):
        launch = _bind_dynamic(module, kernel, inputs)
        arguments, extents, extent_args = launch.arguments, launch.extents, launch.extent_args
        grid, cta_tiles = launch.grid, launch.cta_tiles
    else:
        grid = _int_attr(kernel, "sched.grid")
        arguments = [_bind_input(kernel, index, array) for index, array in enumerate(inputs)]
        extents, extent_args, cta_tiles = {}, [], 0
    num_args = len(kernel.function_type.inputs.data) - len(extent_args)
    for index in range(num_inputs, num_args):
        memref_type = _memref_type(kernel, index)
        dtype = numpy_dtype(memref_type.element_type)
        arguments.append(np.zeros(_resolved(kernel, index, extents, cta_tiles), dtype=dtype))
    outputs = arguments[num_inputs : num_inputs + num_outputs]
    call_arguments: tuple[object, ...] = (*arguments, *_index_values(extent_args))

    tiles = TileFunctions(grid=grid)
    tiles.swap_ab = swaps_ab(kernel)
    tiles.extent_n = _static_n(kernel)
    for output in outputs:
        tiles.track(output)
    epilogue_functions = FusionFunctions(np.float32)
    tiles.epilogue_functions = epilogue_functions
    interpreter = Interpreter(module)
    interpreter.register_implementations(ArithFunctions())
    interpreter.register_implementations(ScfFunctions())
    interpreter.register_implementations(FuncFunctions())
    interpreter.register_implementations(tiles)
    interpreter.register_implementations(epilogue_functions)

    order = list(range(grid)) if cta_order is None else [int(block) for block in cta_order]
    if sorted(order) != list(range(grid)):
        raise ScheduleError(
            f"cta_order must be a permutation of the {grid} CTAs of the grid, found {order}"
        )
    tiles_per_cta = [0] * grid
    with np.errstate(all="ignore"):
        for block in order:
            tiles.block_id = block
            before = tiles.stores
            interpreter.call_op(kernel, call_arguments)
            tiles_per_cta[block] = tiles.stores - before

    writes = tuple(tiles.writes_of(output) for output in outputs)
    name = kernel.sym_name.data
    for index, count in enumerate(writes):
        expected = expected_writes(kernel, arguments, num_inputs + index, count.shape)
        bad = np.argwhere(count != expected)
        if bad.size == 0:
            continue
        first = tuple(int(i) for i in bad[0])
        times = "exactly once" if expected[first] else "never: a row of no group"
        raise CoverageError(
            f"kernel @{name}: output {index} element {first} was written {int(count[first])} "
            f"times (expected {times}); {len(bad)} of {count.size} elements are wrong"
        )
    stream_k = _params_of(kernel).stream_k
    for index, count in enumerate(tiles.partial_writes()):
        # A stream-K CTA leaves a partial in a slot only where its range splits a tile.
        bad = np.argwhere(count > 1 if stream_k else count != 1)
        if bad.size == 0:
            continue
        first = tuple(int(i) for i in bad[0])
        raise CoverageError(
            f"kernel @{name}: split-K workspace {index}: partial (slice, tile) {first} was "
            f"written {int(count[first])} times (expected exactly once)"
        )
    if grid:
        check_k_blocks(kernel, tiles.ledger, extents)
    return Execution(
        tuple(outputs),
        writes,
        grid,
        tuple(tiles_per_cta),
        tuple(tiles.trace),
        tuple(tiles.ledger.sums),
    )


def expected_writes(
    kernel: func.FuncOp, arguments: Sequence[np.ndarray], output: int, shape: tuple[int, ...]
) -> np.ndarray:
    """How often each element of argument `output` must be written: once, but for a
    grouped kernel only the rows of its groups (the ranges [offsets[g - 1], offsets[g])
    of contiguous groups, the first counts[g] rows of masked group g), and never the
    others."""
    lookups = [op for op in kernel.walk() if isinstance(op, sched.GroupTileOp | sched.GroupRowsOp)]
    if not lookups:
        return np.ones(shape, dtype=np.int64)
    sizes_arg = lookups[0].operands[0]
    assert isinstance(sizes_arg, BlockArgument)
    sizes = [int(value) for value in np.asarray(arguments[sizes_arg.index])]
    roles = _arg_roles(kernel, output)
    rows_axis = roles.index("m")
    expected = np.zeros(shape, dtype=np.int64)
    rows = shape[rows_axis]
    if isinstance(lookups[0], sched.GroupTileOp):
        start = 0
        for end in sizes:
            lo, hi = max(min(start, rows), 0), max(min(end, rows), 0)
            where = [slice(None)] * len(shape)
            where[rows_axis] = slice(lo, hi)
            expected[tuple(where)] = 1
            start = end
        return expected
    group_axis = roles.index("g")
    for group, count in enumerate(sizes):
        where = [slice(None)] * len(shape)
        where[group_axis] = slice(group, group + 1)
        where[rows_axis] = slice(0, max(min(count, rows), 0))
        expected[tuple(where)] = 1
    return expected


def _params_of(kernel: func.FuncOp) -> ScheduleParams:
    params = kernel.attributes.get(PARAMS_ATTR)
    if not isinstance(params, ScheduleParamsAttr):
        raise ScheduleError(f"kernel @{kernel.sym_name.data} has no {PARAMS_ATTR}")
    return params.data


def check_k_blocks(
    kernel: func.FuncOp, ledger: KBlockLedger, extents: Mapping[str, int] | None = None
) -> None:
    """Raise CoverageError unless every (tile, K block) product of each contraction was
    computed exactly once, and every accumulator an epilogue read holds all the K blocks
    of one tile, each once, summed in a fixed order: K order under stream-K (its segments
    in CTA order), slice order under split-K (whichever CTA arrived last). A dynamic K
    is the runtime one of `extents` (at K = 0 an epilogue reads an accumulator of no K
    blocks)."""
    name = kernel.sym_name.data
    params = _params_of(kernel)
    k_extent = iteration_space(kernel).get("k", 1)
    if is_dynamic(k_extent):
        k_extent = (extents or {})["k"]
    expected = list(range(0, k_extent, params.tile[2]))
    for block, count in ledger.computed.items():
        if count != 1:
            raise CoverageError(
                f"kernel @{name}: contraction {block[0]} tile {dict(block[1])} K block at "
                f"k = {block[2]} was computed {count} times (expected exactly once)"
            )
    summed: set[KBlock] = set()
    for cta, blocks in ledger.sums:
        tiles = {(contraction, tile) for contraction, tile, _ in blocks}
        starts = [k0 for _, _, k0 in blocks]
        if len(tiles) != (1 if expected else 0) or sorted(starts) != expected:
            raise CoverageError(
                f"kernel @{name}: CTA {cta} applied the epilogue to an accumulator of "
                f"{len(blocks)} K block products of {len(tiles)} tiles (K starts {starts}); "
                f"expected each of the {len(expected)} K blocks of one tile once"
            )
        if params.stream_k and starts != expected:
            raise CoverageError(
                f"kernel @{name}: CTA {cta} summed a tile's stream-K segments in the K "
                f"order {starts}; expected the segment order {expected}"
            )
        summed.update(blocks)
    missing = sorted(set(ledger.computed) - summed)
    if missing:
        contraction, tile, k0 = missing[0]
        raise CoverageError(
            f"kernel @{name}: contraction {contraction} tile {dict(tile)} K block at "
            f"k = {k0} was computed but never reached an epilogue ({len(missing)} such)"
        )
