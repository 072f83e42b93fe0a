"""``tl.where`` choosing per lane between pointers of different arguments (Triton allows it): loads,
stores and atomics through such a block go to each lane's own buffer, in the interpreter and in
run_cpu, and an out-of-bounds lane is an OutOfBoundsError naming the kernel, the lane and the
buffer."""

from __future__ import annotations

import os

import numpy as np
import pytest

import eggpu
import eggpu.language as tl
from eggpu.ir.errors import OutOfBoundsError


@eggpu.jit
def gather_two(A, B, Out, N, K: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    p = tl.where(offs % K == 0, A + offs, B + offs)
    tl.store(Out + offs, tl.load(p, mask=m, other=-1.0), mask=m)


@eggpu.jit
def scatter_two(X, A, B, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(X + offs, mask=m)
    p = tl.where(x > 0, A + offs, B + (N - 1 - offs))  # different offsets per side too
    tl.store(p, x, mask=m)


@eggpu.jit
def count_signs(X, Pos, Neg, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(X + offs, mask=m)
    p = tl.where(x >= 0, Pos + offs % 4, Neg + offs % 4)
    tl.atomic_add(p, x, mask=m)


@eggpu.jit
def three_way_2d(A, B, C, Out, R, S: tl.constexpr):
    rows = tl.arange(0, 8)[:, None]
    cols = tl.arange(0, S)[None, :]
    offs = rows * S + cols
    p = tl.where(cols == 0, A + offs, B + offs)
    p = tl.where(rows % 3 == 2, C + offs, p)  # a mixed block chosen against a third buffer
    p = tl.trans(p) + 0  # shape ops and pointer arithmetic keep each lane's buffer
    q = tl.where(tl.trans(rows) < R, p, A + tl.trans(offs))
    same = q == p
    v = tl.load(q)
    tl.store(Out + tl.trans(offs), tl.where(same, v, -v))


def _run(fn, grid, *args, **consts):
    got = {}
    for device in ("interpret", "cpu"):
        os.environ["EGGPU_JIT_DEVICE"] = device
        copies = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        try:
            fn[grid](*copies, **consts)
        finally:
            os.environ.pop("EGGPU_JIT_DEVICE", None)
        got[device] = [a for a in copies if isinstance(a, np.ndarray)]
    return got


@pytest.mark.parametrize("n", [1, 1000, 1001])
@pytest.mark.parametrize("k", [2, 3])
def test_loads_through_a_per_lane_choice_of_buffers_match_numpy(n, k):
    rng = np.random.default_rng(n + k)
    a, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    want = np.where(np.arange(n) % k == 0, a, b)
    for _, _, out in _run(gather_two, ((n + 127) // 128,), a, b, np.zeros(n, np.float32), n, K=k,
                          BLOCK=128).values():
        np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("n", [1, 1000, 1001])
def test_stores_through_a_per_lane_choice_of_buffers_match_numpy(n):
    x = np.random.default_rng(n).integers(-50, 50, n).astype(np.int32)
    want_a, want_b = np.full(n, 7, np.int32), np.full(n, 9, np.int32)
    pos = x > 0
    want_a[pos] = x[pos]
    want_b[(n - 1 - np.arange(n))[~pos]] = x[~pos]
    for _, a, b in _run(scatter_two, ((n + 255) // 256,), x, np.full(n, 7, np.int32), np.full(n, 9, np.int32), n,
                        BLOCK=256).values():
        np.testing.assert_array_equal(a, want_a)
        np.testing.assert_array_equal(b, want_b)


@pytest.mark.parametrize("n", [1, 1000, 1001])
def test_atomics_through_a_per_lane_choice_of_buffers_match_numpy(n):
    x = np.random.default_rng(n).integers(-1000, 1000, n).astype(np.int64)
    i = np.arange(n) % 4
    want_pos = np.array([x[(i == j) & (x >= 0)].sum() for j in range(4)], np.int64)
    want_neg = np.array([x[(i == j) & (x < 0)].sum() for j in range(4)], np.int64)
    for _, pos, neg in _run(count_signs, ((n + 127) // 128,), x, np.zeros(4, np.int64), np.zeros(4, np.int64), n,
                            BLOCK=128).values():
        assert pos.tolist() == want_pos.tolist() and neg.tolist() == want_neg.tolist()


@pytest.mark.parametrize("r", [0, 5, 8])
def test_mixed_blocks_through_shape_ops_and_comparisons_match_numpy(r):
    s = 4
    a, b, c = (np.arange(32, dtype=np.float32) + base for base in (100, 200, 300))
    rows, cols = np.arange(8)[:, None], np.arange(s)[None, :]
    p_buf = np.where(rows % 3 == 2, 2, np.where(cols == 0, 0, 1))
    offs = rows * s + cols
    picked = np.choose(p_buf, [a[offs], b[offs], c[offs]])
    keep = rows < r
    want = np.where(keep, picked, np.where(p_buf == 0, a[offs], -a[offs]))  # stored at offs: untransposed
    for *_, out in _run(three_way_2d, (1,), a, b, c, np.zeros(32, np.float32), r, S=s).values():
        np.testing.assert_array_equal(out.reshape(8, s), want)


def test_an_out_of_bounds_lane_names_its_own_buffer():
    n = 300
    a, b = np.arange(n, dtype=np.float32), np.zeros(200, np.float32)  # b too short: lane 200 of it
    msgs = {}
    for device in ("interpret", "cpu"):
        os.environ["EGGPU_JIT_DEVICE"] = device
        try:
            with pytest.raises(OutOfBoundsError) as e:
                gather_two[(3,)](a, b, np.zeros(n, np.float32), n, K=3, BLOCK=128)
        finally:
            os.environ.pop("EGGPU_JIT_DEVICE", None)
        msgs[device] = str(e.value)
    # program 1, lane 72: offset 200, 200 % 3 != 0, so B's
    assert msgs["interpret"].startswith("gather_two: load at ")
    assert msgs["interpret"].endswith("in program 1: out-of-bounds access: lane (72,) reads offset 200 of buffer "
                                      "'B' which has 200 element(s)")
    assert msgs["cpu"].endswith("in program 1: out-of-bounds access: lane (72,) reads outside every buffer it may "
                                "point into, 'A' (300 element(s)) or 'B' (200 element(s)): offset 200 from 'B'")


def test_the_interpreter_checks_each_lane_against_its_own_buffer_even_where_arrays_are_adjacent():
    big = np.arange(40, dtype=np.float32)
    a, b = big[:20], big[20:]  # a lane of A past its end lands inside B's memory
    with pytest.raises(OutOfBoundsError, match=r"lane \(20,\) reads offset 20 of buffer 'A' which has 20 element"):
        gather_two.specialize(a, b, np.zeros(40, np.float32), 40, K=2, BLOCK=64).interpret(
            (1,), a, b, np.zeros(40, np.float32), 40)
