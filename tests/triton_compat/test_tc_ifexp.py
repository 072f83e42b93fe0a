"""``a if c else b`` on a runtime condition. Triton lowers it to an ``scf.if``: only the taken side
runs. eggpu computes a side without effects unconditionally (``tl.where``) but lowers a side with a
load, store or atomic to an IR ``if``, so a guarded load never reads out of bounds and an atomic
in the untaken side never happens (found running unsloth's and attorch's kernels, whose
``x = 1.0 if s == 0 else s`` style is the pure case). Interpreter and compiled CPU lowering,
against numpy; misuse is one located error each."""

from __future__ import annotations

import numpy as np
import pytest

import eggpu
import eggpu.language as tl


@eggpu.jit
def guarded_gather(x_ptr, idx_ptr, out_ptr, n):
    pid = tl.program_id(0)
    i = tl.load(idx_ptr + pid)
    v = tl.load(x_ptr + i) if (i >= 0) & (i < n) else -1.0  # an index outside x is never read
    tl.store(out_ptr + pid, v)


@pytest.mark.parametrize("n", [1, 1000, 1001])
def test_guarded_load_reads_only_the_taken_side(run_both, n):
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(np.float32)
    idx = rng.integers(-3 * n, 3 * n, 64).astype(np.int32)
    idx[:2] = [n - 1, n]  # the last element, one past it
    want = np.where((idx >= 0) & (idx < n), x[np.clip(idx, 0, n - 1)], -1.0).astype(np.float32)
    res = run_both(guarded_gather, (64,), x, idx, np.zeros(64, np.float32), n)
    for device, (_, _, out) in res.items():
        np.testing.assert_array_equal(out, want, err_msg=device)


@eggpu.jit
def positive_prefix(x_ptr, out_ptr, n):
    i = 0
    while (tl.load(x_ptr + i) if i < n else -1.0) > 0:  # x[n] is never read
        i += 1
    tl.store(out_ptr, i)


@pytest.mark.parametrize("n", [1, 1000, 1001])
def test_guarded_load_in_a_while_condition(run_both, n):
    x = np.random.default_rng(n).random(n).astype(np.float32) + 0.5
    cut = x.copy()
    cut[n // 2] = -2.0
    for arr, want in ((x, n), (cut, n // 2)):
        res = run_both(positive_prefix, (1,), arr, np.zeros(1, np.int32), n)
        for device, (_, out) in res.items():
            assert out[0] == want, device


@eggpu.jit
def count_even_programs(counter_ptr, old_ptr):
    pid = tl.program_id(0)
    old = tl.atomic_add(counter_ptr, 1) if pid % 2 == 0 else -7
    tl.store(old_ptr + pid, old)


@pytest.mark.parametrize("programs", [1, 1000, 1001])
def test_atomic_runs_only_when_taken(run_both, programs):
    res = run_both(count_even_programs, (programs,), np.zeros(1, np.int32), np.zeros(programs, np.int32))
    evens = (programs + 1) // 2
    for device, (counter, old) in res.items():
        assert counter[0] == evens, device  # was `programs` when both sides ran
        assert (old[1::2] == -7).all(), device
        np.testing.assert_array_equal(np.sort(old[0::2]), np.arange(evens), err_msg=device)


@eggpu.jit
def pure_sides(x_ptr, out_ptr, s, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    y = x * 2.0 if s > 0 else x - 1.0  # a scalar condition, no effect: both sides computed
    z = y if y > 0 else 0.5 * y  # a per-element condition: tl.where(y > 0, y, 0.5 * y)
    tl.store(out_ptr + offs, z, mask=offs < n)


@pytest.mark.parametrize("n", [1, 1000, 1001])
@pytest.mark.parametrize("s", [3, -2])
def test_pure_sides_are_a_select(run_both, n, s):
    x = np.random.default_rng(10 * n + (s > 0)).standard_normal(n).astype(np.float32)
    y = x * 2 if s > 0 else x - 1
    want = np.where(y > 0, y, 0.5 * y)
    res = run_both(pure_sides, (eggpu.cdiv(n, 128),), x, np.zeros(n, np.float32), s, n, BLOCK=128)
    for device, (_, out) in res.items():
        np.testing.assert_array_equal(out, want, err_msg=device)


def _ops(fn, *args, **consts) -> list[str]:
    return [op.op for op in fn.specialize(*args, **consts).ir().body.ops]


def test_ir_if_only_for_a_side_with_an_effect():
    x, f = np.zeros(4, np.float32), np.zeros(4, np.float32)
    assert "if" in _ops(guarded_gather, x, np.zeros(4, np.int32), f, 4)
    assert "if" not in _ops(pure_sides, x, f, 1, 4, BLOCK=4)


@eggpu.jit
def misuse(x_ptr, out_ptr, WHICH: tl.constexpr):
    offs = tl.arange(0, 8)
    i = tl.program_id(0)
    v = tl.zeros([8], tl.float32)
    if WHICH == 0:
        v = tl.load(x_ptr + offs) if offs < 4 else 0.0
    if WHICH == 1:
        v = tl.load(x_ptr + i) if i < 4 else tl.load(x_ptr + i).to(tl.float16)
    if WHICH == 2:
        v = tl.load(x_ptr + i) if i < 4 else None
    tl.store(out_ptr + offs, v)


@pytest.mark.parametrize("which, marker, message", [
    (0, "tl.load(x_ptr + offs) if",
     "load in a conditional expression on a per-element condition: both sides would run for every element"),
    (1, "tl.load(x_ptr + i) if",
     "a conditional expression with load on a runtime condition gives f32 on one side and f16 on the "
     "other (only the taken side runs, as in an if)"),
    (2, "tl.load(x_ptr + i) if",
     "the else side of a conditional expression with load is None: only a block or a number can be "
     "chosen at run time"),
])
def test_misuse_is_located(located_which, which, marker, message):
    located_which(misuse, which, marker, message, np.zeros(8, np.float32), np.zeros(8, np.float32))
