"""Deciding one query: the solver portfolio, vacuity, the case split and what happens when the
budget runs out (reduced widths and concrete search, a diagnostic only).

Every z3 check is bounded by resource units, not the wall clock (:mod:`.rule_budget`), in one
fresh z3 context per instance; each verdict records the strategy that decided it and the units
the instance used in all. IEEE ``fp.rem`` is abstracted as one uninterpreted function per float
sort before any check (:func:`.validate.abstract_fp_rem`: z3's fp.rem procedure ignores limits):
sound for ``unsat``; a ``sat`` answer over the abstraction is no counterexample, so the concrete
search (which evaluates the real fp.rem) decides or the verdict is ``unknown``."""

from __future__ import annotations

import time
from collections.abc import Mapping

import z3

from eggpu.ir import DType
from eggpu.ir.dtypes import BY_NAME

from . import cex_check, ref_search, z3ops
from .rule_analysis import _IllTyped, _Infeasible, _NoMatch, _Unsupported
from .rule_budget import SIDE_CHECK_UNITS, WALL_CAPPED, Check, Session, units
from .rule_encoding import _build, _env_key, _Instance, _Query
from .rule_refutation import _refutation
from .rule_verdicts import ENCODING, PROVED, PROVED_REDUCED, REFUTED, SEARCH, UNKNOWN, DtypeResult
from .rules_loader import Rule
from .validate import abstract_fp_rem

REDUCED_WIDTHS = (8, 16)
SAMPLES = 1000  # concrete full-width cases tried after a timeout
PRE_SEARCH = 64  # concrete cases tried before z3 on formulas with wide division


# ------------------------------------------------------------------ solving


def _has_fp(formula: z3.ExprRef) -> bool:
    seen: set[int] = set()
    stack = [formula]
    while stack:
        e = stack.pop()
        if e.get_id() in seen:
            continue
        seen.add(e.get_id())
        if e.sort().kind() == z3.Z3_FLOATING_POINT_SORT:
            return True
        stack.extend(e.children())
    return False


def _first_strategy(formula: z3.ExprRef, mode: str) -> str:
    if mode == z3ops.REAL:
        return "z3-real"
    return "z3-fp" if _has_fp(formula) else "z3"


def _solve(sess: Session, formula: z3.BoolRef, mode: str, timeout_ms: float) -> Check:
    """Check ``formula`` with a budget of ``timeout_ms`` idle-machine milliseconds. Bit-vector
    and float formulas get a small portfolio, half the budget each: z3's default solver, then its
    QF_BV solver (bit-vectors) or the ``fp-bv`` tactic pipeline (floats lowered to bit-vectors and
    bit-blasted, which proves e.g. ``(-a) / (-b) => a / b`` at f64 where the default solver runs
    out): their costs vary a lot between problems. Real arithmetic uses the default solver
    throughout. An ``unknown`` of both reports the units of both."""
    first = _first_strategy(formula, mode)
    second = {"z3": "qf_bv", "z3-fp": "fp-bv"}.get(first)
    first_ms = timeout_ms / 2 if second else timeout_ms
    axioms = z3ops.real_axioms(formula) if mode == z3ops.REAL else []
    c = sess.check(first, units(first, first_ms), [*axioms, formula])
    if c.result != z3.unknown or second is None:
        return c
    c2 = sess.check(second, units(second, timeout_ms - first_ms), [formula])
    if c2.result == z3.unknown:
        return Check(z3.unknown, c.solver, f"{first}+{second}", c.units + c2.units, c.wall_capped or c2.wall_capped)
    return c2


def _vacuous(sess: Session, assume: list[z3.BoolRef]) -> bool:
    """True when the guards and pattern facts alone cannot hold (the rule never fires here)."""
    return sess.check("z3", SIDE_CHECK_UNITS, assume).result == z3.unsat


def _reduced_env(env: Mapping[str, DType], width: int) -> dict[str, DType] | None:
    out = {}
    changed = False
    for v, d in env.items():
        if d.is_int and d.bits > width:
            out[v] = BY_NAME[f"{d.kind}{width}"]
            changed = True
        else:
            out[v] = d
    return out if changed else None


_DIVISION_KINDS = frozenset({z3.Z3_OP_BUDIV, z3.Z3_OP_BSDIV, z3.Z3_OP_BUREM, z3.Z3_OP_BSREM, z3.Z3_OP_BSMOD,
                             z3.Z3_OP_BUDIV_I, z3.Z3_OP_BSDIV_I, z3.Z3_OP_BUREM_I, z3.Z3_OP_BSREM_I,
                             z3.Z3_OP_BSMOD_I})


def _has_division(formula: z3.ExprRef) -> bool:
    """True when ``formula`` divides bit-vectors wider than 8 bits."""
    seen: set[int] = set()
    stack = [formula]
    while stack:
        e = stack.pop()
        if e.get_id() in seen:
            continue
        seen.add(e.get_id())
        if z3.is_app(e) and e.decl().kind() in _DIVISION_KINDS and e.sort().size() > 8:
            return True
        stack.extend(e.children())
    return False


CASE_SPLIT_MAX = 65  # most values of one i64 variable proved one by one
CASE_SPLIT_POOL = 20  # the whole split may spend this many single-case budgets
_CASE_TACTIC = ("simplify", "propagate-values", "solve-eqs", "simplify", "bit-blast", "sat")


def _split_variable(sess: Session, q: _Query, formula: z3.BoolRef, timeout_ms: float) -> tuple[str, z3.ExprRef] | None:
    """The first i64 variable (or expression a guard binds a name to) that the assumptions bound
    to ``0 <= v < CASE_SPLIT_MAX`` and outside of which the query is unsat (egglog panics there
    do not need the guards)."""
    assume = z3.And(*q.inst.assume) if q.inst.assume else z3ops.TRUE
    for name, v in q.inst.ints.items():
        if z3.is_bv_value(z3.simplify(v)):
            continue
        outside = z3.Or(v < 0, v >= CASE_SPLIT_MAX)
        if sess.check("z3", SIDE_CHECK_UNITS, [assume, outside]).result != z3.unsat:
            continue
        if sess.check("z3", units("z3", timeout_ms), [formula, outside]).result != z3.unsat:
            continue
        return name, v
    return None


def _case_split(sess: Session, q: _Query, formula: z3.BoolRef, mode: str,
                timeout_ms: float) -> tuple[z3.CheckSatResult, str, int] | None:
    """Prove ``q`` by fixing one i64 variable that the assumptions bound to a small range
    (``0 <= k <= 64``: shift amounts, ``log2`` results) to each of its values; None when no
    variable qualifies. Returns (unsat = proved / sat / unknown, the variable, the case count).
    Each case is bit-blasted (with every other variable free, a case is a fixed-shape identity
    such as ``x / 2^5 == x >> 5``, which z3 decides quickly) with at most one single-case budget
    of units; the whole split shares :data:`CASE_SPLIT_POOL` of them, so whether it completes
    depends on the query alone, never on the machine's load."""
    if mode != z3ops.EXACT or not q.inst.ints:
        return None
    found = _split_variable(sess, q, formula, timeout_ms)
    if found is None:
        return None
    name, v = found
    per_case = units("case-split", timeout_ms)
    pool = CASE_SPLIT_POOL * per_case
    for i in range(CASE_SPLIT_MAX):
        if pool <= 0:
            return z3.unknown, name, i
        c = sess.check("case-split", min(per_case, pool), [formula, v == i],
                       make=lambda: sess.solver("case-split", _CASE_TACTIC))
        pool -= c.units
        if c.result != z3.unsat:
            return c.result, name, i
    return z3.unsat, name, CASE_SPLIT_MAX


def _signedness(inst: _Instance) -> dict[str, bool]:
    return {n: t.is_signed for n, t in inst.types.items() if isinstance(t, DType)}


def _stamp(r: DtypeResult, strategy: str, sess: Session | None) -> DtypeResult:
    """``r`` with the deciding strategy and the units its instance used in all."""
    r.strategy = strategy
    r.rlimit = sess.used if sess is not None else 0
    return r


def _verify_instance(rule: Rule, env: Mapping[str, DType], mode: str, timeout_ms: int,
                     memo: dict[int, DtypeResult | _NoMatch] | None = None) -> DtypeResult | _NoMatch:
    """One dtype assignment; :class:`_NoMatch` when the assignment cannot match. ``memo`` reuses
    the verdict of an earlier assignment whose query is the same formula (e.g. pointees of one
    size)."""
    t0 = time.perf_counter()
    try:
        q = _build(rule, env, mode)
    except _Infeasible as e:
        return _NoMatch(e.kind, str(e) if e.kind == "op" else "")
    except _IllTyped as e:
        key = _env_key(rule, env)
        return _stamp(DtypeResult(key, REFUTED, {}, f"the right-hand side is ill-typed: {e}",
                                  time.perf_counter() - t0), ENCODING, None)
    except _Unsupported as e:
        return _stamp(DtypeResult(_env_key(rule, env), UNKNOWN, None, f"not decidable by the encoding: {e}",
                                  time.perf_counter() - t0), ENCODING, None)
    key = _env_key(rule, env, q.inst)
    if memo is not None:
        h = hash(q.solver_formula.sexpr())
        prev = memo.get(h)
        if prev is not None and (isinstance(prev, _NoMatch) or prev.status != REFUTED):  # refutations: re-run
            if isinstance(prev, _NoMatch):
                return prev
            return DtypeResult(key, prev.status, prev.counterexample, prev.detail, time.perf_counter() - t0,
                               prev.strategy, prev.rlimit)
        res_ = _verify_instance(rule, env, mode, timeout_ms)
        memo[h] = res_
        return res_
    if mode == z3ops.EXACT and _has_division(q.solver_formula):
        # bit-vector division makes z3 slow even on easy satisfiable queries: a few concrete
        # cases first (milliseconds) refute most unsound division rules without a timeout
        _, subs = cex_check.search(q.solver_formula, tries=PRE_SEARCH)
        if subs is not None:
            return _stamp(_refutation(q, cex_check.substitution(subs), key, t0, "a concrete search at full width"),
                          SEARCH, None)
    return _decide(rule, env, mode, timeout_ms, q, key, t0)


def _decide(rule: Rule, env: Mapping[str, DType], mode: str, timeout_ms: int, q: _Query, key: str,
            t0: float) -> DtypeResult | _NoMatch:
    """Solve the query of one instance (the fp.rem abstraction, then the portfolio)."""
    sess = Session()
    formula, rem_abstracted = abstract_fp_rem(q.solver_formula)
    c = _solve(sess, formula, mode, timeout_ms)
    if c.result == z3.unsat:
        if q.inst.assume and _vacuous(sess, [abstract_fp_rem(a)[0] for a in q.inst.assume]):
            return _NoMatch("guard")
        return _stamp(DtypeResult(key, PROVED, None, "", time.perf_counter() - t0), c.strategy, sess)
    if c.result == z3.sat and q.inst.blocks:
        return _stamp(DtypeResult(key, UNKNOWN, None, "reductions, dot and trans are compared by structure only; "
                                  "their operands differ", time.perf_counter() - t0), c.strategy, sess)
    if c.result == z3.sat and not rem_abstracted:
        model = sess.model(c)
        r = _refutation(q, lambda e: model.eval(e, model_completion=True), key, t0, "")
        if r.status == UNKNOWN and cex_check.uninterpreted_apps(q.solver_formula):
            # z3 chose the values of exp, log, ...: search with the reference semantics instead,
            # the model's inputs first
            wide = cex_check.free_constants(q.solver_formula)
            hit = _reference_search(q, key, t0, sess, [cex_check.lift(model, wide, wide, {})])
            if isinstance(hit, DtypeResult):
                return hit
            r.detail += f"; {hit}"
        return _stamp(r, c.strategy, sess)
    reason = ("z3's model needs values of the uninterpreted stand-in for fp.rem" if c.result == z3.sat
              else c.reason)
    return _after_budget(rule, env, mode, timeout_ms, q, key, t0, reason, sess, formula)


def _reference_search(q: _Query, key: str, t0: float, sess: Session, seeds: list[list]) -> DtypeResult | str:
    """A refutation found by evaluating both sides with the reference semantics (for formulas
    over uninterpreted functions, which the formula-level search cannot evaluate), re-checked by
    :func:`_refutation`; else a note on what the search tried."""
    subs, compared = ref_search.search(q, seeds=seeds)
    if subs is not None:
        r = _refutation(q, cex_check.substitution(subs), key, t0, "a concrete search with the reference semantics")
        if r.status == REFUTED:
            return _stamp(r, SEARCH, sess)
    tol = f" beyond the {ref_search.TOLERANCE_ULPS}-ulp tolerance" if ref_search.transcendental(q.inst.rule) else ""
    return f"no difference{tol} in {compared} cases evaluated with the reference semantics"


def _after_budget(rule: Rule, env: Mapping[str, DType], mode: str, timeout_ms: int, q: _Query, key: str,
                  t0: float, reason: str, sess: Session, formula: z3.BoolRef) -> DtypeResult:
    """The full-width budget ran out (or z3's model is over the fp.rem abstraction): try the case
    split; else solve narrower integer widths (a model there seeds the search), then search
    concrete counterexamples at full width; a rule with no counterexample whose narrow proofs all
    hold is ``proved-reduced-width`` (a diagnostic, never usable), otherwise ``unknown``."""
    split = _case_split(sess, q, formula, mode, timeout_ms)
    if split is not None and split[0] == z3.unsat:
        return _stamp(DtypeResult(key, PROVED, None, f"full width by case split on {split[1]} ({split[2]} cases)",
                                  time.perf_counter() - t0), "case-split", sess)
    notes: list[str] = []
    if split is not None:
        notes.append(f"case split on {split[1]}: {split[0]}")
    seeds: list[list] = []
    proved_at: list[int] = []
    widths = [(e, w) for w in REDUCED_WIDTHS if (e := _reduced_env(env, w)) is not None] if mode == z3ops.EXACT else []
    wide = cex_check.free_constants(q.solver_formula)
    for renv, w in widths:
        try:
            rq = _build(rule, renv, mode)
        except (_Infeasible, _IllTyped, _Unsupported) as e:
            notes.append(f"{w} bits: {e}")
            continue
        rformula, rabs = abstract_fp_rem(rq.solver_formula)
        rc = _solve(sess, rformula, mode, timeout_ms * 4)
        if rc.result == z3.unsat:
            proved_at.append(w)
        elif rc.result == z3.sat and not rabs:
            notes.append(f"refuted at {w} bits")
            narrow = cex_check.free_constants(rq.solver_formula)
            m = sess.model(rc)
            seeds.append(cex_check.lift(m, narrow, wide, _signedness(q.inst)))
            seeds.append(cex_check.lift(m, narrow, wide, {}))
        else:
            notes.append(f"{w} bits: {rc.result}")
    holds, subs = cex_check.search(q.solver_formula, tries=SAMPLES, seeds=seeds)
    if subs is not None:
        return _stamp(_refutation(q, cex_check.substitution(subs), key, t0, "a concrete search at full width"),
                      SEARCH, sess)
    if not holds and cex_check.uninterpreted_apps(q.solver_formula):
        hit = _reference_search(q, key, t0, sess, [])
        if isinstance(hit, DtypeResult):
            return hit
        notes.append(hit)
    if widths and len(proved_at) == len(widths) and holds >= 50:
        return _stamp(DtypeResult(key, PROVED_REDUCED, None,
                                  f"full width not decided ({reason}); proved at {'/'.join(map(str, proved_at))} "
                                  f"bits; {holds} sampled full-width cases hold", time.perf_counter() - t0),
                      "reduced-width", sess)
    if holds:
        notes.append(f"no counterexample in {holds} concrete full-width cases")
    if sess.wall_capped and WALL_CAPPED not in reason:  # a side check (case split, narrow width) was
        notes.append(WALL_CAPPED)  # cut by the clock: this unknown depends on the load (never cached)
    return _stamp(DtypeResult(key, UNKNOWN, None, f"not decided within {timeout_ms} ms of budget ({reason})"
                              + ("; " + "; ".join(notes) if notes else ""), time.perf_counter() - t0),
                  "", sess)
