"""The GPU parts of ``bench.report`` (issue 16's launch goal and the GPU run's extra tables)."""

from __future__ import annotations

from typing import Any

from .markdown import fmt as _f
from .markdown import table as _table
from .stats import ratio


def launch_goal(launch: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Issue 16's host launch overhead ≤ Triton, CPU side (``python -m bench launch``: eggpu on a fake
    driver, Triton's own launcher on a stub libcuda): ``kernel[grid](...)`` under ``@eggpu.jit``
    against ``@triton.jit``."""
    t = (launch or {}).get("timings", {})
    e, tr = t.get("eggpu_jit", {}).get("median_us"), t.get("triton_jit", {}).get("median_us")
    if e is None or tr is None:
        return []
    q = ratio(e, tr)
    date = (launch.get("meta") or {}).get("date", "")[:10]
    return [{"goal": "host launch overhead ≤ Triton (CPU side, `python -m bench launch`)", "kernel": "add_kernel[grid]",
             "measured": f"{_f(e, '{:.2f}')} µs vs {_f(tr, '{:.2f}')} µs ({date})", "ratio": q,
             "ok": None if q is None else q <= 1.0}]


def gpu_variants(kernels: dict[str, Any]) -> list[str]:
    """The row kernels' extra eggpu builds (``bench.gpu.VARIANTS``): the decisions issue #10 left
    to a GPU (``.pragma "nounroll"`` on the loops; fast_math's precision)."""
    rows_ = []
    for k, v in kernels.items():
        for name, r in v.get("eggpu_variants", {}).items():
            if "error" in r:
                rows_.append([k, name, "ERROR: " + r["error"][:120], "–", "–", "–"])
                continue
            rows_.append([k, name, _f(r.get("median_ms"), "{:.3f}"), _f(r.get("over_default"), "{:.2f}"),
                          _f(r.get("over_triton"), "{:.2f}"), _f(r.get("max_err"), "{:.2g}")])
    if not rows_:
        return []
    return ["\nRow kernels, other eggpu builds: `nounroll` is the default build's PTX with "
            "`.pragma \"nounroll\"` on its loops (`PtxOptions(ptxas_unroll=False)`: fewer static SASS "
            "instructions, fewer loads in flight), `fast_math` is `fast_math=True` (`div.full.f32`, "
            "`ex2.approx`: Triton's precision). Below 1 in `/ default` means faster than the default build.\n",
            _table(["kernel", "variant", "ms", "/ default", "/ Triton", "max err"], rows_) + "\n"]


def gpu_naive(naive: Any) -> list[str]:
    """The naive suite's GPU times (:mod:`bench.gpu_naive`): optimizer off / on and Triton."""
    if not isinstance(naive, dict) or not naive:
        return []
    if "error" in naive:
        return [f"\nNaive suite on the GPU: ERROR `{naive['error'][:300]}`\n"]
    rows_ = []
    for k, v in naive.get("kernels", {}).items():
        cells = [_f(v[t].get("median_ms"), "{:.3f}") if "error" not in v.get(t, {"error": ""}) else "ERROR"
                 for t in ("eggpu_noopt", "eggpu", "triton")]
        rows_.append([k, *cells, _f(v.get("eggpu_over_noopt_time"), "{:.2f}"),
                      _f(v.get("eggpu_over_triton_time"), "{:.2f}")])
    errs = [f"- naive {k} {t}: `{v[t]['error'][:300]}`" for k, v in naive.get("kernels", {}).items()
            for t in ("eggpu_noopt", "eggpu", "triton") if "error" in v.get(t, {})]
    return ["\nNaive (Inductor-style) kernels, same source for both compilers (`bench/gpu_naive.py`: "
            "launch facts on both sides, outputs checked against numpy before timing):\n",
            _table(["kernel", "eggpu -O0 ms", "eggpu ms", "Triton ms", "eggpu / -O0", "eggpu / Triton"], rows_)
            + "\n", *errs]
