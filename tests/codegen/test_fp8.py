"""FP8 storage dtypes (fp8e4nv = e4m3fn, fp8e5 = e5m2): conversions in the interpreter, the host
lowering (run_cpu) and PTX agree bit for bit with an explicit reference (round to nearest even,
saturation to the largest finite value, canonical NaN); arithmetic and integer casts are refused."""

from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eggpu.ir import Builder, bf16, f16, f32, f64, fp8e4nv, fp8e5, i32, pointer, scalar
from eggpu.ir.errors import IRError

from .conftest import host_kernel, masked_lanes
from .test_ptx_features import needs_toolchain

FP8 = (fp8e4nv, fp8e5)
FLOATS = (f16, bf16, f32, f64)
LARGEST = {"fp8e4nv": 448.0, "fp8e5": 57344.0}
CANONICAL_NAN = {"f16": 0x7E00, "bf16": 0x7FC0, "f32": 0x7FC00000, "f64": 0x7FF8000000000000}


def reference_to_fp8(values: np.ndarray, dt) -> np.ndarray:
    """An independent reference: the nearest FP8 value by search over all finite codes (ties to
    the even code), saturating, NaN -> 0x7F; uint8 codes."""
    codes = np.arange(256, dtype=np.uint8)
    decoded = codes.view(dt.np).astype(np.float64)
    finite = np.isfinite(decoded)
    out = np.empty(values.shape, np.uint8)
    for i, v in enumerate(values.astype(np.float64)):
        if np.isnan(v):
            out[i] = 0x7F
            continue
        v = float(np.clip(v, -LARGEST[dt.name], LARGEST[dt.name]))
        same_sign = finite & (np.signbit(decoded) == np.signbit(v))  # rounding keeps the sign (of 0 too)
        dist = np.where(same_sign, np.abs(decoded - v), np.inf)
        best = np.flatnonzero(dist == dist.min())
        even = best[best % 2 == 0]
        out[i] = (even if len(even) else best)[0]
    return out


def _special_inputs(dt, src) -> np.ndarray:
    """Values around every FP8 boundary: ties, subnormals, overflow, +-inf, NaN, -0.0."""
    big = LARGEST[dt.name]
    tiny = 2.0 ** (-9 if dt == fp8e4nv else -16)  # smallest subnormal
    v = [0.0, -0.0, 1.0, -1.0, big, -big, big * 1.03, big * 1.0625, big * 1.07, 1e30, -1e30, np.inf, -np.inf,
         np.nan, -np.nan, tiny, tiny / 2, tiny * 0.5001, tiny * 1.5, tiny * 2.5, -tiny * 3.5, tiny * 0.25,
         1.0625, 1.0625 + 2**-40, -(1.0625 + 2**-40), 1.1875, 1.125, -1.0625, 3.0 * 2**-8, 2.0**-6, 2.0**-14, 2.0**-15, 0.1, 1 / 3, 300.0, 49152.0]
    with np.errstate(over="ignore"):
        return np.array(v, dtype=np.float64).astype(src.np)


def convert_kernel(src, dst, block=128):
    """``out[i] = x[i].to(dst)`` for i < n."""
    b = Builder(f"cvt_{src}_{dst}", [("x", pointer(src)), ("out", pointer(dst)), ("n", scalar(i32))])
    mask, at = masked_lanes(b, block)

    b.effect("store", at("out"), b.op("cast", b.op("load", at("x"), mask), dtype=dst), mask)
    return b.finish()


def _run_both(fn, x, dst):
    from eggpu.ir.interp import interpret

    n = len(x)
    outs = []
    for run in (lambda *a: interpret(fn, (n + 127) // 128, *a), lambda *a: host_kernel(fn).run((n + 127) // 128, *a)):
        out = np.zeros(n, dst.np)
        run(x.copy(), out, n)
        outs.append(np.ascontiguousarray(out).view(f"u{out.dtype.itemsize}"))
    return outs


@pytest.mark.parametrize("n", (1, 1000, 1001))
@pytest.mark.parametrize("dt", FP8, ids=str)
@pytest.mark.parametrize("src", (f32, f64, f16, bf16), ids=str)
def test_downcast_matches_reference(src, dt, n):
    rng = np.random.default_rng(n)
    special = _special_inputs(dt, src)
    with np.errstate(over="ignore"):
        x = (rng.standard_normal(n) * 2.0 ** rng.integers(-20, 18, n)).astype(src.np)
    x[: min(n, len(special))] = special[: min(n, len(special))]
    interp, host = _run_both(convert_kernel(src, dt), x, dt)
    want = reference_to_fp8(x.astype(np.float64), dt)
    np.testing.assert_array_equal(interp, want)
    np.testing.assert_array_equal(host, want)


@pytest.mark.parametrize("dt", FP8, ids=str)
@pytest.mark.parametrize("dst", FLOATS + FP8, ids=str)
def test_every_fp8_code_converts(dt, dst):
    """All 256 codes: upcasts are exact (NaN canonical); FP8 -> FP8 rounds once, saturating."""
    x = np.arange(256, dtype=np.uint8).view(dt.np)
    if dst == dt:
        pytest.skip("identity")
    interp, host = _run_both(convert_kernel(dt, dst), x, dst)
    values = x.astype(np.float64)
    if dst.is_fp8:
        want = reference_to_fp8(values, dst)
    else:
        want = values.astype(dst.np).view(f"u{dst.itemsize}").copy()
        want[np.isnan(values)] = CANONICAL_NAN[dst.name]
    np.testing.assert_array_equal(interp, want)
    np.testing.assert_array_equal(host, want)


def test_ml_dtypes_casts_do_not_saturate():
    """Why the reference is written out: ml_dtypes' own cast does not match Triton's satfinite."""
    x = np.array([1000.0, np.inf], np.float32)
    assert np.isnan(x.astype(ml_dtypes.float8_e4m3fn).astype(np.float32)).all()
    assert reference_to_fp8(x, fp8e4nv).tolist() == [0x7E, 0x7E]


def test_where_and_bitcast_on_fp8():
    from eggpu.ir.interp import interpret

    b = Builder("sel8", [("x", pointer(fp8e5)), ("y", pointer(fp8e5)), ("c", pointer(i32)),
                         ("out", pointer(fp8e5)), ("bits", pointer(ml_u8 := _u8()))])
    offs = b.op("arange", start=0, end=64)

    def at(name):
        return b.op("addptr", b.op("splat", b.param(name), shape=(64,)), offs)

    cond = b.op("ne", b.op("load", at("c")), b.op("splat", b.const(0, i32), shape=(64,)))
    r = b.op("where", cond, b.op("load", at("x")), b.op("load", at("y")))
    b.effect("store", at("out"), r)
    b.effect("store", at("bits"), b.op("bitcast", r, dtype=ml_u8))
    fn = b.finish()
    rng = np.random.default_rng(3)
    x = rng.integers(0, 256, 64, dtype=np.uint8).view(fp8e5.np)
    y = rng.integers(0, 256, 64, dtype=np.uint8).view(fp8e5.np)
    c = rng.integers(0, 2, 64).astype(np.int32)
    want = np.where(c != 0, x.view(np.uint8), y.view(np.uint8))
    for run in (lambda *a: interpret(fn, 1, *a), lambda *a: host_kernel(fn).run(1, *a)):
        out, bits = np.zeros(64, fp8e5.np), np.zeros(64, np.uint8)
        run(x, y, c, out, bits)
        np.testing.assert_array_equal(out.view(np.uint8), want)
        np.testing.assert_array_equal(bits, want)


def _u8():
    from eggpu.ir import u8

    return u8


# ---------------------------------------------------------------- refusals


@pytest.mark.parametrize("op", ("add", "mul", "lt", "eq", "maximum"))
def test_arithmetic_on_fp8_is_refused(op):
    b = Builder("bad", [("x", pointer(fp8e4nv))])
    v = b.op("load", b.op("addptr", b.op("splat", b.param("x"), shape=(16,)), b.op("arange", start=0, end=16)))
    with pytest.raises(IRError, match=rf"{op}: does not accept fp8e4nv operands: FP8 is a storage dtype.*"
                                      r"convert to f16 or f32 first"):
        b.op(op, v, v)


@pytest.mark.parametrize("src,dst", [(fp8e5, i32), (i32, fp8e4nv)], ids=str)
def test_integer_casts_are_refused(src, dst):
    b = Builder("bad", [("x", pointer(src))])
    v = b.op("load", b.op("addptr", b.op("splat", b.param("x"), shape=(16,)), b.op("arange", start=0, end=16)))
    with pytest.raises(IRError, match=rf"no conversion between {src} and {dst}: FP8 converts only to and from"):
        b.op("cast", v, dtype=dst)


# ---------------------------------------------------------------- PTX


@needs_toolchain
@pytest.mark.parametrize("target", ("sm_89", "sm_90", "sm_90a", "sm_80"))
@pytest.mark.parametrize("dt", FP8, ids=str)
def test_ptx_conversions(target, dt):
    """sm_90+ use the cvt instructions; sm_89 (PTX 7.8 here: the FP8 cvt forms need 8.1 on sm_89)
    and sm_80 the integer conversion; ptxas accepts every one."""
    from eggpu.codegen import compile_ptx_module
    from eggpu.codegen.ptxas import run_ptxas

    name = {"fp8e4nv": "e4m3x2", "fp8e5": "e5m2x2"}[dt.name]
    for fn, pattern, hardware in ((convert_kernel(f32, dt), rf"cvt\.rn\.satfinite\.{name}\.f32", ("sm_90", "sm_90a")),
                                  (convert_kernel(dt, f32), rf"cvt\.rn\.f16x2\.{name}", ("sm_90", "sm_90a"))):
        ptx = compile_ptx_module(fn, target).ptx
        assert bool(re.search(pattern, ptx)) == (target in hardware), pattern
        run_ptxas(ptx, target)


# ---------------------------------------------------------------- properties and sweeps


@settings(max_examples=150, deadline=None)
@given(st.lists(st.floats(width=64, allow_nan=True, allow_infinity=True), min_size=1, max_size=20),
       st.sampled_from(FP8))
def test_reference_rounds_once_and_saturates(values, dt):
    """eggpu.ir.fp8 (the interpreter's semantics) equals the search reference on any f64."""
    from eggpu.ir.fp8 import to_fp8

    x = np.array(values, np.float64)
    np.testing.assert_array_equal(to_fp8(x, dt).view(np.uint8), reference_to_fp8(x, dt))


@pytest.mark.slow
@pytest.mark.parametrize("dt", FP8, ids=str)
@pytest.mark.parametrize("src", (f16, bf16), ids=str)
def test_every_16_bit_pattern_converts_as_the_reference(src, dt):
    x = np.arange(1 << 16, dtype=np.uint16).view(src.np)
    interp, host = _run_both(convert_kernel(src, dt), x, dt)
    with np.errstate(invalid="ignore"):  # bf16 signalling NaNs
        want = reference_to_fp8(x.astype(np.float64), dt)
    np.testing.assert_array_equal(interp, want)
    np.testing.assert_array_equal(host, want)


def all_conversions_kernel(dt):
    """Every conversion into and out of ``dt`` in one kernel (for ptxas)."""
    other = fp8e5 if dt == fp8e4nv else fp8e4nv
    params = [(f"in_{d}", pointer(d)) for d in FLOATS] + [(f"out_{d}", pointer(d)) for d in FLOATS + (other,)]
    b = Builder(f"all_{dt}", params + [("q", pointer(dt))])
    offs = b.op("arange", start=0, end=128)

    def at(name):
        return b.op("addptr", b.op("splat", b.param(name), shape=(128,)), offs)

    q = b.op("load", at("q"))
    for d in FLOATS:
        q = b.op("where", b.op("ne", b.op("load", at(f"in_{d}")), b.op("splat", b.const(0.0, d), shape=(128,))),
                 b.op("cast", b.op("load", at(f"in_{d}")), dtype=dt), q)
    for d in FLOATS + (other,):
        b.effect("store", at(f"out_{d}"), b.op("cast", q, dtype=d))
    return b.finish()


@needs_toolchain
@pytest.mark.parametrize("target", ("sm_90a", "sm_80"))
@pytest.mark.parametrize("dt", FP8, ids=str)
def test_every_conversion_assembles(target, dt):
    from eggpu.codegen import compile_ptx_module
    from eggpu.codegen.ptxas import run_ptxas

    run_ptxas(compile_ptx_module(all_conversions_kernel(dt), target).ptx, target)


@pytest.mark.parametrize("dt", FP8, ids=str)
def test_every_conversion_in_one_kernel_agrees(dt):
    from eggpu.ir.interp import interpret

    fn = all_conversions_kernel(dt)
    rng = np.random.default_rng(7)
    with np.errstate(over="ignore"):
        ins = [np.where(rng.random(128) < 0.3, 0.0, rng.standard_normal(128) * 2.0 ** rng.integers(-20, 20, 128))
               .astype(d.np) for d in FLOATS]
    q = rng.integers(0, 256, 128, dtype=np.uint8).view(dt.np)
    runs = []
    for run in (lambda *a: interpret(fn, 1, *a), lambda *a: host_kernel(fn).run(1, *a)):
        outs = [np.zeros(128, p.type.dtype.np) for p in fn.params[4:9]]
        run(*[a.copy() for a in ins], *outs, q.copy())
        runs.append([np.ascontiguousarray(o).view(f"u{o.dtype.itemsize}") for o in outs])
    for a, b in zip(*runs):
        np.testing.assert_array_equal(a, b)


@needs_toolchain
@pytest.mark.parametrize("dt", FP8, ids=str)
def test_sm90_converts_two_elements_per_instruction(dt):
    """Eight elements per thread (1024 lanes, 128 threads): four cvt each way, as Triton packs them;
    ptxas accepts the packing."""
    from eggpu.codegen import compile_ptx_module
    from eggpu.codegen.ptxas import run_ptxas

    name = {"fp8e4nv": "e4m3x2", "fp8e5": "e5m2x2"}[dt.name]
    for fn, pattern in ((convert_kernel(f32, dt, block=1024), rf"cvt\.rn\.satfinite\.{name}\.f32"),
                        (convert_kernel(dt, f32, block=1024), rf"cvt\.rn\.f16x2\.{name}")):
        ptx = compile_ptx_module(fn, "sm_90").ptx
        assert len(re.findall(pattern, ptx)) == 4
        run_ptxas(ptx, "sm_90")
