"""eggpu's egglog schema, generated from the op table (``eggpu.ir.ops``).

The schema is the contract between rule files (``rules/*.egg``), the rule verifier and the
optimizer's encoder/decoder. Nothing here lists ops by hand: every PURE op of the op table gets a
``Term`` constructor named in PascalCase (``reduce_sum`` -> ``ReduceSum``), so adding an op to the
table adds its constructor.

Program declared by :func:`schema_text`:

* ``(datatype DT (Bool) (I8) ... (F64))`` — one nullary constructor per dtype.
* Family relations, asserted as facts: ``IsInt`` (signed and unsigned, not bool), ``IsSigned``,
  ``IsUnsigned``, ``IsFloat``, ``IsBool``, ``IsIntOrBool``, ``IsNum`` and ``(Width t w)`` with
  ``w`` the width in bits (bool: 1).
* ``(sort Term)`` and one constructor per pure op. Arguments: first the dtype argument(s), then
  the op's attributes in the op table's order, then the operands (``Term``\\ s).

  - The dtype argument is the element dtype of the first operand; for leaves, the result dtype.
    Two documented exceptions where the first operand's dtype carries no information:
    ``where`` takes the dtype of its branches (its condition is always bool), and ``addptr``
    takes TWO dtype arguments, the pointee dtype and the offset's dtype: ``(Addptr t o p off)``
    (so address rules can add offsets of one dtype).
  - Attributes: ``axis``/``start``/``end`` as ``i64``; ``dtype`` (of ``cast``/``bitcast``) as a
    ``DT``; ``shape``/``perm`` as a ``String`` of comma-separated ints (``"16,32"``); ``dot``'s
    optional ``precision`` and ``libdevice``'s ``symbol`` as a ``String`` (``"ieee"``, ``"tf32"``;
    ``"__nv_nextafterf"``), always present in the term
    (:data:`ATTR_DEFAULTS` fills an absent one), so a TF32 dot and an exact one never share a
    term: ``(Dot t "tf32" a b acc)``.
  - Ops with optional operands get one constructor per operand count, suffixed with the count
    when it is not the maximum: ``(Dot t p a b acc)`` and ``(Dot2 t p a b)``.
* Constants: ``(Const t v)`` (integer and bool dtypes; ``v`` the value as i64, unsigned values
  ``>= 2**63`` wrapped to two's complement) and ``(ConstF t bits)`` (float dtypes; ``bits`` the
  IEEE-754 binary64 pattern of the value as a signed i64, so ``-0.0`` and NaN stay distinct).
* Values the optimizer does not look into: ``(Opaque t id)`` (data) and ``(OpaquePtr t id)``
  (pointers to ``t``), ``id`` unique per value within one run.
* Range analysis: ``(function LowerBound (Term) i64 :merge (max old new))`` and
  ``(function UpperBound (Term) i64 :merge (min old new))`` — inclusive bounds on every lane's
  value as a mathematical integer.
* Rulesets ``exact``, ``ranges``, ``fast_math``.
"""

from __future__ import annotations

import hashlib
import math
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from eggpu.ir import ALL_DTYPES, OPS_LIST, DType
from eggpu.ir.dtypes import round_float
from eggpu.ir.errors import IRError
from eggpu.ir.ops import DOT_PRECISIONS, LEAF
from eggpu.ir.types import BlockType, PointerType

# ------------------------------------------------------------------ dtypes

#: egglog DT constructor name <-> DType
DTYPE_CONSTRUCTORS: dict[DType, str] = {d: ("Bool" if d.is_bool else d.name.upper()) for d in ALL_DTYPES}
CONSTRUCTOR_DTYPES: dict[str, DType] = {v: k for k, v in DTYPE_CONSTRUCTORS.items()}

#: family relation name -> predicate on DType (all asserted as facts in the schema)
FAMILY_RELATIONS: dict[str, Any] = {
    "IsInt": lambda d: d.is_int,
    "IsSigned": lambda d: d.is_signed,
    "IsUnsigned": lambda d: d.is_unsigned,
    "IsFloat": lambda d: d.is_float,
    "IsBool": lambda d: d.is_bool,
    "IsIntOrBool": lambda d: d.is_int or d.is_bool,
    "IsNum": lambda d: d.is_int or d.is_float,
}

RULESETS: tuple[str, ...] = ("exact", "ranges", "fast_math")

#: attribute name -> egglog sort of its argument
ATTR_KINDS: dict[str, str] = {
    "axis": "i64",
    "start": "i64",
    "end": "i64",
    "dtype": "DT",
    "shape": "String",
    "perm": "String",
    "precision": "Name",
    "symbol": "Name",
}

#: optional attributes (``OpDef.optional_attrs``) -> the value an absent one stands for; the
#: constructor always carries the argument, the decoder drops it again when it is the default
ATTR_DEFAULTS: dict[str, Any] = {"precision": DOT_PRECISIONS[0]}

#: optional attributes the e-graph does not hold (no constructor argument, so the schema and every
#: shipped proof stay as they are): :func:`eggpu.optimizer.optimize` returns a kernel whose ops
#: carry one unoptimized (``int_to_ptr``'s ``const``: a conversion to a const pointer)
UNENCODED_ATTRS: frozenset[str] = frozenset({"const"})


def pascal(name: str) -> str:
    """``reduce_sum`` -> ``ReduceSum``; ``addptr`` -> ``Addptr``."""
    return "".join(p[:1].upper() + p[1:] for p in name.split("_"))


# ------------------------------------------------------------------ constructors


@dataclass(frozen=True)
class ConstructorInfo:
    """One ``Term`` constructor of the schema.

    ``dtypes`` names what each leading ``DT`` argument is: ``"operand0"`` (element dtype of the
    first operand), ``"operand1"`` (of the second operand: ``where``'s branches), ``"result"``
    (leaves), ``"pointee"`` and ``"offset"`` (``addptr``). ``attrs`` lists ``(attr name, egglog
    sort)`` in order; for ``Const`` the single attr is ``("value", "i64")`` and for ``ConstF``
    ``("value", "bits")`` (the binary64 pattern). ``op`` is the op-table name, or ``None`` for the
    non-op leaves ``Opaque``/``OpaquePtr``.
    """

    name: str
    op: str | None
    operands: int
    attrs: tuple[tuple[str, str], ...]
    dtypes: tuple[str, ...] = ("operand0",)

    def split(self, args: Sequence[Any]) -> tuple[Sequence[Any], Sequence[Any], Sequence[Any]]:
        """A term's arguments ``args`` (after the head) as (its dtype arguments, its attributes,
        its operands)."""
        nd, na = len(self.dtypes), len(self.attrs)
        return args[:nd], args[nd:nd + na], args[nd + na:]

    @property
    def arity(self) -> int:
        """Number of egglog arguments (dtypes + attributes + operands)."""
        return len(self.dtypes) + len(self.attrs) + self.operands

    @property
    def arg_sorts(self) -> tuple[str, ...]:
        """egglog sorts of the arguments, in order."""
        attr_sorts = tuple({"bits": "i64", "Name": "String"}.get(k, k) for _, k in self.attrs)
        return ("DT",) * len(self.dtypes) + attr_sorts + ("Term",) * self.operands

    def declaration(self, cost: int | None = None) -> str:
        c = f" :cost {cost}" if cost is not None else ""
        return f"(constructor {self.name} ({' '.join(self.arg_sorts)}) Term{c})"


def _build_constructors() -> dict[str, ConstructorInfo]:
    out: dict[str, ConstructorInfo] = {}
    for op in OPS_LIST:
        if not op.is_pure:
            continue
        if op.name == "const":
            out["Const"] = ConstructorInfo("Const", "const", 0, (("value", "i64"),), ("result",))
            out["ConstF"] = ConstructorInfo("ConstF", "const", 0, (("value", "bits"),), ("result",))
            continue
        attrs = []
        for a in op.attrs + tuple(x for x in op.optional_attrs if x not in UNENCODED_ATTRS):
            if a in op.optional_attrs and a not in ATTR_DEFAULTS:
                raise IRError(f"schema: optional attribute {a!r} of {op.name!r} has no default (add it to ATTR_DEFAULTS)")
            if a not in ATTR_KINDS:
                raise IRError(f"schema: op {op.name!r} has attribute {a!r} with no egglog sort (add it to ATTR_KINDS)")
            attrs.append((a, ATTR_KINDS[a]))
        if op.has(LEAF):
            dts: tuple[str, ...] = ("result",)
        elif op.name == "where":
            dts = ("operand1",)
        elif op.name == "addptr":
            dts = ("pointee", "offset")
        else:
            dts = ("operand0",)
        lo, hi = op.arity
        if hi is None:
            raise IRError(f"schema: pure op {op.name!r} is variadic; the schema cannot encode it")
        for n in range(lo, hi + 1):
            name = pascal(op.name) + ("" if n == hi else str(n))
            out[name] = ConstructorInfo(name, op.name, n, tuple(attrs), dts)
    for name in ("Opaque", "OpaquePtr"):
        out[name] = ConstructorInfo(name, None, 0, (("id", "i64"),), ("result",))
    return out


#: egglog constructor name -> info (every pure op, plus ``ConstF``, ``Opaque``, ``OpaquePtr``)
CONSTRUCTORS: dict[str, ConstructorInfo] = _build_constructors()

#: op name -> its constructor names (``const`` -> Const, ConstF; ``dot`` -> Dot, Dot2)
OP_TO_CONSTRUCTOR: dict[str, tuple[str, ...]] = {}
for _c in CONSTRUCTORS.values():
    if _c.op is not None:
        OP_TO_CONSTRUCTOR.setdefault(_c.op, ())
        OP_TO_CONSTRUCTOR[_c.op] += (_c.name,)

# ------------------------------------------------------------------ float bits


def canonical_int(v: int, t: Any) -> bool:
    """Whether the literal ``v`` is a canonical value of the integer or bool dtype ``t`` as rules
    state constants: 0/1 for bool, a signed 64-bit pattern for u64 (egglog's ``i64``), the
    dtype's range otherwise."""
    if t.is_bool:
        return v in (0, 1)
    if t.is_unsigned and t.bits == 64:
        return -(1 << 63) <= v < (1 << 63)
    return t.min <= v <= t.max


def float_bits(value: float) -> int:
    """The IEEE-754 binary64 bit pattern of ``value`` as a signed i64 (egglog's ``i64``)."""
    return struct.unpack("<q", struct.pack("<d", float(value)))[0]


def bits_float(bits: int) -> float:
    """Inverse of :func:`float_bits` (accepts the signed or unsigned 64-bit pattern)."""
    return struct.unpack("<d", struct.pack("<Q", bits & 0xFFFF_FFFF_FFFF_FFFF))[0]


def const_payload(value: Any, dtype: DType) -> tuple[str, int]:
    """``(constructor, i64 argument)`` for a constant of ``dtype``.

    Floats are rounded to ``dtype`` first (RNE) so equal values get equal terms; integers must be
    in range; unsigned values ``>= 2**63`` wrap to negative i64; bool is 0/1.
    """
    if dtype.is_float:
        return "ConstF", float_bits(round_float(value, dtype))
    v = int(value)
    if dtype.is_bool:
        return "Const", 1 if v else 0
    if not dtype.min <= v <= dtype.max:
        raise IRError(f"constant {value!r} out of range for {dtype}")
    return "Const", v - (1 << 64) if v >= 1 << 63 else v


def const_value(ctor: str, arg: int, dtype: DType) -> int | float | bool:
    """Inverse of :func:`const_payload`: the Python value of ``(Const t arg)``/``(ConstF t arg)``."""
    if ctor == "ConstF":
        return bits_float(arg)
    if dtype.is_bool:
        return bool(arg)
    if dtype.is_unsigned and arg < 0:
        return arg + (1 << 64)
    return int(arg)


def float_literal(text: str) -> float | None:
    """Parse a rule-file float literal (``1.0``, ``-0.0``, ``inf``, ``-inf``, ``nan``, ``1e-3``);
    None when ``text`` is not one. Integer literals (no ``.``/``e``/inf/nan) are not floats."""
    t = text.lower()
    if t in ("inf", "+inf", "-inf", "nan", "+nan", "-nan"):
        return float(t)
    if not any(ch in t for ch in ".e"):
        return None
    try:
        v = float(t)
    except ValueError:
        return None
    return v if not math.isnan(v) or "nan" in t else None


# ------------------------------------------------------------------ encode / decode heads


def _dt_of(x: BlockType | DType) -> DType:
    if isinstance(x, BlockType):
        e = x.elem
        return e.pointee if isinstance(e, PointerType) else e
    return x


def attr_text(kind: str, value: Any) -> str:
    """egglog text of an attribute value of sort ``kind``."""
    if kind == "i64":
        return str(int(value))
    if kind == "DT":
        return f"({DTYPE_CONSTRUCTORS[value]})"
    if kind == "String":
        return '"' + ",".join(str(int(v)) for v in value) + '"'
    if kind == "Name":
        return f'"{value}"'
    raise IRError(f"schema: unknown attribute kind {kind!r}")


def term_head(
    op: str,
    operand_types: Sequence[BlockType],
    result_type: BlockType | None,
    attrs: Mapping[str, Any],
) -> tuple[str, list[str]]:
    """Constructor name and the egglog text of its non-operand arguments for one IR op.

    Example: ``term_head("splat", [f32], f32[128], {"shape": (128,)})`` ->
    ``("Splat", ["(F32)", '"128"'])``; the caller appends the operand terms.
    For ``const`` the value goes in as the i64 payload (:func:`const_payload`).
    """
    if op == "const":
        dt = attrs["dtype"]
        ctor, payload = const_payload(attrs["value"], dt)
        return ctor, [f"({DTYPE_CONSTRUCTORS[dt]})", str(payload)]
    names = OP_TO_CONSTRUCTOR.get(op)
    if not names:
        raise IRError(f"schema: op {op!r} has no constructor (not pure?)")
    info = next((CONSTRUCTORS[n] for n in names if CONSTRUCTORS[n].operands == len(operand_types)), None)
    if info is None:
        raise IRError(f"schema: op {op!r} has no constructor with {len(operand_types)} operands")
    args = []
    for role in info.dtypes:
        if role == "result":
            assert result_type is not None, f"{op}: result type needed"
            dt = _dt_of(result_type)
        elif role in ("operand0", "pointee"):
            dt = _dt_of(operand_types[0])
        elif role == "operand1":
            dt = _dt_of(operand_types[1])
        elif role == "offset":
            dt = _dt_of(operand_types[1])
        else:  # pragma: no cover - table bug
            raise AssertionError(role)
        args.append(f"({DTYPE_CONSTRUCTORS[dt]})")
    for name, kind in info.attrs:
        args.append(attr_text(kind, attrs[name] if name in attrs or name not in ATTR_DEFAULTS else ATTR_DEFAULTS[name]))
    return info.name, args


def decode_attr(kind: str, value: Any) -> Any:
    """Inverse of :func:`attr_text` on already-parsed values: DT names -> DType, strings -> tuples."""
    if kind == "DT":
        return CONSTRUCTOR_DTYPES[value] if isinstance(value, str) else value
    if kind == "String":
        s = str(value).strip('"')
        return tuple(int(p) for p in s.split(",")) if s else ()
    if kind == "Name":
        return str(value).strip('"')
    return int(value)


# ------------------------------------------------------------------ schema text


def schema_text(costs: Mapping[str, int] | None = None) -> str:
    """The egglog program declaring the schema (sorts, relations + facts, constructors, range
    functions, rulesets). ``costs`` optionally gives ``:cost`` per constructor name (does not
    change :data:`SCHEMA_VERSION`, which hashes the cost-free text)."""
    costs = costs or {}
    lines = [";; eggpu schema (generated from the op table by eggpu.optimizer.schema)"]
    lines.append("(datatype DT " + " ".join(f"({c})" for c in DTYPE_CONSTRUCTORS.values()) + ")")
    for rel in FAMILY_RELATIONS:
        lines.append(f"(relation {rel} (DT))")
    lines.append("(relation Width (DT i64))")
    for d, c in DTYPE_CONSTRUCTORS.items():
        facts = [f"({rel} ({c}))" for rel, pred in FAMILY_RELATIONS.items() if pred(d)]
        facts.append(f"(Width ({c}) {d.bits})")
        lines.append(" ".join(facts))
    lines.append("(sort Term)")
    for info in CONSTRUCTORS.values():
        lines.append(info.declaration(costs.get(info.name)))
    lines.append("(function LowerBound (Term) i64 :merge (max old new))")
    lines.append("(function UpperBound (Term) i64 :merge (min old new))")
    from .analyses import declarations

    lines += declarations()
    for rs in RULESETS:
        lines.append(f"(ruleset {rs})")
    return "\n".join(lines) + "\n"


#: sha256 (first 16 hex digits) of the cost-free schema text
SCHEMA_VERSION: str = hashlib.sha256(schema_text().encode()).hexdigest()[:16]

__all__ = [
    "ATTR_DEFAULTS", "ATTR_KINDS", "CONSTRUCTORS", "CONSTRUCTOR_DTYPES", "DTYPE_CONSTRUCTORS", "FAMILY_RELATIONS",
    "OP_TO_CONSTRUCTOR", "RULESETS", "SCHEMA_VERSION", "ConstructorInfo", "attr_text", "bits_float",
    "const_payload", "const_value", "decode_attr", "float_bits", "float_literal", "pascal",
    "schema_text", "term_head",
]


def constructors_markdown() -> str:
    """The constructors table of ``docs/rules.md`` (generated; a test keeps the doc in sync)."""
    from eggpu.ir import OPS

    rows = ["| constructor | op | arguments | dtype argument(s) |", "|---|---|---|---|"]
    for info in CONSTRUCTORS.values():
        args = []
        for role in info.dtypes:
            args.append({"operand0": "t", "operand1": "t", "result": "t", "pointee": "t", "offset": "o"}[role] + ":DT")
        for name, kind in info.attrs:
            shown = {"bits": "i64 (binary64 bits)", "Name": "String"}.get(kind, kind)
            args.append(f"{name}:{shown}")
        args += [f"x{i}:Term" for i in range(info.operands)]
        roles = ", ".join({"operand0": "dtype of the first operand", "operand1": "dtype of the branches",
                           "result": "result dtype", "pointee": "pointee dtype",
                           "offset": "offset dtype"}[r] for r in info.dtypes)
        op = f"`{info.op}`" if info.op else "(opaque value)"
        if info.op and OPS[info.op].doc:
            op += " — " + OPS[info.op].doc.replace("|", "\\|")
        rows.append(f"| `{info.name}` | {op} | `({info.name} {' '.join(args)})` | {roles} |")
    return "\n".join(rows) + "\n"
