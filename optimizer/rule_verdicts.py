"""Verdicts of the rule verifier: the per-dtype statuses, :class:`DtypeResult` (one rule at one
dtype assignment), :class:`RuleVerdict` (all of one rule) with their JSON forms, and
:func:`compress_keys` for printing dtype lists. No z3 here."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from eggpu.ir import ALL_DTYPES

PROVED = "proved"
PROVED_REDUCED = "proved-reduced-width"
REFUTED = "refuted"
UNKNOWN = "unknown"
#: ``DtypeResult.strategy`` of verdicts not reached by a z3 strategy
SEARCH = "concrete-search"
ENCODING = "encoding"
USABLE = (PROVED,)  # reduced width + sampling is not a proof: reported, never used



# ------------------------------------------------------------------ results


@dataclass
class DtypeResult:
    """The verdict of one rule at one dtype assignment (``key``: ``"i32"`` or ``"t=i32,u=f32"``).

    ``strategy`` names what decided it: a z3 strategy of :data:`.rule_budget.UNITS_PER_MS`
    (``z3``, ``z3-fp``, ``z3-real``, ``qf_bv``, ``case-split``), ``concrete-search`` (a
    counterexample found by evaluation), ``encoding`` (decided or given up while building the
    query), ``reduced-width`` (the diagnostic) or ``""`` (nothing decided it: ``unknown``).
    ``rlimit`` is the z3 resource units the instance used in all checks: deterministic for a given
    query and z3, unlike ``seconds``."""

    key: str
    status: str
    counterexample: dict[str, str] | None = None
    detail: str = ""
    seconds: float = 0.0
    strategy: str = ""
    rlimit: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "status": self.status, "cex": self.counterexample, "detail": self.detail,
                "seconds": round(self.seconds, 4), "strategy": self.strategy, "rlimit": self.rlimit}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> DtypeResult:
        return cls(d["key"], d["status"], d.get("cex"), d.get("detail", ""), d.get("seconds", 0.0),
                   d.get("strategy", ""), d.get("rlimit", 0))

    def format_counterexample(self) -> str:
        if not self.counterexample:
            return ""
        return ", ".join(f"{k} = {v}" for k, v in self.counterexample.items())


@dataclass
class RuleVerdict:
    """All per-dtype results of one rule."""

    rule: str
    location: str
    ruleset: str
    results: list[DtypeResult] = field(default_factory=list)
    seconds: float = 0.0
    cached: bool = False
    note: str = ""

    @property
    def usable(self) -> bool:
        """True when every dtype the rule can match is fully proved."""
        return bool(self.results) and all(r.status in USABLE for r in self.results)

    @property
    def refuted(self) -> bool:
        return any(r.status == REFUTED for r in self.results)

    @property
    def status(self) -> str:
        """``refuted`` if any dtype is refuted, else ``unknown`` if any is, else
        ``proved-reduced-width`` if any is, else ``proved`` (``unknown`` when no dtype matches)."""
        sts = {r.status for r in self.results}
        for s in (REFUTED, UNKNOWN, PROVED_REDUCED):
            if s in sts:
                return s
        return PROVED if sts else UNKNOWN

    def first(self, status: str) -> DtypeResult | None:
        return next((r for r in self.results if r.status == status), None)

    @property
    def counterexample(self) -> dict[str, str] | None:
        r = self.first(REFUTED)
        return r.counterexample if r else None

    def to_json(self) -> dict[str, Any]:
        return {"rule": self.rule, "location": self.location, "ruleset": self.ruleset,
                "results": [r.to_json() for r in self.results], "seconds": round(self.seconds, 4),
                "note": self.note}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> RuleVerdict:
        return cls(d["rule"], d["location"], d["ruleset"], [DtypeResult.from_json(x) for x in d["results"]],
                   d.get("seconds", 0.0), note=d.get("note", ""))

    def summary(self) -> str:
        """One line per status: ``proved: i8 i16 i32 i64 u8..u64``."""
        by: dict[str, list[str]] = {}
        for r in self.results:
            by.setdefault(r.status, []).append(r.key)
        if not by:
            return "no dtype can match" + (f" ({self.note})" if self.note else "")
        return "; ".join(f"{s}: {compress_keys(ks)}" for s, ks in by.items())


def _compress_multi(keys: Sequence[str]) -> str | None:
    """``t=i8,u=i16`` style keys that form a full product -> ``t in i8..i64 x u in f16..f64``."""
    rows = [dict(p.split("=", 1) for p in k.split(",")) for k in keys]
    names = list(rows[0])
    if any(list(r) != names for r in rows):
        return None
    values = {n: list(dict.fromkeys(r[n] for r in rows)) for n in names}
    size = 1
    for v in values.values():
        size *= len(v)
    if size != len(set(keys)):
        return None
    return " x ".join(f"{n} in {compress_keys(values[n]) if len(values[n]) > 1 else values[n][0]}" for n in names)


_DT_ORDER = [d.name for d in ALL_DTYPES]
_RUNS = [["i8", "i16", "i32", "i64"], ["u8", "u16", "u32", "u64"], ["f16", "bf16", "f32", "f64"]]


def compress_keys(keys: Sequence[str]) -> str:
    """``i8 i16 i32 i64 u8 u16 u32 u64`` -> ``i8..i64 u8..u64`` (runs of 3+ of one family)."""
    ks = list(keys)
    if ks and all("=" in k for k in ks):
        multi = _compress_multi(ks)
        if multi is not None:
            return multi
    out: list[str] = []
    used: set[str] = set()
    for run in _RUNS:
        present = [k for k in run if k in ks]
        if len(present) >= 3 and present == run[run.index(present[0]):run.index(present[0]) + len(present)]:
            out.append(f"{present[0]}..{present[-1]}")
            used.update(present)
    rest = [k for k in ks if k not in used]
    order = {n: i for i, n in enumerate(_DT_ORDER)}
    rest.sort(key=lambda k: order.get(k, 99))
    merged = out + rest
    merged.sort(key=lambda k: order.get(k.split("..")[0], 99))
    return " ".join(merged)
