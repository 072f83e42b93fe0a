"""``python -m bench``: eggpu vs Triton on compile time, code quality and (with a GPU) run time.

    python -m bench                      # full run: JSON in bench/results/latest.json,
                                         # docs/performance.md and docs/img/*.png regenerated
    python -m bench --quick              # one kernel, one repetition (the smoke test's run)
    python -m bench --reps 3 --kernels vector_add matmul_f16
    python -m bench report [--json F] [--gpu G]   # regenerate the docs from saved JSON
                                                  # (G: output of bench/gpu_run.sh, merged in)
    python -m bench naive [--kernels K ...]      # naive (Inductor-style) + library kernels: cost,
                                                 # PTX lines, SASS (noopt / opt / Triton), rules fired
    python -m bench cost-fit [--write]           # fit optimizer/cost.py's table on those SASS counts
    python -m bench launch                       # host µs per launch, eggpu vs Triton, fake driver
                                                 # (bench/results/launch.json)
    python -m bench.cold_pairs [KERNEL ...]      # cold compiles in alternating fresh processes:
                                                 # in-process time and process CPU, ratios (printed)

Sections (``--sections``, default all): ``import``, ``frontend``, ``proofs``, ``compile``,
``warm``, ``optimizer``, ``quality``, ``cpu``, ``gpu``. Each is described in
``docs/performance.md`` ("Method"). Nothing here is a test: numbers are measured, recorded and
compared with the goals, never asserted.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from .stats import summarize
from .suite import NUM_WARPS, TARGETS, TIMING_TARGET, select

SECTIONS = ("import", "frontend", "proofs", "compile", "warm", "optimizer", "quality", "cpu", "gpu")
REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUT = "bench/results/latest.json"


def _progress(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _args(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m bench", description="eggpu vs Triton benchmarks")
    ap.add_argument("--quick", action="store_true", help="one kernel (vector_add), one repetition")
    ap.add_argument("--reps", type=int, default=5, help="repetitions per measurement (default 5)")
    ap.add_argument("--reps-empty", type=int, default=None,
                    help="eggpu compiles of the first kernel from a completely empty cache, rule proofs "
                         "included (default 1: each proves the whole shipped rule set)")
    ap.add_argument("--reps-proofs", type=int, default=None,
                    help="runs of verify_rules from the filled proof cache (default: min(--reps, 2))")
    ap.add_argument("--no-optimize", action="store_true",
                    help="compile eggpu with optimize=False everywhere and skip the proofs and optimizer "
                         "sections (a fast check of the harness itself; not a benchmark of eggpu's pipeline)")
    ap.add_argument("--cpu-reps", type=int, default=None, help="calls per CPU-execution timing (default: --reps)")
    ap.add_argument("--gpu-reps", type=int, default=100, help="timed launches per kernel on a GPU (>= 50)")
    ap.add_argument("--kernels", nargs="*", help="suite keys (default: all)")
    ap.add_argument("--sections", default=",".join(SECTIONS), help="comma-separated sections to run")
    ap.add_argument("--out", default=DEFAULT_OUT, help=f"JSON output (default {DEFAULT_OUT})")
    ap.add_argument("--docs", default="docs", help="where performance.md and img/ go (default docs)")
    ap.add_argument("--no-docs", action="store_true", help="do not regenerate the report")
    ap.add_argument("--note", action="append", default=[], help="a line for the report's notes (repeatable)")
    return ap.parse_args(argv)


def _report_args(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m bench report", description="regenerate docs/performance.md")
    ap.add_argument("--json", default=DEFAULT_OUT, help="benchmark JSON (default %(default)s)")
    ap.add_argument("--gpu", default=None, help="GPU results from bench/gpu_run.sh to merge into the JSON")
    ap.add_argument("--docs", default="docs")
    return ap.parse_args(argv)


def run(a: argparse.Namespace) -> dict[str, Any]:
    from . import compile_time, cpu_run, quality, tools

    if a.quick:
        a.reps = 1
        a.kernels = a.kernels or ["vector_add"]
    entries = select(a.kernels)
    sections = [s.strip() for s in a.sections.split(",") if s.strip()]
    unknown = sorted(set(sections) - set(SECTIONS))
    if unknown:
        raise SystemExit(f"unknown section(s) {unknown}; choose from {', '.join(SECTIONS)}")
    optimize = not a.no_optimize
    if not optimize:
        sections = [s for s in sections if s not in ("proofs", "optimizer")]
    reps = max(1, a.reps)
    reps_empty = max(1, a.reps_empty if a.reps_empty is not None else 1)
    reps_proofs = max(1, a.reps_proofs if a.reps_proofs is not None else min(reps, 2))
    started = time.perf_counter()
    res: dict[str, Any] = {
        "meta": {
            "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
            "command": _command_line(sys.argv[1:]),
            "reps": reps, "reps_empty": reps_empty, "reps_proofs": reps_proofs, "quick": a.quick,
            "kernels": [e.key for e in entries], "sections": sections, "timing_target": TIMING_TARGET,
            "targets": list(TARGETS), "num_warps": NUM_WARPS,
            "triton_options": {"num_warps": NUM_WARPS, "enable_fp_fusion": False, "num_stages": "default (3)",
                               "TRITON_DEFAULT_FP_FUSION": "0"},
            "eggpu_options": {"optimize": optimize, "fast_math": False, "num_warps": NUM_WARPS},
            "versions": tools.versions(), "machine": tools.machine(), "notes": list(a.note),
            "source_digest": tools.source_digest(REPO),
        },
    }
    dirs = compile_time.Dirs()
    try:
        if "import" in sections:
            _progress("import eggpu ...")
            runs = [compile_time.run_worker("import", {}, compile_time.base_env(EGGPU_CACHE_DIR=str(dirs.new("imp"))))
                    for _ in range(reps + 1)][1:]  # the first run (bytecode, disk cache) is not counted
            res["import"] = {"eggpu": summarize([r["import_eggpu_ms"] for r, _ in runs]),
                             "kernels": summarize([r["import_kernels_ms"] for r, _ in runs]),
                             "wall": summarize([w for _, w in runs]),
                             "heavy_modules_loaded": runs[-1][0]["heavy_modules_loaded"]}
            _progress(f"  import eggpu {res['import']['eggpu']['median']:.0f} ms")
        if "frontend" in sections:
            _progress("frontend + IR construction ...")
            r, _ = compile_time.run_worker("frontend", {"reps": max(reps, 3)})
            res["frontend"] = {k: {**v, "warm": summarize(v.pop("warm_ms")), "memo": summarize(v.pop("memo_ms"))}
                               for k, v in r.items()}
        if "compile" in sections:
            _warm_bytecode(entries[0], dirs)
        proofs_home = None
        empty_runs: dict[str, list] = {}
        needs_proofs = {"proofs", "compile", "warm", "optimizer", "quality", "cpu"} & set(sections)
        if optimize and needs_proofs:
            # The first eggpu compile from a completely empty cache proves the shipped rules: it is
            # both the "everything empty" cold compile and the cold proof measurement, and it
            # leaves the filled proof cache every later eggpu measurement starts from.
            _progress(f"cold compile from an empty cache, rule proofs included ({reps_empty}x) ...")
            runs, proofs_home = compile_time.cold_empty(entries[0], TIMING_TARGET, reps_empty, dirs, _progress)
            empty_runs[entries[0].key] = runs
            if "proofs" in sections:
                res["proofs"] = compile_time.measure_proofs(runs, proofs_home, reps_proofs, _progress)
        if "compile" in sections:
            _progress(f"compile time ({reps} reps, fresh processes) ...")
            res["compile"] = compile_time.measure(entries, TIMING_TARGET, reps, optimize=optimize,
                                                  empty_runs=empty_runs, proofs_home=proofs_home, dirs=dirs,
                                                  progress=_progress)
        if "warm" in sections:
            _progress("warm recompile (in-process) ...")
            res["warm"] = compile_time.measure_warm(entries, TIMING_TARGET, reps, proofs_home, dirs, _progress,
                                                    optimize=optimize)
        if "optimizer" in sections:
            _progress("optimizer ...")
            env = compile_time.base_env(EGGPU_CACHE_DIR=str(_copy_proofs(dirs, proofs_home)))
            from .suite import consts_for

            r, _ = compile_time.run_worker("optimizer", {"entries": [[e.key, consts_for(e)] for e in entries],
                                                         "target": TIMING_TARGET, "reps": max(reps, 3)}, env,
                                           timeout=3600)
            res["optimizer"] = {k: {**v, "time": summarize(v.pop("time_ms"))} for k, v in r.items()}
            for k, v in res["optimizer"].items():
                _progress(f"  optimizer {k}: {v['time']['median']:.0f} ms, cost {v.get('cost_before')} -> "
                          f"{v.get('cost_after')}, validation {v.get('validation')}")
        os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "0")
        os.environ["EGGPU_CACHE_DIR"] = str(_copy_proofs(dirs, proofs_home))  # in-process parts below
        if "quality" in sections:
            _progress("static code quality ...")
            res["quality"] = quality.measure(entries, TARGETS, _progress, optimize=optimize)
        if "cpu" in sections:
            _progress("CPU execution of the lowering vs numpy ...")
            res["cpu"] = cpu_run.measure(entries, a.cpu_reps or reps, _progress, optimize=optimize)
        if "gpu" in sections:
            from . import gpu

            _progress("GPU ...")
            res["gpu"] = gpu.run(entries, a.gpu_reps, progress=_progress)
    finally:
        dirs.cleanup()
        os.environ.pop("EGGPU_CACHE_DIR", None)
    res["meta"]["seconds"] = round(time.perf_counter() - started, 1)
    res["meta"]["load_average_end"] = tools.machine().get("load_average")
    res["meta"]["source_digest_end"] = tools.source_digest(REPO)
    return res


def _command_line(argv: list[str]) -> str:
    """The command as run, without ``--note`` texts (the report lists the notes separately)."""
    kept, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--note":
            skip = True
        elif not arg.startswith("--note="):
            kept.append(arg)
    return " ".join(["python -m bench", *kept])


def _copy_proofs(dirs, proofs_home) -> Path:
    from .compile_time import with_install_caches

    return with_install_caches(dirs.new("inproc"), proofs_home)


def _warm_bytecode(e, dirs) -> None:
    """One untimed compile per tool so bytecode and the OS file cache are warm for every timed
    one (eggpu's without the optimizer: an empty proof cache would prove every rule first)."""
    from . import compile_time
    from .suite import worker_args

    _progress("warming bytecode and file caches (untimed) ...")
    base = worker_args(e, TIMING_TARGET, NUM_WARPS)
    compile_time.run_worker("compile", {**base, "tool": "eggpu", "optimize": False},
                            compile_time.base_env(EGGPU_CACHE_DIR=str(dirs.new("warmup"))))
    compile_time.run_worker("compile", {**base, "tool": "triton"},
                            compile_time.base_env(TRITON_CACHE_DIR=str(dirs.new("triton"))))


def _write(res: dict[str, Any], out: str) -> Path:
    path = Path(out)
    if not path.is_absolute():
        path = REPO / path
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    # compact: the full results stay under the repository's 200 KB limit per file
    tmp.write_text(json.dumps(res, separators=(",", ":"), default=str))
    os.replace(tmp, path)
    return path


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["naive"]:
        from . import naive_bench

        return naive_bench.main(argv[1:])
    if argv[:1] == ["launch"]:
        from . import launch

        return launch.main(argv[1:])
    if argv[:1] == ["cost-fit"]:
        from . import cost_fit

        return cost_fit.main(argv[1:])
    if argv[:1] == ["report"]:
        from . import report

        ra = _report_args(argv[1:])
        jpath = Path(ra.json) if Path(ra.json).is_absolute() else REPO / ra.json
        res = json.loads(jpath.read_text())
        if ra.gpu:
            res["gpu"] = json.loads(Path(ra.gpu).read_text())
            _write(res, str(jpath))
        md = report.write(res, REPO / ra.docs if not Path(ra.docs).is_absolute() else Path(ra.docs))
        _progress(f"wrote {md}")
        return 0
    a = _args(argv)
    try:
        import triton  # noqa: F401
    except ImportError:
        print("python -m bench needs Triton (pip install -e '.[bench]')", file=sys.stderr)
        return 2
    import signal

    def _terminate(signum, frame):  # let `finally` blocks remove the temporary cache directories
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, _terminate)
    res = run(a)
    path = _write(res, a.out)
    _progress(f"wrote {path} ({res['meta']['seconds']} s)")
    if not a.no_docs:
        from . import report

        docs = Path(a.docs) if Path(a.docs).is_absolute() else REPO / a.docs
        md = report.write(res, docs)
        _progress(f"wrote {md}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
