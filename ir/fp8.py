"""Reference semantics of the FP8 conversions (numpy; the meaning run_cpu and PTX must match).

The two FP8 dtypes are storage only (:mod:`eggpu.ir.dtypes`); ``cast`` converts between them and
the float dtypes with Triton's semantics on sm_89+/sm_90 (PTX ``cvt.rn.satfinite``):

* **downcast** (any float, or the other FP8 dtype, -> FP8): the exact source value is rounded ONCE
  to nearest, ties to even (an f64 source is not rounded through f32 first); results beyond the
  largest finite value — and +-inf — SATURATE to +-max (448 for fp8e4nv, 57344 for fp8e5, never
  inf); the sign of zero is kept (-0.0 -> 0x80); NaN gives the positive canonical NaN ``0x7F``
  (both formats) whatever its sign and payload. Subnormal results are rounded as subnormals.
* **upcast** (FP8 -> f16, bf16, f32, f64) is exact: every FP8 value is representable in all of
  them. NaN gives the destination's positive canonical quiet NaN (f32 ``0x7FC00000``, f16
  ``0x7E00``, bf16 ``0x7FC0``, f64 ``0x7FF8000000000000``); fp8e5 +-inf gives +-inf.

ml_dtypes' own casts do NOT saturate (overflow gives NaN for e4m3fn, inf for e5m2) and keep NaN
signs, so they are used here only where exact (encoding a value already rounded and clamped).
FP8 <-> integer/bool casts do not exist (Triton refuses them): convert through f32.
"""

from __future__ import annotations

import numpy as np

from .dtypes import DType, f32, numpy_dtype

#: per FP8 dtype: (mantissa bits, exponent bias, largest finite value)
FORMATS: dict[str, tuple[int, int, float]] = {"fp8e4nv": (3, 7, 448.0), "fp8e5": (2, 15, 57344.0)}
NAN_CODE = 0x7F  # the canonical NaN both downcasts produce


def to_fp8(x: np.ndarray, dt: DType) -> np.ndarray:
    """Float values (any numpy float dtype, bf16 included) rounded once to the FP8 dtype ``dt``,
    saturating (see the module docstring); an array of ``dt.np``."""
    mant_bits, bias, largest = FORMATS[dt.name]
    v = np.asarray(x).astype(np.float64)  # exact for every float source
    with np.errstate(all="ignore"):
        a = np.abs(v)
        finite = np.isfinite(a)
        e = np.frexp(np.where(finite & (a > 0), a, 1.0))[1] - 1  # a in [2**e, 2**(e+1))
        q = np.maximum(e, 1 - bias) - mant_bits  # exponent of one unit in the last place
        n = np.rint(np.ldexp(np.where(finite, a, 0.0), -q))  # exact scaling; rint ties to even
        mag = np.minimum(np.ldexp(n, q), largest)
        mag = np.where(finite, mag, largest)  # +-inf saturates (NaN is replaced below)
        out = np.copysign(mag, v).astype(numpy_dtype(dt))  # exact: already an FP8 value
    codes = out.reshape(-1).view(np.uint8).copy()
    codes[np.isnan(v).reshape(-1)] = NAN_CODE
    return codes.view(numpy_dtype(dt)).reshape(np.shape(v))


def from_fp8(x: np.ndarray, dst: DType) -> np.ndarray:
    """FP8 values converted exactly to the float dtype ``dst`` (NaN canonical, see above)."""
    out = numpy_dtype(dst)
    v = np.asarray(x).astype(np.float64)  # exact
    nan = np.isnan(v)
    r = v.astype(out)  # exact: every FP8 value fits every float dtype
    if np.any(nan):
        r = np.where(nan, np.array(np.nan, dtype=out), r)  # numpy's NaN is the positive quiet one
    return np.asarray(r, dtype=out)


def cast(x: np.ndarray, src: DType, dst: DType) -> np.ndarray:
    """``cast`` with an FP8 source or destination (the other side a float or FP8 dtype)."""
    if src.is_fp8 and dst.is_fp8:
        return to_fp8(from_fp8(x, f32), dst)
    if dst.is_fp8:
        return to_fp8(x, dst)
    return from_fp8(x, dst)
