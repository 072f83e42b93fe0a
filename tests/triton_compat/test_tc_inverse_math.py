"""The inverse trigonometric and hyperbolic functions (asin, acos, atan, sinh, cosh, asinh, acosh,
atanh) as Triton spells them (``libdevice.asin``, ``tl.extra.cuda.libdevice.atan``) and as ``tl.*``:
interpreter and compiled CPU code against numpy on every float dtype, edge values included (+-1,
domain errors giving NaN, +-0 with its sign, +-inf, NaN, overflow)."""

from __future__ import annotations

import numpy as np
import pytest

import eggpu
import eggpu.language as tl
from eggpu.language.extra import libdevice

NAMES = ("asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh")
NUMPY = (np.arcsin, np.arccos, np.arctan, np.sinh, np.cosh, np.arcsinh, np.arccosh, np.arctanh)


@eggpu.jit
def _inverse_math(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    ys = (libdevice.asin(x), libdevice.acos(x), tl.extra.cuda.libdevice.atan(x), tl.sinh(x), tl.cosh(x),
          tl.asinh(x), libdevice.acosh(x), tl.atanh(x))
    for i in tl.static_range(8):
        tl.static_assert(ys[i].dtype == x.dtype, "the functions keep the float dtype")
        tl.store(out_ptr + i * n + offs, ys[i], mask=m)


EDGES = [-0.0, 0.0, 1.0, -1.0, 1.5, -1.5, 2.0, np.inf, -np.inf, np.nan, 0.5, -0.5, 1e-3, -1e-3, 0.999,
         1.001, 10.0, 12.0, 100.0, -100.0, 1e4, -1e4]
# f64 reference rounded once; the compiled code calls libm in f32 for 16-bit floats (one more rounding)
RTOL = {"f16": 2e-3, "bf16": 1.6e-2, "f32": 1e-6, "f64": 1e-14}


def _inputs(n: int, npdt) -> np.ndarray:
    rng = np.random.default_rng(n)
    vals = np.concatenate([np.array(EDGES), rng.uniform(-3.0, 3.0, max(n - len(EDGES), 0))])
    return vals[:n].astype(npdt)


@pytest.mark.parametrize("dt", [tl.f32, tl.f64, tl.f16, tl.bf16], ids=str)
@pytest.mark.parametrize("n", [1, 1000, 1001])
def test_inverse_and_hyperbolic_functions_match_numpy(run_both, dt, n):
    x = _inputs(n, dt.np)
    x64 = x.astype(np.float64)
    with np.errstate(all="ignore"):
        want = np.concatenate([fn(x64) for fn in NUMPY]).astype(dt.np).astype(np.float64)
    out = np.zeros(8 * n, dt.np)
    for device, (_, got) in run_both(_inverse_math, (eggpu.cdiv(n, 256),), x, out, n, BLOCK=256).items():
        g = got.astype(np.float64)
        for i, name in enumerate(NAMES):
            sl = slice(i * n, (i + 1) * n)
            where = f"{name}[{dt}] on {device}"
            np.testing.assert_allclose(g[sl], want[sl], rtol=RTOL[str(dt)], atol=0, err_msg=where)
            zeros = want[sl] == 0
            assert np.array_equal(np.signbit(g[sl][zeros]), np.signbit(want[sl][zeros])), f"{where}: sign of zero"


def test_edge_values_exactly_f32(run_both):
    """The documented edges (docs/ir.md): exact values, NaN outside the domain, infinities."""
    x = np.array([1.0, -1.0, -0.0, 1.5, -np.inf, np.inf, np.nan], np.float32)
    out = np.zeros(8 * 7, np.float32)
    hp, pi = np.float32(np.pi / 2), np.float32(np.pi)
    nan, inf = np.nan, np.inf
    want = {
        "asin": [hp, -hp, -0.0, nan, nan, nan, nan],
        "acos": [0.0, pi, hp, nan, nan, nan, nan],
        "atan": [np.float32(np.pi / 4), -np.float32(np.pi / 4), -0.0, np.float32(np.arctan(1.5)), -hp, hp, nan],
        "sinh": [np.float32(np.sinh(1.0)), -np.float32(np.sinh(1.0)), -0.0, np.float32(np.sinh(1.5)), -inf, inf,
                 nan],
        "cosh": [np.float32(np.cosh(1.0)), np.float32(np.cosh(1.0)), 1.0, np.float32(np.cosh(1.5)), inf, inf, nan],
        "asinh": [np.float32(np.arcsinh(1.0)), -np.float32(np.arcsinh(1.0)), -0.0, np.float32(np.arcsinh(1.5)),
                  -inf, inf, nan],
        "acosh": [0.0, nan, nan, np.float32(np.arccosh(1.5)), nan, inf, nan],
        "atanh": [inf, -inf, -0.0, nan, nan, nan, nan],
    }
    for device, (_, got) in run_both(_inverse_math, (1,), x, out, 7, BLOCK=8).items():
        for i, name in enumerate(NAMES):
            g, w = got[i * 7:(i + 1) * 7], np.array(want[name], np.float32)
            np.testing.assert_allclose(g, w, rtol=2.4e-7, atol=0, err_msg=f"{name} on {device}")
            assert np.array_equal(np.signbit(g[w == 0]), np.signbit(w[w == 0])), f"{name} on {device}"


@eggpu.jit
def _atan2(y_ptr, x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    y, x = tl.load(y_ptr + offs, mask=m), tl.load(x_ptr + offs, mask=m)
    tl.store(out_ptr + offs, libdevice.atan2(y, x), mask=m)
    tl.store(out_ptr + n + offs, tl.atan2(y, 2.0).to(out_ptr.dtype.element_ty), mask=m)


ATAN2_EDGES = [(0.0, 0.0), (-0.0, 0.0), (0.0, -0.0), (-0.0, -0.0), (1.0, 0.0), (-1.0, -0.0), (np.inf, np.inf),
               (-np.inf, -np.inf), (1.0, np.inf), (-1.0, -np.inf), (np.nan, 1.0), (1.0, np.nan), (3.0, -4.0)]


@pytest.mark.parametrize("dt", [tl.f32, tl.f64, tl.f16, tl.bf16], ids=str)
@pytest.mark.parametrize("n", [1, 1000, 1001])
def test_atan2_matches_numpy(run_both, dt, n):
    """libdevice.atan2(y, x) is C's atan2 (ordinate first); a literal operand takes the block's dtype."""
    rng = np.random.default_rng(n)
    pairs = np.concatenate([np.array(ATAN2_EDGES), rng.uniform(-5.0, 5.0, (max(n - len(ATAN2_EDGES), 0), 2))])[:n]
    y, x = pairs[:, 0].astype(dt.np), pairs[:, 1].astype(dt.np)
    y64 = y.astype(np.float64)
    want = np.concatenate([np.arctan2(y64, x.astype(np.float64)), np.arctan2(y64, 2.0)]).astype(dt.np)
    want = want.astype(np.float64)
    for device, (_, _, got) in run_both(_atan2, (eggpu.cdiv(n, 256),), y, x, np.zeros(2 * n, dt.np), n,
                                        BLOCK=256).items():
        g = got.astype(np.float64)
        np.testing.assert_allclose(g, want, rtol=RTOL[str(dt)], atol=0, err_msg=f"atan2[{dt}] on {device}")
        zeros = want == 0
        assert np.array_equal(np.signbit(g[zeros]), np.signbit(want[zeros])), f"atan2[{dt}] on {device}"


@eggpu.jit
def _int_atan2(x_ptr):
    tl.store(x_ptr, libdevice.atan2(1.0, tl.load(x_ptr)))


def test_atan2_integer_operand_is_one_located_error():
    with pytest.raises(eggpu.CompileError) as ei:
        _int_atan2[(1,)](np.ones(1, np.int32))
    text = str(ei.value)
    assert "tl.atan2 needs float operands, got i32 for y" in text and "^" in text
