"""The reference interpreter: fusion-dialect functions executed on numpy arrays.

It runs on xDSL's interpreter, with one implementation per fusion op. Every value is a
numpy array of its declared element type (bf16 is `ml_dtypes.bfloat16`). Each op computes
in the accumulation type (float64 by default, or float32) and rounds its result to its
declared element type, so the numbers are those of the IR, op by op; contractions round
to their f32 result once, after the whole sum. `fusion.linear` adds its bias to that f32
accumulator, as a kernel's epilogue does, which is also what `propagate-axis-mapping`
lowers it to. It interprets IR before and after that pass alike.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.dialects.func import FuncOp
from xdsl.interpreter import Interpreter, InterpreterFunctions, impl, register_impls
from xdsl.interpreters.func import FuncFunctions
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.utils.exceptions import VerifyException

from mmcomp.dialects.fusion import (
    AddOp,
    BinaryOp,
    BroadcastOp,
    CastOp,
    DivOp,
    ExpOp,
    FusedMultiplySumOp,
    GeluOp,
    GroupedLinearOp,
    LinearOp,
    MatmulOp,
    MmaOp,
    MulOp,
    NegOp,
    QuantizeOp,
    QuantizeScaleOp,
    ReluOp,
    ScaledContraction,
    SigmoidOp,
    SiluOp,
    SplatOp,
    SubOp,
    TanhOp,
    UnaryOp,
    is_dynamic,
)
from mmcomp.dialects.fusion.grouped import group_rows
from mmcomp.dialects.fusion.quantize import (
    expanded_scale,
    quantize_scales,
    quantized,
    saturated,
)
from mmcomp.dialects.fusion.scales import dequantized
from mmcomp.errors import FusionError
from mmcomp.frontend.argcheck import check_shape_and_dtype
from mmcomp.ir.dtypes import FUSION_DTYPE_NAMES, GROUP_SIZE_DTYPES, of_element_type
from mmcomp.ir.narrowing import is_ndarray, is_tensor

if TYPE_CHECKING:
    from mmcomp.frontend.builder import Fusion

ACCUMULATE_DTYPES = (np.dtype(np.float64), np.dtype(np.float32))
"""The accumulation types the interpreter supports."""

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_erf = np.frompyfunc(math.erf, 1, 1)


def numpy_dtype(element_type: Attribute) -> np.dtype:
    """The numpy dtype of a fusion element type (ml_dtypes's for bf16 and fp8)."""
    dtype = of_element_type(element_type)
    if dtype is None or not (dtype.fusion or dtype in GROUP_SIZE_DTYPES):
        raise FusionError(
            f"reference: expected {FUSION_DTYPE_NAMES} (or i32 group sizes), found {element_type}"
        )
    return dtype.numpy_dtype


def _tensor_type(attr: Attribute, what: str) -> TensorType:
    if not is_tensor(attr):
        raise FusionError(f"reference: {what}: expected a tensor type, found {attr}")
    return attr


def _result_dtype(op: Operation) -> np.dtype:
    return numpy_dtype(_tensor_type(op.result_types[0], f"{op.name} result").element_type)


def _einsum_subscripts(roles: Sequence[str], letters: dict[str, str]) -> str:
    return "".join(letters.setdefault(role, chr(ord("a") + len(letters))) for role in roles)


def contract(
    a: np.ndarray,
    b: np.ndarray,
    a_roles: Sequence[str],
    b_roles: Sequence[str],
    out_roles: Sequence[str],
) -> np.ndarray:
    """C[out_roles] = sum over the roles not in out_roles of A[a_roles] * B[b_roles]."""
    letters: dict[str, str] = {}
    a_kept = [axis for axis, role in enumerate(a_roles) if role != "_"]
    b_kept = [axis for axis, role in enumerate(b_roles) if role != "_"]
    out_kept = [role for role in out_roles if role != "_"]
    a_squeezed = a.reshape([a.shape[axis] for axis in a_kept])
    b_squeezed = b.reshape([b.shape[axis] for axis in b_kept])
    subscripts = (
        _einsum_subscripts([a_roles[axis] for axis in a_kept], letters)
        + ","
        + _einsum_subscripts([b_roles[axis] for axis in b_kept], letters)
        + "->"
        + _einsum_subscripts(out_kept, letters)
    )
    product = np.einsum(subscripts, a_squeezed, b_squeezed, optimize=True)
    out_shape = [1 if role == "_" else product.shape[out_kept.index(role)] for role in out_roles]
    return product.reshape(out_shape)


@register_impls
class FusionFunctions(InterpreterFunctions):
    """numpy implementations of the fusion ops, computing in one accumulation type."""

    def __init__(self, accumulate: Any = np.float64):
        try:
            dtype = np.dtype(accumulate)
        except (TypeError, ValueError):
            dtype = None
        if dtype is None or dtype not in ACCUMULATE_DTYPES:
            found = dtype if dtype is not None else repr(accumulate)
            raise FusionError(
                "reference: argument 'accumulate': expected float64 or float32 (np.float64, "
                f"np.float32 or their names), found {found}"
            )
        self.accumulate = dtype
        """The type every op computes in before rounding to its result type."""
        self.extents: dict[str, int] = {}
        """The runtime extent of each dynamic role (m, b0, ...) of the call."""
        self.roles: dict[SSAValue, tuple[str, ...]] = {}
        """The axis roles of the function's values, where it has dynamic extents."""
        self.columns: int | None = None
        """The columns (n) of the tile inside the problem, while the CPU executor evaluates
        a tile's epilogue (None: every column counts): a quantization's amax reads those
        alone, as the epilogue's values past N (a constant, a division by a zero-padded
        operand's 0) are no values of the output."""

    def shape_of(self, value: SSAValue) -> tuple[int, ...]:
        """The runtime shape of a tensor value: its type's, each `?` the call's extent."""
        shape = tuple(_tensor_type(value.type, "value").get_shape())
        if not any(is_dynamic(extent) for extent in shape):
            return shape
        roles = self.roles[value]
        return tuple(
            self.extents[role] if is_dynamic(extent) else extent
            for extent, role in zip(shape, roles, strict=True)
        )

    def _wide(self, value: np.ndarray) -> np.ndarray:
        return np.asarray(value).astype(self.accumulate)

    def _rounded(self, op: Operation, value: np.ndarray) -> tuple[np.ndarray]:
        """The value rounded to the op's result type (to fp8 with saturation)."""
        return (saturated(value, _result_dtype(op)),)

    def _factors(
        self, op: ScaledContraction, args: tuple[Any, ...]
    ) -> tuple[np.ndarray, np.ndarray]:
        """The two factors in the accumulation type, dequantized by the op's scales."""
        a, b = self._wide(args[0]), self._wide(args[1])
        mode = op.scaling
        if mode is None:
            return a, b
        scales = args[len(args) - 2 :]
        a_axes, b_axes = op.scale_axes()
        return (
            dequantized(a, self._wide(scales[0]), a_axes, mode),
            dequantized(b, self._wide(scales[1]), b_axes, mode),
        )

    @impl(MatmulOp)
    def run_matmul(self, interpreter: Interpreter, op: MatmulOp, args: tuple[Any, ...]):
        a, b = self._factors(op, args)
        return self._rounded(op, np.matmul(a, b))

    @impl(LinearOp)
    def run_linear(self, interpreter: Interpreter, op: LinearOp, args: tuple[Any, ...]):
        a, w = self._factors(op, args)
        (product,) = self._rounded(op, np.matmul(a, w.T))
        if op.bias is None:
            return (product,)
        bias = np.asarray(args[2]).astype(np.float32)
        return self._rounded(op, self._wide(product) + self._wide(bias))

    @impl(GroupedLinearOp)
    def run_grouped_linear(
        self, interpreter: Interpreter, op: GroupedLinearOp, args: tuple[Any, ...]
    ):
        x, w = self._wide(args[0]), self._wide(args[1])
        sizes = np.asarray(args[-1])
        ranges, problem = group_rows(sizes.tolist(), op.masked, x.shape[-2])
        if problem is not None:
            raise FusionError(f"reference: {op.name}: operand {problem}")
        product = np.full((*x.shape[:-1], w.shape[1]), np.nan, dtype=self.accumulate)
        for group, (start, end) in enumerate(ranges):
            if op.masked:
                product[group, start:end] = x[group, start:end] @ w[group].T
            else:
                product[start:end] = x[start:end] @ w[group].T
        (result,) = self._rounded(op, product)
        if op.bias is None:
            return (result,)
        bias = self._wide(np.asarray(args[2]).astype(np.float32))
        if op.masked:
            return self._rounded(op, self._wide(result) + bias[:, None, :])
        rows = np.full((x.shape[0], w.shape[1]), np.nan, dtype=self.accumulate)
        for group, (start, end) in enumerate(ranges):
            rows[start:end] = bias[group]
        return self._rounded(op, self._wide(result) + rows)

    @impl(FusedMultiplySumOp)
    def run_fused_multiply_sum(
        self, interpreter: Interpreter, op: FusedMultiplySumOp, args: tuple[Any, ...]
    ):
        a, b = self._factors(op, args)
        return self._rounded(op, (a * b).sum(axis=op.summed_axes))

    @impl(MmaOp)
    def run_mma(self, interpreter: Interpreter, op: MmaOp, args: tuple[Any, ...]):
        a, b = self._factors(op, args)
        result = contract(a, b, op.a_roles.roles, op.b_roles.roles, op.out_roles.roles)
        return self._rounded(op, result)

    @impl(BroadcastOp)
    def run_broadcast(self, interpreter: Interpreter, op: BroadcastOp, args: tuple[Any, ...]):
        (source,) = args
        result_type = _tensor_type(op.result.type, f"{op.name} result")
        extents = iter(source.shape)
        with_axes = [1 if inserted else next(extents) for inserted in op.inserted]
        del result_type
        expanded = np.broadcast_to(source.reshape(with_axes), self.shape_of(op.result))
        return (np.ascontiguousarray(expanded),)

    @impl(SplatOp)
    def run_splat(self, interpreter: Interpreter, op: SplatOp, args: tuple[Any, ...]):
        result_type = _tensor_type(op.result.type, f"{op.name} result")
        value = np.asarray(op.scalar, dtype=np.float64).astype(_result_dtype(op))
        del result_type
        return (np.full(self.shape_of(op.result), value, dtype=value.dtype),)

    @impl(CastOp)
    def run_cast(self, interpreter: Interpreter, op: CastOp, args: tuple[Any, ...]):
        return self._rounded(op, args[0])

    @impl(QuantizeScaleOp)
    def run_quantize_scale(
        self, interpreter: Interpreter, op: QuantizeScaleOp, args: tuple[Any, ...]
    ):
        values = self._wide(args[0])
        if self.columns is not None and self.columns < values.shape[-1]:
            values = values.copy()
            values[..., self.columns :] = 0.0  # past N: no value of the output
        scales = quantize_scales(values, op.largest, op.granularity)
        return self._rounded(op, scales)

    @impl(QuantizeOp)
    def run_quantize(self, interpreter: Interpreter, op: QuantizeOp, args: tuple[Any, ...]):
        values, scale = self._wide(args[0]), self._wide(args[1])
        expanded = expanded_scale(scale, values.shape, op.granularity)
        return (quantized(values, expanded, _result_dtype(op)),)

    def _binary(self, op: BinaryOp, args: tuple[Any, ...]) -> tuple[np.ndarray]:
        lhs, rhs = (self._wide(arg) for arg in args)
        if isinstance(op, AddOp):
            return self._rounded(op, lhs + rhs)
        if isinstance(op, SubOp):
            return self._rounded(op, lhs - rhs)
        if isinstance(op, MulOp):
            return self._rounded(op, lhs * rhs)
        return self._rounded(op, lhs / rhs)

    @impl(AddOp)
    def run_add(self, interpreter: Interpreter, op: AddOp, args: tuple[Any, ...]):
        return self._binary(op, args)

    @impl(SubOp)
    def run_sub(self, interpreter: Interpreter, op: SubOp, args: tuple[Any, ...]):
        return self._binary(op, args)

    @impl(MulOp)
    def run_mul(self, interpreter: Interpreter, op: MulOp, args: tuple[Any, ...]):
        return self._binary(op, args)

    @impl(DivOp)
    def run_div(self, interpreter: Interpreter, op: DivOp, args: tuple[Any, ...]):
        return self._binary(op, args)

    def _unary(self, op: UnaryOp | GeluOp, args: tuple[Any, ...]) -> tuple[np.ndarray]:
        x = self._wide(args[0])
        one = self.accumulate.type(1)
        half = self.accumulate.type(0.5)
        if isinstance(op, NegOp):
            return self._rounded(op, -x)
        if isinstance(op, ExpOp):
            return self._rounded(op, np.exp(x))
        if isinstance(op, TanhOp):
            return self._rounded(op, np.tanh(x))
        if isinstance(op, SigmoidOp):
            return self._rounded(op, one / (one + np.exp(-x)))
        if isinstance(op, SiluOp):
            return self._rounded(op, x / (one + np.exp(-x)))
        if isinstance(op, ReluOp):
            return self._rounded(op, np.maximum(x, self.accumulate.type(0)))
        assert isinstance(op, GeluOp)
        if op.approximate.data == "tanh":
            inner = self.accumulate.type(_SQRT_2_OVER_PI) * (
                x + self.accumulate.type(0.044715) * x * x * x
            )
            return self._rounded(op, half * x * (one + np.tanh(inner)))
        erf = np.asarray(_erf(x.astype(np.float64) / math.sqrt(2.0))).astype(self.accumulate)
        return self._rounded(op, half * x * (one + erf))

    @impl(NegOp)
    def run_neg(self, interpreter: Interpreter, op: NegOp, args: tuple[Any, ...]):
        return self._unary(op, args)

    @impl(ExpOp)
    def run_exp(self, interpreter: Interpreter, op: ExpOp, args: tuple[Any, ...]):
        return self._unary(op, args)

    @impl(TanhOp)
    def run_tanh(self, interpreter: Interpreter, op: TanhOp, args: tuple[Any, ...]):
        return self._unary(op, args)

    @impl(SigmoidOp)
    def run_sigmoid(self, interpreter: Interpreter, op: SigmoidOp, args: tuple[Any, ...]):
        return self._unary(op, args)

    @impl(SiluOp)
    def run_silu(self, interpreter: Interpreter, op: SiluOp, args: tuple[Any, ...]):
        return self._unary(op, args)

    @impl(ReluOp)
    def run_relu(self, interpreter: Interpreter, op: ReluOp, args: tuple[Any, ...]):
        return self._unary(op, args)

    @impl(GeluOp)
    def run_gelu(self, interpreter: Interpreter, op: GeluOp, args: tuple[Any, ...]):
        return self._unary(op, args)


def _input_name(func: FuncOp, index: int) -> str:
    hint = func.body.blocks.first.args[index].name_hint if func.body.blocks.first else None
    return hint if hint is not None else f"arg{index}"


def _check_input(func: FuncOp, index: int, array: Any) -> np.ndarray:
    """`array` as the function's argument `index`; FusionError naming it if it does not fit."""
    name = _input_name(func, index)
    arg_type = _tensor_type(func.function_type.inputs.data[index], f"input {name!r}")
    expected_shape = tuple(arg_type.get_shape())
    expected_dtype = numpy_dtype(arg_type.element_type)
    if not is_ndarray(array):
        raise FusionError(
            f"reference: input {name!r}: expected a numpy array of shape "
            f"{list(expected_shape)} and dtype {expected_dtype}, found {type(array).__name__}"
        )
    check_shape_and_dtype(
        f"reference: input {name!r}",
        array.shape,
        array.dtype,
        expected_shape,
        expected_dtype,
        FusionError,
    )
    return array


def _is_dynamic(func: FuncOp) -> bool:
    """Whether any argument or result of `func` has a dynamic extent."""
    types = [*func.function_type.inputs.data, *func.function_type.outputs.data]
    return any(
        is_tensor(value_type) and any(is_dynamic(extent) for extent in value_type.get_shape())
        for value_type in types
    )


def _check_dynamic_inputs(
    func: FuncOp, arrays: Sequence[Any], functions: FusionFunctions
) -> list[np.ndarray]:
    """The inputs of a function with dynamic extents, checked; the call's extents and the
    values' roles stored in `functions` (the broadcasts and splats need them)."""
    from mmcomp.analysis.roles import infer_axis_mapping
    from mmcomp.frontend.argcheck import bind_extents

    try:
        mapping = infer_axis_mapping(func)
    except VerifyException as error:
        raise FusionError(f"reference: {error}") from None
    args = list(func.body.block.args)
    names = [_input_name(func, index) for index in range(len(args))]
    checked: list[np.ndarray] = []
    for index, array in enumerate(arrays):
        arg_type = _tensor_type(args[index].type, f"input {names[index]!r}")
        expected_dtype = numpy_dtype(arg_type.element_type)
        if not is_ndarray(array):
            raise FusionError(
                f"reference: input {names[index]!r}: expected a numpy array of dtype "
                f"{expected_dtype}, found {type(array).__name__}"
            )
        if array.dtype != expected_dtype:
            raise FusionError(
                f"reference: input {names[index]!r}: expected dtype {expected_dtype}, "
                f"found {array.dtype}"
            )
        checked.append(array)
    functions.extents = bind_extents(
        "reference",
        names,
        [array.shape for array in checked],
        [tuple(_tensor_type(arg.type, "input").get_shape()) for arg in args],
        [mapping.roles[arg] for arg in args],
        FusionError,
    )
    functions.roles = mapping.roles
    return checked


def run_function(
    func: FuncOp, arrays: Sequence[Any], accumulate: Any = np.float64
) -> tuple[np.ndarray, ...]:
    """Execute a fusion function on `arrays` (in argument order); its results in order."""
    count = len(func.function_type.inputs.data)
    if len(arrays) != count:
        names = [_input_name(func, index) for index in range(count)]
        raise FusionError(
            f"reference: @{func.sym_name.data}: expected {count} inputs {names}, "
            f"found {len(arrays)}"
        )
    functions = FusionFunctions(accumulate)
    if _is_dynamic(func):
        checked = _check_dynamic_inputs(func, arrays, functions)
    else:
        checked = [_check_input(func, index, array) for index, array in enumerate(arrays)]
    parent = func.parent_op()
    module = parent if isinstance(parent, ModuleOp) else ModuleOp([])
    interpreter = Interpreter(module)
    interpreter.register_implementations(FuncFunctions())
    interpreter.register_implementations(functions)
    with np.errstate(over="ignore", under="ignore"):
        results = interpreter.run_ssacfg_region(func.body, tuple(checked), func.sym_name.data)
    return tuple(np.asarray(result) for result in results)


def _bind(func: FuncOp, arrays: Sequence[Any], named: Mapping[str, Any]) -> list[np.ndarray | None]:
    """The arrays in argument order, from positional and keyword arguments."""
    count = len(func.function_type.inputs.data)
    names = [_input_name(func, index) for index in range(count)]
    if len(arrays) > count:
        raise FusionError(
            f"reference: @{func.sym_name.data}: expected at most {count} inputs {names}, "
            f"found {len(arrays)} positional arrays"
        )
    bound: list[Any] = list(arrays) + [None] * (count - len(arrays))
    for name, array in named.items():
        if name not in names:
            raise FusionError(
                f"reference: @{func.sym_name.data}: no input named {name!r}; inputs are {names}"
            )
        index = names.index(name)
        if index < len(arrays):
            raise FusionError(f"reference: input {name!r}: given both by position and by name")
        bound[index] = array
    missing = [name for name, array in zip(names, bound, strict=True) if array is None]
    if missing:
        raise FusionError(f"reference: @{func.sym_name.data}: missing inputs {missing}")
    return bound


def _function_of(fusion: Fusion | ModuleOp | FuncOp) -> FuncOp:
    if isinstance(fusion, FuncOp):
        return fusion
    module = fusion if isinstance(fusion, ModuleOp) else getattr(fusion, "module", None)
    if not isinstance(module, ModuleOp):
        raise FusionError(
            f"reference: expected a Fusion, a builtin.module or a func.func, "
            f"found {type(fusion).__name__}"
        )
    funcs = [op for op in module.ops if isinstance(op, FuncOp)]
    if len(funcs) != 1:
        raise FusionError(f"reference: expected one func.func in the module, found {len(funcs)}")
    return funcs[0]


def reference(
    fusion: Fusion | ModuleOp | FuncOp,
    *arrays: Any,
    accumulate: Any = np.float64,
    **named: Any,
) -> tuple[np.ndarray, ...]:
    """The fusion's outputs on numpy inputs (by position in input order, or by name)."""
    func = _function_of(fusion)
    try:
        func.verify()
    except VerifyException as error:
        raise FusionError(f"reference: @{func.sym_name.data}: {error}") from None
    return run_function(func, _bind(func, arrays, named), accumulate=accumulate)
