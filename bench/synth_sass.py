"""The SASS acceptance check for synthesized rules (docs/rules.md §7, "What ships").

``python -m bench.synth_sass [RULES.egg] [--rules a,b] [--kernels a,b] [--targets sm_80,sm_90]
[--seconds S] [--triton] [--json OUT]`` decides which rules of ``RULES.egg`` (default: the shipped
``rules/synthesized.egg``) may ship. Lowering the e-graph cost is not enough: a rule that turns
``x // 512`` into a shift can cost a vectorized load. So every benchmark kernel of
:mod:`bench.synth_fire` (12 naive with the bench case's launch facts, 17 library) is compiled,
all with every shipped rule file except ``synthesized.egg``:

* *all*: plus ``RULES.egg``, at the first target: which of its rules fire where;
* *none*: no synthesized rule (the baseline);
* *alone*: for each rule that fired on the kernel, plus that rule only;

and each compile is assembled like the naive suite (ptxas, SASS instructions counted from
nvdisasm, :func:`bench.quality._assemble`) at every target. A rule is **accepted** when it fired
alone on some kernel and, on every kernel it fired on, its SASS is no longer than the baseline at
every target; **refused** when it lengthens one (that kernel and target are named), or never
fires. ``shortens`` lists where it strictly helps. (Where a rule fires is read from the *all*
compile: a rule that fires on a kernel only when the file's other rules are absent is not
measured there.) The combination of the accepted rules is
checked the same way (*accepted*), since two harmless rules could still interact.

``--seconds`` sets the saturation time limit of every compile (default 20: the optimizer's 2 s
default stops at load-dependent points on a busy machine, and a different stop is a different
program). ``--triton`` adds Triton's SASS for the same naive kernels (same ptxas) beside ours.
Exit status 1 when a rule is refused.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .synth_fire import _instances, _saturation_seconds

DEFAULT_TARGETS = ("sm_80", "sm_90")
SYNTH_FILE = "synthesized.egg"
_NAME = re.compile(r':name "([^"]+)"\)\s*$')


def rule_lines(text: str) -> dict[str, str]:
    """``{name: line}`` of the rules of a synthesized file (one rule per line, as
    ``eggpu rules synthesize`` writes them; commented-out lines are not rules)."""
    out: dict[str, str] = {}
    for ln in text.splitlines():
        s = ln.strip()
        m = _NAME.search(s)
        if m and s.startswith("(") and not s.startswith(";"):
            out[m.group(1)] = s
    return out


@contextlib.contextmanager
def without_shipped_synthesized():
    """Compiles inside use every shipped rule file except ``synthesized.egg`` (the baseline the
    candidates are measured against, whatever that file holds now)."""
    import eggpu.optimizer.rules_loader as loader
    import eggpu.rules as rules_pkg

    original = rules_pkg.shipped_files

    def shipped() -> list[Path]:
        return [f for f in original() if f.name != SYNTH_FILE]

    rules_pkg.shipped_files, loader.shipped_files = shipped, shipped
    try:
        yield
    finally:
        rules_pkg.shipped_files, loader.shipped_files = original, original


def _compile(inst: Any, target: str, options: dict[str, Any], rules: list[str]) -> tuple[int, dict[str, int]]:
    """(SASS instructions, synthesized-file rules fired) of one optimized compile."""
    import eggpu

    from .quality import _assemble

    ck = eggpu.compile(inst, target=target, cache=False, rules=rules, **options)
    sass = _assemble(ck.ptx, target)["sass_instructions"]
    if sass is None:
        raise RuntimeError(f"{ck.name}: nvdisasm gave no SASS for {target}")
    fired = (ck.report.get("optimizer") or {}).get("rules_fired") or {}
    return sass, {r: n for r, n in fired.items() if n}


def verdicts(kernels: dict[str, Any], names: list[str]) -> dict[str, dict[str, Any]]:
    """Per rule ``{"verdict": "accepted" | "refused", "fired": [kernels], "lengthens": [...],
    "shortens": [...], "why": str}`` from the rows of :func:`measure` (``kernels[label]["none"]``
    and ``["alone"][rule]``: ``{target: sass}``; ``["fired"]``: rules fired alone)."""
    out: dict[str, dict[str, Any]] = {}
    for name in names:
        fired, longer, shorter = [], [], []
        for label, row in kernels.items():
            alone = row.get("alone", {}).get(name)
            if alone is None or name not in row.get("fired_alone", []):
                continue
            fired.append(label)
            for target, n in alone.items():
                base = row["none"][target]
                if n > base:
                    longer.append(f"{label} {target} {base} -> {n}")
                elif n < base:
                    shorter.append(f"{label} {target} {base} -> {n}")
        if not fired:
            verdict, why = "refused", "fires on no benchmark kernel"
        elif longer:
            verdict, why = "refused", "lengthens SASS: " + "; ".join(longer)
        else:
            verdict, why = "accepted", "never lengthens SASS" + ("; shortens " + "; ".join(shorter) if shorter else "")
        out[name] = {"verdict": verdict, "fired": fired, "lengthens": longer, "shortens": shorter, "why": why}
    return out


def measure(rules_file: str, rule_names: list[str] | None = None, kernel_names: list[str] | None = None,
            targets: tuple[str, ...] = DEFAULT_TARGETS, seconds: float | None = 20.0,
            progress=lambda m: print(m, file=sys.stderr, flush=True)) -> dict[str, Any]:
    """``{"kernels": {label: {"fired": [...], "fired_alone": [...], "none": {target: sass},
    "alone": {rule: {target: sass}}, "accepted": {target: sass}}}, "rules": verdicts}``."""
    lines = rule_lines(Path(rules_file).read_text(encoding="utf-8"))
    names = [n for n in lines if rule_names is None or n in rule_names]
    missing = sorted(set(rule_names or ()) - set(lines))
    if missing:
        raise SystemExit(f"synth_sass: no rule named {', '.join(missing)} in {rules_file}")
    kernels: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as td, _saturation_seconds(seconds), without_shipped_synthesized():
        single = {}
        for n in names:
            p = Path(td) / f"{re.sub(r'[^A-Za-z0-9_-]', '_', n)}.egg"
            p.write_text(lines[n] + "\n", encoding="utf-8")
            single[n] = str(p)
        every = Path(td) / "all.egg"
        every.write_text("".join(lines[n] + "\n" for n in names), encoding="utf-8")
        for label, inst, options in _instances(kernel_names):
            t0 = time.perf_counter()
            _, hits = _compile(inst, targets[0], options, [str(every)])
            fired = [n for n in names if n in hits]
            row: dict[str, Any] = {"fired": fired, "fired_alone": [], "none": {}, "alone": {}}
            kernels[label] = row
            if not fired:
                progress(f"{label}: no candidate fired ({time.perf_counter() - t0:.1f}s)")
                continue
            for target in targets:
                row["none"][target] = _compile(inst, target, options, [])[0]
                for n in fired:
                    sass, hits = _compile(inst, target, options, [single[n]])
                    row["alone"].setdefault(n, {})[target] = sass
                    if n in hits and n not in row["fired_alone"]:
                        row["fired_alone"].append(n)
            progress(f"{label}: " + "; ".join(
                f"{n} " + ", ".join(f"{t} {row['none'][t]} -> {row['alone'][n][t]}" for t in targets)
                + ("" if n in row["fired_alone"] else " (did not fire alone)") for n in fired)
                + f" ({time.perf_counter() - t0:.1f}s)")
        res = verdicts(kernels, names)
        ok = [n for n in names if res[n]["verdict"] == "accepted"]
        if len(ok) > 1:  # the accepted rules together: no interaction may lengthen a kernel either
            both = Path(td) / "accepted.egg"
            both.write_text("".join(lines[n] + "\n" for n in ok), encoding="utf-8")
            for label, inst, options in _instances(kernel_names):
                row = kernels[label]
                if not set(row["fired_alone"]) & set(ok):
                    continue
                row["accepted"] = {t: _compile(inst, t, options, [str(both)])[0] for t in targets}
                progress(f"{label}: the accepted rules together " + ", ".join(
                    f"{t} {row['none'][t]} -> {row['accepted'][t]}" for t in targets))
                worse = [f"{t} {row['none'][t]} -> {row['accepted'][t]}" for t in targets
                         if row["accepted"][t] > row["none"][t]]
                if worse:
                    res["(accepted together)"] = {"verdict": "refused", "fired": [label], "lengthens": worse,
                                                  "shortens": [], "why": f"{label}: " + "; ".join(worse)}
    return {"kernels": kernels, "rules": res, "targets": list(targets)}


def triton_sass(kernel_labels: list[str], targets: tuple[str, ...]) -> dict[str, dict[str, int | None]]:
    """Triton's SASS instructions for the naive kernels among ``kernel_labels`` (same source,
    launch facts and ptxas as the naive suite, :func:`bench.naive_bench.measure_naive`)."""
    from .naive_bench import measure_naive

    names = [lb.split("/", 1)[1] for lb in kernel_labels if lb.startswith("naive/")]
    if not names:
        return {}
    res = measure_naive(targets, names, progress=lambda m: None)
    return {f"naive/{k}": {t: (v[t].get("triton") or {}).get("sass_instructions") for t in targets}
            for k, v in res.items()}


def main(argv: list[str] | None = None) -> int:
    from eggpu.rules import shipped_files

    default = next(str(f) for f in shipped_files() if f.name == SYNTH_FILE)
    p = argparse.ArgumentParser(prog="python -m bench.synth_sass")
    p.add_argument("rules", nargs="?", default=default, help="synthesized rules (default: rules/synthesized.egg)")
    p.add_argument("--rules", dest="names", help="comma-separated rule names (default: every rule of the file)")
    p.add_argument("--kernels", help="comma-separated kernel names (default: all)")
    p.add_argument("--targets", default=",".join(DEFAULT_TARGETS))
    p.add_argument("--seconds", type=float, default=20.0, help="saturation time limit of every compile")
    p.add_argument("--triton", action="store_true", help="also Triton's SASS for the naive kernels a rule fired on")
    p.add_argument("--json", help="also write the result here")
    a = p.parse_args(argv)
    targets = tuple(a.targets.split(","))
    res = measure(a.rules, a.names.split(",") if a.names else None, a.kernels.split(",") if a.kernels else None,
                  targets, a.seconds)
    if a.triton:
        res["triton"] = triton_sass([k for k, r in res["kernels"].items() if r["fired_alone"]], targets)
    for k, t in res.get("triton", {}).items():
        print(f"  Triton {k}: " + ", ".join(f"{tg} {n}" for tg, n in t.items()))
    for name, v in res["rules"].items():
        print(f"{v['verdict'].upper()} {name}: {v['why']}")
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump(res, f, indent=1)
    return 1 if any(v["verdict"] == "refused" for v in res["rules"].values()) else 0


if __name__ == "__main__":
    raise SystemExit(main())
