"""Grouped GEMMs in PyTorch: `grouped_mm` (torch._grouped_mm's arguments) and `MoEExperts`
(the experts of a transformers mixture-of-experts block on two grouped kernels).

Every kernel here is a fusion of `Fusion.grouped_linear` (docs/grouped.md) with a dynamic
row count, registered as a custom op by `mmcomp.torch.op`: it runs under
torch.compile(fullgraph=True), and the group offsets stay tensors on the inputs' device
(nothing reads their values on the host), so a CUDA graph replays it with new routing.
"""

from __future__ import annotations

import threading
from typing import Any

from mmcomp.errors import FusionError
from mmcomp.torch.arrays import FUSION_DTYPES, nn, torch
from mmcomp.torch.module_parts import RowFamily, activate, activation_name

_lock = threading.Lock()
_ops: dict[tuple[Any, ...], Any] = {}
"""The ops built, by what their fusion depends on (shapes, dtypes, epilogue, backend)."""

_OUT_DTYPES = ("bf16", "f16", "f32")


def _backend(tensor: Any, backend: str | None) -> str:
    """The back end: the given one, else cuda for a CUDA tensor and interp on the CPU."""
    if backend is not None:
        return backend
    return "cuda" if tensor.device.type == "cuda" else "interp"


def _factor_dtype(tensor: Any, where: str, what: str, backend: str) -> str:
    """The fusion dtype of a factor: bf16 or f16, or f32 on the interp back end."""
    dtype = FUSION_DTYPES.get(tensor.dtype)
    if dtype not in ("bf16", "f16") and not (dtype == "f32" and backend == "interp"):
        raise FusionError(
            f"{where}: argument '{what}': expected bfloat16 or float16 (float32 on the interp "
            f"back end), found {tensor.dtype}"
        )
    assert dtype is not None
    return dtype


def _cached(key: tuple[Any, ...], build: Any) -> Any:
    """The op of `key`, built (compiled and registered) on first use."""
    with _lock:
        found = _ops.get(key)
    if found is not None:
        return found
    built = build()
    with _lock:
        return _ops.setdefault(key, built)


_FAMILIES: dict[tuple[Any, ...], RowFamily] = {}
"""grouped_mm's kernels by signature (G, N, K, dtype, out dtype, backend)."""


def _family(key: tuple[Any, ...]) -> RowFamily:
    """The kernel of x [t, K] and w [G, N, K] with offsets [G] -> out [t, N]."""
    with _lock:
        found = _FAMILIES.get(key)
    if found is not None:
        return found
    groups, n, k, dtype, out, backend = key

    def build() -> Any:
        import mmcomp

        f = mmcomp.Fusion("grouped_mm")
        x = f.input("x", ["t", k], dtype)
        w = f.input("w", [groups, n, k], dtype)
        offsets = f.input("offsets", [groups], "i32")
        f.output(f.cast(f.grouped_linear(x, w, offsets), out))
        return f

    with _lock:
        return _FAMILIES.setdefault(key, RowFamily(build, {"backend": backend}))


def _check_grouped_mm(x: Any, w: Any, offs: Any, out_dtype: Any, backend: str) -> tuple[Any, ...]:
    """The kernel's signature (G, N, K, dtype, out dtype, backend); FusionError naming the
    argument that does not fit."""
    where = "mmcomp.torch.grouped_mm"
    for name, tensor, rank in (("x", x, 2), ("w", w, 3), ("offs", offs, 1)):
        if tensor.dim() != rank:
            raise FusionError(
                f"{where}: argument '{name}': expected {rank} dimensions, found "
                f"{tensor.dim()} (shape {list(tensor.shape)}); the 2-D x / 3-D w case is built"
            )
    dtype = _factor_dtype(x, where, "x", backend)
    if w.dtype != x.dtype:
        raise FusionError(f"{where}: argument 'w': expected {x.dtype} (x's), found {w.dtype}")
    groups, k, n = (int(extent) for extent in w.shape)
    if int(x.shape[1]) != k:
        raise FusionError(
            f"{where}: argument 'w': expected K = {int(x.shape[1])} (x's last dimension) at "
            f"dimension 1 of [G, K, N], found shape {list(w.shape)}"
        )
    if offs.dtype != torch.int32 or int(offs.shape[0]) != groups:
        raise FusionError(
            f"{where}: argument 'offs': expected an int32 tensor of shape [{groups}] (G, w's "
            f"first dimension), found {offs.dtype} {list(offs.shape)}"
        )
    out = FUSION_DTYPES.get(out_dtype)
    if out not in _OUT_DTYPES:
        raise FusionError(
            f"{where}: argument 'out_dtype': expected torch.bfloat16, torch.float16 or "
            f"torch.float32, found {out_dtype}"
        )
    return (groups, n, k, dtype, out, backend)


def _grouped_mm_impl(x: Any, w: Any, offs: Any, out_dtype: Any, backend: str) -> Any:
    key = _check_grouped_mm(x, w, offs, out_dtype, backend)
    return _family(key).run([x, w.transpose(-2, -1), offs])


def _grouped_mm_fake(x: Any, w: Any, offs: Any, out_dtype: Any, backend: str) -> Any:
    _check_grouped_mm(x, w, offs, out_dtype, backend)
    return x.new_empty((x.shape[0], w.shape[2]), dtype=out_dtype)


_grouped_mm_op = torch.library.custom_op(
    "mmcomp::grouped_mm",
    _grouped_mm_impl,
    mutates_args=(),
    schema="(Tensor x, Tensor w, Tensor offs, ScalarType out_dtype, str backend) -> Tensor",
)
_grouped_mm_op.register_fake(_grouped_mm_fake)


def grouped_mm(
    x: Any, w: Any, offs: Any, out_dtype: Any = None, *, backend: str | None = None
) -> Any:
    """torch._grouped_mm(x, w, offs=offs, out_dtype=out_dtype) for a 2-D x and a 3-D w.

    x is [T, K], w is [G, K, N] as torch's (w[g] multiplies the rows of group g from the
    right: a stacked `nn.Linear` weight [G, N, K] is passed as `weight.transpose(-2, -1)`,
    which the kernel reads as it is stored), offs an int32 tensor [G] of cumulative group
    ends on x's device. The result is [T, N] of `out_dtype` (x's dtype when None: bfloat16,
    float16 or float32). Rows from offs[-1] on are no group's: their values are unspecified,
    as torch's (no back end writes them). `backend` defaults to cuda for CUDA tensors
    and interp on the CPU. One custom op, `mmcomp::grouped_mm`, for every signature.
    """
    where = "mmcomp.torch.grouped_mm"
    for name, tensor in (("x", x), ("w", w), ("offs", offs)):
        if not isinstance(tensor, torch.Tensor):
            raise FusionError(
                f"{where}: argument '{name}': expected a torch.Tensor, found "
                f"{type(tensor).__name__}"
            )
    chosen = _backend(x, backend)
    return _grouped_mm_op(x, w, offs, x.dtype if out_dtype is None else out_dtype, chosen)


def _gate_up_op(
    groups: int, inner: int, hidden: int, dtype: str, activation: str, backend: str
) -> Any:
    """activation(x Wg[g]^T) * (x Wu[g]^T), in x's dtype: [t, hidden] -> [t, inner]."""

    def build() -> Any:
        import mmcomp
        from mmcomp.torch.autograd import op

        f = mmcomp.Fusion("moe_gate_up")
        x = f.input("x", ["t", hidden], dtype)
        gate_w = f.input("gate", [groups, inner, hidden], dtype)
        up_w = f.input("up", [groups, inner, hidden], dtype)
        offsets = f.input("offsets", [groups], "i32")
        gate = f.grouped_linear(x, gate_w, offsets)
        up = f.grouped_linear(x, up_w, offsets)
        f.output(f.cast(activate(f, gate, activation) * up, dtype))
        return op(f, backend=backend)

    return _cached(("gate_up", groups, inner, hidden, dtype, activation, backend), build)


def _down_op(groups: int, inner: int, hidden: int, dtype: str, backend: str) -> Any:
    """(h Wd[g]^T) * r, r the routing weight of each row: [t, inner] -> f32 [t, hidden]."""

    def build() -> Any:
        import mmcomp
        from mmcomp.torch.autograd import op

        f = mmcomp.Fusion("moe_down")
        h = f.input("h", ["t", inner], dtype)
        down_w = f.input("down", [groups, hidden, inner], dtype)
        offsets = f.input("offsets", [groups], "i32")
        weights = f.input("weights", ["t", 1], "f32")
        f.output(f.grouped_linear(h, down_w, offsets, scale=weights))
        return op(f, backend=backend)

    return _cached(("down", groups, inner, hidden, dtype, backend), build)


_EXPERT_NAMES = (("w1", "w3", "w2"), ("gate_proj", "up_proj", "down_proj"))
"""The gate, up and down linears of one expert: Mixtral's, then Llama/Qwen's names."""


def _expert_linears(expert: Any, where: str, index: int) -> tuple[Any, Any, Any]:
    """(gate, up, down) nn.Linear of one expert module, without biases."""
    for names in _EXPERT_NAMES:
        found: list[Any] = [getattr(expert, name, None) for name in names]
        if all(isinstance(linear, nn.Linear) for linear in found):
            for name, linear in zip(names, found, strict=True):
                if linear.bias is not None:
                    raise FusionError(
                        f"{where}: experts[{index}].{name}: expected a linear without bias "
                        "(the experts of Mixtral and Qwen-MoE have none)"
                    )
            return found[0], found[1], found[2]
    raise FusionError(
        f"{where}: experts[{index}]: expected nn.Linear w1, w3, w2 (Mixtral) or gate_proj, "
        f"up_proj, down_proj (Qwen-MoE), found {type(expert).__name__}"
    )


def _stacked(linears: list[Any]) -> Any:
    """One [G, out, in] tensor of the linears' weights, which then become views of it."""
    stacked = torch.stack([linear.weight.detach() for linear in linears])
    for group, linear in enumerate(linears):
        linear.weight.data = stacked[group]
    return stacked


class MoEExperts(nn.Module):
    """The experts of a transformers mixture-of-experts block on two grouped kernels:
    activation(x Wg[g]^T) * (x Wu[g]^T), then (h Wd[g]^T) times each row's routing weight,
    summed back per token.

    `experts` is the block's `experts`: a module of stacked weights (`gate_up_proj`
    [G, 2I, H], gate rows first, and `down_proj` [G, H, I], as transformers 5's
    MixtralExperts / Qwen2MoeExperts / Qwen3MoeExperts), or a list of expert modules with
    nn.Linear w1, w3, w2 (Mixtral) or gate_proj, up_proj, down_proj (Qwen-MoE). The weights
    are shared: stacked ones are read as they are; those of a list are stacked once into
    [G, N, K] tensors, and each expert's weight becomes a view of its slice. The activation
    is the experts' `act_fn` (or their first expert's), else `activation`.
    """

    def __init__(self, experts: Any, *, activation: Any = None, backend: str | None = None) -> None:
        super().__init__()  # pyright: ignore[reportUnknownMemberType]
        where = "mmcomp.torch.MoEExperts"
        gate_up: Any = getattr(experts, "gate_up_proj", None)
        if isinstance(gate_up, torch.Tensor):
            down: Any = getattr(experts, "down_proj", None)
            if not isinstance(down, torch.Tensor) or gate_up.dim() != 3 or down.dim() != 3:
                raise FusionError(
                    f"{where}: argument 'experts': expected gate_up_proj [G, 2I, H] and "
                    f"down_proj [G, H, I] tensors, found {type(experts).__name__}"
                )
            groups, twice, hidden = (int(extent) for extent in gate_up.shape)
            inner = twice // 2
            if twice % 2 or tuple(down.shape) != (groups, hidden, inner):
                raise FusionError(
                    f"{where}: argument 'experts': expected down_proj of shape "
                    f"[{groups}, {hidden}, {twice // 2}] beside gate_up_proj "
                    f"{list(gate_up.shape)}, found {list(down.shape)}"
                )
            self.stacked: Any = experts
            """The stacked experts, whose weights the kernels read as views."""
            act = getattr(experts, "act_fn", None)
        else:
            modules = list(experts) if isinstance(experts, nn.ModuleList | list | tuple) else []
            if not modules:
                raise FusionError(
                    f"{where}: argument 'experts': expected stacked experts (gate_up_proj, "
                    "down_proj) or a list of expert modules, found "
                    f"{type(experts).__name__}"
                )
            linears = [_expert_linears(expert, where, i) for i, expert in enumerate(modules)]
            self.stacked = None
            self.gate_proj = nn.Parameter(_stacked([found[0] for found in linears]), False)
            self.up_proj = nn.Parameter(_stacked([found[1] for found in linears]), False)
            self.down_proj = nn.Parameter(_stacked([found[2] for found in linears]), False)
            groups, inner, hidden = (int(extent) for extent in self.gate_proj.shape)
            act = getattr(modules[0], "act_fn", None)
        self.groups, self.inner, self.hidden = groups, inner, hidden
        self.activation = activation_name(act if activation is None else activation, where)
        gate_weight = self.weights()[0]
        self.backend = _backend(gate_weight, backend)
        self.dtype = _factor_dtype(gate_weight, where, "experts", self.backend)
        self._gate_up = _gate_up_op(
            groups, inner, hidden, self.dtype, self.activation, self.backend
        )
        self._down = _down_op(groups, inner, hidden, self.dtype, self.backend)

    def weights(self) -> tuple[Any, Any, Any]:
        """The gate [G, I, H], up [G, I, H] and down [G, H, I] weights (views of the
        stacked experts' `gate_up_proj` and `down_proj` where they are stacked)."""
        if self.stacked is None:
            return (self.gate_proj, self.up_proj, self.down_proj)
        gate_up = self.stacked.gate_up_proj
        return (gate_up[:, : self.inner], gate_up[:, self.inner :], self.stacked.down_proj)

    def forward(self, hidden: Any, router_weights: Any, selected_experts: Any) -> Any:
        """hidden [T, H], router_weights [T, k] and selected_experts [T, k] (each token's k
        experts and their weights, as a router gives them) -> [T, H] in hidden's dtype."""
        tokens, chosen = selected_experts.shape
        flat = selected_experts.reshape(-1)
        order = torch.argsort(flat, stable=True)
        token = torch.div(order, chosen, rounding_mode="floor")
        rows = hidden.index_select(0, token)
        ones = torch.ones_like(flat)
        counts = torch.zeros(self.groups, dtype=flat.dtype, device=flat.device)
        offsets = counts.scatter_add_(0, flat, ones).cumsum(0).to(torch.int32)
        weights = router_weights.reshape(-1).index_select(0, order).to(torch.float32)
        gate_weight, up_weight, down_weight = self.weights()
        h = self._gate_up(rows, gate_weight, up_weight, offsets)
        down = self._down(h, down_weight, offsets, weights.unsqueeze(1))
        out = torch.zeros(tokens, self.hidden, dtype=torch.float32, device=hidden.device)
        return out.index_add_(0, token, down).to(hidden.dtype)

    def extra_repr(self) -> str:
        return (
            f"experts={self.groups}, hidden={self.hidden}, inner={self.inner}, "
            f"activation={self.activation}, dtype={self.dtype}, backend={self.backend}"
        )
