"""Autograd for mmcomp's torch ops and modules: a differentiated fusion (mmcomp.grad) as two
custom ops, the forward (the outputs, then the values the backward needs) and the backward
(the gradients asked for), joined by `torch.library.register_autograd`.

The backward op runs the plan's backward steps: kernels through the compiled kernels of
the op's back end (one compile each: a dW takes the token count as its dynamic K),
pointwise steps op by op in torch, column sums (bias gradients) by torch's reduction.
Both ops have fake implementations, so a train step traces under
torch.compile(fullgraph=True) with the kernels opaque.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
from xdsl.dialects.func import ReturnOp
from xdsl.ir import SSAValue

from mmcomp.autodiff import POINTWISE, Gradient, KernelCache, Step, chain, grad
from mmcomp.autodiff.replay import dtype_of, shape_of
from mmcomp.dialects import fusion as fd
from mmcomp.errors import FusionError
from mmcomp.frontend.builder import Fusion
from mmcomp.torch.arrays import FUSION_DTYPES, NUMPY_DTYPES, torch
from mmcomp.torch.ops import arguments, op_name, output_axes, register, schema

_TORCH = {name: dtype for dtype, name in FUSION_DTYPES.items()}
"""The torch dtype of each fusion dtype."""

_lock = threading.Lock()
_trainables: dict[str, Trainable] = {}


_UNARY: dict[str, Callable[[Any], Any]] = {
    "neg": lambda x: -x,
    "exp": lambda x: torch.exp(x),
    "tanh": lambda x: torch.tanh(x),
    "sigmoid": lambda x: torch.sigmoid(x),
    "silu": lambda x: torch.nn.functional.silu(x),
    "relu": lambda x: torch.relu(x),
    "gelu_tanh": lambda x: torch.nn.functional.gelu(x, approximate="tanh"),
    "gelu_none": lambda x: torch.nn.functional.gelu(x),
}
_BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
}

Instruction = tuple[str, tuple[int, ...], Any]
"""(what, operand positions, its constant: a splat's value, a cast's dtype, a broadcast's
(inserted shape, result shape))."""


@dataclass(frozen=True)
class Program:
    """A pointwise fusion (static shapes) as plain instructions over numbered values (the
    inputs first), so that torch.compile traces it as one function of tensors."""

    inputs: int
    """How many inputs."""
    instructions: tuple[Instruction, ...]
    outputs: tuple[int, ...]
    """The positions of the outputs."""


def program(fusion: Fusion) -> Program:
    """The instructions of a pointwise fusion."""
    block = fusion.peek_func().body.block
    position: dict[SSAValue, int] = {arg: index for index, arg in enumerate(block.args)}
    instructions: list[Instruction] = []
    for op in block.ops:
        if isinstance(op, ReturnOp):
            return Program(
                len(block.args),
                tuple(instructions),
                tuple(position[value] for value in op.operands),
            )
        result = op.results[0]
        dtype = _TORCH[dtype_of(result)]
        operands = tuple(position[value] for value in op.operands)
        if isinstance(op, fd.SplatOp):
            rounded = float(torch.tensor(op.scalar, dtype=dtype))
            instruction: Instruction = ("splat", (), rounded)
        elif isinstance(op, fd.CastOp):
            instruction = ("cast", operands, dtype)
        elif isinstance(op, fd.BroadcastOp):
            source = iter(shape_of(op.input))
            inserted = tuple(1 if flag else next(source) for flag in op.inserted)
            instruction = ("broadcast", operands, (inserted, shape_of(result)))
        elif isinstance(op, fd.GeluOp):
            instruction = (f"gelu_{op.approximate.data}", operands, None)
        else:
            instruction = (op.name.removeprefix("fusion."), operands, None)
        if instruction[0] not in (*_UNARY, *_BINARY, "splat", "cast", "broadcast"):
            raise FusionError(f"mmcomp.torch: {op.name} is not evaluated in torch")
        position[result] = len(position)
        instructions.append(instruction)
    raise FusionError(f"mmcomp.torch: @{fusion.name}: expected a func.return")


def run_program(found: Program, *tensors: Any) -> list[Any]:
    """The program's outputs: each op in torch, rounded to its type (a splat is a
    constant rounded to its type, applied as a scalar)."""
    values: list[Any] = list(tensors)
    for what, operands, constant in found.instructions:
        args = [values[index] for index in operands]
        if what == "splat":
            values.append(constant)
        elif what == "cast":
            values.append(args[0].to(constant))
        elif what == "broadcast":
            values.append(args[0].reshape(constant[0]).expand(constant[1]))
        elif what in _BINARY:
            values.append(_BINARY[what](args[0], args[1]))
        else:
            values.append(_UNARY[what](args[0]))
    return [values[index] for index in found.outputs]


_programs: dict[int, tuple[Fusion, Program]] = {}


def evaluate(fusion: Fusion, tensors: Sequence[Any]) -> list[Any]:
    """A pointwise fusion (static shapes) on torch tensors, op by op. (Not torch.compile'd
    here: every program would share `run_program`'s code object, whose recompile limit a few
    shapes exhaust; under a user's torch.compile the ops are traced and fused with the
    rest.)"""
    with _lock:
        found = _programs.get(id(fusion))
        if found is None or found[0] is not fusion:
            found = _programs[id(fusion)] = (fusion, program(fusion))
    return run_program(found[1], *tensors)


class TorchRunner:
    """Runs a plan's steps on torch tensors: kernels compiled for the op's back end,
    pointwise steps in torch, column sums by torch's reduction."""

    def __init__(self, kernels: KernelCache):
        self.kernels = kernels
        """The compiled kernels."""

    def run(self, step: Step, fusion: Fusion, arrays: list[Any]) -> list[Any]:
        """The step's outputs."""
        if step.kind == POINTWISE:
            return evaluate(fusion, arrays)
        kernel = self.kernels.kernel(step, fusion)
        return list(kernel(*(array.contiguous() for array in arrays)))

    def column_sum(self, arrays: list[Any], dtype: str) -> Any:
        """The rows of each tensor summed in f32 (torch's reduction: a fixed order, the
        same bits run to run), the sums added, rounded to `dtype`."""
        total = arrays[0].sum(0, dtype=torch.float32)
        for array in arrays[1:]:
            total = total + array.sum(0, dtype=torch.float32)
        return total.to(_TORCH[dtype])

    def empty(self, shape: Sequence[int], dtype: str, like: Any) -> Any:
        """An empty tensor of a fusion dtype on `like`'s device."""
        return like.new_empty(list(shape), dtype=_TORCH[dtype])


def _tuple(found: Any) -> tuple[Any, ...]:
    """An op's outputs as a tuple (one output is a tensor)."""
    if isinstance(found, tuple):
        return cast("tuple[Any, ...]", found)
    return (found,)


def _forward_shapes(gradient: Gradient, tensors: Sequence[Any]) -> list[tuple[list[Any], Any]]:
    """The shape and dtype of each forward op output (outputs, then saved) from the inputs'
    shapes (symbolic under torch.compile)."""
    shapes: dict[str, Any] = {
        name: list(tensor.shape) for name, tensor in zip(gradient.inputs, tensors, strict=True)
    }
    dtypes: dict[str, Any] = {}
    for step in gradient.forward_steps:
        fusion = step.fusion()
        for env, value in zip(step.outputs, fusion.outputs, strict=True):
            axes = output_axes(fusion, value)
            shapes[env] = [
                e if isinstance(e, int) else shapes[step.inputs[e[0]]][e[1]] for e in axes
            ]
            dtypes[env] = _TORCH[value.dtype]
    return [(shapes[env], dtypes[env]) for env in (*gradient.outputs, *gradient.saved)]


class Trainable:
    """A differentiated fusion (or chain) as a differentiable torch callable."""

    def __init__(
        self,
        gradient: Gradient,
        name: str,
        where: str,
        backend: str,
        schedules: Sequence[dict[str, Any]],
    ):
        self.gradient = gradient
        """The plan."""
        by_step = {
            step.name: schedule
            for step, schedule in zip(gradient.forward_steps, schedules, strict=True)
        }
        self.kernels = KernelCache(gradient, backend, by_step)
        """Its compiled kernels."""
        self.where = where
        """What it is, for messages."""

        names = arguments(list(gradient.inputs))
        count = len(gradient.outputs) + len(gradient.saved)
        self.forward_op = torch.library.custom_op(
            f"mmcomp::{name}_train", self._forward, mutates_args=(), schema=schema(names, (), count)
        )
        self.forward_op.register_fake(self._forward_fake)
        self.backward_op = torch.library.custom_op(
            f"mmcomp::{name}_backward",
            self._backward,
            mutates_args=(),
            schema="(Tensor[] inputs, Tensor[] saved, Tensor[] grads, bool[] wanted) -> Tensor[]",
        )
        self.backward_op.register_fake(self._backward_fake)
        self.forward_op.register_autograd(self._autograd_backward, setup_context=self._setup)

    def _runner(self) -> TorchRunner:
        return TorchRunner(self.kernels)

    def _forward(self, *tensors: Any) -> Any:
        values = self.gradient.run_steps(
            self.gradient.forward_steps,
            dict(zip(self.gradient.inputs, tensors, strict=True)),
            self._runner(),
        )
        found = tuple(values[env] for env in (*self.gradient.outputs, *self.gradient.saved))
        return found[0] if len(found) == 1 else found

    def _forward_fake(self, *tensors: Any) -> Any:
        like = tensors[0]
        found = tuple(
            like.new_empty(shape, dtype=dtype)
            for shape, dtype in _forward_shapes(self.gradient, tensors)
        )
        return found[0] if len(found) == 1 else found

    def _wanted(self, wanted: Sequence[bool]) -> list[str]:
        return [
            name
            for name, asked in zip(self.gradient.inputs, wanted, strict=True)
            if asked and name in self.gradient.gradients
        ]

    def _backward(
        self, inputs: list[Any], saved: list[Any], grads: list[Any], wanted: list[bool]
    ) -> list[Any]:
        gradient = self.gradient
        arrays: dict[str, Any] = dict(zip(gradient.inputs, inputs, strict=True))
        arrays.update(zip(gradient.saved, saved, strict=True))
        arrays.update(zip(gradient.grad_outputs, grads, strict=True))
        names = self._wanted(wanted)
        values = gradient.run_steps(gradient.needed(names), arrays, self._runner())
        found = gradient.gradients_of(values, arrays)
        given = {id(tensor) for tensor in (*inputs, *saved, *grads)}
        results: list[Any] = []
        for name in names:
            tensor = found[name]
            results.append(tensor.clone() if id(tensor) in given else tensor.contiguous())
        return results

    def _backward_fake(
        self, inputs: list[Any], saved: list[Any], grads: list[Any], wanted: list[bool]
    ) -> list[Any]:
        del saved, grads
        by_name = dict(zip(self.gradient.inputs, inputs, strict=True))
        return [by_name[name].new_empty(by_name[name].shape) for name in self._wanted(wanted)]

    def _setup(self, ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
        outputs = _tuple(output)
        count = len(self.gradient.outputs)
        saved = list(outputs[count:])
        ctx.count = len(inputs)
        ctx.shapes = [(tuple(o.shape), o.dtype) for o in outputs[:count]]
        if saved:
            ctx.mark_non_differentiable(*saved)
        ctx.save_for_backward(*inputs, *saved)

    def _autograd_backward(self, ctx: Any, *grads: Any) -> tuple[Any, ...]:
        tensors = list(ctx.saved_tensors)
        inputs, saved = tensors[: ctx.count], tensors[ctx.count :]
        count = len(self.gradient.outputs)
        like = inputs[0]
        seeds = [
            grad.contiguous() if grad is not None else like.new_zeros(shape, dtype=dtype)
            for grad, (shape, dtype) in zip(grads[:count], ctx.shapes, strict=True)
        ]
        wanted = [bool(flag) for flag in ctx.needs_input_grad]
        computed = iter(self.backward_op(inputs, saved, seeds, wanted))
        names = set(self._wanted(wanted))
        return tuple(next(computed) if name in names else None for name in self.gradient.inputs)

    def __call__(self, *tensors: Any) -> Any:
        """The forward's outputs (one: a tensor; several: a tuple), differentiable."""
        outputs = _tuple(self.forward_op(*tensors))[: len(self.gradient.outputs)]
        return outputs[0] if len(outputs) == 1 else outputs


def trainable(
    fusions: Sequence[Fusion],
    schedules: Sequence[dict[str, Any]],
    recompute: bool,
    where: str,
) -> Trainable:
    """The Trainable of one fusion, or of a chain of two (the second reads the first's
    output as its first input), registered once per fusions, schedules and policy.
    `schedules`: each fusion's mmcomp.compile keywords, `backend` included."""
    keywords = [dict(schedule) for schedule in schedules]
    backend = keywords[0].pop("backend", "cuda")
    for other in keywords[1:]:
        if other.pop("backend", "cuda") != backend:
            raise FusionError(f"{where}: expected one backend for every kernel")
    description = "\n".join(
        [
            backend,
            str(recompute),
            *(f"{sorted(k.items())}\n{f}" for k, f in zip(keywords, fusions, strict=True)),
        ]
    )
    name = op_name(fusions[-1].name if len(fusions) == 1 else f"{fusions[0].name}_mlp", description)
    with _lock:
        found = _trainables.get(name)
        if found is not None:
            return found
    gradient = grad(fusions[0], recompute=recompute)
    if len(fusions) == 2:
        into = fusions[1].inputs[0].name or "arg0"
        gradient = chain(gradient, grad(fusions[1], recompute=recompute), into)
    with _lock:
        found = _trainables.get(name)
        if found is None:
            found = _trainables[name] = Trainable(gradient, name, where, backend, keywords)
    return found


def requires_grad(*tensors: Any) -> bool:
    """Whether autograd records a call on `tensors` (grad mode on, one of them requiring grad)."""
    return torch.is_grad_enabled() and any(
        tensor is not None and tensor.requires_grad for tensor in tensors
    )


def autocast_input(x: Any, dtype: Any) -> Any:
    """`x` in the module's weight dtype where autocast is on for its device (nn.Linear under
    autocast computes in the autocast dtype; a module's kernels compute in its weights')."""
    if x.dtype != dtype and torch.is_autocast_enabled(x.device.type):
        return x.to(dtype)
    return x


class Differentiable:
    """What mmcomp.torch.op returns: the custom op, with its backward where grad is
    recorded (the forward then also writes what the backward saves)."""

    def __init__(self, plain: Any, trainable: Trainable | None, reason: str | None):
        self.plain = plain
        """The registered custom op (no saved outputs; its backward raises)."""
        self.trainable = trainable
        """The differentiable forward, or None where the fusion is not differentiated."""
        self.reason = reason
        """Why there is no backward, where there is none."""

    def __call__(self, *tensors: Any, **named: Any) -> Any:
        """The op's output (one: a tensor; several: a tuple); inputs by position or by
        their schema names."""
        if named:
            names = [argument.name for argument in self.plain._opoverload._schema.arguments]
            try:
                tensors = (*tensors, *(named.pop(name) for name in names[len(tensors) :]))
            except KeyError as error:
                raise TypeError(f"{self.plain}: missing input {error}") from None
            if named:
                raise TypeError(f"{self.plain}: unexpected inputs {sorted(named)}")
        if self.trainable is not None and requires_grad(*tensors):
            return self.trainable(*tensors)
        return self.plain(*tensors)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.plain, name)


_differentiable: dict[int, Differentiable] = {}


def differentiable(
    plain: Any, fusion: Fusion, backend: str, schedule: dict[str, Any]
) -> Differentiable:
    """mmcomp.torch.op's callable for the registered op `plain` of `fusion`."""
    with _lock:
        found = _differentiable.get(id(plain))
    if found is not None:
        return found
    try:
        found_trainable = trainable(
            [fusion], [{"backend": backend, **schedule}], False, f"mmcomp op for @{fusion.name}"
        )
        reason = None
    except FusionError as error:
        found_trainable, reason = None, str(error)
    with _lock:
        return _differentiable.setdefault(id(plain), Differentiable(plain, found_trainable, reason))


def _single(outputs: tuple[Any, ...]) -> Any:
    return outputs[0] if len(outputs) == 1 else outputs


def op(fusion: Any, *, backend: str = "cuda", **schedule: Any) -> Any:
    """Compile `fusion` (a Fusion or IR text) and register it as the op `mmcomp::<name>`.

    The op takes the fusion's inputs as tensors, in order, and returns its output (or a
    tuple of outputs); its fake implementation gives the outputs' shapes and dtypes on the
    inputs' device. A fusion with a dynamic M or batch extent gives an op for every extent:
    its outputs take the extent from the inputs (symbolic under
    `torch.compile(dynamic=True)`), and its M buckets compile at most a few kernels.
    Registering the same fusion and schedule again returns the same op.
    """
    import mmcomp

    kernel = mmcomp.compile(fusion, backend=backend, **schedule)
    compiled = kernel.fusion
    names = arguments([value.name for value in compiled.inputs])
    shapes = [
        (output_axes(compiled, value), NUMPY_DTYPES[np.dtype(value.numpy_dtype)])
        for value in compiled.outputs
    ]
    where = f"mmcomp op for @{compiled.name}"
    name = op_name(compiled.name, f"{backend}\n{kernel.params.format()}\n{compiled}")

    def impl(*tensors: Any) -> Any:
        return _single(kernel(*tensors))

    def fake(*tensors: Any) -> Any:
        like = tensors[0]
        return _single(
            tuple(
                like.new_empty(
                    [e if isinstance(e, int) else tensors[e[0]].shape[e[1]] for e in axes],
                    dtype=dtype,
                )
                for axes, dtype in shapes
            )
        )

    plain = register(name, schema(names, (), len(shapes)), impl, fake, where)
    return differentiable(plain, compiled, backend, schedule)
