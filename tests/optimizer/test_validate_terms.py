"""Translation validation without z3 (optimizer/validate_terms.py): the same verdict as the solver
path wherever it decides, z3 never imported by a compile that needs no solver, and imported by
one that does."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eggpu.ir import Builder, f32, i32, pointer, scalar
from eggpu.ir.dtypes import i64
from eggpu.ir.parser import parse_function
from eggpu.optimizer.rules_loader import load_rules
from eggpu.optimizer.term_bounds import Bounds, Terms
from eggpu.optimizer.validate import validate
from eggpu.optimizer.validate_lemmas import Lemmas
from eggpu.optimizer.validate_terms import validate_structurally

from .test_validate_guards import GOOD, _loop

RULES = [{r.name: r for r in load_rules(env=False).rules}["lt-offset-bound"]]


def _both(f, g, rules=RULES, dtypes=(i32,)):
    """(the z3-free verdict or None, the solver path's verdict)."""
    return (validate_structurally(f, g, rules, dtypes),
            validate(f, g, lemmas=Lemmas(rules, dtypes)))


def _agree(s, z) -> None:
    assert s is None or (s.verdict, s.detail) == (z.verdict, z.detail), (s, z)
    if s is not None:
        assert s.solver_calls == 0 and s.units == 0 and z.solver_calls == 0
        assert s.checks == z.checks and s.budget_units == z.budget_units


# ---------------------------------------------------------------------- the guarded lemma


@pytest.mark.parametrize("kw", [{}, {"lo": "32"}, {"lo": "4", "step": 4, "width": 4}, {"width": 8, "step": 8}])
def test_a_guarded_lemma_instance_is_valid_without_z3(kw):
    s, z = _both(parse_function(_loop(**kw)), parse_function(_loop(GOOD, **kw)))
    assert s is not None and s.verdict == "valid" and s.guarded_lemma_hits >= 1, s
    _agree(s, z)


@pytest.mark.parametrize("kw", [{"lo": "%lo"}, {"hi": "%h"}, {"width": 32}, {"lo": "3", "step": 5}, {"lo": "-16"}])
def test_an_instance_whose_guards_fail_is_left_to_the_solver(kw):
    s, z = _both(parse_function(_loop(**kw)), parse_function(_loop(GOOD, **kw)))
    assert s is None and z.verdict == "invalid" and z.solver_calls >= 1


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lo=st.sampled_from(["0", "1", "7", "16", "-1", "%lo"]), step=st.sampled_from([1, 3, 16]),
       width=st.sampled_from([4, 8, 16, 32]), hi=st.sampled_from(["%n", "%h"]),
       mask=st.sampled_from([GOOD, "lt(%a, %d1)", "le(%a, %d)", "lt(%a, %ns)", "lt(%o, %ns)"]),
       with_rule=st.booleans())
def test_lemma_closed_and_open_obligations_get_the_solver_paths_verdict(lo, step, width, hi, mask, with_rule):
    kw = {"lo": lo, "step": step, "width": width, "hi": hi}
    s, z = _both(parse_function(_loop(**kw)), parse_function(_loop(mask, **kw)), RULES if with_rule else [])
    _agree(s, z)
    if mask == "lt(%o, %ns)":  # the same program: decided without z3
        assert s is not None and s.verdict == "valid"


# ---------------------------------------------------------------------- random integer index arithmetic

_OPS = ("add", "mul", "xor", "and", "or", "sub")


def _tree(draw, depth):
    if depth == 0 or draw(st.booleans()):
        return draw(st.sampled_from([("leaf", "offs"), ("leaf", "x"), ("leaf", "pid"), ("leaf", "n")]
                                    + [("const", c) for c in (0, 1, 3, 8, -1)]))
    return (draw(st.sampled_from(_OPS)), _tree(draw, depth - 1), _tree(draw, depth - 1))


@st.composite
def trees(draw):
    return _tree(draw, 3)


def _rewrite(t, how, rng):
    """An equivalent form of ``t`` (``how``: commute, regroup, shl for a multiplication by a power
    of two), or a wrong one (``break``: one constant changed)."""
    if t[0] in ("leaf", "const"):
        if how == "break" and t[0] == "const":
            return ("const", t[1] + 1), True
        return t, False
    op, a, b = t
    a2, da = _rewrite(a, how, rng)
    b2, db = (b, False) if da else _rewrite(b, how, rng)
    if how == "commute" and op in ("add", "mul", "xor", "and", "or"):
        return (op, b2, a2), da or db
    if how == "regroup" and op in ("add", "mul", "xor") and b2[0] == op:
        return (op, (op, a2, b2[1]), b2[2]), da or db
    if how == "shl" and op == "mul" and b2 == ("const", 8):
        return ("shl", a2, ("const", 3)), da or db
    return (op, a2, b2), da or db


def _kernel(tree):
    """``out[pid * 8 + offs] = x + tree`` over 8 lanes, masked by ``offs < n``."""
    b = Builder("k", [("x", pointer(i32)), ("out", pointer(i32)), ("n", scalar(i32))])
    shape = (8,)
    offs = b.op("arange", start=0, end=8)
    pid = b.op("splat", b.op("program_id", axis=0), shape=shape)
    n = b.op("splat", b.param("n"), shape=shape)
    mask = b.op("lt", offs, n)
    x = b.op("load", b.op("addptr", b.op("splat", b.param("x"), shape=shape), offs), mask)
    leaves = {"offs": offs, "x": x, "pid": pid, "n": n}

    def emit(t):
        if t[0] == "leaf":
            return leaves[t[1]]
        if t[0] == "const":
            return b.op("splat", b.const(t[1], i32), shape=shape)
        return b.op(t[0], emit(t[1]), emit(t[2]))

    base = b.op("add", b.op("mul", pid, b.op("splat", b.const(8, i32), shape=shape)), offs)
    b.effect("store", b.op("addptr", b.op("splat", b.param("out"), shape=shape), base), emit(tree), mask)
    return b.finish()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tree=trees(), how=st.sampled_from(["commute", "regroup", "shl", "break", "same"]))
def test_random_index_arithmetic_gets_the_solver_paths_verdict(tree, how):
    after, broken = _rewrite(tree, how, None) if how != "same" else (tree, False)
    s, z = _both(_kernel(tree), _kernel(after), [], (i32,))
    _agree(s, z)
    if how in ("same", "commute"):  # the same terms up to operand order: decided without z3
        assert s is not None and s.verdict == "valid"
    if broken and z.verdict != "valid":  # a changed constant may still be equal (0 * 0, 1 * 0)
        assert s is None


def test_a_skeleton_mismatch_is_the_same_invalid_verdict():
    f = _kernel(("leaf", "x"))
    b = Builder("k", [("x", pointer(i32)), ("out", pointer(i32)), ("n", scalar(i32))])
    g = b.finish()
    s, z = _both(f, g)
    assert s is not None and s.verdict == "invalid" and s.detail == z.detail


def test_fast_math_and_a_dropped_mask_go_to_the_solver():
    f = _kernel(("leaf", "x"))
    assert validate_structurally(f, f, fast_math=True) is None
    b = Builder("k", [("x", pointer(f32))])
    offs = b.op("arange", start=0, end=8)
    p = b.op("addptr", b.op("splat", b.param("x"), shape=(8,)), offs)
    full = b.op("lt", offs, b.op("splat", b.const(8, i32), shape=(8,)))
    b.effect("store", p, b.op("splat", b.const(1.0, f32), shape=(8,)), full)
    masked = b.finish()
    b = Builder("k", [("x", pointer(f32))])
    offs = b.op("arange", start=0, end=8)
    p = b.op("addptr", b.op("splat", b.param("x"), shape=(8,)), offs)
    b.effect("store", p, b.op("splat", b.const(1.0, f32), shape=(8,)))
    unmasked = b.finish()
    assert validate_structurally(masked, unmasked) is None
    assert validate(masked, unmasked).verdict == "valid"


def test_bounds_from_facts_lane_ranges_and_sums():
    terms = Terms()
    i = terms.mk(("sym", "i", "i32"), (), i32)
    n = terms.mk(("sym", "n", "i32"), (), i32)
    lane = terms.mk(("idx", "lane"), (), i32)
    b = Bounds(terms)
    b.narrow(i, 0, 1000)
    b.below(lane, 15)
    b.learn(terms.op("lt", "i32", (), (i, n), None))
    add = terms.op("add", "i32", (), (i, lane), i32)
    sub = terms.op("sub", "i32", (), (i, lane), i32)
    mul = terms.op("mul", "i32", (), (i, terms.const(4, i32)), i32)
    assert b.interval(add, True) == (0, 1015) and b.interval(sub, True) == (-15, 1000)
    assert b.interval(mul, True) == (0, 4000) and b.interval(lane, False) == (0, 15)
    assert b.truth(terms.op("lt", "i32", (), (i, n), None)) is True
    assert b.truth(terms.op("gt", "i32", (), (n, i), None)) is None  # not the fact's term
    assert b.truth(terms.op("lt", "i32", (), (i, terms.const(1001, i32)), None)) is True
    assert b.truth(terms.op("ge", "i32", (), (i, terms.const(1001, i32)), None)) is False
    big = terms.mk(("sym", "big", "i64"), (), i64)
    b.narrow(big, 0, 2**63 - 1)
    wraps = terms.op("add", "i64", (), (big, terms.const(1, i64)), i64)
    assert b.interval(wraps, True) == (-(2**63), 2**63 - 1)  # may wrap: nothing known


# ---------------------------------------------------------------------- z3 imported only when needed

_COMPILE = """
import sys
import numpy as np
import eggpu
from eggpu.kernels import get
lk = get({name!r})
case = lk.make_case(lk.sizes[-1], lk.dtypes[-1], np.random.default_rng(0))
ck = eggpu.compile(lk.instance(case), target="sm_90", cache=False)
v = ck.report["optimizer"]["validation_detail"]
print(v["verdict"], v["solver_calls"], "z3" in sys.modules)
"""


@pytest.mark.parametrize("name", ["vector_add", "softmax_forward", "layer_norm_forward"])
def test_a_compile_that_needs_no_solver_never_imports_z3(name):
    out = subprocess.run([sys.executable, "-c", _COMPILE.format(name=name)], capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["valid", "0", "False"], out.stdout + out.stderr


_NEEDS_SOLVER = """
import sys
from eggpu.ir import Builder, f32, i32, pointer
from eggpu.optimizer import optimize
b = Builder("k", [("x", pointer(f32))])
offs = b.op("arange", start=0, end=8)
p = b.op("addptr", b.op("splat", b.param("x"), shape=(8,)), offs)
full = b.op("lt", offs, b.op("splat", b.const(8, i32), shape=(8,)))
b.effect("store", p, b.op("splat", b.const(1.0, f32), shape=(8,)), full)
r = optimize(b.finish())
assert "z3" in sys.modules
print(r.validation.verdict, r.validation.solver_calls >= 1, r.fell_back)
"""


def test_a_compile_that_needs_the_solver_imports_z3():
    # the mask offs < 8 is all-true over 8 lanes: the optimizer drops it, and a solver call shows it
    out = subprocess.run([sys.executable, "-c", _NEEDS_SOLVER], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["valid", "True", "False"], out.stdout + out.stderr
