"""Structural and type checks of an IR function.

Checks: every op is in the op table and passes its type rule; every operand is defined before
use and visible from the use's block; regions are well formed (``for``: i32 bounds, body args
iv + carried values, ``yield`` of the carried types; ``if``: bool scalar condition, both branches
yield the result types; ``while``: both regions take the carried values, the condition region
yields a bool scalar and the body the carried types); ``yield`` only ends a region.
"""

from __future__ import annotations

from .dtypes import bool_, i32
from .errors import IRError
from .graph import Block, Function, Operation, Value
from .ops import get, result_types
from .types import BlockType


def verify(fn: Function) -> Function:
    """Raise :class:`IRError` describing the first problem; return ``fn`` when well formed."""
    visible: set[int] = {id(p) for p in fn.params}
    _verify_block(fn, fn.body, visible, top=True)
    return fn


def _err(fn: Function, op: Operation | None, msg: str) -> IRError:
    where = f" (at {op.loc})" if op is not None and op.loc is not None else ""
    what = f" in {op.op}" if op is not None else ""
    return IRError(f"{fn.name}{what}: {msg}{where}")


def _verify_block(fn: Function, blk: Block, visible: set[int], top: bool,
                  yield_types: tuple[BlockType, ...] | None = None) -> None:
    scope = set(visible) | {id(a) for a in blk.args}
    for i, op in enumerate(blk.ops):
        try:
            get(op.op)
        except IRError as e:
            raise _err(fn, op, str(e)) from None
        for v in op.operands:
            if not isinstance(v, Value) or id(v) not in scope:
                raise _err(fn, op, f"operand {v!r} is used before it is defined or outside its scope")
        if op.op == "yield":
            if top or i != len(blk.ops) - 1:
                raise _err(fn, op, "yield may only end a for/while/if region")
            got = tuple(v.type for v in op.operands)
            if yield_types is not None and got != yield_types:
                raise _err(fn, op, f"yields {_types(got)} but the region must yield {_types(yield_types)}")
        elif op.op == "for":
            _verify_for(fn, op, scope)
        elif op.op == "if":
            _verify_if(fn, op, scope)
        elif op.op == "while":
            _verify_while(fn, op, scope)
        else:
            if op.regions:
                raise _err(fn, op, "only for/while/if own regions")
            try:
                want = result_types(op.op, [v.type for v in op.operands], op.attrs)
            except IRError as e:
                raise _err(fn, op, str(e)) from None
            got = tuple(r.type for r in op.results)
            if want != got:
                raise _err(fn, op, f"result types {_types(got)} disagree with the op table ({_types(want)})")
        scope.update(id(r) for r in op.results)
    if not top and yield_types is not None and (not blk.ops or blk.ops[-1].op != "yield"):
        raise _err(fn, None, "a region must end with yield")


def _types(ts) -> str:
    return "(" + ", ".join(map(str, ts)) + ")"


def _verify_for(fn: Function, op: Operation, scope: set[int]) -> None:
    if len(op.operands) < 3 or len(op.regions) != 1:
        raise _err(fn, op, "needs lo, hi, step operands and one body region")
    for v, what in zip(op.operands[:3], ("lo", "hi", "step")):
        if v.type != BlockType(i32, ()):
            raise _err(fn, op, f"{what} must be an i32 scalar, got {v.type}")
    carried = tuple(v.type for v in op.operands[3:])
    body = op.regions[0]
    want_args = (BlockType(i32, ()),) + carried
    got_args = tuple(a.type for a in body.args)
    if got_args != want_args:
        raise _err(fn, op, f"body arguments {_types(got_args)} must be {_types(want_args)}")
    if tuple(r.type for r in op.results) != carried:
        raise _err(fn, op, "results must match the carried values")
    _verify_block(fn, body, scope, top=False, yield_types=carried)


def _verify_while(fn: Function, op: Operation, scope: set[int]) -> None:
    if len(op.regions) != 2:
        raise _err(fn, op, "needs a condition region and a body region")
    carried = tuple(v.type for v in op.operands)
    for r, what in zip(op.regions, ("condition", "body")):
        got_args = tuple(a.type for a in r.args)
        if got_args != carried:
            raise _err(fn, op, f"{what} arguments {_types(got_args)} must be the carried values {_types(carried)}")
    if tuple(r.type for r in op.results) != carried:
        raise _err(fn, op, "results must match the carried values")
    _verify_block(fn, op.regions[0], scope, top=False, yield_types=(BlockType(bool_, ()),))
    _verify_block(fn, op.regions[1], scope, top=False, yield_types=carried)


def _verify_if(fn: Function, op: Operation, scope: set[int]) -> None:
    if len(op.operands) != 1 or len(op.regions) != 2:
        raise _err(fn, op, "needs one condition and two regions")
    if op.operands[0].type != BlockType(bool_, ()):
        raise _err(fn, op, f"condition must be a bool scalar, got {op.operands[0].type}")
    rts = tuple(r.type for r in op.results)
    for r in op.regions:
        if r.args:
            raise _err(fn, op, "if regions take no arguments")
        _verify_block(fn, r, scope, top=False, yield_types=rts)
