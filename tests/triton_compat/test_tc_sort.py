"""``tl.sort``, ``tl.swizzle2d`` and ``tl.reduce_or`` (Triton's standard library) against numpy, in
the interpreter and run_cpu, and compiled to PTX that ptxas accepts."""

from __future__ import annotations

import numpy as np
import pytest

import eggpu
import eggpu.language as tl
from eggpu.ir.errors import ToolchainError


@eggpu.jit
def sort_prefix(X, Y, N, FILL: tl.constexpr, DESC: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs < N, other=FILL)  # padding sorts past the n values
    tl.store(Y + offs, tl.sort(x, descending=DESC), mask=offs < N)


@eggpu.jit
def sort_2d(X, Y, DIM: tl.constexpr, R: tl.constexpr, C: tl.constexpr):
    offs = tl.arange(0, R)[:, None] * C + tl.arange(0, C)[None, :]
    tl.store(Y + offs, tl.load(X + offs).sort(DIM))


def _block(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


@pytest.mark.parametrize("n", [1, 1000, 1001])
@pytest.mark.parametrize("desc", [False, True])
def test_sort_matches_numpy_on_ragged_sizes(run_both, n, desc):
    x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    x[::7] = x[1::7][: x[::7].size] if n > 1 else x[::7]  # duplicates
    want = np.sort(x)[::-1] if desc else np.sort(x)
    fill = float("-inf") if desc else float("inf")
    for _, y in run_both(sort_prefix, (1,), x, np.zeros(n, np.float32), n, FILL=fill, DESC=desc,
                         BLOCK=_block(n)).values():
        np.testing.assert_array_equal(y, want)


@pytest.mark.parametrize("dt", [np.int8, np.uint32, np.int64, np.float16])
def test_sort_integer_and_other_float_dtypes(run_both, dt):
    n = 64
    rng = np.random.default_rng(3)
    x = (rng.integers(0, 200, n) if np.dtype(dt).kind in "iu" else rng.standard_normal(n) * 100).astype(dt)
    if np.dtype(dt).kind == "i":
        x = (x.astype(np.int64) - 100).astype(dt)
    info = np.iinfo(dt).max if np.dtype(dt).kind in "iu" else np.inf
    for _, y in run_both(sort_prefix, (1,), x, np.zeros(n, dt), n, FILL=info, DESC=False, BLOCK=n).values():
        np.testing.assert_array_equal(y, np.sort(x))


def test_sort_keeps_signed_zeros_bools_and_sorts_along_either_axis(run_both):
    x = np.array([0.0, -0.0, 1.0, -0.0, 0.0, -1.0, 0.0, -0.0], np.float32)
    for _, y in run_both(sort_prefix, (1,), x, np.zeros(8, np.float32), 8, FILL=0.0, DESC=False, BLOCK=8).values():
        assert y[0] == -1.0 and y[-1] == 1.0
        assert sorted(np.signbit(y[1:-1]).tolist()) == sorted(np.signbit(x[[0, 1, 3, 4, 6, 7]]).tolist())
    b = np.array([True, False, True, True, False, False, True, False])
    for _, y in run_both(sort_prefix, (1,), b, np.zeros(8, bool), 8, FILL=True, DESC=True, BLOCK=8).values():
        assert y.tolist() == [True] * 4 + [False] * 4
    m = np.random.default_rng(9).integers(-99, 99, (8, 16)).astype(np.int32)
    for dim in (0, 1, -1):
        for _, y in run_both(sort_2d, (1,), m, np.zeros_like(m), DIM=dim, R=8, C=16).values():
            np.testing.assert_array_equal(y, np.sort(m, axis=dim))


def test_sort_errors_name_the_argument():
    x = np.zeros(8, np.float32)
    with pytest.raises(eggpu.CompileError, match="tl.sort: descending must be a compile-time bool, got a str"):
        sort_prefix.specialize(x, x.copy(), 8, FILL=0.0, DESC="yes", BLOCK=8).ir()
    with pytest.raises(eggpu.CompileError, match=r"tl.sort: dim must be a compile-time int in \[-2, 2\), got the compile-time int 2"):
        sort_2d.specialize(np.zeros((4, 8), np.float32), np.zeros((4, 8), np.float32), DIM=2, R=4, C=8).ir()


@eggpu.jit
def swizzled(I, J, SI, SJ, SG, BI: tl.constexpr, BJ: tl.constexpr):
    i = tl.arange(0, BI)[:, None]
    j = tl.arange(0, BJ)[None, :]
    ni, nj = tl.swizzle2d(i, j, SI, SJ, SG)
    tl.store(I + i * BJ + j, ni)
    tl.store(J + i * BJ + j, nj)


def _swizzle_reference(size_i: int, size_j: int, size_g: int) -> tuple[np.ndarray, np.ndarray]:
    """Each group of ``size_g`` rows, its cells listed column by column, takes the group's row-major
    indices in order."""
    ni, nj = np.zeros((size_i, size_j), np.int64), np.zeros((size_i, size_j), np.int64)
    for g0 in range(0, size_i, size_g):
        rows = range(g0, min(g0 + size_g, size_i))
        cells = [(r, c) for c in range(size_j) for r in rows]
        for k, (r, c) in enumerate(cells):
            f = g0 * size_j + k
            ni.flat[f], nj.flat[f] = r, c
    return ni, nj


def test_swizzle2d_is_tritons_documented_example(run_both):
    # Triton's docstring: 4 x 4, groups of 2 rows; M[new_i, new_j] = i * 4 + j
    want = np.array([[0, 2, 4, 6], [1, 3, 5, 7], [8, 10, 12, 14], [9, 11, 13, 15]])
    for ni, nj in run_both(swizzled, (1,), np.zeros(16, np.int32), np.zeros(16, np.int32), 4, 4, 2, BI=4, BJ=4).values():
        m = np.zeros((4, 4), np.int64)
        m[ni.reshape(4, 4), nj.reshape(4, 4)] = np.arange(16).reshape(4, 4)
        np.testing.assert_array_equal(m, want)


@pytest.mark.parametrize("size_i, size_j, size_g", [(16, 8, 3), (13, 7, 4), (1, 1, 1), (8, 16, 8), (5, 3, 7)])
def test_swizzle2d_matches_a_group_by_group_reference(run_both, size_i, size_j, size_g):
    bi, bj = _block(size_i), _block(size_j)
    want_i, want_j = _swizzle_reference(size_i, size_j, size_g)
    for ni, nj in run_both(swizzled, (1,), np.zeros(bi * bj, np.int32), np.zeros(bi * bj, np.int32), size_i, size_j,
                           size_g, BI=bi, BJ=bj).values():
        np.testing.assert_array_equal(ni.reshape(bi, bj)[:size_i, :size_j], want_i)
        np.testing.assert_array_equal(nj.reshape(bi, bj)[:size_i, :size_j], want_j)


@eggpu.jit
def or_rows(X, Y, N, BLOCK: tl.constexpr):
    offs = tl.arange(0, 2)[:, None] * BLOCK + tl.arange(0, BLOCK)[None, :]
    x = tl.load(X + offs, mask=tl.arange(0, BLOCK)[None, :] < N, other=0)
    tl.store(Y + tl.arange(0, 2), tl.reduce_or(x, 1))
    tl.store(Y + 2, tl.reduce_or(x, None))


@pytest.mark.parametrize("n", [1, 1000, 1001])
def test_reduce_or_matches_numpy(run_both, n):
    block = _block(n)
    x = np.zeros((2, block), np.uint32)
    x[:, :n] = np.random.default_rng(n).integers(0, 2**32, (2, n), dtype=np.uint32) & (1 << np.arange(n) % 32)
    want = np.r_[np.bitwise_or.reduce(x[:, :n], axis=1), np.bitwise_or.reduce(x[:, :n], axis=None)]
    for _, y in run_both(or_rows, (1,), x, np.zeros(3, np.uint32), n, BLOCK=block).values():
        np.testing.assert_array_equal(y, want)
    with pytest.raises(eggpu.CompileError, match="tl.reduce_or needs an integer block, got f32"):
        or_rows.specialize(x.astype(np.float32), np.zeros(3, np.float32), n, BLOCK=block).ir()


def test_sort_and_swizzle_compile_to_ptx_that_ptxas_accepts():
    x = np.zeros(128, np.float32)
    sk = eggpu.compile(sort_prefix.specialize(x, x.copy(), 100, FILL=float("inf"), DESC=False, BLOCK=128),
                       target="sm_90")
    z = np.zeros(64, np.int32)
    wk = eggpu.compile(swizzled.specialize(z, z.copy(), 8, 8, 3, BI=8, BJ=8), target="sm_80")
    assert ".visible .entry" in sk.ptx and ".visible .entry" in wk.ptx
    from eggpu.codegen.ptxas import run_ptxas
    from eggpu.codegen.toolchain import find_ptxas

    try:
        find_ptxas()
    except ToolchainError:
        pytest.skip("ptxas not installed")
    assert run_ptxas(sk.ptx, "sm_90").registers > 0
    assert run_ptxas(wk.ptx, "sm_80").registers > 0
