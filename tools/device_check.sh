#!/usr/bin/env bash
# The device run of the GPU claims: every gpu-marked test, compute-sanitizer on a persistent
# warp-specialized GEMM and on the horizontal fusion, and the main job; logs under $OUT.
# From the repository root, on a machine with an sm_90 GPU:
#   bash tools/device_check.sh [PYTEST_K_EXPRESSION]
# mmcomp's pure-Python dependencies (xDSL, filecheck, lit) come from where it runs if they
# import there; else from the wheels in .whl/ (made by tools/device_wheels.sh, which this
# script runs where .whl/ is empty; on a machine without network, run it elsewhere and take
# .whl/ along).
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 MMCOMP_CACHE_DIR=/tmp/mmcomp-cache
if ! python3 -c "import xdsl, filecheck, lit" 2>/dev/null; then
  if ! compgen -G ".whl/*.whl" > /dev/null; then
    echo "device_check: xDSL, filecheck or lit is not importable and .whl/ holds no wheels:" \
      "running tools/device_wheels.sh"
    if ! PIP_DOWNLOAD_OPTIONS="--retries 0 --timeout 10" bash tools/device_wheels.sh; then
      echo "device_check: could not download the wheels here (no network?). On a machine" \
        "that reaches PyPI, run 'bash tools/device_wheels.sh' in the repository root, then" \
        "bring .whl/ along to this one and run this script again." >&2
      exit 1
    fi
  fi
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl \
    || exit 1
  export PYTHONPATH=/tmp/site:$PYTHONPATH
fi
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
{
  date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
  python3 -c "import torch, numpy, ml_dtypes, cuda.bindings, xdsl; print('torch', torch.__version__, 'numpy', numpy.__version__, 'ml_dtypes', ml_dtypes.__version__, 'cuda-bindings', cuda.bindings.__version__, 'xdsl', xdsl.__version__ if hasattr(xdsl, '__version__') else '0.75.0')"
  ptxas --version | tail -1
} 2>&1 | tee "$OUT/env.txt"
sanitize() {  # tool case
  timeout 240 compute-sanitizer --tool "$1" python3 tests/unit/cases.py "$2" \
    > "$OUT/sanitizer-$1-$2.txt" 2>&1
  echo "$1 $2 (rc $?): $(grep -E 'SUMMARY' "$OUT/sanitizer-$1-$2.txt" | tail -1)"
}
(sanitize racecheck linear_ragged; sanitize synccheck linear_ragged) > "$OUT/sanitizer-a.txt" &
(sanitize racecheck horizontal_small; sanitize synccheck horizontal_small) > "$OUT/sanitizer-b.txt" &
python3 -m pytest -m gpu -n 6 -q -rs tests/unit ${1:+-k "$1"} 2>&1 | tee "$OUT/gpu-tests.txt" | tail -25
python3 -m mmcomp --gpu-shape 4096 4096 4096 2>&1 | tail -8 | tee "$OUT/main-job.txt"
wait
cat "$OUT"/sanitizer-a.txt "$OUT"/sanitizer-b.txt
