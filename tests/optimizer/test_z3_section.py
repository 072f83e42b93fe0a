"""The z3 section (optimizer._z3_section): z3 work runs under one lock with the cyclic GC paused,
so no other thread's collection frees z3 terms while z3 runs (Z3_dec_ref releases the GIL), and
the cycles made inside are collected before the lock is released."""

from __future__ import annotations

import gc

import z3

from eggpu import optimizer


class _Cycle:
    freed = 0

    def __init__(self) -> None:
        self.me = self
        self.term = z3.BitVec("x", 8) + 1

    def __del__(self) -> None:
        _Cycle.freed += 1


def test_the_gc_is_paused_inside_and_restored_after():
    assert gc.isenabled()
    with optimizer._z3_section():
        assert not gc.isenabled()
        with optimizer._z3_section():  # nested (the lock is re-entrant): still paused
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_disabled_gc_stays_disabled():
    gc.disable()
    try:
        with optimizer._z3_section():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_cycles_holding_z3_terms_are_freed_before_the_lock_is_released():
    before = _Cycle.freed
    with optimizer._z3_section():
        for _ in range(50):
            _Cycle()
        assert _Cycle.freed == before  # a cycle is not freed by reference counting
    assert _Cycle.freed == before + 50


def test_an_exception_inside_restores_the_gc():
    try:
        with optimizer._z3_section():
            raise ValueError("boom")
    except ValueError:
        pass
    assert gc.isenabled()
    assert optimizer._Z3_DEPTH[0] == 0
