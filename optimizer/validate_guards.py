"""Guards of proved rules, re-established by translation validation without a solver call.

A rule such as ``lt-offset-bound`` (``splat(i) + x < splat(n) -> x < splat(n - i)`` when
``i, x >= 0``, ``i < n`` and ``i + x`` does not wrap) is proved by the verifier as
``guards(B) /\\ lane(v) in [LowerBound v, UpperBound v] => lhs == rhs`` for every value of its
variables and of the bounds ``B`` (:mod:`.rule_encoding`). Translation validation meets its
instances as a pair of differing subterms (:mod:`.validate_lemmas`); the pair is equal as soon
as bounds that hold on every lane of the obligation satisfy the guards. This module computes
such bounds from what the validation itself knows, and evaluates the guards on them:

* :class:`Bounds`: sound integer intervals of z3 bit-vector terms (the mathematical value in
  the dtype's signed or unsigned reading) and truth of Boolean terms, from the validation's
  facts (loop induction ranges, ``iv < hi``, launch facts) and the obligation's context (lane
  index ranges, the mask): comparisons with numerals give bounds on a term, ``+``, ``-`` and
  ``*`` by a numeral combine intervals when no value of the operands can wrap, a comparison is
  true when the intervals of its sides decide it. Anything else is the whole range of its sort
  (never unsound, only weak).
* :func:`guards_hold`: the guards of a :class:`.validate_lemmas.Lemma` evaluated with those
  intervals standing for ``LowerBound``/``UpperBound``, egglog's i64 arithmetic checked as the
  verifier checks it (an overflow, a shift out of range or a division by zero makes the guard
  not established). A guard that cannot be evaluated is not established.

Sound because every bound used holds on every assignment of the obligation (context and facts),
so the instance satisfies the proved implication's premises; when a guard is not established
the pair goes to z3 as before, so validation is never weaker, only cheaper.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import z3

from .guard_eval import STATIC_GUARDS, NotEstablished, guards_established


def _bv_range(bits: int, signed: bool) -> tuple[int, int]:
    return (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)


def _num(e: z3.ExprRef, signed: bool) -> int | None:
    if not z3.is_bv_value(e):
        return None
    return e.as_signed_long() if signed else e.as_long()


class Bounds:
    """Intervals of terms that hold on every assignment satisfying ``facts`` (see the module
    docstring). Facts it does not understand are ignored (they only ever add knowledge)."""

    def __init__(self, facts: Iterable[z3.BoolRef]):
        self.true: set[int] = set()
        self.false: set[int] = set()
        # term id -> (lo, hi) in the signed reading / hi in the unsigned reading
        self.signed: dict[int, tuple[int, int]] = {}
        self.unsigned_hi: dict[int, int] = {}
        self._memo: dict[tuple[int, bool], tuple[int, int]] = {}
        self._keep: list[z3.ExprRef] = []  # keep terms alive: their ids key the tables
        for f in facts:
            self._learn(f)

    def extended(self, facts: Iterable[z3.BoolRef]) -> Bounds:
        """A copy that also knows ``facts`` (the validation's facts are learned once, each
        obligation's context on a copy)."""
        out = Bounds(())
        out.true, out.false = set(self.true), set(self.false)
        out.signed, out.unsigned_hi = dict(self.signed), dict(self.unsigned_hi)
        out._keep = list(self._keep)
        for f in facts:
            out._learn(f)
        return out

    def _learn(self, f: z3.BoolRef) -> None:
        self._keep.append(f)
        if z3.is_and(f):
            for c in f.children():
                self._learn(c)
            return
        if z3.is_not(f):
            self.false.add(f.children()[0].get_id())
            return
        self.true.add(f.get_id())
        if not z3.is_app(f) or f.num_args() != 2 or not z3.is_bv(f.children()[0]):
            return
        a, b = f.children()
        bits = a.size()
        lo, hi = _bv_range(bits, True)
        k = f.decl().kind()
        ca, cb = _num(a, True), _num(b, True)
        # signed comparisons with a numeral: a bound on the other side
        if k in (z3.Z3_OP_SGEQ, z3.Z3_OP_SGT, z3.Z3_OP_SLEQ, z3.Z3_OP_SLT, z3.Z3_OP_EQ):
            if k == z3.Z3_OP_EQ:
                if cb is not None:
                    self._narrow(a, cb, cb)
                elif ca is not None:
                    self._narrow(b, ca, ca)
                return
            strict = k in (z3.Z3_OP_SGT, z3.Z3_OP_SLT)
            ge = k in (z3.Z3_OP_SGEQ, z3.Z3_OP_SGT)
            if cb is not None:  # a >= c, a > c, a <= c, a < c
                self._narrow(a, cb + strict, hi) if ge else self._narrow(a, lo, cb - strict)
            elif ca is not None:  # c >= b: b <= c ...
                self._narrow(b, lo, ca - strict) if ge else self._narrow(b, ca + strict, hi)
            return
        ub = _num(b, False)
        if k in (z3.Z3_OP_ULT, z3.Z3_OP_ULEQ) and ub is not None:
            top = ub - (k == z3.Z3_OP_ULT)
            if top >= 0:
                prev = self.unsigned_hi.get(a.get_id())
                self.unsigned_hi[a.get_id()] = top if prev is None else min(prev, top)
                self._keep.append(a)

    def _narrow(self, t: z3.ExprRef, lo: int, hi: int) -> None:
        old = self.signed.get(t.get_id(), _bv_range(t.size(), True))
        self.signed[t.get_id()] = (max(old[0], lo), min(old[1], hi))
        self._keep.append(t)

    def truth(self, b: z3.BoolRef) -> bool | None:
        """True/False when ``b`` holds/fails on every assignment, else None."""
        if z3.is_true(b):
            return True
        if z3.is_false(b):
            return False
        if b.get_id() in self.true:
            return True
        if b.get_id() in self.false:
            return False
        if z3.is_not(b):
            t = self.truth(b.children()[0])
            return None if t is None else not t
        if z3.is_app(b) and b.num_args() == 2 and z3.is_bv(b.children()[0]):
            return self._decide(b)
        return None

    def _decide(self, b: z3.BoolRef) -> bool | None:
        """A comparison decided by the intervals of its sides."""
        k = b.decl().kind()
        signed = k in (z3.Z3_OP_SLT, z3.Z3_OP_SLEQ, z3.Z3_OP_SGT, z3.Z3_OP_SGEQ)
        if not signed and k not in (z3.Z3_OP_ULT, z3.Z3_OP_ULEQ, z3.Z3_OP_UGT, z3.Z3_OP_UGEQ):
            return None
        a, c = b.children()
        (la, ha), (lc, hc) = self.interval(a, signed), self.interval(c, signed)
        if k in (z3.Z3_OP_SGT, z3.Z3_OP_UGT, z3.Z3_OP_SGEQ, z3.Z3_OP_UGEQ):
            (la, ha), (lc, hc) = (lc, hc), (la, ha)  # a > c is c < a
        strict = k in (z3.Z3_OP_SLT, z3.Z3_OP_ULT, z3.Z3_OP_SGT, z3.Z3_OP_UGT)
        if (ha < lc) if strict else (ha <= lc):
            return True
        if (la >= hc) if strict else (la > hc):
            return False
        return None

    def interval(self, e: z3.ExprRef, signed: bool) -> tuple[int, int]:
        """``(lo, hi)`` bounding the mathematical value of bit-vector ``e`` read as ``signed``
        (or not) on every assignment."""
        key = (e.get_id(), signed)
        hit = self._memo.get(key)
        if hit is None:
            hit = self._memo[key] = self._interval(e, signed)
            self._keep.append(e)
        return hit

    def _interval(self, e: z3.ExprRef, signed: bool) -> tuple[int, int]:
        full = _bv_range(e.size(), signed)
        c = _num(e, signed)
        if c is not None:
            return c, c
        lo, hi = full
        known = self.signed.get(e.get_id())
        uhi = self.unsigned_hi.get(e.get_id())
        if known is not None:
            if signed:
                lo, hi = max(lo, known[0]), min(hi, known[1])
            elif known[0] >= 0:  # non-negative: the unsigned reading is the same value
                lo, hi = max(lo, known[0]), min(hi, known[1])
        if uhi is not None and (not signed or uhi <= full[1]):
            lo, hi = max(lo, 0), min(hi, uhi)
        k = e.decl().kind() if z3.is_app(e) else None
        parts: tuple[int, int] | None = None
        if k in (z3.Z3_OP_BADD, z3.Z3_OP_BSUB) and e.num_args() >= 1:
            kids = [self.interval(x, signed) for x in e.children()]
            plo, phi = kids[0]
            for xl, xh in kids[1:]:
                plo, phi = (plo + xl, phi + xh) if k == z3.Z3_OP_BADD else (plo - xh, phi - xl)
            parts = (plo, phi)
        elif k == z3.Z3_OP_BMUL and e.num_args() == 2:
            (al, ah), (bl, bh) = (self.interval(x, signed) for x in e.children())
            corners = [al * bl, al * bh, ah * bl, ah * bh]
            parts = (min(corners), max(corners))
        if parts is not None and full[0] <= parts[0] and parts[1] <= full[1]:
            # no operand values wrap the result: its value is the exact one, in these bounds
            lo, hi = max(lo, parts[0]), min(hi, parts[1])
        return (lo, hi) if lo <= hi else full  # an empty interval: contradictory facts, say nothing


def bound_of(bounds: Bounds, term: z3.ExprRef, signed: bool) -> tuple[int, int]:
    """The range of ``term``'s lane value as the verifier reads it (``rule_encoding.lane_int``):
    a Boolean is 0 or 1, an integer its value in the dtype's reading."""
    if z3.is_bool(term):
        t = bounds.truth(term)
        return (0, 1) if t is None else (int(t), int(t))
    if not z3.is_bv(term):
        raise NotEstablished  # float terms have no range bounds
    return bounds.interval(term, signed)


def guards_hold(lemma: Any, binds: Mapping[int, z3.ExprRef], bounds: Bounds) -> bool:
    """Whether every guard of ``lemma`` holds for the instance ``binds`` (lemma variable id ->
    the validation's term) with the intervals of ``bounds``; False when one cannot be shown
    (:func:`.guard_eval.guards_established`)."""
    terms: dict[str, tuple[z3.ExprRef, bool]] = {}
    for name, (var, signed) in lemma.term_vars.items():
        t = binds.get(var.get_id())
        if t is not None:
            terms[name] = (t, signed)
    subst = [(var, binds[var.get_id()]) for var in lemma.variables if var.get_id() in binds]

    def define(name: str) -> tuple[z3.ExprRef, bool]:
        t, signed = lemma.defined_terms[name]
        return (z3.substitute(t, *subst) if subst else t), signed

    try:
        return guards_established(lemma.guards, terms, dict(lemma.int_vars), lemma.int_names,
                                  frozenset(lemma.defined_terms), define, lambda t, signed: bound_of(bounds, t, signed))
    except z3.Z3Exception:
        return False


__all__ = ["STATIC_GUARDS", "Bounds", "bound_of", "guards_hold"]
