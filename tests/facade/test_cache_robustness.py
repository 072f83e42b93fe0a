"""Every failure on a cache path degrades to compiling without the cache plus one clear warning:
an unusable directory, no writable home, malformed or foreign manifests of any shape."""

from __future__ import annotations

import json
import shutil
import tempfile
import warnings
from pathlib import Path

import pytest

import eggpu
import eggpu.language as tl
from eggpu.cache import Cache
from eggpu.ir import cachefs
from eggpu.kernels import get


@pytest.fixture(autouse=True)
def _fresh_warnings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cachefs, "_WARNED", set())


def _kernel():
    return get("vector_add").fn.Kernel[tl.f32](32)


@pytest.fixture(scope="module")
def entry(tmp_path_factory: pytest.TempPathFactory):
    """A real compile and the directory holding its cache entry: (compiled kernel, directory)."""
    d = tmp_path_factory.mktemp("entry")
    ck = eggpu.compile(_kernel(), optimize=False, cache=d)
    return ck, d


def _compile_warned(**kw):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        ck = eggpu.compile(_kernel(), optimize=False, **kw)
    return ck, [str(x.message) for x in w if issubclass(x.category, cachefs.CacheWarning)]


def test_cache_dir_naming_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, entry) -> None:
    f = tmp_path / "not-a-dir"
    f.write_text("x")
    monkeypatch.setenv("EGGPU_CACHE_DIR", str(f))
    ck, msgs = _compile_warned()
    assert ck.ptx == entry[0].ptx and ck.report["cache"] == "bypass"
    assert msgs == [f"eggpu: compiling without the kernel cache: cache directory {f} cannot be used: a file is in "
                    f"the way"]
    assert f.read_text() == "x"
    again, msgs = _compile_warned()  # one warning per directory, not one per compile
    assert again.ptx == entry[0].ptx and msgs == []


def test_cache_dir_below_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, entry) -> None:
    d = tmp_path / "file" / "cache"
    (tmp_path / "file").write_text("x")
    monkeypatch.setenv("EGGPU_CACHE_DIR", str(d))
    ck, msgs = _compile_warned()
    assert ck.ptx == entry[0].ptx
    assert len(msgs) == 1 and f"cache directory {d} cannot be created: Not a directory" in msgs[0]


def test_unwritable_cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, entry) -> None:
    def refuse(*a, **k):  # tests run as root, for whom permission bits do not stop writes
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    ck, msgs = _compile_warned(cache=tmp_path / "c")
    assert ck.ptx == entry[0].ptx and ck.report["cache"] == "bypass"
    assert len(msgs) == 1 and "cannot write the kernel cache" in msgs[0] and "Permission denied" in msgs[0]
    assert not list((tmp_path / "c").glob("*.json"))


def test_unwritable_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, entry) -> None:
    (tmp_path / "home").write_text("a file, so nothing can be created below it")
    monkeypatch.delenv("EGGPU_CACHE_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    ck, msgs = _compile_warned()
    assert ck.ptx == entry[0].ptx
    assert len(msgs) == 1 and str(tmp_path / "home") in msgs[0] and "cannot be created" in msgs[0]


def test_no_home_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, entry) -> None:
    import platformdirs

    monkeypatch.chdir(tmp_path)  # (before the fix the cache went to ./~/.cache/eggpu)
    monkeypatch.delenv("EGGPU_CACHE_DIR", raising=False)
    monkeypatch.setattr(platformdirs, "user_cache_dir", lambda *a, **k: "~/.cache/eggpu")  # "~" unexpanded
    ck, msgs = _compile_warned()
    assert ck.ptx == entry[0].ptx
    assert len(msgs) == 1 and "cannot determine the user cache directory" in msgs[0]
    assert not (tmp_path / "~").exists()


def _valid_manifest(entry) -> dict:
    return json.loads(Path(entry[0].cache_path).with_suffix(".json").read_text())


MUTATIONS = {
    "non-utf8": (lambda m: b"\xff\xfe\x80", "not valid JSON"),
    "empty": (lambda m: b"", "not valid JSON"),
    "truncated": (lambda m: json.dumps(m).encode()[:40], "not valid JSON"),
    "deep": (lambda m: b"[" * 100000, "not valid JSON"),
    "list": (lambda m: b"[]", "JSON list, not an object"),
    "number": (lambda m: b"3", "JSON int, not an object"),
    "null": (lambda m: b"null", "JSON NoneType, not an object"),
    "foreign key": (lambda m: {**m, "key": "0" * 64}, "another key or kernel"),
    "foreign name": (lambda m: {**m, "name": "softmax_forward"}, "another key or kernel"),
    "no sha256": (lambda m: {k: v for k, v in m.items() if k != "sha256"}, "sha256 must map"),
    "sha256 list": (lambda m: {**m, "sha256": ["x"]}, "sha256 must map"),
    "sha256 missing ext": (lambda m: {**m, "sha256": {k: v for k, v in m["sha256"].items() if k != "ir"}},
                           "sha256 must map"),
    "sha256 not hex": (lambda m: {**m, "sha256": {**m["sha256"], "ptx": 5}}, "sha256 must map"),
    "no report": (lambda m: {k: v for k, v in m.items() if k != "report"}, "no report object"),
    "report list": (lambda m: {**m, "report": []}, "no report object"),
    "no params": (lambda m: {**m, "report": {k: v for k, v in m["report"].items() if k != "params"}},
                  "KeyError: 'params'"),
    "params number": (lambda m: {**m, "report": {**m["report"], "params": 5}}, "TypeError"),
    "params short": (lambda m: {**m, "report": {**m["report"], "params": [["x"]]}}, "ValueError"),
    "params bad type": (lambda m: {**m, "report": {**m["report"], "params": [["x", "ptr<zz>"]]}}, "zz"),
    "entry point": (lambda m: {**m, "report": {**m["report"], "entry_point": "evil"}}, "entry point 'evil'"),
    "threads": (lambda m: {**m, "report": {**m["report"], "num_threads": "128"}}, "num_threads '128'"),
    "assumptions": (lambda m: {**m, "report": {**m["report"], "assumptions": [1]}}, "assumptions"),
}


@pytest.mark.parametrize("case", sorted(MUTATIONS))
def test_malformed_manifest_is_ignored_with_one_warning(tmp_path: Path, entry, case: str) -> None:
    ck, src = entry
    d = tmp_path / "c"
    shutil.copytree(src, d)
    d.chmod(0o700)
    stem = d / Path(ck.cache_path).name
    mutate, problem = MUTATIONS[case]
    out = mutate(_valid_manifest(entry))
    stem.with_suffix(".json").write_bytes(out if isinstance(out, bytes) else json.dumps(out).encode())
    key = stem.name.rsplit("_", 1)[1]
    from eggpu.pipeline import _cached
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        assert _cached(Cache(d), _kernel(), ck.options, key) is None
    msgs = [str(x.message) for x in w if issubclass(x.category, cachefs.CacheWarning)]
    assert len(msgs) == 1 and problem in msgs[0] and "ignoring cache entry" in msgs[0]


def test_a_malformed_entry_is_recompiled_over(tmp_path: Path, entry) -> None:
    ck, src = entry
    d = tmp_path / "c"
    shutil.copytree(src, d)
    d.chmod(0o700)
    Path(d / Path(ck.cache_path).name).with_suffix(".json").write_bytes(b"\x00\xff garbage")
    again, msgs = _compile_warned(cache=d)
    assert again.report["cache"] == "miss" and again.ptx == ck.ptx and len(msgs) == 1
    assert eggpu.compile(_kernel(), optimize=False, cache=d).report["cache"] == "hit"


@pytest.mark.parametrize("ext", ["ptx", "py"])
def test_non_utf8_artefact_is_ignored(tmp_path: Path, entry, ext: str) -> None:
    ck, src = entry
    d = tmp_path / "c"
    shutil.copytree(src, d)
    d.chmod(0o700)
    stem = d / Path(ck.cache_path).name
    stem.with_suffix("." + ext).write_bytes(b"\xff\xfe bytes")
    m = _valid_manifest(entry)
    import hashlib

    m["sha256"][ext] = hashlib.sha256(b"\xff\xfe bytes").hexdigest()
    stem.with_suffix(".json").write_text(json.dumps(m))
    again, msgs = _compile_warned(cache=d)
    assert again.ptx == ck.ptx and len(msgs) == 1 and f"{stem.name}.{ext} is not UTF-8 text" in msgs[0]
