"""Measure issue #14's verification goal on a corpus of real peephole rules
(`bench/peephole_corpus.py`): every (rule, dtype) instance is verified with the rule verifier at
its default budget and compared with the verdict expected by hand.

    python -m bench.peephole [--only NAME,NAME] [--workers N] [--out bench/results/peephole.json]

Reports decided % (proved + refuted with a counterexample, over all instances), false proofs
(proved where the corpus expects unsound), false refutations (refuted where expected sound, or a
printed counterexample that the independent re-evaluation of `bench/peephole_eval.py` does not
confirm), unknown and reduced-width counts, and every disagreement with its detail."""

from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from bench.peephole_corpus import CORPUS, Entry

OUT = Path(__file__).parent / "results" / "peephole.json"
#: a fixed 10-rule subset for the fast test: sound and unsound, integer and float, guarded
FAST_SUBSET = ("paper-not-plus-one", "select-lt-min", "sdiv-pow2-nofix", "and-mask-range", "div-self",
               "shl-shl-wide", "fadd-zero", "fadd-negzero", "fneg-add", "fmax-neginf-nnan")


def check_entry(entry: Entry) -> list[dict[str, Any]]:
    """Verify one corpus entry at its dtypes; one row per dtype."""
    from bench.peephole_eval import DTYPES, Unconfirmed, confirm
    from eggpu.optimizer.rule_verifier import DEFAULT_TIMEOUT_MS, assignments, verify_rule
    from eggpu.optimizer.rules_loader import parse_rule

    rule = parse_rule(entry.text())
    rows = []
    for dname in entry.dtypes:
        d = DTYPES[dname]
        t0 = time.perf_counter()
        # a rule without dtype variables (concrete (F32) ...) has the one assignment {} at any pool
        v = verify_rule(rule, timeout_ms=DEFAULT_TIMEOUT_MS, dtypes=[d])
        secs = time.perf_counter() - t0
        row: dict[str, Any] = {"rule": entry.name, "dtype": dname, "expected": entry.expected(dname),
                               "seconds": round(secs, 3)}
        if len(v.results) != 1:
            row.update(status="no-match", detail=v.note or f"{len(v.results)} results")
        else:
            r = v.results[0]
            row.update(status=r.status, strategy=r.strategy, detail=r.detail, cex=r.counterexample, rlimit=r.rlimit)
            if r.status == "refuted":
                try:
                    env = (assignments(rule, [d]) or [{}])[0]
                    row["recomputed"] = confirm(rule, env, r.counterexample or {})
                except Unconfirmed as e:
                    row["unconfirmed"] = str(e)
        row["verdict"] = classify(row)
        rows.append(row)
    return rows


def classify(row: dict[str, Any]) -> str:
    """``correct``, ``false-proof``, ``false-refutation``, ``unknown``, ``reduced-width`` or ``no-match``."""
    st, exp = row["status"], row["expected"]
    if st == "proved":
        return "correct" if exp == "sound" else "false-proof"
    if st == "refuted":
        if exp == "sound" or "unconfirmed" in row:
            return "false-refutation"
        return "correct"
    if st == "proved-reduced-width":
        return "reduced-width"
    return st if st in ("unknown", "no-match") else "unknown"


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    n = len(rows)
    count = {k: sum(r["verdict"] == k for r in rows) for k in
             ("correct", "false-proof", "false-refutation", "unknown", "reduced-width", "no-match")}
    decided = sum(r["status"] in ("proved", "refuted") for r in rows)
    return {"rules": len({r["rule"] for r in rows}), "instances": n, "decided": decided,
            "decided_pct": round(100.0 * decided / n, 2) if n else 0.0,
            "proved": sum(r["status"] == "proved" for r in rows),
            "refuted": sum(r["status"] == "refuted" for r in rows),
            "expected_sound": sum(r["expected"] == "sound" for r in rows),
            "expected_unsound": sum(r["expected"] == "unsound" for r in rows),
            **{k.replace("-", "_"): v for k, v in count.items()},
            "goal_met": n > 0 and decided >= 0.98 * n and count["false-proof"] == 0 and count["false-refutation"] == 0}


def run(entries: list[Entry], workers: int = 1, progress: bool = False) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    if workers <= 1:
        results = map(check_entry, entries)
    else:
        pool = ProcessPoolExecutor(workers)
        results = pool.map(check_entry, entries)
    for i, rs in enumerate(results, 1):
        rows.extend(rs)
        if progress:
            bad = [f"{r['dtype']}:{r['verdict']}" for r in rs if r["verdict"] != "correct"]
            print(f"[{i}/{len(entries)}] {rs[0]['rule'] if rs else '?'} {' '.join(bad)}", file=sys.stderr, flush=True)
    if workers > 1:
        pool.shutdown()
    return rows, summarize(rows)


COLUMNS = ("rule", "dtype", "expected", "status", "verdict", "strategy", "rlimit", "seconds")


def compact(row: dict[str, Any]) -> list[Any]:
    """The row as stored in the results file: the values of :data:`COLUMNS`, then a dict with the
    counterexample (``cex``) and the values recomputed by :mod:`bench.peephole_eval` of a
    refutation, and the verifier's detail (cut to 300 characters) where the verdict is not correct."""
    extra = {k: row[k] for k in ("cex", "recomputed", "unconfirmed") if row.get(k)}
    if row["verdict"] != "correct":
        extra["detail"] = str(row.get("detail", ""))[:300]
    return [row.get(k, "") for k in COLUMNS] + ([extra] if extra else [])


def write_results(path: Path, summary: dict[str, Any], rows: list[dict[str, Any]]) -> None:
    """``{"summary": ..., "columns": COLUMNS, "rows": [[...], ...]}``, one row per line."""
    path.parent.mkdir(parents=True, exist_ok=True)
    body = ",\n".join(json.dumps(compact(r)) for r in rows)
    path.write_text('{"summary": ' + json.dumps(summary) + ',\n"columns": ' + json.dumps(COLUMNS)
                    + ',\n"rows": [\n' + body + "\n]}\n")


def read_results(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The summary and the rows (as dicts) of a results file written by :func:`write_results`."""
    d = json.loads(path.read_text())
    rows = []
    for r in d["rows"]:
        row = dict(zip(d["columns"], r))
        if len(r) > len(d["columns"]):
            row.update(r[-1])
        rows.append(row)
    return d["summary"], rows


def table(summary: dict[str, Any]) -> str:
    s = summary
    return "\n".join([
        "| rules | instances | decided | proved | refuted | unknown | reduced-width | false proofs | false refutations |",
        "|---|---|---|---|---|---|---|---|---|",
        f"| {s['rules']} | {s['instances']} | {s['decided']} ({s['decided_pct']} %) | {s['proved']} | {s['refuted']} "
        f"| {s['unknown']} | {s['reduced_width']} | {s['false_proof']} | {s['false_refutation']} |"])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.peephole", description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="", help="comma-separated rule names (default: the whole corpus)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", default=str(OUT))
    a = ap.parse_args(argv)
    names = [n for n in a.only.split(",") if n]
    entries = [e for e in CORPUS if not names or e.name in names]
    t0 = time.perf_counter()
    rows, summary = run(entries, a.workers, progress=True)
    summary["seconds"] = round(time.perf_counter() - t0, 1)
    write_results(Path(a.out), summary, rows)
    print(table(summary))
    for r in rows:
        if r["verdict"] != "correct":
            print(f"{r['verdict']}: {r['rule']} @ {r['dtype']} (expected {r['expected']}, got {r['status']}): "
                  f"{r.get('unconfirmed') or r.get('detail', '')} {r.get('cex') or ''}")
    print(json.dumps(summary))
    return 0 if summary["goal_met"] else 1


if __name__ == "__main__":
    sys.exit(main())
