"""FusedLinear (linear + bias + activation) and GatedMLP (the Llama/Mistral/Qwen MLP),
built from torch / transformers modules by sharing their parameters."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mmcomp.errors import FusionError
from mmcomp.torch.arrays import FUSION_DTYPES, nn
from mmcomp.torch.autograd import autocast_input, requires_grad, trainable
from mmcomp.torch.module_parts import (
    RowFamily,
    activate,
    activation_name,
    check_schedule,
)
from mmcomp.torch.ops import op_name, register, schema


def _fusion_dtype(tensor: Any, where: str, what: str, backend: object = "cuda") -> str:
    """The fusion dtype of a module's weights: bf16 or f16 (wgmma), or f32 on interp."""
    dtype = FUSION_DTYPES.get(tensor.dtype)
    if dtype is None or dtype.startswith("f8") or (dtype == "f32" and backend != "interp"):
        raise FusionError(
            f"{where}: {what}: expected bfloat16 or float16 weights (wgmma; float32 on the "
            f"interp back end; fp8 weights take scales, which a Fusion's linear has, not "
            f"these modules), found {tensor.dtype}"
        )
    return dtype


def _family_op(
    name: str,
    inputs: Sequence[str],
    optional: Sequence[str],
    family: RowFamily,
    out_features: int,
    where: str,
) -> Any:
    """An op whose impl runs `family`'s kernel for the first input's row count."""

    def impl(x: Any, *rest: Any) -> Any:
        return family.run((x, *(tensor for tensor in rest if tensor is not None)))

    def fake(x: Any, *rest: Any) -> Any:
        return x.new_empty((x.shape[0], out_features))

    return register(name, schema(inputs, optional, 1), impl, fake, where)


def _check_recompute(recompute: object, where: str) -> bool:
    if not isinstance(recompute, bool):
        raise FusionError(
            f"{where}: argument 'recompute': expected True or False, found {recompute!r}"
        )
    return recompute


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

    def __init__(
        self, linear: Any, activation: Any = None, recompute: bool = False, **schedule: Any
    ):
        """Share `linear`'s weight and bias (no copy); `schedule`: mmcomp.compile keywords
        (`backend` included); `recompute`: the backward recomputes the pre-activation
        rather than the forward saving it."""
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
        self.recompute = _check_recompute(recompute, where)
        checked = check_schedule(schedule, where)
        dtype = _fusion_dtype(linear.weight, where, "linear.weight", checked.get("backend"))
        n, k, act, bias = self.out_features, self.in_features, self.activation, self.bias
        has_bias = bias is not None
        if has_bias and bias.dtype != linear.weight.dtype:
            raise FusionError(
                f"{where}: linear.bias: expected dtype {linear.weight.dtype}, found {bias.dtype}"
            )

        def build() -> Any:
            from mmcomp.frontend.builder import Fusion

            f = Fusion(f"linear_{act}")
            a = f.input("x", ["m", k], dtype)
            w = f.input("w", [n, k], dtype)
            b = f.input("bias", [n], dtype) if has_bias else None
            f.output(f.cast(activate(f, f.linear(a, w, b), act), dtype))
            return f

        self._family = RowFamily(build, checked)
        self._trainable = trainable([build()], [checked], self.recompute, where)
        description = f"linear {n}x{k} {dtype} bias={has_bias} {act} {sorted(schedule.items())}"
        self._op = _family_op(
            op_name(f"linear_{act}", description),
            ["x", "w"],
            ["bias"],
            self._family,
            n,
            f"FusedLinear({k} -> {n}, {act})",
        )

    @staticmethod
    def fp8(linear: Any, activation: Any = None, scaling: str = "row", **schedule: Any) -> Any:
        """The fp8 form of a FusedLinear of `linear` (mmcomp.torch.fp8.Fp8Linear): its
        weight quantized once to e4m3 per row or per 128 x 128 block ("block")."""
        from mmcomp.torch.fp8 import Fp8Linear

        return Fp8Linear(linear, activation, scaling, **schedule)

    def fusion(self) -> Any:
        """The module's fusion (its row count M dynamic)."""
        return self._family.build()

    def forward(self, x: Any) -> Any:
        """activation(x W^T + b) over x's last axis."""
        x = autocast_input(x, self.weight.dtype)
        _check_input(x, self.in_features, self.weight.dtype, "mmcomp.torch.FusedLinear")
        lead = x.shape[:-1]
        rows = x.reshape(-1, self.in_features)
        if not rows.is_contiguous():
            rows = rows.contiguous()
        if requires_grad(rows, self.weight, self.bias):
            tensors = [rows, self.weight] + ([self.bias] if self.bias is not None else [])
            y = self._trainable(*tensors)
        else:
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
        recompute: bool = False,
    ):
        """Share `mlp`'s weights; the schedules are mmcomp.compile keywords of each kernel
        (`backend` included, one for both); `recompute`: the backward recomputes the gate
        and up pre-activations rather than the forward saving them."""
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
        self.recompute = _check_recompute(recompute, where)
        schedule = check_schedule(gate_up_schedule or {}, f"{where}: gate_up_schedule")
        dtype = _fusion_dtype(gate.weight, where, "gate_proj.weight", schedule.get("backend"))
        for name, tensor in (("up_proj.weight", up.weight), ("down_proj.weight", down.weight)):
            if tensor.dtype != gate.weight.dtype:
                raise FusionError(
                    f"{where}: {name}: expected dtype {gate.weight.dtype}, found {tensor.dtype}"
                )
        h, i, act = self.hidden, self.intermediate, self.activation
        biased = (gate.bias is not None, up.bias is not None)

        def build() -> Any:
            from mmcomp.frontend.builder import Fusion

            f = Fusion(f"gated_{act}")
            x = f.input("x", ["m", h], dtype)
            wg = f.input("wg", [i, h], dtype)
            wu = f.input("wu", [i, h], dtype)
            bg = f.input("bg", [i], dtype) if biased[0] else None
            bu = f.input("bu", [i], dtype) if biased[1] else None
            gated = activate(f, f.linear(x, wg, bg), act) * f.linear(x, wu, bu)
            f.output(f.cast(gated, dtype))
            return f

        self._family = RowFamily(build, schedule)
        description = f"gated {h}->{i} {dtype} bias={biased} {act} {sorted(schedule.items())}"
        self._op = _family_op(
            op_name(f"gated_{act}", description),
            ["x", "wg", "wu"],
            ["bg", "bu"],
            self._family,
            i,
            f"GatedMLP gate/up ({h} -> {i}, {act})",
        )
        down_keywords = check_schedule(down_schedule or {}, f"{where}: down_schedule")
        self.down = FusedLinear(down, None, **down_keywords)
        self._trainable = trainable(
            [build(), self.down.fusion()],
            [schedule, down_keywords],
            self.recompute,
            where,
        )

    @staticmethod
    def fp8(
        mlp: Any,
        activation: Any = None,
        scaling: str = "block",
        gate_up_schedule: dict[str, Any] | None = None,
        down_schedule: dict[str, Any] | None = None,
    ) -> Any:
        """The fp8 form of a GatedMLP of `mlp` (mmcomp.torch.fp8.Fp8GatedMLP): e4m3 weights
        per 128 x 128 block, h quantized in the gate/up kernel's epilogue (or per row)."""
        from mmcomp.torch.fp8 import Fp8GatedMLP

        return Fp8GatedMLP(mlp, activation, scaling, gate_up_schedule, down_schedule)

    def forward(self, x: Any) -> Any:
        """down(act(gate(x)) * up(x)) over x's last axis."""
        x = autocast_input(x, self.gate_weight.dtype)
        _check_input(x, self.hidden, self.gate_weight.dtype, "mmcomp.torch.GatedMLP")
        lead = x.shape[:-1]
        rows = x.reshape(-1, self.hidden)
        if not rows.is_contiguous():
            rows = rows.contiguous()
        parameters = [self.gate_weight, self.up_weight, self.gate_bias, self.up_bias]
        parameters += [self.down.weight, self.down.bias]
        if requires_grad(rows, *parameters):
            tensors = [rows] + [tensor for tensor in parameters if tensor is not None]
            y = self._trainable(*tensors)
            return y.reshape(*lead, self.down.out_features)
        gated = self._op(rows, self.gate_weight, self.up_weight, self.gate_bias, self.up_bias)
        return self.down(gated).reshape(*lead, self.down.out_features)

    def extra_repr(self) -> str:
        return (
            f"hidden={self.hidden}, intermediate={self.intermediate}, activation={self.activation}"
        )
