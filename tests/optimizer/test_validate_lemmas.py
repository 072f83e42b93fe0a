"""Proved rules as lemmas of translation validation (optimizer/validate_lemmas.py)."""

from __future__ import annotations

import numpy as np
import pytest
import z3

import eggpu
import eggpu.language as tl
from eggpu.optimizer.rules_loader import parse_rules
from eggpu.optimizer.validate import validate
from eggpu.optimizer.validate_lemmas import lemma_of, lemmas_of, match

HALF = "(Splat (F32) s (ConstF (F32) 0.5))"
FMA_RULE = (f"(rewrite (Mul (F32) {HALF} (Add (F32) (Splat (F32) s (ConstF (F32) 1.0)) x)) "
            f'(Fma (F32) x {HALF} {HALF}) :name "half-one-plus-fma")')


def _rule(text: str):
    return parse_rules(text, "<t>")[0][0]


@eggpu.kernel
def half_one_plus(x_ptr: tl.Pointer[tl.f32], y_ptr: tl.Pointer[tl.f32], n: tl.i32, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, 0.5 * (1.0 + tl.erf(x)), mask=mask)


@eggpu.kernel
def fma_erf(x_ptr: tl.Pointer[tl.f32], y_ptr: tl.Pointer[tl.f32], n: tl.i32, ADD: tl.constexpr,
            BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, tl.fma(tl.erf(x), 0.5, ADD), mask=mask)


def test_which_rewrites_are_lemmas():
    """Unguarded rewrites at concrete dtypes; range-guarded ones (guards re-established per
    instance); dtype-generic ones at a given assignment, and from :func:`lemmas_of` at each
    proved assignment (here f16, bf16, f32, f64); never casts or analysis guards."""
    assert lemma_of(_rule(FMA_RULE)) is not None
    guarded = ('(rewrite (Div (I32) x (Splat (I32) s (Const (I32) 4))) (Shr (I32) x (Splat (I32) s (Const (I32) 2))) '
               ':when ((>= (LowerBound x) 0)) :name "g")')
    generic = '(rewrite (Mul t x (Splat t s (ConstF t 2.0))) (Add t x x) :when ((IsFloat t)) :name "m")'
    cast = '(rewrite (Cast (I32) (I64) (Cast (I64) (I32) x)) x :name "c")'
    analysis = ('(rewrite (Div (I32) x (Splat (I32) s (Const (I32) 4))) (Shr (I32) x (Splat (I32) s (Const (I32) 2))) '
                ':when ((Divisible x 4)) :name "d")')
    assert lemma_of(_rule(guarded)).guards
    assert [lemma_of(_rule(t)) for t in (generic, cast, analysis)] == [None, None, None]
    assert lemma_of(_rule(generic), 0, {"t": tl.f32}) is not None
    assert [lm.name for lm in lemmas_of([_rule(t) for t in (guarded, FMA_RULE, generic)])] == [
        "g", "half-one-plus-fma", "m", "m", "m", "m"]


def test_match_binds_variables_takes_commutative_operands_either_way_and_checks_repeats():
    x, y = z3.BitVecs("x y", 32)
    a, b = z3.BitVecs("a b", 32)
    ids = frozenset({x.get_id(), y.get_id()})
    binds: dict[int, z3.ExprRef] = {}
    assert match(x + (y & 7), (b & 7) + a * 3, ids, binds)
    assert binds[x.get_id()].eq(a * 3) and binds[y.get_id()].eq(b)
    assert match(x + x, a + a, ids, {}) and not match(x + x, a + b, ids, {})
    assert not match(x + (y & 7), a + (b & 6), ids, {})


def test_a_lemma_validates_the_rewritten_program_without_a_solver_call():
    lemmas = lemmas_of([_rule(FMA_RULE)])
    before, after = half_one_plus.Kernel(128).ir(), fma_erf.Kernel(0.5, 128).ir()
    v = validate(before, after, lemmas=lemmas)
    assert v.ok and v.lemma_hits == 1 and v.solver_calls == 0
    plain = validate(before, after)  # without the lemma z3 works on the f32 fma (or gives up)
    assert plain.lemma_hits == 0 and plain.solver_calls >= 1


def test_a_lemma_never_validates_a_different_program():
    lemmas = lemmas_of([_rule(FMA_RULE)])
    v = validate(half_one_plus.Kernel(128).ir(), fma_erf.Kernel(0.25, 128).ir(), lemmas=lemmas)
    assert v.verdict == "invalid" and v.lemma_hits == 0


@pytest.mark.parametrize("n", [1, 1000, 1001])
def test_the_fma_rule_wins_in_a_compile_and_computes_the_same_bits(tmp_path, n, without_shipped_synthesized):
    # (rules/synthesized.egg ships this rule as syn-f32-half-one-plus-fma: compare with the rest)
    p = tmp_path / "fma.egg"
    p.write_text(FMA_RULE + "\n")
    base = eggpu.compile(half_one_plus.Kernel(256), cache=False)
    ck = eggpu.compile(half_one_plus.Kernel(256), rules=[str(p)], cache=False)
    opt = ck.report["optimizer"]
    assert opt["rules_fired"].get("half-one-plus-fma") and opt["validation"] == "valid"
    assert opt["validation_detail"]["lemma_hits"] >= 1
    assert opt["cost_after"] < base.report["optimizer"]["cost_after"] - 128  # one op a lane fewer
    assert "fma(" in str(ck.ir)
    x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    y0, y1 = np.zeros(n, np.float32), np.zeros(n, np.float32)
    base.run_cpu(((n + 255) // 256,), x, y0, np.int32(n))
    ck.run_cpu(((n + 255) // 256,), x, y1, np.int32(n))
    assert np.array_equal(y0.view(np.uint32), y1.view(np.uint32))
