"""Counted ``for`` loops take Triton's stepped form where it is exact (``codegen/loop_form.py``):
``iv < hi``, ``iv += step`` with the bound proved or assumed (and checked at every launch) to be
at most ``2**31 - step``; other loops keep the exact counted form. Masked loads in a loop body
are predicated (no branch), and a row address ``row_ptr + start + cols`` adds only ``start``
per iteration. Results agree with the interpreter bit for bit on ragged sizes."""

from __future__ import annotations

import re

import numpy as np
import pytest

from eggpu.ir import BlockType, Builder, f32, i32, pointer, scalar
from eggpu.ir.errors import LaunchError
from eggpu.ir.facts import Facts

from .conftest import host_kernel, run_compare

BLOCK = 16
LIMIT = 2**31 - BLOCK


def row_sum_kernel(hi: str | int = "n", step: str | int = BLOCK, name: str = "row_sum", dt=f32):
    """out[row] = sum of x[row * stride + c] for c in range(0, hi, step) (a block of BLOCK
    columns per iteration, masked by ``c < n``), then y[row, c] = x[row, c] * total over the same
    loop: the shape of rms_norm's two row loops. ``hi``/``step``: a parameter name or a constant;
    ``dt``: the element type (i32 sums are exact, f32 sums' order is unspecified)."""
    b = Builder(name, [("x", pointer(dt)), ("y", pointer(dt)), ("out", pointer(dt)), ("n", scalar(i32)),
                       ("stride", scalar(i32)), ("s", scalar(i32))])
    row_off = b.op("mul", b.op("program_id", axis=0), b.param("stride"))
    xrow, yrow = b.op("addptr", b.param("x"), row_off), b.op("addptr", b.param("y"), row_off)
    cols = b.op("arange", start=0, end=BLOCK)
    zero = b.op("splat", b.const(0 if dt.is_int else 0.0, dt), shape=(BLOCK,))
    lo = b.const(0, i32)
    bound = b.param(hi) if isinstance(hi, str) else b.const(hi, i32)
    stp = b.param(step) if isinstance(step, str) else b.const(step, i32)

    def at(row, start):
        return b.op("addptr", b.op("splat", b.op("addptr", row, start), shape=(BLOCK,)), cols)

    def mask(start):
        return b.op("lt", b.op("add", b.op("splat", start, shape=(BLOCK,)), cols), b.op("splat", b.param("n"), shape=(BLOCK,)))

    with b.region([scalar(i32), BlockType(dt, (BLOCK,))]) as body:
        start, acc = body.args
        b.yield_(b.op("add", acc, b.op("load", at(xrow, start), mask(start), zero)))
    total = b.op("reduce_sum", b.for_(lo, bound, stp, [zero], body).results[0], axis=0)
    b.effect("store", b.op("addptr", b.param("out"), b.op("program_id", axis=0)), total)
    with b.region([scalar(i32)]) as body2:
        (start,) = body2.args
        v = b.op("mul", b.op("load", at(xrow, start), mask(start), zero), b.op("splat", total, shape=(BLOCK,)))
        b.effect("store", at(yrow, start), v, mask(start))
        b.yield_()
    b.for_(lo, bound, stp, [], body2)
    return b.finish()


def _args(rows: int, n: int, seed: int = 0, dt=f32):
    rng = np.random.default_rng(seed)
    size = rows * max(n, 1)
    x = (rng.integers(-1000, 1000, size) if dt.is_int else rng.standard_normal(size)).astype(dt.np)
    return [x, np.zeros_like(x), np.zeros(rows, dt.np), n, max(n, 1), BLOCK]


F32_TOLS = {1: (1e-5, 1e-5), 2: (1e-5, 1e-5)}  # float summation order is unspecified (docs/ir.md)


@pytest.mark.parametrize("n", [1, 1000, 1001])
def test_row_loops_match_the_interpreter_and_numpy(n):
    rows = 3
    exact = run_compare(row_sum_kernel(dt=i32, name="row_sum_i32"), rows, _args(rows, n, dt=i32))
    xi = exact[0].reshape(rows, n)
    assert np.array_equal(exact[2], xi.sum(axis=1, dtype=np.int32))
    assert np.array_equal(exact[1].reshape(rows, n), xi * exact[2][:, None])
    out = run_compare(row_sum_kernel(), rows, _args(rows, n), tols=F32_TOLS)
    x = out[0].reshape(rows, n)
    np.testing.assert_allclose(out[2], x.sum(axis=1, dtype=np.float64), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(out[1].reshape(rows, n), x * out[2][:, None], rtol=1e-5)


@pytest.mark.parametrize("n", [0, 1, 15, 16, 17, 1000])
def test_every_loop_form_agrees_on_edge_sizes(n):
    """Stepped (parameter bound), counted (runtime step) and constant bounds run the same
    iterations: exact i32 results equal to the interpreter's."""
    for fn in (row_sum_kernel(dt=i32, name="row_sum_i"), row_sum_kernel(step="s", name="row_sum_rt", dt=i32),
               row_sum_kernel(hi=n, name=f"row_sum_c{n}", dt=i32)):
        run_compare(fn, 2, _args(2, n, seed=n, dt=i32))


def _lowered(fn, target: str = "sm_80"):
    """``(ptx, LoweredModule)`` of ``fn``."""
    from eggpu.codegen import compile_ptx_module

    c = compile_ptx_module(fn, target)
    return c.ptx, c.lowered


def test_a_parameter_bound_is_assumed_and_the_loop_is_stepped():
    ptx, lm = _lowered(row_sum_kernel())
    assert lm.assumptions.get("n") == f"le{LIMIT}"
    # one signed compare of the stepped induction variable with n's register closes each loop,
    # and no unsigned trip count ((n - 1) >> 4) is computed
    nreg = re.search(r"ld\.param\.b32\s+(%r\d+), \[row_sum_entry_point_param_3\]", ptx).group(1)
    closes = re.findall(rf"setp\.(?:lt|ge)\.s32\s+%p\d+, %r\d+, {re.escape(nreg)};", ptx)
    assert len(closes) >= 2, ptx
    assert not re.search(r"shr\.u32\s+%r\d+, %r\d+, 4;", ptx), ptx


def test_masked_loads_in_a_loop_are_predicated_and_the_lane_address_is_hoisted():
    ptx, _ = _lowered(row_sum_kernel())
    loads = re.findall(r"^\s*(@%p\d+\s+)?ld\.global\.\S+", ptx, re.M)
    assert loads and all(pred for pred in loads), loads
    # the loop adds start * 4 to a hoisted row + lane address: no 32 x 32 -> 64 lane multiply-add
    # of tid in a loop body
    bodies = re.split(r"\$L__BB0_\d+:", ptx)[1:]
    loop_bodies = [bd for bd in bodies if re.search(r"setp\.(?:lt|ge)\.s32[^\n]*\n[^\n]*bra", bd)]
    assert loop_bodies
    assert not any("mad.wide.u32" in bd for bd in loop_bodies), loop_bodies


def test_facts_constants_and_runtime_steps_need_no_assumption():
    fn = row_sum_kernel()
    fn.facts = Facts.make({"n": ["div16"]})  # a multiple of 16 is at most 2**31 - 16
    assert "n" not in _lowered(fn)[1].assumptions
    assert _lowered(row_sum_kernel(hi=1000, name="c1000"))[1].assumptions == {}
    # a constant bound beyond 2**31 - step keeps the counted form (exact), no assumption
    ptx, lm = _lowered(row_sum_kernel(hi=2**31 - 1, name="cbig"))
    assert lm.assumptions == {}
    assert _lowered(row_sum_kernel(step="s", name="rt"))[1].assumptions == {}


@pytest.mark.parametrize("value", [LIMIT + 1, 2**31 - 1])
def test_a_launch_above_the_assumed_bound_is_refused(value):
    hk = host_kernel(row_sum_kernel())
    x = np.zeros(16, np.float32)
    with pytest.raises(LaunchError) as e:
        hk.run(1, x, x.copy(), np.zeros(1, np.float32), value, 16, 16)
    msg = str(e.value)
    assert "row_sum" in msg and "'n'" in msg and f"<= {LIMIT}" in msg and str(value) in msg


def test_the_launcher_checks_the_loop_bound():
    from eggpu.pipeline import _check_assumptions
    from eggpu.runtime import Param, check_args

    fn = row_sum_kernel()
    _, lm = _lowered(fn)
    params = [Param(p.name, p.type) for p in fn.params]
    x = np.zeros(16, np.float32)
    ok = check_args("row_sum", params, [x, x.copy(), np.zeros(1, np.float32), LIMIT, 16, 16])
    _check_assumptions("row_sum", lm.assumptions, ok)
    bad = check_args("row_sum", params, [x, x.copy(), np.zeros(1, np.float32), LIMIT + 3, 16, 16])
    with pytest.raises(LaunchError, match=rf"row_sum: argument 'n' must be <= {LIMIT} .* got {LIMIT + 3}"):
        _check_assumptions("row_sum", lm.assumptions, bad)


def test_launch_and_run_cpu_refuse_a_bound_above_the_assumption(tmp_path):
    """A compiled kernel whose row loop is stepped: the fast launch path, the general one and
    run_cpu all refuse ``n_cols > 2**31 - BLOCK`` with the same LaunchError (nothing launched),
    and launch a value at the bound."""
    import eggpu
    import eggpu.language as tl
    from eggpu.testing import fake_cuda

    @eggpu.kernel
    def row_total(x_ptr: tl.Pointer[tl.f32], out_ptr: tl.Pointer[tl.f32], n_cols: tl.i32, BLOCK: tl.constexpr):
        cols = tl.arange(0, BLOCK)
        acc = tl.zeros((BLOCK,), dtype=tl.float32)
        for start in range(0, n_cols, BLOCK):
            acc += tl.load(x_ptr + start + cols, mask=start + cols < n_cols, other=0.0)
        tl.store(out_ptr + tl.program_id(0), tl.sum(acc, axis=0))

    ck = eggpu.compile(row_total.Kernel(BLOCK), optimize=False, cache=tmp_path)
    assert ck.report["assumptions"] == {"n_cols": f"le{LIMIT}"}
    want = rf"row_total: argument 'n_cols' must be <= {LIMIT} .* got {LIMIT + 1}"
    x, out = np.arange(40, dtype=np.float32), np.zeros(1, np.float32)
    with pytest.raises(LaunchError, match=want):
        ck.run_cpu(1, x, out, LIMIT + 1)
    ck.run_cpu(1, x, out, 40)
    assert out[0] == x.sum()
    with fake_cuda() as cu:
        with pytest.raises(LaunchError, match=want):
            ck.launch(1, x, out, LIMIT + 1)
        with pytest.raises(LaunchError, match=want):
            ck._launch_checked(1, [x, out, LIMIT + 1])
        assert not cu.launches
        ck.launch(1, x, out, LIMIT)
        assert len(cu.launches) == 1
