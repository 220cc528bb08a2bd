#!/usr/bin/env bash
# The device run of stream-K: the GPU tests (tests/unit/test_stream_k_gpu.py: every family on
# ragged shapes, dynamic M, float64 reference with poisoned outputs, repeated runs bit for
# bit), compute-sanitizer racecheck and synccheck on one stream-K kernel (hybrid_small: 12
# tiles of 16 K blocks on 132 CTAs, every tile split over 11 CTAs), then the timing sweep of
# data-parallel, stream-K and the hybrid against cuBLAS, interleaved (tools/sweep_schedules.py
# --grid stream-k). Logs under $OUT. Through the device tool, carrying .whl, in two calls
# (each fits the 10-minute limit of one):
#   STEPS=tests bash tools/stream_k_check.sh
#   STEPS=sweep bash tools/stream_k_check.sh
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 MMCOMP_CACHE_DIR=/tmp/mmcomp-cache-stream-k
export PATH=/usr/local/cuda/bin:$PATH
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv > "$OUT/device.txt" 2>&1
python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)" \
  >> "$OUT/device.txt" 2>&1
ptxas --version | tail -1 >> "$OUT/device.txt"
steps=${STEPS:-tests sweep}
sanitize() {  # tool
  timeout 240 compute-sanitizer --tool "$1" python3 tests/unit/test_stream_k_gpu.py hybrid_small \
    > "/tmp/sanitizer-$1.txt" 2>&1
  echo "$1 (rc $?): $(grep -E 'SUMMARY' "/tmp/sanitizer-$1.txt" | tail -1)"
  grep -E -m 5 -A 3 "Race|Hazard|Barrier|Invalid" "/tmp/sanitizer-$1.txt"
}
if [[ " $steps " == *" tests "* ]]; then
  (sanitize racecheck; sanitize synccheck) > "$OUT/sanitizers.txt" 2>&1 &
  jobs=$(python3 -c "import xdist" 2>/dev/null && echo "-n 8")
  timeout "${TEST_TIMEOUT:-420}" python3 -m pytest -q $jobs -p no:cacheprovider \
    tests/unit/test_stream_k_gpu.py > "$OUT/gpu_tests.txt" 2>&1
  echo "gpu tests rc $?"; tail -15 "$OUT/gpu_tests.txt"
  wait
  cat "$OUT/sanitizers.txt"
fi
[[ " $steps " == *" sweep "* ]] || exit 0
timeout "${SWEEP_TIMEOUT:-420}" python3 tools/sweep_schedules.py --grid stream-k --jobs 14 \
  --rounds "${ROUNDS:-7}" --out "$OUT/sweep" --shapes ${SHAPES:-8192x14336x4096 4096x4096x4096 \
  8192x8192x8192 8192x4096x14336 4096x14336x5120 2048x2048x2048 64x4096x14336} \
  > "$OUT/sweep.log" 2>&1
echo "sweep rc $?"; cat "$OUT/sweep/summary.md" 2>/dev/null || tail -30 "$OUT/sweep.log"
