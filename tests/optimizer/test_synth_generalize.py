"""Constants generalized into guarded pattern variables (``optimizer/synth_generalize.py``).

A concrete workload candidate (``(x // 64) % 32 => (x >> 6) & 31``, x >= 0) becomes the family it
belongs to (powers of two ``c0``, ``c1``: ``(x >> log2 c0) & (c1 - 1)``) when random instances of
the constants agree; ties between constants (``1024 = 2 * 512``) are found when the free form
fails; what holds for one constant only is not generalized. Proofs of the families: the shipped
rules in ``rules/synthesized.egg`` (``tests/optimizer/test_synthesized_rules.py``).
"""

from __future__ import annotations

import pytest

from eggpu.ir.dtypes import f32, i32, i64
from eggpu.optimizer.rules_loader import parse_rules
from eggpu.optimizer.synth_generalize import generalize
from eggpu.optimizer.synth_terms import Term


def _t(dt):
    def f(op, *a):
        return Term(op, dt, tuple(a), size=1 + sum(t.size for t in a))

    def c(v):
        return Term("const", dt, value=v)
    return f, c, Term("var", dt, value="x")


f, c, x = _t(i32)
POW2 = "(= {k} (log2 (max {c} 1))) (= {c} (<< 1 {k}))"


def test_div_rem_by_powers_of_two_generalizes_to_the_family():
    g = generalize(f("rem", f("div", x, c(64)), c(32)), f("and", f("shr", x, c(6)), c(31)), i32, ("x",))
    assert g.about == "c0 a power of two; c1 a power of two; r1 = (- c1 1)"
    assert POW2.format(c="c0", k="k0") in g.text and POW2.format(c="c1", k="k1") in g.text
    # the shift amount is c0's log, bound by the guard; the mask c1 - 1 is bound; its sign and
    # range guards are left out: every power of two of the dtype gives a canonical mask
    assert "(Shr (I32) x (Splat (I32) s (Const (I32) k0)))" in g.text
    assert "(= r1 (- c1 1)))" in g.text and "(> c0 0)" not in g.text
    assert "(>= (LowerBound x) 0)" in g.text
    rule = parse_rules(g.text, "<t>")[0][0]  # a well-formed rule of the rule language
    assert rule.name == g.name and g.name.startswith("syn-i32-rem-div-")


def test_two_instances_of_one_family_give_the_same_rule():
    a = generalize(f("mul", c(256), f("div", x, c(512))), f("and", f("shr", x, c(1)), c(-256)), i32, ("x",))
    b = generalize(f("mul", c(64), f("div", x, c(2048))), f("and", f("shr", x, c(5)), c(-64)), i32, ("x",))
    assert a.text == b.text
    assert "r0 = (- k1 k0)" in a.about and "(= r0 (- k1 k0)) (>= r0 0)" in a.text  # never a negative shift


def test_a_guard_that_can_fail_is_kept():
    # (c2 - 1) * c0 overflows i32 for large powers of two: the range guard stays
    g = generalize(f("mul", c(1024), f("rem", f("div", x, c(64)), c(32))), f("and", f("shl", x, c(4)), c(31744)),
                   i32, ("x",))
    assert "(= r1 (* (- c2 1) c0)) (<= r1 2147483647)" in g.text and "(>= r1 0)" not in g.text


@pytest.mark.parametrize(("lhs", "rhs", "tie", "guards"), [
    # 1024 * (x // 512): the free form (any two powers of two) fails, 512 = 1024 >> 1 holds; its
    # sign is a guard (c0 = 1 would give c1 = 0)
    (f("mul", c(1024), f("div", x, c(512))), f("and", f("add", x, x), c(-1024)), "c1 = (>> c0 1)",
     "(= c1 (>> c0 1)) (> c1 0)"),
    # x % 512 + 1024 * (x // 512): 1024 = 2 * 512, positive for every power of two
    (f("add", f("rem", x, c(512)), f("mul", c(1024), f("div", x, c(512)))), f("add", f("and", x, c(-512)), x),
     "c1 = (* 2 c0)", "(= c1 (* 2 c0)) (= r0"),
])
def test_a_tie_between_constants_is_found_when_the_free_form_fails(lhs, rhs, tie, guards):
    g = generalize(lhs, rhs, i32, ("x",))
    assert tie in g.about and guards in g.text


def test_a_non_power_of_two_constant_gets_its_sign_as_guard():
    # where(x < 0, x + 1000, x) => x for x >= 0 holds for every positive addend, not only 1000
    g = generalize(f("where", f("lt", x, c(0)), f("add", x, c(1000)), x), x, i32, ("x",))
    assert g.about == "c0 > 0" and "(> c0 0)" in g.text and "log2" not in g.text
    assert "(Const (I32) 0)" in g.text  # 0 stays a literal: structure, not a parameter


@pytest.mark.parametrize(("lhs", "rhs", "nonneg"), [
    (f("mul", c(3), x), f("add", f("add", x, x), x), ()),  # 3x = x + x + x for 3 only
    (f("rem", x, c(512)), f("and", x, c(511)), ()),        # needs x >= 0, which is not given here
    (f("add", x, c(0)), x, ()),                             # no constant to generalize
])
def test_what_holds_for_its_own_constant_only_is_not_generalized(lhs, rhs, nonneg):
    assert generalize(lhs, rhs, i32, nonneg) is None


def test_float_constants_are_not_generalized():
    ff, fc, fx = _t(f32)
    assert generalize(ff("mul", fc(0.5), ff("add", fc(1.0), fx)), ff("fma", fx, fc(0.5), fc(0.5)), f32) is None


def test_the_guards_follow_the_dtype():
    f64_, c64, x64 = _t(i64)
    g = generalize(f64_("rem", f64_("div", x64, c64(64)), c64(32)), f64_("and", f64_("shr", x64, c64(6)), c64(31)),
                   i64, ("x",))
    assert "(I64)" in g.text and "(I32)" not in g.text and "(= c1 (<< 1 k1))" in g.text
    # at i64 a product past the i64 range fails egglog's checked arithmetic (the guard does not
    # match), so no range guard is written; at i32 it is
    g2 = generalize(f64_("mul", c64(1024), f64_("rem", f64_("div", x64, c64(64)), c64(32))),
                    f64_("and", f64_("shl", x64, c64(4)), c64(31744)), i64, ("x",))
    assert "(= r1 (* (- c2 1) c0)))" in g2.text


# ------------------------------------------------------------------ the targeted search's composition pass

def test_the_composition_pass_builds_on_the_subterms_right_hand_sides():
    """``256 * (x // 512) + x % 512 => x - ((x >> 1) & -256)`` needs a 7-node right-hand side; the
    composition pass finds it from the subterm's ``(x >> 1) & -256`` (poi_cat's index)."""
    from eggpu.optimizer.cost import CostModel
    from eggpu.optimizer.synth_workload import targeted_candidates

    cm = CostModel.for_target("sm_90")
    cc = cm.const_cost + cm.shape_lane

    def priced(t):  # the workload abstraction's costs
        if t.op in ("var", "const"):
            return Term(t.op, t.dtype, value=t.value, cost=cc if t.op == "const" else 0.0)
        args = tuple(priced(a) for a in t.args)
        return Term(t.op, t.dtype, args, size=1 + sum(a.size for a in args),
                    cost=cm.lane_cost(t.op, t.dtype) + sum(a.cost for a in args))

    sub = priced(f("mul", c(256), f("div", x, c(512))))
    whole = priced(f("add", f("mul", c(256), f("div", x, c(512))), f("rem", x, c(512))))
    found = {str(k.lhs): k for k in targeted_candidates([sub, whole], i32, cm.lane_cost, cc, 0.5, n_samples=192)}
    assert str(found[str(sub)].rhs) == "and(shr(x, 1), -256)"
    assert str(found[str(whole)].rhs) == "sub(x, and(shr(x, 1), -256))" and found[str(whole)].nonneg == ("x",)
    # and it generalizes with the tie 512 = 2 * 256 (the shift stays the literal 1)
    g = generalize(found[str(whole)].lhs, found[str(whole)].rhs, i32, ("x",))
    assert g.about == "c0 a power of two; c1 = (* 2 c0); r1 = (- 0 c0)"
