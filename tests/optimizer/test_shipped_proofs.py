"""The shipped rules' verdicts ship with the package (rules/proofs.json) and are never stale.

A fresh install must not prove ~270 rules before its first compile, whichever z3 release it
resolved, but a verdict may only answer for the exact rule text and semantics it was proved
under: every entry is keyed by both (the z3 that proved them is recorded, not keyed: a proof is a
fact about the formula), so an edited rule is proved again; a corrupt or foreign file is ignored
with a warning.
The file must cover every shipped rule (regenerate with ``python -m eggpu.optimizer.shipped_proofs``),
and a sample of its verdicts is re-proved from scratch on every run (all of them under -m slow).
"""

from __future__ import annotations

import json
import warnings

import pytest

from eggpu.ir.cachefs import CacheWarning
from eggpu.optimizer import rule_verifier as rv
from eggpu.optimizer import shipped_proofs
from eggpu.optimizer.proof_cache import ProofCache
from eggpu.optimizer.rules_loader import load_rules, parse_rule

SHIPPED = load_rules(env=False).rules
REGENERATE = "regenerate it: python -m eggpu.optimizer.shipped_proofs"


@pytest.fixture
def fresh_shipped():
    shipped_proofs._reset()
    yield
    shipped_proofs._reset()


def test_every_shipped_rule_has_a_current_fully_proved_entry(fresh_shipped):
    entries = shipped_proofs.entries()
    missing = [r.name for r in SHIPPED if rv._cache_key(r, 0) not in entries]
    assert not missing, f"rules/proofs.json lacks (or has stale entries for) {missing}; {REGENERATE}"
    for r in SHIPPED:
        v = rv.RuleVerdict.from_json(entries[rv._cache_key(r, 0)])
        assert v.results and all(x.status == rv.PROVED for x in v.results), (r.name, v.summary())


def test_a_fresh_proof_cache_proves_nothing_for_the_shipped_rules(tmp_path, fresh_shipped):
    cache = ProofCache(tmp_path / "proofs")
    verdicts = rv.verify_rules(SHIPPED, cache=cache, workers=1)
    assert all(v.cached for v in verdicts.values())
    assert len(cache) == 0  # shipped verdicts are not copied into the user cache


def test_an_edited_shipped_rule_is_proved_again(tmp_path, fresh_shipped):
    original = next(r for r in SHIPPED if r.name == "mul-pow2-scalar")
    edited = parse_rule(original.egglog.replace("(> c 1)", "(> c 2)"))
    assert edited.egglog != original.egglog
    v = rv.verify_rules([edited], cache=ProofCache(tmp_path / "p"), workers=1)[edited.name]
    assert not v.cached and v.usable
    # and an edit that makes it wrong is refuted, not served the shipped "proved"
    wrong = parse_rule(original.egglog.replace("(Shl t x (Const t k))", "(Shl t x (Const t c))"))
    w = rv.verify_rules([wrong], cache=ProofCache(tmp_path / "q"), workers=1)[wrong.name]
    assert not w.cached and w.refuted


@pytest.mark.parametrize("content", [b"\xff\xfe not json", b"[1, 2]", b'{"format": 99, "entries": {}}',
                                     b'{"format": 1, "entries": {"k": {"rule": 3}}}'])
def test_a_corrupt_or_foreign_file_is_ignored_with_a_warning(tmp_path, monkeypatch, fresh_shipped, content):
    f = tmp_path / "proofs.json"
    f.write_bytes(content)
    monkeypatch.setattr(shipped_proofs, "path", lambda: f)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        assert shipped_proofs.entries() == {}
    assert any(issubclass(x.category, CacheWarning) and "shipped rule proofs" in str(x.message) for x in w)
    rule = SHIPPED[0]
    v = rv.verify_rules([rule], cache=ProofCache(tmp_path / "p"), workers=1)[rule.name]
    assert not v.cached and v.usable  # proved for real


def test_the_file_is_keyed_by_semantics_and_names_the_solver_that_proved_it(fresh_shipped):
    from eggpu.optimizer import z3ops

    doc = json.loads(shipped_proofs.path().read_text())
    assert doc["semantics"] == z3ops.SEMANTICS_VERSION, REGENERATE
    assert isinstance(doc["z3"], str) and doc["z3"][0].isdigit()  # provenance, not part of the keys


def test_another_z3_release_proves_nothing_for_the_shipped_rules(tmp_path, monkeypatch, fresh_shipped):
    """An install that resolves a newer (or older) z3-solver than the one proofs.json was made
    with still has every shipped rule proved: its first compile proves nothing (it took minutes
    when the keys held the z3 version)."""
    from eggpu.optimizer import proof_versions

    doc = json.loads(shipped_proofs.path().read_text())
    monkeypatch.setattr(proof_versions, "z3_version", lambda: doc["z3"] + ".post-release")
    proved: list[str] = []
    real = rv._prove_all
    monkeypatch.setattr(rv, "_prove_all", lambda todo, *a: proved.extend(r.name for r in todo) or real(todo, *a))
    verdicts = rv.verify_rules(SHIPPED, cache=ProofCache(tmp_path / "proofs"), workers=1)
    assert proved == []
    assert all(v.cached and v.usable for v in verdicts.values())


def _reproved(rules):
    fresh = rv.verify_rules(rules, use_cache=False, timeout_ms=30000)
    for r in rules:
        v = fresh[r.name]
        assert v.usable, f"{r.location}: {r.name} shipped as proved, re-proof says {v.summary()}"


def test_a_sample_of_shipped_verdicts_is_reproved_from_scratch():
    _reproved(SHIPPED[::25])


@pytest.mark.slow
def test_every_shipped_verdict_is_reproved_from_scratch():
    _reproved(SHIPPED)


def test_update_keeps_current_entries_and_proves_only_what_changed(tmp_path, monkeypatch, fresh_shipped):
    """``--update`` proves only rules whose key the file lacks and drops entries no rule has."""
    current = shipped_proofs.entries()
    dropped = rv._cache_key(SHIPPED[0], 0)
    stale = {k: v for k, v in current.items() if k != dropped}
    stale["0" * 64] = next(iter(current.values()))  # an entry no shipped rule has
    src = tmp_path / "old.json"
    src.write_text(json.dumps({"format": shipped_proofs.FORMAT, "semantics": "2", "z3": "x", "entries": stale}))
    monkeypatch.setattr(shipped_proofs, "path", lambda: src)
    shipped_proofs._reset()
    proved: list[str] = []
    real = rv.verify_rules

    def spy(rules, **kw):
        proved.extend(r.name for r in rules)
        return real(rules, **kw)

    monkeypatch.setattr(rv, "verify_rules", spy)
    out = tmp_path / "new.json"
    assert shipped_proofs.generate(out, timeout_ms=0, progress=False, update=True) == 0
    assert proved == [SHIPPED[0].name]
    new = json.loads(out.read_text())["entries"]
    assert set(new) == set(current)
    assert all(new[k] == current[k] for k in current if k != dropped)  # kept verbatim

    def statuses(entry):
        return [(x["key"], x["status"]) for x in entry["results"]]

    assert statuses(new[dropped]) == statuses(current[dropped])  # the re-proved one: same verdicts


# ---------------------------------------------------------------------- egglog's acceptance of the shipped program


def _installed_egglog() -> str:
    from importlib.metadata import version

    from eggpu.ir.versions import version_of

    assert version_of("egglog") == version("egglog")  # what the digest uses, without importlib.metadata
    return version("egglog")


def test_the_shipped_program_digest_is_current(fresh_shipped):
    from eggpu.optimizer.rules_loader import _accepted_digest

    doc = json.loads(shipped_proofs.path().read_bytes())
    if doc.get("egglog") != _installed_egglog():
        pytest.skip(f"rules/proofs.json was generated with egglog {doc.get('egglog')}, this is {_installed_egglog()}")
    digest = _accepted_digest(load_rules(env=False).program())
    assert shipped_proofs.egglog_accepted(digest), f"the egglog_accepted digest is stale; {REGENERATE} --update"
    assert not shipped_proofs.egglog_accepted("0" * 64)


def test_a_fresh_cache_does_not_run_egglog_on_the_shipped_rules_but_does_on_extra_ones(tmp_path, monkeypatch,
                                                                                          fresh_shipped):
    """The shipped program was checked by egglog at build time; with one more rule file the
    program differs and egglog checks it (and a rule egglog rejects is still reported)."""
    from eggpu.optimizer import rules_loader
    from eggpu.optimizer.rules_loader import load_sources

    doc = json.loads(shipped_proofs.path().read_bytes())
    if doc.get("egglog") != _installed_egglog():
        pytest.skip("rules/proofs.json was generated with another egglog")
    monkeypatch.setenv("EGGPU_PROOF_CACHE_DIR", str(tmp_path / "proofs"))  # no egglog-accepted markers
    runs = []
    real = rules_loader._egglog_run
    monkeypatch.setattr(rules_loader, "_egglog_run", lambda text, label: runs.append(label) or real(text, label))
    shipped = [(str(p), p.read_text()) for p in sorted(shipped_proofs.path().parent.glob("*.egg"))]
    load_sources(shipped)
    assert runs == []
    extra = ('(rewrite (Mul t x (Const t 3)) (Add t x (Add t x x)) :when ((IsInt t)) :name "t-mul3")\n')
    load_sources([*shipped, ("mine.egg", extra)])
    assert runs == ["<rules>"]
    bad = '(rewrite (Mul t x (Const t 3)) (Add t x "three") :when ((IsInt t)) :name "t-bad")\n'
    with pytest.raises(Exception, match="t-bad"):
        load_sources([*shipped, ("bad.egg", bad)])
