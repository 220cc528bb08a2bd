#!/usr/bin/env bash
# The device run of the PyTorch integration: the public call's and mmcomp.torch's tests
# (GPU and CPU), the LlamaMLP example as a program, and the public call's bench rows
# (beside the bound launch, host time per call, LlamaMLP at 8192 tokens); logs under $OUT.
# Through the device tool, carrying .whl:
#   bash tools/torch_check.sh           # the full run (bench rows written to $OUT/call.md)
#   bash tools/torch_check.sh --quick   # two bench shapes, no torch.compile timings
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 MMCOMP_CACHE_DIR=/tmp/mmcomp-cache
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
quick=${1:-}
start=$(date +%s)
{
  date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
  python3 -c "import torch, transformers, numpy; print('torch', torch.__version__, 'transformers', transformers.__version__, 'numpy', numpy.__version__)"
  python3 -c "import cupy; print('cupy', cupy.__version__)" 2>&1 | tail -1
} 2>&1 | tee "$OUT/torch-env.txt"
stamp() { echo "[$(( $(date +%s) - start )) s] $*" | tee -a "$OUT/torch-times.txt"; }
stamp "tests"
timeout "${TESTS_TIMEOUT:-400}" python3 -m pytest -n 4 -q -rs -p no:cacheprovider \
  tests/unit/test_call_gpu.py tests/unit/test_torch_gpu.py tests/unit/test_call.py \
  tests/unit/test_torch.py tests/unit/test_compile_cache.py 2>&1 | tee "$OUT/torch-tests.txt" | tail -40
stamp "example"
timeout "${EXAMPLE_TIMEOUT:-300}" python3 examples/llama_mlp.py --tokens 1024 --repeat 10 \
  ${quick:+--no-compile} 2>&1 | tee "$OUT/llama-mlp-1024.txt"
stamp "bench --call"
timeout "${BENCH_TIMEOUT:-900}" python3 tools/bench.py --call \
  ${quick:+--quick --no-compile --repeat 20} --out "$OUT/call.md" 2>&1 | tail -40 \
  | tee "$OUT/bench-call.txt"
stamp "done"
