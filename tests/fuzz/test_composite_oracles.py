"""The frontend's composite functions (:mod:`fuzzcomposites`) against independent numpy / Fraction
oracles on the fuzzer's edge values (NaN, +-0, +-inf, subnormals, the extremes, INT_MIN).

The differential campaign (``fuzzrun``) checks that the interpreter, ``run_cpu`` and the optimized
kernel agree on each composite's IR expansion; it cannot see an expansion that is consistently
wrong. These checks close that gap: each composite is expanded by the frontend (the same call the
generator makes), run in the interpreter and compared with what the function means. Sizes are
ragged (1 and not a power of two) except where the function needs a power of two (sort, topk).
"""

from __future__ import annotations

import math
from fractions import Fraction

import fuzzgen
import numpy as np
import pytest

from eggpu.ir import Builder, bf16, f16, f32, f64, i8, i32, i64, pointer, u32
from eggpu.ir.interp import interpret
from eggpu.kernel_macro import compat, scans, shuffles, sorting
from eggpu.kernel_macro import language as tl
from eggpu.kernel_macro.frontend_ops import Semantic
from eggpu.kernel_macro.frontend_values import Tensor

SIZES = (1, 13, 64)
#: precision, emin, emax of the float formats a conversion rounds to
_FORMATS = {"f16": (11, -14, 15), "bf16": (8, -126, 127), "f32": (24, -126, 127)}


def run(build, ins: list[np.ndarray], out_dt, out_n: int | None = None) -> np.ndarray:
    """``build(semantic, *tensors)`` over 1-D blocks loaded from ``ins``, in the interpreter."""
    n = len(ins[0])
    params = [(f"x{i}", pointer(_dt(a))) for i, a in enumerate(ins)]
    b = Builder("composite", params + [("out", pointer(out_dt))])

    def at(name, offs):
        return b.op("addptr", b.op("splat", b.param(name), shape=offs.type.shape), offs)

    offs = b.op("arange", start=0, end=n)
    xs = [Tensor(b.op("load", at(f"x{i}", offs))) for i in range(len(ins))]
    r = build(Semantic(b), *xs).value
    b.effect("store", at("out", b.op("arange", start=0, end=r.type.numel)), r)
    out = np.zeros(out_n or n, out_dt.np)
    args = [*ins, out]
    interpret(b.finish(), 1, *args)
    return out


def _dt(a: np.ndarray):
    return {np.dtype(d.np): d for d in (f16, bf16, f32, f64, i8, i32, i64, u32)}[a.dtype]


def bits_equal(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Lanes equal bit for bit (as f64), any NaN equal to any NaN."""
    g, w = got.astype(np.float64), want.astype(np.float64)
    return (np.isnan(g) & np.isnan(w)) | (g.view(np.int64) == w.view(np.int64))


def toward_zero(x: float, dt: str) -> float:
    """``x`` rounded toward zero to ``dt``, exactly (Fractions): overflow gives the largest finite."""
    if math.isnan(x) or math.isinf(x) or x == 0:
        return x
    p, emin, emax = _FORMATS[dt]
    a = Fraction(abs(x))
    e = a.numerator.bit_length() - a.denominator.bit_length()
    e -= a < Fraction(2) ** e
    q = max(e, emin) - (p - 1)  # the exponent of one ulp at |x|
    largest = ((1 << p) - 1) * Fraction(2) ** (emax - p + 1)
    r = float(min(int(a / Fraction(2) ** q) * Fraction(2) ** q, largest))
    return -r if x < 0 else r


def values(dt, n: int, seed: int) -> np.ndarray:
    return fuzzgen.values(dt, n, np.random.default_rng([seed, n]))


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("src, dst", [(f32, f16), (f32, bf16), (f64, f32), (f64, f16), (f64, bf16)], ids=str)
def test_round_toward_zero_conversion(src, dst, n):
    x = values(src, n, 1)
    if src == f64 and n > 8:  # just below/above the narrow format's overflow and its subnormals
        x[:8] = [65519.99, 65520.0, -65536.0, 1e-8, 5.96e-8, -2.9e-8, 3.4028235677973366e38, 1e39]
    got = run(lambda s, t: compat.converted(s, t, dst, "rtz", False, "x.to"), [x], dst)
    want = np.array([toward_zero(float(v), dst.name) for v in x]).astype(dst.np)
    ok = bits_equal(got, want)
    assert ok.all(), (x[~ok][:4], got[~ok][:4], want[~ok][:4])


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dt", [f16, bf16, f32, f64], ids=str)
def test_copysign_and_fdim(dt, n):
    x, y = values(dt, n, 2), values(dt, n, 3)
    y = np.where(np.isnan(y.astype(np.float64)), 1.0, y).astype(dt.np)  # a NaN's sign bit is unspecified
    got = run(lambda s, a, b: compat.IMPLS["copysign"](s, {"x": a, "y": b}), [x, y], dt)
    ok = bits_equal(got, np.copysign(x.astype(np.float64), y.astype(np.float64)).astype(dt.np))
    assert ok.all(), (x[~ok][:4], y[~ok][:4], got[~ok][:4])
    got = run(lambda s, a, b: compat.IMPLS["fdim"](s, {"x": a, "y": b}), [x, y], dt)
    xx, yy = x.astype(np.float64), y.astype(np.float64)
    with np.errstate(all="ignore"):
        diff = (x - y).astype(np.float64)
    want = np.where(xx > yy, diff, np.where(np.isnan(xx) | np.isnan(yy), np.nan, 0.0)).astype(dt.np)
    ok = bits_equal(got, want)
    assert ok.all(), (x[~ok][:4], y[~ok][:4], got[~ok][:4], want[~ok][:4])


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dt", [i32, u32], ids=str)
def test_umulhi(dt, n):
    x, y = values(dt, n, 4), values(dt, n, 5)
    got = run(lambda s, a, b: compat.IMPLS["umulhi"](s, {"x": a, "y": b}), [x, y], dt)
    wide = x.view(np.uint32).astype(np.uint64) * y.view(np.uint32).astype(np.uint64)
    np.testing.assert_array_equal(got, (wide >> np.uint64(32)).astype(np.uint32).view(dt.np))


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("bins", [1, 3, 16])
@pytest.mark.parametrize("dt", [i8, i32, u32, i64], ids=str)
def test_histogram_counts_only_values_in_range(dt, bins, n):
    x = values(dt, n, 6)
    got = run(lambda s, a: shuffles.IMPLS["histogram"](s, {"input": a, "num_bins": bins, "mask": None}), [x], i32,
              bins)
    xi = np.array([int(v) for v in x])
    np.testing.assert_array_equal(got, [(xi == k).sum() for k in range(bins)])


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("dt", [i8, i32, u32, i64], ids=str)
def test_integer_cumsum_wraps(dt, reverse, n):
    x = values(dt, n, 7)
    acc = i32 if dt == i8 else dt  # narrow ints sum in i32 (Triton's _pick_sum_dtype)
    got = run(lambda s, a: scans.IMPLS["cumsum"](s, {"input": a, "axis": 0, "reverse": reverse, "dtype": None}),
              [x], acc)
    xs = x[::-1] if reverse else x
    want = np.cumsum(xs.astype(acc.np), dtype=acc.np)
    np.testing.assert_array_equal(got, want[::-1] if reverse else want)


@pytest.mark.parametrize("n", [1, 2, 16])
@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("dt", [i8, u32, i64, f16, f32], ids=str)
def test_sort_and_topk(dt, descending, n):
    x = values(dt, n, 8)
    if dt.is_float:  # NaN has no place in an order; +-0, +-inf, subnormals stay
        x = np.where(np.isnan(x.astype(np.float64)), 0.5, x).astype(dt.np)
    want = np.sort(x)
    want = want[::-1] if descending else want
    got = run(lambda s, a: sorting.IMPLS["sort"](s, {"x": a, "dim": None, "descending": descending}), [x], dt)
    np.testing.assert_array_equal(got.astype(np.float64), want.astype(np.float64))
    k = min(4, n)
    got = run(lambda s, a: sorting.IMPLS["topk"](s, {"x": a, "k": k, "dim": None, "descending": descending}),
              [x], dt, k)
    np.testing.assert_array_equal(got.astype(np.float64), want[:k].astype(np.float64))


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dt, nan", [(f16, tl.PropagateNan.NONE), (f32, tl.PropagateNan.NONE),
                                     (f16, tl.PropagateNan.ALL), (f32, tl.PropagateNan.ALL),
                                     (i32, tl.PropagateNan.NONE), (u32, tl.PropagateNan.NONE)], ids=str)
def test_clamp(dt, nan, n):
    x, lo, hi = values(dt, n, 9), values(dt, n, 10), values(dt, n, 11)
    got = run(lambda s, a, b, c: compat.IMPLS["clamp"](s, {"x": a, "min": b, "max": c, "propagate_nan": nan}),
              [x, lo, hi], dt)
    if dt.is_float:  # NONE: a NaN operand is ignored (fmin/fmax); ALL: any NaN gives NaN
        lower, upper = (np.fmin, np.fmax) if nan == tl.PropagateNan.NONE else (np.minimum, np.maximum)
        ok = bits_equal(got, lower(upper(x, lo), hi))
        assert ok.all(), (x[~ok][:4], lo[~ok][:4], hi[~ok][:4], got[~ok][:4])
    else:
        np.testing.assert_array_equal(got, np.minimum(np.maximum(x, lo), hi))
