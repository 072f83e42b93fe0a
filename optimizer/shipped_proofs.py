"""Verdicts of the shipped rules, proved when the package is built and installed with it.

A fresh install would otherwise prove the ~200 shipped rules before its first compile (tens of
seconds, minutes on a loaded machine). ``rules/proofs.json`` holds their verdicts::

    {"budget": "1", "format": 1, "semantics": "2", "z3": "4.x.y", "egglog": "14.x",
     "egglog_accepted": [digest], "entries": {proof-cache key: verdict, one line per rule}}

Each key is the proof cache's key (:func:`.rule_verifier._cache_key`): the sha256 of the rule's
canonical text, kind and ruleset, the schema, verifier, semantics and budget versions
(:data:`.rule_budget.BUDGET_VERSION`); the z3 version that proved them is recorded in the head,
not keyed (a proof is a fact about the formula: another z3 release still finds every shipped
rule proved). Per-dtype results leave out their
defaults and their seconds (``rlimit``, the z3 resource units, is the deterministic cost).
So an entry only ever answers for the exact rule text it was proved for, under the same
semantics; an edited rule or a new semantics version misses and is proved
again (and lands in the user's proof cache). Nothing here is trusted blindly: entries are
checked for shape, and a file that is corrupt or not eggpu's is ignored with one
:class:`~eggpu.ir.cachefs.CacheWarning` (the rules are then proved as if it did not exist).
``eggpu rules check --no-cache`` re-proves everything on demand.

``egglog_accepted`` lists the digests (:func:`.rules_loader._accepted_digest`: the schema, the
rule program and egglog's version) of the shipped rule program that egglog accepted when the
file was generated, so a fresh install skips building a throw-away e-graph to check it (as the
``egglog-accepted/`` markers of the proof cache do after a first run). Another egglog version,
an edited rule or any extra rule file gives another digest, which is checked as before.

``rules/proofs.digest`` is the same knowledge compact, for the compile path: a process that
only needs to know that a shipped rule is proved (every compile) reads ~9 KB instead of parsing
and checking the whole JSON file (~280 KB, ~260 verdicts) and building every verdict. It is
binary: a magic, the sha256 of the exact ``proofs.json`` bytes it was made from, the keys of the
fully proved entries (raw sha256, sorted), the ``egglog_accepted`` digests, and a sha256 of all
of that. It is trusted only when both hashes check against the ``proofs.json`` read in this
process; otherwise (stale after an edit, corrupt, foreign) it is ignored with one warning and
``proofs.json`` is parsed as before (a missing digest silently falls back). A verdict answered
from it is a :class:`ShippedVerdict`, whose per-dtype results are read from ``proofs.json`` the
first time anyone asks for them (reports, ``eggpu rules check``).

Regenerate after editing a shipped rule (a test fails until you do)::

    python -m eggpu.optimizer.shipped_proofs            # proves every shipped rule, writes the file
    python -m eggpu.optimizer.shipped_proofs --update   # keeps the entries whose key still matches
                                                        # (same rule text, semantics, budget) and
                                                        # proves only new or edited rules

Both write ``proofs.json`` and its digest; ``--digest`` rewrites only the digest.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

FORMAT = 1
#: z3 budget per query when the file is generated (generous: this runs once, not per install)
GENERATION_TIMEOUT_MS = 30_000

_UNREAD: Any = object()
_raw: Any = _UNREAD  # proofs.json's bytes, read once per process (None: missing or unreadable)
_loaded: dict[str, Any] | None = None
_accepted: frozenset[str] = frozenset()
_digest: Any = _UNREAD  # (raw key -> fully proved, egglog-accepted digests) or None: not usable


def path() -> Path:
    """Where the shipped verdicts live: beside the shipped rule files."""
    import eggpu.rules

    return Path(eggpu.rules.__file__).parent / "proofs.json"


def digest_path() -> Path:
    """The compact digest of :func:`path` (:mod:`.proof_digest`), beside it."""
    return path().with_name("proofs.digest")


def _warn(problem: str) -> None:
    from eggpu.ir.cachefs import warn_once

    warn_once(f"eggpu: ignoring the shipped rule proofs {path()}: {problem}; the shipped rules are proved "
              "again (once, then cached)", key=f"shipped-proofs:{path()}")


def _warn_digest(problem: str) -> None:
    from eggpu.ir.cachefs import warn_once

    warn_once(f"eggpu: ignoring the shipped proof digest {digest_path()}: {problem}; reading {path().name} "
              "instead (slower; regenerate it: python -m eggpu.optimizer.shipped_proofs --digest)",
              key=f"shipped-digest:{digest_path()}")


def _file_bytes() -> bytes | None:
    """proofs.json's bytes (read once: the digest is checked against, and verdicts are parsed
    from, the same bytes); None when it is missing or unreadable (warned)."""
    global _raw
    if _raw is _UNREAD:
        try:
            _raw = path().read_bytes()
        except FileNotFoundError:
            _raw = None
        except OSError as e:
            _warn(str(e.strerror or e))
            _raw = None
    return _raw


def _parse(raw: bytes, *, warn: bool = True) -> tuple[dict[str, Any], frozenset[str]] | None:
    """(entries, egglog-accepted digests) of a proofs file's bytes; None when it is not a valid
    one (with a warning when ``warn``)."""
    from .proof_cache import _valid_verdict

    def bad(problem: str) -> None:
        if warn:
            _warn(problem)
        return None

    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        return bad(f"not JSON ({e})")
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or not isinstance(doc.get("entries"), dict):
        return bad("not an eggpu proofs file (format/entries missing)")
    entries = doc["entries"]
    good = {k: v for k, v in entries.items() if isinstance(k, str) and _valid_verdict(v)}
    if len(good) != len(entries):
        return bad(f"{len(entries) - len(good)} malformed entries")
    accepted = doc.get("egglog_accepted", [])
    ok = isinstance(accepted, list) and all(isinstance(d, str) and len(d) == 64 for d in accepted)
    return good, frozenset(accepted) if ok else frozenset()


def entries() -> dict[str, Any]:
    """The shipped verdicts by proof-cache key ({} when the file is missing or unusable)."""
    global _loaded, _accepted
    if _loaded is None:
        raw = _file_bytes()
        _loaded, _accepted = (_parse(raw) if raw is not None else None) or ({}, frozenset())
    return _loaded


def get(key: str) -> Any | None:
    return entries().get(key)


def _usable_digest() -> tuple[dict[bytes, bool], frozenset[str]] | None:
    """The digest's (raw key -> fully proved, egglog-accepted digests) when it was made from the
    proofs.json this process read; None when there is no usable digest (missing: silently;
    corrupt, foreign or stale: with one warning) — callers then use :func:`entries`."""
    global _digest
    if _digest is _UNREAD:
        _digest = None
        raw = _file_bytes()
        try:
            blob = digest_path().read_bytes() if raw is not None else None
        except FileNotFoundError:
            blob = None
        except OSError as e:
            _warn_digest(str(e.strerror or e))
            blob = None
        if blob is not None:
            from eggpu.ir.hashing import sha256

            from .proof_digest import decode

            got = decode(blob)
            if got is None:
                _warn_digest("corrupt or not an eggpu proof digest")
            elif got[0] != sha256(raw).digest():
                _warn_digest(f"it was made from another {path().name} (stale)")
            else:
                _digest = got[1], got[2]
    return _digest


def proved(key: str) -> bool | None:
    """Whether the shipped verdict of ``key`` is fully proved: True (known from the digest, the
    JSON file is not parsed), False (the file has no such entry), None (the digest cannot say:
    no usable digest, or an entry that is not fully proved; ask :func:`get`)."""
    digest = _usable_digest()
    if digest is None:
        return None
    try:
        ok = digest[0].get(bytes.fromhex(key))
    except ValueError:  # not a hex key: no entry of the file has it
        return False
    return False if ok is None else (True if ok else None)


def egglog_accepted(digest: str) -> bool:
    """Whether egglog accepted the rule program of this digest when the file was generated."""
    usable = _usable_digest()
    if usable is not None:
        return digest in usable[1]
    entries()
    return digest in _accepted


def write_digest(out: Path | None = None, source: Path | None = None) -> Path:
    """Write the digest of the proofs file ``source`` (default :func:`path`) to ``out`` (default
    beside it); raises ValueError when ``source`` is not a valid proofs file."""
    from .proof_digest import encode
    from .rule_verdicts import RuleVerdict

    src = source or path()
    raw = src.read_bytes()
    parsed = _parse(raw, warn=False)
    if parsed is None:
        raise ValueError(f"{src} is not a valid eggpu proofs file")
    good, accepted = parsed
    target = out or src.with_name("proofs.digest")
    target.write_bytes(encode(raw, {k: RuleVerdict.from_json(v).usable for k, v in good.items()}, accepted))
    return target


def _reset() -> None:
    """Forget the loaded file and digest (tests)."""
    global _loaded, _accepted, _raw, _digest
    _loaded = None
    _accepted = frozenset()
    _raw = _UNREAD
    _digest = _UNREAD


def generate(out: Path | None = None, *, timeout_ms: int = GENERATION_TIMEOUT_MS, progress: bool = True,
             update: bool = False) -> int:
    """Prove every shipped rule and write the file; returns the number of rules that are not fully
    proved (they are left out: they are proved at run time again and never used unless proved there).

    With ``update``, an entry of the current file whose key a shipped rule still has is kept
    as it is (the key binds the exact rule text, semantics, solver and budget, so this is the
    proof cache's own notion of "already proved"); only the other rules are proved, and entries
    no shipped rule has any more are dropped."""
    import z3

    from . import z3ops
    from .rule_budget import BUDGET_VERSION
    from .rule_verifier import UNKNOWN, _cache_key, verify_rules
    from .rules_loader import _accepted_digest, _egglog_run, load_rules

    loaded = load_rules([], shipped=True, env=False)
    rules = loaded.rules
    kept = {}
    if update:
        old = entries()
        kept = {k: old[k] for k in (_cache_key(r, timeout_ms) for r in rules) if k in old}
        rules_to_prove = [r for r in rules if _cache_key(r, timeout_ms) not in kept]
    else:
        rules_to_prove = rules

    def report(done: int, total: int, v: Any) -> None:
        if progress:
            print(f"\r[{done}/{total}] {v.rule}: {v.status}" + " " * 20, end="", file=sys.stderr, flush=True)

    verdicts = verify_rules(rules_to_prove, timeout_ms=timeout_ms, use_cache=False, progress=report)
    if progress:
        print(file=sys.stderr)
    doc_entries = dict(kept)
    missing = 0
    for r in rules_to_prove:
        v = verdicts[r.name]
        if any(x.status == UNKNOWN for x in v.results) or not v.results:
            missing += 1
            print(f"not shipped: {r.location}: {r.name}: {v.summary()}", file=sys.stderr)
            continue
        doc_entries[_cache_key(r, timeout_ms)] = v.to_json()
    head = {"budget": BUDGET_VERSION, "format": FORMAT, "semantics": z3ops.SEMANTICS_VERSION,
            "z3": z3.get_version_string()}
    digest = _accepted_digest(loaded.program())
    if digest is not None and _egglog_run(loaded.program(), "<shipped rules>") is None:
        from eggpu.ir.versions import version_of

        head["egglog"] = version_of("egglog")
        head["egglog_accepted"] = [digest]
    target = out or path()
    target.write_text(_dumps(head, doc_entries))
    write_digest(source=target)
    _reset()
    return missing


def _compact(verdict: dict[str, Any]) -> dict[str, Any]:
    """``verdict`` without the per-dtype fields at their defaults (no counterexample, no detail)
    and without per-dtype seconds (the generating machine's load; ``rlimit`` is the deterministic
    cost): :meth:`.rule_verdicts.DtypeResult.from_json` reads them back with their defaults."""
    dropped = {"cex": None, "detail": ""}
    results = [{k: v for k, v in r.items() if k != "seconds" and not (k in dropped and v == dropped[k])}
               for r in verdict["results"]]
    return {**verdict, "results": results}


def _dumps(head: dict[str, Any], doc_entries: dict[str, Any]) -> str:
    """The file's text: one line per rule (reviewable diffs, a smaller file than one line per field)."""
    lines = [json.dumps(k) + ": " + json.dumps(_compact(doc_entries[k]), sort_keys=True, separators=(",", ":"))
             for k in sorted(doc_entries)]
    head_txt = json.dumps(head, sort_keys=True)[1:-1]
    return "{" + head_txt + ',\n"entries": {\n' + ",\n".join(lines) + "\n}}\n"


def main(argv: list[str] | None = None) -> int:  # pragma: no cover - thin wrapper
    import argparse

    p = argparse.ArgumentParser(prog="python -m eggpu.optimizer.shipped_proofs",
                                description="prove every shipped rule and write rules/proofs.json")
    p.add_argument("-o", "--output", type=Path, default=None)
    p.add_argument("--timeout-ms", type=int, default=GENERATION_TIMEOUT_MS)
    p.add_argument("--update", action="store_true",
                   help="keep entries whose rule text, semantics, solver and budget are unchanged; prove the rest")
    p.add_argument("--digest", action="store_true",
                   help="only rewrite the compact digest (proofs.digest) of the proofs file; prove nothing")
    a = p.parse_args(argv)
    if a.timeout_ms <= 0:
        p.error("--timeout-ms must be positive")
    if a.digest:
        print(f"wrote {write_digest(source=a.output)}")
        return 0
    missing = generate(a.output, timeout_ms=a.timeout_ms, update=a.update)
    print(f"wrote {a.output or path()} and its digest; {missing} rule(s) not fully proved (left out)")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
