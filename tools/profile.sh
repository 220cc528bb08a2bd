#!/usr/bin/env bash
# Nsight Compute on the big fused kernels (where the time goes), logs under $OUT.
# Through the device tool, carrying .whl: bash tools/profile.sh
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
sections="--section SpeedOfLight --section WarpStateStats --section MemoryWorkloadAnalysis --section LaunchStats"
profile() {  # name kernel-regex sweep-arguments...
  local name=$1 regex=$2; shift 2
  timeout 150 ncu --clock-control none --launch-skip 12 --launch-count 1 -k "regex:$regex" $sections \
    python3 tools/sweep.py "$@" --repeat 10 > "$OUT/ncu-$name.txt" 2>&1
  echo "== $name (rc $?)"
  grep -E "Duration|Compute \(SM\) Throughput|Memory Throughput|L2 Cache Throughput|DRAM Throughput|Warp Cycles Per Issued|Stall|Registers Per|Shared Memory Configuration Size" "$OUT/ncu-$name.txt" | head -16
}
profile horizontal '^horizontal$' horizontal 8192 14336 4096 --tile 128 128 64 --epilogue registers --raster n --swizzle 16
profile torch-linear 'gemm|nvjet|sm90' linear 8192 14336 4096 --swizzle 16 --raster n --epilogue smem
profile linear '^linear$' linear 8192 14336 4096 --tile 128 256 64 --epilogue smem --raster n --swizzle 16
