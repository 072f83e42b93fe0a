"""Triton's ``tl.dtype`` queries inside kernels: ``x.dtype.is_floating()``, ``dtype.is_int_signed()``,
``dtype.int_bitwidth``, ``dtype.primitive_bitwidth``, and ``.value`` on a compile-time value
(Triton's ``tl.constexpr.value``), as helpers of published kernels use them to pick a dtype's
lowest value (FlagGems' ``get_dtype_min(dtype.value)``). Interpreted and run on the CPU, compared
with numpy."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import eggpu
import eggpu.language as tl
from eggpu.kernel_macro.dtype_queries import PREDICATES

QUERIES = ("is_floating", "is_int", "is_int_signed", "is_int_unsigned", "is_bool", "is_fp16", "is_bf16",
           "is_fp32", "is_fp64", "is_int8", "is_int32", "is_int64", "is_uint8", "is_uint32", "is_int1",
           "is_fp8", "is_standard_floating")


@eggpu.jit
def _queries(x_ptr, o_ptr):
    d = tl.load(x_ptr).dtype
    tl.store(o_ptr + 0, d.is_floating())
    tl.store(o_ptr + 1, d.is_int())
    tl.store(o_ptr + 2, d.is_int_signed())
    tl.store(o_ptr + 3, d.is_int_unsigned())
    tl.store(o_ptr + 4, d.is_bool())
    tl.store(o_ptr + 5, d.is_fp16())
    tl.store(o_ptr + 6, d.is_bf16())
    tl.store(o_ptr + 7, d.is_fp32())
    tl.store(o_ptr + 8, d.is_fp64())
    tl.store(o_ptr + 9, d.is_int8())
    tl.store(o_ptr + 10, d.is_int32())
    tl.store(o_ptr + 11, d.is_int64())
    tl.store(o_ptr + 12, d.is_uint8())
    tl.store(o_ptr + 13, d.is_uint32())
    tl.store(o_ptr + 14, d.is_int1())
    tl.store(o_ptr + 15, d.is_fp8())
    tl.store(o_ptr + 16, d.is_standard_floating())
    tl.store(o_ptr + 17, d.primitive_bitwidth)


def _expected(np_dtype) -> list[int]:
    dt = np.dtype(np_dtype)
    floating = dt.kind == "f" or dt == ml_dtypes.bfloat16
    bits = 1 if dt == np.bool_ else dt.itemsize * 8
    want = {"is_floating": floating, "is_standard_floating": floating, "is_int": dt.kind in "iu",
            "is_int_signed": dt.kind == "i", "is_int_unsigned": dt.kind == "u", "is_bool": dt == np.bool_,
            "is_fp16": dt == np.float16, "is_bf16": dt == ml_dtypes.bfloat16, "is_fp32": dt == np.float32,
            "is_fp64": dt == np.float64, "is_int8": dt == np.int8, "is_int32": dt == np.int32,
            "is_int64": dt == np.int64, "is_uint8": dt == np.uint8, "is_uint32": dt == np.uint32,
            "is_int1": dt == np.bool_, "is_fp8": False}
    return [int(want[q]) for q in QUERIES] + [bits]


@pytest.mark.parametrize("np_dtype", [np.float16, ml_dtypes.bfloat16, np.float32, np.float64, np.int8, np.int32,
                                      np.int64, np.uint8, np.uint32, np.bool_])
def test_dtype_queries_answer_per_dtype(run_both, np_dtype):
    assert set(QUERIES) <= set(PREDICATES)
    out = run_both(_queries, (1,), np.zeros(1, np_dtype), np.full(len(QUERIES) + 1, -1, np.int32))
    for dev in ("interpret", "cpu"):
        assert out[dev][1].tolist() == _expected(np_dtype), dev


@eggpu.jit
def _lowest(dtype):
    """FlagGems-style: a helper taking a dtype and unwrapping it with `.value`."""
    d = dtype.value
    if d.is_floating():
        return float("-inf")
    if d.is_int_signed():
        width: tl.constexpr = d.int_bitwidth
        return -(2 ** (width - 1))
    return 0


@eggpu.jit
def _masked_max(x_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK.value)
    x = tl.load(x_ptr + offs, mask=offs < n, other=_lowest(x_ptr.dtype.element_ty))
    tl.store(o_ptr, tl.max(x, 0))


@pytest.mark.parametrize("n", [1, 1000, 1001])
@pytest.mark.parametrize("np_dtype", [np.float32, np.int16, np.uint8])
def test_value_and_int_bitwidth_pick_the_lowest_value(run_both, n, np_dtype):
    rng = np.random.default_rng(n)
    if np.dtype(np_dtype).kind == "f":
        x = (-1e30 - rng.random(n)).astype(np_dtype)  # every element far below 0: a 0 `other` would win
    else:
        info = np.iinfo(np_dtype)
        x = rng.integers(info.min, info.min + 3, n, endpoint=True).astype(np_dtype)
    out = run_both(_masked_max, (1,), x, np.zeros(1, np_dtype), n, BLOCK=eggpu.next_power_of_2(n) * 2)
    for dev in ("interpret", "cpu"):
        assert out[dev][1][0] == x.max(), dev


@eggpu.jit
def _misuse(x_ptr, WHICH: tl.constexpr):
    d = tl.load(x_ptr).dtype
    if WHICH == 0:
        tl.store(x_ptr, d.is_floating(1))
    if WHICH == 1:
        tl.store(x_ptr, d.int_bitwidth)


def test_misuse_is_a_located_error(located_which):
    x = np.zeros(4, np.float32)
    located_which(_misuse, 0, "d.is_floating", "d.is_floating() takes no arguments", x)
    located_which(_misuse, 1, "int_bitwidth)", "the dtype f32 has no attribute 'int_bitwidth'", x)
