"""Translation validation modulo associativity and commutativity (:mod:`eggpu.optimizer.validate_canon`):
canonical forms are equal to the terms they stand for, regroupings of one chain get one canonical
term, programs that differ only by operand order and bracketing validate without a solver call,
and a wrong rewrite hidden in a commuted context is still rejected."""

from __future__ import annotations

import random

import numpy as np
import pytest
import z3
from hypothesis import given, settings
from hypothesis import strategies as st

import eggpu
from bench.validation_cost import uniform4
from eggpu.ir import Builder, pointer, u32
from eggpu.optimizer import optimize
from eggpu.optimizer.validate import validate
from eggpu.optimizer.validate_canon import Canon

W = 8  # bit width of the property tests: small, so z3 proves each identity instantly
X, Y, Z = (z3.BitVec(n, W) for n in "xyz")
_BIN = {"add": lambda a, b: a + b, "mul": lambda a, b: a * b, "xor": lambda a, b: a ^ b, "and": lambda a, b: a & b,
        "or": lambda a, b: a | b, "sub": lambda a, b: a - b, "shl": lambda a, b: a << b,
        "lshr": lambda a, b: z3.LShR(a, b), "udiv": lambda a, b: z3.UDiv(a, b)}
_AC = {"add": lambda a, b: a + b, "mul": lambda a, b: a * b, "xor": lambda a, b: a ^ b,
       "and": lambda a, b: a & b, "or": lambda a, b: a | b}


def _terms():
    leaves = st.sampled_from([X, Y, Z]) | st.sampled_from([0, 1, 2, 3, 255, 128]).map(lambda v: z3.BitVecVal(v, W))
    return st.recursive(leaves, lambda sub: st.tuples(st.sampled_from(sorted(_BIN)), sub, sub).map(
        lambda t: _BIN[t[0]](t[1], t[2])), max_leaves=12)


def _equal(a, b) -> bool:
    s = z3.Solver()
    s.add(a != b)
    return s.check() == z3.unsat


@settings(max_examples=150, deadline=None)
@given(_terms())
def test_canonical_form_is_equal_to_the_term_and_a_fixed_point(e):
    canon = Canon()
    c = canon.of(e)
    assert _equal(e, c), (e, c)
    assert canon.of(c).eq(c) and Canon().of(c).eq(c)


def _chain(op, operands, rng):
    """``operands`` combined by ``op`` in a random order and bracketing."""
    xs = list(operands)
    rng.shuffle(xs)
    while len(xs) > 1:
        i = rng.randrange(len(xs) - 1)
        xs[i:i + 2] = [_AC[op](xs[i], xs[i + 1])]
    return xs[0]


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(sorted(_AC)), st.lists(st.sampled_from(["x", "y", "z", "x*y", "y^z", 0, 1, 7, 255]),
                                              min_size=1, max_size=7), st.integers(0, 2**32))
def test_every_regrouping_of_a_chain_gets_one_canonical_term(op, names, seed):
    env = {"x": X, "y": Y, "z": Z, "x*y": X * Y, "y^z": Y ^ Z}
    operands = [env[n] if isinstance(n, str) else z3.BitVecVal(n, W) for n in names]
    rng = random.Random(seed)
    a, b = _chain(op, operands, rng), _chain(op, operands, rng)
    canon = Canon()
    assert canon.of(a).eq(canon.of(b)), (a, b, canon.of(a), canon.of(b))


def test_folding_identities_and_duplicates():
    of = Canon().of
    assert of(X + 3 + Y + 5).eq(of(Y + (X + 8)))
    assert of(X * 0 * Y).eq(z3.BitVecVal(0, W)) and of(X * 1).eq(X) and of(0 + X).eq(X)
    assert of(X ^ Y ^ X).eq(Y) and of(X ^ X).eq(z3.BitVecVal(0, W)) and of(X ^ Y ^ X ^ X).eq(of(Y ^ X))
    assert of(X & Y & X).eq(of(X & Y)) and of(X | 255).eq(z3.BitVecVal(255, W)) and of(X & 255).eq(X)
    p, q = z3.Bools("p q")
    assert of(z3.And(p, z3.And(q, p))).eq(of(z3.And(q, p))) and of(z3.Or(p, z3.BoolVal(True))).eq(z3.BoolVal(True))
    assert of(X + X).eq(X + X)  # not a law the canonicalizer uses: left alone


def test_operators_that_are_not_ac_keep_their_shape():
    of = Canon().of
    assert not of(X - Y).eq(of(Y - X))
    assert not of(X << Y).eq(of(Y << X)) and not of(z3.UDiv(X, Y)).eq(of(z3.UDiv(Y, X)))
    assert not of(X * Y).eq(of(X + Y))
    a, b, c = (z3.FP(n, z3.Float32()) for n in "abc")
    rm = z3.RNE()
    assert of(z3.fpAdd(rm, a, b)).eq(of(z3.fpAdd(rm, b, a)))  # commutative exactly...
    assert not of(z3.fpAdd(rm, z3.fpAdd(rm, a, b), c)).eq(of(z3.fpAdd(rm, a, z3.fpAdd(rm, b, c))))  # ...not associative


# ----------------------------------------------------------------------------- whole kernels

K = (0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85)


def _philox_like(commuted: bool, wrong_round: int | None = None):
    """Three Philox-like rounds of 32-bit multiplies, adds and xors over two loaded words; the
    ``commuted`` program computes the same with every chain reordered and regrouped (what
    mul-comm, add-assoc-int, xor-comm ... leave behind); ``wrong_round`` changes one constant
    inside a commuted chain of that round."""
    b = Builder("k", [("src", pointer(u32)), ("out", pointer(u32))])
    offs = b.op("arange", start=0, end=32)
    x = b.op("load", b.op("addptr", b.op("splat", b.param("src"), shape=(32,)), offs))
    y = b.op("load", b.op("addptr", b.op("splat", b.param("src"), shape=(32,)),
                          b.op("add", offs, b.op("splat", b.const(32, eggpu.ir.i32), shape=(32,)))))

    def k(v):
        return b.op("splat", b.const(v, u32), shape=(32,))

    for r in range(3):
        k3 = K[2] ^ (1 << 20) if r == wrong_round else K[2]
        if not commuted:
            p = b.op("mul", b.op("mul", x, k(K[0])), y)
            q = b.op("add", b.op("add", b.op("add", y, k(K[1] - 5)), x), k(5))
            x, y = b.op("xor", b.op("xor", p, q), k(K[2])), b.op("add", p, k(K[3]))
        else:
            p = b.op("mul", x, b.op("mul", y, k(K[0])))
            q = b.op("add", x, b.op("add", k(K[1]), y))
            x, y = b.op("xor", q, b.op("xor", k(k3), p)), b.op("add", k(K[3]), p)
    b.effect("store", b.op("addptr", b.op("splat", b.param("out"), shape=(32,)), offs), b.op("xor", x, y))
    return b.finish()


def test_a_regrouped_philox_chain_validates_without_a_solver_call():
    v = validate(_philox_like(False), _philox_like(True))
    assert v.verdict == "valid", v.detail
    assert v.solver_calls == 0 and v.units == 0


@pytest.mark.parametrize("wrong_round", [1, 2])
def test_a_wrong_constant_inside_a_commuted_chain_is_rejected(wrong_round):
    # the counterexample costs z3 about its default 10 M units, a little more or less with the
    # terms earlier tests made in the same process (a full suite once took 10,000,130): 3x budget
    v = validate(_philox_like(False), _philox_like(True, wrong_round), timeout_ms=6000)
    assert v.verdict == "invalid" and "store #2 value differs at lane" in v.detail, v.detail


def _rand4x_ir():
    return uniform4.specialize(np.zeros(64, np.float32), 99, N=32).ir()


def test_the_rand4x_kernel_validates_with_a_small_fraction_of_the_budget():
    """Before canonical forms: 26 solver calls and the whole 50 M-unit budget (about 25 s)."""
    res = optimize(_rand4x_ir())
    v = res.validation
    assert not res.fell_back and v.verdict == "valid", res.reason
    assert res.rule_hits.get("mul-comm") and res.rule_hits.get("xor-comm")  # the program was rewritten
    assert v.solver_calls <= 2 and v.units <= v.budget_units // 100, v.as_dict()


@pytest.mark.slow
def test_a_wrong_philox_multiplier_in_the_optimized_rand4x_kernel_is_rejected():
    fn = _rand4x_ir()
    res = optimize(fn)
    g = res.function.clone()
    op = next(o for o in g.walk() if o.op == "const" and o.attrs["value"] == 0xCD9E8D57)
    op.attrs = dict(op.attrs, value=0xCD9E8D55)
    assert validate(fn, g).verdict != "valid"


DIST = ("(rewrite (Mul (I32) x (Add (I32) y z)) (Add (I32) (Mul (I32) x y) (Mul (I32) x z)) "
        ':name "dist-test")')


def _dist_kernel(distributed: bool):
    """store(x * (y + z) + w + 3), or the same with the product distributed and the sum regrouped."""
    b = Builder("k", [("p", pointer(eggpu.ir.i32)), ("out", pointer(eggpu.ir.i32))])
    offs = b.op("arange", start=0, end=16)
    x, y, z, w = (b.op("load", b.op("addptr", b.op("splat", b.param("p"), shape=(16,)),
                                    b.op("add", offs, b.op("splat", b.const(16 * i, eggpu.ir.i32), shape=(16,)))))
                  for i in range(4))
    three = b.op("splat", b.const(3, eggpu.ir.i32), shape=(16,))
    if distributed:
        v = b.op("add", b.op("add", w, b.op("add", b.op("mul", y, x), three)), b.op("mul", x, z))
    else:
        v = b.op("add", b.op("add", b.op("mul", x, b.op("add", y, z)), w), three)
    b.effect("store", b.op("addptr", b.op("splat", b.param("out"), shape=(16,)), offs), v)
    return b.finish()


def test_a_lemma_applies_to_the_residue_of_a_regrouped_chain():
    """The chains share ``w`` and ``3``; what is left (``x * (y + z)`` against ``x*y + x*z``) is an
    instance of the lemma, so no solver call is needed."""
    from eggpu.optimizer.rules_loader import parse_rules
    from eggpu.optimizer.validate_lemmas import lemma_of

    lemma = lemma_of(parse_rules(DIST, "<t>")[0][0])
    v = validate(_dist_kernel(False), _dist_kernel(True), lemmas=[lemma])
    assert v.verdict == "valid" and v.lemma_hits >= 1 and v.solver_calls == 0, v.as_dict()
    v = validate(_dist_kernel(False), _dist_kernel(True))  # without it z3 proves the residue
    assert v.verdict == "valid" and v.lemma_hits == 0 and v.solver_calls >= 1


def test_equalities_are_compared_either_way_round():
    of = Canon().of
    assert of(X == Y + 1).eq(of(1 + Y == X)) and of(z3.Distinct(X, Y)).eq(of(z3.Distinct(Y, X)))
