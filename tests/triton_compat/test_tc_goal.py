"""Issue 11's goal, measured on a representative set: kernels written as Triton's tutorials 04
(low-memory dropout) and 05 (layer norm, forward and the backward with its spin lock) and as the
kernels of Triton's ``test_core.py`` that use while loops, scans, combine-function reductions,
joins, gathers, histograms and random numbers — each with only the import and the decorator
changed (``import eggpu as triton`` / ``import eggpu.language as tl``), launched with
``kernel[grid](...)`` and compared with numpy in the interpreter and the compiled CPU lowering.
(The tutorials' kernels are those of the compatibility harness, bench/compat_kernels.py, re-typed
in the tutorials' structure; ``python -m bench.compat`` gives the count over tutorials 01-08.)"""

from __future__ import annotations

import numpy as np
import pytest

import eggpu as triton
import eggpu.language as tl
from bench import compat, compat_core

# ---------------------------------------------------------------- tutorial 04: low-memory dropout


# The tutorials' kernels live in the compatibility harness's dual source file (bench/compat_kernels.py).
_TUTORIALS = compat.load("eggpu")
_seeded_dropout = _TUTORIALS._seeded_dropout


def _philox_first_word(seed, offsets):
    m = 0xFFFFFFFF
    out = []
    for o in offsets:
        c, k = [o & m, 0, 0, 0], [seed & m, (seed % 2**64) >> 32]
        for _ in range(10):
            p0, p1 = 0xD2511F53 * c[0], 0xCD9E8D57 * c[2]
            c = [(p1 >> 32) ^ c[1] ^ k[0], p1 & m, (p0 >> 32) ^ c[3] ^ k[1], p0 & m]
            k = [(k[0] + 0x9E3779B9) & m, (k[1] + 0xBB67AE85) & m]
        out.append(c[0])
    return np.array(out, np.uint64).astype(np.uint32)


@pytest.mark.parametrize("n", [1, 1000, 1001])
def test_tutorial_04_seeded_dropout(run_both, n):
    x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    res = run_both(_seeded_dropout, (triton.cdiv(n, 256),), x, np.zeros(n, np.float32), n, 0.5, 123,
                   BLOCK_SIZE=256)
    w = _philox_first_word(123, range(n)).view(np.int32).astype(np.int64)
    u = np.where(w < 0, -w - 1, w).astype(np.float32) * np.float32(4.656613e-10)
    want = np.where(u > np.float32(0.5), x / np.float32(0.5), np.float32(0.0))
    for device, (_, out) in res.items():
        np.testing.assert_array_equal(out, want, err_msg=device)


# ---------------------------------------------------------------- tutorial 05: layer norm


_layer_norm_fwd_fused = _TUTORIALS._layer_norm_fwd_fused
_layer_norm_bwd_dx_fused = _TUTORIALS._layer_norm_bwd_dx_fused
_layer_norm_bwd_dwdb = _TUTORIALS._layer_norm_bwd_dwdb


@pytest.mark.parametrize("m,n", [(10, 781), (3, 1)])
def test_tutorial_05_layer_norm(run_both, m, n):
    rng = np.random.default_rng(m * n)
    x = (-2.3 + 0.5 * rng.standard_normal((m, n))).astype(np.float32)
    w, b = rng.random(n).astype(np.float32), rng.random(n).astype(np.float32)
    dy = (0.1 * rng.standard_normal((m, n))).astype(np.float32)
    block = triton.next_power_of_2(n)
    eps = 1e-5
    fwd = run_both(_layer_norm_fwd_fused, (m,), x, np.zeros_like(x), w, b, np.zeros(m, np.float32),
                   np.zeros(m, np.float32), n, n, eps, BLOCK_SIZE=min(block, 256))
    mu = x.mean(axis=1, dtype=np.float64)
    rs = 1 / np.sqrt(x.var(axis=1, dtype=np.float64) + eps)
    xhat = (x - mu[:, None]) * rs[:, None]
    y = xhat * w + b
    for device, (_, yo, _, _, mo, ro) in fwd.items():
        np.testing.assert_allclose(yo, y, atol=1e-4, err_msg=device)
        np.testing.assert_allclose(mo, mu, rtol=1e-5, err_msg=device)
        np.testing.assert_allclose(ro, rs, rtol=1e-4, err_msg=device)
    group = 4
    mean, rstd = mu.astype(np.float32), rs.astype(np.float32)
    bwd = run_both(_layer_norm_bwd_dx_fused, (m,), np.zeros_like(x), dy, np.zeros((group, n), np.float32),
                   np.zeros((group, n), np.float32), x, w, mean, rstd, np.zeros(2 * group, np.int32), n, n,
                   GROUP_SIZE_M=group, BLOCK_SIZE_N=block)
    wdy = w * dy
    c1 = (xhat * wdy).sum(axis=1, keepdims=True) / n
    c2 = wdy.sum(axis=1, keepdims=True) / n
    dx = (wdy - (xhat * c1 + c2)) * rs[:, None]
    for device, (dxo, _, dwp, dbp, _, _, _, _, locks) in bwd.items():
        np.testing.assert_allclose(dxo, dx, atol=1e-4, err_msg=device)
        assert (locks[:group] == 0).all()  # every lock released
        final = run_both(_layer_norm_bwd_dwdb, (triton.cdiv(n, 128),), dwp, dbp, np.zeros(n, np.float32),
                         np.zeros(n, np.float32), min(group, m), n, BLOCK_SIZE_M=32, BLOCK_SIZE_N=128)
        for d2, (_, _, dwo, dbo) in final.items():
            np.testing.assert_allclose(dwo, (dy * xhat).sum(axis=0), atol=1e-4, err_msg=f"{device}/{d2}")
            np.testing.assert_allclose(dbo, dy.sum(axis=0), atol=1e-4, err_msg=f"{device}/{d2}")


# ---------------------------------------------------------------- test_core.py-style kernels


@triton.jit
def _while_kernel(InitI, Bound, CutOff, OutI, OutInitI, OutJ):
    init_i = tl.load(InitI)
    curr_i = init_i
    j = 0
    while j < tl.load(Bound):  # a runtime bound re-read in every condition
        if curr_i > tl.load(CutOff):
            curr_i += 1
        else:
            curr_i += 2
        j += 1
    tl.store(OutI, curr_i)
    tl.store(OutInitI, init_i)
    tl.store(OutJ, j)


def test_core_while(run_both):
    res = run_both(_while_kernel, (1,), np.array([1], np.int32), np.array([10], np.int32),
                   np.array([5], np.int32), np.zeros(1, np.int32), np.zeros(1, np.int32), np.zeros(1, np.int32))
    for device, (*_, oi, oinit, oj) in res.items():
        assert (oi[0], oinit[0], oj[0]) == (1 + 2 * 3 + 1 * 7, 1, 10), device


# test_core's scan and histogram kernels, as the test_core catalogue (bench/compat_core_kernels2.py) has them
_CORE = compat_core.load("eggpu")
_scan_kernel = _CORE.cumsum_kernel


@pytest.mark.parametrize("axis", [0, 1])
def test_core_scan2d(run_both, axis):
    x = np.random.default_rng(axis).integers(-9, 9, (8, 32)).astype(np.int32)
    res = run_both(_scan_kernel, (1,), x, np.zeros_like(x), BLOCK_M=8, BLOCK_N=32, AXIS=axis)
    for device, (_, z) in res.items():
        np.testing.assert_array_equal(z, np.cumsum(x, axis=axis), err_msg=device)


@triton.jit
def _join_kernel(X, Y, Z, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(X + offs)
    y = tl.load(Y + offs)
    z = tl.join(x, y)
    tl.static_assert(z.shape[0] == N)
    tl.static_assert(z.shape[1] == 2)
    tl.store(Z + 2 * tl.arange(0, N)[:, None] + tl.arange(0, 2)[None, :], z)


def test_core_join(run_both):
    x, y = np.arange(16, dtype=np.int32), np.arange(100, 116, dtype=np.int32)
    res = run_both(_join_kernel, (1,), x, y, np.zeros(32, np.int32), N=16)
    for device, (*_, z) in res.items():
        np.testing.assert_array_equal(z, np.stack([x, y], -1).ravel(), err_msg=device)


_histogram_kernel = _CORE.histogram_kernel


def test_core_histogram(run_both):
    x = np.random.default_rng(2).integers(0, 32, 256).astype(np.int32)
    res = run_both(_histogram_kernel, (1,), x, np.zeros(32, np.int32), M=256, N=32)
    for device, (_, z) in res.items():
        np.testing.assert_array_equal(z, np.bincount(x, minlength=32), err_msg=device)


@triton.jit
def _gather_kernel(src_ptr, idx_ptr, out_ptr, axis: tl.constexpr, src_dim0: tl.constexpr, src_dim1: tl.constexpr,
                   src_stride0: tl.constexpr, src_stride1: tl.constexpr, idx_dim0: tl.constexpr,
                   idx_dim1: tl.constexpr, idx_stride0: tl.constexpr, idx_stride1: tl.constexpr,
                   out_dim0: tl.constexpr, out_dim1: tl.constexpr, out_stride0: tl.constexpr,
                   out_stride1: tl.constexpr):
    src_offs = (tl.arange(0, src_dim0)[:, None] * src_stride0 + tl.arange(0, src_dim1)[None, :] * src_stride1)
    src = tl.load(src_ptr + src_offs)
    idx_offs = (tl.arange(0, idx_dim0)[:, None] * idx_stride0 + tl.arange(0, idx_dim1)[None, :] * idx_stride1)
    idx = tl.load(idx_ptr + idx_offs)
    out = tl.gather(src, idx, axis)
    out_offs = (tl.arange(0, out_dim0)[:, None] * out_stride0 + tl.arange(0, out_dim1)[None, :] * out_stride1)
    tl.store(out_ptr + out_offs, out)


def test_core_gather(run_both):
    rng = np.random.default_rng(3)
    src = rng.standard_normal((4, 16)).astype(np.float32)
    idx = rng.integers(0, 4, (8, 16)).astype(np.int32)
    res = run_both(_gather_kernel, (1,), src, idx, np.zeros((8, 16), np.float32), 0, 4, 16, 16, 1, 8, 16, 16, 1,
                   8, 16, 16, 1)
    for device, (*_, out) in res.items():
        np.testing.assert_array_equal(out, np.take_along_axis(src, idx, 0), err_msg=device)
