"""The per-thread (SASS) view of the cost model: about how many instructions one GPU thread runs.

:meth:`CostModel.function_cost <eggpu.optimizer.cost.CostModel.function_cost>` prices lanes: it
is what extraction minimizes, and within one program (one block size, one thread count) it
orders the alternatives of an expression the way the GPU does. Across programs it does not:
a kernel with 1024-lane blocks is not 64 times the code of one with 16-lane blocks, a reduction
costs a shuffle tree whatever its width, and a loop body is unrolled by LLVM. This module
estimates the static SASS instruction count of a program, the quantity ``python -m bench
cost-fit`` compares with ptxas + nvdisasm, as a sum of *terms* by group (:data:`GROUPS`):

* a block op of ``numel`` lanes on ``threads`` threads runs ``ceil(numel / threads)`` times per
  thread at its per-lane cost (:meth:`CostModel.lane_cost`); a scalar op once;
* ops in a loop body count ``loop_unroll`` times per loop level (LLVM's runtime unrolling emits
  the body several times plus a remainder copy), except in a loop holding a reduction or a
  ``dot``: shuffles and barriers are convergent and LLVM does not unroll around them;
* an integer ``div``/``rem`` by a constant (a splat/cast of a ``const``) is a multiply-high and
  shifts: ``divrem_const_thread`` per lane, not the division loop of a runtime divisor;
* a memory access costs ``memory_thread`` per lane it runs, and a masked one ``masked_thread``
  more (the predicate, the branch around it and the zero fill of ``other``); the per-lane
  ``memory_lane`` of the lane view prices bandwidth, not instructions;
* a reduction costs its combining op per lane plus a shuffle tree: ``reduce_step`` per level
  (5: a warp; a block is spread over every thread of the CTA, whatever its width) for each
  output a thread produces, plus ``reduce_sync`` for the cross-warp exchange through shared
  memory (barriers, stores, loads) when the CTA has more than one warp; argmin/argmax carry an index: twice the tree;
* ``dot`` costs its multiply-adds per thread (``M*N*K / threads``; tensor-core dtypes f16/bf16
  a 64th of that, one ``mma`` per 64 multiply-adds per thread);
* shape ops, constants and same-width integer casts are free (registers are renamed).

Group names are those of the calibration table (:data:`eggpu.optimizer.cost.CALIBRATION`): a
fitted multiplier of a group scales exactly the terms of that group, so the calibrated estimate
is ``sum(m_g * term_g)``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import TYPE_CHECKING

from eggpu.ir import Block, Function, Operation, Value
from eggpu.ir.ops import OPS, Trait

if TYPE_CHECKING:
    from .cost import CostModel

#: every group a term can fall in; ``int_simple`` is the unit (one integer add = one instruction)
GROUPS = ("int_simple", "int_mul", "int_divrem", "int_divrem_const", "float_simple", "float_div", "transcendental",
          "select", "cast", "address", "memory", "masked", "reduce", "reduce_tree", "dot", "control")

_FREE = {"const", "splat", "broadcast", "expand_dims", "reshape", "bitcast", "int_to_ptr", "ptr_to_int", "yield"}
# derived from the op table's traits, so a new memory op or reduction is priced as one
_MEMORY = frozenset(name for name, d in OPS.items() if Trait.EFFECT in d.traits)
_REDUCE = frozenset(name for name, d in OPS.items() if Trait.REDUCTION in d.traits)
_LOOPS = {"for", "while"}
#: ops priced ``control_thread`` once per thread: control flow and the per-thread index set-up
_CONTROL = {"for", "while", "if", "program_id", "num_programs", "arange"}
_FLOAT_DIV = {"div", "rem", "sqrt"}
_TENSOR_CORE = {"f16", "bf16"}


def walk_depth(block: Block, depth: int = 0) -> Iterator[tuple[Operation, int]]:
    """Every operation of ``block`` (nested regions included) with the number of enclosing
    loops LLVM unrolls: a loop whose body holds a reduction or a ``dot`` (shuffles, barriers:
    convergent operations) is not unrolled, so it does not count."""
    for op in block.ops:
        yield op, depth
        inner = depth + (op.op in _LOOPS and not _convergent(op))
        for region in op.regions:
            yield from walk_depth(region, inner)


def _convergent(op: Operation) -> bool:
    return any(inner.op in _REDUCE or inner.op == "dot" for region in op.regions for inner in region.walk())


def is_constant(v: Value) -> bool:
    """Whether ``v`` is a ``const`` seen through splats, broadcasts, reshapes and casts."""
    owner = v.owner
    while isinstance(owner, Operation) and owner.op in ("splat", "broadcast", "expand_dims", "reshape", "cast"):
        owner = owner.operands[0].owner
    return isinstance(owner, Operation) and owner.op == "const"


def thread_terms(model: CostModel, fn: Function, threads: int) -> dict[str, float]:
    """Estimated SASS instructions per thread of ``fn`` run by ``threads`` threads, by group.

    The total is :meth:`CostModel.thread_cost`. ``threads < 1`` counts as one thread."""
    threads = max(threads, 1)
    terms: dict[str, float] = {}
    for op, depth in walk_depth(fn.body):
        group_cost = op_terms(model, op, threads)
        if group_cost is None:
            continue
        scale = model.loop_unroll ** depth
        for group, cost in group_cost:
            terms[group] = terms.get(group, 0.0) + cost * scale
    return terms


def op_terms(model: CostModel, op: Operation, threads: int) -> list[tuple[str, float]] | None:
    """The ``(group, instructions per thread)`` terms of one operation (None: free)."""
    name = op.op
    if name in _FREE or (name == "cast" and _renames(op)):
        return None
    types = [v.type for v in op.operands] + [r.type for r in op.results]
    numel = max((t.numel for t in types), default=1)
    reps = math.ceil(numel / threads)
    if name in _MEMORY:
        out = [("memory", model.memory_thread * reps)]
        return out + [("masked", model.masked_thread * reps)] if _has_mask(op) else out
    if name in _REDUCE:
        return _reduce_terms(model, op, threads)
    if name == "dot":
        a, b = op.operands[0].type, op.operands[1].type
        macs = a.shape[0] * a.shape[1] * b.shape[1] / threads
        if str(a.dtype) in _TENSOR_CORE:
            macs /= 64.0
        return [("dot", model.dot_thread * macs)]
    if name in _CONTROL:
        return [("control", model.control_thread)]
    if name == "addptr":
        return [("address", model.addptr_thread * reps)]
    group = _group(model, op)
    if group == "int_divrem_const":
        wide = model.int64_factor if op.operands[0].type.dtype.bits == 64 else 1.0
        return [(group, model.divrem_const_thread * wide * reps)]
    lane = model.op_cost(name, [v.type for v in op.operands], [r.type for r in op.results], op.attrs) / max(numel, 1)
    return [(group, lane * reps)]


def _renames(op: Operation) -> bool:
    a, b = op.operands[0].type.dtype, op.results[0].type.dtype
    return a.is_int and b.is_int and a.bits == b.bits


def _has_mask(op: Operation) -> bool:
    """Whether a memory op has a mask operand (load: ptr, mask[, other]; store: ptr, value, mask;
    atomics: ptr, value[, cmp], mask)."""
    n = {"load": 1, "store": 2}.get(op.op, 3 if op.op == "atomic_cas" else 2)
    return len(op.operands) > n and not is_constant(op.operands[n])


def _reduce_terms(model: CostModel, op: Operation, threads: int) -> list[tuple[str, float]]:
    t, out = op.operands[0].type, op.results[0].type
    reps = math.ceil(t.numel / threads)
    arg = op.op in ("reduce_argmax", "reduce_argmin")
    wide = 2.0 if t.dtype.bits == 64 else 1.0
    per_lane = (3.0 if arg else 1.0) * wide * model.reduce_factor  # argmax: a compare and two selects
    levels = max(1.0, math.log2(min(threads, 32)))  # a block is spread over the CTA: a full warp's tree
    outputs = math.ceil(max(out.numel, 1) / threads)
    sync = model.reduce_sync if threads > 32 else 0.0  # the warps' partial results meet in shared memory
    tree = (model.reduce_step * levels * outputs + sync) * (2.0 if arg else 1.0)  # argmax: value and index
    return [("reduce", per_lane * reps), ("reduce_tree", tree)]


def _group(model: CostModel, op: Operation) -> str:
    name = op.op
    dtype = op.operands[0].type.dtype if op.operands else op.results[0].type.dtype
    if name in model.transcendental:
        return "transcendental"
    if name == "where":
        return "select"
    if name == "cast":
        return "cast"
    if dtype.is_float:
        return "float_div" if name in _FLOAT_DIV else "float_simple"
    if name in ("div", "rem"):
        return "int_divrem_const" if is_constant(op.operands[1]) else "int_divrem"
    return "int_mul" if name == "mul" else "int_simple"


__all__ = ["GROUPS", "is_constant", "op_terms", "thread_terms", "walk_depth"]
