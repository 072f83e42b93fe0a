"""The e-class analyses besides ranges: relations a rule may guard on and ``rule`` commands may
assert, with their meaning as z3 predicates (one definition, used by the rule verifier).

========================  ==========================================================================
``(Divisible x k)``       ``k`` is a power of two and every lane of the integer ``x``, as a
                          mathematical integer (signed or unsigned per its dtype), is a multiple of ``k``
``(NotNan x)``            no lane of ``x`` is NaN (always true of integers)
``(Finite x)``            every lane of ``x`` is finite: neither NaN nor an infinity (integers: true)
``(NonNeg x)``            every lane is ``>= 0`` (floats: NaN excluded, ``-0.0`` included)
``(Positive x)``          every lane is ``> 0`` (floats: NaN excluded)
========================  ==========================================================================

They are egglog relations over ``Term`` (``Divisible`` also takes the ``i64`` divisor), declared
by the schema, seeded from a kernel's launch-time specialization facts
(:mod:`eggpu.ir.facts`: a ``div16`` parameter is ``(Divisible (Opaque (I32) id) 16)``), and
propagated by the transfer rules of ``rules/analyses.egg`` (ruleset ``ranges``), which the
verifier proves like every rule: a guard ``(NotNan x)`` becomes the assumption
:func:`predicate`, an action ``(NotNan e)`` the obligation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

# z3 is imported inside the predicates: the schema (and with it a cache hit) never needs it

#: relation name -> argument sorts
ANALYSES: dict[str, tuple[str, ...]] = {
    "Divisible": ("Term", "i64"),
    "NotNan": ("Term",),
    "Finite": ("Term",),
    "NonNeg": ("Term",),
    "Positive": ("Term",),
}


def declarations() -> list[str]:
    """The schema's egglog declarations of the analyses."""
    return [f"(relation {name} ({' '.join(sorts)}))" for name, sorts in ANALYSES.items()]


def float_predicate(name: str, value: Any, real: bool) -> Any:
    """The meaning of a float analysis on a lane value (``real``: fast-math real numbers, which
    are never NaN or infinite)."""
    import z3

    if real:
        zero = z3.RealVal(0)
        return {"NotNan": z3.BoolVal(True), "Finite": z3.BoolVal(True),
                "NonNeg": value >= zero, "Positive": value > zero}[name]
    zero = z3.FPVal(0.0, value.sort())
    if name == "NotNan":
        return z3.Not(z3.fpIsNaN(value))
    if name == "Finite":
        return z3.Not(z3.Or(z3.fpIsNaN(value), z3.fpIsInf(value)))
    if name == "NonNeg":
        return z3.fpGEQ(value, zero)
    return z3.fpGT(value, zero)


def int_predicate(name: str, lane: Any, k: Any = None) -> Any:
    """The meaning of an analysis on an integer lane (``lane``: the value as a 66-bit signed
    integer; ``k``: the 64-bit divisor of ``Divisible``)."""
    import z3

    if name == "Divisible":
        kk = z3.SignExt(lane.size() - 64, k)
        return z3.And(k > 0, k & (k - 1) == 0, lane & (kk - 1) == 0)
    zero = z3.BitVecVal(0, lane.size())
    return {"NotNan": z3.BoolVal(True), "Finite": z3.BoolVal(True), "NonNeg": lane >= zero,
            "Positive": lane > zero}[name]


def fact_seeds(fn: Any, leaves: Any) -> str:
    """egglog commands that seed the analyses from ``fn.facts`` (:mod:`eggpu.ir.facts`): a
    ``divK`` parameter is ``Divisible`` by the power of two in ``K`` (and by 16 when that is
    more, so facts meet at one divisor), and under ``offsets_i32`` every ``program_id`` is at most
    ``2**31 // block - 1``; a ``for`` loop's induction variable gets the range and divisibility
    its constant ``lo`` and ``step`` imply (:func:`loop_iv_facts`: the IR's semantics, not a
    launch fact). ``leaves``: the encoding's leaf id -> Leaf map. Translation validation
    assumes the same facts (:func:`eggpu.optimizer.validate.validate`)."""
    facts = fn.facts
    lines = []
    params = {id(p): p for p in fn.params}
    for leaf in leaves.values():
        p = params.get(id(leaf.value))
        t = leaf.value.type
        if p is None or t.is_pointer or not t.is_scalar or not t.dtype.is_int:
            continue
        d = facts.divisor(p.name)
        for k in sorted({d, min(d, 16)} - {1}):
            lines.append(f"({'Divisible'} {leaf.term()} {k})")
    for leaf in leaves.values():
        lines += _outer_value_bounds(leaf)
    by_value = {id(leaf.value): leaf for leaf in leaves.values()}
    for lf in loop_iv_facts(fn):
        leaf = by_value.get(id(lf.iv))
        if leaf is None:  # the body does not use its induction variable
            continue
        iv = leaf.term()
        lines.append(f"(set (LowerBound {iv}) {lf.lo}) (set (UpperBound {iv}) {lf.hi_max})")
        lines += [f"(Divisible {iv} {k})" for k in sorted({lf.p, min(lf.p, 16)} - {1})]
        hi = by_value.get(id(lf.hi)) if lf.hi is not None else None
        if hi is not None:
            # iv < hi, stated as the range of a comparison term: the term names the loop's own
            # induction variable, so it only ever occurs where the fact holds
            lines.append(f"(set (LowerBound (Lt (I32) {iv} {hi.term()})) 1)")
    top = facts.program_id_max
    if top is not None:
        axes = sorted({op.attrs["axis"] for op in fn.walk() if op.op == "program_id"})
        lines += [f"(set (UpperBound (ProgramId (I32) {a})) {top})" for a in axes]
    return "\n".join(lines)


@dataclass(frozen=True)
class LoopFacts:
    """What a ``for`` loop's semantics says about its induction variable ``iv`` (see
    :func:`loop_iv_facts`): ``lo <= iv <= hi_max``, ``iv`` a multiple of the power of two ``p``
    (1: nothing known) and, when ``hi`` is not None (a kernel parameter), ``iv < hi``."""

    iv: Any
    lo: int
    hi_max: int
    p: int
    hi: Any = None


def loop_iv_facts(fn: Any) -> list[LoopFacts]:
    """What the IR's ``for`` semantics (Python's ``range(lo, hi, step)`` over i32 scalars) says
    about the induction variable of every ``for`` whose ``lo`` and ``step`` are constants with
    ``step > 0``. The body runs only for ``lo <= iv < hi`` with ``hi`` an i32 (so ``iv <= 2**31 -
    2``) and ``iv = lo + j * step``, so ``hi_max`` is the largest such value up to ``2**31 - 2``
    and ``p`` the largest power of two dividing both ``step`` and ``lo`` (for ``lo == 0``:
    ``step``'s). ``iv < hi`` is stated when ``hi`` is a kernel parameter (a value every region
    names alike). Loops with a runtime ``lo`` or ``step``, a non-positive step or ``lo > 2**31 -
    2`` (the body never runs) give nothing. The e-graph is seeded with these facts
    (:func:`fact_seeds`) and translation validation assumes the same ones."""
    out = []
    top = (1 << 31) - 2
    params = {id(p) for p in fn.params}
    for op in fn.walk():
        if op.op != "for" or not op.regions or not op.regions[0].args:
            continue
        lo, step = _const_int(op.operands[0]), _const_int(op.operands[2])
        if lo is None or step is None or step <= 0 or lo > top:
            continue
        hi_max = lo + (top - lo) // step * step
        g = step if lo == 0 else math.gcd(step, abs(lo))
        hi = op.operands[1] if id(op.operands[1]) in params else None
        out.append(LoopFacts(op.regions[0].args[0], lo, hi_max, g & -g, hi))
    return out


def _outer_value_bounds(leaf: Any) -> list[str]:
    """Range facts of a leaf that is an ``arange`` or integer ``const`` of an enclosing region
    (a loop body sees the function's ``arange`` as an opaque value; its lanes are still
    ``start..end-1``). Translation validation needs no assumption for them: it evaluates pure
    values of enclosing regions by their definitions."""
    owner = getattr(leaf.value, "owner", None)
    t = leaf.value.type
    if t.is_pointer or not t.dtype.is_int:
        return []
    if getattr(owner, "op", None) == "arange":
        lo, hi = int(owner.attrs["start"]), int(owner.attrs["end"]) - 1
    elif (c := _const_int(leaf.value)) is not None and (t.dtype.is_signed or 0 <= c < 1 << 63):  # egglog i64
        lo = hi = c
    else:
        return []
    return [f"(set (LowerBound {leaf.term()}) {lo}) (set (UpperBound {leaf.term()}) {hi})"]


def _const_int(v: Any) -> int | None:
    """The value of ``v`` when a ``const`` op defines it, else None."""
    owner = getattr(v, "owner", None)
    if getattr(owner, "op", None) == "const" and isinstance(owner.attrs.get("value"), int):
        return int(owner.attrs["value"])
    return None


__all__ = ["ANALYSES", "declarations", "fact_seeds", "float_predicate", "int_predicate", "loop_iv_facts", "LoopFacts"]
