"""The FP8 conversions as LLVM instructions (the meaning is :mod:`eggpu.ir.fp8`'s, bit for bit).

An FP8 value is an ``i8`` register (and byte in memory) everywhere. Conversions go through f32:

* to FP8: the source is made f32 exactly (f16/bf16 widened; f64 rounded to ODD in f32, so the one
  rounding to FP8 that follows equals a single rounding of the f64 value; FP8 sources widened),
  then rounded to nearest even with saturation (``satfinite``). On a GPU target of sm_90 or later
  that is ``cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32`` (on sm_89 ptxas wants PTX ISA 8.1 for the FP8
  ``cvt`` forms and sm_89 code is PTX 7.8); elsewhere — the host lowering (run_cpu), sm_89 and
  older GPUs — the same rounding in integer operations (:func:`_soft_to_fp8`), chosen over a
  CodegenError for old GPUs because it is exact, portable and costs ~20 integer instructions.
* from FP8: exact; ``cvt.rn.f16x2.{e4m3x2,e5m2x2}`` then f16 -> f32 on sm_90+, integer operations
  elsewhere (:func:`_soft_from_fp8`).

On sm_90+ a thread's elements are converted two per instruction (``lower_cast`` hands the whole
column to :func:`eggpu.codegen.scalar_ops.cast_many`), as Triton packs them.

``fp8e4b15`` (no hardware format) converts in integer operations on every target, with the
rounding :mod:`eggpu.ir.fp8` states (:func:`_soft_to_e4b15`; the upcast is :func:`_soft_from_fp8`).

NaN results are replaced by the canonical NaN of the destination with one compare and select on
every path, so the bits do not depend on what a hardware conversion makes of a NaN.
"""

from __future__ import annotations

from llvmlite import ir

from eggpu.ir.dtypes import DType, f16
from eggpu.ir.fp8 import E4B15, FORMATS, NAN_CODE

from .emitter import F32, I8, I16, I32, Emitter

V = ir.Value

#: the FP8 ``cvt`` forms need PTX ISA 8.1 on sm_89, and sm_89 code is PTX 7.8 here
#: (:mod:`eggpu.ir.targets`): sm_89 converts in integer operations, sm_90+ with the instructions.
_HARDWARE_SM = 90
_PTX_NAMES = {"fp8e4nv": "e4m3x2", "fp8e5": "e5m2x2"}
_CANONICAL_NAN = {"f16": 0x7E00, "bf16": 0x7FC0, "f32": 0x7FC00000, "f64": 0x7FF8000000000000}


def _hardware(em: Emitter, v: V, dt: DType) -> bool:
    """Whether the ``cvt`` instructions apply: an OCP format, a GPU target of sm_90+, a scalar value."""
    return dt.name in _PTX_NAMES and em.is_ptx and em.sm is not None and em.sm >= _HARDWARE_SM and not isinstance(v.type, ir.VectorType)


_MAX_CODE = {"fp8e4nv": 0x7E, "fp8e5": 0x7B}  # the largest finite value: 448, 57344


def _soft_to_fp8(em: Emitter, x: V, dt: DType) -> V:
    """f32 -> FP8 code (i32 lanes, low byte) with integer operations: round to nearest even,
    subnormals kept, overflow and inf saturated to the largest finite code, NaN -> 0x7F."""
    b = em.b
    mant_bits, bias, _ = FORMATS[dt.name]
    w = b.bitcast(x, em.like_type(x, I32))

    def k(c: int) -> ir.Constant:
        return em.k(w, c)

    def rne(m: V, sh: V) -> V:  # m / 2**sh rounded to nearest even (1 <= sh <= 31)
        q = b.lshr(m, sh)
        rem = b.and_(m, b.sub(b.shl(k(1), sh), k(1)))
        half = b.shl(k(1), b.sub(sh, k(1)))
        tie_odd = b.and_(b.icmp_unsigned("==", rem, half), b.icmp_unsigned("!=", b.and_(q, k(1)), k(0)))
        return b.add(q, b.zext(b.or_(b.icmp_unsigned(">", rem, half), tie_odd), w.type))

    sign = b.and_(b.lshr(w, k(24)), k(0x80))
    a = b.and_(w, k(0x7FFFFFFF))
    # normal results: re-bias the exponent; a carry out of the mantissa bumps the exponent
    q_norm = rne(b.sub(a, k((127 - bias) << 23)), k(23 - mant_bits))
    # subnormal results: the significand shifted to units of 2**(1 - bias - mant_bits)
    e = b.lshr(a, k(23))
    is_f32_sub = b.icmp_unsigned("==", e, k(0))
    m = b.or_(b.and_(a, k(0x7FFFFF)), b.select(is_f32_sub, k(0), k(0x800000)))
    sh = b.sub(k(151 - bias - mant_bits), b.select(is_f32_sub, k(1), e))
    q_sub = rne(m, b.select(b.icmp_unsigned(">", sh, k(25)), k(25), sh))  # m < 2**24: >= 25 gives 0
    r = b.select(b.icmp_unsigned(">=", a, k((128 - bias) << 23)), q_norm, q_sub)
    r = b.select(b.icmp_unsigned(">", r, k(_MAX_CODE[dt.name])), k(_MAX_CODE[dt.name]), r)  # satfinite (inf too)
    r = b.or_(r, sign)
    return b.select(b.icmp_unsigned(">", a, k(0x7F800000)), k(NAN_CODE), r)


def _soft_to_e4b15(em: Emitter, x: V, src: DType) -> V:
    """f32 (exact, or rounded to odd from f64) -> fp8e4b15 code (i32 lanes, low byte): the
    magnitude clamped to 1.75 (inf and NaN too), rounded to nearest with ties away from zero;
    the sign kept, except that a NaN from a source other than f16 gives +1.75 (eggpu/ir/fp8.py)."""
    b = em.b
    mant_bits, bias, _ = E4B15
    w = b.bitcast(x, em.like_type(x, I32))

    def k(c: int) -> ir.Constant:
        return em.k(w, c)

    sign = b.and_(b.lshr(w, k(24)), k(0x80))
    if src.name != "f16":  # Triton's cvt.rz.f16.f32 makes every NaN the positive canonical one
        sign = b.select(b.icmp_unsigned(">", b.and_(w, k(0x7FFFFFFF)), k(0x7F800000)), k(0), sign)
    a = b.and_(w, k(0x7FFFFFFF))
    a = b.select(b.icmp_unsigned(">", a, k(0x3FE00000)), k(0x3FE00000), a)  # 1.75; inf and NaN too
    sh_n = 23 - mant_bits
    # normal results (|x| >= 2**(1 - bias)): re-bias, add half a unit, truncate
    q_norm = b.lshr(b.add(b.sub(a, k((127 - bias) << 23)), k(1 << (sh_n - 1))), k(sh_n))
    # subnormal results: the significand in units of 2**(1 - bias - mant_bits), half added
    e = b.lshr(a, k(23))
    is_f32_sub = b.icmp_unsigned("==", e, k(0))
    m = b.or_(b.and_(a, k(0x7FFFFF)), b.select(is_f32_sub, k(0), k(0x800000)))
    sh = b.sub(k(150 - bias - mant_bits + 1), b.select(is_f32_sub, k(1), e))
    sh = b.select(b.icmp_unsigned(">", sh, k(25)), k(25), sh)  # m < 2**24: a shift >= 25 gives 0
    q_sub = b.lshr(b.add(m, b.shl(k(1), b.sub(sh, k(1)))), sh)
    r = b.select(b.icmp_unsigned(">=", a, k((128 - bias) << 23)), q_norm, q_sub)
    return b.or_(r, sign)


def _soft_from_fp8(em: Emitter, v: V, dt: DType) -> V:
    """FP8 code (i8) -> f32, exactly, with integer operations (NaN handled by the caller)."""
    b = em.b
    mant_bits, bias, _ = E4B15 if dt.name == "fp8e4b15" else FORMATS[dt.name]
    h = b.zext(v, em.like_type(v, I32))

    def k(c: int) -> ir.Constant:
        return em.k(h, c)

    sign = b.shl(b.and_(h, k(0x80)), k(24))
    mag = b.and_(h, k(0x7F))
    normal = b.add(b.shl(mag, k(23 - mant_bits)), k((127 - bias) << 23))
    ft = em.like_type(v, F32)
    # subnormal: mantissa * 2**(1 - bias - mant_bits), two normal f32 values, exact
    sub = b.fmul(b.uitofp(mag, ft), em.const(ft, 2.0 ** (1 - bias - mant_bits)))
    bits = b.select(b.icmp_unsigned(">=", mag, k(1 << mant_bits)), normal, b.bitcast(sub, h.type))
    if dt.name == "fp8e5":  # the only FP8 infinity
        bits = b.select(b.icmp_unsigned("==", mag, k(0x7C)), k(0x7F800000), bits)
    return b.bitcast(b.or_(bits, sign), ft)


def _is_nan_code(em: Emitter, v: V, dt: DType) -> V | None:
    """Whether the code ``v`` is a NaN of ``dt`` (None: ``dt`` has no NaN)."""
    if dt.name == "fp8e4b15":
        return None
    mag = em.b.and_(v, em.k(v, 0x7F))
    if dt.name == "fp8e4nv":
        return em.b.icmp_unsigned("==", mag, em.k(v, 0x7F))
    return em.b.icmp_unsigned(">", mag, em.k(v, 0x7C))


def _pairs(values: list[V]) -> list[tuple[V, V | None]]:
    """Consecutive elements two by two (the last alone when the count is odd)."""
    return [(values[i], values[i + 1] if i + 1 < len(values) else None) for i in range(0, len(values), 2)]


def _to_f32_many(em: Emitter, vs: list[V], dt: DType) -> list[V]:
    """FP8 (i8) values -> f32, exact (two per ``cvt.rn.f16x2`` on sm_90+); NaN left to the caller."""
    if not _hardware(em, vs[0], dt):
        return [_soft_from_fp8(em, v, dt) for v in vs]
    b = em.b
    fnty = ir.FunctionType(I32, [I16])
    asm = ir.InlineAsm(fnty, f"cvt.rn.f16x2.{_PTX_NAMES[dt.name]} $0, $1;", "=r,h")
    out: list[V] = []
    for lo, hi in _pairs(vs):  # lo in the low byte -> the low f16 half
        packed = b.zext(lo, I16) if hi is None else b.or_(b.zext(lo, I16), b.shl(b.zext(hi, I16), em.k(b.zext(hi, I16), 8)))
        pair = b.call(asm, [packed])
        halves = [b.trunc(pair, I16)] + ([] if hi is None else [b.trunc(b.lshr(pair, em.k(pair, 16)), I16)])
        out += [b.fpext(b.bitcast(h, em.reg_type(f16)), F32) for h in halves]
    return out


def from_fp8_many(em: Emitter, vs: list[V], src: DType, dst: DType, widen) -> list[V]:
    """FP8 values converted exactly to the float dtype ``dst`` (``widen(v32, dst)`` converts the f32
    on: exact); a NaN gives ``dst``'s canonical NaN."""
    out = []
    for v, x32 in zip(vs, _to_f32_many(em, vs, src)):
        is_nan = _is_nan_code(em, v, src)
        if is_nan is None:
            out.append(widen(x32, dst))
            continue
        nan_bits = em.kt(v, ir.IntType(dst.bits), _CANONICAL_NAN[dst.name])
        out.append(em.b.select(is_nan, em.float_from_bits(nan_bits, dst), widen(x32, dst)))
    return out


def to_fp8_many(em: Emitter, xs: list[V], dst: DType, src: DType) -> list[V]:
    """f32 values (exact, or rounded to odd from f64) rounded to the FP8 dtype ``dst``: i8 values,
    two per ``cvt.rn.satfinite`` on sm_90+ (as Triton packs them). ``src`` is the dtype the values
    were converted from (fp8e4b15's NaN rule depends on it)."""
    b = em.b
    if dst.name == "fp8e4b15":
        return [b.trunc(_soft_to_e4b15(em, x, src), em.like_type(x, I8)) for x in xs]
    if not _hardware(em, xs[0], dst):
        return [b.trunc(_soft_to_fp8(em, x, dst), em.like_type(x, I8)) for x in xs]
    asm = ir.InlineAsm(ir.FunctionType(I16, [F32, F32]), f"cvt.rn.satfinite.{_PTX_NAMES[dst.name]}.f32 $0, $1, $2;",
                       "=h,f,f")
    out: list[V] = []
    for lo, hi in _pairs(xs):
        pair = b.call(asm, [em.const(F32, 0.0) if hi is None else hi, lo])  # a -> the high byte, b -> the low
        codes = [b.trunc(pair, I8)] + ([] if hi is None else [b.trunc(b.lshr(pair, em.k(pair, 8)), I8)])
        for x, r in zip((lo, hi), codes):  # NaN -> 0x7F whatever the instruction makes of it
            out.append(b.select(b.fcmp_unordered("uno", x, x), em.k(r, NAN_CODE), r))
    return out


__all__ = ["from_fp8_many", "to_fp8_many"]
