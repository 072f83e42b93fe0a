"""The test_core catalogue's checks, part 1: shared helpers, then elementwise ops, casts, memory
and shapes. Each check launches one kernel of ``bench/compat_core_kernels.py`` over the dtypes its
Triton test covers and returns ``(name, got, want, rtol, atol)`` tuples (see :mod:`bench.compat_core`)."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np

from bench import compat
from bench.compat import Check, Launch

INTS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
FLOATS = ("float16", "float32", "float64")
GPU_ONLY = frozenset({"inline_asm_elementwise"})
SIZE = 128

class DtypeError(Exception):
    """An error while running one dtype of a case: the dtype leads the message."""


def _rand(rng: np.random.Generator, dtype: str, n: int = SIZE, low: Any = None, high: Any = None) -> np.ndarray:
    """Random values as test_core's ``numpy_random``: integers over (part of) their range, floats normal."""
    dt = np.dtype(dtype)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        lo = info.min if low is None else low
        hi = info.max if high is None else high
        return rng.integers(lo, hi, n, dtype=dt, endpoint=True)
    if dt.kind == "b":
        return rng.random(n) < 0.5
    return (rng.standard_normal(n) * 10 if low is None else rng.uniform(low, high, n)).astype(dt)


def _tol(dtype: Any) -> tuple[float, float]:
    name = np.dtype(dtype).name
    return {"float16": (1e-2, 1e-2), "float32": (1e-5, 1e-6), "float64": (1e-12, 1e-12)}.get(name, (0.0, 0.0))


def _each(dtypes: Any, body: Any) -> list[Check]:
    out: list[Check] = []
    for d in dtypes:
        try:
            out += body(d)
        except Exception as e:  # noqa: BLE001 - name the dtype that failed
            raise DtypeError(f"{d}: {compat._first_line(e)}") from e
    return out


def _trunc_div(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """C's integer division (toward zero), in the operands' dtype."""
    if x.dtype.kind == "u":
        return x // y
    q = np.abs(x.astype(np.int64)) // np.abs(y.astype(np.int64))
    return (np.sign(x.astype(np.int64)) * np.sign(y.astype(np.int64)) * q).astype(x.dtype)


# ---------------------------------------------------------------- elementwise


def _empty(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    def body(d):
        x = _rand(rng, d)
        before = x.copy()
        launch(k.empty_kernel, (1,), x, SIZE=SIZE, num_warps=4)
        return [(d, x, before, 0.0, 0.0)]
    return _each(INTS + FLOATS, body)


def _unary(kernel: str, ref: Any, dtypes: Any) -> Any:
    def run(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
        def body(d):
            x = _rand(rng, d)
            z = np.zeros_like(x)
            launch(getattr(k, kernel), (1,), z, x, SIZE=SIZE)
            with np.errstate(all="ignore"):
                return [(d, z, ref(x), *_tol(d))]
        return _each(dtypes, body)
    return run


def _binary(kernel: str, ref: Any, dtypes: Any, y_nonzero: bool = False) -> Any:
    def run(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
        def body(pair):
            dx, dy, dz = pair
            x, y = _rand(rng, dx, high=None), _rand(rng, dy)
            if y_nonzero:
                y[y == 0] = 1
                if np.dtype(dx).kind == "i":  # INT_MIN / -1 overflows in C as in Triton: not tested there either
                    x[x == np.iinfo(dx).min] = 0
            z = np.zeros(SIZE, dz)
            launch(getattr(k, kernel), (1,), z, x, y, SIZE=SIZE)
            with np.errstate(all="ignore"):
                want = ref(x, y, np.dtype(dz))
            return [(f"{dx},{dy}", z, want, *_tol(dz))]
        return _each(dtypes, body)
    return run


def _same(dtypes: Any) -> list[tuple[str, str, str]]:
    return [(d, d, d) for d in dtypes]


# mixed pairs with the dtype Triton's promotion gives (test_core's _binary_op_dtype_override and numpy)
MIXED = [("int8", "uint8", "uint8"), ("int32", "uint32", "uint32"), ("int16", "int64", "int64"),
         ("float16", "int32", "float16"), ("int32", "float32", "float32"), ("float32", "float64", "float64"),
         ("float16", "float32", "float32")]


def _arith(op: str) -> Any:
    def ref(x, y, dz):
        xc, yc = x.astype(dz), y.astype(dz)
        if op == "add":
            return xc + yc
        if op == "sub":
            return xc - yc
        if op == "mul":
            return xc * yc
        if op == "floordiv":
            return _trunc_div(xc, yc) if dz.kind in "iu" else np.floor(xc / yc)
        # mod: C's remainder for integers, frem (C fmod, the dividend's sign) for floats, as Triton's
        if dz.kind in "iu":
            return xc - _trunc_div(xc, yc) * yc
        if dz == np.float16:  # Triton computes f16 % in f32 (test_bin_op's promote_to_fp32)
            return np.fmod(xc.astype(np.float32), yc.astype(np.float32)).astype(dz)
        return np.fmod(xc, yc)
    return ref


def _truediv_ref(x, y, dz):
    if x.dtype.kind in "iu" and y.dtype.kind in "iu":
        return x.astype(np.float32) / y.astype(np.float32)
    return x.astype(dz) / y.astype(dz)


def _truediv(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    pairs = [(d, d, "float32" if d in INTS else d) for d in INTS + FLOATS] + [p for p in MIXED if "float" in p[2]]
    return _binary("truediv_kernel", _truediv_ref, pairs, y_nonzero=True)(k, launch, rng)


def _broadcast_lhs(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    def body(d):
        x, y = _rand(rng, d, 1), _rand(rng, d)
        z = np.zeros_like(y)
        launch(k.add_broadcast_lhs_kernel, (1,), z, x, y, SIZE=SIZE)
        return [(d, z, x[0] + y, *_tol(d))]
    with np.errstate(over="ignore"):
        return _each(("int32", "uint16", "float32", "float16"), body)


def _scalar_rhs(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    def body(d):
        x = _rand(rng, d, low=-100 if d in FLOATS or d.startswith("int") else 0, high=100)
        z = np.zeros_like(x)
        launch(k.mul_scalar_rhs_kernel, (1,), z, x, 3, SIZE=SIZE)
        return [(d, z, x * x.dtype.type(3), *_tol(d))]
    return _each(("int8", "int32", "uint64", "float16", "float32"), body)


def _bitwise(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    def body(d):
        x, y = _rand(rng, d), _rand(rng, d)
        zs = [np.zeros_like(x) for _ in range(3)]
        launch(k.bitwise_kernel, (1,), *zs, x, y, SIZE=SIZE)
        return [(f"{d} &", zs[0], x & y, 0, 0), (f"{d} |", zs[1], x | y, 0, 0), (f"{d} ^", zs[2], x ^ y, 0, 0)]
    return _each(INTS + ("bool",), body)


def _shift(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    def body(d):
        bits = np.dtype(d).itemsize * 8
        x, y = _rand(rng, d), _rand(rng, d, low=0, high=bits - 1)
        zl, zr = np.zeros_like(x), np.zeros_like(x)
        launch(k.shift_kernel, (1,), zl, zr, x, y, SIZE=SIZE)
        return [(f"{d} <<", zl, x << y, 0, 0), (f"{d} >>", zr, x >> y, 0, 0)]
    return _each(INTS, body)


def _compare(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    ops = (np.less, np.less_equal, np.equal, np.not_equal, np.greater, np.greater_equal)

    def body(pair):
        dx, dy = pair
        x, y = _rand(rng, dx), _rand(rng, dy)
        y[::3] = x[::3].astype(dy)  # some equal pairs
        zs = [np.zeros(SIZE, np.bool_) for _ in ops]
        launch(k.compare_kernel, (1,), *zs, x, y, SIZE=SIZE)
        return [(f"{dx},{dy} {op.__name__}", z, op(x, y), 0, 0) for z, op in zip(zs, ops)]
    return _each([(d, d) for d in INTS + FLOATS] + [("int32", "int64"), ("float32", "float16")], body)


def _where(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    def body(d):
        out = []
        for n in (1, 1000, 1001):
            cond = rng.random(n) < 0.5
            a, b = _rand(rng, d, n), _rand(rng, d, n)
            z = np.zeros_like(a)
            launch(k.where_kernel, ((n + 511) // 512,), cond, a, b, z, n, BLOCK_SIZE=512, TEST_POINTERS=False,
                   TEST_SCALAR_POINTERS=False)
            out.append((f"{d} n={n}", z, np.where(cond, a, b), 0, 0))
        return out
    return _each(("bool", "int8", "int32", "uint64", "float16", "float32", "float64"), body)


def _where_scalar_pointer(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    out = []
    for first in (True, False):
        n = 1001
        cond = np.zeros(n, np.bool_)
        cond[0] = first
        a, b = rng.random(n).astype(np.float32), rng.random(n).astype(np.float32)
        z = np.zeros_like(a)
        launch(k.where_kernel, (2,), cond, a, b, z, n, BLOCK_SIZE=512, TEST_POINTERS=False,
               TEST_SCALAR_POINTERS=True)
        out.append((f"cond={first}", z, a if first else b, 0, 0))
    return out


def _where_scalar_condition(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    a = rng.random((16, 16)).astype(np.float32)
    z = np.ones_like(a)
    launch(k.where_scalar_condition_kernel, (1,), a, z, BLOCK_SIZE=16)
    return [("zeros", z, np.zeros_like(a), 0, 0)]


def _math(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    fns = (np.exp, np.log, np.sin, np.cos, np.sqrt, lambda v: 1 / np.sqrt(v), np.floor, np.ceil)

    def body(d):
        x = (np.abs(_rand(rng, d)) / 4 + 0.01).astype(d)
        zs = [np.zeros_like(x) for _ in fns]
        launch(k.math_kernel, (1,), *zs, x, SIZE=SIZE)
        rtol = 1e-2 if d == "float16" else 1e-5 if d == "float32" else 1e-10
        return [(f"{d} {i}", z, f(x.astype(np.float64)), rtol, rtol) for i, (z, f) in enumerate(zip(zs, fns))]
    return _each(("float32", "float64"), body)  # test_math_op: Triton's math functions take fp32/fp64


def _fma(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    def body(d):
        x, y, w = _rand(rng, d), _rand(rng, d), _rand(rng, d)
        z = np.zeros_like(x)
        launch(k.fma_kernel, (1,), z, x, y, w, SIZE=SIZE)
        return [(d, z, x.astype(np.float64) * y + w, *((1e-2, 1e-1) if d == "float16" else (1e-6, 1e-5)))]
    return _each(("float16", "float32", "float64"), body)


def _minmax(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    def body(case):
        d, prop = case
        x, y = _rand(rng, d), _rand(rng, d)
        if d in FLOATS:
            x[::7] = np.nan
        zmax, zmin = np.zeros_like(x), np.zeros_like(x)
        launch(k.minmax_kernel, (1,), zmax, zmin, x, y, SIZE=SIZE,
               PROPAGATE_NAN=getattr(k.tl.PropagateNan, prop.upper()))
        if prop == "all" or d not in FLOATS:
            want_max, want_min = np.maximum(x, y), np.minimum(x, y)
        else:  # Triton's NONE: either operand when one is NaN; tested where neither is NaN
            nan = np.isnan(x)
            want_max = np.where(nan, zmax, np.maximum(x, y))
            want_min = np.where(nan, zmin, np.minimum(x, y))
        return [(f"{d} {prop} max", zmax, want_max, 0, 0), (f"{d} {prop} min", zmin, want_min, 0, 0)]
    return _each([("int32", "none"), ("uint8", "none"), ("float32", "none"), ("float32", "all"),
                  ("float16", "all"), ("float64", "none")], body)


def _clamp(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    def body(d):
        out = []
        for n in (1, 100, 128):
            x = _rand(rng, d, 128)
            a, b = _rand(rng, d, 128), _rand(rng, d, 128)
            lo, hi = np.minimum(a, b), np.maximum(a, b)
            z, r = np.zeros_like(x), np.zeros_like(x)
            launch(k.clamp_kernel, (1,), x, lo, hi, z, r, n, BLOCK_SIZE=128)
            want = np.minimum(np.maximum(x, lo), hi)
            out += [(f"{d} n={n}", z[:n], want[:n], 0, 0), (f"{d} ref n={n}", r[:n], want[:n], 0, 0)]
        return out
    return _each(("float16", "float32", "float64"), body)


def _umulhi(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    def body(d):
        x, y = _rand(rng, d, low=0), _rand(rng, d, low=0)  # test_umulhi: int32 in [0, max]
        z = np.zeros_like(x)
        launch(k.umulhi_kernel, (1,), x, y, z, N=SIZE)
        want = ((x.astype(np.int64) * y.astype(np.int64)) >> 32).astype(d)
        return [(d, z, want, 0, 0)]
    return _each(("int32", "uint32"), body)


def _divide(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    def body(d):
        x, y = _rand(rng, d), _rand(rng, d)
        zf, zr = np.zeros_like(x), np.zeros_like(x)
        launch(k.divide_kernel, (1,), zf, zr, x, y, SIZE=SIZE)
        return [(f"{d} fdiv", zf, x / y, 1e-6, 0), (f"{d} div_rn", zr, x / y, 0, 0)]
    return _each(("float32",), body)  # Triton's div_rn is fp32 only


def _precise(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    x, y = rng.random(SIZE).astype(np.float32) + 0.1, rng.random(SIZE).astype(np.float32) + 0.1
    o, r = np.zeros_like(x), np.zeros_like(x)
    launch(k.precise_math_kernel, (1,), x, y, o, r, BLOCK=SIZE)
    want = np.sqrt(x.astype(np.float64) / y).astype(np.float32)
    return [("sqrt_rn(div_rn)", o, np.sqrt(x / y), 0, 0), ("f64 ref", r, want, 0, 0)]


# ---------------------------------------------------------------- casts


CASTS = [("int32", "float32"), ("float32", "int32"), ("int8", "int64"), ("int64", "int8"), ("uint8", "int32"),
         ("int32", "uint16"), ("float32", "float16"), ("float16", "float64"), ("float64", "float32"),
         ("bool", "int32"), ("int32", "bool"), ("float32", "bool"), ("uint32", "float64"), ("float32", "uint8")]


def _cast(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    def body(pair):
        src, dst = pair
        x = _rand(rng, src)
        if np.dtype(dst).kind in "iu" and np.dtype(src).kind == "f":
            info = np.iinfo(dst)
            x = rng.uniform(max(info.min, -1e6), min(info.max, 1e6), SIZE).astype(src)  # in range: no UB
        z = np.zeros(SIZE, dst)
        launch(k.cast_kernel, (1,), x, z, TO_TYPE=None, BITCAST=False, SIZE=SIZE)
        with np.errstate(all="ignore"):
            want = x.astype(dst) if dst != "bool" else x != 0
        return [(f"{src}->{dst}", z, want, *_tol(dst))]
    return _each(CASTS, body)


def _bitcast(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    def body(pair):
        src, dst = pair
        x = _rand(rng, src)
        z = np.zeros(SIZE, dst)
        launch(k.cast_kernel, (1,), x, z, TO_TYPE=None, BITCAST=True, SIZE=SIZE)
        return [(f"{src}->{dst}", z.view(np.uint8), x.view(dst).view(np.uint8), 0, 0)]
    return _each([("float32", "int32"), ("int32", "float32"), ("float16", "int16"), ("uint64", "float64")], body)


def _fp8_roundtrip(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    """Every FP8 code -> f16/bf16/f32 by the implicit conversion of ``tl.store`` and back: exact
    (test_fp8_fpN_roundtrip; like it, codes with an all-ones exponent — NaN, e5m2 inf — are left
    out: inf saturates on the way back, Triton's satfinite)."""
    import ml_dtypes

    codes = np.arange(256, dtype=np.uint8)

    def body(pair):
        f8, wide = pair
        x = codes.view(getattr(ml_dtypes, f8))
        mid = np.zeros(256, wide)
        launch(k.fp8_copy_kernel, (2,), x, mid, 256, BLOCK_SIZE=128)
        back = np.zeros(256, x.dtype)
        launch(k.fp8_copy_kernel, (2,), mid, back, 256, BLOCK_SIZE=128)
        exp_mask = 0x78 if f8 == "float8_e4m3fn" else 0x7C
        keep = (codes & exp_mask) != exp_mask
        return [(f"{f8}->{np.dtype(wide).name}->{f8}", back.view(np.uint8)[keep], codes[keep], 0, 0),
                (f"{f8}->{np.dtype(wide).name}", mid[keep].astype(np.float64), x[keep].astype(np.float64), 0, 0)]
    return _each([(f8, w) for f8 in ("float8_e4m3fn", "float8_e5m2")
                  for w in (np.float16, ml_dtypes.bfloat16, np.float32)], body)


def _cast_fn(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    x = _rand(rng, "int32", low=-30000, high=30000)
    z = np.zeros(SIZE, np.int16)
    launch(k.cast_fn_kernel, (1,), x, z, SIZE=SIZE)
    return [("int32->int16", z, x.astype(np.int16), 0, 0)]


# ---------------------------------------------------------------- memory


def _store_constant(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    out = []
    for n in (1, 1000, 1001):
        z = np.zeros(n + 3, np.int32)
        launch(k.store_constant_kernel, ((n + 255) // 256,), z, n, BLOCK_SIZE=256)
        out.append((f"n={n}", z, np.r_[np.full(n, 2), np.zeros(3)], 0, 0))
    return out


def _zeros_like(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    def body(d):
        x = _rand(rng, d)
        z = np.zeros_like(x)
        launch(k.zeros_like_kernel, (1,), z, x, SIZE=SIZE)
        return [(d, z, np.full(SIZE, 7, d), 0, 0)]
    return _each(("int8", "uint32", "float16", "float64"), body)


def _masked_load(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    def body(d):
        out = []
        for in_size, out_size in ((1, 16), (16, 16), (10, 16), (100, 128)):
            x = _rand(rng, d, in_size)
            z = np.zeros(out_size, d)
            launch(k.masked_load_kernel, (1,), x, z, in_size=in_size, out_size=out_size)
            out.append((f"{d} {in_size}/{out_size}", z, np.r_[x, np.ones(out_size - in_size, d)], 0, 0))
        return out
    return _each(("int8", "int32", "uint16", "float16", "float32", "float64"), body)


def _cache_modifier(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    out = []
    for cache in ("", ".ca", ".cg", ".cv"):
        x = rng.random(128).astype(np.float32)
        z = np.zeros_like(x)
        launch(k.cache_modifier_kernel, (1,), z, x, CACHE=cache)
        out.append((f"cache={cache!r}", z, x, 0, 0))
    return out


def _masked_store_2d(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    out = []
    for m, n in ((1, 1), (10, 31), (16, 16)):
        x = rng.standard_normal(m * n).astype(np.float32)
        z = np.full(m * n + 5, -1.0, np.float32)
        launch(k.masked_store_2d_kernel, (1,), z, x, m, n, BLOCK_M=16, BLOCK_N=32)
        out.append((f"{m}x{n}", z, np.r_[x * 2, np.full(5, -1.0)], 0, 0))
    return out


# ---------------------------------------------------------------- shapes


def _index1d(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    def body(d):
        x = _rand(rng, d, 32)
        z = np.zeros((32, 32), d)
        launch(k.index1d_kernel, (1,), z, x, SIZE=32)
        with np.errstate(over="ignore"):
            return [(d, z, x[None, :] + x[:, None], *_tol(d))]
    return _each(("int32", "uint8", "float32", "float16"), body)


def _broadcast(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    def body(d):
        x, y = _rand(rng, d, 32 * 64).reshape(32, 64), _rand(rng, d, 64)
        z = np.zeros((32, 64), d)
        launch(k.broadcast_kernel, (1,), x, y, z, M=32, N=64)
        z2 = np.zeros((32, 64), d)
        launch(k.broadcast_to_kernel, (1,), z2, y, M=32, N=64)
        return [(d, z, np.broadcast_to(y, (32, 64)), 0, 0), (f"{d} broadcast_to", z2, np.broadcast_to(y, (32, 64)), 0, 0)]
    return _each(("int8", "int64", "float16", "float32"), body)


def _trans(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    def body(d):
        x = _rand(rng, d, 16 * 32).reshape(16, 32)
        z = np.zeros((32, 16), d)
        launch(k.trans_kernel, (1,), z, x, M=16, N=32)
        return [(d, z, x.T, 0, 0)]
    return _each(("int32", "float16", "float32"), body)


def _permute(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    x = rng.standard_normal(2 * 4 * 8).astype(np.float32)
    z = np.zeros(2 * 4 * 8, np.float32)
    launch(k.permute_kernel, (1,), z, x, A=2, B=4, C=8)
    return [("(2,0,1)", z, np.transpose(x.reshape(2, 4, 8), (2, 0, 1)).ravel(), 0, 0)]


def _reshape(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    x = rng.standard_normal(8 * 16).astype(np.float32)
    z = np.zeros(8, np.float32)
    launch(k.reshape_kernel, (1,), z, x, M=8, N=16)
    return [("8x16", z, x.reshape(8, 16).sum(axis=1), 1e-5, 1e-5)]


def _expand_dims(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    x = rng.standard_normal(16).astype(np.float32)
    z = np.zeros((2, 16, 4), np.float32)
    launch(k.expand_dims_kernel, (1,), z, x, N=16)
    return [("2x16x4", z, np.broadcast_to(x[None, :, None], (2, 16, 4)), 0, 0)]
