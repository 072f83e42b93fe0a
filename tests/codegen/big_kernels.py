"""Big kernels shared by tests/codegen/test_big_kernels.py and the subprocess it starts.

``attn_bwd`` has the shape of the fused-attention backward pass (Triton tutorial 06): per
program a ``BLOCK x HEAD`` tile of keys and values, a loop over query tiles with four
``tl.dot`` on ``BLOCK x BLOCK`` / ``BLOCK x HEAD`` blocks, and three loop-carried accumulators
(``dk``, ``dv`` and a row sum). :func:`attn_bwd_reference` computes the same in float64.
"""

from __future__ import annotations

import numpy as np

import eggpu
import eggpu.language as tl
from bench.big import kernels

# the fused-attention backward of bench/big_kernels.py (the benchmark compiles it with Triton too)
attn_bwd = kernels("eggpu").attn_bwd


def attn_bwd_inputs(n_ctx: int, head: int, seed: int = 0) -> list:
    """Arguments of ``attn_bwd`` (outputs ``DK``, ``DV`` zeroed) for ``n_ctx`` rows."""
    rng = np.random.default_rng(seed)
    q, k, v, do = (rng.standard_normal((n_ctx, head)).astype(np.float32) * 0.1 for _ in range(4))
    m, d = (rng.standard_normal(n_ctx).astype(np.float32) * 0.1 for _ in range(2))
    return [q, k, v, do, m, d, np.zeros((n_ctx, head), np.float32), np.zeros((n_ctx, head), np.float32), n_ctx]


def attn_bwd_reference(args: list) -> tuple[np.ndarray, np.ndarray]:
    """``(dk, dv)`` of :func:`attn_bwd` in float64."""
    q, k, v, do, m, d = (np.asarray(a, np.float64) for a in args[:6])
    p_t = np.exp(k @ q.T - m[None, :])
    dv = p_t @ do
    ds_t = p_t * (v @ do.T - d[None, :])
    return ds_t @ q, dv / (1.0 + p_t.sum(1))[:, None]


def run_attn_bwd_on_cpu(block: int = 64, head: int = 64) -> str:
    """Build ``attn_bwd`` for the host, run it on two key tiles, compare with numpy; a line of text."""
    from eggpu.codegen import build_host

    n_ctx = 2 * block
    args = attn_bwd_inputs(n_ctx, head)
    kern = attn_bwd.specialize(*args, BLOCK=block, HEAD=head)
    hk = build_host(kern.ir())
    hk.run((n_ctx // block,), *args)
    rdk, rdv = attn_bwd_reference(args)
    np.testing.assert_allclose(args[6], rdk, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(args[7], rdv, rtol=1e-4, atol=1e-5)
    return f"ok stack_bytes={hk.stack_bytes}"


@eggpu.jit
def wide_dot(A, B, C, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """``C[pid] = A[pid] @ B`` on one ``BM x BK`` by ``BK x BN`` tile: ``dot`` stages both
    operands in shared memory, ``4 * BK * (BM + BN)`` bytes (96 KiB at 16, 32, 512)."""
    pid = tl.program_id(0)
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = tl.load(A + pid * BM * BK + rm[:, None] * BK + rk[None, :])
    b = tl.load(B + rk[:, None] * BN + rn[None, :])
    tl.store(C + pid * BM * BN + rm[:, None] * BN + rn[None, :], tl.dot(a, b))


def wide_dot_inputs(programs: int = 2, bm: int = 16, bn: int = 32, bk: int = 512, seed: int = 0) -> list:
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((programs * bm, bk)).astype(np.float32)
    b = rng.standard_normal((bk, bn)).astype(np.float32)
    return [a, b, np.zeros((programs * bm, bn), np.float32)]
