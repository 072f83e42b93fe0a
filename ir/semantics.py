"""numpy reference semantics for the elementwise ops (the meaning every other encoding must match).

Each function takes numpy arrays that already hold the operands' dtypes (equal shapes) and
returns an array of the result dtype. Conventions, stated once here and in the op table:

* Integers wrap around (two's complement) on overflow.
* Integer ``div`` truncates toward zero and ``rem`` takes the dividend's sign (LLVM
  ``sdiv``/``srem``, ``udiv``/``urem`` for unsigned). Division by zero is undefined behaviour in
  LLVM; the reference returns 0 for both quotient and remainder. ``INT_MIN / -1`` wraps to INT_MIN
  (remainder 0).
* Shifts by an amount outside ``[0, bits)`` are poison in LLVM; the reference returns 0 for
  ``shl`` and unsigned ``shr`` and the sign fill for signed ``shr``.
* ``shr`` is arithmetic on signed integers and logical on unsigned ones (Triton's rule).
* Float ops are IEEE-754 with round-to-nearest-even. f16 and bf16 are computed in f32 and
  rounded once (exact for +, -, *, /, sqrt because f32 has more than twice their precision);
  transcendental functions are computed in f64 and rounded to the result dtype.
* Float ``minimum``/``maximum`` follow IEEE-754-2019 minimumNumber/maximumNumber: a NaN operand is
  ignored (both NaN gives NaN) and -0.0 orders below +0.0 (LLVM ``minimumnum``/``maximumnum``).
* Float comparisons are ordered (false when either side is NaN) except ``ne``, which is
  unordered (true when either side is NaN), as in Python and Triton.
* ``cast`` float -> int truncates toward zero and saturates at the target range; NaN gives 0
  (LLVM ``fptosi.sat``/``fptoui.sat``, PTX ``cvt.rzi.sat``). Any -> bool is ``x != 0``.
"""

from __future__ import annotations

import math

import numpy as np

from .dtypes import DType, f64, numpy_dtype


def _narrow(dt: DType) -> bool:
    return dt.is_float and dt.bits == 16


def float_binary(fn):
    """Lift a float64/float32 numpy function to every float dtype with one final rounding."""

    def run(a: np.ndarray, b: np.ndarray, dt: DType) -> np.ndarray:
        with np.errstate(all="ignore"):
            if _narrow(dt):
                r = fn(a.astype(np.float32), b.astype(np.float32))
            else:
                r = fn(a, b)
            return np.asarray(r).astype(numpy_dtype(dt))

    return run


def float_unary_exact(fn):
    """Correctly rounded unary ops (sqrt, neg, abs, floor, ceil): compute in f32 for halves."""

    def run(a: np.ndarray, dt: DType) -> np.ndarray:
        with np.errstate(all="ignore"):
            x = a.astype(np.float32) if _narrow(dt) else a
            return np.asarray(fn(x)).astype(numpy_dtype(dt))

    return run


def float_unary_math(fn):
    """Transcendental ops: computed in f64 (or f64 for f64) and rounded to the dtype."""

    def run(a: np.ndarray, dt: DType) -> np.ndarray:
        with np.errstate(all="ignore"):
            return np.asarray(fn(a.astype(np.float64))).astype(numpy_dtype(dt))

    return run


def int_div(a: np.ndarray, b: np.ndarray, dt: DType) -> np.ndarray:
    """Truncating division; x/0 -> 0; INT_MIN/-1 wraps."""
    with np.errstate(all="ignore"):
        zero = b == 0
        bs = np.where(zero, np.ones_like(b), b)
        if dt.is_signed:
            # Work in Python ints via int64/object-free trick: floor-divide then correct toward zero.
            wide = np.int64 if dt.bits < 64 else object
            aw, bw = a.astype(wide), bs.astype(wide)
            q = aw // bw
            r = aw - q * bw
            fix = (r != 0) & ((aw < 0) != (bw < 0))
            q = q + fix
            q = _wrap(q, dt)
        else:
            q = a // bs
        return np.where(zero, np.zeros_like(a), q).astype(a.dtype)


def int_rem(a: np.ndarray, b: np.ndarray, dt: DType) -> np.ndarray:
    """Remainder with the dividend's sign; x%0 -> 0."""
    with np.errstate(all="ignore"):
        q = int_div(a, b, dt)
        r = (a - q * b).astype(a.dtype)
        return np.where(b == 0, np.zeros_like(a), r)


def _wrap(x: np.ndarray, dt: DType) -> np.ndarray:
    """Reduce integer values (int64 or Python ints) modulo 2**bits into dt's range."""
    if x.dtype == object:
        m = 1 << dt.bits
        half = 1 << (dt.bits - 1)
        return np.array([((int(v) + half) % m) - half for v in x.ravel()], dtype=numpy_dtype(dt)).reshape(x.shape)
    return x.astype(numpy_dtype(dt))


def shl(a: np.ndarray, b: np.ndarray, dt: DType) -> np.ndarray:
    with np.errstate(all="ignore"):
        bad = (b < 0) | (b >= dt.bits)
        sh = np.where(bad, np.zeros_like(b), b)
        r = np.left_shift(a, sh.astype(a.dtype))
        return np.where(bad, np.zeros_like(a), r).astype(a.dtype)


def shr(a: np.ndarray, b: np.ndarray, dt: DType) -> np.ndarray:
    with np.errstate(all="ignore"):
        bad = (b < 0) | (b >= dt.bits)
        sh = np.where(bad, np.zeros_like(b), b)
        r = np.right_shift(a, sh.astype(a.dtype))
        if dt.is_signed:
            fill = np.right_shift(a, np.full_like(a, dt.bits - 1))
        else:
            fill = np.zeros_like(a)
        return np.where(bad, fill, r).astype(a.dtype)


def fminmax(a: np.ndarray, b: np.ndarray, dt: DType, *, is_min: bool) -> np.ndarray:
    """IEEE-754-2019 minimumNumber/maximumNumber (NaN ignored, -0 < +0)."""
    with np.errstate(all="ignore"):
        x = a.astype(np.float32) if _narrow(dt) else a
        y = b.astype(np.float32) if _narrow(dt) else b
        r = np.fmin(x, y) if is_min else np.fmax(x, y)
        both_zero = (x == 0) & (y == 0)
        if np.any(both_zero):
            xs, ys = np.signbit(x), np.signbit(y)
            neg = (xs | ys) if is_min else (xs & ys)
            z = np.where(neg, -0.0, 0.0).astype(r.dtype)
            r = np.where(both_zero, z, r)
        return np.asarray(r).astype(numpy_dtype(dt))


def erf(x: np.ndarray) -> np.ndarray:
    v = np.vectorize(math.erf, otypes=[np.float64])
    return v(x) if x.size else x.astype(np.float64)


def fma(a: np.ndarray, b: np.ndarray, c: np.ndarray, dt: DType) -> np.ndarray:
    """a*b+c rounded once. f16/bf16/f32 use f64 (product exact); f64 uses exact rationals."""
    with np.errstate(all="ignore"):
        if dt == f64:
            from fractions import Fraction

            def one(x: float, y: float, z: float) -> float:
                if not (math.isfinite(x) and math.isfinite(y) and math.isfinite(z)):
                    return x * y + z
                exact = Fraction(x) * Fraction(y) + Fraction(z)
                if exact == 0:
                    return x * y + z  # keeps IEEE signed-zero rules
                return float(exact)

            return np.vectorize(one, otypes=[np.float64])(a, b, c) if a.size else a.copy()
        r = a.astype(np.float64) * b.astype(np.float64) + c.astype(np.float64)
        return r.astype(numpy_dtype(dt))


def cast(x: np.ndarray, src: DType, dst: DType) -> np.ndarray:
    """Value conversion with the conventions of the module docstring."""
    out = numpy_dtype(dst)
    with np.errstate(all="ignore"):
        if dst.is_bool:
            return x != 0
        if src.is_float and (dst.is_int):
            v = x.astype(np.float64)
            v = np.where(np.isnan(v), 0.0, np.trunc(v))
            lo, hi = dst.min, dst.max
            res = np.empty(v.shape, dtype=out)
            big = v >= float(hi)
            small = v <= float(lo)
            mid = ~(big | small)
            res[big] = hi
            res[small] = lo
            res[mid] = v[mid].astype(out)
            return res
        if src.is_float and dst.is_float and src.bits == 16 and dst.bits == 16:
            return x.astype(np.float32).astype(out)
        if src.is_int and dst.is_float and dst.bits == 16:
            return x.astype(np.float64).astype(np.float32).astype(out) if src.bits <= 32 else x.astype(np.float64).astype(out)
        return x.astype(out)

