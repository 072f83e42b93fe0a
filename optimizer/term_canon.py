"""Canonical forms of z3-free lane terms (:mod:`.term_bounds`) modulo associativity and
commutativity: :mod:`.validate_canon`'s laws on :class:`.term_bounds.Terms`, for translation
validation without a solver (:mod:`.validate_terms`).

Every law is an identity of the IR's total semantics (integers are two's-complement bit-vectors,
every operation is defined), so a canonical term equals the original on every assignment:

* integer ``add``, ``mul``, ``xor``, ``and``, ``or`` (one dtype) are associative and commutative:
  a chain is flattened, its numerals folded into one (mod ``2**bits``, first), identities dropped,
  absorbing elements absorb (``x * 0``, ``x & 0``, ``x | ~0``), ``x ^ x`` cancels, ``x & x`` and
  ``x | x`` merge, and the operands are sorted and rebuilt as a left-leaning chain;
* Boolean ``and``/``or`` likewise (flattened, sorted, duplicates merged, constants folded), kept
  as one n-ary term;
* the operands of any other commutative op are sorted, never regrouped (float arithmetic is not
  associative).

Terms are sorted by id: equal terms have equal ids, so the order of a multiset is well defined.
"""

from __future__ import annotations

from .term_bounds import Terms

_AC = {  # op -> (identity, absorbing element or None, duplicates: "cancel", "merge" or None)
    "add": ("zero", None, None),
    "mul": ("one", "zero", None),
    "xor": ("zero", None, "cancel"),
    "and": ("ones", "zero", "merge"),
    "or": ("zero", "ones", "merge"),
}


def _special(name: str, bits: int) -> int:
    return {"zero": 0, "one": 1, "ones": (1 << bits) - 1}[name]


def _fold(op: str, a: int, b: int, bits: int) -> int:
    m = (1 << bits) - 1
    if op == "add":
        return (a + b) & m
    if op == "mul":
        return (a * b) & m
    return a ^ b if op == "xor" else a & b if op == "and" else a | b


class Canon:
    """Canonical forms on one :class:`.term_bounds.Terms` table, memoized by term id."""

    def __init__(self, terms: Terms, commutative: frozenset[str]):
        self.terms = terms
        self.commutative = commutative
        self._memo: dict[int, int] = {}

    def of(self, t: int) -> int:
        memo = self._memo
        if t in memo:
            return memo[t]
        stack: list[tuple[int, bool]] = [(t, False)]
        while stack:  # iterative post-order: index chains nest deep
            x, ready = stack.pop()
            if x in memo:
                continue
            kids = self.terms.nodes[x][1]
            if not ready:
                stack.append((x, True))
                stack.extend((k, False) for k in kids if k not in memo)
                continue
            out = self._node(x, [memo[k] for k in kids])
            memo[x] = out
            memo.setdefault(out, out)
        return memo[t]

    def _node(self, x: int, kids: list[int]) -> int:
        terms = self.terms
        head, old = terms.nodes[x]
        dt = terms.dtypes[x]
        if head[0] == "op" and head[1] in _AC and head[3] == () and dt is not None:
            if dt.is_bool and head[2] == "bool":
                return self._bool_ac(head, kids)
            if dt.is_int and not dt.is_bool and head[2] == dt.name:
                return self._int_ac(head, kids, dt)
        if head[0] == "op" and head[1] in self.commutative and len(kids) == 2:
            kids = sorted(kids)
        if tuple(kids) == old:
            return x
        return terms.mk(head, tuple(kids), dt)

    def _flatten(self, head: tuple, kids: list[int]) -> list[int]:
        """The operands of the chain of ``head`` over ``kids``, left to right."""
        out: list[int] = []
        stack = list(reversed(kids))
        while stack:
            k = stack.pop()
            h, ks = self.terms.nodes[k]
            if h == head:
                stack.extend(reversed(ks))
            else:
                out.append(k)
        return out

    def _int_ac(self, head: tuple, kids: list[int], dt) -> int:
        op, bits, terms = head[1], dt.bits, self.terms
        ident, absorb, dup = _AC[op]
        const = _special(ident, bits)
        rest = []
        for a in self._flatten(head, kids):
            v = terms.unsigned_value(a)
            if v is not None and terms.dtypes[a] == dt:
                const = _fold(op, const, v, bits)
            else:
                rest.append(a)
        if absorb is not None and const == _special(absorb, bits):
            return terms.const(const, dt)
        rest.sort()
        if dup is not None:
            rest = _dedup(rest, dup == "cancel")
        args = ([] if const == _special(ident, bits) else [terms.const(const, dt)]) + rest
        if not args:
            return terms.const(const, dt)
        out = args[0]
        for a in args[1:]:
            out = terms.mk(head, (out, a), dt)
        return out

    def _bool_ac(self, head: tuple, kids: list[int]) -> int:
        terms = self.terms
        ident, absorb = (True, False) if head[1] == "and" else (False, True)
        rest = []
        for a in self._flatten(head, kids):
            h = terms.nodes[a][0]
            if h[0] == "const" and h[1] == "bool":
                if bool(h[2]) == absorb:
                    return terms.const(absorb, terms.dtypes[a])
                continue
            rest.append(a)
        rest = _dedup(sorted(rest), cancel=False)
        from eggpu.ir.dtypes import bool_

        if not rest:
            return terms.const(ident, bool_)
        return rest[0] if len(rest) == 1 else terms.mk(head, tuple(rest), bool_)


def _dedup(xs: list[int], cancel: bool) -> list[int]:
    """Sorted ``xs`` with runs of one term merged (``cancel``: an even run vanishes)."""
    out: list[int] = []
    i = 0
    while i < len(xs):
        j = i
        while j < len(xs) and xs[j] == xs[i]:
            j += 1
        if not cancel or (j - i) % 2 == 1:
            out.append(xs[i])
        i = j
    return out


__all__ = ["Canon"]
