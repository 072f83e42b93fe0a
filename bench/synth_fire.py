"""Which synthesized rules fire on the benchmark kernels (``eggpu rules synthesize``'s goal).

``python -m bench.synth_fire RULES.egg [--kernels a,b] [--target sm_90]`` compiles every naive
kernel (:mod:`bench.naive_kernels`, with the bench case's types, constexprs and launch facts) and
every library kernel (:mod:`eggpu.kernels`, default dtype, first case) twice, without the cache:
with the shipped rules only and with ``RULES.egg`` added as user rules (``rules=[...]``). It
prints, per kernel, the synthesized rules that fired (``ck.report["optimizer"]["rules_fired"]``,
names starting ``syn-``) and the optimizer's cost after extraction both ways, then the totals:
how many distinct synthesized rules fired anywhere and on how many kernels the cost dropped.
"""

from __future__ import annotations

import argparse
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


def measure(rules_file: str, names: list[str] | None = None, target: str = "sm_90") -> dict[str, Any]:
    """``{"kernels": {label: {"fired": {rule: count}, "cost_shipped", "cost_synth"}}, "fired_rules":
    [...], "cost_lowered": [...]}``."""
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
                       "validation": s.get("validation")}
        print(f"{label}: {len(fired)} synthesized rules fired, cost {b.get('cost_after')} -> {s.get('cost_after')}, "
              f"validation {s.get('validation')} ({time.perf_counter() - t0:.1f}s)"
              + (f"\n    {', '.join(sorted(fired))}" if fired else ""), file=sys.stderr, flush=True)
    lowered = [k for k, r in rows.items() if r["cost_shipped"] is not None and r["cost_synth"] is not None
               and r["cost_synth"] < r["cost_shipped"] - 1e-9]
    return {"kernels": rows, "fired_rules": sorted(fired_all), "cost_lowered": lowered}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.synth_fire")
    p.add_argument("rules", help="the .egg file written by eggpu rules synthesize")
    p.add_argument("--kernels", help="comma-separated kernel names (default: all)")
    p.add_argument("--target", default="sm_90")
    p.add_argument("--json", help="also write the result here")
    a = p.parse_args(argv)
    res = measure(a.rules, a.kernels.split(",") if a.kernels else None, a.target)
    print(f"{len(res['fired_rules'])} distinct synthesized rules fired on {sum(1 for r in res['kernels'].values() if r['fired'])}"
          f" of {len(res['kernels'])} kernels; cost lowered on {len(res['cost_lowered'])}: {', '.join(res['cost_lowered'])}")
    for r in res["fired_rules"]:
        print(f"  {r}")
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
