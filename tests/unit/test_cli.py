"""mmcomp-opt: parse errors with line and column, diagnostics, split input, -o, pass printing."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

GOOD = """\
func.func @f(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = fusion.relu %a : tensor<4x8xf32>
  func.return %0 : tensor<4x8xf32>
}
"""

MALFORMED = """\
func.func @f(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = fusion.relu %a tensor<4x8xf32>
  func.return %0 : tensor<4x8xf32>
}
"""

K_MISMATCH = """\
func.func @k(%a: tensor<16x32xbf16>, %b: tensor<64x8xbf16>) -> tensor<16x8xf32> {
  %0 = fusion.matmul %a, %b : (tensor<16x32xbf16>, tensor<64x8xbf16>) -> tensor<16x8xf32>
  func.return %0 : tensor<16x8xf32>
}
"""

BIAS_LENGTH = """\
func.func @bias(%a: tensor<16x32xbf16>, %w: tensor<8x32xbf16>, %c: tensor<9xbf16>)
    -> tensor<16x8xf32> {
  %0 = fusion.linear %a, %w, %c : (tensor<16x32xbf16>, tensor<8x32xbf16>, tensor<9xbf16>)
      -> tensor<16x8xf32>
  func.return %0 : tensor<16x8xf32>
}
"""


def mmcomp_opt(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run mmcomp-opt (the installed console script, else `python -m mmcomp.cli`)."""
    bin_dir = os.path.dirname(sys.executable)
    script = shutil.which("mmcomp-opt", path=bin_dir)
    command = [script] if script else [sys.executable, "-m", "mmcomp.cli"]
    return subprocess.run(
        [*command, *args], input=stdin, capture_output=True, text=True, timeout=120
    )


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_console_script_is_installed():
    assert shutil.which("mmcomp-opt", path=os.path.dirname(sys.executable)), (
        "the mmcomp-opt console script is not installed beside this Python"
    )
    result = mmcomp_opt("--help")
    assert result.returncode == 0
    assert "mmcomp" in result.stdout and "--split-input-file" in result.stdout


def test_malformed_file_gives_line_column_and_exit_1(tmp_path: Path):
    path = write(tmp_path, "bad.mlir", MALFORMED)
    result = mmcomp_opt(str(path))
    assert result.returncode == 1
    assert f"{path}:2:23" in result.stderr
    assert "Expected ':'" in result.stderr
    assert "Traceback" not in result.stderr + result.stdout


def test_malformed_stdin(tmp_path: Path):
    result = mmcomp_opt(stdin=MALFORMED)
    assert result.returncode == 1
    assert ":2:23" in result.stderr and "Traceback" not in result.stderr


def test_verifier_error_exits_1_without_traceback(tmp_path: Path):
    result = mmcomp_opt(str(write(tmp_path, "k.mlir", K_MISMATCH)))
    assert result.returncode == 1
    assert (
        "fusion.matmul: operand 'b': K extent (axis 0): expected 32 (the last axis of 'a'), "
        "found 64"
    ) in result.stderr
    assert "Traceback" not in result.stderr


def test_verify_diagnostics_with_split_input_file(tmp_path: Path):
    text = K_MISMATCH + "\n// -----\n" + BIAS_LENGTH + "\n// -----\n" + GOOD
    result = mmcomp_opt(
        str(write(tmp_path, "diag.mlir", text)), "--verify-diagnostics", "--split-input-file"
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    k_error = out.index("fusion.matmul: operand 'b': K extent")
    bias_error = out.index("fusion.linear: operand 'bias': expected shape [8] (N, the first")
    good = out.index("fusion.relu %a : tensor<4x8xf32>")
    assert k_error < bias_error < good
    assert out.count("// -----") == 2


def test_parsing_diagnostics_report_each_chunk(tmp_path: Path):
    text = MALFORMED + "// -----\n" + MALFORMED
    path = write(tmp_path, "parse.mlir", text)
    result = mmcomp_opt(str(path), "--parsing-diagnostics", "--split-input-file")
    assert result.returncode == 0
    assert f"{path}:2:23" in result.stdout
    assert f"{path}:7:23" in result.stdout  # line numbers count from the file's start


def test_output_file_round_trips(tmp_path: Path):
    first = tmp_path / "first.mlir"
    second = tmp_path / "second.mlir"
    source = EXAMPLES / "epilogue_silu.mlir"
    assert mmcomp_opt(str(source), "-o", str(first)).returncode == 0
    assert mmcomp_opt(str(first), "-o", str(second)).returncode == 0
    assert first.read_text() == second.read_text()
    assert "fusion.silu" in first.read_text()


def test_print_between_passes_and_pass_options(tmp_path: Path):
    path = write(tmp_path, "good.mlir", GOOD)
    result = mmcomp_opt(
        str(path),
        "-p",
        "approximate-math-with-bitcast{log=false exp=false},canonicalize,cse",
        "--print-between-passes",
    )
    assert result.returncode == 0, result.stderr
    assert "IR after approximate-math-with-bitcast:" in result.stdout
    assert "IR after canonicalize:" in result.stdout
    assert result.stdout.count("fusion.relu %a : tensor<4x8xf32>") == 3


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("-p", "no-such-pass"), "unknown pass 'no-such-pass'\nmmcomp's passes: "),
        (("-p", "canonicalize{bogus=1}"), 'Provided arguments ["bogus"] not found'),
    ],
)
def test_bad_pipelines(tmp_path: Path, args: tuple[str, ...], message: str):
    result = mmcomp_opt(str(write(tmp_path, "good.mlir", GOOD)), *args)
    assert result.returncode == 1
    assert message in result.stderr
    assert "Traceback" not in result.stderr


LINEAR = """\
func.func @f(%a: tensor<64x64xbf16>, %w: tensor<64x64xbf16>) -> tensor<64x64xf32> {
  %0 = fusion.linear %a, %w : (tensor<64x64xbf16>, tensor<64x64xbf16>) -> tensor<64x64xf32>
  func.return %0 : tensor<64x64xf32>
}
"""


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ("tile=0x0x0", "choose-schedule: option tile=(0, 0, 0): every extent must be positive"),
        ("schedule-m=0", "choose-schedule: option schedule_m: expected a positive int"),
        (
            "registers=40/232",
            'hint: quote an option value that holds such a character, e.g. registers="40/232"',
        ),
        ("tile=-128x128x64", "Malformed pass arguments"),
        ("tile=", "Unknown argument value"),
    ],
)
def test_bad_schedule_options(tmp_path: Path, options: str, message: str):
    """A bad option value, or one xDSL's pipeline syntax cannot hold, is one message."""
    pipeline = f"propagate-axis-mapping,choose-schedule{{{options}}}"
    result = mmcomp_opt(str(write(tmp_path, "linear.mlir", LINEAR)), "-p", pipeline)
    assert result.returncode == 1
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_quoted_registers_option(tmp_path: Path):
    pipeline = 'propagate-axis-mapping,choose-schedule{registers="40/232"}'
    result = mmcomp_opt(str(write(tmp_path, "linear.mlir", LINEAR)), "-p", pipeline)
    assert result.returncode == 0, result.stderr
    assert "registers = 40/232" in result.stdout


def test_missing_input_file(tmp_path: Path):
    result = mmcomp_opt(str(tmp_path / "absent.mlir"))
    assert result.returncode == 1
    assert "No such file or directory" in result.stderr
    assert "Traceback" not in result.stderr


def test_mmcomp_passes_are_registered():
    result = mmcomp_opt("--help")
    assert result.returncode == 0
    from mmcomp.ir.registry import PASSES

    assert "propagate-axis-mapping" in PASSES


def test_start_up_stays_lazy():
    """Importing the driver loads neither numpy nor any mmcomp dialect module."""
    code = (
        "import sys, mmcomp.cli\n"
        "heavy = [m for m in ('numpy', 'mmcomp.dialects.fusion', 'mmcomp.frontend.builder') "
        "if m in sys.modules]\n"
        "print(heavy)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def chain_fusion(op_count: int) -> str:
    """IR text of a linear followed by pointwise ops: `op_count` ops before the return."""
    import mmcomp

    f = mmcomp.Fusion("chain")
    a = f.input("a", [256, 128], "bf16")
    w = f.input("w", [512, 128], "bf16")
    t = f.input("t", [256, 512], "f32")
    y = f.linear(a, w)
    unary = (f.silu, f.relu, f.neg, f.exp, f.tanh, f.sigmoid)
    for index in range(op_count - 2):
        y = unary[index % len(unary)](y) if index % 2 else y * t
    f.output(f.cast(y, "bf16"))
    return str(f)


def test_two_thousand_op_file_round_trips(tmp_path: Path):
    text = chain_fusion(2000)
    assert text.count(" = fusion.") == 2000
    out = tmp_path / "out.mlir"
    result = mmcomp_opt(str(write(tmp_path, "chain.mlir", text)), "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert out.read_text().rstrip("\n") == text.rstrip("\n")


def test_the_example_refuses_an_empty_shape():
    """`python -m mmcomp --shape 0 0 0`: a usage error, no traceback."""
    result = subprocess.run(
        [sys.executable, "-m", "mmcomp", "--shape", "0", "5", "5"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2
    assert "--shape 0 5 5: M, N and K must be positive" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("pipeline", "guess"),
    [
        ("compile-to-pxt", "'compile-to-ptx'"),
        ("propagate-axis-mapping,choose-schedul{tile=128x128x64}", "'choose-schedule'"),
        ("tile-splt,tile-merge", "'tile-split'"),
    ],
)
def test_misspelled_pass_gets_the_nearest_names_and_the_list(
    tmp_path: Path, pipeline: str, guess: str
):
    from mmcomp.ir.registry import PASSES

    result = mmcomp_opt(str(write(tmp_path, "good.mlir", GOOD)), "-p", pipeline)
    assert result.returncode == 1
    assert f"; did you mean {guess}?" in result.stderr
    assert f"mmcomp's passes: {', '.join(PASSES)}" in result.stderr
    assert "Traceback" not in result.stderr


UNCLOSED = """func.func @f(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = fusion.relu %a : tensor<4x8xf32>
  func.return %0 : tensor<4x8xf32>
"""


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        ("", ":1:1", "the input holds no operation: expected a func.func"),
        ("// a comment\n\n", ":3:1", "the input holds no operation: expected a func.func"),
        (UNCLOSED, ":1:54", "this '{' is never closed: the input ends where its '}' was expected"),
        (GOOD + "}\n", ":5:1", "unmatched '}': no region is open here"),
    ],
)
def test_empty_or_unbalanced_file_says_what_was_expected(
    tmp_path: Path, text: str, where: str, message: str
):
    path = write(tmp_path, "broken.mlir", text)
    result = mmcomp_opt(str(path))
    assert result.returncode == 1
    assert f"{path}{where}" in result.stderr
    assert message in result.stderr
    assert "Could not parse entire input" not in result.stderr
    assert "Traceback" not in result.stderr
