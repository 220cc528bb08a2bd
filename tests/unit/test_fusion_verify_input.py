"""Fusion input the verifier and the builder refuse: uses before definitions, splat constants
that overflow their element type, summed axes of unequal extents, values of another Fusion."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import VerifyException

import mmcomp
from mmcomp.dialects import fusion as fd
from mmcomp.errors import FusionError

USE_BEFORE_DEF = """\
func.func @f(%a: tensor<64x32xbf16>, %w: tensor<48x32xbf16>) -> tensor<64x48xbf16> {
  %1 = fusion.cast %0 : tensor<64x48xf32> to tensor<64x48xbf16>
  %0 = fusion.linear %a, %w : (tensor<64x32xbf16>, tensor<48x32xbf16>) -> tensor<64x48xf32>
  func.return %1 : tensor<64x48xbf16>
}
"""

MUL_BEFORE_CAST = """\
func.func @f(%a: tensor<64x32xbf16>, %w: tensor<48x32xbf16>, %t: tensor<64x48xbf16>)
    -> tensor<64x48xf32> {
  %y = fusion.linear %a, %w : (tensor<64x32xbf16>, tensor<48x32xbf16>) -> tensor<64x48xf32>
  %p = fusion.mul %y, %tf : tensor<64x48xf32>
  %tf = fusion.cast %t : tensor<64x48xbf16> to tensor<64x48xf32>
  func.return %p : tensor<64x48xf32>
}
"""

SELF_USE = """\
func.func @f(%a: tensor<64x32xbf16>, %w: tensor<48x32xbf16>) -> tensor<64x48xf32> {
  %0 = fusion.linear %a, %w : (tensor<64x32xbf16>, tensor<48x32xbf16>) -> tensor<64x48xf32>
  %1 = fusion.add %0, %1 : tensor<64x48xf32>
  func.return %1 : tensor<64x48xf32>
}
"""


def splat_text(literal: str, dtype: str) -> str:
    """A function returning `fusion.splat <literal> : tensor<4x<dtype>>`."""
    return (
        f"func.func @s() -> tensor<4x{dtype}> {{\n"
        f"  %0 = fusion.splat {literal} : tensor<4x{dtype}>\n"
        f"  func.return %0 : tensor<4x{dtype}>\n"
        "}\n"
    )


# Uses before definitions


USE_BEFORE_DEF_CASES = [
    pytest.param(
        USE_BEFORE_DEF,
        r"<fusion>:2:8: error: fusion.cast: operand 0 is used before it is defined "
        r"\(by the fusion.linear at <fusion>:3:8, later in the block\)",
        id="cast-before-linear",
    ),
    pytest.param(
        MUL_BEFORE_CAST,
        r"<fusion>:4:8: error: fusion.mul: operand 1 \(%tf\) is used before it is defined "
        r"\(by the fusion.cast at <fusion>:5:9, later in the block\)",
        id="mul-before-cast",
    ),
    pytest.param(
        SELF_USE,
        r"<fusion>:3:8: error: fusion.add: operand 1 is the op's own result",
        id="self-use",
    ),
]


@pytest.mark.parametrize("text, message", USE_BEFORE_DEF_CASES)
def test_parse_refuses_a_use_before_its_definition(text: str, message: str):
    with pytest.raises(FusionError, match=f"^mmcomp.parse: {message}$"):
        mmcomp.parse(text)


@pytest.mark.parametrize("text, message", USE_BEFORE_DEF_CASES)
def test_compile_refuses_a_use_before_its_definition(text: str, message: str):
    with pytest.raises(FusionError, match=message):
        mmcomp.compile(text, backend="interp")


def test_verify_refuses_an_op_moved_before_its_operand():
    f = mmcomp.Fusion("moved")
    a = f.input("a", [64, 32], "bf16")
    w = f.input("w", [48, 32], "bf16")
    y = f.linear(a, w)
    out = f.output(f.relu(y))
    relu = out.ssa.owner
    assert isinstance(relu, fd.ReluOp)
    linear = y.ssa.owner
    assert isinstance(linear, fd.LinearOp)
    relu.detach()
    f.func.body.block.insert_op_before(relu, linear)
    with pytest.raises(
        FusionError,
        match=r"^moved: fusion.relu: operand 0 is used before it is defined "
        r"\(by the fusion.linear, later in the block\)$",
    ):
        f.verify()


def test_reference_refuses_a_module_with_a_use_before_its_definition():
    """A module parsed without mmcomp.parse's checks: the reference verifies it first."""
    from xdsl.parser import Parser

    from mmcomp.ir.registry import context

    module = Parser(context(), USE_BEFORE_DEF).parse_module()
    inputs = (np.ones((64, 32), np.float32), np.ones((48, 32), np.float32))
    with pytest.raises(FusionError, match=r"^reference: @f: fusion.cast: operand 0 is used"):
        mmcomp.reference(module, *inputs)


def test_ops_in_order_verify():
    lines = USE_BEFORE_DEF.splitlines(keepends=True)
    lines[1], lines[2] = lines[2], lines[1]
    f = mmcomp.parse("".join(lines))
    f.verify()
    assert [op.name for op in f.func.body.block.ops] == [
        "fusion.linear",
        "fusion.cast",
        "func.return",
    ]


def test_a_fusion_built_in_python_verifies():
    f = mmcomp.Fusion("built")
    a = f.input("a", [64, 32], "bf16")
    w = f.input("w", [48, 32], "bf16")
    t = f.input("t", [64, 48], "bf16")
    y = f.linear(a, w)
    f.output(f.cast(f.silu(y) * t + 0.5, "bf16"))
    f.verify()
    assert mmcomp.parse(str(f)).name == "built"


# Splat constants


@pytest.mark.parametrize(
    "literal, dtype, message",
    [
        (
            "1.0e+300",
            "f32",
            r"value 1e\+300 is not finite in f32 \(largest finite 3.4028235e\+38\)",
        ),
        (
            "-1.0e+39",
            "f32",
            r"value -1e\+39 is not finite in f32 \(largest finite 3.4028235e\+38\)",
        ),
        ("70000.0", "f16", r"value 70000.0 is not finite in f16 \(largest finite 65504\)"),
        ("65520.0", "f16", r"value 65520.0 is not finite in f16 \(largest finite 65504\)"),
        (
            "3.4e+38",
            "bf16",
            r"value 3.4e\+38 is not finite in bf16 \(largest finite 3.3895314e\+38\)",
        ),
    ],
)
def test_splat_that_overflows_its_element_type(literal: str, dtype: str, message: str):
    with pytest.raises(FusionError, match=f"fusion.splat: {message}"):
        mmcomp.parse(splat_text(literal, dtype))


@pytest.mark.parametrize(
    "literal, dtype", [("65504.0", "f16"), ("3.4e+38", "f32"), ("3.38e+38", "bf16")]
)
def test_splat_of_a_large_finite_value(literal: str, dtype: str):
    mmcomp.parse(splat_text(literal, dtype)).verify()


def test_splat_op_verifier():
    op = fd.SplatOp(1e300, fd.tensor_type([4], "f32"))
    with pytest.raises(VerifyException, match=r"value 1e\+300 is not finite in f32"):
        op.verify()
    ModuleOp([fd.SplatOp(1e30, fd.tensor_type([4], "f32"))]).verify()


def test_splat_hexadecimal_literal_is_refused():
    with pytest.raises(
        FusionError,
        match=r"<fusion>:2:21\n(.*\n)*.*fusion.splat: expected a decimal literal as the splat "
        r"value, found the hexadecimal 0x7FC00000 \(MLIR reads hexadecimal float literals as "
        r"bit patterns; write the value in decimal\)",
    ):
        mmcomp.parse(splat_text("0x7FC00000", "f32"))


@pytest.mark.parametrize(
    "literal, hint",
    [("1e-50", "write 1.0e-50, not 1e-50"), ("-2E+5", r"write -2.0E\+5, not -2E\+5")],
)
def test_splat_exponent_without_a_point_has_a_hint(literal: str, hint: str):
    with pytest.raises(
        FusionError,
        match=f"fusion.splat: a float literal with an exponent needs a '.' before it: {hint}",
    ):
        mmcomp.parse(splat_text(literal, "f32"))


def test_splat_literals_that_parse():
    assert mmcomp.parse(splat_text("1.0e-50", "f32")).func.body.block.first_op is not None
    g = mmcomp.parse(splat_text("-3", "f16"))
    splat = g.func.body.block.first_op
    assert isinstance(splat, fd.SplatOp)
    assert splat.scalar == -3.0


def test_splat_integer_beyond_f64():
    with pytest.raises(FusionError, match=r"fusion.splat: the splat value is not finite in f64"):
        mmcomp.parse(splat_text("1" + "0" * 400, "f32"))


@pytest.mark.parametrize(
    "dtype, constant, message",
    [
        (
            "f32",
            1e300,
            r"expected a constant finite in f32 \(largest finite 3.4028235e\+38\), "
            r"found 1e\+300",
        ),
        (
            "f16",
            70000.0,
            r"expected a constant finite in f16 \(largest finite 65504\), "
            r"found 70000.0",
        ),
        (
            "bf16",
            3.4e38,
            r"expected a constant finite in bf16 \(largest finite "
            r"3.3895314e\+38\), found 3.4e\+38",
        ),
    ],
)
def test_builder_refuses_a_constant_that_overflows(dtype: str, constant: float, message: str):
    f = mmcomp.Fusion("constants")
    x = f.input("x", [4, 8], dtype)
    with pytest.raises(FusionError, match=rf"^Fusion.add: argument 'rhs': {message}$"):
        _ = x + constant
    with pytest.raises(FusionError, match=rf"^Fusion.mul: argument 'lhs': {message}$"):
        _ = constant * x
    assert [op.name for op in f.func.body.block.ops] == ["func.return"]


def test_builder_constants_in_range():
    f = mmcomp.Fusion("constants")
    h = f.input("h", [4], "f16")
    y = f.input("y", [4], "f32")
    f.output(h * 65504.0)
    f.output(y * 1e38)
    f.output(y * np.float64(2.0))
    f.verify()


def test_builder_refuses_an_integer_beyond_f64():
    f = mmcomp.Fusion("constants")
    y = f.input("y", [4], "f32")
    with pytest.raises(FusionError, match=r"argument 'rhs': expected a finite constant"):
        _ = y * 10**400


# fused_multiply_sum


def test_fused_multiply_sum_refuses_a_summed_axis_of_unequal_extents():
    f = mmcomp.Fusion("fms")
    a = f.input("a", [4, 1, 8], "bf16")
    b = f.input("b", [1, 4, 8], "bf16")
    with pytest.raises(
        FusionError,
        match=r"^Fusion.fused_multiply_sum: argument 'axes': summed axis 0: expected equal "
        r"extents in 'a' and 'b', found 4 and 1$",
    ):
        f.fused_multiply_sum(a, b, [0])
    with pytest.raises(
        FusionError,
        match=r"summed axis 1: expected equal extents in 'a' and "
        r"'b', found 1 and 4",
    ):
        f.fused_multiply_sum(a, b, [2, 1])
    assert [op.name for op in f.func.body.block.ops] == ["func.return"]
    assert f.fused_multiply_sum(a, b, [2]).shape == (4, 4)


# Values of another Fusion


def test_value_of_another_fusion_of_the_same_name():
    f, g = mmcomp.Fusion(), mmcomp.Fusion()
    x = f.input("x", [4], "f32")
    y = g.input("y", [4], "f32")
    with pytest.raises(
        FusionError,
        match=r"^Fusion.add: argument 'rhs': expected a Value of this Fusion 'fusion', found "
        r"one of another Fusion object of the same name$",
    ):
        _ = x + y


def test_value_of_a_fusion_of_another_name():
    f, g = mmcomp.Fusion("first"), mmcomp.Fusion("second")
    y = g.input("y", [4], "f32")
    with pytest.raises(
        FusionError,
        match=r"^Fusion.relu: argument 'x': expected a Value of Fusion 'first', found one of "
        r"Fusion 'second'$",
    ):
        f.relu(y)
