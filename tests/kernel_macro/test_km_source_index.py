"""The kernel-file index (kernel_macro.source_index) gives exactly what inspect reads, only for
the bytes it was made from: an edit, a malformed or planted entry, a file edited while it was
read, a wrapped function or a function without a file never get an indexed source."""

from __future__ import annotations

import ast
import importlib.util
import inspect
import linecache
import os
from pathlib import Path

import pytest

from eggpu.kernel_macro import diagnostics, source_index
from eggpu.kernel_macro.diagnostics import Source

KERNELS = '''import eggpu
import eggpu.language as tl

SCALE = 2.0


def helper(x):
    return x * SCALE


class Holder:
    @staticmethod
    def nested(x_ptr, n: tl.i32):
        return tl.load(x_ptr + n)  # an indented function: parsed inside "if 1:"


@eggpu.kernel
def scale(x_ptr: tl.Pointer[tl.f32], n: tl.i32, BLOCK: tl.constexpr):
    """Doc."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(x_ptr + offs, helper(x) + tl.math.exp(x), mask=offs < n)
'''


@pytest.fixture
def index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "cache"
    d.mkdir(mode=0o700)
    monkeypatch.setattr(source_index, "_directory", d)
    monkeypatch.setattr(source_index, "_salt", "test-salt")
    monkeypatch.setattr(diagnostics, "_CACHE", {})
    return d


def _module(path: Path, text: str, name: str):
    path.write_text(text)
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))  # linecache sees a change
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _fresh(fn) -> Source:
    """Source.of as a new process would call it (nothing cached in this process)."""
    diagnostics._CACHE.clear()
    return Source.of(fn)


def _no_inspect(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(inspect, "getsourcelines", lambda fn: pytest.fail("inspect was used"))


@pytest.mark.parametrize("name", ["scale", "helper", "nested"])
def test_an_indexed_source_is_what_inspect_reads(index: Path, tmp_path: Path, name: str,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    m = _module(tmp_path / "k_index.py", KERNELS, "eggpu_test_k_index")
    fn = {"scale": m.scale, "helper": m.helper, "nested": m.Holder.nested}[name]
    read = _fresh(fn)
    assert len(list(index.glob("source-*.json"))) == 1
    _no_inspect(monkeypatch)
    got = _fresh(fn)
    assert (got.file, got.first_line, got.lines, got.text) == (read.file, read.first_line, read.lines, read.text)
    assert got.names == read.names and ast.dump(got.tree) == ast.dump(read.tree)
    assert got.tree.lineno == read.tree.lineno and got.tree.body[-1].col_offset == read.tree.body[-1].col_offset
    if name == "scale":
        assert ("helper",) in got.names and ("tl", "math", "exp") in got.names and ("SCALE",) not in got.names


def test_an_edited_file_is_read_again(index: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "k_edit.py"
    m = _module(path, KERNELS, "eggpu_test_k_edit")
    assert "helper(x) + tl.math.exp(x)" in _fresh(m.scale).text
    m = _module(path, KERNELS.replace("helper(x) + tl.math.exp(x)", "helper(x) + 1.0"), "eggpu_test_k_edit")
    got = _fresh(m.scale)
    assert "helper(x) + 1.0" in got.text and ("tl", "math", "exp") not in got.names
    assert len(list(index.glob("source-*.json"))) == 2  # one entry per version of the file
    _no_inspect(monkeypatch)
    assert _fresh(m.scale).text == got.text


def test_a_malformed_entry_is_ignored_and_rewritten(index: Path, tmp_path: Path) -> None:
    m = _module(tmp_path / "k_bad.py", KERNELS, "eggpu_test_k_bad")
    want = _fresh(m.scale).text
    (entry,) = index.glob("source-*.json")
    for junk in (b"not json", b'{"first_line": 0, "lines": [], "text": "", "names": []}',
                 b'{"first_line": 1, "lines": [3], "text": "x", "names": []}', b"[1, 2]"):
        entry.write_bytes(junk)
        assert _fresh(m.scale).text == want
        assert entry.read_bytes() != junk  # rewritten from what inspect read


def test_a_planted_symlink_is_neither_followed_nor_replaced(index: Path, tmp_path: Path) -> None:
    m = _module(tmp_path / "k_link.py", KERNELS, "eggpu_test_k_link")
    want = _fresh(m.scale).text
    (entry,) = index.glob("source-*.json")
    forged = tmp_path / "forged.json"
    forged.write_text('{"first_line": 1, "lines": ["def scale():\\n"], "text": "def scale():\\n", "names": []}')
    entry.unlink()
    entry.symlink_to(forged)
    assert _fresh(m.scale).text == want
    assert entry.is_symlink() and "def scale():" in forged.read_text()


def test_nothing_is_indexed_when_inspect_read_other_lines(index: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A file edited between the index's read and inspect's: the lines differ, no entry."""
    m = _module(tmp_path / "k_race.py", KERNELS, "eggpu_test_k_race")
    real = linecache.getlines
    monkeypatch.setattr(linecache, "getlines", lambda f, g=None: real(f, g) + ["# appended meanwhile\n"])
    _fresh(m.scale)
    assert list(index.glob("source-*.json")) == []


def test_no_index_without_a_directory_or_a_file(index: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    m = _module(tmp_path / "k_none.py", KERNELS, "eggpu_test_k_none")
    monkeypatch.setattr(source_index, "_directory", None)
    _fresh(m.scale)
    assert list(index.glob("source-*.json")) == []
    monkeypatch.setattr(source_index, "_directory", index)
    ns: dict = {}
    exec(compile("def f(x):\n    return x\n", "<no file>", "exec"), ns)  # noqa: S102
    with pytest.raises(Exception, match="cannot read the source of f"):
        _fresh(ns["f"])
    assert list(index.glob("source-*.json")) == []


def test_the_key_covers_salt_python_and_position(index: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    m = _module(tmp_path / "k_salt.py", KERNELS, "eggpu_test_k_salt")
    _fresh(m.scale)
    monkeypatch.setattr(source_index, "_salt", "another toolchain")
    _fresh(m.scale)
    _fresh(m.helper)
    assert len(list(index.glob("source-*.json"))) == 3


def test_compile_configures_the_index_from_its_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """eggpu.compile points the index at a trusted cache directory (with the toolchain
    fingerprint as the salt), and at nothing for cache=False or an untrusted directory."""
    from eggpu import pipeline

    m = _module(tmp_path / "k_cfg.py", KERNELS, "eggpu_test_k_cfg")
    monkeypatch.setattr(pipeline, "_compile_uncached", lambda *a: pytest.skip("configured"))  # stop before compiling
    seen = []
    real = source_index.configure
    monkeypatch.setattr(source_index, "configure", lambda d, salt: (seen.append((d, salt)), real(d, salt)))
    good = tmp_path / "good"
    good.mkdir(mode=0o700)
    bad = tmp_path / "bad"
    bad.mkdir(mode=0o777)
    bad.chmod(0o777)
    monkeypatch.setattr(diagnostics, "_CACHE", {})
    for cache in (False, str(bad), str(good)):
        diagnostics._CACHE.clear()  # as in a fresh process: the source is looked up again
        try:
            pipeline.compile(m.scale.Kernel(64), cache=cache)
        except pytest.skip.Exception:
            pass
    assert seen[0] == (None, "") and seen[1] == (None, "")
    # the kernel and the helper it calls, found by the dependency walk of the key
    assert seen[2] == (good, pipeline.toolchain_fingerprint()) and len(list(good.glob("source-*.json"))) == 2
    assert list(bad.glob("source-*.json")) == []
