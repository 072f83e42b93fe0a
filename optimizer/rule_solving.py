"""Deciding one query: the solver portfolio, vacuity, the case split and what happens after a
timeout (reduced widths and concrete search, a diagnostic only)."""

from __future__ import annotations

import time
from collections.abc import Mapping

import z3

from eggpu.ir import DType
from eggpu.ir.dtypes import BY_NAME

from . import cex_check, z3ops
from .rule_analysis import _IllTyped, _Infeasible, _NoMatch, _Unsupported
from .rule_encoding import _build, _env_key, _Instance, _Query
from .rule_refutation import _refutation
from .rule_verdicts import PROVED, PROVED_REDUCED, REFUTED, UNKNOWN, DtypeResult
from .rules_loader import Rule

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


def _solve(formula: z3.BoolRef, mode: str, timeout_ms: int) -> tuple[z3.CheckSatResult, z3.Solver]:
    """Check ``formula`` within ``timeout_ms``. Bit-vector formulas get a small portfolio (half
    the time with z3's default solver, half with its QF_BV solver: their run times vary a lot
    between problems); formulas over floats and reals use the default solver throughout."""
    bv_only = mode == z3ops.EXACT and not _has_fp(formula)
    s = z3.Solver()
    first = max(1, timeout_ms // 2) if bv_only else timeout_ms
    s.set("timeout", first)
    if mode == z3ops.REAL:
        s.add(*z3ops.real_axioms(formula))
    s.add(formula)
    res = s.check()
    if res != z3.unknown or not bv_only:
        return res, s
    s2 = z3.SolverFor("QF_BV")
    s2.set("timeout", max(1, timeout_ms - first))
    s2.add(formula)
    res2 = s2.check()
    if res2 == z3.unknown:
        return res2, s
    return res2, s2


def _vacuous(inst: _Instance) -> bool:
    """True when the guards and pattern facts alone cannot hold (the rule never fires here)."""
    s = z3.Solver()
    s.set("timeout", 1000)
    s.add(*inst.assume)
    return s.check() == z3.unsat


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
_CASE_TACTIC = ("simplify", "propagate-values", "solve-eqs", "simplify", "bit-blast", "sat")


def _case_split(q: _Query, mode: str, timeout_ms: int) -> tuple[z3.CheckSatResult, str, int] | None:
    """Prove ``q`` by fixing one i64 variable that the assumptions bound to a small range
    (``0 <= k <= 64``: shift amounts, ``log2`` results) to each of its values; None when no
    variable qualifies. Returns (unsat = proved / sat / unknown, the variable, the case count).
    Each case is bit-blasted (with every other variable free, a case is a fixed-shape identity
    such as ``x / 2^5 == x >> 5``, which z3 decides quickly); the whole split shares a budget of
    ``20 * timeout_ms``."""
    if mode != z3ops.EXACT or not q.inst.ints:
        return None
    assume = z3.And(*q.inst.assume) if q.inst.assume else z3ops.TRUE
    for name, v in q.inst.ints.items():  # a variable, or an expression a guard binds a name to
        if z3.is_bv_value(z3.simplify(v)):
            continue
        s = z3.Solver()
        s.set("timeout", 1000)
        outside = z3.Or(v < 0, v >= CASE_SPLIT_MAX)
        s.add(assume, outside)
        if s.check() != z3.unsat:
            continue
        rest = z3.Solver()  # the values outside the range (egglog panics do not need the guards)
        rest.set("timeout", timeout_ms)
        rest.add(q.solver_formula, outside)
        if rest.check() != z3.unsat:
            continue
        deadline = time.perf_counter() + 20 * timeout_ms / 1000
        for i in range(CASE_SPLIT_MAX):
            left_ms = int((deadline - time.perf_counter()) * 1000)
            if left_ms <= 0:
                return z3.unknown, name, i
            solver = z3.Then(*_CASE_TACTIC).solver()
            solver.set("timeout", max(1, min(timeout_ms, left_ms)))
            solver.add(q.solver_formula, v == i)
            res = solver.check()
            if res != z3.unsat:
                return res, name, i
        return z3.unsat, name, CASE_SPLIT_MAX
    return None


def _signedness(inst: _Instance) -> dict[str, bool]:
    return {n: t.is_signed for n, t in inst.types.items() if isinstance(t, DType)}


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
        return DtypeResult(key, REFUTED, {}, f"the right-hand side is ill-typed: {e}", time.perf_counter() - t0)
    except _Unsupported as e:
        return DtypeResult(_env_key(rule, env), UNKNOWN, None, f"not decidable by the encoding: {e}",
                           time.perf_counter() - t0)
    key = _env_key(rule, env, q.inst)
    if memo is not None:
        h = hash(q.solver_formula.sexpr())
        prev = memo.get(h)
        if prev is not None and (isinstance(prev, _NoMatch) or prev.status != REFUTED):  # refutations: re-run
            if isinstance(prev, _NoMatch):
                return prev
            return DtypeResult(key, prev.status, prev.counterexample, prev.detail, time.perf_counter() - t0)
        res_ = _verify_instance(rule, env, mode, timeout_ms)
        memo[h] = res_
        return res_
    if mode == z3ops.EXACT and _has_division(q.solver_formula):
        # bit-vector division makes z3 slow even on easy satisfiable queries: a few concrete
        # cases first (milliseconds) refute most unsound division rules without a timeout
        _, subs = cex_check.search(q.solver_formula, tries=PRE_SEARCH)
        if subs is not None:
            return _refutation(q, cex_check.substitution(subs), key, t0, "a concrete search at full width")
    res, s = _solve(q.solver_formula, mode, timeout_ms)
    if res == z3.unsat:
        if q.inst.assume and _vacuous(q.inst):
            return _NoMatch("guard")
        return DtypeResult(key, PROVED, None, "", time.perf_counter() - t0)
    if res == z3.sat and q.inst.blocks:
        return DtypeResult(key, UNKNOWN, None, "reductions, dot and trans are compared by structure only; "
                           "their operands differ", time.perf_counter() - t0)
    if res == z3.sat:
        model = s.model()
        return _refutation(q, lambda e: model.eval(e, model_completion=True), key, t0, "")
    return _after_timeout(rule, env, mode, timeout_ms, q, key, t0, s.reason_unknown())


def _after_timeout(rule: Rule, env: Mapping[str, DType], mode: str, timeout_ms: int, q: _Query, key: str,
                   t0: float, reason: str) -> DtypeResult:
    """z3 timed out at full width: solve narrower integer widths (a model there seeds the search),
    then search concrete counterexamples at full width; a rule with no counterexample whose
    narrow proofs all hold is ``proved-reduced-width``, otherwise ``unknown``."""
    split = _case_split(q, mode, timeout_ms)
    if split is not None and split[0] == z3.unsat:
        return DtypeResult(key, PROVED, None, f"full width by case split on {split[1]} ({split[2]} cases)",
                           time.perf_counter() - t0)
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
        rres, rs = _solve(rq.solver_formula, mode, timeout_ms * 4)
        if rres == z3.unsat:
            proved_at.append(w)
        elif rres == z3.sat:
            notes.append(f"refuted at {w} bits")
            narrow = cex_check.free_constants(rq.solver_formula)
            m = rs.model()
            seeds.append(cex_check.lift(m, narrow, wide, _signedness(q.inst)))
            seeds.append(cex_check.lift(m, narrow, wide, {}))
        else:
            notes.append(f"{w} bits: {rres}")
    holds, subs = cex_check.search(q.solver_formula, tries=SAMPLES, seeds=seeds)
    if subs is not None:
        return _refutation(q, cex_check.substitution(subs), key, t0, "a concrete search at full width")
    if widths and len(proved_at) == len(widths) and holds >= 50:
        return DtypeResult(key, PROVED_REDUCED, None,
                           f"full width timed out ({reason}); proved at {'/'.join(map(str, proved_at))} bits; "
                           f"{holds} sampled full-width cases hold", time.perf_counter() - t0)
    if holds:
        notes.append(f"no counterexample in {holds} concrete full-width cases")
    return DtypeResult(key, UNKNOWN, None, f"timeout after {timeout_ms} ms ({reason})"
                       + ("; " + "; ".join(notes) if notes else ""), time.perf_counter() - t0)
