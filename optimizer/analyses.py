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
    ``2**31 // block - 1``. ``leaves``: the encoding's leaf id -> Leaf map. Translation validation
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
    top = facts.program_id_max
    if top is not None:
        axes = sorted({op.attrs["axis"] for op in fn.walk() if op.op == "program_id"})
        lines += [f"(set (UpperBound (ProgramId (I32) {a})) {top})" for a in axes]
    return "\n".join(lines)


__all__ = ["ANALYSES", "declarations", "fact_seeds", "float_predicate", "int_predicate"]
