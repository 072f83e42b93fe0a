"""The op table: the single source of truth for every IR operation.

Each :class:`OpDef` states an op's name, arity, traits, required attributes, which element
dtypes it accepts, its type rule, its numpy reference semantics (for elementwise ops) and a
one-line statement of its edge cases. The interpreter and printer use this table directly; the
egglog schema is generated from it; the z3 encoding and the LLVM lowering are tables keyed by op
name and a coverage test checks they cover every op here.

Conventions shared by all ops:

* Elementwise ops need operands of one type (same element dtype and shape); the frontend makes
  broadcasting and promotion explicit with ``splat``/``broadcast``/``cast``.
* Reductions remove their ``axis``; ``keep_dims`` is the frontend's ``expand_dims``.
* ``load``/``store``/``atomic_*`` take an optional trailing mask (and ``load`` an optional
  ``other``); masked-off lanes are neither read nor written.
* ``for``/``while``/``if`` own regions that end in ``yield``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import semantics as sem
from .dtypes import DType, bool_, f32, i32, numpy_dtype
from .errors import IRError
from .types import BlockType, PointerType

# Traits
PURE = "pure"  # no side effect; may be deduplicated, reordered, removed when unused
ELEMENTWISE = "elementwise"  # acts lane by lane on same-shaped operands
COMMUTATIVE = "commutative"
ASSOCIATIVE = "associative"  # for integers; floats only under fast_math
EFFECT = "effect"  # reads or writes memory; keeps program order
CONTROL = "control"  # owns regions
TERMINATOR = "terminator"
REDUCTION = "reduction"
LEAF = "leaf"  # no operands
SHAPE = "shape"  # changes shape or layout only
COMPARISON = "comparison"
TRANSCENDENTAL = "transcendental"

# Dtype families accepted by an op (checked on the element dtype of the first operand).
ANY = "any"
NUM = "num"  # ints and floats
INT = "int"  # ints (not bool)
INTBOOL = "int|bool"
FLOAT = "float"


@dataclass(frozen=True)
class OpDef:
    """One operation of the IR. ``arity`` is ``(min, max)`` operands; ``max`` None = variadic."""

    name: str
    arity: tuple[int, int | None]
    traits: frozenset[str]
    type_rule: Callable[[Sequence[BlockType], dict[str, Any]], tuple[BlockType, ...]]
    family: str = ANY
    attrs: tuple[str, ...] = ()
    reference: Callable[..., np.ndarray] | None = None
    edge_cases: str = ""
    doc: str = ""
    num_regions: int = 0
    optional_attrs: tuple[str, ...] = field(default=())

    def has(self, trait: str) -> bool:
        return trait in self.traits

    @property
    def is_pure(self) -> bool:
        return PURE in self.traits


def _fail(op: str, msg: str) -> IRError:
    return IRError(f"{op}: {msg}")


def _family_ok(family: str, t: BlockType) -> bool:
    e = t.elem
    if isinstance(e, PointerType):
        return family == ANY
    if family == ANY:
        return True
    if family == NUM:
        return e.is_int or e.is_float
    if family == INT:
        return e.is_int
    if family == INTBOOL:
        return e.is_int or e.is_bool
    if family == FLOAT:
        return e.is_float
    raise AssertionError(family)


# ---------------------------------------------------------------- type rules


def same_type(name: str):
    def rule(ts: Sequence[BlockType], attrs: dict[str, Any]) -> tuple[BlockType, ...]:
        for t in ts[1:]:
            if t != ts[0]:
                raise _fail(name, f"operands must have one type, got {', '.join(map(str, ts))}")
        return (ts[0],)

    return rule


def compare_type(name: str):
    def rule(ts, attrs):
        same_type(name)(ts, attrs)
        return (BlockType(bool_, ts[0].shape),)

    return rule


def where_type(ts, attrs):
    c, a, b = ts
    if c.elem != bool_:
        raise _fail("where", f"condition must be bool, got {c}")
    if a != b:
        raise _fail("where", f"branches must have one type, got {a} and {b}")
    if c.shape != a.shape:
        raise _fail("where", f"condition shape {c.shape} differs from value shape {a.shape}")
    return (a,)


def const_type(ts, attrs):
    dt = attrs["dtype"]
    if not isinstance(dt, DType):
        raise _fail("const", f"dtype attribute must be a DType, got {dt!r}")
    v = attrs["value"]
    if isinstance(v, bool):
        ok = dt.is_bool or dt.is_int
    elif isinstance(v, int):
        ok = (dt.is_int and dt.min <= v <= dt.max) or dt.is_float or (dt.is_bool and v in (0, 1))
    elif isinstance(v, float):
        ok = dt.is_float
    else:
        ok = False
    if not ok:
        raise _fail("const", f"value {v!r} is not a {dt} constant")
    return (BlockType(dt, ()),)


def index_type(name):
    def rule(ts, attrs):
        if attrs["axis"] not in (0, 1, 2):
            raise _fail(name, f"axis must be 0, 1 or 2, got {attrs['axis']}")
        return (BlockType(i32, ()),)

    return rule


def arange_type(ts, attrs):
    start, end = attrs["start"], attrs["end"]
    if not (isinstance(start, int) and isinstance(end, int)) or end <= start:
        raise _fail("arange", f"needs integer start < end, got start={start} end={end}")
    return (BlockType(i32, (end - start,)),)


def splat_type(ts, attrs):
    (t,) = ts
    if not t.is_scalar:
        raise _fail("splat", f"operand must be a scalar, got {t}")
    shape = tuple(attrs["shape"])
    if not shape or any((not isinstance(s, int)) or s < 1 for s in shape):
        raise _fail("splat", f"shape must be non-empty positive integers, got {shape}")
    return (BlockType(t.elem, shape),)


def broadcast_type(ts, attrs):
    (t,) = ts
    shape = tuple(attrs["shape"])
    if len(shape) != t.rank:
        raise _fail("broadcast", f"rank mismatch: {t} to shape {shape}")
    for s, d in zip(t.shape, shape):
        if s != d and s != 1:
            raise _fail("broadcast", f"cannot broadcast {t} to shape {shape}")
    return (BlockType(t.elem, shape),)


def expand_dims_type(ts, attrs):
    (t,) = ts
    axis = attrs["axis"]
    if not 0 <= axis <= t.rank:
        raise _fail("expand_dims", f"axis {axis} out of range for {t}")
    s = list(t.shape)
    s.insert(axis, 1)
    return (BlockType(t.elem, tuple(s)),)


def reshape_type(ts, attrs):
    (t,) = ts
    shape = tuple(attrs["shape"])
    n = 1
    for s in shape:
        n *= s
    if n != t.numel or not shape:
        raise _fail("reshape", f"cannot reshape {t} to shape {shape}")
    return (BlockType(t.elem, shape),)


def trans_type(ts, attrs):
    (t,) = ts
    perm = tuple(attrs["perm"])
    if sorted(perm) != list(range(t.rank)) or t.rank < 2:
        raise _fail("trans", f"perm {perm} is not a permutation of the axes of {t}")
    return (BlockType(t.elem, tuple(t.shape[p] for p in perm)),)


def cast_type(ts, attrs):
    (t,) = ts
    dt = attrs["dtype"]
    if t.is_pointer:
        raise _fail("cast", "cannot cast a pointer")
    return (BlockType(dt, t.shape),)


def bitcast_type(ts, attrs):
    (t,) = ts
    dt = attrs["dtype"]
    if t.is_pointer or t.dtype.bits != dt.bits:
        raise _fail("bitcast", f"bitcast needs equal widths, got {t.elem} to {dt}")
    return (BlockType(dt, t.shape),)


def addptr_type(ts, attrs):
    p, o = ts
    if not p.is_pointer:
        raise _fail("addptr", f"first operand must be a pointer, got {p}")
    if not (isinstance(o.elem, DType) and o.elem.is_int):
        raise _fail("addptr", f"offset must be an integer, got {o}")
    if p.shape != o.shape:
        raise _fail("addptr", f"pointer shape {p.shape} differs from offset shape {o.shape}")
    return (p,)


def gather_type(ts, attrs):
    src, idx = ts
    axis = attrs["axis"]
    if src.is_pointer:
        raise _fail("gather", f"cannot gather pointers, got {src}")
    if not (isinstance(idx.elem, DType) and idx.elem.is_int):
        raise _fail("gather", f"index must be an integer block, got {idx}")
    if src.rank == 0 or idx.rank != src.rank or not (isinstance(axis, int) and 0 <= axis < src.rank):
        raise _fail("gather", f"needs a source and an index of one rank and an axis in range, got {src}, {idx}, "
                              f"axis={axis}")
    for d, (s, i) in enumerate(zip(src.shape, idx.shape)):
        if d != axis and s != i:
            raise _fail("gather", f"index shape {idx.shape} must equal the source shape {src.shape} except "
                                  f"along axis {axis}")
    return (BlockType(src.elem, idx.shape),)


def reduce_type(name, index_result=False):
    def rule(ts, attrs):
        (t,) = ts
        axis = attrs["axis"]
        if t.is_scalar or not 0 <= axis < t.rank:
            raise _fail(name, f"axis {axis} out of range for {t}")
        shape = t.shape[:axis] + t.shape[axis + 1 :]
        return (BlockType(i32 if index_result else t.elem, shape),)

    return rule


def dot_type(ts, attrs):
    a, b = ts[0], ts[1]
    if a.rank != 2 or b.rank != 2 or a.shape[1] != b.shape[0]:
        raise _fail("dot", f"needs [M,K] x [K,N] blocks, got {a} and {b}")
    if a.elem != b.elem:
        raise _fail("dot", f"operands must share a dtype, got {a.elem} and {b.elem}")
    acc_dt = f32 if a.dtype.is_float else i32
    out = BlockType(acc_dt, (a.shape[0], b.shape[1]))
    if len(ts) == 3 and ts[2] != out:
        raise _fail("dot", f"accumulator must be {out}, got {ts[2]}")
    return (out,)


def _check_mask(name, p, m):
    if m.elem != bool_ or m.shape != p.shape:
        raise _fail(name, f"mask must be bool with the pointer's shape {p.shape}, got {m}")


def load_type(ts, attrs):
    p = ts[0]
    if not p.is_pointer:
        raise _fail("load", f"operand must be a pointer, got {p}")
    out = BlockType(p.dtype, p.shape)
    if len(ts) >= 2:
        _check_mask("load", p, ts[1])
    if len(ts) == 3 and ts[2] != out:
        raise _fail("load", f"other must be {out}, got {ts[2]}")
    return (out,)


def store_type(ts, attrs):
    p, v = ts[0], ts[1]
    if not p.is_pointer:
        raise _fail("store", f"first operand must be a pointer, got {p}")
    if v != BlockType(p.dtype, p.shape):
        raise _fail("store", f"value must be {BlockType(p.dtype, p.shape)}, got {v}")
    if len(ts) == 3:
        _check_mask("store", p, ts[2])
    return ()


def atomic_type(name):
    def rule(ts, attrs):
        p, v = ts[0], ts[1]
        if not p.is_pointer:
            raise _fail(name, f"first operand must be a pointer, got {p}")
        if v != BlockType(p.dtype, p.shape):
            raise _fail(name, f"value must be {BlockType(p.dtype, p.shape)}, got {v}")
        if len(ts) == 3:
            _check_mask(name, p, ts[2])
        return (v,)

    return rule


def cas_type(ts, attrs):
    p, c, v = ts
    out = BlockType(p.dtype, p.shape) if p.is_pointer else None
    if out is None or c != out or v != out:
        raise _fail("atomic_cas", f"needs pointer, compare and value of one element type, got {ts}")
    return (out,)


def no_check(ts, attrs):  # for/if/yield: checked structurally by the verifier
    return ()


# ---------------------------------------------------------------- references


def _bin_by_kind(float_fn, int_fn=None, bool_fn=None):
    """Reference for a binary elementwise op dispatching on the dtype kind."""

    def ref(attrs, a, b, *, dtype: DType):
        if dtype.is_float:
            return float_fn(a, b, dtype)
        if dtype.is_bool:
            return bool_fn(a, b)
        with np.errstate(all="ignore"):
            return np.asarray(int_fn(a, b)).astype(a.dtype)

    return ref


def _int_only(fn):
    def ref(attrs, a, b, *, dtype):
        if dtype.is_bool:
            return np.asarray(fn(a, b)).astype(bool)
        with np.errstate(all="ignore"):
            return np.asarray(fn(a, b)).astype(a.dtype)

    return ref


def _cmp(fn):
    def ref(attrs, a, b, *, dtype):
        with np.errstate(all="ignore"):  # bf16 comparisons with NaN warn
            return np.asarray(fn(a, b)).astype(bool)

    return ref


def _float_unary(fn, exact=False):
    lift = sem.float_unary_exact(fn) if exact else sem.float_unary_math(fn)

    def ref(attrs, a, *, dtype):
        return lift(a, dtype)

    return ref


def _neg(attrs, a, *, dtype):
    if dtype.is_float:
        return sem.float_unary_exact(np.negative)(a, dtype)
    with np.errstate(all="ignore"):
        return (np.zeros_like(a) - a).astype(a.dtype)


def _abs(attrs, a, *, dtype):
    if dtype.is_float:
        return sem.float_unary_exact(np.abs)(a, dtype)
    if dtype.is_unsigned:
        return a.copy()
    with np.errstate(all="ignore"):
        return np.abs(a).astype(a.dtype)


def _not(attrs, a, *, dtype):
    return np.logical_not(a) if dtype.is_bool else np.invert(a)


def _rsqrt(x):
    return 1.0 / np.sqrt(x)


# ---------------------------------------------------------------- the table


def _op(name, arity, traits, rule, family=ANY, attrs=(), reference=None, edge="", doc="", regions=0, optional=()):
    return OpDef(name, arity, frozenset(traits), rule, family, tuple(attrs), reference, edge, doc, regions, tuple(optional))


_EW = (PURE, ELEMENTWISE)
_EW2 = (PURE, ELEMENTWISE, COMMUTATIVE)

_fadd = sem.float_binary(np.add)
_fsub = sem.float_binary(np.subtract)
_fmul = sem.float_binary(np.multiply)
_fdiv = sem.float_binary(np.divide)
_frem = sem.float_binary(np.fmod)

OPS_LIST: list[OpDef] = [
    # leaves
    _op("const", (0, 0), (PURE, LEAF), const_type, attrs=("value", "dtype"),
        edge="value is a Python int/float/bool representable in dtype (floats rounded RNE; NaN/inf allowed)",
        doc="a scalar constant"),
    _op("program_id", (0, 0), (PURE, LEAF), index_type("program_id"), attrs=("axis",),
        edge="0 <= program_id(a) < num_programs(a)", doc="index of this program along a grid axis (i32)"),
    _op("num_programs", (0, 0), (PURE, LEAF), index_type("num_programs"), attrs=("axis",),
        edge=">= 1", doc="grid size along an axis (i32)"),
    _op("arange", (0, 0), (PURE, LEAF), arange_type, attrs=("start", "end"),
        edge="i32 block [start, end); end - start is the block size", doc="the lane indices start..end-1"),
    # arithmetic
    _op("add", (2, 2), _EW2 + (ASSOCIATIVE,), same_type("add"), NUM,
        reference=_bin_by_kind(_fadd, np.add), edge="ints wrap; floats IEEE RNE", doc="a + b"),
    _op("sub", (2, 2), _EW, same_type("sub"), NUM,
        reference=_bin_by_kind(_fsub, np.subtract), edge="ints wrap; floats IEEE RNE", doc="a - b"),
    _op("mul", (2, 2), _EW2 + (ASSOCIATIVE,), same_type("mul"), NUM,
        reference=_bin_by_kind(_fmul, np.multiply), edge="ints wrap (low bits of the product)", doc="a * b"),
    _op("div", (2, 2), _EW, same_type("div"), NUM,
        edge="ints truncate toward zero (sdiv/udiv); x/0 = 0; INT_MIN/-1 wraps to INT_MIN; floats IEEE",
        doc="a / b"),
    _op("rem", (2, 2), _EW, same_type("rem"), NUM,
        edge="ints: sign of the dividend (srem/urem); x%0 = 0; INT_MIN%-1 = 0; floats: C fmod",
        doc="remainder of truncating division"),
    _op("minimum", (2, 2), _EW2 + (ASSOCIATIVE,), same_type("minimum"), NUM,
        edge="floats: NaN ignored unless both NaN; -0.0 < +0.0 (IEEE-754-2019 minimumNumber)", doc="min(a, b)"),
    _op("maximum", (2, 2), _EW2 + (ASSOCIATIVE,), same_type("maximum"), NUM,
        edge="floats: NaN ignored unless both NaN; -0.0 < +0.0 (IEEE-754-2019 maximumNumber)", doc="max(a, b)"),
    _op("and", (2, 2), _EW2 + (ASSOCIATIVE,), same_type("and"), INTBOOL,
        reference=_int_only(np.bitwise_and), edge="bitwise; logical on bool", doc="a & b"),
    _op("or", (2, 2), _EW2 + (ASSOCIATIVE,), same_type("or"), INTBOOL,
        reference=_int_only(np.bitwise_or), edge="bitwise; logical on bool", doc="a | b"),
    _op("xor", (2, 2), _EW2 + (ASSOCIATIVE,), same_type("xor"), INTBOOL,
        reference=_int_only(np.bitwise_xor), edge="bitwise; logical on bool", doc="a ^ b"),
    _op("shl", (2, 2), _EW, same_type("shl"), INT,
        edge="shift amount outside [0, bits) (negative included) gives 0", doc="a << b"),
    _op("shr", (2, 2), _EW, same_type("shr"), INT,
        edge="arithmetic for signed, logical for unsigned; amount outside [0, bits) (negative included) gives 0, or the sign fill when signed",
        doc="a >> b"),
    # comparisons
    _op("eq", (2, 2), _EW2 + (COMPARISON,), compare_type("eq"), ANY, reference=_cmp(np.equal),
        edge="floats ordered: NaN == x is false; -0.0 == +0.0", doc="a == b"),
    _op("ne", (2, 2), _EW2 + (COMPARISON,), compare_type("ne"), ANY, reference=_cmp(np.not_equal),
        edge="floats unordered: NaN != x is true", doc="a != b"),
    _op("lt", (2, 2), _EW + (COMPARISON,), compare_type("lt"), NUM, reference=_cmp(np.less),
        edge="floats ordered (false on NaN); ints by signedness", doc="a < b"),
    _op("le", (2, 2), _EW + (COMPARISON,), compare_type("le"), NUM, reference=_cmp(np.less_equal),
        edge="floats ordered (false on NaN); ints by signedness", doc="a <= b"),
    _op("gt", (2, 2), _EW + (COMPARISON,), compare_type("gt"), NUM, reference=_cmp(np.greater),
        edge="floats ordered (false on NaN); ints by signedness", doc="a > b"),
    _op("ge", (2, 2), _EW + (COMPARISON,), compare_type("ge"), NUM, reference=_cmp(np.greater_equal),
        edge="floats ordered (false on NaN); ints by signedness", doc="a >= b"),
    # unary
    _op("neg", (1, 1), _EW, same_type("neg"), NUM, reference=_neg,
        edge="ints wrap (-INT_MIN == INT_MIN; unsigned: 0 - x); floats flip the sign bit (also of NaN, 0)", doc="-a"),
    _op("not", (1, 1), _EW, same_type("not"), INTBOOL, reference=_not,
        edge="bitwise complement; logical not on bool", doc="~a"),
    _op("abs", (1, 1), _EW, same_type("abs"), NUM, reference=_abs,
        edge="abs(INT_MIN) == INT_MIN; unsigned identity; floats clear the sign bit", doc="|a|"),
    _op("exp", (1, 1), _EW + (TRANSCENDENTAL,), same_type("exp"), FLOAT, reference=_float_unary(np.exp),
        edge="overflow gives +inf; libdevice/libm accuracy (a few ulp)", doc="e**a"),
    _op("exp2", (1, 1), _EW + (TRANSCENDENTAL,), same_type("exp2"), FLOAT, reference=_float_unary(np.exp2),
        edge="overflow gives +inf", doc="2**a"),
    _op("log", (1, 1), _EW + (TRANSCENDENTAL,), same_type("log"), FLOAT, reference=_float_unary(np.log),
        edge="log(0) = -inf; log(<0) = NaN", doc="natural log"),
    _op("log2", (1, 1), _EW + (TRANSCENDENTAL,), same_type("log2"), FLOAT, reference=_float_unary(np.log2),
        edge="log2(0) = -inf; log2(<0) = NaN", doc="base-2 log"),
    _op("sqrt", (1, 1), _EW, same_type("sqrt"), FLOAT, reference=_float_unary(np.sqrt, exact=True),
        edge="correctly rounded; sqrt(-0.0) = -0.0; sqrt(<0) = NaN", doc="square root"),
    _op("rsqrt", (1, 1), _EW + (TRANSCENDENTAL,), same_type("rsqrt"), FLOAT, reference=_float_unary(_rsqrt),
        edge="rsqrt(0) = +inf; approximate on GPUs (libdevice)", doc="1/sqrt(a)"),
    _op("sin", (1, 1), _EW + (TRANSCENDENTAL,), same_type("sin"), FLOAT, reference=_float_unary(np.sin),
        edge="sin(inf) = NaN", doc="sine"),
    _op("cos", (1, 1), _EW + (TRANSCENDENTAL,), same_type("cos"), FLOAT, reference=_float_unary(np.cos),
        edge="cos(inf) = NaN", doc="cosine"),
    _op("tanh", (1, 1), _EW + (TRANSCENDENTAL,), same_type("tanh"), FLOAT, reference=_float_unary(np.tanh),
        edge="saturates to +-1", doc="hyperbolic tangent"),
    _op("erf", (1, 1), _EW + (TRANSCENDENTAL,), same_type("erf"), FLOAT, reference=_float_unary(sem.erf),
        edge="saturates to +-1", doc="error function"),
    _op("floor", (1, 1), _EW, same_type("floor"), FLOAT, reference=_float_unary(np.floor, exact=True),
        edge="exact; keeps -0.0, NaN, inf", doc="round toward -inf"),
    _op("ceil", (1, 1), _EW, same_type("ceil"), FLOAT, reference=_float_unary(np.ceil, exact=True),
        edge="exact; keeps -0.0, NaN, inf", doc="round toward +inf"),
    # ternary
    _op("where", (3, 3), (PURE, ELEMENTWISE), where_type, ANY,
        edge="both branches are computed (no short circuit); lanes picked by cond", doc="cond ? a : b"),
    _op("fma", (3, 3), _EW, same_type("fma"), FLOAT,
        edge="a*b+c rounded once (reference: exact for f64, via f64 for narrower dtypes)", doc="fused multiply-add"),
    # conversions
    _op("cast", (1, 1), (PURE, ELEMENTWISE), cast_type, ANY, attrs=("dtype",),
        edge="int->int wraps/extends by source signedness; float->int truncates and saturates (NaN -> 0); "
        "int->float and float->float RNE; x->bool is x != 0",
        doc="value conversion"),
    _op("bitcast", (1, 1), (PURE, ELEMENTWISE), bitcast_type, ANY, attrs=("dtype",),
        edge="reinterprets the bits; widths must match", doc="bit reinterpretation"),
    # shapes and pointers
    _op("splat", (1, 1), (PURE, SHAPE), splat_type, ANY, attrs=("shape",),
        edge="every lane holds the scalar", doc="scalar -> block"),
    _op("broadcast", (1, 1), (PURE, SHAPE), broadcast_type, ANY, attrs=("shape",),
        edge="dims of size 1 are repeated; ranks must match", doc="expand size-1 dims"),
    _op("expand_dims", (1, 1), (PURE, SHAPE), expand_dims_type, ANY, attrs=("axis",),
        edge="inserts a dim of size 1 (x[:, None])", doc="add a unit axis"),
    _op("reshape", (1, 1), (PURE, SHAPE), reshape_type, ANY, attrs=("shape",),
        edge="row-major; element count must match", doc="reshape a block"),
    _op("trans", (1, 1), (PURE, SHAPE), trans_type, ANY, attrs=("perm",),
        edge="permutes axes", doc="transpose"),
    _op("addptr", (2, 2), (PURE, ELEMENTWISE), addptr_type, ANY,
        edge="offset counts elements (not bytes); any integer dtype, sign-extended (zero-extended if unsigned) to 64 bits",
        doc="pointer + offset"),
    # reductions
    _op("reduce_sum", (1, 1), (PURE, REDUCTION), reduce_type("reduce_sum"), NUM, attrs=("axis",),
        edge="ints wrap; f16/bf16 accumulate in f32; float order unspecified", doc="sum along axis"),
    _op("reduce_max", (1, 1), (PURE, REDUCTION), reduce_type("reduce_max"), NUM, attrs=("axis",),
        edge="as maximum: NaN ignored unless all NaN", doc="max along axis"),
    _op("reduce_min", (1, 1), (PURE, REDUCTION), reduce_type("reduce_min"), NUM, attrs=("axis",),
        edge="as minimum: NaN ignored unless all NaN", doc="min along axis"),
    _op("reduce_argmax", (1, 1), (PURE, REDUCTION), reduce_type("reduce_argmax", True), NUM, attrs=("axis",),
        edge="i32 index of the first maximum; NaN ignored (all NaN -> 0)", doc="argmax along axis"),
    _op("reduce_argmin", (1, 1), (PURE, REDUCTION), reduce_type("reduce_argmin", True), NUM, attrs=("axis",),
        edge="i32 index of the first minimum; NaN ignored (all NaN -> 0)", doc="argmin along axis"),
    _op("gather", (2, 2), (PURE,), gather_type, ANY, attrs=("axis",),
        edge="result[c] = src[c with c[axis] = index[c]]; an index outside [0, n) is clamped into it",
        doc="gather along an axis"),
    _op("dot", (2, 3), (PURE,), dot_type, NUM,
        edge="[M,K]x[K,N]; floats accumulate in f32 (ints in i32); optional accumulator added", doc="matrix product"),
    # memory
    _op("load", (1, 3), (EFFECT,), load_type, ANY,
        edge="masked-off lanes are not read and take `other` (0 without other)",
        doc="load(ptr, mask?, other?)"),
    _op("store", (2, 3), (EFFECT,), store_type, ANY, edge="masked-off lanes are not written", doc="store(ptr, value, mask?)"),
    _op("atomic_add", (2, 3), (EFFECT,), atomic_type("atomic_add"), NUM,
        edge="returns the old value; relaxed order, device scope; masked lanes untouched (old value 0)",
        doc="*p += v"),
    _op("atomic_max", (2, 3), (EFFECT,), atomic_type("atomic_max"), NUM, edge="returns the old value", doc="*p = max(*p, v)"),
    _op("atomic_min", (2, 3), (EFFECT,), atomic_type("atomic_min"), NUM, edge="returns the old value", doc="*p = min(*p, v)"),
    _op("atomic_xchg", (2, 3), (EFFECT,), atomic_type("atomic_xchg"), ANY, edge="returns the old value", doc="*p = v"),
    _op("atomic_cas", (3, 3), (EFFECT,), cas_type, INTBOOL,
        edge="returns the old value; writes v where *p == cmp", doc="compare and swap"),
    # control flow
    _op("for", (3, None), (CONTROL,), no_check, ANY, regions=1,
        edge="operands lo, hi, step (i32 scalars), then initial carried values; body args (iv, carried...); "
        "runs like Python range(lo, hi, step); step == 0 is undefined",
        doc="counted loop with carried values"),
    _op("while", (0, None), (CONTROL,), no_check, ANY, regions=2,
        edge="operands are the initial carried values; region 0 (args: carried) yields the bool scalar "
        "condition, region 1 (args: carried) yields the next carried values; results are the carried "
        "values when the condition is first false (a loop that never ends does not return)",
        doc="loop with a runtime condition and carried values"),
    _op("if", (1, 1), (CONTROL,), no_check, ANY, regions=2,
        edge="condition is a bool scalar; both regions yield the results' types", doc="two-way branch"),
    _op("yield", (0, None), (TERMINATOR,), no_check, ANY, edge="ends a region of for/while/if", doc="region results"),
]

def _div_ref(attrs, a, b, *, dtype):
    if dtype.is_float:
        return _fdiv(a, b, dtype)
    return sem.int_div(a, b, dtype)


def _rem_ref(attrs, a, b, *, dtype):
    if dtype.is_float:
        return _frem(a, b, dtype)
    return sem.int_rem(a, b, dtype)


def _minmax(is_min):
    def ref(attrs, a, b, *, dtype):
        if dtype.is_float:
            return sem.fminmax(a, b, dtype, is_min=is_min)
        return (np.minimum if is_min else np.maximum)(a, b)

    return ref


def _shl(attrs, a, b, *, dtype):
    return sem.shl(a, b, dtype)


def _shr(attrs, a, b, *, dtype):
    return sem.shr(a, b, dtype)


def _fma(attrs, a, b, c, *, dtype):
    return sem.fma(a, b, c, dtype)


def _where(attrs, c, a, b, *, dtype):
    return np.where(c, a, b)


def _cast(attrs, a, *, dtype):
    return sem.cast(a, dtype, attrs["dtype"])


def _bitcast(attrs, a, *, dtype):
    return np.ascontiguousarray(a).reshape(-1).view(numpy_dtype(attrs["dtype"])).reshape(np.shape(a))


def _splat(attrs, a, *, dtype):
    return np.broadcast_to(a, tuple(attrs["shape"])).copy()


def _broadcast(attrs, a, *, dtype):
    return np.broadcast_to(a, tuple(attrs["shape"])).copy()


def _expand_dims(attrs, a, *, dtype):
    return np.expand_dims(a, attrs["axis"])


def _reshape(attrs, a, *, dtype):
    return np.reshape(a, tuple(attrs["shape"])).copy()


def _trans(attrs, a, *, dtype):
    return np.ascontiguousarray(np.transpose(a, tuple(attrs["perm"])))


def _reduce_sum(attrs, a, *, dtype):
    if dtype.is_float:
        acc = np.float64 if dtype.bits == 64 else np.float32
        # initial=-0.0 (the IEEE additive identity): a sum of only -0.0 stays -0.0
        with np.errstate(all="ignore"):
            r = np.sum(a.astype(acc), axis=attrs["axis"], initial=-0.0)
            return np.asarray(r).astype(numpy_dtype(dtype))
    with np.errstate(all="ignore"):
        return np.asarray(np.sum(a, axis=attrs["axis"], dtype=a.dtype))


def _reduce_minmax(is_min):
    def ref(attrs, a, *, dtype):
        axis = attrs["axis"]
        if dtype.is_float:
            # minimumNumber/maximumNumber folded along the axis: fmin/fmax ignore NaN (all NaN
            # gives NaN); a zero result is -0.0 for min when any -0.0 is present, +0.0 for max
            # when any +0.0 is present.
            x = a.astype(np.float32) if dtype.bits == 16 else a
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


def _reduce_arg(is_min):
    def ref(attrs, a, *, dtype):
        axis = attrs["axis"]
        if dtype.is_float:
            # index of the first lane equal to the NaN-ignoring extreme (-0.0 ties +0.0);
            # an all-NaN slice matches nowhere and gives 0.
            x = a.astype(np.float64)
            m = (np.fmin if is_min else np.fmax).reduce(x, axis=axis, keepdims=True)
            return np.asarray(np.argmax(x == m, axis=axis)).astype(np.int32)
        return np.asarray((np.argmin if is_min else np.argmax)(a, axis=axis)).astype(np.int32)

    return ref


def _gather(attrs, a, idx, *, dtype):
    axis = attrs["axis"]
    n = a.shape[axis]
    if idx.dtype.kind == "u":  # large unsigned indices must clamp high, not wrap negative in int64
        idx = np.minimum(idx, np.asarray(n - 1).astype(idx.dtype))
    i = np.clip(idx.astype(np.int64), 0, n - 1)
    return np.ascontiguousarray(np.take_along_axis(a, i, axis=axis))


def _dot(attrs, a, b, *acc, dtype):
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


_LATE = {
    "div": _div_ref,
    "rem": _rem_ref,
    "minimum": _minmax(True),
    "maximum": _minmax(False),
    "shl": _shl,
    "shr": _shr,
    "fma": _fma,
    "where": _where,
    "cast": _cast,
    "bitcast": _bitcast,
    "splat": _splat,
    "broadcast": _broadcast,
    "expand_dims": _expand_dims,
    "reshape": _reshape,
    "trans": _trans,
    "reduce_sum": _reduce_sum,
    "reduce_max": _reduce_minmax(False),
    "reduce_min": _reduce_minmax(True),
    "reduce_argmax": _reduce_arg(False),
    "reduce_argmin": _reduce_arg(True),
    "gather": _gather,
    "dot": _dot,
}

OPS: dict[str, OpDef] = {}
for _d in OPS_LIST:
    if _d.name in _LATE:
        _d = OpDef(**{**_d.__dict__, "reference": _LATE[_d.name]})
    OPS[_d.name] = _d
OPS_LIST = list(OPS.values())


def get(name: str) -> OpDef:
    """The OpDef named ``name``; IRError (with close names) if there is none."""
    try:
        return OPS[name]
    except KeyError:
        import difflib

        close = difflib.get_close_matches(name, OPS, n=3)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise IRError(f"unknown op {name!r}{hint}") from None


def check_family(op: OpDef, types: Sequence[BlockType]) -> None:
    """Raise IRError when the operands' element dtype is outside the op's dtype family."""
    if not types or op.family == ANY:
        return
    t = types[0]
    if op.name in ("addptr",):
        return
    if t.is_pointer and EFFECT in op.traits:  # memory ops: the family constrains the pointee dtype
        t = BlockType(t.dtype, t.shape)
    if not _family_ok(op.family, t):
        raise _fail(op.name, f"does not accept {t.elem} operands (needs {op.family})")


def result_types(name: str, operand_types: Sequence[BlockType], attrs: dict[str, Any]) -> tuple[BlockType, ...]:
    """Check arity, attributes and dtype family, then apply the op's type rule."""
    op = get(name)
    lo, hi = op.arity
    n = len(operand_types)
    if n < lo or (hi is not None and n > hi):
        want = f"{lo}" if lo == hi else f"{lo}..{hi if hi is not None else 'n'}"
        raise _fail(name, f"takes {want} operands, got {n}")
    for a in op.attrs:
        if a not in attrs:
            raise _fail(name, f"missing attribute {a!r}")
    extra = set(attrs) - set(op.attrs) - set(op.optional_attrs)
    if extra:
        raise _fail(name, f"unknown attribute(s) {sorted(extra)}")
    check_family(op, operand_types)
    return op.type_rule(operand_types, attrs)


ELEMENTWISE_OPS = tuple(o.name for o in OPS_LIST if ELEMENTWISE in o.traits)
EFFECT_OPS = tuple(o.name for o in OPS_LIST if EFFECT in o.traits)
