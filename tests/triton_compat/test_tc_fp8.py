"""Triton's OCP FP8 dtypes (``tl.float8e4nv``, ``tl.float8e5``) from the kernel language: storage and
conversions match an explicit reference in the interpreter and run_cpu; arithmetic is a located
error; mixed FP8/float arithmetic promotes as Triton does; the optimizer leaves such kernels alone
and says why."""

from __future__ import annotations

import numpy as np
import pytest

import eggpu
import eggpu.language as tl
from eggpu.ir.fp8 import to_fp8


@eggpu.jit
def quantize_kernel(x_ptr, scale_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    """Tutorial-style per-tensor FP8 quantization: y = (x * scale).to(fp8), scale in f32."""
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    scale = tl.load(scale_ptr)
    y = x * scale
    tl.store(y_ptr + offsets, y.to(y_ptr.dtype.element_ty), mask=mask)


@eggpu.jit
def dequantize_kernel(y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, tl.where(y.to(tl.float32) == 0.0, 0.0, y.to(tl.float32)) * 2.0, mask=mask)


@pytest.mark.parametrize("n", (1, 1000, 1001))
@pytest.mark.parametrize("f8", (tl.float8e4nv, tl.float8e5), ids=str)
def test_quantize_dequantize_match_the_reference(run_both, f8, n):
    rng = np.random.default_rng(n)
    x = (rng.standard_normal(n) * 300).astype(np.float32)
    x[: min(n, 6)] = np.array([np.nan, np.inf, -np.inf, 1e6, -0.0, 2.0**-12], np.float32)[: min(n, 6)]
    scale = np.array([1.5], np.float32)
    y0 = np.zeros(n, f8.np)
    want = to_fp8((x * scale[0]).astype(np.float32), f8).view(np.uint8)
    res = run_both(quantize_kernel, (triton_cdiv(n, 256),), x, scale, y0, n, BLOCK_SIZE=256)
    for device, (_, _, y) in res.items():
        np.testing.assert_array_equal(y.view(np.uint8), want, err_msg=device)
    y = res["cpu"][2]
    out = np.zeros(n, np.float32)
    back = run_both(dequantize_kernel, (triton_cdiv(n, 256),), y, out, n, BLOCK_SIZE=256)
    ref = y.astype(np.float32) * 2.0
    for device, (_, got) in back.items():
        np.testing.assert_array_equal(got, ref, err_msg=device)  # NaN == NaN position-wise


def triton_cdiv(a: int, b: int) -> int:
    return (a + b - 1) // b


@eggpu.jit
def fp8_add_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(y_ptr + offs, x + x)


def test_fp8_arithmetic_is_a_located_error():
    x = np.zeros(16, tl.float8e4nv.np)
    with pytest.raises(eggpu.CompileError) as ei:
        fp8_add_kernel[(1,)](x, x.copy(), BLOCK=16)
    msg = str(ei.value)
    assert "add: does not accept fp8e4nv operands: FP8 is a storage dtype" in msg
    assert "convert to f16 or f32 first" in msg
    assert "x + x" in msg and "^" in msg


@eggpu.jit
def fp8_int_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs).to(tl.int32))


def test_fp8_to_int_is_a_located_error():
    with pytest.raises(eggpu.CompileError, match=r"no conversion between fp8e5 and i32: FP8 converts only to and "
                                                 r"from the float dtypes"):
        fp8_int_kernel[(1,)](np.zeros(16, tl.float8e5.np), np.zeros(16, np.int32), BLOCK=16)


@eggpu.jit
def mixed_kernel(a_ptr, b_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(a_ptr + offs) * tl.load(b_ptr + offs))


@pytest.mark.parametrize("other,result", [(np.float16, np.float16), (np.float32, np.float32)])
def test_fp8_with_a_wider_float_promotes_as_triton(run_both, other, result):
    a = (np.arange(16) - 8).astype(tl.float8e5.np)
    b = np.full(16, 0.5, other)
    out = np.zeros(16, result)
    for device, (_, _, got) in run_both(mixed_kernel, (1,), a, b, out, BLOCK=16).items():
        np.testing.assert_array_equal(got, a.astype(np.float32).astype(result) * b, err_msg=device)


@eggpu.kernel
def to_fp8_typed(x_ptr: tl.Pointer[tl.f32], y_ptr: tl.Pointer[tl.fp8e4nv], n: tl.i32, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m).to(tl.fp8e4nv), mask=m)


def test_optimizer_leaves_fp8_kernels_alone_and_says_why():
    ck = eggpu.compile(to_fp8_typed.Kernel(128), "sm_90", cache=False)
    opt = ck.report["optimizer"]
    assert opt["fell_back"] and "FP8 values (fp8e4nv)" in opt["fallback_reason"]
    assert "cvt.rn.satfinite.e4m3x2.f32" in ck.ptx
    x = np.array([1.0, 500.0, np.nan, -1e-3, 0.0625 * 1.0625], np.float32)
    y = np.zeros(5, tl.fp8e4nv.np)
    ck.run_cpu(1, x, y, 5)
    assert y.view(np.uint8).tolist() == [0x38, 0x7E, 0x7F, 0x81, 0x18]


@eggpu.jit
def fp8_constants_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=1000.0)  # other= in the pointee's FP8 dtype
    tl.store(y_ptr + offs, tl.where(offs % 2 == 0, x, tl.full((BLOCK,), -3.3, tl.float8e5)))


def test_fp8_constants_are_f32_constants_converted(run_both):
    x = np.arange(8).astype(tl.float8e5.np)
    want = np.where(np.arange(16) % 2 == 0, np.r_[np.arange(8), np.full(8, 1024.0)], -3.5).astype(np.float32)
    for device, (_, y) in run_both(fp8_constants_kernel, (1,), x, np.zeros(16, tl.float8e5.np), 8, BLOCK=16).items():
        np.testing.assert_array_equal(y.astype(np.float32), want, err_msg=device)


# ---------------------------------------------------------------- tl.float8e4b15 (Triton's e4m3, bias 15)


@eggpu.jit
def e4b15_roundtrip(x_ptr, q_ptr, y_ptr, n, BLOCK: tl.constexpr):
    """Tutorial style: quantize through the pointer's dtype, dequantize to f32 with .to()."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    q = tl.load(x_ptr + offs, mask=mask).to(q_ptr.dtype.element_ty)
    tl.store(q_ptr + offs, q, mask=mask)
    tl.store(y_ptr + offs, tl.load(q_ptr + offs, mask=mask).to(tl.float32) * 2.0, mask=mask)


@pytest.mark.parametrize("n", (1, 1000, 1001))
@pytest.mark.parametrize("src", (np.float16, np.float32), ids=("f16", "f32"))
def test_e4b15_through_reinterpret_matches_numpy(run_both, src, n):
    from eggpu.ir import fp8 as ref
    from eggpu.ir.dtypes import from_numpy

    rng = np.random.default_rng(n)
    x = (rng.standard_normal(n) * 0.7).astype(src)
    x[: min(n, 5)] = np.array([np.nan, 3.0, -np.inf, -0.0, 1.0625], src)[: min(n, 5)]
    want_q = ref.cast(x, from_numpy(x.dtype), tl.float8e4b15)
    want_y = ref.cast(want_q, tl.float8e4b15, tl.float32) * 2.0
    q = np.zeros(n, np.uint8)  # run_both copies arrays only: both runs write these codes
    res = run_both(e4b15_roundtrip, (triton_cdiv(n, 128),), x, eggpu.reinterpret(q, tl.float8e4b15),
                   np.zeros(n, np.float32), n, BLOCK=128)
    for device, (_, y) in res.items():
        np.testing.assert_array_equal(y, want_y, err_msg=device)
    np.testing.assert_array_equal(q, want_q)
    err = np.abs(want_y / 2 - np.clip(x.astype(np.float64), -1.75, 1.75))[5:]
    assert err.size == 0 or err.max() <= 2.0**-4  # within half a unit of the clamped value


def test_reinterpret_errors():
    x = np.zeros(4, np.float32)
    with pytest.raises(eggpu.LaunchError, match=r"parameter q_ptr: eggpu.reinterpret\(\.\.\., fp8e4b15\) needs an "
                                                r"array of 8-bit elements, got a numpy array of int16"):
        e4b15_roundtrip[(1,)](x, eggpu.reinterpret(np.zeros(4, np.int16), tl.float8e4b15), x, 4, BLOCK=4)
    with pytest.raises(eggpu.LaunchError, match=r"eggpu.reinterpret: 'float8e4b9' is not a dtype"):
        eggpu.reinterpret(x, "float8e4b9")


@eggpu.jit
def e4b15_dot(a_ptr, b_ptr, c_ptr, M: tl.constexpr):
    r = tl.arange(0, M)
    a = tl.load(a_ptr + r[:, None] * M + r[None, :])
    b = tl.load(b_ptr + r[:, None] * M + r[None, :])
    one = tl.full((M, M), 1.0625, tl.float8e4b15)  # an f32 constant converted: ties away -> 1.125
    tl.store(c_ptr + r[:, None] * M + r[None, :], tl.dot(a, b) + one.to(tl.float32))


def test_e4b15_dot_upcasts_exactly_as_triton(run_both):
    """Triton casts fp8e4b15 dot operands to f16 (semantic.py: no such MLIR type): exact."""
    from eggpu.ir import fp8 as ref

    rng = np.random.default_rng(3)
    a, b = (rng.integers(0, 256, (16, 16)).astype(np.uint8) for _ in range(2))
    want = ref.cast(a, tl.float8e4b15, tl.f64) @ ref.cast(b, tl.float8e4b15, tl.f64) + 1.125
    for device, (c,) in run_both(e4b15_dot, (1,), eggpu.reinterpret(a, tl.float8e4b15),
                                 eggpu.reinterpret(b, tl.float8e4b15), np.zeros((16, 16), np.float32), M=16).items():
        np.testing.assert_allclose(c, want, rtol=1e-6, atol=1e-6, err_msg=device)


def test_e4b15_arithmetic_is_a_located_error():
    """Triton's frontend accepts fp8e4b15 + fp8e4b15 and its LLVM lowering then fails ('llvm.fadd' on
    i8); eggpu refuses it at the line."""
    x = eggpu.reinterpret(np.zeros(16, np.uint8), tl.float8e4b15)
    with pytest.raises(eggpu.CompileError, match=r"add: does not accept fp8e4b15 operands: FP8 is a storage dtype"):
        fp8_add_kernel[(1,)](x, x, BLOCK=16)
