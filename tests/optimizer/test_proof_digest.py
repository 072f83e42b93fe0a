"""rules/proofs.digest: the compile path learns that a shipped rule is proved without parsing
rules/proofs.json, and the digest is trusted only when it was made from those very bytes.

A stale, corrupt or foreign digest is ignored with a warning (the JSON file answers as before);
a missing one silently; a key the digest lacks is not served from the shipped file at all.
"""

from __future__ import annotations

import json
import shutil
import warnings

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eggpu.ir.cachefs import CacheWarning
from eggpu.ir.errors import VerificationError
from eggpu.ir.hashing import sha256
from eggpu.optimizer import proof_digest, shipped_proofs
from eggpu.optimizer import rule_verifier as rv
from eggpu.optimizer.proof_cache import ProofCache
from eggpu.optimizer.rule_verdicts import ProvedVerdict, RuleVerdict
from eggpu.optimizer.rules_loader import load_rules

SHIPPED = load_rules(env=False).rules


@pytest.fixture
def fresh_shipped():
    shipped_proofs._reset()
    yield
    shipped_proofs._reset()


@pytest.fixture
def copy(tmp_path, monkeypatch, fresh_shipped):
    """The shipped proofs.json and its digest copied to tmp_path, and shipped_proofs pointed there."""
    src = shipped_proofs.path()
    shutil.copy(src, tmp_path / "proofs.json")
    shutil.copy(src.with_name("proofs.digest"), tmp_path / "proofs.digest")
    monkeypatch.setattr(shipped_proofs, "path", lambda: tmp_path / "proofs.json")
    return tmp_path


def _warnings(fn):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        out = fn()
    return out, [str(x.message) for x in w if issubclass(x.category, CacheWarning)]


def test_the_shipped_digest_is_current(fresh_shipped):
    raw = shipped_proofs.path().read_bytes()
    got = proof_digest.decode(shipped_proofs.digest_path().read_bytes())
    assert got is not None, "rules/proofs.digest is corrupt; regenerate: python -m eggpu.optimizer.shipped_proofs --digest"
    source, entries, accepted = got
    assert source == sha256(raw).digest(), ("rules/proofs.digest was made from another rules/proofs.json; "
                                            "regenerate: python -m eggpu.optimizer.shipped_proofs --digest")
    doc = json.loads(raw)
    assert {k.hex() for k in entries} == set(doc["entries"])
    assert accepted == frozenset(doc.get("egglog_accepted", []))
    for k, ok in entries.items():
        assert ok == RuleVerdict.from_json(doc["entries"][k.hex()]).usable


def test_a_compile_s_rule_lookups_do_not_parse_the_json_file(tmp_path, fresh_shipped):
    verdicts = rv.verify_rules(SHIPPED, cache=ProofCache(tmp_path / "p"), workers=1)
    assert shipped_proofs._loaded is None  # proofs.json was hashed, never parsed
    assert all(isinstance(v, ProvedVerdict) and v.usable and v.status == rv.PROVED and v.cached
               for v in verdicts.values())
    assert shipped_proofs._loaded is None
    # the per-dtype results load on demand and are exactly the file's
    r = SHIPPED[3]
    v = verdicts[r.name]
    full = RuleVerdict.from_json(shipped_proofs.get(rv._cache_key(r, 0)))
    full.cached, full.rule, full.location = True, r.name, r.location
    assert v.results == full.results and v.seconds == full.seconds and v.note == full.note
    assert v == full and full == v and v.summary() == full.summary()
    import copy
    import pickle

    assert pickle.loads(pickle.dumps(v)) == full and copy.copy(v) == full  # as a plain RuleVerdict


def test_a_stale_digest_is_ignored_with_a_warning(copy):
    text = (copy / "proofs.json").read_text()
    (copy / "proofs.json").write_text(text.replace('"entries": {', '"entries":  {', 1))  # same verdicts, other bytes
    got, msgs = _warnings(lambda: shipped_proofs.proved(rv._cache_key(SHIPPED[0], 0)))
    assert got is None and len(msgs) == 1 and "stale" in msgs[0] and "proofs.digest" in msgs[0]
    v = rv.verify_rules([SHIPPED[0]], cache=ProofCache(copy / "p"), workers=1)[SHIPPED[0].name]
    assert v.cached and v.usable and type(v) is RuleVerdict  # answered by the JSON file


@pytest.mark.parametrize("damage", ["truncate", "flip", "magic", "empty"])
def test_a_corrupt_or_foreign_digest_is_ignored_with_a_warning(copy, damage):
    blob = bytearray((copy / "proofs.digest").read_bytes())
    if damage == "truncate":
        blob = blob[:-7]
    elif damage == "flip":
        blob[100] ^= 1
    elif damage == "magic":
        blob[:8] = b"NOTOURS!"
    else:
        blob = bytearray()
    (copy / "proofs.digest").write_bytes(bytes(blob))
    got, msgs = _warnings(lambda: shipped_proofs.proved(rv._cache_key(SHIPPED[0], 0)))
    assert got is None and len(msgs) == 1 and "corrupt or not an eggpu proof digest" in msgs[0]
    assert shipped_proofs.egglog_accepted("0" * 64) is False
    v = rv.verify_rules([SHIPPED[0]], cache=ProofCache(copy / "p"), workers=1)[SHIPPED[0].name]
    assert v.cached and v.usable and type(v) is RuleVerdict


def test_a_missing_digest_falls_back_silently(copy):
    (copy / "proofs.digest").unlink()
    got, msgs = _warnings(lambda: shipped_proofs.proved(rv._cache_key(SHIPPED[0], 0)))
    assert got is None and msgs == []
    assert rv.verify_rules([SHIPPED[0]], cache=ProofCache(copy / "p"), workers=1)[SHIPPED[0].name].usable


def test_a_key_the_digest_lacks_is_proved_not_looked_up(copy):
    assert shipped_proofs.proved("0" * 64) is False and shipped_proofs.proved("not hex") is False
    assert shipped_proofs._loaded is None


def test_an_entry_that_is_not_fully_proved_is_read_from_the_file(copy):
    """The digest only vouches for fully proved entries; for another it defers to the JSON file,
    whose verdict (here: refuted) is what the verifier returns."""
    doc = json.loads((copy / "proofs.json").read_text())
    key = rv._cache_key(SHIPPED[0], 0)
    doc["entries"][key]["results"][0]["status"] = rv.REFUTED
    (copy / "proofs.json").write_text(json.dumps(doc))
    shipped_proofs.write_digest()
    assert shipped_proofs.proved(key) is None
    v = rv.verify_rules([SHIPPED[0]], cache=ProofCache(copy / "p"), workers=1)[SHIPPED[0].name]
    assert v.refuted and not v.usable


def test_a_lazy_verdict_that_turns_out_unproved_raises():
    refuted = RuleVerdict("r", "f.egg:1", "exact", [rv.DtypeResult("i32", rv.REFUTED)])
    v = ProvedVerdict("r", "f.egg:1", "exact", lambda: refuted)
    assert v.usable  # what the digest said, before loading
    with pytest.raises(VerificationError, match="f.egg:1: rule 'r': the proof digest says proved"):
        _ = v.results


def test_write_digest_refuses_a_file_that_is_not_a_proofs_file(tmp_path):
    bad = tmp_path / "proofs.json"
    bad.write_text('{"format": 7}')
    with pytest.raises(ValueError, match="proofs.json is not a valid eggpu proofs file"):
        shipped_proofs.write_digest(source=bad)


KEYS = st.binary(min_size=32, max_size=32).map(bytes.hex)


@given(st.binary(max_size=64), st.dictionaries(KEYS, st.booleans(), max_size=20), st.lists(KEYS, max_size=3))
def test_encode_decode_round_trip(source, entries, accepted):
    blob = proof_digest.encode(source, entries, accepted)
    got = proof_digest.decode(blob)
    assert got == (sha256(source).digest(), {bytes.fromhex(k): v for k, v in entries.items()}, frozenset(accepted))
    for cut in (1, len(blob) // 2, len(blob) - 1):
        assert proof_digest.decode(blob[:cut]) is None


@pytest.mark.parametrize("key", ["ab", "AB" * 32, "zz" * 32, " " + "ab" * 31 + "a"])
def test_encode_refuses_keys_that_are_not_sha256_hex(key):
    with pytest.raises(ValueError, match="not a sha256 hex digest"):
        proof_digest.encode(b"", {key: True}, [])
