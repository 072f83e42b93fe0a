"""Calibrate the optimizer's cost model on SASS: ``python -m bench cost-fit [--json F] [--write]``.

The cost model (:mod:`eggpu.optimizer.cost`) prices every IR op in per-lane units. What a GPU
executes is SASS; :mod:`eggpu.optimizer.thread_cost` estimates it per thread (lanes per
thread, loop unrolling, reduction trees, masked accesses, constant divisors). :func:`features`
is that estimate of a compiled program split by cost-model group (:data:`GROUPS`); :func:`fit` solves non-negative least squares ``SASS ~ base + sum_g w_g * f_g``
over the benchmark programs of one target (the naive suite and the library kernels,
``optimize=False`` and ``optimize=True``, measured by ``python -m bench naive``), and
:func:`calibration` turns the weights into multipliers of the default per-lane costs, relative
to the integer ``add`` group (the model's unit). ``--write`` replaces the table between the
``BEGIN/END CALIBRATION`` markers in ``optimizer/cost.py`` (the table lives there; this script
only produces it). Every fit reports the Spearman rank correlation between the model's cost and
the SASS count, with the default and with the calibrated table, and a held-out check
(:func:`holdout`: fit on two thirds of the kernels, rank the other third).

A group whose data are too few (fewer than 3 programs contain it) keeps multiplier 1.0, and
multipliers are clamped to [0.25, 4] so that a noisy fit cannot make any op free or dominant:
extraction needs every op to keep a strictly positive cost.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from eggpu.optimizer.thread_cost import GROUPS

REPO = Path(__file__).resolve().parent.parent
COST_PY = REPO / "optimizer" / "cost.py"

MIN_PROGRAMS = 3
CLAMP = (0.25, 4.0)
#: weight of the prior "every multiplier is 1.0" (ridge toward the hand-set table), relative to
#: the data: the groups are strongly collinear on ~30 kernels, and plain least squares zeroes some
PRIOR = 0.1
#: every HOLDOUT-th kernel name (sorted; both its variants) is left out of a held-out fit
HOLDOUT = 3


def features(fn: Any, target: str, threads: int) -> dict[str, float]:
    """Estimated SASS instructions per thread of ``fn`` by group
    (:func:`eggpu.optimizer.thread_cost.thread_terms` with the DEFAULT model of ``target``, so a
    fitted group weight is a multiplier of the default costs of that group)."""
    from eggpu.optimizer.cost import CostModel
    from eggpu.optimizer.thread_cost import thread_terms

    return {k: round(v, 3) for k, v in thread_terms(CostModel.for_target(target), fn, threads).items()}


def _ranks(xs: Sequence[float]) -> list[float]:
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    ranks = [0.0] * len(xs)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2.0
        i = j + 1
    return ranks


def spearman(a: Sequence[float], b: Sequence[float]) -> float:
    """Spearman's rank correlation of two equally long sequences (ties get average ranks)."""
    if len(a) != len(b) or len(a) < 2:
        raise ValueError("spearman needs two sequences of the same length >= 2")
    ra, rb = _ranks(a), _ranks(b)
    ma, mb = sum(ra) / len(ra), sum(rb) / len(rb)
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb, strict=True))
    va = math.sqrt(sum((x - ma) ** 2 for x in ra))
    vb = math.sqrt(sum((y - mb) ** 2 for y in rb))
    return cov / (va * vb) if va and vb else 0.0


def points(res: dict[str, Any], target: str) -> list[tuple[str, dict[str, float], int]]:
    """``(label, features, SASS instructions)`` of every eggpu program of ``target`` in ``res``."""
    out = []
    for section in ("naive", "library"):
        for name, per_target in res.get(section, {}).items():
            for variant, v in per_target.get(target, {}).items():
                if variant.startswith("eggpu") and v.get("features") is not None and v.get("sass_instructions"):
                    out.append((f"{name}/{variant}", v["features"], v["sass_instructions"]))
    return out


def fit(pts: list[tuple[str, dict[str, float]]] | list[tuple[str, dict[str, float], int]]) -> dict[str, Any]:
    """Fit SASS counts on the group features: ``SASS ~ base + int_simple + sum_g w_g * f_g``.

    The unit is fixed, not fitted: one integer add is one SASS instruction (``int_simple``
    weight 1.0; on these kernels its column is almost collinear with the base, so a free fit
    sets it to zero). The other weights are non-negative least squares with a ridge toward
    1.0 (:data:`PRIOR`), so a group the data cannot separate keeps the hand-set cost."""
    import numpy as np
    from scipy.optimize import nnls

    groups = [g for g in GROUPS if g != "int_simple" and sum(1 for _, f, _ in pts if f.get(g)) >= MIN_PROGRAMS]
    a = np.array([[1.0] + [f.get(g, 0.0) for g in groups] for _, f, _ in pts])
    unit = np.array([f.get("int_simple", 0.0) for _, f, _ in pts])
    y = np.array([float(s) for _, _, s in pts])
    lam = PRIOR * np.sqrt((a[:, 1:] ** 2).sum(axis=0))
    prior_rows = np.hstack([np.zeros((len(groups), 1)), np.diag(lam)])
    w, _ = nnls(np.vstack([a, prior_rows]), np.concatenate([y - unit, lam]))
    pred = a @ w + unit
    return {"base": float(w[0]), "weights": {"int_simple": 1.0, **{g: float(x) for g, x in zip(groups, w[1:], strict=True)}},
            "residual": float(np.sqrt(((y - pred) ** 2).sum())),
            "r2": float(1 - ((y - pred) ** 2).sum() / max(((y - y.mean()) ** 2).sum(), 1e-9)),
            "spearman_fit": spearman(list(pred), list(y)), "points": len(pts)}


def calibration(weights: dict[str, float]) -> dict[str, float]:
    """Multipliers of the default per-lane costs (``int_simple`` is the unit), clamped to :data:`CLAMP`."""
    return {g: round(min(max(w, CLAMP[0]), CLAMP[1]), 3) for g, w in weights.items() if g != "int_simple"}


def table_spearman(pts: list[tuple[str, dict[str, float], int]], table: dict[str, float] | None) -> float:
    """Spearman of ``sum(table[g] * f_g)`` (default table: every multiplier 1) with the SASS counts of ``pts``."""
    table = table or {}
    cost = [sum(v * table.get(g, 1.0) for g, v in f.items()) for _, f, _ in pts]
    return spearman(cost, [s for _, _, s in pts])


def model_spearman(res: dict[str, Any], target: str, table: dict[str, float] | None) -> float | None:
    """Spearman of the model's cost (default table when ``table`` is None) with SASS counts."""
    pts = points(res, target)
    return table_spearman(pts, table) if len(pts) >= 3 else None


def split(pts: list[tuple[str, dict[str, float], int]], fold: int = HOLDOUT - 1) -> tuple[list, list]:
    """``(train, held_out)``: the kernel names (sorted) at ``fold``, ``fold + HOLDOUT``, ... with
    all their variants held out, so that a kernel's optimized and unoptimized programs never
    straddle the split (``fold`` in ``range(HOLDOUT)``; the folds partition the kernels)."""
    names = sorted({label.split("/")[0] for label, _, _ in pts})
    held = set(names[fold::HOLDOUT])
    return ([p for p in pts if p[0].split("/")[0] not in held], [p for p in pts if p[0].split("/")[0] in held])


def holdout(pts: list[tuple[str, dict[str, float], int]]) -> dict[str, Any]:
    """Fit on the training kernels, report the Spearman of the default and of the fitted table
    on the held-out kernels (the check that the calibration generalizes): the main split (the
    last fold) in full, and the held-out Spearman of every fold."""
    train, test = split(pts)
    table = calibration(fit(train)["weights"])
    folds = []
    for k in range(HOLDOUT):
        tr, te = split(pts, k)
        if len(te) >= 3 and len(tr) >= 3:
            folds.append({"held_out_points": len(te), "spearman_held_out_default": table_spearman(te, None),
                          "spearman_held_out_calibrated": table_spearman(te, calibration(fit(tr)["weights"]))})
    return {"train_points": len(train), "held_out_points": len(test),
            "held_out_kernels": sorted({p[0].split("/")[0] for p in test}), "calibration": table,
            "spearman_train_calibrated": table_spearman(train, table),
            "spearman_held_out_default": table_spearman(test, None),
            "spearman_held_out_calibrated": table_spearman(test, table), "folds": folds}


_BLOCK = re.compile(r"(# BEGIN CALIBRATION[^\n]*\n)(.*?)(\s*# END CALIBRATION)", re.S)


def write_table(tables: dict[str, dict[str, float]], path: Path = COST_PY) -> None:
    """Replace the calibration table in ``optimizer/cost.py`` (between its markers)."""
    text = path.read_text()
    body = "CALIBRATION: dict[str, dict[str, float]] = " + json.dumps(tables, indent=4, sort_keys=True)
    new, n = _BLOCK.subn(lambda m: m.group(1) + body + m.group(3), text)
    if n != 1:
        raise SystemExit(f"{path}: no '# BEGIN CALIBRATION' ... '# END CALIBRATION' block to replace")
    path.write_text(new)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench cost-fit", description="fit optimizer/cost.py on SASS counts")
    ap.add_argument("--json", default="bench/results/naive.json", help="output of python -m bench naive")
    ap.add_argument("--write", action="store_true", help="write the fitted tables into optimizer/cost.py")
    ap.add_argument("--out", default="bench/results/cost_fit.json", help="fit report (default %(default)s)")
    a = ap.parse_args(argv)
    res = json.loads((REPO / a.json if not Path(a.json).is_absolute() else Path(a.json)).read_text())
    report: dict[str, Any] = {}
    tables: dict[str, dict[str, float]] = {}
    for target in res["meta"]["targets"]:
        pts = points(res, target)
        if len(pts) < 3:
            print(f"{target}: too few programs ({len(pts)}) to fit", file=sys.stderr)
            continue
        f = fit(pts)
        tables[target] = calibration(f["weights"])
        f["calibration"] = tables[target]
        f["spearman_default"] = model_spearman(res, target, None)
        f["spearman_calibrated"] = model_spearman(res, target, tables[target])
        f["holdout"] = h = holdout(pts)
        report[target] = f
        print(f"{target}: {f['points']} programs, R^2 {f['r2']:.3f}, Spearman default {f['spearman_default']:.3f} "
              f"-> calibrated {f['spearman_calibrated']:.3f}; held out ({h['held_out_points']} programs, fit on "
              f"{h['train_points']}): default {h['spearman_held_out_default']:.3f} -> calibrated "
              f"{h['spearman_held_out_calibrated']:.3f} (folds: "
              + ", ".join(f"{x['spearman_held_out_default']:.2f} -> {x['spearman_held_out_calibrated']:.2f}"
                          for x in h["folds"]) + f"); table {tables[target]}", file=sys.stderr)
    out = REPO / a.out if not Path(a.out).is_absolute() else Path(a.out)
    out.write_text(json.dumps(report, indent=1))
    if a.write and tables:
        write_table(tables)
        print(f"wrote the calibration table into {COST_PY}", file=sys.stderr)
    return 0
