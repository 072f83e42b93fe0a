"""libdevice's exact functions: the roundings to integral (``trunc``, ``rint``/``nearbyint`` ties to
even, ``round`` ties away from zero) and the classifications (``isnan``, ``isinf``, ``finitef``,
``isfinited``: bool as Triton's int1; ``signbit``: i32 as Triton's), in interpret and run_cpu,
bit for bit against numpy and exact Decimal rounding, on every float dtype: ties, the largest
value below 0.5, signed zeros, subnormals, huge values, +-inf, NaN of either sign."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

import numpy as np
import pytest

import eggpu
import eggpu.language as tl
from eggpu.language.extra import libdevice

ROUNDINGS = ("trunc", "rint", "nearbyint", "round")
CLASSES = ("isnan", "isinf", "finitef", "isfinited")


@eggpu.jit
def _roundings(x_ptr, r_ptr, c_ptr, s_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    rs = (libdevice.trunc(x), tl.extra.cuda.libdevice.rint(x), libdevice.nearbyint(x), libdevice.round(x))
    for i in tl.static_range(4):
        tl.static_assert(rs[i].dtype == x.dtype, "roundings keep the float dtype")
        tl.store(r_ptr + i * n + offs, rs[i], mask=m)
    cs = (libdevice.isnan(x), libdevice.isinf(x), libdevice.finitef(x), libdevice.isfinited(x))
    for i in tl.static_range(4):
        tl.static_assert(cs[i].dtype == tl.int1, "classifications are int1, as in Triton")
        tl.store(c_ptr + i * n + offs, cs[i], mask=m)
    s = libdevice.signbit(x)
    tl.static_assert(s.dtype == tl.int32, "signbit is int32, as in Triton")
    tl.store(s_ptr + offs, s, mask=m)


#: per dtype: mantissa bits, smallest subnormal, largest finite
_FORMAT = {"float16": (10, 2.0 ** -24, 65504.0), "bfloat16": (7, 2.0 ** -133, 3.3895313892515355e38),
           "float32": (23, 2.0 ** -149, 3.4028234663852886e38), "float64": (52, 5e-324, 1.7976931348623157e308)}


def _edges(npdt) -> list[float]:
    nmant, tiny, big = _FORMAT[np.dtype(npdt).name]
    below_half = 0.5 - 2.0 ** -(nmant + 2)  # the largest value below 0.5
    half_step = 2.0 ** nmant - 0.5  # the largest non-integer: an odd multiple of 0.5
    return [0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 3.5, -3.5, below_half, -below_half, 0.0, -0.0, tiny, -tiny, big,
            -big, np.inf, -np.inf, np.nan, -np.nan, half_step, -half_step, 0.75, -0.25, 7.0, 1e30, -1e-30]


def _inputs(n: int, npdt) -> np.ndarray:
    rng = np.random.default_rng(n)
    edges = np.array(_edges(npdt), np.float64)
    with np.errstate(over="ignore"):
        vals = np.concatenate([edges.astype(npdt), (np.round(rng.uniform(-20, 20, n) * 4) / 4).astype(npdt),
                               rng.uniform(-3, 3, n).astype(npdt)])
    pick = rng.permutation(len(vals) - len(edges))[:max(n - len(edges), 0)] + len(edges)
    x = np.concatenate([vals[:len(edges)], vals[pick]])[:n]
    neg_nan = np.isnan(x.astype(np.float64)) & np.signbit(x)
    assert n < len(edges) or neg_nan.any(), "a negative NaN reaches the kernel"
    return x


def _half_away(v: float) -> float:
    """C's round by exact decimal arithmetic (ROUND_HALF_UP is ties away from zero)."""
    if not np.isfinite(v):
        return v
    r = float(Decimal(v).to_integral_value(rounding=ROUND_HALF_UP))
    return float(np.copysign(0.0, v)) if r == 0 else r


def _want(x: np.ndarray, npdt):
    x64 = x.astype(np.float64)  # exact
    rounds = [np.trunc(x64), np.rint(x64), np.rint(x64), np.array([_half_away(v) for v in x64.tolist()])]
    classes = [np.isnan(x64), np.isinf(x64), np.isfinite(x64), np.isfinite(x64)]
    return [r.astype(npdt) for r in rounds], classes, np.signbit(x64).astype(np.int32)


@pytest.mark.parametrize("dt", [tl.f32, tl.f64, tl.f16, tl.bf16], ids=str)
@pytest.mark.parametrize("n", [1, 1000, 1001])
def test_roundings_and_classifications_bit_exact(run_both, as_bits, dt, n):
    x = _inputs(n, dt.np)
    rounds, classes, sign = _want(x, dt.np)
    args = (x, np.zeros(4 * n, dt.np), np.zeros(4 * n, np.bool_), np.zeros(n, np.int32), n)
    for device, (_, r, c, s) in run_both(_roundings, (eggpu.cdiv(n, 128),), *args, BLOCK=128).items():
        for i, name in enumerate(ROUNDINGS):
            got, want = r[i * n:(i + 1) * n], rounds[i]
            nan = np.isnan(want.astype(np.float64))
            assert np.array_equal(np.isnan(got.astype(np.float64)), nan), f"{name}[{dt}] on {device}: NaN lanes"
            same = as_bits(got)[~nan] == as_bits(want)[~nan]
            assert same.all(), (f"{name}[{dt}] on {device}: x={x[~nan][~same][:4]} got {got[~nan][~same][:4]} "
                                f"want {want[~nan][~same][:4]}")
        for i, name in enumerate(CLASSES):
            assert np.array_equal(c[i * n:(i + 1) * n], classes[i]), f"{name}[{dt}] on {device}"
        assert np.array_equal(s, sign), f"signbit[{dt}] on {device}"


def test_documented_edges_f32(run_both):
    """docs/ir.md: ties to even vs away from zero, the sign of a zero result, 0.49999997."""
    x = np.array([2.5, -2.5, -0.5, -0.4, 0.49999997, 3.5, -0.0, np.nan], np.float32)
    want = {
        "trunc": [2.0, -2.0, -0.0, -0.0, 0.0, 3.0, -0.0, np.nan],
        "rint": [2.0, -2.0, -0.0, -0.0, 0.0, 4.0, -0.0, np.nan],
        "nearbyint": [2.0, -2.0, -0.0, -0.0, 0.0, 4.0, -0.0, np.nan],
        "round": [3.0, -3.0, -1.0, -0.0, 0.0, 4.0, -0.0, np.nan],
    }
    k = len(x)
    args = (x, np.zeros(4 * k, np.float32), np.zeros(4 * k, np.bool_), np.zeros(k, np.int32), k)
    for device, (_, r, c, s) in run_both(_roundings, (1,), *args, BLOCK=8).items():
        for i, name in enumerate(ROUNDINGS):
            w = np.array(want[name], np.float32)
            np.testing.assert_array_equal(r[i * k:(i + 1) * k], w, err_msg=f"{name} on {device}")
            assert np.array_equal(np.signbit(r[i * k:(i + 1) * k]), np.signbit(w)), f"{name} on {device}: signs"
        assert list(s) == [0, 1, 1, 1, 0, 0, 1, 0], f"signbit on {device}"
        nan = [False] * 7 + [True]
        assert list(c) == nan + [False] * 8 + [not v for v in nan] * 2, f"classifications on {device}"


def test_only_libdevice_has_the_classifications():
    for name in ROUNDINGS + CLASSES + ("signbit",):
        assert name in libdevice.__all__ and name not in tl.math.__all__
    assert {"trunc", "rint", "round"} <= set(tl.__all__)
    assert "isnan" not in tl.__all__
