"""Tensor parallelism over torch.distributed: ColumnParallelLinear, RowParallelLinear and
TensorParallelGatedMLP, each rank's part one ordinary mmcomp kernel (a FusedLinear or a
GatedMLP) and the collectives torch.distributed's own (NCCL on GPUs, gloo on CPUs).

The split is Megatron-LM's. A column-parallel linear holds a block of the weight's rows
(output features) and takes the whole input; a row-parallel linear holds the matching block
of its columns (input features), takes that slice of the input and sums the partial
outputs with one all-reduce, its bias added once, after the sum. The gated MLP is gate and
up column-parallel (one horizontal kernel per rank) and down row-parallel: one collective
per forward. Under sequence parallelism the input arrives split by tokens over the ranks
(its first axis), is all-gathered before the column-parallel kernel, and the row-parallel
sum is a reduce-scatter back to each rank's tokens.

The modules shard full weights (every rank holding the same nn.Linear / LlamaMLP), take
already-sharded ones (`sharded=True`: the module's linears are this rank's blocks), or take
DTensor weights on a 1-D device mesh in any placement (Shard(0), Shard(1), Replicate()),
redistributed to the block this rank needs. The shards are the modules' own Parameters
(copies of full weights; a DTensor's local tensor), requiring grad where their sources do.

Where autograd records the forward (grad mode on and x or a shard requiring grad), the
collectives are autograd Functions with Megatron's conjugates: the input's copy to every
rank (f) all-reduces its gradient, the partial outputs' all-reduce (g) passes the gradient
through, sequence parallelism's all-gather and reduce-scatter swap in backward, and a bias
added to each rank's own tokens has its gradient summed over the ranks. Each rank's kernels
are then FusedLinear's / GatedMLP's trainable ones. Otherwise (torch.no_grad,
torch.inference_mode) the collectives are plain torch.distributed calls, launched
asynchronously where that overlaps them with the kernels.

The forwards trace under torch.compile(fullgraph=True): Dynamo takes the collectives (then
synchronous) as functional collectives beside the modules' custom ops.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any

from mmcomp.errors import FusionError
from mmcomp.torch.arrays import nn, torch
from mmcomp.torch.autograd import autocast_input, requires_grad
from mmcomp.torch.modules import FusedLinear, GatedMLP

dist: Any = importlib.import_module("torch.distributed")
"""torch.distributed."""
_all_gather: Any = getattr(dist, "all_gather_single", None) or getattr(
    dist, "all_gather_into_tensor", None
)
"""All-gather into one tensor (all_gather_into_tensor before torch 2.13 renamed it; None
in a torch built without torch.distributed, where no module is built)."""
_reduce_scatter: Any = getattr(dist, "reduce_scatter_single", None) or getattr(
    dist, "reduce_scatter_tensor", None
)
"""Reduce-scatter of one tensor (reduce_scatter_tensor before torch 2.13 renamed it)."""


class _Group:
    """A process group with this process's rank in it and its size."""

    def __init__(self, group: Any, rank: int, size: int):
        self.group = group
        """The torch.distributed ProcessGroup."""
        self.rank = rank
        """This process's rank in the group."""
        self.size = size
        """The number of ranks (the tensor-parallel degree)."""


def _tensor_module() -> Any:
    """torch.distributed.tensor (DTensor, Shard, Replicate), or None where it is missing."""
    try:
        return importlib.import_module("torch.distributed.tensor")
    except ImportError:
        return None


def _is_dtensor(tensor: Any) -> bool:
    module = _tensor_module()
    return module is not None and isinstance(tensor, module.DTensor)


def _mesh_group(mesh: Any, where: str, what: str) -> Any:
    """The process group of a 1-D device mesh."""
    if mesh.ndim != 1:
        raise FusionError(
            f"{where}: {what}: expected a 1-D device mesh (tensor parallelism over one group), "
            f"found a mesh of shape {tuple(mesh.shape)}"
        )
    return mesh.get_group()


def process_group(group: Any, tensors: Sequence[tuple[str, Any]], where: str) -> _Group:
    """The group a module runs over: `group` (a ProcessGroup or a 1-D DeviceMesh), else the
    mesh of the DTensors among `tensors`, else the world group; checked against the meshes
    of those DTensors and for this process's membership."""
    if not dist.is_available() or not dist.is_initialized():
        raise FusionError(
            f"{where}: torch.distributed is not initialized: call "
            "torch.distributed.init_process_group first (torchrun sets its environment)"
        )
    meshes = [(what, tensor.device_mesh) for what, tensor in tensors if _is_dtensor(tensor)]
    if group is None:
        group = _mesh_group(meshes[0][1], where, meshes[0][0]) if meshes else dist.group.WORLD
    elif group is dist.GroupMember.NON_GROUP_MEMBER:
        raise FusionError(
            f"{where}: argument 'group': this process (global rank {dist.get_rank()}) is not "
            "in the group (torch.distributed.new_group gave it NON_GROUP_MEMBER)"
        )
    elif hasattr(group, "get_group") and hasattr(group, "ndim"):
        group = _mesh_group(group, where, "argument 'group'")
    elif not isinstance(group, dist.ProcessGroup):
        raise FusionError(
            f"{where}: argument 'group': expected a torch.distributed ProcessGroup, a 1-D "
            f"DeviceMesh or None (the world group), found {type(group).__name__}"
        )
    ranks = list(dist.get_process_group_ranks(group))
    rank = dist.get_rank(group)
    if rank < 0:
        raise FusionError(
            f"{where}: argument 'group': this process (global rank {dist.get_rank()}) is not "
            f"one of the group's ranks {ranks}"
        )
    for what, mesh in meshes:
        mesh_ranks = list(dist.get_process_group_ranks(_mesh_group(mesh, where, what)))
        if mesh_ranks != ranks:
            raise FusionError(
                f"{where}: {what}: a DTensor over ranks {mesh_ranks}, but the module's group "
                f"holds ranks {ranks}"
            )
    return _Group(group, rank, dist.get_world_size(group))


def _check_divisible(extent: int, ranks: int, where: str, what: str, axis: str) -> None:
    if extent % ranks:
        raise FusionError(
            f"{where}: {what}: {extent} {axis} do not split over {ranks} ranks (expected a "
            f"multiple of {ranks})"
        )


_AXES = {0: "rows (output features)", 1: "columns (input features)"}


def shard(tensor: Any, dim: int | None, group: _Group, sharded: bool, where: str, what: str) -> Any:
    """This rank's block of `tensor` along `dim` (None: the whole tensor, replicated on every
    rank). A DTensor is redistributed to it (its own placement says what it holds); a plain
    tensor is the full one, sliced (copied, so the full one may be freed), unless `sharded`
    says it is already this rank's block."""
    if _is_dtensor(tensor):
        module = _tensor_module()
        if dim is not None:
            _check_divisible(tensor.shape[dim], group.size, where, what, _AXES.get(dim, "rows"))
        placement = module.Replicate() if dim is None else module.Shard(dim)
        with torch.no_grad():
            local = tensor.redistribute(tensor.device_mesh, [placement]).to_local()
        return local.detach().contiguous()
    tensor = tensor.detach()
    if dim is None or sharded:
        return tensor
    _check_divisible(tensor.shape[dim], group.size, where, what, _AXES.get(dim, "rows"))
    size = tensor.shape[dim] // group.size
    return tensor.narrow(dim, group.rank * size, size).clone(memory_format=torch.contiguous_format)


def _placed(tensor: Any, device: Any) -> Any:
    return tensor if tensor is None or device is None else tensor.to(device)


def _check_device(tensor: Any, group: _Group, where: str) -> None:
    """NCCL reduces CUDA tensors only."""
    backend = str(dist.get_backend(group.group))
    if tensor.device.type != "cuda" and backend == "nccl":
        raise FusionError(
            f"{where}: the group's backend is NCCL, but the weights are on {tensor.device}: "
            "move the module to this rank's GPU first, or pass device="
        )


def _parameter(tensor: Any, source: Any) -> Any:
    """A shard as a Parameter, requiring grad where its source does."""
    return None if tensor is None else nn.Parameter(tensor, requires_grad=source.requires_grad)


def _linear(weight: Any, bias: Any, source: Any) -> Any:
    """An nn.Linear holding `weight` and `bias` (the shards of `source`'s) as Parameters."""
    out_features, in_features = weight.shape
    linear = nn.Linear(
        in_features, out_features, bias=bias is not None, device="meta", dtype=weight.dtype
    )
    linear.weight = _parameter(weight, source.weight)
    if bias is not None:
        linear.bias = _parameter(bias, source.bias)
    return linear


def _check_linear(linear: Any, where: str) -> None:
    if not isinstance(linear, nn.Linear):
        raise FusionError(
            f"{where}: argument 'linear': expected an nn.Linear, found {type(linear).__name__}"
        )


def _check_input(x: Any, features: int, weight: Any, where: str, tokens_axis: bool) -> None:
    """x is [..., features] (with a first axis of tokens where `tokens_axis`) of the
    weight's dtype and device."""
    if not isinstance(x, torch.Tensor):
        raise FusionError(f"{where}: input: expected a torch.Tensor, found {type(x).__name__}")
    lowest = 2 if tokens_axis else 1
    if x.dim() < lowest or x.shape[-1] != features:
        shape = "[tokens, ..., " if tokens_axis else "[..., "
        raise FusionError(f"{where}: input: expected {shape}{features}], found {list(x.shape)}")
    if x.dtype != weight.dtype:
        raise FusionError(f"{where}: input: expected dtype {weight.dtype}, found {x.dtype}")
    if x.device != weight.device:
        raise FusionError(
            f"{where}: input: expected a tensor on {weight.device} (the weights'), found {x.device}"
        )


def _launched() -> bool:
    """Whether collectives are launched with async_op (not while torch.compile traces:
    Dynamo takes them synchronous, as functional collectives whose waits Inductor places)."""
    return not torch.compiler.is_compiling()


def _gather_rows(x: Any, group: _Group) -> tuple[Any, Any]:
    """Every rank's x (equal shapes) stacked along the first axis, ranks in order: the
    output tensor and the all-gather's Work (launched with async_op where `_launched`)."""
    x = x.contiguous()
    out = x.new_empty((group.size * x.shape[0], *x.shape[1:]))
    return out, _all_gather(out, x, group=group.group, async_op=_launched())


def _gather_features(y: Any, group: _Group) -> Any:
    """Every rank's y [..., n] side by side along the last axis: [..., ranks * n]."""
    lead, features = y.shape[:-1], y.shape[-1]
    rows = y.reshape(-1, features).contiguous()
    out = rows.new_empty((group.size * rows.shape[0], features))
    _all_gather(out, rows, group=group.group)
    blocks = out.view(group.size, rows.shape[0], features).permute(1, 0, 2)
    return blocks.reshape(*lead, group.size * features)


def _reduce(partial: Any, group: _Group, scatter: bool, where: str) -> tuple[Any, Any]:
    """The sum of every rank's `partial`: an all-reduce in place, or, where `scatter`, a
    reduce-scatter of its first axis (each rank gets its block). Returns the output tensor
    and the collective's Work, launched with async_op (wait on it before reading the
    output), or None where torch.compile traces the call (`_launched`)."""
    launch = _launched()
    if not scatter:
        return partial, dist.all_reduce(partial, group=group.group, async_op=launch)
    rows = partial.shape[0]
    _check_tokens(rows, group, where)
    out = partial.new_empty((rows // group.size, *partial.shape[1:]))
    work = _reduce_scatter(out, partial.contiguous(), group=group.group, async_op=launch)
    return out, work


def _wait(work: Any) -> None:
    """Wait for a collective launched with async_op (None: it ran synchronously). Under
    torch.compile there is nothing to wait on: Dynamo turns the call into a functional
    collective (its result a tensor, not a Work) whose wait Inductor places."""
    if work is None or torch.compiler.is_compiling():
        return
    work.wait()


class _CopyToGroup(torch.autograd.Function):
    """Megatron's f: the identity forward; backward, the sum of every rank's gradient (each
    rank's block of the weights gives part of the input's gradient)."""

    @staticmethod
    def forward(ctx: Any, x: Any, group: _Group) -> Any:
        ctx.group = group
        return x.view_as(x)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> tuple[Any, None]:
        grad = grad.contiguous().clone()
        dist.all_reduce(grad, group=ctx.group.group)
        return grad, None


class _SumOverGroup(torch.autograd.Function):
    """Megatron's g: forward, the sum of every rank's partial output; backward, the
    identity (the output, and so its gradient, is the same on every rank)."""

    @staticmethod
    def forward(ctx: Any, partial: Any, group: _Group) -> Any:
        total = partial.contiguous().clone()
        dist.all_reduce(total, group=group.group)
        return total

    @staticmethod
    def backward(ctx: Any, grad: Any) -> tuple[Any, None]:
        return grad, None


class _GatherRows(torch.autograd.Function):
    """Sequence parallelism's all-gather of the tokens; backward, the reduce-scatter of the
    gradient back to each rank's tokens."""

    @staticmethod
    def forward(ctx: Any, x: Any, group: _Group) -> Any:
        ctx.group = group
        out = x.new_empty((group.size * x.shape[0], *x.shape[1:]))
        _all_gather(out, x.contiguous(), group=group.group)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> tuple[Any, None]:
        group: _Group = ctx.group
        out = grad.new_empty((grad.shape[0] // group.size, *grad.shape[1:]))
        _reduce_scatter(out, grad.contiguous(), group=group.group)
        return out, None


class _ScatterRows(torch.autograd.Function):
    """Sequence parallelism's reduce-scatter of the partial outputs to each rank's tokens;
    backward, the all-gather of the gradient."""

    @staticmethod
    def forward(ctx: Any, partial: Any, group: _Group) -> Any:
        ctx.group = group
        out = partial.new_empty((partial.shape[0] // group.size, *partial.shape[1:]))
        _reduce_scatter(out, partial.contiguous(), group=group.group)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> tuple[Any, None]:
        group: _Group = ctx.group
        out = grad.new_empty((group.size * grad.shape[0], *grad.shape[1:]))
        _all_gather(out, grad.contiguous(), group=group.group)
        return out, None


class _GatherFeatures(torch.autograd.Function):
    """Every rank's block of the last axis side by side; backward, this rank's block of
    the gradient."""

    @staticmethod
    def forward(ctx: Any, y: Any, group: _Group) -> Any:
        ctx.group = group
        ctx.block = y.shape[-1]
        return _gather_features(y, group)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> tuple[Any, None]:
        block: int = ctx.block
        return grad.narrow(-1, ctx.group.rank * block, block).contiguous(), None


class _SplitFeatures(torch.autograd.Function):
    """This rank's block of the last axis; backward, every rank's block of the gradient
    side by side."""

    @staticmethod
    def forward(ctx: Any, x: Any, group: _Group) -> Any:
        ctx.group = group
        block = x.shape[-1] // group.size
        return x.narrow(-1, group.rank * block, block).contiguous()

    @staticmethod
    def backward(ctx: Any, grad: Any) -> tuple[Any, None]:
        return _gather_features(grad, ctx.group), None


def _add_bias(y: Any, bias: Any, group: _Group, sequence_parallel: bool) -> Any:
    """y + bias, recorded by autograd. Under sequence parallelism each rank adds it to its
    own tokens, so the bias's gradient is the sum of every rank's (Megatron all-reduces
    it too)."""
    if bias is None:
        return y
    return y + (_CopyToGroup.apply(bias, group) if sequence_parallel else bias)


def _check_tokens(rows: int, group: _Group, where: str) -> None:
    """A reduce-scatter's first axis splits over the ranks."""
    if rows % group.size:
        raise FusionError(
            f"{where}: sequence_parallel: {rows} tokens (the first axis) do not split over "
            f"{group.size} ranks (expected a multiple of {group.size})"
        )


class ColumnParallelLinear(nn.Module):
    """`activation(x W^T + b)` with W's rows (output features) split over a process group:
    each rank runs one FusedLinear on its block and returns its block of the features
    (all of them with `gather_output=True`).

    The input is whole on every rank; with `sequence_parallel=True` each rank passes its
    own tokens (x's first axis, equal on every rank) and they are all-gathered first, the
    output then holding every rank's tokens in rank order.
    """

    def __init__(
        self,
        linear: Any,
        activation: Any = None,
        *,
        group: Any = None,
        sharded: bool = False,
        gather_output: bool = False,
        sequence_parallel: bool = False,
        device: Any = None,
        **schedule: Any,
    ):
        """Shard `linear` (full on every rank; this rank's block of rows with `sharded`; or
        DTensor weights) over `group` (None: the DTensors' mesh, else the world group);
        `device`: where the shards go (default: the weights'); `schedule`: mmcomp.compile
        keywords of the rank's kernel."""
        super().__init__()  # pyright: ignore[reportUnknownMemberType]  (nn.Module is Any)
        where = "mmcomp.torch.ColumnParallelLinear"
        _check_linear(linear, where)
        self.tp = process_group(
            group, [("linear.weight", linear.weight), ("linear.bias", linear.bias)], where
        )
        weight = shard(linear.weight, 0, self.tp, sharded, where, "linear.weight")
        bias = linear.bias
        if bias is not None:
            bias = shard(bias, 0, self.tp, sharded, where, "linear.bias")
            if bias.shape[0] != weight.shape[0]:
                raise FusionError(
                    f"{where}: linear.bias: expected {weight.shape[0]} features (the weight "
                    f"block's rows), found {list(bias.shape)}"
                )
        weight, bias = _placed(weight, device), _placed(bias, device)
        _check_device(weight, self.tp, where)
        self.local = FusedLinear(_linear(weight, bias, linear), activation, **schedule)
        """This rank's kernel: its block of output features."""
        self.in_features = weight.shape[1]
        self.out_features = weight.shape[0] * self.tp.size
        """All ranks' output features."""
        self.gather_output = gather_output
        self.sequence_parallel = sequence_parallel

    def forward(self, x: Any) -> Any:
        """This rank's block of activation(x W^T + b) (all of it with gather_output)."""
        where = "mmcomp.torch.ColumnParallelLinear"
        x = autocast_input(x, self.local.weight.dtype)
        _check_input(x, self.in_features, self.local.weight, where, self.sequence_parallel)
        if requires_grad(x, *self.parameters()):
            x = (_GatherRows if self.sequence_parallel else _CopyToGroup).apply(x, self.tp)
            y = self.local(x)
            return _GatherFeatures.apply(y, self.tp) if self.gather_output else y
        if self.sequence_parallel:
            x, work = _gather_rows(x, self.tp)
            _wait(work)
        y = self.local(x)
        return _gather_features(y, self.tp) if self.gather_output else y

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"ranks={self.tp.size}, rank={self.tp.rank}, gather_output={self.gather_output}, "
            f"sequence_parallel={self.sequence_parallel}"
        )


class RowParallelLinear(nn.Module):
    """`x W^T + b` with W's columns (input features) split over a process group: each rank
    runs one FusedLinear on its block of x's features, the partial outputs are summed by
    one all-reduce, and the bias (replicated) is added once, after the sum.

    The input is this rank's block of features (a column-parallel layer's output) unless
    `input_is_parallel=False` (whole x, sliced here). With `sequence_parallel=True` the sum
    is a reduce-scatter: each rank gets its block of the tokens (x's first axis).
    """

    def __init__(
        self,
        linear: Any,
        *,
        group: Any = None,
        sharded: bool = False,
        input_is_parallel: bool = True,
        sequence_parallel: bool = False,
        device: Any = None,
        **schedule: Any,
    ):
        """Shard `linear` (full on every rank; this rank's block of columns and the whole
        bias with `sharded`; or DTensor weights) over `group`; the rest as
        ColumnParallelLinear's."""
        super().__init__()  # pyright: ignore[reportUnknownMemberType]  (nn.Module is Any)
        where = "mmcomp.torch.RowParallelLinear"
        _check_linear(linear, where)
        self.tp = process_group(
            group, [("linear.weight", linear.weight), ("linear.bias", linear.bias)], where
        )
        weight = shard(linear.weight, 1, self.tp, sharded, where, "linear.weight")
        bias = linear.bias
        if bias is not None:
            bias = shard(bias, None, self.tp, sharded, where, "linear.bias")
        weight, bias = _placed(weight, device), _placed(bias, device)
        _check_device(weight, self.tp, where)
        self.local = FusedLinear(_linear(weight, None, linear), None, **schedule)
        """This rank's kernel (no bias: the bias is added after the sum)."""
        self.bias = _parameter(bias, linear.bias)
        """The whole bias, added once after the all-reduce."""
        self.in_features = weight.shape[1] * self.tp.size
        """All ranks' input features."""
        self.out_features = weight.shape[0]
        self.input_is_parallel = input_is_parallel
        self.sequence_parallel = sequence_parallel

    def forward(self, x: Any) -> Any:
        """x W^T + b, summed over the ranks (this rank's tokens under sequence_parallel)."""
        where = "mmcomp.torch.RowParallelLinear"
        block = self.local.in_features
        features = block if self.input_is_parallel else self.in_features
        x = autocast_input(x, self.local.weight.dtype)
        _check_input(x, features, self.local.weight, where, self.sequence_parallel)
        if requires_grad(x, *self.parameters()):
            if not self.input_is_parallel:
                x = _SplitFeatures.apply(x, self.tp)
            partial = self.local(x)
            if self.sequence_parallel:
                _check_tokens(partial.shape[0], self.tp, where)
                y = _ScatterRows.apply(partial, self.tp)
            else:
                y = _SumOverGroup.apply(partial, self.tp)
            return _add_bias(y, self.bias, self.tp, self.sequence_parallel)
        if not self.input_is_parallel:
            x = x.narrow(-1, self.tp.rank * block, block)
        partial = self.local(x)
        y, work = _reduce(partial, self.tp, self.sequence_parallel, where)
        _wait(work)
        if self.bias is not None:
            y.add_(self.bias)
        return y

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"bias={self.bias is not None}, ranks={self.tp.size}, rank={self.tp.rank}, "
            f"input_is_parallel={self.input_is_parallel}, "
            f"sequence_parallel={self.sequence_parallel}"
        )


class TensorParallelGatedMLP(nn.Module):
    """The Llama / Mistral / Qwen MLP `down(act(x Wg^T) * (x Wu^T))` split over a process
    group: gate and up by rows (column-parallel, one horizontal GatedMLP kernel per rank),
    down by columns (row-parallel), one all-reduce of the partial outputs, down's bias
    added once after it.

    `micro_batches=n` splits the tokens into n parts: each part's collective is launched
    asynchronously (on NCCL's stream on GPUs, gloo's threads on CPUs) while the next part's
    gate/up kernel runs, and all of them are waited on before the output is returned (a
    forward autograd records runs in one part).
    With `sequence_parallel=True` each rank passes its own tokens (x's first axis, equal on
    every rank): they are all-gathered before gate/up and the sum is a reduce-scatter back
    to each rank's tokens, so the output has x's shape; with micro-batches every part's
    all-gather is launched first, so later parts' tokens arrive while earlier parts run.
    """

    def __init__(
        self,
        mlp: Any,
        activation: Any = None,
        *,
        group: Any = None,
        sharded: bool = False,
        sequence_parallel: bool = False,
        micro_batches: int = 1,
        gate_up_schedule: dict[str, Any] | None = None,
        down_schedule: dict[str, Any] | None = None,
        device: Any = None,
    ):
        """Shard `mlp`'s gate_proj / up_proj (by rows) and down_proj (by columns) over
        `group`: full on every rank, this rank's blocks with `sharded`, or DTensor weights;
        the activation is `mlp.act_fn` unless given; the schedules are mmcomp.compile
        keywords of the rank's two kernels; `device`: where the shards go."""
        super().__init__()  # pyright: ignore[reportUnknownMemberType]  (nn.Module is Any)
        where = "mmcomp.torch.TensorParallelGatedMLP"
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
        tensors = [
            (f"{part}.{name}", getattr(linear, name))
            for part, linear in projections.items()
            for name in ("weight", "bias")
        ]
        self.tp = process_group(group, tensors, where)
        if gate.weight.shape != up.weight.shape or down.weight.shape[1] != gate.weight.shape[0]:
            raise FusionError(
                f"{where}: expected gate_proj and up_proj of one shape and down_proj taking "
                f"their output, found {list(gate.weight.shape)}, {list(up.weight.shape)}, "
                f"{list(down.weight.shape)}"
            )
        if (
            isinstance(micro_batches, bool)
            or not isinstance(micro_batches, int)
            or micro_batches < 1
        ):
            raise FusionError(
                f"{where}: argument 'micro_batches': expected a positive int, found "
                f"{micro_batches!r}"
            )

        def sharded_linear(linear: Any, name: str, dim: int, has_bias: bool) -> Any:
            weight = shard(linear.weight, dim, self.tp, sharded, where, f"{name}.weight")
            bias = None
            if has_bias and linear.bias is not None:
                bias = shard(linear.bias, 0, self.tp, sharded, where, f"{name}.bias")
            weight, bias = _placed(weight, device), _placed(bias, device)
            _check_device(weight, self.tp, where)
            return _linear(weight, bias, linear)

        local = nn.Module()
        local.gate_proj = sharded_linear(gate, "gate_proj", 0, True)
        local.up_proj = sharded_linear(up, "up_proj", 0, True)
        local.down_proj = sharded_linear(down, "down_proj", 1, False)
        if activation is None:
            activation = getattr(mlp, "act_fn", None)
        self.local = GatedMLP(local, activation, gate_up_schedule, down_schedule)
        """This rank's kernels: its block of the intermediate features (down without bias)."""
        bias = None
        if down.bias is not None:
            bias = _placed(
                shard(down.bias, None, self.tp, sharded, where, "down_proj.bias"), device
            )
        self.down_bias = _parameter(bias, down.bias)
        """down_proj's whole bias, added once after the all-reduce."""
        self.hidden = self.local.hidden
        self.intermediate = self.local.intermediate * self.tp.size
        """All ranks' intermediate features."""
        self.activation = self.local.activation
        self.sequence_parallel = sequence_parallel
        self.micro_batches = micro_batches

    def forward(self, x: Any) -> Any:
        """down(act(gate(x)) * up(x)), summed over the ranks (x's shape: [..., hidden])."""
        where = "mmcomp.torch.TensorParallelGatedMLP"
        x = autocast_input(x, self.local.gate_weight.dtype)
        _check_input(x, self.hidden, self.local.gate_weight, where, self.sequence_parallel)
        lead = x.shape[:-1]
        rows = x.reshape(-1, self.hidden)
        if requires_grad(rows, *self.parameters()):
            return self._trained(rows, where).reshape(*lead, self.hidden)
        parts = rows.tensor_split(self.micro_batches) if self.micro_batches > 1 else (rows,)
        parts = [part for part in parts if part.shape[0]]
        if self.sequence_parallel:  # every part's all-gather launched first (NCCL runs them
            # in order, so the next part's tokens arrive while this part's kernels run)
            gathered = [_gather_rows(part, self.tp) for part in parts]
        else:
            gathered = [(part, None) for part in parts]
        pending: list[tuple[Any, Any]] = []
        for tokens, work in gathered:
            _wait(work)
            pending.append(_reduce(self.local(tokens), self.tp, self.sequence_parallel, where))
        outputs: list[Any] = []
        for output, work in pending:
            _wait(work)
            outputs.append(output)
        if not outputs:
            y = rows.new_zeros((0, self.hidden))
        else:
            y = outputs[0] if len(outputs) == 1 else torch.cat(outputs)
        if self.down_bias is not None:
            y.add_(self.down_bias)
        return y.reshape(*lead, self.hidden)

    def _trained(self, rows: Any, where: str) -> Any:
        """The forward autograd records: the collectives as autograd Functions (each with
        its conjugate in backward), synchronous, in one part."""
        if self.sequence_parallel:
            tokens = _GatherRows.apply(rows, self.tp)
            y = _ScatterRows.apply(self.local(tokens), self.tp)
        else:
            y = _SumOverGroup.apply(self.local(_CopyToGroup.apply(rows, self.tp)), self.tp)
        return _add_bias(y, self.down_bias, self.tp, self.sequence_parallel)

    def extra_repr(self) -> str:
        return (
            f"hidden={self.hidden}, intermediate={self.intermediate}, "
            f"activation={self.activation}, ranks={self.tp.size}, rank={self.tp.rank}, "
            f"sequence_parallel={self.sequence_parallel}, micro_batches={self.micro_batches}"
        )
