"""Row reductions: sum, max and argmax of each row of a ``[rows, n_cols]`` buffer.

One program per row (rows start ``row_stride`` elements apart); the row is walked in tiles of
``BLOCK_SIZE`` columns with masked lanes, so any ``n_cols >= 1`` works (teenygrad's reductions
did a single tile, bug B7). Masked lanes load the reduction's identity: ``0`` for the sum,
``-inf`` for max and argmax. The sum accumulates in f32 (f64 for f64 data); max and argmax
work in the data's dtype (they are exact).
"""

from __future__ import annotations

from typing import TypeVar

import eggpu
import eggpu.language as tl

from .common import compute_dtype

D = TypeVar("D", bound=tl.Float)


@eggpu.kernel
def row_sum(x_ptr: tl.Pointer[D], out_ptr: tl.Pointer[D], n_cols: tl.i32, row_stride: tl.i32,
            BLOCK_SIZE: tl.constexpr):
    """``out[row] = sum(x[row, :n_cols])``."""
    ACC = compute_dtype(D)  # f32, or f64 for f64 data
    row = tl.program_id(0)
    x_row = x_ptr + row * row_stride
    cols = tl.arange(0, BLOCK_SIZE)
    acc = tl.zeros((BLOCK_SIZE,), dtype=ACC)
    for start in range(0, n_cols, BLOCK_SIZE):
        mask = start + cols < n_cols
        acc += tl.load(x_row + start + cols, mask=mask, other=0.0).to(ACC)
    tl.store(out_ptr + row, tl.sum(acc, axis=0).to(D))


@eggpu.kernel
def row_max(x_ptr: tl.Pointer[D], out_ptr: tl.Pointer[D], n_cols: tl.i32, row_stride: tl.i32,
            BLOCK_SIZE: tl.constexpr):
    """``out[row] = max(x[row, :n_cols])`` (NaN is ignored unless the whole row is NaN)."""
    row = tl.program_id(0)
    x_row = x_ptr + row * row_stride
    cols = tl.arange(0, BLOCK_SIZE)
    acc = tl.full((BLOCK_SIZE,), float("-inf"), dtype=D)
    for start in range(0, n_cols, BLOCK_SIZE):
        mask = start + cols < n_cols
        acc = tl.maximum(acc, tl.load(x_row + start + cols, mask=mask, other=float("-inf")))
    tl.store(out_ptr + row, tl.max(acc, axis=0))


@eggpu.kernel
def row_argmax(x_ptr: tl.Pointer[D], out_ptr: tl.Pointer[tl.i32], n_cols: tl.i32, row_stride: tl.i32,
               BLOCK_SIZE: tl.constexpr):
    """``out[row] = argmax(x[row, :n_cols])``: the *first* index of the maximum, as numpy.

    Within a tile ``tl.argmax`` picks the first maximum; across tiles a later tile wins only if
    its maximum is strictly greater, so ties keep the earliest index. NaN is ignored (numpy
    would return the index of the first NaN).
    """
    row = tl.program_id(0)
    x_row = x_ptr + row * row_stride
    cols = tl.arange(0, BLOCK_SIZE)
    best = float("-inf")  # a row of -inf (or NaN) only gives index 0, as numpy
    best_idx = 0
    for start in range(0, n_cols, BLOCK_SIZE):
        mask = start + cols < n_cols
        x = tl.load(x_row + start + cols, mask=mask, other=float("-inf"))
        tile_max = tl.max(x, axis=0)
        better = tile_max > best
        best_idx = tl.where(better, start + tl.argmax(x, axis=0), best_idx)
        best = tl.where(better, tile_max, best)
    tl.store(out_ptr + row, best_idx)
