"""Float minimum/maximum (elementwise and reductions) are one PTX instruction with the op table's semantics.

The op table's ``minimum``/``maximum`` are IEEE-754-2019 minimumNumber/maximumNumber: a NaN
operand is ignored (two NaNs give NaN), -0.0 < +0.0. The lowering emits ``llvm.minimumnum`` /
``llvm.maximumnum``: PTX ``min.f32``/``max.f32`` (never the NaN-propagating ``min.NaN``/``max.NaN``
of sm_80+, which would not implement the op), and the x86 back end's expansion on the host.
The host run is held bit for bit to the interpreter on every pair of special values.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from eggpu.ir import Builder, bf16, f16, f32, f64, i32, pointer, scalar

SPECIALS = [np.nan, -np.nan, 0.0, -0.0, np.inf, -np.inf, 1.0, -1.0, 1e-40, -1e-40, 3.5, -2.25]


def _pairs(dt):
    """Every ordered pair of special values (as two arrays of ``dt``), padded to a ragged size."""
    x, y = np.meshgrid(np.array(SPECIALS), np.array(SPECIALS))
    x, y = x.ravel(), y.ravel()
    with np.errstate(all="ignore"):
        return x.astype(dt.np), y.astype(dt.np)


def binary_kernel(op, dt, block=256):
    b = Builder(f"{op}_{dt}", [("x", pointer(dt)), ("y", pointer(dt)), ("o", pointer(dt)), ("n", scalar(i32))])
    offs = b.op("add", b.op("splat", b.op("mul", b.op("program_id", axis=0), b.const(block, i32)), shape=(block,)),
                b.op("arange", start=0, end=block))
    m = b.op("lt", offs, b.op("splat", b.param("n"), shape=(block,)))

    def at(name):
        return b.op("addptr", b.op("splat", b.param(name), shape=(block,)), offs)

    r = b.op(op, b.op("load", at("x"), m), b.op("load", at("y"), m))
    b.effect("store", at("o"), r, m)
    return b.finish()


def row_reduce_kernel(op, dt, rows=16, cols=16):
    """out[r] = reduce(x[r, :]) over a rows x cols block (row reduction through warp shuffles)."""
    b = Builder(f"{op}_{dt}_rows", [("x", pointer(dt)), ("o", pointer(dt))])
    r = b.op("broadcast", b.op("expand_dims", b.op("arange", start=0, end=rows), axis=1), shape=(rows, cols))
    c = b.op("broadcast", b.op("expand_dims", b.op("arange", start=0, end=cols), axis=0), shape=(rows, cols))
    off = b.op("add", b.op("mul", r, b.op("splat", b.const(cols, i32), shape=(rows, cols))), c)
    x = b.op("load", b.op("addptr", b.op("splat", b.param("x"), shape=(rows, cols)), off))
    red = b.op(op, x, axis=1)
    b.effect("store", b.op("addptr", b.op("splat", b.param("o"), shape=(rows,)), b.op("arange", start=0, end=rows)), red)
    return b.finish()


@pytest.mark.parametrize("dt", (f32, f64, f16, bf16), ids=str)
@pytest.mark.parametrize("op", ("minimum", "maximum"))
def test_elementwise_specials_bit_exact(op, dt, compare):
    x, y = _pairs(dt)
    n = x.size  # 144: a ragged tail of the 256-element block
    got = compare(binary_kernel(op, dt), (1,), [x, y, np.zeros(n, dt.np), n])
    o = got[2]
    # spot-check the semantics themselves, not only agreement with the reference
    xs, ys = x.astype(np.float64), y.astype(np.float64)
    want = np.where(np.isnan(xs), ys, np.where(np.isnan(ys), xs, np.minimum(xs, ys) if op == "minimum"
                                               else np.maximum(xs, ys)))
    o64 = o.astype(np.float64)
    assert np.array_equal(np.isnan(o64), np.isnan(want))
    num = ~np.isnan(want)
    assert np.array_equal(o64[num], want[num])
    zeros = (xs == 0) & (ys == 0)
    neg = (np.signbit(xs) | np.signbit(ys)) if op == "minimum" else (np.signbit(xs) & np.signbit(ys))
    assert np.array_equal(np.signbit(o64[zeros]), neg[zeros]), "-0.0 must order below +0.0"


@pytest.mark.parametrize("dt", (f32, f16), ids=str)
@pytest.mark.parametrize("op", ("reduce_min", "reduce_max"))
def test_row_reductions_specials_bit_exact(op, dt, compare):
    rng = np.random.default_rng(3)
    vals = np.array(SPECIALS)
    x = rng.choice(vals, size=(16, 16))
    x[0, :] = np.nan  # all NaN -> NaN
    x[1, :] = [0.0, -0.0] * 8  # zeros of both signs
    x[2, :] = -0.0
    x[3, :] = [np.nan] * 15 + [-np.inf]  # NaN ignored
    with np.errstate(all="ignore"):
        x = x.astype(dt.np)
    got = compare(row_reduce_kernel(op, dt), (1,), [x.ravel(), np.zeros(16, dt.np)])[1]
    assert np.isnan(got[0]) and got[3] == -np.inf
    assert np.signbit(got[2])
    assert np.signbit(got[1]) == (op == "reduce_min")


def _minmax_lines(ptx: str) -> list[str]:
    """The float min/max instructions (integer ``min.u32`` index clamps are not the op)."""
    return re.findall(r"^\s*((?:min|max)\S*\.(?:f16|bf16|f32|f64))\s", ptx, re.M)


@pytest.mark.parametrize("target", ("sm_75", "sm_80", "sm_90"))
@pytest.mark.parametrize("fast_math", (False, True))
def test_ptx_is_one_min_max_instruction(target, fast_math):
    from eggpu.codegen import compile_ptx

    for op, ins in (("minimum", "min.f32"), ("maximum", "max.f32")):
        ptx, _ = compile_ptx(binary_kernel(op, f32), target, fast_math=fast_math)
        lines = _minmax_lines(ptx)  # one per code path (vector fast path and masked tail)
        assert lines and set(lines) == {ins}, lines
        assert ".NaN" not in ptx
        assert "selp.f32" not in ptx  # no compare/select chain left
    ptx, _ = compile_ptx(binary_kernel("maximum", f64), target, fast_math=fast_math)
    assert set(_minmax_lines(ptx)) == {"max.f64"}


def test_ptx_row_max_uses_max_f32():
    from eggpu.codegen import compile_ptx

    ptx, _ = compile_ptx(row_reduce_kernel("reduce_max", f32), "sm_80")
    lines = _minmax_lines(ptx)
    assert lines and set(lines) == {"max.f32"}, lines
    assert ".NaN" not in ptx


def test_host_maximum_of_nan_ignores_it_beside_other_stores():
    """Fuzz seed 902267: ``maximum(0.0 / 0.0, 0.0)`` gave 0.0 in the interpreter but NaN in
    run_cpu, only when two unrelated block stores sat beside it (LLVM's x86 expansion of
    ``llvm.maximumnum``); the host build now spells min/max out itself."""
    from pathlib import Path

    import ml_dtypes

    from eggpu.codegen import build_host
    from eggpu.ir.interp import interpret
    from eggpu.ir.parser import parse_function

    fn = parse_function((Path(__file__).parent / "fixtures" / "fuzz_902267.ir").read_text())

    def args():
        return [np.array([7, 2, -32768], np.int16), np.array([12, -32768, 2], np.int16), 16, -1.0, 1,
                np.full(3, 7, np.int64), np.full(1, 7, ml_dtypes.bfloat16), np.full(3, 7, np.uint16)]

    want, got = args(), args()
    interpret(fn, 1, *want)
    build_host(fn).run(1, *got)
    for w, g in zip(want[5:], got[5:]):
        assert w.tobytes() == g.tobytes(), (w, g)
    assert float(got[6][0]) == 0.0
