"""numpy reference semantics for the elementwise ops (the meaning every other encoding must match).

Each function takes numpy arrays that already hold the operands' dtypes (equal shapes) and
returns an array of the result dtype. Conventions, stated once here and in the op table:

* Integers wrap around (two's complement) on overflow.
* The semantics is TOTAL: every op has a value on every input, and every encoding (the z3 one of
  the optimizer's proofs, the LLVM lowering, the interpreter) must agree with it — no undefined
  behaviour, no poison. Integer ``div`` truncates toward zero and ``rem`` takes the dividend's
  sign (LLVM ``sdiv``/``srem``, ``udiv``/``urem`` for unsigned). Division by zero gives 0 for
  both quotient and remainder (undefined in LLVM: the lowering guards the divisor);
  ``INT_MIN / -1`` wraps to INT_MIN (remainder 0).
* Shifts by an amount outside ``[0, bits)`` (a negative signed amount included) give 0 for
  ``shl`` and unsigned ``shr`` and the sign fill for signed ``shr`` (poison in LLVM: the
  lowering clamps the amount).
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
    """Transcendental ops: computed in f64 and rounded once to the dtype."""

    def run(a: np.ndarray, dt: DType) -> np.ndarray:
        with np.errstate(all="ignore"):
            return round_f64(np.asarray(fn(a.astype(np.float64)), dtype=np.float64), dt)

    return run


def _round_odd_f32(x: np.ndarray) -> np.ndarray:
    """f64 -> f32 rounding to odd (truncate, then set the last bit if inexact).

    Rounding to odd into f32 (24 bits) followed by one round-to-nearest-even into a format of at
    most 22 bits equals a single round-to-nearest-even (no double-rounding error). NaN and inf
    pass through; finite values beyond the f32 range become the largest f32 (odd), which any
    narrower format rounds to inf.
    """
    r = x.astype(np.float32)
    back = r.astype(np.float64)
    inexact = (back != x) & np.isfinite(x)
    if not np.any(inexact):
        return r
    toward_zero = np.where(inexact & (np.abs(back) > np.abs(x)), np.nextafter(r, np.float32(0)), r)
    bits = np.ascontiguousarray(toward_zero).view(np.uint32) | inexact.astype(np.uint32)
    return bits.view(np.float32).reshape(r.shape)


def round_f64(x: np.ndarray, dt: DType) -> np.ndarray:
    """Round f64 values once (RNE) to the float dtype ``dt``.

    numpy/ml_dtypes convert f64 -> bf16 through f32 (two roundings), so the 16-bit formats go
    through :func:`_round_odd_f32` first.
    """
    with np.errstate(all="ignore"):
        if dt.bits == 64:
            return x.astype(np.float64)
        if dt.bits == 32:
            return x.astype(np.float32)
        return _round_odd_f32(x.astype(np.float64)).astype(numpy_dtype(dt))


def _int_round_odd_f32(x: np.ndarray, src: DType) -> np.ndarray:
    """Integers (any width) -> f32 rounded to odd, so that one more RNE rounding is exact-once."""
    if src.is_signed:
        v = x.astype(np.int64)
        neg = v < 0
        m = v.astype(np.uint64)
        m = np.where(neg, ~m + np.uint64(1), m)  # magnitude; INT64_MIN -> 2**63
    else:
        m = x.astype(np.uint64)
        neg = np.zeros(m.shape, dtype=bool)
    e = np.frexp(m.astype(np.float64))[1]  # bit length (one more when rounding carried)
    s = np.maximum(e - 24, 0).astype(np.uint64)
    t = m >> s
    sticky = (m & ((np.uint64(1) << s) - np.uint64(1))) != 0
    t = t | sticky.astype(np.uint64)
    mag = np.ldexp(t.astype(np.float64), s.astype(np.int32))  # exact: t < 2**24
    return np.where(neg, -mag, mag).astype(np.float32)


def int_div(a: np.ndarray, b: np.ndarray, dt: DType) -> np.ndarray:
    """Truncating division; x/0 -> 0; INT_MIN/-1 wraps."""
    with np.errstate(all="ignore"):
        zero = b == 0
        bs = np.where(zero, np.ones_like(b), b)
        if dt.is_signed:
            # Work in Python ints via int64/object-free trick: floor-divide then correct toward zero.
            wide = np.int64 if dt.bits < 64 else object
            aw, bw = a.astype(wide), bs.astype(wide)
            q = np.asarray(aw // bw, dtype=wide)  # 0-d object arrays would decay to Python ints
            r = aw - q * bw
            fix = ((r != 0) & ((aw < 0) != (bw < 0))).astype(wide)
            q = np.asarray(q + fix, dtype=wide)
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


def quiet_nans(x: np.ndarray) -> np.ndarray:
    """``x`` with every NaN replaced by the quiet NaN. numpy's ``fmin``/``fmax`` (x86 SIMD) do not
    ignore a *signaling* NaN: elementwise they return NaN, and ``fmin.reduce`` over a block with
    one returns values that are not in the block (found by the fuzz campaign: an f16 bitcast of
    0xFD1F among [-1113, ...] reduced to -0.0). The op table's semantics ignore every NaN alike."""
    nan = np.isnan(x)
    return np.where(nan, x.dtype.type(np.nan), x) if np.any(nan) else x


def fminmax(a: np.ndarray, b: np.ndarray, dt: DType, *, is_min: bool) -> np.ndarray:
    """IEEE-754-2019 minimumNumber/maximumNumber (NaN ignored, signaling or quiet; -0 < +0)."""
    with np.errstate(all="ignore"):
        x = quiet_nans(a.astype(np.float32) if _narrow(dt) else a)
        y = quiet_nans(b.astype(np.float32) if _narrow(dt) else b)
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


def _lift_scalar(fn):
    """``fn`` (float -> float) applied to every element of an f64 array (empty arrays pass)."""
    v = np.vectorize(fn, otypes=[np.float64])

    def run(x: np.ndarray) -> np.ndarray:
        return v(x) if x.size else x.astype(np.float64)

    return run


def _c_erfc(x: float) -> float:
    return math.erfc(x)


_LIBM_LGAMMA: list = []  # [libm's lgamma as a ctypes function, or None], looked up on first use


def _libm_lgamma():
    """The C library's ``lgamma`` (ctypes), or None where no libm can be loaded.

    CPython's ``math.lgamma`` is its own Lanczos approximation: absolute error ~1e-16, but no
    relative accuracy near the roots at 1, 2 and the negative roots (``math.lgamma(2 + 1e-9)`` has
    relative error 3e-6); glibc's is accurate there, and is what the host lowering calls.
    """
    if not _LIBM_LGAMMA:
        fn = None
        try:
            import ctypes
            import ctypes.util

            lib = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
            fn = lib.lgamma
            fn.restype, fn.argtypes = ctypes.c_double, [ctypes.c_double]
        except (OSError, AttributeError):
            fn = None
        _LIBM_LGAMMA.append(fn)
    return _LIBM_LGAMMA[0]


def _c_lgamma(x: float) -> float:
    """C's ``lgamma``: log|gamma(x)|; +inf at the poles (0, negative integers), at +-inf and on
    overflow (Python raises ValueError/OverflowError there). libm's where available (accurate near
    the roots), else ``math.lgamma``."""
    if math.isnan(x):
        return x
    if math.isinf(x) or (x <= 0 and x == math.floor(x)):
        return math.inf
    fn = _libm_lgamma()
    if fn is not None:
        return fn(x)
    try:
        return math.lgamma(x)
    except OverflowError:
        return math.inf


def _c_tgamma(x: float) -> float:
    """C's ``tgamma``: +-inf at +-0 (the sign of the zero) and on overflow (+inf above 171.62,
    -inf for tiny negative x), NaN at negative integers and -inf (Python raises there)."""
    try:
        return math.gamma(x)
    except OverflowError:
        return math.copysign(math.inf, x)
    except ValueError:
        return math.copysign(math.inf, x) if x == 0 else math.nan


erfc = _lift_scalar(_c_erfc)
lgamma = _lift_scalar(_c_lgamma)
tgamma = _lift_scalar(_c_tgamma)


def _unsigned(a: np.ndarray, dt: DType) -> np.ndarray:
    """The two's-complement pattern of ``a`` as uint64 (zero-extended from dt's width)."""
    # ascontiguousarray makes a 0-d array 1-d: reshape, so a scalar operand stays a scalar
    u = np.ascontiguousarray(a).view(f"u{dt.bits // 8}").reshape(np.shape(a))
    return u.astype(np.uint64)


def _bit_length(u: np.ndarray) -> np.ndarray:
    """The number of significant bits of uint64 values (0 for 0), by binary search."""
    n = np.zeros(u.shape, np.int64)
    v = u.copy()
    for s in (32, 16, 8, 4, 2, 1):
        big = v >= (np.uint64(1) << np.uint64(s))
        n += np.where(big, s, 0)
        v = np.where(big, v >> np.uint64(s), v)
    return n + (v > 0)


def popc(a: np.ndarray, dt: DType) -> np.ndarray:
    """Set bits of each pattern, in a's dtype."""
    u = _unsigned(a, dt)
    count = np.zeros(u.shape, np.int64)
    for i in range(dt.bits):
        count += ((u >> np.uint64(i)) & np.uint64(1)).astype(np.int64)
    return count.astype(a.dtype)


def clz(a: np.ndarray, dt: DType) -> np.ndarray:
    """Leading zeros of each pattern (the width for 0)."""
    return (dt.bits - _bit_length(_unsigned(a, dt))).astype(a.dtype)


def ffs(a: np.ndarray, dt: DType) -> np.ndarray:
    """1 + the index of the lowest set bit (0 for 0): the bit length of ``u & -u``."""
    u = _unsigned(a, dt)
    with np.errstate(over="ignore"):
        low = u & (~u + np.uint64(1))
    return _bit_length(low).astype(a.dtype)


def brev(a: np.ndarray, dt: DType) -> np.ndarray:
    """Each pattern with its bits in reverse order."""
    u = _unsigned(a, dt)
    r = np.zeros(u.shape, np.uint64)
    for i in range(dt.bits):
        r |= ((u >> np.uint64(i)) & np.uint64(1)) << np.uint64(dt.bits - 1 - i)
    return r.astype(f"u{dt.bits // 8}").view(a.dtype).reshape(a.shape)


def mulhi(a: np.ndarray, b: np.ndarray, dt: DType) -> np.ndarray:
    """The high half of the double-width product (Python ints: exact for 64-bit operands too)."""
    flat = [(int(x) * int(y)) >> dt.bits for x, y in zip(a.ravel().tolist(), b.ravel().tolist())]
    mask = (1 << dt.bits) - 1
    bits = np.array([v & mask for v in flat], dtype=np.uint64).astype(f"u{dt.bits // 8}")
    return bits.view(a.dtype).reshape(a.shape)


def round_half_away(x: np.ndarray) -> np.ndarray:
    """C's ``round``: the nearest integer, ties away from zero, exactly (``x - trunc(x)`` is exact,
    so 0.49999997 rounds to 0, not to 1 as ``trunc(x + 0.5)`` would); -0.4 gives -0.0; NaN and
    +-inf pass through (their fraction is NaN)."""
    with np.errstate(all="ignore"):
        t = np.trunc(x)
        return np.where(np.abs(x - t) >= 0.5, t + np.copysign(np.ones_like(x), x), t)


def exp10(x: np.ndarray) -> np.ndarray:
    """``10**x`` in f64 (pow: exp10(-inf) = +0, exp10(inf) = inf, NaN stays NaN)."""
    with np.errstate(all="ignore"):
        return np.power(np.float64(10.0), x)


def fma(a: np.ndarray, b: np.ndarray, c: np.ndarray, dt: DType) -> np.ndarray:
    """a*b+c rounded once.

    f16/bf16/f32: the product is exact in f64; the sum is rounded to odd in f64 (TwoSum error
    term) and then rounded once to the dtype, which equals a single rounding of the exact value.
    f64: exact rationals (overflow gives a signed inf). IEEE 754 special cases: a NaN operand or
    ``inf * 0`` gives NaN; an infinite factor makes the product that infinity, so the sum is
    ``x * y + z`` in float arithmetic (``inf + -inf`` is NaN); with finite factors the product
    is exact and finite, however large, so an infinite ``z`` is the result (``fma(1e300,
    1.7e308, -inf) == -inf``, although ``1e300 * 1.7e308`` alone would overflow).
    """
    with np.errstate(all="ignore"):
        if dt == f64:
            from fractions import Fraction

            def one(x: float, y: float, z: float) -> float:
                if not (math.isfinite(x) and math.isfinite(y)):
                    return x * y + z  # the product is inf or NaN itself: float arithmetic is exact here
                if not math.isfinite(z):
                    return z + 0.0  # finite product + inf = inf; NaN stays NaN
                exact = Fraction(x) * Fraction(y) + Fraction(z)
                if exact == 0:
                    return x * y + z  # keeps IEEE signed-zero rules
                try:
                    return float(exact)
                except OverflowError:
                    return math.inf if exact > 0 else -math.inf

            return np.vectorize(one, otypes=[np.float64])(a, b, c) if a.size else a.copy()
        p = a.astype(np.float64) * b.astype(np.float64)
        z = c.astype(np.float64)
        r = p + z
        bb = r - p
        err = (p - (r - bb)) + (z - bb)
        even = (np.ascontiguousarray(r).view(np.uint64).reshape(r.shape) & np.uint64(1)) == 0
        fix = np.isfinite(r) & (err != 0) & even
        if np.any(fix):
            r = np.where(fix, np.nextafter(r, np.where(err > 0, np.inf, -np.inf)), r)
        return round_f64(r, dt)


def cast(x: np.ndarray, src: DType, dst: DType) -> np.ndarray:
    """Value conversion with the conventions of the module docstring (FP8: :mod:`eggpu.ir.fp8`)."""
    if src.is_fp8 or dst.is_fp8:
        from . import fp8

        return fp8.cast(x, src, dst)
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
        if src.is_float and dst.is_float:
            return round_f64(x.astype(np.float64), dst)
        if src.is_int and dst.is_float and dst.bits == 16:
            if src.bits <= 16:
                return x.astype(np.float32).astype(out)  # exact in f32, one rounding
            return _int_round_odd_f32(x, src).astype(out)
        return x.astype(out)



def round_tf32(x: np.ndarray) -> np.ndarray:
    """f32 values rounded to TF32 (1 sign, 8 exponent, 10 mantissa bits), kept as f32.

    Round to nearest with ties away from zero on the 13 dropped mantissa bits (PTX
    ``cvt.rna.tf32.f32``, what Triton emits before a TF32 ``mma``): add half an ulp of TF32 to
    the magnitude's bits and clear the low 13 bits. Subnormals round the same way (the bit
    pattern arithmetic is uniform across the subnormal/normal boundary); a value that rounds
    past the largest finite TF32 becomes inf; inf and NaN are kept.
    """
    f = np.asarray(x, dtype=np.float32)
    bits = f.view(np.uint32)
    with np.errstate(over="ignore"):
        r = ((bits + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).astype(np.uint32)
    finite = np.isfinite(f)
    return np.where(finite, r, bits).astype(np.uint32).view(np.float32)
