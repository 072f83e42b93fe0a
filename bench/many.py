"""``eggpu.compile_many``: 64 library specializations with ``workers=2`` against a serial compile.

Issue 12's goal: 64 specializations on 2 cores with ``compile_many`` <= 0.6x the serial time. Each
measurement is a fresh process (``python -m bench.many --worker MODE``) compiling the same 64
distinct library specializations (:func:`instances`: every kernel, dtype and case size of
:data:`eggpu.kernels.LIBRARY`, round-robin over the kernels, the first 64 distinct) for sm_90
with an empty kernel cache and the per-installation caches filled (rule proofs, the toolchain
answer: :data:`bench.compile_time.INSTALL_CACHES`), as a user's second batch would start.
``serial`` is ``compile_many(..., workers=1)`` (this process), ``pool`` is ``workers=2`` (two
forked workers). Reported: wall seconds and CPU seconds (process + children) per run, the
medians, and the ratio pool / serial of the median wall times. The machine should be idle: on a
loaded machine the two workers wait for the same cores and the ratio says nothing::

    python -m bench.many [--reps 3] [--json out.json]
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

COUNT = 64


def instances(count: int = COUNT) -> list[Any]:
    """The first ``count`` distinct library specializations, round-robin over the kernels."""
    import numpy as np

    from eggpu.kernels import LIBRARY

    per_kernel = []
    for lk in LIBRARY:
        insts = {}
        for dt in lk.dtypes:
            for size in lk.sizes:
                inst = lk.instance(lk.make_case(size, dt, np.random.default_rng(0)))
                insts.setdefault(repr(inst), inst)
        per_kernel.append(list(insts.values()))
    out: list[Any] = []
    while len(out) < count and any(per_kernel):
        for insts in per_kernel:
            if insts and len(out) < count:
                out.append(insts.pop(0))
    return out


def _worker(mode: str) -> None:
    t0 = time.perf_counter()
    import eggpu

    insts = instances()
    t1 = time.perf_counter()
    batch = eggpu.compile_many(insts, workers=1 if mode == "serial" else 2, target="sm_90", progress=False)
    wall = time.perf_counter() - t1
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime
    print(json.dumps({"mode": mode, "instances": len(insts), "failures": len(batch.failures),
                      "setup_s": t1 - t0, "wall_s": wall, "cpu_s": cpu}))


def _install_home(base: Path) -> Path:
    """A cache directory whose install caches (rule proofs, toolchain) a first compile filled."""
    home = base / "home"
    env = {**os.environ, "EGGPU_CACHE_DIR": str(home)}
    code = ("import numpy as np, eggpu; from eggpu.kernels import LIBRARY; lk = LIBRARY[0]; "
            "eggpu.compile(lk.instance(lk.make_case(10, lk.dtypes[0], np.random.default_rng(0))), target='sm_90')")
    subprocess.run([sys.executable, "-c", code], env=env, check=True)
    return home


def _run(mode: str, base: Path, home: Path, rep: int) -> dict[str, Any]:
    from bench.compile_time import with_install_caches

    d = base / f"{mode}-{rep}"
    d.mkdir()
    with_install_caches(d, home)
    env = {**os.environ, "EGGPU_CACHE_DIR": str(d)}
    out = subprocess.run([sys.executable, "-m", "bench.many", "--worker", mode], env=env, check=True,
                         capture_output=True, text=True).stdout
    shutil.rmtree(d, ignore_errors=True)
    return json.loads(out.strip().splitlines()[-1])


def measure(reps: int = 3, progress=print) -> dict[str, Any]:
    """Alternating serial and pool runs (``reps`` each); medians and the wall ratio."""
    runs: dict[str, list[dict[str, Any]]] = {"serial": [], "pool": []}
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        home = _install_home(base)
        for rep in range(reps):
            for mode in ("serial", "pool"):
                r = _run(mode, base, home, rep)
                runs[mode].append(r)
                progress(f"  {mode}: {r['instances']} instances ({r['failures']} failed), "
                         f"wall {r['wall_s']:.2f} s, cpu {r['cpu_s']:.2f} s")
    med = {m: {k: statistics.median(r[k] for r in rs) for k in ("wall_s", "cpu_s")} for m, rs in runs.items()}
    return {"runs": runs, "median": med, "load_average_end": os.getloadavg(),
            "ratio_wall": med["pool"]["wall_s"] / med["serial"]["wall_s"]}


def main(argv: list[str]) -> int:
    if argv[:1] == ["--worker"]:
        _worker(argv[1])
        return 0
    reps = int(argv[argv.index("--reps") + 1]) if "--reps" in argv else 3
    print(f"load average at the start: {os.getloadavg()}")
    res = measure(reps)
    m = res["median"]
    print(f"64 specializations, sm_90: serial {m['serial']['wall_s']:.2f} s wall ({m['serial']['cpu_s']:.2f} s cpu), "
          f"workers=2 {m['pool']['wall_s']:.2f} s wall ({m['pool']['cpu_s']:.2f} s cpu): "
          f"ratio {res['ratio_wall']:.2f} (goal <= 0.6); load average at the end {res['load_average_end']}")
    if "--json" in argv:
        Path(argv[argv.index("--json") + 1]).write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
