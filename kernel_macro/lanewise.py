"""``tl.map_elementwise(scalar_fn, *args, pack=1)`` (Triton 3.5): a scalar function applied to each
element of blocks, inlined over the blocks.

Triton calls ``scalar_fn`` once per element (0-d values) inside a region. eggpu inlines its body
once with the whole blocks (the arguments broadcast to one shape), which gives the same values
because every language operation on such a body acts element by element — with two exceptions
the frontend handles:

* an ``if`` whose condition differs per element (``if x > 0:``) cannot branch over a block: in a
  function inlined by ``map_elementwise`` (or a helper it calls, or a ``combine_fn``) the frontend
  computes both branches and selects each variable, and the return value, per element with
  ``where`` (``ControlFlow._select_if``). A branch that loads, stores, prints or asserts is refused
  there: its effect would happen for every element. A ``while`` whose condition differs per
  element runs while any element's condition holds and updates only those elements
  (kernel_macro/while_loops.py), with the same restriction on effects.
* an operation that sees the whole block — a reduction, ``tl.dot``, ``tl.gather``, a transpose,
  ``tl.arange`` — would mean something else than on one element, so the function is refused
  (a compile error at ``scalar_fn``) when its body makes one.

``pack=k`` (Triton passes ``k`` elements per call, for packed instructions): the broadcast
arguments are viewed as ``[numel / k, k]`` (row-major, so a call gets ``k`` consecutive
elements), ``scalar_fn`` gets ``x_0..x_{k-1}, y_0..y_{k-1}, ...`` (``x_j`` the ``j``-th column)
and returns ``k`` values per result, result ``r``'s ``j``-th at position ``r * k + j`` — Triton's
order. The element count must be a multiple of ``k``.
"""

from __future__ import annotations

import math
from typing import Any

from eggpu.ir.graph import Operation
from eggpu.ir.ops import REDUCTION, get

from .frontend_ops import Semantic, SemanticError, Tensor, describe, is_number
from .shuffles import iota, take

_WHOLE_BLOCK = frozenset({"dot", "gather", "trans", "arange"})
"""Ops (besides reductions) whose meaning on a block is not their meaning on each element."""


def lane_loop_reductions(s: Semantic) -> set[int]:
    """Ids of the reductions the frontend itself makes for a ``while`` on a per-element condition
    (whether any element still runs: kernel_macro/while_loops.py), which are not the mapped
    function's own."""
    found = getattr(s, "_lane_loop_reductions", None)
    if found is None:
        found = set()
        s._lane_loop_reductions = found  # type: ignore[attr-defined]
    return found


def _whole_block_op(ops: list[Operation], allowed: set[int]) -> str | None:
    """The first op among ``ops`` (and their regions) that sees a whole block, or None."""
    for op in ops:
        if (op.op in _WHOLE_BLOCK or REDUCTION in get(op.op).traits) and id(op) not in allowed:
            return op.op
        for region in op.regions:
            found = _whole_block_op(region.ops, allowed)
            if found:
                return found
    return None


def _call(s: Semantic, fn: Any, values: list[Tensor]) -> list[Any]:
    """``fn(*values)`` as a list of results, refusing a body that sees whole blocks."""
    start = len(s.b.block.ops)
    r = fn(*values)
    bad = _whole_block_op(s.b.block.ops[start:], lane_loop_reductions(s))
    if bad is not None:
        raise SemanticError(f"tl.map_elementwise: scalar_fn uses {bad}, which needs a whole block; scalar_fn "
                            f"sees one element at a time",
                            "compute it outside the mapped function and pass it in", arg="scalar_fn")
    return list(r) if isinstance(r, tuple) else [r]


def _result(s: Semantic, v: Any, shape: tuple[int, ...]) -> Tensor:
    if not isinstance(v, Tensor) and not is_number(v):
        raise SemanticError(f"tl.map_elementwise: scalar_fn must return values, got {describe(v)}", arg="scalar_fn")
    t = s.to_tensor(v)
    try:
        return s.broadcast_to(t, shape)
    except SemanticError:
        raise SemanticError(f"tl.map_elementwise: scalar_fn returned a block of shape {list(t.shape)} for "
                            f"elements of a block of shape {list(shape)}", "return one value per element",
                            arg="scalar_fn") from None


def map_elementwise(s: Semantic, a: dict[str, Any]) -> Any:
    fn, args, pack = a["scalar_fn"], a["args"], a["pack"]
    if not callable(fn):
        raise SemanticError(f"tl.map_elementwise: scalar_fn must be an @eggpu.jit function, got {describe(fn)}",
                            arg="scalar_fn")
    if not isinstance(pack, int) or isinstance(pack, bool) or pack < 1:
        raise SemanticError(f"tl.map_elementwise: pack must be a positive compile-time int, got {describe(pack)}",
                            arg="pack")
    if not args:
        raise SemanticError("tl.map_elementwise needs at least one argument to map over", arg="scalar_fn")
    xs = []
    for v in args:
        if not isinstance(v, Tensor) and not is_number(v):
            raise SemanticError(f"tl.map_elementwise maps over blocks and scalars, got {describe(v)}", arg="args")
        xs.append(s.to_tensor(v))
    shape: tuple[int, ...] = ()
    for x in xs:
        shape = s.broadcast_shapes(shape, x.shape, "tl.map_elementwise")
    xs = [s.broadcast_to(x, shape) for x in xs]
    single = None
    if pack == 1:
        rs = _call(s, fn, xs)
        single = len(rs) == 1
        out = [_result(s, r, shape) for r in rs]
    else:
        out, single = _packed(s, fn, xs, shape, pack)
    return out[0] if single else tuple(out)


def _packed(s: Semantic, fn: Any, xs: list[Tensor], shape: tuple[int, ...], pack: int) -> tuple[list[Tensor], bool]:
    numel = math.prod(shape)
    if numel % pack:
        raise SemanticError(f"tl.map_elementwise: pack={pack} does not divide the {numel} elements of a block of "
                            f"shape {list(shape)}", arg="pack")
    rows = numel // pack
    grid = (rows, pack)
    cols = [take(s, s.reshape(x, grid), 1, j) for x in xs for j in range(pack)]  # each [rows, 1]
    rs = _call(s, fn, cols)
    if len(rs) % pack:
        raise SemanticError(f"tl.map_elementwise: with pack={pack} scalar_fn must return a multiple of {pack} "
                            f"values ({pack} per result), got {len(rs)}", arg="scalar_fn")
    col = iota(s, grid, 1)
    out = []
    for r in range(len(rs) // pack):
        group = [_result(s, v, (rows, 1)) for v in rs[r * pack:(r + 1) * pack]]
        if any(g.type != group[0].type for g in group):
            raise SemanticError(f"tl.map_elementwise: the {pack} values of result {r} have different types: "
                                f"{', '.join(str(g.dtype) for g in group)}", arg="scalar_fn")
        acc = s.broadcast_to(group[-1], grid)
        for j in range(pack - 2, -1, -1):
            acc = s.where(s.binary("eq", col, j), s.broadcast_to(group[j], grid), acc)
        out.append(s.reshape(acc, shape) if shape != grid else acc)
    return out, len(rs) == pack


IMPLS = {"map_elementwise": map_elementwise}
