"""z3 encoding of the op table's lane-wise semantics (the meaning stated in ``eggpu.ir.semantics``).

One table, :data:`Z3_OPS`, keyed by op name. Each entry is an encoder

    ``fn(dtype, attrs, args, mode) -> Enc(value, defined)``

where ``dtype`` is the element dtype of the op's first operand (``where``: of its branches;
``addptr``: the pointee; leaves: the result dtype), ``args`` are z3 terms for the operands' lane
values, and ``defined`` is a z3 Bool that says where the op has a value (callers conjoin the
operands' own definedness).

**The IR is total** (``eggpu.ir.semantics`` and the op table's edge cases): there is no undefined
behaviour and no poison, so in mode :data:`EXACT` every op is defined on every input and the
encodings below are exactly the reference semantics:

* integer ``div``/``rem`` by zero give 0; signed ``INT_MIN / -1`` wraps to ``INT_MIN`` and
  ``INT_MIN % -1`` is 0 (z3's ``bvsdiv``/``bvsrem`` are total too, but with other values at 0:
  ``bvudiv x 0 = -1``, ``bvsrem x 0 = x`` — hence the explicit ``If``);
* ``shl`` and unsigned ``shr`` by an amount outside ``[0, bits)`` give 0, signed ``shr`` the
  sign fill (the amount has the shifted value's dtype; a negative signed amount is, unsigned, at
  least ``bits``) — exactly z3's ``bvshl``/``bvlshr``/``bvashr``.

Only mode :data:`REAL` (``fast_math``) has partial ops: there ``x / 0``, ``sqrt``/``log`` of
out-of-domain values and non-finite constants are undefined, because fast-math assumes finite,
in-domain values (the contract of ``fast_math=True``).

Everything else is defined. Representations (mode :data:`EXACT`):

* bool: z3 ``Bool``; integers: ``BitVec(width)`` with wrap-around; signedness chooses the
  comparison, division, remainder, ``shr`` (arithmetic vs logical), min/max and casts.
* floats: FP sorts ``Float16``, ``FPSort(8, 8)`` (bf16), ``Float32``, ``Float64``, RNE. Float
  ``minimum``/``maximum`` are IEEE-754-2019 minimumNumber/maximumNumber (NaN ignored, -0 < +0);
  comparisons are ordered except ``ne``; ``rem`` is C ``fmod`` (built from ``fpRem``); ``fma`` is
  one rounding; ``floor``/``ceil`` round to integral RTN/RTP; float->int casts truncate and
  saturate (NaN -> 0); int->float and float->float round RNE; x->bool is ``x != 0``.
* transcendental ops (exp, exp2, log, log2, rsqrt, sin, cos, tanh, erf, asin, acos, atan, sinh,
  cosh, asinh, acosh, atanh, tan, log10, log1p, expm1, exp10, cbrt, erfc, lgamma, tgamma, and the
  binary atan2) and ``libdevice`` calls (optimizer/z3_libdevice.py) are uninterpreted
  functions per dtype (per symbol), so rules over them can only be proved by structure.
* pointers: ``BitVec(64)`` byte addresses; ``addptr(p, off)`` is ``p + ext64(off) * itemsize``
  (sign- or zero-extended by the offset's signedness; pass ``attrs["offset_dtype"]``);
  ``int_to_ptr``/``ptr_to_int`` keep the 64 bits (identity).
* shape ops ``splat``, ``broadcast``, ``expand_dims``, ``reshape`` are lane-wise identities.
* block ops (``trans``, reductions, ``dot``, ``gather``) are NOT lane-wise: they are uninterpreted functions
  of their operand(s). The argument must stand for the WHOLE operand block (e.g. a fresh constant
  per structurally distinct operand), never for one lane's value — see :data:`BLOCK_OPS`.

Mode :data:`REAL` (``fast_math`` rules): floats are z3 ``Real``\\ s (finite, no NaN/inf/-0);
``x / y`` is defined when ``y != 0``, ``sqrt``/``log`` when the argument is positive
(non-negative for sqrt); exp/log/exp2/log2/sqrt are uninterpreted functions constrained by the
axioms of :func:`real_axioms`; other transcendental ops are uninterpreted.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import z3

from eggpu.ir import OPS, DType
from eggpu.ir.dtypes import BY_NAME, bool_, i32, round_float
from eggpu.ir.ops import Trait, transcendental_ops

from . import z3_bits, z3_libdevice

# SEMANTICS_VERSION / semantics_tag: the version of the meaning of these encodings, defined z3-free
# in .proof_versions (bump it there whenever an encoding changes what it says)
from .proof_versions import BITCAST_VERSION, SEMANTICS_VERSION, semantics_tag  # noqa: F401  (re-exported)
from .z3_floats import float_bits, float_to_int_sat, fp_sort  # noqa: F401  (re-exported)
from .z3_math import REAL_DOMAIN, REAL_DOMAIN2, ROUNDING, real_round

EXACT = "exact"
REAL = "real"
MODES = (EXACT, REAL)

#: ops the z3 encoding does not model, with the reason
NOT_ENCODED: dict[str, str] = {
    "load": "memory effect: an optimization boundary (a load's result is an opaque value)",
    **{name: "memory effect: an optimization boundary" for name in (
        "store", "atomic_add", "atomic_max", "atomic_min", "atomic_xchg", "atomic_cas", "atomic_and", "atomic_or",
        "atomic_xor")},
    "inline_asm": "opaque PTX assembly: an optimization boundary (its result is an opaque value)",
    "device_print": "debug output (an effect without a result): an optimization boundary",
    "device_assert": "debug check (an effect without a result): an optimization boundary",
    "for": "control flow: regions are optimized separately; results are opaque values",
    "if": "control flow: regions are optimized separately; results are opaque values",
    "while": "control flow: regions are optimized separately; results are opaque values",
    "yield": "control flow terminator",
}

#: ops whose lanes depend on other lanes of the operand: encoded as uninterpreted functions of a
#: whole-block stand-in (the caller passes one fresh value per distinct operand block)
BLOCK_OPS = frozenset(
    {"trans", "reduce_sum", "reduce_max", "reduce_min", "reduce_argmax", "reduce_argmin", "dot", "gather"}
)

#: shape ops that are identities on a lane's value
LANE_IDENTITY_OPS = frozenset({"splat", "broadcast", "expand_dims", "reshape"})

#: transcendental ops that are uninterpreted functions (in both modes): the op table's
#: ``TRANSCENDENTAL`` ops, in table order
UF_OPS = transcendental_ops()


class Enc(NamedTuple):
    """An encoded lane value and the condition under which the op is defined."""

    value: z3.ExprRef
    defined: z3.BoolRef


TRUE = z3.BoolVal(True)

def sort_of(dtype: DType | None, mode: str = EXACT) -> z3.SortRef:
    """The z3 sort of one lane of ``dtype`` (``None`` = pointer: ``BitVec(64)``)."""
    if dtype is None:
        return z3.BitVecSort(64)
    if dtype.is_bool:
        return z3.BoolSort()
    if dtype.is_int:
        return z3.BitVecSort(dtype.bits)
    if mode == REAL:
        return z3.RealSort()
    return fp_sort(dtype)


def var(name: str, dtype: DType | None, mode: str = EXACT) -> z3.ExprRef:
    """A free lane value named ``name`` (``dtype`` None = a pointer)."""
    return z3.Const(name, sort_of(dtype, mode))


def _rne() -> z3.FPRMRef:
    return z3.RNE()


# ------------------------------------------------------------------ constants


def const(value: Any, dtype: DType, mode: str = EXACT) -> Enc:
    """The lane value of constant ``value`` of ``dtype``: ints wrap to the width, floats round RNE.

    In REAL mode, NaN and infinities are undefined (fast-math assumes finite values)."""
    if dtype.is_bool:
        return Enc(z3.BoolVal(bool(value)), TRUE)
    if dtype.is_int:
        return Enc(z3.BitVecVal(int(value) % (1 << dtype.bits), dtype.bits), TRUE)
    v = float(value)
    if mode == REAL:
        if not math.isfinite(v):
            return Enc(z3.RealVal(0), z3.BoolVal(False))
        r = round_float(v, dtype)
        if not math.isfinite(r):
            return Enc(z3.RealVal(0), z3.BoolVal(False))
        from fractions import Fraction

        f = Fraction(r)
        return Enc(z3.RealVal(f"{f.numerator}/{f.denominator}"), TRUE)
    return Enc(fp_value(v, dtype), TRUE)


def fp_value(v: float, dtype: DType) -> z3.FPRef:
    """FP term for Python float ``v`` rounded (RNE) to ``dtype``; exact bits (keeps -0.0)."""
    (bits,) = struct.unpack("<Q", struct.pack("<d", float(v)))  # the float64's exact bits
    b64 = z3.BitVecVal(bits, 64)
    f64 = z3.fpBVToFP(b64, z3.Float64())
    if dtype.bits == 64:
        return f64
    return z3.fpFPToFP(_rne(), f64, fp_sort(dtype))


def from_python(value: Any, dtype: DType | None, mode: str = EXACT) -> z3.ExprRef:
    """A concrete lane value from a Python/numpy scalar already of ``dtype`` (exact, no rounding
    surprises: floats go through their bit pattern)."""
    if dtype is None:
        return z3.BitVecVal(int(value) % (1 << 64), 64)
    if dtype.is_float and mode == EXACT:
        import numpy as np  # a value already of a numpy dtype: numpy is loaded where this runs

        a = np.asarray(value, dtype=dtype.np)
        bits = int(a.view(np.dtype(f"u{a.dtype.itemsize}")))
        return z3.fpBVToFP(z3.BitVecVal(bits, dtype.bits), fp_sort(dtype))
    return const(value, dtype, mode).value


# ------------------------------------------------------------------ helpers


def _bits(dtype: DType) -> int:
    return dtype.bits


def _lt(dtype, a, b):
    if dtype.is_float:
        return a < b if z3.is_real(a) else z3.fpLT(a, b)
    return a < b if dtype.is_signed else z3.ULT(a, b)


def _le(dtype, a, b):
    if dtype.is_float:
        return a <= b if z3.is_real(a) else z3.fpLEQ(a, b)
    return a <= b if dtype.is_signed else z3.ULE(a, b)


def _is_real(mode):
    return mode == REAL


def uf(name: str, dtype: DType, mode: str, arity: int = 1, out: DType | None = None) -> z3.FuncDeclRef:
    """The uninterpreted function ``name`` over lanes of ``dtype`` (one per dtype and mode)."""
    s = sort_of(dtype, mode)
    o = sort_of(out, mode) if out is not None else s
    suffix = "R" if (mode == REAL and dtype.is_float) else dtype.name
    return z3.Function(f"{name}_{suffix}", *([s] * arity), o)


# ------------------------------------------------------------------ encoders


def _binary(int_fn, float_fn, real_fn=None, bool_fn=None):
    def enc(dtype, attrs, args, mode):
        a, b = args
        if dtype.is_bool:
            if bool_fn is None:
                raise _unsupported(dtype)
            return Enc(bool_fn(a, b), TRUE)
        if dtype.is_int:
            return Enc(int_fn(a, b, dtype), TRUE)
        if mode == REAL:
            return Enc((real_fn or float_fn)(a, b), TRUE)
        return Enc(float_fn(a, b), TRUE)

    return enc


def _unsupported(dtype):
    return ValueError(f"op not defined on {dtype}")


def _div(dtype, attrs, args, mode):
    a, b = args
    if dtype.is_int:
        q = a / b if dtype.is_signed else z3.UDiv(a, b)  # bvsdiv wraps INT_MIN / -1
        return Enc(z3.If(b == 0, z3.BitVecVal(0, dtype.bits), q), TRUE)
    if mode == REAL:
        return Enc(a / b, b != 0)
    return Enc(z3.fpDiv(_rne(), a, b), TRUE)


def _fmod(a: z3.FPRef, b: z3.FPRef) -> z3.FPRef:
    """C fmod from IEEE remainder: fix the sign of the result to the dividend's."""
    r = z3.fpRem(a, b)
    ab = z3.fpAbs(b)
    pos_fix = z3.And(z3.fpIsPositive(a), z3.fpIsNegative(r), z3.Not(z3.fpIsZero(r)))
    neg_fix = z3.And(z3.fpIsNegative(a), z3.fpIsPositive(r), z3.Not(z3.fpIsZero(r)))
    return z3.If(pos_fix, z3.fpAdd(_rne(), r, ab), z3.If(neg_fix, z3.fpSub(_rne(), r, ab), r))


def _rem(dtype, attrs, args, mode):
    a, b = args
    if dtype.is_int:
        r = z3.SRem(a, b) if dtype.is_signed else z3.URem(a, b)  # bvsrem INT_MIN % -1 = 0
        return Enc(z3.If(b == 0, z3.BitVecVal(0, dtype.bits), r), TRUE)
    if mode == REAL:
        return Enc(uf("fmod", dtype, mode, 2)(a, b), b != 0)
    return Enc(_fmod(a, b), TRUE)


def _fminmax(a, b, is_min):
    if is_min:
        tie = z3.If(z3.fpIsNegative(a), a, b)
        core = z3.If(z3.fpLT(a, b), a, z3.If(z3.fpLT(b, a), b, tie))
    else:
        tie = z3.If(z3.fpIsNegative(a), b, a)
        core = z3.If(z3.fpGT(a, b), a, z3.If(z3.fpGT(b, a), b, tie))
    return z3.If(z3.fpIsNaN(a), b, z3.If(z3.fpIsNaN(b), a, core))


def _minmax(is_min):
    def enc(dtype, attrs, args, mode):
        a, b = args
        if dtype.is_float and mode == EXACT:
            return Enc(_fminmax(a, b, is_min), TRUE)
        lt = _lt(dtype, a, b)
        return Enc(z3.If(lt, a, b) if is_min else z3.If(lt, b, a), TRUE)

    return enc


def _bitwise(bv, boolean):
    def enc(dtype, attrs, args, mode):
        a, b = args
        return Enc(boolean(a, b) if dtype.is_bool else bv(a, b), TRUE)

    return enc


def _shl(dtype, attrs, args, mode):
    a, b = args
    if z3.is_bv_value(b) and b.as_long() < b.size():
        # x << c is x * 2**c (mod 2**bits), encoded as that product, operands in the canonical
        # order translation validation gives a commutative op: an optimizer's mul(x, 8) ->
        # shl(x, 3) then yields the very same term, not an equation z3 has to prove (on index
        # arithmetic containing divisions it gave up: tutorial matmul, 10 s of timeouts)
        x, y = sorted((a, z3.BitVecVal(1 << b.as_long(), b.size())), key=lambda e: (e.hash(), e.get_id()))
        return Enc(x * y, TRUE)
    return Enc(a << b, TRUE)  # bvshl: amounts >= bits (unsigned) give 0, as the reference


def _shr(dtype, attrs, args, mode):
    a, b = args
    v = a >> b if dtype.is_signed else z3.LShR(a, b)  # bvashr: sign fill; bvlshr: 0
    return Enc(v, TRUE)


def _eq(dtype, attrs, args, mode):
    a, b = args
    if dtype.is_float and mode == EXACT:
        return Enc(z3.fpEQ(a, b), TRUE)
    return Enc(a == b, TRUE)


def _ne(dtype, attrs, args, mode):
    a, b = args
    if dtype.is_float and mode == EXACT:
        return Enc(z3.Not(z3.fpEQ(a, b)), TRUE)
    return Enc(a != b, TRUE)


def _cmp(fn):
    def enc(dtype, attrs, args, mode):
        return Enc(fn(dtype, *args), TRUE)

    return enc


def _neg(dtype, attrs, args, mode):
    (a,) = args
    if dtype.is_float and mode == EXACT:
        return Enc(z3.fpNeg(a), TRUE)
    return Enc(-a, TRUE)


def _abs(dtype, attrs, args, mode):
    (a,) = args
    if dtype.is_float:
        return Enc(z3.fpAbs(a) if mode == EXACT else z3.If(a < 0, -a, a), TRUE)
    if dtype.is_unsigned:
        return Enc(a, TRUE)
    return Enc(z3.If(a < 0, -a, a), TRUE)


def _not(dtype, attrs, args, mode):
    (a,) = args
    return Enc(z3.Not(a) if dtype.is_bool else ~a, TRUE)


def _sqrt(dtype, attrs, args, mode):
    (a,) = args
    if mode == REAL:
        return Enc(uf("sqrt", dtype, mode)(a), a >= 0)
    return Enc(z3.fpSqrt(_rne(), a), TRUE)


def _transcendental(name):
    def enc(dtype, attrs, args, mode):
        if len(args) == 2:  # atan2: real except at the origin; pow: for a positive base; hypot: total
            y, x = args
            defined = REAL_DOMAIN2[name](y, x) if mode == REAL and name in REAL_DOMAIN2 else TRUE
            return Enc(uf(name, dtype, mode, arity=2)(y, x), defined)
        (a,) = args
        if mode == REAL:
            if name in ("log", "log2"):
                return Enc(uf(name, dtype, mode)(a), a > 0)
            if name == "rsqrt":
                return Enc(1 / uf("sqrt", dtype, mode)(a), a > 0)
            if name in REAL_DOMAIN:  # outside the real domain the float op gives NaN
                return Enc(uf(name, dtype, mode)(a), REAL_DOMAIN[name](a))
        return Enc(uf(name, dtype, mode)(a), TRUE)

    return enc


def _round(rm_name):
    def enc(dtype, attrs, args, mode):
        (a,) = args
        if mode == REAL:
            return Enc(real_round(rm_name, a), TRUE)
        return Enc(z3.fpRoundToIntegral(ROUNDING[rm_name](), a), TRUE)

    return enc


def _bits(name):  # popc, clz, ffs, brev, mulhi: exact bit-vector terms (optimizer/z3_bits.py)
    if name == "mulhi":
        return lambda dtype, attrs, args, mode: Enc(z3_bits.mulhi(*args, signed=dtype.is_signed), TRUE)
    return lambda dtype, attrs, args, mode: Enc(z3_bits.UNARY[name](args[0]), TRUE)


def _where(dtype, attrs, args, mode):
    c, a, b = args
    return Enc(z3.If(c, a, b), TRUE)


def _fma(dtype, attrs, args, mode):
    a, b, c = args
    if mode == REAL:
        return Enc(a * b + c, TRUE)
    return Enc(z3.fpFMA(_rne(), a, b, c), TRUE)


def _int_to_real(x, src: DType):
    return z3.ToReal(z3.BV2Int(x, is_signed=src.is_signed))


def cast_value(x: z3.ExprRef, src: DType, dst: DType, mode: str = EXACT) -> z3.ExprRef:
    """``cast(x: src) -> dst`` per ir/semantics.py (see module docstring)."""
    if src == dst:
        return x
    if dst.is_bool:
        if src.is_bool:
            return x
        if src.is_int:
            return x != 0
        if mode == REAL:
            return x != 0
        return z3.Not(z3.fpIsZero(x))  # NaN -> True (NaN != 0)
    if src.is_bool:
        one, zero = const(1, dst, mode).value, const(0, dst, mode).value
        return z3.If(x, one, zero)
    if src.is_int and dst.is_int:
        if dst.bits == src.bits:
            return x
        if dst.bits < src.bits:
            return z3.Extract(dst.bits - 1, 0, x)
        ext = dst.bits - src.bits
        return z3.SignExt(ext, x) if src.is_signed else z3.ZeroExt(ext, x)
    if src.is_int and dst.is_float:
        if mode == REAL:
            return _int_to_real(x, src)
        if src.is_signed:
            return z3.fpSignedToFP(_rne(), x, fp_sort(dst))
        return z3.fpUnsignedToFP(_rne(), x, fp_sort(dst))
    if src.is_float and dst.is_float:
        if mode == REAL:
            return x
        return z3.fpFPToFP(_rne(), x, fp_sort(dst))
    # float -> int
    if mode == REAL:
        return uf(f"to_{dst.name}", src, mode, 1, dst)(x)
    return float_to_int_sat(x, src, dst)


def _cast(dtype, attrs, args, mode):
    (a,) = args
    return Enc(cast_value(a, dtype, attrs["dtype"], mode), TRUE)


def bitcast_value(x: z3.ExprRef, src: DType, dst: DType, mode: str = EXACT) -> z3.ExprRef:
    """Reinterpret bits. A float's bits are :func:`float_bits` (NaN payloads followed through
    ``neg``/``abs``/``bitcast``/``where``, otherwise unspecified)."""
    if src == dst:
        return x
    if mode == REAL and (src.is_float or dst.is_float):
        return uf(f"bitcast_{dst.name}", src, mode, 1, dst)(x)
    if src.is_int and dst.is_int:
        return x
    if src.is_float and dst.is_int:
        return float_bits(x)
    if src.is_int and dst.is_float:
        return z3.fpBVToFP(x, fp_sort(dst))
    # float <-> float of one width (f16 <-> bf16)
    return z3.fpBVToFP(float_bits(x), fp_sort(dst))


def _bitcast(dtype, attrs, args, mode):
    (a,) = args
    return Enc(bitcast_value(a, dtype, attrs["dtype"], mode), TRUE)


def _identity(dtype, attrs, args, mode):
    (a,) = args
    return Enc(a, TRUE)


def _addptr(dtype, attrs, args, mode):
    p, off = args
    odt: DType | None = attrs.get("offset_dtype")
    w = off.size()
    signed = odt.is_signed if odt is not None else True
    ext = off if w == 64 else (z3.SignExt(64 - w, off) if signed else z3.ZeroExt(64 - w, off))
    return Enc(p + ext * z3.BitVecVal(dtype.itemsize, 64), TRUE)


def _const(dtype, attrs, args, mode):
    return const(attrs["value"], attrs.get("dtype", dtype), mode)


def _leaf(name):
    def enc(dtype, attrs, args, mode):
        if name == "arange":
            return Enc(z3.BitVec(f"arange_{attrs['start']}_{attrs['end']}", 32), TRUE)
        return Enc(z3.BitVec(f"{name}_{attrs['axis']}", 32), TRUE)

    return enc


def leaf_facts(op: str, attrs: Mapping[str, Any], value: z3.ExprRef) -> z3.BoolRef:
    """What is known about a leaf's lane value: ``0 <= program_id(a) < num_programs(a)``,
    ``num_programs >= 1``, ``start <= arange < end``; True for other ops."""
    if op == "program_id":
        n = z3.BitVec(f"num_programs_{attrs['axis']}", 32)
        return z3.And(value >= 0, value < n, n >= 1)
    if op == "num_programs":
        return value >= 1
    if op == "arange":
        return z3.And(value >= attrs["start"], value < attrs["end"])
    return TRUE


def _block_uf(name):
    def enc(dtype, attrs, args, mode):
        if name == "dot":
            out = i32 if dtype.is_int else BY_NAME["f32"]
            # one function per precision: a TF32 dot is a different function of the same blocks
            prec = attrs.get("precision", "ieee")
            f = uf(f"dot{len(args)}" + ("" if prec == "ieee" else f"_{prec}"), dtype, mode, len(args), out)
            if len(args) == 3:  # accumulator lanes have the result sort
                f = z3.Function(f.name(), sort_of(dtype, mode), sort_of(dtype, mode), sort_of(out, mode),
                                sort_of(out, mode))
            return Enc(f(*args), TRUE)
        if name == "trans":
            return Enc(uf(f"trans_{','.join(map(str, attrs['perm']))}", dtype, mode)(*args), TRUE)
        if name == "gather":  # (source block, index block) -> lane of the source's sort
            s = sort_of(dtype, mode)
            f = z3.Function(f"gather_{attrs['axis']}_{dtype.name}_{args[1].sort()}", s, args[1].sort(), s)
            return Enc(f(*args), TRUE)
        out = i32 if name in ("reduce_argmax", "reduce_argmin") else dtype
        return Enc(uf(f"{name}_{attrs['axis']}", dtype, mode, 1, out)(*args), TRUE)

    return enc


Encoder = Callable[[DType, Mapping[str, Any], Sequence[z3.ExprRef], str], Enc]

Z3_OPS: dict[str, Encoder] = {
    "const": _const,
    "program_id": _leaf("program_id"),
    "num_programs": _leaf("num_programs"),
    "arange": _leaf("arange"),
    "add": _binary(lambda a, b, d: a + b, lambda a, b: z3.fpAdd(_rne(), a, b), lambda a, b: a + b),
    "sub": _binary(lambda a, b, d: a - b, lambda a, b: z3.fpSub(_rne(), a, b), lambda a, b: a - b),
    "mul": _binary(lambda a, b, d: a * b, lambda a, b: z3.fpMul(_rne(), a, b), lambda a, b: a * b),
    "div": _div,
    "rem": _rem,
    "minimum": _minmax(True),
    "maximum": _minmax(False),
    "and": _bitwise(lambda a, b: a & b, z3.And),
    "or": _bitwise(lambda a, b: a | b, z3.Or),
    "xor": _bitwise(lambda a, b: a ^ b, z3.Xor),
    "shl": _shl,
    "shr": _shr,
    "eq": _eq,
    "ne": _ne,
    "lt": _cmp(lambda d, a, b: _lt(d, a, b)),
    "le": _cmp(lambda d, a, b: _le(d, a, b)),
    "gt": _cmp(lambda d, a, b: _lt(d, b, a)),
    "ge": _cmp(lambda d, a, b: _le(d, b, a)),
    "neg": _neg,
    "not": _not,
    "abs": _abs,
    "sqrt": _sqrt,
    "floor": _round("floor"),
    "ceil": _round("ceil"),
    **{name: _bits(name) for name in (*z3_bits.UNARY, "mulhi")},
    "trunc": _round("trunc"),
    "rint": _round("rint"),
    "round": _round("round"),
    "where": _where,
    "fma": _fma,
    "cast": _cast,
    "bitcast": _bitcast,
    "splat": _identity,
    "broadcast": _identity,
    "expand_dims": _identity,
    "reshape": _identity,
    "trans": _block_uf("trans"),
    "addptr": _addptr,
    "int_to_ptr": _identity,  # pointers are 64-bit byte addresses: the move keeps the bits
    "ptr_to_int": _identity,
    **{name: _transcendental(name) for name in UF_OPS},
    "libdevice": lambda dtype, attrs, args, mode: Enc(z3_libdevice.call(attrs["symbol"], args, sort_of, mode), TRUE),
    **{name: _block_uf(name) for name in BLOCK_OPS if name != "trans"},
}


def result_dtype(op: str, dtype: DType, attrs: Mapping[str, Any]) -> DType | None:
    """Element dtype of the op's result given its dtype argument (None = pointer)."""
    o = OPS[op]
    if o.has(Trait.COMPARISON):
        return bool_
    if op in ("cast", "bitcast", "libdevice"):
        return z3_libdevice.result(attrs["symbol"]) if op == "libdevice" else attrs["dtype"]
    if op in ("addptr", "int_to_ptr"):
        return None
    if op == "ptr_to_int":
        return attrs["dtype"]
    if op in ("reduce_argmax", "reduce_argmin"):
        return i32
    if op == "dot":
        return i32 if dtype.is_int else BY_NAME["f32"]
    if op in ("program_id", "num_programs", "arange"):
        return i32
    return dtype


def encode(op: str, dtype: DType, attrs: Mapping[str, Any], args: Sequence[z3.ExprRef], mode: str = EXACT) -> Enc:
    """Encode one op application (see the module docstring for ``dtype`` and ``defined``)."""
    if op in NOT_ENCODED:
        raise ValueError(f"op {op!r} is not encoded: {NOT_ENCODED[op]}")
    return Z3_OPS[op](dtype, attrs, args, mode)


# ------------------------------------------------------------------ REAL-mode axioms


def real_axioms(formula: z3.ExprRef | None = None) -> list[z3.BoolRef]:
    """Axioms for the REAL-mode uninterpreted functions (one set shared by every float dtype,
    since REAL mode does not distinguish them):

    ``exp(a)*exp(b) = exp(a+b)``, ``exp(0) = 1``, ``exp(x) > 0``, ``log(exp(x)) = x``,
    ``exp(log(x)) = x`` for ``x > 0``, ``log(a*b) = log(a)+log(b)`` for ``a, b > 0``, the same for
    exp2/log2, ``sqrt(x) >= 0``, ``sqrt(x)*sqrt(x) = x`` for ``x >= 0``.

    With ``formula``, the axioms are instantiated on the applications that occur in it (ground
    instances: decidable and fast); without, they are returned as quantified formulas.
    """
    R = z3.RealSort()
    pairs = (("exp", "log"), ("exp2", "log2"))
    S = z3.Function("sqrt_R", R, R)
    if formula is None:
        a, b = z3.Reals("ax_a ax_b")
        out = []
        for e_name, l_name in pairs:
            E = z3.Function(f"{e_name}_R", R, R)
            L = z3.Function(f"{l_name}_R", R, R)
            out += [
                z3.ForAll([a, b], E(a) * E(b) == E(a + b), patterns=[z3.MultiPattern(E(a), E(b))]),
                E(z3.RealVal(0)) == 1,
                z3.ForAll([a], E(a) > 0, patterns=[E(a)]),
                z3.ForAll([a], L(E(a)) == a, patterns=[L(E(a))]),
                z3.ForAll([a], z3.Implies(a > 0, E(L(a)) == a), patterns=[E(L(a))]),
                z3.ForAll([a, b], z3.Implies(z3.And(a > 0, b > 0), L(a * b) == L(a) + L(b)), patterns=[L(a * b)]),
            ]
        out += [
            z3.ForAll([a], S(a) >= 0, patterns=[S(a)]),
            z3.ForAll([a], z3.Implies(a >= 0, S(a) * S(a) == a), patterns=[S(a)]),
        ]
        return out
    apps: dict[str, list[z3.ExprRef]] = {}
    seen: set[int] = set()

    def walk(e: z3.ExprRef) -> None:
        if e.get_id() in seen:
            return
        seen.add(e.get_id())
        if z3.is_app(e) and e.decl().kind() == z3.Z3_OP_UNINTERPRETED and e.num_args() == 1:
            apps.setdefault(e.decl().name(), []).append(e)
        for c in e.children():
            walk(c)

    walk(formula)
    out = []
    for e_name, l_name in pairs:
        E = z3.Function(f"{e_name}_R", R, R)
        L = z3.Function(f"{l_name}_R", R, R)
        es = apps.get(f"{e_name}_R", [])
        ls = apps.get(f"{l_name}_R", [])
        if es:
            out.append(E(z3.RealVal(0)) == 1)
        for x in es:
            arg = x.arg(0)
            out.append(x > 0)
            if z3.is_app(arg) and arg.decl().name() == f"{l_name}_R":
                out.append(z3.Implies(arg.arg(0) > 0, x == arg.arg(0)))
        for i, x in enumerate(es):
            for y in es[i:]:
                out.append(x * y == E(x.arg(0) + y.arg(0)))
        for x in ls:
            arg = x.arg(0)
            if z3.is_app(arg) and arg.decl().name() == f"{e_name}_R":
                out.append(x == arg.arg(0))
            if z3.is_mul(arg) and arg.num_args() == 2:
                p, q = arg.arg(0), arg.arg(1)
                out.append(z3.Implies(z3.And(p > 0, q > 0), x == L(p) + L(q)))
    for x in apps.get("sqrt_R", []):
        out += [x >= 0, z3.Implies(x.arg(0) >= 0, x * x == x.arg(0))]
    return out


# ------------------------------------------------------------------ concrete evaluation


def to_python(v: z3.ExprRef, dtype: DType | None) -> Any:
    """A simplified concrete z3 value back to Python (int, float, bool; NaN as float('nan'))."""
    v = z3.simplify(v)
    if dtype is None:
        return v.as_long()
    if dtype.is_bool:
        if z3.is_true(v):
            return True
        if z3.is_false(v):
            return False
        raise ValueError(f"not a concrete bool: {v}")
    if dtype.is_int:
        n = v.as_long()
        if dtype.is_signed and n >= 1 << (dtype.bits - 1):
            n -= 1 << dtype.bits
        return n
    if z3.is_real(v) or z3.is_int_value(v) or z3.is_rational_value(v):
        return float(v.as_fraction())
    if not isinstance(v, z3.FPNumRef):
        raise ValueError(f"not a concrete float: {v}")
    if v.isNaN():
        return float("nan")
    bits = z3.simplify(z3.fpToIEEEBV(v, v.ctx)).as_long()  # v may live in a solver session's context
    import numpy as np  # concrete counterexample values only, never on a compile's path

    arr = np.array(bits, dtype=np.dtype(f"u{dtype.bits // 8}"))
    return float(arr.view(dtype.np))


def eval_concrete(op: str, dtype: DType, attrs: Mapping[str, Any], *values: Any, mode: str = EXACT) -> Any:
    """Evaluate ``op`` on concrete lane values via z3 ``simplify``; ``None`` when undefined (only
    in mode :data:`REAL`: the IR itself is total).

    ``values`` are Python/numpy scalars of the operands' dtypes (``where``: a bool then two values
    of ``dtype``; ``addptr``: an int address then an int offset)."""
    o = OPS[op]
    args = []
    for i, v in enumerate(values):
        if op == "where" and i == 0:
            args.append(z3.BoolVal(bool(v)))
        elif op == "addptr":
            odt = attrs.get("offset_dtype") or BY_NAME["i64"]
            args.append(from_python(v, None if i == 0 else odt, mode))
        elif op == "ptr_to_int":
            args.append(from_python(v, None, mode))
        else:
            args.append(from_python(v, dtype, mode))
    if o.has(Trait.LEAF):
        args = []
    enc = encode(op, dtype, attrs, args, mode)
    d = z3.simplify(enc.defined)
    if z3.is_false(d):
        return None
    if not z3.is_true(d):
        raise ValueError(f"definedness of {op} did not simplify: {d}")
    return to_python(enc.value, result_dtype(op, dtype, attrs))


__all__ = [
    "BLOCK_OPS", "EXACT", "LANE_IDENTITY_OPS", "MODES", "NOT_ENCODED", "REAL", "SEMANTICS_VERSION", "semantics_tag", "float_bits", "UF_OPS",
    "Z3_OPS", "Enc",
    "bitcast_value", "cast_value", "const", "encode", "eval_concrete", "fp_sort", "fp_value", "from_python",
    "leaf_facts", "real_axioms", "result_dtype", "sort_of", "to_python", "uf", "var",
]
