"""Triton internals that published kernels reach from the kernel language: ``x.numel``,
``dtype.primitive_bitwidth``, ``tl.core.get_int_dtype``, ``tl.core.CONSTEXPR_0`` and
``tl.standard._log2``. The bitonic argsort of Triton issue 3698 (copied into
flash-linear-attention's nsa/utils.py and many other repositories) uses all of them; the kernels
here are small ones of our own, checked in the interpreter and the compiled CPU lowering against
numpy on ragged sizes.
"""

from __future__ import annotations

import numpy as np
import pytest

import eggpu
import eggpu.language as tl


@eggpu.jit
def flip_sign_bits(x_ptr, out_ptr, n, BLOCK: tl.constexpr, NEGATE: tl.constexpr = tl.core.CONSTEXPR_0):
    """Bitcast a float block to the signed integer of its width, xor the sign bit, bitcast back."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    idt = tl.core.get_int_dtype(bitwidth=x.dtype.primitive_bitwidth, signed=True)
    bits = x.to(idt, bitcast=True)
    sign = tl.full([BLOCK], 1, idt) << (x.dtype.primitive_bitwidth - 1)
    y = (bits ^ sign).to(x.dtype, bitcast=True) if NEGATE else x
    tl.store(out_ptr + offs, y, mask=mask)


@eggpu.jit
def block_facts(out_ptr, ROWS: tl.constexpr, COLS: tl.constexpr):
    """Stores numel, log2(numel) and log2(ROWS) of a [ROWS, COLS] block (compile-time ints)."""
    b = tl.zeros([ROWS, COLS], tl.float32)
    n: tl.constexpr = b.numel
    tl.store(out_ptr, n)
    tl.store(out_ptr + 1, tl.standard._log2(n))
    tl.store(out_ptr + 2, tl.standard._log2(b.shape[0]))


@pytest.mark.parametrize("n", [1, 1000, 1001])
@pytest.mark.parametrize("dt", [np.float16, np.float32, np.float64])
def test_get_int_dtype_bitcast_negates(run_both, n, dt):
    x = np.random.default_rng(n).standard_normal(n).astype(dt)
    for device, (_, out) in run_both(flip_sign_bits, (-(-n // 128),), x, np.zeros_like(x), n, BLOCK=128,
                                     NEGATE=1).items():
        np.testing.assert_array_equal(out, -x, err_msg=device)


def test_constexpr_0_default_keeps_values(run_both):
    x = np.arange(7, dtype=np.float32) - 3
    for device, (_, out) in run_both(flip_sign_bits, (1,), x, np.zeros_like(x), 7, BLOCK=8).items():
        np.testing.assert_array_equal(out, x, err_msg=device)


@pytest.mark.parametrize("rows,cols", [(1, 1), (4, 8), (16, 2)])
def test_numel_and_log2(run_both, rows, cols):
    expected = np.array([rows * cols, (rows * cols).bit_length() - 1, rows.bit_length() - 1], np.int32)
    for device, (out,) in run_both(block_facts, (1,), np.zeros(3, np.int32), ROWS=rows, COLS=cols).items():
        np.testing.assert_array_equal(out, expected, err_msg=device)


def test_internals_outside_kernels():
    assert tl.core.get_int_dtype(16, signed=False) == tl.uint16
    assert tl.core.get_int_dtype(bitwidth=64, signed=True) == tl.int64
    assert tl.standard._log2(1) == 0 and tl.standard._log2(1024) == 10
    assert tl.float32.primitive_bitwidth == 32 and tl.bfloat16.primitive_bitwidth == 16
    assert tl.core.sum is tl.sum and tl.standard.max is tl.max


def test_log2_of_a_non_power_of_two_is_a_located_error():
    @eggpu.jit
    def bad(out_ptr, N: tl.constexpr):
        tl.store(out_ptr, tl.standard._log2(N))

    with pytest.raises(eggpu.CompileError, match=r"tl.standard._log2\(\): _log2 needs a positive power-of-two int, got 12"):
        bad.specialize(np.zeros(1, np.int32), N=12).ir()


def test_int_dtype_of_an_odd_width_is_a_located_error():
    @eggpu.jit
    def bad(x_ptr, W: tl.constexpr):
        x = tl.load(x_ptr)
        tl.store(x_ptr, x.to(tl.core.get_int_dtype(W, True), bitcast=True))

    with pytest.raises(eggpu.CompileError, match="there is no signed integer dtype of 24 bits"):
        bad.specialize(np.zeros(1, np.int32), W=24).ir()
