"""The op table: the single source of truth for every IR operation.

Each :class:`OpDef` states an op's name, arity, traits, required attributes, which element
dtypes it accepts, its type rule (:mod:`eggpu.ir.op_types`), its numpy reference semantics (for
elementwise ops; :mod:`eggpu.ir.op_references`) and a one-line statement of its edge cases. The
interpreter and printer use this table directly; the egglog schema is generated from it; the z3
encoding and the LLVM lowering are tables keyed by op name and a coverage test checks they cover
every op here. Traits and dtype families are enums: a misspelled one fails where it is written.

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
from enum import StrEnum
from typing import Any

from .errors import IRError
from .op_types import (
    DOT_PRECISIONS,  # noqa: F401 - re-exported: the schema and frontend read it here
    addptr_type,
    arange_type,
    atomic_type,
    bitcast_type,
    broadcast_type,
    cas_type,
    cast_type,
    compare_type,
    const_type,
    device_assert_type,
    device_print_type,
    dot_type,
    expand_dims_type,
    fail,
    gather_type,
    index_type,
    inline_asm_type,
    int_to_ptr_type,
    libdevice_type,
    load_type,
    no_check,
    ptr_to_int_type,
    reduce_type,
    reshape_type,
    same_type,
    splat_type,
    store_type,
    trans_type,
    where_type,
)
from .types import BlockType, PointerType


class Trait(StrEnum):
    """What an op is (an OpDef's ``traits``)."""

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


class Family(StrEnum):
    """The element dtypes an op accepts (checked on the first operand's element dtype)."""

    ANY = "any"
    NUM = "num"  # ints and floats
    INT = "int"  # ints (not bool)
    INTBOOL = "int|bool"
    FLOAT = "float"


PURE, ELEMENTWISE, COMMUTATIVE, ASSOCIATIVE = Trait.PURE, Trait.ELEMENTWISE, Trait.COMMUTATIVE, Trait.ASSOCIATIVE
EFFECT, CONTROL, TERMINATOR, REDUCTION = Trait.EFFECT, Trait.CONTROL, Trait.TERMINATOR, Trait.REDUCTION
LEAF, SHAPE, COMPARISON, TRANSCENDENTAL = Trait.LEAF, Trait.SHAPE, Trait.COMPARISON, Trait.TRANSCENDENTAL
ANY, NUM, INT, INTBOOL, FLOAT = Family.ANY, Family.NUM, Family.INT, Family.INTBOOL, Family.FLOAT


@dataclass(frozen=True)
class OpDef:
    """One operation of the IR. ``arity`` is ``(min, max)`` operands; ``max`` None = variadic."""

    name: str
    arity: tuple[int, int | None]
    traits: frozenset[Trait]
    type_rule: Callable[[Sequence[BlockType], dict[str, Any]], tuple[BlockType, ...]]
    family: Family = Family.ANY
    attrs: tuple[str, ...] = ()
    reference: Callable[..., Any] | None = None
    edge_cases: str = ""
    doc: str = ""
    num_regions: int = 0
    optional_attrs: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        object.__setattr__(self, "traits", frozenset(Trait(t) for t in self.traits))
        object.__setattr__(self, "family", Family(self.family))

    def has(self, trait: Trait | str) -> bool:
        """Whether the op has ``trait``; a string that names no trait raises ValueError."""
        return Trait(trait) in self.traits

    @property
    def is_pure(self) -> bool:
        return Trait.PURE in self.traits


class LazyReference:
    """An op's numpy reference semantics, looked up in :data:`eggpu.ir.op_references.REFERENCES`
    by op name on the first call: importing the op table (every compile, the optimizer, codegen)
    then does not import numpy (~100 ms); only running a reference does. Called exactly like the
    function it stands for: ``ref(attrs, *operands, dtype=...)``."""

    __slots__ = ("_fn", "name")

    def __init__(self, name: str) -> None:
        self.name = name
        self._fn: Callable[..., Any] | None = None

    def resolve(self) -> Callable[..., Any]:
        """The reference function itself (a KeyError names an op op_references does not define)."""
        if self._fn is None:
            from .op_references import REFERENCES

            self._fn = REFERENCES[self.name]
        return self._fn

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.resolve()(*args, **kwargs)

    def __repr__(self) -> str:
        return f"LazyReference({self.name!r})"


def _ref(name: str) -> LazyReference:
    return LazyReference(name)


def _family_ok(family: Family | str, t: BlockType) -> bool:
    family = Family(family)
    e = t.elem
    if isinstance(e, PointerType):
        return family == Family.ANY
    return {
        Family.ANY: lambda: True,
        Family.NUM: lambda: e.is_int or e.is_float,
        Family.INT: lambda: e.is_int,
        Family.INTBOOL: lambda: e.is_int or e.is_bool,
        Family.FLOAT: lambda: e.is_float,
    }[family]()


# ---------------------------------------------------------------- the table


def _op(name: str, *, arity: tuple[int, int | None], traits: Sequence[Trait], rule: Callable[..., Any],
        family: Family = Family.ANY, attrs: Sequence[str] = (), reference: Callable[..., Any] | None = None,
        edge: str = "", doc: str = "", regions: int = 0, optional: Sequence[str] = ()) -> OpDef:
    """One row of the table: the op's name, then every property by keyword."""
    return OpDef(name=name, arity=arity, traits=frozenset(traits), type_rule=rule, family=family, attrs=tuple(attrs),
                 reference=reference, edge_cases=edge, doc=doc, num_regions=regions, optional_attrs=tuple(optional))


def _atomic(name: str, family: Family, doc: str, edge: str = "returns the old value; ordering as atomic_add") -> OpDef:
    """The row of an atomic read-modify-write ``name(ptr, value, mask?)``: effectful, the old values
    out, ``sem`` and ``scope`` optional."""
    return _op(name, arity=(2, 3), traits=(EFFECT,), rule=atomic_type(name), family=family, optional=_ATOMIC_ATTRS,
               edge=edge, doc=doc)


def _math(name: str, kind: tuple[int, Family, tuple[Trait, ...]], *, edge: str, doc: str) -> OpDef:
    """The row of the elementwise math function ``name`` (a libdevice/libm function or an exact one
    such as ``floor`` or ``popc``): ``kind``'s arity, family and traits, the type of its operands,
    and ``op_references.REFERENCES[name]`` as its semantics."""
    arity, family, traits = kind
    return _op(name, arity=(arity, arity), traits=traits, rule=same_type(name), family=family,
               reference=_ref(name), edge=edge, doc=doc)


_EW = (PURE, ELEMENTWISE)
_EW2 = (PURE, ELEMENTWISE, COMMUTATIVE)
_ATOMIC_ATTRS = ("sem", "scope")  # memory ordering and scope (op_types.ATOMIC_SEMS/ATOMIC_SCOPES)
# The kinds of the math-function rows (``_math``): (arity, family, traits). To add a math function,
# add a row ``_math("name", KIND, edge="its edge cases", doc="what it computes")`` and its numpy
# semantics under the same name in ir/op_references.py REFERENCES; a _T kind is TRANSCENDENTAL (a
# libdevice/libm call: codegen/emitter.py _MATH names it). tests/test_op_coverage.py names the rest.
_FLOAT1 = (1, FLOAT, _EW)
_FLOAT1_T = (1, FLOAT, _EW + (TRANSCENDENTAL,))
_FLOAT2_T = (2, FLOAT, _EW + (TRANSCENDENTAL,))
_FLOAT3 = (3, FLOAT, _EW)
_INT1 = (1, INT, _EW)
_INT2_C = (2, INT, _EW2)  # commutative


OPS_LIST: list[OpDef] = [
    # leaves
    _op("const", arity=(0, 0), traits=(PURE, LEAF), rule=const_type, attrs=("value", "dtype"),
        edge="value is a Python int/float/bool representable in dtype (floats rounded RNE; NaN/inf allowed)",
        doc="a scalar constant"),
    _op("program_id", arity=(0, 0), traits=(PURE, LEAF), rule=index_type("program_id"), attrs=("axis",),
        edge="0 <= program_id(a) < num_programs(a)", doc="index of this program along a grid axis (i32)"),
    _op("num_programs", arity=(0, 0), traits=(PURE, LEAF), rule=index_type("num_programs"), attrs=("axis",),
        edge=">= 1", doc="grid size along an axis (i32)"),
    _op("arange", arity=(0, 0), traits=(PURE, LEAF), rule=arange_type, attrs=("start", "end"),
        edge="i32 block [start, end); end - start is the block size", doc="the lane indices start..end-1"),
    # arithmetic
    _op("add", arity=(2, 2), traits=_EW2 + (ASSOCIATIVE,), rule=same_type("add"), family=NUM,
        reference=_ref("add"), edge="ints wrap; floats IEEE RNE", doc="a + b"),
    _op("sub", arity=(2, 2), traits=_EW, rule=same_type("sub"), family=NUM,
        reference=_ref("sub"), edge="ints wrap; floats IEEE RNE", doc="a - b"),
    _op("mul", arity=(2, 2), traits=_EW2 + (ASSOCIATIVE,), rule=same_type("mul"), family=NUM,
        reference=_ref("mul"), edge="ints wrap (low bits of the product)", doc="a * b"),
    _op("div", arity=(2, 2), traits=_EW, rule=same_type("div"), family=NUM,
        edge="ints truncate toward zero (sdiv/udiv); x/0 = 0; INT_MIN/-1 wraps to INT_MIN; floats IEEE",
        doc="a / b", reference=_ref("div")),
    _op("rem", arity=(2, 2), traits=_EW, rule=same_type("rem"), family=NUM,
        edge="ints: sign of the dividend (srem/urem); x%0 = 0; INT_MIN%-1 = 0; floats: C fmod",
        doc="remainder of truncating division", reference=_ref("rem")),
    _op("minimum", arity=(2, 2), traits=_EW2 + (ASSOCIATIVE,), rule=same_type("minimum"), family=NUM,
        edge="floats: NaN ignored unless both NaN; -0.0 < +0.0 (IEEE-754-2019 minimumNumber)", doc="min(a, b)", reference=_ref("minimum")),
    _op("maximum", arity=(2, 2), traits=_EW2 + (ASSOCIATIVE,), rule=same_type("maximum"), family=NUM,
        edge="floats: NaN ignored unless both NaN; -0.0 < +0.0 (IEEE-754-2019 maximumNumber)", doc="max(a, b)", reference=_ref("maximum")),
    _op("and", arity=(2, 2), traits=_EW2 + (ASSOCIATIVE,), rule=same_type("and"), family=INTBOOL,
        reference=_ref("and"), edge="bitwise; logical on bool", doc="a & b"),
    _op("or", arity=(2, 2), traits=_EW2 + (ASSOCIATIVE,), rule=same_type("or"), family=INTBOOL,
        reference=_ref("or"), edge="bitwise; logical on bool", doc="a | b"),
    _op("xor", arity=(2, 2), traits=_EW2 + (ASSOCIATIVE,), rule=same_type("xor"), family=INTBOOL,
        reference=_ref("xor"), edge="bitwise; logical on bool", doc="a ^ b"),
    _op("shl", arity=(2, 2), traits=_EW, rule=same_type("shl"), family=INT,
        edge="shift amount outside [0, bits) (negative included) gives 0", doc="a << b", reference=_ref("shl")),
    _op("shr", arity=(2, 2), traits=_EW, rule=same_type("shr"), family=INT,
        edge="arithmetic for signed, logical for unsigned; amount outside [0, bits) (negative included) gives 0, or the sign fill when signed",
        doc="a >> b", reference=_ref("shr")),
    # comparisons
    _op("eq", arity=(2, 2), traits=_EW2 + (COMPARISON,), rule=compare_type("eq"), family=ANY, reference=_ref("eq"),
        edge="floats ordered: NaN == x is false; -0.0 == +0.0", doc="a == b"),
    _op("ne", arity=(2, 2), traits=_EW2 + (COMPARISON,), rule=compare_type("ne"), family=ANY, reference=_ref("ne"),
        edge="floats unordered: NaN != x is true", doc="a != b"),
    _op("lt", arity=(2, 2), traits=_EW + (COMPARISON,), rule=compare_type("lt"), family=NUM, reference=_ref("lt"),
        edge="floats ordered (false on NaN); ints by signedness", doc="a < b"),
    _op("le", arity=(2, 2), traits=_EW + (COMPARISON,), rule=compare_type("le"), family=NUM, reference=_ref("le"),
        edge="floats ordered (false on NaN); ints by signedness", doc="a <= b"),
    _op("gt", arity=(2, 2), traits=_EW + (COMPARISON,), rule=compare_type("gt"), family=NUM, reference=_ref("gt"),
        edge="floats ordered (false on NaN); ints by signedness", doc="a > b"),
    _op("ge", arity=(2, 2), traits=_EW + (COMPARISON,), rule=compare_type("ge"), family=NUM, reference=_ref("ge"),
        edge="floats ordered (false on NaN); ints by signedness", doc="a >= b"),
    # unary
    _op("neg", arity=(1, 1), traits=_EW, rule=same_type("neg"), family=NUM, reference=_ref("neg"),
        edge="ints wrap (-INT_MIN == INT_MIN; unsigned: 0 - x); floats flip the sign bit (also of NaN, 0)", doc="-a"),
    _op("not", arity=(1, 1), traits=_EW, rule=same_type("not"), family=INTBOOL, reference=_ref("not"),
        edge="bitwise complement; logical not on bool", doc="~a"),
    _op("abs", arity=(1, 1), traits=_EW, rule=same_type("abs"), family=NUM, reference=_ref("abs"),
        edge="abs(INT_MIN) == INT_MIN; unsigned identity; floats clear the sign bit", doc="|a|"),
    # math functions (libdevice/libm calls and exact roundings): _math rows, see the kinds above
    _math("exp", _FLOAT1_T, edge="overflow gives +inf; libdevice/libm accuracy (a few ulp)", doc="e**a"),
    _math("exp2", _FLOAT1_T, edge="overflow gives +inf", doc="2**a"),
    _math("log", _FLOAT1_T, edge="log(0) = -inf; log(<0) = NaN", doc="natural log"),
    _math("log2", _FLOAT1_T, edge="log2(0) = -inf; log2(<0) = NaN", doc="base-2 log"),
    _math("sqrt", _FLOAT1, edge="correctly rounded; sqrt(-0.0) = -0.0; sqrt(<0) = NaN", doc="square root"),
    _math("rsqrt", _FLOAT1_T, edge="rsqrt(0) = +inf; approximate on GPUs (libdevice)", doc="1/sqrt(a)"),
    _math("sin", _FLOAT1_T, edge="sin(inf) = NaN", doc="sine"),
    _math("cos", _FLOAT1_T, edge="cos(inf) = NaN", doc="cosine"),
    _math("tanh", _FLOAT1_T, edge="saturates to +-1", doc="hyperbolic tangent"),
    _math("erf", _FLOAT1_T, edge="saturates to +-1", doc="error function"),
    _math("asin", _FLOAT1_T, edge="asin(+-1) = +-pi/2; |x| > 1 = NaN; keeps -0.0", doc="arcsine (radians)"),
    _math("acos", _FLOAT1_T, edge="acos(1) = +0; acos(-1) = pi; |x| > 1 = NaN", doc="arccosine (radians)"),
    _math("atan", _FLOAT1_T, edge="atan(+-inf) = +-pi/2; keeps -0.0", doc="arctangent (radians)"),
    _math("sinh", _FLOAT1_T, edge="overflow gives +-inf; keeps -0.0", doc="hyperbolic sine"),
    _math("cosh", _FLOAT1_T, edge="cosh(+-0) = 1; cosh(+-inf) = +inf (overflow too)", doc="hyperbolic cosine"),
    _math("asinh", _FLOAT1_T, edge="asinh(+-inf) = +-inf; keeps -0.0", doc="inverse hyperbolic sine"),
    _math("acosh", _FLOAT1_T, edge="acosh(1) = +0; acosh(inf) = inf; x < 1 = NaN", doc="inverse hyperbolic cosine"),
    _math("atanh", _FLOAT1_T, edge="atanh(+-1) = +-inf; |x| > 1 = NaN; keeps -0.0", doc="inverse hyperbolic tangent"),
    _math("tan", _FLOAT1_T, edge="tan(+-inf) = NaN; keeps -0.0", doc="tangent"),
    _math("log10", _FLOAT1_T, edge="log10(+-0) = -inf; log10(<0) = NaN; log10(inf) = inf", doc="base-10 log"),
    _math("log1p", _FLOAT1_T, edge="log1p(-1) = -inf; x < -1 = NaN; keeps -0.0; accurate near 0", doc="log(1 + a)"),
    _math("expm1", _FLOAT1_T, edge="expm1(-inf) = -1; overflow gives +inf; keeps -0.0; accurate near 0", doc="e**a - 1"),
    _math("exp10", _FLOAT1_T, edge="exp10(-inf) = +0; overflow gives +inf", doc="10**a"),
    _math("cbrt", _FLOAT1_T, edge="odd: cbrt(-x) = -cbrt(x); keeps -0.0 and +-inf", doc="cube root"),
    _math("erfc", _FLOAT1_T, edge="erfc(-inf) = 2; erfc(inf) = +0 (underflows for large a)", doc="1 - erf(a)"),
    _math("lgamma", _FLOAT1_T, edge="log|gamma(a)|: +inf at 0, at negative integers and at +-inf; lgamma(1) = lgamma(2) = +0", doc="log of |gamma|"),
    _math("tgamma", _FLOAT1_T, edge="tgamma(+-0) = +-inf; negative integers and -inf give NaN; overflow gives +inf (a > 171.62 in f64, 35.04 in f32)", doc="gamma function"),
    _math("atan2", _FLOAT2_T, edge="C's atan2(y, x): signed zeros pick +-0 or +-pi; atan2(+-inf, +-inf) = +-pi/4, +-3pi/4", doc="angle of (x, y): atan2(a, b) with a = y"),
    _math("pow", _FLOAT2_T, edge="C's pow: pow(x, +-0) = 1 and pow(1, y) = 1 (NaN included); pow(-1, +-inf) = 1; a negative base with a non-integer exponent = NaN; pow(+-0, y < 0) = +inf (-inf for -0 and an odd integer y); overflow gives +-inf", doc="a ** b"),
    _math("hypot", _FLOAT2_T, edge="sqrt(a*a + b*b) without intermediate overflow; +inf if either is +-inf (even with a NaN); else NaN if either is NaN", doc="length of (a, b)"),
    _math("floor", _FLOAT1, edge="exact; keeps -0.0, NaN, inf", doc="round toward -inf"),
    _math("ceil", _FLOAT1, edge="exact; keeps -0.0, NaN, inf", doc="round toward +inf"),
    _math("trunc", _FLOAT1, edge="exact; trunc(-0.5) = -0.0; keeps -0.0, NaN, inf", doc="round toward zero"),
    _math("rint", _FLOAT1, edge="exact; ties to even: rint(2.5) = 2, rint(-0.5) = -0.0; keeps -0.0, NaN, inf", doc="round to the nearest integer, ties to even (libdevice rint/nearbyint)"),
    _math("round", _FLOAT1, edge="exact; ties away from zero: round(2.5) = 3, round(-0.5) = -1; round(-0.4) = -0.0; keeps NaN, inf", doc="round to the nearest integer, ties away from zero (C round)"),
    # integer bit functions (libdevice __nv_popc, __nv_clz, __nv_ffs, __nv_brev, __nv_mulhi and their 64-bit forms)
    _math("popc", _INT1, edge="the number of set bits of the two's-complement pattern, in the operand's dtype", doc="population count"),
    _math("clz", _INT1, edge="leading zero bits of the pattern; clz(0) = the width; negative signed values give 0", doc="count leading zeros"),
    _math("ffs", _INT1, edge="1 + the index of the lowest set bit; ffs(0) = 0", doc="find first set bit"),
    _math("brev", _INT1, edge="bit i of the result is bit (width - 1 - i) of the operand", doc="bit reversal"),
    _math("mulhi", _INT2_C, edge="the high half of the double-width product; signed operands sign-extended, unsigned zero-extended", doc="high half of a * b"),
    # libdevice functions without an op of their own (Triton's extern_elementwise; ir/libdevice_table.py)
    _op("libdevice", arity=(1, 4), traits=_EW, rule=libdevice_type, family=ANY, attrs=("symbol",),
        reference=_ref("libdevice"),
        edge="a pure call of the libdevice function `symbol` (__nv_*) with its operand and result dtypes; "
        "the optimizer only knows that equal symbols of equal operands are equal; interpreter: "
        "libm, exact references or GPU-only (ir/libdevice_table.py host_kind); run_cpu: libdevice's own "
        "code where it is bit-exact on the host (codegen/libdevice_host.py), else as the interpreter",
        doc="tl.extra.cuda.libdevice.<name>(...)"),
    # ternary
    _op("where", arity=(3, 3), traits=(PURE, ELEMENTWISE), rule=where_type, family=ANY,
        edge="both branches are computed (no short circuit); lanes picked by cond", doc="cond ? a : b", reference=_ref("where")),
    _math("fma", _FLOAT3, edge="a*b+c rounded once (reference: exact for f64, via f64 for narrower dtypes)", doc="fused multiply-add"),
    # conversions
    _op("cast", arity=(1, 1), traits=(PURE, ELEMENTWISE), rule=cast_type, family=ANY, attrs=("dtype",),
        edge="int->int wraps/extends by source signedness; float->int truncates and saturates (NaN -> 0); "
        "int->float and float->float RNE; x->bool is x != 0; to FP8 (from a float or FP8): rounded once RNE, "
        "saturating (+-inf too) to +-448/+-57344, NaN -> 0x7F; from FP8: exact, NaN -> canonical NaN; "
        "no FP8 <-> int/bool (eggpu/ir/fp8.py)",
        doc="value conversion", reference=_ref("cast")),
    _op("bitcast", arity=(1, 1), traits=(PURE, ELEMENTWISE), rule=bitcast_type, family=ANY, attrs=("dtype",),
        edge="reinterprets the bits; widths must match", doc="bit reinterpretation", reference=_ref("bitcast")),
    # shapes and pointers
    _op("splat", arity=(1, 1), traits=(PURE, SHAPE), rule=splat_type, family=ANY, attrs=("shape",),
        edge="every lane holds the scalar", doc="scalar -> block", reference=_ref("splat")),
    _op("broadcast", arity=(1, 1), traits=(PURE, SHAPE), rule=broadcast_type, family=ANY, attrs=("shape",),
        edge="dims of size 1 are repeated; ranks must match", doc="expand size-1 dims", reference=_ref("broadcast")),
    _op("expand_dims", arity=(1, 1), traits=(PURE, SHAPE), rule=expand_dims_type, family=ANY, attrs=("axis",),
        edge="inserts a dim of size 1 (x[:, None])", doc="add a unit axis", reference=_ref("expand_dims")),
    _op("reshape", arity=(1, 1), traits=(PURE, SHAPE), rule=reshape_type, family=ANY, attrs=("shape",),
        edge="row-major; element count must match", doc="reshape a block", reference=_ref("reshape")),
    _op("trans", arity=(1, 1), traits=(PURE, SHAPE), rule=trans_type, family=ANY, attrs=("perm",),
        edge="permutes axes", doc="transpose", reference=_ref("trans")),
    _op("addptr", arity=(2, 2), traits=(PURE, ELEMENTWISE), rule=addptr_type, family=ANY,
        edge="offset counts elements (not bytes); any integer dtype, sign-extended (zero-extended if unsigned) to 64 bits",
        doc="pointer + offset"),
    _op("int_to_ptr", arity=(1, 1), traits=(PURE, ELEMENTWISE), rule=int_to_ptr_type, family=INT, attrs=("dtype",),
        optional=("const",),
        edge="i64/u64 byte address -> pointer to dtype (a const pointer with const=1), bits unchanged (no "
        "cvta: a global address); "
        "the interpreter and run_cpu resolve it against the launch's arrays and buffers=",
        doc="integer address -> pointer"),
    _op("ptr_to_int", arity=(1, 1), traits=(PURE, ELEMENTWISE), rule=ptr_to_int_type, family=ANY, attrs=("dtype",),
        edge="the pointer's byte address as i64/u64, bits unchanged; int_to_ptr(ptr_to_int(p)) == p",
        doc="pointer -> integer address"),
    # reductions
    _op("reduce_sum", arity=(1, 1), traits=(PURE, REDUCTION), rule=reduce_type("reduce_sum"), family=NUM, attrs=("axis",),
        edge="ints wrap; f16/bf16 accumulate in f32; float order unspecified", doc="sum along axis", reference=_ref("reduce_sum")),
    _op("reduce_max", arity=(1, 1), traits=(PURE, REDUCTION), rule=reduce_type("reduce_max"), family=NUM, attrs=("axis",),
        edge="as maximum: NaN ignored unless all NaN", doc="max along axis", reference=_ref("reduce_max")),
    _op("reduce_min", arity=(1, 1), traits=(PURE, REDUCTION), rule=reduce_type("reduce_min"), family=NUM, attrs=("axis",),
        edge="as minimum: NaN ignored unless all NaN", doc="min along axis", reference=_ref("reduce_min")),
    _op("reduce_argmax", arity=(1, 1), traits=(PURE, REDUCTION), rule=reduce_type("reduce_argmax", True), family=NUM, attrs=("axis",),
        edge="i32 index of the first maximum; NaN ignored (all NaN -> 0)", doc="argmax along axis", reference=_ref("reduce_argmax")),
    _op("reduce_argmin", arity=(1, 1), traits=(PURE, REDUCTION), rule=reduce_type("reduce_argmin", True), family=NUM, attrs=("axis",),
        edge="i32 index of the first minimum; NaN ignored (all NaN -> 0)", doc="argmin along axis", reference=_ref("reduce_argmin")),
    _op("gather", arity=(2, 2), traits=(PURE,), rule=gather_type, family=ANY, attrs=("axis",),
        edge="result[c] = src[c with c[axis] = index[c]]; an index outside [0, n) is clamped into it",
        doc="gather along an axis", reference=_ref("gather")),
    _op("dot", arity=(2, 3), traits=(PURE,), rule=dot_type, family=NUM, optional=("precision",),
        edge="[M,K]x[K,N]; floats accumulate in f32 (ints in i32); optional accumulator added; "
        "precision 'tf32' (f32 only) first rounds each operand to TF32 (10 mantissa bits, ties away from zero)",
        doc="matrix product", reference=_ref("dot")),
    # memory
    _op("load", arity=(1, 3), traits=(EFFECT,), rule=load_type, family=ANY, optional=("volatile",),
        edge="masked-off lanes are not read and take `other` (0 without other); volatile=True: "
        "each element read with its own ld.volatile on a GPU (never merged or reused)",
        doc="load(ptr, mask?, other?)"),
    _op("store", arity=(2, 3), traits=(EFFECT,), rule=store_type, family=ANY, edge="masked-off lanes are not written", doc="store(ptr, value, mask?)"),
    _atomic("atomic_add", NUM, "*p += v", edge="returns the old value; ordering sem (absent: acq_rel, as Triton), "
            "scope (absent: gpu); masked lanes untouched (old value 0)"),
    _atomic("atomic_max", NUM, "*p = max(*p, v)"),
    _atomic("atomic_min", NUM, "*p = min(*p, v)"),
    _atomic("atomic_xchg", ANY, "*p = v"),
    _atomic("atomic_and", INT, "*p &= v"),
    _atomic("atomic_or", INT, "*p |= v"),
    _atomic("atomic_xor", INT, "*p ^= v"),
    _op("atomic_cas", arity=(3, 3), traits=(EFFECT,), rule=cas_type, family=INTBOOL, optional=_ATOMIC_ATTRS,
        edge="returns the old value; writes v where *p == cmp; ordering as atomic_add", doc="compare and swap"),
    # escape hatch
    _op("inline_asm", arity=(1, None), traits=(EFFECT,), rule=inline_asm_type, family=ANY,
        attrs=("asm", "constraints", "dtype", "pure"), optional=("pack",),
        edge="GPU only: the PTX runs once per element, or per `pack` elements of each operand and result "
        "(narrow elements packed into 32-bit registers as Triton packs them; $0.. the results' registers, "
        "then the operands'); kept in program order and never folded; the interpreter and the host "
        "lowering refuse it",
        doc="tl.inline_asm_elementwise"),
    # debugging (kept in program order, never folded; see docs/language.md, "Debugging")
    _op("device_print", arity=(0, None), traits=(EFFECT,), rule=device_print_type, family=ANY,
        attrs=("prefix", "hex"),
        edge="prints one line per element of each operand, Triton's format 'pid (x, y, z) idx (i, ...)"
        "<prefix><value>'; the prefix is already normalized (' name: ')", doc="tl.device_print"),
    _op("device_assert", arity=(1, 2), traits=(EFFECT,), rule=device_assert_type, family=INTBOOL,
        attrs=("msg", "src"),
        edge="fails when a lane (under the mask) is false; only present in kernels compiled with debug=True "
        "(removed otherwise before optimization)", doc="tl.device_assert"),
    # control flow
    _op("for", arity=(3, None), traits=(CONTROL,), rule=no_check, family=ANY, regions=1,
        edge="operands lo, hi, step (i32 scalars), then initial carried values; body args (iv, carried...); "
        "runs like Python range(lo, hi, step); step == 0 is undefined",
        doc="counted loop with carried values"),
    _op("while", arity=(0, None), traits=(CONTROL,), rule=no_check, family=ANY, regions=2,
        edge="operands are the initial carried values; region 0 (args: carried) yields the bool scalar "
        "condition, region 1 (args: carried) yields the next carried values; results are the carried "
        "values when the condition is first false (a loop that never ends does not return)",
        doc="loop with a runtime condition and carried values"),
    _op("if", arity=(1, 1), traits=(CONTROL,), rule=no_check, family=ANY, regions=2,
        edge="condition is a bool scalar; both regions yield the results' types", doc="two-way branch"),
    _op("yield", arity=(0, None), traits=(TERMINATOR,), rule=no_check, family=ANY, edge="ends a region of for/while/if", doc="region results"),
]

OPS: dict[str, OpDef] = {d.name: d for d in OPS_LIST}
assert len(OPS) == len(OPS_LIST), "an op name appears twice in the table"


def get(name: str) -> OpDef:
    """The OpDef named ``name``; IRError (with close names) if there is none."""
    try:
        return OPS[name]
    except KeyError:
        import difflib

        close = difflib.get_close_matches(name, OPS, n=3)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise IRError(f"unknown op {name!r}{hint}") from None


FP8_OPS = ("load", "store", "where", "cast", "bitcast", "splat", "broadcast", "expand_dims", "reshape", "trans",
           "gather", "for", "while", "if", "yield", "inline_asm")
"""The ops that take FP8 operands (storage only: move, select, convert; user asm sees the bytes). Every other op refuses
them with an error saying to convert first; a test checks these names against the table."""


def check_family(op: OpDef, types: Sequence[BlockType]) -> None:
    """Raise IRError when the operands' element dtype is outside the op's dtype family, or is FP8
    and the op is not one of :data:`FP8_OPS`."""
    if not types:
        return
    if op.name not in FP8_OPS:
        for t in types:
            if t.dtype.is_fp8 and (not t.is_pointer or EFFECT in op.traits):  # fp8 values, or memory ops on them
                raise fail(op.name, f"does not accept {t.dtype} operands: FP8 is a storage dtype "
                                    f"(load, store, where, .to()); convert to f16 or f32 first")
    if op.family == ANY:
        return
    t = types[0]
    if op.name in ("addptr",):
        return
    if t.is_pointer and EFFECT in op.traits:  # memory ops: the family constrains the pointee dtype
        t = BlockType(t.dtype, t.shape)
    if not _family_ok(op.family, t):
        raise fail(op.name, f"does not accept {t.elem} operands (needs {op.family})")


def result_types(name: str, operand_types: Sequence[BlockType], attrs: dict[str, Any]) -> tuple[BlockType, ...]:
    """Check arity, attributes and dtype family, then apply the op's type rule."""
    op = get(name)
    lo, hi = op.arity
    n = len(operand_types)
    if n < lo or (hi is not None and n > hi):
        want = f"{lo}" if lo == hi else f"{lo}..{hi if hi is not None else 'n'}"
        raise fail(name, f"takes {want} operands, got {n}")
    for a in op.attrs:
        if a not in attrs:
            raise fail(name, f"missing attribute {a!r}")
    extra = set(attrs) - set(op.attrs) - set(op.optional_attrs)
    if extra:
        raise fail(name, f"unknown attribute(s) {sorted(extra)}")
    check_family(op, operand_types)
    return op.type_rule(operand_types, attrs)


POINTER_OPS = ("addptr", "int_to_ptr", "ptr_to_int")
"""Elementwise ops that make or take pointer values: the interpreter runs them itself (a pointer is
not a numpy value), so they have no numpy ``reference``."""

ELEMENTWISE_OPS = tuple(o.name for o in OPS_LIST if ELEMENTWISE in o.traits)
EFFECT_OPS = tuple(o.name for o in OPS_LIST if EFFECT in o.traits)


def transcendental_ops(arity: int | None = None) -> tuple[str, ...]:
    """The ``TRANSCENDENTAL`` ops in table order, or only those taking exactly ``arity`` operands.

    These are the float functions lowered to a libdevice/libm call (``codegen/emitter._MATH`` names
    them), uninterpreted in z3 and priced by name in the cost model; every table that only restates
    "this op is a transcendental float function" derives from this list rather than spelling it.
    """
    return tuple(o.name for o in OPS_LIST if TRANSCENDENTAL in o.traits and (arity is None or o.arity == (arity, arity)))
