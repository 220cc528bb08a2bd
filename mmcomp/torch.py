"""mmcomp inside PyTorch programs: compiled fusions as torch custom ops, and modules.

Nothing else in mmcomp imports torch; this module does, at import. It holds:

- `ARRAYS`, how the public call (mmcomp.backend.call) reads torch tensors (data_ptr, shape,
  stride and dtype, with no DLPack: a tensor that requires grad is read as a detached
  view), allocates outputs (`Tensor.new_empty`, so torch's caching allocator, and CUDA-graph
  memory pools, serve them), finds the current stream, and moves CPU tensors to and from
  numpy (bfloat16 through an int16 view);
- `op(fusion, **schedule)`: the fusion compiled and registered as the custom op
  `mmcomp::<name>`, with a fake implementation (output shapes and dtypes), so that it runs
  under `torch.compile(fullgraph=True)` and inside CUDA-graph capture;
- `FusedLinear` (linear + bias + activation) and `GatedMLP` (the Llama/Mistral/Qwen MLP),
  built from torch / transformers modules by sharing their parameters.

Autograd is not built: a custom op's outputs require grad when an input does, and a
backward through one raises NotImplementedError naming mmcomp (it never yields silent zero
gradients). Run the ops under `torch.no_grad()` or `torch.inference_mode()`.

The modules' kernels take their row count (tokens) at run time: each is one fusion with a
dynamic M (mmcomp.buckets), so a new token count compiles nothing unless it falls in an M
bucket not used before (at most eight), and `torch.compile(dynamic=True)` traces them once
for every token count.
"""

from __future__ import annotations

import hashlib
import importlib
import keyword
import re
import threading
from collections.abc import Callable, Mapping, Sequence, Set
from typing import Any, cast

import numpy as np

from mmcomp import dtypes
from mmcomp.backend.frames import HOST, Frame, UnreadableArray
from mmcomp.errors import FusionError, LaunchError, ScheduleError
from mmcomp.runtime.arrays import BFLOAT16, DeviceArray

torch: Any = importlib.import_module("torch")
"""torch (imported by name: this module is itself called torch)."""
nn: Any = torch.nn

TORCH_DTYPES: dict[Any, np.dtype] = {
    **{getattr(torch, dtype.long_name): dtype.numpy_dtype for dtype in dtypes.DTYPES},
    torch.int8: np.dtype(np.int8),
    torch.int16: np.dtype(np.int16),
    torch.uint8: np.dtype(np.uint8),
    torch.bool: np.dtype(np.bool_),
}
"""The numpy dtype of each torch dtype mmcomp reads."""

NUMPY_DTYPES: dict[np.dtype, Any] = {value: key for key, value in TORCH_DTYPES.items()}
"""The torch dtype of each numpy dtype."""

FUSION_DTYPES: dict[Any, str] = {
    getattr(torch, dtype.long_name): dtype.name for dtype in dtypes.FUSION_DTYPES
}
"""The fusion dtype of each torch dtype a module may hold."""


STRIDED: Any = torch.strided
"""The layout of a dense tensor, the only one mmcomp reads."""


def _unreadable(tensor: Any) -> str:
    """What is expected of a tensor the call cannot read, and what `tensor` is."""
    layout = str(tensor.layout).removeprefix("torch.")
    found = f"a {layout} tensor" if tensor.layout is not STRIDED else "a tensor"
    return (
        "expected a dense (strided) torch tensor on the CPU or a CUDA device, found "
        f"{found} on device '{tensor.device}'"
    )


def _raw_stream() -> Callable[[int], int]:
    """The fastest reader of torch's current stream handle on a device."""
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return raw
    return lambda device: torch.cuda.current_stream(device).cuda_stream


def _no_launch() -> None:
    """The relaunch of no launch (the fast path's last hit before the first one)."""


class TorchArrays(Frame):
    """How the public call treats torch tensors (CPU ones as host arrays)."""

    name = "torch"

    def __init__(self):
        self._stream = _raw_stream()

    def key(self, value: Any) -> tuple[Any, ...]:
        device = value.get_device()
        try:
            key = (value.data_ptr(), value.shape, value.stride(), value.dtype, device)
        except RuntimeError:  # sparse, mkldnn, nested: no strided storage to read
            raise UnreadableArray(_unreadable(value)) from None
        if device == HOST and (not value.is_cpu or value.layout is not STRIDED):
            raise UnreadableArray(_unreadable(value))
        return key

    def pointer(self, value: Any) -> int:
        return value.data_ptr()

    def numpy_dtype(self, value: Any, name: str) -> np.dtype:
        """The numpy dtype of a tensor; LaunchError for one mmcomp does not read."""
        dtype = TORCH_DTYPES.get(value.dtype)
        if dtype is None:
            raise LaunchError(f"{name}: unsupported torch dtype {value.dtype}")
        return dtype

    def view(self, value: Any, name: str) -> DeviceArray:
        if not value.is_cuda or value.layout is not STRIDED:
            raise LaunchError(f"{name}: {_unreadable(value)}")
        dtype = self.numpy_dtype(value, name)
        strides = tuple(stride * dtype.itemsize for stride in value.stride())
        return DeviceArray(value.data_ptr(), tuple(value.shape), dtype, strides)

    def device_view(self, value: Any, name: str) -> DeviceArray | None:
        """A DeviceArray over a CUDA tensor that keeps it alive; None for a CPU tensor."""
        device = value.get_device()
        if device == HOST:
            return None
        from mmcomp.runtime.device import ensure_context

        ordinal = ensure_context().info.ordinal
        if device != ordinal:
            raise LaunchError(
                f"argument {name!r}: expected a tensor on cuda:{ordinal}, found cuda:{device}"
            )
        view = self.view(value, name)
        view.owner = value
        return view

    def to_numpy(self, value: Any) -> np.ndarray:
        tensor = value.detach()
        if tensor.dtype == torch.bfloat16:
            return tensor.view(torch.int16).numpy().view(BFLOAT16)
        self.numpy_dtype(tensor, "tensor")
        return tensor.numpy()

    def from_numpy(self, array: np.ndarray, like: Any) -> Any:
        if array.dtype == BFLOAT16:
            return torch.from_numpy(array.view(np.int16)).view(torch.bfloat16)
        return torch.from_numpy(array)

    def empty(self, like: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        return like.new_empty(shape, dtype=NUMPY_DTYPES[dtype])

    def stream(self, like: Any) -> int:
        return self._stream(like.get_device())

    def describe(self, value: Any) -> str:
        device = value.get_device()
        return "a CPU torch tensor" if device == HOST else f"a CUDA torch tensor (cuda:{device})"

    def unwritable(self, value: Any) -> str | None:
        if not value.requires_grad or not torch.is_grad_enabled():
            return None
        return (
            "the tensor requires grad, and an out= entry is written in place outside autograd "
            "(torch's own out= functions refuse it too); pass one that does not require grad, "
            "or call under torch.no_grad()"
        )

    def fast_call(
        self,
        count: int,
        outputs: Sequence[tuple[tuple[int, ...], np.dtype]],
        launches: Mapping[tuple[Any, ...], Callable[[], None]],
    ) -> Callable[[Sequence[Any]], tuple[Any, ...] | None]:
        """Frame.fast_call for CUDA tensors, each tensor's key read in place (no call per
        tensor), the output allocated with its torch dtype resolved once, and the last hit
        compared first."""
        raw_stream = self._stream
        made_types = [(shape, NUMPY_DTYPES[dtype]) for shape, dtype in outputs]
        get = launches.get
        # The last hit, (its key as a list, its relaunch), replaced as one tuple: comparing
        # two lists costs less than building, hashing and looking up the key's tuple.
        last: list[tuple[list[Any] | None, Callable[[], None]]] = [(None, _no_launch)]

        if len(made_types) != 1:

            def fast(inputs: Sequence[Any]) -> tuple[Any, ...] | None:
                if len(inputs) != count:
                    return None
                like = inputs[0]
                try:
                    device = like.get_device()
                    if device < 0:
                        return None
                    key: list[Any] = [raw_stream(device)]
                    for tensor in inputs:
                        key += (
                            tensor.data_ptr(),
                            tensor.shape,
                            tensor.stride(),
                            tensor.dtype,
                            tensor.get_device(),
                        )
                    made = [like.new_empty(shape, dtype=dtype) for shape, dtype in made_types]
                except (AttributeError, TypeError, RuntimeError):  # the full call says why
                    return None
                for tensor in made:
                    key.append(tensor.data_ptr())
                last_key, relaunch = last[0]
                if key != last_key:
                    relaunch = get(tuple(key))
                    if relaunch is None:
                        return None
                    last[0] = (key, relaunch)
                relaunch()
                return tuple(made)

            return fast
        ((shape, dtype),) = made_types

        def fast_one(inputs: Sequence[Any]) -> tuple[Any, ...] | None:
            if len(inputs) != count:
                return None
            like = inputs[0]
            try:
                device = like.get_device()
                if device < 0:
                    return None
                key: list[Any] = [raw_stream(device)]
                for tensor in inputs:
                    key += (
                        tensor.data_ptr(),
                        tensor.shape,
                        tensor.stride(),
                        tensor.dtype,
                        tensor.get_device(),
                    )
                made = like.new_empty(shape, dtype=dtype)
            except (AttributeError, TypeError, RuntimeError):  # the full call says why
                return None
            key.append(made.data_ptr())
            last_key, relaunch = last[0]
            if key != last_key:
                relaunch = get(tuple(key))
                if relaunch is None:
                    return None
                last[0] = (key, relaunch)
            relaunch()
            return (made,)

        return fast_one


ARRAYS = TorchArrays()
"""The torch frame of mmcomp.backend.call."""


# ----------------------------------------------------------------------------------------
# Custom ops
# ----------------------------------------------------------------------------------------

_lock = threading.Lock()
_ops: dict[str, Any] = {}
"""Registered ops by qualified name (registering one name twice is an error in torch)."""

_NAME = re.compile(r"[^A-Za-z0-9_]")
_SCHEMA_RESERVED = {"out", "self", "input", "dtype", "device", "layout", "NoneType"}
"""Names a schema argument may not take (besides Python's keywords): torch's own."""


def _op_name(base: str, digest_of: str) -> str:
    """`<base>_<12 hex>`: a valid op name unique to what `digest_of` says."""
    digest = hashlib.sha256(digest_of.encode()).hexdigest()[:12]
    return f"{_NAME.sub('_', base) or 'fusion'}_{digest}"


def _parses(name: str) -> bool:
    """Whether torch's schema parser takes `name` as an argument name."""
    try:
        torch._C.parse_schema(f"f(Tensor {name}) -> Tensor")
    except RuntimeError:
        return False
    return True


def _argument(name: str, index: int, taken: Set[str]) -> str:
    """A schema argument name for an input: its own where torch takes it, else with
    underscores appended (Python keywords, torch's reserved names), none of `taken`."""
    name = _NAME.sub("_", name) or f"x{index}"
    while name in taken or name in _SCHEMA_RESERVED or keyword.iskeyword(name) or not _parses(name):
        name += "_"
    return name


def _arguments(names: Sequence[str | None]) -> list[str]:
    """Distinct schema argument names for inputs of these names (None: unnamed)."""
    taken: set[str] = set()
    arguments: list[str] = []
    for index, name in enumerate(names):
        argument = _argument(name or "", index, taken)
        taken.add(argument)
        arguments.append(argument)
    return arguments


def _schema(inputs: Sequence[str], optional: Sequence[str], outputs: int) -> str:
    """`(Tensor a, Tensor w, Tensor? bias=None) -> (Tensor, Tensor)`."""
    arguments = [f"Tensor {name}" for name in inputs]
    arguments += [f"Tensor? {name}=None" for name in optional]
    results = "Tensor" if outputs == 1 else "(" + ", ".join(["Tensor"] * outputs) + ")"
    return f"({', '.join(arguments)}) -> {results}"


def _no_backward_impl(grads: list[Any], like: list[Any], where: str) -> list[Any]:
    raise NotImplementedError(where)


def _no_backward_fake(grads: list[Any], like: list[Any], where: str) -> list[Any]:
    return [tensor.new_empty(tensor.shape) for tensor in like]


_no_backward = torch.library.custom_op(
    "mmcomp::no_backward",
    _no_backward_impl,
    mutates_args=(),
    schema="(Tensor[] grads, Tensor[] like, str where) -> Tensor[]",
)
"""Stands in for the gradients of an mmcomp op: its fake gives their shapes (so tracing a
joint forward-backward graph works), running it raises. It takes the incoming gradients,
so it runs in the backward pass, not where the partitioner could move it."""
_no_backward.register_fake(_no_backward_fake)


def _register(
    name: str,
    schema: str,
    impl: Callable[..., Any],
    fake: Callable[..., Any],
    where: str,
) -> Any:
    """Register (once per name) the op `mmcomp::<name>` with its fake and no backward."""
    qualified = f"mmcomp::{name}"
    with _lock:
        found = _ops.get(qualified)
        if found is not None:
            return found
        op = torch.library.custom_op(qualified, impl, mutates_args=(), schema=schema)
        op.register_fake(fake)
        message = (
            f"mmcomp: {where} has no backward (autograd through mmcomp kernels is not built); "
            "run it under torch.no_grad() or torch.inference_mode(), or detach its inputs"
        )

        def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
            ctx.positions = [i for i, t in enumerate(inputs) if isinstance(t, torch.Tensor)]
            ctx.count = len(inputs)
            ctx.save_for_backward(*[inputs[i] for i in ctx.positions])

        def backward(ctx: Any, *grads: Any) -> tuple[Any, ...]:
            given = [grad for grad in grads if grad is not None]
            gradients = _no_backward(given, list(ctx.saved_tensors), message)
            result: list[Any] = [None] * ctx.count
            for position, gradient in zip(ctx.positions, gradients, strict=True):
                result[position] = gradient
            return tuple(result)

        op.register_autograd(backward, setup_context=setup_context)
        _ops[qualified] = op
        return op


def _single(outputs: tuple[Any, ...]) -> Any:
    return outputs[0] if len(outputs) == 1 else outputs


def _output_axes(fusion: Any, output: Any) -> list[int | tuple[int, int]]:
    """Each extent of an output: static, or (input, axis) of an input axis that has the same
    dynamic extent (the fake implementation reads it from the traced inputs)."""
    from mmcomp.roles import roles_of

    sources: dict[str, tuple[int, int]] = {}
    for index, value in enumerate(fusion.inputs):
        roles: tuple[str, ...] = roles_of(value)
        axes: tuple[int, ...] = value.dynamic_axes
        for axis in axes:
            sources.setdefault(roles[axis], (index, axis))
    dynamic = set(output.dynamic_axes)
    out_roles: tuple[str, ...] = roles_of(output) if dynamic else ()
    return [
        sources[out_roles[axis]] if axis in dynamic else extent
        for axis, extent in enumerate(output.shape)
    ]


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
    names = _arguments([value.name for value in compiled.inputs])
    shapes = [
        (_output_axes(compiled, value), NUMPY_DTYPES[np.dtype(value.numpy_dtype)])
        for value in compiled.outputs
    ]
    where = f"mmcomp op for @{compiled.name}"
    name = _op_name(compiled.name, f"{backend}\n{kernel.params.format()}\n{compiled}")

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

    return _register(name, _schema(names, (), len(shapes)), impl, fake, where)


# ----------------------------------------------------------------------------------------
# Modules
# ----------------------------------------------------------------------------------------

ACTIVATIONS = ("none", "gelu_tanh", "gelu", "silu", "relu")
"""Activations FusedLinear and GatedMLP apply: gelu_tanh is gelu(approximate="tanh"),
gelu the exact (erf) one."""

_ACTIVATION_CLASSES = {
    "Identity": "none",
    "SiLU": "silu",
    "SiLUActivation": "silu",
    "ReLU": "relu",
    "GELUTanh": "gelu_tanh",
    "PytorchGELUTanh": "gelu_tanh",
    "NewGELUActivation": "gelu_tanh",
    "GELUActivation": "gelu",
}
"""torch and transformers activation modules by class name."""


def activation_name(activation: Any, where: str) -> str:
    """One of ACTIVATIONS from a name, None, or an activation module."""
    if activation is None:
        return "none"
    if isinstance(activation, str):
        name = {"gelu_pytorch_tanh": "gelu_tanh", "identity": "none", "swish": "silu"}.get(
            activation, activation
        )
        if name in ACTIVATIONS:
            return name
        raise FusionError(
            f"{where}: argument 'activation': expected one of {', '.join(ACTIVATIONS)}, "
            f"found {activation!r}"
        )
    if isinstance(activation, nn.GELU):
        return "gelu_tanh" if activation.approximate == "tanh" else "gelu"
    found = _ACTIVATION_CLASSES.get(type(activation).__name__)
    if found is None:
        raise FusionError(
            f"{where}: argument 'activation': expected one of {', '.join(ACTIVATIONS)} or a "
            f"SiLU / GELU / ReLU module, found {type(activation).__name__}"
        )
    return found


def _activate(f: Any, value: Any, activation: str) -> Any:
    """`activation` applied to a fusion value."""
    if activation == "none":
        return value
    if activation == "gelu_tanh":
        return f.gelu(value, "tanh")
    if activation == "gelu":
        return f.gelu(value, "none")
    if activation == "silu":
        return f.silu(value)
    return f.relu(value)


def _fusion_dtype(tensor: Any, where: str, what: str) -> str:
    dtype = FUSION_DTYPES.get(tensor.dtype)
    if dtype is None or dtype == "f32":
        raise FusionError(
            f"{where}: {what}: expected bfloat16 or float16 weights (wgmma), found {tensor.dtype}"
        )
    return dtype


def _check_schedule(schedule: object, where: str) -> dict[str, Any]:
    """A module's mmcomp.compile keywords, checked when it is built (its kernel is
    compiled at the first forward)."""
    from mmcomp.compiler import BACKENDS
    from mmcomp.heuristics import check_schedule_m, normalize_overrides
    from mmcomp.tuning import check_budget

    if not isinstance(schedule, Mapping):
        raise ScheduleError(
            f"{where}: expected a dict of mmcomp.compile keywords, found {type(schedule).__name__}"
        )
    keywords = dict(cast("Mapping[str, Any]", schedule))
    given = dict(keywords)
    backend = keywords.pop("backend", "cuda")
    if backend not in BACKENDS:
        raise ScheduleError(
            f"{where}: unknown backend {backend!r}; expected one of {', '.join(BACKENDS)}"
        )
    autotune = keywords.pop("autotune", False)
    if not isinstance(autotune, bool):
        raise ScheduleError(f"{where}: autotune={autotune!r}: expected True or False")
    budget = keywords.pop("autotune_budget_s", None)
    try:
        if budget is not None:
            check_budget("autotune_budget_s", budget)
        check_schedule_m(keywords.pop("schedule_m", None))
        normalize_overrides(keywords)
    except ValueError as error:
        raise ScheduleError(f"{where}: {error}") from None
    return given


ROW_COUNTS_KEPT = 64
"""Row counts whose kernel's fast path a module keeps."""


class _RowFamily:
    """The kernel of a module: its fusion with a dynamic row count (M), compiled on first
    use; its M buckets serve every row count."""

    def __init__(self, build: Callable[[], Any], schedule: dict[str, Any]):
        self.build = build
        """The fusion, M dynamic."""
        self.schedule = schedule
        """The schedule keywords of the compile."""
        self._kernel: Any = None
        self._fast: dict[int, Callable[[Sequence[Any]], tuple[Any, ...] | None]] = {}
        """By row count: the fast path of the cuda kernel that ran it (its bucket's,
        specialized for it), which answers None unless its launch for the arrays is kept."""
        self.lock = threading.Lock()

    def kernel(self) -> Any:
        """The kernel (compiled now if new)."""
        kernel = self._kernel
        if kernel is not None:
            return kernel
        import mmcomp

        with self.lock:
            if self._kernel is None:
                self._kernel = mmcomp.compile(self.build(), **self.schedule)
        return self._kernel

    def run(self, arrays: Sequence[Any]) -> Any:
        """The kernel's output on `arrays` (the rows first): straight to the launch kept
        for the arrays where there is one, else through the kernel's call."""
        rows = arrays[0].shape[0]
        fast = self._fast.get(rows)
        if fast is not None:
            found = fast(arrays)
            if found is not None:
                return found[0]
        kernel = self.kernel()
        outputs = kernel(*arrays)
        if fast is None and kernel.backend == "cuda":
            from mmcomp.buckets import BucketedKernel

            bucket = kernel.kernel_for(rows) if isinstance(kernel, BucketedKernel) else kernel
            device = bucket.device_kernel
            if device.plan.dynamic:
                shapes = tuple(tuple(int(extent) for extent in array.shape) for array in arrays)
                device = bucket.device_kernel_at(shapes)
            found_path = device.call_state().fast_path()
            if found_path is not None:
                if len(self._fast) >= ROW_COUNTS_KEPT:
                    self._fast.pop(next(iter(self._fast)))
                self._fast[rows] = found_path
        return outputs[0]


def _family_op(
    name: str,
    inputs: Sequence[str],
    optional: Sequence[str],
    family: _RowFamily,
    out_features: int,
    where: str,
) -> Any:
    """An op whose impl runs `family`'s kernel for the first input's row count."""

    def impl(x: Any, *rest: Any) -> Any:
        return family.run((x, *(tensor for tensor in rest if tensor is not None)))

    def fake(x: Any, *rest: Any) -> Any:
        return x.new_empty((x.shape[0], out_features))

    return _register(name, _schema(inputs, optional, 1), impl, fake, where)


def _check_input(x: Any, features: int, dtype: Any, where: str) -> None:
    if x.dim() < 1 or x.shape[-1] != features:
        raise FusionError(f"{where}: input: expected [..., {features}], found {list(x.shape)}")
    if x.dtype != dtype:
        raise FusionError(f"{where}: input: expected dtype {dtype}, found {x.dtype}")


class FusedLinear(nn.Module):
    """`activation(x W^T + b)` as one mmcomp kernel, sharing an nn.Linear's parameters.

    The output has x's dtype (the weight's: bf16 or f16); the accumulator and the
    activation are f32. One kernel per distinct token count (x's leading extents).
    """

    def __init__(self, linear: Any, activation: Any = None, **schedule: Any):
        """Share `linear`'s weight and bias (no copy); `schedule`: mmcomp.compile keywords."""
        super().__init__()  # pyright: ignore[reportUnknownMemberType]  (nn.Module is Any)
        where = "mmcomp.torch.FusedLinear"
        if not isinstance(linear, nn.Linear):
            raise FusionError(
                f"{where}: argument 'linear': expected an nn.Linear, found {type(linear).__name__}"
            )
        self.weight = linear.weight
        self.bias = linear.bias
        self.in_features = linear.in_features
        self.out_features = linear.out_features
        self.activation = activation_name(activation, where)
        dtype = _fusion_dtype(linear.weight, where, "linear.weight")
        n, k, act, bias = self.out_features, self.in_features, self.activation, self.bias
        has_bias = bias is not None
        if has_bias and bias.dtype != linear.weight.dtype:
            raise FusionError(
                f"{where}: linear.bias: expected dtype {linear.weight.dtype}, found {bias.dtype}"
            )

        def build() -> Any:
            from mmcomp.frontend import Fusion

            f = Fusion(f"linear_{act}")
            a = f.input("x", ["m", k], dtype)
            w = f.input("w", [n, k], dtype)
            b = f.input("bias", [n], dtype) if has_bias else None
            f.output(f.cast(_activate(f, f.linear(a, w, b), act), dtype))
            return f

        self._family = _RowFamily(build, _check_schedule(schedule, where))
        description = f"linear {n}x{k} {dtype} bias={has_bias} {act} {sorted(schedule.items())}"
        self._op = _family_op(
            _op_name(f"linear_{act}", description),
            ["x", "w"],
            ["bias"],
            self._family,
            n,
            f"FusedLinear({k} -> {n}, {act})",
        )

    def forward(self, x: Any) -> Any:
        """activation(x W^T + b) over x's last axis."""
        _check_input(x, self.in_features, self.weight.dtype, "mmcomp.torch.FusedLinear")
        lead = x.shape[:-1]
        rows = x.reshape(-1, self.in_features)
        if not rows.is_contiguous():
            rows = rows.contiguous()
        y = self._op(rows, self.weight, self.bias)
        return y.reshape(*lead, self.out_features)

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"bias={self.bias is not None}, activation={self.activation}"
        )


class GatedMLP(nn.Module):
    """The gated MLP of Llama, Mistral and Qwen: `down(act(x Wg^T) * (x Wu^T))`.

    gate and up are one horizontal mmcomp kernel (x read once, both products in f32
    registers, one bf16 output); down is a FusedLinear. Built from any module with
    `gate_proj`, `up_proj` and `down_proj` linears (transformers' LlamaMLP, MistralMLP,
    Qwen2MLP, ...) by sharing their weights; the activation is the module's `act_fn`
    unless given.
    """

    def __init__(
        self,
        mlp: Any,
        activation: Any = None,
        gate_up_schedule: dict[str, Any] | None = None,
        down_schedule: dict[str, Any] | None = None,
    ):
        """Share `mlp`'s weights; the schedules are mmcomp.compile keywords of each kernel."""
        super().__init__()  # pyright: ignore[reportUnknownMemberType]  (nn.Module is Any)
        where = "mmcomp.torch.GatedMLP"
        projections: dict[str, Any] = {}
        for part in ("gate_proj", "up_proj", "down_proj"):
            found = getattr(mlp, part, None)
            if not isinstance(found, nn.Linear):
                raise FusionError(
                    f"{where}: argument 'mlp': expected a module with nn.Linear {part}, found "
                    f"{type(found).__name__}"
                )
            projections[part] = found
        gate, up, down = projections["gate_proj"], projections["up_proj"], projections["down_proj"]
        if gate.weight.shape != up.weight.shape or down.in_features != gate.out_features:
            raise FusionError(
                f"{where}: expected gate_proj and up_proj of one shape and down_proj taking "
                f"their output, found {list(gate.weight.shape)}, {list(up.weight.shape)}, "
                f"{list(down.weight.shape)}"
            )
        self.activation = activation_name(
            activation if activation is not None else getattr(mlp, "act_fn", None), where
        )
        self.gate_weight = gate.weight
        self.up_weight = up.weight
        self.gate_bias = gate.bias
        self.up_bias = up.bias
        self.hidden = gate.in_features
        self.intermediate = gate.out_features
        dtype = _fusion_dtype(gate.weight, where, "gate_proj.weight")
        for name, tensor in (("up_proj.weight", up.weight), ("down_proj.weight", down.weight)):
            if tensor.dtype != gate.weight.dtype:
                raise FusionError(
                    f"{where}: {name}: expected dtype {gate.weight.dtype}, found {tensor.dtype}"
                )
        h, i, act = self.hidden, self.intermediate, self.activation
        biased = (gate.bias is not None, up.bias is not None)
        schedule = _check_schedule(gate_up_schedule or {}, f"{where}: gate_up_schedule")

        def build() -> Any:
            from mmcomp.frontend import Fusion

            f = Fusion(f"gated_{act}")
            x = f.input("x", ["m", h], dtype)
            wg = f.input("wg", [i, h], dtype)
            wu = f.input("wu", [i, h], dtype)
            bg = f.input("bg", [i], dtype) if biased[0] else None
            bu = f.input("bu", [i], dtype) if biased[1] else None
            gated = _activate(f, f.linear(x, wg, bg), act) * f.linear(x, wu, bu)
            f.output(f.cast(gated, dtype))
            return f

        self._family = _RowFamily(build, schedule)
        description = f"gated {h}->{i} {dtype} bias={biased} {act} {sorted(schedule.items())}"
        self._op = _family_op(
            _op_name(f"gated_{act}", description),
            ["x", "wg", "wu"],
            ["bg", "bu"],
            self._family,
            i,
            f"GatedMLP gate/up ({h} -> {i}, {act})",
        )
        down_keywords = _check_schedule(down_schedule or {}, f"{where}: down_schedule")
        self.down = FusedLinear(down, None, **down_keywords)

    def forward(self, x: Any) -> Any:
        """down(act(gate(x)) * up(x)) over x's last axis."""
        _check_input(x, self.hidden, self.gate_weight.dtype, "mmcomp.torch.GatedMLP")
        lead = x.shape[:-1]
        rows = x.reshape(-1, self.hidden)
        if not rows.is_contiguous():
            rows = rows.contiguous()
        gated = self._op(rows, self.gate_weight, self.up_weight, self.gate_bias, self.up_bias)
        return self.down(gated).reshape(*lead, self.down.out_features)

    def extra_repr(self) -> str:
        return (
            f"hidden={self.hidden}, intermediate={self.intermediate}, activation={self.activation}"
        )


__all__ = ["ACTIVATIONS", "ARRAYS", "FusedLinear", "GatedMLP", "activation_name", "op"]
