"""IR program structure: values, operations, blocks (regions) and functions.

A :class:`Function` is one kernel: named, typed parameters and a body :class:`Block`. A block is
a list of :class:`Operation` in program order (SSA: an operand is defined earlier in the same
block, in an enclosing block, or is a block argument / parameter). Structured control flow:
``for`` and ``if`` operations own nested blocks that end in ``yield``. Pure operations are
interned by the :class:`~eggpu.ir.builder.Builder` (same op, operands and attributes in a block
scope give the same value); effects keep program order.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from .facts import Facts
from .ops import OpDef, get
from .types import BlockType


class Value:
    """An SSA value: a parameter, a block argument, or a result of an operation."""

    __slots__ = ("type", "owner", "index", "name")

    def __init__(self, type: BlockType, owner: Operation | Block | Function | None = None, index: int = 0,
                 name: str | None = None):
        self.type = type
        self.owner = owner
        self.index = index
        self.name = name

    def __repr__(self) -> str:
        return f"Value({self.name or hex(id(self))}: {self.type})"


def freeze_attr(v: Any) -> Any:
    """A hashable form of an attribute value (lists become tuples)."""
    if isinstance(v, list | tuple):
        return tuple(freeze_attr(x) for x in v)
    return v


def attr_key(attrs: dict[str, Any]) -> tuple:
    """Hashable, order-independent key for attributes; floats keyed by bits so -0.0 != 0.0 and NaNs
    are equal exactly when their bits (sign, payload) are."""
    import struct

    def k(v):
        if isinstance(v, float):
            return ("f", struct.pack("<d", v))
        if isinstance(v, bool):
            return ("b", v)
        return freeze_attr(v)

    return tuple(sorted((a, k(v)) for a, v in attrs.items()))


class Operation:
    """One operation: ``op`` names an entry of the op table."""

    __slots__ = ("op", "operands", "attrs", "results", "regions", "loc")

    def __init__(self, op: str, operands: tuple[Value, ...], attrs: dict[str, Any],
                 result_types: tuple[BlockType, ...], regions: tuple[Block, ...] = (), loc: Loc | None = None):
        self.op = op
        self.operands = tuple(operands)
        self.attrs = {a: freeze_attr(v) for a, v in attrs.items()}
        self.results = tuple(Value(t, self, i) for i, t in enumerate(result_types))
        self.regions = tuple(regions)
        self.loc = loc

    @property
    def opdef(self) -> OpDef:
        return get(self.op)

    @property
    def result(self) -> Value:
        """The single result (raises if the op has zero or several)."""
        if len(self.results) != 1:
            raise ValueError(f"{self.op} has {len(self.results)} results")
        return self.results[0]

    def key(self) -> tuple:
        """Interning key of a pure op: (op, operand identities, attributes, result types)."""
        return (self.op, tuple(id(o) for o in self.operands), attr_key(self.attrs),
                tuple(r.type for r in self.results))

    def __repr__(self) -> str:
        return f"Operation({self.op}, {len(self.operands)} operands, attrs={self.attrs})"


@dataclass(eq=False)
class Block:
    """A region body: arguments (loop induction variable and carried values) and ops."""

    args: list[Value] = field(default_factory=list)
    ops: list[Operation] = field(default_factory=list)

    def walk(self) -> Iterator[Operation]:
        """Every operation in this block and nested blocks, pre-order."""
        for op in self.ops:
            yield op
            for r in op.regions:
                yield from r.walk()

    @property
    def terminator(self) -> Operation | None:
        return self.ops[-1] if self.ops and self.ops[-1].op == "yield" else None


@dataclass(frozen=True)
class Loc:
    """A source location: file, 1-based line and 0-based column (for diagnostics)."""

    file: str
    line: int
    col: int = 0

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col + 1}"

    def excerpt(self) -> str:
        """The source line and a caret under the column (empty when the file cannot be read)."""
        import linecache

        text = linecache.getline(self.file, self.line).rstrip("\n")
        return f"{text}\n{' ' * self.col}^" if text else ""


@dataclass(eq=False)
class Function:
    """A kernel program. ``params`` are its launch arguments in order; ``facts`` the launch-time
    specialization facts it is compiled under (:mod:`eggpu.ir.facts`; checked at every launch)."""

    name: str
    params: list[Value]
    body: Block
    grid_rank: int = 1
    facts: Facts = field(default_factory=Facts)

    def walk(self) -> Iterator[Operation]:
        return self.body.walk()

    @property
    def arg_types(self) -> tuple[BlockType, ...]:
        return tuple(p.type for p in self.params)

    def op_count(self) -> int:
        return sum(1 for _ in self.walk())

    def clone(self) -> Function:
        """A structurally identical, independent copy: fresh values, operations and blocks;
        attributes (shallow-copied dicts), names, types, locations and facts kept."""
        mapping: dict[int, Value] = {}
        params = [Value(p.type, None, p.index, p.name) for p in self.params]
        new = Function(self.name, params, Block(), self.grid_rank, self.facts)
        for old, p in zip(self.params, params):
            p.owner = new
            mapping[id(old)] = p
        new.body = _clone_block(self.body, mapping)
        return new

    def __str__(self) -> str:
        from .printer import print_function

        return print_function(self)


def _clone_block(blk: Block, mapping: dict[int, Value]) -> Block:
    nb = Block([Value(a.type, None, a.index, a.name) for a in blk.args], [])
    for old, a in zip(blk.args, nb.args):
        a.owner = nb
        mapping[id(old)] = a
    for op in blk.ops:
        regions = tuple(_clone_block(r, mapping) for r in op.regions)
        nop = Operation(op.op, tuple(mapping[id(v)] for v in op.operands), dict(op.attrs),
                        tuple(r.type for r in op.results), regions, op.loc)
        for old, r in zip(op.results, nop.results):
            r.name = old.name
            mapping[id(old)] = r
        nb.ops.append(nop)
    return nb
