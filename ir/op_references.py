"""numpy reference semantics of the op table's ops (:data:`REFERENCES`, by op name).

:mod:`eggpu.ir.ops` gives each row with a reference a :class:`~eggpu.ir.ops.LazyReference` that
looks its function up here on its first call, so importing the op table (every compile does)
does not import numpy; running a reference (the interpreter, counterexample checks, tests) does.

Each reference is called as ``ref(attrs, *operands, dtype=element dtype of the first operand)``
on numpy arrays and returns the result array; edge cases follow the row's ``edge`` text and
:mod:`eggpu.ir.semantics` (the shared definitions the interpreter, the z3 encoding and the
lowering are tested against)."""

from __future__ import annotations

import numpy as np

from . import semantics as sem
from .dtypes import DType, numpy_dtype

fadd = sem.float_binary(np.add)
fsub = sem.float_binary(np.subtract)
fmul = sem.float_binary(np.multiply)
fdiv = sem.float_binary(np.divide)
frem = sem.float_binary(np.fmod)


def bin_by_kind(float_fn, int_fn=None, bool_fn=None):
    """Reference for a binary elementwise op dispatching on the dtype kind."""

    def ref(attrs, a, b, *, dtype: DType):
        if dtype.is_float:
            return float_fn(a, b, dtype)
        if dtype.is_bool:
            return bool_fn(a, b)
        with np.errstate(all="ignore"):
            return np.asarray(int_fn(a, b)).astype(a.dtype)

    return ref


def int_only(fn):
    def ref(attrs, a, b, *, dtype):
        if dtype.is_bool:
            return np.asarray(fn(a, b)).astype(bool)
        with np.errstate(all="ignore"):
            return np.asarray(fn(a, b)).astype(a.dtype)

    return ref


def cmp(fn):
    def ref(attrs, a, b, *, dtype):
        with np.errstate(all="ignore"):  # bf16 comparisons with NaN warn
            return np.asarray(fn(a, b)).astype(bool)

    return ref


def float_unary(fn, exact=False):
    lift = sem.float_unary_exact(fn) if exact else sem.float_unary_math(fn)

    def ref(attrs, a, *, dtype):
        return lift(a, dtype)

    return ref


def float_binary_math(fn):
    """Binary transcendental ops (atan2): computed in f64 and rounded once to the dtype."""

    def ref(attrs, a, b, *, dtype):
        with np.errstate(all="ignore"):
            r = fn(a.astype(np.float64), b.astype(np.float64))
            return sem.round_f64(np.asarray(r, dtype=np.float64), dtype)

    return ref


def int_unary(fn):
    """An integer bit function ``fn(a, dtype)`` (popc, clz, ffs, brev) as a reference."""

    def ref(attrs, a, *, dtype):
        return fn(a, dtype)

    return ref


def neg(attrs, a, *, dtype):
    if dtype.is_float:
        return sem.float_unary_exact(np.negative)(a, dtype)
    with np.errstate(all="ignore"):
        return (np.zeros_like(a) - a).astype(a.dtype)


def absolute(attrs, a, *, dtype):
    if dtype.is_float:
        return sem.float_unary_exact(np.abs)(a, dtype)
    if dtype.is_unsigned:
        return a.copy()
    with np.errstate(all="ignore"):
        return np.abs(a).astype(a.dtype)


def invert(attrs, a, *, dtype):
    return np.logical_not(a) if dtype.is_bool else np.invert(a)


def rsqrt(x):
    return 1.0 / np.sqrt(x)


def div_ref(attrs, a, b, *, dtype):
    if dtype.is_float:
        return fdiv(a, b, dtype)
    return sem.int_div(a, b, dtype)


def rem_ref(attrs, a, b, *, dtype):
    if dtype.is_float:
        return frem(a, b, dtype)
    return sem.int_rem(a, b, dtype)


def minmax(is_min):
    def ref(attrs, a, b, *, dtype):
        if dtype.is_float:
            return sem.fminmax(a, b, dtype, is_min=is_min)
        return (np.minimum if is_min else np.maximum)(a, b)

    return ref


def shl(attrs, a, b, *, dtype):
    return sem.shl(a, b, dtype)


def shr(attrs, a, b, *, dtype):
    return sem.shr(a, b, dtype)


def fma(attrs, a, b, c, *, dtype):
    return sem.fma(a, b, c, dtype)


def where(attrs, c, a, b, *, dtype):
    return np.where(c, a, b)


def cast(attrs, a, *, dtype):
    return sem.cast(a, dtype, attrs["dtype"])


def bitcast(attrs, a, *, dtype):
    return np.ascontiguousarray(a).reshape(-1).view(numpy_dtype(attrs["dtype"])).reshape(np.shape(a))


def splat(attrs, a, *, dtype):
    return np.broadcast_to(a, tuple(attrs["shape"])).copy()


def broadcast(attrs, a, *, dtype):
    return np.broadcast_to(a, tuple(attrs["shape"])).copy()


def expand_dims(attrs, a, *, dtype):
    return np.expand_dims(a, attrs["axis"])


def reshape(attrs, a, *, dtype):
    return np.reshape(a, tuple(attrs["shape"])).copy()


def trans(attrs, a, *, dtype):
    return np.ascontiguousarray(np.transpose(a, tuple(attrs["perm"])))


def reduce_sum(attrs, a, *, dtype):
    if dtype.is_float:
        acc = np.float64 if dtype.bits == 64 else np.float32
        # initial=-0.0 (the IEEE additive identity): a sum of only -0.0 stays -0.0
        with np.errstate(all="ignore"):
            r = np.sum(a.astype(acc), axis=attrs["axis"], initial=-0.0)
            return np.asarray(r).astype(numpy_dtype(dtype))
    with np.errstate(all="ignore"):
        return np.asarray(np.sum(a, axis=attrs["axis"], dtype=a.dtype))


def reduce_minmax(is_min):
    def ref(attrs, a, *, dtype):
        axis = attrs["axis"]
        if dtype.is_float:
            # minimumNumber/maximumNumber folded along the axis: fmin/fmax ignore NaN (all NaN
            # gives NaN); a zero result is -0.0 for min when any -0.0 is present, +0.0 for max
            # when any +0.0 is present.
            x = sem.quiet_nans(a.astype(np.float32) if dtype.bits == 16 else a)  # see quiet_nans
            r = np.asarray((np.fmin if is_min else np.fmax).reduce(x, axis=axis))
            zero = r == 0
            if np.any(zero):
                z = x == 0
                sign = np.signbit(x)
                if is_min:
                    neg = np.any(z & sign, axis=axis)
                else:
                    neg = ~np.any(z & ~sign, axis=axis)
                r = np.where(zero, np.where(neg, -0.0, 0.0).astype(r.dtype), r)
            return np.asarray(r).astype(numpy_dtype(dtype))
        return np.asarray((np.min if is_min else np.max)(a, axis=axis))

    return ref


def reduce_arg(is_min):
    def ref(attrs, a, *, dtype):
        axis = attrs["axis"]
        if dtype.is_float:
            # index of the first lane equal to the NaN-ignoring extreme (-0.0 ties +0.0);
            # an all-NaN slice matches nowhere and gives 0.
            x = sem.quiet_nans(a.astype(np.float64))
            m = (np.fmin if is_min else np.fmax).reduce(x, axis=axis, keepdims=True)
            return np.asarray(np.argmax(x == m, axis=axis)).astype(np.int32)
        return np.asarray((np.argmin if is_min else np.argmax)(a, axis=axis)).astype(np.int32)

    return ref


def gather(attrs, a, idx, *, dtype):
    axis = attrs["axis"]
    n = a.shape[axis]
    if idx.dtype.kind == "u":  # large unsigned indices must clamp high, not wrap negative in int64
        idx = np.minimum(idx, np.asarray(n - 1).astype(idx.dtype))
    i = np.clip(idx.astype(np.int64), 0, n - 1)
    return np.ascontiguousarray(np.take_along_axis(a, i, axis=axis))


def dot(attrs, a, b, *acc, dtype):
    if attrs.get("precision") == "tf32":
        a, b = sem.round_tf32(a), sem.round_tf32(b)
    if dtype.is_float:
        with np.errstate(all="ignore"):
            r = a.astype(np.float64) @ b.astype(np.float64)
            out = r.astype(np.float32)
            if acc:
                out = (out + acc[0]).astype(np.float32)
            return out
    with np.errstate(all="ignore"):
        r = a.astype(np.int64) @ b.astype(np.int64)
        if acc:
            r = r + acc[0]
        return r.astype(np.int32)


#: the reference of every op that has one, by op name (the op table's ``reference`` column)
def libdevice(attrs, *operands, dtype=None):
    """The ``libdevice`` op: ir/libdevice_refs.py (imported on first use)."""
    from .libdevice_refs import reference

    return reference(attrs, *operands, dtype=dtype)


REFERENCES = {
    "add": bin_by_kind(fadd, np.add),
    "sub": bin_by_kind(fsub, np.subtract),
    "mul": bin_by_kind(fmul, np.multiply),
    "div": div_ref,
    "rem": rem_ref,
    "minimum": minmax(True),
    "maximum": minmax(False),
    "and": int_only(np.bitwise_and),
    "or": int_only(np.bitwise_or),
    "xor": int_only(np.bitwise_xor),
    "shl": shl,
    "shr": shr,
    "eq": cmp(np.equal),
    "ne": cmp(np.not_equal),
    "lt": cmp(np.less),
    "le": cmp(np.less_equal),
    "gt": cmp(np.greater),
    "ge": cmp(np.greater_equal),
    "neg": neg,
    "not": invert,
    "abs": absolute,
    "exp": float_unary(np.exp),
    "exp2": float_unary(np.exp2),
    "log": float_unary(np.log),
    "log2": float_unary(np.log2),
    "sqrt": float_unary(np.sqrt, exact=True),
    "rsqrt": float_unary(rsqrt),
    "sin": float_unary(np.sin),
    "cos": float_unary(np.cos),
    "tanh": float_unary(np.tanh),
    "erf": float_unary(sem.erf),
    "asin": float_unary(np.arcsin),
    "acos": float_unary(np.arccos),
    "atan": float_unary(np.arctan),
    "sinh": float_unary(np.sinh),
    "cosh": float_unary(np.cosh),
    "asinh": float_unary(np.arcsinh),
    "acosh": float_unary(np.arccosh),
    "atanh": float_unary(np.arctanh),
    "tan": float_unary(np.tan),
    "log10": float_unary(np.log10),
    "log1p": float_unary(np.log1p),
    "expm1": float_unary(np.expm1),
    "exp10": float_unary(sem.exp10),
    "cbrt": float_unary(np.cbrt),
    "erfc": float_unary(sem.erfc),
    "lgamma": float_unary(sem.lgamma),
    "tgamma": float_unary(sem.tgamma),
    "atan2": float_binary_math(np.arctan2),
    "pow": float_binary_math(np.power),
    "hypot": float_binary_math(np.hypot),
    "floor": float_unary(np.floor, exact=True),
    "ceil": float_unary(np.ceil, exact=True),
    "trunc": float_unary(np.trunc, exact=True),
    "rint": float_unary(np.rint, exact=True),
    "round": float_unary(sem.round_half_away, exact=True),
    "popc": int_unary(sem.popc),
    "clz": int_unary(sem.clz),
    "ffs": int_unary(sem.ffs),
    "brev": int_unary(sem.brev),
    "mulhi": lambda attrs, a, b, *, dtype: sem.mulhi(a, b, dtype),
    "where": where,
    "libdevice": libdevice,
    "fma": fma,
    "cast": cast,
    "bitcast": bitcast,
    "splat": splat,
    "broadcast": broadcast,
    "expand_dims": expand_dims,
    "reshape": reshape,
    "trans": trans,
    "reduce_sum": reduce_sum,
    "reduce_max": reduce_minmax(False),
    "reduce_min": reduce_minmax(True),
    "reduce_argmax": reduce_arg(False),
    "reduce_argmin": reduce_arg(True),
    "gather": gather,
    "dot": dot,
}
