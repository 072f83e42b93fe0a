"""Pieces of the z3 encoding of float math (:mod:`.z3ops`): where the partial functions are real
(the domain condition of a real-mode encoding) and the roundings to integral, over the reals and as
IEEE rounding directions."""

from __future__ import annotations

import z3

#: where the inverse trigonometric/hyperbolic functions are real (as log's ``a > 0``)
REAL_DOMAIN = {
    "asin": lambda a: z3.And(a >= -1, a <= 1),
    "acos": lambda a: z3.And(a >= -1, a <= 1),
    "acosh": lambda a: a >= 1,
    "atanh": lambda a: z3.And(a > -1, a < 1),
    "log10": lambda a: a > 0,
    "log1p": lambda a: a > -1,
}

#: the same for the binary functions: atan2 is undefined at the origin; pow is taken as real for a
#: positive base only (a negative base with an integer exponent is not modelled over the reals)
REAL_DOMAIN2 = {
    "atan2": lambda y, x: z3.Or(x != 0, y != 0),
    "pow": lambda a, b: a > 0,
}


def real_round(rm_name, a):
    """``a`` rounded to an integer over the reals (z3's ToInt is floor)."""
    floor = z3.ToReal(z3.ToInt(a))
    if rm_name == "floor":
        return floor
    if rm_name == "ceil":
        return -z3.ToReal(z3.ToInt(-a))
    if rm_name == "trunc":
        return z3.If(a >= 0, floor, -z3.ToReal(z3.ToInt(-a)))
    if rm_name == "round":  # ties away from zero
        return z3.If(a >= 0, z3.ToReal(z3.ToInt(a + 0.5)), -z3.ToReal(z3.ToInt(-a + 0.5)))
    # rint: ties to even
    f = z3.ToInt(a)
    d = a - z3.ToReal(f)
    up = z3.ToReal(f + 1)
    return z3.If(d < 0.5, floor, z3.If(d > 0.5, up, z3.If(f % 2 == 0, floor, up)))


#: IEEE rounding direction of each round-to-integral op
ROUNDING = {"floor": z3.RTN, "ceil": z3.RTP, "trunc": z3.RTZ, "rint": z3.RNE, "round": z3.RNA}
