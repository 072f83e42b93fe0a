"""Deep copy of an IR :class:`~eggpu.ir.Function` (fresh values, operations and blocks).

``Kernel.ir()`` lowers once and hands out clones, so a caller that mutates its function cannot
corrupt the cached lowering. Attributes, names, types and locations are kept.
"""

from __future__ import annotations

from eggpu.ir.graph import Block, Function, Operation, Value


def clone_function(fn: Function) -> Function:
    """A structurally identical, independent copy of ``fn``."""
    mapping: dict[int, Value] = {}
    params = [Value(p.type, None, p.index, p.name) for p in fn.params]
    new = Function(fn.name, params, Block(), fn.grid_rank, fn.facts)
    for old, p in zip(fn.params, params):
        p.owner = new
        mapping[id(old)] = p
    new.body = _clone_block(fn.body, mapping)
    return new


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
