"""The e-class analyses usable as guards (Divisible, NotNan, Finite, NonNeg, Positive): the loader
accepts them, the verifier proves rules that use them (and refutes the same rules without
them), launch facts seed them, and translation validation assumes the same facts."""

from __future__ import annotations

import pytest

import eggpu
from eggpu.ir import Builder, f32, i32, pointer, scalar
from eggpu.ir.errors import RuleError
from eggpu.ir.facts import Facts
from eggpu.optimizer import optimize
from eggpu.optimizer.rules_loader import load_sources
from eggpu.testing import assert_rule_sound, assert_rule_unsound


def load_text(text: str, file: str = "mine.egg"):
    return load_sources([(file, text)])


def test_loader_accepts_guards_and_actions():
    loaded = load_text('(rewrite (Maximum t x (Splat t s (ConstF t -inf))) x :when ((IsFloat t) (NotNan x)) :name "m")\n'
                       '(rule ((= e (Abs t a)) (IsFloat t) (NotNan a)) ((NonNeg e)) :ruleset ranges :name "r")\n'
                       '(rule ((= e (Mul t a b)) (IsInt t) (Divisible a k)) ((Divisible e k)) :ruleset ranges :name "d")')
    assert [r.name for r in loaded.rules] == ["m", "r", "d"]


def test_unknown_analysis_is_a_loader_error_with_file_and_line():
    with pytest.raises(RuleError) as ei:
        load_text('\n(rewrite (Maximum t x x) x :when ((NotNaN x)) :name "a")', "mine.egg")
    assert "mine.egg:2: rule 'a': unknown guard NotNaN (did you mean NotNan?)" in str(ei.value)
    with pytest.raises(RuleError, match="Divisible takes 2 arguments"):
        load_text('(rewrite (Rem t x (Const t 16)) (Const t 0) :when ((Divisible x)) :name "b")')
    with pytest.raises(RuleError, match=r"mine.egg:1: rule 'c': analysis NotNan takes 1 arguments"):
        load_text('(rule ((= e (Abs t a))) ((NotNan e a)) :ruleset ranges :name "c")', "mine.egg")


def test_not_nan_guard_makes_a_rule_sound():
    rule = '(rewrite (Maximum t x (Splat t s (ConstF t -inf))) x :when ((IsFloat t){}) :name "max-neginf")'
    assert_rule_sound(rule.format(" (NotNan x)"))
    cex = assert_rule_unsound(rule.format(""), dtypes=[eggpu.ir.f32])
    assert cex["x"].startswith("nan")


def test_divisible_guard_makes_a_rule_sound():
    rule = '(rewrite (Rem t x (Const t 16)) (Const t 0) :when ((IsInt t){}) :name "rem16")'
    assert_rule_sound(rule.format(" (Divisible x 16)"), dtypes=[eggpu.ir.i32, eggpu.ir.u8])
    assert_rule_unsound(rule.format(""), dtypes=[eggpu.ir.i32])


def test_transfer_rules_are_checked_too():
    assert_rule_sound('(rule ((= e (Add t a b)) (IsFloat t) (NonNeg a) (NonNeg b)) ((NonNeg e)) :ruleset ranges :name "ok")')
    # -inf + inf is NaN: finite operands are needed
    assert_rule_unsound('(rule ((= e (Add t a b)) (IsFloat t) (NotNan a) (NotNan b)) ((NotNan e)) :ruleset ranges '
                        ':name "bad")', dtypes=[eggpu.ir.f32])
    # i8: 64 + 64 wraps to -128, a multiple of 128 but not... of 256
    assert_rule_unsound('(rule ((= e (Add t a b)) (IsInt t) (Divisible a 64)) ((Divisible e 64)) :ruleset ranges '
                        ':name "bad2")', dtypes=[eggpu.ir.i8])


def _rem_kernel(fact: str | None):
    b = Builder("rk", [("y", pointer(i32)), ("s", scalar(i32))])
    y, s = b.params
    b.effect("store", y, b.op("rem", s, b.const(16, i32)))
    fn = b.function
    if fact:
        fn.facts = Facts.make({"s": [fact]})
    return fn


def test_launch_facts_seed_the_analyses_and_validation_assumes_them():
    res = optimize(_rem_kernel("div16"))
    assert res.validation.ok and not res.fell_back
    assert res.rule_hits.get("rem-divisible-scalar")
    assert "rem(" not in str(res.function) and res.function.facts == Facts.make({"s": ["div16"]})
    plain = optimize(_rem_kernel(None))
    assert "rem-divisible-scalar" not in plain.rule_hits and "rem(" in str(plain.function)


def test_offsets_i32_bounds_program_id_for_hoisting():
    b = Builder("hk", [("x", pointer(f32)), ("y", pointer(f32))])
    x, y = b.params
    pid = b.op("program_id", axis=0)
    base = b.op("splat", b.op("mul", pid, b.const(1024, i32)), shape=(1024,))
    offs = b.op("add", base, b.op("arange", start=0, end=1024))
    v = b.op("load", b.op("addptr", b.op("splat", x, shape=(1024,)), offs))
    b.effect("store", b.op("addptr", b.op("splat", y, shape=(1024,)), b.op("arange", start=0, end=1024)), v)
    fn = b.function
    fn.facts = Facts.make({}, 1024)
    res = optimize(fn)
    assert res.validation.ok and res.rule_hits.get("addptr-hoist-signed")
    fn.facts = Facts()
    assert not optimize(fn).rule_hits.get("addptr-hoist-signed")  # pid * 1024 may wrap without the fact
