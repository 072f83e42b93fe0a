"""Whoever can write a cache directory must not get eggpu to run planted code or to write files
outside it: untrusted directories are bypassed, planted entries ignored, symlinks never followed."""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from pathlib import Path

import pytest

import eggpu
import eggpu.language as tl
from eggpu.ir import cachefs
from eggpu.kernels import get
from eggpu.optimizer.proof_cache import ProofCache

EXTS = ("ptx", "ll", "ir", "py")
PLANTED = "// planted by someone else\n"


@pytest.fixture(autouse=True)
def _fresh_warnings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cachefs, "_WARNED", set())


def _kernel():
    return get("vector_add").fn.Kernel[tl.f32](64)


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory):
    """One real compile (and its cache entry) shared by the tests: (ptx, {ext: text}, manifest, stem name)."""
    d = tmp_path_factory.mktemp("reference")
    ck = eggpu.compile(_kernel(), optimize=False, cache=d)
    stem = Path(ck.cache_path)
    files = {ext: stem.with_suffix("." + ext).read_text() for ext in EXTS}
    manifest = json.loads(stem.with_suffix(".json").read_text())
    return ck.ptx, files, manifest, stem.name


def _plant(d: Path, reference, *, ptx: str | None = None) -> Path:
    """Write a self-consistent entry for the reference key into ``d`` (optionally with other PTX)."""
    _, files, manifest, name = reference
    d.mkdir(mode=0o700, exist_ok=True)
    files = dict(files, ptx=ptx if ptx is not None else files["ptx"])
    manifest = dict(manifest, sha256={e: hashlib.sha256(t.encode()).hexdigest() for e, t in files.items()})
    for ext, text in files.items():
        (d / f"{name}.{ext}").write_text(text)
    (d / f"{name}.json").write_text(json.dumps(manifest))
    return d / name


def test_a_planted_entry_in_a_trusted_dir_is_what_the_cache_serves(tmp_path: Path, reference) -> None:
    # the premise of the next tests: a self-consistent entry is served when the directory is trusted
    _plant(tmp_path / "c", reference, ptx=PLANTED)
    ck = eggpu.compile(_kernel(), optimize=False, cache=tmp_path / "c")
    assert ck.report["cache"] == "hit" and ck.ptx == PLANTED


@pytest.mark.parametrize("mode", [0o770, 0o707])
def test_group_or_world_writable_dir_is_not_trusted(tmp_path: Path, reference, mode: int) -> None:
    d = tmp_path / "c"
    _plant(d, reference, ptx=PLANTED)
    os.chmod(d, mode)
    with pytest.warns(cachefs.CacheWarning, match=rf"writable by group or others \(mode {mode:o}\)"):
        ck = eggpu.compile(_kernel(), optimize=False, cache=d)
    assert ck.ptx == reference[0] and ck.report["cache"] == "bypass"
    assert (d / f"{reference[3]}.ptx").read_text() == PLANTED  # nothing written there either


@pytest.mark.parametrize("uid", [4242, 777])
def test_dir_owned_by_someone_else_is_not_trusted(tmp_path: Path, reference, monkeypatch, uid: int) -> None:
    d = tmp_path / "c"
    _plant(d, reference, ptx=PLANTED)
    owner = d.stat().st_uid
    monkeypatch.setattr(cachefs, "_uid", lambda: uid)  # we run as root: pretend to be another user
    with pytest.warns(cachefs.CacheWarning, match=rf"owned by uid {owner}, not by the current user \(uid {uid}\)"):
        ck = eggpu.compile(_kernel(), optimize=False, cache=d)
    assert ck.ptx == reference[0] and ck.report["cache"] == "bypass"


def _warned(fn):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        out = fn()
    return out, [str(x.message) for x in w if issubclass(x.category, cachefs.CacheWarning)]


@pytest.mark.parametrize("ext", ["ptx", "ir"])
def test_entry_file_that_is_a_symlink_is_ignored(tmp_path: Path, reference, ext: str) -> None:
    d = tmp_path / "c"
    stem = _plant(d, reference)
    outside = tmp_path / f"outside.{ext}"
    outside.write_text(PLANTED)
    manifest = json.loads(stem.with_suffix(".json").read_text())
    manifest["sha256"][ext] = hashlib.sha256(PLANTED.encode()).hexdigest()
    stem.with_suffix(".json").write_text(json.dumps(manifest))
    stem.with_suffix("." + ext).unlink()
    stem.with_suffix("." + ext).symlink_to(outside)
    ck, msgs = _warned(lambda: eggpu.compile(_kernel(), optimize=False, cache=d))
    assert ck.report["cache"] == "miss" and ck.ptx == reference[0] and PLANTED not in ck.ir_text
    assert len(msgs) == 1 and f"{stem.name}.{ext} is a symbolic link" in msgs[0]
    assert outside.read_text() == PLANTED  # replaced the link, not written through it
    assert not stem.with_suffix("." + ext).is_symlink()
    assert eggpu.compile(_kernel(), optimize=False, cache=d).report["cache"] == "hit"


def test_entry_file_writable_by_others_or_owned_by_someone_else_is_ignored(tmp_path: Path, reference) -> None:
    d = tmp_path / "c"
    stem = _plant(d, reference, ptx=PLANTED)
    os.chmod(stem.with_suffix(".ptx"), 0o666)
    ck, msgs = _warned(lambda: eggpu.compile(_kernel(), optimize=False, cache=d))
    assert ck.ptx == reference[0] and len(msgs) == 1 and "writable by group or others (mode 666)" in msgs[0]
    stem = _plant(tmp_path / "c2", reference, ptx=PLANTED)
    os.chown(stem.with_suffix(".ir"), 4243, -1)  # as root we can hand a file to another uid
    ck, msgs = _warned(lambda: eggpu.compile(_kernel(), optimize=False, cache=tmp_path / "c2"))
    assert ck.ptx == reference[0] and len(msgs) == 1 and "owned by uid 4243" in msgs[0]


def test_symlinks_planted_at_every_entry_path_are_never_written_through(tmp_path: Path, reference) -> None:
    d = tmp_path / "c"
    d.mkdir(mode=0o700)
    name = reference[3]
    victims = {}
    for ext in (*EXTS, "json", "lock"):
        victim = tmp_path / f"victim.{ext}"
        victim.write_text("precious")
        victims[victim] = "precious"
        (d / f"{name}.{ext}").symlink_to(victim)
    ck, msgs = _warned(lambda: eggpu.compile(_kernel(), optimize=False, cache=d))
    assert ck.ptx == reference[0]
    assert any("lock file" in m and "is a symbolic link" in m for m in msgs)
    assert all(v.read_text() == "precious" for v in victims)
    for ext in (*EXTS, "json"):
        assert not (d / f"{name}.{ext}").is_symlink()
    assert eggpu.compile(_kernel(), optimize=False, cache=d).report["cache"] == "hit"


def test_dangling_symlinks_never_create_files_outside(tmp_path: Path, reference) -> None:
    d = tmp_path / "c"
    d.mkdir(mode=0o700)
    name = reference[3]
    for ext in (*EXTS, "json", "lock"):
        (d / f"{name}.{ext}").symlink_to(tmp_path / f"created.{ext}")
    ck = eggpu.compile(_kernel(), optimize=False, cache=d)
    assert ck.ptx == reference[0]
    assert not list(tmp_path.glob("created.*"))


VERDICT = {"rule": "r", "location": "mine.egg:1", "ruleset": "exact", "seconds": 0.1, "note": "",
           "results": [{"key": "f32", "status": "proved", "cex": None, "detail": "", "seconds": 0.1}]}


def test_proof_cache_tmp_and_lock_symlinks_are_not_followed(tmp_path: Path) -> None:
    d = tmp_path / "proofs"
    d.mkdir(mode=0o700)
    victim = tmp_path / "victim"
    victim.write_text("precious")
    (d / f"proofs.{os.getpid()}.tmp").symlink_to(victim)  # the old fixed temp name
    (d / "proofs.json.lock").symlink_to(tmp_path / "created-by-lock")
    ProofCache(d).put("k1", VERDICT)
    assert victim.read_text() == "precious" and not (tmp_path / "created-by-lock").exists()
    assert not (d / "proofs.json").is_symlink()
    assert ProofCache(d).get("k1") == VERDICT


def test_proof_cache_file_that_is_a_symlink_is_neither_read_nor_written_through(tmp_path: Path) -> None:
    d = tmp_path / "proofs"
    d.mkdir(mode=0o700)
    planted = tmp_path / "planted.json"
    planted.write_text(json.dumps({"k2": VERDICT}))
    (d / "proofs.json").symlink_to(planted)
    got, msgs = _warned(lambda: ProofCache(d).get("k2"))
    assert got is None and len(msgs) == 1 and "proofs.json is a symbolic link" in msgs[0]
    ProofCache(d).put("k3", VERDICT)
    assert json.loads(planted.read_text()) == {"k2": VERDICT}
    assert ProofCache(d).get("k3") == VERDICT and ProofCache(d).get("k2") is None


@pytest.mark.parametrize("mode", [0o775, 0o777])
def test_proof_cache_in_an_untrusted_dir_is_ignored(tmp_path: Path, mode: int) -> None:
    d = tmp_path / "proofs"
    d.mkdir()
    (d / "proofs.json").write_text(json.dumps({"k": VERDICT}))
    os.chmod(d, mode)
    got, msgs = _warned(lambda: ProofCache(d).get("k"))
    assert got is None and len(msgs) == 1 and f"mode {mode:o}" in msgs[0]
    c = ProofCache(d)
    c.put("new", VERDICT)
    assert c.get("new") == VERDICT  # kept in memory for this run
    assert json.loads((d / "proofs.json").read_text()) == {"k": VERDICT}  # nothing written


def test_proof_cache_owned_by_someone_else_is_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    d = tmp_path / "proofs"
    d.mkdir(mode=0o700)
    (d / "proofs.json").write_text(json.dumps({"k": VERDICT}))
    monkeypatch.setattr(cachefs, "_uid", lambda: 31337)
    got, msgs = _warned(lambda: ProofCache(d).get("k"))
    assert got is None and len(msgs) == 1 and "(uid 31337)" in msgs[0]


@pytest.mark.parametrize("raw, problem", ids=["non-utf8", "truncated", "list", "deep", "bad-entry", "bad-entries"],
                         argvalues=[
    (b"\xff\xfe{}", "not valid JSON"),
    (b'{"k": ', "not valid JSON"),
    (b"[1, 2]", "JSON list, not an object"),
    (b"[" * 100000, "not valid JSON"),
    (json.dumps({"k": 5, "ok": VERDICT}).encode(), "1 malformed entry"),
    (json.dumps({"k": {**VERDICT, "results": [{"key": "f32"}]}, "j": [], "ok": VERDICT}).encode(),
     "2 malformed entries"),
])
def test_proof_cache_malformed_content_is_ignored(tmp_path: Path, raw: bytes, problem: str) -> None:
    d = tmp_path / "proofs"
    d.mkdir(mode=0o700)
    (d / "proofs.json").write_bytes(raw)
    c = ProofCache(d)
    got, msgs = _warned(lambda: c.get("k"))
    assert got is None and len(msgs) == 1 and problem in msgs[0]
    assert c.get("ok") == (VERDICT if b'"ok"' in raw else None)
    c.put("k", VERDICT)  # the file is rewritten whole and valid
    assert ProofCache(d).get("k") == VERDICT


def test_proof_cache_that_cannot_be_created_keeps_verdicts_in_memory(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "file").write_text("x")
    monkeypatch.setenv("EGGPU_PROOF_CACHE_DIR", str(tmp_path / "file" / "proofs"))
    c = ProofCache()
    got, msgs = _warned(lambda: c.put("k", VERDICT))
    assert len(msgs) == 1 and "cannot be created: Not a directory" in msgs[0]
    assert c.get("k") == VERDICT and (tmp_path / "file").read_text() == "x"


# ---------------------------------------------------------------------- folders eggpu makes in the cache


def _rules_for_marker():
    from eggpu.optimizer.rules_loader import _accepted_digest, load_sources

    loaded = load_sources([("m.egg", '(rewrite (Add t a b) (Add t b a) :name "t-marker-comm")')],
                          validate_egglog=False)
    return loaded, _accepted_digest(loaded.program())


def test_accepted_marker_never_follows_a_planted_dangling_symlink(tmp_path: Path, monkeypatch) -> None:
    from eggpu.optimizer.rules_loader import _validate_with_egglog

    proofs = tmp_path / "proofs"
    monkeypatch.setenv("EGGPU_PROOF_CACHE_DIR", str(proofs))
    loaded, digest = _rules_for_marker()
    (proofs / "egglog-accepted").mkdir(mode=0o700, parents=True)
    os.chmod(proofs, 0o700)
    outside = tmp_path / "outside" / "created-by-eggpu"
    outside.parent.mkdir()
    (proofs / "egglog-accepted" / digest).symlink_to(outside)  # dangling: touch() used to create it
    _validate_with_egglog(loaded)
    assert not outside.exists()
    marker = proofs / "egglog-accepted" / digest
    assert not marker.is_symlink() and marker.is_file()  # replaced by a real marker
    assert ProofCache().has_marker(digest)


def test_a_planted_symlink_is_no_accepted_marker(tmp_path: Path, monkeypatch) -> None:
    proofs = tmp_path / "proofs"
    monkeypatch.setenv("EGGPU_PROOF_CACHE_DIR", str(proofs))
    _, digest = _rules_for_marker()
    (proofs / "egglog-accepted").mkdir(mode=0o700, parents=True)
    os.chmod(proofs, 0o700)
    (tmp_path / "target").write_text("")
    (proofs / "egglog-accepted" / digest).symlink_to(tmp_path / "target")
    assert not ProofCache().has_marker(digest)


def test_marker_folder_that_is_a_symlink_is_not_written_through(tmp_path: Path, monkeypatch) -> None:
    from eggpu.optimizer.rules_loader import _validate_with_egglog

    proofs = tmp_path / "proofs"
    proofs.mkdir(mode=0o700)
    monkeypatch.setenv("EGGPU_PROOF_CACHE_DIR", str(proofs))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    (proofs / "egglog-accepted").symlink_to(elsewhere)
    loaded, digest = _rules_for_marker()
    _validate_with_egglog(loaded)  # still validates, just without the shortcut
    assert list(elsewhere.iterdir()) == []
    assert not ProofCache().has_marker(digest)


def test_proof_folder_planted_as_a_symlink_in_the_cache_dir_is_refused(tmp_path: Path, monkeypatch) -> None:
    """$EGGPU_CACHE_DIR/proofs is eggpu's folder: a symlink there could point at any folder of the
    user's, which eggpu would fill with proofs.json, its lock and markers."""
    root = tmp_path / "cache"
    root.mkdir(mode=0o700)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    (root / "proofs").symlink_to(elsewhere)
    monkeypatch.delenv("EGGPU_PROOF_CACHE_DIR", raising=False)
    monkeypatch.setenv("EGGPU_CACHE_DIR", str(root))
    c = ProofCache()
    _, msgs = _warned(lambda: c.put("k", VERDICT))
    assert len(msgs) == 1 and "is a symbolic link" in msgs[0]
    assert list(elsewhere.iterdir()) == [] and c.get("k") == VERDICT  # kept in memory only


def test_proof_folder_under_an_untrusted_cache_dir_is_refused(tmp_path: Path, monkeypatch) -> None:
    root = tmp_path / "cache"
    (root / "proofs").mkdir(parents=True, mode=0o700)
    os.chmod(root, 0o777)
    monkeypatch.delenv("EGGPU_PROOF_CACHE_DIR", raising=False)
    monkeypatch.setenv("EGGPU_CACHE_DIR", str(root))
    c = ProofCache()
    _, msgs = _warned(lambda: c.put("k", VERDICT))
    assert len(msgs) == 1 and "mode 777" in msgs[0]
    assert list((root / "proofs").iterdir()) == []


def test_ensure_trusted_dir_under_a_root(tmp_path: Path) -> None:
    root = tmp_path / "root"
    cachefs.ensure_trusted_dir(root / "a" / "b", under=root)
    assert (root / "a" / "b").is_dir()
    (root / "file").write_text("")
    with pytest.raises(cachefs.CacheUnavailable, match="a file is in the way"):
        cachefs.ensure_trusted_dir(root / "file", under=root)
    with pytest.raises(cachefs.CacheUnavailable, match="not inside the cache directory"):
        cachefs.ensure_trusted_dir(tmp_path / "other", under=root)
    os.chmod(root / "a", 0o770)
    with pytest.raises(cachefs.CacheUnavailable, match="mode 770"):
        cachefs.ensure_trusted_dir(root / "a" / "b", under=root)


@pytest.mark.parametrize("name", ["../escaped", "a/b", "/abs/k", ".."])
def test_no_kernel_name_places_a_cache_file_outside_the_directory(tmp_path: Path, name: str) -> None:
    from eggpu.cache import Cache

    d = tmp_path / "inner" / "cache"
    c = Cache(d)
    entry = c.put(name, "ab" * 32, {"ptx": "p", "ll": "l", "ir": "i", "py": "s"}, {})
    assert entry is not None and entry.stem.parent == d
    assert sorted(p.parent for p in tmp_path.rglob("*") if p.is_file()) == [d] * 5
    assert c.get(name, "ab" * 32).files["ptx"] == "p"
