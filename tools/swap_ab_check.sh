#!/usr/bin/env bash
# The device run of swap-AB: its GPU tests (every family at ragged small M, dynamic M in
# every bucket) and the swapped cases of tests/unit/cases.py; compute-sanitizer racecheck
# and synccheck on one swapped kernel (silu*mul at M = 33 with split-K); then the decode
# rows timed interleaved against cuBLAS, the heuristic's schedule beside the swapped ones
# (tools/sweep_schedules.py --grid swap). Logs under $OUT. Through the device tool,
# carrying .whl:
#   bash tools/swap_ab_check.sh
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 MMCOMP_CACHE_DIR=/tmp/mmcomp-cache
export PATH=/usr/local/cuda/bin:$PATH
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
{
  date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
  python3 -c "import torch, numpy; print('torch', torch.__version__, 'CUDA', torch.version.cuda, 'numpy', numpy.__version__)"
  ptxas --version | tail -1
} 2>&1 | tee "$OUT/env.txt"
sanitize() {  # tool case
  timeout 240 compute-sanitizer --tool "$1" python3 tests/unit/cases.py "$2" \
    > "$OUT/sanitizer-$1-$2.txt" 2>&1
  echo "$1 $2 (rc $?): $(grep -E 'SUMMARY' "$OUT/sanitizer-$1-$2.txt" | tail -1)"
}
(sanitize racecheck swap_ab_silu_mul; sanitize synccheck swap_ab_silu_mul) > "$OUT/sanitizers.txt" &
python3 -m pytest -m gpu -n 6 -q -rs tests/unit/test_swap_ab_gpu.py tests/unit/test_cuda_gpu.py \
  -k "swap" 2>&1 | tee "$OUT/gpu-tests.txt" | tail -15
wait
cat "$OUT/sanitizers.txt"
python3 tools/sweep_schedules.py --grid swap --rounds "${ROUNDS:-5}" --jobs 14 \
  --out "$OUT/sweep" 2>&1 | tail -45 | tee "$OUT/sweep.txt"
