"""The cross-warp step of a whole-block reduction (``reduce_all``, the full strategy) is Triton's:
after the barrier thread ``t`` reads warp partial ``t % num_warps`` and a butterfly over
``num_warps`` lanes combines them, for every combine (float sums included), not ``num_warps``
uniform loads and an in-order fold. With the uniform loads ptxas (CUDA 13.0, sm_80) unrolled the
normalize-and-store loop that follows in rms_norm / layer_norm 4x; after a shuffle it does not,
as with Triton's code (docs/codegen.md, "Cross-warp combine and ptxas unrolling").

Checked: every kind on ragged sizes (1, 1000, 1001 elements of a 1024 block) at 2, 4 and 8 warps
through the host lowering against numpy and the interpreter; the PTX shape of the row kernels;
and, where ptxas and nvdisasm are installed, that the store loop is not unrolled on sm_80.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from eggpu.ir import Builder, f32, i32, pointer, scalar

from .conftest import run_compare

BLOCK = 1024


def full_kernel(kind: str, dt):
    """``out[0] = kind(x[0:n])`` over one masked ``[BLOCK]`` tile (a whole-block reduction)."""
    out_dt = i32 if "arg" in kind else dt
    b = Builder(f"{kind}_full_{dt.name}", [("x", pointer(dt)), ("out", pointer(out_dt)), ("n", scalar(i32))])
    lanes = b.op("arange", start=0, end=BLOCK)
    mask = b.op("lt", lanes, b.op("splat", b.param("n"), shape=(BLOCK,)))
    fill = {"reduce_sum": 0, "reduce_max": float("-inf"), "reduce_min": float("inf"),
            "reduce_argmax": float("-inf")}[kind]
    if dt == i32 and kind != "reduce_sum":
        fill = -(2**31) if "max" in kind else 2**31 - 1
    other = b.op("splat", b.const(fill, dt), shape=(BLOCK,))
    x = b.op("load", b.op("addptr", b.op("splat", b.param("x"), shape=(BLOCK,)), lanes), mask, other)
    red = b.op(kind, x, axis=0)
    b.effect("store", b.param("out"), red)
    return b.finish()


def _reference(kind: str, x: np.ndarray):
    if kind == "reduce_sum":
        if x.dtype == np.int32:
            return np.int32(x.astype(np.int64).sum())  # |sum| < 2**31 here: no wrap-around
        return np.float32(x.astype(np.float64).sum())
    if kind == "reduce_argmax":
        return np.int32(np.argmax(x))
    return (np.max if kind == "reduce_max" else np.min)(x)


@pytest.mark.parametrize("num_warps", (2, 4, 8))
@pytest.mark.parametrize("n", (1, 1000, 1001))
@pytest.mark.parametrize("kind,dt", [("reduce_sum", f32), ("reduce_sum", i32), ("reduce_max", f32),
                                     ("reduce_min", i32), ("reduce_argmax", f32)])
def test_full_reduction_across_warps_matches_numpy_and_interpreter(kind, dt, n, num_warps):
    rng = np.random.default_rng(n * 10 + num_warps)
    if dt == i32:
        x = rng.integers(-1000, 1000, n).astype(np.int32)
    else:
        x = rng.standard_normal(n).astype(np.float32)
    if kind == "reduce_argmax" and n > 3:
        x[n // 3] = x[n - 1] = 60.0  # a tie: the first index wins
    out = np.zeros(1, np.int32 if (dt == i32 or "arg" in kind) else np.float32)
    exact = not (kind == "reduce_sum" and dt == f32)
    tol = 0.0 if exact else 1e-5
    got = run_compare(full_kernel(kind, dt), (1,), [x.copy(), out, n], rtol=tol, atol=tol, num_warps=num_warps)[1]
    want = _reference(kind, x)
    if exact:
        assert got[0] == want, (kind, n, num_warps, got[0], want)
    else:
        np.testing.assert_allclose(got[0], want, rtol=1e-5, atol=1e-5)


def _row_ptx(name: str, target: str) -> str:
    import eggpu
    import eggpu.kernels as lib
    import eggpu.language as tl

    return eggpu.compile(getattr(lib, name).Kernel[tl.f32](256), target=target, cache=False).ptx


@pytest.mark.parametrize("target", ("sm_80", "sm_90"))
@pytest.mark.parametrize("name,reductions", [("rms_norm_forward", 1), ("layer_norm_forward", 2)])
def test_row_kernel_cross_warp_combine_is_a_butterfly(name, reductions, target):
    ptx = _row_ptx(name, target)
    # no broadcast reads of the other warps' partials at fixed shared addresses
    assert not re.search(r"ld\.shared\.\w+\s+%r\d+, \[__eggpu_smem\+\d+\]", ptx), ptx
    # per reduction: one shared load at a per-thread address, then a 2-level butterfly (4 warps)
    assert len(re.findall(r"ld\.shared\.b32\s+%r\d+, \[%rd\d+\]", ptx)) == reductions
    tail = ptx[ptx.rindex("bar.sync"):]  # what the normalize-and-store loop follows
    assert re.search(r"ld\.shared\.b32[^\n]*\n\s*shfl\.sync\.bfly\.b32\s+%r\d+, %r\d+, 2, 31, -1;", tail), tail
    assert re.search(r"shfl\.sync\.bfly\.b32\s+%r\d+, %r\d+, 1, 31, -1;", tail)
    # each exchange after the first computes its addresses from its own %tid.x read
    # (Emitter.tid_here), not from the first one's, which would live across the loop between
    assert len(re.findall(r"mov\.u32 %r\d+, %tid\.x;", ptx)) == reductions - 1


def _sass_tools() -> bool:
    from bench.tools import find_tool
    from eggpu.codegen.toolchain import find_ptxas, ptxas_version
    from eggpu.ir.errors import ToolchainError

    try:
        return ptxas_version(find_ptxas())[0] == 13 and find_tool("nvdisasm") is not None
    except ToolchainError:
        return False


@pytest.mark.skipif(not _sass_tools(), reason="measured with CUDA 13's ptxas and nvdisasm (heuristics differ by version)")
@pytest.mark.parametrize("name", ("rms_norm_forward", "layer_norm_forward"))
def test_store_loop_is_not_unrolled_on_sm80(name):
    """The claim the lowering relies on: ptxas leaves the normalize-and-store loop rolled, as it
    does Triton's (the loop's SASS is its size with ``.pragma "nounroll"``, give or take a few)."""
    from bench.row_quality import measure_ptx
    from eggpu.codegen.ptx_loops import no_unroll

    ptx = _row_ptx(name, "sm_80")
    loops = measure_ptx(ptx, "sm_80")["loops"]
    rolled = measure_ptx(no_unroll(ptx), "sm_80")["loops"]
    assert loops[-1] <= rolled[-1] + 4, (loops, rolled)


@pytest.mark.skipif(not _sass_tools(), reason="measured with CUDA 13's ptxas (register allocation differs by version)")
@pytest.mark.parametrize("target", ("sm_80", "sm_90"))
def test_two_exchanges_keep_no_address_live_between_them(target):
    """Layer norm with launch facts had 30 registers with the uniform-load exchange; the
    butterfly's per-thread address, kept live from the first reduction to the second, made it
    32. Re-reading %tid.x at the second exchange brings it to 29."""
    from bench.row_quality import variant_ptx
    from bench.suite import BY_KEY
    from eggpu.codegen.ptxas import run_ptxas

    ptx = variant_ptx(BY_KEY["layer_norm_forward"], target, "eggpu_launch")
    assert run_ptxas(ptx, target).registers <= 30
