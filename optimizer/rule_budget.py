"""Deterministic solver budgets for the rule verifier and translation validation.

A verdict must not depend on how loaded the machine is. So every z3 check of the rule verifier
is bounded by z3's ``rlimit`` (resource units: a count of solver steps, the same on every run of
the same query with the same z3), not by the wall clock:

* A budget is given in *idle-machine milliseconds* (the ``timeout_ms`` of the public API) and
  converted to units per strategy with :data:`UNITS_PER_MS`, measured with
  ``python -m eggpu.optimizer.rule_budget`` (z3 counts very different amounts of work per unit in
  its strategies: a 64-bit multiply bit-blasted to SAT spends far fewer units per CPU-ms than the
  word-level rewriting of the default solver, so one factor would change which proofs pass).
* The wall clock only stops a runaway solver: :data:`WALL_FACTOR` times the budget (at least
  :data:`WALL_MIN_MS`). When that cap fires before the rlimit (a machine more than
  ``WALL_FACTOR`` times slower than the calibration) the check is retried once with
  :data:`RETRY_FACTOR` times the cap; only a second cap gives a load-dependent ``unknown``, and its
  detail says so.
* Each instance (one rule at one dtype assignment) is solved in a fresh z3 context
  (:class:`Session`): term ids, and with them z3's heuristics, do not depend on which rules were
  proved before in the process, so the units a proof uses are the same in a worker pool as alone.
* Nothing a solver touched is ever translated into the main context: a model is read in its
  session (:class:`SessionModel`) and its values are rebuilt from Python data where the main
  context needs them (:func:`.cex_check.rebuild`). The reason: a z3 translation (``translate``,
  ``ModelRef.translate``) copies the source context's *decl-plugin families* into the target,
  and solving registers families lazily. Translating a model back into the main context (as the
  verifier once did for every counterexample) gave the main context extra families, every later
  session inherited them when its query was translated in, so the solver's own families got other
  ids there — other hashes, another bit-blasting order — and the same float query spent a
  different number of units (+66 % for ``mul-minus-one-float`` at f16 after one refuted float
  rule, -29 % for ``fdiv-16-f32``; 2 % for a validation after a validation with a counterexample).
  Python's string hashing and z3's random seeds (fixed defaults) play no part: the units are
  identical under every ``PYTHONHASHSEED``.

:data:`BUDGET_VERSION` is part of every proof-cache key: a verdict reached under other rules (a
wall-clock budget, other rates) is proved again.

Translation validation (:mod:`.validate`) prices its checks the same way: each check's budget and
the whole validation's budget are idle-machine milliseconds converted with :func:`units`, each
check in a fresh :class:`Session`, so a kernel gets the same verdict and the same unit count in
every fresh process.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import z3

# part of every proof-cache key; defined z3-free in .proof_versions (bump it there)
# (as are the units per millisecond: a validation that needs no solver still reports its budget)
from .proof_versions import BUDGET_VERSION, UNITS_PER_MS, WALL_CAPPED, units  # noqa: F401  (re-exported)

#: the tactic pipeline of the ``fp-bv`` strategy
FP_BV_TACTIC = ("simplify", "propagate-values", "solve-eqs", "simplify", "fpa2bv", "simplify", "bit-blast", "sat")
#: fixed budgets of the small side checks (vacuity, the range of a case-split variable), in units
SIDE_CHECK_UNITS = 4_000_000
#: the wall clock stops a check at this many times its budget ...
WALL_FACTOR = 20
#: ... but never sooner than this (tiny budgets on a loaded machine)
WALL_MIN_MS = 2000
#: the reason of an ``unknown`` the wall-clock cap (not the rlimit) gave: the only verdict that
#: depends on the machine's load, so the only ``unknown`` the proof cache never stores
#: a check stopped by the wall clock is retried once with this many times the cap
RETRY_FACTOR = 5


def strategy_for(formulas: Iterable[z3.ExprRef], real: bool = False) -> str:
    """The single-solver strategy whose rate prices a check of ``formulas`` with z3's default
    solver: ``z3-real`` for real arithmetic (``real``: fast_math), ``z3-fp`` when a float term
    occurs, else ``z3``. The formulas may live in different z3 contexts."""
    if real:
        return "z3-real"
    seen: set[tuple[int, int]] = set()
    stack = list(formulas)
    while stack:
        e = stack.pop()
        key = (id(e.ctx), e.get_id())
        if key in seen:
            continue
        seen.add(key)
        if e.sort().kind() == z3.Z3_FLOATING_POINT_SORT:
            return "z3-fp"
        stack.extend(e.children())
    return "z3"


class SessionModel:
    """A model of a session's check, read in the session's own context: :meth:`eval` translates a
    main-context expression INTO the session and evaluates it there, so the value it returns lives
    in the session's context. Callers turn values into Python data (``as_long``, ``str``,
    :func:`.z3ops.to_python`) or rebuild them elsewhere with :func:`.cex_check.rebuild`; the model
    itself is never translated into the main context (that would copy the families the solver
    registered into it — see the module docstring)."""

    def __init__(self, model: z3.ModelRef, session: Session) -> None:
        self._model = model
        self._session = session

    def eval(self, e: z3.ExprRef, model_completion: bool = False) -> z3.ExprRef:
        """The value of the main-context expression ``e`` (a session-context expression)."""
        return self._model.eval(self._session.tr(e), model_completion=model_completion)


@dataclass
class Check:
    """One bounded check: z3's answer, the solver (for its model), the strategy, the resource units
    it used, and whether the wall clock (not the rlimit) stopped it."""

    result: z3.CheckSatResult
    solver: z3.Solver
    strategy: str
    units: int
    wall_capped: bool = False

    @property
    def reason(self) -> str:
        if self.result != z3.unknown:
            return ""
        if self.wall_capped:
            return WALL_CAPPED
        return f"resource limit ({self.units} units)"


class Session:
    """A fresh z3 context for the checks of one instance and the units they used in all.

    Expressions built in the main context are translated in with :meth:`tr`; nothing ever goes
    the other way (see the module docstring: a context a solver ran in must never be the source
    of a translation into the main context). A model is read with :meth:`model`."""

    def __init__(self) -> None:
        self.ctx = z3.Context()
        self.used = 0  # units of every check of this session
        self.wall_capped = False  # whether the wall clock (not the rlimit) stopped any check
        self._count = 0  # the context's cumulative "rlimit count" after the last check

    def tr(self, e: z3.ExprRef) -> z3.ExprRef:
        return e.translate(self.ctx)

    def model(self, check: Check) -> SessionModel:
        """The model of a ``sat`` check, read in this session's context (see :class:`SessionModel`)."""
        return SessionModel(check.solver.model(), self)

    def solver(self, strategy: str, tactics: Iterable[str] = ()) -> z3.Solver:
        """A solver of ``strategy`` in this context (``tactics``: a pipeline for ``case-split``)."""
        if strategy == "qf_bv":
            return z3.SolverFor("QF_BV", ctx=self.ctx)
        if strategy == "case-split":
            return z3.Then(*tactics, ctx=self.ctx).solver()
        if strategy == "fp-bv":
            return z3.Then(*FP_BV_TACTIC, ctx=self.ctx).solver()
        return z3.Solver(ctx=self.ctx)

    def check(self, strategy: str, budget: int, assertions: Iterable[z3.ExprRef],
              make: Callable[[], z3.Solver] | None = None) -> Check:
        """Check the (main-context) ``assertions`` with ``budget`` units; see the module docstring
        for the wall-clock cap and its retry."""
        body = [self.tr(a) for a in assertions]
        cap_ms = max(WALL_MIN_MS, WALL_FACTOR * budget / UNITS_PER_MS.get(strategy, UNITS_PER_MS["z3"]))
        for attempt in range(2):
            s = make() if make is not None else self.solver(strategy)
            s.set("rlimit", budget)
            s.set("timeout", int(cap_ms))
            s.add(*body)
            t0 = time.perf_counter()
            res = s.check()
            wall_ms = (time.perf_counter() - t0) * 1000
            used = self._take_units(s)
            capped = res == z3.unknown and used < budget and wall_ms >= 0.9 * cap_ms
            if not capped or attempt:
                self.used += used  # a capped first attempt is a load artefact: not counted
                self.wall_capped |= capped
                return Check(res, s, strategy, used, capped)
            cap_ms *= RETRY_FACTOR
        raise AssertionError("unreachable")

    def _take_units(self, s: z3.Solver) -> int:
        """The units ``s`` used in its last check (the context's count is cumulative)."""
        stats = s.statistics()
        count = int(stats.get_key_value("rlimit count")) if "rlimit count" in stats.keys() else self._count
        used, self._count = max(0, count - self._count), max(count, self._count)
        return used


# ------------------------------------------------------------------ calibration


def _query_formulas(limit: int | None = None) -> list[tuple[str, z3.BoolRef, str]]:
    """(rule name, query formula, mode) of every instance of the shipped rules."""
    from .rule_analysis import _IllTyped, _Infeasible, _Unsupported
    from .rule_encoding import _build
    from .rule_verifier import _mode_for, assignments
    from .rules_loader import load_rules
    from .validate import abstract_fp_rem

    out = []
    for rule in load_rules([], shipped=True, env=False).rules[:limit]:
        mode = _mode_for(rule)
        for env in assignments(rule):
            try:
                q = _build(rule, env, mode)
            except (_Infeasible, _IllTyped, _Unsupported):
                continue
            out.append((rule.name, abstract_fp_rem(q.solver_formula)[0], mode))
    return out


def calibrate(*, cap_ms: int = 1000, min_ms: float = 20.0, limit: int | None = None) -> dict[str, tuple[float, int]]:
    """Units per CPU-millisecond of each strategy and the number of queries measured: the median
    over the shipped rules' queries that took at least ``min_ms`` of CPU and finished within
    ``cap_ms``."""
    from . import z3ops
    from .rule_solving import _CASE_TACTIC, _first_strategy

    rates: dict[str, list[float]] = {}
    for _name, formula, mode in _query_formulas(limit):
        first = _first_strategy(formula, mode)
        seconds = {"z3": ("qf_bv", "case-split"), "z3-fp": ("fp-bv",)}.get(first, ())
        for strategy in (first, *seconds):
            sess = Session()
            s = sess.solver(strategy, _CASE_TACTIC)
            s.set("timeout", cap_ms)
            if mode == z3ops.REAL:
                s.add(*(sess.tr(a) for a in z3ops.real_axioms(formula)))
            s.add(sess.tr(formula))
            t0 = time.process_time()
            res = s.check()
            cpu_ms = (time.process_time() - t0) * 1000
            used = sess._take_units(s)
            if res != z3.unknown and cpu_ms >= min_ms:
                rates.setdefault(strategy, []).append(used / cpu_ms)
    import statistics

    return {k: (statistics.median(v), len(v)) for k, v in sorted(rates.items())}


def main() -> int:  # pragma: no cover - a measuring tool
    import json

    rates = calibrate()
    print(json.dumps({k: {"units_per_ms": round(v), "queries": n} for k, (v, n) in rates.items()}, indent=1))
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
