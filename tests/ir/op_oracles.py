"""The independent oracles of the op-reference property tests (test_op_reference*.py): a
plain-Python model of every op (ints, fractions.Fraction, a hand-written round-to-nearest-even)
that never calls the op table's references or numpy's arithmetic, plus the value strategies and
the tables saying which ops each test covers.
"""

from __future__ import annotations

import functools
import math
from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eggpu.ir import ALL_DTYPES, FLOAT_DTYPES, INT_DTYPES, bf16, bool_, f16, f32, f64
from eggpu.ir.ops import OPS

FAST = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SLOW = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def fast_and_slow(name: str, argnames: str, argvalues, check, **kw):
    """``(test_<name>, test_<name>_slow)``: the hypothesis test of ``check(*params, data)`` that every
    run makes (``FAST``) and its ``slow``-marked campaign (``SLOW``), both parametrized by
    ``pytest.mark.parametrize(argnames, argvalues, **kw)``. A test module binds them to those two
    names (pytest collects module attributes by name); each gets its own name, hence its own
    hypothesis database entries."""

    def make(speed, suffix):
        @functools.wraps(check)
        def test(*args, **kwargs):
            check(*args, **kwargs)

        test.__name__ = test.__qualname__ = f"test_{name}{suffix}"
        return pytest.mark.parametrize(argnames, argvalues, **kw)(speed(given(data=st.data())(test)))

    return make(FAST, ""), pytest.mark.slow(make(SLOW, "_slow"))

inf, nan = math.inf, math.nan

# ------------------------------------------------------------------ dtype families

FAMILY_DTYPES = {
    "any": ALL_DTYPES,
    "num": INT_DTYPES + FLOAT_DTYPES,
    "int": INT_DTYPES,
    "int|bool": INT_DTYPES + (bool_,),
    "float": FLOAT_DTYPES,
}


def family(op: str):
    """Every dtype the op accepts (KeyError for an unknown family makes the tests fail)."""
    return FAMILY_DTYPES[OPS[op].family]


def cases(ops):
    return [pytest.param(op, dt, id=f"{op}-{dt}") for op in ops for dt in family(op)]


# ------------------------------------------------------------------ independent float model

# (precision incl. hidden bit, emin, emax) and (exponent bits, mantissa bits)
FMT = {f16: (11, -14, 15), bf16: (8, -126, 127), f32: (24, -126, 127), f64: (53, -1022, 1023)}
FIELDS = {f16: (5, 10), bf16: (8, 7), f32: (8, 23), f64: (11, 52)}
UINT = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


def round_exact(q: Fraction, dt) -> float:
    """Round the exact rational ``q`` to ``dt`` (IEEE round-to-nearest-even), as a Python float.

    Overflow gives a signed inf, underflow a signed zero (the sign of ``q``)."""
    if q == 0:
        return 0.0
    p, emin, emax = FMT[dt]
    sign = -1.0 if q < 0 else 1.0
    a = abs(q)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    assert Fraction(2) ** e <= a < Fraction(2) ** (e + 1)
    e = max(e, emin)
    quantum = Fraction(2) ** (e - p + 1)
    n = a / quantum
    k = n.numerator // n.denominator
    frac = n - k
    if frac > Fraction(1, 2) or (frac == Fraction(1, 2) and k % 2 == 1):
        k += 1
    value = k * quantum
    if value >= Fraction(2) ** (emax + 1):
        return sign * inf
    return math.copysign(float(value), sign)


def decode(bits: int, dt) -> float:
    """The value of an IEEE bit pattern of ``dt``."""
    eb, mb = FIELDS[dt]
    sign = bits >> (eb + mb) & 1
    e = (bits >> mb) & ((1 << eb) - 1)
    m = bits & ((1 << mb) - 1)
    bias = (1 << (eb - 1)) - 1
    if e == (1 << eb) - 1:
        v = nan if m else inf
    elif e == 0:
        v = math.ldexp(float(m), 1 - bias - mb)
    else:
        v = math.ldexp(float((1 << mb) | m), e - bias - mb)
    return -v if sign else v


def max_finite(dt) -> float:
    p, _, emax = FMT[dt]
    return math.ldexp(float((1 << p) - 1), emax - p + 1)


def min_subnormal(dt) -> float:
    p, emin, _ = FMT[dt]
    return math.ldexp(1.0, emin - p + 1)


def ulp(x: float, dt) -> float:
    """Spacing of ``dt`` values at magnitude |x| (finite x)."""
    p, emin, _ = FMT[dt]
    x = abs(x)
    e = emin if x == 0 else max(math.frexp(x)[1] - 1, emin)
    return math.ldexp(1.0, e - p + 1)


def same(got, want) -> bool:
    """Exact equality of Python values; floats: NaN matches NaN, zeros must agree in sign."""
    if isinstance(want, float):
        got = float(got)
        if math.isnan(want):
            return math.isnan(got)
        return got == want and math.copysign(1, got) == math.copysign(1, want)
    return got == want


def ordinal(x: float, dt) -> int:
    """Monotone integer position of a non-NaN ``dt`` value (neighbours differ by 1)."""
    w = 16 if dt.bits == 16 else dt.bits
    b = int(np.array(x, dtype=np.float64).astype(dt.np).view(UINT[w]))
    sign = 1 << (w - 1)
    return -(b & (sign - 1)) if b & sign else b


def signbit(x: float) -> bool:
    return math.copysign(1.0, x) < 0


# ------------------------------------------------------------------ value strategies


def int_values(dt):
    lo, hi = dt.min, dt.max
    edges = sorted({lo, lo + 1, hi, hi - 1, 0, 1, 2, dt.bits - 1, dt.bits, dt.bits + 1}
                   | ({-1, -2, -dt.bits} if dt.is_signed else set()))
    return st.one_of(st.sampled_from(edges), st.integers(lo, hi), st.integers(-3, 3).filter(lambda v: lo <= v))


def float_values(dt):
    p, emin, emax = FMT[dt]
    w = 16 if dt.bits == 16 else dt.bits
    big, tiny = max_finite(dt), min_subnormal(dt)
    norm = math.ldexp(1.0, emin)
    one_up, one_down = 1 + math.ldexp(1.0, 1 - p), 1 - math.ldexp(1.0, -p)
    specials = [0.0, -0.0, inf, -inf, nan, 1.0, -1.0, 0.5, 2.0, 3.0, -3.0, 0.1 if dt == f64 else 0.25,
                big, -big, norm, -norm, tiny, -tiny, one_up, -one_up, one_down, 1.5, -2.5]
    near_one = st.tuples(st.integers(0, (1 << (p - 1)) - 1), st.integers(-3, 3), st.booleans()).map(
        lambda t: (-1.0 if t[2] else 1.0) * math.ldexp(1 + math.ldexp(float(t[0]), 1 - p), t[1]))
    lim = 1 << min(p, 20)
    return st.one_of(st.sampled_from(specials), st.integers(0, (1 << w) - 1).map(lambda b: decode(b, dt)),
                     near_one, st.integers(-lim, lim).map(float))


def values(dt):
    if dt.is_bool:
        return st.booleans()
    return float_values(dt) if dt.is_float else int_values(dt)


def arr(vals, dt) -> np.ndarray:
    return np.array(vals, dtype=dt.np)


def py(x, dt):
    """numpy element -> Python value of the dtype's kind."""
    if dt.is_bool:
        return bool(x)
    return float(x) if dt.is_float else int(x)


# ------------------------------------------------------------------ integer oracles


def wrap(v: int, dt) -> int:
    m = 1 << dt.bits
    v %= m
    if dt.is_signed and v >= m >> 1:
        v -= m
    return v


def o_idiv(a, b, dt):
    if b == 0:
        return 0
    q = abs(a) // abs(b)
    return wrap(q if (a < 0) == (b < 0) else -q, dt)


def o_irem(a, b, dt):
    if b == 0:
        return 0
    q = abs(a) // abs(b)
    q = q if (a < 0) == (b < 0) else -q
    return wrap(a - q * b, dt)


def o_shl(a, b, dt):
    return wrap(a << b, dt) if 0 <= b < dt.bits else 0


def o_shr(a, b, dt):
    if 0 <= b < dt.bits:
        return a >> b  # Python >> is arithmetic on negative ints, logical on non-negative ones
    return -1 if a < 0 else 0


# ------------------------------------------------------------------ float oracles


def o_fadd(a, b, dt):
    if math.isnan(a) or math.isnan(b):
        return nan
    if math.isinf(a) or math.isinf(b):
        if math.isinf(a) and math.isinf(b) and signbit(a) != signbit(b):
            return nan
        return a if math.isinf(a) else b
    exact = Fraction(a) + Fraction(b)
    if exact == 0:
        return -0.0 if (signbit(a) and signbit(b)) else 0.0
    return round_exact(exact, dt)


def o_fsub(a, b, dt):
    return o_fadd(a, -b, dt)


def o_fmul(a, b, dt):
    if math.isnan(a) or math.isnan(b):
        return nan
    neg = signbit(a) != signbit(b)
    if math.isinf(a) or math.isinf(b):
        return nan if (a == 0 or b == 0) else (-inf if neg else inf)
    exact = Fraction(a) * Fraction(b)
    if exact == 0:
        return -0.0 if neg else 0.0
    return round_exact(exact, dt)


def o_fdiv(a, b, dt):
    if math.isnan(a) or math.isnan(b):
        return nan
    neg = signbit(a) != signbit(b)
    if math.isinf(a):
        return nan if math.isinf(b) else (-inf if neg else inf)
    if math.isinf(b):
        return -0.0 if neg else 0.0
    if b == 0:
        return nan if a == 0 else (-inf if neg else inf)
    exact = Fraction(a) / Fraction(b)
    if exact == 0:
        return -0.0 if neg else 0.0
    return round_exact(exact, dt)


def o_frem(a, b, dt):
    """C fmod: exact; sign of the dividend."""
    if math.isnan(a) or math.isnan(b) or math.isinf(a) or b == 0:
        return nan
    if math.isinf(b) or a == 0:
        return a
    q = Fraction(a) / Fraction(b)
    t = q.numerator // q.denominator if q >= 0 else -((-q.numerator) // q.denominator)
    r = Fraction(a) - t * Fraction(b)
    return math.copysign(0.0, a) if r == 0 else round_exact(r, dt)


def o_fmin(a, b, dt, is_min=True):
    if math.isnan(a):
        return b
    if math.isnan(b):
        return a
    if a == 0 and b == 0:
        if is_min:
            return -0.0 if (signbit(a) or signbit(b)) else 0.0
        return 0.0 if (not signbit(a) or not signbit(b)) else -0.0
    return min(a, b) if is_min else max(a, b)


def o_fmax(a, b, dt):
    return o_fmin(a, b, dt, is_min=False)


def o_sqrt(a, dt):
    if math.isnan(a) or a < 0:
        return nan
    if a == 0 or math.isinf(a):
        return a
    q = Fraction(a)
    k = 1100  # 2**(2k) clears every denominator; the root has hundreds of bits
    n = q.numerator * (1 << (2 * k)) // q.denominator
    s = math.isqrt(n)
    root = Fraction(s, 1 << k) if s * s == n else Fraction(2 * s + 1, 1 << (k + 1))  # sticky half
    return round_exact(root, dt)


def o_floor(a, dt, ceil=False):
    if math.isnan(a) or math.isinf(a):
        return a
    r = float(math.ceil(a) if ceil else math.floor(a))
    return math.copysign(0.0, a) if r == 0 else r


def o_round_int(a, dt, mode):
    """``a`` rounded to an integer with exact rationals: ``trunc``, ``rint`` (ties to even) or
    ``round`` (ties away from zero); a zero result keeps a's sign; NaN and inf pass through."""
    if math.isnan(a) or math.isinf(a):
        return a
    q = Fraction(a)
    t = math.trunc(q)  # toward zero, exact
    frac = abs(q - t)
    if mode != "trunc" and frac > Fraction(1, 2):
        t += 1 if q > 0 else -1
    elif frac == Fraction(1, 2):
        if mode == "round" or (mode == "rint" and t % 2 != 0):
            t += 1 if q > 0 else -1
    r = float(t)
    return math.copysign(0.0, a) if r == 0 else r


def o_fma(a, b, c, dt):
    if math.isnan(a) or math.isnan(b) or math.isnan(c):
        return nan
    if math.isinf(a) or math.isinf(b):
        if a == 0 or b == 0:
            return nan
        p = -inf if signbit(a) != signbit(b) else inf
        if math.isinf(c) and signbit(c) != signbit(p):
            return nan
        return p
    if math.isinf(c):
        return c
    prod = Fraction(a) * Fraction(b)
    exact = prod + Fraction(c)
    if exact == 0:
        if prod == 0 and c == 0:
            return -0.0 if (signbit(a) != signbit(b) and signbit(c)) else 0.0
        return 0.0
    return round_exact(exact, dt)


def by_kind(int_fn, float_fn, bool_fn=None):
    def oracle(*args):
        *vals, dt = args
        if dt.is_float:
            return float_fn(*vals, dt)
        if dt.is_bool:
            return bool_fn(*vals)
        return int_fn(*vals, dt)

    return oracle


# Elementwise ops with an exact oracle: op -> (oracle(*values, dt), arity)
EXACT = {
    "add": (by_kind(lambda a, b, dt: wrap(a + b, dt), o_fadd), 2),
    "sub": (by_kind(lambda a, b, dt: wrap(a - b, dt), o_fsub), 2),
    "mul": (by_kind(lambda a, b, dt: wrap(a * b, dt), o_fmul), 2),
    "div": (by_kind(o_idiv, o_fdiv), 2),
    "rem": (by_kind(o_irem, o_frem), 2),
    "minimum": (by_kind(lambda a, b, dt: min(a, b), o_fmin), 2),
    "maximum": (by_kind(lambda a, b, dt: max(a, b), o_fmax), 2),
    "and": (by_kind(lambda a, b, dt: wrap(a & b, dt), None, lambda a, b: a and b), 2),
    "or": (by_kind(lambda a, b, dt: wrap(a | b, dt), None, lambda a, b: a or b), 2),
    "xor": (by_kind(lambda a, b, dt: wrap(a ^ b, dt), None, lambda a, b: a != b), 2),
    "shl": (by_kind(o_shl, None), 2),
    "shr": (by_kind(o_shr, None), 2),
    "eq": (lambda a, b, dt: a == b, 2),
    "ne": (lambda a, b, dt: a != b, 2),
    "lt": (lambda a, b, dt: a < b, 2),
    "le": (lambda a, b, dt: a <= b, 2),
    "gt": (lambda a, b, dt: a > b, 2),
    "ge": (lambda a, b, dt: a >= b, 2),
    "neg": (by_kind(lambda a, dt: wrap(-a, dt), lambda a, dt: -a), 1),
    "not": (by_kind(lambda a, dt: wrap(~a, dt), None, lambda a: not a), 1),
    "abs": (by_kind(lambda a, dt: wrap(abs(a), dt), lambda a, dt: abs(a)), 1),
    "sqrt": (lambda a, dt: o_sqrt(a, dt), 1),
    "floor": (lambda a, dt: o_floor(a, dt), 1),
    "ceil": (lambda a, dt: o_floor(a, dt, ceil=True), 1),
    "trunc": (lambda a, dt: o_round_int(a, dt, "trunc"), 1),
    "rint": (lambda a, dt: o_round_int(a, dt, "rint"), 1),
    "round": (lambda a, dt: o_round_int(a, dt, "round"), 1),
    "fma": (lambda a, b, c, dt: o_fma(a, b, c, dt), 3),
    # integer bit functions on the two's-complement pattern p (Python ints and strings)
    "popc": (lambda a, dt: bin(a % (1 << dt.bits)).count("1"), 1),
    "clz": (lambda a, dt: dt.bits - (a % (1 << dt.bits)).bit_length(), 1),
    "ffs": (lambda a, dt: (a & -a).bit_length(), 1),
    "brev": (lambda a, dt: wrap(int(format(a % (1 << dt.bits), f"0{dt.bits}b")[::-1], 2), dt), 1),
    "mulhi": (lambda a, b, dt: wrap((a * b) >> dt.bits, dt), 2),
}


def _safe(fn, x, domain_min=None):
    try:
        return fn(x)
    except OverflowError:
        return inf
    except ValueError:
        return nan


def _log(fn):
    def f(x):
        if math.isnan(x) or x < 0:
            return nan
        if x == 0:
            return -inf
        return fn(x)

    return f


def _rsqrt(x):
    if math.isnan(x) or x < 0:
        return nan
    if x == 0:
        return math.copysign(inf, x)
    return 0.0 if math.isinf(x) else 1.0 / math.sqrt(x)


def _domain(fn, x, lo, hi):
    """``fn`` on [lo, hi]; NaN outside (math raises ValueError there)."""
    return fn(x) if lo <= x <= hi else nan


def _atanh(x):
    if abs(x) == 1.0:
        return math.copysign(inf, x)
    return math.atanh(x) if abs(x) < 1.0 else nan


def _trig(fn):
    return lambda x: nan if math.isinf(x) else fn(x)


def _log1p(x):
    if math.isnan(x) or x < -1.0:
        return nan
    return -inf if x == -1.0 else math.log1p(x)


def _is_pole(x):
    """0 or a negative integer (-inf included): where gamma has no finite value."""
    return x == 0 or (x < 0 and (math.isinf(x) or x == math.floor(x)))


_PI = Decimal("3.14159265358979323846264338327950288419716939937510582097494459")
# Bernoulli numbers B_2k / (2k (2k - 1)) for Stirling's series, k = 1..12
_STIRLING = [Fraction(1, 12), Fraction(-1, 360), Fraction(1, 1260), Fraction(-1, 1680), Fraction(1, 1188),
             Fraction(-691, 360360), Fraction(1, 156), Fraction(-3617, 122400), Fraction(43867, 244188),
             Fraction(-174611, 125400), Fraction(77683, 5796), Fraction(-236364091, 1506960)]


def _dec_sin_pi(f: Decimal) -> Decimal:
    """sin(pi * f) for 0 < f <= 1/2 (Taylor series at 50 digits)."""
    t = _PI * f
    term, total, k = t, t, 1
    while abs(term) > Decimal("1e-60"):
        term = -term * t * t / ((2 * k) * (2 * k + 1))
        total += term
        k += 1
    return total


def _dec_lgamma(x: Decimal) -> Decimal:
    """log|gamma(x)| for x > 0 at 50 digits: shift x up to >= 30 (gamma's recurrence), then
    Stirling's series (its 12-term remainder is below 1e-40 there)."""
    shift = Decimal(1)
    while x < 30:
        shift *= x
        x += 1
    s = (x - Decimal("0.5")) * x.ln() - x + (2 * _PI).ln() / 2
    for k, c in enumerate(_STIRLING, start=1):
        s += Decimal(c.numerator) / Decimal(c.denominator) / x ** (2 * k - 1)
    return s - abs(shift).ln()


def _lgamma(x):
    """C's lgamma: +inf at the poles and at +-inf, else log|gamma(x)| computed at 50 decimal digits
    (reflection for x < 0): an oracle independent of any libm, accurate near the roots where
    CPython's math.lgamma is not."""
    if math.isnan(x):
        return nan
    if _is_pole(x) or math.isinf(x):
        return inf
    if x in (1.0, 2.0):
        return 0.0
    with localcontext() as ctx:
        ctx.prec = 50
        d = Decimal(x)  # exact
        if d > 0:
            r = _dec_lgamma(d)
        else:  # gamma(x) gamma(1 - x) = pi / sin(pi x); |sin(pi x)| = sin(pi * distance to an integer)
            f = min(d - d.to_integral_value(rounding="ROUND_FLOOR"), d.to_integral_value(rounding="ROUND_CEILING") - d)
            r = (_PI / _dec_sin_pi(f)).ln() - _dec_lgamma(1 - d)
        return float(r)  # overflow: inf


def _tgamma(x):
    """C's tgamma: +-inf at +-0, NaN at negative integers and -inf, +inf at +inf and on overflow
    (tiny negative x overflows to -inf)."""
    if math.isnan(x) or (x < 0 and _is_pole(x)):
        return nan
    if x == 0:
        return math.copysign(inf, x)
    if math.isinf(x):
        return inf
    try:
        return math.gamma(x)
    except OverflowError:
        return math.copysign(inf, x)


# Transcendental ops: f64 math functions; the reference may differ by a few ulp (libm accuracy).
APPROX = {
    "exp": lambda x: _safe(math.exp, x),
    "exp2": lambda x: _safe(lambda v: 2.0 ** v, x),
    "log": _log(math.log),
    "log2": _log(math.log2),
    "rsqrt": _rsqrt,
    "sin": _trig(math.sin),
    "cos": _trig(math.cos),
    "tanh": math.tanh,
    "erf": math.erf,
    "asin": lambda x: _domain(math.asin, x, -1.0, 1.0),
    "acos": lambda x: _domain(math.acos, x, -1.0, 1.0),
    "atan": math.atan,
    "sinh": lambda x: math.copysign(_safe(lambda v: abs(math.sinh(v)), x), x),
    "cosh": lambda x: _safe(math.cosh, x),
    "asinh": math.asinh,
    "acosh": lambda x: _domain(math.acosh, x, 1.0, inf),
    "atanh": _atanh,
    "tan": _trig(math.tan),
    "log10": _log(math.log10),
    "log1p": _log1p,
    "expm1": lambda x: _safe(math.expm1, x),
    "exp10": lambda x: _safe(lambda v: 10.0 ** v, x),
    "cbrt": math.cbrt,
    "erfc": math.erfc,
    "lgamma": _lgamma,
    "tgamma": _tgamma,
}

def _c_pow(x, y):
    """C99's pow (Annex F), special cases spelled out; finite cases by Python's float power."""
    if y == 0 or x == 1.0:
        return 1.0
    if math.isnan(x) or math.isnan(y):
        return nan
    if math.isinf(y):
        if abs(x) == 1.0:
            return 1.0
        return inf if (abs(x) < 1.0) == (y < 0) else 0.0
    y_int = y == math.floor(y)
    y_odd = y_int and abs(y) < 2.0 ** 53 and int(y) % 2 == 1
    if x == 0 or math.isinf(x):
        big = (x == 0) == (y < 0)  # 0 ** negative and inf ** positive are infinite
        mag = inf if big else 0.0
        return -mag if signbit(x) and y_odd else mag
    if x < 0 and not y_int:
        return nan
    try:
        mag = abs(x) ** y
    except OverflowError:
        mag = inf
    return -mag if x < 0 and y_odd else mag


def _c_hypot(x, y):
    if math.isinf(x) or math.isinf(y):
        return inf
    return math.hypot(x, y)  # NaN when either is NaN


# Binary transcendental ops: C's atan2 (signed zeros and infinities exact, else a few ulp), pow, hypot.
APPROX2 = {"atan2": math.atan2, "pow": _c_pow, "hypot": _c_hypot}

SHAPE_OPS = ("splat", "broadcast", "expand_dims", "reshape", "trans")
REDUCTIONS = ("reduce_sum", "reduce_max", "reduce_min", "reduce_argmax", "reduce_argmin")
# libdevice: each symbol's reference against numpy/libm/exact values in tests/codegen/test_libdevice_values.py
OTHER_TESTED = ("where", "cast", "bitcast", "dot", "gather", "libdevice") + SHAPE_OPS + REDUCTIONS

# Ops whose behaviour is the interpreter's own (tested in test_interp.py; the int <-> pointer
# casts in tests/triton_compat/test_tc_pointer_casts.py): leaves, pointer arithmetic and casts,
# memory and control flow; device_print/device_assert in tests/triton_compat/test_tc_debug_ops.py.
# They have no numpy reference in the op table.
INTERPRETER_OPS = frozenset({
    "const", "program_id", "num_programs", "arange", "addptr", "int_to_ptr", "ptr_to_int",
    "load", "store", "atomic_add", "atomic_max", "atomic_min", "atomic_xchg", "atomic_cas",
    "atomic_and", "atomic_or", "atomic_xor", "for", "while", "if", "yield", "inline_asm", "device_print",
    "device_assert",
})

def raw(a: np.ndarray) -> list[int]:
    """The bit patterns of an array's elements (bool as 0/1)."""
    if a.dtype == np.bool_:
        return [int(v) for v in a.ravel()]
    return [int(v) for v in a.view(UINT[a.dtype.itemsize * 8]).ravel()]
