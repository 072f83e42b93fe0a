"""Tensor-core ``dot`` (mma.sync m16n8k16 + ldmatrix): strategy choice, run_cpu vs numpy, PTX, ptxas, SASS.

The host build executes the same data movement as the PTX (swizzled shared memory, ldmatrix
and the m16n8k16 fragment layout emulated lane by lane), so run_cpu checks the algorithm the
GPU runs; ``ptxas`` checks the PTX for every sm_80+ target; the cubin's SASS must contain HMMA
(skipped cleanly without nvdisasm/cuobjdump).
"""

from __future__ import annotations

import numpy as np
import pytest

import eggpu
import eggpu.language as tl
from bench.mma_kernels import k_loop, store_c, tile_start
from eggpu.codegen import build_host, compile_ptx_module
from eggpu.codegen.lower_mma import swizzled_chunk


@eggpu.jit
def mm(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm, rn, rk, acc = tile_start(BM, BN, BK)
    store_c(c_ptr, k_loop(a_ptr, b_ptr, rm, rn, rk, acc, M, N, K, BK), rm, rn, M, N)


NP = {"f16": np.float16, "bf16": None, "f32": np.float32}


def _np_dtype(name):
    if name == "bf16":
        import ml_dtypes

        return ml_dtypes.bfloat16
    return NP[name]


def _inputs(dt, M, N, K, seed=0):
    rng = np.random.default_rng(seed)
    t = _np_dtype(dt)
    return (rng.standard_normal((M, K)).astype(t), rng.standard_normal((K, N)).astype(t),
            np.zeros((M, N), np.float32))


def _kernel_ir(dt, tiles, M, N, K):
    a, b, c = _inputs(dt, M, N, K)
    bm, bn, bk = tiles
    return mm.specialize(a, b, c, M, N, K, BM=bm, BN=bn, BK=bk).ir()


# (dtype, BM, BN, BK, num_warps, M, N, K): ragged problem sizes (not multiples of any tile)
CASES = [
    ("f16", 32, 32, 32, 4, 100, 70, 50),
    ("bf16", 64, 32, 32, 2, 130, 45, 61),
    ("f16", 16, 16, 16, 4, 33, 17, 40),  # one 16x8 tile column pair: warps repeat each other's tiles
    ("bf16", 32, 64, 16, 8, 37, 100, 19),
    ("f16", 64, 16, 32, 1, 65, 31, 33),
    ("f16", 16, 8, 16, 8, 20, 11, 35),  # 128-element result over 256 threads: half the threads own nothing
]


@pytest.mark.parametrize("dt,bm,bn,bk,nw,M,N,K", CASES)
def test_run_cpu_mma_matches_numpy(dt, bm, bn, bk, nw, M, N, K):
    fn = _kernel_ir(dt, (bm, bn, bk), M, N, K)
    hk = build_host(fn, num_warps=nw, sm=80)
    assert [d["strategy"] for d in hk.lowered.dots] == ["mma_sync"], hk.lowered.dots
    a, b, c = _inputs(dt, M, N, K, seed=M)
    hk.run(((M + bm - 1) // bm, (N + bn - 1) // bn), a, b, c, M, N, K)
    want = a.astype(np.float64) @ b.astype(np.float64)
    # products of 16-bit floats are exact in f32: only the f32 summation order differs
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-5 * np.sqrt(K))


def test_run_cpu_mma_equals_shared_fma_closely():
    """The emulated tensor-core path and the CUDA-core path agree to f32 rounding."""
    M, N, K = 48, 40, 64
    fn = _kernel_ir("f16", (32, 32, 32), M, N, K)
    a, b, _ = _inputs("f16", M, N, K, seed=5)
    outs = []
    for sm in (90, 0):
        c = np.zeros((M, N), np.float32)
        hk = build_host(fn, sm=sm)
        assert hk.lowered.dots[0]["strategy"] == ("mma_sync" if sm else "shared_fma")
        hk.run((2, 2), a, b, c, M, N, K)
        outs.append(c)
    np.testing.assert_allclose(outs[0], outs[1], rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("dt,target,why", [
    ("f32", "sm_90", "f32 operands"),
    ("f16", "sm_75", "needs sm_80"),
])
def test_fallback_is_reported(dt, target, why):
    fn = _kernel_ir(dt, (32, 32, 32), 40, 40, 40)
    cp = compile_ptx_module(fn, target)
    (d,) = cp.lowered.dots
    assert d["strategy"] == "shared_fma" and why in d["reason"], d
    assert d["shape"] == [32, 32, 32] and d["dtype"] == dt
    assert "mma.sync" not in cp.ptx


def test_untileable_shape_falls_back():
    fn = _kernel_ir("f16", (16, 16, 8), 20, 20, 20)  # K = 8 < 16
    (d,) = compile_ptx_module(fn, "sm_90").lowered.dots
    assert d["strategy"] == "shared_fma" and "multiple of the m16n8k16 tile" in d["reason"]


def test_large_tile_stages_the_result_in_bands():
    """128x128 f32 results (69 KiB with padding) go through shared memory in row bands within 48 KiB."""
    fn = _kernel_ir("f16", (128, 128, 32), 200, 200, 64)
    cp = compile_ptx_module(fn, "sm_80")
    (d,) = cp.lowered.dots
    assert d["strategy"] == "mma_sync", d
    assert cp.lowered.shared_bytes <= 48 * 1024


@pytest.mark.slow
def test_run_cpu_banded_staging_matches_numpy():
    M, N, K = 150, 140, 40
    fn = _kernel_ir("f16", (128, 128, 32), M, N, K)
    a, b, c = _inputs("f16", M, N, K, seed=9)
    build_host(fn, sm=80).run((2, 2), a, b, c, M, N, K)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("cols", [16, 32, 64, 128, 256])
def test_swizzle_is_a_bijection_and_conflict_free(cols):
    """Eight consecutive rows at one logical chunk (one ldmatrix phase) hit eight bank groups."""
    chunks = cols // 8
    for r in range(64):
        assert sorted(swizzled_chunk(r, c, cols) for c in range(chunks)) == list(range(chunks))
    for r0 in range(0, 64, 8):
        for c in range(chunks):
            units = {(r * chunks + swizzled_chunk(r, c, cols)) % 8 for r in range(r0, r0 + 8)}
            assert len(units) == 8, (cols, r0, c, units)


@pytest.mark.parametrize("target", ["sm_80", "sm_86", "sm_89", "sm_90", "sm_90a"])
@pytest.mark.parametrize("dt", ["f16", "bf16"])
def test_ptxas_accepts_mma_ptx(target, dt):
    from eggpu.codegen.ptxas import run_ptxas

    fn = _kernel_ir(dt, (64, 64, 32), 100, 100, 100)
    cp = compile_ptx_module(fn, target)
    assert f"mma.sync.aligned.m16n8k16.row.col.f32.{dt}.{dt}.f32" in cp.ptx
    assert "ldmatrix.sync.aligned.m8n8.x4.shared.b16" in cp.ptx
    assert "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16" in cp.ptx  # B: two tile columns per load
    rep = run_ptxas(cp.ptx, target)
    assert rep.spills_stores == 0 and rep.spills_loads == 0, rep.log
    assert rep.registers <= 128


def test_sass_contains_hmma():
    from eggpu.codegen.ptxas import run_ptxas

    tools = pytest.importorskip("bench.tools")
    fn = _kernel_ir("f16", (64, 64, 32), 100, 100, 100)
    rep = run_ptxas(compile_ptx_module(fn, "sm_90").ptx, "sm_90")
    sass = tools.sass_of_cubin(rep.cubin)
    if sass is None:
        pytest.skip("neither nvdisasm nor cuobjdump is installed (pip install nvidia-cuda-nvdisasm)")
    assert sass.opcodes.get("HMMA", 0) > 0, sass.opcodes
    assert sass.opcodes.get("LDSM", 0) > 0, sass.opcodes  # ldmatrix


def test_compile_report_names_the_dot_strategy():
    a, b, c = _inputs("f16", 40, 40, 40)
    kern = mm.specialize(a, b, c, 40, 40, 40, BM=32, BN=32, BK=32)
    ck = eggpu.compile(kern, target="sm_90", optimize=False)
    (d,) = ck.report["dot"]
    assert d["strategy"] == "mma_sync" and "tensor cores" in d["reason"]
    ck75 = eggpu.compile(kern, target="sm_75", optimize=False)
    assert ck75.report["dot"][0]["strategy"] == "shared_fma"


SWEEP = [(bm, bn, bk, nw) for bm in (16, 32, 64, 128) for bn in (8, 32, 128) for bk in (16, 64) for nw in (1, 4, 8)
         if bm * bn <= 64 * 128 and (bm * bn) // (32 * nw) <= 64]


@pytest.mark.slow
@pytest.mark.parametrize("bm,bn,bk,nw", SWEEP[::5])
def test_sweep_tiles_and_warps_run_cpu(bm, bn, bk, nw):
    """Every fifth tile/warp configuration of the sweep on the host, bf16 on ragged sizes."""
    M, N, K = bm + 3, bn + 5, bk + 7
    fn = _kernel_ir("bf16", (bm, bn, bk), M, N, K)
    hk = build_host(fn, num_warps=nw, sm=90)
    assert hk.lowered.dots[0]["strategy"] == "mma_sync", hk.lowered.dots
    a, b, c = _inputs("bf16", M, N, K, seed=bm + bn)
    hk.run((2, 2), a, b, c, M, N, K)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-5, atol=1e-4)


@pytest.mark.slow
@pytest.mark.parametrize("bm,bn,bk,nw", SWEEP)
def test_sweep_tiles_and_warps_ptxas(bm, bn, bk, nw):
    """ptxas accepts every configuration. Spills are checked only where a warp's share is moderate:
    one warp over a 64x64-element (or larger) K=64 tile spills on both strategies (docs/codegen.md)."""
    from eggpu.codegen.ptxas import run_ptxas

    fn = _kernel_ir("f16", (bm, bn, bk), 200, 200, 200)
    cp = compile_ptx_module(fn, "sm_80", num_warps=nw)
    assert cp.lowered.dots[0]["strategy"] == "mma_sync", cp.lowered.dots
    rep = run_ptxas(cp.ptx, "sm_80")
    if bk == 16 or (nw >= 4 and bm * bn >= 32 * 32 and bm >= 32):
        assert rep.spills_stores == 0 and rep.spills_loads == 0, (rep.registers, rep.log)


def test_forcing_mma_on_unsupported_operands_is_a_clear_error(monkeypatch):
    """A strategy that does not apply (here forced through the seam) names the kernel, the op and why."""
    from eggpu.codegen import lower_dot
    from eggpu.ir.errors import CodegenError

    monkeypatch.setattr(lower_dot, "select_strategy", lambda lw, op: ("mma_sync", "forced"))
    fn = _kernel_ir("f32", (32, 32, 32), 40, 40, 40)
    with pytest.raises(CodegenError, match=r"^mm.* in dot: dot strategy 'mma_sync' does not apply: f32 operands"):
        compile_ptx_module(fn, "sm_90")


@pytest.mark.parametrize("target", ["sm_80", "sm_86", "sm_90"])
def test_operands_beyond_48_kib_use_dynamic_shared_memory(target):
    """128x128x128 f16 operands take 64 KiB: still tensor cores, in dynamic shared memory."""
    from eggpu.codegen.ptxas import run_ptxas

    fn = _kernel_ir("f16", (128, 128, 128), 200, 200, 200)
    cp = compile_ptx_module(fn, target, num_warps=8)
    (d,) = cp.lowered.dots
    assert d["strategy"] == "mma_sync", d
    assert cp.lowered.dynamic_shared_bytes == cp.lowered.shared_bytes == 65536
    rep = run_ptxas(cp.ptx, target)
    assert rep.spills_stores == 0 and rep.spills_loads == 0, rep.log


def test_operands_beyond_the_target_limit_fall_back_with_the_reason():
    """192 KiB of operands: more than sm_80 allows (163 KiB), so a build for sm_80 says why."""
    from eggpu.codegen.lowering import lower_function

    fn = _kernel_ir("f16", (128, 256, 256), 200, 300, 300)
    _mod, lm = lower_function(fn, "host", 8, sm=80, verify_llvm=False)
    (d,) = lm.dots
    assert d["strategy"] == "shared_fma", d
    assert d["reason"] == "operands need 196608 bytes of shared memory, more than the 166912 bytes a CTA may use"
