"""Verdicts of the rule verifier: the per-dtype statuses, :class:`DtypeResult` (one rule at one
dtype assignment), :class:`RuleVerdict` (all of one rule) with their JSON forms, and
:func:`compress_keys` for printing dtype lists. No z3 here."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
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


class ProvedVerdict(RuleVerdict):
    """A verdict known to be fully proved (every dtype ``proved``) before its per-dtype results are
    read: ``usable``, ``status`` and ``refuted`` answer without them; ``results``, ``seconds``
    and ``note`` call ``load`` (the full :class:`RuleVerdict`) the first time anyone reads them.
    Used for the shipped verdicts the proof digest vouches for (:mod:`.shipped_proofs`): a compile
    needs only to know that a rule is proved. Compares equal to the :class:`RuleVerdict` it loads.
    ``load`` must return a verdict of the same rule; one that is not fully proved raises
    :class:`~eggpu.ir.errors.VerificationError` (the digest and the file disagree)."""

    def __init__(self, rule: str, location: str, ruleset: str, load: Callable[[], RuleVerdict],
                 cached: bool = True) -> None:  # no dataclass __init__: the lazy fields stay unset
        self.rule, self.location, self.ruleset, self.cached = rule, location, ruleset, cached
        self._load: Callable[[], RuleVerdict] | None = load
        self._full: dict[str, Any] | None = None

    def _fields(self) -> dict[str, Any]:
        if self._full is None:
            from eggpu.ir.errors import VerificationError

            assert self._load is not None
            v = self._load()
            if not (v.results and all(r.status == PROVED for r in v.results)):
                raise VerificationError(f"{self.location}: rule {self.rule!r}: the proof digest says proved, "
                                        f"its verdict says {v.summary()}")
            self._full, self._load = {"results": v.results, "seconds": v.seconds, "note": v.note}, None
        return self._full

    def _setter(name: str):  # noqa: N805 - a helper run at class creation
        return lambda self, value: self._fields().__setitem__(name, value)

    results = property(lambda self: self._fields()["results"], _setter("results"))  # type: ignore[assignment]
    seconds = property(lambda self: self._fields()["seconds"], _setter("seconds"))  # type: ignore[assignment]
    note = property(lambda self: self._fields()["note"], _setter("note"))  # type: ignore[assignment]
    del _setter

    @property
    def usable(self) -> bool:
        return True if self._full is None else RuleVerdict.usable.fget(self)  # type: ignore[attr-defined]

    @property
    def status(self) -> str:
        return PROVED if self._full is None else RuleVerdict.status.fget(self)  # type: ignore[attr-defined]

    @property
    def refuted(self) -> bool:
        return False if self._full is None else RuleVerdict.refuted.fget(self)  # type: ignore[attr-defined]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RuleVerdict):
            return NotImplemented
        names = ("rule", "location", "ruleset", "results", "seconds", "cached", "note")
        return all(getattr(self, n) == getattr(other, n) for n in names)

    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self) -> tuple:
        """Pickled and copied as the plain :class:`RuleVerdict` it loads (``load`` is a closure)."""
        return (RuleVerdict, (self.rule, self.location, self.ruleset, self.results, self.seconds, self.cached,
                              self.note))


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
