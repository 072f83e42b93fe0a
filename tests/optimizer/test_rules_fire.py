"""Every shipped rule shown firing (issue 13, item 5), egg ``test_fn!`` style.

For each rule of ``rules/*.egg`` (and any rule added later: nothing here lists rules by hand
except the table of hand-written cases) a firing example is generated from its left-hand side
(:mod:`eggpu.optimizer.rule_examples`): the rule runs alone on an e-graph holding the term and
must match it and put the instantiated right-hand side in the term's e-class (analysis rules:
write the expected bounds). Every rule with a dtype guard also gets negative examples: the same
term at a dtype each guard excludes, on which the rule must not fire; and each guard on values
gets one where only it fails (``test_value_guard_blocks``). A condition on values that no pool
value violates (a constant beyond a narrow width, a bound sum that overflows, a shift that loses
bits: ``rule_examples.unblocked_value_guards``) needs a hand-written pair in ``HAND_NEGATIVES``,
a near miss that fires and the same term with only that guard false
(``test_every_value_guard_has_a_negative`` names any that lacks one).

``HAND`` holds cases the generator cannot reach or that show a rule on the terms real kernels
produce (range facts from ``program_id``/``arange`` through the range analysis, not asserted).
A rule with neither a generated nor a hand example fails :func:`test_every_rule_has_an_example`
by name; ``DEAD`` would list rules that truly cannot fire, each with the reason (none today).

The default tests use one dtype assignment per rule; ``test_every_accepted_dtype_fires`` (slow)
runs every assignment the dtype guards accept. An end-to-end check runs the generated examples
through the optimizer as IR programs (:func:`test_generated_examples_fire_in_the_optimizer`).
"""

from __future__ import annotations

import pytest

from eggpu.optimizer import rule_examples as rx
from eggpu.optimizer.rules_loader import load_rules
from eggpu.testing import assert_rule_does_not_fire, assert_rule_fires

SHIPPED = load_rules(env=False).rules
BY_NAME = {r.name: r for r in SHIPPED}
RANGES = tuple(r.name for r in SHIPPED if r.ruleset == "ranges")

#: rules that can never match, with the reason (each one is a dead rule to report)
DEAD: dict[str, str] = {}

#: rules that fire but whose rewrite translation validation may not prove, so `optimize` falls
#: back to the unoptimized kernel (reported; xfail, not strict: on the example alone z3 answers
#: "unknown" on some runs and proves it on others; in an f32 kernel storing `x / 2.0 + x * 1.0`
#: it gave up on every run here, and the whole kernel fell back)
NOT_VALIDATED: dict[str, str] = {
    f"fdiv-{k}-f32": "z3 may give up on f32 x / 2^k == x * 2^-k in translation validation; "
                     "the kernel then falls back whole"
    for k in (2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096)
}

#: rule name -> hand-written cases: (before, after or expected bounds, facts, support rules)
HAND: dict[str, list[tuple]] = {
    # range facts from arange / program_id, derived by the range analysis (support=RANGES)
    "lt-always-true": [('(Lt (I32) (Arange (I32) 0 16) (Splat (I32) "16" (Const (I32) 16)))',
                        '(Splat (Bool) "16" (Const (Bool) 1))', (), RANGES)],
    "le-always-true": [('(Le (I32) (Arange (I32) 0 16) (Splat (I32) "16" (Const (I32) 15)))',
                        '(Splat (Bool) "16" (Const (Bool) 1))', (), RANGES)],
    "ge-always-true-scalar": [("(Le (I32) (Const (I32) 0) (ProgramId (I32) 0))", "(Const (Bool) 1)", (), RANGES)],
    "rem-pow2-nonneg": [('(Rem (I32) (Arange (I32) 0 16) (Splat (I32) "16" (Const (I32) 4)))',
                         '(And (I32) (Arange (I32) 0 16) (Splat (I32) "16" (Const (I32) 3)))', (), RANGES)],
    "rem-pow2-nonneg-scalar": [("(Rem (I32) (ProgramId (I32) 0) (Const (I32) 8))",
                                "(And (I32) (ProgramId (I32) 0) (Const (I32) 7))", (), RANGES)],
    "div-pow2-nonneg-scalar": [("(Div (I32) (ProgramId (I32) 1) (Const (I32) 4))",
                                "(Shr (I32) (ProgramId (I32) 1) (Const (I32) 2))", (), RANGES)],
    "addptr-merge-signed": [('(Addptr (F32) (I32) (Addptr (F32) (I32) (OpaquePtr (F32) 1) (Arange (I32) 0 16))'
                             ' (Splat (I32) "16" (Const (I32) 16)))',
                             '(Addptr (F32) (I32) (OpaquePtr (F32) 1) (Add (I32) (Arange (I32) 0 16)'
                             ' (Splat (I32) "16" (Const (I32) 16))))', (), RANGES)],
    "range-rem-nonneg": [('(Rem (I32) (Arange (I32) 0 16) (Splat (I32) "16" (Const (I32) 4)))',
                          {"LowerBound": 0, "UpperBound": 3}, (), RANGES)],
    "lt-always-true-scalar": [("(Lt (I32) (ProgramId (I32) 0) (Const (I32) 2147483647))", "(Const (Bool) 1)", (),
                               RANGES)],
    "gt-always-true": [('(Lt (I32) (Splat (I32) "16" (Const (I32) 0))'
                        ' (Add (I32) (Arange (I32) 0 16) (Splat (I32) "16" (Const (I32) 1))))',
                        '(Splat (Bool) "16" (Const (Bool) 1))', (), RANGES)],
    "range-shl-nonneg": [('(Shl (I32) (Arange (I32) 0 16) (Splat (I32) "16" (Const (I32) 2)))',
                          {"LowerBound": 0, "UpperBound": 60}, (), RANGES)],
    "range-and-mask": [("(And (I32) (ProgramId (I32) 0) (Const (I32) 7))", {"LowerBound": 0, "UpperBound": 7}, (),
                        RANGES)],
    "range-cast-int": [("(Cast (I32) (I64) (Arange (I32) 0 16))", {"LowerBound": 0, "UpperBound": 15}, (), RANGES)],
    "range-div-nonneg": [('(Div (I32) (Arange (I32) 0 16) (Splat (I32) "16" (Const (I32) 4)))',
                          {"LowerBound": 0, "UpperBound": 15}, (), RANGES)],
    "range-add-signed": [('(Add (I32) (Arange (I32) 0 16) (Splat (I32) "16" (Const (I32) 16)))',
                          {"LowerBound": 16, "UpperBound": 31}, (), RANGES)],
    # a guard on a fact the example asserts by hand
    "lt-offset-bound": [('(Lt (I32) (Add (I32) (Splat (I32) "16" (Opaque (I32) 1)) (Arange (I32) 0 16))'
                         ' (Splat (I32) "16" (Opaque (I32) 2)))',
                         '(Lt (I32) (Arange (I32) 0 16) (Splat (I32) "16" (Sub (I32) (Opaque (I32) 2) (Opaque (I32) 1))))',
                         ("(set (LowerBound (Opaque (I32) 1)) 0)", "(set (UpperBound (Opaque (I32) 1)) 2147483632)",
                          "(set (LowerBound (Lt (I32) (Opaque (I32) 1) (Opaque (I32) 2))) 1)"), RANGES)],
    "div-pow2-nonneg": [('(Div (I32) (Opaque (I32) 1) (Splat (I32) "16" (Const (I32) 64)))',
                         '(Shr (I32) (Opaque (I32) 1) (Splat (I32) "16" (Const (I32) 6)))',
                         ("(set (LowerBound (Opaque (I32) 1)) 0)",), ())],
}


def _hand_ids():
    return [f"{name}-{i}" for name, cases in HAND.items() for i in range(len(cases))]


def _hand_cases():
    return [(name, case) for name, cases in HAND.items() for case in cases]


@pytest.fixture(scope="module")
def generated():
    return {r.name: rx.generate(r) for r in SHIPPED}


def test_every_rule_has_an_example(generated):
    missing = [f"{BY_NAME[n].location}: {n}" for n, ex in generated.items()
               if ex is None and n not in HAND and n not in DEAD]
    assert not missing, ("rules without a firing example (add a case to HAND in "
                         "tests/optimizer/test_rules_fire.py, or to DEAD with the reason it cannot fire):\n"
                         + "\n".join(missing))


def test_tables_name_shipped_rules():
    unknown = sorted((set(HAND) | set(DEAD) | set(NOT_VALIDATED)) - set(BY_NAME))
    assert not unknown, f"HAND/DEAD/NOT_VALIDATED name rules that are not shipped: {unknown}"
    alive = sorted(n for n in DEAD if n in HAND)
    assert not alive, f"rules listed as dead have a firing example: {alive}"


@pytest.mark.parametrize("name", [r.name for r in SHIPPED])
def test_generated_example_fires(name, generated):
    ex = generated[name]
    if ex is None:
        pytest.skip("no generated example (covered by HAND or reported by test_every_rule_has_an_example)")
    assert_rule_fires(name, ex)


@pytest.mark.parametrize(("name", "case"), _hand_cases(), ids=_hand_ids())
def test_hand_case_fires(name, case):
    before, after, facts, support = case
    bounds = after if isinstance(after, dict) else None
    assert_rule_fires(name, before, None if bounds is not None else after, facts=facts, bounds=bounds,
                      support=support)


GUARDED = [r.name for r in SHIPPED if rx.has_dtype_guard(r)]


@pytest.mark.parametrize("name", GUARDED)
def test_dtype_guard_blocks(name):
    """One negative per dtype guard (and per concrete dtype of the pattern)."""
    exs = rx.negatives(BY_NAME[name])
    assert exs, f"{BY_NAME[name].location}: {name}: no term found at a dtype its guards exclude"
    for ex in exs:
        assert_rule_does_not_fire(name, ex)


VALUE_NEGATIVES = {r.name: exs for r in SHIPPED if (exs := rx.value_negatives(r))}


@pytest.mark.parametrize("name", list(VALUE_NEGATIVES))
def test_value_guard_blocks(name):
    """For each guard on values that pool values can violate (``(> c 1)`` at 1, a power-of-two
    check at 3, ``(>= (LowerBound x) 0)`` with a negative range fact, a fold that would
    overflow), the rule must not fire on a term where only that guard fails."""
    for ex in VALUE_NEGATIVES[name]:
        assert_rule_does_not_fire(name, ex)


# ---------------------------------------------------------------------- hand-written negatives

def _bounds(leaf: str, lo: int, hi: int) -> tuple[str, str]:
    return (f"(set (LowerBound {leaf}) {lo})", f"(set (UpperBound {leaf}) {hi})")


_I32_MIN, _U32_MAX = -(1 << 31), (1 << 32) - 1
_O1, _O2, _O3 = "(Opaque (I32) 1)", "(Opaque (I32) 2)", "(Opaque (I32) 3)"
_U1, _U2 = "(Opaque (U32) 1)", "(Opaque (U32) 2)"
_MERGE = "(Addptr (I32) (I32) (Addptr (I32) (I32) (OpaquePtr (I32) 1) (Opaque (I32) 2)) (Opaque (I32) 3))"
_MERGE_U = "(Addptr (I32) (U32) (Addptr (I32) (U32) (OpaquePtr (I32) 1) (Opaque (U32) 2)) (Opaque (U32) 3))"
_HOIST = ("(Addptr (I32) (I32) (Splat (I32) \"16\" (OpaquePtr (I32) 1)) (Add (I32) (Splat (I32) \"16\" (Opaque (I32) 2))"
          " (Opaque (I32) 3)))")
_OFFSET_LT = '(Lt (I32) (Add (I32) (Splat (I32) "16" (Opaque (I32) 1)) (Opaque (I32) 3)) (Splat (I32) "16" (Opaque (I32) 2)))'
_BELOW = "(set (LowerBound (Lt (I32) (Opaque (I32) 1) (Opaque (I32) 2))) 1)"
_SIGNED_LOW_SUM = "(>= (>> l (- w 1)) -1)"
_UNSIGNED_HIGH_SUM = "(<= (>> h (- w 1)) 1)"


def _cast_narrow(ctor: str, cast_first: bool) -> list[tuple]:
    """The six ``*-cast-narrow`` rules: an i16 value widened to i32 compared with a constant;
    the constant must fit i16 (``c`` = 2 fires; 40000 and -40000 do not)."""
    def term(c: int) -> tuple[str, tuple]:
        cast, const = "(Cast (I16) (I32) (Opaque (I16) 1))", f'(Splat (I32) "16" (Const (I32) {c}))'
        return (f"({ctor} (I32) {cast} {const})" if cast_first else f"({ctor} (I32) {const} {cast})", ())

    return [("(>= (>> c (- w 1)) -1)", term(2), term(-40000)), ("(<= (>> c (- w 1)) 0)", term(2), term(40000))]


def _shl_divisible(splat: bool) -> list[tuple]:
    def term(t: str, c: int) -> tuple[str, tuple]:
        k = f"(Const ({t}) {c})"
        return (f'(Shl ({t}) (Opaque ({t}) 1) {f"(Splat ({t}) {rx.SHAPE} {k})" if splat else k})', ())

    return [("(>= c 0)", term("I32", 2), term("I32", -1)), ("(< c w)", term("I32", 31), term("I32", 32)),
            ("(< c 62)", term("I64", 61), term("I64", 62))]


def _mul_divrem(c0: int, c1: int, c2: int) -> tuple[str, tuple]:
    """``c0 * ((x // c1) % c2)`` at i32 with x >= 0 (``syn-i32-mul-divrem-pow2``)."""
    def k(c: int) -> str:
        return f"(Splat (I32) {rx.SHAPE} (Const (I32) {c}))"
    return (f"(Mul (I32) {k(c0)} (Rem (I32) (Div (I32) {_O1} {k(c1)}) {k(c2)}))", (f"(set (LowerBound {_O1}) 0)",))


#: rule -> (guard, a near miss that fires: (term, facts), the same with only that guard false);
#: for the guards on values that no pool value violates (rx.unblocked_value_guards)
HAND_NEGATIVES: dict[str, list[tuple]] = {
    "lt-offset-bound": [("(<= (>> (+ (UpperBound i) (UpperBound x)) (- w 1)) 0)",
                         (_OFFSET_LT, _bounds(_O1, 0, 2147483632) + _bounds(_O3, 0, 15) + (_BELOW,)),
                         (_OFFSET_LT, _bounds(_O1, 0, 2147483633) + _bounds(_O3, 0, 15) + (_BELOW,)))],
    # the mask (c2 - 1) * c0 must fit i32: 4095 * 2^20 does not (the shift 20 - 4 is fine)
    "syn-i32-mul-divrem-pow2": [("(<= r1 2147483647)", _mul_divrem(1024, 64, 32), _mul_divrem(1 << 20, 16, 1 << 12))],
    "addptr-merge-signed": [(_SIGNED_LOW_SUM, (_MERGE, _bounds(_O2, 0, 15) + _bounds(_O3, 0, 15)),
                             (_MERGE, _bounds(_O2, _I32_MIN, 15) + _bounds(_O3, -1, 15)))],
    "addptr-hoist-signed": [(_SIGNED_LOW_SUM, (_HOIST, _bounds(_O2, 0, 15) + _bounds(_O3, 0, 15)),
                             (_HOIST, _bounds(_O2, _I32_MIN, 15) + _bounds(_O3, -1, 15)))],
    "addptr-merge-unsigned": [(_UNSIGNED_HIGH_SUM,
                               (_MERGE_U, _bounds("(Opaque (U32) 2)", 0, 15) + _bounds("(Opaque (U32) 3)", 0, 15)),
                               (_MERGE_U, _bounds("(Opaque (U32) 2)", 0, _U32_MAX) + _bounds("(Opaque (U32) 3)", 0, 1)))],
    "lt-cast-narrow": _cast_narrow("Lt", True),
    "gt-cast-narrow": _cast_narrow("Lt", False),
    "le-cast-narrow": _cast_narrow("Le", True),
    "ge-cast-narrow": _cast_narrow("Le", False),
    "eq-cast-narrow": _cast_narrow("Eq", True),
    "ne-cast-narrow": _cast_narrow("Ne", True),
    "div-const-16": [("(!= v 0)", ("(Const (I32) 16)", ()), ("(Const (I32) 0)", ()))],
    "div-shl": _shl_divisible(False),
    "div-shl-splat": _shl_divisible(True),
    "fold-add-unsigned": [("(>= a 0)", ("(Add (U32) (Const (U32) 2) (Const (U32) 2))", ()),
                           ("(Add (U32) (Const (U32) -1) (Const (U32) 2))", ())),
                          ("(>= b 0)", ("(Add (U32) (Const (U32) 2) (Const (U32) 2))", ()),
                           ("(Add (U32) (Const (U32) 2) (Const (U32) -1))", ()))],
    "fold-sub-unsigned": [("(>= b 0)", ("(Sub (U32) (Const (U32) 2) (Const (U32) 1))", ()),
                           ("(Sub (U32) (Const (U32) 2) (Const (U32) -1))", ()))],
    "fold-mul-unsigned": [("(>= a 0)", ("(Mul (U32) (Const (U32) 2) (Const (U32) 2))", ()),
                           ("(Mul (U32) (Const (U32) -1) (Const (U32) 2))", ())),
                          ("(>= b 0)", ("(Mul (U32) (Const (U32) 2) (Const (U32) 2))", ()),
                           ("(Mul (U32) (Const (U32) 2) (Const (U32) -1))", ()))],
    "fold-shl-nonneg": [("(>= b 0)", ("(Shl (I32) (Const (I32) 2) (Const (I32) 2))", ()),
                         ("(Shl (I32) (Const (I32) 2) (Const (I32) -1))", ())),
                        ("(< b w)", ("(Shl (I32) (Const (I32) 0) (Const (I32) 31))", ()),
                         ("(Shl (I32) (Const (I32) 0) (Const (I32) 32))", ())),
                        # 2^40 << 30 loses bits in i64: the round trip fails, the sign check does not
                        ("(= a (>> c b))", ("(Shl (I32) (Const (I32) 1) (Const (I32) 30))", ()),
                         ("(Shl (I32) (Const (I32) 1099511627776) (Const (I32) 30))", ()))],
    "range-const-unsigned": [("(>= v 0)", ("(Const (U32) 2)", ()), ("(Const (U32) -1)", ()))],
    "range-add-signed": [(_SIGNED_LOW_SUM, (f"(Add (I32) {_O1} {_O2})", _bounds(_O1, 0, 15) + _bounds(_O2, 0, 15)),
                          (f"(Add (I32) {_O1} {_O2})", _bounds(_O1, _I32_MIN, 15) + _bounds(_O2, -1, 15)))],
    "range-add-unsigned": [(_UNSIGNED_HIGH_SUM,
                            (f"(Add (U32) {_U1} {_U2})", _bounds(_U1, 0, 15) + _bounds(_U2, 0, 15)),
                            (f"(Add (U32) {_U1} {_U2})", _bounds(_U1, 0, _U32_MAX) + _bounds(_U2, 0, 1)))],
    "range-shl-nonneg": [("(>= k 0)", (f"(Shl (I32) {_O1} {_O2})", _bounds(_O1, 0, 15) + _bounds(_O2, 0, 2)),
                          (f"(Shl (I32) {_O1} {_O2})", _bounds(_O1, 0, 15) + _bounds(_O2, -3, -1))),
                         ("(< k w)", (f"(Shl (I32) {_O1} {_O2})", _bounds(_O1, 0, 0) + _bounds(_O2, 0, 31)),
                          (f"(Shl (I32) {_O1} {_O2})", _bounds(_O1, 0, 0) + _bounds(_O2, 0, 32))),
                         ("(= (UpperBound a) (>> h k))",
                          (f"(Shl (I32) {_O1} {_O2})", _bounds(_O1, 0, 1) + _bounds(_O2, 0, 30)),
                          (f"(Shl (I32) {_O1} {_O2})", _bounds(_O1, 0, 1 << 40) + _bounds(_O2, 0, 30)))],
    "range-cast-int": [("(<= (>> h (- w 1)) 0)",
                        ("(Cast (I32) (I16) (Opaque (I32) 1))", _bounds(_O1, 0, 32767)),
                        ("(Cast (I32) (I16) (Opaque (I32) 1))", _bounds(_O1, 0, 40000)))],
    # c is the f64 bit pattern of the divisor: 2^14 = 16384.0 fires, 2^15 does not (its
    # reciprocal 2^-15 is an f16 subnormal)
    "fdiv-pow2-half": [("(<= c 4671226772094713856)",
                        ('(Div (F16) (Opaque (F16) 1) (Splat (F16) "16" (ConstF (F16) 4670232813583204352)))', ()),
                        ('(Div (F16) (Opaque (F16) 1) (Splat (F16) "16" (ConstF (F16) 4674736413210574848)))', ()))],
}


def _hand_negative_cases():
    return [pytest.param(name, *case, id=f"{name}-{i}") for name, cases in HAND_NEGATIVES.items()
            for i, case in enumerate(cases)]


def test_every_value_guard_has_a_negative():
    """A guard on values that no generated term violates needs a hand-written negative."""
    missing = [f"{r.location}: {r.name}: {r.guards[i]}" for r in SHIPPED for i in rx.unblocked_value_guards(r)
               if str(r.guards[i]) not in {g for g, _ok, _bad in HAND_NEGATIVES.get(r.name, ())}]
    assert not missing, ("guards without a negative example (add one to HAND_NEGATIVES in "
                         "tests/optimizer/test_rules_fire.py):\n" + "\n".join(missing))
    unknown = [(n, g) for n, cases in HAND_NEGATIVES.items() for g, _ok, _bad in cases
               if n not in BY_NAME or g not in {str(x) for x in BY_NAME[n].guards}]
    assert not unknown, f"HAND_NEGATIVES name rules or guards that are not shipped: {unknown}"


@pytest.mark.parametrize(("name", "guard", "ok", "bad"), _hand_negative_cases())
def test_hand_negative_blocks(name, guard, ok, bad):
    """The near miss fires; the same term with only ``guard`` false does not."""
    assert_rule_fires(name, ok[0], facts=ok[1])
    assert_rule_does_not_fire(name, bad[0], facts=bad[1])


@pytest.mark.slow
@pytest.mark.parametrize("name", [r.name for r in SHIPPED])
def test_every_accepted_dtype_fires(name):
    rule = BY_NAME[name]
    envs = rx.assignments(rule)
    assert envs or name in DEAD, f"{rule.location}: {name} accepts no well-typed dtype assignment"
    none = []
    for env in envs:
        ex = rx.generate(rule, env)
        if ex is None:
            none.append(",".join(d.name for d in env.values()))
            continue
        assert_rule_fires(name, ex)
    if none and name not in HAND:
        pytest.fail(f"{rule.location}: {name}: no generated example at {none}")


# ---------------------------------------------------------------------- end to end, as IR programs


def _program_examples(generated, fast_math: bool) -> list[rx.RuleExample]:
    """Generated examples of the rules of one ruleset kind."""
    return [ex for r in SHIPPED if r.fast_math == fast_math and (ex := generated[r.name]) is not None]


def _hand_examples() -> list[rx.RuleExample]:
    """The hand cases a kernel can state (no asserted facts; rewrites, not bounds)."""
    return [rx.RuleExample(name, {}, before, after) for name, (before, after, facts, _support) in _hand_cases()
            if not facts and not isinstance(after, dict)]


def _run_both(prog, optimized, seed: int = 0):
    from eggpu.ir.interp import interpret
    from eggpu.optimizer.rule_programs import random_arguments

    a, b = random_arguments(prog, seed), random_arguments(prog, seed)
    interpret(prog.function, 1, *a)
    interpret(optimized, 1, *b)
    return [(name, x, y) for name, x, y in zip([p.name for p in prog.function.params], a, b)
            if name.endswith("_out")]


#: examples per kernel in the end-to-end test (smaller kernels keep each e-graph small)
CHUNK = 48


def _outputs_agree(prog, optimized, fast_math: bool) -> None:
    import numpy as np

    for name, want, got in _run_both(prog, optimized):
        if fast_math:
            ok = ~np.isfinite(want.astype(np.float64)) | np.isclose(want, got, rtol=1e-3, atol=1e-3)
        else:
            ok = (want == got) | (np.isnan(want) & np.isnan(got) if want.dtype.kind == "f" else False)
        assert ok.all(), f"{name}: optimized {got} != input {want}"


@pytest.mark.parametrize("fast_math", [False, True], ids=["exact", "fast_math"])
def test_generated_examples_fire_in_the_optimizer(generated, fast_math):
    """The examples (that a program can state) as kernels of ``CHUNK`` examples, each optimized
    once with the shipped rules: every example's rule fires (one iteration: each example matches
    its rule directly), and each optimized kernel computes what its input does on random inputs
    (fast_math: where the input's result is finite, to 1e-3). Hit counts are per rule over a
    whole kernel; the per-rule check is :func:`test_generated_example_fires`.

    Rule hits are recorded before extraction, so the firing check holds even when a kernel falls
    back; a fallback from the known, nondeterministic extraction failure (the xfail in
    tests/optimizer/test_optimize.py: the same kernel fails once and passes on a rerun) only
    makes the equivalence check of that kernel xfail, after every other check has run."""
    from eggpu.optimizer import Limits, optimize
    from eggpu.optimizer.rule_programs import example_program

    examples = _program_examples(generated, fast_math)
    extraction_failures = []
    for start in range(0, len(examples), CHUNK):
        prog = example_program(examples[start:start + CHUNK], name=f"rule_examples_{start}")
        facts_only = {n for n, why in prog.skipped.items() if why.startswith("range facts")}
        assert set(prog.skipped) == facts_only, f"examples that could not be built as IR: {prog.skipped}"
        res = optimize(prog.function, fast_math=fast_math, limits=Limits(iterations=1), validate=False)
        missing = sorted({n for n in prog.included if not res.rule_hits.get(n)})
        assert not missing, f"rules that did not fire on their example in the optimizer: {missing}"
        if res.fell_back and res.reason.startswith("ExtractionError"):
            extraction_failures.append(f"{prog.function.name}: {res.reason}")
            continue
        assert not res.fell_back, res.reason
        _outputs_agree(prog, res.function, fast_math)
    if extraction_failures:
        pytest.xfail("known nondeterministic extraction failure: " + "; ".join(extraction_failures))


def test_hand_cases_fire_in_the_optimizer():
    """The hand cases (range facts from arange/program_id) as one kernel, optimized with the
    default limits: the range analysis derives the facts as in a real kernel, each case's rule
    fires, and the result validates."""
    from eggpu.optimizer import optimize
    from eggpu.optimizer.rule_programs import example_program

    prog = example_program(_hand_examples(), name="hand_cases")
    assert not prog.skipped, prog.skipped
    res = optimize(prog.function)
    missing = sorted({n for n in prog.included if not res.rule_hits.get(n)})
    assert not missing, f"rules that did not fire on their hand case in the optimizer: {missing}"
    assert not res.fell_back, res.reason
    _outputs_agree(prog, res.function, False)


def test_helpers_report_what_went_wrong():
    rule = '(rewrite (Mul t x (Splat t s (Const t c))) x :when ((IsInt t) (> c 1) (< c 0)) :name "never")'
    with pytest.raises(AssertionError, match="no example could be generated for rule 'never'"):
        assert_rule_fires(rule)
    term = '(Add (I32) (Opaque (I32) 1) (Splat (I32) "16" (Const (I32) 1)))'
    with pytest.raises(AssertionError, match="rule 'add-zero-int' on .*: the rule did not match"):
        assert_rule_fires("add-zero-int", term, "(Opaque (I32) 1)")
    zero = '(Add (I32) (Opaque (I32) 1) (Splat (I32) "16" (Const (I32) 0)))'
    with pytest.raises(AssertionError, match=r"it matched but \(Opaque \(I32\) 2\) is not in the term's e-class"):
        assert_rule_fires("add-zero-int", zero, "(Opaque (I32) 2)")
    with pytest.raises(AssertionError, match="rule 'add-zero-int' fired on .* but must not"):
        assert_rule_does_not_fire("add-zero-int", zero)
    with pytest.raises(AssertionError, match="no rule named 'no-such-rule'"):
        assert_rule_fires("no-such-rule", zero)
    with pytest.raises(AssertionError, match=r"bounds differ \(expected, got\): \{'UpperBound': \(14, 15\)\}"):
        assert_rule_fires("range-arange", "(Arange (I32) 0 16)", bounds={"LowerBound": 0, "UpperBound": 14})
    assert assert_rule_fires("add-zero-int", zero, "(Opaque (I32) 1)").hits == 1


def _validation_cases():
    return [pytest.param(r.name, marks=pytest.mark.xfail(strict=False, reason=NOT_VALIDATED[r.name]))
            if r.name in NOT_VALIDATED else r.name for r in SHIPPED]


@pytest.mark.slow
@pytest.mark.parametrize("name", _validation_cases())
def test_example_kernel_fires_and_validates(name, generated):
    """Each rule's example alone as an IR kernel, optimized with the shipped rules (one
    iteration for a generated example): the rule fires and translation validation proves the
    result equivalent."""
    from eggpu.optimizer import Limits, optimize
    from eggpu.optimizer.rule_programs import example_program

    rule = BY_NAME[name]
    gen = generated[name]
    hand = [ex for ex in _hand_examples() if ex.rule == name]
    exs = [gen] if gen is not None and not gen.facts else hand[:1]
    prog = example_program(exs)
    if not prog.included:
        pytest.skip("no example a kernel can state (range facts asserted on leaves)")
    # a generated example matches its rule directly; a hand case needs the range analysis to
    # run over several iterations
    limits = Limits(iterations=1) if exs[0] is gen else Limits()
    res = optimize(prog.function, fast_math=rule.fast_math, limits=limits)
    assert not res.fell_back, res.reason
    assert res.rule_hits.get(name), f"{name} did not fire: {res.rule_hits}"


def test_rules_doc_example_runs():
    """The example of docs/rules.md ("Showing that a rule fires") runs as written."""
    import re
    from pathlib import Path

    text = (Path(__file__).parents[2] / "docs" / "rules.md").read_text()
    section = text[text.index("### Showing that a rule fires"):]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    exec(compile(code, "docs/rules.md", "exec"), {})


@pytest.mark.parametrize("expr", ["(+ 9223372036854775807 1)", "(- -9223372036854775808 1)", "(* 4611686018427387904 2)",
                                  "(/ -7 2)", "(% -7 2)", "(/ 7 -2)", "(% 7 -2)", "(/ 5 0)", "(<< 1 63)", "(<< 3 63)",
                                  "(<< 1 64)", "(<< 1 -1)", "(>> -8 1)", "(>> -1 63)", "(log2 8)", "(log2 9)",
                                  "(not-i64 5)", "(min -3 2)", "(max -3 2)", "(& -4 7)", "(| 8 1)", "(^ 6 3)"])
def test_guard_arithmetic_matches_egglog(expr):
    """The generator's i64 evaluation of guards agrees with egglog's checked primitives (a
    value, or the failure that makes a guard not match)."""
    from egglog.bindings import EGraph

    from eggpu.optimizer.rules_loader import Rule, read_all

    eg = EGraph()
    try:
        out = eg.run_program(*eg.parse_program(f"(extract {expr})"))
        want: object = int(out[0].termdag.to_string(out[0].term))
    except Exception:  # egglog's error for an overflow, a division by zero, a bad shift
        want = "fails"
    rule = Rule("r", "-", 0, "exact", "rewrite", None, None, (), (), "", "")
    try:
        got: object = rx._Scope(rule, {}, {}, {}).i64(read_all(expr)[0])
    except rx._Fail:
        got = "fails"
    assert got == want
