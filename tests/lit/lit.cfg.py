# lit configuration for mmcomp's FileCheck tests. It runs against the installed package:
# `mmcomp-opt` and `filecheck` come from the environment's PATH.
import os
import shutil
import sys

import lit.formats

config.name = "mmcomp"  # noqa: F821
config.test_format = lit.formats.ShTest(preamble_commands=[])  # noqa: F821
config.suffixes = [".mlir"]  # noqa: F821
config.test_source_root = os.path.dirname(__file__)  # noqa: F821
config.excludes = ["lit.cfg.py", "Output"]  # noqa: F821

bin_dir = os.path.dirname(sys.executable)
config.environment["PATH"] = os.pathsep.join(  # noqa: F821
    [bin_dir, os.environ.get("PATH", "")]
)
for name in ("HOME", "MMCOMP_CACHE_DIR", "CUDA_HOME", "PYTHONPATH"):
    if name in os.environ:
        config.environment[name] = os.environ[name]  # noqa: F821
# `ptxas` is available when mmcomp can find one: PATH, $CUDA_HOME/bin or the
# nvidia-cuda-nvcc wheel of the dev extra (mmcomp.arch.ptxas.find_tool).
try:
    from mmcomp.arch.ptxas import find_tool

    ptxas = find_tool("ptxas")
except ImportError:
    ptxas = shutil.which("ptxas", path=config.environment["PATH"])  # noqa: F821
if ptxas:
    config.available_features.add("ptxas")  # noqa: F821
