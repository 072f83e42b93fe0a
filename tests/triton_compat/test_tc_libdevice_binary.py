"""libdevice's binary float functions: ``pow`` and ``hypot`` (IR ops, libdevice/libm calls) and the
exact ``fmod`` (the IR's float ``rem``), ``copysign`` and ``fdim`` (exact comparisons and sign-bit
operations), as ``libdevice.<name>``, in interpret and run_cpu against numpy on every float dtype,
C's special cases included (``pow(nan, 0) = 1``, ``pow(-8, 1/3) = nan``, ``hypot(inf, nan) = inf``,
``fmod(x, 0) = nan``, ``copysign`` onto NaN, ``fdim`` with NaN)."""

from __future__ import annotations

import numpy as np
import pytest

import eggpu
import eggpu.language as tl
from eggpu.language.extra import libdevice

NAMES = ("pow", "hypot", "fmod", "copysign", "fdim")
APPROX = ("pow", "hypot")
nan, inf = np.nan, np.inf


@eggpu.jit
def _binary(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x, y = tl.load(x_ptr + offs, mask=m), tl.load(y_ptr + offs, mask=m)
    rs = (libdevice.pow(x, y), tl.extra.cuda.libdevice.hypot(x, y), libdevice.fmod(x, y), libdevice.copysign(x, y),
          libdevice.fdim(x, y))
    for i in tl.static_range(5):
        tl.static_assert(rs[i].dtype == x.dtype, "the functions keep the float dtype")
        tl.store(out_ptr + i * n + offs, rs[i], mask=m)


PAIRS = [(0.0, -1.0), (-0.0, -1.0), (-0.0, -2.0), (-0.0, 3.0), (-1.0, inf), (-1.0, nan), (nan, 0.0), (1.0, nan),
         (-8.0, 1.0 / 3.0), (-2.0, 3.0), (-2.0, 0.5), (2.0, -10.0), (10.0, 400.0), (inf, -1.0), (-inf, 3.0),
         (-inf, -3.0), (0.5, inf), (2.0, -inf), (inf, nan), (nan, -inf), (nan, 1.0), (3.0, 4.0), (1e30, 1e30),
         (5.5, 2.0), (-5.5, 2.0), (5.0, 0.0), (inf, 1.0), (1.0, inf), (1.0, -0.0), (-1.0, 0.0), (nan, -1.0),
         (inf, -1.0), (0.0, -nan), (5.0, 3.0), (3.0, 5.0), (inf, inf), (inf, -inf), (-0.0, 0.0), (7.0, -7.0)]


def _inputs(n: int, npdt) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(n)
    rand = np.stack([rng.uniform(-6, 6, n), rng.uniform(-6, 6, n)], axis=1)
    rand[::3, 0] = np.abs(rand[::3, 0])  # positive bases: pow is finite there
    rand[1::5, 1] = np.round(rand[1::5, 1])  # integer exponents of negative bases
    pairs = np.concatenate([np.array(PAIRS), rand])[:n]
    with np.errstate(over="ignore"):
        return pairs[:, 0].astype(npdt), pairs[:, 1].astype(npdt)


def _want(x: np.ndarray, y: np.ndarray, npdt) -> list[np.ndarray]:
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    # exact operations in a width that rounds once (f32 for the 16-bit formats, as eggpu computes them)
    w = np.float64 if np.dtype(npdt).itemsize >= 4 else np.float32
    xw, yw = x.astype(w), y.astype(w)
    with np.errstate(all="ignore"):
        fdim = np.where(xw > yw, xw - yw, np.where(xw <= yw, w(0.0), xw + yw))
        out = [np.power(x64, y64), np.hypot(x64, y64), np.fmod(x64, y64), np.copysign(x64, y64), fdim]
        return [np.asarray(o).astype(npdt) for o in out]


RTOL = {"f16": 2e-3, "bf16": 1.6e-2, "f32": 2e-6, "f64": 1e-14}


@pytest.mark.parametrize("dt", [tl.f32, tl.f64, tl.f16, tl.bf16], ids=str)
@pytest.mark.parametrize("n", [1, 1000, 1001])
def test_binary_functions_match_numpy(run_both, as_bits, dt, n):
    x, y = _inputs(n, dt.np)
    want = _want(x, y, dt.np)
    for device, (_, _, got) in run_both(_binary, (eggpu.cdiv(n, 256),), x, y, np.zeros(5 * n, dt.np), n,
                                        BLOCK=256).items():
        for i, name in enumerate(NAMES):
            g, w = got[i * n:(i + 1) * n], want[i]
            where = f"{name}[{dt}] on {device}"
            g64, w64 = g.astype(np.float64), w.astype(np.float64)
            assert np.array_equal(np.isnan(g64), np.isnan(w64)), f"{where}: NaN lanes at x={x[np.isnan(g64) != np.isnan(w64)][:4]}"
            if name == "copysign":  # the sign goes onto NaNs too
                assert np.array_equal(np.signbit(g), np.signbit(w)), f"{where}: signs"
            ok = ~np.isnan(w64)
            if name in APPROX:
                np.testing.assert_allclose(g64[ok], w64[ok], rtol=RTOL[str(dt)], atol=0, err_msg=where)
                zeros = w64 == 0
                assert np.array_equal(np.signbit(g[zeros]), np.signbit(w[zeros])), f"{where}: sign of zero"
            else:
                bad = as_bits(g)[ok] != as_bits(w)[ok]
                assert not bad.any(), f"{where}: x={x[ok][bad][:4]} y={y[ok][bad][:4]} got {g[ok][bad][:4]}"


def test_c_special_cases_f32(run_both):
    pairs = [(nan, 0.0), (1.0, nan), (-8.0, 1.0 / 3.0), (-0.0, -3.0), (-inf, -3.0), (-1.0, inf), (inf, nan),
             (5.0, 0.0), (-0.0, 1.0), (nan, -1.0), (1.0, 3.0)]
    x = np.array([p[0] for p in pairs], np.float32)
    y = np.array([p[1] for p in pairs], np.float32)
    k = len(pairs)
    want = {
        "pow": [1.0, 1.0, nan, -inf, -0.0, 1.0, nan, 1.0, -0.0, nan, 1.0],
        "hypot": [nan, nan, np.hypot(8.0, 1 / 3), 3.0, inf, inf, inf, 5.0, 1.0, nan, np.hypot(1.0, 3.0)],
        "fmod": [nan, nan, np.fmod(-8.0, np.float32(1 / 3)), -0.0, nan, -1.0, nan, nan, -0.0, nan, 1.0],
        "copysign": [nan, 1.0, 8.0, -0.0, -inf, 1.0, inf, 5.0, 0.0, -nan, 1.0],
        "fdim": [nan, nan, 0.0, 3.0, 0.0, 0.0, nan, 5.0, 0.0, nan, 0.0],
    }
    for device, (_, _, got) in run_both(_binary, (1,), x, y, np.zeros(5 * k, np.float32), k, BLOCK=16).items():
        for i, name in enumerate(NAMES):
            g, w = got[i * k:(i + 1) * k], np.array(want[name], np.float32)
            np.testing.assert_allclose(g, w, rtol=2.4e-7, atol=0, err_msg=f"{name} on {device}")
            lanes = slice(None) if name == "copysign" else ~np.isnan(w)  # copysign: NaNs' signs too
            assert np.array_equal(np.signbit(g[lanes]), np.signbit(w[lanes])), f"{name} on {device}: signs"


@eggpu.jit
def _int_pow(x_ptr, e_ptr):
    tl.store(x_ptr, libdevice.pow(tl.load(x_ptr), tl.load(e_ptr)))


def test_integer_exponent_block_is_a_located_error():
    """Triton's pow(f32, i32) is libdevice's powi; eggpu asks for a float exponent."""
    with pytest.raises(eggpu.CompileError) as ei:
        _int_pow[(1,)](np.ones(1, np.float32), np.ones(1, np.int32))
    text = str(ei.value)
    assert "tl.pow needs float operands, got i32 for y" in text and "^" in text


@eggpu.jit
def _pow_literal(x_ptr):
    x = tl.load(x_ptr + tl.arange(0, 4))
    tl.store(x_ptr + tl.arange(0, 4), libdevice.pow(x, 2) + libdevice.fmod(x, 1.5))


def test_literal_operands_take_the_block_dtype(run_both):
    x = np.array([-3.0, 0.5, 2.0, 7.25], np.float16)
    want = (x.astype(np.float32) ** 2).astype(np.float16).astype(np.float32) + np.fmod(x.astype(np.float32), 1.5)
    for device, (got,) in run_both(_pow_literal, (1,), x).items():
        assert got.dtype == np.float16
        np.testing.assert_array_equal(got, want.astype(np.float16), err_msg=device)
