"""Scans and combine-function reductions (``tl.cumsum``, ``tl.cumprod``, ``tl.associative_scan``,
``tl.reduce``, ``tl.xor_sum``) against numpy, in the interpreter and the compiled CPU lowering,
on ragged sizes, along both axes of 2-D blocks, reversed, and with tuple combine functions."""

from __future__ import annotations

import numpy as np
import pytest

import eggpu
import eggpu.language as tl
from eggpu.kernel_macro.diagnostics import KernelCompileError


@eggpu.jit
def cumsum_1d(x_ptr, out_ptr, rev_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0)
    tl.store(out_ptr + offs, tl.cumsum(x, 0), mask=offs < n)
    tl.store(rev_ptr + offs, x.cumsum(0, reverse=True), mask=offs < n)


@pytest.mark.parametrize("n", [1, 1000, 1001])
@pytest.mark.parametrize("dt", [np.int32, np.float32, np.int8], ids=str)
def test_cumsum_ragged(run_both, n, dt):
    rng = np.random.default_rng(n)
    x = rng.integers(-20, 20, n).astype(dt) if dt != np.float32 else rng.standard_normal(n).astype(dt)
    acc = np.int32 if dt == np.int8 else dt  # narrow ints sum in i32, as Triton's _pick_sum_dtype
    out, rev = np.zeros(n, acc), np.zeros(n, acc)
    res = run_both(cumsum_1d, (1,), x, out, rev, n, BLOCK=1024 if n <= 1024 else 2048)
    want = np.cumsum(x.astype(np.float64 if dt == np.float32 else np.int64))
    want_rev = np.cumsum(x[::-1].astype(np.float64 if dt == np.float32 else np.int64))[::-1]
    for device, (_, o, r) in res.items():
        if dt == np.float32:  # a tree order of additions: compare with a tolerance
            np.testing.assert_allclose(o, want, rtol=1e-4, atol=1e-3, err_msg=device)
            np.testing.assert_allclose(r, want_rev, rtol=1e-4, atol=1e-3, err_msg=device)
        else:
            np.testing.assert_array_equal(o, want.astype(acc), err_msg=device)
            np.testing.assert_array_equal(r, want_rev.astype(acc), err_msg=device)


@eggpu.jit
def scans_2d(x_ptr, out_ptr, ROWS: tl.constexpr, COLS: tl.constexpr, AXIS: tl.constexpr):
    r = tl.arange(0, ROWS)[:, None]
    c = tl.arange(0, COLS)[None, :]
    x = tl.load(x_ptr + r * COLS + c)
    tl.store(out_ptr + r * COLS + c, tl.cumprod(x, AXIS))
    tl.store(out_ptr + ROWS * COLS + r * COLS + c, tl.cumsum(x, AXIS))


@pytest.mark.parametrize("axis", [0, 1])
def test_cumprod_cumsum_2d(run_both, axis):
    x = np.random.default_rng(axis).integers(-3, 4, (8, 16)).astype(np.int32)
    res = run_both(scans_2d, (1,), x, np.zeros(2 * 128, np.int32), ROWS=8, COLS=16, AXIS=axis)
    want = np.concatenate([np.cumprod(x, axis=axis).ravel(), np.cumsum(x, axis=axis).ravel()]).astype(np.int32)
    for device, (_, out) in res.items():
        np.testing.assert_array_equal(out, want, err_msg=device)


@eggpu.jit
def affine_combine(a1, b1, a2, b2):
    """Composition of x -> a*x + b maps (associative, not commutative)."""
    return a1 * a2, b1 * a2 + b2


@eggpu.jit
def linear_recurrence(a_ptr, b_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    a = tl.load(a_ptr + offs)
    b = tl.load(b_ptr + offs)
    _, h = tl.associative_scan((a, b), 0, affine_combine)
    tl.store(out_ptr + offs, h)


def test_associative_scan_tuple_non_commutative(run_both):
    rng = np.random.default_rng(7)
    a = rng.integers(-2, 3, 64).astype(np.int64)
    b = rng.integers(-9, 10, 64).astype(np.int64)
    res = run_both(linear_recurrence, (1,), a, b, np.zeros(64, np.int64), N=64)
    h, want = 0, []
    for ai, bi in zip(a.tolist(), b.tolist()):
        h = ai * h + bi  # h_t = a_t * h_{t-1} + b_t with h_{-1} = 0
        want.append(h)
    want = (np.array([w % 2**64 for w in want], np.uint64)).view(np.int64)
    for device, (_, _, out) in res.items():
        np.testing.assert_array_equal(out, want, err_msg=device)


@eggpu.jit
def argmax_combine(v1, i1, v2, i2):
    take_left = (v1 > v2) | ((v1 == v2) & (i1 < i2))
    return tl.where(take_left, v1, v2), tl.where(take_left, i1, i2)


@eggpu.jit
def max_fn(a, b):
    return tl.maximum(a, b)


@eggpu.jit
def reductions(x_ptr, out_ptr, idx_ptr, ROWS: tl.constexpr, COLS: tl.constexpr):
    r = tl.arange(0, ROWS)[:, None]
    c = tl.arange(0, COLS)[None, :]
    x = tl.load(x_ptr + r * COLS + c)
    rows = tl.arange(0, ROWS)
    tl.store(out_ptr + rows, tl.reduce(x, 1, max_fn))
    cols = tl.arange(0, COLS)
    v, i = tl.reduce((x, tl.broadcast_to(r, (ROWS, COLS))), 0, argmax_combine)
    tl.store(out_ptr + ROWS + cols, v)
    tl.store(idx_ptr + cols, i)
    tl.store(out_ptr + ROWS + COLS, tl.reduce(x, None, max_fn))
    kept = x.reduce(1, max_fn, keep_dims=True)
    tl.store(out_ptr + ROWS + COLS + 1 + r, kept)
    xi = x.to(tl.int32, bitcast=True)
    tl.store(idx_ptr + COLS + rows, tl.xor_sum(xi, 1))


@pytest.mark.parametrize("rows,cols", [(4, 8), (1, 16), (8, 1)])
def test_reduce_with_combine(run_both, rows, cols):
    x = np.random.default_rng(rows).integers(-5, 5, (rows, cols)).astype(np.float32)
    res = run_both(reductions, (1,), x, np.zeros(2 * rows + cols + 1, np.float32),
                   np.zeros(cols + rows, np.int32), ROWS=rows, COLS=cols)
    xi = x.view(np.int32)
    for device, (_, out, idx) in res.items():
        np.testing.assert_array_equal(out[:rows], x.max(axis=1), err_msg=device)
        np.testing.assert_array_equal(out[rows:rows + cols], x.max(axis=0), err_msg=device)
        np.testing.assert_array_equal(idx[:cols], x.argmax(axis=0), err_msg=device)  # first maximum
        assert out[rows + cols] == x.max()
        np.testing.assert_array_equal(out[rows + cols + 1:], x.max(axis=1), err_msg=device)
        np.testing.assert_array_equal(idx[cols:], np.bitwise_xor.reduce(xi, axis=1), err_msg=device)


@eggpu.jit
def bad_combine(a, b, c):
    return a


@eggpu.jit
def wrong_arity(x_ptr):
    x = tl.load(x_ptr + tl.arange(0, 4))
    tl.store(x_ptr + tl.arange(0, 4), tl.associative_scan(x, 0, bad_combine))


@eggpu.jit
def bool_cumprod(x_ptr):
    x = tl.load(x_ptr + tl.arange(0, 4)) > 0
    tl.store(x_ptr + tl.arange(0, 4), tl.cumprod(x, 0).to(tl.float32))


@eggpu.jit
def bad_axis(x_ptr):
    x = tl.load(x_ptr + tl.arange(0, 4))
    tl.store(x_ptr + tl.arange(0, 4), tl.cumsum(x, axis=1))


@pytest.mark.parametrize("fn,problem", [
    (wrong_arity, "bad_combine(): missing a required argument: 'c'"),
    (bool_cumprod, "tl.cumprod needs a numeric block, got bool[4]"),
    (bad_axis, "tl.cumsum: axis must be a compile-time int in [-1, 1), got the compile-time int 1"),
])
def test_scan_errors(fn, problem):
    with pytest.raises(KernelCompileError) as ei:
        fn.specialize(np.zeros(4, np.float32)).ir()
    assert problem in str(ei.value).splitlines()[0]
