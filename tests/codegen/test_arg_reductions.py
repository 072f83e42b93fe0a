"""Float argmax/argmin: the lean combine (NaN lifted to the identity, one compare chain) keeps the
op table's semantics bit for bit on every strategy (full block, rows, generic axis).

Semantics (op table): the i32 index of the *first* extreme element, NaN ignored, -0.0 ties +0.0,
an all-NaN slice gives 0. The host lowering is held both to the interpreter and to an independent
numpy reference on rows built from special values (NaN, +-0.0, +-inf, ties, a real -inf beside
NaNs), and the PTX is accepted by ptxas.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eggpu.ir import Builder, bf16, f16, f32, f64, i32, pointer

from .conftest import load_tile, run_compare

SPECIALS = [np.nan, 0.0, -0.0, np.inf, -np.inf, 1.0, -1.0, 2.5, 1e-40]


def ref_arg(x: np.ndarray, kind: str) -> int:
    """First index of the maximum (argmax) / minimum (argmin) ignoring NaN; 0 when all NaN."""
    x = x.astype(np.float64)
    num = ~np.isnan(x)
    if not num.any():
        return 0
    best = x[num].max() if kind == "argmax" else x[num].min()
    return int(np.flatnonzero(num & (x == best))[0])  # -0.0 == +0.0: the first of them


def arg_kernel(dt, rows: int, cols: int, axis: int):
    """idx[k * n_out + j] = arg{max,min}(x[rows, cols], axis) for k = 0 (argmax), 1 (argmin)."""
    b = Builder(f"arg_{dt}_{rows}x{cols}_{axis}", [("x", pointer(dt)), ("idx", pointer(i32))])
    x = load_tile(b, "x", rows, cols)
    n_out = cols if axis == 0 else rows
    for k, name in enumerate(("reduce_argmax", "reduce_argmin")):
        red = b.op(name, x, axis=axis)
        dst = b.op("add", b.op("arange", start=0, end=n_out), b.op("splat", b.const(k * n_out, i32), shape=(n_out,)))
        b.effect("store", b.op("addptr", b.op("splat", b.param("idx"), shape=(n_out,)), dst), red)
    return b.finish()


def full_kernel(dt, n: int):
    """idx[0] = argmax(x[n]), idx[1] = argmin(x[n]) (the full-block strategy)."""
    b = Builder(f"arg_full_{dt}_{n}", [("x", pointer(dt)), ("idx", pointer(i32))])
    x = b.op("load", b.op("addptr", b.op("splat", b.param("x"), shape=(n,)), b.op("arange", start=0, end=n)))
    for k, name in enumerate(("reduce_argmax", "reduce_argmin")):
        b.effect("store", b.op("addptr", b.param("idx"), b.const(k, i32)), b.op(name, x, axis=0))
    return b.finish()


def special_rows(rows: int, cols: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.choice(np.array(SPECIALS), size=(rows, cols))
    x[0] = np.nan  # all NaN -> 0
    x[1] = [0.0, -0.0] * (cols // 2)  # zeros of both signs tie: index 0
    x[2] = -0.0
    x[2, cols // 2] = 0.0  # +0.0 ties -0.0: still index 0
    x[3] = np.nan
    x[3, cols - 1] = -np.inf  # a real -inf beats NaN for argmax
    x[4] = np.nan
    x[4, cols - 2] = np.inf  # a real +inf beats NaN for argmin
    x[5] = -np.inf  # all -inf: index 0 for both
    x[6] = 1.0
    x[6, 3] = x[6, cols - 1] = 7.0  # tie of maxima: the first
    x[6, 5] = x[6, cols - 3] = -7.0  # tie of minima: the first
    x[7] = -np.inf
    x[7, 0] = np.nan
    return x


def _check(fn, x: np.ndarray, axis: int | None, dt) -> None:
    with np.errstate(all="ignore"):
        xd = x.astype(dt.np)
    xs = xd.astype(np.float64)
    if axis is None:
        n_out, slices = 1, [xs.ravel()]
    else:
        n_out = x.shape[1 - axis]
        slices = [xs[j] if axis == 1 else xs[:, j] for j in range(n_out)]
    got = run_compare(fn, (1,), [xd.ravel(), np.zeros(2 * n_out, np.int32)])[1]  # == the interpreter
    want = [ref_arg(s, "argmax") for s in slices] + [ref_arg(s, "argmin") for s in slices]
    assert got.tolist() == want


@pytest.mark.parametrize("dt", (f32, f64, f16, bf16), ids=str)
@pytest.mark.parametrize("rows,cols,axis", [(16, 16, 1), (8, 64, 1), (64, 8, 1), (16, 16, 0), (8, 12, 0)])
def test_axis_arg_reductions_on_specials(dt, rows, cols, axis):
    seed = rows * cols + axis
    x = special_rows(rows, cols, seed) if axis == 1 else special_rows(cols, rows, seed).T.copy()
    _check(arg_kernel(dt, rows, cols, axis), x, axis, dt)


@pytest.mark.parametrize("dt", (f32, f64, f16), ids=str)
@pytest.mark.parametrize("case", ("all_nan", "nan_and_neg_inf", "zeros", "ties", "random"))
def test_full_arg_reductions_on_specials(dt, case):
    n = 256
    x = np.random.default_rng(1).choice(np.array(SPECIALS), size=n)
    if case == "all_nan":
        x[:] = np.nan
    elif case == "nan_and_neg_inf":
        x[:] = np.nan
        x[200] = -np.inf
        x[100] = np.inf
    elif case == "zeros":
        x[:] = -0.0
        x[::3] = 0.0
    elif case == "ties":
        x[:] = 3.0
        x[77] = x[201] = 9.0
        x[90] = x[250] = -9.0
    _check(full_kernel(dt, n), x, None, dt)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.sampled_from(SPECIALS), min_size=32, max_size=32))
def test_row_arg_reductions_property(values):
    x = np.array(values * 4).reshape(4, 32)
    x[1] = np.roll(x[1], 5)
    x[2] = x[2][::-1]
    _check(arg_kernel(f32, 4, 32, 1), x, 1, f32)


@pytest.mark.parametrize("target", ("sm_80", "sm_90"))
def test_arg_reduction_ptx_assembles_without_nan_tests_in_the_combine(target, ptxas_registers):
    from eggpu.codegen import compile_ptx

    ptx, _ = compile_ptx(arg_kernel(f32, 16, 16, 1), target)
    # NaN is tested once per element when it is lifted (setp.nan), never in the butterfly steps
    shuffles = ptx.count("shfl.sync.bfly")
    assert shuffles > 0
    assert ptx.count("setp.nan.f32") + ptx.count("setp.num.f32") <= 2 * 16 * 16 // 128, ptx.count("setp.nan.f32")
    assert ptxas_registers(ptx, target) > 0


@pytest.mark.parametrize("target", ("sm_80", "sm_90"))
def test_all_nan_index_becomes_zero_by_one_signed_max(target):
    """The "no real element" index is 0xFFFFFFFF (the largest unsigned index, -1 signed), so the
    all-NaN -> 0 finish is a single ``max.s32 idx, 0`` per result, with no INT32_MAX sentinel
    compare; index ties compare unsigned."""
    from eggpu.codegen import compile_ptx

    ptx, _ = compile_ptx(full_kernel(f32, 128), target)
    assert "2147483647" not in ptx
    assert len(re.findall(r"max\.s32\s+%r\d+, %r\d+, 0;", ptx)) == 2, ptx  # argmax and argmin
    x = np.full(128, np.nan, np.float32)
    _check(full_kernel(f32, 128), x, None, f32)  # all NaN: 0
    x[[3, 97]] = -np.inf
    _check(full_kernel(f32, 128), x, None, f32)  # a real -inf beside NaNs wins, the first of them


@pytest.mark.parametrize("target", ("sm_80", "sm_90"))
def test_nan_element_keeps_its_value_and_only_its_index_is_lifted(target):
    """A NaN element is lifted to ``(NaN, NO_INDEX)`` (one index select, no value select): the
    combine's equality is unordered (``setp.equ``), so a real element beats a NaN "nothing" on its
    smaller index and the ordered ``>`` never lets "nothing" win by value. No ``selp.f32`` picks
    the identity's -inf/+inf for an element."""
    from eggpu.codegen import compile_ptx

    ptx, _ = compile_ptx(full_kernel(f32, 16), target)
    assert "setp.equ.f32" in ptx
    assert not re.search(r"selp\.f32\s+%r\d+, %r\d+, 0f[F7]F800000", ptx), ptx


@pytest.mark.parametrize("n", (16, 200, 256))
@pytest.mark.parametrize("case", ("all_nan", "neg_inf_last", "pos_inf_after_nan", "nan_first_then_ties"))
def test_nothing_states_of_nan_and_unowned_slots_lose_to_every_real_element(n, case):
    """NaN elements (value NaN) and unowned slots (n = 200: the identity's infinity) are both
    "nothing" states; whichever meets which in the butterfly, the index is the op table's."""
    x = np.full(n, np.nan, np.float32)
    if case == "neg_inf_last":
        x[n - 1] = -np.inf
    elif case == "pos_inf_after_nan":
        x[n // 2] = np.inf
        x[n // 3] = -np.inf
    elif case == "nan_first_then_ties":
        x[1:] = -2.0
        x[n - 1] = x[n - 3] = 5.0
        x[n - 2] = x[2] = -7.0
    for dt in (f32, f16):
        _check(full_kernel(dt, n), x, None, dt)
