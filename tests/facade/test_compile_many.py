"""eggpu.compile_many: a batch in forked workers or an executor, per-instance failures, progress."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

import eggpu
import eggpu.language as tl
from eggpu.batch import BatchFailure, BatchResult
from eggpu.kernels import get


@eggpu.kernel
def broken_kernel(x_ptr: tl.Pointer[tl.f32], BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) * NOT_DEFINED_ANYWHERE)  # noqa: F821


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "cache"
    monkeypatch.setenv("EGGPU_CACHE_DIR", str(d))
    return d


def _batch():
    va, relu = get("vector_add").fn.Kernel, get("relu_forward").fn.Kernel
    return [va[tl.f32](256), relu[tl.f32](128), broken_kernel.Kernel(64), va[tl.f16](512)]


def _check(result: BatchResult, kernels: list) -> None:
    assert len(result) == 4 and not result.ok
    bad = result.failures
    assert len(bad) == 1 and result[2] is bad[0] and isinstance(bad[0], BatchFailure)
    assert bad[0].index == 2 and "broken_kernel" in str(bad[0]) and "NOT_DEFINED_ANYWHERE" in str(bad[0])
    for i in (0, 1, 3):
        ck = result[i]
        assert isinstance(ck, eggpu.CompiledKernel) and ck.name == kernels[i].name
        assert ck.ptx == eggpu.compile(kernels[i], cache=False).ptx
    with pytest.raises(eggpu.CompileError, match=r"1 of 4 instances failed to compile:\n  instance 2 \(broken_kernel"):
        result.raise_failures()


def test_forked_workers_return_every_success_and_report_each_failure(cache_dir: Path) -> None:
    kernels = _batch()
    result = eggpu.compile_many(kernels, workers=2, progress=False)
    _check(result, kernels)
    # the workers filled the shared cache: compiling again here is a hit
    assert eggpu.compile(kernels[0]).report["cache"] == "hit"
    x = np.arange(256, dtype=np.float32)
    y = np.ones(256, dtype=np.float32)
    out = np.zeros(256, dtype=np.float32)
    result[0].run_cpu((1,), x, y, out, np.int32(256))
    np.testing.assert_array_equal(out, x + y)


def test_threads_replace_an_unsafe_fork(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import eggpu.batch as batch

    monkeypatch.setattr(batch, "_egglog_forks_cleanly", lambda: False)  # egglog 13.2 imported here
    real, made = batch._fork_pool, []
    monkeypatch.setattr(batch, "_fork_pool", lambda n: made.append(real(n)) or made[-1])
    kernels = _batch()
    _check(eggpu.compile_many(kernels, workers=2, progress=False), kernels)
    assert made == [None]  # no process pool: threads


def test_fork_safety_follows_the_egglog_version(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    import eggpu.batch as batch

    monkeypatch.setitem(sys.modules, "egglog.bindings", object())
    monkeypatch.setattr(batch, "_egglog_major", lambda: 13)
    assert not batch._egglog_forks_cleanly()
    monkeypatch.setattr(batch, "_egglog_major", lambda: 14)
    assert batch._egglog_forks_cleanly()
    monkeypatch.delitem(sys.modules, "egglog.bindings")
    monkeypatch.setattr(batch, "_egglog_major", lambda: 13)
    assert batch._egglog_forks_cleanly()  # not imported yet: the children import it themselves


def test_an_executor_runs_the_same_jobs(cache_dir: Path) -> None:
    kernels = _batch()
    seen = []
    with ThreadPoolExecutor(max_workers=2) as ex:
        result = eggpu.compile_many(kernels, executor=ex, progress=lambda d, t, item: seen.append((d, t)))
    _check(result, kernels)
    assert sorted(seen) == [(1, 4), (2, 4), (3, 4), (4, 4)]


def test_serial_batch_and_progress_on_stderr(cache_dir: Path, capsys: pytest.CaptureFixture) -> None:
    kernels = _batch()
    result = eggpu.compile_many(kernels, workers=1, progress=True)
    _check(result, kernels)
    err = capsys.readouterr().err
    assert "eggpu: compiled 4/4 (1 failed)" in err


def test_bad_arguments_fail_the_call() -> None:
    kernels = _batch()
    with pytest.raises(eggpu.CompileError, match="workers must be a positive integer, got 0"):
        eggpu.compile_many(kernels, workers=0)
    with pytest.raises(eggpu.CompileError, match=r"compile_many: unknown keyword argument 'optimise'; did you mean 'optimize'\?"):
        eggpu.compile_many(kernels, optimise=False)
    with pytest.raises(eggpu.CompileError, match="executor must be a concurrent.futures.Executor, got int"):
        eggpu.compile_many(kernels, executor=3)
