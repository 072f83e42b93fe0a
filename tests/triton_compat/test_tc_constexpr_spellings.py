"""Two older Triton spellings around compile-time values (FlagGems' sort kernels): ``x: tl.constexpr
= <runtime value>`` binds the value as it is (Triton does not check the annotation there), and
``@tl.constexpr`` on a plain function makes it a constexpr_function (called at compile time, like
``@eggpu.constexpr_function``), here with ``tl.core.get_int_dtype``. Interpreted and run on the CPU
against numpy on ragged sizes."""

from __future__ import annotations

import numpy as np
import pytest

import eggpu
import eggpu.language as tl


@eggpu.jit
def _runtime_constexpr_local(x_ptr, n, t, TILE: tl.constexpr):
    span: tl.constexpr = TILE * t  # a runtime value: bound as is
    start = span * tl.program_id(0)
    end = tl.minimum(start + span, n)
    for s in range(start, end, TILE):
        offs = s + tl.arange(0, TILE)
        tl.store(x_ptr + offs, offs, mask=offs < end)


@pytest.mark.parametrize("n", [1, 1000, 1001])
def test_constexpr_annotation_on_a_runtime_value_binds_it(run_both, n):
    out = run_both(_runtime_constexpr_local, (eggpu.cdiv(n, 64 * 3),), np.full(n, -1, np.int32), n, 3, TILE=64)
    for dev in ("interpret", "cpu"):
        np.testing.assert_array_equal(out[dev][0], np.arange(n), err_msg=dev)


@tl.constexpr
def _unsigned_of(bits):
    return tl.core.get_int_dtype(bits, False)


@eggpu.jit
def _flip_sign_bits(x_ptr, o_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    u = x.to(_unsigned_of(x.dtype.primitive_bitwidth), bitcast=True)
    tl.store(o_ptr + tl.arange(0, BLOCK), u ^ (1 << (x.dtype.primitive_bitwidth - 1)))


@pytest.mark.parametrize("block", [4, 1024])
def test_tl_constexpr_as_a_decorator(run_both, block):
    x = np.random.default_rng(block).integers(-2**31, 2**31, block, dtype=np.int64).astype(np.int32)
    x[:4] = [-2, 0, 3, -2**31]
    out = run_both(_flip_sign_bits, (1,), x, np.zeros(block, np.uint32), BLOCK=block)
    want = x.view(np.uint32) ^ np.uint32(2**31)
    for dev in ("interpret", "cpu"):
        np.testing.assert_array_equal(out[dev][1], want, err_msg=dev)
    assert _unsigned_of(16) is tl.uint16  # on the host: the plain function


@tl.constexpr
def _accum_type(d):
    """FlagGems' cumsum: Triton's dtype methods on a constexpr_function's dtype argument."""
    if d.is_bf16() or d.is_fp16():
        return tl.float32
    if d.is_int():
        return tl.int64
    return d


@eggpu.jit
def _accum_sum(x_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc_t: tl.constexpr = _accum_type(x_ptr.dtype.element_ty)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0).to(acc_t)
    tl.store(o_ptr, tl.sum(x, 0))


@pytest.mark.parametrize("np_dtype,acc", [(np.float16, np.float32), (np.int8, np.int64), (np.float64, np.float64)])
def test_dtype_arguments_have_tritons_methods(run_both, np_dtype, acc):
    x = np.arange(1001).astype(np_dtype)
    out = run_both(_accum_sum, (1,), x, np.zeros(1, acc), 1001, BLOCK=1024)
    want = x.astype(acc).sum(dtype=acc)  # i8 would wrap; the i64 accumulator does not
    for dev in ("interpret", "cpu"):
        assert out[dev][1][0] == want, dev


def test_dtype_views_compare_and_unwrap():
    from eggpu.kernel_macro.constexpr_function import TritonDType, call_in_kernel, constexpr_function

    v = TritonDType(tl.float16)
    assert v == tl.float16 and v.is_fp16() and not v.is_int() and v.primitive_bitwidth == 16 and v.itemsize == 2
    pair = constexpr_function(lambda d, p: (d, p))
    assert call_in_kernel(pair, [tl.int8, (tl.f32,)], {}) == (tl.int8, (tl.f32,))
    assert call_in_kernel(pair, [tl.int8, (tl.f32,)], {})[0] is tl.int8
