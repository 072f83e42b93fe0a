#!/usr/bin/env bash
# The GPU part of the benchmark alone (< 8 minutes on one GPU): eggpu vs Triton run time,
# achieved bandwidth vs the device's copy bandwidth, TFLOP/s for matmul.
#
# Usage, from the repository root of a machine with a CUDA GPU, PyTorch and Triton:
#     bash bench/gpu_run.sh [OUT.json]            (default bench/results/gpu.json)
# then, where the full benchmark JSON lives:
#     python -m bench report --gpu OUT.json       (merges it and regenerates docs/performance.md)
#
# eggpu's compiles need egglog and z3; a GPU image without them can use a cache prepared
# elsewhere (the compiles are then cache hits):
#     python -m bench.gpu --prepare bench/.gpu-cache     (on a machine with the full toolchain)
# and carry bench/.gpu-cache along; this script uses it when present.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-bench/results/gpu.json}
. bench/gpu_env.sh
exec timeout 470 "$PY" -m bench.gpu --out "$OUT"
