"""A pointer offset chosen by a select with a constant arm (``x_row + tl.where(valid, target, 0)``,
cross-entropy's target load) is extended to 64 bits *after* the select.

instcombine would widen ``sext(select(c, t, 0))`` into ``select(c, sext(t), 0)``: two 32-bit
selects and a sign computation in SASS where one select and the address's wide multiply-add do
(``codegen/scalar_ops.offset_i64`` freezes the select). The gathered values must be the
interpreter's for in-range and out-of-range indices, signed and unsigned offsets alike.
"""

from __future__ import annotations

import numpy as np
import pytest

from eggpu.ir import Builder, f32, i32, pointer, scalar
from eggpu.ir.dtypes import i16, u32

from .conftest import run_compare

N = 16


def gather(dt, uniform: bool):
    """out[i] = x[t[i] if 0 <= t[i] < n else 0] (uniform: only i = 0, a uniform index); ``n`` is a
    runtime argument, as cross-entropy's ``n_cols`` (a constant bound folds into one unsigned
    compare and LLVM keeps that select narrow by itself)."""
    b = Builder(f"gather_{dt}_{'s' if uniform else 'v'}", [("x", pointer(f32)), ("t", pointer(dt)),
                                                           ("out", pointer(f32)), ("n", scalar(dt))])
    if uniform:
        t = b.op("load", b.op("addptr", b.param("t"), b.const(0, i32)))
        lo, hi, zero = b.const(0, dt), b.param("n"), b.const(0, dt)
    else:
        idx = b.op("arange", start=0, end=N)
        t = b.op("load", b.op("addptr", b.op("splat", b.param("t"), shape=(N,)), idx))
        lo, zero = (b.op("splat", b.const(v, dt), shape=(N,)) for v in (0, 0))
        hi = b.op("splat", b.param("n"), shape=(N,))
    valid = b.op("and", b.op("ge", t, lo), b.op("lt", t, hi))
    off = b.op("where", valid, t, zero)
    v = b.op("load", b.op("addptr", b.op("splat", b.param("x"), shape=(N,)) if not uniform else b.param("x"), off))
    dst = b.param("out") if uniform else b.op("addptr", b.op("splat", b.param("out"), shape=(N,)), idx)
    b.effect("store", dst, v)
    return b.finish()


@pytest.mark.parametrize("uniform", (True, False))
@pytest.mark.parametrize("dt", (i32, i16, u32), ids=str)
def test_gather_through_a_select_offset_matches_the_interpreter(dt, uniform):
    x = np.arange(1, N + 1, dtype=np.float32) * 1.5
    raw = [3, -100, N, N - 1, 0, -1, 7, 2**15 - 1] * 2
    t = np.array(raw, np.int64).astype(dt.np)  # u32: negatives wrap to large, out-of-range values
    out = np.zeros(N if not uniform else 1, np.float32)
    n = N - 3
    got = run_compare(gather(dt, uniform), (1,), [x, t, out, dt.np.type(n)])[2]
    want = [x[v if 0 <= v < n else 0] for v in t.astype(np.int64)]
    np.testing.assert_array_equal(got, want[:len(got)])


@pytest.mark.parametrize("target", ("sm_80", "sm_90"))
def test_select_offset_stays_32_bit_in_ptx(target):
    from eggpu.codegen import compile_ptx

    ptx, _ = compile_ptx(gather(i32, True), target)
    assert "selp.b64" not in ptx, ptx
    assert "selp.b32" in ptx
