"""The range guards of a proved rule, evaluated at one instance without a solver, whatever the
terms are (z3 terms in :mod:`.validate_guards`, z3-free ones in :mod:`.validate_terms`).

A guard is a comparison of egglog i64 expressions over ``LowerBound``/``UpperBound`` of the
rule's Term variables (``bound(term, signed)`` gives an interval that holds on every lane of the
obligation), ``(= v (Ctor ...))`` naming a term (``define(v)`` builds it at the instance),
``(= k expr)`` fixing an i64 variable, or a family relation / ``Width`` (decided when the lemma
was built for its dtypes: :data:`STATIC_GUARDS`). egglog's checked i64 arithmetic is evaluated
as the verifier encodes it: an overflow, a shift out of range or a division by zero makes the
guard not established, as does anything this module cannot evaluate.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .egglog_i64 import I64_MAX, I64_MIN, PRIMITIVES, I64Undefined, i64_binary
from .rules_loader import RANGE_FUNCTIONS, Atom, SList, Sx
from .schema import FAMILY_RELATIONS

_CMP = ("<", "<=", ">", ">=", "!=", "=")
#: guards decided when the lemma is built for concrete dtypes (:func:`.rule_verifier.assignments`)
STATIC_GUARDS = frozenset(FAMILY_RELATIONS) | {"Width"}

#: ``bound(term, signed) -> (lo, hi)`` of a term's lane value on every lane (raises
#: :class:`NotEstablished` when it has none, e.g. a float)
Bound = Callable[[Any, bool], tuple[int, int]]
#: ``define(name) -> (term, signed)``: the term a guard ``(= name (Ctor ...))`` names, at the instance
Define = Callable[[str], tuple[Any, bool]]


class NotEstablished(Exception):
    """A guard that cannot be shown to hold (the pair then goes to the solver)."""


def guards_established(guards: Iterable[Sx], terms: Mapping[str, tuple[Any, bool]], ints: Mapping[str, int],
                       int_names: frozenset[str], defined: frozenset[str], define: Define, bound: Bound) -> bool:
    """Whether every guard holds at the instance: ``terms`` gives each bound Term variable's term
    and whether its dtype reads signed, ``ints`` the i64 variables ``Width`` fixes, ``int_names``
    every i64 variable of the rule, ``defined`` the Term variables a guard names (built by
    ``define``). False when one cannot be shown."""
    terms, ints = dict(terms), dict(ints)
    try:
        for g in guards:
            if not _guard(g, terms, ints, int_names, defined, define, bound):
                return False
    except (NotEstablished, KeyError, ZeroDivisionError):
        return False
    return True


def _guard(g: Sx, terms: dict, ints: dict, int_names: frozenset[str], defined: frozenset[str], define: Define,
           bound: Bound) -> bool:
    if not isinstance(g, SList):
        raise NotEstablished
    h = g.head
    if h in STATIC_GUARDS:  # a family relation or Width: decided by the lemma's dtypes
        return True
    if h == "=" and isinstance(g.items[1], Atom) and g.items[1].text in defined:
        terms[g.items[1].text] = define(g.items[1].text)
        return True
    if h == "=" and isinstance(g.items[1], Atom) and g.items[1].text in int_names \
            and g.items[1].text not in ints:
        ints[g.items[1].text] = _i64(g.items[2], terms, ints, bound)
        return True
    if h not in _CMP:
        raise NotEstablished
    a, b = (_i64(x, terms, ints, bound) for x in g.items[1:3])
    return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b, "!=": a != b, "=": a == b}[h]


def _check(v: int) -> int:
    if not I64_MIN <= v <= I64_MAX:
        raise NotEstablished  # egglog's checked i64 arithmetic panics: the rule does not fire
    return v


def _i64(node: Sx, terms: dict, ints: dict, bound: Bound) -> int:
    """An egglog i64 expression, evaluated as :meth:`.rule_encoding._Instance.i64` encodes it."""
    if isinstance(node, Atom):
        try:
            return int(node.text)
        except ValueError:
            return ints[node.text]
    h = node.head
    if h in RANGE_FUNCTIONS:
        arg = node.items[1]
        if not isinstance(arg, Atom) or arg.text not in terms:
            raise NotEstablished
        t, signed = terms[arg.text]
        lo, hi = bound(t, signed)
        return _check(lo if h == "LowerBound" else hi)
    vals = [_i64(x, terms, ints, bound) for x in node.items[1:]]
    if h == "not-i64":
        return ~vals[0]
    if h not in PRIMITIVES:
        raise NotEstablished
    try:
        return i64_binary(h, *vals)
    except I64Undefined:
        raise NotEstablished from None  # egglog's checked i64 arithmetic panics: the rule does not fire


__all__ = ["STATIC_GUARDS", "NotEstablished", "guards_established"]
