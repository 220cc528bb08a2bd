#!/usr/bin/env bash
# The device run of the differential fuzzer: CASES (2000) cuda cases of SEED (1), and
# compute-sanitizer memcheck and racecheck on three ragged fuzzer cases of seed 1 (case 20:
# fused_multiply_sum 229 x 129 x 700, K not a multiple of 8, staged rows, split-K; case 27:
# horizontal 63 x 129 x 127, with a dynamic M; case 34: ping-pong 65 x 127 x 129 in a 2x1
# cluster; case 156: a linear 499 x 63 x 56 with a dynamic M, split-K 2 in a 2x1 cluster;
# SANITIZE_CASES overrides the list). Logs
# under $OUT; the sanitizers' own logs stay in /tmp, their summaries and first reports go to
# $OUT/sanitizers.txt. Through the device tool, carrying .whl:
#   bash tools/fuzz_check.sh
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 MMCOMP_CACHE_DIR=/tmp/mmcomp-cache
# The driver's own CUDA release: a cubin from a newer ptxas might not load.
export PATH=/usr/local/cuda/bin:$PATH
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
seed=${SEED:-1}
cases=${CASES:-2000}
sanitize() {  # tool case
  timeout 200 compute-sanitizer --tool "$1" python3 tools/fuzz.py --backend cuda --seed 1 \
    --case "$2" > "/tmp/sanitizer-$1-$2.txt" 2>&1
  echo "$1 case $2 (rc $?): $(tail -2 "/tmp/sanitizer-$1-$2.txt" | head -1 | tr -s ' ')," \
    "$(grep -E 'SUMMARY' "/tmp/sanitizer-$1-$2.txt" | tail -1)"
  grep -E -m 5 -A 3 "Program hit|Invalid|Race|Hazard|Barrier" "/tmp/sanitizer-$1-$2.txt"
}
(for c in ${SANITIZE_CASES:-20 27 34 156}; do sanitize memcheck "$c"; sanitize racecheck "$c"; done) \
  > "$OUT/sanitizers.txt" 2>&1 &
timeout "${FUZZ_TIMEOUT:-330}" python3 tools/fuzz.py --backend cuda --seed "$seed" \
  --cases "$cases" --budget "${FUZZ_BUDGET:-280}" --jobs 14 > "$OUT/fuzz.log" 2>&1
echo "fuzz rc $?"
grep -E "^FAIL" "$OUT/fuzz.log" | head -40
tail -32 "$OUT/fuzz.log"
wait
cat "$OUT/sanitizers.txt"
