"""Issue 11's two silent wrong results, checked in the interpreter and in the compiled CPU lowering.

* ``x >> s`` with a signed ``x`` and an unsigned ``s``: Triton picks the shift from the left
  operand (``ashr`` for a signed one) and shifts the promoted (here unsigned) bits, so
  i32 -8 >> u32 1 is 0xFFFFFFFC (-4 as i32), not the logical 0x7FFFFFFC.
* ``for i in range(lo, hi)`` with i64 (or u32/u64) bounds keeps the bounds' dtype: a start of
  2**35 was truncated to i32 (0) before.
"""

from __future__ import annotations

from typing import TypeVar

import numpy as np
import pytest

import eggpu
import eggpu.language as tl

A = TypeVar("A", bound=tl.Int)
B = TypeVar("B", bound=tl.Int)
O = TypeVar("O", bound=tl.Int)  # noqa: E741
I = TypeVar("I", bound=tl.Int)  # noqa: E741

_SIGNED = {8: np.int8, 16: np.int16, 32: np.int32, 64: np.int64}


@eggpu.kernel
def shift_right(x_ptr: tl.Pointer[A], s_ptr: tl.Pointer[B], out_ptr: tl.Pointer[O], n: tl.i32,
                BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    r = tl.load(x_ptr + offs, mask=mask) >> tl.load(s_ptr + offs, mask=mask)
    tl.static_assert(r.dtype == O, "unexpected result dtype of >>")
    tl.store(out_ptr + offs, r, mask=mask)


def _shift_case(da, db, n=37, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.integers(da.min, da.max, n, endpoint=True, dtype=np.int64 if da.is_signed else np.uint64)
    x[:3] = [-8, -1, da.min] if da.is_signed else [8, 1, da.max]
    s = rng.integers(0, min(da.bits, db.bits), n).astype(db.np)
    s[:3] = 1
    return x.astype(da.np), s


def _shift_expected(x, s, dt):
    """Triton: the left operand's signedness picks the shift; the bits are those of the promoted dtype."""
    if x.dtype.kind == "i":
        wide = x.astype(_SIGNED[dt.bits])  # sign-extension (Triton's cast of a signed int)
        return np.right_shift(wide, s.astype(wide.dtype)).view(dt.np)
    return np.right_shift(x.astype(dt.np), s.astype(dt.np))


SHIFT_CASES = [
    (tl.i32, tl.u32, tl.u32),  # the issue's case: arithmetic shift of the u32 bits
    (tl.i8, tl.u32, tl.u32),   # the narrow signed operand is sign-extended first
    (tl.i64, tl.u64, tl.u64),
    (tl.i32, tl.u64, tl.u64),
    (tl.i16, tl.u16, tl.u16),
    (tl.u32, tl.i32, tl.u32),  # unsigned left operand: logical, as before
    (tl.i32, tl.i32, tl.i32),
]


@pytest.mark.parametrize("da,db,want", SHIFT_CASES, ids=lambda v: str(v))
def test_signed_rshift_by_unsigned_interpret(da, db, want):
    x, s = _shift_case(da, db)
    out = np.zeros(x.size, want.np)
    shift_right.Kernel[da, db, want](16).interpret(3, x, s, out, x.size)
    np.testing.assert_array_equal(out, _shift_expected(x, s, want))


def test_issue_values():
    x, s = np.array([-8], np.int32), np.array([1], np.uint32)
    out = np.zeros(1, np.uint32)
    shift_right.Kernel[tl.i32, tl.u32, tl.u32](16).interpret(1, x, s, out, 1)
    assert out[0] == 0xFFFFFFFC and out.view(np.int32)[0] == -4  # not 2147483644


@pytest.mark.parametrize("da,db,want", [(tl.i32, tl.u32, tl.u32), (tl.i8, tl.u64, tl.u64)], ids=str)
def test_signed_rshift_by_unsigned_run_cpu(da, db, want):
    x, s = _shift_case(da, db, n=1001, seed=1)
    out = np.zeros(x.size, want.np)
    eggpu.compile(shift_right.Kernel[da, db, want](128)).run_cpu(8, x, s, out, x.size)
    np.testing.assert_array_equal(out, _shift_expected(x, s, want))


# ---------------------------------------------------------------- loops with wide bounds


@eggpu.kernel
def walk(out_ptr: tl.Pointer[I], lo: I, hi: I, step: I, CAP: tl.constexpr):
    """Stores each value of the loop variable (at most CAP) and the trip count in out[CAP]."""
    count = 0
    for i in range(lo, hi, step):
        tl.static_assert(i.dtype == I, "the loop variable keeps the bounds' dtype")
        if count < CAP:
            tl.store(out_ptr + count, i)
        count += 1
    tl.store(out_ptr + CAP, count.to(I))


def _walk_expected(lo, hi, step, cap):
    r = range(lo, hi, step)
    return list(r[:cap]), len(r)


WALK_CASES = [
    (tl.i64, 2**35, 2**35 + 5, 1),           # the issue's case: the start used to become 0
    (tl.i64, 2**40, 2**40 - 9, -4),          # negative step
    (tl.i64, -(2**62), 2**62, 2**61 + 3),    # span beyond i64 max: counted as unsigned
    (tl.i64, 7, 7, 1),                        # empty
    (tl.i64, 9, 3, 2),                        # empty (hi < lo with a positive step)
    (tl.u32, 2**32 - 6, 2**32 - 1, 2),        # u32 bounds above i32 max
    (tl.u64, 2**64 - 10, 2**64 - 1, 3),
]


@pytest.mark.parametrize("dt,lo,hi,step", WALK_CASES, ids=str)
def test_wide_range_interpret(dt, lo, hi, step):
    cap = 8
    out = np.zeros(cap + 1, dt.np)
    walk.Kernel[dt](cap).interpret(1, out, lo, hi, step)
    values, count = _walk_expected(lo, hi, step, cap)
    assert int(out[cap]) == count
    assert out[:len(values)].tolist() == values


def test_wide_range_runtime_step_zero_runs_nothing():
    out = np.zeros(9, np.int64)
    walk.Kernel[tl.i64](8).interpret(1, out, 2**35, 2**36, 0)
    assert out.tolist() == [0] * 9


def test_wide_range_run_cpu():
    ck = eggpu.compile(walk.Kernel[tl.i64](8))
    for _, lo, hi, step in [c for c in WALK_CASES if c[0] == tl.i64]:
        out = np.zeros(9, np.int64)
        ck.run_cpu(1, out, lo, hi, step)
        values, count = _walk_expected(lo, hi, step, 8)
        assert int(out[8]) == count, (lo, hi, step)
        assert out[:len(values)].tolist() == values, (lo, hi, step)


@eggpu.kernel
def literal_walk(out_ptr: tl.Pointer[tl.i64]):
    j = 0
    for i in range(2**35 + 1, 2**35 - 6, -3):  # int literals beyond i32 make an i64 loop
        tl.store(out_ptr + j, i)
        j += 1
    for k in range(3):  # small literal bounds stay an i32 loop
        tl.static_assert(k.dtype == tl.i32, "i32 loop")


def test_literal_wide_range():
    out = np.zeros(3, np.int64)
    literal_walk.Kernel().interpret(1, out)
    assert out.tolist() == list(range(2**35 + 1, 2**35 - 6, -3))


@eggpu.kernel
def mixed_walk(out_ptr: tl.Pointer[tl.i64], lo: tl.i32, hi: tl.i64):
    j = 0
    for i in range(lo, hi):  # i32 with i64 promotes to i64 (Triton's integer promotion)
        tl.static_assert(i.dtype == tl.i64, "i64 loop")
        tl.store(out_ptr + j, i)
        j += 1


def test_mixed_bounds_promote():
    out = np.zeros(4, np.int64)
    mixed_walk.Kernel().interpret(1, out, -2, 2)
    assert out.tolist() == [-2, -1, 0, 1]
