"""Per-element semantics of the IR's elementwise ops, as LLVM instructions.

Every function takes the :class:`~eggpu.codegen.emitter.Emitter`, the IR dtype of the operands
and LLVM register values that are either scalars or thread vectors (the same code serves
uniform values, GPU threads and host lanes). The meaning is exactly that of
:mod:`eggpu.ir.semantics` and the op table:

* integers wrap; ``div``/``rem`` by zero give 0 and ``INT_MIN / -1`` wraps (the divisor is
  replaced before the instruction, so nothing traps on x86 and nothing is undefined in LLVM);
  shift amounts outside ``[0, bits)`` give 0 (``shr`` of a signed value: the sign fill);
* f16/bf16 are computed in f32 and rounded once per op; f32/f64 ops are single LLVM
  instructions without fast-math flags (``ptx.emit_ptx`` adds ``contract`` under fast_math);
* float ``minimum``/``maximum`` are IEEE-754-2019 minimumNumber/maximumNumber (NaN ignored,
  -0.0 < +0.0): ``llvm.minimumnum``/``llvm.maximumnum``, one ``min.f32``/``max.f32`` in PTX;
* comparisons are ordered except ``ne`` (unordered);
* ``cast`` rounds once (f64 -> 16-bit floats and wide integers -> 16-bit floats go through
  round-to-odd in f32), float -> int saturates with NaN -> 0 (``fptosi.sat``/``fptoui.sat``);
* ``fma`` is rounded once (16-bit formats: exact product in f64, sum rounded to odd, then
  one rounding).
"""

from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir

from eggpu.ir.dtypes import DType, f32, f64
from eggpu.ir.errors import CodegenError
from eggpu.ir.ops import transcendental_ops

from .emitter import F32, F64, I1, I32, I64, Emitter

V = ir.Value


def _half(dt: DType) -> bool:
    return dt.is_float and dt.bits == 16


def wide(em: Emitter, v: V, dt: DType) -> V:
    """A float value in its computation type: f16/bf16 -> f32, others unchanged."""
    return em.ext_f32(v, dt) if _half(dt) else v


def narrow(em: Emitter, v: V, dt: DType) -> V:
    """Round a computation-type value back to ``dt`` (f32 -> f16/bf16)."""
    return em.round_from_f32(v, dt) if _half(dt) else v


def _float_binary(fn: Callable[[ir.IRBuilder, V, V], V]):
    def run(em: Emitter, dt: DType, a: V, b: V) -> V:
        return narrow(em, fn(em.b, wide(em, a, dt), wide(em, b, dt)), dt)

    return run


# ---------------------------------------------------------------- arithmetic


def add(em: Emitter, dt: DType, a: V, b: V) -> V:
    if dt.is_float:
        return _float_binary(lambda bb, x, y: bb.fadd(x, y))(em, dt, a, b)
    return em.b.add(a, b)


def sub(em: Emitter, dt: DType, a: V, b: V) -> V:
    if dt.is_float:
        return _float_binary(lambda bb, x, y: bb.fsub(x, y))(em, dt, a, b)
    return em.b.sub(a, b)


def mul(em: Emitter, dt: DType, a: V, b: V) -> V:
    if dt.is_float:
        return _float_binary(lambda bb, x, y: bb.fmul(x, y))(em, dt, a, b)
    return em.b.mul(a, b)


def div(em: Emitter, dt: DType, a: V, b: V) -> V:
    """Float: IEEE ``div.rn`` (correctly rounded) by default; on the GPU under ``fast_math`` an
    f32 (and f16/bf16, computed in f32) quotient is ``div.full.f32`` (at most 2 ulp from the
    correctly rounded result over the full range, no slow path: Triton's default ``/``)."""
    if dt.is_float:
        if em.is_ptx and em.fast_math and dt.bits <= 32:
            return _float_binary(lambda bb, x, y: em.intrinsic("llvm.nvvm.div.full", F32, [x, y]))(em, dt, a, b)
        return _float_binary(lambda bb, x, y: bb.fdiv(x, y))(em, dt, a, b)
    bb = em.b
    zero = bb.icmp_unsigned("==", b, em.k(b, 0))
    bad = zero
    if dt.is_signed:
        ovf = bb.and_(bb.icmp_signed("==", a, em.k(a, dt.min)), bb.icmp_signed("==", b, em.k(b, -1)))
        bad = bb.or_(zero, ovf)
    safe = bb.select(bad, em.k(b, 1), b)
    q = bb.sdiv(a, safe) if dt.is_signed else bb.udiv(a, safe)
    return bb.select(zero, em.k(a, 0), q)


def rem(em: Emitter, dt: DType, a: V, b: V) -> V:
    if dt.is_float:
        return narrow(em, fmod(em, wide(em, a, dt), wide(em, b, dt)), dt)
    bb = em.b
    zero = bb.icmp_unsigned("==", b, em.k(b, 0))
    bad = zero
    if dt.is_signed:
        ovf = bb.and_(bb.icmp_signed("==", a, em.k(a, dt.min)), bb.icmp_signed("==", b, em.k(b, -1)))
        bad = bb.or_(zero, ovf)
    safe = bb.select(bad, em.k(b, 1), b)
    r = bb.srem(a, safe) if dt.is_signed else bb.urem(a, safe)
    return bb.select(zero, em.k(a, 0), r)


def fmod(em: Emitter, a: V, b: V) -> V:
    """C ``fmod`` of f32/f64 values (exact): libdevice on the GPU, LLVM ``frem`` (libm) on the host."""
    if em.is_ptx:
        t = a.type
        name = "__nv_fmodf" if isinstance(t, ir.FloatType) else "__nv_fmod"
        return em.b.call(em.declare(name, t, [t, t]), [a, b])
    return em.b.frem(a, b)


def fminmax(em: Emitter, x: V, y: V, *, is_min: bool) -> V:
    """minimumNumber/maximumNumber of two f32/f64 values (NaN ignored, -0 < +0).

    One LLVM intrinsic, ``llvm.minimumnum``/``llvm.maximumnum``, whose LangRef semantics are
    exactly IEEE-754-2019 minimumNumber/maximumNumber (the op table's): a NaN operand is
    ignored (two NaNs give a NaN), -0.0 orders below +0.0. NVPTX lowers it to the single
    instruction ``min.f32``/``max.f32`` (``.f64``) on every target, because PTX's plain
    ``min``/``max`` implement minimumNumber/maximumNumber; the sm_80 ``min.NaN``/``max.NaN``
    variants propagate NaN and so do *not* implement this op (LLVM emits them only for
    ``llvm.minimum``/``llvm.maximum``, which eggpu never uses). The host build spells the same
    semantics out in compares and selects (:func:`_host_fminmax`: LLVM's x86 expansion of the
    intrinsic was seen returning a NaN operand), so ``run_cpu`` and the GPU agree; ``fast_math``
    changes nothing here (it already is one instruction).
    """
    if em.is_host:
        return _host_fminmax(em, x, y, is_min=is_min)
    name = "llvm.minimumnum" if is_min else "llvm.maximumnum"
    return em.intrinsic(name, x.type, [x, y], [x.type])


def _host_fminmax(em: Emitter, x: V, y: V, *, is_min: bool) -> V:
    """minimumNumber/maximumNumber spelled out in compares and selects for the host build.

    LLVM's x86 expansion of ``llvm.maximumnum`` returned the NaN operand of ``maximum(0/0, 0.0)``
    in some programs (fuzz seed 902267: the same op gave 0.0 alone, NaN beside two unrelated
    block stores), so the host does not use the intrinsic: the larger (smaller) of two ordered
    values; of two equal values the AND (OR) of their bits, which orders -0.0 below +0.0 and is
    the value itself otherwise; a NaN operand gives the other one (two NaNs: a NaN)."""
    b = em.b
    t = x.type
    if isinstance(t, ir.VectorType):
        it = ir.VectorType(ir.IntType(_bits(t.element)), t.count)
    else:
        it = ir.IntType(_bits(t))
    xi, yi = b.bitcast(x, it), b.bitcast(y, it)
    tie = b.bitcast(b.or_(xi, yi) if is_min else b.and_(xi, yi), t)
    pick = b.select(b.fcmp_ordered("<" if is_min else ">", x, y), x, y)
    r = b.select(b.fcmp_ordered("==", x, y), tie, pick)
    r = b.select(b.fcmp_unordered("uno", y, y), x, r)
    return b.select(b.fcmp_unordered("uno", x, x), y, r)


def _bits(t: ir.Type) -> int:
    """Width of a floating-point LLVM type."""
    return {ir.HalfType: 16, ir.FloatType: 32, ir.DoubleType: 64}[type(t)]


def _minmax(is_min: bool):
    def run(em: Emitter, dt: DType, a: V, b: V) -> V:
        if dt.is_float:
            return narrow(em, fminmax(em, wide(em, a, dt), wide(em, b, dt), is_min=is_min), dt)
        bb = em.b
        cmp = bb.icmp_signed if dt.is_signed else bb.icmp_unsigned
        return bb.select(cmp("<" if is_min else ">", a, b), a, b)

    return run


minimum = _minmax(True)
maximum = _minmax(False)


def and_(em: Emitter, dt: DType, a: V, b: V) -> V:
    return em.b.and_(a, b)


def or_(em: Emitter, dt: DType, a: V, b: V) -> V:
    return em.b.or_(a, b)


def xor(em: Emitter, dt: DType, a: V, b: V) -> V:
    return em.b.xor(a, b)


def shl(em: Emitter, dt: DType, a: V, b: V) -> V:
    bb = em.b
    bad = bb.icmp_unsigned(">=", b, em.k(b, dt.bits))
    r = bb.shl(a, bb.select(bad, em.k(b, 0), b))
    return bb.select(bad, em.k(a, 0), r)


def shr(em: Emitter, dt: DType, a: V, b: V) -> V:
    bb = em.b
    bad = bb.icmp_unsigned(">=", b, em.k(b, dt.bits))
    if dt.is_signed:
        return bb.ashr(a, bb.select(bad, em.k(b, dt.bits - 1), b))
    r = bb.lshr(a, bb.select(bad, em.k(b, 0), b))
    return bb.select(bad, em.k(a, 0), r)


# ---------------------------------------------------------------- comparisons


def _compare(op: str):
    def run(em: Emitter, dt: DType | None, a: V, b: V) -> V:
        bb = em.b
        if dt is not None and dt.is_float:
            x, y = wide(em, a, dt), wide(em, b, dt)
            if op == "!=":
                return bb.fcmp_unordered("!=", x, y)
            return bb.fcmp_ordered(op, x, y)
        if dt is not None and dt.is_signed:
            return bb.icmp_signed(op, a, b)
        return bb.icmp_unsigned(op, a, b)  # unsigned ints, bool, pointers

    return run


eq = _compare("==")
ne = _compare("!=")
lt = _compare("<")
le = _compare("<=")
gt = _compare(">")
ge = _compare(">=")


# ---------------------------------------------------------------- unary


def neg(em: Emitter, dt: DType, a: V) -> V:
    if dt.is_float:
        bits = em.float_bits(a, dt)
        return em.float_from_bits(em.b.xor(bits, em.k(bits, 1 << (dt.bits - 1))), dt)
    return em.b.sub(em.k(a, 0), a)


def not_(em: Emitter, dt: DType, a: V) -> V:
    return em.b.xor(a, em.k(a, -1 if not dt.is_bool else 1))


def abs_(em: Emitter, dt: DType, a: V) -> V:
    if dt.is_float:
        bits = em.float_bits(a, dt)
        return em.float_from_bits(em.b.and_(bits, em.k(bits, (1 << (dt.bits - 1)) - 1)), dt)
    if dt.is_unsigned:
        return a
    bb = em.b
    return bb.select(bb.icmp_signed("<", a, em.k(a, 0)), bb.sub(em.k(a, 0), a), a)


def _math(fname: str):
    def run(em: Emitter, dt: DType, a: V) -> V:
        return narrow(em, em.math(fname, wide(em, a, dt)), dt)

    return run


def _intrinsic_unary(iname: str):
    def run(em: Emitter, dt: DType, a: V) -> V:
        x = wide(em, a, dt)
        return narrow(em, em.intrinsic(iname, x.type, [x], [x.type]), dt)

    return run


def _math_binary(fname: str):
    """A binary libdevice/libm function, e.g. ``atan2(a, b)`` (the angle of the point (b, a));
    f16/bf16 operands are computed in f32."""

    def run(em: Emitter, dt: DType, a: V, b: V) -> V:
        return narrow(em, em.math(fname, wide(em, a, dt), wide(em, b, dt)), dt)

    return run


sqrt = _intrinsic_unary("llvm.sqrt")
floor = _intrinsic_unary("llvm.floor")
ceil = _intrinsic_unary("llvm.ceil")
trunc = _intrinsic_unary("llvm.trunc")
rint = _intrinsic_unary("llvm.rint")  # the default rounding mode: to nearest even (PTX cvt.rni)
round_ = _intrinsic_unary("llvm.round")  # ties away from zero


def popc(em: Emitter, dt: DType, a: V) -> V:
    return em.intrinsic("llvm.ctpop", a.type, [a], [a.type])  # PTX popc


def clz(em: Emitter, dt: DType, a: V) -> V:
    return em.intrinsic("llvm.ctlz", a.type, [a, I1(0)], [a.type])  # defined at 0 (the width); PTX clz


def ffs(em: Emitter, dt: DType, a: V) -> V:
    """``cttz(a) + 1``, 0 for 0 (cttz is defined at 0 here: the width)."""
    tz = em.intrinsic("llvm.cttz", a.type, [a, I1(0)], [a.type])
    return em.b.select(em.b.icmp_unsigned("==", a, em.k(a, 0)), em.k(a, 0), em.b.add(tz, em.k(a, 1)))


def brev(em: Emitter, dt: DType, a: V) -> V:
    return em.intrinsic("llvm.bitreverse", a.type, [a], [a.type])  # PTX brev


def mulhi(em: Emitter, dt: DType, a: V, b: V) -> V:
    """The high half of the product in twice the width (PTX mul.hi)."""
    bb = em.b
    wide = em.like_type(a, ir.IntType(2 * dt.bits))
    ext = bb.sext if dt.is_signed else bb.zext
    p = bb.mul(ext(a, wide), ext(b, wide))
    return bb.trunc(bb.lshr(p, em.kt(a, ir.IntType(2 * dt.bits), dt.bits)), a.type)


# ---------------------------------------------------------------- ternary


def where(em: Emitter, dt: DType | None, c: V, a: V, b: V) -> V:
    return em.b.select(c, a, b)


def fma(em: Emitter, dt: DType, a: V, b: V, c: V) -> V:
    if not _half(dt):
        return em.intrinsic("llvm.fma", a.type, [a, b, c], [a.type])
    bb = em.b
    t64 = em.like_type(a, F64)
    x, y, z = (bb.fpext(em.ext_f32(v, dt), t64) for v in (a, b, c))
    p = bb.fmul(x, y)  # exact: 11- or 8-bit significands
    r = bb.fadd(p, z)
    # TwoSum error of r = p + z; round r to odd when inexact so one more rounding is exact-once
    bv = bb.fsub(r, p)
    err = bb.fadd(bb.fsub(p, bb.fsub(r, bv)), bb.fsub(z, bv))
    it = em.like_type(a, I64)
    rbits = bb.bitcast(r, it)
    even = bb.icmp_unsigned("==", bb.and_(rbits, em.k(rbits, 1)), em.k(rbits, 0))
    finite = bb.fcmp_ordered("<", em.intrinsic("llvm.fabs", t64, [r], [t64]), em.k(r, float("inf")))
    inexact = bb.fcmp_ordered("!=", err, em.k(err, 0.0))
    fix = bb.and_(bb.and_(even, finite), inexact)
    away = bb.icmp_unsigned("==", bb.fcmp_ordered(">", err, em.k(err, 0.0)), bb.fcmp_ordered(">", r, em.k(r, 0.0)))
    stepped = bb.select(away, bb.add(rbits, em.k(rbits, 1)), bb.sub(rbits, em.k(rbits, 1)))
    r = bb.bitcast(bb.select(fix, stepped, rbits), t64)
    return f64_to_half(em, r, dt)


# ---------------------------------------------------------------- conversions


def round_odd_f32(em: Emitter, v: V) -> V:
    """f64 -> f32 rounded to odd (truncate toward zero, set the last bit when inexact)."""
    bb = em.b
    t32 = em.like_type(v, F32)
    r = bb.fptrunc(v, t32)
    back = bb.fpext(r, v.type)
    inexact = bb.fcmp_ordered("!=", back, v)
    rb = bb.bitcast(r, em.like_type(v, I32))
    fabs = em.intrinsic("llvm.fabs", v.type, [back], [v.type])
    vabs = em.intrinsic("llvm.fabs", v.type, [v], [v.type])
    toward_zero = bb.select(bb.fcmp_ordered(">", fabs, vabs), bb.sub(rb, em.k(rb, 1)), rb)
    odd = bb.or_(toward_zero, em.k(rb, 1))
    return bb.bitcast(bb.select(inexact, odd, rb), t32)


def f64_to_half(em: Emitter, v: V, dt: DType) -> V:
    """f64 -> f16/bf16 with a single rounding."""
    return em.round_from_f32(round_odd_f32(em, v), dt)


def _int_to_f32_round_odd(em: Emitter, v: V, src: DType) -> V:
    """An integer (any width) -> f32 rounded to odd (exact for |v| < 2**24)."""
    bb = em.b
    t64 = em.like_type(v, I64)
    x = (bb.sext(v, t64) if src.is_signed else bb.zext(v, t64)) if src.bits < 64 else v
    if src.is_signed:
        negative = bb.icmp_signed("<", x, em.k(x, 0))
        m = bb.select(negative, bb.sub(em.k(x, 0), x), x)  # INT64_MIN -> 2**63 as unsigned
    else:
        negative = None
        m = x
    lz = em.intrinsic("llvm.ctlz", t64, [m, ir.Constant(I1, 0)], [t64])
    bitlen = bb.sub(em.k(m, 64), lz)
    s = bb.select(bb.icmp_unsigned(">", bitlen, em.k(m, 24)), bb.sub(bitlen, em.k(m, 24)), em.k(m, 0))
    t = bb.lshr(m, s)
    sticky = bb.icmp_unsigned("!=", bb.and_(m, bb.sub(bb.shl(em.k(m, 1), s), em.k(m, 1))), em.k(m, 0))
    t = bb.or_(t, bb.zext(sticky, t64))
    t32f = em.like_type(v, F32)
    mag = bb.uitofp(t, t32f)  # exact: t < 2**25
    scale = bb.bitcast(bb.shl(bb.add(bb.trunc(s, em.like_type(v, I32)), em.kt(v, I32, 127)), em.kt(v, I32, 23)), t32f)
    mag = bb.fmul(mag, scale)  # exact power-of-two scaling
    if negative is not None:
        mag = bb.select(negative, bb.fneg(mag), mag)
    return mag


def cast(em: Emitter, src: DType, dst: DType, v: V) -> V:
    """Value conversion ``src -> dst`` (see the module docstring for the rounding rules)."""
    bb = em.b
    if src == dst:
        return v
    if src.is_fp8 or dst.is_fp8:  # FP8 <-> float and FP8 <-> FP8 (the type rule refuses the rest)
        return cast_many(em, src, dst, [v])[0]
    rt = em.like_type(v, em.reg_type(dst))
    if dst.is_bool:
        if src.is_float:
            return bb.fcmp_unordered("!=", wide(em, v, src), em.k(wide(em, v, src), 0.0))
        return bb.icmp_unsigned("!=", v, em.k(v, 0))
    if src.is_bool:
        if dst.is_float:
            return narrow(em, bb.uitofp(v, em.like_type(v, F32 if dst.bits <= 32 else F64)), dst)
        return bb.zext(v, rt)
    if src.is_int and dst.is_int:
        if dst.bits < src.bits:
            return bb.trunc(v, rt)
        if dst.bits > src.bits:
            return bb.sext(v, rt) if src.is_signed else bb.zext(v, rt)
        return v
    if src.is_float and dst.is_int:
        x = wide(em, v, src)
        name = "llvm.fptosi.sat" if dst.is_signed else "llvm.fptoui.sat"
        return em.intrinsic(name, rt, [x], [rt, x.type])
    if src.is_int and dst.is_float:
        to = bb.sitofp if src.is_signed else bb.uitofp
        if dst.bits >= 32:
            return to(v, rt)
        if src.bits <= 16:
            return em.round_from_f32(to(v, em.like_type(v, F32)), dst)  # exact in f32, one rounding
        return em.round_from_f32(_int_to_f32_round_odd(em, v, src), dst)
    if src.is_float and dst.is_float:
        if dst == f64:
            return bb.fpext(wide(em, v, src), rt)
        if dst == f32:
            return em.ext_f32(v, src) if _half(src) else bb.fptrunc(v, rt)
        # dst is 16-bit
        if src == f64:
            return f64_to_half(em, v, dst)
        return em.round_from_f32(wide(em, v, src), dst)
    raise CodegenError(f"internal: no cast from {src} to {dst}")


def cast_many(em: Emitter, src: DType, dst: DType, vals: list[V]) -> list[V]:
    """:func:`cast` of several values at once: FP8 conversions on sm_90+ convert two per
    instruction (:mod:`eggpu.codegen.fp8`); everything else element by element."""
    if not (src.is_fp8 or dst.is_fp8) or src == dst:
        return [cast(em, src, dst, v) for v in vals]
    from . import fp8

    if dst.is_fp8:
        if src.is_fp8:
            x32 = fp8.from_fp8_many(em, vals, src, f32, lambda x, _: x)
        elif src == f64:
            x32 = [round_odd_f32(em, v) for v in vals]  # then one rounding to FP8: a single rounding of the f64
        else:
            x32 = [cast(em, src, f32, v) for v in vals]  # exact
        return fp8.to_fp8_many(em, x32, dst, src)
    return fp8.from_fp8_many(em, vals, src, dst, lambda x, d: cast(em, f32, d, x))  # exact


def bitcast(em: Emitter, src: DType, dst: DType, v: V) -> V:
    """Reinterpret the bits (equal widths)."""
    if src == dst:
        return v
    bits = em.float_bits(v, src) if src.is_float else v
    return em.float_from_bits(bits, dst) if dst.is_float else bits


def offset_i64(em: Emitter, dt: DType, v: V) -> V:
    """A pointer offset of integer dtype ``dt`` as i64 (sign- or zero-extended)."""
    t = em.like_type(v, I64)
    if dt.bits == 64:
        return v
    if isinstance(v, ir.Instruction) and v.opname == "select" and any(isinstance(o, ir.Constant) for o in v.operands[1:]):
        # instcombine widens ``sext(select(c, x, K))`` to ``select(c, sext(x), sext(K))``: two
        # 32-bit selects and a sign computation in SASS where selecting first and extending in
        # the address's wide multiply-add takes one. ``freeze`` (a no-op in code generation; the
        # select of defined values is defined) keeps the select narrow
        fr = ir.Instruction(em.b.block, v.type, "freeze", [v])
        em.b._insert(fr)
        v = fr
    return em.b.sext(v, t) if dt.is_signed else em.b.zext(v, t)


# ---------------------------------------------------------------- tables

BINARY: dict[str, Callable[..., V]] = {
    "add": add, "sub": sub, "mul": mul, "div": div, "rem": rem, "minimum": minimum, "maximum": maximum,
    "and": and_, "or": or_, "xor": xor, "shl": shl, "shr": shr, "mulhi": mulhi,
    "eq": eq, "ne": ne, "lt": lt, "le": le, "gt": gt, "ge": ge,
    # transcendental ops (the op table's TRANSCENDENTAL trait): a call of emitter._MATH's function
    **{name: _math_binary(name) for name in transcendental_ops(2)},
}
UNARY: dict[str, Callable[..., V]] = {
    "neg": neg, "not": not_, "abs": abs_, "sqrt": sqrt, "floor": floor, "ceil": ceil,
    "trunc": trunc, "rint": rint, "round": round_, "popc": popc, "clz": clz, "ffs": ffs, "brev": brev,
    **{name: _math(name) for name in transcendental_ops(1)},
}

__all__ = ["BINARY", "UNARY", "bitcast", "cast", "f64_to_half", "fma", "fminmax", "narrow", "offset_i64",
           "round_odd_f32", "where", "wide"]
