"""``eggpu demo``: every bundled kernel compiled (optimized, translation-validated), its PTX
checked by ptxas when available, and run on the CPU through the compiled lowering and through
the reference interpreter on ragged sizes, both compared with numpy. Prints one table row per
kernel; returns a non-zero exit status when anything fails.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from typing import Any, TextIO

import numpy as np

from eggpu.ir.dtypes import f32
from eggpu.ir.errors import EggpuError

COLUMNS = ("kernel", "dtype", "ops before", "ops after", "rules fired", "validation", "regs", "compile ms",
           "cpu run", "interp", "result")


def _pick_dtype(lk: Any):
    return f32 if f32 in lk.dtypes else lk.dtypes[0]


def run_demo(*, target: str = "sm_90", optimize: bool = True, names: Sequence[str] | None = None,
             use_cache: bool = True, out: TextIO | None = None) -> int:
    from eggpu.kernels import LIBRARY
    from eggpu.pipeline import compile as eggpu_compile

    out = out or sys.stdout
    entries = [lk for lk in LIBRARY if names is None or lk.name in names]
    if names:
        unknown = sorted(set(names) - {lk.name for lk in LIBRARY})
        if unknown:
            raise EggpuError(f"unknown library kernel(s) {', '.join(unknown)} (known: {', '.join(lk.name for lk in LIBRARY)})")
    rows = []
    failures = 0
    for i, lk in enumerate(entries, 1):
        dtype = _pick_dtype(lk)
        print(f"[{i}/{len(entries)}] {lk.name} [{dtype}]", file=sys.stderr, flush=True)
        row: dict[str, Any] = {"kernel": lk.name, "dtype": str(dtype)}
        try:
            rng = np.random.default_rng(0)
            cases = [lk.make_case(size, dtype, rng) for size in lk.sizes]
            inst = lk.instance(cases[0])
            t0 = time.perf_counter()
            ck = eggpu_compile(inst, target, optimize=optimize, cache=use_cache)
            row["compile ms"] = f"{(time.perf_counter() - t0) * 1e3:.0f}" + (" (cached)" if ck.report.get("cache") == "hit" else "")
            rep = ck.report
            row["ops before"] = rep.get("ir_ops_before", "")
            row["ops after"] = rep.get("ir_ops_after", "")
            opt = rep.get("optimizer") or {}
            fired = opt.get("rules_fired") or {}
            row["rules fired"] = sum(fired.values()) if fired else (0 if optimize else "-")
            row["validation"] = opt.get("validation", "-") if optimize else "-"
            row["regs"] = (rep.get("ptxas") or {}).get("registers", "n/a")
            for case in cases:
                if lk.instance(case) != inst:
                    ck_case = eggpu_compile(lk.instance(case), target, optimize=optimize, cache=use_cache)
                else:
                    ck_case = ck
                row["cpu run"] = "FAIL"
                lk.check(case, case.run(ck_case.run_cpu))
                row["cpu run"], row["interp"] = "ok", "FAIL"
                lk.check(case, lk.interpret(case))
                row["interp"] = "ok"
            row["result"] = "ok" if opt.get("validation", "valid") in ("valid", None, "-") or not optimize else "CHECK"
            if row["result"] != "ok":
                failures += 1
        except (EggpuError, AssertionError) as e:
            failures += 1
            row["result"] = "FAIL"
            first = str(e).splitlines()[0] if str(e) else type(e).__name__
            print(f"  {lk.name}: {first}", file=sys.stderr)
        rows.append(row)
    _print_table(rows, out)
    total = len(rows)
    print(f"\n{total - failures} passed, {failures} failed", file=out)
    return 1 if failures else 0


def _print_table(rows: list[dict[str, Any]], out: TextIO) -> None:
    cells = [[str(r.get(c, "")) for c in COLUMNS] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) if cells else len(c) for i, c in enumerate(COLUMNS)]
    line = "  ".join(c.ljust(w) for c, w in zip(COLUMNS, widths))
    print(line, file=out)
    print("  ".join("-" * w for w in widths), file=out)
    for row in cells:
        print("  ".join(v.ljust(w) for v, w in zip(row, widths)), file=out)
