"""egglog's binary i64 primitives evaluated in Python: the one definition behind the rule examples
(:mod:`.rule_examples`), the check of rule guards on concrete values (:mod:`.validate_guards`) and
rule synthesis (:mod:`.synth_generalize`).

egglog's ``+``, ``-``, ``*``, ``/`` and ``%`` on i64 are checked: a result outside the i64 range, a
division by zero or ``I64_MIN / -1`` panics, so a rule whose guard computes one does not fire. ``/``
and ``%`` truncate toward zero (as z3's ``bvsdiv``/``bvsrem``). Shifts are defined for amounts in
[0, 64): ``<<`` wraps to 64 bits, ``>>`` is arithmetic. ``&``, ``|``, ``^``, ``min`` and ``max``
are always defined.
"""

from __future__ import annotations

I64_MIN, I64_MAX = -(1 << 63), (1 << 63) - 1


class I64Undefined(ArithmeticError):
    """egglog's primitive panics for these operands (the message says why)."""


def _checked(v: int) -> int:
    if not I64_MIN <= v <= I64_MAX:
        raise I64Undefined("i64 overflow")
    return v


def _divide(op: str, a: int, b: int) -> int:
    if b == 0 or (a == I64_MIN and b == -1):
        raise I64Undefined("division by zero" if b == 0 else "i64 overflow")
    q = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)  # truncates toward zero
    return q if op == "/" else a - q * b


def _shift(op: str, a: int, b: int) -> int:
    if not 0 <= b < 64:
        raise I64Undefined("shift out of range")
    if op == ">>":
        return a >> b
    r = (a << b) & ((1 << 64) - 1)
    return r - (1 << 64) if r >> 63 else r


_PRIMITIVES = {
    "+": lambda a, b: _checked(a + b), "-": lambda a, b: _checked(a - b), "*": lambda a, b: _checked(a * b),
    "/": lambda a, b: _divide("/", a, b), "%": lambda a, b: _divide("%", a, b),
    "<<": lambda a, b: _shift("<<", a, b), ">>": lambda a, b: _shift(">>", a, b),
    "&": lambda a, b: a & b, "|": lambda a, b: a | b, "^": lambda a, b: a ^ b, "min": min, "max": max,
}
#: the names of egglog's binary i64 primitives that :func:`i64_binary` evaluates
PRIMITIVES = frozenset(_PRIMITIVES)


def i64_binary(op: str, a: int, b: int) -> int:
    """``(op a b)`` as egglog computes it on the i64 values ``a`` and ``b``. Raises
    :class:`I64Undefined` where egglog panics, and KeyError for an ``op`` not in :data:`PRIMITIVES`."""
    return _PRIMITIVES[op](a, b)
