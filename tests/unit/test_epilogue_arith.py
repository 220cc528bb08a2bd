"""The epilogue's values at the hopper level: f32 arith / math, the 16-bit pairs as
`hopper.truncf_pair`, and convert-arith-to-ptx lowering each form to one ptx instruction."""

from __future__ import annotations

from pathlib import Path

import pytest
from cases import case
from xdsl.dialects import arith, math
from xdsl.dialects.builtin import (
    Float32Type,
    FloatAttr,
    ModuleOp,
    UnrealizedConversionCastOp,
)
from xdsl.ir import Operation
from xdsl.parser import Parser
from xdsl.utils.exceptions import DiagnosticException

from mmcomp.dialects import hopper, ptx
from mmcomp.ir.registry import context
from mmcomp.lowering.hopper.pointwise import Pointwise
from mmcomp.passes.convert_arith_to_ptx import ConvertArithToPtx
from mmcomp.pipeline import run_pipeline

ROOT = Path(__file__).resolve().parents[2]
FLOAT_KINDS = {"f32", "bf16", "f16", "bf16x2", "f16x2"}
"""The register kinds of the epilogue's values."""
FUSION = """
func.func @f(%x: tensor<8x8xf32>, %y: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %r = OP : tensor<8x8xf32>
  func.return %r : tensor<8x8xf32>
}
"""
"""A fusion holding one pointwise op (OP, on %x and %y)."""
INSTRUCTIONS: dict[str, list[str]] = {
    "fusion.add %x, %y": ["add"],
    "fusion.sub %x, %y": ["sub"],
    "fusion.mul %x, %y": ["mul"],
    "fusion.div %x, %y": ["div"],
    "fusion.neg %x": ["neg"],
    "fusion.relu %x": ["const", "max"],
    "fusion.exp %x": ["const", "mul", "ex2"],
    "fusion.tanh %x": ["tanh"],
    "fusion.sigmoid %x": ["const", "mul", "ex2", "const", "add", "rcp"],
    "fusion.silu %x": ["const", "mul", "ex2", "const", "add", "rcp", "mul"],
    "fusion.gelu %x approximate tanh": [
        *["mul", "mul", "const", "fma", "const", "mul", "tanh", "const", "mul", "fma"]
    ],
    "fusion.gelu %x approximate none": [
        *["abs", "const", "mul", "const", "mul", "const", "const", "fma", "rcp"],
        *["const", "const", "fma", "const", "fma", "const", "fma", "const", "fma"],
        *["mul", "mul", "const", "mul", "ex2", "neg", "const", "fma", "const", "mul", "fma"],
    ],
}
"""The ptx instructions each pointwise op is lowered to, in order (those it was written
as before the epilogue's math moved to arith and math)."""


def hopper_level(module: ModuleOp, params: dict[str, object]) -> ModuleOp:
    """The hopper-level module of a fusion (after lower-schedule-to-hopper)."""
    lowered, _, _ = run_pipeline(module, params, until="lower-schedule-to-hopper")
    return lowered


def float_instructions(module: ModuleOp) -> list[Operation]:
    """The ptx instructions on f32 or 16-bit float registers but the loads and stores (the
    arithmetic, the conversions and the constants; not the hopper ops)."""
    found: list[Operation] = []
    for op in module.walk():
        if not isinstance(op, ptx.PtxInstruction) or isinstance(op, hopper.HopperInstruction):
            continue
        if isinstance(op, ptx.LdOp | ptx.StOp):
            continue
        values = [*op.operands, *op.results]
        if any(
            isinstance(v.type, ptx.RegType) and ptx.kind_of(v).name in FLOAT_KINDS for v in values
        ):
            found.append(op)
    return found


def example(name: str) -> ModuleOp:
    """An example fusion of examples/."""
    text = (ROOT / "examples" / f"{name}.mlir").read_text()
    return Parser(context(), text).parse_module()


@pytest.mark.parametrize("name", ["linear_bf16", "linear_bias_gelu"])
def test_an_example_epilogue_holds_no_ptx_float_op(name: str):
    module = hopper_level(example(name), {})
    assert not [op for op in module.walk() if isinstance(op, ptx.CvtPackOp)]
    assert not float_instructions(module)
    assert [op for op in module.walk() if isinstance(op, hopper.AccumulatorElementOp)]


EPILOGUES = [
    "gelu_bias",
    "gelu_erf",
    "silu_mul",
    "horizontal",
    "row_ops",
    "smem_ragged",
    "smem_horizontal",
    "smem_silu_mul",
]
"""Cases with epilogue math, in both epilogue modes (without split-K or stream-K, whose
sums of partial tiles are f32 registers of ptx arithmetic)."""


@pytest.mark.parametrize("name", ["linear_f16", "smem_f16"])
def test_a_16_bit_output_is_rounded_in_typed_pairs(name: str):
    selected = case(name)
    module = hopper_level(selected.fusion().module, selected.params)
    pairs = [op for op in module.walk() if isinstance(op, hopper.TruncfPairOp)]
    assert pairs and all(str(op.result.type) == "vector<2xf16>" for op in pairs)
    assert not float_instructions(module)


@pytest.mark.parametrize("name", EPILOGUES)
def test_the_epilogue_math_is_arith_and_math_on_f32(name: str):
    selected = case(name)
    module = hopper_level(selected.fusion().module, selected.params)
    assert not float_instructions(module)
    arithmetic = [op for op in module.walk() if op.name.startswith(("arith.", "math."))]
    floats = [op for op in arithmetic if any(r.type == Float32Type() for r in op.results)]
    assert floats
    for op in floats:
        flags = op.properties.get("fastmath")
        if op.name in ("arith.addf", "arith.subf", "arith.mulf"):
            assert str(flags) == "#arith.fastmath<contract>", op
        if op.name in ("math.exp2", "math.tanh"):
            assert str(flags) == "#arith.fastmath<afn>", op


def lowered_instructions(op_text: str) -> list[str]:
    """The ptx instructions the epilogue's pointwise op `op_text` becomes."""
    fusion = Parser(context(), FUSION.replace("OP", op_text)).parse_module()
    op = next(op for op in fusion.walk() if op.name.startswith("fusion."))
    module = ptx.PtxModuleOp()
    k = ptx.KernelBuilder.create(module, "k")
    f32 = Float32Type()
    registers = [k.const(1.0, ptx.F32), k.const(2.0, ptx.F32)]
    values = [
        k.append(UnrealizedConversionCastOp.get([register], [f32])).results[0]
        for register in registers[: len(op.operands)]
    ]
    written = len(list(k.entry.body.block.ops))
    result = Pointwise(k, "test").pointwise(op, values)
    made = [op.name for op in list(k.entry.body.block.ops)[written:]]
    assert made and not [name for name in made if not name.startswith(("arith.", "math."))]
    k.append(UnrealizedConversionCastOp.get([result], [ptx.F32]))
    ConvertArithToPtx().apply(context(), ModuleOp([module]))
    names = [op.name.removeprefix("ptx.") for op in k.entry.body.block.ops]
    return names[len(registers) :]


@pytest.mark.parametrize("op_text", INSTRUCTIONS)
def test_each_pointwise_op_lowers_to_its_instructions(op_text: str):
    assert lowered_instructions(op_text) == INSTRUCTIONS[op_text]


def test_an_approximation_without_afn_is_refused():
    module = ptx.PtxModuleOp()
    k = ptx.KernelBuilder.create(module, "k")
    x = k.append(arith.ConstantOp(FloatAttr(1.0, Float32Type()))).result
    k.append(math.TanhOp(x))
    with pytest.raises(DiagnosticException, match="math.tanh lowers to tanh.approx.f32 only"):
        ConvertArithToPtx().apply(context(), ModuleOp([module]))
