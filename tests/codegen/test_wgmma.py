"""The opt-in ``wgmma`` dot strategy (sm_90a): run_cpu vs numpy, descriptors vs Triton, ptxas, SASS, errors.

No GPU checks this code here. What makes run_cpu a real test of the layout arithmetic: the host
build stores the operands at the same swizzled byte offsets as the PTX and emulates each wgmma
by decoding the same 64-bit matrix descriptors (start address, stride byte offset, swizzle mode)
to find every A/B element, so a store layout that disagrees with the descriptors gives wrong
products (the mutation tests below prove the check can fail). The descriptor constants are
compared with the ones Triton emits for the same swizzle.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import eggpu
import eggpu.language as tl
from eggpu.codegen import build_host, compile_ptx_module
from eggpu.codegen import lower_wgmma as W
from eggpu.ir.errors import CodegenError, CompileError

from .test_mma import _inputs, _kernel_ir, mm


@eggpu.jit
def one_dot(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """A single dot of masked tiles, no K loop (the non-carried path)."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :], mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
    c = tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], c, mask=(rm[:, None] < M) & (rn[None, :] < N))


def _check(c, a, b, K):
    want = a.astype(np.float64) @ b.astype(np.float64)
    # products of 16-bit floats are exact in f32: only the f32 summation order differs
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-5 * np.sqrt(K))


def _run_loop(dt, tiles, nw, M, N, K, seed=0):
    bm, bn, _ = tiles
    hk = build_host(_kernel_ir(dt, tiles, M, N, K), num_warps=nw, sm=90, dot_strategy="wgmma")
    a, b, c = _inputs(dt, M, N, K, seed=seed)
    hk.run((-(-M // bm), -(-N // bn)), a, b, c, M, N, K)
    return hk, a, b, c


# (dtype, BM, BN, BK, num_warps, M, N, K): ragged sizes; every swizzle width (BK 16/32/64 and
# 128 = two 64-wide K blocks), one and two warpgroups, warpgroups repeating each other (64 rows
# over 8 warps), two m64 blocks per warpgroup, n = 8 and n = 256 per instruction, b MN-major
# (N % 16 == 0, Triton's layout) and K-major (BN = 8, 40)
CASES = [
    ("f16", 64, 64, 32, 4, 100, 70, 50),
    ("bf16", 64, 32, 32, 4, 130, 45, 61),
    ("f16", 128, 64, 64, 4, 150, 70, 130),
    ("bf16", 64, 128, 16, 8, 70, 200, 40),
    ("f16", 128, 32, 128, 8, 200, 40, 300),
    ("bf16", 64, 8, 16, 4, 65, 11, 17),
    ("f16", 64, 256, 16, 4, 64, 257, 20),
    ("f16", 64, 64, 32, 4, 1, 1, 1),
    ("bf16", 64, 40, 32, 4, 70, 41, 33),
]


@pytest.mark.parametrize("dt,bm,bn,bk,nw,M,N,K", CASES)
def test_run_cpu_wgmma_k_loop_matches_numpy(dt, bm, bn, bk, nw, M, N, K):
    hk, a, b, c = _run_loop(dt, (bm, bn, bk), nw, M, N, K, seed=M + N)
    (d,) = hk.lowered.dots
    assert d["strategy"] == "wgmma" and d["acc_in_registers"], d
    _check(c, a, b, K)


@pytest.mark.parametrize("dt,bm,bn,bk,nw", [("f16", 64, 64, 64, 4), ("bf16", 128, 16, 32, 8)])
def test_run_cpu_single_wgmma_dot_matches_numpy(dt, bm, bn, bk, nw):
    M, N, K = bm + 7, bn + 3, bk - 5
    a, b, c = _inputs(dt, M, N, K, seed=3)
    fn = one_dot.specialize(a, b, c, M, N, K, BM=bm, BN=bn, BK=bk).ir()
    hk = build_host(fn, num_warps=nw, sm=90, dot_strategy="wgmma")
    (d,) = hk.lowered.dots
    assert d["strategy"] == "wgmma" and "acc_in_registers" not in d, d
    hk.run((-(-M // bm), -(-N // bn)), a, b, c, M, N, K)
    _check(c, a, b, K)


def test_swizzle_mode_mismatch_is_caught_by_run_cpu(monkeypatch):
    """Descriptors that announce another swizzle than the stores used give wrong products."""
    monkeypatch.setattr(W, "SWIZZLE_MODE", {128: 2, 64: 1, 32: 1})
    _, a, b, c = _run_loop("f16", (64, 64, 32), 4, 70, 70, 40)
    with pytest.raises(AssertionError):
        _check(c, a, b, 40)


def test_stride_byte_offset_mismatch_is_caught_by_run_cpu(monkeypatch):
    """A wrong stride between 8-row groups in the descriptor gives wrong products."""
    good = W.descriptor_bits
    monkeypatch.setattr(W, "descriptor_bits", lambda S, lbo=0: good(S, lbo) + ((8 * S) >> 4 << 32))
    _, a, b, c = _run_loop("bf16", (64, 32, 64), 4, 64, 32, 64)
    with pytest.raises(AssertionError):
        _check(c, a, b, 64)


@pytest.mark.parametrize("K", [16, 32, 64, 80, 128, 192])
@pytest.mark.parametrize("rows", [8, 64, 72])
def test_kmajor_layout_is_a_bijection_and_conflict_free(rows, K):  # rows: M (a) or N (K-major b)
    """Every element has its own 2 bytes inside the operand, and the 8 rows of one 16-byte column
    chunk (what a core matrix reads) fall in 8 different 16-byte bank groups of a 128-byte line."""
    offs = {W.kmajor_byte(r, k, rows, K) for r in range(rows) for k in range(K)}
    assert offs == set(range(0, rows * K * 2, 2))
    for r0 in range(0, rows, 8):
        for k in range(0, K, 8):
            banks = {(W.kmajor_byte(r, k, rows, K) // 16) % 8 for r in range(r0, r0 + 8)}
            assert len(banks) == 8, (rows, K, r0, k, banks)


@pytest.mark.parametrize("N", [16, 32, 64, 128, 192])
@pytest.mark.parametrize("K", [16, 48])
def test_mn_major_layout_is_a_bijection_and_conflict_free(K, N):
    """b [K, N] MN-major: every element its own 2 bytes; the 8 k rows of one 16-byte chunk of
    columns fall in 8 different 16-byte bank groups."""
    assert W.mn_major(N)
    offs = {W.mnmajor_byte(k, n, K, N) for k in range(K) for n in range(N)}
    assert offs == set(range(0, K * N * 2, 2))
    for k0 in range(0, K, 8):
        for n in range(0, N, 8):
            banks = {(W.mnmajor_byte(k, n, K, N) // 16) % 8 for k in range(k0, k0 + 8)}
            assert len(banks) == 8, (K, N, k0, n, banks)


def _triton_ptx(bn: int, bk: int) -> str:
    """Triton's sm_90a PTX of the 64 x ``bn`` x ``bk`` matmul (4 warps, no pipelining)."""
    triton = pytest.importorskip("triton")
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from bench.mma_static import matmul_source

    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32", "M": "i32", "N": "i32", "K": "i32",
           "BM": "constexpr", "BN": "constexpr", "BK": "constexpr"}
    src = ASTSource(fn=matmul_source("triton"), signature=sig, constexprs={"BM": 64, "BN": bn, "BK": bk},
                    attrs={(i,): [["tt.divisibility", 16]] for i in range(6)})
    ptx = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": 4, "num_stages": 1}).asm["ptx"]
    assert "wgmma.mma_async" in ptx
    return ptx


def _or64_constants(ptx: str) -> set[int]:
    """The address-independent descriptor constants (``or.b64`` immediates) of a PTX text."""
    return {int(x) % (1 << 64) for x in re.findall(r"or\.b64\s+%rd\d+, %rd\d+, (-?\d+);", ptx)}


@pytest.mark.parametrize("bn,bk", [(64, 32), (32, 64)])
def test_descriptor_bits_match_tritons_for_the_same_swizzle(bn, bk):
    """Triton's A (K-major, BK wide) and B (MN-major, BN wide, one swizzle atom) descriptors carry
    the same constant bits as ours for the same swizzle widths."""
    got = _or64_constants(_triton_ptx(bn, bk))
    assert W.descriptor_bits(W.swizzle_bytes(bk)) in got
    assert W.descriptor_bits(W.swizzle_bytes(bn)) in got


def test_mn_major_leading_byte_offset_matches_tritons():
    """With two 64-column atoms (BN=128), Triton's B descriptor adds a leading byte offset of
    BK * 128 bytes (the next atom), the value ours has for that operand."""
    ptx = _triton_ptx(128, 32)
    lbo = W.descriptor_bits(128, lbo=32 * 128) - W.descriptor_bits(128)
    assert lbo == (4096 >> 4) << 16
    assert re.search(rf"or\.b32\s+%r\d+, %r\d+, {lbo};", ptx), "Triton's B descriptor has another LBO"


@pytest.mark.parametrize("dt", ["f16", "bf16"])
@pytest.mark.parametrize("tiles,nw", [((64, 64, 32), 4), ((128, 128, 32), 4), ((128, 128, 64), 8)])
def test_ptxas_accepts_wgmma_ptx_without_spills(dt, tiles, nw):
    from eggpu.codegen.ptxas import run_ptxas

    cp = compile_ptx_module(_kernel_ir(dt, tiles, 1000, 1000, 1000), "sm_90a", num_warps=nw, dot_strategy="wgmma")
    n = W.instr_n(tiles[1])
    assert f"wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{dt}.{dt}" in cp.ptx
    for piece in ("fence.proxy.async.shared::cta", "wgmma.fence.sync.aligned", "wgmma.commit_group.sync.aligned",
                  "wgmma.wait_group.sync.aligned 0", ".shared .align 1024"):
        assert piece in cp.ptx, piece
    rep = run_ptxas(cp.ptx, "sm_90a")
    assert rep.spills_stores == 0 and rep.spills_loads == 0, rep.log
    assert "serialized" not in rep.log and "Performance Loss" not in rep.log, rep.log  # no wgmma serialization


def test_sass_contains_hgmma():
    from eggpu.codegen.ptxas import run_ptxas

    tools = pytest.importorskip("bench.tools")
    cp = compile_ptx_module(_kernel_ir("f16", (64, 64, 32), 100, 100, 100), "sm_90a", dot_strategy="wgmma")
    sass = tools.sass_of_cubin(run_ptxas(cp.ptx, "sm_90a").cubin)
    if sass is None:
        pytest.skip("neither nvdisasm nor cuobjdump is installed (pip install nvidia-cuda-nvdisasm)")
    assert sass.opcodes.get("HGMMA", 0) > 0, sass.opcodes
    assert sass.opcodes.get("HMMA", 0) == 0 and sass.opcodes.get("LDSM", 0) == 0, sass.opcodes


def test_default_strategy_is_unchanged_on_sm_90a():
    cp = compile_ptx_module(_kernel_ir("f16", (64, 64, 32), 100, 100, 100), "sm_90a")
    assert cp.lowered.dots[0]["strategy"] == "mma_sync"
    assert "wgmma" not in cp.ptx


@pytest.mark.parametrize("target,dt,tiles,nw,why", [
    ("sm_90", "f16", (64, 64, 32), 4, r"wgmma needs the sm_90a target \(target: sm_90\)"),
    ("sm_80", "bf16", (64, 64, 32), 4, r"wgmma needs the sm_90a target \(target: sm_80\)"),
    ("sm_90a", "f32", (64, 64, 32), 4, r"f32 operands: wgmma is used for f16/bf16"),
    ("sm_90a", "f16", (64, 64, 32), 2, r"num_warps=2 is not a multiple of 4"),
    ("sm_90a", "f16", (32, 64, 32), 4, r"shape 32x32 @ 32x64 is not a multiple of the m64nNk16 tile"),
    ("sm_90a", "bf16", (64, 64, 8), 4, r"shape 64x8 @ 8x64 is not a multiple of the m64nNk16 tile"),
    ("sm_90a", "f16", (128, 256, 16), 4, r"256 f32 accumulators per thread"),
])
def test_wgmma_that_does_not_apply_is_a_clear_error(target, dt, tiles, nw, why):
    fn = _kernel_ir(dt, tiles, 100, 100, 100)
    M, N, K = tiles[0], tiles[1], tiles[2]
    shape = rf"the {M}x{K} @ {K}x{N} {dt} dot: "
    with pytest.raises(CodegenError, match=rf"^mm.* in dot: dot_strategy='wgmma' does not apply to {shape}.*{why}"):
        compile_ptx_module(fn, target, num_warps=nw, dot_strategy="wgmma")


def test_host_build_emulating_another_gpu_refuses_wgmma():
    with pytest.raises(CodegenError, match=r"wgmma needs the sm_90a target \(the CPU build emulates sm_80\)"):
        build_host(_kernel_ir("f16", (64, 64, 32), 100, 100, 100), sm=80, dot_strategy="wgmma")


@pytest.mark.parametrize("bad", ["wmma", "WGMMA", 3, True])
def test_unknown_dot_strategy_is_a_compile_error(bad):
    a, b, c = _inputs("f16", 40, 40, 40)
    kern = mm.specialize(a, b, c, 40, 40, 40, BM=64, BN=64, BK=32)
    with pytest.raises(CompileError, match=rf"^mm.*: dot_strategy must be None \(automatic\) or one of "
                                           rf"'shared_fma', 'mma_sync', 'wgmma', got {re.escape(repr(bad))}$"):
        eggpu.compile(kern, target="sm_90a", optimize=False, cache=False, dot_strategy=bad)


def test_strategy_names_are_the_seams_keys():
    from eggpu.codegen.lower_dot import DOT_STRATEGIES
    from eggpu.ir.targets import DOT_STRATEGY_NAMES

    assert set(DOT_STRATEGY_NAMES) == set(DOT_STRATEGIES)


def test_forcing_the_other_strategies():
    fn = _kernel_ir("f16", (64, 64, 32), 100, 100, 100)
    assert compile_ptx_module(fn, "sm_90a", dot_strategy="shared_fma").lowered.dots[0]["strategy"] == "shared_fma"
    d = compile_ptx_module(fn, "sm_90a", dot_strategy="mma_sync").lowered.dots[0]
    assert d["strategy"] == "mma_sync" and "ldmatrix" in d["reason"]
    with pytest.raises(CodegenError, match=r"dot_strategy='mma_sync' does not apply to the 64x32 @ 32x64 f16 dot: "
                                           r"mma.sync m16n8k16 needs sm_80 or newer \(target: sm_75\)"):
        compile_ptx_module(fn, "sm_75", dot_strategy="mma_sync")


def test_compile_option_reports_and_runs_on_the_cpu(tmp_path):
    M, N, K = 90, 77, 70
    a, b, c = _inputs("bf16", M, N, K, seed=5)
    kern = mm.specialize(a, b, c, M, N, K, BM=64, BN=64, BK=32)
    ck = eggpu.compile(kern, target="sm_90a", optimize=False, cache=str(tmp_path), dot_strategy="wgmma")
    (d,) = ck.report["dot"]
    assert d["strategy"] == "wgmma" and "not yet checked on a GPU" in d["reason"], d
    assert ck.report["options"]["dot_strategy"] == "wgmma"
    assert "wgmma.mma_async" in ck.ptx
    ck.run_cpu((2, 2), a, b, c, M, N, K)
    _check(c, a, b, K)
    auto = eggpu.compile(kern, target="sm_90a", optimize=False, cache=str(tmp_path))
    assert auto.report["dot"][0]["strategy"] == "mma_sync"  # a different cache entry


# ---------------------------------------------------------------- cp.async stages (mma_pipeline)


def _pipelined(dt, tiles, nw, M, N, K, stages, target="sm_90a"):
    """The strided matmul with NaN padding past each row, compiled for wgmma with ``stages``
    cp.async stages and run on the CPU: ``(ck, a, b, c)`` (a, b without the padding)."""
    from .test_mma_pipeline import _padded, mm_strided

    rng = np.random.default_rng(M + 3 * K)
    lda, ldb = -(-K // 16) * 16 + 16, -(-N // 16) * 16 + 16
    a, b = _padded(rng, M, K, lda, dt), _padded(rng, K, N, ldb, dt)
    c = np.zeros((M, N), np.float32)
    bm, bn, bk = tiles
    inst = mm_strided.specialize(a, b, c, M, N, K, lda, ldb, BM=bm, BN=bn, BK=bk)
    facts = {"lda": "div16", "ldb": "div16", "a_ptr": "align16", "b_ptr": "align16"}
    if K % 16 == 0:
        facts["K"] = "div16"  # the K mask is constant on 8-element pieces: src-size 0/16 copies
    ck = eggpu.compile(inst, target, num_warps=nw, num_stages=stages, specialize=facts, optimize=False,
                       cache=False, dot_strategy="wgmma")
    ck.run_cpu((-(-M // bm), -(-N // bn)), a, b, c, M, N, K, lda, ldb)
    return ck, a[:, :K], b[:, :N], c


# ragged sizes (K % 16 != 0: masked pieces copied element by element; K % 16 == 0: src-size
# 0/16 copies); two MN-major atoms of b (BN=128, the mutation test's layout); one iteration
# (K=20 < BK: the prologue's later stages are empty); slow: two warpgroups with two m64 blocks
# and BK=64 (128-byte swizzle; its host build takes ~20 s)
PIPE_CASES = [
    ("f16", (64, 64, 32), 4, 100, 70, 77, 3),
    ("bf16", (64, 128, 32), 4, 64, 100, 64, 2),
    ("f16", (64, 16, 32), 4, 70, 20, 20, 4),
    pytest.param("bf16", (128, 128, 64), 8, 100, 120, 170, 3, marks=pytest.mark.slow),
]


@pytest.mark.parametrize("dt,tiles,nw,M,N,K,stages", PIPE_CASES)
def test_run_cpu_pipelined_wgmma_is_the_sequential_f32_sum(dt, tiles, nw, M, N, K, stages):
    """Each emulated wgmma adds its exact 16-bit products in k order: bit for bit the sequential
    f32 sum, through the stage ring, the swizzled cp.async destinations and the descriptors."""
    from .test_mma_pipeline import _sequential

    ck, a, b, c = _pipelined(dt, tiles, nw, M, N, K, stages)
    (d,) = ck.report["dot"]
    assert d["strategy"] == "wgmma" and d["pipelined"] and d["num_stages"] == stages, d
    assert f"software-pipelined: num_stages={stages}" in d["reason"], d["reason"]
    np.testing.assert_array_equal(c, _sequential(a, b))


def test_pipelined_copies_in_another_layout_are_caught_by_run_cpu(monkeypatch):
    """cp.async destinations in mma_sync's ldmatrix swizzle instead of the descriptors' layout
    give wrong products: run_cpu checks the copies against the descriptors. (The two layouts
    agree on one swizzle atom: BN=128 is two 64-column atoms of b, BK=128 two K blocks of a;
    unpatched, the first configuration is a case of PIPE_CASES.)"""
    from eggpu.codegen import mma_pipeline as P

    good = P._dest_index
    monkeypatch.setattr(P, "_dest_index", lambda rows, cols, wgmma: good(rows, cols, False))
    for tiles, N, K in (((64, 128, 32), 100, 64), ((64, 32, 128), 32, 128)):
        _, a, b, c = _pipelined("bf16", tiles, 4, 64, N, K, 2)
        with pytest.raises(AssertionError):
            _check(c, a, b, K)


def _loop_lines(ptx: str) -> list[str]:
    from bench.mma_static import ptx_k_loop

    keys = ("cp.async", "bar.sync", "fence.proxy", "wgmma.")
    return [x.strip() for x in ptx_k_loop(ptx) if any(k in x for k in keys)]


@pytest.mark.parametrize("tiles,nw,stages", [((64, 64, 32), 4, 3), ((128, 128, 32), 4, 4), ((128, 128, 64), 8, 2)])
def test_pipelined_wgmma_ptx_keeps_one_group_in_flight(tiles, nw, stages):
    """Triton's order in the K loop: wait for this step's copies, barrier, proxy fence, the
    wgmmas, commit, ``wgmma.wait_group 1`` (the previous step's group is done), barrier (every
    warpgroup's is), then the copies into the stage that group read; the last group is waited
    for after the loop. ptxas: no spills, no serialized wgmma; SASS: LDGSTS and HGMMA, no STS."""
    from bench.mma_static import disassemble, k_loop
    from eggpu.codegen.ptxas import run_ptxas
    from eggpu.ir.facts import Facts

    from .test_mma_pipeline import IV_FACTS, _inst

    fn = _inst(tiles=tiles).ir()
    fn.facts = fn.facts.merged(Facts.make({k: [v] for k, v in IV_FACTS.items()}))
    cp = compile_ptx_module(fn, "sm_90a", num_warps=nw, num_stages=stages, dot_strategy="wgmma")
    assert cp.lowered.dots[0]["pipelined"], cp.lowered.dots
    lines = _loop_lines(cp.ptx)
    first = lines.index("wgmma.fence.sync.aligned;")
    assert lines[:first] == [f"cp.async.wait_group \t{stages - 2};", "bar.sync \t0;",
                             "fence.proxy.async.shared::cta;"], lines
    after = lines[first + 1:]
    n_mma = sum(x.startswith("wgmma.mma_async") for x in after)
    assert n_mma == tiles[2] // 16 * (tiles[0] // 64 // (nw // 4)) * (tiles[1] // W.instr_n(tiles[1])), after
    rest = after[n_mma:]
    assert rest[:3] == ["wgmma.commit_group.sync.aligned;", "wgmma.wait_group.sync.aligned 1;", "bar.sync \t0;"], rest
    assert rest[-1] == "cp.async.commit_group;" and all(x.startswith("cp.async.cg") for x in rest[3:-1]), rest
    tail = cp.ptx[cp.ptx.index(lines[-1]):]
    assert "wgmma.wait_group.sync.aligned 0;" in tail and "cp.async.wait_group \t0;" in tail
    assert ".shared .align 1024" in cp.ptx  # the stages' swizzle is on absolute addresses
    rep = run_ptxas(cp.ptx, "sm_90a")
    assert rep.spills_stores == 0 and rep.spills_loads == 0, rep.log
    assert "serialized" not in rep.log and "Performance Loss" not in rep.log, rep.log
    text = disassemble(rep.cubin)
    if text is None:
        pytest.skip("nvdisasm is not installed (pip install nvidia-cuda-nvdisasm)")
    body = k_loop(text)
    assert "HGMMA" in body and "LDGSTS" in body and "STS" not in body, body


def test_k_major_b_is_not_pipelined_and_stages_over_the_limit_are_an_error():
    """N % 16 == 8 stages b K-major (a transposed store, no cp.async): reported, still correct.
    128x256x64 wgmma stages are 48 KiB: five are over sm_90a's shared memory."""
    from eggpu.ir.facts import Facts

    from .test_mma_pipeline import IV_FACTS, _inst

    ck, a, b, c = _pipelined("f16", (64, 40, 32), 4, 70, 41, 64, 3)
    (d,) = ck.report["dot"]
    assert not d["pipelined"] and "b is staged K-major for wgmma (N=40" in d["reason"], d
    _check(c, a, b, 64)
    fn = _inst(tiles=(128, 256, 64)).ir()
    fn.facts = fn.facts.merged(Facts.make({k: [v] for k, v in IV_FACTS.items()}))
    with pytest.raises(CodegenError, match=r"^mm_iv.*num_stages=5 x 49152 bytes per stage.*232448 bytes"):
        compile_ptx_module(fn, "sm_90a", num_warps=8, num_stages=5, dot_strategy="wgmma")


@pytest.mark.parametrize("dt,K,stages", [("f16", 77, 3), ("bf16", 64, 2)])
def test_tutorial_carried_pointers_pipelined_wgmma(dt, K, stages):
    """Triton's tutorial loop (pointers carried, ``+= BK``): the lane-pair 16-byte copies of
    mma_pipeline into the descriptors' layout; run_cpu bit for bit the sequential sum with NaN
    padding, and ptxas accepts the PTX without spills or serialized wgmma."""
    from eggpu.codegen.ptxas import run_ptxas

    from .test_mma_pipeline import TUTORIAL_FACTS, _padded, _sequential, mm_tutorial

    M, N = 70, 100
    rng = np.random.default_rng(K)
    lda, ldb = -(-K // 16) * 16 + 16, -(-N // 16) * 16 + 16
    a, b = _padded(rng, M, K, lda, dt), _padded(rng, K, N, ldb, dt)
    c = np.zeros((M, N), np.float32)
    inst = mm_tutorial.specialize(a, b, c, M, N, K, lda, 1, ldb, 1, N, 1, BM=64, BN=128, BK=32)
    ck = eggpu.compile(inst, "sm_90a", num_warps=4, num_stages=stages, specialize=TUTORIAL_FACTS,
                       optimize=False, cache=False, dot_strategy="wgmma")
    (d,) = ck.report["dot"]
    assert d["pipelined"] and "cp.async of 16/16 bytes" in d["reason"], d
    ck.run_cpu((2, 1), a, b, c, M, N, K, lda, 1, ldb, 1, N, 1)
    np.testing.assert_array_equal(c, _sequential(a[:, :K], b[:, :N]))
    rep = run_ptxas(ck.ptx, "sm_90a")
    assert rep.spills_stores == 0 and "serialized" not in rep.log, rep.log
