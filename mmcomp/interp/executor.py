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
output and the first bad element, instead of giving a wrong number.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects import builtin, func
from xdsl.interpreter import Interpreter
from xdsl.interpreters.arith import ArithFunctions
from xdsl.interpreters.func import FuncFunctions
from xdsl.interpreters.scf import ScfFunctions

from mmcomp.argcheck import check_shape_and_dtype
from mmcomp.errors import ScheduleError
from mmcomp.interp.tile_functions import numpy_dtype
from mmcomp.narrowing import is_memref


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


def execute(module: builtin.ModuleOp, inputs: Sequence[np.ndarray]) -> Execution:
    """Simulate every CTA of the module's kernel on `inputs`; check every output write."""
    from mmcomp.interp.reference import FusionFunctions
    from mmcomp.interp.tile_functions import TileFunctions

    kernel = kernel_of(module)
    grid = _int_attr(kernel, "sched.grid")
    num_inputs = _int_attr(kernel, "sched.num_inputs")
    num_outputs = _int_attr(kernel, "sched.num_outputs")
    if len(inputs) != num_inputs:
        raise ScheduleError(
            f"kernel @{kernel.sym_name.data} takes {num_inputs} inputs, {len(inputs)} given"
        )
    arguments: list[np.ndarray] = [
        _bind_input(kernel, index, array) for index, array in enumerate(inputs)
    ]
    num_args = len(kernel.function_type.inputs.data)
    for index in range(num_inputs, num_args):
        memref_type = _memref_type(kernel, index)
        dtype = numpy_dtype(memref_type.element_type)
        arguments.append(np.zeros(tuple(memref_type.get_shape()), dtype=dtype))
    outputs = arguments[num_inputs : num_inputs + num_outputs]

    tiles = TileFunctions(grid=grid)
    for output in outputs:
        tiles.track(output)
    interpreter = Interpreter(module)
    interpreter.register_implementations(ArithFunctions())
    interpreter.register_implementations(ScfFunctions())
    interpreter.register_implementations(FuncFunctions())
    interpreter.register_implementations(tiles)
    interpreter.register_implementations(FusionFunctions(np.float32))

    tiles_per_cta: list[int] = []
    with np.errstate(all="ignore"):
        for block in range(grid):
            tiles.block_id = block
            before = tiles.stores
            interpreter.call_op(kernel, tuple(arguments))
            tiles_per_cta.append(tiles.stores - before)

    writes = tuple(tiles.writes_of(output) for output in outputs)
    name = kernel.sym_name.data
    for index, count in enumerate(writes):
        bad = np.argwhere(count != 1)
        if bad.size == 0:
            continue
        first = tuple(int(i) for i in bad[0])
        raise CoverageError(
            f"kernel @{name}: output {index} element {first} was written {int(count[first])} "
            f"times (expected exactly once); {len(bad)} of {count.size} elements are wrong"
        )
    for index, count in enumerate(tiles.partial_writes()):
        bad = np.argwhere(count != 1)
        if bad.size == 0:
            continue
        first = tuple(int(i) for i in bad[0])
        raise CoverageError(
            f"kernel @{name}: split-K workspace {index}: partial (slice, tile) {first} was "
            f"written {int(count[first])} times (expected exactly once)"
        )
    return Execution(tuple(outputs), writes, grid, tuple(tiles_per_cta), tuple(tiles.trace))
