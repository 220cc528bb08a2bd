"""The README's Python examples run as written (on the CPU: the interp back end, and the cuda
back end's compile checked by ptxas; the GPU launch runs only where an sm_90 GPU is present).

The ```python blocks of README.md run in order in one namespace, as a reader who follows the
README does; the PyTorch block runs where torch is installed.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"
BLOCK = re.compile(r"^```python\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def python_blocks() -> list[str]:
    """The README's Python code blocks, in order."""
    return BLOCK.findall(README.read_text())


def uses_torch(block: str) -> bool:
    """Whether `block` imports torch (the `torch` extra)."""
    return re.search(r"^import torch\b", block, re.MULTILINE) is not None


def run(block: str, namespace: dict[str, Any], index: int) -> None:
    """Execute one README block in `namespace`."""
    exec(compile(block, f"README.md python block {index}", "exec"), namespace)


@pytest.fixture(scope="module")
def namespace() -> dict[str, Any]:
    """The namespace after every block that needs no torch."""
    found: dict[str, Any] = {"__name__": "readme"}
    for index, block in enumerate(python_blocks()):
        if not uses_torch(block):
            run(block, found, index)
    return found


def test_the_readme_has_a_python_api_example_and_a_torch_one() -> None:
    blocks = python_blocks()
    assert any("mmcomp.compile(f" in b and 'backend="interp"' in b for b in blocks)
    assert any(uses_torch(b) for b in blocks)


def test_python_api_examples_run(namespace: dict[str, Any]) -> None:
    import numpy as np

    outs, refs = namespace["outs"], namespace["refs"]
    assert len(outs) == len(refs) == 2
    for out, ref in zip(outs, refs, strict=True):
        error = np.abs(out.astype(np.float64) - ref.astype(np.float64)).max()
        assert error <= 1e-2 * np.abs(ref.astype(np.float64)).max()
    assert ".visible .entry epilogue_silu(" in namespace["kernel"].ptx


def test_pytorch_example_runs(namespace: dict[str, Any]) -> None:
    pytest.importorskip("torch")
    for index, block in enumerate(python_blocks()):
        if uses_torch(block):
            run(block, namespace, index)
    out, x = namespace["out"], namespace["x"]
    assert tuple(out.shape) == (x.shape[0], namespace["N"])
