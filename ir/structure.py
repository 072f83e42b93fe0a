"""The structure rule of the control ops ``for``, ``while`` and ``if``: one definition, used by
the text parser (:mod:`eggpu.ir.parser`) and the verifier (:mod:`eggpu.ir.verifier`).

Given a control op's operand and result types, :func:`control_regions` checks them and returns
what each of its regions must look like — its argument types and the types its ``yield`` gives:

* ``for(lo, hi, step, *init)``: ``lo``, ``hi``, ``step`` are i32 scalars; the results are the
  carried values' types; one body region taking ``(iv: i32, *carried)`` and yielding ``carried``;
* ``while(*init)``: the results are the carried types; a condition region taking ``carried`` and
  yielding one bool scalar, then a body region taking ``carried`` and yielding ``carried``;
* ``if(cond)``: ``cond`` is a bool scalar; two regions taking nothing and yielding the results.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .dtypes import bool_, i32
from .errors import IRError
from .types import BlockType

CONTROL_OPS = ("for", "while", "if")
_I32 = BlockType(i32, ())
_BOOL = BlockType(bool_, ())


@dataclass(frozen=True)
class RegionShape:
    """One region of a control op: its argument types and the types its ``yield`` must give."""

    args: tuple[BlockType, ...]
    yields: tuple[BlockType, ...]


class StructureError(IRError):
    """A control op's operands or results break its structure rule. ``operand`` is the index of
    the offending operand, or None when the results (``on_results``) or the operand count are wrong."""

    def __init__(self, msg: str, operand: int | None = None, on_results: bool = False):
        super().__init__(msg)
        self.operand, self.on_results = operand, on_results


def types_text(ts: Sequence[BlockType]) -> str:
    return "(" + ", ".join(map(str, ts)) + ")"


def control_regions(op: str, operands: Sequence[BlockType], results: Sequence[BlockType]) -> tuple[RegionShape, ...]:
    """The regions control op ``op`` must own, given its operand and result types; raises
    StructureError (message prefixed with the op name) when those break the rule."""
    operands, results = tuple(operands), tuple(results)
    if op == "for":
        return _for(operands, results)
    if op == "while":
        carried = _carried("while", operands, results)
        return (RegionShape(carried, (_BOOL,)), RegionShape(carried, carried))
    if op == "if":
        if len(operands) != 1:
            raise StructureError(f"if: takes one condition operand, got {len(operands)}")
        if operands[0] != _BOOL:
            raise StructureError(f"if: condition must be a bool scalar, got {operands[0]}", operand=0)
        return (RegionShape((), results), RegionShape((), results))
    raise StructureError(f"{op}: only for/while/if own regions")


def _for(operands: tuple[BlockType, ...], results: tuple[BlockType, ...]) -> tuple[RegionShape, ...]:
    if len(operands) < 3:
        raise StructureError(f"for: needs lo, hi, step operands, got {len(operands)} operand(s)")
    for k, what in enumerate(("lo", "hi", "step")):
        if operands[k] != _I32:
            raise StructureError(f"for: {what} must be an i32 scalar, got {operands[k]}", operand=k)
    carried = _carried("for", operands[3:], results)
    return (RegionShape((_I32, *carried), carried),)


def _carried(op: str, carried: tuple[BlockType, ...], results: tuple[BlockType, ...]) -> tuple[BlockType, ...]:
    if results != carried:
        raise StructureError(f"{op}: result types {types_text(results)} must match the carried values "
                             f"{types_text(carried)}", on_results=True)
    return carried
