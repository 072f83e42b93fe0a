"""The naive (Inductor-style) kernels on a GPU: eggpu with the optimizer off and on, and Triton,
from the same source text (used by ``bench.gpu``; issue #10's "measured wins on real kernels").

Each kernel of :data:`bench.naive.NAIVE` at the size in :data:`GPU_SIZES` (tens of MB moved, so
the time is memory time, not launch time), its numpy reference computed once on the host:

- ``eggpu_noopt`` / ``eggpu``: ``@eggpu.jit``'s kernel compiled with ``optimize=False`` / ``True``
  and the launch facts both launchers make for these arguments (:func:`bench.naive.launch_facts`:
  16-byte aligned buffers, 16-divisible sizes, eggpu's checked ``offsets_i32``), launched through
  ``ck.launch`` with PyTorch tensors (no copies);
- ``triton``: ``@triton.jit``'s kernel through its own ``kernel[grid](...)`` launch (which
  specializes the same way), ``num_warps=4``, FP contraction off on both sides.

Every output is compared with the reference (the case's own tolerances) before timing; a
mismatch is recorded as the variant's error, not timed. Ratios: ``eggpu_over_triton_time`` and
``eggpu_over_noopt_time`` (the optimizer's effect on run time).

    python -m bench.gpu_naive --prepare DIR      # where eggpu's full toolchain is (sm_90 default)
"""

from __future__ import annotations

import statistics
from typing import Any

import numpy as np

from .naive import NAIVE, Case, launch_facts, load, param_names

NUM_WARPS = 4
GPU_SIZES: dict[str, int] = {
    "poi_bias_relu": 16384,  # rows of 768: 12.6 M elements
    "poi_gelu": 1 << 22,
    "poi_row_col_affine": 16384,
    "poi_permute": 32768,  # the kernel's shape is fixed (32 x 16 x 64)
    "poi_masked_fill": 16384,
    "poi_cast_chain": 1 << 24,
    "poi_cat": 16384,  # rows of 2 x 256
    "poi_embedding": 65536,  # tokens of 128
    "poi_silu_mul": 8192,  # rows of 1024
    "per_softmax": 16384,  # rows of 768
    "per_layernorm": 16384,
    "red_row_sum": 8192,  # rows of 3000
}
"""The problem size of each naive kernel on the GPU (the ``size`` its case builder takes)."""
VARIANTS: dict[str, bool] = {"eggpu_noopt": False, "eggpu": True}
"""eggpu's builds: name -> ``optimize``."""


def _case(name: str) -> Case:
    return next(k for k in NAIVE if k.name == name).make(GPU_SIZES[name], np.random.default_rng(0))


def compile_variant(name: str, case: Case, optimize: bool, target: str, cache: Any = True) -> Any:
    """eggpu's compiled kernel of naive kernel ``name`` for ``case``'s arguments and launch facts."""
    import eggpu

    k = next(k for k in NAIVE if k.name == name)
    egg = load("eggpu")
    inst = getattr(egg, name).specialize(*case.args, **k.consts)
    options, _, _ = launch_facts(case, param_names(getattr(egg, name)), k.consts)
    return eggpu.compile(inst, target=target, optimize=optimize, num_warps=NUM_WARPS, cache=cache, **options)


def prepare(directory: str, target: str = "sm_90") -> None:
    """Compile every eggpu variant into the cache ``directory`` (for a GPU machine without egglog/z3)."""
    for name in GPU_SIZES:
        case = _case(name)
        for variant, optimize in VARIANTS.items():
            ck = compile_variant(name, case, optimize, target, cache=directory)
            print(f"prepared naive {name} {variant}: {ck.report.get('cache')}")


def _close(got: np.ndarray, want: np.ndarray, case: Case) -> str | None:
    """None when ``got`` matches the reference within the case's tolerances, else why not."""
    if got.dtype.kind == "f":
        g, w = got.astype(np.float64), want.astype(np.float64)
        bad = ~np.isclose(g, w, rtol=case.rtol, atol=case.atol, equal_nan=True)
        if bad.any():
            i = int(np.flatnonzero(bad.reshape(-1))[0])
            got_i, want_i = got.reshape(-1)[i].item(), want.reshape(-1)[i].item()
            return f"{int(bad.sum())} elements off, first at {i}: {got_i!r} vs {want_i!r}"
        return None
    n = int((got != want).sum())
    return f"{n} elements differ" if n else None


def _row(torch: Any, name: str, target: str, timed: Any) -> dict[str, Any]:
    """One naive kernel: each eggpu variant and Triton, checked then timed."""
    k = next(k for k in NAIVE if k.name == name)
    case = _case(name)
    dev = [torch.from_numpy(np.ascontiguousarray(a)).cuda() if isinstance(a, np.ndarray) else a for a in case.args]
    outs = sorted(case.expected)
    nbytes = sum(a.nbytes for a in case.args if isinstance(a, np.ndarray))
    row: dict[str, Any] = {"size": GPU_SIZES[name], "grid": list(case.grid), "bytes_of_buffers": nbytes}

    def measure(launch: Any) -> dict[str, Any]:
        for i in outs:
            dev[i].zero_()
        launch()
        torch.cuda.synchronize()
        for i in outs:
            why = _close(dev[i].cpu().numpy(), case.expected[i], case)
            if why:
                return {"error": f"output {i}: {why}"}
        times, host = timed(launch)
        return {"median_ms": statistics.median(times), "min_ms": min(times), "host_ms_per_call": host}

    for variant, optimize in VARIANTS.items():
        try:
            ck = compile_variant(name, case, optimize, target)
            row[variant] = measure(lambda ck=ck: ck.launch(case.grid, *dev, synchronize=False))
        except Exception as exc:  # noqa: BLE001 - a failure is a result to record
            row[variant] = {"error": f"{type(exc).__name__}: {str(exc)[:500]}"}
    try:
        fn = getattr(load("triton"), name)
        row["triton"] = measure(lambda: fn[case.grid](*dev, **k.consts, num_warps=NUM_WARPS, enable_fp_fusion=False))
    except Exception as exc:  # noqa: BLE001
        row["triton"] = {"error": f"{type(exc).__name__}: {str(exc)[:500]}"}
    ratios(row)
    return row


def ratios(row: dict[str, Any]) -> None:
    """``eggpu_over_triton_time`` and ``eggpu_over_noopt_time`` where both sides were timed."""
    for key, other in (("eggpu_over_triton_time", "triton"), ("eggpu_over_noopt_time", "eggpu_noopt")):
        if "median_ms" in row.get("eggpu", {}) and "median_ms" in row.get(other, {}):
            row[key] = row["eggpu"]["median_ms"] / row[other]["median_ms"]


def run(torch: Any, time_gpu: Any, flush: Any, reps: int, warmup: int, target: str,
        progress=print) -> dict[str, Any]:
    """``{"kernels": {name: row}}`` (``time_gpu(launch, reps, warmup, flush) -> (times_ms, host_ms)``,
    as ``bench.gpu``'s)."""
    out: dict[str, Any] = {}
    for name in GPU_SIZES:
        row = _row(torch, name, target, lambda launch: time_gpu(launch, reps, warmup, flush))
        out[name] = row
        progress(f"  gpu naive {name}: " + ", ".join(
            f"{t} {row[t]['median_ms']:.3f} ms" if "median_ms" in row[t] else f"{t} ERROR"
            for t in (*VARIANTS, "triton")))
        torch.cuda.empty_cache()
    return {"kernels": out}


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m bench.gpu_naive", description=__doc__.split("\n\n")[0])
    ap.add_argument("--prepare", metavar="DIR", required=True, help="fill an eggpu cache in DIR and exit")
    ap.add_argument("--target", default="sm_90")
    a = ap.parse_args(argv)
    prepare(a.prepare, a.target)
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main())
