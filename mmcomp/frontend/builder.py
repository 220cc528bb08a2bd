"""The Python API: build a fusion op by op, get fusion-dialect IR, parse it back.

    f = mmcomp.Fusion("epilogue")
    a = f.input("a", [4096, 5120], "bf16")
    w = f.input("w", [14336, 5120], "bf16")
    y = f.linear(a, w)
    f.output(y)
    f.output(f.cast(f.silu(y) * 0.5, "bf16"))
    print(f)  # a builtin.module holding one func.func

Every method checks shapes and dtypes at once and raises `FusionError` naming the argument
and what was expected against what was found. Binary pointwise ops and Python operators
broadcast numpy-style and promote mixed dtypes to f32 by inserting `fusion.broadcast` and
`fusion.cast` ops; a Python number becomes a `fusion.splat` of the other operand's type.
"""

# pyright: reportPrivateUsage=false
# (Fusion and Value read each other's IR handles without handing them out)

from __future__ import annotations

import io
import numbers
import os
import re
from collections.abc import Sequence
from typing import Any, TypeGuard

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import Builtin, FunctionType, ModuleOp, TensorType
from xdsl.dialects.func import Func, FuncOp, ReturnOp
from xdsl.ir import Block, BlockArgument, Operation, Region, SSAValue
from xdsl.printer import Printer
from xdsl.utils.exceptions import ParseError, VerifyException

from mmcomp.dialects import fusion as fd
from mmcomp.errors import FusionError
from mmcomp.frontend.source import ir_source
from mmcomp.ir import dtypes
from mmcomp.ir.diagnostics import at
from mmcomp.ir.narrowing import is_tensor
from mmcomp.ir.structure import StructureKey, structure_of

DYNAMIC = fd.DYNAMIC
"""The extent of a dynamic axis in `Value.shape` (`?` in IR)."""

DTYPES = tuple(dtype.name for dtype in dtypes.FUSION_DTYPES)
"""The supported dtypes by short name."""

_BY_NAME = {dtype.name: dtype for dtype in dtypes.FUSION_DTYPES}
_TORCH_DTYPES = {f"torch.{dtype.long_name}": dtype.name for dtype in dtypes.FUSION_DTYPES}
_GROUP_SIZE_NAMES = {name: dtype.name for dtype in dtypes.GROUP_SIZE_DTYPES for name in dtype.names}

_SYMBOL = re.compile(r"[A-Za-z_][A-Za-z0-9_$.]*")
_RENAMED_SUFFIX = re.compile(r"_[0-9]+$")


def dtype_name(dtype: Any, where: str = "dtype") -> str:
    """The short name of a dtype: "bf16", "f16", "f32", "f8e4m3", "f8e5m2" (or a long name
    such as "float8_e4m3fn"), a numpy/ml_dtypes or a torch dtype."""
    if isinstance(dtype, str) and dtype in DTYPES:
        return dtype
    known = dtypes.by_name(dtype) if isinstance(dtype, str) else None
    if known is not None and known.fusion:
        return known.name
    torch_name = _TORCH_DTYPES.get(str(dtype)) if type(dtype).__module__ == "torch" else None
    if torch_name is not None:
        return torch_name
    try:
        import ml_dtypes  # noqa: F401  # pyright: ignore[reportUnusedImport]  (registers bfloat16 with numpy)

        resolved = np.dtype(dtype)
    except TypeError:
        resolved = None
    found = dtypes.of_numpy(resolved) if resolved is not None else None
    if found is not None and found.fusion:
        return found.name
    raise FusionError(
        f"{where}: expected {dtypes.FUSION_DTYPE_NAMES} (or the numpy/ml_dtypes or torch "
        f"dtype), found {dtype!r}"
    )


def input_dtype_name(dtype: Any, where: str = "dtype") -> str:
    """The short name of an input's dtype: a fusion dtype (`dtype_name`), or "i32" (also
    "int32", numpy's or torch's int32) for the group sizes of a grouped linear."""
    if isinstance(dtype, str) and dtype in _GROUP_SIZE_NAMES:
        return _GROUP_SIZE_NAMES[dtype]
    if type(dtype).__module__ == "torch" and str(dtype) == "torch.int32":
        return "i32"
    if not isinstance(dtype, str):
        try:
            resolved = np.dtype(dtype)
        except TypeError:
            resolved = None
        if resolved == np.dtype(np.int32):
            return "i32"
    try:
        return dtype_name(dtype, where)
    except FusionError:
        raise FusionError(
            f"{where}: expected {dtypes.FUSION_DTYPE_NAMES} or i32 (the group sizes of a "
            f"grouped linear), or the numpy/ml_dtypes or torch dtype, found {dtype!r}"
        ) from None


def numpy_dtype(dtype: str) -> np.dtype:
    """The numpy dtype of a short dtype name (bf16 -> ml_dtypes.bfloat16, i32 -> int32)."""
    found = _BY_NAME.get(dtype) or dtypes.by_name(dtype)
    assert found is not None
    return found.numpy_dtype


def _promote(lhs: str, rhs: str) -> str:
    """The dtype of a pointwise op on `lhs` and `rhs`: the common one, else f32."""
    return lhs if lhs == rhs else "f32"


def _is_fp8(dtype: str) -> bool:
    found = dtypes.by_name(dtype)
    return found is not None and found.is_fp8


def _format_shape(shape: Sequence[int]) -> str:
    return "[" + ", ".join(fd.format_extent(extent) for extent in shape) + "]"


def _is_scalar(value: object) -> TypeGuard[float]:
    return isinstance(value, numbers.Real) and not isinstance(value, bool | np.bool_)


class Value:
    """A tensor of a Fusion: an SSA value of the fusion's function, with shape and dtype."""

    __array_ufunc__ = None  # numpy scalars defer to Value's reflected operators

    def __init__(self, fusion: Fusion, ssa: SSAValue, name: str | None = None):
        self.fusion = fusion
        """The Fusion this value belongs to."""
        self._ssa = ssa
        self._name = name

    @property
    def ssa(self) -> SSAValue:
        """The xDSL SSA value. Handing it out ends the fusion's structure memo (see
        `Fusion.structure_key`): the IR may be edited through it."""
        self.fusion.hand_out()
        return self._ssa

    def peek_ssa(self) -> SSAValue:
        """The xDSL SSA value, for reading only (mmcomp's own readers): unlike `ssa`, it keeps
        the structure memo, so an edit through it would be missed by the compile cache."""
        return self._ssa

    @property
    def name(self) -> str | None:
        """The input name, or the SSA name hint of an intermediate (often None)."""
        return self._name if self._name is not None else self._ssa.name_hint

    @property
    def type(self) -> TensorType:
        """The builtin tensor type."""
        value_type = self._ssa.type
        assert is_tensor(value_type)
        return value_type

    @property
    def shape(self) -> tuple[int, ...]:
        """The shape; a dynamic axis has the extent `mmcomp.DYNAMIC` (`?` in IR)."""
        return tuple(self.type.get_shape())

    @property
    def dynamic_axes(self) -> tuple[int, ...]:
        """The axes whose extent is dynamic, known only from the arrays at call time."""
        return tuple(axis for axis, extent in enumerate(self.shape) if fd.is_dynamic(extent))

    @property
    def ndim(self) -> int:
        """The rank."""
        return len(self.shape)

    @property
    def dtype(self) -> str:
        """The element type: "bf16", "f16", "f32", "f8e4m3" or "f8e5m2" ("i32" for the group
        sizes of a grouped linear)."""
        element_type = self.type.element_type
        name = fd.dtype_name(element_type) or fd.group_size_dtype_name(element_type)
        assert name is not None
        return name

    @property
    def numpy_dtype(self) -> np.dtype:
        """The element type as a numpy dtype (bf16 is ml_dtypes.bfloat16)."""
        return numpy_dtype(self.dtype)

    def __repr__(self) -> str:
        label = f"{self.name!r}, " if self.name is not None else ""
        return f"Value({label}shape={_format_shape(self.shape)}, dtype={self.dtype})"

    def __add__(self, other: Value | float) -> Value:
        return self.fusion.add(self, other)

    def __radd__(self, other: float) -> Value:
        return self.fusion.add(other, self)

    def __sub__(self, other: Value | float) -> Value:
        return self.fusion.sub(self, other)

    def __rsub__(self, other: float) -> Value:
        return self.fusion.sub(other, self)

    def __mul__(self, other: Value | float) -> Value:
        return self.fusion.mul(self, other)

    def __rmul__(self, other: float) -> Value:
        return self.fusion.mul(other, self)

    def __truediv__(self, other: Value | float) -> Value:
        return self.fusion.div(self, other)

    def __rtruediv__(self, other: float) -> Value:
        return self.fusion.div(other, self)

    def __neg__(self) -> Value:
        return self.fusion.neg(self)

    def __matmul__(self, other: Value) -> Value:
        return self.fusion.matmul(self, other)


def _input_name(arg: BlockArgument, seen: set[str]) -> str:
    """The input name of a function argument: its name hint, else arg<index>."""
    name = arg.name_hint
    if name is None or name in seen or not name.isidentifier():
        return f"arg{arg.index}"
    return name


def _group_sizes_problem(func: FuncOp, arg: BlockArgument, where: str, index: int) -> str | None:
    """Why the i32 argument `arg` is not the group sizes of grouped linears only, or None."""
    if not arg.uses:
        return at(
            func,
            f"{where}: argument {index} ({arg.type}): an i32 input is the group sizes of a "
            "fusion.grouped_linear (its offsets or counts), found one no op uses",
        )
    for use in arg.uses:
        op = use.operation
        if isinstance(op, fd.GroupedLinearOp) and op.group_sizes is arg:
            continue
        return at(
            op,
            f"{where}: argument {index} ({arg.type}): an i32 input is the group sizes of a "
            f"fusion.grouped_linear (its offsets or counts) and nothing else, found a use "
            f"by {op.name}",
        )
    return None


def function_problem(func: FuncOp) -> str | None:
    """Why `func` is not a fusion function mmcomp can compile (the message, at the op where
    the text has one), or None: one block of fusion ops ending in func.return, arguments
    that are tensors of a fusion dtype (rank 0 is a scalar, such as a per-tensor scale),
    outputs computed in the body.

    `mmcomp.parse` and propagate-axis-mapping both check it, so mmcomp.compile and
    mmcomp-opt refuse the same functions with the same words."""
    where = f"@{func.sym_name.data}"
    if len(func.body.blocks) != 1:
        return at(
            func, f"{where}: expected a body of one block, found {len(func.body.blocks)} blocks"
        )
    for op in func.body.walk():
        if op is func or isinstance(op, ReturnOp) or op.name.startswith("fusion."):
            continue
        return at(op, f"{where}: expected only fusion ops and func.return, found {op.name}")
    block = func.body.block
    if not isinstance(block.last_op, ReturnOp):
        return at(func, f"{where}: expected a func.return")
    seen: set[str] = set()
    names: list[str] = []
    for index, arg in enumerate(block.args):
        arg_type = arg.type
        if is_tensor(arg_type) and fd.group_size_dtype_name(arg_type.element_type) is not None:
            problem = _group_sizes_problem(func, arg, where, index)
            if problem is not None:
                return problem
        elif not is_tensor(arg_type) or fd.dtype_name(arg_type.element_type) is None:
            return at(
                func,
                f"{where}: argument {index}: expected a tensor of {dtypes.FUSION_DTYPE_NAMES} "
                f"(or i32 group sizes of a fusion.grouped_linear), found {arg_type}",
            )
        names.append(_input_name(arg, seen))
        seen.add(names[-1])
    for index, value in enumerate(block.last_op.operands):
        if isinstance(value, BlockArgument) and value.block is block:
            return at(
                block.last_op,
                f"{where}: output {index}: expected a value computed in the body, found "
                f"argument {names[value.index]!r} returned directly",
            )
    return None


class Fusion:
    """A matmul fusion under construction: one `func.func` in a `builtin.module`."""

    def __init__(self, name: str | None = None):
        if name is None:
            name = "fusion"
        if not isinstance(name, str) or _SYMBOL.fullmatch(name) is None:
            raise FusionError(
                f"Fusion: argument 'name': expected an identifier ([A-Za-z_][A-Za-z0-9_$.]*), "
                f"found {name!r}"
            )
        block = Block()
        block.add_op(ReturnOp())
        func = FuncOp(name, FunctionType.from_lists([], []), Region(block))
        self._init(ModuleOp([func]), func, [], [])

    def _init(
        self, module: ModuleOp, func: FuncOp, inputs: list[Value], outputs: list[Value]
    ) -> None:
        self._module = module
        self._func = func
        self._structure: StructureKey | None = None
        self._handed_out = False
        self._inputs = inputs
        self._outputs = outputs
        self._values: dict[SSAValue, Value] = {value._ssa: value for value in inputs}

    @classmethod
    def from_module(cls, module: ModuleOp, name: str | None = None, shared: bool = True) -> Fusion:
        """A Fusion over the `func.func` of `module` (the one named `name` if several).

        With `shared` (the caller keeps `module` and may edit it), the IR counts as handed
        out (see `structure_key`); mmcomp passes False for a module no one else holds."""
        funcs = [op for op in module.ops if isinstance(op, FuncOp)]
        if name is not None:
            funcs = [func for func in funcs if func.sym_name.data == name]
        if len(funcs) != 1:
            names = [op.sym_name.data for op in module.ops if isinstance(op, FuncOp)]
            wanted = "one func.func" if name is None else f"one func.func named @{name}"
            raise FusionError(f"mmcomp.parse: expected {wanted}, found {len(funcs)} ({names})")
        func = funcs[0]
        problem = function_problem(func)
        if problem is not None:
            raise FusionError(f"mmcomp.parse: {problem}")
        if len(module.ops) != 1:
            func.detach()
            module = ModuleOp([func])
        block = func.body.block
        assert isinstance(block.last_op, ReturnOp)
        fusion = cls.__new__(cls)
        inputs: list[Value] = []
        seen: set[str] = set()
        for arg in block.args:
            arg_name = _input_name(arg, seen)
            seen.add(arg_name)
            inputs.append(Value(fusion, arg, arg_name))
        fusion._init(module, func, inputs, [])
        fusion._outputs = [fusion._wrap(value) for value in block.last_op.operands]
        fusion._handed_out = shared
        return fusion

    def clone(self) -> Fusion:
        """An independent Fusion of the same IR (over a clone of the module)."""
        clone = Fusion.from_module(self._module.clone(), shared=False)
        if not self._handed_out:
            clone._structure = self._structure
        return clone

    @property
    def module(self) -> ModuleOp:
        """The xDSL module holding `func`. Handing it out (or `func`, or a Value's `ssa`)
        ends the structure memo: the IR may be edited through it."""
        self.hand_out()
        return self._module

    @property
    def func(self) -> FuncOp:
        """The xDSL `func.func` of the fusion (handing it out ends the structure memo)."""
        self.hand_out()
        return self._func

    def peek_module(self) -> ModuleOp:
        """The xDSL module, for reading only (mmcomp's own readers): unlike `module`, it keeps
        the structure memo, so an edit through it would be missed by the compile cache."""
        return self._module

    def peek_func(self) -> FuncOp:
        """The xDSL `func.func`, for reading only (as `peek_module`)."""
        return self._func

    def hand_out(self) -> None:
        """Note that the xDSL IR was handed out: from now on `structure_key` walks the IR at
        every call, as it may have been edited by other means than this class's methods."""
        self._handed_out = True
        self._structure = None

    def structure_key(self) -> StructureKey:
        """The fusion's structure, the in-memory compile cache's key for it
        (mmcomp.ir.structure.structure_of: equal exactly when the printed IR is).

        It is computed once and kept until a method of this class changes the fusion; once
        the xDSL IR has been handed out (`module`, `func`, a Value's `ssa`), at every call."""
        if self._handed_out:
            return structure_of(self._module)
        if self._structure is None:
            self._structure = structure_of(self._module)
        return self._structure

    @property
    def name(self) -> str:
        """The function's symbol name."""
        return self._func.sym_name.data

    @property
    def inputs(self) -> list[Value]:
        """The inputs, in the order of `input` calls (function arguments)."""
        return list(self._inputs)

    @property
    def outputs(self) -> list[Value]:
        """The outputs, in the order of `output` calls (function results)."""
        return list(self._outputs)

    def __str__(self) -> str:
        stream = io.StringIO()
        Printer(stream=stream).print_op(self._module)
        stream.write("\n")
        return stream.getvalue()

    def __repr__(self) -> str:
        inputs = ", ".join(repr(value) for value in self._inputs)
        return f"Fusion({self.name!r}, inputs=[{inputs}], outputs={len(self._outputs)})"

    def verify(self) -> None:
        """Verify the whole module; raises FusionError with the verifier's message."""
        try:
            self._module.verify()
        except VerifyException as error:
            raise FusionError(f"{self.name}: {error}") from error

    # Building blocks

    @property
    def _block(self) -> Block:
        self._structure = None  # the block is read to be changed
        return self._func.body.block

    def _wrap(self, ssa: SSAValue) -> Value:
        value = self._values.get(ssa)
        if value is None:
            value = self._values[ssa] = Value(self, ssa)
        return value

    def _update_signature(self) -> None:
        self._structure = None
        self._func.function_type = FunctionType.from_lists(
            [value._ssa.type for value in self._inputs],
            [value._ssa.type for value in self._outputs],
        )

    def _insert(self, op: Operation, where: str) -> Value:
        terminator = self._block.last_op
        assert terminator is not None
        self._block.insert_op_before(op, terminator)
        try:
            op.verify()
        except VerifyException as error:
            op.detach()
            op.erase()
            raise FusionError(f"{where}: {error}") from error
        return self._wrap(op.results[0])

    def _value(self, value: object, where: str, argument: str, group_sizes: bool = False) -> Value:
        if not isinstance(value, Value):
            raise FusionError(
                f"{where}: argument '{argument}': expected a Value of this Fusion, "
                f"found {type(value).__name__}"
            )
        if value.fusion is self:
            if value.dtype == "i32" and not group_sizes:
                raise FusionError(
                    f"{where}: argument '{argument}': {value!r} is i32, the group sizes of a "
                    "grouped_linear (its offsets or counts), which no other op takes"
                )
            return value
        if value.fusion.name == self.name:
            raise FusionError(
                f"{where}: argument '{argument}': expected a Value of this Fusion "
                f"{self.name!r}, found one of another Fusion object of the same name"
            )
        raise FusionError(
            f"{where}: argument '{argument}': expected a Value of Fusion "
            f"{self.name!r}, found one of Fusion {value.fusion.name!r}"
        )

    def _same_dtype(self, where: str, first: tuple[str, Value], second: tuple[str, Value]):
        dtype, other = first[1].dtype, second[1].dtype
        if dtype != other and not (_is_fp8(dtype) and _is_fp8(other)):
            raise FusionError(
                f"{where}: argument '{second[0]}': expected dtype {dtype} (that of "
                f"'{first[0]}'), found {other}"
            )

    def _scales(self, where: str, scale_a: Value | None, scale_b: Value | None) -> list[SSAValue]:
        """The scale operands of a contraction: both or neither (the verifier checks them)."""
        if scale_a is None and scale_b is None:
            return []
        for argument, scale in (("scale_a", scale_a), ("scale_b", scale_b)):
            if scale is None:
                other = "scale_b" if argument == "scale_a" else "scale_a"
                raise FusionError(
                    f"{where}: argument '{argument}': expected a scale, as '{other}' is given "
                    "(fp8 scales come in pairs, as in torch._scaled_mm)"
                )
        return [
            self._value(scale, where, argument)._ssa
            for argument, scale in (("scale_a", scale_a), ("scale_b", scale_b))
        ]

    # Inputs and outputs

    def input(self, name: str, shape: Sequence[int | str | None], dtype: Any) -> Value:
        """A new input (function argument); axes of extent 1 are broadcast axes, and shape
        [] is a scalar (a per-tensor scale, as torch._scaled_mm's). dtype "i32" is for the
        group sizes of `grouped_linear` only (its offsets or counts; no other op takes one).

        An extent given as a name (a string such as "m") or None is dynamic (`?` in IR):
        the kernel takes any extent there and learns it from the arrays at call time.
        Only m and batch axes may be dynamic (propagate-axis-mapping checks the roles);
        every dynamic axis of one role is one runtime extent, whatever its name.
        """
        where = "Fusion.input"
        if not isinstance(name, str) or not name.isidentifier() or not name.isascii():
            raise FusionError(
                f"{where}: argument 'name': expected a Python identifier, found {name!r}"
            )
        if _RENAMED_SUFFIX.search(name):
            raise FusionError(
                f"{where}: argument 'name': expected a name not ending in _<digits> (IR "
                f"printing uses that suffix to rename), found {name!r}"
            )
        if any(value.name == name for value in self._inputs):
            raise FusionError(f"{where}: argument 'name': input {name!r} already exists")
        if (
            isinstance(shape, int | str | bytes | bytearray)
            or not isinstance(shape, Sequence | np.ndarray)
            or (isinstance(shape, np.ndarray) and shape.ndim != 1)
        ):
            raise FusionError(
                f"{where}: argument 'shape': expected a sequence of positive ints, found {shape!r}"
            )
        given: list[Any] = list(shape)
        extents: list[int] = []
        for axis, extent in enumerate(given):
            if extent is None or isinstance(extent, str):
                if extent is not None and not extent.isidentifier():
                    raise FusionError(
                        f"{where}: argument 'shape': expected an identifier naming the "
                        f"dynamic extent of axis {axis}, found {extent!r} in {shape!r}"
                    )
                extents.append(fd.DYNAMIC)
                continue
            if isinstance(extent, bool | np.bool_) or not isinstance(extent, numbers.Integral):
                raise FusionError(
                    f"{where}: argument 'shape': expected positive ints, found {extent!r} "
                    f"in {shape!r} (a name or None marks a dynamic extent)"
                )
            number = int(extent)
            if number < 1:
                found = "mmcomp.DYNAMIC (-2**63)" if fd.is_dynamic(number) else str(number)
                raise FusionError(
                    f"{where}: argument 'shape': expected positive extents, found {found} in "
                    f"{shape!r} (a name or None marks a dynamic extent)"
                )
            extents.append(number)
        dtype = input_dtype_name(dtype, f"{where}: argument 'dtype'")
        arg = self._block.insert_arg(fd.tensor_type(extents, dtype), len(self._inputs))
        arg.name_hint = name
        value = Value(self, arg, name)
        self._inputs.append(value)
        self._values[arg] = value
        self._update_signature()
        return value

    def output(self, value: Value) -> Value:
        """Make `value` the next output (function result); returns it."""
        where = "Fusion.output"
        value = self._value(value, where, "value")
        if isinstance(value._ssa, BlockArgument):
            raise FusionError(
                f"{where}: argument 'value': expected a value computed by the fusion, found "
                f"input {value.name!r} itself (an output must be computed in the body; "
                f"the kernel does not copy inputs)"
            )
        self._outputs.append(value)
        terminator = self._block.last_op
        assert terminator is not None
        terminator.detach()
        terminator.erase()
        self._block.add_op(ReturnOp(*(output._ssa for output in self._outputs)))
        self._update_signature()
        return value

    # Contractions

    def matmul(
        self,
        a: Value,
        b: Value,
        *,
        scale_a: Value | None = None,
        scale_b: Value | None = None,
    ) -> Value:
        """A[..., M, K] x B[..., K, N] -> f32[..., M, N]; batch dims broadcast as numpy does.

        fp8 factors may take f32 scales, whose shapes select the mode (docs/fp8.md):
        per-tensor [] and [], row-wise [..., M] and [..., N], block-wise
        [..., M, ceil(K/128)] and [ceil(K/128), ceil(N/128)].
        """
        where = "Fusion.matmul"
        a = self._value(a, where, "a")
        b = self._value(b, where, "b")
        scales = self._scales(where, scale_a, scale_b)
        self._same_dtype(where, ("a", a), ("b", b))
        for argument, value in (("a", a), ("b", b)):
            if value.ndim < 2:
                raise FusionError(
                    f"{where}: argument '{argument}': expected rank >= 2, found rank "
                    f"{value.ndim} (shape {_format_shape(value.shape)})"
                )
        if a.shape[-1] != b.shape[-2]:
            raise FusionError(
                f"{where}: argument 'b': expected K = {fd.format_extent(a.shape[-1])} (the last "
                f"axis of 'a') at axis {b.ndim - 2}, found {fd.format_extent(b.shape[-2])} "
                f"(shape {_format_shape(b.shape)})"
            )
        batch = fd.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        if batch is None:
            raise FusionError(
                f"{where}: argument 'b': batch dims {_format_shape(b.shape[:-2])} do not "
                f"broadcast with those of 'a', {_format_shape(a.shape[:-2])}"
            )
        result_type = fd.tensor_type((*batch, a.shape[-2], b.shape[-1]), "f32")
        return self._insert(fd.MatmulOp(a._ssa, b._ssa, result_type, scales), where)

    def linear(
        self,
        a: Value,
        w: Value,
        bias: Value | None = None,
        *,
        scale_a: Value | None = None,
        scale_b: Value | None = None,
    ) -> Value:
        """A[..., M, K] x W[N, K]^T (+ bias[N]) -> f32[..., M, N].

        fp8 factors may take f32 scales, whose shapes select the mode (docs/fp8.md):
        per-tensor [] and [], row-wise [..., M] and [N], block-wise [..., M, ceil(K/128)]
        and [ceil(N/128), ceil(K/128)]. The result is the product of the dequantized
        factors, plus the bias.
        """
        where = "Fusion.linear"
        a = self._value(a, where, "a")
        w = self._value(w, where, "w")
        scales = self._scales(where, scale_a, scale_b)
        self._same_dtype(where, ("a", a), ("w", w))
        if a.ndim < 2:
            raise FusionError(
                f"{where}: argument 'a': expected rank >= 2 ([..., M, K]), found rank "
                f"{a.ndim} (shape {_format_shape(a.shape)})"
            )
        if w.ndim != 2:
            raise FusionError(
                f"{where}: argument 'w': expected rank 2 ([N, K]), found rank {w.ndim} "
                f"(shape {_format_shape(w.shape)})"
            )
        if w.shape[1] != a.shape[-1]:
            raise FusionError(
                f"{where}: argument 'w': expected K = {fd.format_extent(a.shape[-1])} (the last "
                f"axis of 'a') at axis 1, found {fd.format_extent(w.shape[1])} "
                f"(shape {_format_shape(w.shape)})"
            )
        bias_ssa = None
        if bias is not None:
            bias = self._value(bias, where, "bias")
            if bias.shape != (w.shape[0],):
                raise FusionError(
                    f"{where}: argument 'bias': expected shape {_format_shape(w.shape[:1])} "
                    f"(N, the first axis of 'w'), found {_format_shape(bias.shape)}"
                )
            bias_ssa = bias._ssa
        result_type = fd.tensor_type((*a.shape[:-1], w.shape[0]), "f32")
        return self._insert(fd.LinearOp(a._ssa, w._ssa, bias_ssa, result_type, scales), where)

    def grouped_linear(
        self,
        x: Value,
        w: Value,
        offsets: Value | None = None,
        bias: Value | None = None,
        *,
        counts: Value | None = None,
        scale: Value | None = None,
    ) -> Value:
        """Each row of group g times w[g]^T (+ bias[g]) (* scale) -> f32 (docs/grouped.md).

        Contiguous layout: x [T, K] (T may be dynamic), rows sorted by group, `offsets` an
        i32 input [G] of cumulative group ends as torch._grouped_mm's `offs`; the result is
        [T, N]. Masked layout: x [G, Mmax, K] and `counts=` an i32 input [G] of each
        group's rows; the result is [G, Mmax, N]. w is [G, N, K]; bias, optional, [G, N].
        The group sizes are read where the kernel runs, never when it is compiled. Rows past
        offsets[-1], or past their group's count, are no group's: they are not written.
        `scale`, optional, is a per-row factor of the result's shape with N as 1 ([T, 1] or
        [G, Mmax, 1], e.g. the router's weights): the result is multiplied by it
        (`fusion.mul` after the broadcast).
        """
        where = "Fusion.grouped_linear"
        x = self._value(x, where, "x")
        w = self._value(w, where, "w")
        if (offsets is None) == (counts is None):
            given = "both" if offsets is not None else "neither"
            raise FusionError(
                f"{where}: expected one of 'offsets' (x [T, K], cumulative group ends) and "
                f"'counts' (x [G, Mmax, K], rows per group), found {given}"
            )
        argument = "offsets" if offsets is not None else "counts"
        sizes = self._value(offsets if offsets is not None else counts, where, argument, True)
        self._same_dtype(where, ("x", x), ("w", w))
        rank = 2 if argument == "offsets" else 3
        layout = "[T, K]" if argument == "offsets" else "[G, Mmax, K]"
        if x.ndim != rank:
            other = "counts=" if argument == "offsets" else "offsets"
            raise FusionError(
                f"{where}: argument 'x': expected rank {rank} ({layout}, with '{argument}'), "
                f"found rank {x.ndim} (shape {_format_shape(x.shape)}; rank {5 - rank} goes "
                f"with {other})"
            )
        if w.ndim != 3:
            raise FusionError(
                f"{where}: argument 'w': expected rank 3 ([G, N, K]), found rank {w.ndim} "
                f"(shape {_format_shape(w.shape)})"
            )
        if w.dynamic_axes:
            raise FusionError(
                f"{where}: argument 'w': expected a static shape [G, N, K], found "
                f"{_format_shape(w.shape)}"
            )
        groups, n, k = w.shape
        if k != x.shape[-1]:
            raise FusionError(
                f"{where}: argument 'w': expected K = {fd.format_extent(x.shape[-1])} (the last "
                f"axis of 'x') at axis 2, found {k} (shape {_format_shape(w.shape)})"
            )
        if argument == "counts" and x.shape[0] != groups:
            raise FusionError(
                f"{where}: argument 'x': expected G = {groups} (the first axis of 'w') at axis "
                f"0, found {fd.format_extent(x.shape[0])} (shape {_format_shape(x.shape)})"
            )
        if sizes.dtype != "i32" or sizes.shape != (groups,):
            raise FusionError(
                f"{where}: argument '{argument}': expected an i32 input of shape [{groups}] "
                f"(G, the first axis of 'w'), found {sizes.dtype} "
                f"{_format_shape(sizes.shape)}"
            )
        bias_ssa = None
        if bias is not None:
            bias = self._value(bias, where, "bias")
            if bias.shape != (groups, n):
                raise FusionError(
                    f"{where}: argument 'bias': expected shape [{groups}, {n}] (G, N: the first "
                    f"two axes of 'w'), found {_format_shape(bias.shape)}"
                )
            bias_ssa = bias._ssa
        result_type = fd.tensor_type((*x.shape[:-1], n), "f32")
        op = fd.GroupedLinearOp(x._ssa, w._ssa, bias_ssa, sizes._ssa, result_type)
        result = self._insert(op, where)
        if scale is None:
            return result
        scale = self._value(scale, where, "scale")
        per_row = (*x.shape[:-1], 1)
        if scale.shape != per_row:
            raise FusionError(
                f"{where}: argument 'scale': expected shape {_format_shape(per_row)} (one "
                f"factor per row, broadcast over N), found {_format_shape(scale.shape)}"
            )
        return self.mul(result, scale)

    def fused_multiply_sum(
        self,
        a: Value,
        b: Value,
        axes: int | Sequence[int],
        *,
        scale_a: Value | None = None,
        scale_b: Value | None = None,
    ) -> Value:
        """The f32 sum over `axes` of a * b (equal ranks; size-1 axes broadcast).

        fp8 factors may take f32 scales: per-tensor [] and [], or row-wise (each factor's
        shape without the summed axes); block-wise scales need a linear or a matmul.
        """
        where = "Fusion.fused_multiply_sum"
        a = self._value(a, where, "a")
        b = self._value(b, where, "b")
        scales = self._scales(where, scale_a, scale_b)
        self._same_dtype(where, ("a", a), ("b", b))
        if a.ndim != b.ndim:
            raise FusionError(
                f"{where}: argument 'b': expected rank {a.ndim} (that of 'a'), found rank "
                f"{b.ndim} (shape {_format_shape(b.shape)})"
            )
        product = fd.broadcast_shapes(a.shape, b.shape)
        if product is None:
            raise FusionError(
                f"{where}: argument 'b': shape {_format_shape(b.shape)} does not broadcast "
                f"with that of 'a', {_format_shape(a.shape)} (extents must match or be 1)"
            )
        axis_list: list[Any] = list(axes) if isinstance(axes, Sequence) else [axes]
        if not axis_list:
            raise FusionError(f"{where}: argument 'axes': expected at least one axis")
        normalized: list[int] = []
        for axis in axis_list:
            if isinstance(axis, bool) or not isinstance(axis, numbers.Integral):
                raise FusionError(f"{where}: argument 'axes': expected ints, found {axis!r}")
            axis = int(axis)
            if not -a.ndim <= axis < a.ndim:
                raise FusionError(
                    f"{where}: argument 'axes': expected axes in [{-a.ndim}, {a.ndim}), "
                    f"found {axis}"
                )
            normalized.append(axis % a.ndim)
        if len(set(normalized)) != len(normalized):
            raise FusionError(f"{where}: argument 'axes': an axis appears twice in {axis_list}")
        for axis in sorted(normalized):
            if a.shape[axis] != b.shape[axis]:
                raise FusionError(
                    f"{where}: argument 'axes': summed axis {axis}: expected equal extents in "
                    f"'a' and 'b', found {fd.format_extent(a.shape[axis])} and "
                    f"{fd.format_extent(b.shape[axis])}"
                )
        kept = tuple(extent for axis, extent in enumerate(product) if axis not in normalized)
        result_type = fd.tensor_type(kept, "f32")
        op = fd.FusedMultiplySumOp(a._ssa, b._ssa, sorted(normalized), result_type, scales)
        return self._insert(op, where)

    # Shape ops

    def broadcast(self, x: Value, new_dims: Sequence[bool]) -> Value:
        """Insert a size-1 axis wherever `new_dims` (one bool per output axis) is True."""
        where = "Fusion.broadcast"
        x = self._value(x, where, "x")
        flags = list(new_dims)
        if any(not isinstance(flag, bool | np.bool_) for flag in flags):
            raise FusionError(
                f"{where}: argument 'new_dims': expected a list of bools, found {new_dims!r}"
            )
        kept = sum(1 for flag in flags if not flag)
        if kept != x.ndim:
            raise FusionError(
                f"{where}: argument 'new_dims': expected {x.ndim} False entries (the rank of "
                f"'x', shape {_format_shape(x.shape)}), found {kept} in {flags}"
            )
        extents = iter(x.shape)
        shape = [1 if flag else next(extents) for flag in flags]
        op = fd.BroadcastOp(x._ssa, [bool(f) for f in flags], fd.tensor_type(shape, x.dtype))
        return self._insert(op, where)

    def _expand(self, x: Value, shape: tuple[int, ...], where: str) -> Value:
        """`x` broadcast numpy-style to `shape` (leading axes inserted, size-1 axes expanded)."""
        if x.shape == shape:
            return x
        new_dims = [True] * (len(shape) - x.ndim) + [False] * x.ndim
        op = fd.BroadcastOp(x._ssa, new_dims, fd.tensor_type(shape, x.dtype))
        return self._insert(op, where)

    def _convert(self, x: Value, dtype: str, where: str) -> Value:
        if x.dtype == dtype:
            return x
        return self._insert(fd.CastOp(x._ssa, fd.tensor_type(x.shape, dtype)), where)

    # Pointwise ops

    def _binary(self, kind: str, lhs: Value | float, rhs: Value | float) -> Value:
        where = f"Fusion.{kind}"
        if _is_scalar(lhs) and _is_scalar(rhs):
            raise FusionError(f"{where}: expected at least one Value operand, found two numbers")
        operands: list[Value | float] = []
        for argument, operand in (("lhs", lhs), ("rhs", rhs)):
            if not _is_scalar(operand):
                operands.append(self._value(operand, where, argument))
                continue
            try:
                constant = float(operand)
            except OverflowError:
                constant = float("inf")
            if not np.isfinite(constant):
                raise FusionError(
                    f"{where}: argument '{argument}': expected a finite constant, found {operand!r}"
                )
            operands.append(constant)
        values = [operand for operand in operands if isinstance(operand, Value)]
        dtype = values[0].dtype if len(values) == 1 else _promote(*(v.dtype for v in values))
        shape = values[0].shape
        if len(values) == 2:
            broadcast = fd.broadcast_shapes(values[0].shape, values[1].shape)
            if broadcast is None:
                raise FusionError(
                    f"{where}: argument 'rhs': shape {_format_shape(values[1].shape)} does not "
                    f"broadcast with that of 'lhs', {_format_shape(values[0].shape)}"
                )
            shape = broadcast
        for argument, operand in (("lhs", operands[0]), ("rhs", operands[1])):
            if not isinstance(operand, Value) and not fd.is_finite_in(operand, dtype):
                raise FusionError(
                    f"{where}: argument '{argument}': expected a constant finite in {dtype} "
                    f"(largest finite {fd.largest_finite(dtype)}), found {operand!r}"
                )
        resolved: list[Value] = []
        for operand in operands:
            if isinstance(operand, Value):
                resolved.append(self._expand(self._convert(operand, dtype, where), shape, where))
                continue
            splat = fd.SplatOp(operand, fd.tensor_type(shape, dtype))
            resolved.append(self._insert(splat, where))
        op = fd.BINARY_OPS[kind](resolved[0]._ssa, resolved[1]._ssa)
        return self._insert(op, where)

    def add(self, lhs: Value | float, rhs: Value | float) -> Value:
        """lhs + rhs, broadcast numpy-style."""
        return self._binary("add", lhs, rhs)

    def sub(self, lhs: Value | float, rhs: Value | float) -> Value:
        """lhs - rhs, broadcast numpy-style."""
        return self._binary("sub", lhs, rhs)

    def mul(self, lhs: Value | float, rhs: Value | float) -> Value:
        """lhs * rhs, broadcast numpy-style."""
        return self._binary("mul", lhs, rhs)

    def div(self, lhs: Value | float, rhs: Value | float) -> Value:
        """lhs / rhs, broadcast numpy-style."""
        return self._binary("div", lhs, rhs)

    def _unary(self, kind: str, x: Value) -> Value:
        where = f"Fusion.{kind}"
        x = self._value(x, where, "x")
        return self._insert(fd.UNARY_OPS[kind](x._ssa), where)

    def neg(self, x: Value) -> Value:
        """-x."""
        return self._unary("neg", x)

    def exp(self, x: Value) -> Value:
        """e**x."""
        return self._unary("exp", x)

    def tanh(self, x: Value) -> Value:
        """tanh(x)."""
        return self._unary("tanh", x)

    def sigmoid(self, x: Value) -> Value:
        """1 / (1 + exp(-x))."""
        return self._unary("sigmoid", x)

    def silu(self, x: Value) -> Value:
        """x * sigmoid(x)."""
        return self._unary("silu", x)

    def relu(self, x: Value) -> Value:
        """max(x, 0)."""
        return self._unary("relu", x)

    def gelu(self, x: Value, approximate: str = "tanh") -> Value:
        """GELU, with the tanh approximation ("tanh") or exact ("none")."""
        where = "Fusion.gelu"
        x = self._value(x, where, "x")
        if approximate not in fd.GELU_APPROXIMATIONS:
            raise FusionError(
                f'{where}: argument \'approximate\': expected "tanh" or "none", '
                f"found {approximate!r}"
            )
        return self._insert(fd.GeluOp(x._ssa, approximate), where)

    def quantize(
        self,
        y: Value,
        dtype: Any = "f8e4m3",
        *,
        group: int | None = fd.QUANTIZE_GROUP,
        scale: Value | None = None,
    ) -> tuple[Value, Value]:
        """`y` quantized to fp8: (the fp8 values, their f32 scale), `y ~ q * scale`.

        Without `scale`, the scale is computed from `y`: amax(|y|) / largest (448 for
        f8e4m3, 57344 for f8e5m2) per 1 x 128 group of the last axis with `group=128`
        (shape [..., M, ceil(N/128)], a block-wise `scale_a`), per row with `group=None`
        ([..., M], a row-wise `scale_a`). With `scale` (an f32 Value of shape [], [..., M]
        or [..., M, ceil(N/128)], which selects the granularity; `group` is not read), the
        values are `y / scale`. The cast saturates at the largest finite value; where the
        scale is 0 the values are 0 (docs/fp8.md).
        """
        where = "Fusion.quantize"
        y = self._value(y, where, "y")
        name = dtype_name(dtype, f"{where}: argument 'dtype'")
        if not _is_fp8(name):
            raise FusionError(f"{where}: argument 'dtype': expected f8e4m3 or f8e5m2, found {name}")
        target = fd.ELEMENT_TYPES[name]
        if scale is None:
            if group is not None and group != fd.QUANTIZE_GROUP:
                raise FusionError(
                    f"{where}: argument 'group': expected {fd.QUANTIZE_GROUP} (1 x "
                    f"{fd.QUANTIZE_GROUP} groups) or None (one scale per row), found {group!r}"
                )
            if y.ndim < 1:
                raise FusionError(f"{where}: argument 'y': expected rank >= 1, found a scalar")
            scale = self._insert(fd.QuantizeScaleOp(y._ssa, target, group), where)
        else:
            scale = self._value(scale, where, "scale")
        result_type = fd.tensor_type(y.shape, name)
        values = self._insert(fd.QuantizeOp(y._ssa, scale._ssa, result_type), where)
        return values, scale

    def cast(self, x: Value, dtype: Any) -> Value:
        """`x` converted to `dtype` (round to nearest even; to fp8 with saturation at its
        largest finite value); `x` itself if already of it."""
        where = "Fusion.cast"
        x = self._value(x, where, "x")
        return self._convert(x, dtype_name(dtype, f"{where}: argument 'dtype'"), where)


def _context() -> Context:
    """Builtin, func and fusion loaded; sched registered lazily (for `#sched.params`)."""
    from mmcomp.ir.registry import DIALECTS

    ctx = Context()
    ctx.load_dialect(Builtin)
    ctx.load_dialect(Func)
    ctx.load_dialect(fd.Fusion)
    ctx.register_dialect("sched", DIALECTS["sched"])
    return ctx


def parse(text: str | os.PathLike[str], name: str | None = None) -> Fusion:
    """The Fusion of fusion-dialect IR (its one func.func, or the one named `name`): IR text,
    or the path of a file that holds it (an os.PathLike, or a str of one line that names a
    file, or that holds none of IR's `{`, `@`, `%`, `=`, `(`).

    A verifier error names the op's place, `<fusion>:line:col: error: ...` in text,
    `path:line:col: error: ...` in a file.
    """
    if not isinstance(text, str | os.PathLike):
        raise FusionError(
            "mmcomp.parse: argument 'text': expected IR text or the path of a .mlir file "
            f"(str or os.PathLike), found {type(text).__name__}"
        )
    source, where = ir_source(text, "mmcomp.parse")
    return parse_source(source, where, name)


def parse_source(source: str, where: str, name: str | None = None) -> Fusion:
    """`parse` of IR text read from `where` (a file's path, or "<fusion>")."""
    from mmcomp.ir.diagnostics import LocatingParser, verify

    try:
        module = LocatingParser(_context(), source, where).parse_module()
    except ParseError as error:
        raise FusionError(f"mmcomp.parse: {error}") from error
    try:
        verify(module)
    except VerifyException as error:
        raise FusionError(f"mmcomp.parse: {error}") from error
    return Fusion.from_module(module, name, shared=False)


def as_fusion(f: object, where: str = "compile") -> Fusion:
    """The fusion of an mmcomp.Fusion, IR text, the path of a .mlir file (mmcomp.parse) or a
    builtin.module (argument 'f' of `where`)."""
    if isinstance(f, Fusion):
        return f
    if isinstance(f, str | os.PathLike):
        return parse(f)  # pyright: ignore[reportUnknownArgumentType]  (PathLike[Any])
    if isinstance(f, ModuleOp):
        return Fusion.from_module(f.clone(), shared=False)
    raise FusionError(
        f"{where}: argument 'f': expected an mmcomp.Fusion, IR text, the path of a .mlir "
        f"file or a builtin.module, found {type(f).__name__}"
    )
