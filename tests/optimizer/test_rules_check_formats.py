"""``eggpu rules check --json`` and ``--per-dtype``: every (rule, dtype) verdict, machine-readable."""

from __future__ import annotations

import io
import json

from eggpu.optimizer.rules_cli import EXIT_OK, EXIT_REFUTED, check_rules

RULES = """
(rewrite (Add t x (Splat t s (Const t 0))) x :when ((IsInt t)) :name "t-add-zero")
(rewrite (Sub t x (Splat t s (Const t 1))) (Add t x (Splat t s (Const t 1))) :when ((IsSigned t)) :name "t-wrong")
"""


def _check(tmp_path, **kw) -> tuple[int, str]:
    f = tmp_path / "mine.egg"
    f.write_text(RULES)
    out = io.StringIO()
    kw.setdefault("progress", True)
    rc = check_rules([f], out=out, use_cache=False, shipped=False, **kw)
    return rc, out.getvalue()


def test_json_has_every_dtype_verdict_and_the_summary(tmp_path):
    rc, text = _check(tmp_path, as_json=True)
    assert rc == EXIT_REFUTED
    doc = json.loads(text)  # the document alone: no progress lines mixed in
    assert doc["summary"] == {"rules": 2, "usable": 1, "refuted": 1, "unknown": 0, "reduced_width": 0,
                              "never_fire": 0}
    good, bad = doc["rules"]
    assert (good["rule"], good["status"], good["usable"]) == ("t-add-zero", "proved", True)
    assert [d["key"] for d in good["dtypes"]] == ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"]
    assert all(d["status"] == "proved" and d["counterexample"] is None for d in good["dtypes"])
    assert bad["status"] == "refuted" and not bad["usable"]
    assert [d["key"] for d in bad["dtypes"]] == ["i8", "i16", "i32", "i64"]
    first = bad["dtypes"][0]
    assert first["status"] == "refuted"
    assert "lhs = " in first["detail"] and "rhs = " in first["detail"]  # re-evaluated concretely


def test_per_dtype_rows_follow_each_rule(tmp_path):
    rc, text = _check(tmp_path, per_dtype=True, progress=False)
    assert rc == EXIT_REFUTED
    lines = text.splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.startswith("t-wrong"))
    rows = lines[at + 1:at + 5]
    assert [r.split()[:2] for r in rows] == [["i8", "refuted"], ["i16", "refuted"], ["i32", "refuted"],
                                             ["i64", "refuted"]]
    assert "lhs = " in rows[0]


def test_json_exit_code_is_ok_when_nothing_is_refuted(tmp_path):
    f = tmp_path / "ok.egg"
    f.write_text(RULES.splitlines()[1])
    out = io.StringIO()
    assert check_rules([f], out=out, use_cache=False, shipped=False, as_json=True) == EXIT_OK
    assert json.loads(out.getvalue())["summary"]["usable"] == 1


def test_bool_arithmetic_says_exactly_why_it_never_fires(tmp_path):
    """The IR has no bool add/mul (Triton's frontend promotes bool to int first): the verdict says
    which op refuses bool and what to write instead."""
    f = tmp_path / "b.egg"
    f.write_text('(rewrite (Add (Bool) x y) (Or (Bool) x y) :name "bool-add")\n'
                 '(rewrite (Mul (Bool) x y) (And (Bool) x y) :name "bool-mul")\n')
    out = io.StringIO()
    assert check_rules([f], out=out, use_cache=False, shipped=False, as_json=True) == EXIT_REFUTED
    add, mul = json.loads(out.getvalue())["rules"]
    assert add["dtypes"] == [] and mul["dtypes"] == []
    assert "add does not accept bool (its operands are ints and floats; on bool write or (saturating) or xor" in add["note"]
    assert "mul does not accept bool (its operands are ints and floats; on bool write and)" in mul["note"]
