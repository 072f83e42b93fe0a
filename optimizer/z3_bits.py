"""Exact bit-vector encodings of the integer bit functions (:mod:`.z3ops`): population count,
leading zeros, first set bit, bit reversal and the high half of a product (``mulhi``)."""

from __future__ import annotations

import z3


def _bit(a: z3.BitVecRef, i: int) -> z3.BitVecRef:
    return z3.Extract(i, i, a)


def popc(a: z3.BitVecRef) -> z3.BitVecRef:
    """The number of set bits, in a's width."""
    w = a.size()
    return z3.Sum([z3.ZeroExt(w - 1, _bit(a, i)) for i in range(w)])


def clz(a: z3.BitVecRef) -> z3.BitVecRef:
    """Leading zeros (the width for 0): the highest set bit decides, so it is tested last."""
    w = a.size()
    r: z3.BitVecRef = z3.BitVecVal(w, w)
    for i in range(w):
        r = z3.If(_bit(a, i) == 1, z3.BitVecVal(w - 1 - i, w), r)
    return r


def ffs(a: z3.BitVecRef) -> z3.BitVecRef:
    """1 + the index of the lowest set bit (0 for 0): the lowest set bit is tested last."""
    w = a.size()
    r: z3.BitVecRef = z3.BitVecVal(0, w)
    for i in reversed(range(w)):
        r = z3.If(_bit(a, i) == 1, z3.BitVecVal(i + 1, w), r)
    return r


def brev(a: z3.BitVecRef) -> z3.BitVecRef:
    """The bits in reverse order (bit 0 becomes the most significant)."""
    w = a.size()
    return _bit(a, 0) if w == 1 else z3.Concat(*[_bit(a, i) for i in range(w)])


def mulhi(a: z3.BitVecRef, b: z3.BitVecRef, signed: bool) -> z3.BitVecRef:
    """The high half of the double-width product (sign- or zero-extended operands)."""
    w = a.size()
    ext = z3.SignExt if signed else z3.ZeroExt
    return z3.Extract(2 * w - 1, w, ext(w, a) * ext(w, b))


UNARY = {"popc": popc, "clz": clz, "ffs": ffs, "brev": brev}
