"""Prove rewrite rules sound with z3, per dtype, before they may fire.

For a rule ``lhs -> rhs :when guards`` and each assignment of its dtype variables that the
patterns and guards allow (concrete ``(I32)`` constructors, family relations such as ``(IsInt
t)``, and each op's dtype family — a dtype variable with no guard ranges over every dtype its ops
accept), the verifier proves, lane-wise,

    ``guards ∧ defined(lhs) ⇒ defined(rhs) ∧ lhs ≡ rhs``

* ``≡`` is STRUCTURAL equality: on floats ``==`` of FP terms (NaN ≡ NaN, +0 ≢ -0), not IEEE
  ``fpEQ``; on ints bit-vector equality at the dtype's width (see :mod:`.z3ops`).
* The IR is total (see :mod:`.z3ops`): integer ``x / 0`` and ``x % 0`` are 0, ``INT_MIN / -1``
  wraps, shifts by amounts outside ``[0, bits)`` give 0 or the sign fill — so in exact mode every
  side is defined and the obligation is plain equality. ``defined`` only matters for
  ``fast_math`` rules (real arithmetic: ``x / 0``, ``log`` of a non-positive value and ``sqrt``
  of a negative one are undefined there, and a rule may remove such a term but never introduce
  one) and for egglog itself: right-hand sides must not panic egglog (their i64 primitive
  arithmetic — ``+``, ``<<``, ... — must not overflow) and a ``Const`` they build must hold a
  canonical value of its dtype.
* Pattern variables over ``Term`` are free lane values of their dtype; ``splat``, ``broadcast``,
  ``expand_dims``, ``reshape`` are lane identities; ``trans``, reductions and ``dot`` are
  uninterpreted functions of a stand-in for their whole operand block (one per structurally
  distinct operand), so rules can only reason about them by structure. A variable reached
  through different chains of shape ops on the two sides (different lane mappings) is not
  verified (``unknown``).
* Range guards ``(LowerBound x)``/``(UpperBound x)`` become constraints on the lane value of
  ``x`` (as a mathematical integer: signed or unsigned by dtype; bool is 0/1).
* ``ProgramId``: ``0 <= pid < NumPrograms``, ``NumPrograms >= 1``; ``Arange``: ``start <= lane <
  end``; ``Const`` patterns hold canonical values (the encoder's invariant).
* ``fast_math`` rules are proved over the reals (:data:`.z3ops.REAL`), other rules exactly.
* Analysis guards ``(Divisible x k)``, ``(NotNan x)``, ``(Finite x)``, ``(NonNeg x)``,
  ``(Positive x)`` become their predicates on ``x``'s lane (:mod:`.analyses`); as ``rule``
  actions they are obligations.
* ``rule`` commands (range transfer): each ``(set (LowerBound e) k)`` action becomes the
  obligation ``facts ⇒ value(e) >= k`` (``UpperBound``: ``<=``); ``(union a b)`` is proved like
  a rewrite ``a -> b``.

Verdicts per dtype: ``proved``, ``refuted`` (with a counterexample in the rule's own variables,
re-evaluated with the reference semantics — :mod:`.cex_check`), ``unknown`` (the budget ran out or
outside what the encoding can decide), and ``proved-reduced-width``, a DIAGNOSTIC only: for an
integer dtype whose full-width proof ran out of budget, the rule was proved at 8 and 16 bits and holds on sampled
full-width values — which is not a proof, so such a dtype is NOT usable. Budgets are z3 resource
units, not time (:mod:`.rule_budget`): verdicts do not depend on machine load, and each records
the strategy that decided it and the units it used. Before giving up the verifier tries a full proof by case split: an i64 variable of the rule (a shift
amount, a ``log2``) that the guards bound to at most 65 values is fixed to each value in turn and
each case is proved by bit-blasting (width-independent lemmas in practice: ``x / 2^k == x >> k``
for each k). Only rules proved for every dtype may fire (:func:`usable_rules`).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from eggpu.ir import ALL_DTYPES, DType
from eggpu.ir.errors import RuleError, VerificationError

# z3-free: looking verdicts up in the proof caches must not import z3 (see .proof_versions);
# z3ops and the solving modules are imported where a rule is really proved
from .proof_versions import BUDGET_VERSION, WALL_CAPPED, semantics_tag
from .rule_verdicts import (
    ENCODING,
    PROVED,
    PROVED_REDUCED,
    REFUTED,
    UNKNOWN,
    USABLE,
    DtypeResult,
    ProvedVerdict,
    RuleVerdict,
    compress_keys,
)
from .rules_loader import Rule

DEFAULT_TIMEOUT_MS = 4000


def _mode_for(rule: Rule) -> str:
    from . import z3ops

    return z3ops.REAL if rule.fast_math else z3ops.EXACT


def assignments(rule: Rule, dtypes: Iterable[DType] | None = None) -> list[dict[str, DType]]:
    """Every assignment of the rule's dtype variables allowed by its family/width relations
    (type feasibility is checked when encoding)."""
    from .rule_analysis import _dt_vars, _relation_ok

    pool = list(dtypes) if dtypes is not None else list(ALL_DTYPES)
    dvs = _dt_vars(rule)
    out = []
    for combo in itertools.product(pool, repeat=len(dvs)):
        env = dict(zip(dvs, combo))
        if _relation_ok(rule, env):
            out.append(env)
    if not dvs:
        out = [{}]
    return out


def verify_rule(rule: Rule | str, *, timeout_ms: int = DEFAULT_TIMEOUT_MS,
                dtypes: Iterable[DType] | None = None) -> RuleVerdict:
    """Prove one rule for every dtype it can match (``dtypes`` restricts the candidates).

    ``rule`` may be a :class:`Rule` or the text of one rule command."""
    # the encoding and solving modules load here, not with this module: a compile whose rules all
    # have cached or shipped verdicts never proves anything
    from .rule_analysis import (
        NO_MATCH_REASONS,
        _IllTyped,
        _Infeasible,
        _lane_mapping_problem,
        _NoMatch,
        _Unsupported,
    )
    from .rule_encoding import _build, _env_key
    from .rule_solving import _verify_instance

    if isinstance(rule, str):
        from .rules_loader import parse_rule

        rule = parse_rule(rule)
    t0 = time.perf_counter()
    verdict = RuleVerdict(rule.name, rule.location, rule.ruleset)
    problem = _lane_mapping_problem(rule)
    mode = _mode_for(rule)
    envs = assignments(rule, dtypes)
    if problem is not None:
        for env in envs:
            try:
                _build(rule, env, mode)
            except (_Infeasible, _IllTyped, _Unsupported):
                continue
            verdict.results.append(DtypeResult(_env_key(rule, env), UNKNOWN, None, problem, strategy=ENCODING))
        verdict.note = problem
    else:
        memo: dict[int, DtypeResult | _NoMatch] = {}
        no_match: dict[str, list[str]] = {}
        details: dict[str, None] = {}  # distinct, in order
        for env in envs:
            r = _verify_instance(rule, env, mode, timeout_ms, memo)
            if isinstance(r, _NoMatch):
                no_match.setdefault(r.kind, []).append(_env_key(rule, env))
                if r.detail:
                    details[r.detail] = None
            else:
                verdict.results.append(r)
        if not verdict.results:
            verdict.note = "; ".join(NO_MATCH_REASONS[k] + (f": {compress_keys(no_match[k])}" if no_match[k] != ["-"]
                                                            else "")
                                     for k in NO_MATCH_REASONS if k in no_match) or "no dtype assignment"
            if details:
                verdict.note += " — " + "; ".join(details)
    verdict.seconds = time.perf_counter() - t0
    return verdict


# ------------------------------------------------------------------ many rules, cache, pool


def _verify_job(args: tuple[Rule, int]) -> dict[str, Any]:
    rule, timeout_ms = args
    return verify_rule(rule, timeout_ms=timeout_ms).to_json()


def _cache_key(rule: Rule, timeout_ms: int) -> str:
    from .proof_cache import rule_key

    # the semantics version: a verdict proved under other op encodings is never reused; the budget
    # version: nor one reached under other budgets (wall-clock, other rlimit rates)
    return rule_key(rule.egglog, f"{rule.kind}|{rule.ruleset}|semantics={semantics_tag(rule.egglog)}"
                                 f"|budget={BUDGET_VERSION}")


def _unknown_key(rule: Rule, timeout_ms: int) -> str:
    """Cache key of a verdict with an ``unknown`` result: the budget and the z3 version are part
    of it, so a run with a larger ``timeout_ms`` or another z3 tries again, while the same budget
    (rlimit units: the same answer on every run with the same z3) does not pay for the same
    ``unknown`` in every fresh process. (A decided verdict's key, :func:`_cache_key`, has no z3
    version: see :func:`.proof_cache.rule_key`.)"""
    from .proof_cache import rule_key

    return rule_key(rule.egglog, f"{rule.kind}|{rule.ruleset}|semantics={semantics_tag(rule.egglog)}"
                                 f"|budget={BUDGET_VERSION}|unknown-at={timeout_ms}", solver=True)


def _reproducible(v: RuleVerdict) -> bool:
    """Whether ``v`` would come out the same on any machine: no result was cut by the wall-clock
    safety cap (the one load-dependent answer, :data:`~.rule_budget.WALL_CAPPED`)."""
    return not any(r.status == UNKNOWN and WALL_CAPPED in r.detail for r in v.results)


def verify_rules(
    rules: Iterable[Rule],
    *,
    timeout_ms: int = DEFAULT_TIMEOUT_MS,
    progress: Callable[[int, int, RuleVerdict], None] | None = None,
    cache: Any | None = None,
    use_cache: bool = True,
    workers: int | None = None,
) -> dict[str, RuleVerdict]:
    """Verify many rules (rule name -> verdict), using the proof cache and a process pool.

    ``progress(done, total, verdict)`` is called after each rule (cached ones included).
    ``cache`` is a :class:`~.proof_cache.ProofCache` (default: the user cache dir); a verdict
    with an ``unknown`` result is cached under its budget (:func:`_unknown_key`: a larger
    ``timeout_ms`` proves it again), unless the wall-clock cap gave it (never cached). A rule the user cache lacks is looked up in the
    verdicts shipped with the package (:mod:`.shipped_proofs`) before it is proved. ``workers`` defaults to ``min(2, cpu count)``;
    1 verifies in this process."""
    from .proof_cache import ProofCache

    rules = list(rules)
    if use_cache and cache is None:
        cache = ProofCache()
    out: dict[str, RuleVerdict] = {}
    new_entries: dict[str, Any] = {}

    def finish(v: RuleVerdict) -> None:
        out[v.rule] = v
        if progress:
            progress(len(out), len(rules), v)

    todo = []
    for r in rules:
        hit = _known_verdict(r, cache, timeout_ms) if use_cache else None
        if hit is not None:
            finish(hit)
        else:
            todo.append(r)

    def proved(r: Rule, d: dict[str, Any]) -> None:
        v = RuleVerdict.from_json(d)
        if use_cache and all(x.status != UNKNOWN for x in v.results):
            new_entries[_cache_key(r, timeout_ms)] = d
        elif use_cache and _reproducible(v):
            new_entries[_unknown_key(r, timeout_ms)] = d
        finish(v)

    _prove_all(todo, timeout_ms, workers, proved)
    if use_cache and new_entries:
        cache.put_many(new_entries)
    return {r.name: out[r.name] for r in rules}


def _known_verdict(r: Rule, cache: Any, timeout_ms: int) -> RuleVerdict | None:
    """The verdict of ``r`` from the user's proof cache, else from the verdicts shipped with the
    package (proved when it was built, keyed by the exact text: never stale); None if neither has it."""
    from . import shipped_proofs

    k = _cache_key(r, timeout_ms)
    hit = cache.get(k)
    if hit is None:
        known = shipped_proofs.proved(k)  # the digest: no need to parse the shipped file
        if known:
            return ProvedVerdict(r.name, r.location, r.ruleset, lambda: _shipped_verdict(r, k))
        if known is None:
            hit = shipped_proofs.get(k)
    if hit is None:  # an ``unknown`` reached under this very budget (see :func:`_unknown_key`)
        hit = cache.get(_unknown_key(r, timeout_ms))
    if hit is None:
        return None
    v = RuleVerdict.from_json(hit)
    v.cached = True
    v.location, v.rule = r.location, r.name
    return v


def _shipped_verdict(r: Rule, key: str) -> RuleVerdict:
    """The full shipped verdict of ``r`` (for a :class:`ProvedVerdict` the digest vouched for)."""
    from . import shipped_proofs

    d = shipped_proofs.get(key)
    if d is None:  # the digest was checked against these very bytes: only a broken file gets here
        raise VerificationError(f"{r.location}: rule {r.name!r}: the shipped proof digest lists it, "
                                f"{shipped_proofs.path()} does not")
    return RuleVerdict.from_json(d)


def _prove_all(todo: list[Rule], timeout_ms: int, workers: int | None,
               proved: Callable[[Rule, dict[str, Any]], None]) -> None:
    """Verify ``todo``, calling ``proved(rule, verdict JSON)`` as each finishes: in a pool of
    ``workers`` forked processes (default ``min(2, cpu count)``) when there are more than two
    rules, else in this process."""
    if workers is None:
        import os

        workers = min(2, os.cpu_count() or 1)
    if todo:
        from . import rule_solving  # noqa: F401  (loaded once here, before any fork, not per worker)
    if not (todo and workers > 1 and len(todo) > 2):
        for r in todo:
            proved(r, _verify_job((r, timeout_ms)))
        return
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor, as_completed

    # fork (not spawn): works from scripts without a __main__ guard and skips re-imports
    ctx = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as ex:
        # longest-looking rules first keeps both workers busy
        order = sorted(todo, key=lambda r: -len(r.egglog))
        futs = {ex.submit(_verify_job, (r, timeout_ms)): r for r in order}
        for f in as_completed(futs):
            proved(futs[f], f.result())


def usable_rules(rules: Iterable[Rule], verdicts: Mapping[str, RuleVerdict], fast_math: bool) -> list[Rule]:
    """The rules that may fire: every dtype proved; ``fast_math`` rules only when ``fast_math``;
    ``ranges`` and user rulesets always (with ``exact``)."""
    out = []
    for r in rules:
        v = verdicts.get(r.name)
        if v is None or not v.usable:
            continue
        if r.fast_math and not fast_math:
            continue
        out.append(r)
    return out


def require_sound(rule: Rule | str, **kw: Any) -> RuleVerdict:
    """verify_rule, raising VerificationError unless every dtype is proved."""
    v = verify_rule(rule, **kw)
    if not v.usable:
        raise VerificationError(f"{v.location}: rule {v.rule!r}: {v.summary()}"
                                + (f"; counterexample: {v.first(REFUTED).format_counterexample()}"
                                   if v.refuted else ""))
    return v


__all__ = [
    "DEFAULT_TIMEOUT_MS", "PROVED", "PROVED_REDUCED", "REFUTED", "UNKNOWN", "USABLE", "DtypeResult", "RuleError",
    "RuleVerdict", "assignments", "compress_keys", "require_sound", "usable_rules", "verify_rule",
    "verify_rules",
]

