"""TF32 ``tl.dot(a, b, input_precision="tf32")``: rounding, strategy, run_cpu vs interpreter vs numpy, ptxas.

The reference (op table / interpreter) rounds each f32 operand to TF32 (ties away from zero,
``cvt.rna.tf32.f32``) and accumulates in f32; run_cpu executes the PTX's data movement
(m16n8k8 fragments) on the host; numpy with the same rounding is the independent check.
"""

from __future__ import annotations

import numpy as np
import pytest

import eggpu
import eggpu.language as tl
from bench.mma_kernels import load_ab, store_c, tile_start
from eggpu.codegen import build_host, compile_ptx_module
from eggpu.codegen.lower_mma import row_strides
from eggpu.ir.interp import interpret
from eggpu.ir.semantics import round_tf32


def _mm(precision=None, allow_tf32=None):
    @eggpu.jit
    def mm(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        rm, rn, rk, acc = tile_start(BM, BN, BK)
        for k in range(0, K, BK):
            a, b = load_ab(a_ptr, b_ptr, rm, rn, k + rk, M, N, K)
            acc = tl.dot(a, b, acc, input_precision=precision, allow_tf32=allow_tf32)
        store_c(c_ptr, acc, rm, rn, M, N)

    return mm


MM_TF32 = _mm("tf32")


def _inputs(M, N, K, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((M, K)).astype(np.float32), rng.standard_normal((K, N)).astype(np.float32),
            np.zeros((M, N), np.float32))


def _want(a, b):
    return round_tf32(a).astype(np.float64) @ round_tf32(b).astype(np.float64)


def _ir(kern, tiles, M, N, K):
    a, b, c = _inputs(M, N, K)
    return kern.specialize(a, b, c, M, N, K, BM=tiles[0], BN=tiles[1], BK=tiles[2]).ir()


def test_round_tf32_reference():
    one = np.float32(1.0)
    ulp = np.float32(2.0 ** -10)
    x = np.array([1 + 2.0 ** -11, 1 + 2.0 ** -11 - 2.0 ** -23, -(1 + 2.0 ** -11), 1 + 3 * 2.0 ** -11,
                  np.inf, -np.inf, np.nan, 0.0, -0.0, np.finfo(np.float32).max, 1e-40], np.float32)
    r = round_tf32(x)
    assert r[0] == one + ulp  # a tie rounds away from zero
    assert r[1] == one  # below the tie rounds down
    assert r[2] == -(one + ulp)
    assert r[3] == one + 2 * ulp  # ties away (not to even)
    assert np.isposinf(r[4]) and np.isneginf(r[5]) and np.isnan(r[6])
    assert r[7] == 0 and not np.signbit(r[7]) and r[8] == 0 and np.signbit(r[8])
    assert np.isposinf(r[9])  # rounds past the largest finite TF32
    assert (r.view(np.uint32)[np.isfinite(r)] & 0x1FFF == 0).all()


def test_ir_carries_precision_and_rejects_bad_ones():
    from eggpu.ir import IRError, parse_function

    fn = _ir(MM_TF32, (32, 32, 16), 40, 40, 40)
    text = str(fn)
    assert 'precision="tf32"' in text
    assert str(parse_function(text)) == text
    ieee = _ir(_mm(), (32, 32, 16), 40, 40, 40)
    assert "precision" not in str(ieee)
    bad = text.replace('precision="tf32"', 'precision="tf64"')
    with pytest.raises(IRError, match="precision must be one of 'ieee', 'tf32', got 'tf64'"):
        parse_function(bad)


def test_tf32_needs_f32_operands_in_the_ir():
    from eggpu.ir import IRError
    from eggpu.ir.dtypes import f16
    from eggpu.ir.ops import result_types
    from eggpu.ir.types import BlockType

    t = BlockType(f16, (16, 16))
    with pytest.raises(IRError, match="precision 'tf32' needs f32 operands, got f16"):
        result_types("dot", [t, t], {"precision": "tf32"})


# (BM, BN, BK, num_warps, M, N, K): ragged problem sizes
CASES = [
    (32, 32, 16, 4, 100, 70, 50),
    (64, 32, 32, 2, 130, 45, 61),
    (16, 8, 8, 8, 20, 11, 35),  # one tile over 8 warps: warps repeat each other's work
    (64, 64, 32, 4, 65, 129, 33),
]


@pytest.mark.parametrize("bm,bn,bk,nw,M,N,K", CASES)
def test_run_cpu_tf32_matches_numpy_and_interpreter(bm, bn, bk, nw, M, N, K):
    fn = _ir(MM_TF32, (bm, bn, bk), M, N, K)
    hk = build_host(fn, num_warps=nw, sm=80)
    (d,) = hk.lowered.dots
    assert d["strategy"] == "mma_sync" and "m16n8k8" in d["reason"] and d["precision"] == "tf32", d
    a, b, c = _inputs(M, N, K, seed=M)
    hk.run(((M + bm - 1) // bm, (N + bn - 1) // bn), a, b, c, M, N, K)
    want = _want(a, b)
    # products of TF32 values are exact in f32: only the f32 summation order differs
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-5 * np.sqrt(K))
    # and the result is TF32's, measurably off the exact f32 product
    assert np.abs(c - a.astype(np.float64) @ b).max() > 100 * np.abs(c - want).max()
    ci = np.zeros_like(c)
    interpret(fn, ((M + bm - 1) // bm, (N + bn - 1) // bn), a, b, ci, M, N, K)
    np.testing.assert_allclose(c, ci, rtol=1e-5, atol=1e-5 * np.sqrt(K))


def test_allow_tf32_is_the_old_spelling():
    fn = _ir(_mm(allow_tf32=True), (32, 32, 16), 40, 40, 40)
    assert 'precision="tf32"' in str(fn)
    assert "precision" not in str(_ir(_mm(allow_tf32=False), (32, 32, 16), 40, 40, 40))
    assert "precision" not in str(_ir(_mm("ieee", allow_tf32=True), (32, 32, 16), 40, 40, 40))


@pytest.mark.parametrize("prec", ["bf16x3", "bf16x6"])
def test_unsupported_precisions_are_clear_errors(prec):
    with pytest.raises(eggpu.EggpuError, match=rf"input_precision='{prec}'\) is not supported by eggpu"):
        _ir(_mm(prec), (32, 32, 16), 40, 40, 40)


def test_tf32_on_f16_operands_is_ignored():
    """As in Triton, input_precision only concerns f32 operands."""
    @eggpu.jit
    def k(a_ptr, c_ptr):
        r = tl.arange(0, 16)
        a = tl.load(a_ptr + r[:, None] * 16 + r[None, :])
        tl.store(c_ptr + r[:, None] * 16 + r[None, :], tl.dot(a, a, input_precision="tf32"))

    fn = k.specialize(np.zeros((16, 16), np.float16), np.zeros((16, 16), np.float32)).ir()
    assert "precision" not in str(fn)


def test_sm75_falls_back_to_exact_f32_and_says_so():
    M = N = K = 40
    fn = _ir(MM_TF32, (32, 32, 16), M, N, K)
    cp = compile_ptx_module(fn, "sm_75")
    (d,) = cp.lowered.dots
    assert d["strategy"] == "shared_fma" and "exact f32 on CUDA cores, as Triton" in d["reason"], d
    assert "mma.sync" not in cp.ptx and "tf32" not in cp.ptx
    hk = build_host(fn, sm=75)
    a, b, c = _inputs(M, N, K, seed=3)
    hk.run((2, 2), a, b, c, M, N, K)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-5, atol=1e-5)


def test_untileable_tf32_shape_rounds_on_cuda_cores():
    """On sm_80+ a shape the mma path cannot tile still gets TF32 operands (same result class)."""
    M, N, K = 20, 20, 20
    fn = _ir(MM_TF32, (16, 8, 4), M, N, K)  # K step 4 < 8
    hk = build_host(fn, sm=90)
    (d,) = hk.lowered.dots
    assert d["strategy"] == "shared_fma" and "rounded to TF32" in d["reason"], d
    a, b, c = _inputs(M, N, K, seed=4)
    hk.run((2, 3), a, b, c, M, N, K)
    np.testing.assert_allclose(c, _want(a, b), rtol=1e-5, atol=1e-5)


def test_row_strides_are_bank_conflict_free():
    for K in (8, 16, 24, 32, 64, 128):
        sa, _ = row_strides(K, 8)
        assert len({(g * sa + t) % 32 for g in range(8) for t in range(4)}) == 32, K
    for N in (8, 16, 24, 32, 64, 128):
        _, sb = row_strides(8, N)
        assert sb >= N and len({(t * sb + g) % 32 for g in range(8) for t in range(4)}) == 32, N


@pytest.mark.parametrize("target", ["sm_80", "sm_86", "sm_89", "sm_90", "sm_90a"])
def test_ptxas_accepts_tf32_mma(target):
    from eggpu.codegen.ptxas import run_ptxas

    fn = _ir(MM_TF32, (64, 64, 32), 100, 100, 100)
    cp = compile_ptx_module(fn, target)
    assert "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32" in cp.ptx
    assert "cvt.rna.tf32.f32" in cp.ptx
    rep = run_ptxas(cp.ptx, target)
    assert rep.spills_stores == 0 and rep.spills_loads == 0, rep.log


def test_tf32_tile_beyond_48_kib_runs_in_dynamic_shared_memory():
    """128x64x64 TF32 operands with padded rows take 52 KiB: tensor cores, dynamic shared memory;
    run_cpu (emulating sm_80, whose limit is 163 KiB) plans the same and matches numpy."""
    from eggpu.codegen.ptxas import run_ptxas

    M, N, K = 150, 70, 100
    fn = _ir(MM_TF32, (128, 64, 64), M, N, K)
    cp = compile_ptx_module(fn, "sm_80")
    assert cp.lowered.dots[0]["strategy"] == "mma_sync"
    assert cp.lowered.dynamic_shared_bytes == 53248
    rep = run_ptxas(cp.ptx, "sm_80")
    assert rep.spills_stores == 0 and rep.spills_loads == 0, rep.log
    hk = build_host(fn, sm=80)
    assert hk.lowered.dots[0]["strategy"] == "mma_sync" and hk.lowered.shared_bytes == 53248
    a, b, c = _inputs(M, N, K, seed=2)
    hk.run((2, 2), a, b, c, M, N, K)
    np.testing.assert_allclose(c, _want(a, b), rtol=1e-5, atol=1e-5 * np.sqrt(K))


def test_compile_report_and_optimizer_keep_precision():
    a, b, c = _inputs(40, 40, 40)
    kern = MM_TF32.specialize(a, b, c, 40, 40, 40, BM=32, BN=32, BK=16)
    ck = eggpu.compile(kern, target="sm_90", cache=False)
    opt = ck.report["optimizer"]
    assert not opt["fell_back"] and opt["validation"] == "valid", opt  # the dot went through egglog and back
    (d,) = ck.report["dot"]
    assert d["strategy"] == "mma_sync" and d["precision"] == "tf32", d


def test_sass_contains_hmma_for_tf32():
    from eggpu.codegen.ptxas import run_ptxas

    tools = pytest.importorskip("bench.tools")
    rep = run_ptxas(compile_ptx_module(_ir(MM_TF32, (64, 64, 32), 100, 100, 100), "sm_80").ptx, "sm_80")
    sass = tools.sass_of_cubin(rep.cubin)
    if sass is None:
        pytest.skip("neither nvdisasm nor cuobjdump is installed (pip install nvidia-cuda-nvdisasm)")
    assert sass.opcodes.get("HMMA", 0) > 0, sass.opcodes


MM_TF32X3 = _mm("tf32x3")


def _want_tf32x3(a, b):
    """Triton's 3xTF32: big = TF32(x), small = x - big; small x big + big x small + big x big,
    each product of TF32-rounded operands (exact in f64 here)."""
    def split(x):
        big = round_tf32(x)
        return big.astype(np.float64), round_tf32(x - big).astype(np.float64)

    (ab, asm), (bb, bs) = split(a), split(b)
    return asm @ bb + ab @ bs + ab @ bb


@pytest.mark.parametrize("bm,bn,bk,nw,M,N,K", CASES[:2])
def test_tf32x3_is_three_tf32_dots_close_to_f32(bm, bn, bk, nw, M, N, K):
    fn = _ir(MM_TF32X3, (bm, bn, bk), M, N, K)
    assert str(fn).count('precision="tf32"') == 3  # per K step: small x big, big x small, big x big
    hk = build_host(fn, num_warps=nw, sm=80)
    assert [d["strategy"] for d in hk.lowered.dots] == ["mma_sync"] * 3, hk.lowered.dots
    a, b, c = _inputs(M, N, K, seed=K)
    hk.run(((M + bm - 1) // bm, (N + bn - 1) // bn), a, b, c, M, N, K)
    np.testing.assert_allclose(c, _want_tf32x3(a, b), rtol=1e-5, atol=1e-5 * np.sqrt(K))
    ci = np.zeros_like(c)
    interpret(fn, ((M + bm - 1) // bm, (N + bn - 1) // bn), a, b, ci, M, N, K)
    np.testing.assert_allclose(c, ci, rtol=1e-5, atol=1e-5 * np.sqrt(K))
    # about f32 accuracy: far closer to the exact product than one TF32 dot
    exact = a.astype(np.float64) @ b
    assert np.abs(c - exact).max() * 50 < np.abs(_want(a, b) - exact).max()
    compile_ptx_module(fn, "sm_80")


def test_tf32x3_on_f16_operands_is_an_ordinary_dot():
    @eggpu.jit
    def k(a_ptr, c_ptr):
        r = tl.arange(0, 16)
        a = tl.load(a_ptr + r[:, None] * 16 + r[None, :])
        tl.store(c_ptr + r[:, None] * 16 + r[None, :], tl.dot(a, a, input_precision="tf32x3"))

    fn = k.specialize(np.zeros((16, 16), np.float16), np.zeros((16, 16), np.float32)).ir()
    assert str(fn).count(" dot") == 1 and "precision" not in str(fn)
