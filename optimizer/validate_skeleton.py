"""The skeleton of translation validation (:mod:`.validate`), z3-free: the non-pure ops of both
functions in walk order (effects, control ops, ``yield``), the names their opaque values share,
the check that the two skeletons correspond, and the obligations each op gives (which operands
must agree, under which mask). Shared by the solver path and the z3-free one
(:mod:`.validate_terms`)."""

from __future__ import annotations

from typing import Any

from eggpu.ir import Block, Function, Operation

from .decode import MASK_OPERAND

#: ops whose lane value is an opaque function of whole operand blocks (both paths name them alike)
BLOCK_OPS = frozenset({"reduce_sum", "reduce_max", "reduce_min", "reduce_argmax", "reduce_argmin", "dot", "gather"})
#: ops that only move lanes: evaluated as index maps
SHAPE_OPS = frozenset({"splat", "broadcast", "expand_dims", "reshape", "trans"})


class Mismatch(Exception):
    """The two functions do not correspond op for op (an ``invalid`` verdict)."""


def skeleton(fn: Function) -> tuple[dict[int, str], dict[int, int], list[tuple[Operation, Block]]]:
    """Shared names for opaque values and indices of non-pure ops, in walk order."""
    names: dict[int, str] = {}
    keys: dict[int, int] = {}
    ops: list[tuple[Operation, Block]] = []
    for i, p in enumerate(fn.params):
        names[id(p)] = f"param{i}"

    def walk(blk: Block) -> None:
        for op in blk.ops:
            if op.opdef.is_pure and not op.regions:
                continue
            k = len(ops)
            keys[id(op)] = k
            ops.append((op, blk))
            for j, r in enumerate(op.results):
                names[id(r)] = f"res{k}_{j}"
            for ri, reg in enumerate(op.regions):
                for j, a in enumerate(reg.args):
                    names[id(a)] = f"arg{k}_{ri}_{j}"
                walk(reg)

    walk(fn.body)
    return names, keys, ops


def describe(op: Operation, k: int) -> str:
    where = f" at {op.loc}" if op.loc is not None else ""
    return f"{op.op} #{k}{where}"


def obligations(op: Operation, k: int) -> list[tuple[int, str, int | None, bool]]:
    """(operand index, role, mask operand index, under mask on?) for each checked operand."""
    n = len(op.operands)
    name = op.op
    if name == "load":
        out = [(0, "address", 1 if n >= 2 else None, True)]
        if n >= 2:
            out.append((1, "mask", None, True))
        if n == 3:
            out.append((2, "other", 1, False))
        return out
    if name == "store" or (name.startswith("atomic_") and name != "atomic_cas"):
        out = [(0, "address", 2 if n == 3 else None, True), (1, "value", 2 if n == 3 else None, True)]
        if n == 3:
            out.append((2, "mask", None, True))
        return out
    if name == "atomic_cas":
        return [(0, "address", None, True), (1, "compare", None, True), (2, "value", None, True)]
    roles = {"for": ["lo", "hi", "step"], "if": ["condition"]}.get(name, [])
    return [(j, roles[j] if j < len(roles) else f"operand {j}", None, True) for j in range(n)]


def operand_counts_match(ob: Operation, oa: Operation) -> bool:
    """Same operand count, or ``oa`` is ``ob`` without its mask (and a load's ``other``): the
    decoder drops a mask extracted as all-true (:func:`eggpu.optimizer.decode.drop_true_mask`)."""
    if len(ob.operands) == len(oa.operands):
        return True
    j = MASK_OPERAND.get(ob.op)
    return j is not None and len(oa.operands) == j < len(ob.operands)


def parent_key(op: Operation, ops: list[tuple[Operation, Block]]) -> tuple[int, int]:
    """(index of the owning control op, region index), or (-1, 0) at top level."""
    blk = next(b for o, b in ops if o is op)
    for k, (o, _) in enumerate(ops):
        for ri, r in enumerate(o.regions):
            if r is blk:
                return (k, ri)
    return (-1, 0)


def check_skeleton(before: Function, after: Function) -> tuple[dict[int, str], dict[int, int], list[tuple[Operation, Block]],
                                                             dict[int, str], dict[int, int], list[tuple[Operation, Block]]]:
    """:func:`skeleton` of both functions, once they are shown to correspond: the same parameter
    types, grid rank and launch facts, and op by op the same kind, attributes, result types,
    region arities and nesting (an op may have lost its mask: :func:`operand_counts_match`).
    Raises :class:`Mismatch` naming the first difference."""
    if [p.type for p in before.params] != [p.type for p in after.params]:
        raise Mismatch("parameter types differ")
    if before.grid_rank != after.grid_rank:
        raise Mismatch("grid rank differs")
    nb, kb, ops_b = skeleton(before)
    na, ka, ops_a = skeleton(after)
    if len(ops_b) != len(ops_a):
        raise Mismatch(f"the functions have {len(ops_b)} and {len(ops_a)} effects/control ops")
    parent_b = {id(o): parent_key(o, ops_b) for o, _ in ops_b}
    parent_a = {id(o): parent_key(o, ops_a) for o, _ in ops_a}
    for k, ((ob, _), (oa, _)) in enumerate(zip(ops_b, ops_a)):
        if (ob.op != oa.op or not operand_counts_match(ob, oa) or dict(ob.attrs) != dict(oa.attrs)
                or [r.type for r in ob.results] != [r.type for r in oa.results]
                or [len(r.args) for r in ob.regions] != [len(r.args) for r in oa.regions]):
            raise Mismatch(f"{describe(ob, k)} does not correspond to {describe(oa, k)} of the optimized function")
        if parent_b[id(ob)] != parent_a[id(oa)]:
            raise Mismatch(f"{describe(ob, k)} is nested differently in the optimized function")
    if before.facts != after.facts:
        raise Mismatch("the launch facts differ")
    return nb, kb, ops_b, na, ka, ops_a


class LaneDispatch:
    """What the two translation validators (:mod:`.validate`'s z3 terms, :mod:`.validate_terms`'
    z3-free ones) share in evaluating a lane: a shape op reads its operand at
    :func:`source_index` (the evaluator's ``_source_index``), a block op (reduction, dot, ...) is
    the evaluator's opaque ``_block_op``. The evaluator provides ``at``, ``_source_index`` and
    ``_block_op``."""

    def structural(self, op: Operation, v: Any, idx: tuple) -> Any:
        """The term of lane ``idx`` of ``v`` when ``op`` is a shape or block op, else None."""
        if op.op in SHAPE_OPS:
            return self.at(op.operands[0], self._source_index(op, idx))  # type: ignore[attr-defined]
        if op.op in BLOCK_OPS:
            return self._block_op(op, v, idx)  # type: ignore[attr-defined]
        return None


def mask_and_other(op: Operation) -> tuple[int | None, int | None]:
    """The operand positions of a load's or atomic's mask and ``other`` (None where it has none):
    ``load(ptr, mask?, other?)``, ``atomic_*(ptr, val, mask?)``, ``atomic_cas`` unmasked."""
    n = len(op.operands)
    if op.op == "load":
        return (1 if n >= 2 else None), (2 if n == 3 else None)
    if op.op == "atomic_cas":
        return None, None
    return (2 if n == 3 else None), None


def source_index(op: Operation, idx: tuple, zero: Any) -> tuple | None:
    """The index into ``op``'s operand that lane ``idx`` of a shape op reads (``splat``: none,
    ``broadcast``: ``zero`` on the broadcast axes, ``expand_dims``: the axis dropped, ``trans``:
    permuted back, a same-shape ``reshape``: itself); None for a reshape that changes the shape
    (its row-major index map is the caller's: symbolic in the z3 path). ``idx`` holds the caller's
    index terms and ``zero`` its index 0."""
    src_t, out_t, name = op.operands[0].type, op.results[0].type, op.op
    if name == "splat":
        return ()
    if name == "broadcast":
        return tuple(zero if s == 1 else i for i, s in zip(idx, src_t.shape))
    if name == "expand_dims":
        ax = op.attrs["axis"]
        return idx[:ax] + idx[ax + 1:]
    if name == "trans":
        src: list[Any] = [None] * len(idx)
        for d, p in enumerate(op.attrs["perm"]):
            src[p] = idx[d]
        return tuple(src)
    if src_t.shape == out_t.shape:
        return idx
    return None


__all__ = ["BLOCK_OPS", "SHAPE_OPS", "LaneDispatch", "Mismatch", "check_skeleton", "describe", "obligations", "mask_and_other",
           "skeleton", "source_index"]
