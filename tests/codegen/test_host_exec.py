"""The host (CPU) execution of the lowering agrees with the reference interpreter, op by op.

Every kernel here is built with the IR Builder and run twice on copies of the same inputs:
``eggpu.ir.interp.interpret`` and the JIT-compiled host lowering (the same code the PTX path
runs, with thread-level values as vectors across the CTA). Results must be bitwise equal
(NaN == NaN), except transcendental functions (libm vs f64 reference: a few ulp) and float sums
(another summation order).
"""

from __future__ import annotations

import numpy as np
import pytest

from eggpu.ir import ALL_DTYPES, Builder, bf16, bool_, f16, f32, f64, i8, i32, i64, pointer, scalar, u8, u32
from eggpu.ir.errors import IRError
from eggpu.ir.ops import ELEMENTWISE, OPS, TRANSCENDENTAL, result_types
from eggpu.ir.types import BlockType

SIZES = (1, 1000, 1001, 4097)
# every elementwise op of the op table without attributes (addptr is covered by the memory tests)
BINARY = tuple(n for n, d in OPS.items()
               if ELEMENTWISE in d.traits and d.arity == (2, 2) and not d.attrs and n != "addptr")
UNARY = tuple(n for n, d in OPS.items() if ELEMENTWISE in d.traits and d.arity == (1, 1) and not d.attrs)


# ---------------------------------------------------------------- IR building helpers


def offsets(b: Builder, block: int, axis: int = 0):
    """``program_id(axis) * block + arange(0, block)`` (i32[block])."""
    pid = b.op("program_id", axis=axis)
    base = b.op("splat", b.op("mul", pid, b.const(block, i32)), shape=(block,))
    return b.op("add", base, b.op("arange", start=0, end=block))


def at(b: Builder, name: str, offs):
    """``param + offs`` as a pointer block of offs' shape."""
    return b.op("addptr", b.op("splat", b.param(name), shape=offs.type.shape), offs)


def lt_n(b: Builder, offs, n="n"):
    return b.op("lt", offs, b.op("splat", b.param(n), shape=offs.type.shape))


def rng_values(dt, n, rng, *, specials=True):
    """Random values of ``dt`` including edge cases (NaN, inf, -0.0, extremes)."""
    if dt.is_bool:
        return rng.random(n) < 0.5
    if dt.is_float:
        v = rng.standard_normal(n) * 3
        if specials:
            edge = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 2.5, 1e-30, 1e30]
            v[: min(len(edge), n)] = edge[: min(len(edge), n)]
        return v.astype(dt.np)
    info = np.iinfo(dt.np)
    v = rng.integers(max(info.min, -1000), min(info.max, 1000), n, endpoint=True).astype(dt.np)
    if specials:
        edge = [info.min, info.max, 0, 1, info.max - 1]
        v[: min(len(edge), n)] = np.array(edge[: min(len(edge), n)], dtype=dt.np)
    return v


def _applicable(name, types, attrs=None):
    try:
        return result_types(name, types, attrs or {})[0]
    except IRError:
        return None


# ---------------------------------------------------------------- elementwise: every op, every dtype


def elementwise_kernel(dt, block):
    """out_same[k*n + i] / out_bool[k*n + i] = op_k(x[i], y[i]) for every applicable op."""
    t = BlockType(dt, (block,))
    ops = []
    for name in BINARY:
        rt = _applicable(name, [t, t])
        if rt is not None:
            ops.append((name, rt.dtype, 2))
    for name in UNARY:
        rt = _applicable(name, [t])
        if rt is not None:
            ops.append((name, rt.dtype, 1))
    tb = BlockType(bool_, (block,))
    for name, types in (("where", [tb, t, t]), ("fma", [t, t, t])):
        rt = _applicable(name, types)
        if rt is not None:
            ops.append((name, rt.dtype, 3))
    b = Builder(f"elementwise_{dt}", [("x", pointer(dt)), ("y", pointer(dt)), ("out", pointer(dt)),
                                       ("outb", pointer(bool_)), ("n", scalar(i32))])
    offs = offsets(b, block)
    mask = lt_n(b, offs)
    x = b.op("load", at(b, "x", offs), mask)
    y = b.op("load", at(b, "y", offs), mask)
    nn = b.op("splat", b.param("n"), shape=(block,))
    slots = {dt: 0, bool_: 0}
    for name, rdt, arity in ops:
        if name == "where":
            args = (b.op("lt", x, y) if dt != bool_ else b.op("xor", x, y), x, y)
        elif name == "fma":
            args = (x, y, x)
        else:
            args = (x, y)[:arity]
        r = b.op(name, *args)
        k = slots[rdt]
        slots[rdt] += 1
        dst = b.op("add", offs, b.op("mul", nn, b.op("splat", b.const(k, i32), shape=(block,))))
        b.effect("store", at(b, "out" if rdt == dt else "outb", dst), r, mask)
    return b.finish(), [name for name, _, _ in ops], slots


@pytest.mark.parametrize("dt", ALL_DTYPES, ids=str)
def test_every_elementwise_op(dt, compare):
    n = 1001
    fn, names, slots = elementwise_kernel(dt, 256)
    rng = np.random.default_rng(1)
    x = rng_values(dt, n, rng)
    y = rng_values(dt, n, rng)
    if dt.is_int:
        y[n // 2:] = rng.integers(-2, dt.bits + 2, n - n // 2).astype(dt.np)  # shift amounts, zeros
        y[-1] = 0
    if dt.is_signed:
        x[-1], y[-2], x[-2] = dt.min, -1, dt.min  # INT_MIN / -1
    out = np.zeros(max(1, slots[dt]) * n, dt.np)
    outb = np.zeros(max(1, slots[bool_]) * n, np.bool_)
    got = compare(fn, (n + 255) // 256, [x, y, out, outb, n],
                  tols={2: (0.0, 0.0)} if not dt.is_float else {2: (_trans_rtol(dt), 0.0)})
    # the non-transcendental float results must be bitwise exact: recheck them alone
    if dt.is_float:
        from eggpu.ir.interp import interpret

        want = out.copy()
        interpret(fn, (n + 255) // 256, x.copy(), y.copy(), want, outb.copy(), n)
        k = 0
        for name in names:
            if OPS[name].has("comparison"):
                continue
            if not OPS[name].has(TRANSCENDENTAL):
                w, g = want[k * n:(k + 1) * n], got[2][k * n:(k + 1) * n]
                same = (w.view(f"u{dt.bits // 8}") == g.view(f"u{dt.bits // 8}")) | (np.isnan(w.astype(np.float64)) & np.isnan(g.astype(np.float64)))
                assert same.all(), f"{name} on {dt}: {w[~same][:4]} vs {g[~same][:4]}"
            k += 1


def _trans_rtol(dt):
    return {f16: 1e-3, bf16: 8e-3, f32: 2e-6, f64: 1e-14}[dt]


# ---------------------------------------------------------------- casts and bitcasts


def cast_kernel(src, block=128):
    params = [("x", pointer(src))] + [(f"o_{d}", pointer(d)) for d in ALL_DTYPES] + \
             [(f"b_{d}", pointer(d)) for d in ALL_DTYPES if d.bits == src.bits and d != src] + [("n", scalar(i32))]
    b = Builder(f"cast_{src}", params)
    offs = offsets(b, block)
    mask = lt_n(b, offs)
    x = b.op("load", at(b, "x", offs), mask)
    for d in ALL_DTYPES:
        b.effect("store", at(b, f"o_{d}", offs), b.op("cast", x, dtype=d), mask)
    for d in ALL_DTYPES:
        if d.bits == src.bits and d != src:
            b.effect("store", at(b, f"b_{d}", offs), b.op("bitcast", x, dtype=d), mask)
    return b.finish()


def _cast_inputs(src, n, rng):
    v = rng_values(src, n, rng)
    if src.is_float:
        edge = np.array([1e10, -1e10, 3e38, 7e4, 65519.0, 65520.0, 2.0**-24, 2.0**-25, 1.5 * 2**-25, 2.0**-149,
                         0.5, 1.5, 2.5, -0.5, 255.5, 256.0, 2.0**31, -(2.0**31), 2.0**63, 2.0**64,
                         1.0 + 2**-11, 1.0 + 2**-8 + 2**-30, 1e-45, -1e-40], dtype=np.float64)
        v[10:10 + len(edge)] = edge.astype(src.np)
        m = n - 40
        v[40:] = (rng.standard_normal(m) * 10.0 ** rng.integers(-45, 45, m)).astype(src.np)
    elif src.is_int:
        v[10:] = rng.integers(np.iinfo(src.np).min, np.iinfo(src.np).max, n - 10, dtype=src.np, endpoint=True)
    return v


@pytest.mark.parametrize("src", ALL_DTYPES, ids=str)
def test_casts_and_bitcasts(src, compare):
    n = 300
    fn = cast_kernel(src)
    rng = np.random.default_rng(2)
    args = [_cast_inputs(src, n, rng)]
    args += [np.zeros(n, d.np) for d in ALL_DTYPES]
    args += [np.zeros(n, d.np) for d in ALL_DTYPES if d.bits == src.bits and d != src]
    compare(fn, (n + 127) // 128, args + [n])


# ---------------------------------------------------------------- reductions


def reduce1d_kernel(dt, block):
    """Per program: the 5 reductions of x[pid*block : +block] (masked, other = identity-like)."""
    b = Builder(f"reduce1d_{dt}_{block}", [("x", pointer(dt)), ("vals", pointer(dt)), ("idx", pointer(i32)),
                                             ("n", scalar(i32))])
    offs = offsets(b, block)
    mask = lt_n(b, offs)
    pid = b.op("program_id", axis=0)
    lo = dt.min if dt.is_int else float("-inf")
    hi = dt.max if dt.is_int else float("inf")
    loads = {v: b.op("load", at(b, "x", offs), mask, b.op("splat", b.const(v, dt), shape=(block,)))
             for v in (0, lo, hi)}
    outs = [("reduce_sum", loads[0]), ("reduce_max", loads[lo]), ("reduce_min", loads[hi])]
    for k, (name, x) in enumerate(outs):
        r = b.op(name, x, axis=0)
        p = b.op("addptr", b.param("vals"), b.op("add", b.op("mul", pid, b.const(3, i32)), b.const(k, i32)))
        b.effect("store", p, r)
    for k, (name, x) in enumerate((("reduce_argmax", loads[lo]), ("reduce_argmin", loads[hi]))):
        r = b.op(name, x, axis=0)
        p = b.op("addptr", b.param("idx"), b.op("add", b.op("mul", pid, b.const(2, i32)), b.const(k, i32)))
        b.effect("store", p, r)
    return b.finish()


@pytest.mark.parametrize("dt", (f32, f16, bf16, f64, i32, u8, i64), ids=str)
@pytest.mark.parametrize("n", SIZES)
def test_full_reductions(dt, n, compare):
    block = 1024
    fn = reduce1d_kernel(dt, block)
    rng = np.random.default_rng(n)
    x = rng_values(dt, n, rng, specials=False)
    if dt.is_float and n > 10:
        x[3] = np.nan
        x[n - 5] = x.max()  # a tie for argmax: the first index must win
        x[7] = -0.0
    grid = (n + block - 1) // block
    sum_tol = {f16: 2e-3, bf16: 1e-2, f32: 1e-5, f64: 1e-12}.get(dt, 0.0)
    vals = np.zeros(3 * grid, dt.np)
    idx = np.zeros(2 * grid, np.int32)
    got = compare(fn, grid, [x, vals, idx, n], tols={1: (sum_tol, sum_tol)})[1]
    if dt.is_float:  # sums are close; max and min must be exact
        from eggpu.ir.interp import interpret

        want = vals.copy()
        interpret(fn, grid, x.copy(), want, idx.copy(), n)
        sel = np.arange(3 * grid) % 3 != 0
        np.testing.assert_array_equal(want[sel].astype(np.float64), got[sel].astype(np.float64))


def test_reductions_all_nan_and_ties(compare):
    fn = reduce1d_kernel(f32, 256)
    x = np.full(256 * 3, np.nan, np.float32)
    x[256 + 17] = 5.0
    x[256 + 100] = 5.0  # tie: index 17 wins
    x[512:] = np.where(np.arange(256) % 2 == 0, -0.0, 0.0)
    x[512 + 200] = np.nan
    compare(fn, 3, [x, np.zeros(9, np.float32), np.zeros(6, np.int32), x.size])


@pytest.mark.parametrize("num_warps", (1, 2, 8))
def test_full_reduction_num_warps(num_warps, compare):
    fn = reduce1d_kernel(f32, 512)
    rng = np.random.default_rng(num_warps)
    n = 1500
    x = rng_values(f32, n, rng, specials=False)
    compare(fn, 3, [x, np.zeros(9, np.float32), np.zeros(6, np.int32), n], num_warps=num_warps,
            tols={1: (1e-5, 1e-5)})


def reduce2d_kernel(dt, rows, cols, axis):
    """Reduce a [rows, cols] tile of x (row-major, masked by nr/nc) along ``axis``, all 5 kinds."""
    b = Builder(f"reduce2d_{dt}_{rows}x{cols}_{axis}", [("x", pointer(dt)), ("vals", pointer(dt)),
                                                         ("idx", pointer(i32)), ("nr", scalar(i32)),
                                                         ("nc", scalar(i32))])
    r = b.op("expand_dims", b.op("arange", start=0, end=rows), axis=1)  # [rows, 1]
    c = b.op("expand_dims", b.op("arange", start=0, end=cols), axis=0)  # [1, cols]
    shape = (rows, cols)
    rb = b.op("broadcast", r, shape=shape)
    cb = b.op("broadcast", c, shape=shape)
    offs = b.op("add", b.op("mul", rb, b.op("splat", b.param("nc"), shape=shape)), cb)
    mask = b.op("and", b.op("lt", rb, b.op("splat", b.param("nr"), shape=shape)),
                b.op("lt", cb, b.op("splat", b.param("nc"), shape=shape)))
    ptrs = b.op("addptr", b.op("splat", b.param("x"), shape=shape), offs)
    lo = dt.min if dt.is_int else float("-inf")
    hi = dt.max if dt.is_int else float("inf")
    out_n = cols if axis == 0 else rows
    oidx = b.op("arange", start=0, end=out_n)
    loads = {v: b.op("load", ptrs, mask, b.op("splat", b.const(v, dt), shape=shape)) for v in (0, lo, hi)}
    for k, (name, x) in enumerate((("reduce_sum", loads[0]), ("reduce_max", loads[lo]), ("reduce_min", loads[hi]))):
        red = b.op(name, x, axis=axis)
        dst = b.op("add", oidx, b.op("splat", b.const(k * out_n, i32), shape=(out_n,)))
        b.effect("store", b.op("addptr", b.op("splat", b.param("vals"), shape=(out_n,)), dst), red)
    for k, (name, x) in enumerate((("reduce_argmax", loads[lo]), ("reduce_argmin", loads[hi]))):
        red = b.op(name, x, axis=axis)
        dst = b.op("add", oidx, b.op("splat", b.const(k * out_n, i32), shape=(out_n,)))
        b.effect("store", b.op("addptr", b.op("splat", b.param("idx"), shape=(out_n,)), dst), red)
    return b.finish()


@pytest.mark.parametrize("rows,cols,nr,nc", [(16, 64, 13, 61), (8, 24, 8, 24), (64, 4, 50, 3), (2, 512, 2, 500),
                                              (1, 256, 1, 200), (256, 1, 255, 1), (32, 32, 32, 32),
                                              (128, 4, 100, 3), (256, 4, 255, 4)])
@pytest.mark.parametrize("axis", (0, 1))
@pytest.mark.parametrize("dt", (f32, i32), ids=str)
def test_axis_reductions(rows, cols, nr, nc, axis, dt, compare):
    fn = reduce2d_kernel(dt, rows, cols, axis)
    rng = np.random.default_rng(rows * cols + axis)
    x = rng_values(dt, nr * nc, rng, specials=False)
    if dt.is_float and x.size > 8:
        x[5] = np.nan
        x[6] = x[2]
    out_n = cols if axis == 0 else rows
    compare(fn, 1, [x, np.zeros(3 * out_n, dt.np), np.zeros(2 * out_n, np.int32), nr, nc],
            tols={1: (1e-5, 1e-5)})


def test_axis_reduction_f16_accumulates_in_f32(compare):
    fn = reduce2d_kernel(f16, 16, 64, 1)
    x = np.full(16 * 64, 0.1, np.float16)
    compare(fn, 1, [x, np.zeros(48, np.float16), np.zeros(32, np.int32), 16, 64], tols={1: (1e-3, 0)})


# ---------------------------------------------------------------- shapes: broadcast, trans, reshape


def shapes_kernel(rows, cols):
    """Broadcasts (row, column, single element), trans, reshape and expand_dims of loaded data."""
    b = Builder(f"shapes_{rows}x{cols}", [("x", pointer(f32)), ("out", pointer(f32))])
    shape = (rows, cols)
    n = rows * cols
    flat = b.op("arange", start=0, end=n)
    x2 = b.op("reshape", b.op("load", b.op("addptr", b.op("splat", b.param("x"), shape=(n,)), flat)), shape=shape)
    row0 = b.op("load", b.op("addptr", b.op("splat", b.param("x"), shape=(1, cols)),
                              b.op("expand_dims", b.op("arange", start=0, end=cols), axis=0)))
    col0 = b.op("load", b.op("addptr", b.op("splat", b.param("x"), shape=(rows, 1)),
                              b.op("expand_dims", b.op("arange", start=0, end=rows), axis=1)))
    one = b.op("load", b.op("addptr", b.op("splat", b.param("x"), shape=(1, 1)),
                             b.op("splat", b.const(3, i32), shape=(1, 1))))
    results = [
        b.op("add", x2, b.op("broadcast", row0, shape=shape)),
        b.op("mul", x2, b.op("broadcast", col0, shape=shape)),
        b.op("sub", x2, b.op("broadcast", one, shape=shape)),
        b.op("reshape", b.op("trans", b.op("reshape", x2, shape=(cols, rows)), perm=(1, 0)), shape=shape),
        b.op("trans", b.op("trans", x2, perm=(1, 0)), perm=(1, 0)),
    ]
    if rows == cols:
        results.append(b.op("trans", x2, perm=(1, 0)))
    for k, r in enumerate(results):
        dst = b.op("add", flat, b.op("splat", b.const(k * n, i32), shape=(n,)))
        b.effect("store", b.op("addptr", b.op("splat", b.param("out"), shape=(n,)), dst), b.op("reshape", r, shape=(n,)))
    return b.finish(), len(results)


@pytest.mark.parametrize("rows,cols", [(16, 16), (4, 64), (64, 8), (3, 5)])
def test_shape_ops(rows, cols, compare):
    fn, k = shapes_kernel(rows, cols)
    x = np.random.default_rng(3).standard_normal(rows * cols).astype(np.float32)
    compare(fn, 1, [x, np.zeros(k * rows * cols, np.float32)])


def test_lazy_index_broadcasts_and_3d(compare):
    """Index arithmetic broadcast in 3-D and used as pointers and masks (lazy values)."""
    b = Builder("index3d", [("out", pointer(i32)), ("lim", scalar(i32))])
    shape = (4, 8, 16)
    a0 = b.op("broadcast", b.op("reshape", b.op("arange", start=0, end=4), shape=(4, 1, 1)), shape=shape)
    a1 = b.op("broadcast", b.op("reshape", b.op("arange", start=0, end=8), shape=(1, 8, 1)), shape=shape)
    a2 = b.op("broadcast", b.op("reshape", b.op("arange", start=5, end=21), shape=(1, 1, 16)), shape=shape)
    v = b.op("add", b.op("mul", a0, b.op("splat", b.const(1000, i32), shape=shape)),
             b.op("add", b.op("mul", a1, b.op("splat", b.const(100, i32), shape=shape)), a2))
    t = b.op("trans", v, perm=(2, 0, 1))  # [16, 4, 8]
    flat = b.op("reshape", t, shape=(512,))
    offs = b.op("arange", start=0, end=512)
    mask = b.op("lt", offs, b.op("splat", b.param("lim"), shape=(512,)))
    b.effect("store", b.op("addptr", b.op("splat", b.param("out"), shape=(512,)), offs), flat, mask)
    fn = b.finish()
    compare(fn, 1, [np.full(512, -1, np.int32), 500])


# ---------------------------------------------------------------- memory: masks, other, scalars, bool


def test_masked_loads_with_other_and_scalar_memory(compare):
    b = Builder("memory", [("x", pointer(f16)), ("flags", pointer(bool_)), ("s", pointer(i64)),
                           ("out", pointer(f16)), ("outf", pointer(bool_)), ("n", scalar(i32)), ("k", scalar(i64))])
    block = 128
    offs = offsets(b, block)
    mask = lt_n(b, offs)
    odd = b.op("eq", b.op("and", offs, b.op("splat", b.const(1, i32), shape=(block,))),
               b.op("splat", b.const(1, i32), shape=(block,)))
    x = b.op("load", at(b, "x", offs), b.op("and", mask, odd), b.op("splat", b.const(-7.5, f16), shape=(block,)))
    fl = b.op("load", at(b, "flags", offs), mask)
    b.effect("store", at(b, "out", offs), x, mask)
    b.effect("store", at(b, "outf", offs), b.op("not", fl), mask)
    # scalar memory: s[pid] = s[pid] * k + n (once per program), loads under a scalar mask
    pid = b.op("program_id", axis=0)
    sp = b.op("addptr", b.param("s"), pid)
    yes = b.op("lt", pid, b.const(2, i32))
    old = b.op("load", sp, yes, b.const(-1, i64))
    new = b.op("add", b.op("mul", old, b.param("k")), b.op("cast", b.param("n"), dtype=i64))
    b.effect("store", sp, new)
    fn = b.finish()
    rng = np.random.default_rng(4)
    for n in (1, 1000, 1001):
        grid = (n + block - 1) // block
        compare(fn, grid, [rng.standard_normal(n).astype(np.float16), rng.random(n) < 0.5,
                           np.arange(grid, dtype=np.int64) + 10, np.zeros(n, np.float16), np.zeros(n, np.bool_),
                           n, -3])


# ---------------------------------------------------------------- atomics


def atomics_kernel(dt, block, bins):
    b = Builder(f"atomics_{dt}", [("x", pointer(dt)), ("hist", pointer(dt)), ("hmax", pointer(dt)),
                                  ("hmin", pointer(dt)), ("xchg", pointer(dt)), ("old", pointer(dt)),
                                  ("total", pointer(dt)), ("told", pointer(dt)), ("n", scalar(i32))])
    offs = offsets(b, block)
    mask = lt_n(b, offs)
    x = b.op("load", at(b, "x", offs), mask)
    binv = b.op("rem", offs, b.op("splat", b.const(bins, i32), shape=(block,)))
    olds = [b.op(name, at(b, buf, binv), x, mask) for name, buf in
            (("atomic_add", "hist"), ("atomic_max", "hmax"), ("atomic_min", "hmin"), ("atomic_xchg", "xchg"))]
    acc = olds[0]
    for o in olds[1:]:
        acc = b.op("add", acc, o) if not dt.is_bool else b.op("xor", acc, o)
    b.effect("store", at(b, "old", offs), acc, mask)
    # scalar atomic: once per program, old value seen by every thread
    s = b.op("reduce_sum", b.op("where", mask, x, b.op("splat", b.const(0, dt), shape=(block,))), axis=0)
    prev = b.op("atomic_add", b.param("total"), s)
    b.effect("store", at(b, "told", offs), b.op("splat", prev, shape=(block,)), mask)
    return b.finish()


@pytest.mark.parametrize("block", (256, 1024))  # 1024: two layout chunks per thread
@pytest.mark.parametrize("dt", (f32, i32, f16, u32), ids=str)
def test_atomics_return_old_values(dt, block, compare):
    n, bins = 1001, 7
    fn = atomics_kernel(dt, block, bins)
    rng = np.random.default_rng(5)
    if dt.is_float:
        x = (rng.integers(-8, 8, n) / 4).astype(dt.np)  # exact sums in any order
        x[10] = np.nan
    else:
        x = rng.integers(0, 50, n).astype(dt.np)
    z = np.zeros(bins, dt.np)
    grid = (n + block - 1) // block
    compare(fn, grid, [x, z, z - 100 if dt.is_signed or dt.is_float else z, z + 100, z.copy(), np.zeros(n, dt.np),
                       np.zeros(1, dt.np), np.zeros(n, dt.np), n])


def test_duplicate_store_addresses_last_row_major_write_wins(compare):
    """Many elements of a 1024 block (two layout chunks per thread) store to 7 addresses."""
    b = Builder("dupstore", [("x", pointer(f32)), ("out", pointer(f32)), ("n", scalar(i32))])
    block = 1024
    offs = offsets(b, block)
    mask = lt_n(b, offs)
    slot = b.op("rem", offs, b.op("splat", b.const(7, i32), shape=(block,)))
    b.effect("store", at(b, "out", slot), b.op("load", at(b, "x", offs), mask), mask)
    fn = b.finish()
    x = np.arange(1000, dtype=np.float32)
    compare(fn, 1, [x, np.zeros(7, np.float32), 1000])


def test_atomic_cas(compare):
    b = Builder("cas", [("locks", pointer(i32)), ("out", pointer(i32)), ("n", scalar(i32))])
    block = 128
    offs = offsets(b, block)
    slot = b.op("rem", offs, b.op("splat", b.const(5, i32), shape=(block,)))
    old = b.op("atomic_cas", at(b, "locks", slot), b.op("splat", b.const(0, i32), shape=(block,)), offs)
    b.effect("store", at(b, "out", offs), old, lt_n(b, offs))
    fn = b.finish()
    compare(fn, 2, [np.zeros(5, np.int32), np.zeros(256, np.int32), 256])


# ---------------------------------------------------------------- control flow


def loops_kernel(block):
    """acc = sum over k in range(lo, hi, step) of x[k*block + i] * k; plus an if inside and after."""
    b = Builder("loops", [("x", pointer(f32)), ("out", pointer(f32)), ("cnt", pointer(i32)),
                          ("lo", scalar(i32)), ("hi", scalar(i32)), ("step", scalar(i32))])
    ar = b.op("arange", start=0, end=block)
    zero = b.op("splat", b.const(0.0, f32), shape=(block,))
    with b.region([scalar(i32), BlockType(f32, (block,)), scalar(i32)]) as body:
        k, acc, c = body.args
        idx = b.op("add", ar, b.op("splat", b.op("mul", k, b.const(block, i32)), shape=(block,)))
        kk = b.op("splat", b.op("cast", k, dtype=f32), shape=(block,))
        v = b.op("mul", b.op("load", b.op("addptr", b.op("splat", b.param("x"), shape=(block,)), idx)), kk)
        even = b.op("eq", b.op("rem", k, b.const(2, i32)), b.const(0, i32))
        with b.region() as then:
            b.yield_(b.op("add", acc, v), b.op("add", c, b.const(1, i32)))
        with b.region() as els:
            b.yield_(b.op("sub", acc, v), c)
        r = b.if_(even, then, els, [BlockType(f32, (block,)), scalar(i32)])
        b.yield_(r.results[0], r.results[1])
    loop = b.for_(b.param("lo"), b.param("hi"), b.param("step"), [zero, b.const(0, i32)], body)
    acc, c = loop.results
    big = b.op("gt", c, b.const(2, i32))
    with b.region() as then:
        b.yield_(b.op("neg", acc))
    with b.region() as els:
        b.yield_(acc)
    res = b.if_(big, then, els, [BlockType(f32, (block,))]).results[0]
    b.effect("store", b.op("addptr", b.op("splat", b.param("out"), shape=(block,)), ar), res)
    b.effect("store", b.param("cnt"), c)
    return b.finish()


@pytest.mark.parametrize("lo,hi,step", [(0, 8, 1), (1, 8, 3), (7, -1, -2), (3, 3, 1), (5, 2, 1), (0, 8, 2),
                                         (8, 0, -3)])
def test_for_and_if(lo, hi, step, compare):
    fn = loops_kernel(256)
    x = np.random.default_rng(6).standard_normal(256 * 9).astype(np.float32)
    compare(fn, 1, [x, np.zeros(256, np.float32), np.zeros(1, np.int32), lo, hi, step])


def test_nested_loops_constant_bounds(compare):
    b = Builder("nested", [("out", pointer(i64))])
    block = 64
    ar = b.op("arange", start=0, end=block)
    with b.region([scalar(i32), BlockType(i64, (block,))]) as outer:
        i, acc = outer.args
        with b.region([scalar(i32), BlockType(i64, (block,))]) as inner:
            j, acc2 = inner.args
            term = b.op("cast", b.op("add", b.op("mul", ar, b.op("splat", i, shape=(block,))),
                                     b.op("splat", j, shape=(block,))), dtype=i64)
            b.yield_(b.op("add", acc2, term))
        r = b.for_(b.const(0, i32), i, b.const(1, i32), [acc], inner)
        b.yield_(r.results[0])
    loop = b.for_(b.const(0, i32), b.const(6, i32), b.const(1, i32),
                  [b.op("splat", b.const(0, i64), shape=(block,))], outer)
    b.effect("store", b.op("addptr", b.op("splat", b.param("out"), shape=(block,)), ar), loop.results[0])
    compare(b.finish(), 1, [np.zeros(block, np.int64)])


# ---------------------------------------------------------------- dot


def matmul_kernel(dt, bm, bn, bk, with_acc=True):
    """C = A @ B in tiles (masked edges), like the library's matmul; A, B, C row-major."""
    acc_dt = f32 if dt.is_float else i32
    b = Builder(f"mm_{dt}_{bm}x{bn}x{bk}_{with_acc}",
                [("a", pointer(dt)), ("b", pointer(dt)), ("c", pointer(acc_dt)),
                 ("M", scalar(i32)), ("N", scalar(i32)), ("K", scalar(i32))], grid_rank=2)

    def idx(axis, size):
        return b.op("add", b.op("splat", b.op("mul", b.op("program_id", axis=axis), b.const(size, i32)), shape=(size,)),
                    b.op("arange", start=0, end=size))

    rm, rn, rk = idx(0, bm), idx(1, bn), b.op("arange", start=0, end=bk)

    def grid2(rows, cols, rstride, shape):
        r = b.op("broadcast", b.op("expand_dims", rows, axis=1), shape=shape)
        c = b.op("broadcast", b.op("expand_dims", cols, axis=0), shape=shape)
        return r, c, b.op("add", b.op("mul", r, b.op("splat", rstride, shape=shape)), c)

    with b.region([scalar(i32), BlockType(f32 if dt.is_float else i32, (bm, bn))]) as body:
        k, acc = body.args
        ka = b.op("add", rk, b.op("splat", k, shape=(bk,)))
        r, c, off = grid2(rm, ka, b.param("K"), (bm, bk))
        am = b.op("and", b.op("lt", r, b.op("splat", b.param("M"), shape=(bm, bk))),
                  b.op("lt", c, b.op("splat", b.param("K"), shape=(bm, bk))))
        a = b.op("load", b.op("addptr", b.op("splat", b.param("a"), shape=(bm, bk)), off), am,
                 b.op("splat", b.const(0, dt), shape=(bm, bk)))
        r, c, off = grid2(ka, rn, b.param("N"), (bk, bn))
        bmask = b.op("and", b.op("lt", r, b.op("splat", b.param("K"), shape=(bk, bn))),
                     b.op("lt", c, b.op("splat", b.param("N"), shape=(bk, bn))))
        bb = b.op("load", b.op("addptr", b.op("splat", b.param("b"), shape=(bk, bn)), off), bmask,
                  b.op("splat", b.const(0, dt), shape=(bk, bn)))
        if with_acc:
            b.yield_(b.op("dot", a, bb, acc))
        else:
            b.yield_(b.op("add", acc, b.op("dot", a, bb)))
    zero = b.op("splat", b.const(0, acc_dt), shape=(bm, bn))
    loop = b.for_(b.const(0, i32), b.param("K"), b.const(bk, i32), [zero], body)
    r, c, off = grid2(rm, rn, b.param("N"), (bm, bn))
    cm = b.op("and", b.op("lt", r, b.op("splat", b.param("M"), shape=(bm, bn))),
              b.op("lt", c, b.op("splat", b.param("N"), shape=(bm, bn))))
    b.effect("store", b.op("addptr", b.op("splat", b.param("c"), shape=(bm, bn)), off), loop.results[0], cm)
    return b.finish()


@pytest.mark.parametrize("dt", (f32, f16, bf16), ids=str)
@pytest.mark.parametrize("mnk", [(100, 70, 50), (32, 32, 32)])
def test_dot_tiles(dt, mnk, compare):
    M, N, K = mnk
    fn = matmul_kernel(dt, 32, 32, 32)
    rng = np.random.default_rng(7)
    a = rng.standard_normal(M * K).astype(dt.np)
    bm = rng.standard_normal(K * N).astype(dt.np)
    got = compare(fn, ((M + 31) // 32, (N + 31) // 32), [a, bm, np.zeros(M * N, np.float32), M, N, K],
                  tols={2: (1e-5, 1e-5)})
    want = a.astype(np.float64).reshape(M, K) @ bm.astype(np.float64).reshape(K, N)
    np.testing.assert_allclose(got[2].reshape(M, N), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dt,tiles", [(i8, (16, 16, 8)), (f32, (16, 8, 4)), (f64, (8, 16, 16))], ids=str)
def test_dot_other_dtypes_and_small_k(dt, tiles, compare):
    M, N, K = 37, 19, 23
    fn = matmul_kernel(dt, *tiles, with_acc=False)
    rng = np.random.default_rng(8)
    a = rng_values(dt, M * K, rng, specials=False)
    bm = rng_values(dt, K * N, rng, specials=False)
    acc_dt = np.int32 if dt.is_int else np.float32
    grid = ((M + tiles[0] - 1) // tiles[0], (N + tiles[1] - 1) // tiles[1])
    compare(fn, grid, [a, bm, np.zeros(M * N, acc_dt), M, N, K], tols={2: (2e-5, 2e-5)})


# ---------------------------------------------------------------- program ids, grids, num_warps


def test_program_ids_3d_grid(compare):
    b = Builder("ids", [("out", pointer(i32))], grid_rank=3)
    ids = [b.op("program_id", axis=a) for a in range(3)]
    nps = [b.op("num_programs", axis=a) for a in range(3)]
    lin = b.op("add", b.op("mul", b.op("add", b.op("mul", ids[0], nps[1]), ids[1]), nps[2]), ids[2])
    base = b.op("mul", lin, b.const(4, i32))
    for k, v in enumerate(ids + [b.op("mul", b.op("mul", nps[0], nps[1]), nps[2])]):
        b.effect("store", b.op("addptr", b.param("out"), b.op("add", base, b.const(k, i32))), v)
    compare(b.finish(), (3, 2, 4), [np.full(3 * 2 * 4 * 4, -1, np.int32)])


@pytest.mark.parametrize("num_warps", (1, 8))
def test_vector_add_num_warps(num_warps, compare):
    b = Builder("vadd", [("x", pointer(f32)), ("y", pointer(f32)), ("o", pointer(f32)), ("n", scalar(i32))])
    offs = offsets(b, 1024)
    m = lt_n(b, offs)
    b.effect("store", at(b, "o", offs), b.op("add", b.op("load", at(b, "x", offs), m), b.op("load", at(b, "y", offs), m)), m)
    fn = b.finish()
    rng = np.random.default_rng(9)
    for n in SIZES:
        compare(fn, (n + 1023) // 1024, [rng.standard_normal(n).astype(np.float32),
                                          rng.standard_normal(n).astype(np.float32), np.zeros(n, np.float32), n],
                num_warps=num_warps)


def test_empty_grid_runs_nothing(jit):
    b = Builder("nop", [("o", pointer(i32))])
    b.effect("store", b.param("o"), b.const(1, i32))
    o = np.zeros(1, np.int32)
    jit(b.finish()).run(0, o)
    assert o[0] == 0
    jit(b.finish()).run((2, 0), o)
    assert o[0] == 0


def test_u8_and_i64_scalars(compare):
    b = Builder("scalars", [("o", pointer(u8)), ("p", pointer(i64)), ("a", scalar(u8)), ("c", scalar(i64)),
                            ("f", scalar(bool_)), ("h", scalar(f16))])
    v = b.op("where", b.param("f"), b.param("a"), b.op("add", b.param("a"), b.const(1, u8)))
    b.effect("store", b.param("o"), v)
    hc = b.op("cast", b.param("h"), dtype=i64)
    b.effect("store", b.param("p"), b.op("add", b.param("c"), hc))
    fn = b.finish()
    compare(fn, 1, [np.zeros(1, np.uint8), np.zeros(1, np.int64), 255, -(2**63), False, 3.75])
    compare(fn, 1, [np.zeros(1, np.uint8), np.zeros(1, np.int64), 7, 2**62, True, -2.0])


def test_broadcast_of_loaded_bool_and_pointer_blocks(compare):
    """Distributed bool and pointer blocks go through shared memory as bytes / pointers."""
    b = Builder("bcast_kinds", [("flags", pointer(bool_)), ("idx", pointer(i32)), ("x", pointer(f32)),
                                ("out", pointer(f32))])
    rows, cols = 8, 32
    shape = (rows, cols)
    c = b.op("expand_dims", b.op("arange", start=0, end=cols), axis=0)  # [1, cols]
    fl = b.op("load", b.op("addptr", b.op("splat", b.param("flags"), shape=(1, cols)), c))
    gathered = b.op("load", b.op("addptr", b.op("splat", b.param("idx"), shape=(1, cols)), c))
    p = b.op("addptr", b.op("splat", b.param("x"), shape=(1, cols)), gathered)  # a distributed pointer block
    vals = b.op("load", b.op("broadcast", p, shape=shape))
    r = b.op("broadcast", b.op("expand_dims", b.op("arange", start=0, end=rows), axis=1), shape=shape)
    scaled = b.op("mul", vals, b.op("cast", r, dtype=f32))
    res = b.op("where", b.op("broadcast", fl, shape=shape), scaled, b.op("neg", scaled))
    flat = b.op("arange", start=0, end=rows * cols)
    b.effect("store", b.op("addptr", b.op("splat", b.param("out"), shape=(rows * cols,)), flat),
             b.op("reshape", res, shape=(rows * cols,)))
    fn = b.finish()
    rng = np.random.default_rng(11)
    compare(fn, 1, [rng.random(cols) < 0.5, rng.permutation(cols).astype(np.int32),
                    rng.standard_normal(cols).astype(np.float32), np.zeros(rows * cols, np.float32)])


@pytest.mark.parametrize("shape", [(4, 8, 16), (2, 3, 5)])
@pytest.mark.parametrize("axis", (0, 1, 2))
def test_3d_reductions(shape, axis, compare):
    n = int(np.prod(shape))
    b = Builder("reduce3d", [("x", pointer(f32)), ("o", pointer(f32)), ("oi", pointer(i32))])
    flat = b.op("arange", start=0, end=n)
    x = b.op("reshape", b.op("load", b.op("addptr", b.op("splat", b.param("x"), shape=(n,)), flat)), shape=shape)
    m = n // shape[axis]
    for k, (kind, buf) in enumerate((("reduce_sum", "o"), ("reduce_max", "o"), ("reduce_argmin", "oi"))):
        r = b.op("reshape", b.op(kind, x, axis=axis), shape=(m,))
        dst = b.op("add", b.op("arange", start=0, end=m), b.op("splat", b.const(k * m, i32), shape=(m,)))
        b.effect("store", b.op("addptr", b.op("splat", b.param(buf), shape=(m,)), dst), r)
    x = np.random.default_rng(12).standard_normal(n).astype(np.float32)
    x[::7] = 0.5  # ties
    compare(b.finish(), 1, [x, np.zeros(3 * m, np.float32), np.zeros(3 * m, np.int32)], tols={1: (1e-6, 1e-6)})
