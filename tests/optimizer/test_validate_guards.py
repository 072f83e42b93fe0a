"""Guarded lemmas: translation validation re-establishes a proved rule's range guards itself
(optimizer/validate_guards.py) and accepts the rewrite without z3; where it cannot, z3 decides.

The rule is the shipped ``lt-offset-bound`` (``splat(i) + x < splat(n) -> x < splat(n - i)`` when
``i, x >= 0``, ``i < n`` and ``i + x`` does not wrap), on a row loop whose column mask it rewrites.
"""

from __future__ import annotations

import pytest
import z3
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eggpu.ir.dtypes import i32
from eggpu.ir.parser import parse_function
from eggpu.optimizer.rules_loader import load_rules
from eggpu.optimizer.validate import validate
from eggpu.optimizer.validate_guards import Bounds, guards_hold
from eggpu.optimizer.validate_lemmas import lemma_of, lemmas_of

RULE = {r.name: r for r in load_rules(env=False).rules}["lt-offset-bound"]
LEMMAS = lemmas_of([RULE], [i32])
GOOD = "lt(%a, %d)"


def _loop(mask: str = "lt(%o, %ns)", lo: str = "0", step: int = 16, width: int = 16, hi: str = "%n") -> str:
    """``y[0] = sum(x[0:n])`` in ``width``-lane tiles from ``lo`` by ``step``; ``mask`` the tile's
    bound check over ``%o = splat(i) + arange``, ``%ns = splat(n)``, ``%d = splat(n - i)``,
    ``%d1 = splat(n - i + 1)``; ``lo="%lo"`` a runtime start, ``hi="%h"`` a computed bound."""
    lo_op = "" if lo == "%lo" else f"  %lo = const() {{dtype=i32, value={lo}}} : i32\n"
    return f"""kernel k(%x: ptr<f32>, %y: ptr<f32>, %n: i32, %r: i32) grid=1 {{
  %c1 = const() {{dtype=i32, value=1}} : i32
{lo_op}  %cs = const() {{dtype=i32, value={step}}} : i32
  %f0 = const() {{dtype=f32, value=0.0}} : f32
  %z = splat(%f0) {{shape=({width})}} : f32[{width}]
  %a = arange() {{end={width}, start=0}} : i32[{width}]
  %h = add(%n, %c1) : i32
  %acc = for({'%r' if lo == '%lo' else '%lo'}, {hi}, %cs, %z) : f32[{width}] {{
  ^(%i: i32, %s: f32[{width}]):
    %xi = addptr(%x, %i) : ptr<f32>
    %p = splat(%xi) {{shape=({width})}} : ptr<f32>[{width}]
    %q = addptr(%p, %a) : ptr<f32>[{width}]
    %si = splat(%i) {{shape=({width})}} : i32[{width}]
    %o = add(%si, %a) : i32[{width}]
    %ns = splat(%n) {{shape=({width})}} : i32[{width}]
    %ni = sub(%n, %i) : i32
    %d = splat(%ni) {{shape=({width})}} : i32[{width}]
    %ni1 = add(%ni, %c1) : i32
    %d1 = splat(%ni1) {{shape=({width})}} : i32[{width}]
    %m = {mask} : bool[{width}]
    %v = load(%q, %m, %z) : f32[{width}]
    %t = add(%s, %v) : f32[{width}]
    yield(%t)
  }}
  %res = reduce_sum(%acc) {{axis=0}} : f32
  store(%y, %res)
}}"""


def _check(after_mask: str, lemmas=LEMMAS, **kw):
    return validate(parse_function(_loop(**kw)), parse_function(_loop(after_mask, **kw)), lemmas=lemmas)


def test_the_shipped_rule_is_a_guarded_lemma_at_the_signed_dtypes():
    assert [lm.name for lm in LEMMAS] == ["lt-offset-bound"] and LEMMAS[0].guards
    assert len(lemmas_of([RULE])) == 4  # i8, i16, i32, i64: the verifier's assignments


@pytest.mark.parametrize("kw", [{}, {"lo": "32"}, {"lo": "4", "step": 4, "width": 4}, {"width": 8, "step": 8}])
def test_an_instance_whose_guards_hold_needs_no_solver_call(kw):
    v = _check(GOOD, **kw)
    assert v.verdict == "valid" and v.solver_calls == 0, v
    assert v.guarded_lemma_hits >= 1 and v.as_dict()["guarded_lemma_hits"] == v.guarded_lemma_hits


@pytest.mark.parametrize("kw, lane", [
    ({"lo": "%lo"}, "a runtime start: i may be negative"),
    ({"hi": "%h"}, "a computed bound: i < n is not known"),
    ({"width": 32}, "32 lanes from a 16-step i up to 2**31 - 16: i + x may wrap"),
    ({"lo": "3", "step": 5}, "i up to 2**31 - 7: i + 15 may wrap"),
    ({"lo": "-16"}, "a negative start"),
])
def test_an_instance_whose_guards_fail_goes_to_z3_which_rejects_it(kw, lane):
    v = _check(GOOD, **kw)
    assert v.verdict == "invalid" and v.solver_calls >= 1 and v.guarded_lemma_hits == 0, (lane, v)
    assert "load #1 mask differs at lane" in v.detail


@pytest.mark.parametrize("mask", ["lt(%a, %d1)", "le(%a, %d)", "lt(%a, %ns)", "lt(%o, %d)"])
def test_a_lookalike_with_a_wrong_bound_is_rejected(mask):
    v = _check(mask)
    assert v.verdict == "invalid" and v.guarded_lemma_hits == 0, (mask, v)


def test_guards_are_evaluated_on_the_bounds_of_the_bound_terms():
    """Each guard of the rule, one fact at a time: i >= 0, x >= 0, i < n, i + x below 2**31."""
    lm = LEMMAS[0]
    i, n, lane = z3.BitVecs("iv n lane", 32)
    binds = {lm.term_vars["i"][0].get_id(): i, lm.term_vars["x"][0].get_id(): lane,
             lm.term_vars["n"][0].get_id(): n}
    facts = {"lo": i >= 0, "hi": i <= 2**31 - 16, "below": i < n, "lanes": z3.ULT(lane, 16)}
    assert guards_hold(lm, binds, Bounds(facts.values()))
    for drop in facts:
        assert not guards_hold(lm, binds, Bounds([f for k, f in facts.items() if k != drop])), drop
    assert guards_hold(lm, binds, Bounds([*facts.values(), z3.ULT(lane, 17)]))  # the tighter bound counts
    assert not guards_hold(lm, binds, Bounds([i >= 0, i <= 2**31 - 15, i < n, z3.ULT(lane, 16)]))  # may wrap
    assert not guards_hold(lm, {}, Bounds(facts.values()))  # unbound variables: nothing shown


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lo=st.sampled_from(["0", "1", "7", "16", "-1", "%lo"]), step=st.sampled_from([1, 3, 16]),
       width=st.sampled_from([8, 16, 32]), hi=st.sampled_from(["%n", "%h"]),
       mask=st.sampled_from([GOOD, "lt(%a, %d1)", "le(%a, %d)"]))
def test_the_lemma_never_changes_a_verdict_only_its_cost(lo, step, width, hi, mask):
    kw = {"lo": lo, "step": step, "width": width, "hi": hi}
    with_lemma, z3_only = _check(mask, **kw), _check(mask, lemmas=(), **kw)
    assert with_lemma.verdict == z3_only.verdict, (kw, mask, with_lemma, z3_only)
    assert with_lemma.solver_calls <= z3_only.solver_calls


def test_bounds_from_facts_lane_ranges_and_sums():
    i, n, k = z3.BitVecs("i n k", 32)
    lane = z3.BitVec("lane", 32)
    b = Bounds([i >= 0, i <= 1000, i < n, z3.And(z3.ULT(lane, 16)), k > -5, 3 >= k])
    assert b.interval(i, True) == (0, 1000) and b.interval(lane, True) == (0, 15)
    assert b.interval(i + lane, True) == (0, 1015) and b.interval(i - lane, True) == (-15, 1000)
    assert b.interval(k, True) == (-4, 3) and b.interval(k, False) == (0, 2**32 - 1)  # may be negative
    assert b.interval(i * 4, True) == (0, 4000) and b.interval(lane, False) == (0, 15)
    assert b.truth(i < n) is True and b.truth(z3.Not(i < n)) is False
    assert b.truth(lane < 16) is True and b.truth(i < lane) is None and b.truth(i >= 1001) is False
    # a sum that may wrap says nothing
    big = z3.BitVec("big", 32)
    b = Bounds([big >= 0, big <= 2**31 - 16, z3.ULT(lane, 32)])
    assert b.interval(big + lane, True) == (-(2**31), 2**31 - 1)
    assert b.interval(n, True) == (-(2**31), 2**31 - 1)


SHIFT = ("(rewrite (Lt t (Add t x (Splat t s (Const t 200))) (Splat t s n)) (Lt t x (Splat t s (Sub t n (Const t 200)))) "
         ":when ((IsSigned t) (>= (LowerBound x) 0) (<= (UpperBound x) 100) (>= (LowerBound n) 0) (<= (UpperBound n) 1000)) "
         ':name "shift-200")')


def test_plain_guarded_rules_are_proved_where_their_lemmas_are_built():
    """A lemma at an assignment the verifier never proved would be unsound: for every shipped
    range-guarded rule whose assignments are decided without the verifier (validate_lemmas._plain),
    and for one whose literal is not an i8 value, each assignment with a lemma is one the
    verifier's encoding accepts (so the rule's proof covers it), and the others are not."""
    from eggpu.optimizer.rule_verifier import assignments
    from eggpu.optimizer.rules_loader import parse_rules
    from eggpu.optimizer.validate_lemmas import (
        _literals_canonical,
        _plain,
        _plain_assignments,
        _proved_assignments,
        _range_guarded,
        _verifier_encodes,
    )

    shift = parse_rules(SHIFT, "<t>")[0][0]
    rules = [r for r in load_rules(env=False).rules if r.kind == "rewrite" and not r.fast_math
             and any(s == "DT" for s in r.var_sorts.values())] + [shift]
    plain = [r for r in rules if _plain(r)]
    assert RULE in plain and shift in plain and len(plain) >= 20
    assert any(not _range_guarded(r) and r.name == "mul-two-float" for r in plain)
    checked = 0
    for r in plain:
        assert _plain_assignments(r, None) == assignments(r), r.name
        for env in assignments(r):
            built = _literals_canonical(r, env) and lemma_of(r, 0, env) is not None
            if built or r is shift:
                assert built == _verifier_encodes(r, env), (r.name, env)
                checked += built
    print("assignments with a lemma, checked against the verifier:", checked)
    assert checked >= 4 + 3 + 4  # lt-offset-bound at i8..i64, shift-200 at i16..i64, mul-two-float ...
    assert [e["t"].name for e in _proved_assignments(shift, None)] == ["i16", "i32", "i64"]


def test_extended_bounds_add_knowledge_without_changing_the_original():
    i, lane = z3.BitVecs("iv lane", 32)
    base = Bounds([i >= 0, i <= 100])
    more = base.extended([z3.ULT(lane, 8), i <= 50])
    assert more.interval(i + lane, True) == (0, 57) and base.interval(i, True) == (0, 100)
    assert base.interval(lane, True) == (-(2**31), 2**31 - 1)


def test_a_dtype_generic_float_rule_settles_a_check_that_needed_a_float_solver_call():
    """``x * 2.0 -> x + x`` (``mul-two-float``, proved for every float dtype) used to be proved again
    by a z3 floating-point query in every compile that used it (about 400 k units); as a lemma at
    the kernel's f32 it needs none, while a wrong variant still goes to the solver and is rejected."""
    from eggpu.ir.dtypes import f32

    (rule,) = [r for r in load_rules(env=False).rules if r.name == "mul-two-float"]

    def prog(value: str) -> str:
        return f"""kernel k(%x: ptr<f32>, %y: ptr<f32>) grid=1 {{
  %a = arange() {{end=8, start=0}} : i32[8]
  %p = splat(%x) {{shape=(8)}} : ptr<f32>[8]
  %q = addptr(%p, %a) : ptr<f32>[8]
  %v = load(%q) : f32[8]
  %two = const() {{dtype=f32, value=2.0}} : f32
  %t = splat(%two) {{shape=(8)}} : f32[8]
  %w = {value} : f32[8]
  %o = splat(%y) {{shape=(8)}} : ptr<f32>[8]
  %r = addptr(%o, %a) : ptr<f32>[8]
  store(%r, %w)
}}"""

    before = parse_function(prog("mul(%v, %t)"))
    v = validate(before, parse_function(prog("add(%v, %v)")), lemmas=lemmas_of([rule], [f32, i32]))
    assert v.verdict == "valid" and v.solver_calls == 0 and v.lemma_hits == 1 and v.guarded_lemma_hits == 0, v
    bad = validate(before, parse_function(prog("add(%v, %t)")), lemmas=lemmas_of([rule], [f32, i32]))
    assert bad.verdict == "invalid" and bad.solver_calls >= 1, bad
