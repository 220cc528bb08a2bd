"""The helpers shared by the dialects: syntax tails (syntax.py) and ptx/hopper checks."""

from __future__ import annotations

from io import StringIO

import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import Builtin, IntegerAttr, ModuleOp, i64
from xdsl.dialects.func import Func
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import ParseError, VerifyException

from mmcomp.dialects import fusion, hopper, ptx, sched
from mmcomp.dialects.ptx import check_below, check_choice, check_range, check_thread_count
from mmcomp.dialects.syntax import (
    parse_attributes_and_conversion,
    parse_attributes_and_type,
    parse_keyword_attributes,
    print_attributes_and_types,
    with_attributes,
)


def _context() -> Context:
    ctx = Context()
    for dialect in (Builtin, Func, fusion.Fusion, sched.Sched, ptx.PTX, hopper.Hopper):
        ctx.load_dialect(dialect)
    return ctx


def _print(op: ModuleOp) -> str:
    out = StringIO()
    Printer(stream=out).print_op(op)
    return out.getvalue()


# ---- syntax.py -----------------------------------------------------------------------


def test_parse_attributes_and_type():
    attributes, found = parse_attributes_and_type(Parser(_context(), "{x = 1 : i64} : f32"))
    assert attributes == {"x": IntegerAttr(1, i64)}
    assert str(found) == "f32"
    attributes, found = parse_attributes_and_type(Parser(_context(), ": tensor<2xf32>"))
    assert attributes == {}
    assert str(found) == "tensor<2xf32>"


def test_parse_attributes_and_type_needs_the_colon():
    with pytest.raises(ParseError, match="':'"):
        parse_attributes_and_type(Parser(_context(), "f32"))


def test_parse_attributes_and_conversion():
    parser = Parser(_context(), "{y} : tensor<4xf32> to tensor<4xbf16>")
    attributes, source, result = parse_attributes_and_conversion(parser)
    assert list(attributes) == ["y"]
    assert (str(source), str(result)) == ("tensor<4xf32>", "tensor<4xbf16>")


def test_parse_keyword_attributes():
    assert parse_keyword_attributes(Parser(_context(), "{}")) == {}
    parsed = parse_keyword_attributes(Parser(_context(), "attributes {z = 2 : i64} {}"))
    assert parsed == {"z": IntegerAttr(2, i64)}


def test_with_attributes_adds_to_the_op():
    op = ptx.RetOp()
    op.attributes["kept"] = IntegerAttr(1, i64)
    assert with_attributes(op, {"added": IntegerAttr(2, i64)}) is op
    assert set(op.attributes) == {"kept", "added"}


@pytest.mark.parametrize("delimiter", [", ", " to "])
def test_print_attributes_and_types(delimiter: str):
    op = ptx.RetOp()
    types = [ptx.U32, ptx.F32]
    out = StringIO()
    print_attributes_and_types(Printer(stream=out), op, types, delimiter)
    assert out.getvalue() == f" : !ptx.reg<u32>{delimiter}!ptx.reg<f32>"
    op.attributes["note"] = IntegerAttr(3, i64)
    out = StringIO()
    print_attributes_and_types(Printer(stream=out), op, types[:1])
    assert out.getvalue() == " {note = 3 : i64} : !ptx.reg<u32>"


ROUND_TRIPS = [
    # fusion ops whose tails the helpers read and write
    """func.func @f(%a: tensor<2x3xbf16>, %b: tensor<2x3xbf16>) {
  %0 = fusion.add %a, %b {tag} : tensor<2x3xbf16>
  %1 = fusion.gelu %0 approximate none : tensor<2x3xbf16>
  %2 = fusion.cast %1 {tag} : tensor<2x3xbf16> to tensor<2x3xf32>
  %3 = fusion.broadcast %2 new_dims [true, false, false] : tensor<2x3xf32> to tensor<4x2x3xf32>
  %4 = fusion.splat 1.5 {tag} : tensor<4x2x3xf32>
  func.return
}""",
]


@pytest.mark.parametrize("source", ROUND_TRIPS)
def test_round_trip(source: str):
    module = Parser(_context(), source).parse_module()
    module.verify()
    printed = _print(module)
    assert _print(Parser(_context(), printed).parse_module()) == printed
    assert "{tag}" in printed and "to tensor<4x2x3xf32>" in printed


# ---- ptx.py checks shared with hopper ---------------------------------------------------


def test_check_choice():
    op = ptx.RetOp()
    check_choice(op, "mode", "sync", ("sync", "arrive"))
    with pytest.raises(VerifyException, match=r"^ptx.ret: mode must be sync or arrive, found 'x'$"):
        check_choice(op, "mode", "x", ("sync", "arrive"))
    with pytest.raises(VerifyException, match=r"must be a, b or c, found 'd'$"):
        check_choice(op, "what", "d", ("a", "b", "c"))


def test_check_range():
    op = ptx.RetOp()
    check_range(op, "pending", 7, 0, 7)
    check_range(op, "count", 232, 24, 256, step=8)
    with pytest.raises(VerifyException, match=r"^ptx.ret: pending must be in \[0, 7\], found 8$"):
        check_range(op, "pending", 8, 0, 7)
    with pytest.raises(
        VerifyException, match=r"count must be a multiple of 8 in \[24, 256\], found 100$"
    ):
        check_range(op, "count", 100, 24, 256, step=8)


def test_check_below_and_thread_count():
    op = ptx.RetOp()
    check_below(op, "bytes", (1 << 20) - 1, 0, 1 << 20, "2^20")
    with pytest.raises(VerifyException, match=r"bytes must be in \[0, 2\^20\), found 1048576$"):
        check_below(op, "bytes", 1 << 20, 0, 1 << 20, "2^20")
    check_thread_count(op, 256)
    with pytest.raises(VerifyException, match="positive multiple of 32, found 100"):
        check_thread_count(op, 100)


@pytest.mark.parametrize(
    ("op", "message"),
    [
        (ptx.SetmaxnregOp("inc", 100), "ptx.setmaxnreg: count must be a multiple of 8"),
        (ptx.SetmaxnregOp("up", 232), "ptx.setmaxnreg: action must be inc or dec"),
        (ptx.WgmmaWaitOp(9), r"ptx.wgmma_wait: pending must be in \[0, 7\]"),
        (ptx.BulkWaitOp(64), r"ptx.bulk_wait: pending must be in \[0, 63\]"),
    ],
)
def test_shared_op_bases_check_with_the_op_name(op: ptx.PtxInstruction, message: str):
    with pytest.raises(VerifyException, match=message):
        op.verify()


def test_hopper_ops_have_no_ptx_text_of_their_own():
    assert ptx.WgmmaFenceOp().ptx_text(str) == "wgmma.fence.sync.aligned"
    assert not hasattr(hopper, "WgmmaFenceOp")  # the hopper level uses the ptx instruction
    with pytest.raises(Exception, match="run convert-hopper-to-ptx"):
        hopper.IdOp("thread.x").ptx_text(str)
