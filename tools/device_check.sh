#!/usr/bin/env bash
# The device run: installs the carried wheels, then runs every gpu-marked test, the
# racecheck of the GEMM proof and the timing script, writing logs under $OUT.
# Usage (through the device tool, carrying .whl): bash tools/device_check.sh [pytest -k expr]
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
{
  date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
  python3 -c "import torch, numpy, ml_dtypes, cuda.bindings, xdsl; print('torch', torch.__version__, 'numpy', numpy.__version__, 'ml_dtypes', ml_dtypes.__version__, 'cuda-bindings', cuda.bindings.__version__)"
  which ptxas nvdisasm; ptxas --version | tail -1
} 2>&1 | tee "$OUT/env.txt"
sel=${1:-}
python3 -m pytest -m gpu -v -rs tests/unit ${sel:+-k "$sel"} 2>&1 | tee "$OUT/gpu-tests.txt"
if [ -f tests/unit/test_gemm_gpu.py ]; then
  timeout 300 compute-sanitizer --tool racecheck --print-limit 20 \
    python3 -m pytest -x -q tests/unit/test_gemm_gpu.py -k "1024" 2>&1 | tee "$OUT/racecheck.txt" | tail -15
fi
if [ -f tools/proof_gemm.py ]; then
  python3 tools/proof_gemm.py 2>&1 | tee "$OUT/proof-gemm.txt"
fi
