"""``tl.dot_scaled`` (OCP microscaling): e4m3/e5m2/e2m1/bf16/fp16 operands with e8m0 scales per 32
elements along K, dequantized (f32 multiply, one rounding to bf16 or f16) then multiplied with f32
accumulation. interpret and run_cpu are held to a numpy reference that applies the scales
itself, on ragged M and N; bad formats, dtypes, shapes and scales are located errors."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import eggpu
import eggpu.language as tl
from eggpu.codegen import build_host
from eggpu.ir.interp import interpret

E2M1_VALUES = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6])
NP = {"e4m3": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2, "bf16": ml_dtypes.bfloat16,
      "fp16": np.float16}


@eggpu.jit
def mx(a_ptr, as_ptr, b_ptr, bs_ptr, c_ptr, M, N, K: tl.constexpr, KA: tl.constexpr, KB: tl.constexpr,
       LF: tl.constexpr, RF: tl.constexpr, SA: tl.constexpr, SB: tl.constexpr, ACC: tl.constexpr,
       BM: tl.constexpr, BN: tl.constexpr):
    """``C = dot_scaled(A, A_scale, LF, B, B_scale, RF) (+ 1.5)`` on one BM x BN tile of C per
    program; A is ``M x KA`` (KA = K/2 for e2m1), B is ``KB x N``, scales ``[M|N, K/32]``."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    ka, kb, ks = tl.arange(0, KA), tl.arange(0, KB), tl.arange(0, K // 32)
    a = tl.load(a_ptr + rm[:, None] * KA + ka[None, :], mask=rm[:, None] < M, other=0)
    b = tl.load(b_ptr + kb[:, None] * N + rn[None, :], mask=rn[None, :] < N, other=0)
    sa = None
    sb = None
    if SA:
        sa = tl.load(as_ptr + rm[:, None] * (K // 32) + ks[None, :], mask=rm[:, None] < M, other=127)
    if SB:
        sb = tl.load(bs_ptr + rn[:, None] * (K // 32) + ks[None, :], mask=rn[:, None] < N, other=127)
    if ACC:
        c = tl.dot_scaled(a, sa, LF, b, sb, RF, tl.full((BM, BN), 1.5, tl.float32))
    else:
        c = tl.dot_scaled(a, sa, LF, b, sb, RF)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], c, mask=(rm[:, None] < M) & (rn[None, :] < N))


def _operand(rng, fmt, shape, pack_axis):
    """``(array passed to the kernel, its exact values as f64)``; e2m1 packs two codes per byte
    along ``pack_axis``, the first in the low nibble."""
    if fmt == "e2m1":
        codes = rng.integers(0, 16, shape).astype(np.uint8)
        lo = codes.take(np.arange(0, shape[pack_axis], 2), axis=pack_axis)
        hi = codes.take(np.arange(1, shape[pack_axis], 2), axis=pack_axis)
        return lo | (hi << 4), E2M1_VALUES[codes]
    v = rng.standard_normal(shape) * np.exp2(rng.integers(-4, 4, shape))
    x = v.astype(NP[fmt])
    return x, x.astype(np.float64)


def _scales(rng, rows, K, lo=110, hi=140):
    return rng.integers(lo, hi, (rows, K // 32)).astype(np.uint8)


def _dequantized(vals, scales, compute, transpose=False):
    """The reference of one operand: value * 2**(s-127) in f32 (255: NaN), rounded once to ``compute``."""
    if scales is None:
        return vals.astype(np.float32).astype(compute).astype(np.float64)
    s = scales.astype(np.float64)
    f = np.where(scales == 255, np.nan, np.exp2(s - 127)).astype(np.float32)
    f = np.repeat(f, 32, axis=1)
    if transpose:
        f = f.T
    with np.errstate(all="ignore"):
        return (vals.astype(np.float32) * f).astype(compute).astype(np.float64)


def _case(lf, rf, M, N, K, scaled=(True, True), acc=False, seed=0, bm=32, bn=32, run="cpu", sm=80, scales=None):
    rng = np.random.default_rng(seed)
    a, av = _operand(rng, lf, (M, K), 1)
    b, bv = _operand(rng, rf, (K, N), 0)
    lo, hi = (122, 130) if "fp16" in (lf, rf) else (110, 140)  # keep f16 products inside f16's range
    sa = _scales(rng, M, K, lo, hi) if scaled[0] else None
    sb = _scales(rng, N, K, lo, hi) if scaled[1] else None
    if scales is not None:
        sa, sb = scales(sa), scales(sb)
    c = np.full((M, N), -7.0, np.float32)
    dummy = np.zeros((1, 1), np.uint8)
    args = (a, dummy if sa is None else sa, b, dummy if sb is None else sb, c, M, N)
    kern = mx.specialize(*args, K=K, KA=a.shape[1], KB=b.shape[0], LF=lf, RF=rf, SA=sa is not None,
                         SB=sb is not None, ACC=acc, BM=bm, BN=bn)
    grid = (-(-M // bm), -(-N // bn))
    fn = kern.ir()
    dots = None
    if run == "interp":
        interpret(fn, grid, *args)
    else:
        hk = build_host(fn, sm=sm)
        hk.run(grid, *args)
        dots = hk.lowered.dots
    compute = np.float16 if "fp16" in (lf, rf) else ml_dtypes.bfloat16
    x, y = _dequantized(av, sa, compute), _dequantized(bv, sb, compute, transpose=True)
    want = x @ y + (1.5 if acc else 0.0)
    err = (np.abs(x) @ np.abs(y)) * (K + 2) * 2.0**-24 + (1e-6 if acc else 1e-30)
    return c, want, err, dots


FORMAT_PAIRS = [("e4m3", "e4m3"), ("e5m2", "e5m2"), ("e4m3", "e5m2"), ("e2m1", "e2m1"), ("e2m1", "e4m3"),
                ("bf16", "e5m2"), ("fp16", "e4m3")]


SIZES = [(1, 1), (33, 17), (70, 45)]
RUN_CPU_CASES = [(lf, rf, *SIZES[i % 3]) for i, (lf, rf) in enumerate(FORMAT_PAIRS)] + [("e4m3", "e2m1", 70, 45)]


@pytest.mark.parametrize("lf,rf,M,N", RUN_CPU_CASES, ids=[f"{c[0]}x{c[1]}-{c[2]}x{c[3]}" for c in RUN_CPU_CASES])
def test_run_cpu_matches_the_scaled_reference(lf, rf, M, N):
    c, want, err, dots = _case(lf, rf, M, N, 64, seed=M * 7 + N)
    assert np.all(np.abs(c - want) <= err), np.abs(c - want).max()
    assert [d["strategy"] for d in dots] == ["mma_sync"], dots
    assert ("f16 x f16" if "fp16" in (lf, rf) else "bf16 x bf16") in dots[0]["reason"]


@pytest.mark.parametrize("lf,rf", [("e4m3", "e2m1"), ("e5m2", "bf16")], ids=["e4m3xe2m1", "e5m2xbf16"])
@pytest.mark.parametrize("scaled", [(True, False), (False, True), (False, False)], ids=str)
def test_interpret_matches_with_and_without_scales(lf, rf, scaled):
    c, want, err, _ = _case(lf, rf, 33, 17, 64, scaled=scaled, acc=True, run="interp", seed=len(lf))
    assert np.all(np.abs(c - want) <= err), np.abs(c - want).max()


def test_cuda_core_path_and_accumulator():
    c, want, err, dots = _case("e2m1", "e5m2", 40, 24, 96, acc=True, sm=75, bm=16, bn=8)
    assert [d["strategy"] for d in dots] == ["shared_fma"]
    assert np.all(np.abs(c - want) <= err), np.abs(c - want).max()


def test_scale_255_is_nan_and_extreme_scales_follow_f32_then_bf16():
    def extreme(s):
        s = s.copy()
        s[0, 0], s[1, 1], s[2, 0] = 255, 0, 254  # NaN, 2**-127 (f32 subnormal), 2**127 (overflow to inf)
        return s

    for run in ("interp", "cpu"):
        c, want, err, _ = _case("e4m3", "e4m3", 20, 12, 64, scales=extreme, run=run, seed=5)
        np.testing.assert_array_equal(np.isnan(c), np.isnan(want))
        fin = np.isfinite(want)
        np.testing.assert_array_equal(c[~fin & ~np.isnan(want)], want[~fin & ~np.isnan(want)])
        assert np.all(np.abs(c[fin] - want[fin]) <= err[fin])
        assert np.isnan(c[0]).all() and np.isnan(c[:, 0]).all()


def test_e2m1_decodes_every_code_and_packs_low_nibble_first():
    M, N, K = 16, 8, 32
    a = np.zeros((M, K // 2), np.uint8)
    a[:, :8] = (np.arange(16, dtype=np.uint8).reshape(1, 16)[:, 0::2] | (np.arange(16, dtype=np.uint8)[1::2] << 4))
    b = np.zeros((K, N), ml_dtypes.float8_e4m3fn)
    b[np.arange(16), np.arange(16) % N] = 1.0  # column j sums the codes k with k % 8 == j
    c = np.zeros((M, N), np.float32)
    dummy = np.zeros((1, 1), np.uint8)
    args = (a, dummy, b, dummy, c, M, N)
    kern = mx.specialize(*args, K=K, KA=K // 2, KB=K, LF="e2m1", RF="e4m3", SA=False, SB=False, ACC=False,
                         BM=16, BN=8)
    kern.interpret((1, 1), *args)
    want = E2M1_VALUES[:16].reshape(2, 8).sum(axis=0)
    np.testing.assert_array_equal(c, np.broadcast_to(want, (M, N)))


@eggpu.jit
def packed_mn(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    """e2m1 x e2m1 with ``lhs_k_pack=False`` (A packed along M: ``M/2 x K``) and
    ``rhs_k_pack=False`` (B packed along N: ``K x N/2``)."""
    rm, rn, rk = tl.arange(0, M // 2), tl.arange(0, N // 2), tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * (N // 2) + rn[None, :])
    c = tl.dot_scaled(a, None, "e2m1", b, None, "e2m1", lhs_k_pack=False, rhs_k_pack=False)
    rM, rN = tl.arange(0, M), tl.arange(0, N)
    tl.store(c_ptr + rM[:, None] * N + rN[None, :], c)


def test_packing_along_m_and_n():
    rng = np.random.default_rng(11)
    M, N, K = 32, 16, 32
    a, av = _operand(rng, "e2m1", (M, K), 0)
    b, bv = _operand(rng, "e2m1", (K, N), 1)
    c = np.zeros((M, N), np.float32)
    fn = packed_mn.specialize(a, b, c, M, N, K).ir()
    build_host(fn, sm=80).run(1, a, b, c)
    np.testing.assert_array_equal(c, (av @ bv).astype(np.float32))  # small integers and halves: exact


@eggpu.jit
def bad(a_ptr, s_ptr, c_ptr, WHICH: tl.constexpr):
    r16, r32, r2 = tl.arange(0, 16), tl.arange(0, 32), tl.arange(0, 2)
    a = tl.load(a_ptr + r16[:, None] * 64 + tl.arange(0, 64)[None, :])  # u8[16, 64]
    b = tl.load(a_ptr + tl.arange(0, 64)[:, None] * 16 + r16[None, :])  # u8[64, 16]
    s = tl.load(s_ptr + r16[:, None] * 2 + r2[None, :])  # u8[16, 2]
    if WHICH == 0:
        c = tl.dot_scaled(a, s, "e3m2", b, s, "e4m3")
    elif WHICH == 1:
        c = tl.dot_scaled(a.to(tl.float32), s, "e4m3", b, s, "e4m3")
    elif WHICH == 2:
        c = tl.dot_scaled(a, s.to(tl.int32), "e4m3", b, s, "e4m3")
    elif WHICH == 3:
        c = tl.dot_scaled(a, s, "e4m3", b, tl.load(s_ptr + r32[:, None] + r2[None, :]), "e4m3")
    elif WHICH == 4:
        c = tl.dot_scaled(a, s, "e4m3", b, s, "e4m3", lhs_k_pack=False)
    elif WHICH == 5:
        c = tl.dot_scaled(a, s, "e4m3", b, s, "e2m1")
    elif WHICH == 6:
        c = tl.dot_scaled(a, s, "e4m3", b, s, "e4m3", acc=tl.zeros((16, 16), dtype=tl.float16))
    else:
        c = tl.dot_scaled(a, s, "e4m3", b, s, "e4m3", out_dtype=tl.float16)
    tl.store(c_ptr + r16[:, None] * 16 + r16[None, :], c)


BAD = [
    (0, '"e3m2"', "tl.dot_scaled: lhs_format='e3m2' is not one of 'e4m3', 'e5m2', 'e2m1', 'bf16', 'fp16'"),
    (1, "a.to(tl.float32)", "tl.dot_scaled: a 'e4m3' operand must be fp8e4nv or its bits as u8, got f32[16,64] "
     "for lhs"),
    (2, "s.to(tl.int32)", "tl.dot_scaled: lhs_scale must be None or a u8 block of e8m0 exponents, got i32[16,2]"),
    (3, "tl.load(s_ptr + r32", "tl.dot_scaled: rhs_scale must have shape [16, K/32] for K=64, got [32, 2]"),
    (4, "lhs_k_pack=False", "tl.dot_scaled: lhs_k_pack=False applies to 'e2m1' operands only, got 'e4m3'"),
    (5, "b, s, \"e2m1\"", "tl.dot_scaled needs [M, K] x [K, N] operands, got [16, 64] (e4m3) and [128, 16] (e2m1) "
     "after unpacking"),
    (6, "acc=tl.zeros", "tl.dot_scaled: acc must be an f32[16,16] block, got f16[16,16]"),
    (7, "out_dtype=tl.float16", "tl.dot_scaled(out_dtype=f16) is not supported: the result is f32 (as in Triton)"),
]


@pytest.mark.parametrize("which,marker,problem", BAD, ids=[str(c[0]) for c in BAD])
def test_bad_dot_scaled_is_a_located_error(which, marker, problem):
    kern = bad.specialize(np.zeros(4096, np.uint8), np.zeros(64, np.uint8), np.zeros(256, np.float32), WHICH=which)
    with pytest.raises(eggpu.CompileError) as ei:
        kern.ir()
    msg = str(ei.value)
    assert problem in msg, msg
    assert "^" in msg and marker in msg.split("\n")[1] if "\n" in msg else False, msg


@pytest.mark.parametrize("target", ["sm_80", "sm_89", "sm_90"])
def test_ptxas_accepts_dot_scaled_on_tensor_cores(target):
    from eggpu.codegen import compile_ptx_module
    from eggpu.codegen.ptxas import run_ptxas
    from eggpu.codegen.toolchain import find_libdevice, find_ptxas
    from eggpu.ir.errors import ToolchainError

    try:
        find_ptxas()
        find_libdevice()
    except ToolchainError as e:
        pytest.skip(f"no ptxas/libdevice: {e}")
    M, N, K = 64, 64, 64
    a, b = np.zeros((M, K // 2), np.uint8), np.zeros((K, N), ml_dtypes.float8_e4m3fn)
    sa, sb = np.zeros((M, K // 32), np.uint8), np.zeros((N, K // 32), np.uint8)
    args = (a, sa, b, sb, np.zeros((M, N), np.float32), M, N)
    fn = mx.specialize(*args, K=K, KA=K // 2, KB=K, LF="e2m1", RF="e4m3", SA=True, SB=True, ACC=True,
                       BM=M, BN=N).ir()
    cp = compile_ptx_module(fn, target)
    assert "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32" in cp.ptx
    rep = run_ptxas(cp.ptx, target)
    assert rep.spills_stores == 0 and rep.spills_loads == 0, rep.log


def test_operands_given_as_bits_equal_the_typed_operands():
    """e4m3 as ``u8`` bits and bf16 as ``u16`` bits are bitcast, as Triton does."""
    rng = np.random.default_rng(12)
    M, N, K = 16, 8, 64
    a = (rng.standard_normal((M, K)) * 4).astype(ml_dtypes.float8_e4m3fn)
    b = rng.standard_normal((K, N)).astype(ml_dtypes.bfloat16)
    sa, sb = _scales(rng, M, K), _scales(rng, N, K)
    outs = []
    for x, y in ((a, b), (a.view(np.uint8), b.view(np.uint16))):
        c = np.zeros((M, N), np.float32)
        args = (x, sa, y, sb, c, M, N)
        mx.specialize(*args, K=K, KA=K, KB=K, LF="e4m3", RF="bf16", SA=True, SB=True, ACC=False,
                      BM=16, BN=8).interpret((1, 1), *args)
        outs.append(c)
    np.testing.assert_array_equal(outs[0], outs[1])
    want = _dequantized(a.astype(np.float64), sa, ml_dtypes.bfloat16) @ _dequantized(
        b.astype(np.float64), sb, ml_dtypes.bfloat16, transpose=True)
    np.testing.assert_allclose(outs[0], want, rtol=1e-5, atol=1e-5)


def test_optimized_compile_runs_e2m1_on_the_cpu():
    """A kernel without FP8 values goes through the optimizer; run_cpu still matches the reference."""
    rng = np.random.default_rng(13)
    M, N, K = 32, 16, 64
    a, av = _operand(rng, "e2m1", (M, K), 1)
    b, bv = _operand(rng, "e2m1", (K, N), 0)
    sa, sb = _scales(rng, M, K), _scales(rng, N, K)
    c = np.zeros((M, N), np.float32)
    args = (a, sa, b, sb, c, M, N)
    kern = mx.specialize(*args, K=K, KA=K // 2, KB=K // 2, LF="e2m1", RF="e2m1", SA=True, SB=True, ACC=True,
                         BM=32, BN=16)
    ck = eggpu.compile(kern, target="sm_90", cache=False)
    assert ck.report["optimizer"].get("fallback_reason") is None
    assert [d["strategy"] for d in ck.report["dot"]] == ["mma_sync"]
    ck.run_cpu((1, 1), *args)
    x = _dequantized(av, sa, ml_dtypes.bfloat16)
    y = _dequantized(bv, sb, ml_dtypes.bfloat16, transpose=True)
    err = (np.abs(x) @ np.abs(y)) * (K + 2) * 2.0**-24 + 1e-6
    assert np.all(np.abs(c - (x @ y + 1.5)) <= err)


def _bits_operand(fmt, raw):
    """The kernel argument of ``fmt`` from raw random bits (every code: NaN, inf, subnormals)."""
    if fmt == "e2m1":
        return raw.astype(np.uint8), None
    if fmt == "bf16":
        return raw.astype(np.uint16), ml_dtypes.bfloat16
    return raw.astype(np.uint8), NP[fmt]


@settings(max_examples=25, deadline=None)
@given(fmt=st.sampled_from(["e4m3", "e5m2", "e2m1", "bf16"]), seed=st.integers(0, 2**32 - 1))
def test_dequantization_of_every_code_and_scale_is_the_reference(fmt, seed):
    """A one-hot B picks single dequantized elements of A out of the dot, so the result is exactly
    the reference's ``value * 2**(s-127)`` in f32 rounded to bf16 — for random codes (NaN and inf
    included) and random scales 0..255 (a NaN or inf elsewhere in the row times B's zeros gives NaN,
    in the reference's f64 product too)."""
    rng = np.random.default_rng(seed)
    M, N, K = 16, 8, 32
    KA = K // 2 if fmt == "e2m1" else K
    raw = rng.integers(0, 2**16 if fmt == "bf16" else 256, (M, KA))
    a, view = _bits_operand(fmt, raw)
    if fmt == "e2m1":
        codes = np.empty((M, K), np.uint8)
        codes[:, 0::2], codes[:, 1::2] = a & 15, a >> 4
        av = E2M1_VALUES[codes]
    else:
        av = a.view(view).astype(np.float64)
    sa = rng.integers(0, 256, (M, 1)).astype(np.uint8)
    b = np.zeros((K, N), ml_dtypes.float8_e4m3fn)
    b[np.arange(N) * 3, np.arange(N)] = 1.0  # column n picks k = 3n
    c = np.zeros((M, N), np.float32)
    dummy = np.zeros((1, 1), np.uint8)
    args = (a, sa, b, dummy, c, M, N)
    mx.specialize(*args, K=K, KA=KA, KB=K, LF=fmt, RF="e4m3", SA=True, SB=False, ACC=False, BM=16,
                  BN=8).interpret((1, 1), *args)
    x = _dequantized(av, sa, ml_dtypes.bfloat16)
    with np.errstate(all="ignore"):
        want = (x @ b.astype(np.float64)).astype(np.float32)
    np.testing.assert_array_equal(np.isnan(c), np.isnan(want))
    fin = ~np.isnan(want)
    np.testing.assert_array_equal(c[fin], want[fin])
