"""eggpu.compile end to end: artefacts, report, CPU run, cache hits/misses/invalidation, concurrency."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import eggpu
import eggpu.language as tl
from eggpu.kernels import get

FIXTURE = Path(__file__).parent / "fixtures" / "scale_kernel.py"


def load_module(path: Path, name: str):
    """``path`` imported as module ``name``, from its source: a bytecode file written by an earlier
    import is removed first (Python trusts a .pyc whose recorded source size and mtime, in whole
    seconds, match, so a same-size rewrite within a second would import the old code)."""
    Path(importlib.util.cache_from_source(str(path))).unlink(missing_ok=True)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "cache"
    monkeypatch.setenv("EGGPU_CACHE_DIR", str(d))
    return d


@pytest.fixture
def scale_module(tmp_path: Path):
    path = tmp_path / "scale_mod.py"
    shutil.copy(FIXTURE, path)
    return path


def test_compile_vector_add_artefacts_and_cpu_run(cache_dir: Path) -> None:
    va = get("vector_add")
    ck = eggpu.compile(va.fn.Kernel[tl.f32](256), target="sm_90")
    assert re.search(r"\.visible \.entry vector_add_entry_point\(", ck.ptx)
    assert re.search(r"\.reqntid 128, 1, 1", ck.ptx)
    assert ".target sm_90" in ck.ptx
    assert "vector_add_entry_point" in ck.llvm_ir
    assert ck.entry_point == "vector_add_entry_point"
    rep = ck.report
    assert rep["cache"] == "miss"
    assert set(rep["times_ms"]) >= {"frontend", "optimize", "codegen"}
    opt = rep["optimizer"]
    assert opt["validation"] == "valid" and not opt["fell_back"]
    assert opt["cost_after"] <= opt["cost_before"]
    assert rep["ptxas"]["registers"] > 0 and rep["ptxas"]["spill_stores"] == 0
    assert "kernel vector_add" in str(ck.ir)
    for n in (1, 1000, 1001):
        x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
        y = np.random.default_rng(n + 1).standard_normal(n).astype(np.float32)
        out = np.full(n, np.nan, np.float32)
        ck.run_cpu(((n + 255) // 256,), x, y, out, n)
        np.testing.assert_array_equal(out, x + y)


def test_kernel_compile_method_uses_the_same_path(cache_dir: Path) -> None:
    va = get("vector_add")
    ck = va.fn.Kernel[tl.f32](128).compile(target="sm_80")
    assert ".target sm_80" in ck.ptx
    inst = va.fn.Dispatch.dispatch("f32", 128) if hasattr(va.fn, "Dispatch") else None
    if inst is not None:
        assert inst.compile(target="sm_80").ptx == ck.ptx


def test_cache_hit_same_process(cache_dir: Path) -> None:
    va = get("vector_add")
    a = eggpu.compile(va.fn.Kernel[tl.f32](512))
    b = eggpu.compile(va.fn.Kernel[tl.f32](512))
    assert a.report["cache"] == "miss" and b.report["cache"] == "hit"
    assert a.ptx == b.ptx and a.llvm_ir == b.llvm_ir and a.ir_text == b.ir_text
    files = sorted(p.suffix for p in cache_dir.iterdir() if p.suffix != ".lock")
    assert files == [".ir", ".json", ".ll", ".ptx", ".py"]
    assert all(p.name.startswith("vector_add_") for p in cache_dir.iterdir())


HIT_SCRIPT = """
import json, sys, time
t0 = time.perf_counter()
import eggpu, eggpu.language as tl
from eggpu.kernels.elementwise import vector_add
ck = eggpu.compile(vector_add.Kernel[tl.f32](512))
print(json.dumps({"cache": ck.report["cache"], "ms": (time.perf_counter() - t0) * 1e3, "ptx": ck.ptx[:200]}))
"""


def test_cache_hit_in_a_fresh_process(cache_dir: Path) -> None:
    env = dict(os.environ, EGGPU_CACHE_DIR=str(cache_dir))
    first = json.loads(subprocess.run([sys.executable, "-c", HIT_SCRIPT], env=env, capture_output=True, text=True, check=True).stdout)
    second = json.loads(subprocess.run([sys.executable, "-c", HIT_SCRIPT], env=env, capture_output=True, text=True, check=True).stdout)
    assert first["cache"] == "miss" and second["cache"] == "hit"
    assert first["ptx"] == second["ptx"]


def test_invalidation_on_source_rules_target_and_version(cache_dir: Path, scale_module: Path, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    mod = load_module(scale_module, "scale_mod_a")
    k = mod.scale.Kernel[tl.f32](128)
    assert eggpu.compile(k).report["cache"] == "miss"
    assert eggpu.compile(k).report["cache"] == "hit"
    assert eggpu.compile(k, target="sm_80").report["cache"] == "miss"
    # an edited kernel body is never served stale
    scale_module.write_text(scale_module.read_text().replace("x * 3.0", "x * 5.0"))
    mod2 = load_module(scale_module, "scale_mod_b")
    ck = eggpu.compile(mod2.scale.Kernel[tl.f32](128))
    assert ck.report["cache"] == "miss"
    x = np.arange(10, dtype=np.float32)
    y = np.zeros(10, np.float32)
    ck.run_cpu(1, x, y, 10)
    np.testing.assert_array_equal(y, x * 5.0)
    # a rule file's contents are part of the key
    rules = tmp_path / "mine.egg"
    rules.write_text('(rewrite (Mul t x (Splat t s (ConstF t 1.0))) x :ruleset exact :name "my-mul-one")\n')
    assert eggpu.compile(k, rules=[str(rules)]).report["cache"] == "miss"
    assert eggpu.compile(k, rules=[str(rules)]).report["cache"] == "hit"
    rules.write_text(rules.read_text() + "\n")
    assert eggpu.compile(k, rules=[str(rules)]).report["cache"] == "miss"
    # eggpu's version is part of the key
    monkeypatch.setattr(eggpu, "__version__", "999.0")
    assert eggpu.compile(k).report["cache"] == "miss"


@pytest.mark.parametrize("use_cache", [True, False])
def test_a_rewrite_with_the_same_size_and_mtime_is_not_served_stale(cache_dir: Path, scale_module: Path,
                                                                    use_cache: bool) -> None:
    """Python's linecache re-reads a file only when its size or mtime changed; a kernel file
    rewritten with the same size within one mtime tick (a generated file, an edit and reload in a
    few milliseconds) must still compile its new text (the full suite hit this on Python 3.11)."""
    import os

    mod = load_module(scale_module, f"scale_same_stat_a_{use_cache}")
    x = np.arange(10, dtype=np.float32)
    y = np.zeros(10, np.float32)
    eggpu.compile(mod.scale.Kernel[tl.f32](128), cache=use_cache).run_cpu(1, x, y, 10)
    np.testing.assert_array_equal(y, x * 3.0)
    before = scale_module.stat()
    scale_module.write_text(scale_module.read_text().replace("x * 3.0", "x * 7.0"))
    os.utime(scale_module, ns=(before.st_atime_ns, before.st_mtime_ns))  # same size, same mtime
    assert (scale_module.stat().st_size, scale_module.stat().st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    mod2 = load_module(scale_module, f"scale_same_stat_b_{use_cache}")
    eggpu.compile(mod2.scale.Kernel[tl.f32](128), cache=use_cache).run_cpu(1, x, y, 10)
    np.testing.assert_array_equal(y, x * 7.0)


def test_truncated_cache_file_is_recompiled(cache_dir: Path) -> None:
    va = get("vector_add")
    first = eggpu.compile(va.fn.Kernel[tl.f32](64))
    ptx_file = next(cache_dir.glob("vector_add_*.ptx"))
    ptx_file.write_text(ptx_file.read_text()[:100])
    again = eggpu.compile(va.fn.Kernel[tl.f32](64))
    assert again.report["cache"] == "miss"
    assert again.ptx == first.ptx
    assert eggpu.compile(va.fn.Kernel[tl.f32](64)).report["cache"] == "hit"


CONCURRENT_SCRIPT = """
import json, sys
import eggpu, eggpu.language as tl
sys.path.insert(0, sys.argv[1])
import scale_mod
ck = eggpu.compile(scale_mod.scale.Kernel[tl.f32](256))
print(json.dumps({"cache": ck.report["cache"], "ptx": ck.ptx}))
"""


def test_eight_processes_compile_once(cache_dir: Path, scale_module: Path) -> None:
    env = dict(os.environ, EGGPU_CACHE_DIR=str(cache_dir))
    procs = [subprocess.Popen([sys.executable, "-c", CONCURRENT_SCRIPT, str(scale_module.parent)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(8)]
    results = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        results.append(json.loads(out))
    assert sorted(r["cache"] for r in results) == ["hit"] * 7 + ["miss"]
    assert len({r["ptx"] for r in results}) == 1
    assert not list(cache_dir.glob("*.tmp"))


def test_compile_errors_are_clear(cache_dir: Path) -> None:
    va = get("vector_add")
    with pytest.raises(eggpu.CodegenError, match="sm_91"):
        eggpu.compile(va.fn.Kernel[tl.f32](64), target="sm_91")
    with pytest.raises(eggpu.KernelError, match="expects a kernel instance"):
        eggpu.compile(va.fn)
    with pytest.raises(eggpu.CompileError, match="num_warps must be one of"):
        eggpu.compile(va.fn.Kernel[tl.f32](64), num_warps=3)


def test_no_optimize_and_fast_math_options(cache_dir: Path) -> None:
    va = get("vector_add")
    plain = eggpu.compile(va.fn.Kernel[tl.f32](64), optimize=False)
    assert "optimizer" not in plain.report
    fm = eggpu.compile(va.fn.Kernel[tl.f32](64), fast_math=True)
    assert fm.report["options"]["fast_math"] is True


def test_launch_without_gpu_is_a_clear_error(cache_dir: Path) -> None:
    from eggpu.runtime import gpu_available

    if gpu_available():
        pytest.skip("a GPU is present")
    va = get("vector_add")
    ck = eggpu.compile(va.fn.Kernel[tl.f32](64))
    x = np.zeros(4, np.float32)
    with pytest.raises(eggpu.LaunchError, match="cuda-python|no CUDA device|cuInit"):
        ck.launch(1, x, x, x, 4)
    # argument checking happens before any device is touched
    with pytest.raises(eggpu.LaunchError, match=r"^vector_add takes 4 argument\(s\) \(x_ptr, y_ptr, out_ptr, n\), got 3$"):
        ck.launch(1, x, x, x)


@pytest.mark.gpu
def test_launch_on_gpu_matches_numpy(cache_dir: Path) -> None:
    from eggpu.runtime import gpu_available

    if not gpu_available():
        pytest.skip("no CUDA device")
    va = get("vector_add")
    ck = eggpu.compile(va.fn.Kernel[tl.f32](1024))
    n = 1001
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    out = np.zeros(n, np.float32)
    ck.launch(((n + 1023) // 1024,), x, x, out, n)
    np.testing.assert_array_equal(out, x + x)


def test_report_is_json_serializable(cache_dir: Path) -> None:
    va = get("vector_add")
    ck = eggpu.compile(va.fn.Kernel[tl.f32](64))
    json.dumps(ck.report)
    assert textwrap.dedent(ck.source).startswith("def vector_add") or "def vector_add" in ck.source


def test_toolchain_fingerprint_follows_eggpu_sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import eggpu.pipeline as pipeline

    src = tmp_path / "lowering.py"
    src.write_text("X = 1\n")
    monkeypatch.setattr(pipeline, "_eggpu_package_dirs", lambda: {tmp_path})
    monkeypatch.setattr(pipeline, "_FINGERPRINT", None)
    first = pipeline.toolchain_fingerprint()
    monkeypatch.setattr(pipeline, "_FINGERPRINT", None)
    assert pipeline.toolchain_fingerprint() == first
    src.write_text("X = 2\n")
    monkeypatch.setattr(pipeline, "_FINGERPRINT", None)
    assert pipeline.toolchain_fingerprint() != first


def test_changed_toolchain_is_a_cache_miss(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import eggpu.pipeline as pipeline

    k = get("vector_add").fn.Kernel[tl.f32](32)
    eggpu.compile(k)
    assert eggpu.compile(k).report["cache"] == "hit"
    monkeypatch.setattr(pipeline, "_FINGERPRINT", "an edited lowering")
    assert eggpu.compile(k).report["cache"] == "miss"


def test_launch_refuses_a_read_only_output_before_touching_a_device(cache_dir: Path) -> None:
    ck = eggpu.compile(get("vector_add").fn.Kernel[tl.f32](64))
    assert ck.report["written_params"] == ["out_ptr"]
    x = np.zeros(4, np.float32)
    x.flags.writeable = False
    out = np.zeros(4, np.float32)
    out.flags.writeable = False
    with pytest.raises(eggpu.LaunchError,
                       match=r"^vector_add: parameter 'out_ptr' is a read-only array, but the kernel may write through it$"):
        ck.launch(1, x, x, out, 4)
    # read-only inputs are fine: without a GPU the error comes from the missing device, not the check
    from eggpu.runtime import gpu_available

    if not gpu_available():
        with pytest.raises(eggpu.LaunchError) as e:
            ck.launch(1, x, x, np.zeros(4, np.float32), 4)
        assert "read-only" not in str(e.value)


def test_rule_files_are_read_once_and_the_optimizer_gets_the_hashed_bytes(
        cache_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The cache key and the optimizer see the same bytes: a rule file rewritten between the key
    and the optimizer (here: when the frontend starts) cannot be cached under the old key."""
    import eggpu.rules as rules_pkg

    rules = tmp_path / "mine.egg"
    first = '(rewrite (Mul t a b) a :name "mine-first")\n'  # refuted: listed in rules_rejected
    rules.write_text(first)
    reads: list[str] = []
    real_read = rules_pkg.read_rule_file
    monkeypatch.setattr(rules_pkg, "read_rule_file", lambda p: reads.append(str(p)) or real_read(p))

    def edit_when_the_frontend_starts(stage: str) -> None:
        if stage == "frontend":
            rules.write_text(first.replace("mine-first", "mine-second"))

    k = get("vector_add").fn.Kernel[tl.f32](64)
    ck = eggpu.compile(k, rules=[str(rules)], progress=edit_when_the_frontend_starts)
    assert ck.report["cache"] == "miss" and reads.count(str(rules)) == 1
    assert "mine-first" in ck.report["optimizer"]["rules_rejected"]
    assert "mine-second" not in ck.report["optimizer"]["rules_rejected"]
    again = eggpu.compile(k, rules=[str(rules)])  # the file now says mine-second: another key
    assert again.report["cache"] == "miss" and "mine-second" in again.report["optimizer"]["rules_rejected"]
    rules.write_text(first)
    assert eggpu.compile(k, rules=[str(rules)]).report["cache"] == "hit"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
@pytest.mark.parametrize("kind", ["fifo", "oversized"])
def test_the_cache_key_never_hangs_on_a_hostile_rule_file(tmp_path: Path, kind: str) -> None:
    import threading

    from eggpu.ir.errors import RuleError
    from eggpu.pipeline import CompileOptions
    from eggpu.rules import MAX_RULE_FILE_BYTES

    bad = tmp_path / "bad.egg"
    if kind == "fifo":
        os.mkfifo(bad)  # nobody writes: a plain read would wait forever
    else:
        with open(bad, "wb") as f:
            f.truncate(MAX_RULE_FILE_BYTES + 1)
    outcome: list[BaseException] = []

    def key() -> None:
        try:
            CompileOptions(rules=(str(tmp_path),)).key_parts()  # a folder holding it
        except BaseException as e:  # noqa: BLE001 - reported below
            outcome.append(e)

    t = threading.Thread(target=key, daemon=True)
    t.start()
    t.join(60)
    assert not t.is_alive(), "computing the cache key hangs"
    assert len(outcome) == 1 and isinstance(outcome[0], RuleError), outcome
    assert "bad.egg" in str(outcome[0]) and ("FIFO" in str(outcome[0]) or "too large" in str(outcome[0]))


def test_report_says_why_saturation_stopped(cache_dir: Path) -> None:
    @eggpu.kernel
    def times_zero(y_ptr: tl.Pointer[tl.i32], s: tl.i32):
        tl.store(y_ptr, s * 0)

    opt = eggpu.compile(times_zero.__eggpu_kernel__(), cache=False).report["optimizer"]
    assert opt["stop_reason"] in ("MATCH_LIMIT", "TIME_LIMIT")
    assert opt["stop_detail"] and ("stopped changing" in opt["stop_detail"] or "time" in opt["stop_detail"])
    calm = eggpu.compile(get("vector_add").fn.Kernel[tl.f32](64), cache=False).report["optimizer"]
    assert calm["stop_reason"] == "SATURATED" and calm["stop_detail"] == ""
    json.dumps(opt)


@pytest.mark.parametrize("kwargs, message", [
    (dict(rules=5), "rules must be a rule file or folder path, or a list of them, got 5"),
    (dict(rules=[None]), "rules must be a rule file or folder path, or a list of them, got [None]"),
    (dict(cache=5), "cache must be True, False or a directory path, got 5"),
    (dict(optimize="no"), "optimize must be True or False, got 'no'"),
    (dict(fast_math=np.array([1, 2])), "fast_math must be True or False, got array"),
    (dict(num_warps=True), "num_warps must be one of 1, 2, 4, 8, 16, 32, got True"),
    (dict(target="host"), "eggpu.compile builds PTX for an NVIDIA target such as 'sm_90'; 'host' is the CPU "
                          "lowering behind ck.run_cpu"),
], ids=["rules-int", "rules-none", "cache-int", "optimize-str", "fast-math-array", "num-warps-bool", "host"])
def test_bad_compile_options_are_clear_errors(kwargs, message) -> None:
    from eggpu.ir.errors import CompileError

    with pytest.raises(CompileError) as info:
        eggpu.compile(get("vector_add").fn.Kernel[tl.f32](64), cache=kwargs.pop("cache", False), **kwargs)
    assert str(info.value).startswith(message)


def test_compile_names_what_it_got_instead_of_a_kernel_instance(tmp_path: Path) -> None:
    from eggpu.ir.errors import KernelError

    fn = get("vector_add").fn
    with pytest.raises(KernelError, match=r"got the kernel class VectorAdd; instantiate it first, "
                                          r"e\.g\. VectorAdd\[tl\.f32\]\(1024\)$"):
        eggpu.compile(fn.Kernel)
    with pytest.raises(KernelError, match=r"got the @eggpu\.kernel function vector_add; compile an instance"):
        eggpu.compile(fn)
    with pytest.raises(KernelError, match=r"got str$"):
        eggpu.compile("k.py::vector_add")


def test_a_single_rule_path_is_one_file_not_its_characters(tmp_path: Path) -> None:
    from eggpu.ir.errors import RuleError

    k = get("vector_add").fn.Kernel[tl.f32](64)
    with pytest.raises(RuleError, match=r"^/nonexistent/mine\.egg: rule file not found$"):
        eggpu.compile(k, rules="/nonexistent/mine.egg", cache=False)
    rules = tmp_path / "mine.egg"
    rules.write_text('(rewrite (Mul t a b) a :name "mine-one-path")\n')
    for given in (str(rules), rules, [rules]):
        ck = eggpu.compile(k, rules=given, cache=False)
        assert "mine-one-path" in ck.report["optimizer"]["rules_rejected"]


def test_every_spelling_of_a_target_compiles_and_shares_one_cache_entry(cache_dir: Path) -> None:
    # the cost model used to refuse "SM90"/"90" that codegen accepted (two lists of targets)
    va = get("vector_add")
    first = eggpu.compile(va.fn.Kernel[tl.f32](256), target="SM90")
    assert first.target == "sm_90" and first.report["cache"] == "miss"
    assert not first.report["optimizer"]["fell_back"]
    again = eggpu.compile(va.fn.Kernel[tl.f32](256), target="compute_90")
    assert again.report["cache"] == "hit" and again.ptx == first.ptx
