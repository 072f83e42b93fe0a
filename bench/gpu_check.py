"""Correctness of every library kernel on a CUDA GPU: ``ck.launch`` vs numpy (and vs ``run_cpu``).

    python -m bench.gpu_check --prepare DIR   # where the full toolchain is: fill an eggpu cache
    EGGPU_CACHE_DIR=DIR python -m bench.gpu_check [--out FILE.json]   # on the GPU machine

Every kernel of :data:`eggpu.kernels.LIBRARY`, every dtype it supports, every default (ragged)
size: the case is launched on the device through ``ck.launch`` with numpy arrays (copied in and
out) and compared with the numpy reference at the library's tolerances. Then the checks of
:mod:`bench.gpu_dot`: ``tl.dot`` on every strategy (f16/bf16 tensor cores, f32 exact; ragged
shapes, three tile configurations; GPU vs numpy and vs ``run_cpu``, the strategy from
``ck.report["dot"]`` recorded) and float min/max on NaN/±0/inf pairs and rows, bit for bit
against the interpreter; the opt-in ``wgmma`` dot (sm_90a) on sm_90 devices; with PyTorch, that
launches follow its current stream and device (:mod:`bench.gpu_streams`). Without a device it prints why and exits 0. Prints one line per
kernel/dtype (and per extra case) and a closing ``N passed, N failed``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from typing import Any

import numpy as np


def _cases():
    from eggpu.kernels import LIBRARY

    for lk in LIBRARY:
        for dt in lk.dtypes:
            rng = np.random.default_rng(0)
            yield lk, dt, [lk.make_case(size, dt, rng) for size in lk.sizes]


def prepare(directory: str, target: str) -> None:
    import eggpu

    n = 0
    for lk, _dt, cases in _cases():
        for case in cases:
            eggpu.compile(lk.instance(case), target=target, cache=directory)
            n += 1
    from .gpu_dot import cases

    for c in cases():
        if runs_on(c, target):
            eggpu.compile(c.instance, **({"target": target} | c.options), cache=directory)
            n += 1
    from .gpu_streams import prepare as prepare_streams
    from .prepared_cache import record

    n += prepare_streams(directory, target)
    record(directory)
    print(f"prepared {n} compiles in {directory}")


def check(target: str) -> dict[str, Any]:
    import eggpu
    from eggpu.runtime import gpu_available

    from .prepared_cache import adopt

    adopt()
    if not gpu_available():
        return {"skipped": "no CUDA device (cuda-python could not open one)"}
    results: list[dict[str, Any]] = []
    for lk, dt, cases in _cases():
        row: dict[str, Any] = {"kernel": lk.name, "dtype": str(dt), "sizes": [str(c.size) for c in cases]}
        t0 = time.perf_counter()
        try:
            for case in cases:
                ck = eggpu.compile(lk.instance(case), target=target)
                row.setdefault("cache", set()).add(ck.report.get("cache"))
                lk.check(case, case.run(ck.launch))
            row["result"] = "ok"
        except Exception as e:  # report every failure, keep going
            row["result"] = "FAIL"
            row["error"] = "".join(traceback.format_exception_only(type(e), e)).strip()[:2000]
        row["cache"] = sorted(row.get("cache", []))
        row["seconds"] = round(time.perf_counter() - t0, 3)
        results.append(row)
        print(f"{row['result']:4s} {lk.name}[{dt}] {row.get('error', '')[:300]}", flush=True)
    results += _extra_checks(target)
    from .gpu_streams import checks as stream_checks

    results += stream_checks(target)  # launches follow PyTorch's current stream and device
    passed = sum(r["result"] == "ok" for r in results)
    failed = len(results) - passed
    print(f"{passed} passed, {failed} failed")
    return {"target": target, "results": results, "passed": passed, "failed": failed}


def _extra_checks(target: str) -> list[dict[str, Any]]:
    """The :mod:`bench.gpu_dot` cases: launch on the device, then each case's own check."""
    import eggpu

    from .gpu_dot import cases

    rows = []
    for c in cases():
        if not runs_on(c, target):
            print(f"skip {c.label}: needs {c.options['target']}", flush=True)
            continue
        row: dict[str, Any] = {"kernel": c.label, "dtype": "", "sizes": []}
        t0 = time.perf_counter()
        try:
            ck = eggpu.compile(c.instance, **({"target": target} | c.options))
            row["cache"] = [ck.report.get("cache")]
            args = [a.copy() if isinstance(a, np.ndarray) else a for a in c.args]
            ck.launch(c.grid, *args)
            row["details"] = c.check(args, ck)
            row["result"] = "ok"
        except Exception as e:  # report every failure, keep going
            row["result"] = "FAIL"
            row["error"] = "".join(traceback.format_exception_only(type(e), e)).strip()[:2000]
        row["seconds"] = round(time.perf_counter() - t0, 3)
        rows.append(row)
        dots = (row.get("details") or {}).get("dot") or []
        how = f" [{', '.join(d['strategy'] for d in dots)}]" if dots else ""
        print(f"{row['result']:4s} {c.label}{how} {row.get('error', '')[:300]}", flush=True)
    return rows


def runs_on(case: Any, target: str) -> bool:
    """Whether ``case`` runs on a device of ``target``: an sm_90a case (wgmma) needs an sm_90 part."""
    want = case.options.get("target")
    return want is None or want == target or (want == "sm_90a" and target == "sm_90")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.gpu_check")
    p.add_argument("--prepare", metavar="DIR")
    p.add_argument("--target", default="sm_90")
    p.add_argument("--out")
    a = p.parse_args(argv)
    if a.prepare:
        prepare(a.prepare, a.target)
        return 0
    res = check(a.target)
    if "skipped" in res:
        print(f"skipped: {res['skipped']}")
    if a.out:
        with open(a.out, "w") as f:
            json.dump(res, f, indent=1)
    return 1 if res.get("failed") else 0


if __name__ == "__main__":
    sys.exit(main())
