"""Cross-entropy loss over the rows of a ``[rows, n_cols]`` logits buffer.

One program per row (rows start ``row_stride`` elements apart). The row's log-sum-exp is
computed in tiles of ``BLOCK_SIZE`` columns with an online max (masked lanes load ``-inf`` and
so add ``exp(-inf) = 0``, unlike teenygrad's bug B2), so rows of any length are correct.
Arithmetic is in f32 (f64 for f64 logits); the loss is stored as f32.
"""

from __future__ import annotations

from typing import TypeVar

import eggpu
import eggpu.language as tl

from .common import compute_dtype

D = TypeVar("D", bound=tl.Float)


@eggpu.kernel
def cross_entropy_forward(logits_ptr: tl.Pointer[D], targets_ptr: tl.Pointer[tl.i32],
                          loss_ptr: tl.Pointer[tl.f32], n_cols: tl.i32, row_stride: tl.i32,
                          BLOCK_SIZE: tl.constexpr):
    """``loss[row] = logsumexp(x[row]) - x[row, target[row]]`` (f32).

    A target outside ``[0, n_cols)`` (e.g. PyTorch's ``ignore_index = -100``) gives loss 0 and
    is never used to address memory.
    """
    ACC = compute_dtype(D)  # f32, or f64 for f64 data
    row = tl.program_id(0)
    x_row = logits_ptr + row * row_stride
    cols = tl.arange(0, BLOCK_SIZE)
    m = float("-inf")
    s = 0.0
    for start in range(0, n_cols, BLOCK_SIZE):
        mask = start + cols < n_cols
        x = tl.load(x_row + start + cols, mask=mask, other=float("-inf")).to(ACC)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    target = tl.load(targets_ptr + row)
    valid = (target >= 0) & (target < n_cols)
    x_target = tl.load(x_row + tl.where(valid, target, 0)).to(ACC)
    tl.store(loss_ptr + row, tl.where(valid, m + tl.log(s) - x_target, 0.0))
