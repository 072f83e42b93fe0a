"""Layer norm (forward and backward) and RMS norm over the rows of a ``[rows, n_cols]`` buffer.

One program per row; rows start ``row_stride`` elements apart. Each row is walked in tiles of
``BLOCK_SIZE`` columns with masked lanes, so any ``n_cols`` works. Arithmetic is in f32 (f64 for
f64 data, see :func:`~eggpu.kernels.common.compute_dtype`); the per-row ``mean``/``rstd`` are
saved as f32 whatever the data's dtype.

The layer-norm backward accumulates ``dweight``/``dbias`` (f32, zero-initialised by the caller)
across rows with ``atomic_add``: every row-program adds into the same columns, so a plain
load-add-store would lose updates (teenygrad's bug B3).
"""

from __future__ import annotations

from typing import TypeVar

import eggpu
import eggpu.language as tl

from .common import compute_dtype

D = TypeVar("D", bound=tl.Float)


@eggpu.kernel(backward="layer_norm_backward")
def layer_norm_forward(x_ptr: tl.Pointer[D], y_ptr: tl.Pointer[D], weight_ptr: tl.Pointer[D],
                       bias_ptr: tl.Pointer[D], mean_ptr: tl.Pointer[tl.f32], rstd_ptr: tl.Pointer[tl.f32],
                       n_cols: tl.i32, row_stride: tl.i32, eps: tl.f32, BLOCK_SIZE: tl.constexpr):
    """``y = (x - mean) * rstd * weight + bias`` with ``rstd = 1/sqrt(var + eps)`` (biased var).

    Stores ``mean[row]`` and ``rstd[row]`` for the backward.
    """
    ACC = compute_dtype(D)  # f32, or f64 for f64 data
    row = tl.program_id(0)
    x_row = x_ptr + row * row_stride
    y_row = y_ptr + row * row_stride
    cols = tl.arange(0, BLOCK_SIZE)
    acc = tl.zeros((BLOCK_SIZE,), dtype=ACC)
    for start in range(0, n_cols, BLOCK_SIZE):
        mask = start + cols < n_cols
        acc += tl.load(x_row + start + cols, mask=mask, other=0.0).to(ACC)
    mean = tl.sum(acc, axis=0) / n_cols
    acc2 = tl.zeros((BLOCK_SIZE,), dtype=ACC)
    for start in range(0, n_cols, BLOCK_SIZE):
        mask = start + cols < n_cols
        x = tl.load(x_row + start + cols, mask=mask, other=0.0).to(ACC)
        d = tl.where(mask, x - mean, 0.0)
        acc2 += d * d
    rstd = tl.rsqrt(tl.sum(acc2, axis=0) / n_cols + eps)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)
    for start in range(0, n_cols, BLOCK_SIZE):
        mask = start + cols < n_cols
        x = tl.load(x_row + start + cols, mask=mask, other=0.0).to(ACC)
        w = tl.load(weight_ptr + start + cols, mask=mask, other=0.0).to(ACC)
        b = tl.load(bias_ptr + start + cols, mask=mask, other=0.0).to(ACC)
        tl.store(y_row + start + cols, ((x - mean) * rstd * w + b).to(D), mask=mask)


@eggpu.kernel
def layer_norm_backward(x_ptr: tl.Pointer[D], dy_ptr: tl.Pointer[D], weight_ptr: tl.Pointer[D],
                        mean_ptr: tl.Pointer[tl.f32], rstd_ptr: tl.Pointer[tl.f32], dx_ptr: tl.Pointer[D],
                        dweight_ptr: tl.Pointer[tl.f32], dbias_ptr: tl.Pointer[tl.f32], n_cols: tl.i32,
                        row_stride: tl.i32, BLOCK_SIZE: tl.constexpr):
    """``dx = rstd * (g - mean(g) - xhat * mean(g * xhat))`` with ``g = dy * weight``,
    ``xhat = (x - mean) * rstd``; ``dweight += dy * xhat`` and ``dbias += dy`` (atomically).
    """
    ACC = compute_dtype(D)  # f32, or f64 for f64 data
    row = tl.program_id(0)
    x_row = x_ptr + row * row_stride
    dy_row = dy_ptr + row * row_stride
    dx_row = dx_ptr + row * row_stride
    mean = tl.load(mean_ptr + row)
    rstd = tl.load(rstd_ptr + row)
    cols = tl.arange(0, BLOCK_SIZE)
    acc_g = tl.zeros((BLOCK_SIZE,), dtype=ACC)
    acc_gx = tl.zeros((BLOCK_SIZE,), dtype=ACC)
    for start in range(0, n_cols, BLOCK_SIZE):
        mask = start + cols < n_cols
        x = tl.load(x_row + start + cols, mask=mask, other=0.0).to(ACC)
        dy = tl.load(dy_row + start + cols, mask=mask, other=0.0).to(ACC)
        w = tl.load(weight_ptr + start + cols, mask=mask, other=0.0).to(ACC)
        g = dy * w
        acc_g += g
        acc_gx += g * (x - mean) * rstd
    c1 = tl.sum(acc_g, axis=0) / n_cols
    c2 = tl.sum(acc_gx, axis=0) / n_cols
    for start in range(0, n_cols, BLOCK_SIZE):
        mask = start + cols < n_cols
        x = tl.load(x_row + start + cols, mask=mask, other=0.0).to(ACC)
        dy = tl.load(dy_row + start + cols, mask=mask, other=0.0).to(ACC)
        w = tl.load(weight_ptr + start + cols, mask=mask, other=0.0).to(ACC)
        xhat = (x - mean) * rstd
        tl.store(dx_row + start + cols, (rstd * (dy * w - c1 - xhat * c2)).to(D), mask=mask)
        tl.atomic_add(dweight_ptr + start + cols, dy * xhat, mask=mask)
        tl.atomic_add(dbias_ptr + start + cols, dy, mask=mask)


@eggpu.kernel
def rms_norm_forward(x_ptr: tl.Pointer[D], y_ptr: tl.Pointer[D], weight_ptr: tl.Pointer[D], n_cols: tl.i32,
                     row_stride: tl.i32, eps: tl.f32, BLOCK_SIZE: tl.constexpr):
    """``y = x * rsqrt(mean(x^2) + eps) * weight`` along each row."""
    ACC = compute_dtype(D)  # f32, or f64 for f64 data
    row = tl.program_id(0)
    x_row = x_ptr + row * row_stride
    y_row = y_ptr + row * row_stride
    cols = tl.arange(0, BLOCK_SIZE)
    acc = tl.zeros((BLOCK_SIZE,), dtype=ACC)
    for start in range(0, n_cols, BLOCK_SIZE):
        mask = start + cols < n_cols
        x = tl.load(x_row + start + cols, mask=mask, other=0.0).to(ACC)
        acc += x * x
    rstd = tl.rsqrt(tl.sum(acc, axis=0) / n_cols + eps)
    for start in range(0, n_cols, BLOCK_SIZE):
        mask = start + cols < n_cols
        x = tl.load(x_row + start + cols, mask=mask, other=0.0).to(ACC)
        w = tl.load(weight_ptr + start + cols, mask=mask, other=0.0).to(ACC)
        tl.store(y_row + start + cols, (x * rstd * w).to(D), mask=mask)
