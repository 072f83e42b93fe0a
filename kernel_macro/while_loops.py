"""``while cond:`` with a runtime condition: an IR ``while`` with loop-carried values.

The variables the body assigns that exist before the loop are carried, with the same typing
rules as a runtime ``for`` (:meth:`CodeGenerator._join_loop`): a carried variable keeps its
type, one that starts as a Python literal takes the type it has after an iteration; a block
pointer is carried through its offsets. The
condition is evaluated on the carried values at the start of every iteration (the IR ``while``'s
condition region) and must be a scalar; variables first assigned in the body are not available
after the loop.

In a function applied per element (``tl.map_elementwise``), a condition that differs per element
runs the loop while any element's holds and updates only those elements
(:func:`_lanewise_iteration`).

A condition that is a compile-time value once the carried types are known is folded: false
skips the loop, true is an error (a kernel loop without ``break`` would never end). ``break``,
``continue`` and ``while ... else`` are not supported.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from eggpu.ir.dtypes import bool_, i32
from eggpu.ir.graph import Operation
from eggpu.ir.types import BlockType

from .block_pointers import BlockPointer
from .frontend_ops import SemanticError, Tensor, describe
from .lanewise import lane_loop_reductions

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
    lanewise = False
    with gen.b.region(arg_types) as cond_blk:
        scope = dict(before)
        for n, a in zip(carried, cond_blk.args):
            scope[n] = Tensor(a)
        gen._rebuild_block_pointers(scope, packed)
        f.scope = scope
        gen.b.loc = f.source.loc(node)
        cond = gen.expr(node.test)
        if isinstance(cond, Tensor):
            lanewise = f.lanewise and cond.is_block and not cond.is_pointer
            try:
                cond = _any(gen, cond) if lanewise else gen.sem.condition(cond, "while loop")
            except SemanticError as e:
                raise gen.error(node.test, e.problem, e.hint) from None
        elif _is_runtime_tuple(cond):
            raise gen.error(node.test, f"cannot use {describe(cond)} as a condition")
    with gen.b.region(arg_types) as body_blk:
        scope = dict(before)
        for n, a in zip(carried, body_blk.args):
            scope[n] = Tensor(a)
        if lanewise:
            end_scope = _lanewise_iteration(gen, node, scope, packed, carried)
        else:
            end_scope = gen._loop_iteration(node, scope, packed)
    f.scope = before
    return (cond_blk, cond, body_blk), end_scope


def _any(gen: CodeGenerator, cond: Tensor) -> Tensor:
    """Whether any element of the bool block ``cond`` is true, as a bool scalar."""
    flags = gen.sem.cast(gen.sem.cast(cond, bool_), i32)
    top = gen.sem.reduce("reduce_max", flags, None, False)
    lane_loop_reductions(gen.sem).add(id(top.value.owner))  # not the mapped function's own reduction
    return gen.sem.binary("ne", top, 0)


def _lanewise_iteration(gen: CodeGenerator, node: ast.While, scope: dict[str, Any], packed: dict[str, BlockPointer],
                        carried: list[str]) -> dict[str, Any]:
    """One iteration of a ``while`` whose condition differs per element, in a function applied per
    element (``tl.map_elementwise``; kernel_macro/lanewise.py): the loop runs while any element's
    condition holds, and an iteration changes only the elements whose condition holds (each
    carried variable becomes ``where(cond, new, old)``), so every element stops where its own loop
    would. The body may not load, store, print or assert (it runs for every element)."""
    from .frontend_control import _first_effect

    gen.frame.scope = scope
    try:
        active = gen.sem.cast(gen.expr(node.test), bool_)
    except SemanticError as e:
        raise gen.error(node.test, e.problem, e.hint) from None
    olds = {n: scope[n] for n in carried}  # the iteration assigns into scope
    start = len(gen.b.block.ops)
    end_scope = gen._loop_iteration(node, scope, packed)
    effect = _first_effect(gen.b.block.ops[start:])
    if effect is not None:
        raise gen.error(node, f"{effect} in a while loop on a per-element condition of a function applied per element "
                              f"(tl.map_elementwise): the body runs for every element",
                        "compute values in the loop and do the memory access after it")
    out = dict(end_scope)
    for n in carried:
        new, old = end_scope[n], olds[n]
        if isinstance(new, Tensor | int | float) and not (isinstance(new, Tensor) and new.value is old.value):
            try:
                out[n] = gen.sem.where(active, new, old)
            except SemanticError as e:
                raise gen.error(node, e.problem, e.hint) from None
    return out


def _is_runtime_tuple(v: Any) -> bool:
    return isinstance(v, tuple) and any(isinstance(x, Tensor) or _is_runtime_tuple(x) for x in v)
