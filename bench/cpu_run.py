"""CPU execution of eggpu's lowering (``ck.run_cpu``) against numpy, for reference only.

``ck.run_cpu`` runs the same LLVM lowering as the PTX, JIT-compiled for the host and executing
each CTA in lock-step; it exists to test the GPU code without a GPU, not to be fast. numpy runs
the same computation in f32 with its vectorized kernels (GELU's ``erf`` from
``scipy.special`` when SciPy is installed; without it the GELU baseline is skipped). Each
timing is the median of ``reps`` calls after one warm-up call (the first call, which builds
the host code, is reported separately). The compiled kernel's output is checked against the
library's float64 reference once, so a wrong lowering cannot report a throughput.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from .stats import summarize
from .suite import Entry

EPS = 1e-5


def _erf() -> Callable[[np.ndarray], np.ndarray] | None:
    try:
        from scipy.special import erf
    except ImportError:
        return None
    return erf


def numpy_impl(entry: Entry, case: Any) -> Callable[[], Any] | None:
    """A numpy f32 implementation of the entry's kernel on ``case``'s arrays (None if unavailable)."""
    a = dict(zip(case.arg_names, case.args))
    k = entry.kernel
    if k == "vector_add":
        out = np.empty_like(a["x_ptr"])
        return lambda: np.add(a["x_ptr"], a["y_ptr"], out=out)
    if k == "gelu_forward":
        erf = _erf()
        if erf is None:
            return None
        x = a["x_ptr"]
        c = np.float32(0.7071067811865476)
        return lambda: np.float32(0.5) * x * (np.float32(1.0) + erf(x * c))
    cols = int(a["n_cols"])
    if k in ("softmax_forward", "layer_norm_forward", "rms_norm_forward", "cross_entropy_forward", "row_argmax"):
        x = (a.get("x_ptr") if "x_ptr" in a else a["logits_ptr"])[:, :cols]
    if k == "softmax_forward":
        def softmax():
            e = np.exp(x - x.max(axis=1, keepdims=True))
            return e / e.sum(axis=1, keepdims=True)
        return softmax
    if k == "layer_norm_forward":
        w, b = a["weight_ptr"], a["bias_ptr"]

        def layer_norm():
            mean = x.mean(axis=1, keepdims=True)
            d = x - mean
            rstd = 1.0 / np.sqrt((d * d).mean(axis=1, keepdims=True) + np.float32(EPS))
            return d * rstd * w + b
        return layer_norm
    if k == "rms_norm_forward":
        w = a["weight_ptr"]
        return lambda: x * (1.0 / np.sqrt((x * x).mean(axis=1, keepdims=True) + np.float32(EPS))) * w
    if k == "cross_entropy_forward":
        t = a["targets_ptr"].astype(np.int64)

        def xent():
            m = x.max(axis=1)
            lse = m + np.log(np.exp(x - m[:, None]).sum(axis=1))
            return lse - x[np.arange(x.shape[0]), np.clip(t, 0, cols - 1)]
        return xent
    if k == "row_argmax":
        return lambda: x.argmax(axis=1)
    return None


def _time(fn: Callable[[], Any], reps: int) -> tuple[float, list[float]]:
    t = time.perf_counter()
    fn()
    first = (time.perf_counter() - t) * 1e3
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1e3)
    return first, times


def measure_entry(entry: Entry, reps: int, target: str = "sm_90", optimize: bool = True) -> dict[str, Any]:
    import eggpu
    from eggpu.ir.dtypes import parse_dtype
    from eggpu.kernels import get

    lk = get(entry.kernel)
    shape = entry.cpu_shape or entry.shape
    case = lk.make_case(entry.size_arg(shape), parse_dtype(entry.dtype), np.random.default_rng(0))
    ck = eggpu.compile(lk.instance(case), target=target, optimize=optimize, cache=False)
    got = case.run(ck.run_cpu)  # builds the host code; output checked once
    lk.check(case, got)
    args = case.fresh_args()
    first, times = _time(lambda: ck.run_cpu(case.grid, *args), reps)
    nbytes = entry.bytes_moved(shape)
    res: dict[str, Any] = {
        "shape": list(shape), "bytes": nbytes, "checked": True,
        "eggpu_first_call_ms": first, "eggpu": summarize(times),
        "eggpu_gbps": float(nbytes / (np.median(times) * 1e-3) / 1e9),
    }
    ref = numpy_impl(entry, case)
    if ref is not None:
        _, nt = _time(ref, reps)
        res["numpy"] = summarize(nt)
        res["numpy_gbps"] = float(nbytes / (np.median(nt) * 1e-3) / 1e9)
        res["eggpu_over_numpy"] = float(np.median(times) / np.median(nt))
        res["numpy_impl"] = "numpy+scipy.special.erf" if entry.kernel == "gelu_forward" else "numpy"
    return res


def measure(entries: list[Entry], reps: int, progress=print, optimize: bool = True) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for e in entries:
        if not e.memory_bound:
            continue
        try:
            out[e.key] = r = measure_entry(e, reps, optimize=optimize)
            ratio = r.get("eggpu_over_numpy")
            progress(f"  cpu {e.key}: eggpu {r['eggpu']['median']:.1f} ms ({r['eggpu_gbps']:.2f} GB/s)"
                     + (f", numpy {r['numpy']['median']:.1f} ms, ratio {ratio:.1f}x" if ratio else ""))
        except Exception as exc:  # noqa: BLE001 - recorded in the results
            out[e.key] = {"error": f"{type(exc).__name__}: {exc}"}
            progress(f"  cpu {e.key}: FAILED {out[e.key]['error'][:200]}")
    return out
