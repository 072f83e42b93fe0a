"""Software-pipelined tensor-core K loops: cp.async stages and ``num_stages`` (eggpu.codegen.mma_pipeline).

run_cpu executes the GPU's schedule (stage buffers, swizzle, copies at issue, the prologue and
the look-ahead of ``num_stages - 1`` iterations), so its result must be bit for bit the
sequential f32 sum the unpipelined loop gives (each mma adds its exact 16-bit products in k
order) for every ``num_stages``; padding outside the masks holds NaN, so a copy of a masked-off
element would show. ptxas accepts the PTX on every sm_80+ target and the cubin's K loop holds
LDGSTS (cp.async) and HMMA.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import eggpu
import eggpu.language as tl
from bench.mma_kernels import load_ab, store_c, tile_start
from eggpu.codegen import compile_ptx_module
from eggpu.ir.errors import CodegenError, CompileError


@eggpu.jit
def mm_tutorial(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """Triton's tutorial matmul (carried pointers advanced by BK each iteration, masks on K)."""
    offs_am = tl.program_id(0) * BM + tl.arange(0, BM)
    offs_bn = tl.program_id(1) * BN + tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    a_ptrs = a_ptr + offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_ptrs, mask=(offs_am[:, None] < M) & (offs_k[None, :] < K - k * BK), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < K - k * BK) & (offs_bn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BK * stride_ak
        b_ptrs += BK * stride_bk
    c_ptrs = c_ptr + offs_am[:, None] * stride_cm + offs_bn[None, :] * stride_cn
    tl.store(c_ptrs, acc, mask=(offs_am[:, None] < M) & (offs_bn[None, :] < N))


@eggpu.jit
def mm_strided(a_ptr, b_ptr, c_ptr, M, N, K, lda, ldb, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """Pointers recomputed from the induction variable (functions of the coordinates), padded
    leading dimensions, masks on ragged K: the per-thread 16-byte piece copies with an
    element-by-element fallback for partly masked pieces."""
    rm, rn, rk, acc = tile_start(BM, BN, BK)
    for k in range(0, K, BK):
        ka = k + rk
        a = tl.load(a_ptr + rm[:, None] * lda + ka[None, :], mask=(rm[:, None] < M) & (ka[None, :] < K), other=0.0)
        b = tl.load(b_ptr + ka[:, None] * ldb + rn[None, :], mask=(ka[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
    store_c(c_ptr, acc, rm, rn, M, N)


@eggpu.jit
def mm_iv(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """Addresses from the induction variable only (``acc += dot``), row-major packed operands."""
    rm, rn, rk, acc = tile_start(BM, BN, BK)
    for k in range(0, K, BK):
        a, b = load_ab(a_ptr, b_ptr, rm, rn, k + rk, M, N, K)
        acc += tl.dot(a, b)
    store_c(c_ptr, acc, rm, rn, M, N)


@eggpu.jit
def mm_writes_in_loop(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """The body stores (into c): prefetching would be unsound in general, so it is not pipelined."""
    rm, rn, rk, acc = tile_start(BM, BN, BK)
    for k in range(0, K, BK):
        ka = k + rk
        a, b = load_ab(a_ptr, b_ptr, rm, rn, ka, M, N, K)
        acc = tl.dot(a, b, acc)
        tl.store(c_ptr + rm * 0 + k, tl.zeros((BM,), dtype=tl.float32), mask=rm < 0)
    store_c(c_ptr, acc, rm, rn, M, N)


TUTORIAL_FACTS = {"stride_ak": "eq1", "stride_bn": "eq1", "stride_cn": "eq1", "stride_am": "div16",
                  "stride_bk": "div16", "a_ptr": "align16", "b_ptr": "align16"}
IV_FACTS = {"M": "div16", "N": "div16", "K": "div16", "a_ptr": "align16", "b_ptr": "align16"}


def _np_dtype(name):
    if name == "bf16":
        import ml_dtypes

        return ml_dtypes.bfloat16
    return np.float16


def _sequential(a, b):
    """f32 ``sum_k a[:, k] * b[k, :]`` added one k at a time (the mma order; products exact in f32)."""
    acc = np.zeros((a.shape[0], b.shape[1]), np.float32)
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    for k in range(a.shape[1]):
        acc = (acc + a32[:, k:k + 1] * b32[k:k + 1, :]).astype(np.float32)
    return acc


def _padded(rng, rows, cols, ld, dt):
    """A ``rows x ld`` array whose first ``cols`` columns are data and the rest NaN."""
    x = np.full((rows, ld), np.nan, np.float32)
    x[:, :cols] = rng.standard_normal((rows, cols))
    return x.astype(_np_dtype(dt))


def _tutorial(dt, tiles, nw, M, N, K, stages, target="sm_80", optimize=False):
    """Compile and run the tutorial matmul on the CPU: ``(ck, a, b, c)`` with NaN padding."""
    rng = np.random.default_rng(M * 7 + K)
    lda, ldb = -(-K // 16) * 16 + 16, -(-N // 16) * 16 + 16
    a = _padded(rng, M, K, lda, dt)
    b = _padded(rng, K, N, ldb, dt)
    c = np.zeros((M, N), np.float32)
    bm, bn, bk = tiles
    inst = mm_tutorial.specialize(a, b, c, M, N, K, lda, 1, ldb, 1, N, 1, BM=bm, BN=bn, BK=bk)
    ck = eggpu.compile(inst, target, num_warps=nw, num_stages=stages, specialize=TUTORIAL_FACTS,
                       optimize=optimize, cache=False)
    ck.run_cpu((-(-M // bm), -(-N // bn)), a, b, c, M, N, K, lda, 1, ldb, 1, N, 1)
    return ck, a[:, :K], b[:, :N], c


# (dtype, tile, num_warps, M, N, K): ragged, not multiples of the tile; K not a multiple of 8
CASES = [
    ("f16", (32, 32, 32), 4, 70, 45, 77),
    ("bf16", (64, 32, 16), 4, 65, 33, 50),
    ("f16", (64, 64, 32), 4, 100, 72, 1),  # one iteration: the prologue's later stages are empty
    ("bf16", (32, 64, 32), 2, 33, 70, 130),
]


@pytest.mark.parametrize("stages", [1, 2, 3, 4])
@pytest.mark.parametrize("dt,tiles,nw,M,N,K", CASES)
def test_run_cpu_pipelined_matches_sequential_f32(dt, tiles, nw, M, N, K, stages):
    ck, a, b, c = _tutorial(dt, tiles, nw, M, N, K, stages)
    (d,) = ck.report["dot"]
    assert d["pipelined"] == (stages > 1), d
    assert d["num_stages"] == stages if stages > 1 else d["num_stages"] == 1
    assert ("; software-pipelined: num_stages=" in d["reason"]) == (stages > 1), d["reason"]
    np.testing.assert_array_equal(c, _sequential(a, b))  # bit for bit; no NaN from the padding
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-5, atol=1e-5 * np.sqrt(K))


def test_optimized_ir_is_still_pipelined():
    ck, a, b, c = _tutorial("f16", (32, 32, 32), 4, 40, 40, 100, 3, optimize=True)
    assert ck.report["dot"][0]["pipelined"], ck.report["dot"]
    np.testing.assert_array_equal(c, _sequential(a, b))


@pytest.mark.parametrize("stages", [2, 3])
def test_iv_addressing_with_size_facts(stages):
    """Sizes multiples of 16 but not of the tile: the masks select whole 16-byte pieces."""
    M, N, K = 80, 48, 112
    rng = np.random.default_rng(stages)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = np.zeros((M, N), np.float32)
    ck = eggpu.compile(mm_iv.specialize(a, b, c, M, N, K, BM=64, BN=32, BK=32), "sm_90", num_stages=stages,
                       specialize=IV_FACTS, optimize=False, cache=False)
    assert ck.report["dot"][0]["pipelined"]
    ck.run_cpu((2, 2), a, b, c, M, N, K)
    np.testing.assert_array_equal(c, _sequential(a, b))


def _inst(kern=mm_iv, tiles=(64, 64, 32), n=256):
    a = np.zeros((n, n), np.float16)
    c = np.zeros((n, n), np.float32)
    return kern.specialize(a, a, c, n, n, n, BM=tiles[0], BN=tiles[1], BK=tiles[2])


def test_fallbacks_are_reported():
    no_facts = eggpu.compile(_inst(), "sm_80", optimize=False, cache=False)
    (d,) = no_facts.report["dot"]
    assert not d["pipelined"] and "not proven contiguous" in d["reason"], d
    writes = eggpu.compile(_inst(mm_writes_in_loop), "sm_80", specialize=IV_FACTS, optimize=False, cache=False)
    (d,) = writes.report["dot"]
    assert not d["pipelined"] and "writes memory" in d["reason"], d
    one = eggpu.compile(_inst(), "sm_80", specialize=IV_FACTS, num_stages=1, optimize=False, cache=False)
    (d,) = one.report["dot"]
    assert not d["pipelined"] and "num_stages=1" in d["reason"] and "cp.async" not in one.ptx
    assert one.report["options"]["num_stages"] == 1


def _ptx_pipelined(target, tiles, stages=3):
    fn = _inst(tiles=tiles).ir()
    from eggpu.ir.facts import Facts

    fn.facts = fn.facts.merged(Facts.make({k: [v] for k, v in IV_FACTS.items()}))
    cp = compile_ptx_module(fn, target, num_warps=4, num_stages=stages)
    assert cp.lowered.dots[0]["pipelined"], cp.lowered.dots
    return cp


@pytest.mark.parametrize("target", ["sm_80", "sm_86", "sm_89", "sm_90", "sm_90a"])
def test_ptxas_accepts_pipelined_loop_and_sass_has_ldgsts(target):
    from bench.mma_static import disassemble, k_loop
    from eggpu.codegen.ptxas import run_ptxas

    cp = _ptx_pipelined(target, (64, 64, 32))
    assert "cp.async.cg.shared.global" in cp.ptx and "cp.async.wait_group" in cp.ptx
    # zero-filling copies: src-size from one opaque selp of the whole mask (no select chain)
    sizes = re.findall(r"cp\.async\.cg\.shared\.global \[%rd\d+\], \[%rd\d+\], 16, (%r\d+);", cp.ptx)
    assert sizes and all(re.search(rf"selp\.b32 {re.escape(r)}, 16, 0, %p\d+;", cp.ptx) for r in sizes), cp.ptx
    rep = run_ptxas(cp.ptx, target)
    assert rep.spills_stores == 0 and rep.spills_loads == 0, rep.log
    text = disassemble(rep.cubin)
    if text is None:
        pytest.skip("nvdisasm is not installed")
    body = k_loop(text)
    assert "LDGSTS" in body and "HMMA" in body and "LDGDEPBAR" in body, body


def test_ragged_masks_ptx_has_element_fallback():
    """Masks not constant on 16-byte pieces (ragged K): whole valid pairs go by cp.async, others
    element by element (st.shared), accepted by ptxas."""
    from eggpu.codegen.ptxas import run_ptxas
    from eggpu.ir.facts import Facts

    inst = mm_tutorial.specialize(*(np.zeros((64, 64), np.float16),) * 2, np.zeros((64, 64), np.float32),
                                  64, 64, 64, 64, 1, 64, 1, 64, 1, BM=64, BN=64, BK=32)
    fn = inst.ir()
    fn.facts = fn.facts.merged(Facts.make({k: [v] for k, v in TUTORIAL_FACTS.items() if v != "eq1"}))
    from eggpu.ir.facts import substitute_constants

    fn.facts = fn.facts.merged(Facts.make({k: [v] for k, v in TUTORIAL_FACTS.items() if v == "eq1"}))
    substitute_constants(fn)
    cp = compile_ptx_module(fn, "sm_80", num_warps=4, num_stages=3)
    assert cp.lowered.dots[0]["pipelined"], cp.lowered.dots
    assert "cp.async.cg.shared.global" in cp.ptx and "st.shared.b16" in cp.ptx
    assert "shfl.sync.bfly" in cp.ptx  # the pair's validity
    rep = run_ptxas(cp.ptx, "sm_80")
    assert rep.spills_stores == 0, rep.log


STRIDED_FACTS = {"lda": "div16", "ldb": "div16", "a_ptr": "align16", "b_ptr": "align16"}


@pytest.mark.parametrize("dt,stages", [("f16", 2), ("bf16", 3)])
def test_strided_ragged_k_run_cpu_and_ptxas(dt, stages):
    from eggpu.codegen.ptxas import run_ptxas

    M, N, K = 50, 40, 77
    rng = np.random.default_rng(stages)
    lda, ldb = 96, 48
    a, b = _padded(rng, M, K, lda, dt), _padded(rng, K, N, ldb, dt)
    c = np.zeros((M, N), np.float32)
    inst = mm_strided.specialize(a, b, c, M, N, K, lda, ldb, BM=32, BN=32, BK=32)
    ck = eggpu.compile(inst, "sm_80", num_stages=stages, specialize=STRIDED_FACTS, optimize=False, cache=False)
    assert ck.report["dot"][0]["pipelined"], ck.report["dot"]
    ck.run_cpu((2, 2), a, b, c, M, N, K, lda, ldb)
    np.testing.assert_array_equal(c, _sequential(a[:, :K], b[:, :N]))
    assert "cp.async.cg.shared.global" in ck.ptx and "st.shared.b16" in ck.ptx  # copies + fallback
    assert "shfl" not in ck.ptx  # per-thread pieces: no partner validity
    assert run_ptxas(ck.ptx, "sm_80").spills_stores == 0


@pytest.mark.parametrize("bad", [0, 9, -1, True, 2.0, "3"])
def test_bad_num_stages_is_a_compile_error(bad):
    got = re.escape(repr(bad))
    with pytest.raises(CompileError, match=rf"^mm_iv: num_stages must be None \(automatic\) or an int from 1 .* to 8, "
                                          rf"got {got}$"):
        eggpu.compile(_inst(), "sm_80", num_stages=bad, cache=False)
    with pytest.raises(CompileError, match=rf"^mm_iv: num_stages must be None \(automatic\) or an int .* got {got}$"):
        compile_ptx_module(_inst().ir(), "sm_80", num_stages=bad)


@pytest.mark.parametrize("target,stages,limit", [("sm_86", 4, 101376), ("sm_80", 6, 166912)])
def test_stages_over_the_shared_memory_limit(target, stages, limit):
    """128x128x64 f16: 32 KiB per stage."""
    fn = _inst(tiles=(128, 128, 64)).ir()
    from eggpu.ir.facts import Facts

    fn.facts = fn.facts.merged(Facts.make({k: [v] for k, v in IV_FACTS.items()}))
    with pytest.raises(CodegenError, match=rf"^mm_iv.*num_stages={stages} x 32768 bytes per stage.*{limit} bytes"):
        compile_ptx_module(fn, target, num_warps=4, num_stages=stages)
    cp = compile_ptx_module(fn, target, num_warps=4, num_stages=stages - 1 if target == "sm_80" else 3)
    assert cp.lowered.dots[0]["pipelined"]


@pytest.mark.parametrize("target,stages,note", [("sm_86", 2, "(the default 3 stages of 49152 bytes do not fit"),
                                                 ("sm_80", 3, "")])
def test_default_num_stages_fit_the_shared_memory(target, stages, note):
    """128x256x64 f16: 48 KiB per stage. By default (None) three stages are planned and lowered
    to what fits (two on sm_86's 99 KiB), and the report says so; asking for three explicitly
    where they do not fit is the CodegenError above."""
    fn = _inst(tiles=(128, 256, 64)).ir()
    from eggpu.ir.facts import Facts

    fn.facts = fn.facts.merged(Facts.make({k: [v] for k, v in IV_FACTS.items()}))
    cp = compile_ptx_module(fn, target, num_warps=4, num_stages=None)
    dot = cp.lowered.dots[0]
    assert dot["pipelined"] and dot["num_stages"] == stages, dot
    assert f"software-pipelined: num_stages={stages}" in dot["reason"] and note in dot["reason"], dot["reason"]
    if note:
        with pytest.raises(CodegenError, match=r"num_stages=3 x 49152 bytes per stage"):
            compile_ptx_module(fn, target, num_warps=4, num_stages=3)


@pytest.mark.parametrize("stages", [None, 2])
def test_jit_launch_option_num_stages(stages):
    """``fn[grid](..., num_stages=...)`` is the compile option (default None: 3 where they fit); the launch facts the
    jit derives (align16 pointers, div16 sizes) make the loads provably contiguous."""
    M, N, K = 64, 48, 96
    rng = np.random.default_rng(5)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = np.zeros((M, N), np.float32)
    extra = {} if stages is None else {"num_stages": stages}
    ck = mm_iv[(2, 2)](a, b, c, M, N, K, BM=32, BN=32, BK=32, **extra)
    assert ck.report["options"]["num_stages"] == stages
    assert ck.report["dot"][0]["num_stages"] == (stages or 3)
    assert ck.report["dot"][0]["pipelined"], ck.report["dot"]
    np.testing.assert_array_equal(c, _sequential(a, b))


@eggpu.jit
def mm_with_reduction(a_ptr, b_ptr, c_ptr, s_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """The body also reduces 256 elements of a's first row through shared memory (a load the dot
    does not use; 256 lanes span the CTA's warps, so the partials go through shared memory, where a
    block of <= 32 would reduce in registers): the stage buffers must sit above that scratch, or
    the reduction would overwrite prefetched tiles."""
    rm, rn, rk, acc = tile_start(BM, BN, BK)
    total = 0.0
    for k in range(0, K, BK):
        ka = k + rk
        a, b = load_ab(a_ptr, b_ptr, rm, rn, ka, M, N, K)
        kr = k + tl.arange(0, 256)
        row = tl.load(a_ptr + kr, mask=kr < K, other=0.0)
        total += tl.sum(row.to(tl.float32))
        acc = tl.dot(a, b, acc)
    store_c(c_ptr, acc, rm, rn, M, N)
    tl.store(s_ptr + tl.program_id(0) * 0, total)


def test_shared_memory_of_the_body_is_below_the_stages():
    M, N, K = 64, 32, 160
    rng = np.random.default_rng(11)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = np.zeros((M, N), np.float32)
    s = np.zeros(1, np.float32)
    inst = mm_with_reduction.specialize(a, b, c, s, M, N, K, BM=64, BN=32, BK=32)
    ck = eggpu.compile(inst, "sm_80", num_stages=4, specialize=IV_FACTS, optimize=False, cache=False)
    (d,) = ck.report["dot"]
    assert d["pipelined"], d
    assert ck.shared_bytes > 4 * (64 * 32 + 32 * 32) * 2, ck.shared_bytes  # stages above the scratch
    ck.run_cpu((1, 1), a, b, c, s, M, N, K)
    np.testing.assert_array_equal(c, _sequential(a, b))
    want = sum(a[0, k:].astype(np.float64).sum() for k in range(0, K, 32))
    np.testing.assert_allclose(s[0], want, rtol=1e-5)


def test_num_stages_is_part_of_the_cache_key(tmp_path):
    inst = _inst(tiles=(32, 32, 32))
    first = eggpu.compile(inst, "sm_80", num_stages=2, specialize=IV_FACTS, optimize=False, cache=tmp_path)
    other = eggpu.compile(inst, "sm_80", num_stages=3, specialize=IV_FACTS, optimize=False, cache=tmp_path)
    again = eggpu.compile(inst, "sm_80", num_stages=2, specialize=IV_FACTS, optimize=False, cache=tmp_path)
    assert (first.report["cache"], other.report["cache"], again.report["cache"]) == ("miss", "miss", "hit")
    assert again.options.num_stages == 2 and again.ptx == first.ptx != other.ptx
    assert "cp.async.wait_group" in first.ptx


@pytest.mark.parametrize("target,strategy", [("sm_80", None), ("sm_90a", "wgmma")])
def test_hoisted_address_parts_shorten_the_k_loop(monkeypatch, target, strategy):
    """Each copy's loop-invariant address part (``a_ptr + rm * K``) is computed before the loop
    (codegen/mma_addr.py): the SASS K loop is shorter than with the whole expression evaluated
    per iteration, without spills; run_cpu's use of the same addresses is checked by the
    bit-exact tests above (mm_iv, mm_strided: invariant terms on both sides of the varying one)."""
    from bench.mma_static import disassemble, k_loop
    from eggpu.codegen import mma_pipeline
    from eggpu.codegen.ptxas import run_ptxas
    from eggpu.ir.facts import Facts

    def loop(hoist: bool) -> int:
        monkeypatch.setattr(mma_pipeline, "HOIST_ADDRESSES", hoist)
        fn = _inst().ir()
        fn.facts = fn.facts.merged(Facts.make({k: [v] for k, v in IV_FACTS.items()}))
        cp = compile_ptx_module(fn, target, num_warps=4, num_stages=3, dot_strategy=strategy)
        assert cp.lowered.dots[0]["pipelined"], cp.lowered.dots
        rep = run_ptxas(cp.ptx, target)
        assert rep.spills_stores == 0 and rep.spills_loads == 0, rep.log
        text = disassemble(rep.cubin)
        if text is None:
            pytest.skip("nvdisasm is not installed")
        return len(k_loop(text, ("HMMA", "HGMMA")))

    assert loop(True) < loop(False)
