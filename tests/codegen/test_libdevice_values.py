"""The numbers of the ``libdevice`` op's host references (interpreter and run_cpu, which agree bit
for bit but for sinpi/cospi: test_libdevice_calls.py) against independent references on special
values (NaN, +-0, +-inf, denormals, extremes) and ragged sizes: numpy and Python's math, and, for the directed
roundings, the defining bracket checked exactly with Fractions (``add_rd(x, y)`` is the largest
float <= x + y: ``r <= x + y < nextafter(r, +inf)``)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from eggpu.ir import BY_NAME
from eggpu.ir.libdevice_table import FUNCTIONS

from .conftest import run_compare
from .test_libdevice_calls import BLOCK, HOST_ULPS, call_kernel, edge_values, ulp_distance

SIZES = (1, 1000, 1001)


def run(symbol: str, ins: list[np.ndarray]) -> np.ndarray:
    """The op on ``ins`` through the interpreter and run_cpu (compared: bit for bit, or within
    ``HOST_ULPS``), the host's result."""
    from eggpu.ir.libdevice_table import SYMBOLS

    n = len(ins[0])
    out = np.zeros(n, BY_NAME[SYMBOLS[symbol][2]].np)
    if symbol in HOST_ULPS:  # libdevice's own code on the host: within HOST_ULPS of the interpreter
        from eggpu.codegen import build_host
        from eggpu.ir.interp import interpret

        want, got = out.copy(), out.copy()
        interpret(call_kernel(symbol), ((n + BLOCK - 1) // BLOCK,), *ins, want, n)
        build_host(call_kernel(symbol)).run(((n + BLOCK - 1) // BLOCK,), *ins, got, n)
        assert ulp_distance(want, got).max() <= HOST_ULPS[symbol], symbol
        return got
    return run_compare(call_kernel(symbol), ((n + BLOCK - 1) // BLOCK,), [*ins, out, n])[-2]


def symbol_of(name: str, dt: str) -> str:
    return next(sym for args, sym, _ in FUNCTIONS[name] if args[-1] == dt or args[0] == dt)


def same(want: np.ndarray, got: np.ndarray, what: str) -> None:
    """Bitwise equal (any NaN equals any NaN)."""
    w, g = np.asarray(want), np.asarray(got)
    assert w.dtype == g.dtype, what
    if w.dtype.kind == "f":
        ok = (w.view(f"u{w.itemsize}") == g.view(f"u{g.itemsize}")) | (np.isnan(w) & np.isnan(g))
    else:
        ok = w == g
    assert ok.all(), f"{what}: {np.argwhere(~ok)[:5].ravel()} want {w[~ok][:5]} got {g[~ok][:5]}"


def inputs(dts: tuple[str, ...], n: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [np.roll(edge_values(dt, n, rng), 3 * i) for i, dt in enumerate(dts)]


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dt", ("f32", "f64"))
def test_libm_functions_match_numpy_and_math(dt, n):
    x, y = inputs((dt, dt), n, n)
    e = (np.random.default_rng(n).integers(-300, 300, n)).astype(np.int32)
    e[:4] = [0, 1, -1, 2**31 - 1][: min(4, n)]
    same(np.nextafter(x, y), run(symbol_of("nextafter", dt), [x, y]), "nextafter")
    with np.errstate(all="ignore"):
        same(np.ldexp(x, e), run(symbol_of("ldexp", dt), [x, e]), "ldexp")
        same(np.ldexp(x, e), run(symbol_of("scalbn", dt), [x, e]), "scalbn")
        rem = np.array([math.remainder(a, b) if math.isfinite(a) and b != 0 and not math.isnan(b) else np.nan
                        for a, b in zip(x.tolist(), y.tolist())], x.dtype)
        same(rem, run(symbol_of("remainder", dt), [x, y]), "remainder")
        mant, ex = np.frexp(x)
        finite = np.isfinite(x) & (x != 0)
        ilogb = np.where(finite, ex - 1, np.where(np.isinf(x), 2**31 - 1, -(2**31))).astype(np.int32)
        same(ilogb, run(symbol_of("ilogb", dt), [x]), "ilogb")  # 0 and NaN: INT_MIN, +-inf: INT_MAX
        logb = np.where(finite, (ex - 1).astype(x.dtype), np.where(x == 0, -np.inf, np.abs(x))).astype(x.dtype)
        same(logb, run(symbol_of("logb", dt), [x]), "logb")


@pytest.mark.parametrize("dt", ("f32", "f64"))
def test_bessel_functions_special_values(dt):
    x = np.array([0.0, -0.0, np.inf, np.nan, -1.0, 1.0], BY_NAME[dt].np)
    j0, j1, y0 = (run(symbol_of(f, dt), [x]) for f in ("j0", "j1", "y0"))
    assert list(j0[:3]) == [1.0, 1.0, 0.0] and np.isnan(j0[3])
    assert j1[0] == 0 and j1[2] == 0 and abs(j1[5] - 0.44005058574493355) < 1e-6
    assert y0[0] == -np.inf and np.isnan(y0[4])
    orders = np.zeros(6, np.int32)
    same(j0, run(symbol_of("jn", dt), [orders, x]), "jn(0, x) == j0(x)")


def _next(r: float, dt: str, up: bool) -> Fraction:
    """The float after ``r`` toward +-inf, exactly (past the largest finite: 2**(emax + 1))."""
    t = BY_NAME[dt].np.type
    v = float(np.nextafter(t(r), t(np.inf if up else -np.inf)))
    return Fraction(v) if math.isfinite(v) else (1 if v > 0 else -1) * Fraction(2) ** (128 if dt == "f32" else 1024)


def _bracket_ok(r: float, exact: Fraction, dt: str, mode: str) -> bool:
    """``r`` is ``exact`` rounded in ``mode`` (finite ``r`` and a nonzero ``exact``)."""
    lo, hi = _next(r, dt, False), _next(r, dt, True)
    fr = Fraction(r)
    largest = Fraction(float(np.finfo(BY_NAME[dt].np).max))
    if mode != "rn" and abs(fr) == largest and abs(exact) > largest:  # overflow kept finite: only rounding toward zero
        return mode == "rz" or (mode == "rd") == (exact > 0)
    toward_zero_up = exact < 0
    if mode == "rz":
        mode = "ru" if toward_zero_up else "rd"
    if mode == "rd":
        return fr <= exact < hi
    if mode == "ru":
        return lo < exact <= fr
    return abs(fr - exact) <= abs(lo - exact) and abs(fr - exact) <= abs(hi - exact)


EXACT = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b, "div": lambda a, b: a / b,
         "fma": lambda a, b, c: a * b + c, "rcp": lambda a: 1 / a}
OPS2 = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b, "div": lambda a, b: a / b}


@pytest.mark.parametrize("mode", ("rn", "rz", "rd", "ru"))
@pytest.mark.parametrize("dt", ("f32", "f64"))
def test_directed_rounding_arithmetic_is_exactly_rounded(dt, mode):
    n = 1001
    x, y, z = inputs((dt, dt, dt), n, 7)
    x[-200:] = (x[-200:] * np.float32(1e-3)).astype(x.dtype)  # cancellation and tiny results too
    y[-100:] = -x[-100:]
    # (div_rn and sqrt_rn are eggpu's own div and sqrt ops: tests/triton_compat/test_tc_libdevice_rounding.py)
    results = {op: run(symbol_of(f"{op}_{mode}", dt), [x, y]) for op in OPS2 if f"{op}_{mode}" in FUNCTIONS}
    results["fma"] = run(symbol_of(f"fma_{mode}", dt), [x, y, z])
    if mode != "rn":
        results["sqrt"] = run(symbol_of(f"sqrt_{mode}", dt), [np.abs(x)])
    results["rcp"] = run(symbol_of(f"rcp_{mode}", dt), [x])
    with np.errstate(all="ignore"):  # the non-finite cases do not depend on the direction: as numpy
        special = {op: f(x, y) for op, f in OPS2.items()}
    for i in range(n):
        a, b, c = float(x[i]), float(y[i]), float(z[i])
        args = {"fma": (a, b, c), "sqrt": (abs(a),), "rcp": (a,)}
        for op, r in results.items():
            vals = args.get(op, (a, b))
            got = float(r[i])
            if not all(math.isfinite(v) for v in vals) or (op in ("div", "rcp") and vals[-1] == 0):
                if op in OPS2:
                    s = float(special[op][i])
                    assert (math.isnan(s) and math.isnan(got)) or s == got, (op, mode, vals, got)
                continue
            f = [Fraction(v) for v in vals]
            if op == "sqrt":  # r correctly rounded: the bracket checked on squares
                lo, hi = _next(got, dt, False), _next(got, dt, True)
                fr, v = Fraction(got), f[0]
                ok = {"rd": fr * fr <= v < hi * hi, "rz": fr * fr <= v < hi * hi, "ru": lo * lo < v <= fr * fr,
                      "rn": ((fr + lo) / 2) ** 2 <= v <= ((fr + hi) / 2) ** 2}[mode] if v else got == vals[0]
                assert ok, (op, mode, vals, got)
                continue
            e = EXACT[op](*f)
            if e == 0:
                continue  # the sign of an exact zero: test_signed_zeros
            if not math.isfinite(got):  # overflow: only toward the infinity the direction allows
                assert mode == "rn" or (mode == "ru") == (got > 0), (op, mode, vals, got)
                continue
            assert _bracket_ok(got, e, dt, mode), (op, mode, vals, got)


def test_signed_zeros_of_exact_results():
    x = np.array([1.0, -0.0, -0.0, 0.0, 2.0], np.float32)
    y = np.array([-1.0, -0.0, 0.0, 0.0, -2.0], np.float32)
    rd, rn = run("__nv_fadd_rd", [x, y]), run("__nv_fadd_rn", [x, y])
    assert [math.copysign(1, v) for v in rd] == [-1, -1, -1, 1, -1]  # x + (-x) = -0 rounding down
    assert [math.copysign(1, v) for v in rn] == [1, -1, 1, 1, 1]
    assert math.copysign(1, run("__nv_fmul_rz", [x, y])[3]) == 1 and math.copysign(1, run("__nv_fmul_rz", [x, y])[0]) == -1


@pytest.mark.parametrize("n", SIZES)
def test_float_to_int_conversions_round_then_saturate(n):
    x32, x64 = inputs(("f32",), n, 3)[0], inputs(("f64",), n, 4)[0]
    rounders = {"rn": np.rint, "rz": np.trunc, "rd": np.floor, "ru": np.ceil}
    for src, x in (("float", x32), ("double", x64)):
        for dst, (lo, hi, res) in {"int": (-2**31, 2**31 - 1, np.int32), "uint": (0, 2**32 - 1, np.int32),
                                   "ll": (-2**63, 2**63 - 1, np.int64), "ull": (0, 2**64 - 1, np.int64)}.items():
            for mode, f in rounders.items():
                with np.errstate(all="ignore"):
                    r = f(x.astype(np.float64))
                vals = [0 if math.isnan(v) else min(max(int(v) if math.isfinite(v) else (hi if v > 0 else lo), lo), hi)
                        for v in r.tolist()]
                want = np.array([v & ((1 << (8 * np.dtype(res).itemsize)) - 1) for v in vals], np.uint64).astype(
                    f"u{np.dtype(res).itemsize}").view(res)
                same(want, run(f"__nv_{src}2{dst}_{mode}", [x]), f"{src}2{dst}_{mode}")


@pytest.mark.parametrize("mode", ("rn", "rz", "rd", "ru"))
def test_integer_and_double_to_float_conversions_are_exactly_rounded(mode):
    n = 1001
    rng = np.random.default_rng(5)
    cases = {"int2float": rng.integers(-2**31, 2**31, n, dtype=np.int64).astype(np.int32),
             "uint2float": rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32),
             "ll2float": rng.integers(-2**63, 2**63 - 1, n, dtype=np.int64),
             "ull2float": rng.integers(0, 2**64 - 1, n, dtype=np.uint64),
             "ll2double": rng.integers(-2**63, 2**63 - 1, n, dtype=np.int64),
             "ull2double": rng.integers(0, 2**64 - 1, n, dtype=np.uint64),
             "double2float": inputs(("f64",), n, 6)[0] * np.float64(1e-5)}
    for name, x in cases.items():
        dt = "f64" if name.endswith("double") else "f32"
        got = run(f"__nv_{name}_{mode}", [x])
        for v, r in zip(x.tolist(), got.tolist()):
            if isinstance(v, float) and not math.isfinite(v):
                assert (math.isnan(v) and math.isnan(r)) or v == r
            elif v == 0:
                assert r == 0 and math.copysign(1, r) == math.copysign(1, v)
            elif math.isfinite(r):
                assert _bracket_ok(r, Fraction(v), dt, mode), (name, mode, v, r)


def test_bit_reinterpretations_are_exact_nan_payloads_included():
    x = np.array([np.nan, -0.0, np.inf, 1.5, 1e-45], np.float32)
    x[0] = np.array(0x7FC00123, np.uint32).view(np.float32)
    same(x.view(np.int32), run("__nv_float_as_int", [x]), "float_as_int")
    same(x.view(np.int32), run("__nv_float_as_uint", [x]), "float_as_uint (Triton: i32)")
    same(x.view(np.int32).view(np.float32), run("__nv_int_as_float", [x.view(np.int32)]), "int_as_float")
    d = np.array([np.nan, -0.0, 1.5, 5e-324, -np.inf])
    same(d.view(np.int64), run("__nv_double_as_longlong", [d]), "double_as_longlong")
    same(d, run("__nv_longlong_as_double", [d.view(np.int64)]), "longlong_as_double")
    hi, lo = (d.view(np.uint64) >> 32).astype(np.uint32).view(np.int32), d.view(np.uint64).astype(np.uint32).view(np.int32)
    same(hi, run("__nv_double2hiint", [d]), "double2hiint")
    same(lo, run("__nv_double2loint", [d]), "double2loint")
    same(d, run("__nv_hiloint2double", [hi, lo]), "hiloint2double")


@pytest.mark.parametrize("n", SIZES)
def test_integer_functions_match_wide_integer_arithmetic(n):
    x, y = inputs(("i32", "i32"), n, 8)
    ux, uy, uz = inputs(("u32", "u32", "u32"), n, 9)
    x64, y64, ux64, uy64 = (v.astype(np.int64) for v in (x, y, ux, uy))
    same(((x64 + y64) >> 1).astype(np.int32), run("__nv_hadd", [x, y]), "hadd")
    same(((x64 + y64 + 1) >> 1).astype(np.int32), run("__nv_rhadd", [x, y]), "rhadd")
    same(((ux64 + uy64) >> 1).astype(np.uint32), run("__nv_uhadd", [ux, uy]), "uhadd")
    same(((ux64 + uy64 + 1) >> 1).astype(np.uint32), run("__nv_urhadd", [ux, uy]), "urhadd")
    s24 = lambda v: ((v.astype(np.int64) & 0xFFFFFF) ^ 0x800000) - 0x800000  # noqa: E731 - sign-extended low 24 bits
    same((s24(x) * s24(y)).astype(np.int32), run("__nv_mul24", [x, y]), "mul24")
    same(((ux64 & 0xFFFFFF) * (uy64 & 0xFFFFFF)).astype(np.uint32), run("__nv_umul24", [ux, uy]), "umul24")
    same((np.abs(ux64 - uy64) + uz).astype(np.uint32), run("__nv_usad", [ux, uy, uz]), "usad")
    same((np.abs(x64 - y64) + uz).astype(np.uint32).view(np.int32), run("__nv_sad", [x, y, uz]), "sad")
    sel = np.array([0x3210, 0x7654, 0x0123, 0x4444], np.int32)
    a, b = np.full(4, 0x33221100, np.int32), np.full(4, 0x77665544, np.int32)
    same(np.array([0x33221100, 0x77665544, 0x00112233, 0x44444444], np.int32), run("__nv_byte_perm", [a, b, sel]),
         "byte_perm")


@pytest.mark.parametrize("dt", ("f32", "f64"))
def test_pi_functions_and_reciprocals(dt):
    t = BY_NAME[dt].np
    rtol = 4e-7 if dt == "f32" else 4e-15
    x = np.array([0.0, -0.0, 1.0, -2.0, 0.5, 1.5, -0.5, 2.5, 0.25, 1e-3, 3.75, np.inf, np.nan, 1e7 + 0.5], t)
    s, c = run(symbol_of("sinpi", dt), [x]), run(symbol_of("cospi", dt), [x])
    assert [math.copysign(1, v) for v in s[:4]] == [1, -1, 1, -1] and list(s[:4]) == [0, 0, 0, 0]
    assert list(s[4:8]) == [1, -1, -1, 1] and list(c[4:8]) == [0, 0, 0, 0] and math.copysign(1, c[4]) == 1
    assert list(c[:4]) == [1, 1, -1, 1] and np.isnan(s[11:13]).all() and np.isnan(c[11:13]).all()
    np.testing.assert_allclose(s[8:11], np.sin(np.pi * x[8:11].astype(np.float64)), rtol=rtol)
    np.testing.assert_allclose(c[8:11], np.cos(np.pi * x[8:11].astype(np.float64)), rtol=rtol)
    assert (c[13], s[13]) == ((0, 1) if dt == "f64" else (1, 0))  # 1e7 + 0.5 rounds to 1e7 in f32
    y = np.array([8.0, -27.0, 0.0, -0.0, np.inf, 1e-30], t)
    r = run(symbol_of("rcbrt", dt), [y])
    assert list(r[:5]) == [0.5, -1 / 3.0 if dt == "f64" else np.float32(-1 / 3.0), np.inf, -np.inf, 0.0]
    np.testing.assert_allclose(run(symbol_of("rhypot", dt), [y, y]), 1 / np.hypot(y, y), rtol=rtol)
    np.testing.assert_allclose(run(symbol_of("norm3d", dt), [y, y, y]), np.sqrt(3) * np.abs(y), rtol=rtol)
    np.testing.assert_allclose(run(symbol_of("rnorm4d", dt), [y, y, y, y]), 1 / (2 * np.abs(y)), rtol=rtol)
    z = np.array([0.0, -np.inf, np.inf, np.nan, 1.0, -3.0], t)
    ncdf = run(symbol_of("normcdf", dt), [z])
    assert list(ncdf[:3]) == [0.5, 0.0, 1.0] and np.isnan(ncdf[3])
    np.testing.assert_allclose(ncdf[4:], [0.8413447460685429, 0.0013498980316300946], rtol=rtol)


def test_saturatef_rsqrt_rn_llrint_llround():
    x = np.array([np.nan, -1.0, -0.0, 0.25, 1.0, 7.0, np.inf, -np.inf], np.float32)
    same(np.array([0, 0, 0, 0.25, 1, 1, 1, 0], np.float32), run("__nv_saturatef", [x]), "saturatef (NaN -> 0)")
    y = np.array([4.0, 2.0, 0.0, -0.0, np.inf, -1.0, 1e-45, 3.0], np.float32)
    r = run("__nv_frsqrt_rn", [y])
    assert list(r[[0, 2, 3, 4]]) == [0.5, np.inf, -np.inf, 0.0] and np.isnan(r[5])
    for v, got in zip(y[[1, 6, 7]].tolist(), r[[1, 6, 7]].tolist()):  # correctly rounded: between midpoints
        lo, hi = _next(got, "f32", False), _next(got, "f32", True)
        m_lo, m_hi = (Fraction(got) + lo) / 2, (Fraction(got) + hi) / 2
        assert m_lo * m_lo * Fraction(v) <= 1 <= m_hi * m_hi * Fraction(v), (v, got)
    z = np.array([2.5, -2.5, 3.5, np.nan, 1e30, -np.inf], np.float32)
    same(np.array([2, -2, 4, 0, 2**63 - 1, -2**63], np.int64), run("__nv_llrintf", [z]), "llrint (ties to even)")
    same(np.array([3, -3, 4, 0, 2**63 - 1, -2**63], np.int64), run("__nv_llroundf", [z]), "llround (ties away)")


def _bessel_i_decimal(x: float, order: int) -> float:
    """I0/I1 from their power series in 60-digit decimal arithmetic."""
    from decimal import Decimal, localcontext

    with localcontext() as ctx:
        ctx.prec = 60
        h = Decimal(x) / 2
        t = h if order else Decimal(1)
        s, k = t, 0
        while k <= abs(h) + 20 or abs(t) > Decimal(10) ** -55 * abs(s):
            k += 1
            t = t * h * h / (k * (k + order))
            s += t
        return float(s)


@pytest.mark.parametrize("dt", ("f32", "f64"))
def test_modified_bessel_functions_match_a_decimal_series(dt):
    x = np.array([0.0, -0.0, 1e-5, 0.5, 1.0, -2.5, 3.7, 10.0, 50.0, 80.0, np.inf, -np.inf, np.nan], BY_NAME[dt].np)
    if dt == "f64":
        x[-4] = 700.0
    i0, i1 = run(symbol_of("cyl_bessel_i0", dt), [x]), run(symbol_of("cyl_bessel_i1", dt), [x])
    finite = np.isfinite(x)
    want0 = np.array([_bessel_i_decimal(v, 0) for v in x[finite].tolist()]).astype(x.dtype)
    want1 = np.array([_bessel_i_decimal(v, 1) for v in x[finite].tolist()]).astype(x.dtype)
    rtol = 1e-6 if dt == "f32" else 4e-15
    np.testing.assert_allclose(i0[finite], want0, rtol=rtol)
    np.testing.assert_allclose(i1[finite], want1, rtol=rtol)
    assert math.copysign(1, i1[1]) == -1 and i1[0] == 0 and i0[0] == 1
    assert list(i0[-3:-1]) == [np.inf, np.inf] and list(i1[-3:-1]) == [np.inf, -np.inf] and np.isnan(i0[-1])


def _decimal_pi():
    """pi at the context's precision (Machin's formula)."""
    from decimal import Decimal, getcontext

    def atan_inv(n: int) -> Decimal:
        eps = Decimal(10) ** -(getcontext().prec + 2)
        x = Decimal(1) / n
        x2, term, total, k = x * x, x, x, 1
        while abs(term) > eps:
            term *= -x2
            k += 2
            total += term / k
        return total

    return 16 * atan_inv(5) - 4 * atan_inv(239)


def _erfc_decimal(x: float):
    """erfc(x) = 1 - 2/sqrt(pi) sum (-1)**n x**(2n+1) / (n! (2n+1)), with digits for the series'
    cancellation (terms up to e**(x*x)) and for a result as small as e**(-x*x)."""
    from decimal import Decimal, localcontext

    with localcontext() as ctx:
        prec = ctx.prec = int(2 * x * x / math.log(10)) + 60
        d = Decimal(x)
        term, total, n = d, d, 0
        while n < 10 or abs(term) > Decimal(10) ** -(prec - 5):
            n += 1
            term *= -d * d / n
            total += term / (2 * n + 1)
        return 1 - 2 / _decimal_pi().sqrt() * total


@pytest.mark.parametrize("dt", ("f32", "f64"))
def test_inverse_error_functions_bracket_the_decimal_root(dt):
    """r = erfinv(y) (erfcinv, normcdfinv) is within 2 ulp (f64) or 1 ulp (f32) of the root: the
    monotone erfc at r -+ k ulp brackets the target, computed in decimals with enough digits."""
    from decimal import Decimal

    t = BY_NAME[dt].np.type
    k = 2 if dt == "f64" else 1

    def near(r: float, up: bool) -> float:
        v = t(r)
        for _ in range(k):
            v = np.nextafter(v, t(np.inf if up else -np.inf))
        return float(v)

    ys = np.array([0.1, -0.3, 0.5, 0.75, 0.9999, -0.999999], BY_NAME[dt].np)
    for y, r in zip(ys.tolist(), run(symbol_of("erfinv", dt), [ys]).tolist()):
        lo, hi = 1 - _erfc_decimal(near(r, False)), 1 - _erfc_decimal(near(r, True))
        assert lo <= Decimal(y) <= hi, ("erfinv", y, r)
    qs = np.array([1e-30, 1e-20, 0.3, 1.0, 1.7, 1.999], BY_NAME[dt].np)
    for q, r in zip(qs.tolist(), run(symbol_of("erfcinv", dt), [qs]).tolist()):
        assert _erfc_decimal(near(r, True)) <= Decimal(q) <= _erfc_decimal(near(r, False)), ("erfcinv", q, r)
    specials = np.array([0.0, 2.0, -0.1, 2.5, np.nan], BY_NAME[dt].np)
    got = run(symbol_of("erfcinv", dt), [specials])
    assert list(got[:2]) == [np.inf, -np.inf] and np.isnan(got[2:]).all()
    got = run(symbol_of("erfinv", dt), [np.array([1.0, -1.0, -0.0, 1.5], BY_NAME[dt].np)])
    assert list(got[:3]) == [np.inf, -np.inf, 0.0] and math.copysign(1, got[2]) == -1 and np.isnan(got[3])
    got = run(symbol_of("normcdfinv", dt), [np.array([0.0, 0.5, 1.0, 0.975], BY_NAME[dt].np)])
    assert list(got[:3]) == [-np.inf, 0.0, np.inf] and math.copysign(1, got[1]) == 1
    np.testing.assert_allclose(got[3], 1.959963984540054, rtol=1e-15 if dt == "f64" else 1e-6)  # f32: 0.975 is inexact


def test_scaled_complementary_error_function_matches_decimal():
    from decimal import localcontext

    x = np.array([0.0, 0.5, 3.0, 10.0, 25.9, 26.1, 27.0, -1.0, -5.0], np.float64)
    got = run("__nv_erfcx", [x])
    for v, r in zip(x.tolist(), got.tolist()):
        with localcontext() as ctx:
            ctx.prec = 700
            from decimal import Decimal

            want = float((Decimal(v) * Decimal(v)).exp() * _erfc_decimal(v))
        assert abs(r - want) <= 4e-16 * want * 4, (v, r, want)
    ends = run("__nv_erfcx", [np.array([np.inf, -np.inf, np.nan, -30.0, 1e5])])
    assert ends[0] == 0 and ends[1] == np.inf and np.isnan(ends[2]) and ends[3] == np.inf
    np.testing.assert_allclose(ends[4], (1 - 0.5e-10 + 0.75e-20) / (1e5 * math.sqrt(math.pi)), rtol=1e-15)
