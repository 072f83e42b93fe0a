"""Property tests of the op references, continued (see test_op_reference.py): shape ops, gather,
reductions, dot and fma edge cases, against the oracles in op_oracles.py."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from op_oracles import (
    FAST,
    FMT,
    REDUCTIONS,
    SHAPE_OPS,
    UINT,
    arr,
    cases,
    family,
    fast_and_slow,
    float_values,
    inf,
    max_finite,
    nan,
    o_fma,
    o_fmin,
    py,
    raw,
    round_exact,
    same,
    ulp,
    values,
    wrap,
)

from eggpu.ir import FLOAT_DTYPES, INT_DTYPES, bf16, bool_, f16, f32, f64, i8, i32, i64, u8, u64
from eggpu.ir.ops import OPS

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


test_reductions, test_reductions_slow = fast_and_slow(
    "reductions", "op,dt", cases(REDUCTIONS), check_reduction)


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


test_dot, test_dot_slow = fast_and_slow("dot", "dt", family("dot"), check_dot, ids=str)


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

