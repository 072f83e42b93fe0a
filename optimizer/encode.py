"""IR -> egglog terms: the pure dataflow of each region of a function, as egglog ``let`` commands.

Schema (the contract in ``docs/rules.md``; declared by :mod:`eggpu.optimizer.schema`): one
``Term`` constructor per pure op, named in PascalCase (``reduce_sum`` -> ``ReduceSum``), with
arguments ``DT``, then the op's attributes in op-table order (ints as ``i64``, dtypes as ``DT``,
shapes/perms as a ``String`` like ``"16,32"``), then the operands. Ops with optional operands
get one constructor per operand count, suffixed with the count unless it is the maximum
(``Dot``/``Dot2``). Integer and bool constants are ``(Const DT i64)``; float constants are
``(ConstF DT bits)`` with ``bits`` the IEEE binary64 pattern of the value (rounded to the
constant's dtype first, so equal constants get equal terms).

Regions: the function body, each ``for`` body and each ``if`` branch is a region. A region's
pure values are encoded as terms over *leaves*: values the optimizer does not look into
(parameters, block arguments, results of loads/atomics/``for``/``if``, and values defined in an
enclosing region) become ``(Opaque DT id)`` (``(OpaquePtr DT id)`` for pointers; ``DT`` the
element/pointee dtype), ``id`` unique per value in one run. The *roots* of a region are its pure
values that something other than a pure op of the same region needs: an effect, a control op,
a ``yield`` or any op of a nested region. Only roots are materialized again by the decoder, so
pure values nobody needs are dropped (they have no effect). Every pure value gets a
``(let $vR_N ...)`` (``R`` numbers the encodings of the process, so a name is never reused) so
its e-class can be found after saturation.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from eggpu.ir import Block, BlockType, Function, Operation, Value
from eggpu.ir.errors import EggpuError, IRError

from .schema import DTYPE_CONSTRUCTORS, term_head


def op_term(op: Operation, operand_terms: list[str]) -> str:
    """The constructor application for a pure op given its operands' terms."""
    try:
        ctor, args = term_head(op.op, [v.type for v in op.operands], op.results[0].type, op.attrs)
    except IRError as e:
        raise EggpuError(f"encode: {op.op}: {e}") from None
    return "(" + " ".join([ctor, *args, *operand_terms]) + ")"


# ---------------------------------------------------------------------- region encoding


@dataclass(eq=False)
class Leaf:
    """A value the optimizer treats as opaque. ``block`` is the block whose op (or argument list)
    defines it (None for parameters); ``position`` the defining op's index there (-1: a block
    argument or parameter, available from the start)."""

    id: int
    value: Value
    block: Block | None
    position: int

    @property
    def type(self) -> BlockType:
        return self.value.type

    def term(self) -> str:
        ctor = "OpaquePtr" if self.value.type.is_pointer else "Opaque"
        return f"({ctor} ({DTYPE_CONSTRUCTORS[self.value.type.dtype]}) {self.id})"


@dataclass(eq=False)
class Region:
    """One block of the function and what the decoder must rebuild in it."""

    block: Block
    parent: Region | None
    roots: list[Value] = field(default_factory=list)
    first_use: dict[int, int] = field(default_factory=dict)  # id(root) -> index of its first consumer op
    outer_leaves: set[int] = field(default_factory=set)  # leaf ids usable anywhere in this region
    local_leaves: dict[int, int] = field(default_factory=dict)  # leaf id -> defining op index here

    def leaf_allowed(self, leaf_id: int, before: int | None = None) -> bool:
        """Whether a leaf may appear in a term materialized in this region before op ``before``."""
        if leaf_id in self.outer_leaves:
            return True
        pos = self.local_leaves.get(leaf_id)
        if pos is None:
            return False
        return before is None or pos < before


@dataclass(eq=False)
class Encoding:
    """The egglog encoding of a function: commands plus maps back to the IR."""

    function: Function
    commands: str
    regions: list[Region]
    region_of: dict[int, Region]  # id(Block) -> Region
    leaves: dict[int, Leaf]  # leaf id -> Leaf
    leaf_of: dict[int, int]  # id(Value) -> leaf id
    let_of: dict[int, str]  # id(Value) -> let name (pure values)
    let_types: dict[str, BlockType]  # let name -> type
    n_pure: int
    # let name -> (constructor, operands as ("let", name) or ("leaf", id)): the original e-nodes
    structure: dict[str, tuple[str, tuple[tuple[str, Any], ...]]] = field(default_factory=dict)


#: numbers the encodings of this process, so no two ever use the same ``let`` name (see _Encoder)
_RUNS = itertools.count()


class _Encoder:
    """Encodes one function. Its ``let`` names (``$v<run>_<n>``) are unique in the process: the
    optimizer adds every program to one cached e-graph between ``push`` and ``pop``, and with
    egglog 13.2 a name bound by an earlier, popped program can leak into a later one — a random
    program whose ``$v12`` was defined after ``$v1`` got ``$v1``'s e-class for it (an
    ``Addptr`` over two ``arange`` terms, not extractable at its pointer type) after 75 earlier
    programs, never on a fresh e-graph and never with names not used before."""

    def __init__(self, fn: Function):
        self.fn = fn
        self.run_id = next(_RUNS)
        self.lines: list[str] = []
        self.regions: list[Region] = []
        self.region_of: dict[int, Region] = {}
        self.leaves: dict[int, Leaf] = {}
        self.leaf_of: dict[int, int] = {}
        self.let_of: dict[int, str] = {}
        self.let_types: dict[str, BlockType] = {}
        self.def_block: dict[int, tuple[Block | None, int]] = {}  # id(Value) -> (block, op index)
        self.structure: dict[str, tuple[str, tuple[tuple[str, Any], ...]]] = {}

    def leaf(self, v: Value) -> Leaf:
        lid = self.leaf_of.get(id(v))
        if lid is None:
            lid = len(self.leaves)
            blk, pos = self.def_block[id(v)]
            self.leaves[lid] = Leaf(lid, v, blk, pos)
            self.leaf_of[id(v)] = lid
        return self.leaves[lid]

    def run(self) -> Encoding:
        for p in self.fn.params:
            self.def_block[id(p)] = (None, -1)
        outer = {self.leaf(p).id for p in self.fn.params}
        self.block(self.fn.body, None, outer)
        return Encoding(self.fn, "\n".join(self.lines), self.regions, self.region_of, self.leaves, self.leaf_of,
                        self.let_of, self.let_types, len(self.let_of), self.structure)

    def block(self, blk: Block, parent: Region | None, outer: set[int]) -> None:
        region = Region(blk, parent, outer_leaves=set(outer))
        self.regions.append(region)
        self.region_of[id(blk)] = region
        for a in blk.args:
            self.def_block[id(a)] = (blk, -1)
            region.outer_leaves.add(self.leaf(a).id)
        local: dict[int, Value] = {}  # pure values defined in this block
        for i, op in enumerate(blk.ops):
            for r in op.results:
                self.def_block[id(r)] = (blk, i)
        # Terms of the pure ops, in program order (operands come first in SSA order).
        for i, op in enumerate(blk.ops):
            if op.opdef.is_pure and not op.regions:
                terms = [self.operand_term(v, local, region) for v in op.operands]
                v = op.results[0]
                name = f"$v{self.run_id}_{len(self.let_of)}"
                self.let_of[id(v)] = name
                self.let_types[name] = v.type
                text = op_term(op, terms)
                self.lines.append(f"(let {name} {text})")
                self.structure[name] = (text[1:].split(" ", 1)[0], tuple(
                    ("let", self.let_of[id(o)]) if id(o) in local else ("leaf", self.leaf_of[id(o)])
                    for o in op.operands))
                local[id(v)] = v
            else:
                for r in op.results:
                    region.local_leaves[self.leaf(r).id] = i
                self.lines.extend(self.masked_load_facts(op, local, region))
        # Roots: pure values of this block needed by a non-pure op here or by any nested op.
        for i, op in enumerate(blk.ops):
            if op.opdef.is_pure and not op.regions:
                continue
            for v in needed_values(op):
                if id(v) in local and id(v) not in region.first_use:
                    region.first_use[id(v)] = i
                    region.roots.append(v)
        # Nested regions, after this block's own leaves are known.
        for i, op in enumerate(blk.ops):
            if op.regions:
                inner_outer = self.leaves_visible_inside(op, i, region, local)
                for sub in op.regions:
                    self.block(sub, region, inner_outer)

    def leaves_visible_inside(self, op: Operation, i: int, region: Region, local: dict[int, Value]) -> set[int]:
        """Leaf ids the regions of ``op`` (the ``i``-th op of ``region``'s block) may use: the
        block's outer leaves, its leaves defined before ``op``, and this block's pure values
        used inside (they become leaves there, materialized here first)."""
        inner_outer = set(region.outer_leaves)
        inner_outer.update(lid for lid, pos in region.local_leaves.items() if pos < i)
        used_inside = (v for sub in op.regions for inner in sub.walk() for v in inner.operands)
        inner_outer.update(self.leaf(v).id for v in used_inside if id(v) in local)
        return inner_outer

    def masked_load_facts(self, op: Operation, local: dict[int, Value], region: Region) -> list[str]:
        """What a masked load with ``other`` says about its own value: ``load(p, m, o)`` equals
        ``where(m, load(p, m, o), o)`` on every lane (masked-off lanes read ``o``; the IR's
        semantics). Asserted as a ``union``, so Inductor's ``tl.where(m, tl.load(p, m, other=0.0),
        0.0)`` and ``where(a, load(p, a & b, o), o)`` (rule ``where-where-and-inner``) fold to
        the load. Translation validation checks every such fold like any rewrite."""
        if op.op != "load" or len(op.operands) != 3 or op.results[0].type.is_pointer:
            return []
        _ptr, mask, other = op.operands
        value = self.leaf(op.results[0]).term()
        dt = DTYPE_CONSTRUCTORS[op.results[0].type.dtype]
        m, o = self.operand_term(mask, local, region), self.operand_term(other, local, region)
        return [f"(union {value} (Where ({dt}) {m} {value} {o}))"]

    def operand_term(self, v: Value, local: dict[int, Value], region: Region) -> str:
        if id(v) in local:
            return self.let_of[id(v)]
        lf = self.leaf(v)
        return lf.term()


def encode(fn: Function) -> Encoding:
    """Encode every region of ``fn`` (see the module docstring). ``fn`` is not modified."""
    return _Encoder(fn).run()


__all__ = ["Encoding", "Leaf", "Region", "encode", "op_term"]


def needed_values(op: Operation) -> list[Value]:
    """The values a non-pure op uses: its operands and those of every op nested in its regions."""
    needed = list(op.operands)
    for sub in op.regions:
        for inner in sub.walk():
            needed.extend(inner.operands)
    return needed
