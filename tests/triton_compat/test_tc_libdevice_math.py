"""libdevice's further unary float functions (tan, log10, log1p, expm1, exp10, cbrt, erfc, lgamma,
tgamma) as Triton spells them (``libdevice.tan``, ``tl.extra.cuda.libdevice.lgamma``) and as
``tl.*``: interpreter and compiled CPU code (libm) against numpy/math in f64 on every float dtype,
special values included (+-0 with its sign, +-inf, NaN, poles, overflow, subnormals)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import eggpu
import eggpu.language as tl
from eggpu.language.extra import libdevice

NAMES = ("tan", "log10", "log1p", "expm1", "exp10", "cbrt", "erfc", "lgamma", "tgamma")


def _c_lgamma(x: float) -> float:
    if math.isnan(x):
        return x
    try:
        return math.lgamma(x)
    except (ValueError, OverflowError):  # poles (0, negative integers) and overflow: C gives +inf
        return math.inf


def _c_tgamma(x: float) -> float:
    if math.isnan(x) or x == -math.inf or (x < 0 and x == math.floor(x)):
        return math.nan
    try:
        return math.gamma(x)
    except (ValueError, OverflowError):  # +-0 and tiny |x|: the sign of x; large x: +inf
        return math.copysign(math.inf, x)


NUMPY = {
    "tan": np.tan, "log10": np.log10, "log1p": np.log1p, "expm1": np.expm1,
    "exp10": lambda x: np.power(10.0, x), "cbrt": np.cbrt, "erfc": np.vectorize(math.erfc, otypes=[np.float64]),
    "lgamma": np.vectorize(_c_lgamma, otypes=[np.float64]), "tgamma": np.vectorize(_c_tgamma, otypes=[np.float64]),
}


@eggpu.jit
def _more_math(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    ys = (libdevice.tan(x), tl.extra.cuda.libdevice.log10(x), libdevice.log1p(x), tl.expm1(x), libdevice.exp10(x),
          tl.cbrt(x), libdevice.erfc(x), tl.extra.cuda.libdevice.lgamma(x), tl.tgamma(x))
    for i in tl.static_range(9):
        tl.static_assert(ys[i].dtype == x.dtype, "the functions keep the float dtype")
        tl.store(out_ptr + i * n + offs, ys[i], mask=m)


EDGES = [-0.0, 0.0, 1.0, -1.0, 2.0, -2.0, -0.5, 0.5, 1.5, -1.5, np.inf, -np.inf, np.nan, 1e-3, -1e-3, 1e-6,
         -1e-6, 3.0, -3.0, 10.0, -10.5, 30.0, 45.0, 100.0, 1e30, -1e30, 1e-30, -1e-30, 5.0, 20.0]
# the f64 reference rounded once; compiled f16/bf16 call the f32 libm function (one more rounding);
# f32/f64: libm's few-ulp accuracy (glibc's lgammaf/tgammaf are the least accurate)
RTOL = {"f16": 2e-3, "bf16": 1.6e-2, "f32": 2e-6, "f64": 1e-13}


def _inputs(n: int, npdt) -> np.ndarray:
    rng = np.random.default_rng(n)
    vals = np.concatenate([np.array(EDGES), rng.uniform(-4.0, 4.0, max(n - len(EDGES), 0))])
    with np.errstate(over="ignore"):  # 1e30 is inf in f16
        return vals[:n].astype(npdt)


def _want(name: str, x: np.ndarray, npdt) -> np.ndarray:
    with np.errstate(all="ignore"):
        return np.asarray(NUMPY[name](x.astype(np.float64))).astype(npdt).astype(np.float64)


def _check(name: str, dt, got: np.ndarray, want: np.ndarray, where: str) -> None:
    tiny = float(np.finfo(dt.np).smallest_subnormal) if dt.np != np.float64 else 5e-324
    # lgamma is near zero at 1 and 2 (and negative roots): relative error there is not meaningful
    atol = 1e-6 if name == "lgamma" and dt.bits >= 32 else tiny
    if name == "lgamma" and dt.bits == 64:
        atol = 1e-14
    np.testing.assert_allclose(got, want, rtol=RTOL[str(dt)], atol=atol, err_msg=where)
    zeros = want == 0
    assert np.array_equal(np.signbit(got[zeros]), np.signbit(want[zeros])), f"{where}: sign of zero"


@pytest.mark.parametrize("dt", [tl.f32, tl.f64, tl.f16, tl.bf16], ids=str)
@pytest.mark.parametrize("n", [1, 1000, 1001])
def test_libdevice_unary_functions_match_numpy(run_both, dt, n):
    x = _inputs(n, dt.np)
    out = np.zeros(9 * n, dt.np)
    for device, (_, got) in run_both(_more_math, (eggpu.cdiv(n, 256),), x, out, n, BLOCK=256).items():
        g = got.astype(np.float64)
        for i, name in enumerate(NAMES):
            _check(name, dt, g[i * n:(i + 1) * n], _want(name, x, dt.np), f"{name}[{dt}] on {device}")


def test_edge_values_exactly_f32(run_both):
    """The documented edges (docs/ir.md) as exact values: poles, infinities, signed zeros, NaN."""
    nan, inf = np.nan, np.inf
    x = np.array([0.0, -0.0, inf, -inf, nan, -1.0, -2.0, 1.0, 2.0, 40.0, -8.0], np.float32)
    f = np.float32
    want = {
        "tan": [0.0, -0.0, nan, nan, nan, f(np.tan(-1.0)), f(np.tan(-2.0)), f(np.tan(1.0)), f(np.tan(2.0)),
                f(np.tan(np.float64(f(40.0)))), f(np.tan(-8.0))],
        "log10": [-inf, -inf, inf, nan, nan, nan, nan, 0.0, f(np.log10(2.0)), f(np.log10(40.0)), nan],
        "log1p": [0.0, -0.0, inf, nan, nan, -inf, nan, f(np.log(2.0)), f(np.log(3.0)), f(np.log(41.0)), nan],
        "expm1": [0.0, -0.0, inf, -1.0, nan, f(np.expm1(-1.0)), f(np.expm1(-2.0)), f(np.expm1(1.0)),
                  f(np.expm1(2.0)), f(np.expm1(40.0)), f(np.expm1(-8.0))],
        "exp10": [1.0, 1.0, inf, 0.0, nan, 0.1, 0.01, 10.0, 100.0, inf, f(1e-8)],
        "cbrt": [0.0, -0.0, inf, -inf, nan, -1.0, f(np.cbrt(-2.0)), 1.0, f(np.cbrt(2.0)), f(np.cbrt(40.0)), -2.0],
        "erfc": [1.0, 1.0, 0.0, 2.0, nan, f(math.erfc(-1.0)), f(math.erfc(-2.0)), f(math.erfc(1.0)),
                 f(math.erfc(2.0)), 0.0, 2.0],
        "lgamma": [inf, inf, inf, inf, nan, inf, inf, 0.0, 0.0, f(math.lgamma(40.0)), inf],
        "tgamma": [inf, -inf, inf, nan, nan, nan, nan, 1.0, 1.0, inf, nan],
    }
    out = np.zeros(9 * len(x), np.float32)
    k = len(x)
    for device, (_, got) in run_both(_more_math, (1,), x, out, k, BLOCK=16).items():
        for i, name in enumerate(NAMES):
            g, w = got[i * k:(i + 1) * k], np.array(want[name], np.float32)
            np.testing.assert_allclose(g, w, rtol=2.4e-7, atol=0, err_msg=f"{name} on {device}")
            assert np.array_equal(np.signbit(g[w == 0]), np.signbit(w[w == 0])), f"{name} on {device}: zero sign"


def test_small_arguments_keep_their_precision_f64(run_both):
    """log1p/expm1 exist for arguments near 0, where log(1 + x)/exp(x) - 1 lose every digit."""
    x = np.array([1e-300, -1e-300, 1e-17, -1e-17, 1e-10, 5e-324], np.float64)
    out = np.zeros(9 * len(x), np.float64)
    k = len(x)
    for device, (_, got) in run_both(_more_math, (1,), x, out, k, BLOCK=8).items():
        np.testing.assert_array_equal(got[2 * k:3 * k], np.log1p(x), err_msg=f"log1p on {device}")
        np.testing.assert_array_equal(got[3 * k:4 * k], np.expm1(x), err_msg=f"expm1 on {device}")
        assert not np.array_equal(got[2 * k:3 * k], np.log(1.0 + x))  # the naive formula would be 0


def test_names_are_in_libdevice_and_not_in_tl_math():
    """Triton's tl.math has none of them; its libdevice has them all."""
    for name in NAMES:
        assert getattr(libdevice, name) is getattr(tl, name)
        assert name in tl.extra.cuda.libdevice.__all__
        assert name not in tl.math.__all__


@eggpu.jit
def _math_tan(x_ptr):
    tl.store(x_ptr, tl.math.tan(tl.load(x_ptr)))


def test_tl_math_spelling_points_to_libdevice():
    """Triton's tl.math has no tan: the error says where the function is."""
    with pytest.raises(eggpu.CompileError) as ei:
        _math_tan[(1,)](np.ones(1, np.float32))
    text = str(ei.value)
    assert "tl.math.tan is not supported by eggpu" in text and "^" in text
    assert "Triton's tl.math has no tan either: use tl.extra.cuda.libdevice.tan" in text
