"""Compatibility harness for Triton's ``test_core.py``: a catalogue of its kernel kinds through eggpu.

``bench/compat_core_kernels.py`` holds small ``@triton.jit`` kernels, one per feature that Triton's
``python/test/unit/language/test_core.py`` tests (binary and unary ops per dtype, shifts, compares,
where, math, casts, reductions with axis/keep_dims, scans, atomics, broadcast, constexpr branches,
while/for loops, masked loads with ``other=``, dot, join/split, histogram, inline asm, ...), written
anew in that file's style with only the import and decorator changed. Each :class:`~bench.compat.Case`
below launches one kernel over the dtypes the Triton test covers and compares with numpy, in the
interpreter and through the compiled CPU lowering (``run_cpu``), exactly as ``bench.compat`` does
for the tutorials.

Cases whose feature the goal of issue #11 leaves out (tensor descriptors, FP8, multi-CTA) are not
in the catalogue; ``inline_asm_elementwise`` is in it but is GPU-only by design (PTX), so it is
listed under :data:`GPU_ONLY` and not counted in the pass rate.

    python -m bench.compat_core [--only NAME ...] [--triton] [--json OUT.json]

``--triton`` also compiles every launch with Triton (PTX, sm_90, no GPU needed), which shows
that the catalogue is Triton code.

The last run is kept in ``bench/results/compat_core.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from bench import compat, dual
from bench.compat import Case, Check, Launch

SOURCE = Path(__file__).with_name("compat_core_kernels.py")

INTS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
FLOATS = ("float16", "float32", "float64")
GPU_ONLY = frozenset({"inline_asm_elementwise"})
SIZE = 128


def load(backend: str) -> ModuleType:
    return dual.load(SOURCE, backend, "compat_core_kernels")


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
    return _each(FLOATS, body)


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
    return _each(("float32", "float64"), body)


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
    z = np.zeros((2, 16, 3), np.float32)
    launch(k.expand_dims_kernel, (1,), z, x, N=16)
    return [("2x16x3", z, np.broadcast_to(x[None, :, None], (2, 16, 3)), 0, 0)]


# ---------------------------------------------------------------- reductions and scans


def _reduce1d(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    def body(d):
        x = _rand(rng, d, 128, low=-50 if d.startswith("int") or d in FLOATS else 0, high=50)
        dt = np.dtype(d)
        zs = [np.zeros(1, d), np.zeros(1, d), np.zeros(1, d), np.zeros(1, np.int32), np.zeros(1, np.int32)]
        launch(k.reduce1d_kernel, (1,), *zs, x, BLOCK=128)
        # Triton sums small integers in int32 and stores the result back into the pointee dtype
        s = x.astype(np.float64 if dt.kind == "f" else np.int64).sum()
        want_sum = np.array([s]).astype(d)
        # float sums: the summation order differs from numpy's; allow a few ulps of sum(|x|)
        rtol, atol = (1e-2, 1.0) if d == "float16" else (1e-5, 1e-6 * float(np.abs(x).sum())) \
            if d == "float32" else _tol(d)
        return [(f"{d} sum", zs[0], want_sum, rtol, atol), (f"{d} max", zs[1], [x.max()], 0, 0),
                (f"{d} min", zs[2], [x.min()], 0, 0), (f"{d} argmax", zs[3], [x.argmax()], 0, 0),
                (f"{d} argmin", zs[4], [x.argmin()], 0, 0)]
    return _each(INTS + FLOATS, body)


def _reduce2d(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    def body(case):
        d, axis, keep = case
        x = _rand(rng, d, 16 * 32, low=-10 if d != "uint8" else 0, high=10).reshape(16, 32)
        z = np.zeros(16 if axis == 1 else 32, d)
        launch(k.reduce2d_kernel, (1,), x, z, BLOCK_M=16, BLOCK_N=32, AXIS=axis, KEEP_DIMS=keep)
        return [(f"{d} axis={axis} keep={keep}", z, x.sum(axis=axis).astype(d), *_tol(d))]
    return _each([(d, a, kd) for d in ("int32", "float32") for a in (0, 1) for kd in (False, True)]
                 + [("int8", 1, False), ("float16", 0, False)], body)


def _reduce_all(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    def body(d):
        x = _rand(rng, d, 8 * 16).reshape(8, 16)
        z = np.zeros(1, d)
        launch(k.reduce_all_kernel, (1,), x, z, BLOCK_M=8, BLOCK_N=16)
        return [(d, z, [x.max()], 0, 0)]
    return _each(("int64", "uint16", "float32"), body)


def _max_indices(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    x = rng.standard_normal((8, 32)).astype(np.float32)
    zv, zi = np.zeros(8, np.float32), np.zeros(8, np.int32)
    launch(k.max_with_indices_kernel, (1,), x, zv, zi, BLOCK_M=8, BLOCK_N=32)
    return [("values", zv, x.max(axis=1), 0, 0), ("indices", zi, x.argmax(axis=1), 0, 0)]


def _sum_dtype(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    z = np.zeros(1, np.int32)
    launch(k.sum_dtype_kernel, (1,), z, BLOCK=1024)
    return [("1024 int8 ones in int32", z, [1024], 0, 0)]


def _generic_reduce(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    # a*2+b is not associative, so only an order-insensitive input is checked: all equal values
    x = np.ones(4, np.int32)
    z = np.zeros(1, np.int32)
    launch(k.generic_reduce_kernel, (1,), x, z, BLOCK=4)
    # tree order ((1*2+1)*2 + (1*2+1)) = 9, the left fold gives 15: Triton reduces as a tree
    return [("tree of 4", z, [9], 0, 0)]


def _chained(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    x = rng.standard_normal(4 * 8 * 16).astype(np.float32)
    z = np.zeros(4, np.float32)
    launch(k.chained_reductions_kernel, (1,), x, z, dim_0=4, dim_1=8, dim_2=16)
    return [("4x8x16", z, x.reshape(4, 8, 16).sum(axis=(1, 2)), 1e-4, 1e-4)]


def _cumsum(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    def body(case):
        d, axis = case
        x = _rand(rng, d, 16 * 32, low=-10, high=10).reshape(16, 32)
        z = np.zeros_like(x)
        launch(k.cumsum_kernel, (1,), x, z, BLOCK_M=16, BLOCK_N=32, AXIS=axis)
        return [(f"{d} axis={axis}", z, np.cumsum(x, axis=axis).astype(d), 1e-4, 1e-4)]
    return _each([("int32", 0), ("int32", 1), ("float32", 0), ("float32", 1), ("int64", 1)], body)


def _cumprod(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    x = rng.uniform(0.5, 1.5, 64).astype(np.float32)
    z = np.zeros_like(x)
    launch(k.cumprod_kernel, (1,), x, z, BLOCK=64)
    return [("reverse", z, np.cumprod(x[::-1])[::-1], 1e-5, 1e-6)]


def _assoc_scan(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    a, b = rng.uniform(0.5, 1.0, 64).astype(np.float32), rng.standard_normal(64).astype(np.float32)
    z = np.zeros_like(a)
    launch(k.associative_scan_kernel, (1,), a, b, z, BLOCK=64)
    want, h = np.zeros(64), 0.0
    for i in range(64):
        h = h * a[i] + b[i]
        want[i] = h
    return [("h = h*a + b", z, want, 1e-4, 1e-5)]


# ---------------------------------------------------------------- atomics


def _atomic_rmw(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    def body(case):
        d, sem = case
        n = 37
        x = _rand(rng, d, n, low=-20 if not d.startswith("u") else 0, high=20)
        za, zmax, zmin = np.zeros(1, d), np.full(1, x.min(), d), np.full(1, x.max(), d)
        old = np.zeros(n, d)
        launch(k.atomic_rmw_kernel, (n,), za, zmax, zmin, old, x, SEM=sem)
        # the adds chain 0 -> ... -> total in some order: the values read ({old} and the total)
        # are the values written ({old + x}) and the initial 0, as multisets
        out = [(f"{d} add", za, [x.sum()], *((1e-5, 1e-4) if d == "float32" else (0, 0))),
               (f"{d} max", zmax, [x.max()], 0, 0), (f"{d} min", zmin, [x.min()], 0, 0)]
        if d != "float32":
            out.append((f"{d} olds", np.sort(np.r_[old, za]), np.sort(np.r_[old + x, np.zeros(1, d)]), 0, 0))
        return out
    # test_atomic_rmw's sem values (None is Triton's default)
    return _each([(d, sem) for d in ("int32", "uint32", "int64", "float32")
                  for sem in (None, "acquire", "release", "acq_rel", "relaxed")], body)


def _tensor_atomic(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    out = []
    for m in (1, 33, 64):
        x = rng.integers(-100, 100, (m, 16)).astype(np.int32)
        z = np.zeros(16, np.int32)
        launch(k.tensor_atomic_kernel, ((m + 15) // 16,), z, x, m, N=16, BLOCK_M=16)
        out.append((f"m={m}", z, x.sum(axis=0), 0, 0))
    return out


def _masked_atomic(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    out = []
    for n in (1, 1000, 1001):
        x = rng.standard_normal(n).astype(np.float32)
        z = np.zeros(4, np.float32)
        launch(k.masked_atomic_kernel, ((n + 127) // 128,), z, x, n, BLOCK=128)
        want = np.array([x[i::4].astype(np.float64).sum() for i in range(4)])
        out.append((f"n={n}", z, want, 1e-4, 1e-4))
    return out


def _atomic_cas(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    out = []
    for sem in ("acquire", "release", "acq_rel", "relaxed"):
        lock, x = np.zeros(1, np.int32), np.zeros(1, np.int32)
        launch(k.atomic_cas_kernel, (32,), lock, x, SEM=sem)
        out += [(f"{sem} count", x, [32], 0, 0), (f"{sem} lock", lock, [0], 0, 0)]
    return out


def _bitwise_atomic(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    x = (1 << np.arange(16)).astype(np.int32) | rng.integers(0, 2**16, 16).astype(np.int32) << 16
    z_or, z_and, z_xor = np.zeros(1, np.int32), np.full(1, -1, np.int32), np.zeros(4, np.int32)
    old = np.zeros((16, 4), np.int32)
    launch(k.bitwise_atomic_kernel, (16,), z_or, z_and, z_xor, old, x)
    want_xor = np.bitwise_xor.reduce(x)
    # the old values of the xors chain 0 -> ... -> total in program order
    chain = np.bitwise_xor.accumulate(np.r_[0, x])[:-1]
    return [("or", z_or, [np.bitwise_or.reduce(x)], 0, 0), ("and", z_and, [np.bitwise_and.reduce(~x)], 0, 0),
            ("xor", z_xor, np.full(4, want_xor), 0, 0), ("xor olds", old, np.repeat(chain[:, None], 4, 1), 0, 0)]


# ---------------------------------------------------------------- control flow


def _if_else(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    out = []
    for c in (True, False):
        t, f, o = np.array([7], np.int32), np.array([9], np.int32), np.zeros(1, np.int32)
        launch(k.if_else_kernel, (1,), np.array([c]), t, f, o)
        out.append((f"cond={c}", o, [7 if c else 9], 0, 0))
    return out


def _if_return(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    out = []
    for mode, exit_early, cond in (("dynamic", True, False), ("dynamic", False, False), ("static", False, True),
                                   ("static", False, False)):
        o = np.full(1, -1, np.int32)
        launch(k.if_return_kernel, (1,), np.array([exit_early]), o, cond=cond, mode=mode)
        out.append((f"{mode} {exit_early} {cond}", o, [0 if (exit_early or cond) else 1], 0, 0))
    return out


def _constexpr_if(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    out = []
    for flag, n in ((True, 8), (False, 8), (False, 4)):
        o = np.zeros(n, np.int32)
        launch(k.constexpr_if_kernel, (1,), o, FLAG=flag, N=n)
        a = np.arange(n)
        out.append((f"{flag} {n}", o, a * 2 if flag else a + 100 if n > 4 else a - 1, 0, 0))
    return out


def _nested_if(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    x = np.array([-5, 0, 3, 10, 11, 50], np.int32)
    o = np.zeros_like(x)
    launch(k.nested_if_kernel, (x.size,), x, o, N=1)
    return [("branches", o, np.where(x > 0, np.where(x > 10, x * 3, x * 2), -x), 0, 0)]


def _while(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    out = []
    for bound, cutoff in ((10, 4), (0, 0), (5, 9)):
        init_i = np.array([3], np.int32)
        oi, oinit, oj = np.zeros(1, np.int32), np.zeros(1, np.int32), np.zeros(1, np.int32)
        launch(k.while_kernel, (1,), init_i, np.array([bound], np.int32), np.array([cutoff], np.int32), oi, oinit, oj)
        out += [(f"{bound},{cutoff} i", oi, [3 + (cutoff < bound)], 0, 0), (f"{bound},{cutoff} j", oj, [bound], 0, 0),
                (f"{bound},{cutoff} init", oinit, [3 if bound > 0 else 0], 0, 0)]
    return out


def _for_iv(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    out = []
    for lo, hi, step in ((-5, 278, 63), (0, 10, 1), (10, 0, 1), (2**34, 2**34 + 10, 3)):
        o = np.zeros(1, np.int64)
        launch(k.for_iv_kernel, (1,), o, lo, hi, step)
        out.append((f"range({lo},{hi},{step})", o, [sum(range(lo, hi, step))], 0, 0))
    return out


def _nested_for(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    o = np.zeros(16, np.float32)
    launch(k.nested_for_kernel, (1,), o, A=5, B=16)
    return [("triangular", o, np.full(16, sum(j for i in range(5) for j in range(i + 1))), 0, 0)]


def _static_range(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    x = _rand(rng, "int32", 64, low=-100, high=100)
    o = np.zeros_like(x)
    launch(k.static_range_kernel, (1,), o, x, N=64, K=4)
    want = x.copy()
    for i in range(4):
        want = want * 2 + i
    return [("4 unrolled", o, want, 0, 0)]


def _tl_range(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    out = []
    for n in (0, 1, 7):
        x = rng.standard_normal((max(n, 1), 32)).astype(np.float32)
        o = np.full(32, -1, np.float32)
        launch(k.tl_range_kernel, (1,), o, x, n, N=32)
        out.append((f"n={n}", o, x[:n].sum(axis=0), 1e-5, 1e-5))
    return out


def _call(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    x = rng.standard_normal(32).astype(np.float32)
    o = np.zeros_like(x)
    launch(k.call_kernel, (1,), o, x, N=32)
    return [("helpers", o, x * 2 + x * 3, 1e-6, 1e-6)]


def _program_ids(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    g = (3, 2, 4)
    o = np.zeros(24, np.int32)
    launch(k.program_ids_kernel, g, o)
    want = np.zeros(24, np.int64)
    for p2 in range(g[2]):
        for p1 in range(g[1]):
            for p0 in range(g[0]):
                want[(p2 * g[1] + p1) * g[0] + p0] = p0 * 100 + p1 * 10 + p2 + 24000
    return [("3x2x4", o, want, 0, 0)]


def _scalar_args(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    out = []
    for a, b, c, flag in ((1, 16, 5, True), (3, 1, 5, False), (2**40, 7, 1, True)):
        o = np.zeros(1, np.int64)
        launch(k.scalar_args_kernel, (1,), o, a, b, c, flag)
        out.append((f"{a},{b},{c},{flag}", o, [a * 2 + b if flag else c], 0, 0))
    return out


def _side_effect_sum(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    x = rng.standard_normal(64).astype(np.float32)
    z = np.zeros(2, np.float32)
    launch(k.side_effect_sum_kernel, (1,), z, x, N=64)
    return [("sum and max", z, [(x * 1.5).sum(), (x - 1).max()], 1e-5, 1e-5)]


def _temp_var(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    z = np.zeros(16, np.int32)
    launch(k.temp_var_in_loop_kernel, (1,), z, N=5, BLOCK=16)
    acc, tmp = 0, 1
    for _ in range(5):
        tmp = tmp * 2 + 1
        acc += tmp
    return [("5 iterations", z, np.full(16, acc), 0, 0)]


def _static(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    z = np.zeros(16, np.int32)
    launch(k.static_kernel, (1,), z, N=8)
    return [("N=8", z, np.arange(16) + 8, 0, 0)]


# ---------------------------------------------------------------- join/split/cat, histogram, gather, flip


def _join_split(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    x, y = rng.standard_normal(32).astype(np.float32), rng.standard_normal(32).astype(np.float32)
    z, a, b = np.zeros(64, np.float32), np.zeros(32, np.float32), np.zeros(32, np.float32)
    launch(k.join_split_kernel, (1,), x, y, z, a, b, N=32)
    return [("join", z, np.stack([x, y], axis=-1).ravel(), 0, 0), ("split a", a, x, 0, 0), ("split b", b, y, 0, 0)]


def _interleave(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    x, y = rng.integers(0, 100, 32).astype(np.int32), rng.integers(0, 100, 32).astype(np.int32)
    z = np.zeros(64, np.int32)
    launch(k.interleave_kernel, (1,), x, y, z, N=32)
    return [("interleave", z, np.stack([x, y], axis=-1).ravel(), 0, 0)]


def _cat(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    x, y = rng.integers(0, 100, 32).astype(np.int32), rng.integers(0, 100, 32).astype(np.int32)
    z = np.zeros(64, np.int32)
    launch(k.cat_kernel, (1,), x, y, z, N=32)
    # can_reorder=True lets the order be any permutation: compare the sorted values
    return [("multiset", np.sort(z), np.sort(np.r_[x, y]), 0, 0)]


def _histogram(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    x = rng.integers(0, 16, 256).astype(np.int32)
    z = np.zeros(16, np.int32)
    launch(k.histogram_kernel, (1,), x, z, M=256, N=16)
    return [("16 bins", z, np.bincount(x, minlength=16), 0, 0)]


def _gather(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    src = rng.standard_normal(32).astype(np.float32)
    idx = rng.integers(0, 32, 16).astype(np.int32)
    z = np.zeros(16, np.float32)
    launch(k.gather_kernel, (1,), src, idx, z, N=32, K=16)
    return [("1-D", z, src[idx], 0, 0)]


def _flip(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    x = rng.standard_normal(16 * 8).astype(np.float32)
    z = np.zeros_like(x)
    launch(k.flip_kernel, (1,), x, z, N=16, M=8)
    return [("last axis", z, x.reshape(16, 8)[:, ::-1].ravel(), 0, 0)]


# ---------------------------------------------------------------- dot


def _dot(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    def body(case):
        d, acc, trans = case
        m, n, kk = 16, 32, 16
        x = rng.standard_normal((m, kk)).astype(d)
        y = rng.standard_normal((n, kk) if trans else (kk, n)).astype(d)
        w = rng.standard_normal((m, n)).astype(np.float32)
        z = np.zeros((m, n), np.float32)
        launch(k.dot_kernel, (1,), x, y, z, w, M=m, N=n, K=kk, ADD_ACC=acc, TRANS_Y=trans)
        want = x.astype(np.float64) @ (y.T if trans else y).astype(np.float64) + (w if acc else 0)
        return [(f"{d} acc={acc} trans={trans}", z, want, 1e-2, 1e-2)]
    return _each([("float16", False, False), ("float16", True, False), ("float16", False, True),
                  ("float32", True, True)], body)


def _dot_int(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    x = rng.integers(-100, 100, (16, 32)).astype(np.int8)
    y = rng.integers(-100, 100, (32, 16)).astype(np.int8)
    z = np.zeros((16, 16), np.int32)
    launch(k.dot_out_dtype_kernel, (1,), x, y, z, M=16, N=16, K=32)
    return [("int8 -> int32", z, x.astype(np.int32) @ y.astype(np.int32), 0, 0)]


def _dot3d(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    x = rng.standard_normal((2, 16, 16)).astype(np.float16)
    y = rng.standard_normal((2, 16, 32)).astype(np.float16)
    z = np.zeros((2, 16, 32), np.float32)
    launch(k.dot3d_kernel, (1,), x, y, z, B=2, M=16, N=32, K=16)
    return [("2x16x16 @ 2x16x32", z, x.astype(np.float64) @ y.astype(np.float64), 1e-2, 1e-2)]


def _default_args(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    r0, r1 = np.zeros(1, np.int32), np.zeros(1, np.int32)
    launch(k.default_args_kernel, (1,), r0, r1)
    return [("helper default", r0, [7], 0, 0), ("kernel default", r1, [3], 0, 0)]


def _short_circuit(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    out = []
    for x, flag in ((5, True), (0, False), (100, True), (-3, False), (10, True)):
        o = np.zeros(2, np.int32)
        launch(k.short_circuit_kernel, (1,), np.array([x], np.int32), o, FLAG=flag)
        first = 1 if 0 < x < 10 else 2 if x in (0, 100) else 3
        out.append((f"x={x} flag={flag}", o, [first, 5 if flag else 4], 0, 0))
    return out


def _unsigned_abs(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    x, y = _rand(rng, "uint32"), _rand(rng, "int32")
    o1, o2 = np.zeros_like(x), np.zeros_like(y)
    launch(k.unsigned_abs_kernel, (1,), o1, o2, x, y, SIZE=SIZE)
    with np.errstate(over="ignore"):
        return [("uint32", o1, x, 0, 0), ("int32", o2, np.abs(-y), 0, 0)]


def _tensor_atomic_cas(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    x = np.tile(np.array([0, 1], np.int64), 64)
    launch(k.tensor_atomic_cas_kernel, (1,), x, SIZE=128)
    return [("cas 0 -> 2", x, np.tile(np.array([2, 1], np.int64), 64), 0, 0)]


def _ravel_view(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    x = rng.standard_normal((8, 16)).astype(np.float32)
    z1, z2 = np.zeros(128, np.float32), np.zeros(128, np.float32)
    launch(k.ravel_view_kernel, (1,), x, z1, z2, M=8, N=16)
    return [("ravel", z1, x.ravel(), 0, 0), ("reshape", z2, x.ravel(), 0, 0)]


def _argmax_keep_dims(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    x = rng.standard_normal((8, 32)).astype(np.float32)
    z = np.zeros(8, np.int32)
    launch(k.argmax_keep_dims_kernel, (1,), x, z, M=8, N=32)
    return [("axis=1", z, x.argmax(axis=1), 0, 0)]


def _zero_strided(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    x = rng.standard_normal(64).astype(np.float32)
    z = np.zeros(64, np.float32)
    launch(k.zero_strided_kernel, (1,), x, z, N=64, STRIDE=0)
    return [("stride 0", z, x[0] + np.arange(64, dtype=np.float32), 0, 0)]


def _scalar_masked_load(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    out = []
    for n in (0, 1):
        z = np.zeros(1, np.float32)
        launch(k.scalar_masked_load_kernel, (1,), np.array([4.5], np.float32), z, n)
        out.append((f"n={n}", z, [4.5 if n else -1.0], 0, 0))
    return out


# ---------------------------------------------------------------- inline asm (GPU only)


def _inline_asm(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    x = rng.integers(0, 2**31, SIZE).astype(np.uint32).view(np.int32)
    y = rng.integers(0, 2**31, SIZE).astype(np.uint32).view(np.int32)
    z = np.zeros(SIZE, np.int32)
    launch(k.inline_asm_kernel, (1,), x, y, z, n=17, BLOCK=SIZE)
    hi, lo = y.view(np.uint32).astype(np.uint64), x.view(np.uint32).astype(np.uint64)
    want = (((hi << 32 | lo) << 17) >> 32).astype(np.uint32).view(np.int32)
    return [("shf.l.wrap", z, want, 0, 0)]


CASES: tuple[Case, ...] = (
    Case("empty_kernel", "test_empty_kernel", _empty),
    Case("neg", "test_unary_op -x", _unary("neg_kernel", np.negative, INTS + FLOATS)),
    Case("invert", "test_unary_op ~x", _unary("invert_kernel", np.invert, INTS)),
    Case("add", "test_bin_op +", _binary("add_kernel", _arith("add"), _same(INTS + FLOATS) + MIXED)),
    Case("sub", "test_bin_op -", _binary("sub_kernel", _arith("sub"), _same(INTS + FLOATS) + MIXED)),
    Case("mul", "test_bin_op *", _binary("mul_kernel", _arith("mul"), _same(INTS + FLOATS) + MIXED)),
    Case("truediv", "test_bin_op /", _truediv),
    Case("floordiv", "test_bin_op //", _binary("floordiv_kernel", _arith("floordiv"), _same(INTS + FLOATS),
                                               y_nonzero=True)),
    Case("mod", "test_bin_op %", _binary("mod_kernel", _arith("mod"), _same(INTS + FLOATS), y_nonzero=True)),
    Case("broadcast_lhs", "test_bin_op (broadcast lhs)", _broadcast_lhs),
    Case("scalar_rhs", "test_bin_op (constexpr scalar rhs)", _scalar_rhs),
    Case("bitwise", "test_bitwise_op", _bitwise),
    Case("shift", "test_shift_op", _shift),
    Case("compare", "test_compare_op", _compare),
    Case("broadcast", "test_broadcast", _broadcast),
    Case("where", "test_where", _where),
    Case("where_scalar_pointer", "test_where (scalar pointers)", _where_scalar_pointer),
    Case("where_scalar_condition", "test_where_broadcast", _where_scalar_condition),
    Case("math", "test_math_op", _math),
    Case("abs", "test_abs", _unary("abs_kernel", np.abs, INTS + FLOATS)),
    Case("fma", "test_math_fma_op", _fma),
    Case("minmax", "test_maximum_minimum (propagate_nan)", _minmax),
    Case("clamp", "test_clamp", _clamp),
    Case("umulhi", "test_umulhi", _umulhi),
    Case("divide", "test_math_divide_op", _divide),
    Case("precise_math", "test_precise_math", _precise),
    Case("cast", "test_cast", _cast),
    Case("bitcast", "test_cast (bitcast)", _bitcast),
    Case("cast_fn", "test_cast (tl.cast)", _cast_fn),
    Case("store_constant", "test_store_constant", _store_constant),
    Case("zeros_like", "test_zeros_like", _zeros_like),
    Case("masked_load", "test_masked_load", _masked_load),
    Case("cache_modifier", "test_load_cache_modifier", _cache_modifier),
    Case("masked_store_2d", "test_masked_load_shared_memory (2-D masks)", _masked_store_2d),
    Case("index1d", "test_index1d", _index1d),
    Case("trans", "test_trans_2d", _trans),
    Case("permute", "test_permute", _permute),
    Case("reshape", "test_reshape", _reshape),
    Case("expand_dims", "test_expand_dims", _expand_dims),
    Case("reduce1d", "test_reduce1d", _reduce1d),
    Case("reduce2d", "test_reduce2d (axis, keep_dims)", _reduce2d),
    Case("reduce_all", "test_reduce (axis=None)", _reduce_all),
    Case("max_indices", "test_reduce (return_indices)", _max_indices),
    Case("sum_dtype", "test_sum_dtype", _sum_dtype),
    Case("generic_reduce", "test_generic_reduction (tl.reduce)", _generic_reduce),
    Case("chained_reductions", "test_chained_reductions", _chained),
    Case("cumsum", "test_scan2d (cumsum)", _cumsum),
    Case("cumprod", "test_scan2d (cumprod reverse)", _cumprod),
    Case("associative_scan", "test_scan2d (linear_recurrence)", _assoc_scan),
    Case("atomic_rmw", "test_atomic_rmw", _atomic_rmw),
    Case("tensor_atomic", "test_tensor_atomic_rmw", _tensor_atomic),
    Case("masked_atomic", "test_tensor_atomic_add_non_exclusive_offset", _masked_atomic),
    Case("atomic_cas", "test_atomic_cas", _atomic_cas),
    Case("bitwise_atomic", "test_atomic_rmw (or)", _bitwise_atomic),
    Case("if_else", "test_if_else", _if_else),
    Case("if_return", "test_if_return", _if_return),
    Case("constexpr_if", "test_constexpr_if_return", _constexpr_if),
    Case("nested_if", "test_nested_if_else_return", _nested_if),
    Case("while", "test_while", _while),
    Case("for_iv", "test_for_iv", _for_iv),
    Case("nested_for", "test_nested_for", _nested_for),
    Case("static_range", "test_static_range", _static_range),
    Case("tl_range", "test_tl_range", _tl_range),
    Case("call", "test_noinline / test_call", _call),
    Case("program_ids", "test_num_programs", _program_ids),
    Case("scalar_args", "test_value_specialization", _scalar_args),
    Case("side_effect_sum", "test_side_effectful_reduction", _side_effect_sum),
    Case("temp_var", "test_temp_var_in_loop", _temp_var),
    Case("static", "test_static_assert / constexpr", _static),
    Case("join_split", "test_join / test_split", _join_split),
    Case("interleave", "test_interleave", _interleave),
    Case("cat", "test_cat", _cat),
    Case("histogram", "test_histogram", _histogram),
    Case("gather", "test_gather", _gather),
    Case("flip", "test_flip", _flip),
    Case("dot", "test_dot (acc, trans)", _dot),
    Case("dot_int8", "test_dot (int8, out_dtype)", _dot_int),
    Case("dot3d", "test_dot3d", _dot3d),
    Case("default_args", "test_default", _default_args),
    Case("short_circuit", "test_short_circuiting / test_constexpr_not_op", _short_circuit),
    Case("unsigned_abs", "test_unsigned_name_mangling", _unsigned_abs),
    Case("tensor_atomic_cas", "test_tensor_atomic_cas", _tensor_atomic_cas),
    Case("ravel_view", "test_ravel / test_reshape", _ravel_view),
    Case("argmax_keep_dims", "test_reduce (argmax keep_dims)", _argmax_keep_dims),
    Case("zero_strided", "test_zero_strided_tensors", _zero_strided),
    Case("scalar_masked_load", "test_load_scalar_with_mask", _scalar_masked_load),
    Case("inline_asm_elementwise", "test_inline_asm", _inline_asm),
)
BY_NAME = {c.name: c for c in CASES}


def run_case(case: Case, mode: str, seed: int = 0) -> str | None:
    """None when ``case`` matches numpy in ``mode``, else why not (one line)."""
    return compat.run_case(case, mode, seed, loader=load)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", default=None, help="case names (default: all)")
    ap.add_argument("--triton", action="store_true", help="also compile every launch with Triton (PTX, sm_90)")
    ap.add_argument("--json", type=Path, default=None, help="write the results as JSON")
    ns = ap.parse_args(argv)
    cases = [BY_NAME[n] for n in ns.only] if ns.only else list(CASES)
    rows = []
    for case in cases:
        t0 = time.perf_counter()
        res = {mode: run_case(case, mode) for mode in compat.MODES}
        if ns.triton:
            res["triton"] = compat.triton_compiles(case, loader=load)
        ok = all(res[m] is None for m in compat.MODES)
        rows.append({"case": case.name, "test_core": case.tutorial, "pass": ok, "gpu_only": case.name in GPU_ONLY,
                     **res, "seconds": round(time.perf_counter() - t0, 1)})
        why = "" if ok else "  " + " | ".join(f"{m}: {res[m]}" for m in compat.MODES if res[m] is not None)
        tri = "" if not ns.triton else f"  [triton: {'ok' if res['triton'] is None else res['triton']}]"
        print(f"{'PASS' if ok else 'FAIL'}  {case.tutorial:<45} {case.name}{tri}{why}", flush=True)
    counted = [r for r in rows if not r["gpu_only"]]
    passed = sum(r["pass"] for r in counted)
    tri = "" if not ns.triton else f"; Triton compiles {sum(r['triton'] is None for r in rows)}/{len(rows)}"
    print(f"\n{passed}/{len(counted)} test_core-style kernels match numpy in interpret and run_cpu{tri} "
          f"({100 * passed / max(len(counted), 1):.0f} %; GPU-only, not counted: {sorted(GPU_ONLY)})")
    if ns.json:
        ns.json.write_text(json.dumps({"passed": passed, "total": len(counted), "cases": rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
