"""z3 imported in a background thread while egglog saturates (optimizer/z3_warmup.py), and the
z3-free proof look-up that makes it possible (optimizer/proof_versions.py).

In this test process z3 is usually imported already (so optimize() starts no thread); the tests
force the warm-up with ``needed`` patched to True."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import eggpu
import eggpu.optimizer as opt
from eggpu.kernels import get
from eggpu.optimizer import optimize, proof_versions, z3_warmup
from eggpu.optimizer.validate_solver import Validation


def _warmups() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "eggpu-z3-warmup"]


@pytest.fixture
def forced(monkeypatch: pytest.MonkeyPatch) -> list[threading.Thread]:
    """Every optimize() starts a warm-up thread; the threads started are collected."""
    started: list[threading.Thread] = []
    real_start = z3_warmup.start
    monkeypatch.setattr(z3_warmup, "needed", lambda: True)

    def start(lock):
        t = real_start(lock)
        if t is not None:
            started.append(t)
        return t

    monkeypatch.setattr(z3_warmup, "start", start)
    return started


def _softmax():
    lk = get("softmax_forward")
    case = lk.make_case(lk.sizes[0], lk.dtypes[0], np.random.default_rng(0))
    return lk.instance(case)


# ---------------------------------------------------------------------- z3's version without z3


def test_z3_version_is_read_without_importing_z3() -> None:
    code = ("import sys\nfrom eggpu.optimizer.proof_versions import z3_version\nv = z3_version()\n"
            "assert 'z3' not in sys.modules, 'z3 was imported'\nimport z3\n"
            "assert v == z3.get_version_string(), (v, z3.get_version_string())\nprint('OK', v)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.startswith("OK "), out.stderr


def test_cold_proof_lookup_does_not_import_z3() -> None:
    # the cached path of verify_rules (the rule keys and the proof caches) needs no z3
    code = ("import sys\nfrom eggpu.optimizer import rule_verifier, proof_cache\n"
            "from eggpu.optimizer.rules_loader import parse_rule\n"
            "assert 'z3' not in sys.modules and 'eggpu.optimizer.z3ops' not in sys.modules\n"
            "r = parse_rule('(rewrite (Neg (F32) (Neg (F32) x)) x :name \"nn\")')\n"
            "k = rule_verifier._cache_key(r, 4000)\nassert 'z3' not in sys.modules, 'the key imported z3'\n"
            "print('OK', k)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.startswith("OK "), out.stderr + out.stdout
    import z3

    from eggpu.optimizer import rule_verifier
    from eggpu.optimizer.rules_loader import parse_rule

    # the same key as with z3 loaded (the key's z3 part is z3.get_version_string())
    r = parse_rule('(rewrite (Neg (F32) (Neg (F32) x)) x :name "nn")')
    assert out.stdout.split()[1] == rule_verifier._cache_key(r, 4000)
    assert proof_versions.z3_version() == z3.get_version_string()


def _site(tmp_path: Path, *names: str) -> Path:
    d = tmp_path / "site"
    (d / "z3").mkdir(parents=True)
    (d / "z3" / "__init__.py").write_text("")
    for n in names:
        (d / n).mkdir()
    return d


@pytest.mark.parametrize(("folders", "expected"), [
    (("z3_solver-4.12.6.0.dist-info",), "4.12.6"),
    (("z3_solver-5.4.1.0.dist-info",), "5.4.1"),
    (("z3_solver-4.8.dist-info",), None),  # too few components: ask z3
    (("z3_solver-4.x.1.0.dist-info",), None),
    (("z3_solver-4.12.6.0.dist-info", "z3_solver-4.13.0.0.dist-info"), None),  # ambiguous
    ((), None),  # a z3 package without its distribution's metadata
])
def test_dist_info_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, folders, expected) -> None:
    monkeypatch.setattr(sys, "path", [str(tmp_path / "missing"), str(_site(tmp_path, *folders))])
    assert proof_versions._dist_info_version() == expected


def test_a_shadowing_z3_module_first_on_the_path_defers_to_the_import(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / "z3.py").write_text("")
    monkeypatch.setattr(sys, "path", [str(shadow), str(_site(tmp_path, "z3_solver-4.12.6.0.dist-info"))])
    assert proof_versions._dist_info_version() is None


# ---------------------------------------------------------------------- the thread


def test_no_warmup_thread_outlives_optimize_and_the_result_is_unchanged(forced) -> None:
    fn = _softmax().ir()
    plain = optimize(fn)
    assert forced and not any(t.is_alive() for t in forced) and _warmups() == []
    forced.clear()
    again = optimize(fn)
    assert len(forced) == 1 and not forced[0].is_alive() and _warmups() == []
    assert again.validation.verdict == plain.validation.verdict == "valid" and not again.fell_back
    assert again.rule_hits == plain.rule_hits and str(again.function) == str(plain.function)


def test_a_failing_warmup_leaves_validation_to_say_what_fails(forced, monkeypatch: pytest.MonkeyPatch) -> None:
    class Broken:
        def acquire(self, blocking=True):
            raise RuntimeError("warm-up broke 7391")

    real_warm = z3_warmup._warm
    monkeypatch.setattr(z3_warmup, "_warm", lambda lock: real_warm(Broken()))
    res = optimize(_softmax().ir())
    assert len(forced) == 1 and not forced[0].is_alive()
    assert res.validation.verdict == "valid" and not res.fell_back


def test_an_exception_in_validation_still_falls_back(forced, monkeypatch: pytest.MonkeyPatch) -> None:
    import eggpu.optimizer.validate as v

    def boom(*a, **k):
        raise ValueError("validator exploded 2718")

    monkeypatch.setattr(v, "validate", boom)
    res = optimize(_softmax().ir())
    assert res.fell_back and res.reason == "validation raised ValueError: validator exploded 2718"
    assert len(forced) == 1 and not forced[0].is_alive() and _warmups() == []


def test_a_rejecting_validation_compiles_the_original_program(forced, monkeypatch: pytest.MonkeyPatch,
                                                               tmp_path: Path) -> None:
    import eggpu.optimizer.validate as v

    monkeypatch.setenv("EGGPU_CACHE_DIR", str(tmp_path / "cache"))
    k = _softmax()
    optimized = eggpu.compile(k, cache=False)
    assert optimized.report["optimizer"]["rules_fired"], "softmax should be rewritten for this test to mean much"
    unoptimized = eggpu.compile(k, cache=False, optimize=False)
    monkeypatch.setattr(v, "validate", lambda *a, **kw: Validation("invalid", "counterexample x=3.25"))
    ck = eggpu.compile(k, cache=False)
    rep = ck.report["optimizer"]
    assert rep["fell_back"] and rep["fallback_reason"] == "translation validation: invalid: counterexample x=3.25"
    assert rep["validation"] == "invalid"
    assert ck.ptx == unoptimized.ptx and ck.ir_text == unoptimized.ir_text
    assert forced and not any(t.is_alive() for t in forced) and _warmups() == []


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded")  # pytest-xdist's own threads
def test_a_fork_first_waits_for_the_forking_threads_warmup(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(z3_warmup, "needed", lambda: True)
    monkeypatch.setattr(z3_warmup, "_warm", lambda lock: time.sleep(0.3))
    t = z3_warmup.start(opt._Z3_LOCK)
    try:
        assert t is not None and t.is_alive()
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        alive_at_fork = t.is_alive()
        os.waitpid(pid, 0)
    finally:
        z3_warmup.join(t)
    assert not alive_at_fork and getattr(z3_warmup._MINE, "thread", None) is None
