"""z3-free lane terms and their sound integer bounds, for translation validation without a solver
(:mod:`.validate_terms`).

A :class:`Terms` table hash-conses the lane values of both functions: each distinct term gets one
integer id, so two terms are the same exactly when their ids are equal. A node is ``(head,
kids)``: ``head`` a hashable tuple, ``kids`` the ids of its sub-terms. Heads:

* ``("true",)``: the constant true (id 0, the definedness of almost everything);
* ``("idx", name)``: a symbolic lane index (32 bits), as :func:`.validate.lane_vars` names it;
* ``("const", dtype, payload)``: an integer's value modulo ``2**bits``, a Boolean's 0/1, a float's
  binary64 bits (so ``-0.0`` and ``0.0`` differ);
* ``("sym", name, sort)``: an opaque value (parameter, block argument, loaded value, reduction)
  applied to its lane indices (the kids);
* ``("op", name, dtype, attrs)``: a pure op of the IR at the operands' dtype (``"ptr"`` for the
  pointer comparisons and selections), the kids its operands' lane values;
* ``("ite",)``, ``("and",)``, ``("not",)``: selection, conjunction and negation (masked loads and
  definedness).

:class:`Bounds` mirrors :class:`.validate_guards.Bounds` on these terms: facts (comparisons with a
numeral, a term known true or false, an unsigned upper bound) give intervals, ``+``, ``-`` and
``*`` combine intervals when no operand value can wrap, a comparison is decided when the
intervals of its sides decide it. Anything else is the whole range of its dtype: never unsound,
only weak.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from eggpu.ir import DType
from eggpu.ir.dtypes import bool_, i32

TRUE = 0


class Terms:
    """Hash-consed lane terms (see the module docstring) with each term's dtype (None: a pointer
    or a definedness condition; :data:`bool_` for comparisons)."""

    def __init__(self) -> None:
        self.ids: dict[tuple, int] = {}
        self.nodes: list[tuple[tuple, tuple[int, ...]]] = []
        self.dtypes: list[DType | None] = []
        self.mk(("true",), (), bool_)

    def mk(self, head: tuple, kids: tuple[int, ...], dtype: DType | None) -> int:
        key = (head, kids)
        t = self.ids.get(key)
        if t is None:
            t = self.ids[key] = len(self.nodes)
            self.nodes.append(key)
            self.dtypes.append(dtype)
        return t

    def const(self, value: Any, dtype: DType) -> int:
        """The constant ``value`` of ``dtype`` (floats already rounded to the dtype by the caller)."""
        import struct

        if dtype.is_bool:
            payload: Any = int(bool(value))
        elif dtype.is_int:
            payload = int(value) % (1 << dtype.bits)
        else:
            payload = struct.pack("<d", float(value))
        return self.mk(("const", dtype.name, payload), (), dtype)

    def index(self, n: int) -> int:
        """The 32-bit index numeral ``n`` (the z3 path's ``BitVecVal(n, 32)``)."""
        return self.const(n, i32)

    def op(self, name: str, dtype_name: str, attrs: tuple, kids: tuple[int, ...], result: DType | None) -> int:
        return self.mk(("op", name, dtype_name, attrs), kids, result)

    def conj(self, parts: Iterable[int]) -> int:
        """The conjunction of ``parts``, true ones dropped (the z3 path's ``_and``)."""
        xs = tuple(p for p in parts if p != TRUE)
        if not xs:
            return TRUE
        return xs[0] if len(xs) == 1 else self.mk(("and",), xs, None)

    def signed_value(self, t: int) -> int | None:
        """A numeral's value in its dtype's signed reading, None for anything else."""
        (head, _), dt = self.nodes[t], self.dtypes[t]
        if head[0] != "const" or dt is None or not dt.is_int:
            return None
        v = head[2]
        return v - (1 << dt.bits) if v >= 1 << (dt.bits - 1) else v

    def unsigned_value(self, t: int) -> int | None:
        (head, _), dt = self.nodes[t], self.dtypes[t]
        if head[0] != "const" or dt is None or not dt.is_int:
            return None
        return head[2]


def _full(bits: int, signed: bool) -> tuple[int, int]:
    return (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)


class Bounds:
    """Intervals of terms that hold on every assignment of the facts learned (see the module
    docstring). ``copy()`` then learning an obligation's context leaves the original unchanged."""

    def __init__(self, terms: Terms) -> None:
        self.terms = terms
        self.true: set[int] = set()
        self.false: set[int] = set()
        self.signed: dict[int, tuple[int, int]] = {}  # term -> (lo, hi) in the signed reading
        self.unsigned_hi: dict[int, int] = {}
        self._memo: dict[tuple[int, bool], tuple[int, int]] = {}

    def copy(self) -> Bounds:
        out = Bounds(self.terms)
        out.true, out.false = set(self.true), set(self.false)
        out.signed, out.unsigned_hi = dict(self.signed), dict(self.unsigned_hi)
        return out

    # ------------------------------------------------------------------ learning facts

    def narrow(self, t: int, lo: int, hi: int) -> None:
        """``lo <= t <= hi`` in the signed reading of ``t``'s 32-bit or dtype width."""
        old = self.signed.get(t, _full(self._bits(t), True))
        self.signed[t] = (max(old[0], lo), min(old[1], hi))
        self._memo.clear()

    def below(self, t: int, hi: int) -> None:
        """``t <= hi`` unsigned."""
        if hi >= 0:
            prev = self.unsigned_hi.get(t)
            self.unsigned_hi[t] = hi if prev is None else min(prev, hi)
            self._memo.clear()

    def learn(self, f: int) -> None:
        """Learn that the Boolean term ``f`` holds: conjunctions part by part, a negation as its
        operand false, a comparison with a numeral as a bound, anything else as a true term."""
        (head, kids) = self.terms.nodes[f]
        if head == ("and",) or (head[0] == "op" and head[1] == "and" and head[2] == "bool"):
            for k in kids:
                self.learn(k)
            return
        if head == ("not",) or (head[0] == "op" and head[1] == "not" and head[2] == "bool"):
            self.false.add(kids[0])
            return
        self.true.add(f)
        cmp = self._comparison(f)
        if cmp is None:
            return
        kind, signed, a, b = cmp
        if kind == "eq":
            cb, ca = self.terms.signed_value(b), self.terms.signed_value(a)
            if cb is not None:
                self.narrow(a, cb, cb)
            elif ca is not None:
                self.narrow(b, ca, ca)
            return
        strict = kind == "lt"
        if signed:
            lo, hi = _full(self._bits(a), True)
            cb, ca = self.terms.signed_value(b), self.terms.signed_value(a)
            if cb is not None:  # a < c, a <= c
                self.narrow(a, lo, cb - strict)
            elif ca is not None:  # c < b, c <= b
                self.narrow(b, ca + strict, hi)
            return
        ub = self.terms.unsigned_value(b)
        if ub is not None:
            self.below(a, ub - strict)

    def _comparison(self, f: int) -> tuple[str, bool, int, int] | None:
        """``(kind, signed, a, b)`` of an integer comparison ``a < b`` (kind ``lt``), ``a <= b``
        (``le``) or ``a == b`` (``eq``): ``gt``/``ge`` are read with their sides swapped, as the z3
        path encodes them."""
        head, kids = self.terms.nodes[f]
        if head[0] != "op" or head[1] not in ("eq", "lt", "le", "gt", "ge") or len(kids) != 2:
            return None
        dt = self.terms.dtypes[kids[0]]
        if dt is None or not dt.is_int or dt.is_bool:
            return None
        a, b = kids
        name = head[1]
        if name in ("gt", "ge"):
            a, b, name = b, a, "lt" if name == "gt" else "le"
        return name, dt.is_signed, a, b

    # ------------------------------------------------------------------ reading bounds

    def _bits(self, t: int) -> int:
        dt = self.terms.dtypes[t]
        if dt is None or not dt.is_int or dt.is_bool:
            raise ValueError("not an integer term")
        return dt.bits

    def truth(self, b: int) -> bool | None:
        """True/False when the Boolean term ``b`` holds/fails on every assignment, else None."""
        head, kids = self.terms.nodes[b]
        if b == TRUE:
            return True
        if head[0] == "const" and head[1] == "bool":
            return bool(head[2])
        if b in self.true:
            return True
        if b in self.false:
            return False
        if head == ("not",) or (head[0] == "op" and head[1] == "not" and head[2] == "bool"):
            t = self.truth(kids[0])
            return None if t is None else not t
        cmp = self._comparison(b)
        if cmp is None or cmp[0] == "eq":
            return None
        kind, signed, a, c = cmp
        (la, ha), (lc, hc) = self.interval(a, signed), self.interval(c, signed)
        strict = kind == "lt"
        if (ha < lc) if strict else (ha <= lc):
            return True
        if (la >= hc) if strict else (la > hc):
            return False
        return None

    def interval(self, t: int, signed: bool) -> tuple[int, int]:
        """``(lo, hi)`` bounding integer term ``t``'s value read ``signed`` (or not) on every
        assignment."""
        key = (t, signed)
        hit = self._memo.get(key)
        if hit is None:
            hit = self._memo[key] = self._interval(t, signed)
        return hit

    def _interval(self, t: int, signed: bool) -> tuple[int, int]:
        full = _full(self._bits(t), signed)
        c = self.terms.signed_value(t) if signed else self.terms.unsigned_value(t)
        if c is not None:
            return c, c
        lo, hi = full
        known = self.signed.get(t)
        uhi = self.unsigned_hi.get(t)
        if known is not None and (signed or known[0] >= 0):
            lo, hi = max(lo, known[0]), min(hi, known[1])
        if uhi is not None and (not signed or uhi <= full[1]):
            lo, hi = max(lo, 0), min(hi, uhi)
        head, kids = self.terms.nodes[t]
        parts: tuple[int, int] | None = None
        if head[0] == "op" and head[1] in ("add", "sub") and len(kids) == 2:
            (al, ah), (bl, bh) = (self.interval(x, signed) for x in kids)
            parts = (al + bl, ah + bh) if head[1] == "add" else (al - bh, ah - bl)
        elif head[0] == "op" and head[1] == "mul" and len(kids) == 2:
            (al, ah), (bl, bh) = (self.interval(x, signed) for x in kids)
            corners = [al * bl, al * bh, ah * bl, ah * bh]
            parts = (min(corners), max(corners))
        if parts is not None and full[0] <= parts[0] and parts[1] <= full[1]:
            # no operand values wrap the result: its value is the exact one, in these bounds
            lo, hi = max(lo, parts[0]), min(hi, parts[1])
        return (lo, hi) if lo <= hi else full  # contradictory facts: say nothing

    def bound(self, t: int, signed: bool) -> tuple[int, int]:
        """The range of ``t``'s lane value as the verifier reads it: a Boolean is 0 or 1, an
        integer its value in the dtype's reading (:func:`.validate_guards.bound_of`)."""
        from .guard_eval import NotEstablished

        dt = self.terms.dtypes[t]
        if dt is not None and dt.is_bool:
            v = self.truth(t)
            return (0, 1) if v is None else (int(v), int(v))
        if dt is None or not dt.is_int:
            raise NotEstablished  # floats and pointers have no range bounds
        return self.interval(t, signed)


__all__ = ["TRUE", "Bounds", "Terms"]
