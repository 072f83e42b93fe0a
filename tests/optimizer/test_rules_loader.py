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


# ---------------------------------------------------------------- hostile or odd rule files


def _rule_error(paths) -> str:
    with pytest.raises(RuleError) as ei:
        load_rule_files(paths, validate_egglog=False)
    return str(ei.value)


GOOD = '(rewrite (Neg t (Neg t x)) x :name "mine-neg-neg")\n'


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_named_egg_is_refused_without_blocking(tmp_path):
    from eggpu.rules import rule_files

    fifo = tmp_path / "pipe.egg"
    os.mkfifo(fifo)  # nobody ever writes: a plain open() would wait forever
    assert _rule_error([fifo]) == f"{fifo}: not a rule file: it is a FIFO (only regular files are read)"
    # in a rules folder, and on the compile-cache key path (eggpu.rules.rule_files)
    d = tmp_path / "dir"
    d.mkdir()
    (d / "a.egg").write_text(GOOD)
    os.mkfifo(d / "b.egg")
    assert _rule_error([d]) == f"{d / 'b.egg'}: not a rule file: it is a FIFO (only regular files are read)"
    with pytest.raises(RuleError, match="b.egg: not a rule file: it is a FIFO"):
        rule_files([d], shipped=False, env=False)
    # the compile-cache key of eggpu.compile(..., rules=[fifo]) refuses it too (no hang)
    from eggpu.pipeline import CompileOptions

    with pytest.raises(RuleError, match=r"pipe\.egg: not a rule file: it is a FIFO"):
        CompileOptions(rules=(str(fifo),)).key_parts()


def test_links_to_devices_and_dangling_links_are_refused_links_to_files_are_read(tmp_path):
    zero = tmp_path / "zero.egg"
    zero.symlink_to("/dev/zero")
    assert _rule_error([zero]) == f"{zero}: not a rule file: it is a character device (only regular files are read)"
    dangling = tmp_path / "dangling.egg"
    dangling.symlink_to(tmp_path / "gone.egg")
    assert _rule_error([dangling]) == f"{dangling}: rule file not found"
    real = tmp_path / "real.txt"
    real.write_text(GOOD)
    link = tmp_path / "link.egg"
    link.symlink_to(real)
    assert [r.name for r in load_rule_files([link], validate_egglog=False).rules] == ["mine-neg-neg"]


def test_rule_files_over_the_size_limit_are_refused(tmp_path):
    from eggpu.rules import MAX_RULE_FILE_BYTES, read_rule_file

    big = tmp_path / "big.egg"
    with open(big, "wb") as f:
        f.truncate(MAX_RULE_FILE_BYTES + 1)  # sparse: nothing is written
    assert _rule_error([big]) == (f"{big}: rule file too large ({MAX_RULE_FILE_BYTES + 1} bytes; "
                                  f"the limit is {MAX_RULE_FILE_BYTES} bytes)")
    at_limit = tmp_path / "limit.egg"
    with open(at_limit, "wb") as f:
        f.truncate(MAX_RULE_FILE_BYTES)
    assert len(read_rule_file(at_limit)) == MAX_RULE_FILE_BYTES


def test_deep_nesting_is_a_rule_error_with_file_and_line(tmp_path):
    from eggpu.optimizer.rules_loader import MAX_NESTING, read_all

    deep = tmp_path / "deep.egg"
    deep.write_text("\n\n" + "(" * 5000 + ")" * 5000)
    assert _rule_error([deep]) == f"{deep}:3: lists nested deeper than {MAX_NESTING} levels"
    assert error_of("(rewrite\n" + "(" * 101 + ")" * 101 + ")", "n.egg") == "n.egg:2: lists nested deeper than 100 levels"
    assert len(read_all("(" * MAX_NESTING + ")" * MAX_NESTING)) == 1
    # a rule at the nesting limit is checked without a RecursionError
    chain = "x"
    for _ in range(MAX_NESTING - 3):
        chain = f"(Neg t {chain})"
    loaded = load_sources([("chain.egg", f'(rewrite (Neg t (Neg t {chain})) {chain} :name "long-chain")')],
                          validate_egglog=False)
    assert loaded.rules[0].name == "long-chain"


def test_non_utf8_rule_file_names_file_line_and_byte_offset(tmp_path):
    bad = tmp_path / "latin1.egg"
    bad.write_bytes(b'; caf\xe9\n' + GOOD.encode())
    assert _rule_error([bad]) == f"{bad}:1: not UTF-8 text (byte 0xe9 at byte offset 5); rule files must be UTF-8"
    bad2 = tmp_path / "bin.egg"
    bad2.write_bytes(GOOD.encode() + b"\n\n\x00\xff\xfe")
    off = len(GOOD) + 3
    assert _rule_error([bad2]) == f"{bad2}:4: not UTF-8 text (byte 0xff at byte offset {off}); rule files must be UTF-8"
    bom = tmp_path / "bom.egg"
    bom.write_bytes(b"\xef\xbb\xbf" + GOOD.encode())
    assert [r.name for r in load_rule_files([bom], validate_egglog=False).rules] == ["mine-neg-neg"]


def test_errors_quote_only_a_short_escaped_excerpt_of_a_file(tmp_path):
    secret = tmp_path / "passwd.egg"
    secret.write_text("root:x:0:0:root:/root:/bin/bash-" + "s3cret" * 2000 + "\n")
    msg = _rule_error([secret])
    assert msg == (f"{secret}:1: unexpected text 'root:x:0:0:root:/root:/bin/bash-s3crets3'... outside a command "
                   "(a rule file holds (rewrite ...), (birewrite ...), (rule ...) and (ruleset ...))")
    ansi = tmp_path / "ansi.egg"
    ansi.write_text("\x1b[2J\x1b[31mgotcha")
    assert "'\\x1b[2J\\x1b[31mgotcha'" in _rule_error([ansi])
    long_head = error_of("(" + "q" * 5000 + " a b)")
    assert long_head == "mine.egg:1: command '" + "q" * 40 + "'... is not allowed in rule files " \
                        "(only ruleset, rewrite, birewrite, rule)"


def test_at_most_twenty_problems_are_listed():
    msg = error_of("".join(f"(run {i})\n" for i in range(50)), "many.egg")
    lines = msg.splitlines()
    assert len(lines) == 21 and lines[0].startswith("many.egg:1: command 'run'")
    assert lines[19].startswith("many.egg:20: ") and lines[20] == "... and 30 more problems"


def test_rule_folders_list_what_glob_lists(tmp_path) -> None:
    """eggpu.rules lists a folder's *.egg files with os.listdir (no glob pattern compiled on a
    cache hit): the same files, in the same order, as Path.glob("*.egg")."""
    import eggpu.rules as rules_pkg

    for name in ("b.egg", "a.egg", ".hidden.egg", "UPPER.EGG", "x.egg.bak", "notes.txt"):
        (tmp_path / name).write_text("; r\n")
    (tmp_path / "folder.egg").mkdir()
    assert rules_pkg.expand(tmp_path) == sorted(tmp_path.glob("*.egg"))
    assert [p.name for p in rules_pkg.expand(tmp_path)] == [".hidden.egg", "a.egg", "b.egg", "folder.egg"]
    shipped = rules_pkg.shipped_files()
    assert shipped == sorted(shipped[0].parent.glob("*.egg")) and len(shipped) > 5
