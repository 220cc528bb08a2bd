"""Finding the CUDA tools (ptxas, nvdisasm): PATH, then $CUDA_HOME/bin, then a wheel.

Apart from mmcomp.arch.ptxas so that the compile cache can name the ptxas its kernels
depend on without importing what assembling needs.
"""

from __future__ import annotations

import os
import shutil
import sys
import sysconfig
from pathlib import Path


def _wheel_tool(name: str) -> Path | None:
    roots = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    roots.update(p for p in sys.path if p.endswith("site-packages"))
    for root in roots:
        for sub in ("cu13", "cu12", "cuda_nvcc", "cuda_nvdisasm"):
            candidate = Path(root) / "nvidia" / sub / "bin" / name
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return candidate
    return None


def find_tool(name: str) -> Path | None:
    """Find a CUDA tool (`ptxas`, `nvdisasm`): PATH, then $CUDA_HOME/bin, then a wheel."""
    on_path = shutil.which(name)
    if on_path:
        return Path(on_path)
    cuda_home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    if cuda_home:
        candidate = Path(cuda_home) / "bin" / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    return _wheel_tool(name)
