"""Tests of the reference interpreter (eggpu.ir.interp) on programs built with the Builder.

Op semantics are tested against independent formulations in test_op_reference.py; here we test
what the interpreter owns: leaves, pointers and addptr, memory ops (masks, bounds, duplicates,
atomics), control flow, the grid and argument checking; every InterpreterError message is tested in
test_interp_errors.py.
"""

from __future__ import annotations

import dataclasses
import sys

import numpy as np
import pytest
from interp_helpers import (
    atomic_kernel,
    cdiv,
    message,
    ptr_at,
    scatter_kernel,
    splat,
    tile_reduce_kernel,
    vadd_kernel,
)

from eggpu.ir import Builder, bf16, block, bool_, f16, f32, i8, i32, i64, pointer, scalar, u8
from eggpu.ir.errors import InterpreterError
from eggpu.ir.interp import PointerValue, interpret
from eggpu.ir.ops import OPS

# ------------------------------------------------------------------ vector add


@pytest.mark.parametrize("n", [1, 1000, 1001, 4097])
def test_vector_add_masked_edges(n):
    fn = vadd_kernel(128)
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    out = np.full(n, -7.0, dtype=np.float32)
    # buffers have exactly n elements: an unmasked lane past n would raise out-of-bounds
    interpret(fn, cdiv(n, 128), x, y, out, n)
    np.testing.assert_array_equal(out, x + y)


def test_vector_add_partial_n_leaves_rest_untouched():
    fn = vadd_kernel(64)
    x = np.arange(200, dtype=np.float32)
    y = np.ones(200, dtype=np.float32)
    out = np.full(200, -1.0, dtype=np.float32)
    interpret(fn, 4, x, y, out, 150)  # 4 * 64 = 256 lanes, only 150 written
    np.testing.assert_array_equal(out[:150], x[:150] + 1)
    np.testing.assert_array_equal(out[150:], -1.0)


def test_vector_add_f16_and_bf16_round_like_the_reference():
    for dt in (f16, bf16):
        fn = vadd_kernel(32, dt)
        x = np.linspace(-3, 3, 100).astype(dt.np)
        y = np.linspace(1e-3, 7, 100).astype(dt.np)
        out = np.zeros(100, dtype=dt.np)
        interpret(fn, 4, x, y, out, 100)
        want = OPS["add"].reference({}, x, y, dtype=dt)
        np.testing.assert_array_equal(out.view(np.uint16), want.view(np.uint16))


def _python_calls(block: int, grid: int, n: int) -> int:
    """Python and C function calls one ``interpret`` of the vector add makes (after a warm-up):
    a count of the interpreter's work that, unlike a wall-clock time, does not depend on load."""
    fn = vadd_kernel(block)
    x, y, out = np.ones(n, np.float32), np.ones(n, np.float32), np.zeros(n, np.float32)
    interpret(fn, grid, x, y, out, n)
    count = 0

    def profile(frame, event, arg):
        nonlocal count
        count += event in ("call", "c_call")

    sys.setprofile(profile)
    try:
        interpret(fn, grid, x, y, out, n)
    finally:
        sys.setprofile(None)
    np.testing.assert_array_equal(out, 2.0)
    return count


def test_the_interpreter_is_vectorized_over_lanes():
    # a block op is one numpy call whatever its width: 4096 lanes cost what 128 do, and 32
    # programs at most 32 times one program (plus a little per-launch setup)
    one = _python_calls(128, 1, 128)
    assert _python_calls(4096, 1, 4096) == one
    assert _python_calls(128, 32, 4096) <= 32 * one


# ------------------------------------------------------------------ 2-D blocks, broadcast, reductions




@pytest.mark.parametrize("R,C", [(37, 23), (16, 16), (1, 40)])
def test_2d_tiles_broadcast_and_reductions_along_each_axis(R, C):
    BR, BC = 16, 16
    fn = tile_reduce_kernel(BR, BC)
    rng = np.random.default_rng(R * 100 + C)
    a = rng.integers(-50, 50, size=(R, C)).astype(np.float32)  # integers: sums are exact
    nrb, ncb = cdiv(R, BR), cdiv(C, BC)
    rowsum = np.zeros((ncb, R), np.float32)
    colmax = np.zeros((nrb, C), np.float32)
    colarg = np.zeros((nrb, C), np.int32)
    interpret(fn, (nrb, ncb), a, rowsum, colmax, colarg, R, C)
    for cb in range(ncb):
        np.testing.assert_array_equal(rowsum[cb], a[:, cb * BC:(cb + 1) * BC].sum(axis=1))
    np.testing.assert_array_equal(rowsum.sum(axis=0), a.sum(axis=1))
    for rb in range(nrb):
        part = a[rb * BR:(rb + 1) * BR]
        np.testing.assert_array_equal(colmax[rb], part.max(axis=0))
        np.testing.assert_array_equal(colarg[rb], part.argmax(axis=0))


# ------------------------------------------------------------------ control flow


def loop_kernel():
    """out[0] = sum(range(lo, hi, step)); out[1] = number of iterations; out[2] = last iv (or -1)."""
    b = Builder("loop", [("out", pointer(i32)), ("lo", scalar(i32)), ("hi", scalar(i32)), ("step", scalar(i32))])
    out, lo, hi, step = b.params
    s32 = scalar(i32)
    with b.region([s32, s32, s32, s32]) as body:
        iv, acc, cnt, _last = body.args
        b.yield_(b.op("add", acc, iv), b.op("add", cnt, b.const(1, i32)), iv)
    loop = b.for_(lo, hi, step, [b.const(0, i32), b.const(0, i32), b.const(-1, i32)], body)
    for k, r in enumerate(loop.results):
        b.effect("store", b.op("addptr", out, b.const(k, i32)), r)
    return b.finish()


@pytest.mark.parametrize("lo,hi,step", [(0, 10, 1), (3, 17, 4), (10, 0, -3), (5, 5, 1), (7, 2, 1), (-4, 9, 5)])
def test_for_loop_carried_values_runtime_bounds(lo, hi, step):
    fn = loop_kernel()
    out = np.zeros(3, np.int32)
    interpret(fn, 1, out, lo, hi, step)
    r = list(range(lo, hi, step))
    assert out.tolist() == [sum(r), len(r), r[-1] if r else -1]


def test_for_loop_step_zero_is_an_error():
    fn = loop_kernel()
    with pytest.raises(InterpreterError) as e:
        interpret(fn, 1, np.zeros(3, np.int32), 4, 9, 0)
    msg = message(e)
    assert "loop" in msg and "for" in msg and "step is 0" in msg and "lo=4" in msg and "hi=9" in msg


def test_for_loop_carries_a_pointer_and_nests():
    """Outer loop over rows advances a carried pointer; inner loop sums the row."""
    b = Builder("rows", [("a", pointer(i32)), ("out", pointer(i32)), ("R", scalar(i32)), ("C", scalar(i32))])
    a, out, R, C = b.params
    s32, pa = scalar(i32), pointer(i32)
    zero, one = b.const(0, i32), b.const(1, i32)
    with b.region([s32, pa]) as outer:
        r, p = outer.args
        with b.region([s32, s32]) as inner:
            c, acc = inner.args
            b.yield_(b.op("add", acc, b.op("load", b.op("addptr", p, c))))
        row_sum = b.for_(zero, C, one, [zero], inner).results[0]
        b.effect("store", b.op("addptr", out, r), row_sum)
        b.yield_(b.op("addptr", p, C))
    b.for_(zero, R, one, [a], outer)
    fn = b.finish()
    arr = np.arange(35, dtype=np.int32).reshape(5, 7)
    res = np.zeros(5, np.int32)
    interpret(fn, 1, arr, res, 5, 7)
    np.testing.assert_array_equal(res, arr.sum(axis=1))


def test_while_loop_runs_its_condition_region_on_the_carried_values():
    """Halve x until it is below t, counting the steps: results are the carried values when the
    condition first fails (zero iterations keep the initial values)."""
    b = Builder("halve", [("out", pointer(i32)), ("x", scalar(i32)), ("t", scalar(i32))])
    out, x, t = b.params
    s32 = scalar(i32)
    zero, one = b.const(0, i32), b.const(1, i32)
    with b.region([s32, s32]) as cond:
        v, _ = cond.args
        b.yield_(b.op("ge", v, t))
    with b.region([s32, s32]) as body:
        v, k = body.args
        b.yield_(b.op("shr", v, one), b.op("add", k, one))
    v_end, k_end = b.while_([x, zero], cond, body).results
    b.effect("store", out, v_end)
    b.effect("store", b.op("addptr", out, one), k_end)
    fn = b.finish()
    for xv, tv in [(1000, 3), (5, 9), (7, 7)]:
        res = np.zeros(2, np.int32)
        interpret(fn, 1, res, xv, tv)
        v, k = xv, 0
        while v >= tv:
            v, k = v >> 1, k + 1
        assert res.tolist() == [v, k]


def nested_if_kernel():
    """out[pid] = 1 if x > 0 and y > 0; 2 if x > 0 and y <= 0; 3 if x <= 0 (per program)."""
    b = Builder("classify", [("xs", pointer(f32)), ("ys", pointer(f32)), ("out", pointer(i32))])
    xs, ys, out = b.params
    pid = b.op("program_id", axis=0)
    x = b.op("load", b.op("addptr", xs, pid))
    y = b.op("load", b.op("addptr", ys, pid))
    zero = b.const(0.0, f32)
    s32 = scalar(i32)
    with b.region() as then_outer:
        with b.region() as then_inner:
            b.yield_(b.const(1, i32))
        with b.region() as else_inner:
            b.yield_(b.const(2, i32))
        inner = b.if_(b.op("gt", y, zero), then_inner, else_inner, [s32])
        b.yield_(inner.results[0])
    with b.region() as else_outer:
        b.yield_(b.const(3, i32))
    res = b.if_(b.op("gt", x, zero), then_outer, else_outer, [s32]).results[0]
    # an if without results whose branch stores
    with b.region() as then_store:
        b.effect("store", b.op("addptr", out, pid), res)
        b.yield_()
    with b.region() as else_store:
        b.effect("store", b.op("addptr", out, pid), b.op("neg", res))
        b.yield_()
    b.if_(b.op("eq", x, x), then_store, else_store, [])  # NaN x takes the else branch
    return b.finish()


def test_nested_if():
    fn = nested_if_kernel()
    xs = np.array([1.0, 2.0, -1.0, 0.0, np.nan, 5.0], np.float32)
    ys = np.array([1.0, -3.0, 9.0, 1.0, 1.0, 0.0], np.float32)
    out = np.zeros(6, np.int32)
    interpret(fn, 6, xs, ys, out)
    assert out.tolist() == [1, 2, 3, 3, -3, 2]


# ------------------------------------------------------------------ memory


def masked_load_other_kernel(n_block: int, dt=f32, other_value=-5.0):
    b = Builder("load_other", [("x", pointer(dt)), ("out", pointer(dt)), ("n", scalar(i32))])
    x, out, n = b.params
    offs = b.op("arange", start=0, end=n_block)
    mask = b.op("lt", offs, splat(b, n, (n_block,)))
    other = splat(b, b.const(other_value, dt), (n_block,))
    v = b.op("load", ptr_at(b, x, offs), mask, other)
    b.effect("store", ptr_at(b, out, offs), v)
    return b.finish()


def test_masked_load_uses_other_and_reads_only_unmasked_lanes():
    fn = masked_load_other_kernel(16)
    x = np.arange(10, dtype=np.float32)  # 10 elements; lanes 10..15 would be out of bounds
    out = np.zeros(16, np.float32)
    interpret(fn, 1, x, out, 10)
    np.testing.assert_array_equal(out, np.r_[x, np.full(6, -5.0)])


def test_masked_load_without_other_gives_zero():
    b = Builder("load0", [("x", pointer(i32)), ("out", pointer(i32))])
    x, out = b.params
    offs = b.op("arange", start=0, end=8)
    mask = b.op("lt", offs, splat(b, b.const(3, i32), (8,)))
    b.effect("store", ptr_at(b, out, offs), b.op("load", ptr_at(b, x, offs), mask))
    fn = b.finish()
    out = np.full(8, 9, np.int32)
    interpret(fn, 1, np.array([4, 5, 6], np.int32), out)
    assert out.tolist() == [4, 5, 6, 0, 0, 0, 0, 0]




def test_store_duplicate_addresses_last_lane_wins():
    fn = scatter_kernel(8)
    idx = np.array([2, 0, 2, 1, 0, 2, 3, 3], np.int32)
    val = np.array([10, 11, 12, 13, 14, 15, 16, 17], np.int32)
    out = np.zeros(4, np.int32)
    interpret(fn, 1, idx, val, out, 8)
    assert out.tolist() == [14, 13, 15, 17]
    out = np.zeros(4, np.int32)
    interpret(fn, 1, idx, val, out, 5)  # lanes 5.. masked: 2 <- 12 (lane 2), 3 untouched
    assert out.tolist() == [14, 13, 12, 0]




def test_atomic_add_duplicate_addresses_returns_running_old_values():
    fn = atomic_kernel("atomic_add", 8)
    idx = np.array([0, 1, 0, 0, 2, 1, 0, 3], np.int32)
    val = np.array([1, 2, 3, 4, 5, 6, 7, 8], np.int32)
    out = np.array([100, 200, 300, 400], np.int32)
    old = np.full(8, -1, np.int32)
    interpret(fn, 1, idx, val, out, old, 6)  # lanes 6, 7 masked: not applied, old value 0
    assert out.tolist() == [100 + 1 + 3 + 4, 200 + 2 + 6, 300 + 5, 400]
    assert old.tolist() == [100, 200, 101, 104, 300, 202, 0, 0]


def test_atomic_add_across_programs_accumulates():
    fn = atomic_kernel("atomic_add", 4, f32, masked=False)
    idx = np.zeros(4, np.int32)
    val = np.array([0.5, 1.0, 2.0, 4.0], np.float32)
    out = np.zeros(1, np.float32)
    old = np.zeros(4, np.float32)
    interpret(fn, 3, idx, val, out, old, 4)  # three programs, 12 adds into out[0]
    assert out[0] == 3 * 7.5
    # program 2 ran last: its old values continue from 15.0
    np.testing.assert_array_equal(old, [15.0, 15.5, 16.5, 18.5])


@pytest.mark.parametrize("op,val,expect_out,expect_old", [
    ("atomic_max", [8, 2, 9, 1, 6], [9, 5, 7], [5, 5, 8, 9, 7]),
    ("atomic_min", [3, 1, 4, 9, 6], [3, 1, 6], [5, 5, 3, 3, 7]),
    ("atomic_xchg", [3, 2, 4, 1, 6], [1, 2, 6], [5, 5, 3, 4, 7]),
])
def test_atomic_max_min_xchg(op, val, expect_out, expect_old):
    fn = atomic_kernel(op, 5)
    idx = np.array([0, 1, 0, 0, 2], np.int32)  # lanes 0, 2, 3 hit address 0 in that order
    out = np.array([5, 5, 7], np.int32)
    old = np.zeros(5, np.int32)
    interpret(fn, 1, idx, np.array(val, np.int32), out, old, 5)
    assert out.tolist() == expect_out
    assert old.tolist() == expect_old


def test_atomic_max_float_follows_maximum_reference():
    fn = atomic_kernel("atomic_max", 3, f32)
    idx = np.array([0, 0, 1], np.int32)
    val = np.array([np.nan, 2.0, 0.0], np.float32)
    out = np.array([1.0, -0.0], np.float32)
    old = np.zeros(3, np.float32)
    interpret(fn, 1, idx, val, out, old, 3)
    assert out[0] == 2.0  # NaN ignored (maximumNumber), then max(1, 2)
    assert out[1] == 0.0 and not np.signbit(out[1])  # max(-0.0, +0.0) = +0.0
    assert old[0] == 1.0 and old[1] == 1.0


def test_atomic_cas_duplicates_and_mask():
    b = Builder("cas", [("lock", pointer(i32)), ("old", pointer(i32))])
    lock, old = b.params
    offs = b.op("arange", start=0, end=6)
    where = b.op("rem", offs, splat(b, b.const(2, i32), (6,)))  # 0 1 0 1 0 1
    cmp = b.op("div", offs, splat(b, b.const(2, i32), (6,)))  # 0 0 1 1 2 2
    val = b.op("add", cmp, splat(b, b.const(1, i32), (6,)))  # 1 1 2 2 3 3
    r = b.op("atomic_cas", ptr_at(b, lock, where), cmp, val)
    b.effect("store", ptr_at(b, old, offs), r)
    fn = b.finish()
    lock = np.array([0, 5], np.int32)
    old = np.zeros(6, np.int32)
    interpret(fn, 1, lock, old)
    # address 0: lanes 0 (0==0 -> 1), 2 (1==1 -> 2), 4 (2==2 -> 3); address 1 never matches 5
    assert lock.tolist() == [3, 5]
    assert old.tolist() == [0, 5, 1, 5, 2, 5]


def test_scalar_atomic_and_program_order_is_row_major():
    """Each program takes a ticket from one counter: tickets follow row-major program order."""
    b = Builder("ticket", [("counter", pointer(i32)), ("out", pointer(i32))], grid_rank=3)
    counter, out = b.params
    p0, p1, p2 = (b.op("program_id", axis=a) for a in range(3))
    n1, n2 = b.op("num_programs", axis=1), b.op("num_programs", axis=2)
    lin = b.op("add", b.op("mul", b.op("add", b.op("mul", p0, n1), p1), n2), p2)
    ticket = b.op("atomic_add", counter, b.const(1, i32))
    b.effect("store", b.op("addptr", out, lin), ticket)
    fn = b.finish()
    counter = np.zeros(1, np.int32)
    out = np.full(2 * 3 * 4, -1, np.int32)
    interpret(fn, (2, 3, 4), counter, out)
    assert counter[0] == 24
    assert out.tolist() == list(range(24))


def test_grid_zero_runs_nothing_and_grid_padding():
    fn = vadd_kernel(4)
    out = np.zeros(4, np.float32)
    interpret(fn, 0, np.ones(4, np.float32), np.ones(4, np.float32), out, 4)
    assert not out.any()
    interpret(fn, (1,), np.ones(4, np.float32), np.ones(4, np.float32), out, 4)
    assert out.tolist() == [2.0] * 4


@pytest.mark.parametrize("grid,axis,size,most", [(2**40, "x", 2**40, 2**31 - 1), ((1, 70000), "y", 70000, 65535),
                                                  ((1, 1, 65536), "z", 65536, 65535)])
def test_grid_beyond_cuda_limits_is_an_error(grid, axis, size, most):
    """Regression: a 2**40 grid was accepted and ran for good."""
    fn = vadd_kernel(4)
    out = np.zeros(4, np.float32)
    with pytest.raises(InterpreterError) as e:
        interpret(fn, grid, np.ones(4, np.float32), np.ones(4, np.float32), out, 4)
    dims = grid if isinstance(grid, tuple) else (grid,)
    assert message(e) == (f"vadd: grid {dims} exceeds CUDA's limits: axis {axis} has {size} programs, at most {most} "
                          "are allowed (x at most 2147483647, y and z at most 65535)")
    assert not out.any()


def test_num_programs_reports_the_grid():
    b = Builder("np", [("out", pointer(i32))], grid_rank=2)
    (out,) = b.params
    b.effect("store", out, b.op("num_programs", axis=0))
    b.effect("store", b.op("addptr", out, b.const(1, i32)), b.op("num_programs", axis=1))
    b.effect("store", b.op("addptr", out, b.const(2, i32)), b.op("num_programs", axis=2))
    fn = b.finish()
    out = np.zeros(3, np.int32)
    interpret(fn, (5, 2), out)
    assert out.tolist() == [5, 2, 1]


# ------------------------------------------------------------------ pointers


def test_addptr_sign_and_zero_extension():
    b = Builder("ext", [("x", pointer(f32)), ("out", pointer(f32)), ("a", scalar(i8)), ("u", scalar(u8))])
    x, out, a, u = b.params
    mid = b.op("addptr", x, b.const(300, i32))
    b.effect("store", out, b.op("load", b.op("addptr", mid, a)))  # i8 -100: sign-extended
    b.effect("store", b.op("addptr", out, b.const(1, i64)), b.op("load", b.op("addptr", x, u)))  # u8 200
    fn = b.finish()
    x = np.arange(512, dtype=np.float32)
    out = np.zeros(2, np.float32)
    interpret(fn, 1, x, out, -100, 200)
    assert out.tolist() == [200.0, 200.0]


def test_pointer_shape_ops_where_and_compare():
    """2-D pointer block from expand_dims/broadcast/trans/reshape; where/eq/ne on pointers."""
    b = Builder("ptrs", [("a", pointer(i32)), ("out", pointer(i32)), ("flags", pointer(bool_))])
    a, out, flags = b.params
    r = b.op("arange", start=0, end=2)
    c = b.op("arange", start=0, end=3)
    r2 = b.op("broadcast", b.op("expand_dims", r, axis=1), shape=(2, 3))
    c2 = b.op("broadcast", b.op("expand_dims", c, axis=0), shape=(2, 3))
    offs = b.op("add", b.op("mul", r2, splat(b, b.const(3, i32), (2, 3))), c2)  # row-major [2,3]
    pa = b.op("addptr", b.op("broadcast", b.op("expand_dims", splat(b, a, (3,)), axis=0), shape=(2, 3)), offs)
    pt = b.op("trans", pa, perm=(1, 0))  # [3, 2]: pointer to a[r, c] at [c, r]
    flat = b.op("reshape", pt, shape=(6,))
    vals = b.op("load", flat)
    o6 = b.op("arange", start=0, end=6)
    b.effect("store", ptr_at(b, out, o6), vals)
    # where between two pointers into the same buffer
    first = b.op("lt", o6, splat(b, b.const(3, i32), (6,)))
    rev = b.op("addptr", splat(b, a, (6,)), b.op("sub", splat(b, b.const(5, i32), (6,)), o6))
    fwd = ptr_at(b, a, o6)
    sel = b.op("where", first, fwd, rev)
    b.effect("store", ptr_at(b, out, b.op("add", o6, splat(b, b.const(6, i32), (6,)))), b.op("load", sel))
    # pointer comparisons: same buffer compares offsets; different buffers never equal
    b.effect("store", ptr_at(b, flags, o6), b.op("eq", fwd, rev))
    b.effect("store", b.op("addptr", flags, b.const(6, i32)), b.op("ne", a, out))
    b.effect("store", b.op("addptr", flags, b.const(7, i32)), b.op("eq", a, out))
    fn = b.finish()
    arr = np.array([10, 11, 12, 13, 14, 15], np.int32)
    res = np.zeros(12, np.int32)
    fl = np.zeros(8, bool)
    interpret(fn, 1, arr, res, fl)
    assert res[:6].tolist() == [10, 13, 11, 14, 12, 15]
    assert res[6:].tolist() == [10, 11, 12, 12, 11, 10]
    assert fl.tolist() == [False, False, False, False, False, False, True, False]


def test_pointer_value_is_a_plain_holder():
    base = np.arange(4, dtype=np.int32)
    p = PointerValue(base, np.array([1, 2], np.int64), "x")
    q = p.with_offsets(np.array([3, 0], np.int32))
    assert q.base is base and q.offsets.dtype == np.int64 and q.shape == (2,) and q.name == "x"
    assert "x" in repr(q)


def test_same_array_passed_twice_shares_one_buffer():
    """where between two parameters bound to one array is allowed (same memory)."""
    b = Builder("alias", [("a", pointer(i32)), ("b", pointer(i32)), ("c", scalar(bool_))])
    pa, pb, c = b.params
    p = b.op("where", c, pa, b.op("addptr", pb, b.const(1, i32)))
    b.effect("store", p, b.const(42, i32))
    fn = b.finish()
    arr = np.zeros(2, np.int32)
    interpret(fn, 1, arr, arr, False)
    assert arr.tolist() == [0, 42]


# ------------------------------------------------------------------ tiled matmul with dot


def matmul_kernel(BM: int, BN: int, BK: int, in_dt=f32):
    """c[M, N] = a[M, K] @ b[K, N] (row-major); a K loop with carried accumulator and pointers."""
    params = [("a", pointer(in_dt)), ("b", pointer(in_dt)), ("c", pointer(f32)),
              ("M", scalar(i32)), ("N", scalar(i32)), ("K", scalar(i32))]
    b = Builder("matmul", params, grid_rank=2)
    a, bp, c, M, N, K = b.params
    pm, pn = b.op("program_id", axis=0), b.op("program_id", axis=1)

    def idx(pid, size):
        return b.op("add", splat(b, b.op("mul", pid, b.const(size, i32)), (size,)), b.op("arange", start=0, end=size))

    def grid2(v_rows, v_cols, shape):
        rows = b.op("broadcast", b.op("expand_dims", v_rows, axis=1), shape=shape)
        cols = b.op("broadcast", b.op("expand_dims", v_cols, axis=0), shape=shape)
        return rows, cols

    rm, rn, rk = idx(pm, BM), idx(pn, BN), b.op("arange", start=0, end=BK)
    am, ak = grid2(rm, rk, (BM, BK))
    bk, bn = grid2(rk, rn, (BK, BN))
    a_offs = b.op("add", b.op("mul", am, splat(b, K, (BM, BK))), ak)
    b_offs = b.op("add", b.op("mul", bk, splat(b, N, (BK, BN))), bn)
    a_ptrs = ptr_at(b, a, a_offs)
    b_ptrs = ptr_at(b, bp, b_offs)
    acc0 = splat(b, b.const(0.0, f32), (BM, BN))
    zero_a = splat(b, b.const(0.0, in_dt), (BM, BK))
    zero_b = splat(b, b.const(0.0, in_dt), (BK, BN))
    s32 = scalar(i32)
    with b.region([s32, block(f32, BM, BN), a_ptrs.type, b_ptrs.type]) as body:
        k0, acc, pa, pb = body.args
        kk = b.op("add", splat(b, k0, (BK,)), rk)
        a_mask = b.op("and", b.op("lt", am, splat(b, M, (BM, BK))),
                      b.op("lt", b.op("broadcast", b.op("expand_dims", kk, axis=0), shape=(BM, BK)),
                           splat(b, K, (BM, BK))))
        b_mask = b.op("and", b.op("lt", b.op("broadcast", b.op("expand_dims", kk, axis=1), shape=(BK, BN)),
                                  splat(b, K, (BK, BN))),
                      b.op("lt", bn, splat(b, N, (BK, BN))))
        ta = b.op("load", pa, a_mask, zero_a)
        tb = b.op("load", pb, b_mask, zero_b)
        acc2 = b.op("dot", ta, tb, acc)
        step_a = splat(b, b.const(BK, i32), (BM, BK))
        step_b = b.op("mul", splat(b, b.const(BK, i32), (BK, BN)), splat(b, N, (BK, BN)))
        b.yield_(acc2, b.op("addptr", pa, step_a), b.op("addptr", pb, step_b))
    loop = b.for_(b.const(0, i32), K, b.const(BK, i32), [acc0, a_ptrs, b_ptrs], body)
    acc = loop.results[0]
    cm, cn = grid2(rm, rn, (BM, BN))
    c_offs = b.op("add", b.op("mul", cm, splat(b, N, (BM, BN))), cn)
    c_mask = b.op("and", b.op("lt", cm, splat(b, M, (BM, BN))), b.op("lt", cn, splat(b, N, (BM, BN))))
    b.effect("store", ptr_at(b, c, c_offs), acc, c_mask)
    return b.finish()


@pytest.mark.parametrize("in_dt", [f32, f16])
def test_tiled_matmul_with_masked_edges(in_dt):
    M, K, N = 100, 70, 50
    B = 32
    fn = matmul_kernel(B, B, B, in_dt)
    rng = np.random.default_rng(7)
    a = rng.standard_normal((M, K)).astype(in_dt.np)
    bm = rng.standard_normal((K, N)).astype(in_dt.np)
    c = np.full((M, N), np.nan, np.float32)
    interpret(fn, (cdiv(M, B), cdiv(N, B)), a, bm, c, M, N, K)
    want = a.astype(np.float64) @ bm.astype(np.float64)
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-4)


# ------------------------------------------------------------------ scalars, consts, the op table


def test_scalar_params_are_converted_to_the_param_dtype():
    b = Builder("conv", [("out", pointer(f16)), ("x", scalar(f16)), ("k", scalar(i8)), ("flag", scalar(bool_))])
    out, x, k, flag = b.params
    kf = b.op("cast", k, dtype=f16)
    ff = b.op("cast", flag, dtype=f16)
    b.effect("store", out, x)
    b.effect("store", b.op("addptr", out, b.const(1, i32)), kf)
    b.effect("store", b.op("addptr", out, b.const(2, i32)), ff)
    fn = b.finish()
    out = np.zeros(3, np.float16)
    interpret(fn, 1, out, 0.1, np.int64(-128), np.bool_(True))
    assert out[0] == np.float16(0.1) and out[1] == -128 and out[2] == 1
    interpret(fn, 1, out, np.array(3), 127, 1)  # 0-d array, int for a float param, 1 for bool
    assert out.tolist() == [3.0, 127.0, 1.0]
    interpret(fn, 1, out, float("inf"), 0, False)  # inf is a value, not an overflow
    assert out[0] == np.inf


def test_const_leaves_round_and_wrap_correctly():
    b = Builder("consts", [("h", pointer(bf16)), ("u", pointer(u8))])
    h, u = b.params
    b.effect("store", h, b.const(1 + 2**-8 + 2**-30, bf16))  # just above a bf16 midpoint: rounds up
    b.effect("store", u, b.const(255, u8))
    fn = b.finish()
    h = np.zeros(1, bf16.np)
    u = np.zeros(1, np.uint8)
    interpret(fn, 1, h, u)
    assert float(h[0]) == 1 + 2**-7 and u[0] == 255


def test_interpreter_uses_the_op_table_reference(monkeypatch):
    """Swapping an op's reference changes what the interpreter computes (no second copy)."""
    fn = vadd_kernel(4)
    real_add = OPS["add"].reference
    seen = []

    def fake_add(attrs, a, b, *, dtype):
        seen.append(dtype)
        if dtype == f32:
            return (a * 10 + b).astype(a.dtype)
        return real_add(attrs, a, b, dtype=dtype)

    monkeypatch.setitem(OPS, "add", dataclasses.replace(OPS["add"], reference=fake_add))
    out = np.zeros(4, np.float32)
    interpret(fn, 1, np.ones(4, np.float32), np.full(4, 2.0, np.float32), out, 4)
    assert out.tolist() == [12.0] * 4
    assert seen == [i32, f32]  # offsets (i32) and values (f32), dtype = first operand's dtype


def test_reference_returning_the_wrong_type_is_reported(monkeypatch):
    fn = vadd_kernel(4)

    def bad_add(attrs, a, b, *, dtype):
        return (a + b).astype(np.float64)

    monkeypatch.setitem(OPS, "add", dataclasses.replace(OPS["add"], reference=bad_add))
    with pytest.raises(InterpreterError, match=r"vadd: add in program 0: internal error: the reference returned "
                                               r"float64\[4\], expected i32\[4\]"):
        interpret(fn, 1, np.ones(4, np.float32), np.ones(4, np.float32), np.zeros(4, np.float32), 4)


