"""Resumed IR: the stored `fusion.space` and `fusion.roles` must be those the IR gives.

A printed stage is enough to resume from, so the passes that read the annotations of
propagate-axis-mapping (itself run again, choose-schedule, tile-split and the schedule
passes after it) derive them again from the tensor types and fusion ops and refuse one that
differs, naming the function, the attribute, the argument or op, and both values. An empty
fusion, an empty module and a module of two fusions are refused with what was expected.
"""

from __future__ import annotations

import re
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.parser import Parser
from xdsl.utils.exceptions import DiagnosticException, VerifyException

import mmcomp
from mmcomp.analysis.roles import check_annotations
from mmcomp.dialects.fusion import IterationSpaceAttr
from mmcomp.dialects.ptx.target import emit_ptx
from mmcomp.dialects.sched import PARAMS_ATTR, ScheduleParams, ScheduleParamsAttr
from mmcomp.errors import FusionError
from mmcomp.ir.diagnostics import LocatingParser
from mmcomp.ir.registry import PASSES, context
from mmcomp.passes.choose_schedule import ChooseSchedule
from mmcomp.passes.compile_to_ptx import CompileToPtx
from mmcomp.passes.materialize_schedule import MaterializeSchedule
from mmcomp.passes.propagate_axis_mapping import PropagateAxisMapping, propagate
from mmcomp.passes.tile_merge import TileMerge
from mmcomp.passes.tile_split import TileSplit

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

A_ROLES = "%a: tensor<97x257xbf16> {fusion.roles = #fusion.roles<[m, k]>}"
ROW_ROLES = "%row: tensor<1x131xbf16> {fusion.roles = #fusion.roles<[_, n]>}"
COL_ROLES = "%col: tensor<97x1xf32> {fusion.roles = #fusion.roles<[m, _]>}"
SPACE = "#fusion.space<m = 97, n = 131, k = 257>"


def linear() -> mmcomp.Fusion:
    """A 97x131x257 linear with a bf16 output."""
    f = mmcomp.Fusion("linear")
    a = f.input("a", [97, 257], "bf16")
    w = f.input("w", [131, 257], "bf16")
    f.output(f.cast(f.linear(a, w), "bf16"))
    return f


def epilogue() -> mmcomp.Fusion:
    """The linear times a row [1, N], plus a column [M, 1]."""
    f = mmcomp.Fusion("epilogue")
    a = f.input("a", [97, 257], "bf16")
    w = f.input("w", [131, 257], "bf16")
    row = f.input("row", [1, 131], "bf16")
    col = f.input("col", [97, 1], "f32")
    f.output(f.cast(f.linear(a, w) * row + col, "bf16"))
    return f


def annotated(fusion: mmcomp.Fusion) -> str:
    """The fusion's IR after propagate-axis-mapping, as printed."""
    return str(propagate(fusion))


def edited(text: str, old: str, new: str) -> str:
    """`text` with its one `old` replaced by `new`."""
    assert text.count(old) == 1, old
    return text.replace(old, new)


def parse(text: str) -> ModuleOp:
    module = Parser(context(), text).parse_module()
    module.verify()
    return module


def run(module: ModuleOp, *passes: str) -> ModuleOp:
    for name in passes:
        pass_ = ChooseSchedule(backend="interp") if name == "choose-schedule" else PASSES[name]()()
        pass_.apply(context(), module)
    return module


def with_params(text: str) -> str:
    """The annotated IR with a complete `#sched.params` written on the function."""
    module = parse(text)
    function = next(iter(module.ops))
    params = ScheduleParams.build({"tile": (64, 64, 64)})
    function.attributes[PARAMS_ATTR] = ScheduleParamsAttr(params)
    return str(module)


SPACE_EDITS = [
    (
        "k = 257>",
        "k = 64>",
        "k = 64",
        "k = 257 from fusion.mma operand 'a' (%a: tensor<97x257xbf16>)",
    ),
    ("k = 257>", "k = 300>", "k = 300", "k = 257 from fusion.mma operand 'a'"),
    (
        "m = 97,",
        "m = 50,",
        "m = 50",
        "m = 97 from fusion.mma operand 'a' (%a: tensor<97x257xbf16>)",
    ),
    ("m = 97,", "m = 200,", "m = 200", "m = 97 from fusion.mma operand 'a'"),
    (
        "n = 131,",
        "n = 64,",
        "n = 64",
        "n = 131 from fusion.mma operand 'b' (%w: tensor<131x257xbf16>)",
    ),
    ("<m = 97,", "<b0 = 2, m = 97,", "b0 = 2", "they have no axis b0: m = 97, n = 131, k = 257"),
]


@pytest.mark.parametrize("backend", ["cuda", "interp"])
@pytest.mark.parametrize(("old", "new", "written", "derived"), SPACE_EDITS)
def test_choose_schedule_refuses_a_space_that_contradicts_the_operands(
    old: str, new: str, written: str, derived: str, backend: str
):
    text = edited(annotated(linear()), SPACE, SPACE.replace(old, new))
    module = parse(text)
    with pytest.raises(DiagnosticException) as caught:
        ChooseSchedule(backend=backend).apply(context(), module)
    message = str(caught.value)
    assert message.startswith(f"choose-schedule: @linear: fusion.space {written} disagrees ")
    assert f"({derived}" in message


def test_the_cpu_executor_path_refuses_the_space_too():
    """mmcomp.compile of resumed text runs propagate-axis-mapping again, which refuses it."""
    text = edited(annotated(linear()), SPACE, SPACE.replace("k = 257", "k = 64"))
    with pytest.raises(FusionError, match=r"@linear: fusion\.space k = 64 disagrees .*k = 257"):
        mmcomp.compile(text, backend="interp")


def test_a_missing_space_axis_is_named():
    text = edited(annotated(linear()), SPACE, "#fusion.space<m = 97, n = 131>")
    with pytest.raises(DiagnosticException, match=r"fusion\.space has no axis k, which the oper"):
        run(parse(text), "choose-schedule")


def test_a_dynamic_extent_written_static_is_refused():
    f = mmcomp.Fusion("dyn")
    a = f.input("a", ("m", 64), "bf16")
    w = f.input("w", [32, 64], "bf16")
    f.output(f.linear(a, w))
    text = edited(annotated(f), "m = ?", "m = 64")
    with pytest.raises(
        DiagnosticException, match=r"fusion\.space m = 64 disagrees .*\(m = \? from"
    ):
        run(parse(text), "choose-schedule")


def test_an_axis_no_operand_has_is_named():
    f = mmcomp.Fusion("dot")
    a = f.input("a", [4, 64], "bf16")
    b = f.input("b", [4, 64], "bf16")
    f.output(f.fused_multiply_sum(a, b, [1]))
    text = edited(annotated(f), "m = 1,", "m = 8,")
    with pytest.raises(
        DiagnosticException,
        match=r"fusion\.space m = 8 disagrees with the operands \(m = 1, as no contraction "
        r"operand has an axis m\)",
    ):
        run(parse(text), "choose-schedule")


def test_tile_split_refuses_a_space_that_contradicts_the_operands():
    text = with_params(annotated(linear()))
    text = edited(text, SPACE, SPACE.replace("k = 257", "k = 64"))
    with pytest.raises(DiagnosticException) as caught:
        run(parse(text), "tile-split")
    assert str(caught.value) == (
        "tile-split: @linear: fusion.space k = 64 disagrees with the operands "
        "(k = 257 from fusion.mma operand 'a' (%a: tensor<97x257xbf16>))"
    )


@pytest.mark.parametrize(
    "name", ["tile-merge", "split-k", "insert-persistent-loop", "materialize-schedule"]
)
def test_the_schedule_passes_refuse_a_space_edited_after_tile_split(name: str):
    split = str(run(parse(with_params(annotated(linear()))), "tile-split"))
    text = edited(split, SPACE, SPACE.replace("n = 131", "n = 64"))
    with pytest.raises(DiagnosticException, match=rf"^{name}: @linear: fusion\.space n = 64 disa"):
        run(parse(text), name)


SCHEDULED = """
func.func @f(%a: tensor<300x200xbf16> {fusion.roles = #fusion.roles<[m, k]>},
             %w: tensor<500x200xbf16> {fusion.roles = #fusion.roles<[n, k]>})
    -> tensor<300x500xf32>
    attributes {fusion.space = #fusion.space<m = 300, n = 500, k = 200>} {
  sched.schedule params #sched.params<tile = 128x128x64> {
    %m, %n, %k = sched.space m = 300, n = 500, k = 128
    %m_tile, %m_cta = sched.split %m by 128 : !sched.axis<300>
    %n_tile, %n_cta = sched.split %n by 128 : !sched.axis<500>
    %k_blk, %k_cta = sched.split %k by 64 : !sched.axis<128>
  }
  %y = fusion.mma %a [m, k], %w [n, k] -> [m, n] {fusion.roles = #fusion.roles<[m, n]>}
      : (tensor<300x200xbf16>, tensor<500x200xbf16>) -> tensor<300x500xf32>
  func.return %y : tensor<300x500xf32>
}
"""


def test_a_sched_space_that_contradicts_the_operands_is_refused():
    with pytest.raises(DiagnosticException) as caught:
        TileMerge().apply(context(), parse(SCHEDULED))
    assert str(caught.value) == (
        "tile-merge: @f: sched.space k = 128 disagrees with the operands "
        "(k = 200 from fusion.mma operand 'a' (%a: tensor<300x200xbf16>))"
    )


ROLE_EDITS = [
    (ROW_ROLES, "[_, n]", "[_, m]", "argument #2 (%row: tensor<1x131xbf16>)"),
    (COL_ROLES, "[m, _]", "[n, _]", "argument #3 (%col: tensor<97x1xf32>)"),
    (COL_ROLES, "[m, _]", "[b3, _]", "argument #3 (%col: tensor<97x1xf32>)"),
    (A_ROLES, "[m, k]", "[k, m]", "argument #0 (%a: tensor<97x257xbf16>)"),
]


@pytest.mark.parametrize(("arg", "right", "wrong", "what"), ROLE_EDITS)
def test_choose_schedule_refuses_argument_roles_that_contradict_the_ir(
    arg: str, right: str, wrong: str, what: str
):
    text = edited(annotated(epilogue()), arg, arg.replace(right, wrong))
    with pytest.raises(DiagnosticException) as caught:
        run(parse(text), "choose-schedule")
    assert str(caught.value) == (
        f"choose-schedule: @epilogue: {what}: fusion.roles {wrong} but propagate-axis-mapping "
        f"derives {right}"
    )


def test_op_roles_that_contradict_the_ir_are_refused_at_the_op():
    text = edited(
        annotated(epilogue()),
        "%1 = fusion.cast %row {fusion.roles = #fusion.roles<[_, n]>}",
        "%1 = fusion.cast %row {fusion.roles = #fusion.roles<[_, m]>}",
    )
    module = LocatingParser(context(), text, "resumed.mlir").parse_module()
    with pytest.raises(DiagnosticException) as caught:
        run(module, "choose-schedule")
    assert str(caught.value) == (
        "resumed.mlir:4:10: error: choose-schedule: @epilogue: fusion.cast (op #1 of the body): "
        "fusion.roles [_, m] but propagate-axis-mapping derives [_, n]"
    )


def test_missing_roles_are_refused_by_choose_schedule():
    text = edited(annotated(epilogue()), ROW_ROLES, "%row: tensor<1x131xbf16>")
    with pytest.raises(
        DiagnosticException,
        match=re.escape(
            "choose-schedule: @epilogue: argument #2 (%row: tensor<1x131xbf16>): no fusion.roles, "
            "but propagate-axis-mapping derives [_, n]"
        ),
    ):
        run(parse(text), "choose-schedule")


def test_tile_split_and_materialize_refuse_edited_roles():
    text = edited(
        with_params(annotated(epilogue())), ROW_ROLES, ROW_ROLES.replace("[_, n]", "[_, m]")
    )
    with pytest.raises(DiagnosticException, match=r"^tile-split: @epilogue: argument #2 \(%row"):
        TileSplit().apply(context(), parse(text))
    split = str(run(parse(with_params(annotated(epilogue()))), "tile-split", "tile-merge"))
    text = edited(split, ROW_ROLES, ROW_ROLES.replace("[_, n]", "[_, m]"))
    with pytest.raises(DiagnosticException, match=r"^materialize-schedule: @epilogue: argument #2"):
        MaterializeSchedule().apply(context(), parse(text))


def test_propagate_again_refuses_edited_roles_and_keeps_right_ones():
    text = annotated(epilogue())
    assert str(propagate(parse(text))) == str(parse(text))
    wrong = edited(text, ROW_ROLES, ROW_ROLES.replace("[_, n]", "[_, m]"))
    with pytest.raises(FusionError, match=r"propagate-axis-mapping: @epilogue: argument #2 "):
        propagate(parse(wrong))


def test_check_annotations_returns_the_mapping_it_derives():
    module = parse(annotated(epilogue()))
    function = next(iter(module.ops))
    assert isinstance(function, FuncOp)
    mapping = check_annotations(function, complete=True)
    assert mapping.space == {"m": 97, "n": 131, "k": 257}
    assert isinstance(function.attributes["fusion.space"], IterationSpaceAttr)


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.mlir")), ids=lambda path: path.stem)
def test_every_example_resumes_from_each_annotated_stage(path: Path):
    """Annotations written by the passes are accepted on resumption, stage by stage."""
    stages = ["propagate-axis-mapping", "choose-schedule", "tile-split", "tile-merge", "split-k"]
    stages += ["insert-persistent-loop", "materialize-schedule"]
    text = path.read_text()
    for name in stages:
        text = str(run(parse(text), name))
    assert "sched.grid" in text


def test_a_resumed_stage_still_computes_the_fusion():
    fusion = epilogue()
    kernel = mmcomp.compile(annotated(fusion), backend="interp", tile=(64, 64, 64))
    rng = np.random.default_rng(0)
    inputs = [
        rng.standard_normal((97, 257)).astype(ml_dtypes.bfloat16),
        rng.standard_normal((131, 257)).astype(ml_dtypes.bfloat16),
        rng.standard_normal((1, 131)).astype(ml_dtypes.bfloat16),
        rng.standard_normal((97, 1)).astype(np.float32),
    ]
    (found,) = kernel(*inputs)
    (expected,) = mmcomp.reference(fusion, *inputs)
    np.testing.assert_allclose(
        found.astype(np.float32), expected.astype(np.float32), rtol=2e-2, atol=2e-2
    )


@pytest.mark.parametrize("backend", ["interp", "cuda"])
def test_an_empty_fusion_is_refused_for_its_missing_outputs(backend: str):
    f = mmcomp.Fusion("x")
    f.input("a", [4, 8], "bf16")
    with pytest.raises(FusionError, match=r"func\.func @x: expected at least one output"):
        mmcomp.compile(f, backend=backend)


def test_a_fusion_with_nothing_in_it_is_refused():
    with pytest.raises(FusionError, match=r"compile: func\.func @x: expected a fusion \(inputs, a"):
        mmcomp.compile(mmcomp.Fusion("x"), backend="interp")


def test_an_empty_function_is_refused_by_propagate_axis_mapping():
    module = parse("func.func @f(%a: tensor<4x8xbf16>) {\n  func.return\n}")
    with pytest.raises(VerifyException, match=r"func\.func @f: expected at least one output"):
        PropagateAxisMapping().apply(context(), module)


def test_compile_to_ptx_refuses_an_empty_module():
    with pytest.raises(
        DiagnosticException,
        match=re.escape(
            "compile-to-ptx: expected one fusion func.func (fusion ops on tensors), found none "
            "(the module holds nothing)"
        ),
    ):
        CompileToPtx().apply(context(), ModuleOp([]))


PLAIN = """
func.func @plain(%x: tensor<4xf32>) -> tensor<4xf32> {
  func.return %x : tensor<4xf32>
}
"""


def test_compile_to_ptx_refuses_a_module_of_plain_functions():
    module = parse(PLAIN)
    with pytest.raises(
        DiagnosticException,
        match=r"found none \(the module holds only functions without fusion ops: @plain\)",
    ):
        CompileToPtx().apply(context(), module)


def test_compile_to_ptx_refuses_two_fusions_before_compiling_them():
    text = annotated(linear())
    second = text.replace("@linear", "@other")
    module = parse(text)
    other = next(iter(parse(second).ops))
    other.detach()
    module.body.block.add_op(other)
    with pytest.raises(
        DiagnosticException, match=r"expected one fusion func\.func, found 2 \(@linear, @other\)"
    ):
        CompileToPtx().apply(context(), module)
    assert "sched.params" not in str(module)


def test_ptx_emission_names_what_it_found():
    with pytest.raises(DiagnosticException, match=r"found 0: the ptx target prints one kernel"):
        emit_ptx(ModuleOp([]))
