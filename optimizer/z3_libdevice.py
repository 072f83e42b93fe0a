"""z3 encoding of the ``libdevice`` op (a libdevice function without an op of its own;
:mod:`eggpu.ir.libdevice_table`): an uninterpreted function keyed by its symbol. Sound: z3 knows
only congruence (equal symbols of equal operands are equal), so no rule can fire through a call
except by structure."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import z3

from eggpu.ir.dtypes import BY_NAME, DType
from eggpu.ir.libdevice_table import SYMBOLS


def result(symbol: str) -> DType:
    """The element dtype of ``symbol``'s result."""
    return BY_NAME[SYMBOLS[symbol][2]]


def call(symbol: str, args: Sequence[z3.ExprRef], sort_of: Callable[..., Any], mode: str) -> z3.ExprRef:
    """``symbol(*args)`` as an application of the uninterpreted function ``libdevice_<symbol>_<mode>``
    (operand sorts from ``args``, the result sort from the symbol's result dtype in ``mode``)."""
    out = sort_of(result(symbol), mode)
    return z3.Function(f"libdevice_{symbol}_{mode}", *(a.sort() for a in args), out)(*args)
