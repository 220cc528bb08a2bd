"""Axis roles: roles_of and iteration_space on every fusion family, and the errors."""

from __future__ import annotations

import pytest
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp

import mmcomp
from mmcomp.analysis.roles import axes_by_role, infer_axis_mapping, iteration_space, roles_of
from mmcomp.dialects.fusion import MmaOp
from mmcomp.errors import FusionError
from mmcomp.frontend.builder import Fusion
from mmcomp.passes.propagate_axis_mapping import propagate


def _func(module: ModuleOp) -> FuncOp:
    (func,) = [op for op in module.ops if isinstance(op, FuncOp)]
    return func


def _mmas(module: ModuleOp) -> list[MmaOp]:
    return [op for op in _func(module).body.walk() if isinstance(op, MmaOp)]


def test_roles_of_is_public():
    assert mmcomp.roles_of is roles_of


def test_epilogue_operands_row_column_and_bias():
    f = Fusion("epilogue_operands")
    a = f.input("a", [64, 32], "bf16")
    w = f.input("w", [128, 32], "bf16")
    full = f.input("full", [64, 128], "f32")
    row = f.input("row", [1, 128], "f32")
    col = f.input("col", [64, 1], "f32")
    bias = f.input("bias", [128], "f32")
    y = f.linear(a, w)
    out = f.output(((y * full + row) - col) / bias)
    assert roles_of(full) == ("m", "n")
    assert roles_of(row) == ("_", "n")
    assert roles_of(col) == ("m", "_")
    assert roles_of(bias) == ("n",)
    assert roles_of(out) == ("m", "n")
    lowered = propagate(f)
    args = _func(lowered).body.block.args
    assert [roles_of(arg) for arg in args] == [
        ("m", "k"),
        ("n", "k"),
        ("m", "n"),
        ("_", "n"),
        ("m", "_"),
        ("n",),
    ]


def test_broadcast_inputs_fused_multiply_sum():
    f = Fusion("broadcast_inputs")
    a = f.input("a", [64, 1, 32], "bf16")
    b = f.input("b", [1, 128, 32], "bf16")
    s = f.output(f.fused_multiply_sum(a, b, 2))
    assert (roles_of(a), roles_of(b), roles_of(s)) == (("m", "_", "k"), ("_", "n", "k"), ("m", "n"))
    (mma,) = _mmas(propagate(f))
    assert (mma.a_roles.roles, mma.b_roles.roles) == (("m", "_", "k"), ("_", "n", "k"))
    assert mma.out_roles.roles == ("m", "n")


def test_fused_multiply_sum_with_a_batch_axis():
    f = Fusion("batched_fms")
    a = f.input("a", [3, 16, 1, 32], "f16")
    b = f.input("b", [3, 1, 8, 32], "f16")
    s = f.output(f.fused_multiply_sum(a, b, [-1]))
    assert roles_of(a) == ("b0", "m", "_", "k")
    assert roles_of(b) == ("b0", "_", "n", "k")
    assert roles_of(s) == ("b0", "m", "n")
    assert iteration_space(f.func) == {"b0": 3, "m": 16, "n": 8, "k": 32}


def test_b_as_k_n_for_matmul_and_n_k_for_linear():
    f = Fusion("layouts")
    a = f.input("a", [64, 32], "bf16")
    b = f.input("b", [32, 128], "bf16")
    w = f.input("w", [128, 32], "bf16")
    f.output(f.matmul(a, b) + f.linear(a, w))
    assert roles_of(b) == ("k", "n")
    assert roles_of(w) == ("n", "k")
    assert roles_of(a) == ("m", "k")


def test_batch_dims_broadcast_as_numpy_does():
    f = Fusion("batched")
    a = f.input("a", [2, 3, 16, 32], "bf16")
    b = f.input("b", [3, 32, 8], "bf16")
    y = f.output(f.matmul(a, b))
    assert roles_of(a) == ("b0", "b1", "m", "k")
    assert roles_of(b) == ("b1", "k", "n")
    assert roles_of(y) == ("b0", "b1", "m", "n")
    assert iteration_space(f.func) == {"b0": 2, "b1": 3, "m": 16, "n": 8, "k": 32}


def test_size_one_batch_axis_is_absent():
    f = Fusion("broadcast_batch")
    a = f.input("a", [1, 16, 32], "bf16")
    b = f.input("b", [4, 32, 8], "bf16")
    f.output(f.matmul(a, b))
    assert roles_of(a) == ("_", "m", "k")
    assert roles_of(b) == ("b0", "k", "n")


def test_linear_with_batched_activations():
    f = Fusion("batched_linear")
    a = f.input("a", [4, 16, 32], "bf16")
    w = f.input("w", [8, 32], "bf16")
    bias = f.input("bias", [8], "bf16")
    y = f.output(f.linear(a, w, bias))
    assert roles_of(a) == ("b0", "m", "k")
    assert roles_of(w) == ("n", "k")
    assert roles_of(bias) == ("n",)
    assert roles_of(y) == ("b0", "m", "n")


def test_horizontal_fusion_shares_a():
    f = Fusion("horizontal")
    a = f.input("a", [64, 32], "bf16")
    w1 = f.input("w1", [128, 32], "bf16")
    w2 = f.input("w2", [128, 32], "bf16")
    g = f.output(f.linear(a, w1))
    u = f.output(f.linear(a, w2))
    o = f.output(f.silu(g) * u)
    assert [roles_of(v) for v in (a, w1, w2, g, u, o)] == [
        ("m", "k"),
        ("n", "k"),
        ("n", "k"),
        ("m", "n"),
        ("m", "n"),
        ("m", "n"),
    ]
    mmas = _mmas(propagate(f))
    assert len(mmas) == 2
    assert mmas[0].a is mmas[1].a


def test_prologue_and_unconnected_values():
    f = Fusion("prologue")
    a = f.input("a", [64, 32], "f32")
    w = f.input("w", [128, 32], "f32")
    t = f.input("t", [64, 128], "f32")
    na = f.neg(a)
    f.output(f.linear(na, w))
    e = f.output(f.exp(t))
    assert roles_of(na) == ("m", "k")
    assert roles_of(a) == ("m", "k")
    assert roles_of(t) == ("m", "n")
    assert roles_of(e) == ("m", "n")


def test_m_of_one():
    f = Fusion("gemv")
    a = f.input("a", [1, 32], "bf16")
    w = f.input("w", [128, 32], "bf16")
    y = f.output(f.linear(a, w))
    assert roles_of(a) == ("m", "k")
    assert roles_of(y) == ("m", "n")
    assert iteration_space(f.func) == {"m": 1, "n": 128, "k": 32}


def test_roles_are_stored_and_read_back_after_the_pass():
    f = Fusion("stored")
    a = f.input("a", [64, 32], "bf16")
    w = f.input("w", [128, 32], "bf16")
    bias = f.input("bias", [128], "bf16")
    f.output(f.gelu(f.linear(a, w, bias)))
    lowered = propagate(f)
    func = _func(lowered)
    assert "fusion.space" in func.attributes
    assert iteration_space(func) == {"m": 64, "n": 128, "k": 32}
    for op in func.body.block.ops:
        for result in op.results:
            assert "fusion.roles" in op.attributes
            assert roles_of(result) == op.attributes["fusion.roles"].roles  # type: ignore
    assert str(propagate(lowered)) == str(lowered)


def test_the_pass_leaves_the_fusion_alone():
    f = Fusion("untouched")
    a = f.input("a", [16, 32], "bf16")
    b = f.input("b", [32, 8], "bf16")
    f.output(f.matmul(a, b))
    before = str(f)
    propagate(f)
    assert str(f) == before


def test_two_contractions_with_different_m_is_an_error():
    f = Fusion("two_m")
    a = f.input("a", [64, 32], "bf16")
    c = f.input("c", [16, 32], "bf16")
    w = f.input("w", [128, 32], "bf16")
    f.output(f.linear(a, w))
    z = f.output(f.linear(c, w))
    with pytest.raises(FusionError, match="M is 16 here, but the iteration space has m = 64"):
        propagate(f)
    with pytest.raises(FusionError, match="M is 16 here"):
        roles_of(z)


def test_operand_fitting_neither_m_nor_n_is_an_error():
    f = Fusion("neither")
    a = f.input("a", [64, 32], "bf16")
    w = f.input("w", [128, 32], "bf16")
    t = f.input("t", [64, 100], "f32")
    f.output(f.linear(a, w))
    f.output(f.relu(t))
    with pytest.raises(FusionError, match=r"axis 1 \(extent 100\) fits no axis of the iteration"):
        propagate(f)


def test_chained_contraction_is_an_error():
    f = Fusion("chained")
    a = f.input("a", [32, 32], "f32")
    w = f.input("w", [32, 32], "f32")
    f.output(f.linear(f.linear(a, w), w))
    with pytest.raises(FusionError, match="operand 'a': axis 1 needs role k here, but has role n"):
        propagate(f)


def test_roles_of_rejects_what_is_not_a_tensor_value():
    with pytest.raises(
        FusionError, match="expected an xDSL SSAValue or an mmcomp Value, found int"
    ):
        roles_of(3)  # type: ignore[arg-type]


def test_propagate_rejects_what_is_not_a_fusion():
    with pytest.raises(FusionError, match="expected a Fusion or a builtin.module, found str"):
        propagate("module")  # type: ignore[arg-type]


def test_linear_with_an_f32_bias_lowers_without_a_cast():
    f = Fusion("f32_bias")
    a = f.input("a", [16, 32], "f32")
    w = f.input("w", [8, 32], "f32")
    bias = f.input("bias", [8], "f32")
    f.output(f.linear(a, w, bias))
    func = _func(propagate(f))
    names = [op.name for op in func.body.block.ops]
    assert names == ["fusion.mma", "fusion.broadcast", "fusion.add", "func.return"]
    mapping = infer_axis_mapping(func)
    assert [c.op.name for c in mapping.contractions] == ["fusion.mma"]
    assert mapping.space == {"m": 16, "n": 8, "k": 32}
    assert mapping.roles[func.body.block.args[2]] == ("n",)


def test_axes_by_role_skips_absent_axes():
    assert axes_by_role(("m", "_", "k")) == {"m": 0, "k": 2}
    assert axes_by_role(("b0", "k", "n")) == {"b0": 0, "k": 1, "n": 2}


def test_fused_multiply_sum_with_n_before_m_keeps_the_result_layout():
    f = Fusion("n_before_m")
    a = f.input("a", [1, 8, 16], "f32")
    b = f.input("b", [4, 1, 16], "f32")
    s = f.output(f.fused_multiply_sum(a, b, 2))
    assert (roles_of(a), roles_of(b), roles_of(s)) == (("_", "m", "k"), ("n", "_", "k"), ("n", "m"))
    assert iteration_space(f.func) == {"m": 8, "n": 4, "k": 16}
