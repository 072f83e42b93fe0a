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
from hypothesis import given
from hypothesis import strategies as st
from op_oracles import (
    APPROX,
    APPROX2,
    EXACT,
    FAST,
    INTERPRETER_OPS,
    OTHER_TESTED,
    UINT,
    arr,
    cases,
    decode,
    family,
    fast_and_slow,
    float_values,
    inf,
    int_values,
    max_finite,
    min_subnormal,
    nan,
    ordinal,
    py,
    raw,
    round_exact,
    same,
    values,
    wrap,
)

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


test_elementwise_exact, test_elementwise_exact_slow = fast_and_slow(
    "elementwise_exact", "op,dt", cases(EXACT), check_exact)


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


test_transcendental, test_transcendental_slow = fast_and_slow(
    "transcendental", "op,dt", cases(APPROX), check_approx)


def check_approx2(op, dt, data):
    pairs = data.draw(st.lists(st.tuples(float_values(dt), float_values(dt)), min_size=1, max_size=8), label="y, x")
    a, b = arr([p[0] for p in pairs], dt), arr([p[1] for p in pairs], dt)
    got = OPS[op].reference({}, a, b, dtype=dt)
    assert got.dtype == dt.np and got.shape == a.shape
    for y, x, g in zip(a, b, got):
        w = APPROX2[op](float(y), float(x))
        want = w if math.isnan(w) or math.isinf(w) or w == 0 else round_exact(Fraction(w), dt)
        g = float(g)
        if math.isnan(want) or math.isinf(want) or want == 0:
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


test_cast, test_cast_slow = fast_and_slow("cast", "src,dst", CAST_PAIRS, check_cast)


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


