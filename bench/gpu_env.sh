# Sourced by bench/gpu_run.sh and bench/gpu_session.sh from the repository root: the Python to use
# ($PY), eggpu importable (an offline editable install of this checkout, without dependencies, when
# it is not), the prepared compile cache when one was carried (bench/.gpu-cache), Triton's FP
# contraction off as in the benchmark's static comparisons.
PY=${PYTHON:-python3}
if ! "$PY" -c "import eggpu.kernels" 2>/dev/null; then
    "$PY" -m pip install -q --no-deps --no-build-isolation -e . >/dev/null
fi
if [ -d bench/.gpu-cache ] && [ -z "${EGGPU_CACHE_DIR:-}" ]; then
    export EGGPU_CACHE_DIR="$PWD/bench/.gpu-cache"
fi
export TRITON_DEFAULT_FP_FUSION=0 PYTHONUNBUFFERED=1
