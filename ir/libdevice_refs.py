"""Host references of the ``libdevice`` op (:mod:`eggpu.ir.libdevice_table`): one scalar Python
function per libdevice symbol, used lane by lane by the numpy interpreter and called back by
run_cpu's host lowering, so both run the same code.

Exactness (the table's ``host_kind``):

* ``libm``: the C library's function of the same name (``nextafterf``, ``ilogbf``, ``jnf``...),
  through ctypes.
* rounding-mode arithmetic (``add_rz``, ``fma_ru``, ``sqrt_rd``, ``rcp_rn``, ``rsqrt_rn``...) and
  conversions (``float2int_rd``, ``ll2float_ru``, ``double2float_rz``...): exact. The operation is
  carried out on :class:`fractions.Fraction` (square roots on integers, see :func:`_sqrt_fraction`)
  and rounded once by :func:`round_fraction` in the requested direction; overflow gives inf or
  the largest finite value as IEEE-754 says for the direction; an exact zero sum is -0 only when
  rounding down (or when both addends are -0). Float -> integer conversions saturate to the
  destination's range and give 0 for NaN (PTX ``cvt``); Triton's result dtypes hold unsigned
  results as their bits (``float2uint_rn`` -> i32).
* bit functions (``hiloint2double``, ``double2hiint``), integer functions (``hadd``, ``rhadd``,
  ``mul24``, ``sad``, ``byte_perm``), ``saturatef`` (NaN -> +0), ``llrint``/``llround``: exact.
* ``sinpi``/``cospi`` (exact at integers and half-integers: ``sinpi(n) = +-0`` with n's sign,
  ``cospi(n + 0.5) = +0``), ``rcbrt``, ``rhypot``, ``norm3d``/``norm4d`` and their reciprocals,
  ``normcdf``, ``cyl_bessel_i0``/``i1`` (power series), ``erfinv``/``erfcinv``/``normcdfinv``
  (safeguarded Newton on libm's erf/erfc) and ``erfcx``: computed in f64 from exact argument
  reduction, then rounded (a few ulp at most, as libdevice's own accuracy).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np

from .dtypes import BY_NAME
from .libdevice_table import NEGATIVE_ORDER_NAN, SYMBOLS, host_kind

_FORMATS = {"f32": (24, -126, 127), "f64": (53, -1022, 1023)}  # precision, emin, emax
_MODES = ("rn", "rz", "rd", "ru")
_INT_RANGES = {"int": (-(1 << 31), (1 << 31) - 1), "uint": (0, (1 << 32) - 1),
               "ll": (-(1 << 63), (1 << 63) - 1), "ull": (0, (1 << 64) - 1)}
_FLOATS = {"float": "f32", "double": "f64"}


def round_fraction(v: Fraction, dt: str, mode: str) -> float:
    """``v`` rounded once to the float dtype ``dt`` (f32/f64) in direction ``mode`` (rn: nearest,
    ties to even; rz: toward zero; rd: toward -inf; ru: toward +inf), subnormals included;
    overflow gives inf or the largest finite value by the direction. ``v == 0`` gives +0.0."""
    if v == 0:
        return 0.0
    neg = v < 0
    a = -v if neg else v
    p, emin, emax = _FORMATS[dt]
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if a < Fraction(2) ** e:
        e -= 1
    q = max(e, emin) - (p - 1)  # the exponent of one ulp at a
    scaled = a / Fraction(2) ** q
    n, rem = divmod(scaled.numerator, scaled.denominator)
    rem_f = Fraction(rem, scaled.denominator)
    if mode == "rn":
        n += rem_f > Fraction(1, 2) or (rem_f == Fraction(1, 2) and n % 2 == 1)
    elif rem and (mode == "ru" and not neg or mode == "rd" and neg):
        n += 1
    largest = ((1 << p) - 1) * Fraction(2) ** (emax - p + 1)
    if n * Fraction(2) ** q > largest:
        to_inf = mode == "rn" or (mode == "ru" and not neg) or (mode == "rd" and neg)
        r = math.inf if to_inf else float(largest)
    else:
        r = math.ldexp(n, q)
    return -r if neg else r


def _sqrt_fraction(a: Fraction) -> Fraction:
    """A stand-in for ``sqrt(a)`` (``a > 0``) that rounds like it in every direction: the exact
    root when it is a dyadic of at most 1200 fractional bits, else the midpoint of the 2**-1201
    bracket holding it (never a rounding boundary of an f32/f64 result, whose ulps are coarser)."""
    k = 1200
    scaled = a * (1 << (2 * k))
    t = math.isqrt(scaled.numerator // scaled.denominator)
    if t * t * scaled.denominator == scaled.numerator:
        return Fraction(t, 1 << k)
    return Fraction(2 * t + 1, 1 << (k + 1))


def _np(dt: str, x: float) -> Any:
    return BY_NAME[dt].np.type(x)


def _special(op: str, dt: str, xs: tuple[float, ...]) -> float | None:
    """The result where some operand is NaN/inf or the operation has a pole or no real value
    (it does not depend on the rounding direction), else None."""
    with np.errstate(all="ignore"):
        v = [_np(dt, x) for x in xs]
        if op in ("sqrt", "rsqrt"):
            x = xs[0]
            if math.isnan(x) or x < 0:
                return math.nan
            if x == 0 or math.isinf(x):
                return float(np.sqrt(v[0])) if op == "sqrt" else (0.0 if math.isinf(x) else math.copysign(math.inf, x))
            return None
        if op == "rcp":
            v = [_np(dt, 1.0), v[0]]
            op = "div"
        if all(math.isfinite(float(x)) for x in v) and not (op == "div" and v[1] == 0):
            return None
        if op == "fma":
            return float(np.float64(v[0]) * np.float64(v[1]) + np.float64(v[2]))
        return float({"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide}[op](*v))


def _zero_sign(op: str, mode: str, xs: tuple[float, ...]) -> float:
    """The signed zero of an exact zero result (IEEE-754 6.3)."""
    neg = [math.copysign(1.0, x) < 0 for x in xs]
    if op in ("mul", "div"):
        return -0.0 if neg[0] != neg[1] else 0.0
    if op == "rcp":
        return -0.0 if neg[0] else 0.0
    if op == "fma":
        terms = [(xs[0] == 0 or xs[1] == 0, neg[0] != neg[1]), (xs[2] == 0, neg[2])]
    else:
        terms = [(xs[0] == 0, neg[0]), (xs[1] == 0, neg[1] != (op == "sub"))]
    if all(z for z, _ in terms) and terms[0][1] == terms[1][1]:
        return -0.0 if terms[0][1] else 0.0
    return -0.0 if mode == "rd" else 0.0


def _rounded(op: str, mode: str) -> Callable[..., float]:
    """``add_rz``, ``fma_ru``, ``sqrt_rd``, ``rcp_rn``, ``rsqrt_rn``...: one exact rounding."""

    def fn(dt: str, *xs: float) -> float:
        special = _special(op, dt, xs)
        if special is not None:
            return special
        f = [Fraction(x) for x in xs]
        exact = {"add": lambda: f[0] + f[1], "sub": lambda: f[0] - f[1], "mul": lambda: f[0] * f[1],
                 "div": lambda: f[0] / f[1], "fma": lambda: f[0] * f[1] + f[2], "rcp": lambda: 1 / f[0],
                 "sqrt": lambda: _sqrt_fraction(f[0]), "rsqrt": lambda: _sqrt_fraction(1 / f[0])}[op]()
        if exact == 0:
            return _zero_sign(op, mode, xs)
        return round_fraction(exact, dt, mode)

    return fn


def _to_int(mode: str, lo: int, hi: int) -> Callable[..., int]:
    """float -> integer rounded in ``mode`` (``"half_away"``: C's round), saturated to [lo, hi], NaN -> 0."""

    def fn(dt: str, x: float) -> int:
        if math.isnan(x):
            return 0
        if math.isinf(x):
            return hi if x > 0 else lo
        f = Fraction(x)
        if mode == "rz":
            n = math.trunc(f)
        elif mode == "rd":
            n = math.floor(f)
        elif mode == "ru":
            n = math.ceil(f)
        elif mode == "half_away":
            n = math.floor(abs(f) + Fraction(1, 2)) * (1 if f >= 0 else -1)
        else:
            n = round(f)  # Fraction.__round__: ties to even
        return min(max(n, lo), hi)

    return fn


def _to_float(mode: str) -> Callable[..., float]:
    """integer or f64 -> float rounded once in ``mode`` (NaN and inf kept)."""

    def fn(dt: str, x: float | int) -> float:
        if isinstance(x, float) and not math.isfinite(x):
            return x
        v = Fraction(x)
        return math.copysign(0.0, x) if v == 0 else round_fraction(v, dt, mode)

    return fn


def _conversion(name: str) -> Callable[..., Any] | None:
    """``float2int_rd``, ``ull2double_ru``, ``double2float_rz``, ``int2double_rn``...; None otherwise."""
    head, _, mode = name.rpartition("_")
    src, two, dst = head.partition("2")
    if not two or mode not in _MODES or src not in (*_INT_RANGES, *_FLOATS) or dst not in (*_INT_RANGES, *_FLOATS):
        return None
    if dst in _INT_RANGES:
        return _to_int(mode, *_INT_RANGES[dst])
    return _to_float(mode)


def _sinpi_core(t: Fraction) -> float:
    """sin(pi * t) for t in [-1/2, 1/2] (exact t)."""
    return math.sin(math.pi * float(t))


def _sinpi(dt: str, x: float) -> float:
    if not math.isfinite(x):
        return math.nan
    if x == math.floor(x):
        return math.copysign(0.0, x)
    r = Fraction(x) % 2  # in [0, 2): sin(pi x) = sin(pi r)
    if r <= Fraction(1, 2):
        return _sinpi_core(r)
    if r <= Fraction(3, 2):
        return _sinpi_core(1 - r)
    return _sinpi_core(r - 2)


def _cospi(dt: str, x: float) -> float:
    if not math.isfinite(x):
        return math.nan
    r = abs(Fraction(x)) % 2  # cos(pi x) = cos(pi r), r in [0, 2)
    if r > 1:
        r = 2 - r
    if r == Fraction(1, 2):
        return 0.0
    return _sinpi_core(Fraction(1, 2) - r)  # cos(pi r) = sin(pi (1/2 - r)), 1/2 - r in [-1/2, 1/2]


def _bessel_i(order: int) -> Callable[..., float]:
    """The modified Bessel function I0 or I1: its power series sum_k (x/2)**(2k+order) / (k! (k+order)!)
    summed in f64 with ``math.fsum`` (every term has the sign of x**order: no cancellation, so a few
    ulp in f64); +-inf where it overflows; I0 is even, I1 odd."""

    def fn(dt: str, x: float) -> float:
        if math.isnan(x):
            return x
        a = abs(x)
        if a > 713.0:  # beyond f64's range (I0(713.98) ~ 1.8e308)
            v = math.inf
        else:
            h = a / 2
            term = h ** order / math.factorial(order)
            terms, total, k = [term], term, 0
            while k <= h or term > 1e-17 * total:  # the terms grow up to k ~ h, then fall
                k += 1
                term *= h * h / (k * (k + order))
                terms.append(term)
                total += term
            v = math.fsum(terms)
        return math.copysign(v, x) if order == 1 else v

    return fn


_TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)


def _log_erfc(x: float) -> float:
    """log(erfc(x)) for x >= 0, also where erfc underflows (asymptotic series past x = 26)."""
    v = math.erfc(x)
    if v > 1e-300:
        return math.log(v)
    t = 1 / (2 * x * x)
    series = 1 - t + 3 * t * t - 15 * t ** 3 + 105 * t ** 4
    return -x * x - math.log(x * math.sqrt(math.pi)) + math.log(series)


def _erfc_inv_pos(y: float) -> float:
    """x >= 0 with erfc(x) = y, for y in (0, 1]: safeguarded Newton on log(erfc) (monotone)."""
    if y == 1:
        return 0.0
    target, lo, hi = math.log(y), 0.0, 27.5
    x = min(math.sqrt(-target), 27.0)
    for _ in range(200):
        f = _log_erfc(x) - target
        if f == 0:
            break
        if f > 0:
            lo = x
        else:
            hi = x
        nx = x + f / (_TWO_OVER_SQRT_PI * math.exp(-x * x - _log_erfc(x)))
        if not lo < nx < hi:
            nx = (lo + hi) / 2
        if abs(nx - x) <= 2e-16 * abs(x) or nx in (lo, hi) and hi - lo <= 4e-16 * hi:
            x = nx
            break
        x = nx
    return x


def _erfcinv(dt: str, y: float) -> float:
    if not 0 <= y <= 2:
        return math.nan
    if y == 0 or y == 2:
        return math.inf if y == 0 else -math.inf
    return _erfc_inv_pos(y) if y <= 1 else -_erfc_inv_pos(2 - y)  # 2 - y is exact for y in [1, 2]


def _erfinv(dt: str, x: float) -> float:
    if not -1 <= x <= 1:
        return math.nan
    a = abs(x)
    if a > 0.5:
        return math.copysign(_erfcinv(dt, 1 - a), x)  # 1 - a exact (Sterbenz)
    if a == 0:
        return x
    t = x * math.sqrt(math.pi) / 2
    for _ in range(50):  # Newton on erf: well conditioned here
        nt = t - (math.erf(t) - x) / (_TWO_OVER_SQRT_PI * math.exp(-t * t))
        if nt == t:
            break
        t = nt
    return t


def _normcdfinv(dt: str, p: float) -> float:
    r = -math.sqrt(2.0) * _erfcinv(dt, 2 * p)  # 2p exact
    return 0.0 if r == 0 else r


def _erfcx(dt: str, x: float) -> float:
    """exp(x*x) * erfc(x), with x*x split exactly (hi + lo) so exp sees no rounding error; past
    x = 26 the asymptotic series 1/(x sqrt(pi)) * sum (-1)**k (2k-1)!! / (2x**2)**k."""
    if math.isnan(x) or x == math.inf:
        return 0.0 if x == math.inf else x
    if x > 26:
        t, term, total, k = 1 / (2 * x * x), 1.0, 1.0, 0
        while abs(term) > 1e-18:
            k += 1
            term *= -(2 * k - 1) * t
            total += term
        return total / (x * math.sqrt(math.pi))
    if x < -26.7:
        return math.inf
    hi = x * x
    lo = float(Fraction(x) ** 2 - Fraction(hi))
    return math.exp(hi) * math.exp(lo) * math.erfc(x)


def _recip(x: float) -> float:
    return math.copysign(math.inf, x) if x == 0 else 1.0 / x


def _u32(v: int) -> int:
    return v & 0xFFFF_FFFF


def _s32(v: int) -> int:
    v &= 0xFFFF_FFFF
    return v - (1 << 32) if v >> 31 else v


def _byte_perm(dt: str, x: int, y: int, s: int) -> int:
    data = _u32(x) | (_u32(y) << 32)
    out = 0
    for i in range(4):
        sel = (s >> (4 * i)) & 7
        out |= ((data >> (8 * sel)) & 0xFF) << (8 * i)
    return _s32(out)


def _mul24(dt: str, x: int, y: int) -> int:
    def low24(v: int) -> int:
        v &= 0xFF_FFFF
        return v - (1 << 24) if dt == "i32" and v >> 23 else v

    return low24(x) * low24(y)


def _hilo(dt: str, hi: int, lo: int) -> float:
    bits = (_u32(hi) << 32) | _u32(lo)
    return float(np.array(bits, dtype=np.uint64).view(np.float64))


def _double_bits(dt: str, x: float) -> int:
    return int(np.array(x, dtype=np.float64).view(np.uint64))


def _saturate(dt: str, x: float) -> float:
    return 0.0 if math.isnan(x) or x <= 0 else min(x, 1.0)


_EXACT: dict[str, Callable[..., Any]] = {
    "rsqrt_rn": _rounded("rsqrt", "rn"),
    "saturatef": _saturate,
    "llrint": _to_int("rn", *_INT_RANGES["ll"]),
    "llround": _to_int("half_away", *_INT_RANGES["ll"]),
    "hiloint2double": _hilo,
    "double2loint": lambda dt, x: _double_bits(dt, x),
    "double2hiint": lambda dt, x: _double_bits(dt, x) >> 32,
    "hadd": lambda dt, x, y: (x + y) >> 1,
    "rhadd": lambda dt, x, y: (x + y + 1) >> 1,
    "mul24": _mul24,
    "sad": lambda dt, x, y, z: abs(x - y) + z,
    "byte_perm": _byte_perm,
    "sinpi": _sinpi,
    "cospi": _cospi,
    "rcbrt": lambda dt, x: _recip(float(np.cbrt(x))) if x == x else x,
    "rhypot": lambda dt, x, y: _recip(math.hypot(x, y)),
    "norm3d": lambda dt, *xs: math.hypot(*xs),
    "norm4d": lambda dt, *xs: math.hypot(*xs),
    "rnorm3d": lambda dt, *xs: _recip(math.hypot(*xs)),
    "rnorm4d": lambda dt, *xs: _recip(math.hypot(*xs)),
    "normcdf": lambda dt, x: 0.5 * math.erfc(-x / math.sqrt(2.0)),
    "cyl_bessel_i0": _bessel_i(0),
    "erfinv": _erfinv,
    "erfcinv": _erfcinv,
    "normcdfinv": _normcdfinv,
    "erfcx": _erfcx,
    "cyl_bessel_i1": _bessel_i(1),
    **{f"{op}_{m}": _rounded(op, m) for op in ("add", "sub", "mul", "div", "fma", "sqrt", "rcp") for m in _MODES},
}

_CTYPES = {"f32": ctypes.c_float, "f64": ctypes.c_double, "i32": ctypes.c_int32, "u32": ctypes.c_uint32,
           "i64": ctypes.c_int64, "u64": ctypes.c_uint64}
_LIBM: list[Any] = []


def _libm_function(symbol: str) -> Callable[..., Any]:
    _, args, res = SYMBOLS[symbol]
    if not _LIBM:
        _LIBM.append(ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6"))
    f = getattr(_LIBM[0], symbol[len("__nv_"):])
    f.argtypes = [_CTYPES[a] for a in args]
    f.restype = _CTYPES[res]
    nan_bits = NEGATIVE_ORDER_NAN.get(symbol)
    if nan_bits is not None:  # jn/yn: libdevice's NaN for a negative order (the C library reflects)
        nan = np.array(nan_bits, dtype=np.uint32 if res == "f32" else np.uint64).view(BY_NAME[res].np).item()
        return lambda dt, n, x: nan if n < 0 else f(n, x)
    return lambda dt, *xs: f(*xs)


def _wrap(v: Any, res: str) -> Any:
    """A Python result as a value of the result dtype (integers wrap to its width)."""
    d = BY_NAME[res]
    if d.is_int:
        v = int(v) & ((1 << d.bits) - 1)
        return v - (1 << d.bits) if d.is_signed and v >> (d.bits - 1) else v
    return float(v)


_SCALARS: dict[str, Callable[..., Any]] = {}


def scalar(symbol: str) -> Callable[..., Any]:
    """``f(*operands) -> result``: the host meaning of ``symbol`` on Python scalars (floats, ints),
    the result a Python value of the symbol's result dtype. KeyError for a GPU-only symbol."""
    fn = _SCALARS.get(symbol)
    if fn is None:
        name, _, res = SYMBOLS[symbol]
        kind = host_kind(name)
        if kind == "gpu":
            raise KeyError(symbol)
        if kind == "libm":
            base = _libm_function(symbol)
        elif kind == "bitcast":
            base = _bitcast_scalar(symbol)
        else:
            base = _EXACT.get(name) or _conversion(name)
            assert base is not None, f"libdevice_refs: no reference for {name}"
        fn = (lambda b, r: lambda *xs: _wrap(b(r, *xs), r))(base, res)
        _SCALARS[symbol] = fn
    return fn


def _bitcast_scalar(symbol: str) -> Callable[..., Any]:
    _, (src,), res = SYMBOLS[symbol]
    return lambda dt, x: np.array(x, dtype=BY_NAME[src].np).view(BY_NAME[res].np).item()


def reference(attrs: dict[str, Any], *operands: np.ndarray, dtype: Any = None) -> np.ndarray:
    """The interpreter's ``libdevice`` op: the symbol's scalar function lane by lane (bit
    reinterpretations as numpy views, so NaN payloads survive)."""
    symbol = attrs["symbol"]
    name, _, res = SYMBOLS[symbol]
    out_dt = BY_NAME[res].np
    if host_kind(name) == "bitcast":
        # np.array, not np.ascontiguousarray: that one makes a scalar (0-d) operand 1-d
        return np.array(operands[0], copy=True, order="C").view(out_dt)
    fn = scalar(symbol)
    arrays = [np.asarray(x) for x in operands]
    out = np.empty(arrays[0].shape, dtype=out_dt)
    flat = [a.reshape(-1) for a in arrays]
    res_flat = out.reshape(-1)
    for i in range(res_flat.size):
        res_flat[i] = fn(*[a[i].item() for a in flat])
    return out
