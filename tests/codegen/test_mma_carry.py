"""The K-loop tensor-core accumulator kept in mma registers (eggpu.codegen.mma_carry).

run_cpu executes the PTX's order: each mma adds its products to the running accumulator in
k order, and the products of 16-bit (or TF32) operands are exact in f32, so the result is
bit-for-bit a sequential f32 sum over k (checked against numpy doing exactly that); numpy's
f64 matmul is the independent check. ptxas accepts the PTX on every sm_80+ target without
spills, and the K loop of the PTX reads nothing back from shared memory (no accumulator
round trip).
"""

from __future__ import annotations

import numpy as np
import pytest

import eggpu
import eggpu.language as tl
from bench.mma_kernels import k_loop, load_ab, store_c, tile_start
from eggpu.codegen import build_host, compile_ptx_module
from eggpu.ir.semantics import round_tf32


@eggpu.jit
def mm_dot3(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm, rn, rk, acc = tile_start(BM, BN, BK)
    store_c(c_ptr, k_loop(a_ptr, b_ptr, rm, rn, rk, acc, M, N, K, BK), rm, rn, M, N)


@eggpu.jit
def mm_iadd(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """``acc += dot(a, b)`` starting from C itself (a non-uniform initial value): C += A @ B."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    cmask = (rm[:, None] < M) & (rn[None, :] < N)
    acc = tl.load(c_ptr + rm[:, None] * N + rn[None, :], mask=cmask, other=0.0)
    for k in range(0, K, BK):
        a, b = load_ab(a_ptr, b_ptr, rm, rn, k + rk, M, N, K)
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=cmask)


@eggpu.jit
def mm_radd_tf32(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """``acc = dot(a, b) + acc`` (the product on the left) with TF32 operands."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        ka = k + rk
        a = tl.load(a_ptr + rm[:, None] * K + ka[None, :], mask=(rm[:, None] < M) & (ka[None, :] < K), other=0.0)
        b = tl.load(b_ptr + ka[:, None] * N + rn[None, :], mask=(ka[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, input_precision="tf32") + acc
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@eggpu.jit
def mm_acc_read_in_loop(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """The carried value is also scaled every iteration: not the pattern, the blocked path runs."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        ka = k + rk
        a = tl.load(a_ptr + rm[:, None] * K + ka[None, :], mask=(rm[:, None] < M) & (ka[None, :] < K), other=0.0)
        b = tl.load(b_ptr + ka[:, None] * N + rn[None, :], mask=(ka[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc * 0.5)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def _np_dtype(name):
    if name == "bf16":
        import ml_dtypes

        return ml_dtypes.bfloat16
    return {"f16": np.float16, "f32": np.float32}[name]


def _inputs(dt, M, N, K, seed):
    rng = np.random.default_rng(seed)
    t = _np_dtype(dt)
    return (rng.standard_normal((M, K)).astype(t), rng.standard_normal((K, N)).astype(t),
            rng.standard_normal((M, N)).astype(np.float32))


def _sequential(a, b, c0):
    """f32 ``c0 + sum_k a[:, k] * b[k, :]`` added one k at a time (products exact in f32)."""
    acc = c0.astype(np.float32).copy()
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    for k in range(a.shape[1]):
        acc = (acc + a32[:, k:k + 1] * b32[k:k + 1, :]).astype(np.float32)
    return acc


def _run(kern, dt, tiles, nw, M, N, K, seed, sm=80):
    a, b, c = _inputs(dt, M, N, K, seed)
    bm, bn, bk = tiles
    fn = kern.specialize(a, b, c, M, N, K, BM=bm, BN=bn, BK=bk).ir()
    hk = build_host(fn, num_warps=nw, sm=sm)
    c0 = c.copy()
    hk.run((-(-M // bm), -(-N // bn)), a, b, c, M, N, K)
    return hk, a, b, c0, c


# (kernel, dtype, tile, num_warps, M, N, K): ragged sizes, not multiples of any tile
CASES = [
    (mm_dot3, "f16", (32, 32, 32), 4, 70, 45, 77),
    (mm_dot3, "bf16", (64, 32, 16), 2, 65, 33, 50),
    (mm_dot3, "f16", (16, 8, 16), 8, 20, 11, 35),  # 1x1 tile: warps repeat each other's tile
    (mm_iadd, "f16", (32, 64, 32), 4, 33, 70, 1),  # K = 1
    (mm_iadd, "bf16", (64, 48, 32), 4, 100, 50, 70),  # three tile columns per warp: x4.trans + x2.trans
    (mm_radd_tf32, "f32", (32, 32, 16), 4, 40, 37, 45),
]


@pytest.mark.parametrize("kern,dt,tiles,nw,M,N,K", CASES, ids=lambda x: getattr(x, "__name__", None))
def test_run_cpu_register_accumulator_is_sequential_f32(kern, dt, tiles, nw, M, N, K):
    hk, a, b, c0, c = _run(kern, dt, tiles, nw, M, N, K, seed=M + K)
    (d,) = hk.lowered.dots
    assert d["strategy"] == "mma_sync" and d.get("acc_in_registers"), d
    if kern is mm_radd_tf32:
        a, b = round_tf32(a), round_tf32(b)
    if kern is not mm_iadd:
        c0 = np.zeros_like(c0)
    np.testing.assert_array_equal(c, _sequential(a, b, c0))  # the tensor core's order, bit for bit
    want = c0.astype(np.float64) + a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-5 * np.sqrt(K + 1))


def test_accumulator_read_elsewhere_stays_blocked():
    hk, a, b, _, c = _run(mm_acc_read_in_loop, "f16", (32, 32, 16), 4, 40, 40, 50, seed=3)
    (d,) = hk.lowered.dots
    assert d["strategy"] == "mma_sync" and not d.get("acc_in_registers"), d
    want = np.zeros((40, 40))
    for k0 in range(0, 50, 16):
        want = a[:, k0:k0 + 16].astype(np.float64) @ b[k0:k0 + 16].astype(np.float64) + want * 0.5
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-4)


def _k_loop(ptx: str) -> list[str]:
    """The lines of the innermost PTX loop containing mma.sync."""
    from bench.mma_static import ptx_k_loop

    body = ptx_k_loop(ptx)
    assert body, "no loop contains mma.sync"
    return body


def _ptx(kern, dt, tiles, target, nw=4):
    a, b, c = _inputs(dt, 200, 200, 200, 0)
    fn = kern.specialize(a, b, c, 200, 200, 200, BM=tiles[0], BN=tiles[1], BK=tiles[2]).ir()
    return compile_ptx_module(fn, target, num_warps=nw)


@pytest.mark.parametrize("kern,dt", [(mm_dot3, "f16"), (mm_iadd, "bf16"), (mm_radd_tf32, "f32")])
def test_k_loop_has_no_accumulator_round_trip(kern, dt):
    """64x64x32: the loop stores only the a/b tiles (32 elements per thread) and reads shared
    memory only through the fragment loads; one barrier before the stores, one after."""
    cp = _ptx(kern, dt, (64, 64, 32), "sm_80")
    body = _k_loop(cp.ptx)
    assert sum("mma.sync" in ln for ln in body) == 16 * (2 if dt == "f32" else 1)
    assert sum("bar.sync" in ln for ln in body) == 2, "\n".join(body)
    stores = [ln for ln in body if "st.shared" in ln]
    assert len(stores) <= 32, stores
    if dt != "f32":  # 16-bit operands: only 16-bit stores, fragments only through ldmatrix
        assert all(".b16" in ln for ln in stores), stores
        assert not any("ld.shared" in ln for ln in body)
    else:  # TF32 fragments are 32-bit shared loads; no f32 result staging (that would add 32 stores)
        # 4 k-steps x (2 tile rows x 4 A registers + 4 tile columns x 2 B registers), 2x2 warps
        assert sum("ld.shared" in ln for ln in body) == 4 * (2 * 4 + 4 * 2)


def test_blocked_path_still_round_trips():
    """The non-pattern kernel keeps the staging of the result: the test above can fail."""
    body = _k_loop(_ptx(mm_acc_read_in_loop, "f16", (64, 64, 32), "sm_80").ptx)
    assert any("ld.shared" in ln for ln in body)


@pytest.mark.parametrize("target", ["sm_80", "sm_86", "sm_89", "sm_90", "sm_90a"])
@pytest.mark.parametrize("tiles", [(64, 64, 32), (128, 128, 32)])
def test_ptxas_accepts_register_accumulator(target, tiles):
    from eggpu.codegen.ptxas import run_ptxas

    cp = _ptx(mm_dot3, "f16", tiles, target)
    assert cp.lowered.dots[0].get("acc_in_registers")
    assert "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16" in cp.ptx
    rep = run_ptxas(cp.ptx, target)
    assert rep.spills_stores == 0 and rep.spills_loads == 0, rep.log


def test_compile_report_says_the_accumulator_is_in_registers():
    a, b, c = _inputs("f16", 64, 64, 64, 0)
    ck = eggpu.compile(mm_dot3.specialize(a, b, c, 64, 64, 64, BM=32, BN=32, BK=32), target="sm_80")
    (d,) = ck.report["dot"]
    assert d["strategy"] == "mma_sync" and "accumulator carried in mma registers" in d["reason"], d


def test_k_loop_loads_are_whole_vectors_with_launch_facts():
    """With 16-aligned pointers and M, N, K multiples of 16, the masks ``(rm < M) & (ka < K)``
    (broadcasts of row and column masks) select whole 4-element chunks: every K-loop load is
    one predicated 8-byte vector load, with no per-element fallback; without the facts the
    loads stay scalar (the check can fail)."""
    from eggpu.ir.facts import Facts

    a, b, c = _inputs("f16", 256, 256, 256, 0)
    facts = Facts.make({"a_ptr": ["align16"], "b_ptr": ["align16"], "c_ptr": ["align16"], "M": ["div16"],
                        "N": ["div16"], "K": ["div16"]})
    loads = {}
    for with_facts in (True, False):
        fn = mm_dot3.specialize(a, b, c, 256, 256, 256, BM=64, BN=64, BK=32).ir()
        if with_facts:
            fn.facts = fn.facts.merged(facts)
        body = _k_loop(compile_ptx_module(fn, "sm_80", num_warps=4).ptx)
        # the instruction, after its predicate when it has one (masked scalar loads are predicated)
        loads[with_facts] = [next(t for t in ln.split() if t.startswith("ld.global")) for ln in body
                             if "ld.global" in ln]
    # 64x32 + 32x64 halves over 128 threads: 16 + 16 per thread, 4 chunks of 4 each
    assert len(loads[True]) == 8 and set(loads[True]) <= {"ld.global.v4.b16", "ld.global.v2.b32"}, loads[True]
    assert "ld.global.b16" in loads[False]


@eggpu.jit
def mm_two_carried(a_ptr, b_ptr, c_ptr, n_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """The loop carries the accumulator and a step counter; C = A @ B + steps (a blocked use after the loop)."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    steps = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a, b = load_ab(a_ptr, b_ptr, rm, rn, k + rk, M, N, K)
        steps = steps + 1.0
        acc += tl.dot(a, b)
    cmask = (rm[:, None] < M) & (rn[None, :] < N)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc + steps, mask=cmask)
    tl.store(n_ptr + rm[:, None] * N + rn[None, :], acc, mask=cmask)


def test_carried_accumulator_beside_another_carried_value():
    M, N, K, tiles = 40, 24, 50, (32, 16, 16)
    a, b, c = _inputs("bf16", M, N, K, seed=7)
    d = np.zeros((M, N), np.float32)
    fn = mm_two_carried.specialize(a, b, c, d, M, N, K, BM=tiles[0], BN=tiles[1], BK=tiles[2]).ir()
    hk = build_host(fn, num_warps=2, sm=80)
    assert hk.lowered.dots[0].get("acc_in_registers")
    hk.run((2, 2), a, b, c, d, M, N, K)
    want = _sequential(a, b, np.zeros((M, N), np.float32))
    np.testing.assert_array_equal(d, want)
    np.testing.assert_array_equal(c, want + np.float32(4.0))  # ceil(50 / 16) = 4 iterations


@pytest.mark.parametrize("kern", [mm_dot3, mm_iadd])
def test_zero_trip_loop_returns_the_initial_value(kern):
    """K = 0: the loop never runs; the initial value goes to the fragment registers and back."""
    hk, _a, _b, c0, c = _run(kern, "f16", (32, 32, 16), 4, 45, 37, 0, seed=11)
    assert hk.lowered.dots[0].get("acc_in_registers")
    np.testing.assert_array_equal(c, c0 if kern is mm_iadd else np.zeros_like(c0))


@pytest.mark.parametrize("K", [0, 37])
def test_non_uniform_initial_value_converted_in_bands(K):
    """128x96 f32 (53 KiB with padding) does not fit the 48 KiB staging at once: the initial C
    goes into the fragment registers band by band, exactly (K = 0 returns C bit for bit)."""
    M, N = 130, 100
    hk, a, b, c0, c = _run(mm_iadd, "f16", (128, 96, 16), 4, M, N, K, seed=K + 1)
    assert hk.lowered.dots[0].get("acc_in_registers")
    assert hk.lowered.shared_bytes <= 48 * 1024
    np.testing.assert_array_equal(c, _sequential(a, b, c0))


@pytest.mark.parametrize("target", ["sm_80", "sm_90"])
@pytest.mark.parametrize("kern,dt", [(mm_iadd, "bf16"), (mm_radd_tf32, "f32")])
def test_ptxas_accepts_other_forms(kern, dt, target):
    from eggpu.codegen.ptxas import run_ptxas

    cp = _ptx(kern, dt, (64, 64, 32), target)
    assert cp.lowered.dots[0].get("acc_in_registers")
    rep = run_ptxas(cp.ptx, target)
    assert rep.spills_stores == 0 and rep.spills_loads == 0, rep.log
