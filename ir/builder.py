"""Builder: the one way to create IR. Type-checks every op against the op table and interns
pure ops within a block scope (including enclosing scopes), so equal expressions share a value.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import contextmanager
from typing import Any

from .dtypes import DType, bool_, f32
from .errors import IRError
from .graph import Block, Function, Loc, Operation, Value
from .ops import PURE, get, result_types
from .types import BlockType


class Builder:
    """Appends operations to the current block.

    >>> b = Builder("k", [("x", pointer(f32)), ("n", scalar(i32))])
    >>> pid = b.op("program_id", axis=0)
    """

    def __init__(self, name: str, params: Sequence[tuple[str, BlockType]], grid_rank: int = 1):
        self.params = [Value(t, None, i, n) for i, (n, t) in enumerate(params)]
        self.function = Function(name, self.params, Block(), grid_rank)
        for p in self.params:
            p.owner = self.function
        self._blocks: list[Block] = [self.function.body]
        self._interned: list[dict[tuple, Value]] = [{}]
        self.loc: Loc | None = None

    @property
    def block(self) -> Block:
        return self._blocks[-1]

    def param(self, name: str) -> Value:
        for p in self.params:
            if p.name == name:
                return p
        raise IRError(f"no parameter named {name!r}")

    def create(self, op: str, operands: Sequence[Value] = (), attrs: dict[str, Any] | None = None,
               regions: Sequence[Block] = (), result_types_: Sequence[BlockType] | None = None) -> Operation:
        """Create (or reuse, for pure ops) an operation and append it to the current block."""
        attrs = dict(attrs or {})
        for v in operands:
            if not isinstance(v, Value):
                raise IRError(f"{op}: operand {v!r} is not an IR value")
        if result_types_ is None:
            rts = result_types(op, [v.type for v in operands], attrs)
        else:
            rts = tuple(result_types_)
        operation = Operation(op, tuple(operands), attrs, rts, tuple(regions), self.loc)
        if PURE in get(op).traits and not regions:
            key = operation.key()
            for scope in reversed(self._interned):
                if key in scope:
                    return scope[key].owner  # type: ignore[return-value]
            if len(operation.results) == 1:
                self._interned[-1][key] = operation.results[0]
        self.block.ops.append(operation)
        return operation

    def op(self, op: str, *operands: Value, **attrs: Any) -> Value:
        """Create a single-result op and return its value."""
        return self.create(op, operands, attrs).result

    def effect(self, op: str, *operands: Value, **attrs: Any) -> Operation:
        return self.create(op, operands, attrs)

    def const(self, value: int | float | bool, dtype: DType) -> Value:
        """A scalar constant. An FP8 ``dtype`` (no FP8 constants in the IR) gives an f32 constant
        converted to it (Triton's way: the value rounded once, saturating)."""
        if dtype.is_fp8:
            return self.op("cast", self.const(value, f32), dtype=dtype)
        if dtype == bool_:
            value = bool(value)
        elif dtype.is_int:
            value = int(value)
        else:
            value = float(value)
        return self.op("const", value=value, dtype=dtype)

    @contextmanager
    def region(self, args: Sequence[BlockType] = ()):
        """Open a nested block (for a ``for`` body or an ``if`` branch) and yield it."""
        blk = Block([Value(t, None, i) for i, t in enumerate(args)], [])
        for a in blk.args:
            a.owner = blk
        self._blocks.append(blk)
        self._interned.append({})
        try:
            yield blk
        finally:
            self._blocks.pop()
            self._interned.pop()

    def yield_(self, *values: Value) -> Operation:
        return self.create("yield", values, {}, (), ())

    def for_(self, lo: Value, hi: Value, step: Value, inits: Sequence[Value], body: Block) -> Operation:
        """Append a ``for`` whose body was built with :meth:`region` (args: iv, carried...)."""
        return self.create("for", (lo, hi, step, *inits), {}, (body,), tuple(v.type for v in inits))

    def while_(self, inits: Sequence[Value], cond: Block, body: Block) -> Operation:
        """Append a ``while`` whose regions were built with :meth:`region` (both take the carried
        values; ``cond`` yields a bool scalar, ``body`` the next carried values)."""
        return self.create("while", tuple(inits), {}, (cond, body), tuple(v.type for v in inits))

    def if_(self, cond: Value, then: Block, else_: Block, result_types_: Sequence[BlockType]) -> Operation:
        return self.create("if", (cond,), {}, (then, else_), tuple(result_types_))

    def finish(self) -> Function:
        from .verifier import verify

        verify(self.function)
        return self.function
