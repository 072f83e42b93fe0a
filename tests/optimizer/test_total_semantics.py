"""The prover uses the IR's total semantics (issue: proved rules used to change results).

The IR gives integer ``x / 0`` and ``x % 0`` the value 0, wraps ``INT_MIN / -1`` and gives shifts by
amounts outside ``[0, bits)`` the value 0 (or the sign fill). A prover that treats those inputs
as undefined behaviour proves rules that change results; these tests pin that it does not:

* each rule that an "undefined behaviour" prover accepts is refuted on every integer dtype, with
  a counterexample that this file re-evaluates independently with the op table's numpy
  reference (not through z3);
* rules that hold only BECAUSE the semantics is total are proved (the mirror case);
* a kernel compiled with such a rule (as a user rule file) computes what the interpreter computes;
* translation validation never says ``valid`` for two programs whose reference results differ
  (a differential test over random programs full of div/rem/shift edge values).
"""

from __future__ import annotations

import random
import re

import numpy as np
import pytest

from eggpu.ir import ALL_DTYPES, OPS, Builder, pointer, scalar
from eggpu.ir.dtypes import bool_, f32, i8, i32, u8
from eggpu.ir.interp import interpret
from eggpu.optimizer.rule_verifier import PROVED, REFUTED, verify_rule
from eggpu.optimizer.validate import validate

INT_DTYPES = [d for d in ALL_DTYPES if d.is_int]
SIGNED = [d for d in INT_DTYPES if d.is_signed]


def ref(op, dt, *vals, **attrs):
    """One lane of ``op`` with the op table's numpy reference (the interpreter's semantics)."""
    arrays = [np.asarray(v, dtype=dt.np) if not isinstance(v, np.ndarray) else v for v in vals]
    return np.asarray(OPS[op].reference(attrs, *arrays, dtype=dt)).reshape(()).item()


def where_ref(c, a, b, dt):
    return ref("where", dt, np.asarray(c, dtype=bool), np.asarray(a, dtype=dt.np), np.asarray(b, dtype=dt.np))


def cex_values(result) -> dict[str, int]:
    """``{'x': '-128 (i8)'}`` -> ``{'x': -128}`` (bools as 0/1)."""
    out = {}
    for k, v in result.counterexample.items():
        m = re.match(r"(-?\d+|true|false) \(", v)
        assert m, f"counterexample value {k} = {v!r} is not concrete"
        t = m.group(1)
        out[k] = {"true": 1, "false": 0}.get(t, None) if t in ("true", "false") else int(t)
    return out


# rule text, the dtypes it ranges over, and an independent evaluation of (lhs, rhs)
UB_RULES = {
    "div-self": ('(rewrite (Div t x x) (Const t 1) :when ((IsInt t)) :name "div-self")', INT_DTYPES,
                 lambda v, dt: (ref("div", dt, v["x"], v["x"]), 1)),
    "div-mul": ('(rewrite (Mul t (Div t x y) y) (Sub t x (Rem t x y)) :when ((IsInt t)) :name "div-mul")', INT_DTYPES,
                lambda v, dt: (ref("mul", dt, ref("div", dt, v["x"], v["y"]), v["y"]),
                               ref("sub", dt, v["x"], ref("rem", dt, v["x"], v["y"])))),
    "div-where": ('(rewrite (Div t x (Where t (Ne t c (Const t 0)) y (Const t 0))) (Div t x y) :when ((IsInt t)) '
                  ':name "div-where")', INT_DTYPES,
                  lambda v, dt: (ref("div", dt, v["x"], where_ref(v["c"] != 0, v["y"], 0, dt)),
                                 ref("div", dt, v["x"], v["y"]))),
    "shl-rem8": ('(rewrite (Shl t y (Rem t a (Const t 8))) (Shl t y (And t a (Const t 7))) :when ((IsSigned t)) '
                 ':name "shl-rem8")', SIGNED,
                 lambda v, dt: (ref("shl", dt, v["y"], ref("rem", dt, v["a"], 8)),
                                ref("shl", dt, v["y"], ref("and", dt, v["a"], 7)))),
    "div-neg1-div": ('(rewrite (Div t (Div t x (Const t -1)) (Const t -80)) (Div t x (Const t 80)) '
                     ':when ((IsSigned t)) :name "div-neg1-div")', SIGNED,
                     lambda v, dt: (ref("div", dt, ref("div", dt, v["x"], -1), -80), ref("div", dt, v["x"], 80))),
}

CASES = [(name, dt) for name, (_, dts, _) in UB_RULES.items() for dt in dts]


@pytest.mark.parametrize("name,dt", CASES, ids=[f"{n}-{d}" for n, d in CASES])
def test_rules_sound_only_under_undefined_behaviour_are_refuted(name, dt):
    text, _, evaluate = UB_RULES[name]
    v = verify_rule(text, dtypes=[dt], timeout_ms=4000)
    assert v.results and all(r.status == REFUTED for r in v.results), v.summary()
    r = v.results[0]
    assert "computed with the reference semantics" in r.detail, r.detail
    vals = cex_values(r)
    lhs, rhs = evaluate(vals, dt)
    assert lhs != rhs, f"{name} at {dt}: counterexample {r.counterexample} does not refute it ({lhs} == {rhs})"
    assert f"lhs = {lhs} ({dt})" in r.detail and f"rhs = {rhs} ({dt})" in r.detail, r.detail


def test_div_where_with_a_bool_condition_is_refuted():
    text = ('(rewrite (Div t x (Where t (Ne u c (Const u 0)) y (Const t 0))) (Div t x y) :when ((IsInt t)) '
            ':name "div-where-any")')
    v = verify_rule(text, dtypes=[u8, bool_])
    assert {r.key for r in v.results} == {"t=u8,u=bool", "t=u8,u=u8"}
    assert all(r.status == REFUTED for r in v.results), v.summary()


@pytest.mark.parametrize("text", [
    '(rewrite (Rem t x (Const t -1)) (Const t 0) :when ((IsSigned t)) :name "rem-neg1")',
    '(rewrite (Div t x (Const t 0)) (Const t 0) :when ((IsInt t)) :name "div-zero")',
    '(rewrite (Rem t x (Const t 0)) (Const t 0) :when ((IsInt t)) :name "rem-zero")',
    '(rewrite (Shl t x (Const t w)) (Const t 0) :when ((IsInt t) (Width t w)) :name "shl-width")',
    '(rewrite (Shr t x (Const t w)) (Const t 0) :when ((IsUnsigned t) (Width t w)) :name "shr-width-unsigned")',
    '(rewrite (Shl t x (Const t -1)) (Const t 0) :when ((IsSigned t)) :name "shl-negative")',
])
def test_rules_sound_because_the_semantics_is_total_are_proved(text):
    v = verify_rule(text)
    assert v.results and all(r.status == PROVED for r in v.results), v.summary()


# ------------------------------------------------------------------ end to end


def test_a_kernel_that_would_have_been_miscompiled_computes_the_reference(tmp_path):
    """x / x and y << (a % 8) with a user rule file that an undefined-behaviour prover accepts."""
    import eggpu
    import eggpu.language as tl

    rules = tmp_path / "ub.egg"
    rules.write_text(UB_RULES["div-self"][0] + "\n" + UB_RULES["shl-rem8"][0] + "\n")

    @eggpu.kernel
    def ub_kernel(x_ptr: tl.Pointer[tl.i32], a_ptr: tl.Pointer[tl.i32], out_ptr: tl.Pointer[tl.i32],
                  out2_ptr: tl.Pointer[tl.i32], n: tl.i32, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        x = tl.load(x_ptr + offs, mask=m, other=0)
        a = tl.load(a_ptr + offs, mask=m, other=0)
        tl.store(out_ptr + offs, x // x, mask=m)
        tl.store(out2_ptr + offs, x << (a % 8), mask=m)

    n = 1001
    rng = np.random.default_rng(7)
    x = rng.integers(-3, 4, n).astype(np.int32)  # many zeros
    a = rng.integers(-20, 20, n).astype(np.int32)  # negative remainders: shift amounts < 0
    want = np.where(x == 0, 0, 1).astype(np.int32)
    amount = (np.abs(a) % 8) * np.sign(a)
    want2 = np.where(amount < 0, 0, x.astype(np.int64) << np.maximum(amount, 0)).astype(np.int32)
    inst = ub_kernel.Kernel(128)
    grid = ((n + 127) // 128,)
    got_i, got_i2 = np.zeros(n, np.int32), np.zeros(n, np.int32)
    inst.interpret(grid, x, a, got_i, got_i2, n)
    ck = eggpu.compile(inst, rules=[str(rules)], optimize=True)
    got_c, got_c2 = np.zeros(n, np.int32), np.zeros(n, np.int32)
    ck.run_cpu(grid, x, a, got_c, got_c2, n)
    np.testing.assert_array_equal(got_i, want)
    np.testing.assert_array_equal(got_i2, want2)
    np.testing.assert_array_equal(got_c, want)
    np.testing.assert_array_equal(got_c2, want2)
    rejected = ck.report["optimizer"]["rules_rejected"]
    assert rejected.get("div-self") == "refuted" and rejected.get("shl-rem8") == "refuted", rejected


# ------------------------------------------------------------------ translation validation, differentially

N = 16


def _edge(dt):
    vals = [0, 1, -1, 2, 7, 8, dt.bits - 1, dt.bits, dt.bits + 1, -dt.bits, int(dt.min), int(dt.max), -80, 3]
    return np.array([v % (1 << dt.bits) for v in vals], dtype=np.uint64).astype(dt.np)


_OPS = ("add", "sub", "mul", "div", "rem", "shl", "shr", "and", "xor")


def _random_expr(rng, depth):
    """A random expression tree: ('x'|'y'|('c', v)|(op, a, b)|('where', cmp, a, b))."""
    if depth == 0 or rng.random() < 0.25:
        r = rng.random()
        if r < 0.4:
            return "x"
        if r < 0.8:
            return "y"
        return ("c", rng.choice([0, 1, -1, 7, 8, 80, -80, 31, 32, 33, -128]))
    if rng.random() < 0.1:
        return ("where", _random_expr(rng, depth - 1), _random_expr(rng, depth - 1), _random_expr(rng, depth - 1))
    return (rng.choice(_OPS), _random_expr(rng, depth - 1), _random_expr(rng, depth - 1))


def _mutate(e, rng):
    """A rewrite of ``e`` that may or may not preserve its value: the shapes of the unsound
    undefined-behaviour rules, sound identities, and plain corruptions."""
    if isinstance(e, str) or e[0] == "c":
        return rng.choice([e, ("c", 0), ("div", e, e), ("mul", e, ("c", 1))])
    op = e[0]
    kids = list(e[1:])
    r = rng.random()
    if r < 0.3 or op == "where":
        i = rng.randrange(len(kids))
        kids[i] = _mutate(kids[i], rng)
        return (op, *kids)
    a = kids[0]
    b = kids[-1]
    choices = [
        ("c", 1) if op == "div" and a == b else ("div", a, a),           # x / x -> 1
        ("sub", a, ("rem", a, b)) if op == "div" else ("mul", ("div", a, b), b),  # (x/y)*y <-> x - x%y
        ("and", a, ("c", 7)) if op == "rem" else ("rem", a, ("c", 8)),   # x % 8 -> x & 7
        ("div", a, ("c", 80)) if op == "div" else (op, b, a),            # (x/-1)/-80 -> x/80 ; swap
        (op, b, a) if op in ("add", "mul", "and", "xor") else (op, a, b),  # commute (sound) / same
        ("c", 0),
    ]
    return rng.choice(choices)


def _build(expr, dt):
    bld = Builder("k", [("x", pointer(dt)), ("y", pointer(dt)), ("out", pointer(dt)), ("n", scalar(i32))])
    offs = bld.op("arange", start=0, end=N)
    mask = bld.op("lt", offs, bld.op("splat", bld.param("n"), shape=(N,)))
    x = bld.op("load", bld.op("addptr", bld.op("splat", bld.param("x"), shape=(N,)), offs), mask)
    y = bld.op("load", bld.op("addptr", bld.op("splat", bld.param("y"), shape=(N,)), offs), mask)

    def go(e):
        if e == "x":
            return x
        if e == "y":
            return y
        if e[0] == "c":
            return bld.op("splat", bld.const(e[1] % (1 << dt.bits) if dt.is_unsigned else
                                             ((e[1] + (1 << (dt.bits - 1))) % (1 << dt.bits)) - (1 << (dt.bits - 1)), dt),
                          shape=(N,))
        if e[0] == "where":
            return bld.op("where", bld.op("lt", go(e[1]), go(e[2])), go(e[2]), go(e[3]))
        return bld.op(e[0], go(e[1]), go(e[2]))

    out = bld.op("addptr", bld.op("splat", bld.param("out"), shape=(N,)), offs)
    bld.effect("store", out, go(expr), mask)
    return bld.finish()


def _run(fn, x, y, dt):
    res = []
    for shift in range(len(x)):  # every pairing of the edge values
        out = np.zeros(N, dtype=dt.np)
        interpret(fn, 1, x, np.roll(y, shift), out, N)
        res.append(out)
    return np.concatenate(res)


def _campaign(seed, count):
    rng = random.Random(seed)
    verdicts = {"valid": 0, "invalid": 0, "unknown": 0}
    for _ in range(count):
        dt = rng.choice([i8, u8, i32])
        e1 = _random_expr(rng, 3)
        e2 = _mutate(e1, rng)
        f, g = _build(e1, dt), _build(e2, dt)
        v = validate(f, g, timeout_ms=2000)
        verdicts[v.verdict] += 1
        if v.verdict != "valid":
            continue
        edge = _edge(dt)
        x = np.resize(edge, N)
        y = np.resize(edge[::-1], N)
        a, b = _run(f, x, y, dt), _run(g, x, y, dt)
        assert np.array_equal(a, b), (f"translation validation said valid for {e1} -> {e2} at {dt}, but the "
                                      f"reference differs: {a} vs {b}")
    return verdicts


def test_translation_validation_never_accepts_a_pair_the_reference_tells_apart():
    verdicts = _campaign(seed=17, count=40)
    # the campaign must exercise both outcomes, or it tests nothing
    assert verdicts["valid"] >= 8 and verdicts["invalid"] >= 8, verdicts


@pytest.mark.slow
def test_translation_validation_differential_long_campaign():
    verdicts = _campaign(seed=2024, count=1500)
    assert verdicts["valid"] >= 200 and verdicts["invalid"] >= 200, verdicts


# ------------------------------------------------------------------ what a verdict says


def test_counterexamples_over_uninterpreted_functions_are_labelled_not_computed():
    v = verify_rule('(rewrite (Exp t (ConstF t 0.0)) (ConstF t 1.0) :when ((IsFloat t)) :name "exp-zero")')
    assert v.results and not v.usable
    for r in v.results:
        assert r.status != REFUTED, r  # exp(0) = 1 in the reference: no computed counterexample exists
        assert "chosen by z3, not computed" in r.detail and "exp_" in r.detail, r.detail
        assert r.counterexample is None


def test_a_refutation_over_exp_shows_computed_values():
    v = verify_rule('(rewrite (Exp t (Add t x y)) (Mul t (Exp t x) (Exp t y)) :when ((IsFloat t)) :name "exp-add")',
                    dtypes=[f32])
    for r in v.results:
        assert r.status in (REFUTED, "unknown")
        if r.status == REFUTED:
            assert "computed with the reference semantics" in r.detail, r.detail
        else:
            assert "chosen by z3, not computed" in r.detail or "timeout" in r.detail, r.detail


@pytest.mark.parametrize("text,reason", [
    ('(rewrite (Add (I8) x (Const (I8) 300)) x :name "never-lit")', "a literal is not a value of the dtype"),
    ('(rewrite (Shl t x (Const t 1)) (Add t x x) :when ((IsFloat t)) :name "never-op")',
     "an op is not defined on the dtype: f16..f64"),
    ('(rewrite (Add t x (Const t 1)) x :when ((IsInt t) (> 1 2)) :name "never-guard")',
     "the guards cannot hold: i8..i64 u8..u64"),
])
def test_a_rule_that_can_never_fire_says_why_and_fails_rules_check(tmp_path, text, reason):
    import io

    from eggpu.optimizer.rules_cli import EXIT_REFUTED, check_rules

    v = verify_rule(text)
    assert not v.results and v.note.startswith(reason), v.note
    assert v.summary() == f"no dtype can match ({v.note})"
    f = tmp_path / "never.egg"
    f.write_text(text + "\n")
    out = io.StringIO()
    assert check_rules([str(f)], out=out, use_cache=False, progress=False) == EXIT_REFUTED
    assert reason in out.getvalue() and "1 never fire" in out.getvalue(), out.getvalue()


# ------------------------------------------------------------------ proved rules hold in the reference


def _shipped_exact_rewrites():
    from eggpu.optimizer.rules_loader import load_rules

    return [r for r in load_rules([], shipped=True, env=False).rules
            if r.kind in ("rewrite", "birewrite") and not r.fast_math]


def _check_rule_on_samples(rule, n_envs, samples, seed):
    """Evaluate both sides of ``rule`` with the reference semantics on random inputs that satisfy
    its guards (checked through the verifier's own assumptions); they must agree. Returns the
    number of inputs checked."""
    import z3

    from eggpu.optimizer import cex_check, z3ops
    from eggpu.optimizer import rule_verifier as rv
    from eggpu.optimizer.rule_analysis import _IllTyped, _Infeasible, _Unsupported
    from eggpu.optimizer.rule_encoding import _build

    rng = random.Random(seed)
    checked = 0
    for env in rv.assignments(rule)[:n_envs] if n_envs else rv.assignments(rule):
        try:
            q = _build(rule, env, z3ops.EXACT)
        except (_Infeasible, _IllTyped, _Unsupported):
            continue
        if q.inst.blocks:
            continue
        consts = cex_check.free_constants(q.solver_formula)
        assume = z3.And(*q.inst.assume) if q.inst.assume else z3.BoolVal(True)
        for _ in range(samples):
            subs = [(c, cex_check._sample_value(c, rng)) for c in consts.values()]
            if any(v is None for _, v in subs):
                break
            value_of = cex_check.substitution(subs)
            if not z3.is_true(value_of(assume)):
                continue
            try:
                lv, _ = cex_check.evaluate(q.inst, rule.lhs, value_of)
                rv_, _ = cex_check.evaluate(q.inst, rule.rhs, value_of)
            except cex_check.NotEvaluable:
                break
            assert cex_check.same(lv, rv_), (f"{rule.location}: rule {rule.name!r} at {env}: the reference gives "
                                             f"lhs = {lv!r}, rhs = {rv_!r} at {subs}")
            checked += 1
    return checked


def test_shipped_rules_hold_in_the_reference_semantics_on_samples():
    total = sum(_check_rule_on_samples(r, n_envs=2, samples=6, seed=i) for i, r in enumerate(_shipped_exact_rewrites()))
    assert total >= 300, total


@pytest.mark.slow
def test_shipped_rules_hold_in_the_reference_semantics_long():
    total = sum(_check_rule_on_samples(r, n_envs=0, samples=60, seed=i) for i, r in enumerate(_shipped_exact_rewrites()))
    assert total >= 10_000, total
