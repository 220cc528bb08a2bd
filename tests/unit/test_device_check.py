"""tools/device_check.sh on a machine where mmcomp's pure-Python dependencies do not import
and no wheels were brought along: it tries tools/device_wheels.sh, and where that cannot
download (no network, no pip) it stops before any GPU step and says how to make them."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_device_check_says_how_to_make_the_wheels(tmp_path: Path):
    for name in ("tools/device_check.sh", "tools/device_wheels.sh", "pyproject.toml"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        shutil.copy(ROOT / name, tmp_path / name)
    shims = tmp_path / "shims"
    shims.mkdir()
    python3 = shims / "python3"  # this Python without site-packages: no xdsl, no pip
    python3.write_text(f'#!/bin/sh\nexec "{sys.executable}" -S "$@"\n')
    python3.chmod(0o755)
    result = subprocess.run(
        ["bash", "tools/device_check.sh"],
        cwd=tmp_path,
        env={"PATH": f"{shims}:/usr/bin:/bin", "HOME": str(tmp_path), "OUT": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1
    assert "running tools/device_wheels.sh" in result.stdout
    assert "run 'bash tools/device_wheels.sh' in the repository root" in result.stderr
    assert "bring .whl/ along" in result.stderr
    assert not (tmp_path / "env.txt").exists()  # stopped before the GPU steps
