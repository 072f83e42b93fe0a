"""Wrong results and refusals found by the frontend differential fuzzer (tests/fuzz/fe_run.py:
generated Triton source run by Triton 3.9's interpreter and by ``@eggpu.jit``), each checked
against numpy on ragged sizes in the interpreter and the compiled CPU lowering (``run_both``).

* promotion: Triton keeps bf16 only with bf16 (``bf16 op int`` is f32) and checks fp16 before
  bf16 (``bf16 op f16`` is f16); eggpu computed ``bf16 + i32`` in bf16 and ``bf16 + f16`` in f32.
* launch arguments: a ``np.float64`` scalar specialized its parameter as f32 (it is a Python
  float subclass) and an ``ml_dtypes.bfloat16`` scalar specialized bf16, then was refused.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import eggpu
import eggpu.language as tl

SIZES = (1, 1000, 1001)
BLOCK = 128


def _grid(n: int) -> tuple[int]:
    return (-(-n // BLOCK),)


@eggpu.jit
def add_two(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    r = tl.load(a_ptr + offs, mask=mask) + tl.load(b_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, r.to(tl.float32), mask=mask)


@eggpu.jit
def add_dtype(a_ptr, b_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    r = tl.load(a_ptr + offs) + tl.load(b_ptr + offs)
    tl.static_assert(r.dtype == out_ptr.dtype.element_ty, "unexpected promotion")
    tl.store(out_ptr + offs, r)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("int_dt", [np.int32, np.int16, np.uint32])
def test_bf16_with_an_integer_block_computes_in_f32(run_both, n, int_dt):
    rng = np.random.default_rng(n)
    a = rng.integers(-3, 3, n).astype(np.float32).astype(ml_dtypes.bfloat16)
    b = rng.integers(250, 20000, n).astype(int_dt)
    b[0] = 257  # 1 + 257 = 258 either way; 0 + 257 = 257 in f32 but 256 in bf16
    a[0] = 0
    want = a.astype(np.float32) + b.astype(np.float32)
    for got in run_both(add_two, _grid(n), a, b, np.zeros(n, np.float32), n, BLOCK=BLOCK).values():
        np.testing.assert_array_equal(got[2], want)


@pytest.mark.parametrize("n", SIZES)
def test_bf16_with_f16_computes_in_f16(run_both, n):
    rng = np.random.default_rng(n + 7)
    a = (rng.standard_normal(n) * 4).astype(ml_dtypes.bfloat16)
    a[0] = 1e30   # beyond f16: inf, not 1e30 as in f32
    b = (rng.standard_normal(n) * 4).astype(np.float16)
    want = (a.astype(np.float16) + b).astype(np.float32)
    assert np.isinf(want[0])
    for got in run_both(add_two, _grid(n), a, b, np.zeros(n, np.float32), n, BLOCK=BLOCK).values():
        np.testing.assert_array_equal(got[2], want)


@pytest.mark.parametrize("da,db,want", [
    (ml_dtypes.bfloat16, np.int32, np.float32), (np.int64, ml_dtypes.bfloat16, np.float32),
    (ml_dtypes.bfloat16, np.float16, np.float16), (np.float16, ml_dtypes.bfloat16, np.float16),
    (ml_dtypes.bfloat16, ml_dtypes.bfloat16, ml_dtypes.bfloat16), (np.float16, np.int32, np.float16),
], ids=lambda d: np.dtype(d).name)
def test_result_dtypes(run_both, da, db, want):
    a, b = np.arange(4).astype(da), np.arange(4).astype(db)
    for got in run_both(add_dtype, 1, a, b, np.zeros(4, want), BLOCK=4).values():
        np.testing.assert_array_equal(got[2], np.arange(4) * 2)


@eggpu.jit
def axpy_scalar(x_ptr, out_ptr, s, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * s + s, mask=mask)


@pytest.mark.parametrize("n", SIZES)
def test_float64_scalar_keeps_f64(run_both, n):
    s = np.float64(1 + 2**-40)  # rounds to 1.0 in f32
    assert axpy_scalar.specialize(np.zeros(1), np.zeros(1), s, n, BLOCK=BLOCK).arg_types[2] == tl.f64
    x = np.linspace(-3, 3, n)
    for got in run_both(axpy_scalar, _grid(n), x, np.zeros(n), s, n, BLOCK=BLOCK).values():
        np.testing.assert_array_equal(got[1], x * s + s)


@pytest.mark.parametrize("n", SIZES)
def test_bfloat16_scalar_launches(run_both, n):
    s = ml_dtypes.bfloat16(-2.5)
    assert axpy_scalar.specialize(np.zeros(1, np.float32), np.zeros(1, np.float32), s, n,
                                  BLOCK=BLOCK).arg_types[2] == tl.bf16
    x = np.linspace(-3, 3, n).astype(np.float32)
    # f32 * bf16 computes in f32 (the scalar converts exactly)
    for got in run_both(axpy_scalar, _grid(n), x, np.zeros(n, np.float32), s, n, BLOCK=BLOCK).values():
        np.testing.assert_array_equal(got[1], x * np.float32(-2.5) + np.float32(-2.5))


def test_python_float_is_still_f32():
    assert axpy_scalar.specialize(np.zeros(1), np.zeros(1), 0.1, 4, BLOCK=BLOCK).arg_types[2] == tl.f32


@eggpu.jit
def row_max_min(x_ptr, mx_ptr, mn_ptr, ix_ptr, n, COLS: tl.constexpr, WIDE: tl.constexpr):
    rows = tl.program_id(0) * 16 + tl.arange(0, 16)
    offs = rows[:, None] * COLS + tl.arange(0, COLS)[None, :]
    x = tl.load(x_ptr + offs, mask=rows[:, None] < n, other=0)
    mx = tl.max(x, axis=1)
    mn = tl.min(x, axis=1)
    tl.static_assert(mx.dtype == WIDE and mn.dtype == WIDE, "max/min widen below 32 bits")
    v, i = tl.max(x, axis=1, return_indices=True)
    tl.static_assert(v.dtype == x.dtype, "return_indices keeps the dtype")
    # in the wide dtype, * 1000 neither overflows f16 nor wraps i16
    tl.store(mx_ptr + rows, mx * 1000, mask=rows < n)
    tl.store(mn_ptr + rows, mn * 1000, mask=rows < n)
    tl.store(ix_ptr + rows, i, mask=rows < n)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dt,wide,out", [
    (np.float16, tl.f32, np.float32), (ml_dtypes.bfloat16, tl.f32, np.float32),
    (np.int16, tl.i32, np.int32), (np.uint8, tl.i32, np.int32), (np.int8, tl.i32, np.int32),
], ids=lambda d: getattr(d, "__name__", str(d)))
def test_max_min_of_narrow_dtypes_widen(run_both, n, dt, wide, out):
    rng = np.random.default_rng(n)
    hi = 60000 if dt in (np.float16, ml_dtypes.bfloat16) else np.iinfo(dt).max
    lo = -hi if dt not in (np.uint8,) else 0
    x = rng.integers(lo, hi, (n, 8), endpoint=True).astype(np.float64).astype(dt)
    got = run_both(row_max_min, -(-n // 16), x, np.zeros(n, out), np.zeros(n, out),
                   np.zeros(n, np.int32), n, COLS=8, WIDE=wide)
    wide_x = x.astype(out)
    for mx, mn, ix in (r[1:] for r in got.values()):
        np.testing.assert_array_equal(mx, wide_x.max(axis=1) * out(1000))
        np.testing.assert_array_equal(mn, wide_x.min(axis=1) * out(1000))
        np.testing.assert_array_equal(ix, x.astype(np.float64).argmax(axis=1))
