"""Proved rewrite rules as lemmas of translation validation (:mod:`.validate_solver`).

A rule the verifier proved at a concrete dtype (every dtype argument written out, ``(F32)``; no
guards) says ``lhs == rhs`` for every value of its variables. When the structural diff of a
validation reaches two subterms that differ, and the original's subterm is an instance of such
a rule's left-hand side while the optimized one is an instance of its right-hand side, the two
are equal as soon as the terms bound to each variable on the two sides are equal (which the
diff shows recursively, usually by identity). So a rewrite z3 proved once with a large budget —
``0.5 * (1.0 + x) => fma(x, 0.5, 0.5)`` at f32 takes 13 M z3 units — is not proved again inside
every compile's validation budget (500 ms a pair).

The lemma's two sides are built with the same encoders the validation uses (:func:`.z3ops.encode`,
:func:`.z3ops.const`), with one fresh z3 constant per rule variable, so an instance matches
syntactically: same declarations, same numerals, operands of commutative operators in either
order. Sound because the rule's proof covers every value of the variables at that dtype and the
encodings are the validation's own; only exact mode (the rules' semantics) uses lemmas. Rules with
guards, dtype variables, attributes or casts are not lemmas (:func:`lemma_of` returns None).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass

import z3

from eggpu.ir import DType
from eggpu.ir.dtypes import bool_

from . import z3ops
from .rules_loader import Atom, Rule, SList, Sx

_COMMUTATIVE_KINDS = frozenset({
    z3.Z3_OP_BADD, z3.Z3_OP_BMUL, z3.Z3_OP_BAND, z3.Z3_OP_BOR, z3.Z3_OP_BXOR, z3.Z3_OP_AND, z3.Z3_OP_OR,
    z3.Z3_OP_XOR, z3.Z3_OP_EQ, z3.Z3_OP_FPA_ADD, z3.Z3_OP_FPA_MUL, z3.Z3_OP_FPA_EQ,
})


@dataclass(frozen=True)
class Lemma:
    """``lhs == rhs`` for all values of ``variables`` (z3 constants private to the lemma)."""

    name: str
    lhs: z3.ExprRef
    rhs: z3.ExprRef
    variables: tuple[z3.ExprRef, ...]


class _NotALemma(Exception):
    pass


def lemma_of(rule: Rule, index: int = 0) -> Lemma | None:
    """The lemma of a proved ``rewrite`` at concrete dtypes without guards, else None (the caller
    passes only rules whose every dtype was proved: :func:`.rule_verifier.usable_rules`)."""
    if rule.kind != "rewrite" or rule.guards or rule.fast_math or rule.lhs is None or rule.rhs is None:
        return None
    if any(sort != "Term" and sort != "String" for sort in rule.var_sorts.values()):
        return None  # a dtype or i64 variable: not one concrete instance
    names: dict[str, tuple[z3.ExprRef, DType]] = {}
    try:
        lhs = _encode(rule.lhs, None, names, f"lemma{index}!")
        rhs = _encode(rule.rhs, None, names, f"lemma{index}!")
    except (_NotALemma, KeyError, ValueError, z3.Z3Exception):
        return None
    return Lemma(rule.name, lhs, rhs, tuple(v for v, _ in names.values()))


def lemmas_of(rules: Iterable[Rule]) -> list[Lemma]:
    """:func:`lemma_of` of each rule that has one."""
    out = []
    for i, r in enumerate(rules):
        lm = lemma_of(r, i)
        if lm is not None:
            out.append(lm)
    return out


def _dtype(x: Sx) -> DType:
    from .schema import CONSTRUCTOR_DTYPES

    if not (isinstance(x, SList) and len(x.items) == 1 and isinstance(x.items[0], Atom)):
        raise _NotALemma
    return CONSTRUCTOR_DTYPES[x.items[0].text]


def _encode(node: Sx, want: DType | None, names: dict[str, tuple[z3.ExprRef, DType]], prefix: str) -> z3.ExprRef:
    """The lane value of a rule side (``want``: the dtype its position expects, None at the root)."""
    from .schema import CONSTRUCTORS

    if isinstance(node, Atom):  # a Term variable
        if want is None:
            raise _NotALemma
        hit = names.get(node.text)
        if hit is None:
            hit = names[node.text] = (z3ops.var(prefix + node.text, want), want)
        if hit[1] != want:
            raise _NotALemma
        return hit[0]
    if not isinstance(node, SList) or not isinstance(node.items[0], Atom):
        raise _NotALemma
    head = node.head
    if head == "Splat":  # a lane identity: (Splat t shape x)
        return _encode(node.items[3], _dtype(node.items[1]), names, prefix)
    if head in ("Const", "ConstF"):
        t = _dtype(node.items[1])
        lit = node.items[2]
        if not isinstance(lit, Atom):
            raise _NotALemma
        v = int(lit.text)
        if head == "ConstF":
            (value,) = struct.unpack("<d", struct.pack("<q", v))
            return z3ops.const(value, t).value
        return z3ops.const(v, t).value
    info = CONSTRUCTORS[head]
    if info.op is None or info.attrs or len(info.dtypes) != 1 or info.op in ("cast", "bitcast"):
        raise _NotALemma
    t = _dtype(node.items[1])
    operands = node.items[2:]
    if len(operands) != info.operands:
        raise _NotALemma
    kinds = [t] * len(operands)
    if info.op == "where":
        kinds[0] = bool_
    args = [_encode(o, k, names, prefix) for o, k in zip(operands, kinds)]
    enc = z3ops.encode(info.op, t, {}, args)
    if not z3.is_true(enc.defined):
        raise _NotALemma  # the IR is total: every op the synthesizer uses is defined everywhere
    return enc.value


def match(pattern: z3.ExprRef, term: z3.ExprRef, variables: frozenset[int], binds: dict[int, z3.ExprRef]) -> bool:
    """Whether ``term`` is an instance of ``pattern`` (whose variables have the ids
    ``variables``), extending ``binds`` (variable id -> subterm; unchanged on failure). A
    variable met twice must bind the same term (identity); the two operands of a commutative
    operator match in either order."""
    pid = pattern.get_id()
    if pid in variables:
        hit = binds.get(pid)
        if hit is not None:
            return hit.eq(term)
        if not pattern.sort().eq(term.sort()):
            return False
        binds[pid] = term
        return True
    if pattern.eq(term):
        return True
    if not (z3.is_app(pattern) and z3.is_app(term)) or pattern.num_args() == 0:
        return False
    if not pattern.decl().eq(term.decl()) or pattern.num_args() != term.num_args():
        return False
    ps, ts = pattern.children(), term.children()
    orders = [ts]
    if pattern.decl().kind() in _COMMUTATIVE_KINDS and len(ts) >= 2:
        swapped = list(ts)
        swapped[-2], swapped[-1] = ts[-1], ts[-2]
        orders.append(swapped)
    for order in orders:
        trial = dict(binds)
        if all(match(p, t, variables, trial) for p, t in zip(ps, order)):
            binds.clear()
            binds.update(trial)
            return True
    return False


__all__ = ["Lemma", "lemma_of", "lemmas_of", "match"]
