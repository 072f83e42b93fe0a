"""Which synthesized rules fire on the benchmark kernels (``eggpu rules synthesize``'s goal).

``python -m bench.synth_fire RULES.egg [--kernels a,b] [--target sm_90] [--seconds S]`` compiles every naive
kernel (:mod:`bench.naive_kernels`, with the bench case's types, constexprs and launch facts) and
every library kernel (:mod:`eggpu.kernels`, default dtype, first case) twice, without the cache:
with the shipped rules only and with ``RULES.egg`` added as user rules (``rules=[...]``). It
prints, per kernel, the synthesized rules that fired (``ck.report["optimizer"]["rules_fired"]``,
names starting ``syn-``) and the optimizer's cost after extraction both ways, then the totals:
how many distinct synthesized rules fired anywhere and on how many kernels the cost dropped.
``--seconds`` sets the saturation time limit of every compile (both ways): on a loaded machine
the default 2 s stops the two compiles of a kernel at different points, so their costs differ by
load; each row prints why saturation stopped.

With ``--synthesize [--time-limit 600 --max-size 5 --dtypes i32,f32]`` it first writes RULES.egg
itself: the synthesizer with the same kernels' IR as its workload, as written and as the shipped
rules leave it (their subterms are tried as left-hand sides first,
:mod:`eggpu.optimizer.synth_workload`).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import sys
import time
from typing import Any

import numpy as np

PREFIX = "syn-"


def _instances(names: list[str] | None) -> list[tuple[str, Any, dict[str, Any]]]:
    """(label, kernel instance, compile options) of every naive and library kernel."""
    from eggpu.demo import _pick_dtype
    from eggpu.kernels import LIBRARY

    from .naive import NAIVE, launch_facts, load, param_names

    egg = load("eggpu")
    out = []
    for k in NAIVE:
        if names and k.name not in names:
            continue
        case = k.make(k.bench_size, np.random.default_rng(0))
        fn = getattr(egg, k.name)
        options, _attrs, _consts = launch_facts(case, param_names(fn), k.consts)
        out.append((f"naive/{k.name}", fn.specialize(*case.args, **k.consts), options))
    for lk in LIBRARY:
        if names and lk.name not in names:
            continue
        dtype = _pick_dtype(lk)
        case = lk.make_case(lk.sizes[0], dtype, np.random.default_rng(0))
        out.append((f"library/{lk.name}", lk.instance(case), {}))
    return out


@contextlib.contextmanager
def _saturation_seconds(seconds: float | None):
    """Every compile inside saturates with a time limit of ``seconds`` (None: the optimizer's
    default, 2 s). The iteration and e-node limits stay as they are: on a loaded machine the 2 s
    stop comes at different points in the two compiles of a kernel, so their costs would differ by
    load, not by rules."""
    import eggpu.optimizer as opt

    if seconds is None:
        yield
        return
    default = opt.Limits
    opt.Limits = functools.partial(default, seconds=seconds)
    try:
        yield
    finally:
        opt.Limits = default


def measure(rules_file: str, names: list[str] | None = None, target: str = "sm_90",
            seconds: float | None = None) -> dict[str, Any]:
    """``{"kernels": {label: {"fired": {rule: count}, "cost_shipped", "cost_synth", "validation",
    "stop_shipped", "stop_synth"}}, "fired_rules": [...], "cost_lowered": [...]}``; ``seconds``:
    the saturation time limit of every compile (:func:`_saturation_seconds`)."""
    with _saturation_seconds(seconds):
        return _measure(rules_file, names, target)


def _measure(rules_file: str, names: list[str] | None, target: str) -> dict[str, Any]:
    import eggpu

    rows: dict[str, Any] = {}
    fired_all: set[str] = set()
    for label, inst, options in _instances(names):
        t0 = time.perf_counter()
        base = eggpu.compile(inst, target=target, cache=False, **options)
        syn = eggpu.compile(inst, target=target, cache=False, rules=[rules_file], **options)
        b, s = base.report.get("optimizer") or {}, syn.report.get("optimizer") or {}
        fired = {r: n for r, n in (s.get("rules_fired") or {}).items() if r.startswith(PREFIX)}
        fired_all |= set(fired)
        rows[label] = {"fired": fired, "cost_shipped": b.get("cost_after"), "cost_synth": s.get("cost_after"),
                       "validation": s.get("validation"), "stop_shipped": b.get("stop_reason"),
                       "stop_synth": s.get("stop_reason")}
        print(f"{label}: {len(fired)} synthesized rules fired, cost {b.get('cost_after')} -> {s.get('cost_after')}, "
              f"validation {s.get('validation')}, saturation stopped {b.get('stop_reason')} / {s.get('stop_reason')} "
              f"({time.perf_counter() - t0:.1f}s)"
              + (f"\n    {', '.join(sorted(fired))}" if fired else ""), file=sys.stderr, flush=True)
    lowered = [k for k, r in rows.items() if r["cost_shipped"] is not None and r["cost_synth"] is not None
               and r["cost_synth"] < r["cost_shipped"] - 1e-9]
    return {"kernels": rows, "fired_rules": sorted(fired_all), "cost_lowered": lowered}


def workload_functions(names: list[str] | None = None, seconds: float | None = None) -> list[Any]:
    """The workload: each kernel's IR as written and as the shipped rules leave it (every shipped
    file but ``synthesized.egg``, so a run finds the shipped synthesized rules again, as it does
    from the written IR; compiled without the cache, saturation limit ``seconds``). The second is
    what a new rule meets in the e-graph: Inductor's ``(x0 >= 256) & (x0 < 512)`` on an i64 copy of
    ``xindex % 512`` is ``256 <= (x & 511)`` there (casts dropped, the range analysis's ``< 512``
    gone), a term the written IR never spells."""
    import eggpu

    from .synth_sass import without_shipped_synthesized

    out = []
    with _saturation_seconds(seconds), without_shipped_synthesized():
        for _, inst, options in _instances(names):
            out.append(inst.ir())
            out.append(eggpu.compile(inst, target="sm_90", cache=False, **options).ir)
    return out


def synthesize_with_workload(out: str, time_limit: float, max_size: int, dtypes: str,
                             names: list[str] | None = None, seconds: float | None = None) -> None:
    """``eggpu rules synthesize`` with the benchmark kernels' IR as workload
    (:func:`workload_functions`); writes ``out``."""
    from pathlib import Path

    from eggpu.optimizer.rules_cli import parse_synth_dtypes
    from eggpu.optimizer.rules_loader import load_rule_files
    from eggpu.optimizer.synthesize import egg_text, remember_proofs, synthesize

    fns = workload_functions(names, seconds)
    t0 = time.perf_counter()
    res = synthesize(parse_synth_dtypes(dtypes), max_size=max_size, time_limit=time_limit, workload=fns,
                     progress=lambda m: print(f"[{time.perf_counter() - t0:6.1f}s] {m}", file=sys.stderr, flush=True))
    Path(out).write_text(egg_text(res, f"python -m bench.synth_fire {out} --synthesize --time-limit {time_limit} "
                                       f"--max-size {max_size} --dtypes {dtypes}"))
    remember_proofs(res, load_rule_files([out]).rules)
    print(res.summary(), file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.synth_fire")
    p.add_argument("rules", help="the .egg file written by eggpu rules synthesize")
    p.add_argument("--kernels", help="comma-separated kernel names (default: all)")
    p.add_argument("--target", default="sm_90")
    p.add_argument("--json", help="also write the result here")
    p.add_argument("--synthesize", action="store_true",
                   help="first write RULES by synthesizing with the kernels as workload (their subterms are tried first)")
    p.add_argument("--time-limit", type=float, default=600.0)
    p.add_argument("--max-size", type=int, default=5)
    p.add_argument("--dtypes", default="i32,f32")
    p.add_argument("--seconds", type=float, default=None,
                   help="saturation time limit of every compile (default: the optimizer's); a loaded machine needs more")
    a = p.parse_args(argv)
    if a.synthesize:
        synthesize_with_workload(a.rules, a.time_limit, a.max_size, a.dtypes, a.kernels.split(",") if a.kernels else None,
                                 a.seconds)
    res = measure(a.rules, a.kernels.split(",") if a.kernels else None, a.target, a.seconds)
    header = (f"{len(res['fired_rules'])} distinct synthesized rules fired on "
              f"{sum(1 for r in res['kernels'].values() if r['fired'])} of {len(res['kernels'])} kernels; "
              f"cost lowered on {len(res['cost_lowered'])}: {', '.join(res['cost_lowered'])}")
    return print_result(header, res["fired_rules"], res, a.json)


def print_result(header: str, lines: list[str], res: dict[str, Any], json_path: str | None) -> int:
    """Print ``header`` and the indented ``lines``, write ``res`` as JSON to ``json_path`` (if any);
    the exit status 0 (the measuring scripts' common tail)."""
    print(header)
    for line in lines:
        print(f"  {line}")
    if json_path:
        with open(json_path, "w", encoding="utf-8") as f:
            json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
