"""Regressions found by the IR differential fuzzer (tests/fuzz): each kernel is the minimized
program of a fuzz mismatch, run in the interpreter and on the host (compared bit for bit by
``run_compare``) and checked against numpy."""

from __future__ import annotations

import numpy as np
import pytest

from eggpu.ir import Builder, f32, f64, i32, i64, pointer, scalar, u32
from eggpu.ir.dtypes import u64

from .conftest import run_compare


def _gather_kernel(n: int, idx_dt):
    """``out = gather(x, idx, axis=0)`` on one block of ``n`` lanes."""
    b = Builder(f"gather_{idx_dt}_{n}", [("x", pointer(i32)), ("idx", pointer(idx_dt)), ("out", pointer(i32))])
    offs = b.op("arange", start=0, end=n)

    def at(name):
        return b.op("addptr", b.op("splat", b.param(name), shape=(n,)), offs)

    x, idx = b.op("load", at("x")), b.op("load", at("idx"))
    b.effect("store", at("out"), b.op("gather", x, idx, axis=0))
    return b.finish()


@pytest.mark.parametrize("n", [1, 5, 8])
@pytest.mark.parametrize("idx_dt", [u64, u32, i64], ids=str)
def test_gather_clamps_large_unsigned_indices_high(n, idx_dt):
    # fuzz seed 90: a u64 index >= 2**63 was sign-extended by the lowering, so it clamped to 0
    # instead of n - 1 (the op table: an index outside [0, n) is clamped into it)
    info = np.iinfo(idx_dt.np)
    pool = [info.max, info.max - 1, 2 ** (info.bits - 1), 2 ** (info.bits - 1) - 1, 0, 1, n - 1, n, info.min]
    idx = np.array([pool[(i * 3 + 1) % len(pool)] for i in range(n)], dtype=object).astype(idx_dt.np)
    x = (np.arange(n, dtype=np.int32) + 1) * 10
    out = np.zeros(n, np.int32)
    got = run_compare(_gather_kernel(n, idx_dt), (1,), [x, idx, out])[2]
    want = x[np.clip(np.array([int(v) for v in idx], dtype=object), 0, n - 1).astype(np.int64)]
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("symbol, src, dst, value", [
    ("__nv_float_as_int", f32, i32, -0.0), ("__nv_float_as_uint", f32, i32, float("inf")),
    ("__nv_uint_as_float", u32, f32, 2**32 - 1), ("__nv_double_as_longlong", f64, i64, 2.5),
    ("__nv_longlong_as_double", i64, f64, 1)])
def test_libdevice_bit_reinterpretation_of_a_scalar(symbol, src, dst, value):
    # fuzz seed 242: the interpreter's reference of a bitcast-kind libdevice function made a scalar
    # operand 1-d (np.ascontiguousarray), and the interpreter refused its own result
    b = Builder(f"as_bits_{symbol}", [("x", scalar(src)), ("out", pointer(dst))])
    b.effect("store", b.param("out"), b.op("libdevice", b.param("x"), symbol=symbol))
    out = np.zeros(1, dst.np)
    got = run_compare(b.finish(), (1,), [value, out])[1]
    assert got.tobytes() == np.array([value], src.np).tobytes()
