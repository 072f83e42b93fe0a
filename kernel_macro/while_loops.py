"""``while cond:`` with a runtime condition: an IR ``while`` with loop-carried values.

The variables the body assigns that exist before the loop are carried, with the same typing
rules as a runtime ``for`` (:meth:`CodeGenerator._join_loop`): a carried variable keeps its
type, one that starts as a Python literal takes the type it has after an iteration; a block
pointer is carried through its offsets. The
condition is evaluated on the carried values at the start of every iteration (the IR ``while``'s
condition region) and must be a scalar; variables first assigned in the body are not available
after the loop.

A condition that is a compile-time value once the carried types are known is folded: false
skips the loop, true is an error (a kernel loop without ``break`` would never end). ``break``,
``continue`` and ``while ... else`` are not supported.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from eggpu.ir.graph import Operation
from eggpu.ir.types import BlockType

from .block_pointers import BlockPointer
from .frontend_ops import SemanticError, Tensor, describe

if TYPE_CHECKING:  # pragma: no cover
    from .frontend import CodeGenerator



def lower_while(gen: CodeGenerator, node: ast.While) -> None:
    """Lower ``node`` into ``gen``'s current block (see the module docstring)."""
    from .frontend_common import Undefined

    if node.orelse:
        raise gen.error(node.orelse[0], "while ... else is not supported in a kernel",
                        "move the else body after the loop")
    f = gen.frame
    before = f.scope
    loc = gen.b.loc
    line = f.source.loc(node).line
    packed, assigned, plan = gen._carry_plan(before, gen._assigned_names(node))  # type: ignore[arg-type]
    plan, (cond_blk, cond, body_blk), end_scope = gen._settle(
        node, plan, lambda p: _regions(gen, node, p, before, packed))
    f.scope = before
    gen.b.loc = loc
    if not isinstance(cond, Tensor):
        gen._rebuild_block_pointers(before, packed)
        if cond:
            raise gen.error(node.test, f"the condition of this while loop is always true at compile time "
                                       f"({describe(cond)}), so the loop would never end",
                            "kernels have no break: make the condition depend on a value the body changes")
        return  # never runs: nothing is emitted, every variable keeps its value
    carried = [n for n, st in plan.items() if st[0] == "tensor"]
    try:
        inits = [gen._materialize(before[n], plan[n][1]) for n in carried]
        yields = [gen._materialize(end_scope[n], plan[n][1]) for n in carried]
    except SemanticError as e:
        raise gen.error(node, e.problem, e.hint) from None
    cond_blk.ops.append(Operation("yield", (cond.value,), {}, (), (), loc))
    body_blk.ops.append(Operation("yield", tuple(yields), {}, (), (), loc))
    op = gen.b.while_(inits, cond_blk, body_blk)
    for n, r in zip(carried, op.results):
        before[n] = Tensor(r)
    gen._rebuild_block_pointers(before, packed)
    for n in assigned:
        if n not in plan:
            before[n] = Undefined(
                f"{n} is assigned inside the while loop at line {line} and is not available after it",
                f"assign {n} before the loop so that it becomes a loop-carried value")


def _regions(gen: CodeGenerator, node: ast.While, plan: dict[str, tuple], before: dict[str, Any],
             packed: dict[str, BlockPointer]):
    """Build the condition and body regions for one guess of the carried types.

    Returns ((condition block, condition value: a bool scalar Tensor or a compile-time value,
    body block), the scope at the end of the body)."""
    f = gen.frame
    carried = [n for n, st in plan.items() if st[0] == "tensor"]
    arg_types: list[BlockType] = [plan[n][1] for n in carried]
    with gen.b.region(arg_types) as cond_blk:
        scope = dict(before)
        for n, a in zip(carried, cond_blk.args):
            scope[n] = Tensor(a)
        gen._rebuild_block_pointers(scope, packed)
        f.scope = scope
        gen.b.loc = f.source.loc(node)
        cond = gen.expr(node.test)
        if isinstance(cond, Tensor):
            try:
                cond = gen.sem.condition(cond, "while loop")
            except SemanticError as e:
                raise gen.error(node.test, e.problem, e.hint) from None
        elif _is_runtime_tuple(cond):
            raise gen.error(node.test, f"cannot use {describe(cond)} as a condition")
    with gen.b.region(arg_types) as body_blk:
        scope = dict(before)
        for n, a in zip(carried, body_blk.args):
            scope[n] = Tensor(a)
        end_scope = gen._loop_iteration(node, scope, packed)
    f.scope = before
    return (cond_blk, cond, body_blk), end_scope


def _is_runtime_tuple(v: Any) -> bool:
    return isinstance(v, tuple) and any(isinstance(x, Tensor) or _is_runtime_tuple(x) for x in v)
