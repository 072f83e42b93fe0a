"""Elementwise kernels: vector add, GELU (erf form) and ReLU, forward and backward.

All are 1-D: one program handles ``BLOCK_SIZE`` consecutive elements, lanes past ``n`` are masked
(so any ``n >= 1`` works with any block size), and the grid is ``cdiv(n, BLOCK_SIZE)``. Vector
add and ReLU work in the data's dtype (their results are exact or correctly rounded); GELU
computes in f32 (f64 for f64 data) and rounds once when it stores.
"""

from __future__ import annotations

from typing import TypeVar

import eggpu
import eggpu.language as tl

from .common import compute_dtype

D = TypeVar("D", bound=tl.Float)
N = TypeVar("N", bound=tl.Num)


@eggpu.kernel
def vector_add(x_ptr: tl.Pointer[D], y_ptr: tl.Pointer[D], out_ptr: tl.Pointer[D], n: tl.i32,
               BLOCK_SIZE: tl.constexpr):
    """``out[i] = x[i] + y[i]`` for ``i < n``."""
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    y = tl.load(y_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, x + y, mask=mask)


@eggpu.kernel(backward="gelu_backward")
def gelu_forward(x_ptr: tl.Pointer[D], y_ptr: tl.Pointer[D], n: tl.i32, BLOCK_SIZE: tl.constexpr):
    """Exact GELU ``y = 0.5 * x * (1 + erf(x / sqrt(2)))`` (not the tanh approximation)."""
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(compute_dtype(D))
    y = 0.5 * x * (1.0 + tl.erf(x * 0.7071067811865476))  # 0.707... = 1/sqrt(2)
    tl.store(y_ptr + offs, y.to(D), mask=mask)


@eggpu.kernel
def gelu_backward(x_ptr: tl.Pointer[D], dy_ptr: tl.Pointer[D], dx_ptr: tl.Pointer[D], n: tl.i32,
                  BLOCK_SIZE: tl.constexpr):
    """``dx = dy * (Phi(x) + x * phi(x))``: Phi the normal CDF, phi = exp(-x^2/2)/sqrt(2*pi)."""
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(compute_dtype(D))
    dy = tl.load(dy_ptr + offs, mask=mask, other=0.0).to(compute_dtype(D))
    cdf = 0.5 * (1.0 + tl.erf(x * 0.7071067811865476))
    pdf = 0.3989422804014327 * tl.exp(-0.5 * x * x)  # 0.398... = 1/sqrt(2*pi)
    tl.store(dx_ptr + offs, (dy * (cdf + x * pdf)).to(D), mask=mask)


@eggpu.kernel(backward="relu_backward")
def relu_forward(x_ptr: tl.Pointer[N], y_ptr: tl.Pointer[N], n: tl.i32, BLOCK_SIZE: tl.constexpr):
    """``y = max(x, 0)`` on any numeric dtype (NaN gives 0: IEEE maximumNumber)."""
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    tl.store(y_ptr + offs, tl.maximum(x, 0), mask=mask)


@eggpu.kernel
def relu_backward(y_ptr: tl.Pointer[N], dy_ptr: tl.Pointer[N], dx_ptr: tl.Pointer[N], n: tl.i32,
                  BLOCK_SIZE: tl.constexpr):
    """``dx = where(y > 0, dy, 0)``, from the forward's *output* ``y`` (as teenygrad does)."""
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n
    y = tl.load(y_ptr + offs, mask=mask, other=0)
    dy = tl.load(dy_ptr + offs, mask=mask, other=0)
    tl.store(dx_ptr + offs, tl.where(y > 0, dy, 0), mask=mask)
