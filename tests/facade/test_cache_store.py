"""The on-disk cache store: atomic entries, corruption detection, locking."""

from __future__ import annotations

import json
import multiprocessing as mp
import re
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from eggpu.cache import Cache, cache_key

FILES = {"ptx": ".version 7.8\n// ptx", "ll": "; llvm", "ir": "kernel k() grid=1 {\n}\n", "py": "def k(): pass\n"}


def test_key_is_canonical_and_sensitive() -> None:
    a = cache_key({"x": 1, "y": [1, 2]})
    assert a == cache_key({"y": [1, 2], "x": 1})
    assert a != cache_key({"x": 2, "y": [1, 2]})
    assert len(a) == 64


def test_put_then_get_round_trips(tmp_path: Path) -> None:
    c = Cache(tmp_path)
    c.put("k", "abc", FILES, {"cost": 3})
    e = c.get("k", "abc")
    assert e is not None and e.files == FILES and e.report == {"cost": 3}
    names = sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(".lock"))
    assert names == ["k_abc.ir", "k_abc.json", "k_abc.ll", "k_abc.ptx", "k_abc.py"]


def test_missing_truncated_or_corrupt_entries_are_misses(tmp_path: Path) -> None:
    c = Cache(tmp_path)
    assert c.get("k", "nope") is None
    c.put("k", "abc", FILES, {})
    ptx = tmp_path / "k_abc.ptx"
    ptx.write_text(FILES["ptx"][:5])  # truncated
    assert c.get("k", "abc") is None
    c.put("k", "abc", FILES, {})
    (tmp_path / "k_abc.json").write_text('{"key": "abc", "sha2')  # torn manifest
    assert c.get("k", "abc") is None
    c.put("k", "abc", FILES, {})
    (tmp_path / "k_abc.ll").unlink()
    assert c.get("k", "abc") is None
    c.put("k", "abc", FILES, {})
    manifest = json.loads((tmp_path / "k_abc.json").read_text())
    manifest["key"] = "other"
    (tmp_path / "k_abc.json").write_text(json.dumps(manifest))
    assert c.get("k", "abc") is None


def test_no_temporary_files_are_left(tmp_path: Path) -> None:
    c = Cache(tmp_path)
    for i in range(5):
        c.put("k", f"key{i}", FILES, {"i": i})
    assert not list(tmp_path.glob("*.tmp"))


def _locked_increment(directory: str, counter: str) -> None:
    c = Cache(directory)
    with c.lock("k", "abc"):
        if c.get("k", "abc") is None:
            p = Path(counter)
            p.write_text(str(int(p.read_text()) + 1))
            c.put("k", "abc", FILES, {})


def test_lock_and_recheck_compile_once_across_processes(tmp_path: Path) -> None:
    counter = tmp_path / "count"
    counter.write_text("0")
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_locked_increment, args=(str(tmp_path / "cache"), str(counter))) for _ in range(6)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    assert counter.read_text() == "1"


@given(st.text(max_size=80), st.one_of(st.text(max_size=70), st.integers()))
def test_names_and_digests_are_checked_as_the_regular_expressions_did(name: str, digest: object) -> None:
    """The hit path's string tests (no regular expression compiled) agree with the patterns
    they replace: a file-name-safe kernel name, a 64-digit lowercase hex digest."""
    from eggpu import cache as cache_mod

    stem = Cache(Path("/nonexistent-cache-dir")).stem(name, "k")
    assert stem.name == (re.sub(r"[^A-Za-z0-9_]", "_", name)[:64] or "kernel") + "_k"
    want = isinstance(digest, str) and re.match(r"[0-9a-f]{64}\Z", digest) is not None
    assert cache_mod._is_hex64(digest) is want
    hexes = "".join("0123456789abcdef"[ord(c) % 16] for c in f"{digest}x") * 64
    assert cache_mod._is_hex64(hexes[:64]) and not cache_mod._is_hex64(hexes[:63]) and not cache_mod._is_hex64(hexes[:64] + "\n")
