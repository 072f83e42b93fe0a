"""A cache hit in a fresh process imports neither numpy nor the optimizer, frontend or codegen
(issue 12 item 4), and the toolchain fingerprint's on-disk memo never hides an edit."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from importlib.metadata import version
from pathlib import Path

import pytest

from eggpu import fingerprint as fpmod

HEAVY = ("numpy", "eggpu.optimizer", "eggpu.kernel_macro.frontend", "eggpu.codegen", "egglog", "z3", "llvmlite",
         "_hashlib",  # OpenSSL: a hit hashes with eggpu.ir.hashing
         "eggpu.kernel_macro.jitfunction", "eggpu.kernel_macro.autotune",  # @eggpu.jit's launcher, autotuning
         # the kernel's source and the names it reads come from the kernel-file index, its
         # parameters from its code object; eggpu's value classes are records, not dataclasses
         "inspect", "ast", "dis", "tokenize", "linecache", "textwrap", "dataclasses", "typing", "threading")
#: what a cold compile of a kernel without tl.dot, whose rules all have shipped verdicts, needs neither
COLD_UNNEEDED = ("eggpu.optimizer.rule_solving", "eggpu.optimizer.rule_encoding", "eggpu.optimizer.cex_check",
                 "eggpu.codegen.lower_dot", "eggpu.codegen.lower_mma", "eggpu.codegen.mma_carry", "difflib")

SCRIPT = textwrap.dedent(f"""
    import json, sys
    at_start = set(sys.modules)  # what the interpreter loads by itself (site, .pth files) is not eggpu's
    import eggpu
    import eggpu.language as tl

    @eggpu.kernel
    def scale(x_ptr: tl.Pointer[tl.f32], y_ptr: tl.Pointer[tl.f32], n: tl.i32, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
        tl.store(y_ptr + offs, x * 2.0, mask=offs < n)

    ck = eggpu.compile(scale.Kernel(256))
    print(json.dumps({{"cache": ck.report["cache"], "ptx": len(ck.ptx), "params": [str(p.type) for p in ck.params],
                      "heavy": [m for m in {HEAVY!r} if m in sys.modules and m not in at_start],
                      "cold_unneeded": [m for m in {COLD_UNNEEDED!r} if m in sys.modules],
                      "shipped_json_parsed": "eggpu.optimizer.shipped_proofs" in sys.modules
                                             and sys.modules["eggpu.optimizer.shipped_proofs"]._loaded is not None}}))
""")


def _run(tmp_path: Path) -> dict:
    script = tmp_path / "scale_script.py"
    script.write_text(SCRIPT)
    env = {"EGGPU_CACHE_DIR": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_fresh_process_cache_hit_stays_light(tmp_path: Path) -> None:
    miss = _run(tmp_path)
    assert miss["cache"] == "miss" and "eggpu.optimizer" in miss["heavy"]
    # a cold compile optimizes, validates and lowers without numpy too (op references are lazy)
    assert "numpy" not in miss["heavy"] and "eggpu.codegen" in miss["heavy"]
    # nor the rule prover, the dot lowering or the parse of rules/proofs.json (its digest answers)
    assert miss["cold_unneeded"] == [] and miss["shipped_json_parsed"] is False
    assert len(list((tmp_path / "cache").glob("source-*.json"))) == 1  # the kernel-file index
    hit = _run(tmp_path)
    assert hit["cache"] == "hit" and hit["ptx"] == miss["ptx"] and hit["params"] == miss["params"]
    assert hit["heavy"] == []


def test_an_edited_kernel_file_misses_in_a_fresh_process(tmp_path: Path) -> None:
    """The kernel-file index never serves the source of an earlier version of the file."""
    assert _run(tmp_path)["cache"] == "miss"
    script = tmp_path / "scale_script.py"
    script.write_text(SCRIPT.replace("x * 2.0", "x * 3.0"))
    edited = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=600,
                            env={"EGGPU_CACHE_DIR": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin"})
    assert edited.returncode == 0, edited.stderr
    assert json.loads(edited.stdout.strip().splitlines()[-1])["cache"] == "miss"
    assert len(list((tmp_path / "cache").glob("source-*.json"))) == 2


def test_library_versions_match_importlib_metadata() -> None:
    got = dict(v.split("=", 1) for v in fpmod.library_versions())
    for dist in fpmod.LIBRARIES:
        assert got[dist] == version(dist)
    assert fpmod.library_versions(["no-such-distribution-here"]) == ["no-such-distribution-here=absent"]


@pytest.fixture
def sources(tmp_path: Path) -> Path:
    d = tmp_path / "pkg"
    d.mkdir()
    (d / "lowering.py").write_text("X = 1\n")
    (d / "rules.egg").write_text("; rules\n")
    return d


def _memos(memo: Path) -> list[Path]:
    return sorted(memo.glob("toolchain-*.fingerprint"))


def test_fresh_sources_are_never_memoized(sources: Path, tmp_path: Path) -> None:
    memo = tmp_path / "memo"
    memo.mkdir(mode=0o700)
    first = fpmod.fingerprint([sources], "0.1.0", memo)
    assert _memos(memo) == []  # files written within RACY_SECONDS: a same-size edit could keep their times
    assert first == fpmod.hash_sources(fpmod.source_files([sources]), fpmod.library_versions(), "0.1.0")


def test_the_memo_serves_unchanged_sources_and_an_edit_misses_it(sources: Path, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    memo = tmp_path / "memo"
    memo.mkdir(mode=0o700)
    monkeypatch.setattr(fpmod, "RACY_SECONDS", -1.0)  # pretend the files are old enough
    first = fpmod.fingerprint([sources], "0.1.0", memo)
    assert len(_memos(memo)) == 1
    real = fpmod.hash_sources
    monkeypatch.setattr(fpmod, "hash_sources", lambda *a: pytest.fail("the memo was not used"))
    assert fpmod.fingerprint([sources], "0.1.0", memo) == first
    monkeypatch.setattr(fpmod, "hash_sources", real)
    (sources / "lowering.py").write_text("X = 22\n")
    edited = fpmod.fingerprint([sources], "0.1.0", memo)
    assert edited != first and edited == real(fpmod.source_files([sources]), fpmod.library_versions(), "0.1.0")
    assert fpmod.fingerprint([sources], "0.2.0", memo) != edited  # eggpu's version is part of it


def test_a_malformed_memo_is_ignored(sources: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    memo = tmp_path / "memo"
    memo.mkdir(mode=0o700)
    monkeypatch.setattr(fpmod, "RACY_SECONDS", -1.0)
    first = fpmod.fingerprint([sources], "0.1.0", memo)
    (path,) = _memos(memo)
    path.write_bytes(b"not a digest")
    assert fpmod.fingerprint([sources], "0.1.0", memo) == first


LIBRARY_SCRIPT = textwrap.dedent("""
    import json, sys
    at_start = set(sys.modules)  # what the interpreter loads by itself (site, .pth files) is not eggpu's
    import eggpu
    from eggpu.ir.dtypes import parse_dtype
    from eggpu.kernels import get
    after_import = "numpy" in sys.modules
    # decorating the library (@eggpu.kernel, @eggpu.jit helpers, its case records) needs none of these
    light = [m for m in ("inspect", "ast", "dataclasses", "tokenize", "textwrap", "threading")
             if m in sys.modules and m not in at_start]
    out = {}
    for name, dtype, consts in (("softmax_forward", "f32", [256]), ("matmul", "f16", [32, 32, 16])):
        ck = eggpu.compile(get(name).kernel(parse_dtype(dtype), consts))
        out[name] = [ck.report["cache"], "numpy" in sys.modules]
    print(json.dumps({"import": after_import, "light": light, "compiles": out}))
""")


def test_the_kernel_library_compiles_cold_without_numpy(tmp_path: Path) -> None:
    """Importing the library and a cold compile of its kernels (f32 and f16 constants, exp,
    reductions, dot) import no numpy; only building test cases or references does."""
    script = tmp_path / "library_script.py"
    script.write_text(LIBRARY_SCRIPT)
    env = {"EGGPU_CACHE_DIR": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got == {"import": False, "light": [],
                   "compiles": {"softmax_forward": ["miss", False], "matmul": ["miss", False]}}


def test_source_files_lists_what_rglob_lists_in_path_order(tmp_path: Path) -> None:
    root = tmp_path / "pkg"
    for rel in ("a/b.py", "a-c/x.py", "a/__pycache__/b.cpython-312.pyc", "a/__pycache__/stale.py", "z.egg",
                "a/deep/er/m.py", "a/deep/notes.txt", "a.py", "A.py", ".hidden.py", "sub.egg/inner.py"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("x = 1\n")
    other = tmp_path / "other"
    (other / "__pycache__").mkdir(parents=True)
    (other / "k.py").write_text("")
    want = [p for r in sorted([root, other]) for p in sorted(r.rglob("*"))
            if p.suffix in (".py", ".egg") and "__pycache__" not in p.parts and p.is_file()]
    got = fpmod.source_files([other, root])
    assert got == want
    assert root / "a/b.py" in got and not any("__pycache__" in p.parts for p in got)
    assert got.index(root / "a/b.py") < got.index(root / "a-c/x.py")  # Path order, not string order


def test_the_memo_lives_in_the_toolchain_folder_and_serves_an_emptied_kernel_cache(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The pipeline memoizes the fingerprint in ``toolchain/`` (facts about the installation), so
    a kernel cache emptied but for ``toolchain/`` and ``proofs/`` does not hash the sources again;
    the folder is created inside the cache root, and never written through a symbolic link
    planted in its place (ensure_trusted_dir refuses it: the fingerprint is still computed)."""
    import shutil

    import eggpu.pipeline as pipeline
    from eggpu.cache import Cache

    src = tmp_path / "src"
    src.mkdir()
    (src / "lowering.py").write_text("X = 1\n")
    monkeypatch.setattr(pipeline, "_eggpu_package_dirs", lambda: {src})
    monkeypatch.setattr(fpmod, "RACY_SECONDS", -1.0)
    first_dir = tmp_path / "first"
    monkeypatch.setattr(pipeline, "_FINGERPRINT", None)
    first = pipeline.toolchain_fingerprint(Cache(first_dir))
    assert len(_memos(first_dir / pipeline.TOOLCHAIN_FOLDER)) == 1 and _memos(first_dir) == []
    emptied = tmp_path / "emptied"
    emptied.mkdir(mode=0o700)
    shutil.copytree(first_dir / pipeline.TOOLCHAIN_FOLDER, emptied / pipeline.TOOLCHAIN_FOLDER)
    real = fpmod.hash_sources
    monkeypatch.setattr(fpmod, "hash_sources", lambda *a: pytest.fail("the memo was not used"))
    monkeypatch.setattr(pipeline, "_FINGERPRINT", None)
    assert pipeline.toolchain_fingerprint(Cache(emptied)) == first
    planted = tmp_path / "planted"
    planted.mkdir(mode=0o700)
    (planted / pipeline.TOOLCHAIN_FOLDER).symlink_to(first_dir / pipeline.TOOLCHAIN_FOLDER)
    monkeypatch.setattr(fpmod, "hash_sources", real)
    monkeypatch.setattr(pipeline, "_FINGERPRINT", None)
    (src / "lowering.py").write_text("X = 2\n")  # a new signature: the memo would be written now
    second = pipeline.toolchain_fingerprint(Cache(planted))
    assert second != first and len(_memos(first_dir / pipeline.TOOLCHAIN_FOLDER)) == 1
