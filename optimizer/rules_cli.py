"""``eggpu rules check``: load rule files, verify every rule, print a table.

Exit codes: 0 when no rule is refuted (unknown verdicts are reported but do not fail), 1 when any
rule is refuted or can never fire (no dtype assignment can match it: the row says why), 2 when a file cannot be loaded (the RuleError message, ``file:line: rule 'name':
problem``, is printed).
"""

from __future__ import annotations

import json
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
    as_json: bool = False,
    per_dtype: bool = False,
) -> int:
    """Verify the rules of ``paths`` (files or directories; default: the shipped rules) and print
    one row per rule: name, file:line, ruleset, verdict per dtype, counterexample, seconds.

    ``shipped`` defaults to "only when no path is given"; when paths are given the shipped rules
    are still loaded (not printed) if ``shipped`` is True, so user rule names are checked for
    duplicates against them. A file that cannot be loaded prints ``error: ...`` to ``out`` and
    returns 2, or raises the RuleError with ``raise_load_errors`` (the ``eggpu`` command reports
    it on stderr).

    ``per_dtype`` adds one indented row per (rule, dtype assignment) under each rule: its verdict,
    seconds and the verifier's note (which strategy decided it, or why it did not). ``as_json``
    prints one JSON document instead of the table (see :func:`verdicts_json`); progress then goes
    to stderr only. The exit code is the same in every format."""
    from .rule_verifier import DEFAULT_TIMEOUT_MS, verify_rules

    out = out or sys.stdout
    try:
        rules = _load(list(paths or []), shipped)
    except RuleError as e:
        if raise_load_errors:
            raise
        print(f"error: {e}", file=out)
        return EXIT_LOAD_ERROR
    if not rules:
        print("no rules found", file=out)
        return EXIT_OK
    t0 = time.perf_counter()
    verdicts = verify_rules(rules, timeout_ms=timeout_ms or DEFAULT_TIMEOUT_MS,
                            progress=_progress(out, progress, as_json), use_cache=use_cache)
    wall = time.perf_counter() - t0
    counts = _counts(rules, verdicts)
    if as_json:
        json.dump(verdicts_json(rules, verdicts, counts, wall), out, indent=1)
        print(file=out)
    else:
        _print_table(rules, verdicts, out, per_dtype)
        print(f"\n{len(rules)} rules: {counts['usable']} usable, {counts['refuted']} refuted, {counts['unknown']} "
              f"unknown or reduced width only (not used; {counts['reduced_width']} proved at reduced width + "
              f"sampling), {counts['never_fire']} never fire; {wall:.1f}s", file=out)
    return EXIT_REFUTED if counts["refuted"] or counts["never_fire"] else EXIT_OK


def _load(paths: list, shipped: bool | None) -> list:
    """The rules to check: those of ``paths`` (the shipped ones are loaded too when ``shipped``,
    for duplicate names, but not checked), or the shipped rules when no path is given. Raises
    RuleError when a file cannot be loaded."""
    from .rules_loader import load_rules

    include_shipped = (not paths) if shipped is None else shipped
    rules = load_rules(paths, shipped=include_shipped, env=False).rules
    if paths and include_shipped:
        from pathlib import Path

        wanted = {str(Path(p)) for p in paths}
        rules = [r for r in rules if not r.file.startswith("rules/") or r.file in wanted]
    return rules


def _progress(out: TextIO, progress: bool, as_json: bool):
    """The progress callback of :func:`verify_rules`: one line per rule on a terminal (overwritten)
    or in a log; never mixed into a JSON document on ``out``."""

    def report(done: int, total: int, v) -> None:
        if not progress or total <= 1:
            return
        err = getattr(sys.stderr if as_json else out, "isatty", lambda: False)()
        if as_json and not err:  # the JSON document alone on out; no progress lines in a log
            return
        line = f"[{done}/{total}] {v.rule}: {v.status}{' (cached)' if v.cached else ''}"
        print(line, end="\r" if err else "\n", file=sys.stderr if err else out)

    return report


def _row(r, v) -> tuple[str, ...]:
    """One table row: name, location, ruleset, verdict summary, counterexample or note, time."""
    from .rule_verifier import REFUTED, UNKNOWN

    cex = ""
    bad = v.first(REFUTED) or v.first(UNKNOWN)
    if bad is not None:
        cex = f"[{bad.key}] " + (bad.format_counterexample() or "")
        if bad.detail:
            cex += ("; " if bad.format_counterexample() else "") + bad.detail
    return (r.name, r.location, r.ruleset, v.summary(), cex, f"{v.seconds:.2f}s" + (" (cached)" if v.cached else ""))


def _print_table(rules, verdicts, out: TextIO, per_dtype: bool) -> None:
    """The rule table; with ``per_dtype`` one indented row per dtype assignment: verdict, seconds,
    the deciding strategy with the z3 resource units used, and the verifier's note."""
    rows = [_row(r, verdicts[r.name]) for r in rules]
    heads = ("rule", "location", "ruleset", "verdict", "counterexample / note", "time")
    widths = [max(len(h), *(len(row[i]) for row in rows)) if i < 3 else len(h) for i, h in enumerate(heads)]
    print("  ".join(h.ljust(widths[i]) for i, h in enumerate(heads[:3])) + "  " + "  ".join(heads[3:]), file=out)
    for r, row in zip(rules, rows):
        print("  ".join(row[i].ljust(widths[i]) for i in range(3)) + "  " + row[3]
              + (f"  | {row[4]}" if row[4] else "") + f"  ({row[5]})", file=out)
        if per_dtype:
            for x in verdicts[r.name].results:
                note = "; ".join(t for t in (x.format_counterexample() or "", x.detail) if t)
                how = f"{x.strategy or '-'} {x.rlimit} units"
                print(f"    {x.key:<24} {x.status:<22} {x.seconds:7.3f}s  {how:<28}" + (f"  {note}" if note else ""),
                      file=out)


def _counts(rules, verdicts) -> dict[str, int]:
    """How many rules are usable, refuted, unknown (or reduced width only), never fire."""
    vs = [verdicts[r.name] for r in rules]
    refuted = sum(1 for v in vs if v.refuted)
    never = sum(1 for v in vs if not v.results)
    unknown = sum(1 for v in vs if v.results and not v.refuted and not v.usable)
    reduced = sum(1 for v in vs if v.status == "proved-reduced-width")
    return {"rules": len(vs), "usable": len(vs) - refuted - unknown - never, "refuted": refuted,
            "unknown": unknown, "reduced_width": reduced, "never_fire": never}


def verdicts_json(rules, verdicts, counts: dict[str, int], seconds: float) -> dict:
    """The machine-readable form of ``eggpu rules check --json``::

        {"summary": {"rules", "usable", "refuted", "unknown", "reduced_width", "never_fire"},
         "seconds": wall time,
         "rules": [{"rule", "location", "ruleset", "status", "usable", "cached", "seconds", "note",
                    "dtypes": [{"key", "status", "counterexample", "detail", "seconds", "strategy",
                                "rlimit"}]}]}

    ``key`` names the dtype assignment (``t=i32``); ``counterexample`` is the formatted, concretely
    re-evaluated counterexample (``lhs = ..., rhs = ...``) or null; ``detail`` is the verifier's note;
    ``strategy`` what decided the verdict and ``rlimit`` the z3 resource units it took (see
    :class:`~.rule_verdicts.DtypeResult`)."""
    out = []
    for r in rules:
        v = verdicts[r.name]
        out.append({"rule": r.name, "location": r.location, "ruleset": r.ruleset, "status": v.status,
                    "usable": v.usable, "cached": v.cached, "seconds": round(v.seconds, 4), "note": v.note,
                    "dtypes": [{"key": x.key, "status": x.status, "counterexample": x.format_counterexample() or None,
                                "detail": x.detail, "seconds": round(x.seconds, 4), "strategy": x.strategy,
                                "rlimit": x.rlimit} for x in v.results]})
    return {"summary": counts, "seconds": round(seconds, 3), "rules": out}


# ------------------------------------------------------------------ rules synthesize

#: the dtypes ``eggpu rules synthesize`` enumerates by default
DEFAULT_SYNTH_DTYPES = "i32,f32"


class SynthesizeArgError(RuleError):
    """A bad argument of ``eggpu rules synthesize`` (the message names the option)."""


def parse_synth_dtypes(text: str) -> list:
    """``"i32,f32"`` -> the dtypes; SynthesizeArgError naming ``--dtypes`` for an empty list, an
    unknown, duplicate or unsupported (bool, pointer) name."""
    from eggpu.ir.dtypes import BY_NAME

    names = [n.strip() for n in text.split(",")]
    if not text.strip() or any(not n for n in names):
        raise SynthesizeArgError(f"--dtypes: expected comma-separated dtype names such as i32,f32, got {text!r}")
    out = []
    allowed = [n for n, d in BY_NAME.items() if d.is_int or d.is_float]
    for n in names:
        d = BY_NAME.get(n)
        if d is None or n not in allowed:
            why = "bool terms are enumerated with every dtype" if n == "bool" else "unknown dtype"
            raise SynthesizeArgError(f"--dtypes: {why} {n!r} (choose from {', '.join(allowed)})")
        if d in out:
            raise SynthesizeArgError(f"--dtypes: {n!r} is given twice")
        out.append(d)
    return out


def synthesize_rules(
    out_path: str | os.PathLike,
    *,
    max_size: int,
    time_limit: float,
    dtypes: str = DEFAULT_SYNTH_DTYPES,
    n_vars: int = 2,
    proof_ms: int | None = None,
    progress: bool = True,
    command: str = "",
) -> int:
    """``eggpu rules synthesize``: run :func:`.synthesize.synthesize`, write the rules to
    ``out_path`` (atomically: a temporary file renamed into place; the folder must exist), then
    load the file back with the rules loader (as the compiler will). Progress lines and the
    summary go to stderr. Returns 0; bad arguments raise :class:`SynthesizeArgError` before any
    work starts."""
    from pathlib import Path

    from .synthesize import DEFAULT_PROOF_MS, MAX_SIZE_LIMIT, egg_text, remember_proofs, synthesize

    if not 1 <= max_size <= MAX_SIZE_LIMIT:
        raise SynthesizeArgError(f"--max-size: must be between 1 and {MAX_SIZE_LIMIT}, got {max_size}")
    if not (time_limit > 0 and time_limit < float("inf")):
        raise SynthesizeArgError(f"--time-limit: must be a positive number of seconds, got {time_limit}")
    if not 1 <= n_vars <= 3:
        raise SynthesizeArgError(f"--vars: must be 1, 2 or 3, got {n_vars}")
    dts = parse_synth_dtypes(dtypes)
    out = Path(out_path)
    if out.is_dir():
        raise SynthesizeArgError(f"--out: {out} is a directory (give a file name such as {out / 'synth.egg'})")
    if not out.parent.is_dir():
        raise SynthesizeArgError(f"--out: folder {out.parent} does not exist")
    t0 = time.perf_counter()

    def say(msg: str) -> None:
        if progress:
            print(f"[{time.perf_counter() - t0:6.1f}s] {msg}", file=sys.stderr, flush=True)

    res = synthesize(dts, max_size=max_size, time_limit=time_limit, n_vars=n_vars,
                     proof_ms=proof_ms or DEFAULT_PROOF_MS, progress=say)
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    tmp.write_text(egg_text(res, command), encoding="utf-8")
    os.replace(tmp, out)
    from .rules_loader import load_rule_files

    loaded = load_rule_files([out])
    remember_proofs(res, loaded.rules)  # the first compile with the file need not prove them again
    print(f"{res.summary()}\nwrote {len(loaded.rules)} rules to {out}", file=sys.stderr)
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:  # pragma: no cover - thin wrapper
    import argparse

    p = argparse.ArgumentParser(prog="eggpu rules check")
    p.add_argument("files", nargs="*")
    p.add_argument("--timeout-ms", type=int, default=None)
    p.add_argument("--no-cache", action="store_true")
    p.add_argument("--json", action="store_true")
    p.add_argument("--per-dtype", action="store_true")
    a = p.parse_args(argv)
    return check_rules(a.files, timeout_ms=a.timeout_ms, use_cache=not a.no_cache, as_json=a.json,
                       per_dtype=a.per_dtype)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
