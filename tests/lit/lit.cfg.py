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
for name in ("HOME", "MMCOMP_CACHE_DIR", "CUDA_HOME"):
    if name in os.environ:
        config.environment[name] = os.environ[name]  # noqa: F821
if shutil.which("ptxas", path=config.environment["PATH"]) or os.environ.get("CUDA_HOME"):  # noqa: F821
    config.available_features.add("ptxas")  # noqa: F821
