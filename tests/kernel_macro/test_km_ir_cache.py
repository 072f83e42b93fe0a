"""The per-process IR cache (kernel_macro.ir_cache): bounded, least recently used evicted first."""

from __future__ import annotations

import threading

import pytest

import eggpu
import eggpu.language as tl
from eggpu.kernel_macro import frontend, kernel
from eggpu.kernel_macro.ir_cache import IR_CACHE_SIZE, LruCache


@eggpu.kernel
def scale(x_ptr: tl.Pointer[tl.f32], BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) * 2.0)


def test_lru_evicts_the_least_recently_used_entry():
    c: LruCache[str] = LruCache(3)
    for k in "abc":
        c.put(k, "d", k.upper())
    assert c.get("a", "d") == "A"  # a is now the most recently used: b is the oldest
    c.put("d", "d", "D")
    assert len(c) == 3 and "b" not in c
    assert [c.get(k, "d") for k in "acd"] == ["A", "C", "D"]
    c.put("e", "d", "E")  # the oldest now: a (c and d were read after it)
    assert "a" not in c and len(c) == 3


def test_lru_stale_digest_misses_and_put_replaces():
    c: LruCache[int] = LruCache(2)
    c.put("k", "old", 1)
    assert c.get("k", "new") is None and c.get("k", "old") == 1
    c.put("k", "new", 2)
    assert len(c) == 1 and c.get("k", "new") == 2 and c.get("k", "old") is None
    c.clear()
    assert len(c) == 0 and c.get("k", "new") is None


@pytest.mark.parametrize("bad", [0, -3, 2.5, True, "8"])
def test_lru_rejects_a_bad_size(bad):
    with pytest.raises(ValueError) as e:
        LruCache(bad)
    assert str(e.value) == f"LruCache maxsize must be a positive int, got {bad!r}"


def test_lru_is_thread_safe_and_stays_bounded():
    c: LruCache[int] = LruCache(7)

    def work(t: int) -> None:
        for i in range(500):
            c.put((t, i % 13), "d", i)
            c.get((t, (i * 7) % 13), "d")

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert len(c) == 7


def test_the_kernel_ir_cache_is_bounded_by_the_documented_size():
    assert isinstance(kernel._IR_CACHE, LruCache) and kernel._IR_CACHE.maxsize == IR_CACHE_SIZE == 256


def test_kernel_ir_lowers_again_only_after_eviction(monkeypatch):
    monkeypatch.setattr(kernel, "_IR_CACHE", LruCache(2))
    calls: list[int] = []
    real = frontend.lower_kernel

    def counting(fn, name, params, consts, binding):
        calls.append(consts["BLOCK"])
        return real(fn, name, params, consts, binding)

    monkeypatch.setattr(frontend, "lower_kernel", counting)
    k16, k32, k64 = (scale.Kernel(b) for b in (16, 32, 64))
    first = k16.ir()
    assert k16.ir() is not first and str(k16.ir()) == str(first)  # a fresh copy of the cached IR
    k32.ir()
    assert calls == [16, 32]
    k16.ir()  # a hit: 16 becomes the most recently used, 32 the oldest
    k64.ir()  # evicts 32
    assert calls == [16, 32, 64] and len(kernel._IR_CACHE) == 2
    k16.ir()
    k32.ir()  # evicted: lowered again
    assert calls == [16, 32, 64, 32]
