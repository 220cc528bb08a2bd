"""fp8 in PyTorch: `scaled_mm` (torch._scaled_mm's arguments), `quantize`, and the fp8
forms of FusedLinear and GatedMLP (docs/fp8.md, "torch").

`scaled_mm(a, b, scale_a, scale_b, bias=None, out_dtype=torch.bfloat16)` takes what
torch._scaled_mm takes: a row-major [M, K] and a column-major [K, N] fp8 operand (`b.t()`
of a row-major [N, K] weight), f32 scales whose shapes select the mode (per tensor: one
element each; row-wise: [M, 1] and [1, N]; block-wise: [M, ceil(K/128)] per 1 x 128 group
of `a` and [ceil(K/128), ceil(N/128)] per 128 x 128 block of `b`). It is one custom op,
`mmcomp::scaled_mm`, whose implementation compiles (once per signature, M dynamic) the
linear of the dequantized operands; it runs under torch.compile(fullgraph=True).

`Fp8Linear` and `Fp8GatedMLP` (also `FusedLinear.fp8`, `GatedMLP.fp8`) quantize their
weights once (e4m3, per row or per 128 x 128 block) and their input per row or per 1 x 128
group in torch at each call; the block-scaled GatedMLP's gate/up kernel quantizes h in its
epilogue (`Fusion.quantize`), which the down projection reads as is.
"""

from __future__ import annotations

from typing import Any

from mmcomp.errors import FusionError
from mmcomp.torch.arrays import FUSION_DTYPES, nn, torch
from mmcomp.torch.module_parts import RowFamily, activate, activation_name, check_schedule
from mmcomp.torch.ops import op_name, register, schema

GROUP = 128
"""The columns of one quantization group, and the side of one weight block."""

LARGEST = {"float8_e4m3fn": 448.0, "float8_e5m2": 57344.0}
"""The largest finite value of each torch fp8 dtype (the saturation bound)."""

SCALINGS = ("row", "block")
"""The fp8 modules' scalings: per row (rows of x and of W), per block (1 x 128 groups of
x, 128 x 128 blocks of W)."""

OUT_DTYPES = (torch.bfloat16, torch.float16, torch.float32)
"""The output dtypes of scaled_mm."""


def _blocks(extent: int) -> int:
    return -(-extent // GROUP)


def _largest(dtype: Any, where: str) -> float:
    name = str(dtype).removeprefix("torch.")
    if name not in LARGEST:
        raise FusionError(
            f"{where}: argument 'dtype': expected torch.float8_e4m3fn or torch.float8_e5m2, "
            f"found {dtype}"
        )
    return LARGEST[name]


def _saturated(values: Any, scale: Any, dtype: Any, largest: float) -> Any:
    """values / scale, 0 where the scale is 0, clamped to the fp8 range, cast to `dtype`."""
    safe = torch.where(scale == 0, torch.ones_like(scale), scale)
    ratio = torch.where(scale == 0, torch.zeros_like(values), values / safe)
    return ratio.clamp(-largest, largest).to(dtype)


def quantize(x: Any, dtype: Any = torch.float8_e4m3fn, group: int | None = GROUP) -> Any:
    """(q, scale) with x ~ q * scale, as Fusion.quantize computes them: per 1 x 128 group of
    the last axis (scale [..., ceil(K/128)]) or per row (group=None, scale [...]); the scale
    amax(|x|) / largest in f32, the cast saturating, 0 where the scale is 0."""
    where = "mmcomp.torch.quantize"
    largest = _largest(dtype, where)
    if group not in (GROUP, None):
        raise FusionError(f"{where}: argument 'group': expected 128 or None, found {group!r}")
    if x.dim() < 1:
        raise FusionError(f"{where}: argument 'x': expected rank >= 1, found a scalar")
    values = x.float()
    if group is None:
        scale = values.abs().amax(dim=-1) / largest
        return _saturated(values, scale.unsqueeze(-1), dtype, largest), scale
    columns = values.shape[-1]
    padded = torch.nn.functional.pad(values, (0, _blocks(columns) * GROUP - columns))
    grouped = padded.reshape(*values.shape[:-1], -1, GROUP)
    scale = grouped.abs().amax(dim=-1) / largest
    q = _saturated(grouped, scale.unsqueeze(-1), dtype, largest)
    return q.reshape(padded.shape)[..., :columns], scale


def quantize_weight(w: Any, scaling: str, dtype: Any = torch.float8_e4m3fn) -> tuple[Any, Any]:
    """A [N, K] weight quantized once: (q, scale), scale [N] per row or [ceil(N/128),
    ceil(K/128)] per 128 x 128 block."""
    where = "mmcomp.torch.quantize_weight"
    if scaling not in SCALINGS:
        raise FusionError(
            f"{where}: argument 'scaling': expected 'row' or 'block', found {scaling!r}"
        )
    largest = _largest(dtype, where)
    values = w.detach().float()
    if scaling == "row":
        return quantize(values, dtype, group=None)
    rows, columns = values.shape
    padded = torch.nn.functional.pad(
        values, (0, _blocks(columns) * GROUP - columns, 0, _blocks(rows) * GROUP - rows)
    )
    blocks = padded.reshape(_blocks(rows), GROUP, _blocks(columns), GROUP)
    scale = blocks.abs().amax(dim=(1, 3)) / largest
    q = _saturated(blocks, scale[:, None, :, None], dtype, largest)
    return q.reshape(padded.shape)[:rows, :columns].contiguous(), scale


# scaled_mm ------------------------------------------------------------------------------


def scaled_mode(a: Any, b: Any, scale_a: Any, scale_b: Any) -> str:
    """ "tensor", "row" or "block", from the scales' shapes as torch._scaled_mm reads them;
    FusionError naming the argument otherwise."""
    where = "mmcomp.torch.scaled_mm"
    m, k = a.shape
    n = b.shape[1]
    if scale_a.numel() == 1 and scale_b.numel() == 1 and scale_a.dim() <= 1 >= scale_b.dim():
        return "tensor"
    shapes = (tuple(scale_a.shape), tuple(scale_b.shape))
    if shapes == ((m, 1), (1, n)):
        return "row"
    if shapes == ((m, _blocks(k)), (_blocks(k), _blocks(n))):
        return "block"
    raise FusionError(
        f"{where}: arguments 'scale_a', 'scale_b': expected shapes [] and [] (per tensor), "
        f"[{m}, 1] and [1, {n}] (row-wise) or [{m}, {_blocks(k)}] and [{_blocks(k)}, "
        f"{_blocks(n)}] (block-wise) for a [{m}, {k}] and b [{k}, {n}], found "
        f"{list(scale_a.shape)} and {list(scale_b.shape)}"
    )


def _check_scaled_mm(a: Any, b: Any, scale_a: Any, scale_b: Any, bias: Any, out_dtype: Any):
    """The arguments of scaled_mm, checked as torch._scaled_mm checks them."""
    where = "mmcomp.torch.scaled_mm"
    for name, tensor in (("a", a), ("b", b)):
        if tensor.dim() != 2 or not str(tensor.dtype).startswith("torch.float8"):
            raise FusionError(
                f"{where}: argument '{name}': expected a 2-d float8_e4m3fn or float8_e5m2 "
                f"tensor, found {tensor.dtype} of shape {list(tensor.shape)}"
            )
    if a.shape[1] != b.shape[0]:
        raise FusionError(
            f"{where}: argument 'b': expected K = {a.shape[1]} rows (a's columns), found "
            f"shape {list(b.shape)}"
        )
    if not b.t().is_contiguous():
        raise FusionError(
            f"{where}: argument 'b': expected a column-major [K, N] (b.t() contiguous, a "
            f"row-major [N, K] weight transposed), as torch._scaled_mm takes it; found "
            f"strides {list(b.stride())}"
        )
    for name, scale in (("scale_a", scale_a), ("scale_b", scale_b)):
        if scale.dtype != torch.float32:
            raise FusionError(f"{where}: argument '{name}': expected float32, found {scale.dtype}")
    if out_dtype not in OUT_DTYPES:
        raise FusionError(
            f"{where}: argument 'out_dtype': expected torch.bfloat16, torch.float16 or "
            f"torch.float32, found {out_dtype}"
        )
    if bias is not None and (tuple(bias.shape) != (b.shape[1],) or bias.dtype not in OUT_DTYPES):
        raise FusionError(
            f"{where}: argument 'bias': expected a [{b.shape[1]}] bf16, f16 or f32 tensor, "
            f"found {bias.dtype} of shape {list(bias.shape)}"
        )
    return scaled_mode(a, b, scale_a, scale_b)


_FAMILIES: dict[tuple[Any, ...], RowFamily] = {}
"""scaled_mm's kernels by signature (mode, K, N, dtypes, bias dtype, backend)."""


def _family(key: tuple[Any, ...]) -> RowFamily:
    found = _FAMILIES.get(key)
    if found is not None:
        return found
    mode, k, n, a_dtype, b_dtype, bias_dtype, out_dtype, backend = key

    def build() -> Any:
        from mmcomp.frontend.builder import Fusion

        f = Fusion(f"scaled_mm_{mode}")
        a = f.input("a", ["m", k], a_dtype)
        w = f.input("w", [n, k], b_dtype)
        shapes: dict[str, tuple[list[int | str], list[int | str]]] = {
            "tensor": ([], []),
            "row": (["m"], [n]),
            "block": (["m", _blocks(k)], [_blocks(n), _blocks(k)]),
        }
        scale_a = f.input("scale_a", shapes[mode][0], "f32")
        scale_b = f.input("scale_b", shapes[mode][1], "f32")
        bias = f.input("bias", [n], bias_dtype) if bias_dtype is not None else None
        y = f.linear(a, w, bias, scale_a=scale_a, scale_b=scale_b)
        f.output(f.cast(y, out_dtype))
        return f

    family = _FAMILIES[key] = RowFamily(build, {"backend": backend})
    return family


def _scaled_mm_impl(
    a: Any, b: Any, scale_a: Any, scale_b: Any, bias: Any, out_dtype: Any, backend: str
) -> Any:
    mode = _check_scaled_mm(a, b, scale_a, scale_b, bias, out_dtype)
    key = (
        mode,
        a.shape[1],
        b.shape[1],
        FUSION_DTYPES[a.dtype],
        FUSION_DTYPES[b.dtype],
        FUSION_DTYPES[bias.dtype] if bias is not None else None,
        FUSION_DTYPES[out_dtype],
        backend,
    )
    if mode == "tensor":
        scales = [scale_a.reshape(()), scale_b.reshape(())]
    elif mode == "row":
        scales = [scale_a.reshape(-1).contiguous(), scale_b.reshape(-1).contiguous()]
    else:
        scales = [scale_a.contiguous(), scale_b.t().contiguous()]
    tensors = [a.contiguous(), b.t(), *scales] + ([bias] if bias is not None else [])
    return _family(key).run(tensors)


def _scaled_mm_fake(
    a: Any, b: Any, scale_a: Any, scale_b: Any, bias: Any, out_dtype: Any, backend: str
) -> Any:
    _check_scaled_mm(a, b, scale_a, scale_b, bias, out_dtype)
    return a.new_empty((a.shape[0], b.shape[1]), dtype=out_dtype)


_scaled_mm_op = torch.library.custom_op(
    "mmcomp::scaled_mm",
    _scaled_mm_impl,
    mutates_args=(),
    schema=(
        "(Tensor a, Tensor b, Tensor scale_a, Tensor scale_b, Tensor? bias, "
        "ScalarType out_dtype, str backend) -> Tensor"
    ),
)
_scaled_mm_op.register_fake(_scaled_mm_fake)


def scaled_mm(
    a: Any,
    b: Any,
    scale_a: Any,
    scale_b: Any,
    bias: Any = None,
    out_dtype: Any = torch.bfloat16,
    *,
    backend: str = "cuda",
) -> Any:
    """(a * scale_a) @ (b * scale_b) + bias in f32, cast to `out_dtype`, with
    torch._scaled_mm's arguments (module docstring; out_dtype defaults to bfloat16)."""
    return _scaled_mm_op(a, b, scale_a, scale_b, bias, out_dtype, backend)


# modules --------------------------------------------------------------------------------


def _check_scaling(scaling: object, where: str) -> str:
    if scaling not in SCALINGS:
        raise FusionError(
            f"{where}: argument 'scaling': expected 'row' or 'block', found {scaling!r}"
        )
    return str(scaling)


def _scale_shapes(scaling: str, n: int, k: int) -> tuple[list[Any], list[int]]:
    """The scale inputs of an fp8 linear: x's (rows dynamic) and W's."""
    if scaling == "row":
        return ["m"], [n]
    return ["m", _blocks(k)], [_blocks(n), _blocks(k)]


def _weight_inputs(f: Any, name: str, n: int, k: int, scaling: str) -> tuple[Any, Any]:
    """The fp8 weight input `name` [n, k] and its scale input."""
    w = f.input(name, [n, k], "f8e4m3")
    sw = f.input(f"{name}_scale", _scale_shapes(scaling, n, k)[1], "f32")
    return w, sw


def _module_op(name: str, inputs: list[str], outputs: list[tuple[Any, Any]], family: RowFamily):
    """A custom op running `family` for the first input's rows; `outputs`: (columns,
    dtype) of each result."""

    def impl(*tensors: Any) -> Any:
        return family.run([tensor for tensor in tensors if tensor is not None])

    def fake(x: Any, *rest: Any) -> Any:
        made = tuple(x.new_empty((x.shape[0], columns), dtype=dtype) for columns, dtype in outputs)
        return made[0] if len(made) == 1 else made

    optional = [entry for entry in inputs if entry.endswith("?")]
    required = [entry for entry in inputs if not entry.endswith("?")]
    return register(
        name,
        schema(required, [entry[:-1] for entry in optional], len(outputs)),
        impl,
        fake,
        f"fp8 {name}",
    )


class Fp8Linear(nn.Module):
    """`activation(x W^T + b)` with W quantized once to e4m3 and x at each call (per row or
    per 1 x 128 group), the product of the dequantized operands in f32, the output in the
    weight's dtype. Built from an nn.Linear (its weight copied into fp8; the bias shared)."""

    def __init__(self, linear: Any, activation: Any = None, scaling: str = "row", **schedule: Any):
        super().__init__()  # pyright: ignore[reportUnknownMemberType]  (nn.Module is Any)
        where = "mmcomp.torch.Fp8Linear"
        if not isinstance(linear, nn.Linear):
            raise FusionError(
                f"{where}: argument 'linear': expected an nn.Linear, found {type(linear).__name__}"
            )
        self.scaling = _check_scaling(scaling, where)
        self.activation = activation_name(activation, where)
        self.dtype = linear.weight.dtype
        if self.dtype not in OUT_DTYPES:
            raise FusionError(
                f"{where}: linear.weight: expected a bf16, f16 or f32 weight to quantize, found "
                f"{self.dtype}"
            )
        self.in_features, self.out_features = linear.in_features, linear.out_features
        weight, weight_scale = quantize_weight(linear.weight, self.scaling)
        self.register_buffer("weight", weight)
        self.register_buffer("weight_scale", weight_scale)
        self.bias = linear.bias
        checked = check_schedule(schedule, where)
        n, k, act, out = self.out_features, self.in_features, self.activation, self.dtype
        scaling = self.scaling
        out_name = FUSION_DTYPES[out]
        bias_dtype = FUSION_DTYPES[self.bias.dtype] if self.bias is not None else None
        sx_shape = _scale_shapes(self.scaling, n, k)[0]

        def build() -> Any:
            from mmcomp.frontend.builder import Fusion

            f = Fusion(f"fp8_linear_{act}")
            x = f.input("x", ["m", k], "f8e4m3")
            w, sw = _weight_inputs(f, "w", n, k, scaling)
            sx = f.input("x_scale", sx_shape, "f32")
            b = f.input("bias", [n], bias_dtype) if bias_dtype is not None else None
            y = f.linear(x, w, b, scale_a=sx, scale_b=sw)
            f.output(f.cast(activate(f, y, act), out_name))
            return f

        self._family = RowFamily(build, checked)
        description = f"fp8 linear {n}x{k} {self.scaling} {bias_dtype} {act} {out} {checked}"
        self._op = _module_op(
            op_name(f"fp8_linear_{act}", description),
            ["x", "w", "w_scale", "x_scale", "bias?"],
            [(n, out)],
            self._family,
        )

    def fusion(self) -> Any:
        """The module's fusion (rows dynamic)."""
        return self._family.build()

    def quantized(self, q: Any, scale: Any) -> Any:
        """The output of an input already quantized: q [rows, K] e4m3 and its scale."""
        return self._op(q, self.weight, self.weight_scale, scale, self.bias)

    def forward(self, x: Any) -> Any:
        """activation(x W^T + b) over x's last axis, x quantized per the scaling."""
        lead = x.shape[:-1]
        rows = x.reshape(-1, self.in_features)
        q, scale = quantize(rows, group=GROUP if self.scaling == "block" else None)
        return self.quantized(q.contiguous(), scale.contiguous()).reshape(*lead, self.out_features)

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"bias={self.bias is not None}, activation={self.activation}, scaling={self.scaling}"
        )


class Fp8GatedMLP(nn.Module):
    """`down(act(x Wg^T) * (x Wu^T))` in fp8 (e4m3 weights quantized once, x at each call).

    With block scaling the gate/up kernel writes h quantized per 1 x 128 group in its
    epilogue (fp8 values and their scales), which the down projection takes as its a and
    block-wise scale_a: no quantization between the kernels. With row scaling h leaves the
    gate/up kernel in the weight's dtype and is quantized per row in torch (a row's amax
    spans more columns than a tile holds)."""

    def __init__(
        self,
        mlp: Any,
        activation: Any = None,
        scaling: str = "block",
        gate_up_schedule: dict[str, Any] | None = None,
        down_schedule: dict[str, Any] | None = None,
    ):
        super().__init__()  # pyright: ignore[reportUnknownMemberType]  (nn.Module is Any)
        where = "mmcomp.torch.Fp8GatedMLP"
        parts = [getattr(mlp, part, None) for part in ("gate_proj", "up_proj", "down_proj")]
        if not all(isinstance(part, nn.Linear) for part in parts):
            raise FusionError(
                f"{where}: argument 'mlp': expected a module with nn.Linear gate_proj, up_proj "
                "and down_proj"
            )
        gate, up, down = parts
        assert gate is not None and up is not None and down is not None
        if gate.weight.shape != up.weight.shape or down.in_features != gate.out_features:
            raise FusionError(
                f"{where}: expected gate_proj and up_proj of one shape and down_proj taking "
                f"their output, found {list(gate.weight.shape)}, {list(up.weight.shape)}, "
                f"{list(down.weight.shape)}"
            )
        if gate.bias is not None or up.bias is not None:
            raise FusionError(f"{where}: gate_proj and up_proj: expected no bias (fp8 form)")
        self.scaling = _check_scaling(scaling, where)
        self.activation = activation_name(
            activation if activation is not None else getattr(mlp, "act_fn", None), where
        )
        self.dtype = gate.weight.dtype
        self.hidden, self.intermediate = gate.in_features, gate.out_features
        for name, linear in (("gate", gate), ("up", up)):
            weight, scale = quantize_weight(linear.weight, self.scaling)
            self.register_buffer(f"{name}_weight", weight)
            self.register_buffer(f"{name}_scale", scale)
        schedule = check_schedule(gate_up_schedule or {}, f"{where}: gate_up_schedule")
        down_keywords = check_schedule(down_schedule or {}, f"{where}: down_schedule")
        self.down = Fp8Linear(down, None, self.scaling, **down_keywords)
        h, i, act, scaling = self.hidden, self.intermediate, self.activation, self.scaling
        fused = scaling == "block"
        out_name = FUSION_DTYPES[self.dtype]
        sx_shape, sw_shape = _scale_shapes(scaling, i, h)

        def build() -> Any:
            from mmcomp.frontend.builder import Fusion

            f = Fusion(f"fp8_gated_{act}")
            x = f.input("x", ["m", h], "f8e4m3")
            wg = f.input("wg", [i, h], "f8e4m3")
            sg = f.input("wg_scale", sw_shape, "f32")
            wu = f.input("wu", [i, h], "f8e4m3")
            su = f.input("wu_scale", sw_shape, "f32")
            sx = f.input("x_scale", sx_shape, "f32")
            gated = activate(f, f.linear(x, wg, scale_a=sx, scale_b=sg), act)
            gated = gated * f.linear(x, wu, scale_a=sx, scale_b=su)
            if fused:
                q, scale = f.quantize(gated, "f8e4m3", group=GROUP)
                f.output(q)
                f.output(scale)
            else:
                f.output(f.cast(gated, out_name))
            return f

        self._family = RowFamily(build, schedule)
        outputs = (
            [(i, torch.float8_e4m3fn), (_blocks(i), torch.float32)] if fused else [(i, self.dtype)]
        )
        self._op = _module_op(
            op_name(
                f"fp8_gated_{act}", f"fp8 gated {h}->{i} {scaling} {act} {self.dtype} {schedule}"
            ),
            ["x", "wg", "wg_scale", "wu", "wu_scale", "x_scale"],
            outputs,
            self._family,
        )

    def fusion(self) -> Any:
        """The gate/up kernel's fusion (rows dynamic)."""
        return self._family.build()

    def forward(self, x: Any) -> Any:
        """down(act(gate(x)) * up(x)) over x's last axis."""
        lead = x.shape[:-1]
        rows = x.reshape(-1, self.hidden)
        q, scale = quantize(rows, group=GROUP if self.scaling == "block" else None)
        gated = self._op(
            q.contiguous(),
            self.gate_weight,
            self.gate_scale,
            self.up_weight,
            self.up_scale,
            scale.contiguous(),
        )
        if self.scaling == "block":
            h_q, h_scale = gated
            y = self.down.quantized(h_q, h_scale)
        else:
            y = self.down(gated)
        return y.reshape(*lead, self.down.out_features)

    def extra_repr(self) -> str:
        return (
            f"hidden={self.hidden}, intermediate={self.intermediate}, "
            f"activation={self.activation}, scaling={self.scaling}"
        )
