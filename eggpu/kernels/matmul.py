"""Tiled matrix multiply ``C = A @ B``.

A 2-D grid: program ``(i, j)`` computes the ``BLOCK_M x BLOCK_N`` tile of ``C`` at rows
``i*BLOCK_M`` and columns ``j*BLOCK_N``; grid ``(cdiv(M, BLOCK_M), cdiv(N, BLOCK_N))``. The K
dimension is walked in steps of ``BLOCK_K`` with ``tl.dot`` accumulating in f32; the result is
rounded to ``D`` once, at the store. Every load and the store are masked, so ``M``, ``N`` and
``K`` need not be multiples of the tiles. Strides are runtime arguments (in elements), so any
row- or column-major layout of ``A``, ``B`` and ``C`` works. Supported dtypes are f16, bf16 and
f32: ``dot`` accumulates in f32, so an f64 matmul would silently lose precision.
"""

from __future__ import annotations

from typing import TypeVar

import eggpu
import eggpu.language as tl

D = TypeVar("D", bound=tl.Float)


@eggpu.kernel(dtypes=[tl.f16, tl.bf16, tl.f32])
def matmul(a_ptr: tl.Pointer[D], b_ptr: tl.Pointer[D], c_ptr: tl.Pointer[D], M: tl.i32, N: tl.i32, K: tl.i32,
           stride_am: tl.i32, stride_ak: tl.i32, stride_bk: tl.i32, stride_bn: tl.i32,
           stride_cm: tl.i32, stride_cn: tl.i32,
           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """``C[M, N] = A[M, K] @ B[K, N]`` with f32 accumulation."""
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.f32)
    for k in range(0, K, BLOCK_K):
        ka = k + rk
        a_mask = (rm[:, None] < M) & (ka[None, :] < K)
        a = tl.load(a_ptr + rm[:, None] * stride_am + ka[None, :] * stride_ak, mask=a_mask, other=0.0)
        b_mask = (ka[:, None] < K) & (rn[None, :] < N)
        b = tl.load(b_ptr + ka[:, None] * stride_bk + rn[None, :] * stride_bn, mask=b_mask, other=0.0)
        acc = tl.dot(a, b, acc=acc)
    c_mask = (rm[:, None] < M) & (rn[None, :] < N)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn, acc.to(D), mask=c_mask)
