"""Masks constant on each vector piece (codegen.analysis.chunk_uniform) and what the GPU
lowering makes of them: one predicated vector access per piece, no per-element fallback."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eggpu.codegen import compile_ptx_module
from eggpu.codegen.analysis import AddressAnalysis, chunk_uniform
from eggpu.codegen.target import get_target
from eggpu.ir import Builder, f32, i32, pointer, scalar
from eggpu.ir.facts import Facts


def _kernel(cmp: str, n_fact: str | None, flip: bool = False):
    """``y[offs] = x[offs] * 2`` where ``cmp(offs, n)`` (``flip``: ``cmp(n, offs)``)."""
    b = Builder("vk", [("x", pointer(f32)), ("y", pointer(f32)), ("n", scalar(i32))])
    x, y, n = b.params
    pid = b.op("program_id", axis=0)
    base = b.op("mul", pid, b.const(1024, i32))
    offs = b.op("add", b.op("splat", base, shape=(1024,)), b.op("arange", start=0, end=1024))
    nn = b.op("splat", n, shape=(1024,))
    mask = b.op(cmp, *((nn, offs) if flip else (offs, nn)))
    px = b.op("addptr", b.op("splat", x, shape=(1024,)), offs)
    py = b.op("addptr", b.op("splat", y, shape=(1024,)), offs)
    v = b.op("load", px, mask, b.op("splat", b.const(0.0, f32), shape=(1024,)))
    b.effect("store", py, b.op("add", v, v), mask)
    fn = b.function
    if n_fact:
        fn.facts = Facts.make({"n": [n_fact]})
    return fn, mask


@pytest.mark.parametrize("cmp, flip, fact, uniform", [
    ("lt", False, "div16", True),     # offs < n, n % 16 == 0: whole pieces
    ("ge", False, "div16", True),
    ("gt", True, "div16", True),      # n > offs
    ("le", True, "div16", True),      # n <= offs
    ("le", False, "div16", False),    # offs <= n: the piece starting at n is split
    ("lt", False, None, False),       # n unknown
    ("lt", False, "div2", False),     # n even is not enough for pieces of 4
])
def test_chunk_uniform(cmp, flip, fact, uniform):
    fn, mask = _kernel(cmp, fact, flip)
    assert chunk_uniform(mask, 4, AddressAnalysis(fn)) is uniform


def test_bool_combinations_and_scalars():
    fn, mask = _kernel("lt", "div16")
    facts = AddressAnalysis(fn)
    b = Builder("t", [("m", scalar(i32))])
    flag = b.op("splat", b.op("lt", b.params[0], b.const(3, i32)), shape=(1024,))
    assert chunk_uniform(flag, 4, facts)
    both = b.op("and", mask, flag)
    assert chunk_uniform(both, 4, AddressAnalysis(fn)) and chunk_uniform(b.op("not", both), 4, AddressAnalysis(fn))
    split = b.op("lt", b.op("arange", start=0, end=1024), b.op("splat", b.const(3, i32), shape=(1024,)))
    assert not chunk_uniform(b.op("or", mask, split), 4, AddressAnalysis(fn))


def _accesses(ptx: str) -> dict[str, int]:
    return {k: len(re.findall(k, ptx)) for k in (r"ld\.global\.v4", r"st\.global\.v4", r"ld\.global\.b32",
                                                 r"st\.global\.b32")}


def test_uniform_mask_gets_predicated_vectors_without_fallback():
    fn, _ = _kernel("lt", "div16")
    ptx = compile_ptx_module(fn, get_target("sm_90")).ptx
    got = _accesses(ptx)
    assert got[r"ld\.global\.v4"] > 0 and got[r"st\.global\.v4"] > 0
    assert got[r"ld\.global\.b32"] == 0 and got[r"st\.global\.b32"] == 0  # no per-element fallback
    plain, _ = _kernel("lt", None)
    got = _accesses(compile_ptx_module(plain, get_target("sm_90")).ptx)
    assert got[r"ld\.global\.b32"] > 0  # without the fact: vector or per-element, per group


def test_predicated_vectors_assemble():
    pytest.importorskip("eggpu.codegen.ptxas")
    from eggpu.codegen.ptxas import run_ptxas
    from eggpu.codegen.toolchain import find_ptxas
    from eggpu.ir.errors import ToolchainError

    try:
        find_ptxas()
    except ToolchainError:
        pytest.skip("no ptxas")
    fn, _ = _kernel("lt", "div16")
    for t in ("sm_80", "sm_90"):
        r = run_ptxas(compile_ptx_module(fn, get_target(t)).ptx, get_target(t))
        assert r.spills_stores == 0


def test_broadcast_and_expand_dims_of_masks():
    """A column mask broadcast down the rows keeps its runs; a row mask broadcast along the
    columns is constant on every run; a broadcast of a split mask stays split."""
    fn, mask = _kernel("lt", "div16")  # offs < n on [1024], uniform on runs of 4
    facts = AddressAnalysis(fn)
    b = Builder("t", [("m", scalar(i32))])
    col = b.op("broadcast", b.op("expand_dims", mask, axis=0), shape=(8, 1024))
    assert chunk_uniform(col, 4, facts)
    row = b.op("broadcast", b.op("expand_dims", mask, axis=1), shape=(1024, 8))  # [1024, 1] -> [1024, 8]
    assert chunk_uniform(row, 4, facts)
    split = b.op("lt", b.op("arange", start=0, end=1024), b.op("splat", b.const(3, i32), shape=(1024,)))
    assert not chunk_uniform(split, 4, facts)
    assert not chunk_uniform(b.op("broadcast", b.op("expand_dims", split, axis=0), shape=(8, 1024)), 4, facts)
    assert chunk_uniform(b.op("broadcast", b.op("expand_dims", split, axis=1), shape=(1024, 8)), 4, facts)


def _masked_scale(block: int):
    """``y[offs] = x[offs] + x[offs]`` where ``offs < n``, ``n`` unknown: masks not uniform."""
    b = Builder("big_masked", [("x", pointer(f32)), ("y", pointer(f32)), ("n", scalar(i32))])
    x, y, n = b.params
    base = b.op("mul", b.op("program_id", axis=0), b.const(block, i32))
    offs = b.op("add", b.op("splat", base, shape=(block,)), b.op("arange", start=0, end=block))
    mask = b.op("lt", offs, b.op("splat", n, shape=(block,)))
    v = b.op("load", b.op("addptr", b.op("splat", x, shape=(block,)), offs), mask,
             b.op("splat", b.const(0.0, f32), shape=(block,)))
    b.effect("store", b.op("addptr", b.op("splat", y, shape=(block,)), offs), b.op("add", v, v), mask)
    return b.function


def test_large_blocks_access_non_uniform_groups_branch_free():
    # 8192 elements on 128 threads: 64 slots each, 16 pieces of 4
    ptx = compile_ptx_module(_masked_scale(8192), get_target("sm_90")).ptx
    assert "bra" not in ptx  # no per-group branch, no per-element branch
    assert len(re.findall(r"@%p\d+ ld\.global\.v4\.b32", ptx)) == 16
    assert len(re.findall(r"@%p\d+ st\.global\.v4\.b32", ptx)) == 16
    # the per-element fallback: one predicated access per slot, addressed from its piece's start
    assert len(re.findall(r"@%p\d+ ld\.global\.b32", ptx)) == 64
    assert len(re.findall(r"@%p\d+ st\.global\.b32", ptx)) == 64
    assert len(re.findall(r"ld\.global\.b32 %r\d+, \[%rd\d+\+12\]", ptx)) == 16



@pytest.mark.parametrize("block", [512, 1024, 2048])
def test_small_blocks_access_non_uniform_groups_branch_free(block):
    # 4, 8, 16 slots per thread (vector_add's BLOCK 1024 with n not known divisible): the same
    # branch-free form as large blocks; the branches and their reconvergence cost more SASS
    # than the predicated accesses (BRANCH_FREE_SLOTS)
    pieces = block // 128 // 4
    ptx = compile_ptx_module(_masked_scale(block), get_target("sm_90")).ptx
    assert "bra" not in ptx
    assert len(re.findall(r"@%p\d+ ld\.global\.v4\.b32", ptx)) == pieces
    assert len(re.findall(r"@%p\d+ st\.global\.v4\.b32", ptx)) == pieces
    assert len(re.findall(r"@%p\d+ ld\.global\.b32", ptx)) == 4 * pieces
    assert len(re.findall(r"@%p\d+ st\.global\.b32", ptx)) == 4 * pieces


def test_branch_free_groups_assemble():
    from eggpu.codegen.ptxas import run_ptxas
    from eggpu.codegen.toolchain import find_ptxas
    from eggpu.ir.errors import ToolchainError

    try:
        find_ptxas()
    except ToolchainError:
        pytest.skip("no ptxas")
    for t in ("sm_80", "sm_90"):
        r = run_ptxas(compile_ptx_module(_masked_scale(8192), get_target(t)).ptx, get_target(t))
        assert r.spills_stores == 0


def test_uniform_masked_vectors_are_predicated_outside_loops_only():
    # outside loops: one @p ld/st.global.v4 per piece, no branch at all (as Triton emits it)
    fn, _ = _kernel("lt", "div16")
    ptx = compile_ptx_module(fn, get_target("sm_90")).ptx
    assert "bra" not in ptx
    assert len(re.findall(r"@%p\d+ ld\.global\.v4\.b32", ptx)) == 2  # 8 slots per thread: 2 pieces
    assert len(re.findall(r"@%p\d+ st\.global\.v4\.b32", ptx)) == 2
    # inside a loop the piece keeps its branch (a branch-free body is one block ptxas unrolls 4x)
    b = Builder("vk_loop", [("x", pointer(f32)), ("y", pointer(f32)), ("n", scalar(i32))])
    x, y, n = b.params
    ar = b.op("arange", start=0, end=512)
    zero = b.op("splat", b.const(0.0, f32), shape=(512,))
    with b.region([scalar(i32)]) as body:
        (start,) = body.args
        offs = b.op("add", b.op("splat", start, shape=(512,)), ar)
        mask = b.op("lt", offs, b.op("splat", n, shape=(512,)))
        v = b.op("load", b.op("addptr", b.op("splat", x, shape=(512,)), offs), mask, zero)
        b.effect("store", b.op("addptr", b.op("splat", y, shape=(512,)), offs), b.op("add", v, v), mask)
        b.yield_()
    b.for_(b.const(0, i32), n, b.const(512, i32), [], body)
    loop = b.finish()
    loop.facts = Facts.make({"n": ["div16"]})
    ptx = compile_ptx_module(loop, get_target("sm_90")).ptx
    assert re.search(r"ld\.global\.v4\.b32", ptx) and not re.search(r"@%p\d+ ld\.global\.v4", ptx)


# ---------------------------------------------------------------- down-closed masks


def _rows_kernel(cmp: str, flip: bool = False, rows: int = 2, cols: int = 512, step: int = 1):
    """``out[r, c] = cmp(roff*512 + c*step, n) & (row0 + r < m)`` as 0/1 over a ``[rows, cols]``
    block (``flip``: ``cmp(n, ...)``): a looped reduction's ``rmask & xmask``."""
    b = Builder("dk", [("out", pointer(i32)), ("roff", scalar(i32)), ("n", scalar(i32)), ("m", scalar(i32))])
    out, roff, n, m = b.params
    shape = (rows, cols)
    col = b.op("mul", b.op("arange", start=0, end=cols), b.op("splat", b.const(step, i32), shape=(cols,)))
    base = b.op("mul", roff, b.const(512, i32))  # a loop's offset: a multiple of the run length
    r = b.op("add", b.op("splat", base, shape=(cols,)), col)
    nn = b.op("splat", n, shape=(cols,))
    rmask = b.op(cmp, *((nn, r) if flip else (r, nn)))
    rmask = b.op("broadcast", b.op("expand_dims", rmask, axis=0), shape=shape)
    row = b.op("add", b.op("splat", b.op("mul", b.op("program_id", axis=0), b.const(rows, i32)), shape=(rows,)),
               b.op("arange", start=0, end=rows))
    xmask = b.op("broadcast", b.op("expand_dims", b.op("lt", row, b.op("splat", m, shape=(rows,))), axis=1),
                 shape=shape)
    mask = b.op("and", rmask, xmask)
    flat = b.op("add", b.op("mul", b.op("broadcast", b.op("expand_dims", b.op("arange", start=0, end=rows), axis=1),
                                                     shape=shape), b.op("splat", b.const(cols, i32), shape=shape)),
                b.op("broadcast", b.op("expand_dims", b.op("arange", start=0, end=cols), axis=0), shape=shape))
    one, zero = (b.op("splat", b.const(v, i32), shape=shape) for v in (1, 0))
    b.effect("store", b.op("addptr", b.op("splat", out, shape=shape), flat), b.op("where", mask, one, zero))
    return b.function, mask


@pytest.mark.parametrize("cmp, flip, step, closed", [
    ("lt", False, 1, True),    # roff*512 + c < n: true on a prefix of each run, for any n
    ("le", False, 1, True),
    ("gt", True, 1, True),     # n > roff*512 + c
    ("ge", True, 1, True),
    ("gt", False, 1, False),   # roff*512 + c > n: true on a suffix
    ("lt", False, 2, False),   # runs of stride 2 are not proven (no such claim is made)
])
def test_down_closed_claims(cmp, flip, step, closed):
    from eggpu.codegen.analysis import down_closed

    fn, mask = _rows_kernel(cmp, flip, step=step)
    assert down_closed(mask, 4, AddressAnalysis(fn)) is closed


def test_down_closed_or_with_a_uniform_mask():
    from eggpu.codegen.analysis import down_closed

    fn, mask = _rows_kernel("lt")
    b = Builder("t", [("q", scalar(i32))])
    flag = b.op("splat", b.op("lt", b.params[0], b.const(3, i32)), shape=(2, 512))
    facts = AddressAnalysis(fn)
    assert down_closed(b.op("or", mask, flag), 4, facts)
    assert not down_closed(b.op("or", mask, b.op("not", mask)), 4, facts)  # neither side uniform


@settings(max_examples=60, deadline=None)
@given(roff=st.integers(-2**31, 2**31 - 1), delta=st.integers(-8, 72), m=st.integers(0, 5),
       cmp=st.sampled_from([("lt", False), ("le", False), ("gt", True), ("ge", True)]))
def test_down_closed_masks_are_prefixes_on_the_interpreted_values(roff, delta, m, cmp):
    """What down_closed claims holds lane by lane on the interpreter's values, wrap-around
    of ``roff*512 + c`` included: on every aligned run of 4, no true lane after a false one.
    ``n`` is near the block's offsets (``roff*512 + delta``, wrapped), where runs split."""
    from eggpu.codegen.analysis import down_closed
    from eggpu.ir.interp import interpret

    n = (roff * 512 + delta + 2**31) % 2**32 - 2**31

    fn, mask = _rows_kernel(*cmp, cols=64)
    assert down_closed(mask, 4, AddressAnalysis(fn))
    out = np.zeros((2, 64), np.int32)
    interpret(fn, 1, out, roff, n, m)
    runs = out.reshape(2, 16, 4)
    assert (np.diff(runs, axis=-1) <= 0).all()


# ---------------------------------------------------------------- chunk-constant lazy values


def _where_kernel(n_fact: str | None):
    """``y[c] = where(c < n, x[c]**2, 0)`` over one block of 1024 columns (per_layernorm's
    ``tl.where(rmask, ...)``): 8 slots a thread, 2 layout chunks of 4."""
    b = Builder("wk", [("x", pointer(f32)), ("y", pointer(f32)), ("n", scalar(i32))])
    x, y, n = b.params
    offs = b.op("arange", start=0, end=1024)
    mask = b.op("lt", offs, b.op("splat", n, shape=(1024,)))
    zero = b.op("splat", b.const(0.0, f32), shape=(1024,))
    v = b.op("load", b.op("addptr", b.op("splat", x, shape=(1024,)), offs), mask, zero)
    b.effect("store", b.op("addptr", b.op("splat", y, shape=(1024,)), offs), b.op("where", mask, b.op("mul", v, v), zero))
    fn = b.function
    if n_fact:
        fn.facts = Facts.make({"n": [n_fact]})
    return fn


@pytest.mark.parametrize("target", ["sm_80", "sm_90"])
def test_a_mask_constant_on_chunks_is_compared_once_per_chunk(target):
    """With ``n`` divisible by 16 the mask is constant on each chunk of 4: one comparison per
    chunk (2 a thread) serves the loads and the ``where``; without the fact, one per slot."""
    ptx = compile_ptx_module(_where_kernel("div16"), get_target(target)).ptx
    assert len(re.findall(r"setp\.\w+\.s32", ptx)) == 2
    plain = compile_ptx_module(_where_kernel(None), get_target(target)).ptx
    assert len(re.findall(r"setp\.\w+\.s32", plain)) == 8


@pytest.mark.parametrize("n", [0, 16, 512, 1008, 1024])
def test_a_chunk_constant_mask_selects_what_the_interpreter_selects(n, compare):
    """The host build shares the chunk-constant evaluation (same layout): on the CPU, the
    ``where`` under a ``div16`` mask matches the interpreter bitwise (none, some, all lanes)."""
    x = np.random.default_rng(n).standard_normal(1024).astype(np.float32)
    got = compare(_where_kernel("div16"), 1, [x, np.full(1024, 7.0, np.float32), n])[1]
    np.testing.assert_array_equal(got[:n], x[:n] * x[:n])
    assert (got[n:] == 0).all()
