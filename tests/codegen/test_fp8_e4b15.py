"""Triton's fp8e4b15 (``tl.float8e4b15``: e4m3, bias 15, no NaN/inf; numpy holds its uint8 codes):
eggpu.ir.fp8 equals a bit-level transcription of Triton's NVIDIA conversion asm
(``triton/language/extra/cuda/utils.py``), and the interpreter, run_cpu and PTX agree with it."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eggpu.ir import bf16, f16, f32, f64, fp8e4b15, fp8e4nv, fp8e5
from eggpu.ir.fp8 import cast

from .test_fp8 import _run_both, convert_kernel
from .test_ptx_features import needs_toolchain

FLOATS = (f16, bf16, f32, f64)


def triton_f16_to_e4b15(h: np.ndarray) -> np.ndarray:
    """``convert_float16_to_fp8e4b15`` (has_minx2) on f16 bit patterns, instruction by instruction:
    ``and 0x7fff``; ``min.f16x2`` with 0x3F00 (1.75; a NaN operand gives the other one, and
    non-negative halves order as integers); ``mad.lo 2, 0x0080``; the sign ORed back (``lop3 0xea``);
    the high byte (``prmt 0x7531``)."""
    h = h.astype(np.uint32)
    a = np.minimum(h & 0x7FFF, 0x3F00)
    return ((((a * 2 + 0x80) & 0xFFFF) | (h & 0x8000)) >> 8).astype(np.uint8)


def triton_e4b15_to_f16(c: np.ndarray) -> np.ndarray:
    """``convert_fp8e4b15_to_float16``: the magnitude shifted left by 7, the sign to bit 15."""
    c = c.astype(np.uint16)
    return (((c & 0x80) << 8) | ((c & 0x7F) << 7)).astype(np.uint16)


def rtz_f16(x: np.ndarray) -> np.ndarray:
    """``cvt.rz.f16.f32`` (what Triton applies to an f32 first): truncation toward zero, overflow
    to +-65504, NaN -> the canonical positive NaN 0x7E00."""
    v = np.asarray(x, np.float64)
    with np.errstate(all="ignore"):
        r = v.astype(np.float16)
        away = np.isfinite(v) & (np.abs(r.astype(np.float64)) > np.abs(v))
        r = np.where(away, np.nextafter(r, np.float16(0)), r)
    bits = r.view(np.uint16).copy()
    bits[np.isnan(v)] = 0x7E00
    return bits


def test_every_f16_pattern_matches_tritons_asm():
    h = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    np.testing.assert_array_equal(cast(h.view(np.float16), f16, fp8e4b15), triton_f16_to_e4b15(h))


def test_every_code_upcasts_as_tritons_asm():
    c = np.arange(256, dtype=np.uint8)
    np.testing.assert_array_equal(cast(c, fp8e4b15, f16).view(np.uint16), triton_e4b15_to_f16(c))
    assert cast(np.array([0x7F, 0xFF, 0x80, 0x01], np.uint8), fp8e4b15, f64).tolist() == [1.875, -1.875, -0.0, 2.0**-17]
    assert np.signbit(cast(np.array([0x80], np.uint8), fp8e4b15, f32))[0]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(width=32, allow_nan=True, allow_infinity=True), min_size=1, max_size=30))
def test_f32_matches_tritons_rtz_then_f16_path(values):
    """From f32 Triton truncates to f16 first; eggpu rounds the exact value once: the same codes."""
    x = np.array(values, np.float32)
    np.testing.assert_array_equal(cast(x, f32, fp8e4b15), triton_f16_to_e4b15(rtz_f16(x)))


def test_boundaries():
    x = np.array([1.75, 1.8, 1.875, 1e30, -np.inf, np.nan, -np.nan, 1.0625, 1.0624, -1.0625, 2.0**-18,
                  2.0**-18 * 0.999, -0.0, 2.0**-14 - 2.0**-19], np.float64)
    got = cast(x, f64, fp8e4b15)
    # 1.0625 is a tie between 1.0 (0x78) and 1.125 (0x79): away from zero; NaN from f64 is +1.75
    assert [hex(c) for c in got] == ["0x7e", "0x7e", "0x7e", "0x7e", "0xfe", "0x7e", "0x7e", "0x79", "0x78", "0xf9",
                                     "0x1", "0x0", "0x80", "0x8"]
    nan16 = np.array([0xFE00, 0x7E00], np.uint16).view(np.float16)  # from f16 a NaN keeps its sign
    assert cast(nan16, f16, fp8e4b15).tolist() == [0xFE, 0x7E]


def _inputs(src, n, seed):
    rng = np.random.default_rng(seed)
    v = rng.standard_normal(n) * 2.0 ** rng.integers(-20, 3, n)
    v[: min(n, 8)] = np.array([np.nan, np.inf, -np.inf, -0.0, 1.0625, 2.0**-18, 1e5, 1.76])[: min(n, 8)]
    with np.errstate(over="ignore"):
        return v.astype(src.np)


@pytest.mark.parametrize("n", (1, 1000, 1001))
@pytest.mark.parametrize("src", FLOATS + (fp8e4nv, fp8e5), ids=str)
def test_downcast_interpreter_and_run_cpu(src, n):
    x = _inputs(f32, n, n).astype(src.np) if src.name.startswith("fp8") else _inputs(src, n, n)
    want = cast(x, src, fp8e4b15)
    for got in _run_both(convert_kernel(src, fp8e4b15), x, fp8e4b15):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dst", FLOATS + (fp8e4nv, fp8e5), ids=str)
def test_every_code_upcasts_in_interpreter_and_run_cpu(dst):
    c = np.tile(np.arange(256, dtype=np.uint8), 4)[:1001]
    want = np.ascontiguousarray(cast(c, fp8e4b15, dst)).view(f"u{dst.np.itemsize}")
    for got in _run_both(convert_kernel(fp8e4b15, dst), c, dst):
        np.testing.assert_array_equal(got, want)


@needs_toolchain
@pytest.mark.parametrize("target", ("sm_80", "sm_90"))
def test_ptxas_accepts_the_conversions(target):
    from eggpu.codegen import compile_ptx_module
    from eggpu.codegen.ptxas import run_ptxas

    for src, dst in [(d, fp8e4b15) for d in FLOATS + (fp8e4nv,)] + [(fp8e4b15, d) for d in FLOATS + (fp8e5,)]:
        ptx = compile_ptx_module(convert_kernel(src, dst), target).ptx
        if fp8e5 not in (src, dst) and fp8e4nv not in (src, dst):  # no hardware format: integer code on every target
            assert "cvt.rn.satfinite" not in ptx and "cvt.rn.f16x2" not in ptx
        run_ptxas(ptx, target)
