"""``tl.gather``, ``join``/``split``/``interleave``, ``cat``, ``flip``, ``permute``/``view``/``ravel``
and ``tl.histogram`` against numpy, in the interpreter and the compiled CPU lowering."""

from __future__ import annotations

import numpy as np
import pytest

import eggpu
import eggpu.language as tl
from eggpu.kernel_macro.diagnostics import KernelCompileError


@eggpu.jit
def gather_rows(x_ptr, idx_ptr, out_ptr, ROWS: tl.constexpr, COLS: tl.constexpr, K: tl.constexpr):
    """out[k, c] = x[idx[k, c], c] (axis 0) and out2[r, k] = x[r, idx2[r, k]] (axis 1)."""
    r = tl.arange(0, ROWS)[:, None]
    c = tl.arange(0, COLS)[None, :]
    k = tl.arange(0, K)[:, None]
    x = tl.load(x_ptr + r * COLS + c)
    idx = tl.load(idx_ptr + k * COLS + c)
    tl.store(out_ptr + k * COLS + c, tl.gather(x, idx, 0))
    kc = tl.arange(0, K)[None, :]
    idx2 = tl.load(idx_ptr + K * COLS + r * K + kc)
    tl.store(out_ptr + K * COLS + r * K + kc, tl.gather(x, idx2, axis=1))


def test_gather_both_axes(run_both):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 8)).astype(np.float32)
    i0 = rng.integers(0, 4, (16, 8)).astype(np.int32)
    i1 = rng.integers(0, 8, (4, 16)).astype(np.int32)
    res = run_both(gather_rows, (1,), x, np.concatenate([i0.ravel(), i1.ravel()]), np.zeros(128 + 64, np.float32),
                   ROWS=4, COLS=8, K=16)
    want = np.concatenate([np.take_along_axis(x, i0, 0).ravel(), np.take_along_axis(x, i1, 1).ravel()])
    for device, (_, _, out) in res.items():
        np.testing.assert_array_equal(out, want, err_msg=device)


@eggpu.jit
def lookup(table_ptr, idx_ptr, out_ptr, n, T: tl.constexpr, BLOCK: tl.constexpr):
    """A table lookup on ragged sizes: gather from a small table by loaded indices."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    table = tl.load(table_ptr + tl.arange(0, T))
    idx = tl.load(idx_ptr + offs, mask=mask, other=0)
    tl.store(out_ptr + offs, tl.gather(table, idx, 0), mask=mask)


@pytest.mark.parametrize("n", [1, 1000, 1001])
def test_gather_lookup_ragged(run_both, n):
    rng = np.random.default_rng(n)
    table = rng.integers(-1000, 1000, 16).astype(np.int64)
    idx = rng.integers(0, 16, n).astype(np.int32)
    res = run_both(lookup, (-(-n // 256),), table, idx, np.zeros(n, np.int64), n, T=16, BLOCK=256)
    for device, (_, _, out) in res.items():
        np.testing.assert_array_equal(out, table[idx], err_msg=device)


@eggpu.jit
def shuffles(a_ptr, b_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    a = tl.load(a_ptr + offs)
    b = tl.load(b_ptr + offs)
    j = tl.join(a, b)                       # [N, 2]
    tl.store(out_ptr + offs[:, None] * 2 + tl.arange(0, 2)[None, :], j)
    lo, hi = tl.split(j)
    tl.store(out_ptr + 2 * N + offs, hi - lo)
    tl.store(out_ptr + 3 * N + tl.arange(0, 2 * N), tl.interleave(a, b))
    tl.store(out_ptr + 5 * N + tl.arange(0, 2 * N), tl.cat(a, b, can_reorder=True))
    tl.store(out_ptr + 7 * N + offs, tl.flip(a))
    m = tl.reshape(a, (4, N // 4))
    tl.store(out_ptr + 8 * N + offs, tl.ravel(tl.permute(m, (1, 0))))
    tl.store(out_ptr + 9 * N + offs, m.flip(0).view(N))


def test_join_split_interleave_cat_flip(run_both):
    n = 16
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    res = run_both(shuffles, (1,), a, b, np.zeros(10 * n, np.float32), N=n)
    m = a.reshape(4, n // 4)
    want = np.concatenate([np.stack([a, b], -1).ravel(), b - a, np.stack([a, b], -1).ravel(),
                           np.concatenate([a, b]), a[::-1], m.T.ravel(), m[::-1].ravel()])
    for device, (_, _, out) in res.items():
        np.testing.assert_array_equal(out, want, err_msg=device)


@eggpu.jit
def scalar_join(out_ptr, x):
    p = tl.join(x, x + 1)                   # two scalars -> a block of 2
    lo, hi = tl.split(p)                    # and back to two scalars
    tl.store(out_ptr + tl.arange(0, 2), p)
    tl.store(out_ptr + 2, lo * 10 + hi)


def test_join_split_scalars(run_both):
    res = run_both(scalar_join, (1,), np.zeros(3, np.int32), 4)
    for device, (out,) in res.items():
        assert out.tolist() == [4, 5, 45], device


@eggpu.jit
def cat_unequal(a_ptr, b_ptr, out_ptr, N: tl.constexpr, M: tl.constexpr):
    a = tl.load(a_ptr + tl.arange(0, N))
    b = tl.load(b_ptr + tl.arange(0, M))
    tl.store(out_ptr + tl.arange(0, N + M), tl.cat(a, b.to(tl.int64), can_reorder=True))


def test_cat_unequal_lengths_promotes(run_both):
    a, b = np.arange(8, dtype=np.int32), -np.arange(1, 17, dtype=np.int32)
    res = run_both(cat_unequal, (1,), a, b, np.zeros(24, np.int64), N=8, M=16)
    for device, (_, _, out) in res.items():
        np.testing.assert_array_equal(out, np.concatenate([a, b]).astype(np.int64), err_msg=device)


@eggpu.jit
def hist(x_ptr, out_ptr, n, BINS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0)
    h = tl.histogram(x, BINS, mask=offs < n)
    tl.atomic_add(out_ptr + tl.arange(0, BINS), h)


@pytest.mark.parametrize("n", [1, 1000, 1001])
@pytest.mark.parametrize("bins", [8, 256])
def test_histogram_ragged(run_both, n, bins):
    x = np.random.default_rng(n).integers(-2, bins + 2, n).astype(np.int32)  # some values outside the bins
    res = run_both(hist, (-(-n // 128),), x, np.zeros(bins, np.int32), n, BINS=bins, BLOCK=128)
    want = np.bincount(x[(x >= 0) & (x < bins)], minlength=bins)
    for device, (_, out) in res.items():
        np.testing.assert_array_equal(out, want, err_msg=device)


@eggpu.jit
def bad_split(x_ptr):
    x = tl.load(x_ptr + tl.arange(0, 4))
    a, b = tl.split(x)
    tl.store(x_ptr, a + b)


@eggpu.jit
def bad_gather(x_ptr):
    x = tl.load(x_ptr + tl.arange(0, 4))
    tl.store(x_ptr + tl.arange(0, 4), tl.gather(x, x, 0))


@pytest.mark.parametrize("fn,problem", [
    (bad_split, "tl.split needs a block whose last dimension is 2, got shape [4]"),
    (bad_gather, "tl.gather: index must be an integer block, got f32[4]"),
])
def test_shuffle_errors(fn, problem):
    with pytest.raises(KernelCompileError) as ei:
        fn.specialize(np.zeros(4, np.float32)).ir()
    assert problem in str(ei.value).splitlines()[0]
