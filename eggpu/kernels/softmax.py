"""Row softmax (forward and backward) and log-softmax.

One program per row of a row-major ``[rows, n_cols]`` buffer whose rows start ``row_stride``
elements apart (``row_stride >= n_cols``; padding between rows is never read or written). Rows
of any length work: the row is walked in tiles of ``BLOCK_SIZE`` columns, lanes past ``n_cols``
are masked (loads use ``other=-inf`` where a max is taken, ``0`` where a sum is), so 781 columns
work with ``BLOCK_SIZE=256`` and 10 columns with ``BLOCK_SIZE=16`` (teenygrad's bug B1/B7 was to
require ``BLOCK_SIZE == n_cols``). Arithmetic is in f32 (f64 for f64 data, see
:func:`~eggpu.kernels.common.compute_dtype`); results are rounded to the data's dtype once.

The forward keeps a running max ``m`` and normalizer ``s = sum(exp(x - m))`` (online softmax):
one pass for the statistics, one to write the output.
"""

from __future__ import annotations

from typing import TypeVar

import eggpu
import eggpu.language as tl

from .common import compute_dtype

D = TypeVar("D", bound=tl.Float)


@eggpu.jit
def row_max_and_normalizer(x_row, n_cols, acc_dtype, BLOCK_SIZE: tl.constexpr):
    """Online pass over one row: ``(m, s)`` with ``m = max(x)`` and ``s = sum(exp(x - m))``,
    computed in ``acc_dtype``. Every tile holds at least one valid lane, so ``m`` is finite
    after the first tile and masked lanes (``-inf``) add ``exp(-inf) = 0``."""
    cols = tl.arange(0, BLOCK_SIZE)
    m = float("-inf")
    s = 0.0
    for start in range(0, n_cols, BLOCK_SIZE):
        mask = start + cols < n_cols
        x = tl.load(x_row + start + cols, mask=mask, other=float("-inf")).to(acc_dtype)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    return m, s


@eggpu.kernel(backward="softmax_backward")
def softmax_forward(x_ptr: tl.Pointer[D], y_ptr: tl.Pointer[D], n_cols: tl.i32, row_stride: tl.i32,
                    BLOCK_SIZE: tl.constexpr):
    """``y = exp(x - max(x)) / sum(exp(x - max(x)))`` along each row."""
    ACC = compute_dtype(D)  # f32, or f64 for f64 data
    row = tl.program_id(0)
    x_row = x_ptr + row * row_stride
    y_row = y_ptr + row * row_stride
    m, s = row_max_and_normalizer(x_row, n_cols, ACC, BLOCK_SIZE)
    cols = tl.arange(0, BLOCK_SIZE)
    for start in range(0, n_cols, BLOCK_SIZE):
        mask = start + cols < n_cols
        x = tl.load(x_row + start + cols, mask=mask, other=float("-inf")).to(ACC)
        tl.store(y_row + start + cols, (tl.exp(x - m) / s).to(D), mask=mask)


@eggpu.kernel
def softmax_backward(y_ptr: tl.Pointer[D], dy_ptr: tl.Pointer[D], dx_ptr: tl.Pointer[D], n_cols: tl.i32,
                     row_stride: tl.i32, BLOCK_SIZE: tl.constexpr):
    """``dx = y * (dy - sum(y * dy))`` along each row, from the forward's output ``y``."""
    ACC = compute_dtype(D)  # f32, or f64 for f64 data
    row = tl.program_id(0)
    y_row = y_ptr + row * row_stride
    dy_row = dy_ptr + row * row_stride
    dx_row = dx_ptr + row * row_stride
    cols = tl.arange(0, BLOCK_SIZE)
    acc = tl.zeros((BLOCK_SIZE,), dtype=ACC)
    for start in range(0, n_cols, BLOCK_SIZE):
        mask = start + cols < n_cols
        y = tl.load(y_row + start + cols, mask=mask, other=0.0).to(ACC)
        dy = tl.load(dy_row + start + cols, mask=mask, other=0.0).to(ACC)
        acc += y * dy
    y_dot_dy = tl.sum(acc, axis=0)
    for start in range(0, n_cols, BLOCK_SIZE):
        mask = start + cols < n_cols
        y = tl.load(y_row + start + cols, mask=mask, other=0.0).to(ACC)
        dy = tl.load(dy_row + start + cols, mask=mask, other=0.0).to(ACC)
        tl.store(dx_row + start + cols, (y * (dy - y_dot_dy)).to(D), mask=mask)


@eggpu.kernel
def log_softmax_forward(x_ptr: tl.Pointer[D], y_ptr: tl.Pointer[D], n_cols: tl.i32, row_stride: tl.i32,
                        BLOCK_SIZE: tl.constexpr):
    """``y = x - max(x) - log(sum(exp(x - max(x))))`` along each row."""
    ACC = compute_dtype(D)  # f32, or f64 for f64 data
    row = tl.program_id(0)
    x_row = x_ptr + row * row_stride
    y_row = y_ptr + row * row_stride
    m, s = row_max_and_normalizer(x_row, n_cols, ACC, BLOCK_SIZE)
    log_s = tl.log(s)
    cols = tl.arange(0, BLOCK_SIZE)
    for start in range(0, n_cols, BLOCK_SIZE):
        mask = start + cols < n_cols
        x = tl.load(x_row + start + cols, mask=mask, other=0.0).to(ACC)
        tl.store(y_row + start + cols, (x - m - log_s).to(D), mask=mask)
