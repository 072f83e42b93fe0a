"""Structural and type checks of an IR function.

Checks: every op is in the op table and passes its type rule; every operand is defined before
use and visible from the use's block; regions are well formed (``for``: i32 bounds, body args
iv + carried values, ``yield`` of the carried types; ``if``: bool scalar condition, both branches
yield the result types; ``while``: both regions take the carried values, the condition region
yields a bool scalar and the body the carried types); ``yield`` only ends a region.
"""

from __future__ import annotations

from .errors import IRError
from .graph import Block, Function, Operation, Value
from .ops import get, result_types
from .structure import CONTROL_OPS, StructureError, control_regions, types_text
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
        elif op.op in CONTROL_OPS:
            _verify_control(fn, op, scope)
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


_types = types_text


def _verify_control(fn: Function, op: Operation, scope: set[int]) -> None:
    """for/while/if against the one structure rule (:mod:`eggpu.ir.structure`)."""
    try:
        shapes = control_regions(op.op, [v.type for v in op.operands], [r.type for r in op.results])
    except StructureError as e:
        raise _err(fn, op, str(e).partition(": ")[2]) from None
    if len(op.regions) != len(shapes):
        raise _err(fn, op, f"needs {len(shapes)} region(s), has {len(op.regions)}")
    for k, (region, shape) in enumerate(zip(op.regions, shapes)):
        got_args = tuple(a.type for a in region.args)
        if got_args != shape.args:
            raise _err(fn, op, f"region {k} arguments {_types(got_args)} must be {_types(shape.args)}")
        _verify_block(fn, region, scope, top=False, yield_types=shape.yields)
