"""Strip-mining (eggpu.codegen.stripmine): wide lane-wise kernels become a loop over chunks, so
their compile cost does not grow with the block (issue 15 item 3: masked_scale at 131072 lanes)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import eggpu
import eggpu.language as tl
from eggpu.codegen import build_host, lower
from eggpu.codegen.stripmine import STRIP_ELEMENTS_PER_THREAD, strip_mine
from eggpu.ir import Builder, f32, i32, pointer, scalar
from eggpu.ir.interp import interpret


def _offs(b: Builder, block: int):
    pid = b.op("program_id", axis=0)
    return b.op("add", b.op("splat", b.op("mul", pid, b.const(block, i32)), shape=(block,)),
                b.op("arange", start=0, end=block))


def masked_scale(block: int, *, shift: int = 0, reduce: bool = False, scalar_store: bool = False,
                 div: int = 0, stride: int = 1):
    """``y[o] = 2 * x[o + shift] + 1`` for ``o < n`` (``o`` times ``stride``, or divided by
    ``div``); variants that must not be strip-mined: a shifted load, a reduction stored to
    ``y[0]``, a scalar store, ``o // div`` (two lanes on one element)."""
    b = Builder("masked_scale", [("x", pointer(f32)), ("y", pointer(f32)), ("n", scalar(i32))])
    offs = _offs(b, block)
    if div:
        offs = b.op("div", offs, b.op("splat", b.const(div, i32), shape=(block,)))
    if stride != 1:
        offs = b.op("mul", offs, b.op("splat", b.const(stride, i32), shape=(block,)))
    mask = b.op("lt", offs, b.op("splat", b.param("n"), shape=(block,)))
    src = offs if not shift else b.op("add", offs, b.op("splat", b.const(shift, i32), shape=(block,)))
    x = b.op("load", b.op("addptr", b.op("splat", b.param("x"), shape=(block,)), src), mask,
             b.op("splat", b.const(0.0, f32), shape=(block,)))
    y = b.op("add", b.op("mul", x, b.op("splat", b.const(2.0, f32), shape=(block,))),
             b.op("splat", b.const(1.0, f32), shape=(block,)))
    if reduce:
        b.effect("store", b.param("y"), b.op("reduce_sum", y, axis=0))
    else:
        b.effect("store", b.op("addptr", b.op("splat", b.param("y"), shape=(block,)), offs), y, mask)
    if scalar_store:
        b.effect("store", b.param("y"), b.const(5.0, f32))
    return b.finish()


def _reference(x: np.ndarray, n: int) -> np.ndarray:
    return (x[:n] * np.float32(2) + np.float32(1)).astype(np.float32)


def test_a_wide_lane_wise_kernel_becomes_one_loop_over_chunks():
    fn = masked_scale(2**17)
    out = strip_mine(fn, 4)
    assert out is not None and out.name == "masked_scale"
    loops = [op for op in out.body.ops if op.op == "for"]
    assert len(loops) == 1 and out.body.ops[-1] is loops[0]  # scalar ops first, then the loop
    chunk = 128 * STRIP_ELEMENTS_PER_THREAD
    lo, hi, step = (op.owner.attrs["value"] for op in loops[0].operands[:3])
    assert (lo, hi, step) == (0, 2**17, chunk)
    shapes = {v.type.shape for op in out.walk() for v in (*op.operands, *op.results) if not v.type.is_scalar}
    assert shapes == {(chunk,)}


@pytest.mark.parametrize("why,fn,warps", [
    ("256 per thread: unrolled", masked_scale(2**15), 4),
    ("shifted load", masked_scale(2**17, shift=1), 4),
    ("reduction", masked_scale(2**17, reduce=True), 4),
    ("scalar store", masked_scale(2**17, scalar_store=True), 4),
    ("two lanes per element", masked_scale(2**17, div=2), 4),
    ("stride 2**15 wraps i32 over 2**17 lanes", masked_scale(2**17, stride=2**15), 4),
])
def test_kernels_that_are_not_lane_wise_or_narrow_are_left_alone(why, fn, warps):
    assert strip_mine(fn, warps) is None, why


def test_two_dimensional_and_looping_kernels_are_left_alone():
    @eggpu.jit
    def rows(x_ptr, y_ptr, R: tl.constexpr, C: tl.constexpr):
        o = tl.arange(0, R)[:, None] * C + tl.arange(0, C)[None, :]
        tl.store(y_ptr + o, tl.load(x_ptr + o) * 2.0)

    @eggpu.jit
    def looped(x_ptr, y_ptr, k, B: tl.constexpr):
        o = tl.arange(0, B)
        for _ in range(k):
            tl.store(y_ptr + o, tl.load(x_ptr + o) + 1.0)

    z = np.zeros(16, np.float32)
    assert strip_mine(rows.specialize(z, z, R=256, C=256).ir(), 4) is None
    assert strip_mine(looped.specialize(z, z, 3, B=2**17).ir(), 4) is None


@given(n=st.integers(0, 3 * 2**14), warps=st.sampled_from([1, 2]))
@settings(max_examples=25, deadline=None)
def test_the_strip_mined_program_interprets_like_the_original(n, warps):
    """Differential: the numpy interpreter on the rewritten function equals it on the original
    (blocks of 2**14 at 1-2 warps: 256-512 per thread, strip-mined at 1 warp only)."""
    fn = masked_scale(2**14)
    out = strip_mine(fn, warps)
    if warps == 2:
        assert out is None
        return
    x = np.random.default_rng(n).standard_normal(3 * 2**14).astype(np.float32)
    want, got = np.full_like(x, -3.0), np.full_like(x, -3.0)
    grid = (max(1, -(-n // 2**14)),)
    interpret(fn, grid, x, want, n)
    interpret(out, grid, x, got, n)
    np.testing.assert_array_equal(got, want)


def test_a_strided_kernel_is_strip_mined_and_exact():
    """o * 3: injective, so looped; run_cpu equals numpy on every third element."""
    fn = masked_scale(2**17, stride=3)
    assert strip_mine(fn, 4) is not None
    n = 3 * 1001
    x = np.random.default_rng(4).standard_normal(n).astype(np.float32)
    y = np.full(n, -7.0, np.float32)
    build_host(fn, num_warps=4).run(1, x, y, n)
    want = np.full(n, -7.0, np.float32)
    want[::3] = _reference(x[::3], 1001)
    np.testing.assert_array_equal(y, want)


@pytest.fixture(scope="module")
def host_131072():
    return build_host(masked_scale(2**17), num_warps=4)


@pytest.mark.parametrize("n", [1, 1000, 1001, 2**17 + 4097])
def test_masked_131072_runs_on_cpu_like_numpy(host_131072, n):
    x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    y = np.full(n, -7.0, np.float32)
    host_131072.run((-(-n // 2**17),), x, y, n)
    np.testing.assert_array_equal(y, _reference(x, n))


def test_in_place_update_stays_exact():
    """x[o] = 2 x[o] + 1 through one buffer: every chunk reads and writes only its own lanes."""
    @eggpu.jit
    def inplace(x_ptr, n, BLOCK: tl.constexpr):
        o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = o < n
        tl.store(x_ptr + o, tl.load(x_ptr + o, mask=m) * 2.0 + 1.0, mask=m)

    n = 2**17 + 1001
    x = np.random.default_rng(1).standard_normal(n).astype(np.float32)
    want = _reference(x, n)
    k = inplace.specialize(x, n, BLOCK=2**17)
    assert strip_mine(k.ir(), 4) is not None
    build_host(k.ir(), num_warps=4).run((2,), x, n)
    np.testing.assert_array_equal(x, want)


def test_mixed_lane_wise_ops_compile_and_run_at_2_20():
    """where, exp, cast and integer math on a 2**20 block (8192 per thread at 4 warps)."""
    @eggpu.jit
    def mixed(x_ptr, y_ptr, k_ptr, n, BLOCK: tl.constexpr):
        o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = o < n
        x = tl.load(x_ptr + o, mask=m, other=0.0)
        y = tl.where(x > 0.0, tl.exp(x), x.to(tl.float16).to(tl.float32))
        tl.store(y_ptr + o, y, mask=m)
        tl.store(k_ptr + o, (o % 7) * 3, mask=m)

    n = 1001
    x = np.random.default_rng(2).standard_normal(n).astype(np.float32)
    y, k = np.zeros(n, np.float32), np.zeros(n, np.int32)
    inst = mixed.specialize(x, y, k, n, BLOCK=2**20)
    ck = eggpu.compile(inst, target="sm_90", cache=False)
    assert ck.ptx.count("ld.global") < 64  # one chunk's loads, not 8192 per thread
    assert ck.report["strip_mined"] == {"block": 2**20, "chunk": 128 * STRIP_ELEMENTS_PER_THREAD}
    ck.run_cpu((1,), x, y, k, n)
    want = np.where(x > 0, np.exp(x.astype(np.float64)), x.astype(np.float16).astype(np.float64))
    np.testing.assert_allclose(y, want.astype(np.float32), rtol=2e-7 * 4, atol=0)
    np.testing.assert_array_equal(k, (np.arange(n) % 7) * 3)


def test_the_strip_mined_gpu_kernel_has_no_spills():
    """masked_scale at 131072 lanes: 1024 unrolled slots per thread spilled 17540 times in ptxas;
    the strip-mined loop spills nothing (ptxas -v, when ptxas is installed)."""
    from eggpu.codegen.toolchain import find_ptxas
    from eggpu.ir.errors import ToolchainError

    lm = lower(masked_scale(2**17), "sm_90", num_warps=4)
    assert "phi" in lm.llvm_ir  # the chunk loop
    assert lm.strip_mined == (2**17, 4096) and lower(masked_scale(2**15), "sm_90").strip_mined == ()
    try:
        find_ptxas()
    except ToolchainError:
        pytest.skip("no ptxas")
    ck = eggpu.compile(_masked_jit().specialize(np.zeros(4, np.float32), np.zeros(4, np.float32), 10, BLOCK=2**17),
                       target="sm_90", cache=False)
    assert ck.report["ptxas"]["spill_stores"] == 0
    assert not ck.report["optimizer"]["fell_back"]


def _masked_jit():
    @eggpu.jit
    def masked(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = o < n
        tl.store(y_ptr + o, tl.load(x_ptr + o, mask=m, other=0.0) * 2.0 + 1.0, mask=m)

    return masked
