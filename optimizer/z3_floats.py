"""z3 terms of IEEE floats that :mod:`.z3ops` builds on: the FP sorts of eggpu's float dtypes,
float -> int conversion with the IR's saturation, and a float's bit pattern with the IR's NaN
payload rules (docs/ir.md: ``neg``/``abs``/``bitcast`` act on the bits, a NaN's payload is
otherwise unspecified)."""

from __future__ import annotations

import hashlib

import z3

from eggpu.ir import DType

_FP_SORTS = {"f16": (5, 11), "bf16": (8, 8), "f32": (8, 24), "f64": (11, 53)}


def fp_sort(dtype: DType) -> z3.FPSortRef:
    e, s = _FP_SORTS[dtype.name]
    return z3.FPSort(e, s)


def float_to_int_sat(x: z3.FPRef, src: DType, dst: DType) -> z3.BitVecRef:
    """``x: src`` converted to the integer ``dst`` as ``cast`` does: NaN -> 0, out of range
    saturates, otherwise truncation toward zero (ir/semantics.py)."""
    w = dst.bits
    s = fp_sort(src)
    if dst.is_signed:
        hi_excl = z3.FPVal(float(2 ** (w - 1)), s)
        lo_incl = z3.FPVal(-float(2 ** (w - 1)), s)
        maxv, minv = (1 << (w - 1)) - 1, 1 << (w - 1)
        conv = z3.fpToSBV(z3.RTZ(), x, z3.BitVecSort(w))
    else:
        hi_excl = z3.FPVal(float(2**w), s)
        lo_incl = z3.FPVal(0.0, s)
        maxv, minv = (1 << w) - 1, 0
        conv = z3.fpToUBV(z3.RTZ(), x, z3.BitVecSort(w))
    return z3.If(
        z3.fpIsNaN(x),
        z3.BitVecVal(0, w),
        z3.If(
            z3.fpGEQ(x, hi_excl),
            z3.BitVecVal(maxv, w),
            z3.If(z3.fpLEQ(x, lo_incl), z3.BitVecVal(minv, w), conv),
        ),
    )


def _nan_pattern(x: z3.ExprRef) -> z3.ExprRef:
    """Some NaN bit pattern for the float expression ``x`` (any sign, any non-zero significand):
    fresh bit-vector constants named after ``x``'s structure, so one expression has one pattern on
    both sides of a rule (the hardware is deterministic) while different expressions (two NaN
    inputs, a computed NaN) are independent: a proof holds for every payload."""
    s = x.sort()
    e, m = s.ebits(), s.sbits() - 1
    tag = hashlib.sha256(x.sexpr().encode()).hexdigest()[:16]
    sign = z3.BitVec(f"nan_sign!{tag}", 1, x.ctx)
    frac = z3.BitVec(f"nan_frac!{tag}", m, x.ctx)
    frac = z3.If(frac == 0, z3.BitVecVal(1, m, x.ctx), frac)
    return z3.Concat(sign, z3.BitVecVal((1 << e) - 1, e, x.ctx), frac)


def float_bits(x: z3.ExprRef) -> z3.ExprRef:
    """The IEEE bits of float expression ``x`` as the IR's semantics give them (docs/ir.md: ``neg``
    flips and ``abs`` clears the sign bit, also of a NaN; ``bitcast`` keeps every bit). z3 has a
    single NaN, so these are followed through the expression: ``bits(-a) = bits(a) ^ sign``,
    ``bits(|a|) = bits(a) & ~sign``, ``bits(bitcast(i)) = i``, ``bits(where(c, a, b))`` picks;
    any other NaN (an input, a computed NaN) has an unspecified payload (:func:`_nan_pattern`)."""
    w = x.sort().ebits() + x.sort().sbits()
    sign = z3.BitVecVal(1 << (w - 1), w, x.ctx)
    k = x.decl().kind() if z3.is_app(x) else None
    if k == z3.Z3_OP_FPA_NEG:
        return float_bits(x.arg(0)) ^ sign
    if k == z3.Z3_OP_FPA_ABS:
        return float_bits(x.arg(0)) & ~sign
    if k == z3.Z3_OP_FPA_TO_FP and x.num_args() == 1 and z3.is_bv(x.arg(0)):
        return x.arg(0)
    if k == z3.Z3_OP_ITE:
        return z3.If(x.arg(0), float_bits(x.arg(1)), float_bits(x.arg(2)))
    if z3.is_fp_value(x) and not x.isNaN():
        return z3.simplify(z3.fpToIEEEBV(x))
    return z3.If(z3.fpIsNaN(x), _nan_pattern(x), z3.fpToIEEEBV(x))


__all__ = ["float_bits", "float_to_int_sat", "fp_sort"]
