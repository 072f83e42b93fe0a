"""The result of translation validation (:mod:`.validate`, :mod:`.validate_terms`): z3-free, so
a compile whose validation needs no solver never imports z3."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Validation:
    """Result of :func:`validate`: ``verdict`` is ``"valid"``, ``"invalid"`` or ``"unknown"``."""

    verdict: str
    detail: str = ""
    checks: int = 0
    solver_calls: int = 0
    seconds: float = 0.0
    mode: str = "exact"  # "real" when floats were compared as real numbers (fast_math)
    #: z3 resource units of all solver checks (cached pair proofs charged at their recorded
    #: count): the same in every fresh process for the same pair of functions
    units: int = 0
    #: the whole validation's budget in units (``total_seconds`` converted by the z3 rate)
    budget_units: int = 0
    #: (strategy, units) for each strategy that ran a check, sorted by name
    strategies: tuple[tuple[str, int], ...] = ()
    #: True when the wall-clock safety cap (not the rlimit) stopped a check: load-dependent
    wall_capped: bool = False
    #: differing subterm pairs shown equal by a proved rule (:mod:`.validate_lemmas`)
    lemma_hits: int = 0
    #: of those, by a guarded rule whose guards the validation re-established (:mod:`.validate_guards`)
    guarded_lemma_hits: int = 0

    @property
    def ok(self) -> bool:
        return self.verdict == "valid"

    @property
    def strategy(self) -> str:
        """The strategies that ran checks, joined by ``+`` (``"none"`` when no solver ran)."""
        return "+".join(k for k, _ in self.strategies) or "none"

    def as_dict(self) -> dict[str, Any]:
        """The JSON-able summary kept in ``ck.report["optimizer"]["validation_detail"]``."""
        return {"verdict": self.verdict, "detail": self.detail, "mode": self.mode, "strategy": self.strategy,
                "units": self.units, "units_by_strategy": dict(self.strategies),
                "budget_units": self.budget_units, "checks": self.checks, "solver_calls": self.solver_calls,
                "wall_capped": self.wall_capped, "lemma_hits": self.lemma_hits,
                "guarded_lemma_hits": self.guarded_lemma_hits, "seconds": self.seconds}

    def __str__(self) -> str:
        return self.verdict + (f": {self.detail}" if self.detail else "")


__all__ = ["Validation"]
