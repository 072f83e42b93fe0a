"""``tl.dot(..., out_dtype=)`` with Triton's rule: f16 inputs may ask for an f16 result (eggpu
accumulates in f32 and rounds once per dot), f32/bf16 inputs always give f32, bf16 is refused."""

from __future__ import annotations

import numpy as np
import pytest

import eggpu
import eggpu.language as tl
from eggpu.codegen import build_host
from eggpu.ir.interp import interpret


@eggpu.jit
def mm16(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float16)
    for k in range(0, K, BK):
        ka = k + rk
        a = tl.load(a_ptr + rm[:, None] * K + ka[None, :], mask=(rm[:, None] < M) & (ka[None, :] < K), other=0.0)
        b = tl.load(b_ptr + ka[:, None] * N + rn[None, :], mask=(ka[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc, out_dtype=tl.float16)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@eggpu.jit
def one(a_ptr, c_ptr, OUT: tl.constexpr, ACC: tl.constexpr):
    r = tl.arange(0, 16)
    a = tl.load(a_ptr + r[:, None] * 16 + r[None, :])
    if ACC:
        c = tl.dot(a, a, tl.zeros((16, 16), dtype=tl.float32), out_dtype=OUT)
    else:
        c = tl.dot(a, a, out_dtype=OUT)
    tl.store(c_ptr + r[:, None] * 16 + r[None, :], c)


@pytest.mark.parametrize("M,N,K", [(100, 70, 50), (33, 17, 40)])
def test_f16_out_dtype_runs_on_tensor_cores_and_matches_numpy(M, N, K):
    rng = np.random.default_rng(M)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = np.zeros((M, N), np.float16)
    fn = mm16.specialize(a, b, c, M, N, K, BM=32, BN=32, BK=16).ir()
    hk = build_host(fn, sm=80)
    assert [d["strategy"] for d in hk.lowered.dots] == ["mma_sync"]
    grid = ((M + 31) // 32, (N + 31) // 32)
    hk.run(grid, a, b, c, M, N, K)
    want = a.astype(np.float64) @ b.astype(np.float64)
    # one f16 rounding per K step of 16 (the f16 accumulator), each within half an f16 ulp
    np.testing.assert_allclose(c.astype(np.float64), want, rtol=4e-3, atol=4e-3 * np.sqrt(K))
    ci = np.zeros_like(c)
    interpret(fn, grid, a, b, ci, M, N, K)
    np.testing.assert_allclose(c.astype(np.float64), ci.astype(np.float64), rtol=1e-3, atol=1e-3)


def _result_dtype(a_dtype, out, acc=False):
    """The dtype of tl.dot's value as the kernel sees it (the dot, or the cast that follows it)."""
    a = np.zeros((16, 16), a_dtype)
    fn = one.specialize(a, np.zeros((16, 16), np.float32), OUT=out, ACC=acc).ir()
    ops = list(fn.walk())
    (dot,) = [o for o in ops if o.op == "dot"]
    after = [o for o in ops if o.op == "cast" and o.operands[0] is dot.results[0]]
    return (after[0] if after and after[0].results[0].type.dtype.name == "f16" else dot).results[0].type.dtype.name


def test_out_dtype_follows_triton_rule():
    assert _result_dtype(np.float16, tl.float16) == "f16"
    assert _result_dtype(np.float16, tl.float32) == "f32"
    assert _result_dtype(np.float32, tl.float16) == "f32"  # Triton ignores out_dtype for f32/bf16 inputs


def test_f16_out_dtype_needs_an_f16_acc():
    with pytest.raises(eggpu.EggpuError, match=r"tl.dot\(out_dtype=f16\): acc must be an f16 block, got f32\[16,16\]"):
        _result_dtype(np.float16, tl.float16, acc=True)


@pytest.mark.parametrize("a_dtype,out,msg", [
    (np.float16, tl.bfloat16, r"out_dtype=bf16\) is not supported by eggpu: a bf16 result is not available"),
    (np.int32, tl.float16, r"out_dtype=f16\) is not supported by eggpu: products accumulate in i32"),
    (np.float32, tl.int32, r"out_dtype=i32\) is not supported by eggpu: float products accumulate in f32"),
])
def test_unsupported_out_dtypes_are_clear_errors(a_dtype, out, msg):
    with pytest.raises(eggpu.EggpuError, match=msg):
        _result_dtype(a_dtype, out)


@eggpu.jit
def one_k32(a_ptr, b_ptr, c_ptr):
    r = tl.arange(0, 16)
    k = tl.arange(0, 32)
    a = tl.load(a_ptr + r[:, None] * 32 + k[None, :])
    b = tl.load(b_ptr + k[:, None] * 16 + r[None, :])
    tl.store(c_ptr + r[:, None] * 16 + r[None, :], tl.dot(a, b, out_dtype=tl.float16))


def test_f16_out_dtype_rounds_the_f32_sum_once_not_per_product():
    """What eggpu computes for f16 x f16 -> f16: the f32 accumulation rounded ONCE to f16. Triton's
    mma accumulates in f16 registers, so its result can differ: row [2048, 1 x 31] . ones gives
    2048 + 31 = 2079 -> 2080 here; adding in f16 product by product keeps 2048 (2048 + 1 is a tie
    that rounds to even), and rounding once per 16-deep mma step gives 2064 + 16 = 2080."""
    a = np.zeros((16, 32), np.float16)
    a[:, 0], a[:, 1:] = 2048.0, 1.0
    a[1, 1:] = 2.0**-11  # 2048 + 31 * 2**-11: the small terms vanish in f16 whatever the order
    b = np.ones((32, 16), np.float16)
    fn = one_k32.specialize(a, b, np.zeros((16, 16), np.float16)).ir()
    outs = []
    for run in (lambda *x: interpret(fn, (1,), *x), lambda *x: build_host(fn, sm=80).run((1,), *x)):
        c = np.zeros((16, 16), np.float16)
        run(a, b, c)
        outs.append(c)
    want = (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16)  # exact in f32, one rounding
    for c in outs:
        np.testing.assert_array_equal(c.view(np.uint16), want.view(np.uint16))
    assert outs[0][0, 0] == 2080.0 and outs[0][1, 0] == 2048.0
    per_product = np.float16(0)
    for x in a[0]:
        per_product = np.float16(per_product + x)  # f16 accumulation, one rounding per product
    assert per_product == 2048.0 != outs[0][0, 0]
