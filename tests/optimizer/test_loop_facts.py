"""What a ``for`` loop's semantics says about its induction variable, and the rule using it.

``range(lo, hi, step)`` over i32 scalars: the body runs only for ``lo <= iv < hi`` with ``iv - lo``
a multiple of ``step``. ``analyses.loop_iv_facts`` states that for constant ``lo``/``step`` (and
``iv < hi`` when ``hi`` is a parameter); the e-graph is seeded with it and translation validation
assumes the same facts. ``lt-offset-bound`` uses it: ``splat(i) + arange < splat(n)`` (the column
mask of a row loop) becomes ``arange < splat(n - i)``, one scalar subtraction instead of an add a lane.
"""

from __future__ import annotations

import numpy as np
import pytest

from eggpu.ir.interp import interpret
from eggpu.ir.parser import parse_function
from eggpu.optimizer import optimize
from eggpu.optimizer.analyses import loop_iv_facts
from eggpu.optimizer.rules_loader import load_rules
from eggpu.optimizer.validate import validate
from eggpu.testing import assert_rewrites

RULE = {r.name: r for r in load_rules(env=False).rules}["lt-offset-bound"].text


def _loop(lo: str = "%c0", hi: str = "%n", step: int = 16, mask: str = "lt(%o, %ns)", lo_param: bool = False) -> str:
    """Row sum over ``n`` columns in 16-lane tiles: ``y[0] = sum(x[0:n])``; ``mask`` the tile's
    bound check (``%o = splat(i) + arange``, ``%ns = splat(n)``, ``%d = splat(n - i)``)."""
    extra = ", %lo: i32" if lo_param else ""
    return f"""kernel k(%x: ptr<f32>, %y: ptr<f32>, %n: i32{extra}) grid=1 {{
  %c0 = const() {{dtype=i32, value=0}} : i32
  %c16 = const() {{dtype=i32, value={step}}} : i32
  %f0 = const() {{dtype=f32, value=0.0}} : f32
  %z = splat(%f0) {{shape=(16)}} : f32[16]
  %a = arange() {{end=16, start=0}} : i32[16]
  %h = add(%n, %c0) : i32
  %acc = for({lo}, {hi}, %c16, %z) : f32[16] {{
  ^(%i: i32, %s: f32[16]):
    %xi = addptr(%x, %i) : ptr<f32>
    %p = splat(%xi) {{shape=(16)}} : ptr<f32>[16]
    %q = addptr(%p, %a) : ptr<f32>[16]
    %si = splat(%i) {{shape=(16)}} : i32[16]
    %o = add(%si, %a) : i32[16]
    %ns = splat(%n) {{shape=(16)}} : i32[16]
    %ni = sub(%n, %i) : i32
    %d = splat(%ni) {{shape=(16)}} : i32[16]
    %m = {mask} : bool[16]
    %v = load(%q, %m, %z) : f32[16]
    %t = add(%s, %v) : f32[16]
    yield(%t)
  }}
  %r = reduce_sum(%acc) {{axis=0}} : f32
  store(%y, %r)
}}"""


def test_loop_iv_facts():
    (f,) = loop_iv_facts(parse_function(_loop()))
    assert (f.lo, f.hi_max, f.p, f.hi.name) == (0, 2**31 - 16, 16, "n")
    (f,) = loop_iv_facts(parse_function(_loop(lo="%c16", step=12)))  # iv = 12 + 12 j
    assert (f.lo, f.hi_max, f.p) == (12, 12 + (2**31 - 2 - 12) // 12 * 12, 4)
    (f,) = loop_iv_facts(parse_function(_loop(hi="%h")))  # a computed bound: no iv < hi
    assert f.hi is None and f.p == 16
    assert loop_iv_facts(parse_function(_loop(lo="%lo", lo_param=True))) == []  # runtime lo
    assert loop_iv_facts(parse_function(_loop(step=0))) == []
    assert loop_iv_facts(parse_function(_loop(step=-16))) == []


def test_mask_bound_is_hoisted_out_of_the_lanes():
    res = assert_rewrites(RULE, _loop(), _loop(mask="lt(%a, %d)"))
    assert res.rule_hits.get("lt-offset-bound") == 1
    assert res.cost_after < res.cost_before - 1


@pytest.mark.parametrize("kw", [{"lo": "%lo", "lo_param": True}, {"hi": "%h"}])
def test_mask_stays_without_the_loop_facts(kw):
    """A runtime ``lo`` gives no range (``iv`` may be negative); a computed ``hi`` no ``iv < hi``."""
    prog = _loop(**kw)
    res = assert_rewrites(RULE, prog, prog)
    assert not res.rule_hits.get("lt-offset-bound")


def test_validation_assumes_only_the_loop_facts():
    """The rewrite validates with the facts; where a fact is missing, validation finds the lane."""
    assert validate(parse_function(_loop()), parse_function(_loop(mask="lt(%a, %d)"))).verdict == "valid"
    for kw in ({"lo": "%lo", "lo_param": True}, {"hi": "%h"}):
        v = validate(parse_function(_loop(**kw)), parse_function(_loop(mask="lt(%a, %d)", **kw)))
        assert v.verdict == "invalid", (kw, v)


@pytest.mark.parametrize("n", [1, 16, 1000, 1001])
def test_optimized_loop_matches_numpy(n):
    fn = parse_function(_loop())
    res = optimize(fn)
    assert res.rule_hits.get("lt-offset-bound") == 1 and res.validation.verdict == "valid"
    x = np.random.default_rng(n).standard_normal(n + 40).astype(np.float32)
    for f in (fn, res.function):
        y = np.zeros(1, np.float32)
        interpret(f, 1, x, y, n)
        np.testing.assert_allclose(y[0], x[:n].sum(dtype=np.float64), rtol=1e-4)


def test_seeds_state_the_loop_and_outer_arange_facts():
    from eggpu.optimizer.analyses import fact_seeds
    from eggpu.optimizer.encode import encode

    fn = parse_function(_loop())
    enc = encode(fn)
    seeds = fact_seeds(fn, enc.leaves)
    iv = enc.leaves[enc.leaf_of[id(fn.body.ops[6].regions[0].args[0])]].term()
    n = enc.leaves[enc.leaf_of[id(fn.params[2])]].term()
    arange = enc.leaves[enc.leaf_of[id(fn.body.ops[4].results[0])]].term()  # opaque inside the loop
    assert f"(set (LowerBound {iv}) 0) (set (UpperBound {iv}) {2**31 - 16})" in seeds
    assert f"(Divisible {iv} 16)" in seeds
    assert f"(set (LowerBound (Lt (I32) {iv} {n})) 1)" in seeds
    assert f"(set (LowerBound {arange}) 0) (set (UpperBound {arange}) 15)" in seeds
    # a computed bound: the range and divisor stay, iv < hi is not stated
    fn = parse_function(_loop(hi="%h"))
    enc = encode(fn)
    assert "(Lt (I32)" not in fact_seeds(fn, enc.leaves)
