#!/usr/bin/env bash
# The device run of tensor parallelism: the tests (the one-GPU NCCL ones and the two-rank
# gloo ones), then examples/tp_mlp.py under torchrun on 1, 2 and 4 GPUs (as many as the
# machine has), Llama-70B's MLP at 16 and 8192 tokens; logs and JSON results under $OUT.
# From the repository root, on a machine with sm_90 GPUs (the wheels of .whl/, made by
# tools/device_wheels.sh, where xDSL, filecheck or lit does not import there):
#   bash tools/tp_check.sh            # tests, then the example on every GPU count up to 4
#   bash tools/tp_check.sh --no-tests # the example only
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 MMCOMP_CACHE_DIR=/tmp/mmcomp-cache
if ! python3 -c "import xdsl, filecheck, lit" 2>/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl \
    || { echo "tp_check: no wheels in .whl/: run tools/device_wheels.sh first" >&2; exit 1; }
  export PYTHONPATH=/tmp/site:$PYTHONPATH
fi
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
start=$(date +%s)
stamp() { echo "[$(( $(date +%s) - start )) s] $*" | tee -a "$OUT/tp-times.txt"; }
gpus=$(nvidia-smi --list-gpus | wc -l)
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
  nvidia-smi topo -m; } 2>&1 | tee "$OUT/tp-env.txt"
if [ "${1:-}" != "--no-tests" ]; then
  stamp "tests"
  timeout "${TESTS_TIMEOUT:-400}" python3 -m pytest -q -rs -p no:cacheprovider \
    tests/unit/test_torch_parallel_gpu.py tests/unit/test_torch_parallel.py 2>&1 \
    | tee "$OUT/tp-tests.txt" | tail -30
fi
for n in 1 2 4; do
  [ "$n" -le "$gpus" ] || break
  stamp "example on $n GPUs"
  timeout "${EXAMPLE_TIMEOUT:-500}" python3 -m torch.distributed.run --standalone --nproc-per-node "$n" \
    examples/tp_mlp.py --json "$OUT/tp-mlp-$n.json" 2>&1 | tee "$OUT/tp-mlp-$n.txt" | tail -20
done
stamp "done"
