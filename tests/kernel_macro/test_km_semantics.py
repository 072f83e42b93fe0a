"""Frontend semantics: small kernels interpreted and compared with numpy."""

from __future__ import annotations

import math
import sys
from typing import TypeVar

import numpy as np
import pytest

import eggpu
import eggpu.language as tl
from eggpu.ir.semantics import int_div, int_rem

MOD = sys.modules[__name__]
A = TypeVar("A", bound=tl.Dtype)
B = TypeVar("B", bound=tl.Dtype)
F = TypeVar("F", bound=tl.Float)
V = TypeVar("V", bound=tl.Num)

LANES = 8

# ---------------------------------------------------------------- promotion and operators


def _apply(OP: tl.constexpr, a, b):
    """A plain helper of this module (inlined), dispatching on a compile-time op code."""
    if OP == 0:
        return a + b
    if OP == 1:
        return a - b
    if OP == 2:
        return a * b
    if OP == 3:
        return a / b
    if OP == 4:
        return a // b
    if OP == 5:
        return a % b
    if OP == 6:
        return a < b
    if OP == 7:
        return a & b
    if OP == 8:
        return a == b
    if OP == 9:
        return tl.maximum(a, b)
    tl.static_assert(OP == 10, "unknown op")
    return a >> b


@eggpu.kernel
def binop(a_ptr: tl.Pointer[A], b_ptr: tl.Pointer[B], out_ptr: tl.Pointer[tl.f64], OP: tl.constexpr,
          WANT: tl.constexpr):
    offs = tl.arange(0, 8)
    r = _apply(OP, tl.load(a_ptr + offs), tl.load(b_ptr + offs))
    tl.static_assert(r.dtype == WANT, "unexpected result dtype")
    tl.store(out_ptr + offs, r.to(tl.f64))


@eggpu.kernel
def binlit(a_ptr: tl.Pointer[A], out_ptr: tl.Pointer[tl.f64], OP: tl.constexpr, LIT: tl.constexpr,
           LEFT: tl.constexpr, WANT: tl.constexpr):
    offs = tl.arange(0, 8)
    a = tl.load(a_ptr + offs)
    r = _apply(OP, LIT, a) if LEFT else _apply(OP, a, LIT)
    tl.static_assert(r.dtype == WANT, "unexpected result dtype")
    tl.store(out_ptr + offs, r.to(tl.f64))


_NP_OPS = {
    0: np.add, 1: np.subtract, 2: np.multiply, 6: np.less, 7: np.bitwise_and, 8: np.equal, 9: np.maximum,
}


def _expected(op, a, b, dt):
    """numpy computation of op in dtype dt (C semantics for integer // and %)."""
    x, y = a.astype(dt.np), b.astype(dt.np)
    with np.errstate(all="ignore"):
        if op in _NP_OPS:
            return _NP_OPS[op](x, y).astype(np.float64)
        if op == 3:
            return (x / y).astype(dt.np).astype(np.float64)
        if op == 4:
            return (int_div(x, y, dt) if dt.is_int else np.floor(x / y)).astype(np.float64)
        if op == 5:
            return (int_rem(x, y, dt) if dt.is_int else np.fmod(x, y)).astype(np.float64)
        if op == 10:
            return np.right_shift(x, y).astype(np.float64)
    raise AssertionError(op)


def _vals(dt, seed):
    rng = np.random.default_rng(seed)
    if dt.is_bool:
        return rng.integers(0, 2, LANES).astype(bool)
    if dt.is_float:
        return (rng.standard_normal(LANES) * 10).astype(dt.np)
    lo = max(dt.min, -100)
    v = rng.integers(lo, min(dt.max, 100), LANES)
    v[v == 0] = 3
    return v.astype(dt.np)


@pytest.mark.parametrize("op,da,db,want", [
    (0, tl.i32, tl.i32, tl.i32),
    (0, tl.i8, tl.i32, tl.i32),      # wider int wins
    (1, tl.u8, tl.i8, tl.u8),        # mixed signedness, same width: the unsigned one (C rules)
    (2, tl.i32, tl.f16, tl.f16),     # float beats int
    (0, tl.f16, tl.bf16, tl.f16),    # f16 with bf16 -> f16 (Triton checks fp16 before bf16)
    (2, tl.bf16, tl.f16, tl.f16),
    (0, tl.bf16, tl.i32, tl.f32),    # bf16 with an integer -> f32 (Triton: bf16 only with bf16)
    (2, tl.i16, tl.bf16, tl.f32),
    (1, tl.bf16, tl.bool, tl.f32),
    (2, tl.bf16, tl.bf16, tl.bf16),
    (2, tl.f32, tl.f64, tl.f64),
    (3, tl.i32, tl.i32, tl.f32),     # int / int -> f32
    (3, tl.f16, tl.f16, tl.f16),
    (4, tl.i32, tl.i32, tl.i32),     # truncating //
    (5, tl.i32, tl.i32, tl.i32),     # remainder with the dividend's sign
    (4, tl.f32, tl.f32, tl.f32),     # float // is floor(a / b)
    (5, tl.f64, tl.f64, tl.f64),     # float % is fmod
    (0, tl.bool, tl.bool, tl.i32),   # bool arithmetic promotes to i32
    (7, tl.bool, tl.bool, tl.bool),  # & keeps bool
    (7, tl.i16, tl.i32, tl.i32),
    (6, tl.i32, tl.f32, tl.bool),    # comparisons give bool
    (8, tl.u32, tl.u32, tl.bool),
    (9, tl.i8, tl.i16, tl.i16),
    (10, tl.i32, tl.i32, tl.i32),
])
def test_tensor_tensor_promotion(op, da, db, want):
    a, b = _vals(da, 1), _vals(db, 2)
    if op == 10:
        b = np.abs(b) % 8
    if op in (4, 5) and not want.is_float:
        a[0], b[0] = -7, 2  # C semantics: -7 // 2 == -3, -7 % 2 == -1
    out = np.zeros(LANES, np.float64)
    MOD.Binop[da, db](op, want).interpret(1, a, b, out)
    exp = _expected(op, a, b, eggpu.ir.promote(da, db) if op in (6, 8) else want)
    if want.is_float and want.bits < 64:
        np.testing.assert_allclose(out, exp, rtol=1e-3 if want.bits == 16 else 1e-6)
    else:
        np.testing.assert_array_equal(out, exp)
    if op in (4, 5) and not want.is_float:
        assert out[0] == (-3 if op == 4 else -1)


@pytest.mark.parametrize("op,da,lit,left,want", [
    (0, tl.i8, 100, False, tl.i8),      # int literal takes the int tensor's dtype (wraps in i8)
    (2, tl.u16, 3, True, tl.u16),
    (0, tl.f16, 1, False, tl.f16),      # int literal with a float tensor -> float dtype
    (2, tl.bf16, 0.5, True, tl.bf16),   # float literal with a float tensor -> float dtype
    (0, tl.i32, 0.5, False, tl.f32),    # float literal with an int tensor -> f32
    (1, tl.i64, 2.5, True, tl.f32),
    (0, tl.bool, 1, False, tl.i32),     # int literal with bool -> i32
    (7, tl.bool, True, False, tl.bool),
    (3, tl.i16, 2, False, tl.f32),      # int / int literal -> f32
    (4, tl.i32, -2, False, tl.i32),
    (6, tl.u8, 200, False, tl.bool),
])
def test_literal_weak_typing(op, da, lit, left, want):
    a = _vals(da, 3)
    if da == tl.i8:
        a[0] = 100  # 100 + 100 wraps in i8
    out = np.zeros(LANES, np.float64)
    MOD.Binlit[da](op, lit, left, want).interpret(1, a, out)
    litarr = np.full(LANES, lit)
    edt = da if op == 6 else want
    exp = _expected(op, litarr, a, edt) if left else _expected(op, a, litarr, edt)
    if want.is_float and want.bits < 64:
        np.testing.assert_allclose(out, exp, rtol=1e-2 if want.bits == 16 else 1e-6)
    else:
        np.testing.assert_array_equal(out, exp)
    if da == tl.i8 and op == 0:
        assert out[0] == -56


# ---------------------------------------------------------------- broadcasting and shapes


@eggpu.kernel
def outer(a_ptr: tl.Pointer[tl.f32], b_ptr: tl.Pointer[tl.f32], out_ptr: tl.Pointer[tl.f32], s: tl.f32,
          M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    a = tl.load(a_ptr + rm)
    b = tl.load(b_ptr + rn)
    prod = a[:, None] * b[None, :] + s                     # [M,1] * [1,N] + scalar
    col = tl.expand_dims(b, 0)                             # [1, N]
    prod = prod + tl.broadcast_to(col, [M, N]) * 0.0
    flat = tl.reshape(prod, [M * N])
    back = tl.reshape(flat, (N, M))                        # row-major reinterpretation
    t = tl.trans(tl.reshape(back, [M, N]))                 # [N, M]
    tl.store(out_ptr + rn[:, None] * M + rm[None, :], t)  # store the transpose of prod
    tl.store(out_ptr + M * N + rm[:, None] * N + rn, prod)  # [M,1] + [N] broadcasts to [M,N]


def test_broadcasting_expand_dims_reshape_trans():
    M, N = 4, 6
    a = np.arange(M, dtype=np.float32) + 1
    b = np.arange(N, dtype=np.float32) * 0.5
    out = np.zeros(2 * M * N, np.float32)
    MOD.Outer(M, N).interpret(1, a, b, out, np.float32(3.0))
    prod = np.outer(a, b) + 3.0
    np.testing.assert_allclose(out[: M * N].reshape(N, M), prod.T)
    np.testing.assert_allclose(out[M * N:].reshape(M, N), prod)


# ---------------------------------------------------------------- loops


@eggpu.kernel
def chunked_sum(x_ptr: tl.Pointer[F], out_ptr: tl.Pointer[tl.f32], n: tl.i32, start: tl.i32, step_blocks: tl.i32,
                BLOCK: tl.constexpr):
    """Sums x[start:n] in tiles of BLOCK, with a runtime stride of step_blocks tiles; counts tiles."""
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.f32)
    tiles = 0
    ptr = x_ptr + start + offs
    for i in range(start, n, BLOCK * step_blocks):
        m = i + offs < n
        acc += tl.load(ptr, mask=m, other=0.0).to(tl.f32)
        ptr += BLOCK * step_blocks
        tiles += 1
    tl.store(out_ptr, tl.sum(acc, axis=0))
    tl.store(out_ptr + 1, tiles.to(tl.f32))


@pytest.mark.parametrize("n", [1, 1000, 1001, 4097])
def test_loop_with_carried_values_and_runtime_bounds(n):
    x = np.linspace(-1, 2, n).astype(np.float32)
    out = np.zeros(2, np.float32)
    MOD.ChunkedSum[tl.f32](128).interpret(1, x, out, n, 0, 1)
    np.testing.assert_allclose(out[0], x.astype(np.float64).sum(), rtol=1e-5, atol=1e-5)
    assert out[1] == math.ceil(n / 128)


def test_loop_with_runtime_start_and_step():
    n = 1000
    x = np.arange(n, dtype=np.float16)
    out = np.zeros(2, np.float32)
    MOD.ChunkedSum[tl.f16](16).interpret(1, x, out, n, 5, 3)  # tiles starting at 5, 53, 101, ...
    want = sum(x[i:min(i + 16, n)].astype(np.float64).sum() for i in range(5, n, 48))
    np.testing.assert_allclose(out[0], want, rtol=1e-6)
    assert out[1] == len(range(5, n, 48))


def test_loop_ir_structure():
    fn = MOD.ChunkedSum[tl.f32](64).ir()
    fors = [op for op in fn.walk() if op.op == "for"]
    assert len(fors) == 1
    # carried: acc (f32[64]), tiles (i32), ptr (ptr<f32>[64])
    assert sorted(str(r.type) for r in fors[0].results) == ["f32[64]", "i32", "ptr<f32>[64]"]
    assert [str(a.type) for a in fors[0].regions[0].args][0] == "i32"


@eggpu.kernel
def nested_loops(out_ptr: tl.Pointer[tl.i32], n: tl.i32, m: tl.i32):
    total = 0
    for i in range(n):
        row = 0
        for j in range(i, m):
            row += j
        total += row * (i + 1)
    tl.store(out_ptr, total)


def test_nested_loops_with_literal_initialised_carries():
    out = np.zeros(1, np.int32)
    MOD.NestedLoops().interpret(1, out, 5, 9)
    assert out[0] == sum(sum(range(i, 9)) * (i + 1) for i in range(5))


@eggpu.kernel
def unrolled(x_ptr: tl.Pointer[tl.f32], out_ptr: tl.Pointer[tl.f32], K: tl.constexpr):
    offs = tl.arange(0, 4)
    acc = tl.load(x_ptr + offs)
    for k in tl.static_range(1, K):
        if k % 2 == 0:            # compile-time condition inside an unrolled loop
            acc = acc + tl.load(x_ptr + k * 4 + offs)
        else:
            acc = acc - tl.load(x_ptr + k * 4 + offs)
    last = k                      # the unrolled loop variable stays defined
    tl.store(out_ptr + offs, acc * last)


def test_static_range_is_unrolled():
    K = 5
    x = np.arange(4 * K, dtype=np.float32)
    out = np.zeros(4, np.float32)
    k = MOD.Unrolled(K)
    k.interpret(1, x, out)
    rows = x.reshape(K, 4)
    want = rows[0] - rows[1] + rows[2] - rows[3] + rows[4]
    np.testing.assert_allclose(out, want * (K - 1))
    fn = k.ir()
    assert not any(op.op in ("for", "if") for op in fn.walk())
    assert sum(op.op == "load" for op in fn.walk()) == K


# ---------------------------------------------------------------- if / else, early return


@eggpu.kernel
def branches(x_ptr: tl.Pointer[tl.f32], out_ptr: tl.Pointer[tl.f32], flag: tl.i32, FOLD: tl.constexpr):
    x = tl.load(x_ptr)
    y = x
    if flag > 0:
        y = x * 2.0
        z = 1
    elif flag == 0:
        z = 2
    else:
        y = x - 1.0
        z = 3.5
    if FOLD:
        y = y + 100.0
    else:
        tl.static_assert(False, "the untaken branch of a constexpr if is not compiled")
    tl.store(out_ptr, y)
    tl.store(out_ptr + 1, z)


@pytest.mark.parametrize("flag,want", [(3, (106.0, 1.0)), (0, (103.0, 2.0)), (-4, (102.0, 3.5))])
def test_scalar_if_else_and_constexpr_if(flag, want):
    out = np.zeros(2, np.float32)
    MOD.Branches(True).interpret(1, np.array([3.0], np.float32), out, flag)
    assert tuple(out) == want


def test_runtime_if_ir_yields_assigned_variables():
    fn = MOD.Branches(True).ir()
    top_ifs = [op for op in fn.body.ops if op.op == "if"]
    assert len(top_ifs) == 1
    # y (f32) and z (literals 1 / 2 / 3.5 -> f32) are yielded
    assert [str(r.type) for r in top_ifs[0].results] == ["f32", "f32"]


@eggpu.kernel
def guarded_rows(x_ptr: tl.Pointer[tl.f32], y_ptr: tl.Pointer[tl.f32], n_rows: tl.i32, n_cols: tl.i32,
                 BLOCK: tl.constexpr):
    row = tl.program_id(0)
    if row >= n_rows:
        return
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=float("-inf"))
    if tl.max(x, axis=0) < 0.0:
        tl.store(y_ptr + row * n_cols + cols, -x, mask=mask)
        return
    tl.store(y_ptr + row * n_cols + cols, x * 2.0, mask=mask)


def test_early_return():
    rows, cols = 3, 10
    x = np.arange(rows * cols, dtype=np.float32).reshape(rows, cols) - 12
    y = np.full((rows + 2) * cols, 7.0, np.float32)
    MOD.GuardedRows(16).interpret(rows + 2, x, y, rows, cols)  # two programs past the last row
    want = np.where(x.max(axis=1, keepdims=True) < 0, -x, 2 * x)
    np.testing.assert_array_equal(y[: rows * cols].reshape(rows, cols), want)
    assert np.all(y[rows * cols:] == 7.0)


# ---------------------------------------------------------------- helpers


@eggpu.jit
def _stats(x, n_valid):
    s = tl.sum(x, axis=0)
    return s, s / n_valid


def _relu_scalar(v):
    if v > 0.0:
        return v
    return 0.0


def _scale(x, FACTOR: tl.constexpr = 3):
    return x * FACTOR


@eggpu.kernel
def use_helpers(x_ptr: tl.Pointer[tl.f32], out_ptr: tl.Pointer[tl.f32], n: tl.i32, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    total, mean = _stats(x, n)
    tl.store(out_ptr, total)
    tl.store(out_ptr + 1, mean)
    tl.store(out_ptr + 2, _relu_scalar(mean - 1.0))
    tl.store(out_ptr + 3, _relu_scalar(total))
    tl.store(out_ptr + 4, tl.sum(_scale(x), axis=0))
    tl.store(out_ptr + 5, tl.sum(_scale(x, FACTOR=-1), axis=0))


def test_helper_inlining():
    x = np.array([1, 2, 3, -10, 99], np.float32)
    out = np.zeros(6, np.float32)
    MOD.UseHelpers(8).interpret(1, x, out, 4)
    assert list(out) == [-4.0, -1.0, 0.0, 0.0, -12.0, 4.0]
    fn = MOD.UseHelpers(8).ir()
    assert sum(op.op == "if" for op in fn.walk()) == 2  # one per inlined call of the early-return helper
    assert all(op.loc is not None for op in fn.walk())


# ---------------------------------------------------------------- reductions and dot


@eggpu.kernel
def reductions(x_ptr: tl.Pointer[V], out_ptr: tl.Pointer[tl.f64], M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :])
    o = 0
    r1 = tl.sum(x, axis=1)                       # [M]
    tl.store(out_ptr + o + rm, r1.to(tl.f64))
    o += M
    r2 = tl.max(x, axis=0, keep_dims=True)       # [1, N]
    tl.static_assert(r2.shape == (1, N), "keep_dims shape")
    tl.store(out_ptr + o + rn[None, :], r2.to(tl.f64))
    o += N
    r3 = tl.min(x, axis=-1, keep_dims=True)      # [M, 1]
    tl.store(out_ptr + o + rm[:, None], r3.to(tl.f64))
    o += M
    r4 = tl.argmax(x, axis=1)
    tl.store(out_ptr + o + rm, r4.to(tl.f64))
    o += M
    r5 = tl.argmin(x, axis=0)
    tl.store(out_ptr + o + rn, r5.to(tl.f64))
    o += N
    tl.store(out_ptr + o, tl.sum(x).to(tl.f64))  # all axes -> scalar
    tl.store(out_ptr + o + 1, tl.max(x).to(tl.f64))
    tl.store(out_ptr + o + 2, tl.argmin(x).to(tl.f64))
    whole = tl.sum(x, keep_dims=True)
    tl.static_assert(whole.shape == (1, 1), "keep_dims over all axes")
    tl.store(out_ptr + o + 3 + rm[:, None] * 0, whole.to(tl.f64))


@pytest.mark.parametrize("dt", [tl.f32, tl.i8, tl.u16])
def test_reductions_with_axis_and_keep_dims(dt):
    M, N = 4, 8
    rng = np.random.default_rng(5)
    x = rng.integers(0, 50, (M, N)).astype(dt.np)
    out = np.zeros(3 * M + 2 * N + 4, np.float64)
    MOD.Reductions[dt](M, N).interpret(1, x, out)
    x64 = x.astype(np.float64)
    want = np.concatenate([x64.sum(1), x64.max(0), x64.min(1), x.argmax(1), x.argmin(0),
                           [x64.sum(), x64.max(), x.argmin(), x64.sum()]])
    np.testing.assert_array_equal(out, want)
    fn = MOD.Reductions[dt](M, N).ir()
    if dt == tl.i8:  # narrow ints sum in 32 bits (Triton)
        assert any(op.op == "reduce_sum" and op.results[0].type.dtype == tl.i32 for op in fn.walk())


@eggpu.kernel
def mm(a_ptr: tl.Pointer[A], b_ptr: tl.Pointer[A], c_ptr: tl.Pointer[tl.f32], d_ptr: tl.Pointer[tl.f32],
       M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    c = tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], c)
    acc = tl.full([M, N], 1.5, tl.f32)
    acc = tl.dot(a, b, acc)
    tl.store(d_ptr + rm[:, None] * N + rn[None, :], acc)


@pytest.mark.parametrize("dt", [tl.f16, tl.f32, tl.i8])
def test_dot(dt):
    M, N, K = 16, 8, 32
    rng = np.random.default_rng(7)
    a = rng.integers(-4, 5, (M, K)).astype(dt.np)
    b = rng.integers(-4, 5, (K, N)).astype(dt.np)
    c = np.zeros((M, N), np.float32)
    d = np.zeros((M, N), np.float32)
    MOD.Mm[dt](M, N, K).interpret(1, a, b, c, d)
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_array_equal(c, want)
    np.testing.assert_array_equal(d, want + 1.5)
    fn = MOD.Mm[dt](M, N, K).ir()
    dots = [op for op in fn.walk() if op.op == "dot"]
    if dt == tl.i8:  # integer product converted to the f32 accumulator: both uses share one dot
        assert [str(op.results[0].type) for op in dots] == [f"i32[{M},{N}]"]
    else:
        assert [str(op.results[0].type) for op in dots] == [f"f32[{M},{N}]"] * 2


# ---------------------------------------------------------------- atomics


@eggpu.kernel
def atomics(cnt_ptr: tl.Pointer[tl.i32], mx_ptr: tl.Pointer[tl.f32], old_ptr: tl.Pointer[tl.i32],
            cas_ptr: tl.Pointer[tl.i32], x_ptr: tl.Pointer[tl.f32], n: tl.i32, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    old = tl.atomic_add(cnt_ptr, 1)                     # scalar: one increment per program
    tl.store(old_ptr + pid, old)
    tl.atomic_add(cnt_ptr + 1 + offs % 2, 1, mask=mask)  # block: every valid lane
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.atomic_max(mx_ptr, x, mask=mask)
    tl.atomic_min(mx_ptr + 1, x, mask=mask)
    prev = tl.atomic_xchg(mx_ptr + 2, pid.to(tl.f32))
    tl.store(mx_ptr + 3 + pid, prev)
    tl.atomic_cas(cas_ptr, pid, pid + 1)                # chain: 0 -> 1 -> 2 -> ...


def test_atomics():
    n, block = 37, 8
    grid = math.ceil(n / block)
    x = np.random.default_rng(3).standard_normal(n).astype(np.float32)
    cnt = np.zeros(3, np.int32)
    mx = np.array([-np.inf, np.inf, -1.0] + [0.0] * grid, np.float32)
    old = np.zeros(grid, np.int32)
    cas = np.zeros(1, np.int32)
    MOD.Atomics(block).interpret(grid, cnt, mx, old, cas, x, n)
    assert cnt[0] == grid and sorted(old) == list(range(grid))
    assert cnt[1] == (n + 1) // 2 and cnt[2] == n // 2
    assert mx[0] == x.max() and mx[1] == x.min()
    assert mx[2] == grid - 1 and list(mx[3:]) == [-1.0] + list(range(grid - 1))  # programs run in order
    assert cas[0] == grid


# ---------------------------------------------------------------- math, where, casts, logic


@eggpu.kernel
def elementwise_math(x_ptr: tl.Pointer[F], out_ptr: tl.Pointer[tl.f64], BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    ax = tl.abs(x) + 0.5
    results = (tl.exp(x), tl.exp2(x), tl.log(ax), tl.log2(ax), tl.sqrt(ax), tl.rsqrt(ax), tl.sin(x), tl.cos(x),
               tl.tanh(x), tl.erf(x), tl.sigmoid(x), tl.floor(x), tl.ceil(x), tl.fma(x, x, 1.0),
               tl.where(x > 0, x, 0.0), tl.minimum(x, 0.25), tl.maximum(x, 0.25), tl.clamp(x, -0.5, 0.5),
               tl.abs(x), -x)
    for i in tl.static_range(20):
        tl.static_assert(results[i].dtype == F, "math keeps the float dtype")
        tl.store(out_ptr + i * BLOCK + offs, results[i].to(tl.f64))


@pytest.mark.parametrize("dt", [tl.f32, tl.f64, tl.f16])
def test_math_functions(dt):
    x = np.linspace(-2.2, 2.2, 16).astype(dt.np)
    out = np.zeros(20 * 16, np.float64)
    MOD.ElementwiseMath[dt](16).interpret(1, x, out)
    v = x.astype(np.float64)
    av = np.abs(v) + 0.5
    erf = np.vectorize(math.erf)
    want = [np.exp(v), np.exp2(v), np.log(av), np.log2(av), np.sqrt(av), 1 / np.sqrt(av), np.sin(v), np.cos(v),
            np.tanh(v), erf(v), 1 / (1 + np.exp(-v)), np.floor(v), np.ceil(v), v * v + 1, np.where(v > 0, v, 0),
            np.minimum(v, 0.25), np.maximum(v, 0.25), np.clip(v, -0.5, 0.5), np.abs(v), -v]
    rtol = {tl.f16: 4e-3, tl.f32: 2e-6, tl.f64: 1e-12}[dt]
    np.testing.assert_allclose(out, np.concatenate(want), rtol=rtol, atol=rtol)


@eggpu.kernel
def casts_and_logic(x_ptr: tl.Pointer[tl.f32], out_ptr: tl.Pointer[tl.i32], BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    pos = x > 0.0
    small = tl.abs(x) < 1.5
    tl.store(out_ptr + offs, x.to(tl.i32))                                 # truncation
    tl.store(out_ptr + BLOCK + offs, tl.cast(x, tl.i32, bitcast=True))      # bit pattern
    tl.store(out_ptr + 2 * BLOCK + offs, (pos and small).to(tl.i32))
    tl.store(out_ptr + 3 * BLOCK + offs, (pos or small).to(tl.i32))
    tl.store(out_ptr + 4 * BLOCK + offs, (not pos).to(tl.i32))
    tl.store(out_ptr + 5 * BLOCK + offs, ~offs ^ (offs << 2) | (offs >> 1) & 3)
    tl.store(out_ptr + 6 * BLOCK + offs, tl.where(pos, 1, -1))
    tl.store(out_ptr + 7 * BLOCK + offs, x)                                 # value converted to i32 by store


def test_casts_and_logical_operators():
    n = 8
    x = np.array([-2.7, -1.2, -0.0, 0.3, 1.0, 1.49, 2.5, 9.9], np.float32)
    out = np.zeros(8 * n, np.int32)
    MOD.CastsAndLogic(n).interpret(1, x, out)
    o = out.reshape(8, n)
    offs = np.arange(n, dtype=np.int32)
    pos, small = x > 0, np.abs(x) < 1.5
    np.testing.assert_array_equal(o[0], np.trunc(x).astype(np.int32))
    np.testing.assert_array_equal(o[1], x.view(np.int32))
    np.testing.assert_array_equal(o[2], pos & small)
    np.testing.assert_array_equal(o[3], pos | small)
    np.testing.assert_array_equal(o[4], ~pos)
    np.testing.assert_array_equal(o[5], ~offs ^ (offs << 2) | (offs >> 1) & 3)
    np.testing.assert_array_equal(o[6], np.where(pos, 1, -1))
    np.testing.assert_array_equal(o[7], np.trunc(x).astype(np.int32))


@eggpu.kernel
def program_model(out_ptr: tl.Pointer[tl.i32], n: tl.i32, BLOCK: tl.constexpr):
    pid_x = tl.program_id(0)
    pid_y = tl.program_id(1)
    npx = tl.num_programs(0)
    blocks = tl.cdiv(n, BLOCK)                    # runtime cdiv
    tl.static_assert(tl.cdiv(10, BLOCK) == 3, "compile-time cdiv")
    slot = pid_y * npx + pid_x
    tl.store(out_ptr + slot, blocks * 1000 + npx * 100 + pid_y * 10 + pid_x)


def test_program_model_grid_2d():
    out = np.zeros(6, np.int32)
    k = MOD.ProgramModel(4)
    k.interpret((3, 2), out, 9)
    assert k.ir().grid_rank == 2
    want = [3000 + 300 + y * 10 + x for y in range(2) for x in range(3)]
    assert list(out) == want


def _sort2(a, b):
    """Early returns of tuples from a runtime if (merged element by element)."""
    if a > b:
        return b, a
    return a, b


@eggpu.kernel
def sort_pairs(x_ptr: tl.Pointer[tl.i32], out_ptr: tl.Pointer[tl.i32]):
    pid = tl.program_id(0)
    lo, hi = _sort2(tl.load(x_ptr + 2 * pid), tl.load(x_ptr + 2 * pid + 1))
    tl.store(out_ptr + 2 * pid, lo)
    tl.store(out_ptr + 2 * pid + 1, hi)


def test_helper_returning_tuples_from_branches():
    x = np.array([5, 1, 2, 9, -3, -3], np.int32)
    out = np.zeros(6, np.int32)
    MOD.SortPairs().interpret(3, x, out)
    assert list(out) == [1, 5, 2, 9, -3, -3]


@eggpu.kernel
def chained_and_ternary(x_ptr: tl.Pointer[tl.i32], out_ptr: tl.Pointer[tl.i32], FLAG: tl.constexpr):
    offs = tl.arange(0, 8)
    x = tl.load(x_ptr + offs)
    inside = 0 <= x < 5                        # chained comparison -> (0 <= x) & (x < 5)
    scale = 10 if FLAG else 100                # compile-time ternary
    picked = x if x.shape == (8,) else -x      # compile-time condition, blocks in branches
    tl.store(out_ptr + offs, tl.where(inside, picked * scale, -1))
    s = tl.sum(x, axis=0)
    tl.store(out_ptr + 8, 1 if s > 10 else 2)   # runtime ternary on a scalar -> where


def test_chained_comparison_and_ternaries():
    x = np.array([-1, 0, 3, 4, 5, 7, 2, 1], np.int32)
    out = np.zeros(9, np.int32)
    MOD.ChainedAndTernary(True).interpret(1, x, out)
    assert list(out[:8]) == [-1, 0, 30, 40, -1, -1, 20, 10]
    assert out[8] == 1
