"""Float constants are emitted rounded to their dtype, exactly as the interpreter rounds them.

Regression (issue 9, item 5): llvmlite formats ``half``/``float`` constants with
``struct.pack``, so an f16 literal beyond 65504 (``x_f16 * 1e30``, ``tl.full([B], 1e9, tl.f16)``,
``other=1e9``) crashed ``eggpu.compile(optimize=False)`` with a raw OverflowError. The lowering
now rounds every float constant once (nearest even, overflow to inf; -0.0 and NaN kept) and
prints its bits.
"""

from __future__ import annotations

import struct

import numpy as np
import pytest

import eggpu
import eggpu.language as tl
from eggpu.ir import Builder, bf16, f16, f32, f64, i32, pointer

from .conftest import assert_same, run_compare

NAN_PAYLOAD = struct.unpack("<d", struct.pack("<Q", 0xFFF4_0000_0000_0000 | 0x1234 << 29))[0]
# beyond every format / just above f16's max (rounds to inf) / below it (rounds to 65504) /
# tiny, negative zero, a quiet NaN with a payload, integers too large for a double
VALUES = (1e9, -1e39, 1e309, 65520.0, 65519.0, 3.4028235677973366e38, 1e-50, -0.0, 0.1, float("nan"),
          NAN_PAYLOAD, 10**400, -(10**400), 1.0)


def constants_kernel(dt):
    """``out[k] = VALUES[k]`` as ``dt`` constants, one scalar store each."""
    b = Builder(f"consts_{dt}", [("out", pointer(dt))])
    for k, v in enumerate(VALUES):
        p = b.op("addptr", b.param("out"), b.const(k, i32))
        b.effect("store", p, b.op("const", value=v, dtype=dt))
    return b.finish()


@pytest.mark.parametrize("dt", [f16, bf16, f32, f64], ids=str)
def test_constants_round_like_the_interpreter_on_the_host(dt):
    fn = constants_kernel(dt)
    got = run_compare(fn, 1, [np.zeros(len(VALUES), dt.np)])[0]  # interpreter == run_cpu, bitwise
    wide = got.astype(np.float64)
    assert wide[0] == (np.inf if dt == f16 else 1e9 if dt == f64 else float(np.float32(1e9)) if dt == f32 else wide[0])
    assert wide[1] == (-1e39 if dt == f64 else -np.inf)
    assert wide[2] == np.inf and wide[11] == np.inf and wide[12] == -np.inf
    assert np.signbit(wide[7]) and wide[7] == 0
    assert np.isnan(wide[9]) and np.isnan(wide[10]) and np.signbit(wide[10])
    if dt == f16:
        assert wide[3] == np.inf and wide[4] == 65504.0


@pytest.mark.parametrize("dt", [f16, bf16, f32, f64], ids=str)
def test_constants_compile_to_ptx(dt):
    from eggpu.codegen import compile_ptx

    ptx, ll = compile_ptx(constants_kernel(dt), "sm_80")
    assert ".visible .entry" in ptx
    if dt == f16:
        assert "0xH7C00" in ll and "0xHFC00" in ll and "0xH8000" in ll  # 1e9 -> inf, -1e39 -> -inf, -0.0
        assert "0x7C00" in ptx.replace("0F", "")  # inf reached the PTX (st.global.b16 of 0x7C00)
    if dt == f32:
        assert "0x7ff0000000000000" in ll and "0xfff0000000000000" in ll


def test_float_constant_text():
    from llvmlite import ir

    from eggpu.codegen.emitter import BF16, FloatConstant

    assert FloatConstant(ir.HalfType(), 1e9).get_reference() == "0xH7C00"
    assert FloatConstant(ir.HalfType(), 65519.0).get_reference() == "0xH7BFF"
    assert FloatConstant(BF16, -1e39).get_reference() == "0xRFF80"
    assert FloatConstant(ir.FloatType(), 0.1).get_reference() == "0x3fb99999a0000000"  # llvmlite's text
    assert FloatConstant(ir.FloatType(), 1e39).get_reference() == "0x7ff0000000000000"
    assert FloatConstant(ir.DoubleType(), 10**400).get_reference() == "0x7ff0000000000000"
    assert FloatConstant(ir.DoubleType(), -0.0).get_reference() == "0x8000000000000000"
    # a NaN payload survives (a negative quiet NaN with payload bits)
    nan32 = struct.unpack("<f", struct.pack("<I", 0xFFC12345))[0]
    assert FloatConstant(ir.FloatType(), nan32).get_reference() == f"0x{(0xFFF << 52) | (0x412345 << 29):016x}"
    assert FloatConstant(ir.HalfType(), nan32).get_reference() == f"0xH{0xFE00 | (0x412345 >> 13):04X}"
    assert str(ir.Constant(ir.FloatType(), 0.1)) == str(FloatConstant(ir.FloatType(), 0.1))


# ---------------------------------------------------------------- the three spellings of the issue


@eggpu.kernel
def f16_overflow(x_ptr: tl.Pointer[tl.f16], a_ptr: tl.Pointer[tl.f16], b_ptr: tl.Pointer[tl.f16],
                 c_ptr: tl.Pointer[tl.f16], n: tl.i32, k: tl.i32, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=offs < k, other=1e9)
    tl.store(a_ptr + offs, x * 1e30, mask=m)
    tl.store(b_ptr + offs, tl.full([BLOCK], 1e9, tl.f16) - x, mask=m)
    tl.store(c_ptr + offs, x, mask=m)


@pytest.mark.parametrize("optimize", [False, True])
def test_overflowing_f16_literals_compile_and_agree(optimize, tmp_path, monkeypatch):
    monkeypatch.setenv("EGGPU_CACHE_DIR", str(tmp_path))
    n, k = 10, 6
    x = np.array([1.0, -2.0, 0.0, -0.0, 65504.0, np.nan, 7, 7, 7, 7], np.float16)
    inf = np.float16(np.inf)
    c = np.where(np.arange(n) < k, x, inf).astype(np.float16)
    with np.errstate(all="ignore"):
        want = {"a": (c.astype(np.float32) * np.float32(np.inf)).astype(np.float16),
                "b": (np.float32(np.inf) - c.astype(np.float32)).astype(np.float16), "c": c}
    kern = f16_overflow.Kernel(16)
    ck = eggpu.compile(kern, optimize=optimize)
    results = []
    for run in (kern.interpret, ck.run_cpu):
        outs = [np.zeros(n, np.float16) for _ in range(3)]
        run(1, x, *outs, n, k)
        results.append(dict(zip("abc", outs)))
    for res in results:
        for name, w in want.items():
            assert_same(w, res[name], what=f"output {name} (optimize={optimize})")
