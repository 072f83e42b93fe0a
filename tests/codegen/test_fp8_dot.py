"""FP8 ``tl.dot``: e4m3/e5m2 operands in any combination, converted exactly to f16 and multiplied
by the f16 dot (tensor cores on sm_80+, CUDA cores before), f32 accumulation.

Every FP8 value is an f16 value, so the products are exact and the result is the f32 sum of the
exact products: interpret and run_cpu are held to numpy's f64 product of the upconverted values
within f32 summation error, on ragged M, N, K; the PTX to ptxas on every sm_80+ target; the SASS
to HMMA.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import eggpu
import eggpu.language as tl
from bench.mma_kernels import k_loop, store_c, tile_start
from eggpu.codegen import build_host, compile_ptx_module
from eggpu.ir.interp import interpret

from .test_ptx_features import needs_toolchain

E4M3, E5M2 = ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2
PAIRS = [(E4M3, E4M3), (E5M2, E5M2), (E4M3, E5M2), (E5M2, E4M3)]
NAMES = {E4M3: "fp8e4nv", E5M2: "fp8e5"}


@eggpu.jit
def mm(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm, rn, rk, acc = tile_start(BM, BN, BK)
    store_c(c_ptr, k_loop(a_ptr, b_ptr, rm, rn, rk, acc, M, N, K, BK), rm, rn, M, N)


@eggpu.jit
def mm_opts(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr, OUT: tl.constexpr,
            IMPRECISE: tl.constexpr):
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    c = tl.dot(a, b, out_dtype=OUT, max_num_imprecise_acc=IMPRECISE)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], c)


def _fp8(rng, shape, t, scale=1.0):
    """Random finite FP8 values (normal and subnormal, both signs), of numpy dtype ``t``."""
    v = rng.standard_normal(shape) * scale * np.exp2(rng.integers(-8, 4, shape))
    big = float(ml_dtypes.finfo(t).max)
    return np.clip(v, -big, big).astype(t)  # ml_dtypes' cast would give inf/NaN beyond the range


def _want(a, b):
    """The exact products summed in f64, and the f32 summation error bound of each element."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    k = a.shape[1]
    return a64 @ b64, (np.abs(a64) @ np.abs(b64)) * (k + 2) * 2.0**-24 + 1e-30


def _run(ta, tb, M, N, K, tiles=(32, 32, 32), sm=80, seed=0, interp=False):
    rng = np.random.default_rng(seed)
    a, b = _fp8(rng, (M, K), ta), _fp8(rng, (K, N), tb)
    c = np.full((M, N), np.nan, np.float32)
    bm, bn, bk = tiles
    fn = mm.specialize(a, b, c, M, N, K, BM=bm, BN=bn, BK=bk).ir()
    grid = (-(-M // bm), -(-N // bn))
    if interp:
        interpret(fn, grid, a, b, c, M, N, K)
        dots = None
    else:
        hk = build_host(fn, sm=sm)
        hk.run(grid, a, b, c, M, N, K)
        dots = hk.lowered.dots
    return a, b, c, dots


SIZES = [(1, 1, 1), (33, 17, 40), (100, 70, 50), (65, 31, 97)]


@pytest.mark.parametrize("M,N,K", SIZES)
@pytest.mark.parametrize("ta,tb", PAIRS, ids=lambda t: NAMES[t])
def test_run_cpu_tensor_cores_match_numpy(ta, tb, M, N, K):
    a, b, c, dots = _run(ta, tb, M, N, K, seed=M + K)
    (d,) = dots
    assert d["strategy"] == "mma_sync" and "m16n8k16 f32 += f16 x f16" in d["reason"], d
    assert f"FP8 operands {NAMES[ta]} x {NAMES[tb]} converted exactly to f16" in d["reason"], d
    want, err = _want(a, b)
    assert np.all(np.abs(c - want) <= err), np.abs(c - want).max()


@pytest.mark.parametrize("M,N,K", SIZES[1:3])
@pytest.mark.parametrize("ta,tb", PAIRS[1:3], ids=lambda t: NAMES[t])
def test_run_cpu_cuda_cores_match_numpy(ta, tb, M, N, K):
    a, b, c, dots = _run(ta, tb, M, N, K, sm=75, seed=N)
    assert [d["strategy"] for d in dots] == ["shared_fma"], dots
    want, err = _want(a, b)
    assert np.all(np.abs(c - want) <= err), np.abs(c - want).max()


@pytest.mark.parametrize("M,N,K", [(1, 1, 1), (33, 17, 40)])
@pytest.mark.parametrize("ta,tb", PAIRS, ids=lambda t: NAMES[t])
def test_interpret_matches_numpy(ta, tb, M, N, K):
    a, b, c, _ = _run(ta, tb, M, N, K, seed=K, interp=True)
    want, err = _want(a, b)
    assert np.all(np.abs(c - want) <= err), np.abs(c - want).max()


def test_tensor_core_and_cuda_core_paths_agree_with_the_interpreter():
    """Large e5m2 magnitudes (products up to 2**31) in all three executions."""
    rng = np.random.default_rng(7)
    M, N, K = 48, 24, 64
    a, b = _fp8(rng, (M, K), E5M2, 3000.0), _fp8(rng, (K, N), E5M2, 3000.0)
    fn = mm.specialize(a, b, np.zeros((M, N), np.float32), M, N, K, BM=16, BN=8, BK=16).ir()
    outs = []
    for run in (lambda *x: interpret(fn, (3, 3), *x), lambda *x: build_host(fn, sm=80).run((3, 3), *x),
                lambda *x: build_host(fn, sm=0).run((3, 3), *x)):
        c = np.zeros((M, N), np.float32)
        run(a, b, c, M, N, K)
        outs.append(c)
    want, err = _want(a, b)
    for c in outs:
        assert np.all(np.abs(c - want) <= err)


@pytest.mark.parametrize("ta,tb", PAIRS[:3], ids=lambda t: NAMES[t])
def test_out_dtype_f16_gives_an_f16_result(ta, tb):
    rng = np.random.default_rng(3)
    a, b = _fp8(rng, (16, 32), ta), _fp8(rng, (32, 16), tb)
    c = np.zeros((16, 16), np.float16)
    k = mm_opts.specialize(a, b, c, 16, 16, 32, OUT=tl.float16, IMPRECISE=None)
    fn = k.ir()
    build_host(fn, sm=80).run(1, a, b, c)
    want = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32).astype(np.float16)
    np.testing.assert_array_equal(c, want)  # one rounding of the f32 sum to f16 (exact products)
    ci = np.zeros_like(c)
    interpret(fn, 1, a, b, ci)
    np.testing.assert_array_equal(ci, want)


def test_max_num_imprecise_acc_is_accepted_for_fp8():
    rng = np.random.default_rng(4)
    a, b = _fp8(rng, (16, 32), E4M3), _fp8(rng, (32, 16), E4M3)
    c = np.zeros((16, 16), np.float32)
    mm_opts.specialize(a, b, c, 16, 16, 32, OUT=tl.float32, IMPRECISE=32).interpret(1, a, b, c)
    want, err = _want(a, b)
    assert np.all(np.abs(c - want) <= err)


@pytest.mark.parametrize("value,shown", [(33, "the compile-time int 33"), (-1, "the compile-time int -1")])
def test_max_num_imprecise_acc_out_of_range_is_a_located_error(value, shown):
    a = np.zeros((16, 32), E4M3)
    k = mm_opts.specialize(a, np.zeros((32, 16), E4M3), np.zeros((16, 16), np.float32), 16, 16, 32,
                           OUT=tl.float32, IMPRECISE=value)
    with pytest.raises(eggpu.CompileError) as ei:
        k.ir()
    msg = str(ei.value)
    assert f"tl.dot: max_num_imprecise_acc must be a compile-time int in [0, K=32], got {shown}" in msg
    assert "max_num_imprecise_acc=IMPRECISE" in msg and "^" in msg


def test_max_num_imprecise_acc_is_still_refused_for_f16():
    a = np.zeros((16, 32), np.float16)
    k = mm_opts.specialize(a, np.zeros((32, 16), np.float16), np.zeros((16, 16), np.float32), 16, 16, 32,
                           OUT=tl.float32, IMPRECISE=8)
    with pytest.raises(eggpu.CompileError, match=r"max_num_imprecise_acc=8\) is not supported by eggpu: it only "
                                                 r"applies to FP8 products"):
        k.ir()


def _ptx(ta, tb, target):
    a, b = np.zeros((100, 100), ta), np.zeros((100, 100), tb)
    fn = mm.specialize(a, b, np.zeros((100, 100), np.float32), 100, 100, 100, BM=64, BN=64, BK=32).ir()
    return compile_ptx_module(fn, target)


@needs_toolchain
@pytest.mark.parametrize("target", ["sm_80", "sm_86", "sm_89", "sm_90"])
@pytest.mark.parametrize("ta,tb", PAIRS[1:3], ids=lambda t: NAMES[t])
def test_ptxas_accepts_fp8_dot(ta, tb, target):
    from eggpu.codegen.ptxas import run_ptxas

    cp = _ptx(ta, tb, target)
    assert "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32" in cp.ptx
    rep = run_ptxas(cp.ptx, target)
    assert rep.spills_stores == 0 and rep.spills_loads == 0, rep.log


@needs_toolchain
def test_fp8_dot_sass_contains_hmma():
    from eggpu.codegen.ptxas import run_ptxas

    tools = pytest.importorskip("bench.tools")
    rep = run_ptxas(_ptx(E4M3, E5M2, "sm_90").ptx, "sm_90")
    sass = tools.sass_of_cubin(rep.cubin)
    if sass is None:
        pytest.skip("neither nvdisasm nor cuobjdump is installed (pip install nvidia-cuda-nvdisasm)")
    assert sass.opcodes.get("HMMA", 0) > 0, sass.opcodes


def test_compile_report_names_the_fp8_strategy():
    a, b = np.zeros((40, 40), E4M3), np.zeros((40, 40), E5M2)
    kern = mm.specialize(a, b, np.zeros((40, 40), np.float32), 40, 40, 40, BM=32, BN=32, BK=32)
    (d,) = eggpu.compile(kern, target="sm_90", optimize=False).report["dot"]
    assert d["strategy"] == "mma_sync" and "FP8 operands fp8e4nv x fp8e5 converted exactly to f16" in d["reason"]
    (d75,) = eggpu.compile(kern, target="sm_75", optimize=False).report["dot"]
    assert d75["strategy"] == "shared_fma" and "FP8 operands fp8e4nv x fp8e5" in d75["reason"]


@eggpu.jit
def bmm(a_ptr, b_ptr, c_ptr, B: tl.constexpr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rb, rm, rn, rk = tl.arange(0, B), tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + rb[:, None, None] * M * K + rm[None, :, None] * K + rk[None, None, :])
    b = tl.load(b_ptr + rb[:, None, None] * K * N + rk[None, :, None] * N + rn[None, None, :])
    c = tl.dot(a, b)
    tl.store(c_ptr + rb[:, None, None] * M * N + rm[None, :, None] * N + rn[None, None, :], c)


def test_batched_fp8_dot_matches_numpy():
    rng = np.random.default_rng(9)
    a, b = _fp8(rng, (2, 4, 8), E4M3), _fp8(rng, (2, 8, 4), E5M2)
    c = np.zeros((2, 4, 4), np.float32)
    bmm.specialize(a, b, c, 2, 4, 4, 8).interpret(1, a, b, c)
    want = np.einsum("bmk,bkn->bmn", a.astype(np.float64), b.astype(np.float64))
    err = np.einsum("bmk,bkn->bmn", np.abs(a.astype(np.float64)), np.abs(b.astype(np.float64))) * 10 * 2.0**-24
    assert np.all(np.abs(c - want) <= err + 1e-30)


def test_e5m2_infinities_and_nans_propagate_as_in_numpy():
    """inf * 0 and inf - inf give NaN, inf * finite gives inf, on both CPU strategies and the interpreter."""
    rng = np.random.default_rng(10)
    M, N, K = 16, 8, 16
    a, b = _fp8(rng, (M, K), E5M2), _fp8(rng, (K, N), E5M2)
    a[0, 0], a[1, 0], a[2, 0], a[2, 1] = np.inf, np.nan, np.inf, -np.inf
    b[0, 0], b[1, 1] = 0.0, 1.0
    b[0, 1] = 2.0
    a[3, :] = 0.0
    a[3, 5] = -np.inf
    fn = mm.specialize(a, b, np.zeros((M, N), np.float32), M, N, K, BM=16, BN=8, BK=16).ir()
    with np.errstate(all="ignore"):
        want = a.astype(np.float64) @ b.astype(np.float64)
    for run in (lambda *x: interpret(fn, 1, *x), lambda *x: build_host(fn, sm=80).run(1, *x),
                lambda *x: build_host(fn, sm=0).run(1, *x)):
        c = np.zeros((M, N), np.float32)
        run(a, b, c, M, N, K)
        np.testing.assert_array_equal(np.isnan(c), np.isnan(want))
        np.testing.assert_array_equal(np.isinf(c) & (c > 0), np.isinf(want) & (want > 0))
        fin = np.isfinite(want)
        assert np.all(np.abs(c[fin] - want[fin]) <= _want(a, b)[1][fin])
