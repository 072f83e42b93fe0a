"""Syntactic facts about a rule, before any z3 term is built: the :class:`Ptr` type of pointer
terms, why a dtype assignment cannot match (:class:`_Infeasible`, :class:`_NoMatch` and
:data:`NO_MATCH_REASONS`) or what the encoding cannot decide (:class:`_Unsupported`), op dtype
families, canonical literals, the rule's dtype variables and the lane mapping of its variables
through shape ops."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import z3

from eggpu.ir import DType

from . import z3ops
from .rules_loader import Atom, Rule, SList, Sx
from .schema import CONSTRUCTOR_DTYPES, CONSTRUCTORS, FAMILY_RELATIONS

_SHAPE_PATH_OPS = frozenset({"broadcast", "expand_dims", "reshape"})


# ------------------------------------------------------------------ types


@dataclass(frozen=True)
class Ptr:
    pointee: DType

    def __str__(self) -> str:
        return f"ptr<{self.pointee}>"


Ty = DType | Ptr


#: why a dtype assignment cannot match (``_Infeasible.kind`` -> the words ``rules check`` prints)
NO_MATCH_REASONS = {
    "op": "an op is not defined on the dtype",
    "literal": "a literal is not a value of the dtype",
    "guard": "the guards cannot hold",
    "types": "the patterns' types do not fit together",
}


class _Infeasible(Exception):
    """This dtype assignment cannot match (the lhs/guards are ill-typed for it); ``kind`` is a
    key of :data:`NO_MATCH_REASONS`."""

    def __init__(self, msg: str, kind: str = "types"):
        super().__init__(msg)
        self.kind = kind


class _IllTyped(Exception):
    """The rhs builds an ill-typed term for a feasible assignment (the rule is wrong)."""

    def __init__(self, msg: str, kind: str = "types"):
        super().__init__(msg)


@dataclass(frozen=True)
class _NoMatch:
    """An assignment that cannot match, with the reason kind (see :data:`NO_MATCH_REASONS`)."""

    kind: str
    detail: str = ""


#: the words for an op family in a "does not accept" message
_FAMILY_WORDS = {"num": "ints and floats", "int": "ints (not bool)", "int|bool": "ints and bool",
                 "float": "floats"}
#: what to write instead on bool, where the IR has a bool op with the intended meaning
_BOOL_INSTEAD = {"add": "or (saturating) or xor (mod 2)", "sub": "xor (mod 2)", "mul": "and",
                 "minimum": "and", "maximum": "or", "neg": "the operand itself (mod 2)"}


def _family_mismatch(op: str, family: str, t: DType) -> str:
    """Why ``op`` cannot take ``t``, e.g. ``add does not accept bool (its operands are ints and
    floats; on bool write or (saturating) or xor (mod 2))``: the IR has no bool arithmetic, as
    Triton's frontend promotes bool operands of ``+``/``*`` to int first."""
    msg = f"{op} does not accept {t} (its operands are {_FAMILY_WORDS.get(family, family)}"
    if t.is_bool and op in _BOOL_INSTEAD:
        msg += f"; on bool write {_BOOL_INSTEAD[op]}"
    return msg + ")"


class _Unsupported(Exception):
    """The rule uses something the encoding cannot decide."""


def _family_ok(family: str, d: DType) -> bool:
    if family == "any":
        return True
    if family == "num":
        return d.is_int or d.is_float
    if family == "int":
        return d.is_int
    if family == "int|bool":
        return d.is_int or d.is_bool
    if family == "float":
        return d.is_float
    raise AssertionError(family)


def _int(node: Sx) -> int | None:
    if isinstance(node, Atom):
        try:
            return int(node.text)
        except ValueError:
            return None
    return None


def _canon(node: Sx, env: Mapping[str, DType]) -> str:
    """Canonical text of a subtree with dtype variables replaced by their assignment."""
    if isinstance(node, Atom):
        d = env.get(node.text)
        return f"({CONSTRUCTOR_DTYPES_INV[d]})" if d is not None else node.text
    return "(" + " ".join(_canon(i, env) for i in node.items) + ")"


CONSTRUCTOR_DTYPES_INV = {v: k for k, v in CONSTRUCTOR_DTYPES.items()}


def _const_names(e: z3.ExprRef) -> set[str]:
    out: set[str] = set()
    seen: set[int] = set()
    stack = [e]
    while stack:
        x = stack.pop()
        if x.get_id() in seen:
            continue
        seen.add(x.get_id())
        if z3.is_const(x) and x.decl().kind() == z3.Z3_OP_UNINTERPRETED:
            out.add(x.decl().name())
        stack.extend(x.children())
    return out


def _exact_in(v: float, t: DType) -> bool:
    import math

    import numpy as np

    if math.isnan(v):
        return True
    with np.errstate(all="ignore"):
        r = float(np.asarray(v).astype(t.np))
    return r == v and math.copysign(1, r) == math.copysign(1, v)


def _value_of(v: int, t: DType) -> int:
    if t.is_unsigned and v < 0:
        return v + (1 << 64)
    return v


def _canonical_sym(v: z3.BitVecRef, t: DType) -> z3.BoolRef:
    if t.is_bool:
        return z3.Or(v == 0, v == 1)
    if t.bits == 64:
        return z3ops.TRUE
    low = z3.Extract(t.bits - 1, 0, v)
    ext = z3.SignExt(64 - t.bits, low) if t.is_signed else z3.ZeroExt(64 - t.bits, low)
    return ext == v


def _partial_inside(node: Sx) -> bool:
    if isinstance(node, Atom):
        return False
    info = CONSTRUCTORS.get(node.head)
    if info is not None and info.op in ("div", "rem", "shl", "shr"):
        return True
    return any(_partial_inside(i) for i in node.items[1:])


# ------------------------------------------------------------------ rule analysis


def _dt_vars(rule: Rule) -> list[str]:
    return sorted(v for v, s in rule.var_sorts.items() if s == "DT")


def _relation_ok(rule: Rule, env: Mapping[str, DType]) -> bool:
    for g in rule.guards:
        if isinstance(g, SList) and g.head in FAMILY_RELATIONS:
            a = g.items[1]
            d = CONSTRUCTOR_DTYPES[a.head] if isinstance(a, SList) else env[a.text]
            if not FAMILY_RELATIONS[g.head](d):
                return False
        if isinstance(g, SList) and g.head == "Width":
            a, w = g.items[1], _int(g.items[2])
            d = CONSTRUCTOR_DTYPES[a.head] if isinstance(a, SList) else env[a.text]
            if w is not None and d.bits != w:
                return False
    return True


def _lane_paths(node: Sx, path: tuple, out: dict[str, set], with_attrs: bool = False) -> None:
    """For each variable, the chains of shape ops (``broadcast``/``expand_dims``/``reshape`` with
    their attributes) between it and the root; a ``splat`` resets the chain (a scalar has one
    lane). Block ops are not entered (their operands are compared as whole blocks)."""
    if isinstance(node, Atom):
        if _int(node) is None and not node.is_string:
            out.setdefault(node.text, set()).add(path)
        return
    info = CONSTRUCTORS.get(node.head)
    if info is None:
        return
    op = info.op
    if op in z3ops.BLOCK_OPS:
        acc = node.items[1 + len(info.dtypes) + len(info.attrs) + 2:] if op == "dot" else ()
        for a in acc:
            _lane_paths(a, path, out, with_attrs)
        return
    nd = len(info.dtypes)
    operands = node.items[1 + nd + len(info.attrs):]
    attr_txt = tuple(str(a) for a in node.items[1 + nd:1 + nd + len(info.attrs)])
    if op == "splat":
        sub = ("splat", attr_txt) if with_attrs else ("splat",)
    elif op in _SHAPE_PATH_OPS:
        sub = path + ((node.head, attr_txt),)
    else:
        sub = path
    for o in operands:
        _lane_paths(o, sub, out, with_attrs)


def _lane_mapping_problem(rule: Rule) -> str | None:
    """A Term variable reached through different shape-op chains has no single lane value."""
    out: dict[str, set] = {}
    roots = [rule.lhs, rule.rhs] if rule.kind != "rule" else []
    if rule.kind == "rule":
        for g in rule.guards:
            if isinstance(g, SList) and g.head == "=":
                roots += [x for x in g.items[1:] if isinstance(x, SList) and x.head in CONSTRUCTORS]
            elif isinstance(g, SList) and g.head in CONSTRUCTORS:
                roots.append(g)
        for a in rule.actions:
            if a.head == "union":
                roots += list(a.items[1:])
    for r in roots:
        if r is not None:
            _lane_paths(r, (), out)
    for v, paths in out.items():
        if rule.var_sorts.get(v) == "Term" and len(paths) > 1:
            return f"variable {v} is reached through different shape ops (no single lane value)"
    return None
