"""libdevice parsed in a background thread during the optimizer (eggpu.codegen.libdevice_prefetch).

The prefetched parse (of the whole file or of the stored math cut) must not change the PTX (the same subset, cut from the same bytes), must be
used only by the compile (thread) that started it, only for the same file, and never be in the
middle of a parse when the process forks.
"""

from __future__ import annotations

import os
import shutil
import threading

import numpy as np
import pytest

import eggpu
import eggpu.language as tl
from eggpu.codegen import libdevice, libdevice_prefetch, toolchain
from eggpu.kernels import gelu_forward, layer_norm_forward, softmax_forward, vector_add
from eggpu.language.extra import libdevice as libdevice_fns

pytestmark = pytest.mark.usefixtures("needs_libdevice")


@pytest.fixture(autouse=True)
def _cold(monkeypatch):
    """Every compile here cuts its subset from libdevice: no process or disk copy."""
    monkeypatch.setenv("EGGPU_LIBDEVICE_CACHE", "0")
    libdevice.clear_cache()
    yield
    libdevice.clear_cache()


def _spy(monkeypatch) -> list[bool]:
    """Record, per subset cut from libdevice, whether it came from a prefetched parse."""
    used: list[bool] = []
    real = libdevice_prefetch.take

    def take(file_key, data):
        got = real(file_key, data)
        used.append(got is not None)
        return got

    monkeypatch.setattr(libdevice_prefetch, "take", take)
    return used


KERNELS = [(gelu_forward.Kernel[tl.f32](1024), "sm_90"), (softmax_forward.Kernel[tl.f32](256), "sm_80"),
           (layer_norm_forward.Kernel[tl.f16](512), "sm_90")]


@pytest.mark.parametrize("kernel,target", KERNELS, ids=lambda v: getattr(v, "id", v))
def test_prefetched_and_own_parse_give_the_same_ptx(monkeypatch, kernel, target):
    used = _spy(monkeypatch)
    with_prefetch = eggpu.compile(kernel, target=target, cache=False)
    assert used == [True]
    libdevice.clear_cache()
    monkeypatch.setenv("EGGPU_LIBDEVICE_PREFETCH", "0")
    without = eggpu.compile(kernel, target=target, cache=False)
    assert used == [True, False]
    assert with_prefetch.ptx == without.ptx
    assert not libdevice_prefetch._live  # closed when the compile ended


def test_only_a_kernel_with_transcendental_ops_and_only_the_first_subset_prefetch(monkeypatch):
    started: list[object] = []
    real = libdevice_prefetch.start
    monkeypatch.setattr(libdevice_prefetch, "start", lambda fn: started.append(real(fn)) or started[-1])
    eggpu.compile(vector_add.Kernel[tl.f32](256), cache=False)
    assert started == [None]  # no exp/erf/rsqrt...: nothing to parse
    eggpu.compile(softmax_forward.Kernel[tl.f32](128), cache=False)
    assert started[1] is not None
    eggpu.compile(softmax_forward.Kernel[tl.f32](256), cache=False)
    assert started[2] is None  # the process has a subset now: later compiles usually reuse it


def test_a_prefetch_serves_its_own_thread_once_and_only_for_the_same_bytes():
    fn = softmax_forward.Kernel[tl.f32](64).ir()
    pre = libdevice_prefetch.start(fn)
    assert pre is not None
    key = libdevice.file_key()
    data, _ = libdevice._read(key)
    other: list[object] = []
    t = threading.Thread(target=lambda: other.append(libdevice_prefetch.take(key, data)))
    t.start()
    t.join()
    assert other == [None]  # another thread's compile never takes this thread's module
    assert libdevice_prefetch.take(key, data[:-1] + b"?") is None  # other bytes: not used (and kept)
    assert libdevice_prefetch.take((key[0], key[1], key[2] + 1), data) is None  # another file state
    got = libdevice_prefetch.take(key, data)
    assert got is not None and libdevice_prefetch.take(key, data) is None  # taken once
    mod, ctx = got
    assert "__nv_expf" in {f.name for f in mod.functions}
    mod.close()
    ctx.close()
    pre.close()
    assert libdevice_prefetch.take(key, data) is None and not libdevice_prefetch._live


def test_a_corrupt_file_is_reported_by_the_compile_as_without_prefetch(monkeypatch, tmp_path):
    copy = tmp_path / "libdevice.10.bc"
    shutil.copyfile(toolchain.find_libdevice(), copy)
    copy.write_bytes(b"not bitcode at all, and longer than the magic")
    monkeypatch.setenv("EGGPU_LIBDEVICE", str(copy))
    toolchain.clear_caches()
    try:
        used = _spy(monkeypatch)
        with pytest.raises(eggpu.CodegenError, match=f"cannot read libdevice bitcode {copy}"):
            eggpu.compile(softmax_forward.Kernel[tl.f32](128), cache=False)
        assert used == [False]  # the thread's parse failed: the compile parsed the file itself
    finally:
        toolchain.clear_caches()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork")
def test_fork_waits_for_a_running_parse_and_the_child_has_no_prefetch():
    pre = libdevice_prefetch.start(softmax_forward.Kernel[tl.f32](64).ir())
    assert pre is not None
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: no prefetch of its own (the parent's is not its to free)
        os.close(r)
        os.write(w, b"1" if getattr(libdevice_prefetch._local, "prefetch", None) is None else b"0")
        os._exit(0)
    os.close(w)
    alive_after_fork = pre._thread.is_alive()
    child_clean = os.read(r, 1)
    os.close(r)
    os.waitpid(pid, 0)
    assert not alive_after_fork  # the parse had ended before the fork
    assert child_clean == b"1"
    assert pre.module is not None  # still the parent's to use
    pre.close()
    assert pre.module is None and not libdevice_prefetch._live


def _store_math_cut(monkeypatch, tmp_path) -> None:
    """A cache directory with libdevice's math cut stored (toolchain/, made by the first libdevice
    compile), the disk layer on, no subset in the process or on disk (libdevice/ removed)."""
    monkeypatch.setenv("EGGPU_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("EGGPU_LIBDEVICE_CACHE")
    monkeypatch.setenv("EGGPU_LIBDEVICE_PREFETCH", "0")
    eggpu.compile(gelu_forward.Kernel[tl.f32](256), cache=False)
    monkeypatch.delenv("EGGPU_LIBDEVICE_PREFETCH")
    assert libdevice.math_cut_stored()
    shutil.rmtree(tmp_path / "libdevice")
    libdevice.clear_cache()


def test_once_the_math_cut_is_stored_the_prefetch_parses_it_not_libdevice(monkeypatch, tmp_path):
    """With the math cut on disk a new set of functions is cut from that ~107 KB cut, so the
    thread parses those bytes (read by start), filed under the cut's key, not the file's."""
    fn = softmax_forward.Kernel[tl.f32](64).ir()
    assert libdevice.stored_math_cut() is None  # the fixture's EGGPU_LIBDEVICE_CACHE=0: no disk layer
    pre = libdevice_prefetch.start(fn)
    assert pre is not None and pre.file_key == libdevice.file_key()  # the whole file
    pre.close()
    _store_math_cut(monkeypatch, tmp_path)
    slot, data = libdevice.stored_math_cut()
    assert slot[0] == "libdevice math cut" and slot != libdevice.file_key()
    pre = libdevice_prefetch.start(fn)
    assert pre is not None and pre.file_key == slot
    whole, _ = libdevice._read(libdevice.file_key())
    assert libdevice_prefetch.take(libdevice.file_key(), whole) is None  # not the whole file's parse
    assert libdevice_prefetch.take(slot, data[:-1] + b"?") is None  # other bytes: not used
    mod, ctx = libdevice_prefetch.take(slot, data)
    names = {f.name for f in mod.functions if not f.is_declaration}
    assert "__nv_expf" in names and len(names) < 200  # the cut, not libdevice's 352 definitions
    mod.close()
    ctx.close()
    pre.close()


@pytest.mark.parametrize("kernel,target", KERNELS, ids=lambda v: getattr(v, "id", v))
def test_a_prefetched_math_cut_gives_the_same_ptx(monkeypatch, tmp_path, kernel, target):
    _store_math_cut(monkeypatch, tmp_path)
    used = _spy(monkeypatch)
    with_prefetch = eggpu.compile(kernel, target=target, cache=False)
    assert used == [True]  # the math cut came from the thread
    shutil.rmtree(tmp_path / "libdevice")
    libdevice.clear_cache()
    monkeypatch.setenv("EGGPU_LIBDEVICE_PREFETCH", "0")
    without = eggpu.compile(kernel, target=target, cache=False)
    assert used == [True, False]  # parsed here
    assert with_prefetch.ptx == without.ptx
    assert not libdevice_prefetch._live


def test_a_damaged_stored_math_cut_is_not_used_from_the_thread_and_is_replaced(monkeypatch, tmp_path):
    """The thread's parse of a damaged cut fails (dropped); the compile cuts it again from
    libdevice and stores it, and the PTX is the one of an intact cut."""
    _store_math_cut(monkeypatch, tmp_path)
    kernel = softmax_forward.Kernel[tl.f32](128)
    good = eggpu.compile(kernel, cache=False).ptx
    shutil.rmtree(tmp_path / "libdevice")
    libdevice.clear_cache()
    (entry,) = (tmp_path / "toolchain").glob("*.bc")
    entry.write_bytes(b"BC\xc0\xde but damaged past the magic")
    used = _spy(monkeypatch)
    assert eggpu.compile(kernel, cache=False).ptx == good
    assert used and not any(used)  # neither the cut (its parse failed) nor the whole file came from the thread
    assert entry.read_bytes()[:4] == b"BC\xc0\xde" and libdevice.math_cut_stored()
    libdevice.clear_cache()
    assert libdevice_prefetch.start(kernel.ir()).file_key[0] == "libdevice math cut"


@eggpu.jit
def _next_up(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(y_ptr + offs, libdevice_fns.nextafter(x, x + 1.0), mask=m)


def _next_up_kernel(n: int = 1000):
    x = np.zeros(n, np.float32)
    return _next_up.specialize(x, x.copy(), n, BLOCK=256)


def test_a_libdevice_op_outside_the_math_cut_prefetches_the_whole_file(monkeypatch, tmp_path):
    """``libdevice.nextafter`` (a ``libdevice`` op, no transcendental op) needs ``__nv_nextafterf``,
    which the math cut lacks: the thread parses the whole file even with the cut stored, the
    compile cuts the subset from that parse, and the PTX is the one of a parse of its own."""
    _store_math_cut(monkeypatch, tmp_path)
    kernel = _next_up_kernel()
    pre = libdevice_prefetch.start(kernel.ir())
    assert pre is not None and pre.file_key == libdevice.file_key()
    pre.close()
    used = _spy(monkeypatch)
    with_prefetch = eggpu.compile(kernel, cache=False)
    assert used == [True] and "__nv_nextafterf" in with_prefetch.llvm_ir
    shutil.rmtree(tmp_path / "libdevice")
    libdevice.clear_cache()
    monkeypatch.setenv("EGGPU_LIBDEVICE_PREFETCH", "0")
    without = eggpu.compile(kernel, cache=False)
    assert used == [True, False]
    assert with_prefetch.ptx == without.ptx
