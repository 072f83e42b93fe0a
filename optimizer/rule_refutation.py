"""Counterexamples: a z3 model or a concrete search hit turned into a verdict, re-evaluated with
the op table's reference semantics (:mod:`.cex_check`) where that is possible."""

from __future__ import annotations

import time

import z3

from . import cex_check, ref_search, z3ops
from .rule_analysis import Ptr, Ty
from .rule_encoding import _Instance, _Query
from .rule_verdicts import REFUTED, UNKNOWN, DtypeResult
from .rules_loader import Rule

# ------------------------------------------------------------------ counterexamples


def _fmt_value(v: z3.ExprRef, ty: Ty | str, mode: str) -> str:
    if ty == "i64":
        n = v.as_long() if z3.is_bv_value(v) else None
        if n is None:
            return str(v)
        return f"{n - (1 << 64) if n >= 1 << 63 else n} (i64)"
    if isinstance(ty, Ptr):
        return hex(v.as_long()) + f" ({ty})" if z3.is_bv_value(v) else str(v)
    try:
        if ty.is_float and mode == z3ops.REAL:
            f = v.as_fraction() if z3.is_rational_value(v) else None
            txt = str(f) if f is not None else str(v)
            return f"{txt} ({ty}, real)"
        py = z3ops.to_python(v, ty)
    except (ValueError, AttributeError, z3.Z3Exception):
        return f"{v} ({ty})"
    if isinstance(py, bool):
        return f"{'true' if py else 'false'} ({ty})"
    return f"{py!r} ({ty})"


def _z3_detail(q: _Query, value_of: cex_check.ValueOf) -> str:
    """``lhs = ..., rhs = ...`` as the z3 encoding computes them (plus undefined sides)."""
    inst = q.inst
    detail = ""
    if q.lhs_val is not None and q.rhs_val is not None:
        lty = _ty_of_expr(inst, q.inst.rule)
        if lty is not None:
            detail = (f"lhs = {_fmt_value(value_of(q.lhs_val), lty, inst.mode)}, "
                      f"rhs = {_fmt_value(value_of(q.rhs_val), lty, inst.mode)}")
        for side, d in (("lhs", q.lhs_def), ("rhs", q.rhs_def)):
            if d is not None and z3.is_false(z3.simplify(value_of(d))):
                detail += f"; {side} is undefined (outside fast-math's domain, or an egglog i64 overflow)"
    return detail


def _refutation(q: _Query, value_of: cex_check.ValueOf, key: str, t0: float, found_by: str) -> DtypeResult:
    """The verdict for a counterexample (a z3 model or a concrete search hit, read through
    ``value_of``). Exact-mode rewrites are re-evaluated with the op table's reference semantics:
    only a difference the reference confirms is a refutation. z3 gives uninterpreted functions
    (exp, log, ...) whatever values suit it, so an unconfirmed model over them proves nothing
    either way (``unknown``, labelled); an unconfirmed model without them means the z3 encoding
    and the reference disagree (``unknown``, reported as such)."""
    inst = q.inst
    rule = inst.rule
    cex = {name: _fmt_value(value_of(expr), ty, inst.mode) for name, (expr, ty) in inst.shown.items()
           if ty is not None}
    apps = cex_check.uninterpreted_apps(q.solver_formula)
    chosen = cex_check.describe_uninterpreted(apps, value_of) if apps else ""
    suffix = f"; found by {found_by}" if found_by else ""
    egg_ok = z3.And(*inst.int_defined, *inst.panic_ok)
    if z3.is_false(z3.simplify(value_of(egg_ok))):  # an egglog-level failure, whatever the lane values
        detail = _z3_detail(q, value_of) + ("; the right-hand side would build a non-canonical constant "
                                            "or overflow egglog's checked i64 arithmetic")
        return DtypeResult(key, REFUTED, cex, detail + suffix, time.perf_counter() - t0)
    if inst.mode == z3ops.REAL or rule.kind == "rule" or rule.lhs is None or rule.rhs is None:
        detail = _z3_detail(q, value_of)
        if chosen:
            detail += f"; uninterpreted values chosen by z3, not computed: {chosen}"
        return DtypeResult(key, REFUTED, cex, detail + suffix, time.perf_counter() - t0)
    try:
        lv, lty, rv, rty, differs = ref_search.compare(inst, rule, value_of)
    except (cex_check.NotEvaluable, KeyError, ValueError, AttributeError, TypeError, z3.Z3Exception) as e:
        # never a refutation on the z3 encoding's word alone: the reference must confirm it
        detail = ("not decided: the counterexample could not be re-evaluated with the reference "
                  f"semantics ({e}); unconfirmed: {_z3_detail(q, value_of)} at "
                  + ", ".join(f"{k} = {v}" for k, v in cex.items()))
        return DtypeResult(key, UNKNOWN, None, detail, time.perf_counter() - t0)
    if differs:
        tol = (f"; robust to {ref_search.TOLERANCE_ULPS} ulps of error in every transcendental result"
               if ref_search.transcendental(rule) else "")
        detail = (f"lhs = {cex_check.fmt(lv, lty)}, rhs = {cex_check.fmt(rv, rty)} "
                  f"(computed with the reference semantics{tol})")
        return DtypeResult(key, REFUTED, cex, detail + suffix, time.perf_counter() - t0)
    if not cex_check.same(lv, rv):
        detail = (f"not decided: at {', '.join(f'{k} = {v}' for k, v in cex.items())} the reference gives "
                  f"lhs = {cex_check.fmt(lv, lty)}, rhs = {cex_check.fmt(rv, rty)}, a difference within "
                  f"the {ref_search.TOLERANCE_ULPS}-ulp tolerance of transcendental ops")
        return DtypeResult(key, UNKNOWN, None, detail, time.perf_counter() - t0)
    if chosen:
        detail = ("not proved: z3's counterexample needs values of uninterpreted functions "
                  f"({chosen}; chosen by z3, not computed); at these inputs the reference gives both "
                  f"sides {cex_check.fmt(lv, lty)}")
    else:
        detail = ("z3's counterexample is not confirmed by the reference semantics (the z3 encoding "
                  f"disagrees with eggpu.ir.semantics; please report): both sides {cex_check.fmt(lv, lty)} "
                  f"at {', '.join(f'{k} = {v}' for k, v in cex.items())}")
    return DtypeResult(key, UNKNOWN, None, detail, time.perf_counter() - t0)


def _ty_of_expr(inst: _Instance, rule: Rule) -> Ty | None:
    try:
        if rule.lhs is not None:
            return inst.infer(rule.lhs, None, False)
    except Exception:
        return None
    return None
