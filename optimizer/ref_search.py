"""Counterexamples for rules over ops z3 treats as uninterpreted (exp, log, sin, ...): both sides
evaluated with the op table's reference semantics, and the tolerance such a counterexample needs.

z3 gives an uninterpreted function whatever values suit it, so its models over ``exp``/``log``
prove nothing, and :func:`.cex_check.search` cannot evaluate such a formula (it stays symbolic).
:func:`search` instead assigns concrete values to the rule's inputs (special values, boundaries,
moderate and random values per dtype), keeps an assignment only where the rule fires (guards,
definedness and egglog's checks all concretely true) and computes both sides with
:func:`.cex_check.evaluate`, which runs ``OpDef.reference`` (transcendentals in f64, rounded once).

**Tolerance.** The op table states transcendentals as "libdevice/libm accuracy (a few ulp)", and
the reference itself rounds twice (f64, then the dtype), so a difference in the last ulps is no
evidence that a rule is unsound. :func:`compare` therefore counts a difference in a rule with a
transcendental op only when it is *robust*: every transcendental result (finite and non-zero; an
overflow to inf, an exact 0 and a NaN are taken as they are) is nudged by ``-K``, ``0`` and ``+K``
ulps of its dtype (``K`` = :data:`TOLERANCE_ULPS`, the same nudge for every call on one side),
the two sides independently, and in all nine combinations the sides still differ: floats by more
than ``K`` ulps (a NaN against a number and different infinities always differ; ``-0.0`` and
``+0.0`` do not), other dtypes at all. Rules without transcendental ops compare structurally
(:func:`.cex_check.same`). A sound rule is never refuted by this; an unsound one whose difference
hides in the last ulps stays ``unknown``.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable
from typing import Any

import z3

from eggpu.ir import DType
from eggpu.ir.ops import transcendental_ops

from . import cex_check
from .rules_loader import Atom, Rule, Sx
from .schema import CONSTRUCTORS

#: ulps a transcendental result may be off by (the op table's "a few ulp")
TOLERANCE_ULPS = 4
#: concrete assignments :func:`search` tries
TRIES = 1500

_TRANSCENDENTAL = frozenset(transcendental_ops())


def _ops_of(node: Sx | None) -> Iterable[str]:
    if node is None or isinstance(node, Atom):
        return
    info = CONSTRUCTORS.get(node.head)
    if info is not None and info.op is not None:
        yield info.op
    for item in node.items[1:]:
        yield from _ops_of(item)


def transcendental(rule: Rule) -> bool:
    """True when either side of ``rule`` applies a transcendental op (its values need tolerance)."""
    return any(op in _TRANSCENDENTAL for side in (rule.lhs, rule.rhs) for op in _ops_of(side))


# ------------------------------------------------------------------ tolerant evaluation


def _uint(dt: DType) -> Any:
    import numpy as np

    return np.dtype(f"u{dt.bits // 8}")


def _nudge(v: Any, dt: DType, ulps: int) -> Any:
    """``v`` moved by ``ulps`` steps of ``dt`` (finite non-zero values only)."""
    import numpy as np

    if ulps == 0 or not isinstance(v, float) or not math.isfinite(v) or v == 0.0:
        return v
    a = np.asarray(v, dtype=dt.np)
    target = np.asarray(math.copysign(math.inf, ulps), dtype=dt.np)
    with np.errstate(all="ignore"):
        for _ in range(abs(ulps)):
            a = np.nextafter(a, target)
    return float(a)


class _Nudged(cex_check._Evaluator):
    """The reference evaluation with every transcendental result nudged by ``ulps``."""

    def __init__(self, inst: Any, value_of: cex_check.ValueOf, ulps: int):
        super().__init__(inst, value_of)
        self.ulps = ulps

    def term(self, node: Sx) -> tuple[Any, Any]:
        v, ty = super().term(node)
        if (self.ulps and not isinstance(node, Atom) and CONSTRUCTORS[node.head].op in _TRANSCENDENTAL
                and isinstance(ty, DType) and ty.is_float):
            v = _nudge(v, ty, self.ulps)
        return v, ty


def _ordered(v: float, dt: DType) -> int:
    """Position of ``v`` on the line of ``dt``'s finite values and infinities (±0 both 0)."""
    import numpy as np

    n = int(np.asarray(v, dtype=dt.np).view(_uint(dt)))
    sign = 1 << (dt.bits - 1)
    return -(n & (sign - 1)) if n & sign else n


def _far(a: Any, b: Any, ty: Any) -> bool:
    """Whether two lane values differ beyond the tolerance (see the module docstring)."""
    if not (isinstance(ty, DType) and ty.is_float) or dt_unsupported(ty):
        return not cex_check.same(a, b)
    fa, fb = float(a), float(b)
    if math.isnan(fa) or math.isnan(fb):
        return math.isnan(fa) != math.isnan(fb)
    return abs(_ordered(fa, ty) - _ordered(fb, ty)) > TOLERANCE_ULPS


def dt_unsupported(ty: DType) -> bool:
    """Float dtypes whose numpy storage is not their own bit layout (bf16): compared exactly."""
    import numpy as np

    return np.dtype(ty.np).itemsize * 8 != ty.bits


def compare(inst: Any, rule: Rule, value_of: cex_check.ValueOf) -> tuple[Any, Any, Any, Any, bool]:
    """(lhs value, its type, rhs value, its type, whether they differ) at the concrete inputs read
    through ``value_of``, computed with the reference semantics. With a transcendental op in the
    rule the difference must be robust (module docstring); otherwise it is structural. Raises
    :class:`.cex_check.NotEvaluable` (and what evaluation raises) when a side cannot be computed."""
    lv, lty = cex_check.evaluate(inst, rule.lhs, value_of)
    rv, rty = cex_check.evaluate(inst, rule.rhs, value_of)
    if not transcendental(rule):
        return lv, lty, rv, rty, not cex_check.same(lv, rv)
    if not _far(lv, rv, lty):
        return lv, lty, rv, rty, False
    steps = (-TOLERANCE_ULPS, 0, TOLERANCE_ULPS)
    lefts = [_Nudged(inst, value_of, k).term(rule.lhs)[0] for k in steps]
    rights = [_Nudged(inst, value_of, k).term(rule.rhs)[0] for k in steps]
    robust = all(_far(a, b, lty) for a in lefts for b in rights)
    return lv, lty, rv, rty, robust


# ------------------------------------------------------------------ the search


def _fp_specials(sort: z3.FPSortRef) -> list[z3.ExprRef]:
    vals = list(cex_check._fp_edges(sort))
    for f in (-0.5, -3.0, 10.0, -10.0, 100.0, -100.0, 1000.0, -1000.0, math.pi, math.pi / 2, -math.pi,
              0.1, 1e-8, -1e-8, 1e8, 88.75, 709.8, 11.1, -1e-3):
        vals.append(z3.FPVal(f, sort))
    e, s = sort.ebits(), sort.sbits()
    w = e + s
    vals.append(z3.fpBVToFP(z3.BitVecVal(1 << (s - 1), w), sort))  # smallest normal
    largest = (((1 << e) - 2) << (s - 1)) | ((1 << (s - 1)) - 1)
    vals.append(z3.fpBVToFP(z3.BitVecVal(largest | (1 << (w - 1)), w), sort))  # most negative finite
    return vals


def _fp_sample(sort: z3.FPSortRef, specials: list[z3.ExprRef], rng: random.Random) -> z3.ExprRef:
    r = rng.random()
    if r < 0.35:
        return rng.choice(specials)
    if r < 0.6:
        return z3.FPVal(rng.uniform(-20.0, 20.0), sort)
    if r < 0.8:
        return z3.FPVal(rng.choice((-1.0, 1.0)) * 10.0 ** rng.uniform(-8.0, 8.0), sort)
    w = sort.ebits() + sort.sbits()
    return z3.fpBVToFP(z3.BitVecVal(rng.getrandbits(w), w), sort)


def _fires(q: Any, value_of: cex_check.ValueOf) -> bool:
    """Whether the rule fires at the assignment and both sides are defined (all concretely true)."""
    inst = q.inst
    parts = [*inst.assume, *inst.panic_ok, *inst.int_defined]
    parts += [d for d in (q.lhs_def, q.rhs_def) if d is not None]
    return z3.is_true(value_of(z3.And(*parts))) if parts else True


def search(q: Any, *, tries: int = TRIES, seed: int = 0,
           seeds: Iterable[list[tuple[z3.ExprRef, z3.ExprRef]]] = ()) -> tuple[list | None, int]:
    """(a substitution of the query's inputs at which the rule fires and :func:`compare` finds
    the sides different, or None; the number of assignments compared). ``seeds`` (partial
    substitutions, e.g. a z3 model's inputs) are tried first, then ``tries`` sampled ones. Only
    rewrites and birewrites with both sides are searched; assignments whose guards do not
    evaluate concretely are skipped, and a side that cannot be evaluated ends the search."""
    rule = q.inst.rule
    compared = 0
    if rule.kind == "rule" or rule.lhs is None or rule.rhs is None:
        return None, 0
    rng = random.Random(seed)
    specials: dict[Any, list[z3.ExprRef]] = {}

    def sample(c: z3.ExprRef) -> z3.ExprRef | None:
        s = c.sort()
        if s.kind() == z3.Z3_FLOATING_POINT_SORT:
            return _fp_sample(s, specials.setdefault(s, _fp_specials(s)), rng)
        return cex_check._sample_value(c, rng)

    for subs in cex_check.assignments(cex_check.free_constants(q.solver_formula), seeds, tries, sample):
        if subs is None:
            return None, compared
        value_of = cex_check.substitution(subs)
        if not _fires(q, value_of):
            continue
        try:
            *_, differs = compare(q.inst, rule, value_of)
        except (cex_check.NotEvaluable, KeyError, ValueError, AttributeError, TypeError, z3.Z3Exception):
            return None, compared
        compared += 1
        if differs:
            return subs, compared
    return None, compared


__all__ = ["TOLERANCE_ULPS", "TRIES", "compare", "search", "transcendental"]
