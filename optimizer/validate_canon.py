"""Canonical forms of z3 terms modulo associativity and commutativity, for translation validation.

The optimizer's e-graph reorders and regroups integer arithmetic freely (``mul-comm``,
``add-assoc-int``, ``xor-comm``, ...), so an optimized program often differs from its original
only in how chains of ``+``, ``*``, ``^``, ``&``, ``|`` are bracketed and ordered. Proving such
pairs equal with z3 means bit-blasting deep multiplication chains (Philox rounds: a 32-element
``tl.rand4x`` kernel spent the whole 50 M-unit validation budget). :func:`Canon.of` rewrites a
term into a canonical representative of its class modulo the laws below, so equal-up-to-
regrouping terms become the *same* z3 term (hash-consing) and need no solver call.

Every law used is an identity of the IR's total semantics (``docs/ir.md``: integers are
two's-complement bit-vectors, every operation is defined), so a canonical term is equal to the
original on every assignment — the canonicalizer never makes two different terms equal:

* bit-vector ``bvadd``, ``bvmul``, ``bvxor``, ``bvand``, ``bvor`` are associative and
  commutative (the ring Z/2^n and the Boolean algebra of bit-vectors): a chain of one operator
  (same sort) is flattened into its operands, sorted by a structural key and rebuilt as a
  left-leaning chain;
* their numeral operands are folded into one (mod 2^n), which goes first; identities are dropped
  (``x + 0``, ``x * 1``, ``x ^ 0``, ``x & ~0``, ``x | 0``), absorbing elements absorb
  (``x * 0 = 0``, ``x & 0 = 0``, ``x | ~0 = ~0``);
* ``x ^ x = 0`` (pairs cancel), ``x & x = x`` and ``x | x = x`` (duplicates merge);
* Boolean ``and``/``or`` likewise (flattened, sorted, duplicates merged, ``true``/``false``
  folded); the two operands of ``=``, ``distinct``, and IEEE ``fp.add``/``fp.mul``/``fp.eq``
  (commutative, exactly, in SMT-LIB's floating-point theory: one NaN, correctly rounded) are
  sorted, never regrouped (float arithmetic is not associative).

The structural key is ``(z3 hash, term id)``: z3's hash is computed from the term's structure,
so the order — and therefore every query built from canonical terms and its unit count — is the
same in every fresh process (the id only breaks hash collisions). Canonical terms are fixed
points: ``of(of(x))`` is ``of(x)``.
"""

from __future__ import annotations

import z3

#: associative-commutative bit-vector operators: kind -> (identity, absorbing element or None,
#: what a duplicate pair becomes: "cancel" (x ^ x = 0), "merge" (x & x = x) or None)
_BV_AC = {
    z3.Z3_OP_BADD: ("zero", None, None),
    z3.Z3_OP_BMUL: ("one", "zero", None),
    z3.Z3_OP_BXOR: ("zero", None, "cancel"),
    z3.Z3_OP_BAND: ("ones", "zero", "merge"),
    z3.Z3_OP_BOR: ("zero", "ones", "merge"),
}
_BOOL_AC = {z3.Z3_OP_AND: (True, False), z3.Z3_OP_OR: (False, True)}  # identity, absorbing
#: commutative, not regrouped: (index of the first interchangeable argument)
_SWAP = {z3.Z3_OP_EQ: 0, z3.Z3_OP_DISTINCT: 0, z3.Z3_OP_FPA_EQ: 0, z3.Z3_OP_FPA_ADD: 1, z3.Z3_OP_FPA_MUL: 1}


def _key(e: z3.ExprRef) -> tuple[int, int]:
    return (e.hash(), e.get_id())


def _special(name: str, bits: int) -> int:
    return {"zero": 0, "one": 1, "ones": (1 << bits) - 1}[name]


def _bv_fold(kind: int, a: int, b: int, bits: int) -> int:
    m = (1 << bits) - 1
    if kind == z3.Z3_OP_BADD:
        return (a + b) & m
    if kind == z3.Z3_OP_BMUL:
        return (a * b) & m
    if kind == z3.Z3_OP_BXOR:
        return a ^ b
    if kind == z3.Z3_OP_BAND:
        return a & b
    return a | b


def _rebuild(kind: int, args: list[z3.ExprRef]) -> z3.ExprRef:
    """A left-leaning binary chain of ``kind`` over ``args`` (at least one)."""
    out = args[0]
    for x in args[1:]:
        if kind == z3.Z3_OP_BADD:
            out = out + x
        elif kind == z3.Z3_OP_BMUL:
            out = out * x
        elif kind == z3.Z3_OP_BXOR:
            out = out ^ x
        elif kind == z3.Z3_OP_BAND:
            out = out & x
        else:
            out = out | x
    return out


class Canon:
    """Canonical forms (see the module docstring), memoized by term id. One instance per
    validation: the memo keeps its terms alive, so the ids it is keyed by are never reused."""

    def __init__(self) -> None:
        self._memo: dict[int, z3.ExprRef] = {}
        self._keep: list[z3.ExprRef] = []

    def of(self, e: z3.ExprRef) -> z3.ExprRef:
        """The canonical form of ``e`` (equal to ``e`` under every assignment)."""
        memo = self._memo
        hit = memo.get(e.get_id())
        if hit is not None:
            return hit
        # iterative post-order: Philox chains nest deeper than Python's recursion limit allows
        stack: list[tuple[z3.ExprRef, list[z3.ExprRef] | None]] = [(e, None)]
        while stack:
            x, kids = stack.pop()
            xid = x.get_id()
            if xid in memo:
                continue
            if kids is None:
                if not z3.is_app(x) or x.num_args() == 0:
                    memo[xid] = x
                    continue
                kids = x.children()
                stack.append((x, kids))
                stack.extend((c, None) for c in kids if c.get_id() not in memo)
                continue
            out = self._node(x, [memo[c.get_id()] for c in kids], kids)
            memo[xid] = out
            memo.setdefault(out.get_id(), out)  # a canonical term is its own canonical form
            self._keep += [x, out]
        return memo[e.get_id()]

    def _node(self, x: z3.ExprRef, kids: list[z3.ExprRef], old: list[z3.ExprRef]) -> z3.ExprRef:
        """The canonical form of ``x``, whose children ``old`` have the canonical forms ``kids``."""
        kind = x.decl().kind()
        if kind in _BV_AC:
            return self._bv_ac(kind, x, kids)
        if kind in _BOOL_AC:
            return self._bool_ac(kind, x, kids)
        j = _SWAP.get(kind)
        if j is not None and len(kids) == j + 2 and _key(kids[j + 1]) < _key(kids[j]):
            kids = kids[:j] + [kids[j + 1], kids[j]]
        if all(k.eq(c) for k, c in zip(kids, old)):
            return x
        try:
            return x.decl()(*kids)
        except z3.Z3Exception:  # a declaration the Python API cannot re-apply: the term as is
            return x

    def _flatten(self, kind: int, x: z3.ExprRef, kids: list[z3.ExprRef]) -> list[z3.ExprRef]:
        """The operands of the chain of ``kind`` rooted at ``x`` (children already canonical, so
        a child of the same kind is a canonical chain whose operands are not of that kind)."""
        out: list[z3.ExprRef] = []
        for k in kids:
            if z3.is_app(k) and k.decl().kind() == kind and k.sort().eq(x.sort()):
                out += _chain_operands(k, kind)
            else:
                out.append(k)
        return out

    def _bv_ac(self, kind: int, x: z3.ExprRef, kids: list[z3.ExprRef]) -> z3.ExprRef:
        bits = x.sort().size()
        ident, absorb, dup = _BV_AC[kind]
        const = _special(ident, bits)
        rest: list[z3.ExprRef] = []
        for a in self._flatten(kind, x, kids):
            if z3.is_bv_value(a):
                const = _bv_fold(kind, const, a.as_long(), bits)
            else:
                rest.append(a)
        if absorb is not None and const == _special(absorb, bits):
            return z3.BitVecVal(const, bits)
        rest.sort(key=_key)
        if dup is not None:
            rest = _dedup(rest, dup == "cancel")
        args = ([] if const == _special(ident, bits) else [z3.BitVecVal(const, bits)]) + rest
        if not args:
            return z3.BitVecVal(const, bits)
        return _rebuild(kind, args)

    def _bool_ac(self, kind: int, x: z3.ExprRef, kids: list[z3.ExprRef]) -> z3.ExprRef:
        ident, absorb = _BOOL_AC[kind]
        rest = []
        for a in self._flatten(kind, x, kids):
            if z3.is_true(a) or z3.is_false(a):
                if z3.is_true(a) == absorb:
                    return z3.BoolVal(absorb)
                continue
            rest.append(a)
        rest = _dedup(sorted(rest, key=_key), cancel=False)
        if not rest:
            return z3.BoolVal(ident)
        if len(rest) == 1:
            return rest[0]
        return z3.And(rest) if kind == z3.Z3_OP_AND else z3.Or(rest)


def _chain_operands(e: z3.ExprRef, kind: int) -> list[z3.ExprRef]:
    """The operands of a chain of ``kind`` (same sort), left to right."""
    out: list[z3.ExprRef] = []
    stack = [e]
    while stack:
        x = stack.pop()
        if z3.is_app(x) and x.decl().kind() == kind and x.sort().eq(e.sort()):
            stack.extend(reversed(x.children()))
        else:
            out.append(x)
    return out


def ac_operands(e: z3.ExprRef) -> tuple[int, list[z3.ExprRef]] | None:
    """``(kind, operands)`` when ``e`` is a chain of an associative-commutative bit-vector or
    Boolean operator, else None."""
    if not z3.is_app(e) or e.num_args() < 2:
        return None
    kind = e.decl().kind()
    if kind not in _BV_AC and kind not in _BOOL_AC:
        return None
    return kind, _chain_operands(e, kind)


def is_group(kind: int) -> bool:
    """Whether ``kind`` is cancellative (``+`` and ``^`` on bit-vectors: ``a + x == a + y``
    exactly when ``x == y``), so the operands common to two chains can be dropped from a proof."""
    return kind in (z3.Z3_OP_BADD, z3.Z3_OP_BXOR)


def rebuild(kind: int, args: list[z3.ExprRef], sort: z3.SortRef) -> z3.ExprRef:
    """The chain of ``kind`` over ``args`` (its identity when empty)."""
    if kind in _BOOL_AC:
        if not args:
            return z3.BoolVal(_BOOL_AC[kind][0])
        return args[0] if len(args) == 1 else (z3.And(args) if kind == z3.Z3_OP_AND else z3.Or(args))
    if not args:
        return z3.BitVecVal(_special(_BV_AC[kind][0], sort.size()), sort.size())
    return _rebuild(kind, args)


def _dedup(xs: list[z3.ExprRef], cancel: bool) -> list[z3.ExprRef]:
    """Sorted ``xs`` with runs of equal terms merged to one (``cancel``: an even run vanishes,
    an odd one leaves one)."""
    out: list[z3.ExprRef] = []
    i = 0
    while i < len(xs):
        j = i
        while j < len(xs) and xs[j].eq(xs[i]):
            j += 1
        if not cancel or (j - i) % 2 == 1:
            out.append(xs[i])
        i = j
    return out


__all__ = ["Canon", "ac_operands", "is_group", "rebuild"]
