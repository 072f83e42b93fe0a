"""Triton's spellings as first-class names: dtypes, ``tl.math``, tensor methods, Triton's keyword
arguments, hints that do not change results, string/None constexprs — and one clear compile error
for every Triton name eggpu does not have. Everything is interpreted and compared with numpy."""

from __future__ import annotations

import inspect
import re

import numpy as np
import pytest

import eggpu
import eggpu.language as tl
from eggpu.kernel_macro.diagnostics import KernelCompileError

FILE = __file__

# ---------------------------------------------------------------- dtypes


TRITON_DTYPES = {
    "int1": tl.bool, "int8": tl.i8, "int16": tl.i16, "int32": tl.i32, "int64": tl.i64, "uint8": tl.u8,
    "uint16": tl.u16, "uint32": tl.u32, "uint64": tl.u64, "float16": tl.f16, "bfloat16": tl.bf16,
    "float32": tl.f32, "float64": tl.f64,
}


@pytest.mark.parametrize("name", list(TRITON_DTYPES))
def test_triton_dtype_names_are_the_eggpu_dtypes(name):
    assert getattr(tl, name) is TRITON_DTYPES[name]
    assert tl.dtype(name) is TRITON_DTYPES[name]
    assert isinstance(getattr(tl, name), tl.dtype)


def test_tl_dtype():
    assert tl.dtype("f32") is tl.float32 and tl.dtype(tl.i8) is tl.int8
    assert not isinstance(3, tl.dtype)
    with pytest.raises(TypeError, match=r"tl\.dtype\('float33'\): unknown dtype"):
        tl.dtype("float33")


@pytest.mark.parametrize("name,amd", [("float8e4b8", "e4m3fnuz"), ("float8e5b16", "e5m2fnuz")])
def test_amd_fp8_names_say_not_supported(name, amd):
    short = name.replace("float8", "fp8")
    only = (rf"{short} \(AMD's {amd}\) is not supported on NVIDIA GPUs, as in Triton \('type {short} not supported "
            rf"in this architecture'\); the FP8 dtypes are tl\.float8e4nv, tl\.float8e5 and tl\.float8e4b15")
    with pytest.raises(AttributeError, match=rf"^tl\.{name} is not supported by eggpu: {only}"):
        getattr(tl, name)
    with pytest.raises(TypeError, match=rf"tl\.dtype\('{name}'\): {only}"):
        tl.dtype(name)


def test_ocp_fp8_names_are_the_storage_dtypes():
    assert tl.float8e4nv is tl.fp8e4nv and tl.float8e5 is tl.fp8e5 and tl.float8e4b15 is tl.fp8e4b15
    assert tl.dtype("float8e4b15") is tl.fp8e4b15
    assert tl.dtype("float8e5") is tl.fp8e5 and tl.dtype("fp8e4nv") is tl.fp8e4nv


def test_unsupported_function_outside_a_kernel():
    with pytest.raises(AttributeError, match=r"^tl\.block_type is not supported by eggpu: eggpu block types are not "):
        tl.block_type  # noqa: B018
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        tl.no_such_name  # noqa: B018


@eggpu.kernel
def triton_typed(x_ptr: tl.Pointer[tl.float32], y_ptr: tl.Pointer[tl.int64], n: tl.int32,
                 BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.static_assert(x.dtype == tl.float32, "dtype")
    tl.store(y_ptr + offs, (x > 0).to(tl.int1).to(tl.int64) + x.to(tl.dtype("int64")), mask=offs < n)


def test_triton_dtypes_in_a_kernel():
    x = np.linspace(-3, 3, 37).astype(np.float32)
    y = np.zeros(37, np.int64)
    triton_typed.Kernel(16).interpret(3, x, y, 37)
    np.testing.assert_array_equal(y, (x > 0) + np.trunc(x).astype(np.int64))
    assert triton_typed.Kernel(16).arg_types == (tl.Pointer[tl.f32], tl.Pointer[tl.i64], tl.i32)


# ---------------------------------------------------------------- tl.math, umulhi, div_rn, sqrt_rn


def test_tl_math_is_the_same_functions():
    for n in ("exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "abs", "floor", "ceil", "fma", "erf",
              "div_rn", "sqrt_rn", "fdiv", "umulhi"):
        assert getattr(tl.math, n) is getattr(tl, n)


@eggpu.kernel
def math_fns(x_ptr: tl.Pointer[tl.float32], out_ptr: tl.Pointer[tl.float32], N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    ax = tl.math.abs(x)
    rows = (tl.math.exp(x), tl.math.exp2(x), tl.math.log(ax), tl.math.log2(ax), tl.math.sqrt(ax),
            tl.math.rsqrt(ax), tl.math.sin(x), tl.math.cos(x), tl.math.floor(x), tl.math.ceil(x),
            tl.math.fma(x, x, 1.0), tl.math.erf(x), tl.math.div_rn(x, 3.0), tl.math.sqrt_rn(ax),
            tl.math.fdiv(x, 3.0), tl.fdiv(x, 3.0, ieee_rounding=True))
    for i in tl.static_range(16):
        tl.store(out_ptr + i * N + offs, rows[i])


def test_tl_math_numerics():
    x = np.linspace(-2.3, 2.9, 13).astype(np.float32)
    x[6] = 0.5
    out = np.zeros((16, 13), np.float32)
    math_fns.Kernel(13).interpret(1, x, out)
    from math import erf
    ax = np.abs(x)
    want = [np.exp(x), np.exp2(x), np.log(ax), np.log2(ax), np.sqrt(ax), 1 / np.sqrt(ax), np.sin(x), np.cos(x),
            np.floor(x), np.ceil(x), x * x + 1, np.vectorize(erf)(x), x / np.float32(3), np.sqrt(ax),
            x / np.float32(3), x / np.float32(3)]
    np.testing.assert_allclose(out, np.array(want, np.float32), rtol=2e-6, atol=1e-6)
    np.testing.assert_array_equal(out[12], x / np.float32(3))  # div_rn is the IEEE quotient
    np.testing.assert_array_equal(out[13], np.sqrt(ax))        # sqrt_rn is correctly rounded


@eggpu.kernel
def mulhi(a_ptr: tl.Pointer[tl.int32], b_ptr: tl.Pointer[tl.int32], ua_ptr: tl.Pointer[tl.uint32],
          ub_ptr: tl.Pointer[tl.uint32], o_ptr: tl.Pointer[tl.int32], uo_ptr: tl.Pointer[tl.uint32], N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(o_ptr + offs, tl.umulhi(tl.load(a_ptr + offs), tl.load(b_ptr + offs)))
    tl.store(uo_ptr + offs, tl.math.umulhi(tl.load(ua_ptr + offs), tl.load(ub_ptr + offs)))


def test_umulhi():
    rng = np.random.default_rng(5)
    a, b = (rng.integers(-2**31, 2**31, 64).astype(np.int32) for _ in range(2))
    ua, ub = (rng.integers(0, 2**32, 64).astype(np.uint32) for _ in range(2))
    a[0], b[0], ua[0], ub[0] = -2**31, -2**31, 2**32 - 1, 2**32 - 1
    o, uo = np.zeros(64, np.int32), np.zeros(64, np.uint32)
    mulhi.Kernel(64).interpret(1, a, b, ua, ub, o, uo)
    want = [((int(x) % 2**32) * (int(y) % 2**32)) >> 32 for x, y in zip(a, b)]  # unsigned, as Triton
    np.testing.assert_array_equal(o, np.array(want, np.uint32).view(np.int32))
    want_u = [(int(x) * int(y)) >> 32 for x, y in zip(ua, ub)]
    np.testing.assert_array_equal(uo, np.array(want_u, np.uint32))


# ---------------------------------------------------------------- tensor methods and keywords


@eggpu.kernel
def methods(x_ptr: tl.Pointer[tl.float32], out_ptr: tl.Pointer[tl.float32], idx_ptr: tl.Pointer[tl.int32],
            M: tl.constexpr, N: tl.constexpr):
    r = tl.arange(0, M)
    c = tl.arange(0, N)
    offs = r[:, None] * N + c[None, :]
    x = tl.load(x_ptr + offs)
    t = x.trans().reshape(M * N).reshape((N, M)).trans()            # back to x
    p = x.permute(1, 0).view(N, M).permute((1, 0)).ravel().reshape(M, N)
    b = x.sum(axis=1, keep_dims=True).broadcast_to(M, N) + x.expand_dims(0).reshape(M, N) * 0
    e = x.exp() + x.abs().sqrt() + x.cast(tl.float16).to(tl.float32) + x.sigmoid() + x.softmax(1)
    tl.store(out_ptr + offs, t)
    tl.store(out_ptr + M * N + offs, p)
    tl.store(out_ptr + 2 * M * N + offs, b)
    tl.store(out_ptr + 3 * M * N + offs, e)
    mx, imx = x.max(1, return_indices=True)
    mn, imn = tl.min(x, axis=1, return_indices=True, return_indices_tie_break_left=True)
    tl.store(out_ptr + 4 * M * N + r, mx)
    tl.store(out_ptr + 4 * M * N + M + r, mn)
    tl.store(idx_ptr + r, imx)
    tl.store(idx_ptr + M + r, imn)
    tl.store(idx_ptr + 2 * M + c, x.argmax(0, tie_break_left=True))
    tl.store(idx_ptr + 2 * M + N + c, x.argmin(axis=0))
    tl.store(out_ptr + 4 * M * N + 2 * M, x.sum())
    tl.store(out_ptr + 4 * M * N + 2 * M + 1, x.max() - x.min())


def test_tensor_methods_and_triton_keywords():
    m, n = 5, 8
    x = np.random.default_rng(1).standard_normal((m, n)).astype(np.float32)
    x[2, 3] = x[2, 6] = x[2].max() + 1  # a tie: the first index wins (tie_break_left=True)
    out = np.zeros(4 * m * n + 2 * m + 2, np.float32)
    idx = np.zeros(2 * m + 2 * n, np.int32)
    methods.Kernel(m, n).interpret(1, x, out, idx)
    blk = out[: 4 * m * n].reshape(4, m, n)
    np.testing.assert_array_equal(blk[0], x)
    np.testing.assert_array_equal(blk[1], x)
    np.testing.assert_allclose(blk[2], np.repeat(x.sum(1, keepdims=True), n, 1), rtol=1e-6)
    sm = np.exp(x - x.max(1, keepdims=True))
    sm /= sm.sum(1, keepdims=True)
    want = np.exp(x) + np.sqrt(np.abs(x)) + x.astype(np.float16).astype(np.float32) + 1 / (1 + np.exp(-x)) + sm
    np.testing.assert_allclose(blk[3], want, rtol=1e-5)
    tail = out[4 * m * n:]
    np.testing.assert_array_equal(tail[:m], x.max(1))
    np.testing.assert_array_equal(tail[m:2 * m], x.min(1))
    np.testing.assert_array_equal(idx[:m], x.argmax(1))
    np.testing.assert_array_equal(idx[m:2 * m], x.argmin(1))
    np.testing.assert_array_equal(idx[2 * m:2 * m + n], x.argmax(0))
    np.testing.assert_array_equal(idx[2 * m + n:], x.argmin(0))
    assert idx[2] == 3
    np.testing.assert_allclose(tail[2 * m], x.sum(), rtol=1e-5)
    assert tail[2 * m + 1] == x.max() - x.min()


@eggpu.kernel
def typed_sums(x_ptr: tl.Pointer[tl.int8], out_ptr: tl.Pointer[tl.int32], N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    tl.store(out_ptr, tl.sum(x))                              # narrow ints sum in 32 bits
    tl.store(out_ptr + 1, tl.sum(x, dtype=tl.int8).to(tl.int32))  # Triton: sum in the given dtype (wraps)
    tl.store(out_ptr + 2, x.sum(0, dtype=tl.float32).to(tl.int32))


def test_sum_dtype():
    x = np.full(200, 1, np.int8)
    out = np.zeros(3, np.int32)
    typed_sums.Kernel(200).interpret(1, x, out)
    assert out.tolist() == [200, 200 - 256, 200]


@eggpu.kernel
def nan_minmax(x_ptr: tl.Pointer[tl.float32], y_ptr: tl.Pointer[tl.float32], out_ptr: tl.Pointer[tl.float32],
               N: tl.constexpr):
    offs = tl.arange(0, N)
    x, y = tl.load(x_ptr + offs), tl.load(y_ptr + offs)
    tl.store(out_ptr + offs, tl.minimum(x, y))
    tl.store(out_ptr + N + offs, tl.minimum(x, y, propagate_nan=tl.PropagateNan.ALL))
    tl.store(out_ptr + 2 * N + offs, tl.maximum(x, y, propagate_nan=tl.PropagateNan.NONE))
    tl.store(out_ptr + 3 * N + offs, tl.maximum(x, y, propagate_nan=tl.PropagateNan.ALL))
    tl.store(out_ptr + 4 * N + offs, tl.clamp(x, min=-1.0, max=1.0, propagate_nan=tl.PropagateNan.ALL))
    tl.store(out_ptr + 5 * N + offs, tl.clamp(x, -1.0, 1.0))


def test_propagate_nan():
    nan = np.float32("nan")
    x = np.array([1, nan, 3, nan, -5, 0.5], np.float32)
    y = np.array([2, 2, nan, nan, 7, -0.5], np.float32)
    out = np.zeros(36, np.float32)
    nan_minmax.Kernel(6).interpret(1, x, y, out)
    o = out.reshape(6, 6)
    np.testing.assert_array_equal(o[0], np.fmin(x, y))
    np.testing.assert_array_equal(o[1], np.minimum(x, y))
    np.testing.assert_array_equal(o[2], np.fmax(x, y))
    np.testing.assert_array_equal(o[3], np.maximum(x, y))
    np.testing.assert_array_equal(o[4], np.clip(x, -1, 1))      # NaN stays NaN
    np.testing.assert_array_equal(o[5], [1, -1, 1, -1, -1, 0.5])  # NaN ignored: clamp(NaN) == min


@eggpu.kernel
def dot_keywords(a_ptr: tl.Pointer[tl.float16], o_ptr: tl.Pointer[tl.float32], N: tl.constexpr):
    offs = tl.arange(0, N)[:, None] * N + tl.arange(0, N)[None, :]
    a = tl.load(a_ptr + offs)
    r = tl.dot(a, a, out_dtype=tl.float32, input_precision="ieee", allow_tf32=False, max_num_imprecise_acc=None)
    tl.store(o_ptr + offs, r)


def test_dot_keywords():
    a = np.random.default_rng(2).standard_normal((16, 16)).astype(np.float16)
    out = np.zeros((16, 16), np.float32)
    dot_keywords.Kernel(16).interpret(1, a, out)
    np.testing.assert_allclose(out, a.astype(np.float32) @ a.astype(np.float32), rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------- hints: accepted, no effect on the IR


@eggpu.kernel
def hinted(x_ptr: tl.Pointer[tl.float32], y_ptr: tl.Pointer[tl.float32], n: tl.int32, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.max_contiguous(tl.multiple_of(pid * BLOCK + tl.arange(0, BLOCK), BLOCK), BLOCK)
    offs = tl.max_constancy(offs, (1,))
    tl.assume(BLOCK > 0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for _k in tl.range(0, 2, num_stages=3, loop_unroll_factor=2, flatten=True, warp_specialize=False):
        acc += tl.load(x_ptr + offs, mask=offs < n, other=0.0, cache_modifier=".cg", eviction_policy="evict_last")
    tl.debug_barrier()
    tl.store(y_ptr + offs, acc, mask=offs < n, cache_modifier=".cs", eviction_policy="evict_first")


@eggpu.kernel
def unhinted(x_ptr: tl.Pointer[tl.float32], y_ptr: tl.Pointer[tl.float32], n: tl.int32, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for _k in range(0, 2):
        acc += tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(y_ptr + offs, acc, mask=offs < n)


def _body(fn_ir) -> str:
    return str(fn_ir).split("\n", 1)[1]


@eggpu.kernel
def runtime_assume(x_ptr: tl.Pointer[tl.int32], n: tl.int32):
    tl.assume(n > 0)
    tl.assume(True)
    tl.store(x_ptr, n)


def test_assume_a_runtime_condition():
    x = np.zeros(1, np.int32)
    runtime_assume.Kernel().interpret(1, x, 7)
    assert x[0] == 7


def test_hints_do_not_change_the_ir():
    assert _body(hinted.Kernel(64).ir()) == _body(unhinted.Kernel(64).ir())
    x = np.arange(100, dtype=np.float32)
    y = np.zeros(100, np.float32)
    hinted.Kernel(64).interpret(2, x, y, 100)
    np.testing.assert_array_equal(y, 2 * x)


# ---------------------------------------------------------------- string and None constexprs


@eggpu.kernel
def activation(x_ptr: tl.Pointer[tl.float32], y_ptr: tl.Pointer[tl.float32], n: tl.int32,
               BLOCK: tl.constexpr, ACTIVATION: tl.constexpr, SCALE: tl.constexpr = None):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    if ACTIVATION == "leaky_relu":
        x = tl.where(x >= 0, x, 0.01 * x)
    elif ACTIVATION == "":
        x = x
    else:
        tl.static_assert(False, "unknown activation")
    if SCALE is not None:
        x = x * SCALE
    tl.store(y_ptr + offs, x, mask=offs < n)


def test_string_and_none_constexprs():
    x = np.linspace(-2, 2, 33).astype(np.float32)
    y = np.zeros_like(x)
    k = activation.Kernel(16, "leaky_relu")
    assert k.consts == {"BLOCK": 16, "ACTIVATION": "leaky_relu", "SCALE": None}
    assert k.id == "activation__16__'leaky_relu'__none"
    k.interpret(3, x, y, 33)
    np.testing.assert_allclose(y, np.where(x >= 0, x, np.float32(0.01) * x))
    activation.Kernel(16, "", scale=2.0).interpret(3, x, y, 33)
    np.testing.assert_array_equal(y, 2 * x)
    assert activation.Kernel(16, "4").id != activation.Kernel(16, 4).id
    with pytest.raises(eggpu.CompileError, match="unknown activation"):
        activation.Kernel(16, "gelu").ir()
    with pytest.raises(eggpu.KernelError, match=r"constexpr SCALE must be an int, float, bool, string, None or dtype, got list"):
        activation.Kernel(16, "", [2])


# ---------------------------------------------------------------- what eggpu does not have: one clear error each


@eggpu.kernel
def unsupported(x_ptr: tl.Pointer[tl.float32], WHICH: tl.constexpr):
    offs = tl.arange(0, 16)
    x = tl.load(x_ptr + offs)
    if WHICH == 0:
        x = tl.dot_scaled(x.reshape(1, 4, 4), None, "e4m3", x.reshape(1, 4, 4), None, "e4m3").reshape(16)
    if WHICH == 1:
        x = x.dot_scaled(16)
    if WHICH == 2:
        x = tl.math.pow(x, 2.0)
    if WHICH == 3:
        x = x.to(tl.float8e4b8)
    if WHICH == 4:
        x = tl.argmax(x, 0, tie_break_left="left").to(tl.float32)
    if WHICH == 5:
        x = tl.load(x_ptr + offs, volatile="yes")
    if WHICH == 6:
        x = tl.dot(x.reshape(4, 4), x.reshape(4, 4), out_dtype=tl.bfloat16).reshape(16)
    if WHICH == 7:
        x = tl.atomic_add(x_ptr + offs, x, sem="seq_cst")
    if WHICH == 8:
        x = tl.load(x_ptr + offs, cache_modifier=".zz")
    if WHICH == 9:
        x = x.sum(axis=0, keepdims=True)
    if WHICH == 10:
        x = tl.atomic_and(x_ptr + offs, 1)  # x_ptr points to floats
    if WHICH == 11:
        x = x.to(tl.float64, fp_downcast_rounding="rtz").to(tl.float32)
    if WHICH == 12:
        x = tl.umulhi(x.to(tl.int64), 3).to(tl.float32)
    if WHICH == 13:
        x = tl.max(x, 0, return_indices=True, return_indices_tie_break_left=None)[0]
    if WHICH == 14:
        for _i in tl.range(0, 4, num_stage=2):
            x = x + 1
    if WHICH == 15:
        x = tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [x], dtype=tl.float32, is_pure=True, pack=4)
    tl.store(x_ptr + offs, x)


UNSUPPORTED_CASES = [
    (0, "tl.dot_scaled(x", "x.reshape(1, 4, 4), None", "tl.dot_scaled needs 2-D blocks, got f32[1,4,4] for lhs, "
     "batched (3-D) dot_scaled is not supported by eggpu", None),
    (1, "x.dot_scaled(16)", "dot_scaled", "blocks have no attribute 'dot_scaled'", "blocks support x.to(dtype), "
     "x.dtype, x.type, x.shape, x.T and the methods x.sum(...), x.reshape(...), ... (tl.<name>(x, ...))"),
    (2, "tl.math.pow", "pow", "tl.math.pow is not supported by eggpu",
     "Triton's tl.math has no pow either: use tl.extra.cuda.libdevice.pow"),
    (3, "tl.float8e4b8", "float8e4b8", "tl.float8e4b8 is not supported by eggpu: fp8e4b8 (AMD's e4m3fnuz) is not "
     "supported on NVIDIA GPUs, as in Triton ('type fp8e4b8 not supported in this architecture'); the FP8 dtypes "
     "are tl.float8e4nv, tl.float8e5 and tl.float8e4b15", None),
    (4, 'tie_break_left="left"', "tie_break_left", "tie_break_left must be a compile-time bool, got 'left'", None),
    (5, 'volatile="yes"', "volatile", "tl.load: volatile must be a compile-time bool, got 'yes'", None),
    (6, "out_dtype=tl.bfloat16", "out_dtype", "tl.dot(out_dtype=bf16) is not supported by eggpu: a bf16 result is "
     "not available (as in Triton)", "use out_dtype=tl.float32 and convert the result: tl.dot(a, b).to(tl.bf16)"),
    (7, 'sem="seq_cst"', "sem", "tl.atomic_add(sem='seq_cst') is not a memory ordering",
     "pass one of 'relaxed', 'acquire', 'release', 'acq_rel'"),
    (8, 'cache_modifier=".zz"', "cache_modifier", "tl.load: cache_modifier='.zz' is not one of '', '.ca', '.cg', "
     "'.cv'", None),
    (9, "keepdims=True", "keepdims", "x.sum() got an unexpected keyword argument 'keepdims'",
     "did you mean keep_dims=? the signature is tl.sum(input, axis=None, keep_dims=False, dtype=None)"),
    (10, "tl.atomic_and", "x_ptr + offs", "tl.atomic_and needs an integer pointer, got ptr<f32>[16]",
     "bitwise atomics work on integers: update the bits through an integer pointer of the same width"),
    (11, 'fp_downcast_rounding="rtz"', "x.to", "x.to(fp_downcast_rounding='rtz') applies only to a float -> "
     "narrower float conversion, not f32 -> f64", "drop fp_downcast_rounding="),
    (12, "tl.umulhi(x.to(tl.int64), 3)", "tl.umulhi", "tl.umulhi needs 32-bit integer operands, got i64",
     "the 128-bit product of 64-bit integers is not available"),
    (13, "return_indices_tie_break_left=None", "return_indices_tie_break_left",
     "return_indices_tie_break_left must be a compile-time bool, got None", None),
    (14, "num_stage=2", "num_stage", "tl.range() got an unexpected keyword argument 'num_stage'",
     "did you mean num_stages=? the signature is tl.range(arg1, arg2=None, step=None, num_stages=None, "
     "loop_unroll_factor=None, disallow_acc_multi_buffer=False, flatten=False, warp_specialize=False)"),
    (15, "pack=4", '"=r,r"', "tl.inline_asm_elementwise: constraints '=r,r' must name 4 output(s) and 4 input(s) "
     "(4 elements of each, packed into 32-bit registers), got 1 and 1", None),
]


@pytest.mark.parametrize("which,line_marker,col_marker,problem,hint", UNSUPPORTED_CASES,
                         ids=[c[2] for c in UNSUPPORTED_CASES])
def test_unsupported_triton_feature_is_one_clear_error(which, line_marker, col_marker, problem, hint):
    with pytest.raises(eggpu.CompileError) as ei:
        unsupported.Kernel(which).ir()
    err = ei.value
    assert isinstance(err, KernelCompileError)
    lines, first = inspect.getsourcelines(unsupported)
    idx = next(i for i, ln in enumerate(lines) if line_marker in ln)
    text = lines[idx].rstrip("\n")
    col = text.index(col_marker)
    msg = str(err).splitlines()
    assert msg[0] == f"{FILE}:{first + idx}:{col + 1}: {problem}", msg[0]
    assert msg[1] == text
    assert msg[2] == " " * col + "^"
    if hint is None:
        assert len(msg) == 3
    else:
        assert msg[3] == f"hint: {hint}"


def test_every_name_of_the_unsupported_table_is_refused():
    from eggpu.kernel_macro.unsupported import UNSUPPORTED

    for name in UNSUPPORTED:
        assert name not in tl.__all__, name
        with pytest.raises(AttributeError, match=rf"^tl\.{re.escape(name)} is not supported by eggpu: "):
            getattr(tl, name)
