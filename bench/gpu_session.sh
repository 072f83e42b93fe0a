#!/usr/bin/env bash
# Everything a lent GPU should run, in one call (< 9 minutes on one GPU): the correctness checks
# (python -m bench.gpu_check: every library kernel, the dot paths, min/max, launch streams and
# devices) and then the timings (bench/gpu_run.sh: the suite beside Triton, the row kernels'
# nounroll / fast_math builds, the naive Inductor-style kernels, wgmma on sm_90).
#
# Prepare here, where egglog and z3 are (the GPU image has neither), then carry bench/.gpu-cache:
#     python -m bench.gpu --prepare bench/.gpu-cache && python -m bench.gpu_check --prepare bench/.gpu-cache
# On the GPU machine (device tool: carry bench/.gpu-cache; $OUT comes back):
#     bash bench/gpu_session.sh "$OUT"
# Then here: python -m bench report --gpu OUT/gpu.json, and commit OUT/gpu_check.json beside it.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-bench/results}
mkdir -p "$OUT"
. bench/gpu_env.sh
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1 | tee "$OUT/device.txt"
target=$("$PY" -c "import torch; c = torch.cuda.get_device_capability(0); print(f'sm_{c[0]}{c[1]}')" 2>/dev/null || echo sm_90)
timeout 200 "$PY" -m bench.gpu_check --target "$target" --out "$OUT/gpu_check.json" 2>&1 | tee "$OUT/gpu_check.log"
check=${PIPESTATUS[0]}
timeout 300 bash bench/gpu_run.sh "$OUT/gpu.json" 2>&1 | tee "$OUT/gpu.log"
run=${PIPESTATUS[0]}
echo "gpu_check exit $check, gpu_run exit $run"
exit $(( check != 0 ? check : run ))
