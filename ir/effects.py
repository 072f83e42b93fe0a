"""Memory effects of an IR function: which pointer parameters an access may reach.

* :func:`written_params` names the pointer parameters a kernel may write through; the launch
  checks refuse a read-only (or aliased) buffer for them, and the compile report lists them.
* :func:`pointer_origins` maps the pointer operand of every load, store and atomic to the
  pointer parameters it may derive from (the host lowering's bounds checks use it).

Both follow values back through their defining ops and through loop-carried and branch values
(a ``for``/``while`` argument or result comes from its initial value or its yield; an ``if``
result from either branch's yield), so they are conservative: a parameter is named whenever
some path of definitions leads to it.
"""

from __future__ import annotations

from collections.abc import Iterable

from .graph import Block, Function, Operation, Value


def written_params(fn: Function) -> frozenset[str]:
    """Names of the pointer parameters a store or atomic of ``fn`` may write through (following
    every operand of every op back from each store's and atomic's pointer operand)."""
    producers = control_flow_sources(fn)
    roots = [op.operands[0] for op in fn.walk() if op.op == "store" or op.op.startswith("atomic_")]
    found = _reach(fn, roots, producers, pointers_only=False)
    return frozenset(p.name or "" for p in fn.params if id(p) in found and p.type.is_pointer)


RAW_ORIGIN = "<raw address>"
"""The origin :func:`pointer_origins` names for a pointer made by ``int_to_ptr`` (a raw address:
it may point into any array of the launch, :mod:`eggpu.ir.raw_memory`)."""


def pointer_origins(fn: Function) -> dict[int, tuple[str, ...]]:
    """``id(pointer operand)`` -> names of the pointer parameters it may derive from (in
    parameter order, following pointer-typed values only), for every load, store and atomic;
    :data:`RAW_ORIGIN` last when it may derive from an ``int_to_ptr``."""
    producers = control_flow_sources(fn)
    out: dict[int, tuple[str, ...]] = {}
    for op in fn.walk():
        if op.op in ("load", "store") or op.op.startswith("atomic_"):
            root = op.operands[0]
            raw: list[Operation] = []
            found = _reach(fn, [root], producers, pointers_only=True, raw=raw)
            names = tuple(p.name or f"arg{i}" for i, p in enumerate(fn.params) if id(p) in found)
            out[id(root)] = names + ((RAW_ORIGIN,) if raw else ())
    return out


def control_flow_sources(fn: Function) -> dict[int, list[Value]]:
    """``id(block argument or control-flow result)`` -> the values it may take: the initial
    value and the yielded value of a loop-carried slot, or each branch's yield of an ``if``."""
    producers: dict[int, list[Value]] = {}
    for op in fn.walk():
        if op.op == "for":
            body = op.regions[0]
            for i, srcs in enumerate(_carried_sources(op.operands[3:], _yielded(body))):
                producers[id(body.args[i + 1])] = producers[id(op.results[i])] = srcs
        elif op.op == "while":
            for i, srcs in enumerate(_carried_sources(op.operands, _yielded(op.regions[1]))):
                for reg in op.regions:
                    producers[id(reg.args[i])] = srcs
                producers[id(op.results[i])] = srcs
        elif op.op == "if":
            for i, r in enumerate(op.results):
                producers[id(r)] = [reg.ops[-1].operands[i] for reg in op.regions
                                    if reg.ops and reg.ops[-1].op == "yield"]
    return producers


def _yielded(blk: Block) -> tuple[Value, ...]:
    return blk.ops[-1].operands if blk.ops and blk.ops[-1].op == "yield" else ()


def _carried_sources(inits: Iterable[Value], ys: tuple[Value, ...]) -> list[list[Value]]:
    return [[init] + ([ys[i]] if i < len(ys) else []) for i, init in enumerate(inits)]


def _reach(fn: Function, roots: list[Value], producers: dict[int, list[Value]], *, pointers_only: bool,
           raw: list[Operation] | None = None) -> set[int]:
    """ids of the parameters of ``fn`` reachable from ``roots`` through definitions; the
    ``int_to_ptr`` ops reached are appended to ``raw`` when given."""
    params = {id(p) for p in fn.params}
    found: set[int] = set()
    seen: set[int] = set()
    stack = list(roots)
    while stack:
        v = stack.pop()
        if id(v) in seen or (pointers_only and not v.type.is_pointer):
            continue
        seen.add(id(v))
        if id(v) in params:
            found.add(id(v))
        elif id(v) in producers:
            stack.extend(producers[id(v)])
        elif isinstance(v.owner, Operation):
            if raw is not None and v.owner.op == "int_to_ptr":
                raw.append(v.owner)
            stack.extend(v.owner.operands)
    return found
