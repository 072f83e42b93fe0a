"""The tiled matmul's pieces as ``@eggpu.jit`` helpers, which a kernel calls and the compiler inlines.

A kernel written with them gives the same IR as the one with their bodies typed out (the
frontend inlines calls and the IR hash-conses equal values). Shared by the tensor-core tests
(``tests/codegen/test_mma*.py``) so each test's kernel shows only what it varies. Operands are
row-major and packed: A is ``M x K``, B is ``K x N``, C is ``M x N``; every access is masked to
the matrices, and a masked-off load reads 0.
"""

from __future__ import annotations

import eggpu
import eggpu.language as tl


@eggpu.jit
def tile_start(BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """``(rm, rn, rk, acc)``: this program's rows and columns of C (grid axes 0 and 1), the K
    offsets of one step, and a zero ``BM x BN`` f32 accumulator."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    return rm, rn, rk, tl.zeros((BM, BN), dtype=tl.float32)


@eggpu.jit
def load_ab(a_ptr, b_ptr, rm, rn, ka, M, N, K):
    """The A tile ``A[rm, ka]`` and the B tile ``B[ka, rn]`` (0 outside the matrices)."""
    a = tl.load(a_ptr + rm[:, None] * K + ka[None, :], mask=(rm[:, None] < M) & (ka[None, :] < K), other=0.0)
    b = tl.load(b_ptr + ka[:, None] * N + rn[None, :], mask=(ka[:, None] < K) & (rn[None, :] < N), other=0.0)
    return a, b


@eggpu.jit
def store_c(c_ptr, acc, rm, rn, M, N):
    """``C[rm, rn] = acc`` inside the matrix."""
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@eggpu.jit
def k_loop(a_ptr, b_ptr, rm, rn, rk, acc, M, N, K, BK: tl.constexpr):
    """``acc`` plus ``A[rm, :] @ B[:, rn]``, one ``BK`` step of K at a time with ``tl.dot(a, b, acc)``
    (the tiled matmul's K loop; steps past K read zeros)."""
    for k in range(0, K, BK):
        a, b = load_ab(a_ptr, b_ptr, rm, rn, k + rk, M, N, K)
        acc = tl.dot(a, b, acc)
    return acc
