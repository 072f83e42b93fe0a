"""Last-axis reductions whose rows span several warps (the rows strategy with ``G > 32`` lanes).

A ``[2, 512]`` block over 128 threads has rows of 128 lanes (4 warps): each warp reduces its part
of the row with ``shfl.sync.bfly`` and leaves one partial per warp in shared memory; the owner of
the output folds the 4 partials. Before, such rows took the generic strategy (the whole block
through shared memory and a 512-step loop per output). Checked: every reduction kind against
numpy and the interpreter on ragged row lengths (1, 1000, 1001 columns walked in 512-wide tiles,
masked), argmax ties and NaN, and the PTX shape (shuffles, a handful of shared loads, no loop).
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from eggpu.ir import Builder, f32, i32, pointer, scalar

from .conftest import run_compare

KINDS = ("reduce_sum", "reduce_max", "reduce_min", "reduce_argmax", "reduce_argmin")


def rows_kernel(kind: str, rows: int, block: int):
    """``out[r] = kind(x[r, 0:n_cols])`` for ``rows`` contiguous rows of ``n_cols <= block``
    elements: one masked ``[rows, block]`` tile reduced along its last axis."""
    b = Builder(f"{kind}_{rows}x{block}", [("x", pointer(f32)), ("out", pointer(f32 if "arg" not in kind else i32)),
                                          ("n_cols", scalar(i32))])
    shape = (rows, block)
    r = b.op("broadcast", b.op("expand_dims", b.op("arange", start=0, end=rows), axis=1), shape=shape)
    c = b.op("broadcast", b.op("expand_dims", b.op("arange", start=0, end=block), axis=0), shape=shape)
    n = b.op("splat", b.param("n_cols"), shape=shape)
    off = b.op("add", b.op("mul", r, n), c)
    mask = b.op("lt", c, n)
    fill = {"reduce_sum": 0.0, "reduce_max": float("-inf"), "reduce_min": float("inf"),
            "reduce_argmax": float("-inf"), "reduce_argmin": float("inf")}[kind]
    other = b.op("splat", b.const(fill, f32), shape=shape)
    x = b.op("load", b.op("addptr", b.op("splat", b.param("x"), shape=shape), off), mask, other)
    red = b.op(kind, x, axis=1)
    b.effect("store", b.op("addptr", b.op("splat", b.param("out"), shape=(rows,)), b.op("arange", start=0, end=rows)), red)
    return b.finish()


def _reference(kind: str, x: np.ndarray) -> np.ndarray:
    if kind == "reduce_sum":
        return x.astype(np.float64).sum(axis=1).astype(np.float32)
    if kind in ("reduce_max", "reduce_min"):
        return (np.nanmax if kind == "reduce_max" else np.nanmin)(x, axis=1).astype(np.float32)
    return (np.nanargmax if kind == "reduce_argmax" else np.nanargmin)(x, axis=1).astype(np.int32)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("rows,block,n_cols", [(2, 512, 1), (2, 512, 300), (2, 512, 511), (2, 512, 512),
                                               (4, 256, 1), (4, 256, 255), (4, 256, 256)])
def test_multiwarp_rows_match_numpy_and_interpreter(kind, rows, block, n_cols):
    rng = np.random.default_rng(rows * 1000 + n_cols)
    x = rng.standard_normal((rows, n_cols)).astype(np.float32)
    if "arg" in kind and n_cols > 3:
        x[0, n_cols // 3] = x[0, n_cols - 1] = 50.0 if kind == "reduce_argmax" else -50.0  # tie: the first
        x[-1, 1] = np.nan  # NaN is ignored
    out = np.zeros(rows, np.int32 if "arg" in kind else np.float32)
    got = run_compare(rows_kernel(kind, rows, block), (1,), [x.ravel().copy(), out, n_cols],
                      rtol=1e-5 if kind == "reduce_sum" else 0.0, atol=1e-5 if kind == "reduce_sum" else 0.0)[1]
    want = _reference(kind, x)
    if kind == "reduce_sum":
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("target", ("sm_80", "sm_90"))
@pytest.mark.parametrize("kind", ("reduce_sum", "reduce_argmax"))
def test_multiwarp_rows_ptx_is_shuffles_and_partials(kind, target):
    from eggpu.codegen import compile_ptx

    ptx, _ = compile_ptx(rows_kernel(kind, 2, 512), target)
    # 5 butterfly steps per chunk (2 chunks), one shuffle per state component
    per_step = 2 if "arg" in kind else 1
    assert ptx.count("shfl.sync.bfly") == 2 * 5 * per_step
    # the owner reads its row's 4 warp partials (per state component): no loop over the row
    shared_loads = len(re.findall(r"ld\.shared", ptx))
    assert 0 < shared_loads <= 4 * per_step
    assert "red.head" not in ptx and "red_head" not in ptx


def test_naive_red_row_sum_ragged_rows():
    """The naive suite's looped row sum (Inductor's shape, XBLOCK=2 x RBLOCK=512) on rows of 1000
    and 1001 columns... and 1 row, through the compiled lowering on the CPU, against numpy."""
    import eggpu
    import eggpu.language as tl

    @eggpu.jit
    def row_sum(in_ptr0, out_ptr0, xnumel, rnumel, XBLOCK: tl.constexpr, RBLOCK: tl.constexpr):
        xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)[:, None]
        xmask = xindex < xnumel
        rbase = tl.arange(0, RBLOCK)[None, :]
        acc = tl.full([XBLOCK, RBLOCK], 0, tl.float32)
        for roffset in range(0, rnumel, RBLOCK):
            rindex = roffset + rbase
            rmask = rindex < rnumel
            v = tl.load(in_ptr0 + (rindex + rnumel * xindex), rmask & xmask, other=0.0)
            acc = tl.where(rmask & xmask, acc + v, acc)
        tl.store(out_ptr0 + xindex, tl.sum(acc, 1)[:, None], xmask)

    for rows, cols in ((1, 1000), (3, 1001), (5, 1)):
        x = np.random.default_rng(cols).standard_normal((rows, cols)).astype(np.float32)
        out = np.zeros(rows, np.float32)
        grid = ((rows + 1) // 2,)
        inst = row_sum.specialize(x, out, rows, cols, XBLOCK=2, RBLOCK=512)
        ck = eggpu.compile(inst, cache=False)
        ck.run_cpu(grid, x, out, rows, cols)
        np.testing.assert_allclose(out, x.astype(np.float64).sum(axis=1), rtol=1e-5, atol=1e-5)
        out2 = np.zeros(rows, np.float32)
        inst.interpret(grid, x, out2, rows, cols)
        np.testing.assert_allclose(out2, out, rtol=1e-5, atol=1e-5)
