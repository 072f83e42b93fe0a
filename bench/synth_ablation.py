"""Which synthesized rules lower a benchmark kernel's cost on their own (leave-one-out).

``python -m bench.synth_ablation [RULES.egg] [--kernels a,b] [--seconds S] [--json OUT]``
optimizes every benchmark kernel of :mod:`bench.synth_fire` (12 naive, 17 library; the bench
case's types, constexprs and launch facts) three ways, all with every shipped rule file except
``rules/synthesized.egg``:

* *none*: no synthesized rule;
* *all*: plus ``RULES.egg`` (default: the shipped ``rules/synthesized.egg``);
* *all but r*: for each synthesized rule ``r`` that fired in *all*, the file without ``r``.

A rule **wins on its own** on a kernel when *all* costs less than *none* and *all but r* costs
more than *all*: no other rule of the file makes up for its removal. Rules whose removal changes
no cost overlap with another rule (or save nothing). ``issues show 14``'s strict goal is five
rules that each win on their own on some kernel. Costs are the optimizer's ``CostModel`` totals
after extraction; ``--seconds`` sets the saturation time limit (a loaded machine cuts the 2 s
default at different points in different runs: use 10 or more). Each rule must sit on one line of
the file (``eggpu rules synthesize`` writes them so), which is how *all but r* drops it.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .synth_fire import PREFIX, _instances, _saturation_seconds, print_result

EPS = 1e-6


def _without(text: str, name: str, tmp: Path) -> str:
    """``text`` minus the line that defines rule ``name``, written to a file under ``tmp``."""
    lines = [ln for ln in text.splitlines() if f':name "{name}")' not in ln]
    if len(lines) != len(text.splitlines()) - 1:
        raise SystemExit(f"synth_ablation: rule {name!r} is not on exactly one line of the rules file")
    p = tmp / f"without-{re.sub(r'[^A-Za-z0-9_-]', '_', name)}.egg"
    p.write_text("\n".join(lines) + "\n")
    return str(p)


def ablate(rules_file: str, names: list[str] | None = None, target: str = "sm_90",
           seconds: float | None = None) -> dict[str, Any]:
    """``{"kernels": {label: {"none", "all", "fired", "without": {rule: cost}}}, "wins": {rule:
    [labels]}}``: per kernel the three costs (module docstring), and for each rule the kernels
    on which it wins on its own."""
    import eggpu
    from eggpu.optimizer import optimize
    from eggpu.rules import shipped_files

    others = [str(f) for f in shipped_files() if f.name != "synthesized.egg"]
    text = Path(rules_file).read_text(encoding="utf-8")
    rows: dict[str, Any] = {}
    wins: dict[str, list[str]] = {}
    with _saturation_seconds(seconds), tempfile.TemporaryDirectory() as td:
        for label, inst, options in _instances(names):
            t0 = time.perf_counter()
            unopt = eggpu.compile(inst, target=target, cache=False, optimize=False, **options).ir

            def cost(files: list[str], unopt=unopt) -> tuple[float, dict[str, int]]:
                r = optimize(unopt, rules=files, shipped_rules=False, target=target)
                return r.cost_after, r.rule_hits

            none, _ = cost(others)
            full, hits = cost([*others, rules_file])
            fired = sorted(r for r, n in hits.items() if r.startswith(PREFIX) and n)
            without = {}
            if full < none - EPS:
                for r in fired:
                    without[r] = cost([*others, _without(text, r, Path(td))])[0]
                    if without[r] > full + EPS:
                        wins.setdefault(r, []).append(label)
            rows[label] = {"none": none, "all": full, "fired": fired, "without": without}
            print(f"{label}: cost {none:.2f} -> {full:.2f}" + "".join(
                f"\n    without {r}: {c:.2f}{'  (wins on its own)' if c > full + EPS else ''}"
                for r, c in without.items()) + (f"\n    fired, no saving: {', '.join(fired)}" if fired and not without else "")
                  + f"  ({time.perf_counter() - t0:.1f}s)", file=sys.stderr, flush=True)
    return {"kernels": rows, "wins": wins}


def main(argv: list[str] | None = None) -> int:
    from eggpu.rules import shipped_files

    default = next(str(f) for f in shipped_files() if f.name == "synthesized.egg")
    p = argparse.ArgumentParser(prog="python -m bench.synth_ablation")
    p.add_argument("rules", nargs="?", default=default, help="synthesized rules (default: rules/synthesized.egg)")
    p.add_argument("--kernels", help="comma-separated kernel names (default: all)")
    p.add_argument("--target", default="sm_90")
    p.add_argument("--seconds", type=float, default=None, help="saturation time limit of every optimization")
    p.add_argument("--json", help="also write the result here")
    a = p.parse_args(argv)
    res = ablate(a.rules, a.kernels.split(",") if a.kernels else None, a.target, a.seconds)
    return print_result(f"{len(res['wins'])} synthesized rules each lower some kernel's cost on their own:",
                        [f"{r}: {', '.join(ks)}" for r, ks in sorted(res["wins"].items())], res, a.json)


if __name__ == "__main__":
    raise SystemExit(main())
