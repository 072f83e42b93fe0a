"""Memory effects of an IR function, as facts the pipeline records and every launch checks.

:func:`written_params` names the pointer parameters a kernel may write through; the launch
checks refuse a read-only (or aliased) buffer for them, and the compile report lists them.
"""

from __future__ import annotations

from .graph import Function, Operation, Value


def written_params(fn: Function) -> frozenset[str]:
    """Names of the pointer parameters a store or atomic of ``fn`` may write through.

    Conservative: follows every operand of every op (and loop/branch values) back from the
    pointer operand of each store and atomic.
    """
    producers: dict[int, list[Value]] = {}  # block argument / control-flow result -> sources

    def visit(blk) -> None:
        for op in blk.ops:
            if op.op == "for":
                body = op.regions[0]
                inits = op.operands[3:]
                ys = body.ops[-1].operands if body.ops and body.ops[-1].op == "yield" else ()
                for i, a in enumerate(body.args[1:]):
                    producers[id(a)] = [inits[i]] + ([ys[i]] if i < len(ys) else [])
                for i, r in enumerate(op.results):
                    producers[id(r)] = [inits[i]] + ([ys[i]] if i < len(ys) else [])
            elif op.op == "while":
                ys = op.regions[1].ops[-1].operands if op.regions[1].ops else ()
                for i, init in enumerate(op.operands):
                    srcs = [init] + ([ys[i]] if i < len(ys) else [])
                    for reg in op.regions:
                        producers[id(reg.args[i])] = srcs
                    producers[id(op.results[i])] = srcs
            elif op.op == "if":
                for i, r in enumerate(op.results):
                    producers[id(r)] = [reg.ops[-1].operands[i] for reg in op.regions
                                        if reg.ops and reg.ops[-1].op == "yield"]
            for reg in op.regions:
                visit(reg)

    visit(fn.body)
    names = {id(p): p.name for p in fn.params}
    out: set[str] = set()
    seen: set[int] = set()
    stack = [op.operands[0] for op in fn.walk() if op.op == "store" or op.op.startswith("atomic_")]
    while stack:
        v = stack.pop()
        if id(v) in seen:
            continue
        seen.add(id(v))
        if id(v) in names:
            if v.type.is_pointer:
                out.add(names[id(v)] or "")
        elif id(v) in producers:
            stack.extend(producers[id(v)])
        elif isinstance(v.owner, Operation):
            stack.extend(v.owner.operands)
    return frozenset(out)
