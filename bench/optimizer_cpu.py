"""Optimizer CPU time per library kernel: the minimum over repeated ``optimize`` calls in one process.

    python -m bench.optimizer_cpu [--reps 15] [KERNEL ...]     # library kernel names (default:
                                                              # the row kernels and matmul)

Each kernel (its first dtype and case size) is optimized once to warm the process (rule set,
e-graph, z3), then ``--reps`` times; printed per kernel: the minimum process CPU milliseconds
(``time.process_time``: egglog's threads included), the minimum wall milliseconds and the
minimum of each optimizer stage (wall), the stop reason and the iterations. The minimum is the
number least disturbed by other work on a shared machine; compare two versions by running this
back to back. Triton has no counterpart to this stage, so there is no Triton column: the
whole-compile comparison is ``python -m bench.cold_pairs``. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import time

DEFAULT = ("softmax_forward", "layer_norm_forward", "rms_norm_forward", "cross_entropy_forward", "matmul")


def measure(name: str, reps: int) -> dict[str, object]:
    """The minima for library kernel ``name`` (see the module docstring)."""
    import numpy as np

    from eggpu.kernels import BY_NAME
    from eggpu.optimizer import optimize

    lk = BY_NAME[name]
    fn = lk.instance(lk.make_case(lk.sizes[0], lk.dtypes[0], np.random.default_rng(0))).ir()
    optimize(fn)
    wall, cpu, stages = [], [], {}
    res = None
    for _ in range(reps):
        t, c = time.perf_counter(), time.process_time()
        res = optimize(fn)
        wall.append((time.perf_counter() - t) * 1e3)
        cpu.append((time.process_time() - c) * 1e3)
        for k, v in res.times.items():
            stages.setdefault(k, []).append(v * 1e3)
    return {"kernel": name, "cpu_ms": min(cpu), "wall_ms": min(wall),
            "stages_ms": {k: min(v) for k, v in stages.items()},
            "stop": res.stop_reason.name if res else "", "iterations": res.iterations if res else 0}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.optimizer_cpu", description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("kernels", nargs="*", default=list(DEFAULT))
    a = ap.parse_args(argv)
    for name in a.kernels:
        r = measure(name, a.reps)
        stages = " ".join(f"{k} {v:.1f}" for k, v in r["stages_ms"].items())
        print(f"{name:24} cpu {r['cpu_ms']:6.1f} ms  wall {r['wall_ms']:6.1f} ms  {stages}  "
              f"{r['stop']} after {r['iterations']}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
