"""Property tests: every op's numpy reference (ir/ops.py, ir/semantics.py) against an independent
formulation in plain Python (ints, fractions.Fraction, a hand-written round-to-nearest-even),
for every dtype in the op's family.

The oracles below never call the references or numpy's arithmetic: numpy only builds input
arrays and reads results back. Float results are compared exactly (bits, NaN as NaN, signed
zeros) except where the op table allows slack: transcendental functions (a few ulp), float sums
(order unspecified) and dot (accumulation in f32).

Fast by default; the ``slow`` variants run many more examples (``pytest -m slow``).
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eggpu.ir import (
    ALL_DTYPES,
    FLOAT_DTYPES,
    INT_DTYPES,
    bf16,
    bool_,
    f16,
    f32,
    f64,
    i8,
    i32,
    i64,
    u8,
    u16,
    u64,
)
from eggpu.ir.ops import OPS

FAST = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SLOW = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])

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
    "fma": (lambda a, b, c, dt: o_fma(a, b, c, dt), 3),
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
}

# Binary transcendental ops: C's atan2 (signed zeros and infinities exact, else a few ulp).
APPROX2 = {"atan2": math.atan2}

SHAPE_OPS = ("splat", "broadcast", "expand_dims", "reshape", "trans")
REDUCTIONS = ("reduce_sum", "reduce_max", "reduce_min", "reduce_argmax", "reduce_argmin")
OTHER_TESTED = ("where", "cast", "bitcast", "dot", "gather") + SHAPE_OPS + REDUCTIONS

# Ops whose behaviour is the interpreter's own (tested in test_interp.py): leaves, pointer
# arithmetic, memory and control flow, and inline_asm (which it refuses: PTX runs on a GPU only).
# They have no numpy reference in the op table.
INTERPRETER_OPS = frozenset({
    "const", "program_id", "num_programs", "arange", "addptr",
    "load", "store", "atomic_add", "atomic_max", "atomic_min", "atomic_xchg", "atomic_cas",
    "atomic_and", "atomic_or", "atomic_xor", "for", "while", "if", "yield", "inline_asm",
})


def test_every_op_is_covered_by_a_reference_test_or_the_interpreter_tests():
    tested = set(EXACT) | set(APPROX) | set(APPROX2) | set(OTHER_TESTED)
    assert tested.isdisjoint(INTERPRETER_OPS)
    missing = set(OPS) - tested - INTERPRETER_OPS
    unknown = (tested | INTERPRETER_OPS) - set(OPS)
    assert not missing, f"ops without a reference test: {sorted(missing)}"
    assert not unknown, f"tests name ops that are not in OPS: {sorted(unknown)}"
    for name in tested:
        assert OPS[name].reference is not None, name
    for name in INTERPRETER_OPS:
        assert OPS[name].reference is None, f"{name} has a reference: test it here"


# ------------------------------------------------------------------ elementwise exact ops


def operand_strategy(op, dt, k):
    if op in ("shl", "shr") and k == 1:  # shift amounts: mostly in range, sometimes anything
        return st.one_of(st.integers(0, dt.bits - 1), int_values(dt))
    return values(dt)


def check_exact(op, dt, data):
    oracle, arity = EXACT[op]
    n = data.draw(st.integers(1, 8), label="n")
    cols = [data.draw(st.lists(operand_strategy(op, dt, k), min_size=n, max_size=n), label=f"arg{k}")
            for k in range(arity)]
    arrays = [arr(c, dt) for c in cols]
    got = OPS[op].reference({}, *arrays, dtype=dt)
    out_dt = bool_ if OPS[op].has("comparison") else dt
    assert got.dtype == out_dt.np and got.shape == (n,)
    for i in range(n):
        args = [py(a[i], dt) for a in arrays]
        want = oracle(*args, dt)
        assert same(py(got[i], out_dt), want), f"{op}[{dt}]{tuple(args)} = {got[i]!r}, want {want!r}"


@pytest.mark.parametrize("op,dt", cases(EXACT))
@FAST
@given(data=st.data())
def test_elementwise_exact(op, dt, data):
    check_exact(op, dt, data)


@pytest.mark.slow
@pytest.mark.parametrize("op,dt", cases(EXACT))
@SLOW
@given(data=st.data())
def test_elementwise_exact_slow(op, dt, data):
    check_exact(op, dt, data)


SPECIALS = [0.0, -0.0, 1.0, -1.0, 0.5, 3.0, -7.0, inf, -inf, nan]


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "rem", "minimum", "maximum", "eq", "ne", "lt", "le",
                                "gt", "ge"])
@pytest.mark.parametrize("dt", FLOAT_DTYPES, ids=str)
def test_float_binary_ops_on_every_pair_of_special_values(op, dt):
    extra = [max_finite(dt), -max_finite(dt), min_subnormal(dt), -min_subnormal(dt)]
    pairs = list(itertools.product(SPECIALS + extra, repeat=2))
    a, b = arr([p[0] for p in pairs], dt), arr([p[1] for p in pairs], dt)
    got = OPS[op].reference({}, a, b, dtype=dt)
    oracle = EXACT[op][0]
    for (x, y), g in zip(pairs, got):
        want = oracle(x, y, dt)
        assert same(py(g, bool_ if isinstance(want, bool) else dt), want), f"{op}[{dt}]({x}, {y}) = {g}, want {want}"


@pytest.mark.parametrize("dt", INT_DTYPES, ids=str)
def test_integer_division_and_shift_edges(dt):
    lo, hi, bits = dt.min, dt.max, dt.bits
    a = [7, -7, 7, -7, lo, lo, hi, 5, 0] if dt.is_signed else [7, hi, hi, 0, 5, 1, hi, 1, 0]
    b = [2, 2, -2, -2, -1, 0, 0, 0, 3] if dt.is_signed else [2, 2, 0, 0, 3, hi, 1, 0, 3]
    for op in ("div", "rem"):
        got = OPS[op].reference({}, arr(a, dt), arr(b, dt), dtype=dt)
        assert [int(g) for g in got] == [EXACT[op][0](x, y, dt) for x, y in zip(a, b)], op
    if dt.is_signed:  # spelled out: truncation, dividend's sign, /0 -> 0, INT_MIN / -1 wraps
        div = OPS["div"].reference({}, arr(a, dt), arr(b, dt), dtype=dt).tolist()
        rem = OPS["rem"].reference({}, arr(a, dt), arr(b, dt), dtype=dt).tolist()
        assert div == [3, -3, -3, 3, lo, 0, 0, 0, 0]
        assert rem == [1, -1, 1, -1, 0, 0, 0, 0, 0]
    x = arr([1, -1 if dt.is_signed else hi, 3, 1, 1, 1], dt)
    amounts = [bits - 1, bits - 1, bits, bits + 3, 0, -1 if dt.is_signed else hi]
    sh = arr(amounts, dt)
    shl = OPS["shl"].reference({}, x, sh, dtype=dt).tolist()
    shr = OPS["shr"].reference({}, x, sh, dtype=dt).tolist()
    assert shl == [wrap(1 << (bits - 1), dt), wrap(int(x[1]) << (bits - 1), dt), 0, 0, 1, 0]
    if dt.is_signed:
        assert shr == [0, -1, 0, 0, 1, 0]  # arithmetic; out of range: sign fill
        assert OPS["shr"].reference({}, arr([lo], dt), arr([bits], dt), dtype=dt).tolist() == [-1]
    else:
        assert shr == [0, 1, 0, 0, 1, 0]  # logical; out of range: 0


# ------------------------------------------------------------------ transcendental ops


APPROX_ULPS = {f16: 1, bf16: 1, f32: 1, f64: 4}


def check_approx(op, dt, data):
    xs = data.draw(st.lists(float_values(dt), min_size=1, max_size=8), label="x")
    a = arr(xs, dt)
    got = OPS[op].reference({}, a, dtype=dt)
    assert got.dtype == dt.np and got.shape == a.shape
    for x, g in zip(a, got):
        x = float(x)
        w = APPROX[op](x)
        want = w if math.isnan(w) or math.isinf(w) else round_exact(Fraction(w), dt)
        g = float(g)
        if math.isnan(want) or math.isinf(want):
            assert same(g, want), f"{op}[{dt}]({x!r}) = {g!r}, want {want!r}"
        else:
            assert not math.isnan(g), f"{op}[{dt}]({x!r}) = nan, want {want!r}"
            dist = abs(ordinal(g, dt) - ordinal(want, dt))
            assert dist <= APPROX_ULPS[dt], f"{op}[{dt}]({x!r}) = {g!r}, want {want!r} ({dist} ulp)"


@pytest.mark.parametrize("op,dt", cases(APPROX))
@FAST
@given(data=st.data())
def test_transcendental(op, dt, data):
    check_approx(op, dt, data)


@pytest.mark.slow
@pytest.mark.parametrize("op,dt", cases(APPROX))
@SLOW
@given(data=st.data())
def test_transcendental_slow(op, dt, data):
    check_approx(op, dt, data)


def check_approx2(op, dt, data):
    pairs = data.draw(st.lists(st.tuples(float_values(dt), float_values(dt)), min_size=1, max_size=8), label="y, x")
    a, b = arr([p[0] for p in pairs], dt), arr([p[1] for p in pairs], dt)
    got = OPS[op].reference({}, a, b, dtype=dt)
    assert got.dtype == dt.np and got.shape == a.shape
    for y, x, g in zip(a, b, got):
        w = APPROX2[op](float(y), float(x))
        want = w if math.isnan(w) or w == 0 else round_exact(Fraction(w), dt)
        g = float(g)
        if math.isnan(want) or want == 0:
            assert same(g, want), f"{op}[{dt}]({y!r}, {x!r}) = {g!r}, want {want!r}"
        else:
            dist = abs(ordinal(g, dt) - ordinal(want, dt))
            assert dist <= APPROX_ULPS[dt], f"{op}[{dt}]({y!r}, {x!r}) = {g!r}, want {want!r} ({dist} ulp)"


@pytest.mark.parametrize("op,dt", cases(APPROX2))
@FAST
@given(data=st.data())
def test_binary_transcendental(op, dt, data):
    check_approx2(op, dt, data)


@pytest.mark.parametrize("dt", FLOAT_DTYPES, ids=str)
def test_atan2_special_values(dt):
    def at(y, x):
        return float(OPS["atan2"].reference({}, arr([y], dt), arr([x], dt), dtype=dt)[0])

    def rounded(v):
        return float(round_exact(Fraction(v), dt))

    pi = math.pi
    assert same(at(0.0, 0.0), 0.0) and same(at(-0.0, 0.0), -0.0)
    assert same(at(0.0, -0.0), rounded(pi)) and same(at(-0.0, -0.0), -rounded(pi))
    assert same(at(1.0, 0.0), rounded(pi / 2)) and same(at(-1.0, -0.0), -rounded(pi / 2))
    assert same(at(inf, inf), rounded(pi / 4)) and same(at(-inf, -inf), -rounded(3 * pi / 4))
    assert same(at(1.0, inf), 0.0) and same(at(-1.0, -inf), -rounded(pi))
    assert math.isnan(at(nan, 1.0)) and math.isnan(at(1.0, nan))


@pytest.mark.parametrize("dt", FLOAT_DTYPES, ids=str)
def test_transcendental_special_values(dt):
    def one(op):
        return lambda x: float(OPS[op].reference({}, arr([x], dt), dtype=dt)[0])

    ref = {op: one(op) for op in APPROX}
    assert same(ref["exp"](-inf), 0.0) and same(ref["exp"](inf), inf) and same(ref["exp"](1e4), inf)
    assert same(ref["exp2"](3.0), 8.0) and same(ref["exp2"](-inf), 0.0)
    assert same(ref["log"](0.0), -inf) and same(ref["log"](-0.0), -inf) and math.isnan(ref["log"](-1.0))
    assert same(ref["log2"](8.0), 3.0) and math.isnan(ref["log2"](-inf))
    assert same(ref["rsqrt"](0.0), inf) and same(ref["rsqrt"](-0.0), -inf) and same(ref["rsqrt"](4.0), 0.5)
    assert math.isnan(ref["sin"](inf)) and math.isnan(ref["cos"](-inf)) and same(ref["sin"](-0.0), -0.0)
    assert same(ref["tanh"](inf), 1.0) and same(ref["tanh"](-inf), -1.0) and same(ref["tanh"](-0.0), -0.0)
    assert same(ref["erf"](inf), 1.0) and same(ref["erf"](-inf), -1.0) and same(ref["erf"](-0.0), -0.0)
    def close(got, want, dt):  # the f64 value rounded once to dt
        return same(got, float(round_exact(Fraction(want), dt)))

    hp = math.pi / 2
    assert same(ref["asin"](-0.0), -0.0) and math.isnan(ref["asin"](1.5)) and math.isnan(ref["asin"](-inf))
    assert close(ref["asin"](1.0), hp, dt) and close(ref["asin"](-1.0), -hp, dt)
    assert same(ref["acos"](1.0), 0.0) and close(ref["acos"](-1.0), math.pi, dt) and math.isnan(ref["acos"](-1.5))
    assert close(ref["atan"](inf), hp, dt) and close(ref["atan"](-inf), -hp, dt) and same(ref["atan"](-0.0), -0.0)
    assert same(ref["sinh"](inf), inf) and same(ref["sinh"](-1e4), -inf) and same(ref["sinh"](-0.0), -0.0)
    assert same(ref["cosh"](-inf), inf) and same(ref["cosh"](-1e4), inf) and same(ref["cosh"](-0.0), 1.0)
    assert same(ref["asinh"](-inf), -inf) and same(ref["asinh"](-0.0), -0.0)
    assert same(ref["acosh"](1.0), 0.0) and same(ref["acosh"](inf), inf) and math.isnan(ref["acosh"](0.5))
    assert same(ref["atanh"](1.0), inf) and same(ref["atanh"](-1.0), -inf) and same(ref["atanh"](-0.0), -0.0)
    assert math.isnan(ref["atanh"](1.5)) and math.isnan(ref["atanh"](-inf))
    for op in APPROX:
        assert math.isnan(ref[op](nan)), op


@pytest.mark.parametrize("dt", FLOAT_DTYPES, ids=str)
def test_neg_and_abs_act_on_the_sign_bit_of_nan_and_zero(dt):
    w = 16 if dt.bits == 16 else dt.bits
    sign = 1 << (w - 1)
    x = arr([nan, -nan, 0.0, -0.0], dt)
    neg = OPS["neg"].reference({}, x, dtype=dt).view(UINT[w]).astype(np.uint64)
    ab = OPS["abs"].reference({}, x, dtype=dt).view(UINT[w]).astype(np.uint64)
    xb = x.view(UINT[w]).astype(np.uint64)
    assert ((neg ^ xb) & sign).tolist() == [sign] * 4
    assert (ab & sign).tolist() == [0] * 4
    assert np.isnan(OPS["neg"].reference({}, x, dtype=dt)[:2].astype(np.float64)).all()


# ------------------------------------------------------------------ where, cast, bitcast


def raw(a: np.ndarray) -> list[int]:
    """The bit patterns of an array's elements (bool as 0/1)."""
    if a.dtype == np.bool_:
        return [int(v) for v in a.ravel()]
    return [int(v) for v in a.view(UINT[a.dtype.itemsize * 8]).ravel()]


def check_where(dt, data):
    n = data.draw(st.integers(1, 8))
    c = data.draw(st.lists(st.booleans(), min_size=n, max_size=n))
    xs = arr(data.draw(st.lists(values(dt), min_size=n, max_size=n)), dt)
    ys = arr(data.draw(st.lists(values(dt), min_size=n, max_size=n)), dt)
    got = OPS["where"].reference({}, np.array(c), xs, ys, dtype=bool_)
    assert got.dtype == dt.np
    rx, ry = raw(xs), raw(ys)
    assert raw(got) == [rx[i] if c[i] else ry[i] for i in range(n)]  # bit-exact, NaN payloads kept


@pytest.mark.parametrize("dt", family("where"), ids=str)
@FAST
@given(data=st.data())
def test_where(dt, data):
    check_where(dt, data)


def o_cast(v, src, dst):
    if dst.is_bool:
        return v != 0  # NaN != 0
    if dst.is_int:
        if src.is_bool:
            return int(v)
        if src.is_int:
            return wrap(v, dst)
        if math.isnan(v):
            return 0
        if math.isinf(v):
            return dst.max if v > 0 else dst.min
        return min(max(math.trunc(v), dst.min), dst.max)
    # float destination
    if src.is_bool:
        return float(v)
    if src.is_float and (math.isnan(v) or math.isinf(v) or v == 0):
        return v
    return round_exact(Fraction(v), dst)


CAST_PAIRS = [pytest.param(s, d, id=f"{s}->{d}") for s in ALL_DTYPES for d in ALL_DTYPES]


def check_cast(src, dst, data):
    xs = data.draw(st.lists(values(src), min_size=1, max_size=8))
    a = arr(xs, src)
    got = OPS["cast"].reference({"dtype": dst}, a, dtype=src)
    assert got.dtype == dst.np and got.shape == a.shape
    for x, g in zip(a, got):
        want = o_cast(py(x, src), src, dst)
        assert same(py(g, dst), want), f"cast {src}->{dst}: {x!r} -> {g!r}, want {want!r}"


@pytest.mark.parametrize("src,dst", CAST_PAIRS)
@FAST
@given(data=st.data())
def test_cast(src, dst, data):
    check_cast(src, dst, data)


@pytest.mark.slow
@pytest.mark.parametrize("src,dst", CAST_PAIRS)
@SLOW
@given(data=st.data())
def test_cast_slow(src, dst, data):
    check_cast(src, dst, data)


def test_cast_double_rounding_regressions():
    """Values one step past a 16-bit midpoint must round up (one rounding, not via f32)."""
    cast = OPS["cast"].reference
    assert float(cast({"dtype": bf16}, np.array([1 + 2**-8 + 2**-30]), dtype=f64)[0]) == 1 + 2**-7
    assert float(cast({"dtype": bf16}, np.array([2**24 + 2**16 + 1], np.int32), dtype=i32)[0]) == 2**24 + 2**17
    assert float(cast({"dtype": bf16}, np.array([2**63 + 2**55 + 1], np.uint64), dtype=u64)[0]) == 2**63 + 2**56
    assert float(cast({"dtype": f16}, np.array([1 + 2**-11 + 2**-40]), dtype=f64)[0]) == 1 + 2**-10
    assert float(cast({"dtype": bf16}, np.array([-(2**63)], np.int64), dtype=i64)[0]) == -(2**63)
    sat = cast({"dtype": i8}, np.array([nan, inf, -inf, 127.9, -128.9, -0.5, 1e30]), dtype=f64).tolist()
    assert sat == [0, 127, -128, 127, -128, 0, 127]
    assert cast({"dtype": u16}, np.array([-1.5, 65535.7, nan], np.float32), dtype=f32).tolist() == [0, 65535, 0]
    assert cast({"dtype": bool_}, np.array([nan, -0.0, 0.5]), dtype=f64).tolist() == [True, False, True]
    assert cast({"dtype": u8}, np.array([-1, 256, 511], np.int16), dtype=i8).tolist() == [255, 0, 255]


BITCAST_PAIRS = [pytest.param(s, d, id=f"{s}->{d}") for s in ALL_DTYPES for d in ALL_DTYPES if s.bits == d.bits]


def o_bitcast(bits: int, dst):
    if dst.is_bool:
        return bool(bits)
    if dst.is_int:
        return wrap(bits, dst)
    return decode(bits, dst)


def check_bitcast(src, dst, data):
    if src.is_bool:
        bits = data.draw(st.lists(st.integers(0, 1), min_size=1, max_size=8))
        a = np.array(bits, dtype=bool)
    else:
        bits = data.draw(st.lists(st.integers(0, (1 << src.bits) - 1), min_size=1, max_size=8))
        a = np.array(bits, dtype=UINT[src.bits]).view(src.np)
    got = OPS["bitcast"].reference({"dtype": dst}, a, dtype=src)
    assert got.dtype == dst.np and got.shape == a.shape
    assert raw(got) == bits
    for b, g in zip(bits, got):
        assert same(py(g, dst), o_bitcast(b, dst)), f"bitcast {src}->{dst}: {b:#x} -> {g!r}"


@pytest.mark.parametrize("src,dst", BITCAST_PAIRS)
@FAST
@given(data=st.data())
def test_bitcast(src, dst, data):
    check_bitcast(src, dst, data)


# ------------------------------------------------------------------ shape ops


def row_major(idx, shape) -> int:
    k = 0
    for i, s in zip(idx, shape):
        k = k * s + i
    return k


def all_indices(shape):
    return list(itertools.product(*[range(s) for s in shape]))


shapes = st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple)


def block_of(dt, shape, data):
    n = math.prod(shape)
    if dt.is_bool:
        return np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool).reshape(shape)
    bits = data.draw(st.lists(st.integers(0, (1 << dt.bits) - 1), min_size=n, max_size=n))
    return np.array(bits, dtype=UINT[dt.bits]).view(dt.np).reshape(shape)


def check_shape_op(op, dt, data):
    ref = OPS[op].reference
    if op == "splat":
        x = block_of(dt, (1,), data).reshape(())
        shape = data.draw(shapes)
        got = ref({"shape": shape}, x, dtype=dt)
        assert got.shape == shape and raw(got) == raw(x) * math.prod(shape)
        return
    shape = data.draw(shapes)
    x = block_of(dt, shape, data)
    xr = raw(x)
    if op == "broadcast":
        ones = data.draw(st.lists(st.booleans(), min_size=len(shape), max_size=len(shape)))
        src_shape = tuple(1 if o else s for o, s in zip(ones, shape))
        x = block_of(dt, src_shape, data)
        xr = raw(x)
        got = ref({"shape": shape}, x, dtype=dt)
        want = [xr[row_major(tuple(0 if s == 1 else i for i, s in zip(idx, src_shape)), src_shape)]
                for idx in all_indices(shape)]
    elif op == "expand_dims":
        axis = data.draw(st.integers(0, len(shape)))
        got = ref({"axis": axis}, x, dtype=dt)
        assert got.shape == shape[:axis] + (1,) + shape[axis:]
        want = xr
    elif op == "reshape":
        n = math.prod(shape)
        divisors = [d for d in range(1, n + 1) if n % d == 0]
        d = data.draw(st.sampled_from(divisors))
        new = (d, n // d) if data.draw(st.booleans()) else (n,)
        got = ref({"shape": new}, x, dtype=dt)
        assert got.shape == new
        want = xr  # row-major order is kept
    else:  # trans
        if len(shape) < 2:
            shape = shape + (3,)
            x = block_of(dt, shape, data)
            xr = raw(x)
        perm = tuple(data.draw(st.permutations(range(len(shape)))))
        got = ref({"perm": perm}, x, dtype=dt)
        out_shape = tuple(shape[p] for p in perm)
        assert got.shape == out_shape
        want = []
        for idx in all_indices(out_shape):
            src = [0] * len(shape)
            for k, p in enumerate(perm):
                src[p] = idx[k]
            want.append(xr[row_major(src, shape)])
    assert got.dtype == dt.np
    assert raw(np.ascontiguousarray(got)) == want


@pytest.mark.parametrize("op,dt", cases(SHAPE_OPS))
@FAST
@given(data=st.data())
def test_shape_ops(op, dt, data):
    check_shape_op(op, dt, data)


@pytest.mark.parametrize("dt", [bool_, i8, u64, f16, f32], ids=str)
@pytest.mark.parametrize("idt", [i32, u8, i64], ids=str)
@FAST
@given(data=st.data())
def test_gather(dt, idt, data):
    """result[c] = src[c with c[axis] = clamp(index[c], 0, n - 1)], lane by lane."""
    rank = data.draw(st.integers(1, 3))
    shape = tuple(data.draw(st.lists(st.integers(1, 4), min_size=rank, max_size=rank)))
    axis = data.draw(st.integers(0, rank - 1))
    out_shape = shape[:axis] + (data.draw(st.integers(1, 5)),) + shape[axis + 1:]
    x = block_of(dt, shape, data)
    n = math.prod(out_shape)
    lo, hi = max(idt.min, -3), min(idt.max, shape[axis] + 3)
    index = np.array(data.draw(st.lists(st.integers(lo, hi), min_size=n, max_size=n)), idt.np).reshape(out_shape)
    got = OPS["gather"].reference({"axis": axis}, x, index, dtype=dt)
    assert got.shape == out_shape and got.dtype == dt.np
    xr = raw(x)
    want = []
    for idx in all_indices(out_shape):
        k = min(max(int(index[idx]), 0), shape[axis] - 1)
        want.append(xr[row_major(idx[:axis] + (k,) + idx[axis + 1:], shape)])
    assert raw(got) == want


def test_gather_type_rule():
    from eggpu.ir import IRError
    from eggpu.ir.ops import result_types
    from eggpu.ir.types import BlockType

    src, idx = BlockType(f32, (4, 3)), BlockType(i32, (7, 3))
    assert result_types("gather", [src, idx], {"axis": 0}) == (BlockType(f32, (7, 3)),)
    with pytest.raises(IRError, match="must equal the source shape"):
        result_types("gather", [src, idx], {"axis": 1})
    with pytest.raises(IRError, match="index must be an integer block"):
        result_types("gather", [src, BlockType(f32, (4, 3))], {"axis": 0})


# ------------------------------------------------------------------ reductions


def lines(x: np.ndarray, axis: int):
    """(output index, values along axis) for every output lane, in row-major order."""
    shape = x.shape
    out_shape = shape[:axis] + shape[axis + 1:]
    flat = x.ravel().tolist()
    for idx in all_indices(out_shape):
        vals = [flat[row_major(idx[:axis] + (k,) + idx[axis:], shape)] for k in range(shape[axis])]
        yield idx, vals


def o_reduce_extreme(vals, dt, is_min):
    if dt.is_int:
        return min(vals) if is_min else max(vals)
    r = vals[0]
    for v in vals[1:]:
        r = o_fmin(r, v, dt, is_min)
    return r


def o_arg(vals, dt, is_min):
    cands = [(k, v) for k, v in enumerate(vals) if not (dt.is_float and math.isnan(v))]
    if not cands:
        return 0
    best = min(v for _, v in cands) if is_min else max(v for _, v in cands)
    return next(k for k, v in cands if v == best)  # first; -0.0 ties +0.0


def reduction_values(op, dt):
    if op == "reduce_sum" and dt.is_float:  # finite and small enough that no partial sum overflows
        lim = math.ldexp(1.0, FMT[dt][2] - 8)
        return float_values(dt).filter(lambda v: math.isfinite(v) and abs(v) <= lim)
    return values(dt)


def check_reduction(op, dt, data):
    shape = data.draw(shapes)
    axis = data.draw(st.integers(0, len(shape) - 1))
    n = math.prod(shape)
    x = arr(data.draw(st.lists(reduction_values(op, dt), min_size=n, max_size=n)), dt).reshape(shape)
    got = OPS[op].reference({"axis": axis}, x, dtype=dt)
    out_shape = shape[:axis] + shape[axis + 1:]
    is_arg = op in ("reduce_argmax", "reduce_argmin")
    assert got.shape == out_shape and got.dtype == (np.int32 if is_arg else dt.np)
    for idx, vals in lines(x, axis):
        g = got[idx].item() if dt != bf16 or is_arg else float(got[idx])
        if is_arg:
            assert g == o_arg(vals, dt, op == "reduce_argmin"), (op, vals, g)
        elif op == "reduce_sum":
            if dt.is_int:
                assert g == wrap(sum(vals), dt)
            else:
                exact = sum(Fraction(v) for v in vals)
                eps = 2.0**-53 if dt == f64 else 2.0**-24  # f16/bf16 accumulate in f32
                bound = ulp(float(exact), dt) + len(vals) * eps * sum(abs(v) for v in vals)
                assert abs(Fraction(g) - exact) <= Fraction(bound), (vals, g, float(exact))
        else:
            want = o_reduce_extreme(vals, dt, op == "reduce_min")
            assert same(float(g) if dt.is_float else g, want), (op, vals, g, want)


@pytest.mark.parametrize("op,dt", cases(REDUCTIONS))
@FAST
@given(data=st.data())
def test_reductions(op, dt, data):
    check_reduction(op, dt, data)


@pytest.mark.slow
@pytest.mark.parametrize("op,dt", cases(REDUCTIONS))
@SLOW
@given(data=st.data())
def test_reductions_slow(op, dt, data):
    check_reduction(op, dt, data)


@pytest.mark.parametrize("dt", FLOAT_DTYPES, ids=str)
def test_reduction_nan_ties_and_signed_zero_edges(dt):
    def r(op, vals):
        out = OPS[op].reference({"axis": 0}, arr(vals, dt), dtype=dt)
        return out.item() if op.endswith(("argmax", "argmin")) else float(out)

    assert r("reduce_argmax", [nan, -inf]) == 1 and r("reduce_argmin", [nan, inf]) == 1
    assert r("reduce_argmax", [nan, nan]) == 0 and r("reduce_argmin", [nan, nan, nan]) == 0
    assert r("reduce_argmax", [1.0, 3.0, nan, 3.0]) == 1 and r("reduce_argmin", [2.0, -0.0, 0.0, 5.0]) == 1
    assert r("reduce_argmax", [-0.0, 0.0]) == 0  # -0.0 ties +0.0: the first wins
    assert same(r("reduce_max", [nan, -1.0, nan]), -1.0) and math.isnan(r("reduce_max", [nan, nan]))
    assert same(r("reduce_max", [-0.0, 0.0, -0.0]), 0.0) and same(r("reduce_max", [-0.0, -0.0]), -0.0)
    assert same(r("reduce_min", [0.0, -0.0, 0.0]), -0.0) and same(r("reduce_min", [0.0, nan]), 0.0)
    assert same(r("reduce_sum", [inf, 1.0]), inf) and math.isnan(r("reduce_sum", [inf, -inf]))
    assert math.isnan(r("reduce_sum", [1.0, nan])) and same(r("reduce_sum", [-0.0, -0.0]), -0.0)
    assert same(r("reduce_sum", [-0.0] * 20), -0.0) and same(r("reduce_sum", [-0.0, 0.0, -0.0]), 0.0)
    if dt == f16:  # accumulates in f32: the partial sum 2 * max does not overflow
        m = max_finite(dt)
        assert r("reduce_sum", [m, m, -m]) == m


@pytest.mark.parametrize("dt", INT_DTYPES, ids=str)
def test_integer_reductions_wrap_and_pick_the_first_extreme(dt):
    x = arr([dt.max, dt.max, 1], dt)
    assert int(OPS["reduce_sum"].reference({"axis": 0}, x, dtype=dt)) == wrap(2 * dt.max + 1, dt)
    assert int(OPS["reduce_argmax"].reference({"axis": 0}, x, dtype=dt)) == 0
    y = arr([3, dt.min, dt.min], dt)
    assert int(OPS["reduce_argmin"].reference({"axis": 0}, y, dtype=dt)) == 1


# ------------------------------------------------------------------ dot


def dot_values(dt):
    if dt.is_float:  # moderate magnitudes: f32 results stay finite
        lim = 2.0**10
        return float_values(dt).filter(lambda v: math.isfinite(v) and abs(v) <= lim)
    return values(dt)


def check_dot(dt, data):
    m, k, n = (data.draw(st.integers(1, 4)) for _ in range(3))
    a = arr(data.draw(st.lists(dot_values(dt), min_size=m * k, max_size=m * k)), dt).reshape(m, k)
    b = arr(data.draw(st.lists(dot_values(dt), min_size=k * n, max_size=k * n)), dt).reshape(k, n)
    out_dt = f32 if dt.is_float else i32
    use_acc = data.draw(st.booleans())
    acc = arr(data.draw(st.lists(dot_values(out_dt), min_size=m * n, max_size=m * n)), out_dt).reshape(m, n)
    got = OPS["dot"].reference({}, a, b, *((acc,) if use_acc else ()), dtype=dt)
    assert got.dtype == out_dt.np and got.shape == (m, n)
    for i, j in itertools.product(range(m), range(n)):
        terms = [(py(a[i, t], dt), py(b[t, j], dt)) for t in range(k)]
        c = py(acc[i, j], out_dt) if use_acc else 0
        if dt.is_int:
            assert int(got[i, j]) == wrap(sum(x * y for x, y in terms) + c, i32)
            continue
        exact = sum(Fraction(x) * Fraction(y) for x, y in terms) + Fraction(c)
        size = sum(abs(Fraction(x) * Fraction(y)) for x, y in terms) + abs(Fraction(c))
        # accumulation in f32: a few roundings at f32 precision relative to the terms' size
        bound = Fraction(2 * ulp(float(exact), f32)) + (k + 1) * size * Fraction(2) ** -24
        assert abs(Fraction(float(got[i, j])) - exact) <= bound, (terms, c, float(got[i, j]), float(exact))


@pytest.mark.parametrize("dt", family("dot"), ids=str)
@FAST
@given(data=st.data())
def test_dot(dt, data):
    check_dot(dt, data)


@pytest.mark.slow
@pytest.mark.parametrize("dt", family("dot"), ids=str)
@SLOW
@given(data=st.data())
def test_dot_slow(dt, data):
    check_dot(dt, data)


def test_dot_special_values_and_integer_wrap():
    a = np.array([[inf, 1.0], [0.0, nan]], np.float32)
    b = np.array([[0.0, 1.0], [1.0, 2.0]], np.float32)
    got = OPS["dot"].reference({}, a, b, dtype=f32)
    assert math.isnan(got[0, 0]) and got[0, 1] == inf and math.isnan(got[1, 0]) and math.isnan(got[1, 1])
    h = np.array([[60000.0, 60000.0]], np.float16)  # f16 inputs accumulate in f32: no overflow
    assert OPS["dot"].reference({}, h, np.ones((2, 1), np.float16), dtype=f16)[0, 0] == 120000.0
    x = np.array([[2**31 - 1, 1]], np.int64)
    y = np.array([[2], [3]], np.int64)
    assert OPS["dot"].reference({}, x, y, dtype=i64).tolist() == [[wrap(2 * (2**31 - 1) + 3, i32)]]
    u = np.array([[200, 200]], np.uint8)
    assert OPS["dot"].reference({}, u, np.array([[200], [1]], np.uint8), dtype=u8).tolist() == [[40200]]


# ------------------------------------------------------------------ fma regressions


def test_fma_single_rounding_regressions():
    fma = OPS["fma"].reference
    # exact value is just above the f32 midpoint 1 + 2**-24; rounding the f64 sum first loses it
    a, b, c = np.float32(1.0002403), np.float32(5.9590324e-08), np.float32(1.0)
    want = round_exact(Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c)), f32)
    assert want == 1 + 2**-23
    assert float(fma({}, np.array([a]), np.array([b]), np.array([c]), dtype=f32)[0]) == want
    big = fma({}, np.array([1e308, -1e308]), np.array([10.0, 10.0]), np.array([0.0, 0.0]), dtype=f64)
    assert big.tolist() == [inf, -inf]
    z = fma({}, np.array([-0.0, 1.0]), np.array([1.0, 1.0]), np.array([-0.0, -1.0]), dtype=f64)
    assert same(float(z[0]), -0.0) and same(float(z[1]), 0.0)


FMA_EDGES = (0.0, -0.0, 1.0, -1.0, 2.0, 0.5, 1e300, -1e300, 1.7e308, -1.7e308, 5e-324, -5e-324,
             2.2250738585072014e-308, 1e-200, inf, -inf, nan)


@pytest.mark.parametrize("dt", [f16, bf16, f32, f64])
def test_fma_special_operands_match_the_exact_oracle(dt):
    """Every triple of edge values (infinities, NaN, zeros, huge and tiny): one rounding of the
    exact value, IEEE 754 special cases. Regression: f64 computed ``x * y + z`` in floats as soon
    as one operand was not finite, so ``fma(1e300, 1.7e308, -inf)`` (an exact, finite, huge
    product plus -inf) gave NaN instead of -inf."""
    fma = OPS["fma"].reference
    vals = np.array(FMA_EDGES, dtype=np.float64)
    vals = round_exact_array(vals, dt)
    a, b, c = (np.array(v, dtype=dt.np) for v in zip(*itertools.product(vals.tolist(), repeat=3)))
    got = fma({}, a, b, c, dtype=dt)
    for x, y, z, g in zip(a.tolist(), b.tolist(), c.tolist(), got.astype(np.float64).tolist()):
        want = o_fma(float(x), float(y), float(z), dt)
        assert same(g, want), (dt, x, y, z, g, want)


def round_exact_array(v: np.ndarray, dt) -> np.ndarray:
    """The distinct values of ``v`` once rounded to ``dt`` (as float64)."""
    r = np.array([round_exact(Fraction(x), dt) if math.isfinite(x) and x != 0 else x for x in v.tolist()], np.float64)
    out: list[float] = []
    for x in r.tolist():
        if not any(same(x, y) for y in out):
            out.append(x)
    return np.array(out, np.float64)


def test_fma_f64_finite_product_beyond_the_range_plus_infinity():
    fma = OPS["fma"].reference
    got = fma({}, np.array([1e300, -1e300, 1e300, 1e300, 0.0]), np.array([1.7e308, 1.7e308, 1.7e308, inf, inf]),
              np.array([-inf, inf, inf, -inf, 1.0]), dtype=f64)
    assert got[:3].tolist() == [-inf, inf, inf]
    assert np.isnan(got[3]) and np.isnan(got[4])
    # 1.8e308 is not a finite double: the factor is inf and inf + -inf is NaN
    assert float("1.8e308") == inf
    assert np.isnan(fma({}, np.array([1e300]), np.array([1.8e308]), np.array([-inf]), dtype=f64)[0])
