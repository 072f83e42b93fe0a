"""The parsed-rule cache (optimizer/parsed_rules.py): a second load of the same rule bytes reads
the parse back instead of parsing again, with the same rules; anything else (edited text, a
malformed or planted entry, an untrusted folder, a file with errors) is parsed as usual."""

from __future__ import annotations

import collections
import dataclasses
import os
import pickle

import pytest

from eggpu.ir.errors import RuleError
from eggpu.optimizer import parsed_rules, rules_loader
from eggpu.optimizer.rules_loader import load_sources

MINE = """
(ruleset mine)
(rewrite (Mul t x (Const t 2)) (Add t x x) :ruleset mine :when ((IsInt t)) :name "t-mul2")
(rewrite (Add t x (ConstF t 0.5)) (Sub t x (ConstF t -0.5)) :ruleset mine :name "t-half")
"""


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("EGGPU_PROOF_CACHE_DIR", str(tmp_path / "proofs"))
    return tmp_path / "proofs" / "parsed"


@pytest.fixture
def parses(monkeypatch):
    calls: list[str] = []
    real = rules_loader.parse_rules

    def counted(text, file="<string>"):
        calls.append(file)
        return real(text, file)

    monkeypatch.setattr(rules_loader, "parse_rules", counted)
    return calls


def _same(a, b) -> None:
    assert a.rules == b.rules and a.rulesets == b.rulesets and a.files == b.files
    assert [dict(r.var_sorts) for r in a.rules] == [dict(r.var_sorts) for r in b.rules]
    assert a.program() == b.program()


def test_a_second_load_reads_the_parse_back(cache, parses):
    sources = [("mine.egg", MINE)]
    first = load_sources(sources)
    assert parses == ["mine.egg"] and len(list(cache.glob("*.pickle"))) == 1
    second = load_sources(sources)
    assert parses == ["mine.egg"]  # not parsed again
    _same(first, second)
    assert second.by_name()["t-half"].egglog == first.by_name()["t-half"].egglog  # float bits kept


def test_the_shipped_rules_round_trip(cache, parses):
    from eggpu.optimizer import _sources

    sources = _sources(None, True, None)
    first = load_sources(sources)
    n = len(parses)
    second = load_sources(sources)
    assert len(parses) == n and len(second.rules) == len(first.rules) > 200
    _same(first, second)


def test_edited_text_or_another_label_is_parsed_again(cache, parses):
    load_sources([("mine.egg", MINE)])
    load_sources([("mine.egg", MINE.replace("Const t 2", "Const t 4"))])
    load_sources([("theirs.egg", MINE)])
    assert parses == ["mine.egg", "mine.egg", "theirs.egg"]


def test_files_with_errors_are_not_cached(cache, parses):
    bad = MINE + '(rewrite (Mull t x) x :name "t-typo")\n'
    for _ in range(2):
        with pytest.raises(RuleError, match="t-typo"):
            load_sources([("bad.egg", bad)])
    assert parses == ["bad.egg", "bad.egg"] and not list(cache.glob("*.pickle"))


def _pickled(value) -> bytes:
    return pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)


_PARSE = rules_loader.parse_rules  # before any test counts its calls


def _a_rule(**changes):
    rule = _PARSE(MINE, "x.egg")[0][0]
    return dataclasses.replace(rule, **changes)


class _Boom:
    """Unpickling this would call os.system: a parsed-rule entry must never resolve it."""

    def __reduce__(self):
        return (os.system, ("touch " + str(_Boom.marker),))


MALFORMED = {
    "not a pickle": b"{not json",
    "truncated": _pickled([([], [])])[:-3],
    "empty list": _pickled([]),
    "not a list": _pickled({"files": []}),
    "rule is a list": _pickled([([[1, 2]], [])]),
    "declared not str": _pickled([([], [3])]),
    "bad line": lambda: _pickled([([_a_rule(line="7")], ["mine"])]),
    "bad tree": lambda: _pickled([([_a_rule(lhs=("Mul", 1))], ["mine"])]),
    "bad sorts": lambda: _pickled([([_a_rule(var_sorts={"x": 1})], ["mine"])]),
    "foreign class": _pickled([([], [collections.OrderedDict()])]),
}


@pytest.mark.parametrize("what", sorted(MALFORMED))
def test_a_malformed_entry_is_parsed_as_usual(cache, parses, what):
    content = MALFORMED[what]
    content = content() if callable(content) else content
    assert_malformed_is_ignored(cache, parses, content)


def test_an_entry_that_would_run_code_is_refused_unrun(cache, parses, tmp_path):
    _Boom.marker = tmp_path / "ran"
    assert_malformed_is_ignored(cache, parses, _pickled([([_Boom()], [])]))
    assert not _Boom.marker.exists()


def assert_malformed_is_ignored(cache, parses, content):
    sources = [("mine.egg", MINE)]
    fresh = load_sources(sources)
    entry = next(cache.glob("*.pickle"))
    entry.write_bytes(content)
    again = load_sources(sources)
    assert parses == ["mine.egg", "mine.egg"]
    _same(fresh, again)


def test_a_planted_symlink_entry_is_not_followed(cache, parses, tmp_path):
    sources = [("mine.egg", MINE)]
    load_sources(sources)
    entry = next(cache.glob("*.pickle"))
    elsewhere = tmp_path / "elsewhere.pickle"
    elsewhere.write_bytes(entry.read_bytes())
    entry.unlink()
    os.symlink(elsewhere, entry)
    load_sources(sources)
    assert parses == ["mine.egg", "mine.egg"]  # the symlink was not read
    assert not entry.is_symlink() and elsewhere.read_bytes()  # replaced atomically, the target untouched


def test_only_the_newest_entries_are_kept(cache, parses, monkeypatch):
    monkeypatch.setattr(parsed_rules, "KEEP", 3)
    for k in range(5):
        load_sources([(f"m{k}.egg", MINE)])
    assert len(list(cache.glob("*.pickle"))) == 3
