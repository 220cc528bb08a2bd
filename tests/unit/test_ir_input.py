"""IR handed to mmcomp.parse / mmcomp.compile: text, or the path of a .mlir file; an empty or
unbalanced input is refused saying where and what was expected."""

from __future__ import annotations

from pathlib import Path

import pytest

import mmcomp
from mmcomp.errors import FusionError

TEXT = """\
func.func @lin(%a: tensor<64x32xbf16>, %w: tensor<48x32xbf16>) -> tensor<64x48xf32> {
  %0 = fusion.linear %a, %w : (tensor<64x32xbf16>, tensor<48x32xbf16>) -> tensor<64x48xf32>
  func.return %0 : tensor<64x48xf32>
}
"""
BRACE = len(TEXT.splitlines()[0])
"""The column of the function body's '{'."""

BAD_SHAPE = """\
func.func @k(%a: tensor<16x32xbf16>, %b: tensor<64x8xbf16>) -> tensor<16x8xf32> {
  %0 = fusion.matmul %a, %b : (tensor<16x32xbf16>, tensor<64x8xbf16>) -> tensor<16x8xf32>
  func.return %0 : tensor<16x8xf32>
}
"""


def test_parse_and_compile_take_a_path(tmp_path: Path):
    path = tmp_path / "lin.mlir"
    path.write_text(TEXT)
    for source in (str(path), path):
        assert str(mmcomp.parse(source)) == str(mmcomp.parse(TEXT))
    kernel = mmcomp.compile(str(path), backend="interp")
    assert kernel.params == mmcomp.compile(TEXT, backend="interp").params


def test_a_verifier_error_in_a_file_names_the_file(tmp_path: Path):
    path = tmp_path / "bad.mlir"
    path.write_text(BAD_SHAPE)
    with pytest.raises(
        FusionError, match=rf"^mmcomp.parse: {path}:2:8: error: fusion.matmul: operand 'b'"
    ):
        mmcomp.parse(path)
    with pytest.raises(
        FusionError, match=r"^mmcomp.parse: <fusion>:2:8: error: fusion.matmul: operand 'b'"
    ):
        mmcomp.parse(BAD_SHAPE)


def test_a_path_that_cannot_be_read_says_so(tmp_path: Path):
    missing = tmp_path / "absent.mlir"
    with pytest.raises(FusionError) as raised:
        mmcomp.compile(str(missing))
    message = str(raised.value)
    assert f"cannot read the file '{missing}': No such file or directory" in message
    assert "a str of one line without '{', '@', '%', '=' or '(' is read as a path" in message


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        ("", "<fusion>:1:1", "the input holds no operation: expected a func.func"),
        ("\n// nothing here\n", "<fusion>:3:1", "the input holds no operation"),
        (TEXT.rsplit("}", 1)[0], f"<fusion>:1:{BRACE}", "this '{' is never closed"),
        (TEXT + "}", "<fusion>:5:1", "unmatched '}': no region is open here"),
    ],
)
def test_empty_or_unbalanced_text_says_what_was_expected(text: str, where: str, message: str):
    with pytest.raises(FusionError) as raised:
        mmcomp.parse(text)
    assert str(raised.value).startswith(f"mmcomp.parse: {where}\n")
    assert message in str(raised.value)
    assert "Could not parse entire input" not in str(raised.value)


def test_other_parse_errors_keep_xdsls_message():
    text = TEXT.replace("%a, %w :", "%a, %w")
    with pytest.raises(FusionError, match=r"<fusion>:2:29\n.*\n.*\n *Expected ':'"):
        mmcomp.parse(text)
