"""Rule files: parsing, schema checks and the exact error messages."""

from __future__ import annotations

import os

import pytest

from eggpu.ir.errors import RuleError
from eggpu.optimizer.rules_loader import load_rule_files, load_rules, load_sources, parse_rule
from eggpu.optimizer.schema import float_bits


def load_text(text: str, file: str = "mine.egg"):
    return load_sources([(file, text)])


def error_of(text: str, file: str = "mine.egg") -> str:
    with pytest.raises(RuleError) as ei:
        load_text(text, file)
    return str(ei.value)


def test_rewrite_is_parsed_with_ruleset_name_and_location():
    loaded = load_text('\n\n(rewrite (Neg t (Neg t x)) x :name "neg-neg")\n')
    (r,) = loaded.rules
    assert (r.name, r.file, r.line, r.ruleset, r.kind) == ("neg-neg", "mine.egg", 3, "exact", "rewrite")
    assert r.egglog == '(rewrite (Neg t (Neg t x)) x :ruleset exact :name "neg-neg")'
    assert r.var_sorts == {"t": "DT", "x": "Term"}
    assert r.text == '(rewrite (Neg t (Neg t x)) x :name "neg-neg")'


def test_float_literals_in_constf_become_bit_patterns():
    r = parse_rule('(rewrite (Mul t x (Splat t s (ConstF t 1.0))) (Add t x (Splat t s (ConstF t -0.0))) :name "f")')
    assert str(float_bits(1.0)) in r.egglog and str(float_bits(-0.0)) in r.egglog
    r2 = parse_rule('(rewrite (Mul t x (ConstF t inf)) (ConstF t nan) :name "g")')
    assert str(float_bits(float("inf"))) in r2.egglog and str(float_bits(float("nan"))) in r2.egglog


def test_rule_command_and_user_ruleset():
    loaded = load_text(
        "(ruleset mine)\n"
        '(rule ((= e (Add t a b)) (IsSigned t) (= l (LowerBound a))) ((set (LowerBound e) l)) :ruleset mine :name "r")\n'
    )
    (r,) = loaded.rules
    assert r.kind == "rule" and r.ruleset == "mine" and r.lhs is None
    assert loaded.user_rulesets() == ("mine",)
    assert loaded.program().startswith("(ruleset mine)")


def test_unknown_constructor_with_did_you_mean():
    assert error_of('(rewrite (Ad t x y) x :name "a")') == "mine.egg:1: rule 'a': unknown constructor Ad (did you mean Add?)"
    assert error_of('(rewrite (Add t x y) (Mull t x y) :name "b")') == \
        "mine.egg:1: rule 'b': unknown constructor Mull (did you mean Mul?)"


def test_wrong_arity():
    assert error_of('\n(rewrite (Add t x) x :name "a")') == \
        "mine.egg:2: rule 'a': Add takes 3 arguments (DT Term Term), got 2"


def test_unbound_rhs_variable():
    assert error_of('(rewrite (Add t x y) (Add t x z) :name "a")') == \
        "mine.egg:1: rule 'a': unbound variable z in the right-hand side (bind it in the left-hand side or :when)"


def test_duplicate_name_within_and_across_files(tmp_path):
    assert error_of('(rewrite (Neg t (Neg t x)) x :name "a")\n(rewrite (Not t (Not t x)) x :name "a")') == \
        "mine.egg:2: rule 'a': duplicate rule name (first defined at mine.egg:1)"
    f1, f2 = tmp_path / "one.egg", tmp_path / "two.egg"
    f1.write_text('(rewrite (Neg t (Neg t x)) x :name "same")\n')
    f2.write_text('\n(rewrite (Not t (Not t x)) x :name "same")\n')
    with pytest.raises(RuleError) as ei:
        load_rule_files([f1, f2])
    assert str(ei.value) == f"{f2}:2: rule 'same': duplicate rule name (first defined at {f1}:1)"


def test_user_rule_clashing_with_shipped_name(tmp_path):
    f = tmp_path / "clash.egg"
    f.write_text('(rewrite (Neg t (Neg t x)) x :name "neg-neg")\n')
    with pytest.raises(RuleError, match=r"clash.egg:1: rule 'neg-neg': duplicate rule name \(first defined at rules/algebra.egg:\d+\)"):
        load_rules([f], env=False)


def test_missing_name():
    assert error_of('(rewrite (Neg t (Neg t x)) x)') == \
        'mine.egg:1: rewrite without :name (every rule needs :name "...")'


def test_forbidden_command():
    assert error_of("(run 10)") == \
        "mine.egg:1: command 'run' is not allowed in rule files (only ruleset, rewrite, birewrite, rule)"
    assert "command 'datatype' is not allowed" in error_of("(datatype Foo (Bar))")


def test_unknown_ruleset():
    assert error_of('(rewrite (Neg t (Neg t x)) x :ruleset fastmath :name "a")') == \
        "mine.egg:1: rule 'a': unknown ruleset fastmath (did you mean fast_math?) (declare it with (ruleset fastmath))"


def test_more_errors():
    assert "float literal 1.5 is only allowed as the value of ConstF" in error_of('(rewrite (Add t x (Const t 1.5)) x :name "a")')
    assert "ConstF takes a float literal" in error_of('(rewrite (Add t x (ConstF t 1)) x :name "a")')
    assert "constructor I32 needs parentheses: write (I32)" in error_of('(rewrite (Add I32 x y) x :name "a")')
    assert "variable k in a guard is not bound" in error_of('(rewrite (Neg t x) x :when ((< k 3)) :name "a")')
    assert "option :merge is not allowed" in error_of('(rewrite (Neg t x) x :merge 3 :name "a")')
    assert "unknown guard IsInteger (did you mean IsInt?)" in error_of('(rewrite (Neg t x) x :when ((IsInteger t)) :name "a")')
    assert "unbalanced" in error_of('(rewrite (Neg t x) x :name "a"')
    assert "variable x is used as a Term and as a DT" in error_of('(rewrite (Neg t x) (Neg x t) :name "a")')
    assert "action 'delete' is not allowed" in error_of('(rule ((= e (Neg t x))) ((delete (Neg t x))) :name "a")')


def test_errors_are_all_reported_with_lines():
    msg = error_of('(rewrite (Ad t x y) x :name "a")\n(rewrite (Neg t x) y :name "b")\n')
    assert msg.splitlines() == [
        "mine.egg:1: rule 'a': unknown constructor Ad (did you mean Add?)",
        "mine.egg:2: rule 'b': unbound variable y in the right-hand side (bind it in the left-hand side or :when)",
    ]


def test_shipped_rules_load_and_env_path(tmp_path, monkeypatch):
    shipped = load_rules(env=False)
    assert len(shipped.rules) >= 60
    assert {r.file for r in shipped.rules} >= {"rules/algebra.egg", "rules/strength.egg", "rules/address.egg",
                                               "rules/masks.egg", "rules/fold.egg", "rules/ranges.egg",
                                               "rules/fast_math.egg"}
    d = tmp_path / "more"
    d.mkdir()
    (d / "a.egg").write_text('(rewrite (Neg t (Abs t x)) (Neg t (Abs t x)) :name "env-rule-a")\n')
    other = tmp_path / "b.egg"
    other.write_text('(rewrite (Not t (Not t (Not t x))) (Not t x) :name "env-rule-b")\n')
    monkeypatch.setenv("EGGPU_RULES_PATH", os.pathsep.join([str(d), str(other)]))
    names = load_rules().by_name()
    assert "env-rule-a" in names and "env-rule-b" in names and "neg-neg" in names


def test_missing_file(tmp_path):
    with pytest.raises(RuleError, match="rule file not found"):
        load_rule_files([tmp_path / "nope.egg"])
