"""Cold compiles, eggpu vs Triton, in alternating fresh processes: in-process time and whole-process CPU.

    python -m bench.cold_pairs [--reps 5] [KERNEL ...]      # suite keys (default: vector_add
                                                            # softmax_forward matmul_f16)

For each kernel: one eggpu compile fills a cache directory's per-installation caches
(:data:`bench.compile_time.INSTALL_CACHES`); then ``reps + 1`` pairs (the first one untimed), each
an eggpu ``bench.worker compile`` with those caches copied into an empty directory and a Triton one
with an empty ``TRITON_CACHE_DIR``. Prints medians of the in-process time (import to result), the
same to PTX, the process wall time and its user + sys CPU time (``getrusage``, interpreter start-up
included), and the eggpu/Triton ratios taken pair by pair. A quick, printed-only complement to
``python -m bench`` (whose cold rows are the in-process times): CPU time is the steadier measure
on a machine other work is sharing.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import time
from typing import Any

from .compile_time import Dirs, base_env, run_worker, with_install_caches
from .suite import BY_KEY, TIMING_TARGET, worker_args

DEFAULT = ("vector_add", "softmax_forward", "matmul_f16")


def _timed(args: dict[str, Any], env: dict[str, str]) -> tuple[dict[str, Any], float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    result, wall = run_worker("compile", args, env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1e3
    return result, wall, cpu


def measure(key: str, reps: int, dirs: Dirs) -> dict[str, Any]:
    base = worker_args(BY_KEY[key], TIMING_TARGET, 4)
    eg = {**base, "tool": "eggpu", "instrument": False}
    home = dirs.new("home")
    run_worker("compile", eg, base_env(EGGPU_CACHE_DIR=str(home)))
    rows: dict[str, list[tuple[float, float, float, float]]] = {"eggpu": [], "triton": []}
    for i in range(reps + 1):
        d = with_install_caches(dirs.new("eggpu"), home)
        r, wall, cpu = _timed(eg, base_env(EGGPU_CACHE_DIR=str(d)))
        if r.get("cache") != "miss":
            raise RuntimeError(f"{key}: an eggpu cold compile was a {r.get('cache')}")
        rt, wallt, cput = _timed({**base, "tool": "triton"}, base_env(TRITON_CACHE_DIR=str(dirs.new("triton"))))
        if i:
            rows["eggpu"].append((r["total_ms"], r["ptx_ms"], wall, cpu))
            rows["triton"].append((rt["total_ms"], rt["ptx_ms"], wallt, cput))
    med = statistics.median
    out: dict[str, Any] = {}
    for j, name in enumerate(("in_process", "to_ptx", "wall", "cpu")):
        out[name] = {tool: med(x[j] for x in rows[tool]) for tool in rows}
        out[name]["ratio"] = med(a[j] / b[j] for a, b in zip(rows["eggpu"], rows["triton"]))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.cold_pairs", description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("kernels", nargs="*", default=list(DEFAULT))
    a = ap.parse_args(argv)
    dirs = Dirs()
    try:
        for key in a.kernels:
            t = time.perf_counter()
            m = measure(key, a.reps, dirs)
            cols = ", ".join(f"{n} {v['eggpu']:.0f} vs {v['triton']:.0f} ms (ratio {v['ratio']:.2f})"
                             for n, v in m.items())
            print(f"{key}: {cols}  [{time.perf_counter() - t:.0f} s]", flush=True)
    finally:
        dirs.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
