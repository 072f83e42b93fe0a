"""The z3 encoding (eggpu.optimizer.z3ops) agrees with the op table's numpy reference.

Every elementwise op at every dtype of its family is evaluated on concrete values through z3
``simplify`` and compared with ``OpDef.reference`` (NaN compares equal to NaN, zeros by sign).
The IR is total, so the encoding must be too: inputs where LLVM would have undefined behaviour
(division by zero, INT_MIN / -1, shift amounts outside [0, bits), negative signed amounts) are
defined and equal to the reference (0, the wrapped quotient, 0 or the sign fill). Where the numpy reference rounds twice
(fma and some int->float / float->float casts through f64/f32), z3's single rounding is checked
against an exact rational computation instead.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eggpu.ir import ALL_DTYPES, OPS
from eggpu.ir.dtypes import bool_, f64
from eggpu.ir.ops import ELEMENTWISE, ELEMENTWISE_OPS, POINTER_OPS, _family_ok
from eggpu.ir.types import BlockType
from eggpu.optimizer import z3ops

# ------------------------------------------------------------------ helpers

_P = {"f16": (11, 15), "bf16": (8, 127), "f32": (24, 127), "f64": (53, 1023)}


def round_exact(fr: Fraction, dt) -> float:
    """Round a non-zero rational to ``dt`` with one round-to-nearest-even step."""
    p, emax = _P[dt.name]
    emin = 1 - emax
    sign = -1.0 if fr < 0 else 1.0
    a = abs(fr)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    e = max(e, emin)
    ulp = Fraction(2) ** (e - p + 1)
    q = a / ulp
    n = math.floor(q)
    rem = q - n
    if rem > Fraction(1, 2) or (rem == Fraction(1, 2) and n % 2 == 1):
        n += 1
    r = n * ulp
    if r >= Fraction(2) ** (emax + 1):
        return sign * math.inf
    return sign * float(r)


def same(a, b, dt) -> bool:
    if dt.is_bool:
        return bool(a) == bool(b)
    if dt.is_int:
        return int(a) == int(b)
    fa, fb = float(a), float(b)
    if math.isnan(fa) or math.isnan(fb):
        return math.isnan(fa) and math.isnan(fb)
    return fa == fb and math.copysign(1, fa) == math.copysign(1, fb)


def edge_values(dt) -> list:
    if dt.is_bool:
        return [False, True]
    if dt.is_int:
        vals = [0, 1, 2, 3, 7, dt.max, dt.max - 1, dt.bits - 1, dt.bits]
        if dt.is_signed:
            vals += [-1, -2, dt.min, dt.min + 1, -dt.bits]
        return sorted(set(vals))
    fin = float(dt.max)
    tiny = float(np.finfo(np.float32).tiny) if dt.name in ("f32", "bf16") else (
        float(np.finfo(np.float16).smallest_subnormal) if dt.name == "f16" else 5e-324)
    return [0.0, -0.0, 1.0, -1.0, 0.5, 1.5, -2.5, 3.0, fin, -fin, tiny, math.inf, -math.inf, math.nan, 1e4, -7.25]


def values(dt):
    """Strategy for Python values exactly representable in ``dt``."""
    edges = st.sampled_from(edge_values(dt))
    if dt.is_bool:
        return st.booleans()
    if dt.is_int:
        return st.one_of(edges, st.integers(int(dt.min), int(dt.max)))
    width = 64 if dt.bits == 64 else 32
    raw = st.floats(width=width, allow_nan=True, allow_infinity=True)
    def to_dt(v: float) -> float:
        with np.errstate(all="ignore"):
            return float(np.asarray(v).astype(dt.np))

    return st.one_of(edges, raw.map(to_dt))


def arr(v, dt):
    return np.asarray(v, dtype=dt.np)


def reference(op, dt, attrs, *vals):
    o = OPS[op]
    if op == "where":
        args = [arr(vals[0], bool_), arr(vals[1], dt), arr(vals[2], dt)]
    else:
        args = [arr(v, dt) for v in vals]
    out = o.reference(attrs, *args, dtype=dt)
    return np.asarray(out).reshape(()).item()


def exact_oracle(op, dt, attrs, *vals):
    """Single-rounding result for ops where the numpy reference rounds twice; None = not applicable."""
    if op == "fma" and dt.bits <= 32:
        a, b, c = (float(v) for v in vals)
        if not all(map(math.isfinite, (a, b, c))):
            return None
        exact = Fraction(a) * Fraction(b) + Fraction(c)
        return a * b + c if exact == 0 else round_exact(exact, dt)
    if op == "cast":
        dst = attrs["dtype"]
        if dst.is_float and (dt.is_int or dt.is_float):
            v = vals[0]
            if dt.is_float and not math.isfinite(float(v)):
                return None
            fr = Fraction(int(v)) if dt.is_int else Fraction(float(v))
            return math.copysign(0.0, float(v)) if fr == 0 else round_exact(fr, dst)
    return None


def result_dt(op, dt, attrs):
    r = z3ops.result_dtype(op, dt, attrs)
    return r


def check_one(op, dt, attrs, vals):
    got = z3ops.eval_concrete(op, dt, attrs, *vals)
    assert got is not None, f"{op}({vals}) at {dt}: z3 says undefined, but the IR is total"
    rdt = result_dt(op, dt, attrs)
    want = reference(op, dt, attrs, *vals)
    if same(got, want, rdt):
        return
    oracle = exact_oracle(op, dt, attrs, *vals)
    assert oracle is not None and same(got, oracle, rdt), (
        f"{op}({', '.join(map(repr, vals))}) at {dt} {attrs}: z3 {got!r}, reference {want!r}, exact {oracle!r}")


# ------------------------------------------------------------------ cases


def _family_dtypes(op):
    o = OPS[op]
    return [d for d in ALL_DTYPES if _family_ok(o.family, BlockType(d, ()))]


CASES = []  # (op, dtype, attrs)
for _op in ELEMENTWISE_OPS:
    if _op in z3ops.UF_OPS or _op in POINTER_OPS or _op == "libdevice":  # pointer ops: no numpy reference (see
        continue  # test_tc_pointer_casts); libdevice calls are uninterpreted (test_libdevice_calls_are_uninterpreted...)
    for _d in _family_dtypes(_op):
        if _op == "cast":
            for _t in ALL_DTYPES:
                CASES.append((_op, _d, {"dtype": _t}))
        elif _op == "bitcast":
            for _t in ALL_DTYPES:
                if _t.bits == _d.bits:
                    CASES.append((_op, _d, {"dtype": _t}))
        elif _op in ("lt", "le", "gt", "ge", "add", "sub", "mul", "div", "rem", "minimum", "maximum", "neg", "abs") and _d.is_bool:
            continue
        else:
            CASES.append((_op, _d, {}))


def _arity(op):
    return OPS[op].arity[0]


def _vals_for(op, dt):
    n = _arity(op)
    if op == "where":
        return [st.booleans(), values(dt), values(dt)]
    return [values(dt)] * n


def _skip_value(op, dt, attrs, vals) -> bool:
    # bitcast of a NaN: z3 has a single NaN, its bit pattern is unspecified
    return op == "bitcast" and dt.is_float and math.isnan(float(vals[0]))


@pytest.mark.parametrize("op,dt,attrs", CASES, ids=[f"{o}-{d}" + (f"-{a['dtype']}" if a else "") for o, d, a in CASES])
def test_edge_values_match_reference(op, dt, attrs):
    import itertools

    n = _arity(op)
    pools = [edge_values(bool_)] + [edge_values(dt)] * 2 if op == "where" else [edge_values(dt)] * n
    if n == 3 and op != "where":
        pools = [edge_values(dt)[:8]] * 3
    for vals in itertools.product(*pools):
        if not _skip_value(op, dt, attrs, vals):
            check_one(op, dt, attrs, list(vals))


@pytest.mark.parametrize("op", sorted({c[0] for c in CASES}))
@settings(deadline=None, max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_values_match_reference(op, data):
    choices = [c for c in CASES if c[0] == op]
    _, dt, attrs = data.draw(st.sampled_from(choices))
    vals = [data.draw(s) for s in _vals_for(op, dt)]
    if not _skip_value(op, dt, attrs, vals):
        check_one(op, dt, attrs, vals)


# ------------------------------------------------------------------ coverage and structure


def test_every_op_is_encoded_or_listed():
    for name in OPS:
        assert (name in z3ops.Z3_OPS) != (name in z3ops.NOT_ENCODED), name
    assert set(z3ops.Z3_OPS) | set(z3ops.NOT_ENCODED) == set(OPS)
    for name, why in z3ops.NOT_ENCODED.items():
        assert why and not OPS[name].is_pure, name


def test_elementwise_ops_are_lanewise_and_block_ops_are_uninterpreted():
    for name in ELEMENTWISE_OPS:
        assert name not in z3ops.BLOCK_OPS
    for name in z3ops.BLOCK_OPS:
        assert ELEMENTWISE not in OPS[name].traits


def test_transcendental_ops_are_uninterpreted_per_dtype():
    import z3

    from eggpu.ir import f16, f32

    x32 = z3ops.var("x", f32)
    x16 = z3ops.var("x", f16)
    for name in z3ops.UF_OPS:
        n = OPS[name].arity[0]  # atan2 is binary
        e32 = z3ops.encode(name, f32, {}, [x32] * n).value
        e16 = z3ops.encode(name, f16, {}, [x16] * n).value
        assert e32.decl().arity() == n
        assert z3.is_app(e32) and e32.decl().kind() == z3.Z3_OP_UNINTERPRETED
        assert e32.decl().name() != e16.decl().name()


def test_libdevice_calls_are_uninterpreted_functions_keyed_by_symbol():
    """Equal symbols of equal operands are equal (congruence), and that is all z3 knows: another
    symbol of the same operands, or the same symbol of other operands, may differ."""
    import z3

    from eggpu.ir import f32, i32

    x, y, e = z3ops.var("x", f32), z3ops.var("y", f32), z3ops.var("e", i32)
    ldexp = z3ops.encode("libdevice", f32, {"symbol": "__nv_ldexpf"}, [x, e]).value
    assert z3.is_app(ldexp) and ldexp.decl().kind() == z3.Z3_OP_UNINTERPRETED
    assert ldexp.sort() == z3ops.sort_of(f32)
    to_int = z3ops.encode("libdevice", f32, {"symbol": "__nv_float2int_rd"}, [x]).value
    assert to_int.sort() == z3.BitVecSort(32)
    assert z3ops.result_dtype("libdevice", f32, {"symbol": "__nv_float2int_rd"}) == i32
    s = z3.Solver()
    s.add(x == y, z3ops.encode("libdevice", f32, {"symbol": "__nv_ldexpf"}, [y, e]).value != ldexp)
    assert s.check() == z3.unsat  # congruence
    add_rd = z3ops.encode("libdevice", f32, {"symbol": "__nv_fadd_rd"}, [x, y]).value
    add_ru = z3ops.encode("libdevice", f32, {"symbol": "__nv_fadd_ru"}, [x, y]).value
    s = z3.Solver()
    s.add(add_rd != add_ru)
    assert s.check() == z3.sat  # nothing ties two symbols together


def test_float_equality_is_structural_not_ieee():
    import z3

    from eggpu.ir import f32

    nan = z3ops.const(math.nan, f32).value
    pz, nz = z3ops.const(0.0, f32).value, z3ops.const(-0.0, f32).value
    assert z3.is_true(z3.simplify(nan == nan))
    assert z3.is_false(z3.simplify(pz == nz))
    assert z3.is_true(z3.simplify(z3ops.encode("eq", f32, {}, [pz, nz]).value))
    assert z3.is_false(z3.simplify(z3ops.encode("eq", f32, {}, [nan, nan]).value))
    assert z3.is_true(z3.simplify(z3ops.encode("ne", f32, {}, [nan, nan]).value))


def test_addptr_scales_by_itemsize_and_extends_by_offset_signedness():
    from eggpu.ir import f32, i8, u8

    assert z3ops.eval_concrete("addptr", f32, {"offset_dtype": i8}, 1000, -1) == 996
    assert z3ops.eval_concrete("addptr", f32, {"offset_dtype": u8}, 1000, 255) == 1000 + 4 * 255
    assert z3ops.eval_concrete("addptr", f64, {"offset_dtype": i8}, 0, 3) == 24


def test_real_mode_axioms_prove_exp_identities():
    import z3

    from eggpu.ir import f32

    a, b = z3ops.var("a", f32, z3ops.REAL), z3ops.var("b", f32, z3ops.REAL)
    ea = z3ops.encode("exp", f32, {}, [a], z3ops.REAL).value
    eb = z3ops.encode("exp", f32, {}, [b], z3ops.REAL).value
    eab = z3ops.encode("exp", f32, {}, [a + b], z3ops.REAL).value
    claim = ea * eb == eab
    s = z3.Solver()
    s.add(*z3ops.real_axioms(z3.Not(claim)), z3.Not(claim))
    assert s.check() == z3.unsat
    d = z3ops.encode("div", f32, {}, [a, b], z3ops.REAL)
    assert z3.is_false(z3.simplify(z3.substitute(d.defined, (b, z3.RealVal(0)))))


# ------------------------------------------------------------------ total semantics, spelled out

_INT_DTYPES = [d for d in ALL_DTYPES if d.is_int]


@pytest.mark.parametrize("dt", _INT_DTYPES, ids=str)
def test_integer_edge_cases_are_the_reference_values(dt):
    """The values LLVM leaves undefined, pinned to the op table's total semantics."""
    ev = z3ops.eval_concrete
    for x in (0, 1, 5, int(dt.max)) + ((-1, -7, int(dt.min)) if dt.is_signed else ()):
        assert ev("div", dt, {}, x, 0) == 0
        assert ev("rem", dt, {}, x, 0) == 0
        for amount in (dt.bits, dt.bits + 3, int(dt.max)) + ((-1, int(dt.min)) if dt.is_signed else ()):
            assert ev("shl", dt, {}, x, amount) == 0
            fill = -1 if (dt.is_signed and x < 0) else 0
            assert ev("shr", dt, {}, x, amount) == fill
    if dt.is_signed:
        assert ev("div", dt, {}, int(dt.min), -1) == int(dt.min)
        assert ev("rem", dt, {}, int(dt.min), -1) == 0
        assert ev("div", dt, {}, -7, 2) == -3
        assert ev("rem", dt, {}, -7, 2) == -1
    else:
        assert ev("div", dt, {}, int(dt.max), 1) == int(dt.max)


@pytest.mark.parametrize("name,want", [
    ("floor", [2, -3, 3, -4, 0, -1, 7]),
    ("ceil", [3, -2, 4, -3, 1, 0, 7]),
    ("trunc", [2, -2, 3, -3, 0, 0, 7]),
    ("rint", [2, -2, 4, -4, 0, -1, 7]),
    ("round", [3, -3, 4, -4, 0, -1, 7]),
])
def test_real_mode_roundings_to_integral(name, want):
    """fast_math proofs see the roundings over the reals: ties to even (rint) and away from zero
    (round) at 2.5, -2.5, 3.5, -3.5; 0.4 -> 0, -0.6 -> -1 (or 0 toward zero / up)."""
    import z3

    from eggpu.ir import f32

    got = []
    for v in ("2.5", "-2.5", "3.5", "-3.5", "0.4", "-0.6", "7"):
        e = z3ops.encode(name, f32, {}, [z3.RealVal(v)], mode=z3ops.REAL).value
        got.append(int(z3.simplify(e).as_fraction()))  # a real-valued integer
    assert got == want
