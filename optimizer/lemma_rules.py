"""Which proved rules are lemmas of translation validation, and at which dtypes — decided on the
rule's text alone, without z3 (shared by :mod:`.validate_lemmas`, which encodes the lemmas in
z3, and :mod:`.validate_terms`, which matches them on z3-free terms)."""

from __future__ import annotations

import struct
from collections.abc import Mapping

from eggpu.ir import DType

from .rules_loader import RANGE_FUNCTIONS, Atom, Rule, SList, Sx
from .schema import canonical_int


class NotALemma(Exception):
    pass


def i64_ok(node: Sx, rule: Rule) -> bool:
    """Whether ``node`` is an i64 expression :func:`.validate_guards.guards_hold` evaluates."""
    if isinstance(node, Atom):
        return rule.var_sorts.get(node.text, "i64") == "i64" or node.text.lstrip("-").isdigit()
    if not isinstance(node.items[0], Atom):
        return False
    if node.head in RANGE_FUNCTIONS:
        return isinstance(node.items[1], Atom) and rule.var_sorts.get(node.items[1].text) == "Term"
    return node.head in ("+", "-", "*", "/", "%", "<<", ">>", "&", "|", "^", "min", "max", "not-i64") and all(
        i64_ok(x, rule) for x in node.items[1:])


def range_guarded(rule: Rule) -> bool:
    from .guard_eval import STATIC_GUARDS

    return any(isinstance(g, SList) and g.head not in STATIC_GUARDS for g in rule.guards)


def plain_assignments(rule: Rule, pool: list[DType] | None) -> list[dict[str, DType]]:
    """:func:`.rule_verifier.assignments` of a rule with one dtype variable (its family and
    ``Width`` guards decide), without importing the prover's ``rule_analysis``."""
    from eggpu.ir import ALL_DTYPES

    from .schema import FAMILY_RELATIONS

    (v,) = [v for v, s in rule.var_sorts.items() if s == "DT"]
    out = []
    for d in (pool if pool is not None else ALL_DTYPES):
        ok = True
        for g in rule.guards:
            if not (isinstance(g, SList) and isinstance(g.items[1], Atom) and g.items[1].text == v):
                continue
            if g.head in FAMILY_RELATIONS:
                ok = ok and FAMILY_RELATIONS[g.head](d)
            elif g.head == "Width":
                w = _int_or_none(g.items[2].text) if isinstance(g.items[2], Atom) else None
                ok = ok and (w is None or d.bits == w)
        if ok:
            out.append({v: d})
    return out


def plain(rule: Rule) -> bool:
    """One dtype variable, and either integer families with no float literal or ``IsFloat`` alone
    with no integer literal: the verifier's encoding can then fail at an assignment only on a
    non-canonical literal (:func:`literals_canonical`) or an ill-typed pattern (no lemma)."""
    from .guard_eval import STATIC_GUARDS

    dvs = [v for v, s in rule.var_sorts.items() if s == "DT"]
    if len(dvs) != 1:
        return False
    families = {g.head for g in rule.guards if isinstance(g, SList) and g.head in STATIC_GUARDS} - {"Width"}
    heads = _heads(rule.lhs) | _heads(rule.rhs)
    for g in rule.guards:
        heads |= _heads(g)
    if families & {"IsInt", "IsSigned", "IsUnsigned"}:
        return "ConstF" not in heads
    return families == {"IsFloat"} and "Const" not in heads


def _heads(node: Sx | None) -> set[str]:
    if not isinstance(node, SList):
        return set()
    out = {node.head} if isinstance(node.items[0], Atom) else set()
    for x in node.items[1:]:
        out |= _heads(x)
    return out


def literals_canonical(rule: Rule, env: Mapping[str, DType]) -> bool:
    """Every ``(Const t c)`` of the rule's sides and guards has a canonical ``c`` at its dtype
    (the verifier's ``_Infeasible("... not a canonical ... constant")`` otherwise; the test of
    this module's callers compares with the verifier on every shipped rule)."""
    def ok(node: Sx, pattern: bool) -> bool:
        if not isinstance(node, SList):
            return True
        if node.head in ("Const", "ConstF") and len(node.items) == 3 and isinstance(node.items[2], Atom):
            v = _int_or_none(node.items[2].text)
            try:
                t = rule_dtype(node.items[1], env)
            except (NotALemma, KeyError):
                return False
            if v is None:
                pass
            elif node.head == "Const" and not canonical_int(v, t):
                return False
            elif node.head == "ConstF" and pattern:  # a right-hand side's float literal is rounded
                (f,) = struct.unpack("<d", struct.pack("<q", v))
                if not _exact_float(f, t):
                    return False
        return all(ok(x, pattern) for x in node.items[1:])

    return (ok(rule.lhs, True) if rule.lhs is not None else True) and \
        (ok(rule.rhs, False) if rule.rhs is not None else True) and all(ok(g, True) for g in rule.guards)


def _exact_float(v: float, t: DType) -> bool:
    """Whether ``v`` is a value of float dtype ``t`` (rule_analysis._exact_in, without numpy):
    NaN counts, and the sign of zero must survive."""
    import math

    if math.isnan(v) or t.bits == 64:
        return True
    try:
        if t.name == "f32":
            r = struct.unpack("<f", struct.pack("<f", v))[0]
        elif t.name == "f16":
            r = struct.unpack("<e", struct.pack("<e", v))[0]
        elif t.name == "bf16":
            b = struct.pack("<f", v)
            if b[:2] != b"\0\0":  # the low half of the f32 bits: bf16 keeps only the high half
                return False
            r = struct.unpack("<f", b)[0]
        else:
            return False
    except OverflowError:
        return False
    return r == v and math.copysign(1, r) == math.copysign(1, v)


def _int_or_none(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


def rule_dtype(x: Sx, env: Mapping[str, DType] | None = None) -> DType:
    from .schema import CONSTRUCTOR_DTYPES

    if isinstance(x, Atom) and env and x.text in env:
        return env[x.text]
    if not (isinstance(x, SList) and len(x.items) == 1 and isinstance(x.items[0], Atom)):
        raise NotALemma
    return CONSTRUCTOR_DTYPES[x.items[0].text]


__all__ = ["NotALemma", "i64_ok", "literals_canonical", "plain", "plain_assignments", "range_guarded", "rule_dtype"]
