"""Counterexamples for rules over uninterpreted ops (issue #14): a concrete search evaluating both
sides with the op table's reference semantics, its last-ulp tolerance for transcendentals, the
bitcast encoding that follows NaN payloads, and refutations that must be re-evaluated.

Every refutation is re-checked here independently with numpy (never through the verifier)."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
import z3

from eggpu.ir.dtypes import f16, f32, f64, i32
from eggpu.optimizer import ref_search, z3ops
from eggpu.optimizer.rule_encoding import _build
from eggpu.optimizer.rule_refutation import _refutation
from eggpu.optimizer.rule_verifier import PROVED, REFUTED, UNKNOWN, verify_rule
from eggpu.optimizer.rules_loader import parse_rule

FLOATS = [f16, f32, f64]


def _value(text: str) -> float:
    """The float of a printed value such as ``'-34.32 (f32)'`` or ``'nan (f32)'``."""
    return float(text.split(" (")[0])


def _sides(detail: str) -> tuple[float, float]:
    m = re.search(r"lhs = (\S+) \(f\d+\), rhs = (\S+) \(f\d+\)", detail)
    assert m, detail
    return float(m.group(1)), float(m.group(2))


def _np(dt, v):
    return np.asarray(v, dtype=dt.np)


def _differs(a, b) -> bool:
    a, b = float(a), float(b)
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) != math.isnan(b)
    return a != b


# ------------------------------------------------------------------ unsound rules: refuted


@pytest.mark.parametrize("dt", FLOATS, ids=str)
def test_exp_minus_exp_is_refuted_with_recomputed_values(dt):
    v = verify_rule('(rewrite (Sub t (Exp t x) (Exp t x)) (ConstF t 0.0) :when ((IsFloat t)) :name "exp-sub")',
                    dtypes=[dt])
    (r,) = v.results
    assert r.status == REFUTED, r.detail
    assert "computed with the reference semantics" in r.detail and "robust to 4 ulps" in r.detail, r.detail
    x = _np(dt, _value(r.counterexample["x"]))
    with np.errstate(all="ignore"):
        e = _np(dt, np.exp(x.astype(np.float64)))
        lhs = e - e
    lp, rp = _sides(r.detail)
    assert _differs(lhs, 0.0) and math.isnan(lp) and rp == 0.0, (x, lhs, r.detail)


@pytest.mark.parametrize("dt", FLOATS, ids=str)
def test_exp_of_log_is_refuted_with_recomputed_values(dt):
    v = verify_rule('(rewrite (Exp t (Log t x)) x :when ((IsFloat t)) :name "exp-log")', dtypes=[dt])
    (r,) = v.results
    assert r.status == REFUTED, r.detail
    x = _np(dt, _value(r.counterexample["x"]))
    with np.errstate(all="ignore"):
        lg = _np(dt, np.log(x.astype(np.float64)))
        lhs = _np(dt, np.exp(lg.astype(np.float64)))
    lp, rp = _sides(r.detail)
    assert _differs(lhs, x), (x, lhs)
    assert _differs(lp, rp) and (math.isnan(lp) == bool(np.isnan(lhs))), r.detail


def test_exp_product_is_refuted_beyond_the_tolerance():
    v = verify_rule('(rewrite (Mul t (Exp t a) (Exp t b)) (Exp t (Add t a b)) :when ((IsFloat t)) :name "exp-sum")',
                    dtypes=[f32])
    (r,) = v.results
    assert r.status == REFUTED, r.detail
    a, b = (_np(f32, _value(r.counterexample[k])) for k in ("a", "b"))
    with np.errstate(all="ignore"):
        ex = lambda t: _np(f32, np.exp(np.float64(t)))  # noqa: E731
        lhs, rhs = ex(a) * ex(b), ex(a + b)
    assert _differs(lhs, rhs), (a, b, lhs, rhs)
    if not (np.isnan(lhs) or np.isnan(rhs) or np.isinf(lhs) or np.isinf(rhs)):
        assert abs(int(lhs.view(np.int32)) - int(rhs.view(np.int32))) > ref_search.TOLERANCE_ULPS


# ------------------------------------------------------------------ sound rules: never refuted


@pytest.mark.parametrize("dt", FLOATS, ids=str)
def test_sin_is_odd_in_the_reference_and_never_refuted(dt):
    v = verify_rule('(rewrite (Sin t (Neg t x)) (Neg t (Sin t x)) :when ((IsFloat t)) :name "sin-odd")', dtypes=[dt])
    (r,) = v.results
    assert r.status == UNKNOWN, r  # sound, but not provable with sin uninterpreted
    assert "no difference beyond the 4-ulp tolerance in" in r.detail, r.detail


def test_a_last_ulp_difference_is_not_a_counterexample():
    # exp(x) = exp(x/2)**2 holds up to rounding: the reference differs in the last ulp at most
    # inputs, which is within the op table's "a few ulp" for exp: never a refutation
    text = ('(rewrite (Exp t x) (Mul t (Exp t (Mul t x (ConstF t 0.5))) (Exp t (Mul t x (ConstF t 0.5)))) '
            ':when ((IsFloat t)) :name "exp-half-squared")')
    (r,) = verify_rule(text, dtypes=[f32]).results
    assert r.status != REFUTED, r.detail
    # the search does see those differences without the tolerance (this test can fail)
    q = _build(parse_rule(text), {"t": f32}, z3ops.EXACT)
    old = ref_search.TOLERANCE_ULPS
    try:
        ref_search.TOLERANCE_ULPS = 0
        subs, _ = ref_search.search(q, tries=300)
    finally:
        ref_search.TOLERANCE_ULPS = old
    assert subs is not None


def test_tolerance_compares_by_ulps_and_class():
    one = 1.0
    near = float(np.nextafter(np.float32(1.0), np.float32(2.0)))
    assert not ref_search._far(one, near, f32)
    far = float(np.float32(1.0) + np.float32(2.0 ** -23) * 5)
    assert ref_search._far(one, far, f32)
    assert ref_search._far(math.nan, 1.0, f32) and not ref_search._far(math.nan, math.nan, f32)
    assert ref_search._far(math.inf, -math.inf, f32) and ref_search._far(math.inf, 1.0, f32)
    assert not ref_search._far(0.0, -0.0, f32)
    assert ref_search._far(3, 4, i32) and not ref_search._far(3, 3, i32)


def test_rules_without_transcendentals_compare_exactly():
    assert not ref_search.transcendental(parse_rule('(rewrite (Add t x (ConstF t 0.0)) x :when ((IsFloat t)) :name "a")'))
    assert ref_search.transcendental(parse_rule('(rewrite (Tanh t x) x :when ((IsFloat t)) :name "b")'))


# ------------------------------------------------------------------ NaN through bitcast


def test_bitcast_of_neg_and_abs_follow_the_nan_sign_bit():
    for text in ('(rewrite (Bitcast (F32) (I32) (Neg (F32) x)) (Xor (I32) (Bitcast (F32) (I32) x) '
                 '(Const (I32) -2147483648)) :name "fneg-bits")',
                 '(rewrite (Bitcast (F32) (I32) (Abs (F32) x)) (And (I32) (Bitcast (F32) (I32) x) '
                 '(Const (I32) 2147483647)) :name "fabs-bits")',
                 '(rewrite (Bitcast (F32) (I32) (Bitcast (I32) (F32) i)) i :name "bits-roundtrip")'):
        (r,) = verify_rule(text).results
        assert r.status == PROVED, (text, r.detail)


def test_nan_bits_are_a_nan_pattern_per_expression():
    x, y = z3.FPs("x y", z3.Float32())
    sign = z3.BitVecVal(1 << 31, 32)

    def sat(*facts):
        s = z3.Solver()
        s.add(*facts)
        return s.check()

    bx = z3ops.float_bits(x)
    # a NaN's bits are some NaN pattern, any of them (the payload is unspecified) ...
    assert sat(z3.fpIsNaN(x), z3.Not(z3.fpIsNaN(z3.fpBVToFP(bx, z3.Float32())))) == z3.unsat
    assert sat(z3.fpIsNaN(x), bx == 0x7FC00000) == z3.sat and sat(z3.fpIsNaN(x), bx == 0xFF800001) == z3.sat
    # ... two NaN inputs need not share it, one input has one pattern ...
    assert sat(z3.fpIsNaN(x), z3.fpIsNaN(y), bx != z3ops.float_bits(y)) == z3.sat
    assert sat(bx != z3ops.float_bits(x)) == z3.unsat
    # ... and neg/abs change only its sign bit; non-NaN values have their IEEE bits
    assert sat(z3ops.float_bits(z3.fpNeg(x)) != bx ^ sign) == z3.unsat
    assert sat(z3ops.float_bits(z3.fpAbs(x)) != bx & ~sign) == z3.unsat
    assert sat(z3.Not(z3.fpIsNaN(x)), bx != z3.fpToIEEEBV(x)) == z3.unsat
    # the computed NaN of x + y is a pattern of its own (not x's, not y's)
    assert sat(z3.fpIsNaN(x), z3ops.float_bits(z3.fpAdd(z3.RNE(), x, y)) != bx) == z3.sat


# ------------------------------------------------------------------ a refutation is re-evaluated


def test_a_counterexample_that_cannot_be_re_evaluated_is_unknown():
    # reduce_sum depends on the whole block: the reference cannot compute a side from a z3 model,
    # so the model is no refutation (it used to be reported "refuted, not re-evaluated")
    rule = parse_rule('(rewrite (Div (I32) (ReduceSum (I32) 0 x) y) (ReduceSum (I32) 0 x) :name "sum-div")')
    q = _build(rule, {}, z3ops.EXACT)
    s = z3.Solver()
    s.add(q.solver_formula)
    assert s.check() == z3.sat
    m = s.model()
    r = _refutation(q, lambda e: m.eval(e, model_completion=True), "i32", 0.0, "")
    assert r.status == UNKNOWN and r.counterexample is None, r
    assert "could not be re-evaluated with the reference semantics" in r.detail, r.detail
    assert "reduce_sum depends on the whole block" in r.detail, r.detail
