"""Compile-time measurements, each in a fresh process (:mod:`bench.worker`) with its own caches.

Per suite entry, at the timing target (sm_90), interleaving eggpu and Triton rep by rep:

- ``cold``: empty kernel cache. For eggpu the per-installation caches are pre-filled
  (:data:`INSTALL_CACHES`: rule proofs and parsed rules, a one-time cost per rule set measured
  separately and in ``cold_empty``, and the ptxas version); for Triton the cache directory is
  simply empty.
- ``cold_empty`` (eggpu only): a completely empty ``EGGPU_CACHE_DIR``, so the compile also proves
  the shipped rules.
- ``hit``: a fresh process compiling the same kernel with the cache filled by a cold run.
- ``warm``: in-process recompiles with the cache disabled (one process per tool).

Every measurement records the time inside the process from before ``import eggpu``/``import
triton`` to the compiled result (``total_ms``), "to PTX" (``ptx_ms`` = total minus the time in
ptxas, which both pipelines run to produce the cubin), and the process's wall time
(``wall_ms``, interpreter start-up included).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .stats import summarize
from .suite import Entry, consts_for, worker_args
from .worker import MARK

REPO = Path(__file__).resolve().parent.parent


class WorkerError(RuntimeError):
    pass


def base_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["TRITON_DEFAULT_FP_FUSION"] = "0"
    env.pop("EGGPU_RULES_PATH", None)
    env.update(extra)
    return env


def run_worker(mode: str, args: dict[str, Any], env: dict[str, str] | None = None,
               timeout: float = 900) -> tuple[dict[str, Any], float]:
    """Run one worker process; return its result and the process wall time in ms."""
    cmd = [sys.executable, "-m", "bench.worker", mode, json.dumps(args)]
    t = time.perf_counter()
    try:
        proc = subprocess.run(cmd, cwd=REPO, env=env or base_env(), capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        raise WorkerError(f"worker {mode} {args.get('key', '')} timed out after {timeout:.0f} s") from exc
    wall = (time.perf_counter() - t) * 1e3
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(MARK)]
    if proc.returncode != 0 or not lines:
        tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-15:])
        raise WorkerError(f"worker {mode} {args.get('key', '')} failed (exit {proc.returncode}):\n{tail}")
    return json.loads(lines[-1][len(MARK):]), wall


class Dirs:
    """Temporary cache directories, removed on exit."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="eggpu-bench-"))
        self.n = 0

    def new(self, tag: str) -> Path:
        self.n += 1
        p = self.root / f"{tag}-{self.n}"
        p.mkdir()
        return p

    def cleanup(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def measure_proofs(cold_runs: list[tuple[dict[str, Any], float]], proofs_home: Path, reps: int,
                   progress=print) -> dict[str, Any]:
    """Rule-proof times. Cold: ``verify_rules`` inside the given fully-empty-cache compiles (the
    first thing such a compile does is prove the shipped rules into the empty proof cache).
    Cached: a fresh process running ``verify_rules`` over ``load_rules()`` with the proof cache
    those compiles filled (``proofs_home``)."""
    cold = [r.get("optimizer_setup_ms", {}).get("verify_rules") for r, _ in cold_runs]
    cold = [c for c in cold if c is not None]
    cached = []
    for _ in range(reps):
        r, wall = run_worker("proofs", {}, base_env(EGGPU_CACHE_DIR=str(proofs_home)), timeout=1800)
        r["wall_ms"] = wall
        cached.append(r)
    last = cached[-1]
    progress(f"  proofs: {last['rules']} rules; cold {(cold[0] / 1e3) if cold else float('nan'):.1f} s, "
             f"from the cache {last['verify_ms'] / 1e3:.2f} s ({last['cached']} cached; {last['statuses']})")
    return {
        "rules": last["rules"],
        "statuses": last["statuses"],
        "cached_count": last["cached"],
        "cold_verify": summarize(cold),
        "cached_verify": summarize([r["verify_ms"] for r in cached]),
        "cached_total": summarize([r["total_ms"] for r in cached]),
        "cached_wall": summarize([r["wall_ms"] for r in cached]),
        "load_ms": summarize([r["load_ms"] for r in cached]),
    }


def cold_empty(entry: Entry, target: str, reps: int, dirs: Dirs, progress=print
               ) -> tuple[list[tuple[dict[str, Any], float]], Path]:
    """eggpu compiles of ``entry`` from a completely empty ``EGGPU_CACHE_DIR`` (rule proofs
    included); returns the runs and the last cache directory (its ``proofs/`` is then filled)."""
    base = {**worker_args(entry, target, 4), "tool": "eggpu"}
    runs = []
    home = None
    for _ in range(max(1, reps)):
        home = dirs.new("eggpu-empty")
        runs.append(run_worker("compile", base, base_env(EGGPU_CACHE_DIR=str(home)), timeout=3600))
        progress(f"  cold compile of {entry.key} from an empty cache: {runs[-1][0]['total_ms'] / 1e3:.1f} s")
    assert home is not None
    return runs, home


#: the per-installation caches a cold compile starts with (rule proofs and parsed rules; the
#: ptxas version): facts about the rule set and the toolchain, not about any kernel. The kernel
#: cache and the libdevice subsets (per set of math functions) start empty.
INSTALL_CACHES = ("proofs", "toolchain")


def with_install_caches(d: Path, home: Path | None) -> Path:
    """Copy :data:`INSTALL_CACHES` from ``home`` (a cache directory an earlier compile filled) into ``d``."""
    for name in INSTALL_CACHES:
        if home is not None and (home / name).is_dir():
            shutil.copytree(home / name, d / name)
    return d


def _with_proofs(dirs: Dirs, proofs_home: Path | None) -> Path:
    return with_install_caches(dirs.new("eggpu"), proofs_home)


def _collect(results: list[tuple[dict[str, Any], float]]) -> dict[str, Any]:
    return {
        "total": summarize([r["total_ms"] for r, _ in results]),
        "ptx": summarize([r["ptx_ms"] for r, _ in results]),
        "ptxas": summarize([r["ptxas_ms"] for r, _ in results]),
        "import": summarize([r["import_ms"] for r, _ in results]),
        "import_kernels": summarize([r["import_kernels_ms"] for r, _ in results]),
        "wall": summarize([w for _, w in results]),
        "stages_ms": _median_stages([r.get("stages_ms", {}) for r, _ in results]),
        "optimizer_stages_ms": _median_stages([r.get("optimizer_ms", {}) or {} for r, _ in results]),
        "optimizer_setup_ms": _median_stages([r.get("optimizer_setup_ms", {}) or {} for r, _ in results]),
        "optimizer_import": summarize([r.get("optimizer_import_ms", 0.0) for r, _ in results]),
        "optimizer_outcome": [r.get("optimizer") for r, _ in results],
        "cache": sorted({str(r.get("cache")) for r, _ in results}),
    }


def _median_stages(ds: list[dict[str, float]]) -> dict[str, float]:
    import statistics

    keys = sorted({k for d in ds for k in d})
    return {k: statistics.median(float(d.get(k, 0.0)) for d in ds) for k in keys}


def measure(entries: list[Entry], target: str, reps: int, *, optimize: bool = True,
            empty_runs: dict[str, list] | None = None, proofs_home: Path | None = None, dirs: Dirs,
            progress=print) -> dict[str, Any]:
    """Cold and hit per entry and tool (see the module docstring); ``empty_runs`` (from
    :func:`cold_empty`) are reported as the entry's ``cold_empty``."""
    out: dict[str, Any] = {}
    for e in entries:
        base = worker_args(e, target, 4)
        eg_base = {**base, "tool": "eggpu", "optimize": optimize}
        eg_cold, tr_cold = [], []
        eg_empty = (empty_runs or {}).get(e.key, [])
        eg_home = tr_home = None
        for _ in range(reps):
            d = _with_proofs(dirs, proofs_home)
            eg_cold.append(run_worker("compile", eg_base, base_env(EGGPU_CACHE_DIR=str(d))))
            eg_home = d
            td = dirs.new("triton")
            tr_cold.append(run_worker("compile", {**base, "tool": "triton"}, base_env(TRITON_CACHE_DIR=str(td))))
            tr_home = td
        eg_hit, tr_hit = [], []
        for _ in range(reps):
            eg_hit.append(run_worker("compile", {**eg_base, "instrument": False},
                                     base_env(EGGPU_CACHE_DIR=str(eg_home))))
            tr_hit.append(run_worker("compile", {**base, "tool": "triton"}, base_env(TRITON_CACHE_DIR=str(tr_home))))
        row = {
            "consts": base["consts"],
            "eggpu": {"cold": _collect(eg_cold), "hit": _collect(eg_hit)},
            "triton": {"cold": _collect(tr_cold), "hit": _collect(tr_hit)},
        }
        if eg_empty:
            row["eggpu"]["cold_empty"] = _collect(eg_empty)
        bad = [r for r, _ in eg_hit if r.get("cache") != "hit"] + [r for r, _ in tr_hit if r.get("cache") != "hit"]
        if bad:
            row["warning"] = "a cache-hit run recompiled"
        out[e.key] = row
        ec, tc = row["eggpu"]["cold"]["total"]["median"], row["triton"]["cold"]["total"]["median"]
        eh, th = row["eggpu"]["hit"]["total"]["median"], row["triton"]["hit"]["total"]["median"]
        progress(f"  compile {e.key}: cold eggpu {ec:.0f} ms / triton {tc:.0f} ms; "
                 f"hit eggpu {eh:.0f} ms / triton {th:.0f} ms")
    return out


def measure_warm(entries: list[Entry], target: str, reps: int, proofs_home: Path | None, dirs: Dirs,
                 progress=print, optimize: bool = True) -> dict[str, Any]:
    """In-process warm recompiles (cache disabled), one process per tool."""
    pairs = [[e.key, consts_for(e)] for e in entries]
    out: dict[str, Any] = {}
    for tool in ("eggpu", "triton"):
        env = base_env(EGGPU_CACHE_DIR=str(_with_proofs(dirs, proofs_home)),
                       TRITON_CACHE_DIR=str(dirs.new("triton-warm")))
        r, _ = run_worker("warm", {"tool": tool, "entries": pairs, "target": target, "reps": reps,
                                   "optimize": optimize}, env,
                          timeout=3600)
        for key, v in r.items():
            out.setdefault(key, {})[tool] = {"total": summarize(v["total_ms"]), "ptx": summarize(v["ptx_ms"]),
                                             "stages_ms": v["stages_ms"]}
    for key, v in out.items():
        progress(f"  warm {key}: eggpu {v['eggpu']['total']['median']:.0f} ms / "
                 f"triton {v['triton']['total']['median']:.0f} ms")
    return out
