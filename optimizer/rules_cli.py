"""``eggpu rules check``: load rule files, verify every rule, print a table.

Exit codes: 0 when no rule is refuted (unknown verdicts are reported but do not fail), 1 when any
rule is refuted or can never fire (no dtype assignment can match it: the row says why), 2 when a file cannot be loaded (the RuleError message, ``file:line: rule 'name':
problem``, is printed).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from typing import TextIO

from eggpu.ir.errors import RuleError

EXIT_OK, EXIT_REFUTED, EXIT_LOAD_ERROR = 0, 1, 2


def check_rules(
    paths: Sequence[str | os.PathLike] | None = None,
    *,
    out: TextIO | None = None,
    timeout_ms: int | None = None,
    use_cache: bool = True,
    shipped: bool | None = None,
    progress: bool = True,
    raise_load_errors: bool = False,
) -> int:
    """Verify the rules of ``paths`` (files or directories; default: the shipped rules) and print
    one row per rule: name, file:line, ruleset, verdict per dtype, counterexample, seconds.

    ``shipped`` defaults to "only when no path is given"; when paths are given the shipped rules
    are still loaded (not printed) if ``shipped`` is True, so user rule names are checked for
    duplicates against them. A file that cannot be loaded prints ``error: ...`` to ``out`` and
    returns 2, or raises the RuleError with ``raise_load_errors`` (the ``eggpu`` command reports
    it on stderr)."""
    from .rule_verifier import DEFAULT_TIMEOUT_MS, REFUTED, UNKNOWN, verify_rules
    from .rules_loader import load_rules

    out = out or sys.stdout
    paths = list(paths or [])
    include_shipped = (not paths) if shipped is None else shipped
    try:
        loaded = load_rules(paths, shipped=include_shipped, env=False)
    except RuleError as e:
        if raise_load_errors:
            raise
        print(f"error: {e}", file=out)
        return EXIT_LOAD_ERROR
    rules = loaded.rules
    if paths and include_shipped:
        from pathlib import Path

        wanted = {str(Path(p)) for p in paths}
        rules = [r for r in rules if not r.file.startswith("rules/") or r.file in wanted]
    if not rules:
        print("no rules found", file=out)
        return EXIT_OK
    t0 = time.perf_counter()

    def report(done: int, total: int, v) -> None:
        if progress and total > 1:
            err = getattr(out, "isatty", lambda: False)()
            line = f"[{done}/{total}] {v.rule}: {v.status}{' (cached)' if v.cached else ''}"
            print(line, end="\r" if err else "\n", file=sys.stderr if err else out)

    verdicts = verify_rules(rules, timeout_ms=timeout_ms or DEFAULT_TIMEOUT_MS, progress=report,
                            use_cache=use_cache)
    wall = time.perf_counter() - t0
    rows = []
    for r in rules:
        v = verdicts[r.name]
        cex = ""
        bad = v.first(REFUTED) or v.first(UNKNOWN)
        if bad is not None:
            cex = f"[{bad.key}] " + (bad.format_counterexample() or "")
            if bad.detail:
                cex += ("; " if bad.format_counterexample() else "") + bad.detail
        rows.append((r.name, r.location, r.ruleset, v.summary(), cex, f"{v.seconds:.2f}s" + (" (cached)" if v.cached else "")))
    heads = ("rule", "location", "ruleset", "verdict", "counterexample / note", "time")
    widths = [max(len(h), *(len(row[i]) for row in rows)) if i < 3 else len(h) for i, h in enumerate(heads)]
    print("  ".join(h.ljust(widths[i]) for i, h in enumerate(heads[:3])) + "  " + "  ".join(heads[3:]), file=out)
    for row in rows:
        print("  ".join(row[i].ljust(widths[i]) for i in range(3)) + "  " + row[3]
              + (f"  | {row[4]}" if row[4] else "") + f"  ({row[5]})", file=out)
    n_ref = sum(1 for r in rules if verdicts[r.name].refuted)
    n_never = sum(1 for r in rules if not verdicts[r.name].results)
    n_unk = sum(1 for r in rules if verdicts[r.name].results and not verdicts[r.name].refuted
                and not verdicts[r.name].usable)
    n_red = sum(1 for r in rules if verdicts[r.name].status == "proved-reduced-width")
    print(f"\n{len(rules)} rules: {len(rules) - n_ref - n_unk - n_never} usable, {n_ref} refuted, {n_unk} unknown or "
          f"reduced width only (not used; {n_red} proved at reduced width + sampling), {n_never} never fire; "
          f"{wall:.1f}s", file=out)
    return EXIT_REFUTED if n_ref or n_never else EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:  # pragma: no cover - thin wrapper
    import argparse

    p = argparse.ArgumentParser(prog="eggpu rules check")
    p.add_argument("files", nargs="*")
    p.add_argument("--timeout-ms", type=int, default=None)
    p.add_argument("--no-cache", action="store_true")
    a = p.parse_args(argv)
    return check_rules(a.files, timeout_ms=a.timeout_ms, use_cache=not a.no_cache)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
