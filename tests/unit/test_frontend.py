"""The Python API (mmcomp.Fusion, Value, parse): IR it builds, round trips, and its errors."""

from __future__ import annotations

import re
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from xdsl.dialects.func import FuncOp, ReturnOp

import mmcomp
from mmcomp.dialects import fusion as fd
from mmcomp.errors import FusionError

M, N, K = 64, 48, 32


def op_names(f: mmcomp.Fusion) -> list[str]:
    """The names of the ops in the fusion's body, terminator included."""
    return [op.name for op in f.func.body.block.ops]


def round_trips(f: mmcomp.Fusion) -> mmcomp.Fusion:
    """Parse str(f) back, check it prints identically, and return the parsed Fusion."""
    text = str(f)
    g = mmcomp.parse(text)
    assert str(g) == text
    assert g.name == f.name
    assert [(v.name, v.shape, v.dtype) for v in g.inputs] == [
        (v.name, v.shape, v.dtype) for v in f.inputs
    ]
    assert [(v.shape, v.dtype) for v in g.outputs] == [(v.shape, v.dtype) for v in f.outputs]
    return g


# The fusion families


@pytest.mark.parametrize("dtype", ["bf16", "f16"])
@pytest.mark.parametrize("with_bias", [False, True])
def test_linear(dtype: str, with_bias: bool):
    f = mmcomp.Fusion("linear")
    a = f.input("a", [M, K], dtype)
    w = f.input("w", [N, K], dtype)
    bias = f.input("bias", [N], dtype) if with_bias else None
    y = f.linear(a, w, bias)
    assert (y.shape, y.dtype) == ((M, N), "f32")
    f.output(y)
    assert op_names(f) == ["fusion.linear", "func.return"]
    linear = next(iter(f.func.body.block.ops))
    assert isinstance(linear, fd.LinearOp)
    assert (linear.bias is not None) == with_bias
    round_trips(f)


def test_matmul_and_batched_matmul():
    f = mmcomp.Fusion("matmul")
    a = f.input("a", [M, K], "bf16")
    b = f.input("b", [K, N], "bf16")
    f.output(f.matmul(a, b))
    ba = f.input("ba", [4, M, K], "f16")
    bb = f.input("bb", [4, K, N], "f16")
    c = ba @ bb
    assert (c.shape, c.dtype) == ((4, M, N), "f32")
    f.output(c)
    broadcast_batch = f.matmul(f.input("x", [3, 1, M, K], "f32"), f.input("y", [5, K, N], "f32"))
    assert broadcast_batch.shape == (3, 5, M, N)
    round_trips(f)


def test_fused_multiply_sum_then_cast():
    f = mmcomp.Fusion("fms")
    a = f.input("a", [M, 1, K], "bf16")
    b = f.input("b", [1, N, K], "bf16")
    s = f.fused_multiply_sum(a, b, [2])
    assert (s.shape, s.dtype) == ((M, N), "f32")
    out = f.output(f.cast(s, "bf16"))
    assert (out.shape, out.dtype) == ((M, N), "bf16")
    op = next(iter(f.func.body.block.ops))
    assert isinstance(op, fd.FusedMultiplySumOp)
    assert op.summed_axes == (2,)
    assert f.fused_multiply_sum(a, b, -1).shape == (M, N)
    c = f.input("c", [2, M, 1, K], "bf16")
    d = f.input("d", [2, 1, N, K], "bf16")
    assert f.fused_multiply_sum(c, d, (0, 3)).shape == (M, N)
    round_trips(f)


def test_epilogue_silu_with_intermediate_output():
    f = mmcomp.Fusion("epilogue_silu")
    a = f.input("a", [M, K], "bf16")
    w = f.input("w", [N, K], "bf16")
    t = f.input("t", [M, N], "bf16")
    y = f.linear(a, w)
    f.output(y)
    f.output(f.cast(f.silu(f.cast(y, "f32")) * t, "bf16"))
    assert f.outputs[0] is y
    # cast(y, "f32") is y itself; t is cast to f32 for the product.
    assert op_names(f) == [
        "fusion.linear",
        "fusion.silu",
        "fusion.cast",
        "fusion.mul",
        "fusion.cast",
        "func.return",
    ]
    g = round_trips(f)
    assert [v.dtype for v in g.outputs] == ["f32", "bf16"]


def test_gelu_relu_and_scaling_by_a_constant():
    f = mmcomp.Fusion("epilogues")
    a = f.input("a", [M, K], "bf16")
    w = f.input("w", [N, K], "bf16")
    bias = f.input("bias", [N], "bf16")
    g = f.gelu(f.linear(a, w, bias), approximate="tanh")
    exact = f.gelu(g, approximate="none")
    r = f.relu(exact)
    scaled = r * 0.5
    also_scaled = f.mul(0.25, scaled)
    f.output(f.cast(also_scaled, "bf16"))
    gelus = [op for op in f.func.body.block.ops if isinstance(op, fd.GeluOp)]
    assert [op.approximate.data for op in gelus] == ["tanh", "none"]
    splats = [op for op in f.func.body.block.ops if isinstance(op, fd.SplatOp)]
    assert [op.scalar for op in splats] == [0.5, 0.25]
    assert all(op.result.type == fd.tensor_type((M, N), "f32") for op in splats)
    round_trips(f)


def test_horizontal_fusion_with_three_outputs():
    f = mmcomp.Fusion("horizontal")
    a = f.input("a", [M, K], "bf16")
    w1 = f.input("w1", [N, K], "bf16")
    w2 = f.input("w2", [N, K], "bf16")
    y1 = f.linear(a, w1)
    y2 = f.linear(a, w2)
    f.output(y1)
    f.output(y2)
    f.output(f.cast(f.silu(y1) * y2, "bf16"))
    assert len(f.outputs) == 3
    assert f.func.function_type.outputs.data == (
        fd.tensor_type((M, N), "f32"),
        fd.tensor_type((M, N), "f32"),
        fd.tensor_type((M, N), "bf16"),
    )
    round_trips(f)


# Broadcasting, promotion and operators


def test_binary_ops_broadcast_numpy_style():
    f = mmcomp.Fusion()
    x = f.input("x", [M, N], "f32")
    row = f.input("row", [N], "f32")
    row2 = f.input("row2", [1, N], "f32")
    col = f.input("col", [M, 1], "f32")
    out = x + row
    broadcast = out.ssa.owner.operands[1].owner  # pyright: ignore[reportAttributeAccessIssue]
    assert isinstance(broadcast, fd.BroadcastOp)
    assert broadcast.inserted == (True, False)
    assert (x - row2).shape == (M, N)
    assert (col * row).shape == (M, N)
    outer = col / row2
    assert outer.shape == (M, N)
    product = outer.ssa.owner
    assert isinstance(product, fd.DivOp)
    assert all(isinstance(v.owner, fd.BroadcastOp) for v in product.operands)
    round_trips(f)


def test_mixed_dtypes_promote_to_f32():
    f = mmcomp.Fusion()
    x = f.input("x", [M, N], "bf16")
    y = f.input("y", [M, N], "f16")
    z = f.input("z", [M, N], "bf16")
    assert (x + y).dtype == "f32"
    assert (x * z).dtype == "bf16"
    assert (x * 2).dtype == "bf16"
    assert f.add(x, f.input("w", [N], "f32")).dtype == "f32"


def test_python_operators():
    f = mmcomp.Fusion()
    x = f.input("x", [4, 8], "f32")
    results = [x + 1, 1 + x, x - 1, 1 - x, x * 2, 2 * x, x / 2, 2 / x, -x, np.float32(3) * x]  # pyright: ignore[reportOperatorIssue]
    kinds = [type(v.ssa.owner) for v in results]
    assert kinds == [
        fd.AddOp,
        fd.AddOp,
        fd.SubOp,
        fd.SubOp,
        fd.MulOp,
        fd.MulOp,
        fd.DivOp,
        fd.DivOp,
        fd.NegOp,
        fd.MulOp,
    ]
    # The constant keeps its side: 1 - x is splat(1) - x.
    rsub = results[3].ssa.owner
    assert isinstance(rsub.operands[0].owner, fd.SplatOp)
    for kind in ("neg", "exp", "tanh", "sigmoid", "silu", "relu"):
        assert getattr(f, kind)(x).ssa.owner.name == f"fusion.{kind}"


def test_broadcast_inserts_size_one_axes():
    f = mmcomp.Fusion()
    x = f.input("x", [8], "f16")
    y = f.broadcast(x, [True, False, True])
    assert (y.shape, y.dtype) == ((1, 8, 1), "f16")
    assert y.ssa.owner.inserted == (True, False, True)  # pyright: ignore[reportAttributeAccessIssue]


def test_cast_and_dtypes():
    f = mmcomp.Fusion()
    x = f.input("x", [4], np.float16)
    y = f.input("y", [4], ml_dtypes.bfloat16)
    z = f.input("z", [4], np.dtype("float32"))
    assert [v.dtype for v in (x, y, z)] == ["f16", "bf16", "f32"]
    assert y.numpy_dtype == np.dtype(ml_dtypes.bfloat16)
    assert f.cast(x, "f16") is x
    assert f.cast(x, np.float32).dtype == "f32"


def test_fusion_properties():
    f = mmcomp.Fusion("props")
    assert f.name == "props"
    assert mmcomp.Fusion().name == "fusion"
    a = f.input("a", [2, 3], "f32")
    assert f.inputs == [a] and f.outputs == []
    assert (a.name, a.shape, a.dtype, a.ndim) == ("a", (2, 3), "f32", 2)
    assert isinstance(f.func, FuncOp)
    assert f.module.ops.first is f.func
    y = f.relu(a)
    f.output(y)
    f.output(y)
    assert f.outputs == [y, y]
    assert isinstance(f.func.body.block.last_op, ReturnOp)
    f.verify()
    assert "Value('a'" in repr(a) and "Fusion('props'" in repr(f)


def test_str_is_accepted_by_parse_and_building_continues():
    f = mmcomp.Fusion("grow")
    x = f.input("x", [4, 8], "bf16")
    f.output(f.exp(x))
    g = mmcomp.parse(str(f))
    gx = g.inputs[0]
    g.output(g.relu(gx))
    assert len(g.outputs) == 2
    g.verify()
    assert "fusion.relu %x : tensor<4x8xbf16>" in str(g)


def test_parse_selects_a_function_by_name():
    text = """
    func.func @one(%x: tensor<4xf32>) -> tensor<4xf32> {
      %0 = fusion.exp %x : tensor<4xf32>
      func.return %0 : tensor<4xf32>
    }
    func.func @two(%y: tensor<4xf32>) -> tensor<4xf32> {
      %0 = fusion.neg %y : tensor<4xf32>
      func.return %0 : tensor<4xf32>
    }
    """
    g = mmcomp.parse(text, name="two")
    assert g.name == "two" and [v.name for v in g.inputs] == ["y"]
    with pytest.raises(FusionError, match=r"expected one func.func, found 2 \(\['one', 'two'\]\)"):
        mmcomp.parse(text)


def test_fusion_error_is_a_value_error():
    assert issubclass(mmcomp.FusionError, ValueError)


# API misuse: errors at the call that made them


@pytest.fixture
def f() -> mmcomp.Fusion:
    return mmcomp.Fusion("misuse")


def test_linear_k_mismatch(f: mmcomp.Fusion):
    a = f.input("a", [M, K], "bf16")
    w = f.input("w", [N, K + 1], "bf16")
    with pytest.raises(
        FusionError, match=r"Fusion.linear: argument 'w': expected K = 32 .*found 33"
    ):
        f.linear(a, w)


def test_linear_bias_length(f: mmcomp.Fusion):
    a = f.input("a", [M, K], "bf16")
    w = f.input("w", [N, K], "bf16")
    bias = f.input("bias", [M], "bf16")
    with pytest.raises(
        FusionError, match=r"argument 'bias': expected shape \[48\] \(N.*found \[64\]"
    ):
        f.linear(a, w, bias)


def test_linear_weight_rank(f: mmcomp.Fusion):
    a = f.input("a", [M, K], "bf16")
    w = f.input("w", [2, N, K], "bf16")
    with pytest.raises(
        FusionError, match=r"argument 'w': expected rank 2 \(\[N, K\]\), found rank 3"
    ):
        f.linear(a, w)


def test_matmul_k_mismatch(f: mmcomp.Fusion):
    a = f.input("a", [M, K], "f16")
    b = f.input("b", [N, K], "f16")
    with pytest.raises(FusionError, match=r"Fusion.matmul: argument 'b': expected K = 32"):
        f.matmul(a, b)


def test_matmul_rank_one(f: mmcomp.Fusion):
    a = f.input("a", [K], "f16")
    b = f.input("b", [K, N], "f16")
    with pytest.raises(FusionError, match=r"argument 'a': expected rank >= 2, found rank 1"):
        f.matmul(a, b)


def test_matmul_batch_mismatch(f: mmcomp.Fusion):
    a = f.input("a", [3, M, K], "f16")
    b = f.input("b", [4, K, N], "f16")
    with pytest.raises(
        FusionError, match=r"batch dims \[4\] do not broadcast with those of 'a', \[3\]"
    ):
        f.matmul(a, b)


def test_contraction_dtype_mismatch(f: mmcomp.Fusion):
    a = f.input("a", [M, K], "bf16")
    w = f.input("w", [N, K], "f16")
    with pytest.raises(
        FusionError, match=r"argument 'w': expected dtype bf16 \(that of 'a'\), found f16"
    ):
        f.linear(a, w)


def test_unsupported_dtype(f: mmcomp.Fusion):
    with pytest.raises(
        FusionError, match=r"argument 'dtype': expected bf16, f16, f32, f8e4m3 or f8e5m2.*float64"
    ):
        f.input("a", [4], np.float64)
    with pytest.raises(FusionError, match=r"argument 'dtype'.*found 'int8'"):
        f.input("a", [4], "int8")
    x = f.input("x", [4], "f32")
    with pytest.raises(FusionError, match=r"Fusion.cast: argument 'dtype'.*found 'f64'"):
        f.cast(x, "f64")


def test_bad_shapes(f: mmcomp.Fusion):
    with pytest.raises(FusionError, match=r"argument 'shape': expected positive extents, found 0"):
        f.input("a", [4, 0], "f32")
    with pytest.raises(FusionError, match=r"argument 'shape': expected positive ints, found 2.5"):
        f.input("a", [4, 2.5], "f32")  # pyright: ignore[reportArgumentType]
    with pytest.raises(FusionError, match=r"argument 'shape': expected a sequence"):
        f.input("a", 4, "f32")  # pyright: ignore[reportArgumentType]


def test_rank_zero_input_is_a_scalar(f: mmcomp.Fusion):
    """Shape [] is a scalar input (a per-tensor scale); it broadcasts like a [1] one."""
    s = f.input("s", [], "f32")
    assert s.shape == () and s.ndim == 0
    a = f.input("a", [4, 8], "f32")
    f.output(a * s)
    assert "%s: tensor<f32>" in str(f)
    assert mmcomp.parse(str(f)).inputs[0].shape == ()


def test_an_input_is_not_an_output(f: mmcomp.Fusion):
    a = f.input("a", [M, K], "bf16")
    with pytest.raises(
        FusionError,
        match=r"Fusion.output: argument 'value': expected a value computed by the fusion, found "
        r"input 'a' itself",
    ):
        f.output(a)
    assert f.outputs == []
    assert isinstance(f.func.body.block.last_op, ReturnOp)
    assert not f.func.body.block.last_op.operands
    text = """
    func.func @f(%a: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
      %0 = fusion.add %a, %b : tensor<4xf32>
      func.return %0, %b : tensor<4xf32>, tensor<4xf32>
    }
    """
    message = r"@f: output 1: expected a value computed in the body, found argument 'b' returned"
    with pytest.raises(FusionError, match=message):
        mmcomp.parse(text)
    with pytest.raises(FusionError, match=message):
        mmcomp.compile(text, backend="interp")


def test_compile_needs_an_output(f: mmcomp.Fusion):
    a = f.input("a", [M, K], "bf16")
    w = f.input("w", [N, K], "bf16")
    f.linear(a, w)
    message = r"func.func @misuse: expected at least one output .*, found none"
    for backend in ("interp", "cuda"):
        with pytest.raises(FusionError, match=message):
            mmcomp.compile(f, backend=backend)


def test_parse_and_compile_ir_carrying_schedule_params():
    """Fusion IR may carry #sched.params; compile takes the keys it sets, keywords win."""
    text = """
    func.func @f(%a: tensor<128x64xbf16>, %w: tensor<96x64xbf16>) -> tensor<128x96xf32>
        attributes {sched.params = #sched.params<tile = 64x64x32, stages = 3>} {
      %y = fusion.linear %a, %w : (tensor<128x64xbf16>, tensor<96x64xbf16>) -> tensor<128x96xf32>
      func.return %y : tensor<128x96xf32>
    }
    """
    g = mmcomp.parse(text)
    assert "sched.params = #sched.params<tile = 64x64x32" in str(g)
    kernel = mmcomp.compile(text, backend="interp")
    assert (kernel.params.tile, kernel.params.stages) == ((64, 64, 32), 3)
    kernel = mmcomp.compile(text, backend="interp", stages=2)
    assert (kernel.params.tile, kernel.params.stages) == ((64, 64, 32), 2)
    rng = np.random.default_rng()
    a = rng.standard_normal((128, 64)).astype(ml_dtypes.bfloat16)
    w = rng.standard_normal((96, 64)).astype(ml_dtypes.bfloat16)
    (y,) = kernel(a, w)
    expected = a.astype(np.float32) @ w.astype(np.float32).T
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-4)


def test_bad_input_names(f: mmcomp.Fusion):
    f.input("a", [4], "f32")
    with pytest.raises(FusionError, match=r"input 'a' already exists"):
        f.input("a", [4], "f32")
    with pytest.raises(FusionError, match=r"expected a Python identifier, found '1x'"):
        f.input("1x", [4], "f32")
    with pytest.raises(FusionError, match=r"not ending in _<digits>"):
        f.input("w_1", [4], "f32")
    with pytest.raises(FusionError, match=r"Fusion: argument 'name': expected an identifier"):
        mmcomp.Fusion("no spaces")


def test_pointwise_shapes_that_do_not_broadcast(f: mmcomp.Fusion):
    x = f.input("x", [M, N], "f32")
    y = f.input("y", [M], "f32")
    with pytest.raises(
        FusionError,
        match=r"Fusion.add: argument 'rhs': shape \[64\] does not broadcast with that of "
        r"'lhs', \[64, 48\]",
    ):
        _ = x + y


def test_fused_multiply_sum_misuse(f: mmcomp.Fusion):
    a = f.input("a", [M, 1, K], "bf16")
    b = f.input("b", [1, N, K], "bf16")
    c = f.input("c", [N, K], "bf16")
    with pytest.raises(FusionError, match=r"argument 'axes': expected axes in \[-3, 3\), found 3"):
        f.fused_multiply_sum(a, b, [3])
    with pytest.raises(FusionError, match=r"argument 'axes': an axis appears twice"):
        f.fused_multiply_sum(a, b, [2, -1])
    with pytest.raises(FusionError, match=r"argument 'axes': expected at least one axis"):
        f.fused_multiply_sum(a, b, [])
    with pytest.raises(FusionError, match=r"argument 'b': expected rank 3 \(that of 'a'\)"):
        f.fused_multiply_sum(a, c, [2])


def test_broadcast_misuse(f: mmcomp.Fusion):
    x = f.input("x", [8], "f32")
    with pytest.raises(FusionError, match=r"expected 1 False entries .*found 2"):
        f.broadcast(x, [False, False])
    with pytest.raises(FusionError, match=r"argument 'new_dims': expected a list of bools"):
        f.broadcast(x, [1, 0])  # pyright: ignore[reportArgumentType]


def test_gelu_approximation(f: mmcomp.Fusion):
    x = f.input("x", [8], "f32")
    with pytest.raises(FusionError, match=r"argument 'approximate': expected \"tanh\" or \"none\""):
        f.gelu(x, approximate="erf")


def test_values_of_another_fusion(f: mmcomp.Fusion):
    other = mmcomp.Fusion("other")
    x = other.input("x", [8], "f32")
    y = f.input("y", [8], "f32")
    with pytest.raises(
        FusionError, match=r"expected a Value of Fusion 'misuse', found one of Fusion 'other'"
    ):
        _ = y + x
    with pytest.raises(FusionError, match=r"Fusion.output: argument 'value': expected a Value"):
        f.output(np.zeros(8))  # type: ignore[arg-type]
    with pytest.raises(FusionError, match=r"Fusion.relu: argument 'x': expected a Value"):
        f.relu(1.0)  # type: ignore[arg-type]


def test_two_constants_and_non_finite_constants(f: mmcomp.Fusion):
    x = f.input("x", [8], "f32")
    with pytest.raises(
        FusionError, match=r"expected at least one Value operand, found two numbers"
    ):
        f.add(1.0, 2.0)
    with pytest.raises(FusionError, match=r"argument 'rhs': expected a finite constant, found inf"):
        _ = x * float("inf")


def test_failed_call_leaves_the_fusion_valid(f: mmcomp.Fusion):
    a = f.input("a", [M, K], "bf16")
    w = f.input("w", [N, K + 1], "bf16")
    with pytest.raises(FusionError):
        f.linear(a, w)
    assert op_names(f) == ["func.return"]
    f.verify()


# Parsing malformed text


def test_parse_error_names_line_and_column():
    text = (
        "func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n  %0 = fusion.exp %a tensor<4xf32>\n}"
    )
    with pytest.raises(FusionError, match=r"mmcomp.parse: <fusion>:2:22(.|\n)*Expected ':'"):
        mmcomp.parse(text)


def test_parse_verifier_error():
    text = """
    func.func @f(%a: tensor<4x8xf32>, %b: tensor<1x8xf32>) -> tensor<4x8xf32> {
      %0 = "fusion.add"(%a, %b) : (tensor<4x8xf32>, tensor<1x8xf32>) -> tensor<4x8xf32>
      func.return %0 : tensor<4x8xf32>
    }
    """
    with pytest.raises(FusionError, match=r"fusion.add: operand 'rhs': expected shape \[4, 8\]"):
        mmcomp.parse(text)


def test_parse_rejects_foreign_ops_and_arguments():
    text = """
    func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
      %0 = "test.op"(%a) : (tensor<4xf32>) -> tensor<4xf32>
      func.return %0 : tensor<4xf32>
    }
    """
    with pytest.raises(FusionError, match=r"test.op"):
        mmcomp.parse(text)
    text = "func.func @f(%a: tensor<4xi64>) {\n  func.return\n}"
    with pytest.raises(
        FusionError,
        match=r"argument 0: expected a tensor of bf16, f16, f32, f8e4m3 or f8e5m2 \(or i32 "
        r"group sizes of a fusion.grouped_linear\), found tensor<4xi64>",
    ):
        mmcomp.parse(text)
    text = "func.func @f(%a: tensor<4xi32>) {\n  func.return\n}"
    with pytest.raises(
        FusionError,
        match=r"argument 0 \(tensor<4xi32>\): an i32 input is the group sizes of a "
        r"fusion.grouped_linear \(its offsets or counts\), found one no op uses",
    ):
        mmcomp.parse(text)


def test_parse_rejects_non_text():
    with pytest.raises(
        FusionError, match=r"argument 'text': expected IR text or the path of a .mlir file"
    ):
        mmcomp.parse(b"func.func @f() {}")  # type: ignore[arg-type]


# The documentation's examples


DOCS = Path(__file__).resolve().parents[2] / "docs" / "fusion-dialect.md"


def _operand_types(line: str) -> list[str]:
    """The operand types written in one op of the custom syntax."""
    signature = line.split(" : ", 1)[1]
    if signature.startswith("("):
        inner = signature[1 : signature.index(") ->")]
        return [t.strip() for t in inner.split(", ")]
    return [signature.split(" to ")[0].strip()]


def test_every_op_example_in_the_docs_parses_and_round_trips():
    lines = [
        line.strip()
        for line in DOCS.read_text().splitlines()
        if line.startswith("    %") and "= fusion." in line
    ]
    documented = {line.split("= ", 1)[1].split(" ", 1)[0] for line in lines}
    assert documented == {op.name for op in fd.Fusion.operations}
    for line in lines:
        operands = re.findall(r"%[a-z]\w*", line.split("=", 1)[1])
        types = _operand_types(line)
        if len(types) == 1:
            types = types * len(operands)
        args = ", ".join(f"{v}: {t}" for v, t in zip(operands, types, strict=True))
        text = f"func.func @doc({args}) {{\n  {line}\n  func.return\n}}\n"
        assert line in str(mmcomp.parse(text)), line


def test_parse_rejects_a_declaration():
    with pytest.raises(FusionError, match=r"@decl: expected a body of one block, found 0 blocks"):
        mmcomp.parse("func.func private @decl(tensor<4xf32>) -> tensor<4xf32>")


class _TorchLikeDtype:
    """Stands in for a torch.dtype (torch is not a dependency): module torch, str torch.X."""

    __module__ = "torch"

    def __init__(self, name: str):
        self.name = name

    def __str__(self) -> str:
        return f"torch.{self.name}"


def test_torch_dtypes_are_accepted_by_name():
    f = mmcomp.Fusion()
    names = [("bfloat16", "bf16"), ("float16", "f16"), ("float32", "f32")]
    for torch_name, short in names:
        assert f.input(f"x{short}", [2], _TorchLikeDtype(torch_name)).dtype == short
    with pytest.raises(
        FusionError, match=r"argument 'dtype': expected bf16, f16, f32, f8e4m3 or f8e5m2"
    ):
        f.input("y", [2], _TorchLikeDtype("float64"))


def test_splat_constants_round_trip_exactly():
    f = mmcomp.Fusion()
    x = f.input("x", [4], "f32")
    values = [1e-05, 1e20, -3.0, 0.1, 1 / 3, 5e-324, 3.4028234663852886e38, -0.0, 2**-20]
    for value in values:
        f.output(x * value)
    g = round_trips(f)
    parsed = [op.scalar for op in g.func.body.walk() if isinstance(op, fd.SplatOp)]
    assert [repr(v) for v in parsed] == [repr(v) for v in values]
    assert "fusion.splat 1.0e-05 : tensor<4xf32>" in str(g)
