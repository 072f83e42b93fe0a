"""``x.to(dtype, fp_downcast_rounding="rtz")``: float -> narrower float rounded toward zero,
bit-exact in the interpreter and run_cpu (and in PTX, which ptxas checks), against references
computed independently of eggpu's conversion: bf16 truncates the low 16 bits of an f32, f16 is the
largest-magnitude f16 not above |x| (a search over all 65536 f16 values), f32 from f64 steps
numpy's nearest conversion toward zero when it is larger in magnitude."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import eggpu
import eggpu.language as tl

SPECIALS_F32 = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, 65504.0, 65519.99, 65520.0, -65520.0, 1e30, -1e30,
                         6.1e-5, 5.96e-8, 2.98e-8, 2.9e-8, -5.9e-8, 1e-40, -1e-40, 1.0009765625, 1.00048828125,
                         1.0014648, 3.3895314e38, -3.3895314e38, 3.4028235e38, np.float32(1.17549435e-38),
                         0.1, -0.1, 1 / 3], np.float32)


def _rtz_search(x: np.ndarray, dst, inf_bits: int) -> np.ndarray:
    """The ``dst`` (a 16-bit float) of largest magnitude not above |x|, by search over every finite one."""
    mags = np.arange(0, inf_bits, dtype=np.uint16).view(dst).astype(np.float64)  # ascending
    a = np.abs(x.astype(np.float64))
    idx = np.searchsorted(mags, a, side="right") - 1
    bits = np.where(np.isinf(a), inf_bits, idx).astype(np.uint16)
    bits |= np.where(np.signbit(x), 0x8000, 0).astype(np.uint16)
    return np.where(np.isnan(x), dst(np.nan), bits.view(dst))


def _rtz_f16(x: np.ndarray) -> np.ndarray:
    return _rtz_search(x, np.float16, 0x7C00)


def _rtz_bf16(x: np.ndarray) -> np.ndarray:
    if x.dtype == np.float32:  # toward zero from f32 is dropping the low 16 bits
        return (x.view(np.uint32) >> 16).astype(np.uint16).view(ml_dtypes.bfloat16)
    return _rtz_search(x, ml_dtypes.bfloat16, 0x7F80)


def _rtz_f32(x: np.ndarray) -> np.ndarray:
    near = x.astype(np.float32)
    away = np.abs(near.astype(np.float64)) > np.abs(x)
    return np.where(away, np.nextafter(near, np.float32(0)), near).astype(np.float32)


@eggpu.jit
def to_rtz(x_ptr, y_ptr, n, BLOCK: tl.constexpr, DST: tl.constexpr, METHOD: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    if METHOD:
        y = x.to(DST, fp_downcast_rounding="rtz")
    else:
        y = tl.cast(x, DST, fp_downcast_rounding="rtz")
    tl.store(y_ptr + offs, y, mask=m)


def _random_bits(n: int, dtype, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    width = np.dtype(dtype).itemsize * 8
    bits = rng.integers(0, 2**width, n, dtype=np.uint64).astype({32: np.uint32, 64: np.uint64}[width])
    return bits.view(dtype)


CASES = [(np.float32, np.float16, tl.float16, _rtz_f16), (np.float32, ml_dtypes.bfloat16, tl.bfloat16, _rtz_bf16),
         (np.float64, np.float32, tl.float32, _rtz_f32), (np.float64, np.float16, tl.float16, _rtz_f16),
         (np.float64, ml_dtypes.bfloat16, tl.bfloat16, _rtz_bf16)]
IDS = ["f32-f16", "f32-bf16", "f64-f32", "f64-f16", "f64-bf16"]


def _check(run_both, x, src, dst, tdst, ref, method):
    n = x.size
    y = np.zeros(n, dst)
    want = ref(x)
    for dev, (_, got) in run_both(to_rtz, (triton_cdiv(n, 256),), x, y, n, BLOCK=256, DST=tdst,
                                  METHOD=method).items():
        width = {2: np.uint16, 4: np.uint32}[np.dtype(dst).itemsize]
        nan = np.isnan(want.astype(np.float64))
        assert np.isnan(got.astype(np.float64)[nan]).all(), dev
        bad = np.flatnonzero(got.view(width)[~nan] != want.view(width)[~nan])
        assert bad.size == 0, (dev, x[~nan][bad[:5]], got[~nan][bad[:5]], want[~nan][bad[:5]])


def triton_cdiv(a: int, b: int) -> int:
    return -(-a // b)


@pytest.mark.parametrize("src,dst,tdst,ref", CASES, ids=IDS)
def test_rtz_special_values(run_both, src, dst, tdst, ref):
    x = np.concatenate([SPECIALS_F32.astype(src), -SPECIALS_F32.astype(src), np.array([np.nan], src),
                        _random_bits(64, np.float32, 7).astype(src)])
    if src == np.float64:
        x = np.concatenate([x, np.array([1 + 2**-24, 1 + 2**-23 - 2**-40, 3.4028235677973366e38,
                                         3.4028235677973366e38 * (1 + 2**-30), 1e300, 1e-300, 1.4e-45,
                                         7e-46, 2**-149 * 1.5], np.float64)])
    _check(run_both, x, src, dst, tdst, ref, True)


@pytest.mark.parametrize("src,dst,tdst,ref", CASES, ids=IDS)
@pytest.mark.parametrize("n", [1, 1000, 1001])
def test_rtz_random_bits(run_both, src, dst, tdst, ref, n):
    x = _random_bits(n, src, n)
    if np.dtype(dst).itemsize < np.dtype(src).itemsize // 2 or dst == np.float16:
        # random bits rarely land in the narrow dtype's range: add values around it
        x = np.concatenate([x[: n // 2], (np.random.default_rng(n).standard_normal(n - n // 2) * 1e3).astype(src)])
    _check(run_both, x, src, dst, tdst, ref, n % 2 == 0)


def test_rtz_ptx_assembles_on_old_and_new_targets():
    from eggpu.codegen.ptxas import run_ptxas
    from eggpu.codegen.toolchain import ToolchainError, find_ptxas

    x = np.zeros(8, np.float32)
    kinds = [(x, np.zeros(8, np.float16), tl.float16), (x, np.zeros(8, ml_dtypes.bfloat16), tl.bfloat16),
             (x.astype(np.float64), x, tl.float32)]
    cks = [eggpu.compile(to_rtz.specialize(a, b, 8, BLOCK=128, DST=d, METHOD=True), target=t)
           for a, b, d in kinds for t in ("sm_75", "sm_90")]
    try:
        find_ptxas()
    except ToolchainError:
        pytest.skip("ptxas not installed")
    for ck, t in zip(cks, ["sm_75", "sm_90"] * 3):
        assert run_ptxas(ck.ptx, t).registers > 0


@eggpu.jit
def rtz_misuse(x_ptr, WHICH: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, 16))
    if WHICH == 0:
        y = x.to(tl.float64, fp_downcast_rounding="rtz")
    if WHICH == 1:
        y = tl.cast(x, tl.int32, fp_downcast_rounding="rtz")
    if WHICH == 2:
        y = tl.cast(x, tl.float16, fp_downcast_rounding="rtp")
    if WHICH == 3:
        y = tl.cast(x, tl.int32, fp_downcast_rounding="rtz", bitcast=True)
    if WHICH == 4:
        y = tl.cast(x, tl.float8e5, fp_downcast_rounding="rtz")
    if WHICH == 5:
        y = x.to(tl.float16).to(tl.bfloat16, fp_downcast_rounding="rtz")
    tl.store(x_ptr + tl.arange(0, 16), y.to(tl.float32))


@pytest.mark.parametrize("which,marker,message", [
    (0, "x.to", "x.to(fp_downcast_rounding='rtz') applies only to a float -> narrower float conversion, not "
                "f32 -> f64"),
    (1, "fp_downcast_rounding", "tl.cast(fp_downcast_rounding='rtz') applies only to a float -> narrower float "
                                "conversion, not f32 -> i32"),
    (2, "fp_downcast_rounding", "tl.cast(fp_downcast_rounding='rtp') is not one of None, 'rtne', 'rtz'"),
    (3, "fp_downcast_rounding", "tl.cast: fp_downcast_rounding= does not apply to a bitcast"),
    (4, "fp_downcast_rounding", "tl.cast(fp_downcast_rounding='rtz') applies only to a float -> narrower float "
                                "conversion, not f32 -> fp8e5"),
    (5, "x.to", "x.to(fp_downcast_rounding='rtz') applies only to a float -> narrower float conversion, not "
                "f16 -> bf16"),
])
def test_rtz_misuse_is_a_located_error(which, marker, message, located_which):
    located_which(rtz_misuse, which, marker, message, np.zeros(16, np.float32))
