"""Compatibility harness: Triton's tutorial kernels (01-08) through eggpu with only the decorator changed.

The kernels are one dual source file (``bench/compat_kernels.py``, loaded by :mod:`bench.dual`):
the same text is executed for eggpu and for Triton, only its imports differ. Each :class:`Case`
builds numpy inputs on ragged sizes, launches one tutorial kernel as the tutorial does
(``kernel[grid](*args, **constexprs)``, autotuned where the tutorial autotunes) and compares every
output with a numpy reference. A case is run

* ``interpret`` — eggpu's numpy interpreter (``EGGPU_JIT_DEVICE=interpret``), and
* ``cpu`` — the compiled lowering on the CPU (``EGGPU_JIT_DEVICE=cpu``: ``eggpu.compile`` +
  ``CompiledKernel.run_cpu``, the code the PTX is generated from);

and with ``--triton`` each launch is also compiled by Triton to PTX (``triton.compile`` of an
``ASTSource`` with the launch's types, sm_90, no GPU needed), which shows the source is Triton's.

A case passes when every output matches numpy in both modes; otherwise the report gives the first
line of the error (eggpu's message names the feature and the source line) or the mismatch.

    python -m bench.compat [--only NAME ...] [--triton] [--json OUT.json]

The last run's results are kept in ``bench/results/compat.json`` (``--triton --json`` that file).
"""

from __future__ import annotations

import argparse
import inspect
import json
import math
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from bench import dual

SOURCE = Path(__file__).with_name("compat_kernels.py")
_REPO = str(Path(__file__).resolve().parents[1]) + "/"
MODES = ("interpret", "cpu")

Check = tuple[str, np.ndarray, np.ndarray, float, float]  # name, got, want, rtol, atol
Launch = Callable[..., None]


def load(backend: str) -> ModuleType:
    """The dual kernel file executed for ``backend`` (``"eggpu"`` or ``"triton"``)."""
    return dual.load(SOURCE, backend, "compat_kernels")


@dataclass(frozen=True)
class Case:
    name: str
    tutorial: str
    run: Callable[[ModuleType, Launch, np.random.Generator], list[Check]]


def _launch_eggpu(fn: Any, grid: Any, *args: Any, **kwargs: Any) -> None:
    fn[grid](*args, **kwargs)


# ---------------------------------------------------------------- the cases


def _vector_add(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    out: list[Check] = []
    for n in (1, 1000, 1001, 98432):
        x, y = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
        z = np.empty_like(x)
        launch(k.add_kernel, lambda meta, n=n: (math.ceil(n / meta["BLOCK_SIZE"]),), x, y, z, n, BLOCK_SIZE=1024)
        out.append((f"n={n}", z, x + y, 0.0, 0.0))
    return out


def _softmax(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    out: list[Check] = []
    for rows, cols, programs in ((1, 1, 1), (37, 781, 8), (20, 1000, 32)):
        x = rng.standard_normal((rows, cols)).astype(np.float32)
        y = np.zeros_like(x)
        block = 1 << max(cols - 1, 0).bit_length()
        launch(k.softmax_kernel, (programs, 1, 1), y, x, x.shape[1], y.shape[1], rows, cols, BLOCK_SIZE=block,
               num_stages=2)
        e = np.exp(x - x.max(axis=1, keepdims=True))
        out.append((f"{rows}x{cols}", y, e / e.sum(axis=1, keepdims=True), 1e-5, 1e-7))
    return out


def _matmul(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    out: list[Check] = []
    for m, n, kk, act in ((70, 50, 90, ""), (1, 33, 7, "leaky_relu"), (64, 64, 64, "leaky_relu")):
        a = rng.standard_normal((m, kk)).astype(np.float16)
        b = rng.standard_normal((kk, n)).astype(np.float16)
        c = np.zeros((m, n), np.float16)
        grid = lambda meta, m=m, n=n: (math.ceil(m / meta["BLOCK_SIZE_M"]) * math.ceil(n / meta["BLOCK_SIZE_N"]),)  # noqa: E731
        launch(k.matmul_kernel, grid, a, b, c, m, n, kk, a.shape[1], 1, b.shape[1], 1, c.shape[1], 1,
               ACTIVATION=act)
        ref = a.astype(np.float32) @ b.astype(np.float32)
        if act:
            ref = np.where(ref >= 0, ref, 0.01 * ref)
        out.append((f"{m}x{n}x{kk} {act or 'none'}", c.astype(np.float32), ref.astype(np.float16).astype(np.float32),
                    1e-2, 1e-2))
    return out


def _dropout(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    out: list[Check] = []
    for n in (1, 1000, 1001):
        x = rng.standard_normal(n).astype(np.float32)
        keep = (rng.random(n) > 0.5).astype(np.int32)
        y = np.zeros_like(x)
        launch(k._dropout, (math.ceil(n / 1024),), x, keep, y, n, 0.5, BLOCK_SIZE=1024)
        out.append((f"n={n}", y, np.where(keep != 0, x / np.float32(0.5), np.float32(0)), 1e-6, 0.0))
    return out


def _philox_uniform(seed: int, offsets: np.ndarray) -> np.ndarray:
    """Triton's ``tl.rand(seed, offsets)``: Philox 4x32-10, first word, as a float in [0, 1)."""
    m = 0xFFFFFFFF
    words = []
    for o in offsets.tolist():
        c, key = [o & m, 0, 0, 0], [seed & m, (seed >> 32) & m]
        for _ in range(10):
            p0, p1 = 0xD2511F53 * c[0], 0xCD9E8D57 * c[2]
            c = [(p1 >> 32) ^ c[1] ^ key[0], p1 & m, (p0 >> 32) ^ c[3] ^ key[1], p0 & m]
            key = [(key[0] + 0x9E3779B9) & m, (key[1] + 0xBB67AE85) & m]
        words.append(c[0])
    w = np.array(words, np.uint64).astype(np.uint32).view(np.int32).astype(np.int64)
    return np.where(w < 0, -w - 1, w).astype(np.float32) * np.float32(4.656613e-10)


def _seeded_dropout(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    out: list[Check] = []
    for n in (1, 1000, 1001):
        x = rng.standard_normal(n).astype(np.float32)
        y = np.zeros_like(x)
        launch(k._seeded_dropout, (math.ceil(n / 1024),), x, y, n, 0.5, 123, BLOCK_SIZE=1024)
        keep = _philox_uniform(123, np.arange(n)) > np.float32(0.5)
        out.append((f"n={n}", y, np.where(keep, x / np.float32(0.5), np.float32(0)), 1e-6, 0.0))
    return out


def _ln_ref(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float):
    mean = x.mean(axis=1)
    rstd = 1 / np.sqrt(((x - mean[:, None]) ** 2).mean(axis=1) + eps)
    return (x - mean[:, None]) * rstd[:, None] * w + b, mean, rstd


def _layer_norm_fwd(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    out: list[Check] = []
    for m, n in ((1, 1), (10, 781), (3, 1001)):
        x = (-2.3 + 0.5 * rng.standard_normal((m, n))).astype(np.float32)
        w, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
        y, mean, rstd = np.zeros_like(x), np.zeros(m, np.float32), np.zeros(m, np.float32)
        launch(k._layer_norm_fwd_fused, (m,), x, y, w, b, mean, rstd, x.shape[1], n, 1e-5, BLOCK_SIZE=256)
        ry, rm, rr = _ln_ref(x.astype(np.float64), w, b, 1e-5)
        out += [(f"{m}x{n} y", y, ry, 1e-4, 1e-4), (f"{m}x{n} mean", mean, rm, 1e-5, 1e-6),
                (f"{m}x{n} rstd", rstd, rr, 1e-4, 1e-6)]
    return out


def _layer_norm_bwd_dx(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    out: list[Check] = []
    for m, n, group in ((1, 1, 4), (10, 781, 4), (33, 100, 8)):
        x = rng.standard_normal((m, n)).astype(np.float32)
        w = rng.random(n, dtype=np.float32)
        dy = (0.1 * rng.standard_normal((m, n))).astype(np.float32)
        _, mean, rstd = _ln_ref(x.astype(np.float64), w, np.zeros(n), 1e-5)
        mean, rstd = mean.astype(np.float32), rstd.astype(np.float32)
        dx = np.zeros_like(x)
        dw, db = np.zeros((group, n), np.float32), np.zeros((group, n), np.float32)
        locks = np.zeros(2 * group, np.int32)
        block = 1 << max(n - 1, 0).bit_length()
        launch(k._layer_norm_bwd_dx_fused, (m,), dx, dy, dw, db, x, w, mean, rstd, locks, x.shape[1], n,
               GROUP_SIZE_M=group, BLOCK_SIZE_N=block)
        xhat = (x - mean[:, None]) * rstd[:, None]
        wdy = w * dy
        c1 = (xhat * wdy).mean(axis=1, keepdims=True)
        c2 = wdy.mean(axis=1, keepdims=True)
        ref_dx = (wdy - (xhat * c1 + c2)) * rstd[:, None]
        ref_dw, ref_db = np.zeros((group, n)), np.zeros((group, n))
        for r in range(m):
            ref_dw[r % group] += dy[r] * xhat[r]
            ref_db[r % group] += dy[r]
        out += [(f"{m}x{n} dx", dx, ref_dx, 1e-4, 1e-5), (f"{m}x{n} partial dw", dw, ref_dw, 1e-4, 1e-5),
                (f"{m}x{n} partial db", db, ref_db, 1e-4, 1e-5), (f"{m}x{n} locks released", locks[:group],
                                                                   np.zeros(group), 0.0, 0.0)]
    return out


def _layer_norm_bwd_dwdb(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    out: list[Check] = []
    for m, n in ((1, 1), (64, 781), (37, 1001)):
        dw, db = rng.standard_normal((m, n)).astype(np.float32), rng.standard_normal((m, n)).astype(np.float32)
        fdw, fdb = np.zeros(n, np.float32), np.zeros(n, np.float32)
        launch(k._layer_norm_bwd_dwdb, lambda meta, n=n: (math.ceil(n / meta["BLOCK_SIZE_N"]),), dw, db, fdw, fdb,
               m, n, BLOCK_SIZE_M=32, BLOCK_SIZE_N=128)
        out += [(f"{m}x{n} dw", fdw, dw.sum(axis=0), 1e-4, 1e-4), (f"{m}x{n} db", fdb, db.sum(axis=0), 1e-4, 1e-4)]
    return out


def _attention_ref(q, k, v, causal: bool, sm_scale: float):
    s = (q.astype(np.float32) @ np.swapaxes(k.astype(np.float32), -1, -2)) * sm_scale
    if causal:
        n = s.shape[-1]
        s = np.where(np.tril(np.ones((n, n), bool)), s, -np.inf)
    mx = s.max(axis=-1, keepdims=True)
    p = np.exp(s - mx)
    lse = (mx[..., 0] + np.log(p.sum(axis=-1))) / np.log(2)  # the kernel's M: log2-sum-exp2 of s*log2(e)
    return (p / p.sum(axis=-1, keepdims=True)) @ v.astype(np.float32), lse


def _attention_fwd(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    out: list[Check] = []
    z, h, n_ctx, d, bm, bn = 1, 2, 64, 16, 16, 16
    for causal in (False, True):
        q, kk, v = (rng.standard_normal((z, h, n_ctx, d)).astype(np.float16) for _ in range(3))
        o = np.zeros_like(q)
        m = np.zeros((z * h, n_ctx), np.float32)
        sm_scale = 0.5
        strides = [s // 2 for s in q.strides]
        launch(k._attn_fwd, (n_ctx // bm, z * h, 1), q, kk, v, sm_scale, m, o, *strides, *strides, *strides,
               *strides, z, h, N_CTX=n_ctx, HEAD_DIM=d, BLOCK_M=bm, BLOCK_N=bn, STAGE=3 if causal else 1)
        ref_o, ref_m = _attention_ref(q, kk, v, causal, sm_scale)
        tag = "causal" if causal else "full"
        out += [(f"{tag} out", o.astype(np.float32), ref_o, 2e-2, 2e-2),
                (f"{tag} M", m, ref_m.reshape(z * h, n_ctx) * np.float32(1.0), 1e-3, 1e-3)]
    return out


def _attention_fwd_tma(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    """Triton 3.9's tutorial 06 forward: host TensorDescriptor arguments, autotuned (first config: 64x32)."""
    out: list[Check] = []
    z, h, n_ctx, d = 1, 2, 128, 32
    for causal in (False, True):
        q, kk, v = ((0.5 * rng.standard_normal((z, h, n_ctx, d))).astype(np.float16) for _ in range(3))
        o = np.zeros_like(q)
        m = np.zeros((z, h, n_ctx), np.float32)
        y_dim = z * h * n_ctx
        descs = [k.TensorDescriptor(x, shape=[y_dim, d], strides=[d, 1], block_shape=[1, 1]) for x in (q, kk, v, o)]
        desc_q, desc_k, desc_v, desc_o = descs
        grid = lambda meta: (math.ceil(n_ctx / meta["BLOCK_M"]), z * h, 1)  # noqa: E731
        launch(k._attn_fwd_tma, grid, 0.5, m, z, h, desc_q, desc_k, desc_v, desc_o, N_CTX=n_ctx, HEAD_DIM=d,
               FP8_OUTPUT=False, STAGE=3 if causal else 1)
        ref_o, ref_m = _attention_ref(q, kk, v, causal, 0.5)
        tag = "causal" if causal else "full"
        out += [(f"{tag} out", o.astype(np.float32), ref_o, 2e-2, 2e-2), (f"{tag} M", m, ref_m, 1e-3, 1e-3)]
    return out


def _attention_bwd_preprocess(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    z, h, n_ctx, d, bm = 2, 3, 48, 16, 16
    o = rng.standard_normal((z, h, n_ctx, d)).astype(np.float16)
    do = rng.standard_normal((z, h, n_ctx, d)).astype(np.float16)
    delta = np.zeros((z * h, n_ctx), np.float32)
    launch(k._attn_bwd_preprocess, (n_ctx // bm, z * h), o, do, delta, z, h, n_ctx, BLOCK_M=bm, HEAD_DIM=d)
    ref = (o.astype(np.float32) * do.astype(np.float32)).sum(axis=-1).reshape(z * h, n_ctx)
    return [("delta", delta, ref, 1e-3, 1e-3)]


def _attention_bwd(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    """The tutorial's causal backward: K pre-scaled by sm_scale / ln 2, M and Delta from the forward."""
    z, h, n_ctx, d = 1, 2, 128, 16
    bm1, bn1, bm2, bn2, slice_factor = 32, 128, 128, 32, 2  # the tutorial's blocks (Triton's dot needs >= 16)
    q, kk, v, do = ((0.5 * rng.standard_normal((z, h, n_ctx, d))).astype(np.float16) for _ in range(4))
    sm_scale = 0.5
    o, lse = _attention_ref(q, kk, v, True, sm_scale)  # lse: the forward's M (log2 units)
    m = lse.reshape(z * h, n_ctx).astype(np.float32)
    delta = (o.astype(np.float16).astype(np.float32) * do.astype(np.float32)).sum(axis=-1).reshape(z * h, n_ctx)
    arg_k = (kk.astype(np.float32) * (sm_scale * 1.4426950408889634)).astype(np.float16)
    dq, dk, dv = (np.zeros_like(q) for _ in range(3))
    strides = [st // 2 for st in q.strides]
    launch(k._attn_bwd, (n_ctx // bn1, 1, z * h), q, arg_k, v, sm_scale, do, dq, dk, dv, m, delta, *strides, h, n_ctx,
           BLOCK_M1=bm1, BLOCK_N1=bn1, BLOCK_M2=bm2, BLOCK_N2=bn2, BLK_SLICE_FACTOR=slice_factor, HEAD_DIM=d)
    # numpy: P = softmax(causal(Q K^T * s)); dV = P^T dO; dP = dO V^T; dS = P (dP - Delta); dQ = s dS K; dK = s dS^T Q
    qf, kf, vf, dof = (x.astype(np.float32) for x in (q, kk, v, do))
    s = (qf @ np.swapaxes(kf, -1, -2)) * sm_scale
    s = np.where(np.tril(np.ones((n_ctx, n_ctx), bool)), s, -np.inf)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)
    ref_dv = np.swapaxes(p, -1, -2) @ dof
    dp = dof @ np.swapaxes(vf, -1, -2)
    ds = p * (dp - delta.reshape(z, h, n_ctx)[..., None])
    ref_dq = sm_scale * ds @ kf
    ref_dk = sm_scale * np.swapaxes(ds, -1, -2) @ qf
    return [("dv", dv.astype(np.float32), ref_dv, 2e-2, 2e-2), ("dk", dk.astype(np.float32), ref_dk, 2e-2, 2e-2),
            ("dq", dq.astype(np.float32), ref_dq, 2e-2, 2e-2)]


def _asin(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    if k.LIBDEVICE_ERROR is not None:
        raise k.LIBDEVICE_ERROR
    out: list[Check] = []
    for n in (1, 1000, 1001):
        x = rng.random(n, dtype=np.float32)
        y = np.zeros_like(x)
        launch(k.asin_kernel, lambda meta, n=n: (math.ceil(n / meta["BLOCK_SIZE"]),), x, y, n, BLOCK_SIZE=1024)
        out.append((f"n={n}", y, np.arcsin(x), 1e-6, 1e-6))
    return out


def _pad16(n: int) -> int:
    return -(-n // 16) * 16


def _grouped_gemm(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    """Ragged group sizes (M, N, K not multiples of the 16x16x16 tiles; the tutorial's kernel has no
    masks, so each matrix lives in zero-padded storage whose leading dimension is passed in g_lds),
    f16 in, f32 accumulation, f16 out. The kernel loads each group's matrices by raw address from
    the int64 tables; the matrices reach it as ``buffers=`` (eggpu: interpret/run_cpu check every
    access against them)."""
    sizes = ((37, 20, 45), (16, 48, 16), (1, 33, 7), (64, 17, 30))
    a_s = [np.zeros((_pad16(m), _pad16(kk)), np.float16) for m, _, kk in sizes]
    b_s = [np.zeros((_pad16(kk), _pad16(n)), np.float16) for _, n, kk in sizes]
    for a, b, (m, n, kk) in zip(a_s, b_s, sizes):
        a[:m, :kk] = rng.standard_normal((m, kk))
        b[:kk, :n] = rng.standard_normal((kk, n))
    c_s = [np.zeros((_pad16(m), _pad16(n)), np.float16) for m, n, _ in sizes]
    ptrs = [np.array([x.ctypes.data for x in xs], np.int64) for xs in (a_s, b_s, c_s)]
    g_sizes = np.array([v for s in sizes for v in s], np.int32)
    g_lds = np.array([v for a, b, c in zip(a_s, b_s, c_s) for v in (a.shape[1], b.shape[1], c.shape[1])], np.int32)
    launch(k.grouped_matmul_kernel, (4,), *ptrs, g_sizes, g_lds, len(sizes), NUM_SM=4, BLOCK_SIZE_M=16,
           BLOCK_SIZE_N=16, BLOCK_SIZE_K=16, buffers=a_s + b_s + c_s)
    return [(f"gemm {i} {m}x{n}x{kk}", c[:m, :n].astype(np.float32),
             (a[:m, :kk].astype(np.float32) @ b[:kk, :n].astype(np.float32)).astype(np.float16).astype(np.float32),
             1e-2, 2e-2)
            for i, (a, b, c, (m, n, kk)) in enumerate(zip(a_s, b_s, c_s, sizes))]


def _block_pointer_matmul(k: ModuleType, launch: Launch, rng: np.random.Generator) -> list[Check]:
    out: list[Check] = []
    for m, n, kk in ((70, 50, 90), (1, 33, 7), (64, 64, 64)):
        a = rng.standard_normal((m, kk)).astype(np.float16)
        b = rng.standard_normal((kk, n)).astype(np.float16)
        c = np.zeros((m, n), np.float16)
        grid = (math.ceil(m / 32) * math.ceil(n / 32),)
        launch(k.matmul_kernel_with_block_pointers, grid, a, b, c, m, n, kk, a.shape[1], 1, b.shape[1], 1,
               c.shape[1], 1, BLOCK_SIZE_M=32, BLOCK_SIZE_N=32, BLOCK_SIZE_K=32, GROUP_SIZE_M=8)
        ref = (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16).astype(np.float32)
        out.append((f"{m}x{n}x{kk}", c.astype(np.float32), ref, 1e-2, 1e-2))
    return out


CASES: tuple[Case, ...] = (
    Case("add_kernel", "01 vector add", _vector_add),
    Case("softmax_kernel", "02 fused softmax", _softmax),
    Case("matmul_kernel", "03 matmul (autotune)", _matmul),
    Case("_dropout", "04 dropout", _dropout),
    Case("_seeded_dropout", "04 seeded dropout", _seeded_dropout),
    Case("_layer_norm_fwd_fused", "05 layer norm fwd", _layer_norm_fwd),
    Case("_layer_norm_bwd_dx_fused", "05 layer norm bwd dx", _layer_norm_bwd_dx),
    Case("_layer_norm_bwd_dwdb", "05 layer norm bwd dw/db", _layer_norm_bwd_dwdb),
    Case("_attn_fwd", "06 fused attention fwd", _attention_fwd),
    Case("_attn_fwd_tma", "06 attention fwd (descriptors)", _attention_fwd_tma),
    Case("_attn_bwd_preprocess", "06 attention bwd preprocess", _attention_bwd_preprocess),
    Case("_attn_bwd", "06 fused attention bwd", _attention_bwd),
    Case("asin_kernel", "07 libdevice asin", _asin),
    Case("grouped_matmul_kernel", "08 grouped GEMM", _grouped_gemm),
    Case("matmul_kernel_with_block_pointers", "08 block-pointer matmul", _block_pointer_matmul),
)
BY_NAME = {c.name: c for c in CASES}


# ---------------------------------------------------------------- running


def _first_line(e: BaseException, last: bool = False) -> str:
    """The error in one line: its first line (eggpu: the located message), or its last (Triton
    prints the source before the message)."""
    text = [ln for ln in str(e).strip().splitlines() if ln.strip()]
    line = (text[-1] if last else text[0]) if text else ""
    return f"{type(e).__name__}: {line.replace(_REPO, '')}"  # paths relative to the repository


def _mismatch(checks: list[Check]) -> str | None:
    for name, got, want, rtol, atol in checks:
        got = np.asarray(got, np.float64)
        want = np.asarray(want, np.float64)
        if got.shape != want.shape:
            return f"{name}: shape {got.shape} != {want.shape}"
        ok = np.isclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
        if not ok.all():
            i = np.unravel_index(int(np.argmin(ok)), ok.shape)
            return (f"{name}: {int((~ok).sum())} of {ok.size} elements differ, e.g. at {tuple(map(int, i))}: "
                    f"{float(got[i])!r} != {float(want[i])!r}")
    return None


def run_case(case: Case, mode: str, seed: int = 0, loader: Callable[[str], ModuleType] | None = None) -> str | None:
    """None when ``case`` matches numpy in ``mode``, else why not (one line). ``loader`` loads the
    kernel module for a backend (default: this file's tutorial kernels)."""
    old = os.environ.get("EGGPU_JIT_DEVICE")
    os.environ["EGGPU_JIT_DEVICE"] = mode
    try:
        checks = case.run((loader or load)("eggpu"), _launch_eggpu, np.random.default_rng(seed))
        return _mismatch(checks)
    except Exception as e:  # noqa: BLE001 - the harness reports every failure, it does not stop
        return _first_line(e)
    finally:
        if old is None:
            del os.environ["EGGPU_JIT_DEVICE"]
        else:
            os.environ["EGGPU_JIT_DEVICE"] = old


_TRITON_TYPES = {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32", "float64": "fp64", "int8": "i8",
                 "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "u8", "uint16": "u16", "uint32": "u32",
                 "uint64": "u64", "bool": "i1", "float8_e4m3fn": "fp8e4nv", "float8_e5m2": "fp8e5"}


def _triton_launch(compiled: list[str]) -> Launch:
    """A launcher that compiles each launch with Triton (sm_90 PTX) instead of running it."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    def launch(fn: Any, grid: Any, *args: Any, **kwargs: Any) -> None:
        options: dict[str, Any] = {}
        kwargs.pop("buffers", None)  # eggpu's host-only keyword (raw addresses on the CPU)
        cfg = None
        if hasattr(fn, "configs"):  # an Autotuner: the first config, as eggpu without a GPU
            cfg = fn.configs[0]
            kwargs = {**kwargs, **cfg.kwargs}
            options["num_warps"] = cfg.num_warps
            fn = fn.fn
        names = list(fn.arg_names)
        for opt in ("num_warps", "num_stages", "num_ctas", "debug"):  # launch options, not kernel arguments
            if opt in kwargs and opt not in names:
                options[opt] = kwargs.pop(opt)
        values = {**dict(zip(names, args)), **kwargs}
        defaults = {p.name: p.default for p in inspect.signature(fn.fn).parameters.values()
                    if p.default is not inspect.Parameter.empty}
        values = {**{n: defaults[n] for n in names if n not in values and n in defaults}, **values}
        if cfg is not None and cfg.pre_hook is not None:
            cfg.pre_hook({**values, **cfg.all_kwargs()})
        consts = {n: v for n, v in values.items() if fn.params[names.index(n)].is_constexpr}
        sig: dict[str, str] = {}
        for n in names:
            v = values[n]
            if n in consts:
                sig[n] = "constexpr"
            elif hasattr(v, "block_shape") and hasattr(v, "base"):  # a host TensorDescriptor
                sig[n] = f"tensordesc<{_TRITON_TYPES[v.base.dtype.name]}{list(v.block_shape)}>"
            elif isinstance(v, np.ndarray):
                sig[n] = "*" + _TRITON_TYPES[v.dtype.name]
            elif isinstance(v, float):
                sig[n] = "fp32"
            elif isinstance(v, bool):
                sig[n] = "i1"
            else:
                sig[n] = "i32" if -2**31 <= int(v) < 2**31 else "i64"
        src = ASTSource(fn=fn, signature=sig, constexprs=consts)
        k = triton.compile(src, target=GPUTarget("cuda", 90, 32), options=options)
        assert ".entry" in k.asm["ptx"], fn.__name__
        compiled.append(fn.__name__)

    return launch


class _HostDescriptors:
    """The Triton module with a host ``TensorDescriptor`` that holds numpy arrays (Triton's needs
    torch tensors; only its fields matter to a compile): the kernels are Triton's text unchanged."""

    def __init__(self, mod: ModuleType):
        from eggpu.kernel_macro.descriptors import TensorDescriptor

        self._mod = mod
        self.TensorDescriptor = TensorDescriptor

    def __getattr__(self, name: str) -> Any:
        return getattr(self._mod, name)


def triton_compiles(case: Case, loader: Callable[[str], ModuleType] | None = None) -> str | None:
    """None when Triton compiles every launch of ``case`` to PTX, else why not (one line)."""
    compiled: list[str] = []
    try:
        mod = _HostDescriptors((loader or load)("triton"))
        case.run(mod, _triton_launch(compiled), np.random.default_rng(0))  # type: ignore[arg-type]
    except Exception as e:  # noqa: BLE001
        return _first_line(e, last=True)
    return None


def run_cli(argv: list[str] | None, doc: str, cases: Any, by_name: dict[str, Any], run: Callable[[Any, str], Any],
            compiles: Callable[[Any], Any], key: str, width: int,
            extra: Callable[[Any], dict[str, Any]] | None = None) -> tuple[list[dict[str, Any]], argparse.Namespace]:
    """The harness command line (``--only``, ``--triton``, ``--json``) shared by this module and
    ``bench.compat_core``: runs the chosen ``cases`` in every mode (``run(case, mode)``: None or why
    not) and, with ``--triton``, ``compiles(case)``; prints one line per case (its ``tutorial``
    label padded to ``width``) and returns ``(rows, options)``, a row per case keyed ``case``,
    ``key`` (the label), ``pass``, the ``extra(case)`` fields, the modes and ``seconds``."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--only", nargs="*", default=None, help="case names (default: all)")
    ap.add_argument("--triton", action="store_true", help="also compile every launch with Triton (PTX, sm_90)")
    ap.add_argument("--json", type=Path, default=None, help="write the results as JSON")
    ns = ap.parse_args(argv)
    rows = []
    for case in [by_name[n] for n in ns.only] if ns.only else list(cases):
        t0 = time.perf_counter()
        res = {mode: run(case, mode) for mode in MODES}
        if ns.triton:
            res["triton"] = compiles(case)
        ok = all(res[m] is None for m in MODES)
        rows.append({"case": case.name, key: case.tutorial, "pass": ok, **(extra(case) if extra else {}), **res,
                     "seconds": round(time.perf_counter() - t0, 1)})
        why = "" if ok else "  " + " | ".join(f"{m}: {res[m]}" for m in MODES if res[m] is not None)
        tri = "" if not ns.triton else f"  [triton: {'ok' if res['triton'] is None else res['triton']}]"
        print(f"{'PASS' if ok else 'FAIL'}  {case.tutorial:<{width}} {case.name}{tri}{why}", flush=True)
    return rows, ns


def main(argv: list[str] | None = None) -> int:
    rows, ns = run_cli(argv, __doc__, CASES, BY_NAME, run_case, triton_compiles, "tutorial", 30)
    passed = sum(r["pass"] for r in rows)
    print(f"\n{passed}/{len(rows)} tutorial kernels match numpy in interpret and run_cpu")
    if ns.json:
        ns.json.write_text(json.dumps({"passed": passed, "total": len(rows), "cases": rows}, indent=2))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
