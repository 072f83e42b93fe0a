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

``fp8e4b15`` (Triton's ``tl.float8e4b15``: e4m3, bias 15, no NaN and no inf; numpy holds its
``uint8`` codes) follows Triton's NVIDIA conversions (``triton/language/extra/cuda/utils.py``):

* **upcast** is exact: code ``s eeee mmm`` is ``(-1)**s * 2**(e - 15) * 1.mmm`` (``e == 0``:
  ``0.mmm * 2**-14``); ``0x7F``/``0xFF`` are +-1.875, ``0x80`` is -0.0.
* **downcast**: the magnitude is clamped to 1.75 (the largest value Triton's conversion produces;
  +-inf and NaN give +-1.75), then rounded to nearest with ties AWAY from zero (Triton adds half a
  unit and truncates), subnormals as subnormals; the sign is kept (-0.0 -> 0x80). Triton converts
  an f32 through ``cvt.rz.f16.f32`` first; truncating to f16 never moves a value across a rounding
  boundary of this format, so every source gives the single rounding of its exact value. NaN keeps
  its sign from an f16 source; from a wider source it gives +1.75 (``cvt`` makes the canonical
  positive NaN before Triton's f16 code runs).

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


#: fp8e4b15: (mantissa bits, bias, largest value a downcast produces; 0x7F = 1.875 is larger)
E4B15 = (3, 15, 1.75)


def _to_e4b15(x: np.ndarray, src: DType) -> np.ndarray:
    """Float values of dtype ``src`` rounded to fp8e4b15 codes (``uint8``), as Triton does."""
    mant_bits, bias, largest = E4B15
    v = np.asarray(x).astype(np.float64)  # exact for every float source
    with np.errstate(all="ignore"):
        a = np.minimum(np.where(np.isnan(v), largest, np.abs(v)), largest)
        e = np.frexp(np.where(a > 0, a, 1.0))[1] - 1
        q = np.maximum(e, 1 - bias) - mant_bits
        s = np.ldexp(a, -q)  # exact; < 16
        n = np.floor(s)
        n = n + (s - n >= 0.5)  # ties away from zero (s - n is exact)
        e_n = np.frexp(np.where(n > 0, n, 1.0))[1] - 1  # n in [2**e_n, 2**(e_n+1))
        # the code: exponent field and mantissa of n * 2**q (n < 16; n == 16 only after a carry)
        exp_field = np.where(n >= 2 ** mant_bits, q + mant_bits + bias + (e_n - mant_bits), 0)
        mant = np.where(n >= 2 ** mant_bits, np.ldexp(n, mant_bits - e_n) - 2 ** mant_bits, n)
    codes = (exp_field.astype(np.int64) << mant_bits) | mant.astype(np.int64)
    neg = np.signbit(v) & ~(np.isnan(v) & (src.name != "f16"))  # a wider source's NaN is +
    return (codes | np.where(neg, 0x80, 0)).astype(np.uint8).reshape(np.shape(v))


def _from_e4b15(codes: np.ndarray) -> np.ndarray:
    """fp8e4b15 codes -> exact float64 values."""
    c = np.asarray(codes).astype(np.int64)
    mant_bits, bias, _ = E4B15
    e = (c >> mant_bits) & 0xF
    m = c & 0x7
    mag = np.where(e > 0, np.ldexp(8.0 + m, e - bias - mant_bits), np.ldexp(m.astype(np.float64), 1 - bias - mant_bits))
    return np.where(c & 0x80, -mag, mag)


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
    if src.name == "fp8e4b15":
        v = _from_e4b15(x)  # exact; no NaN
        if dst.is_fp8:
            return cast(v.astype(np.float32), f32, dst)  # exact in f32
        return v.astype(numpy_dtype(dst))  # exact in every float dtype
    if dst.name == "fp8e4b15":
        if src.is_fp8:
            return _to_e4b15(from_fp8(x, f32), f32)
        return _to_e4b15(x, src)
    if src.is_fp8 and dst.is_fp8:
        return to_fp8(from_fp8(x, f32), dst)
    if dst.is_fp8:
        return to_fp8(x, dst)
    return from_fp8(x, dst)
