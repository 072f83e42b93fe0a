"""Hoisting the invariant part of the pipelined copies' global addresses (:mod:`eggpu.codegen.mma_pipeline`).

A pipelined load's pointer is a tree of ``addptr`` over shape ops (``splat``, ``broadcast``,
``expand_dims``). :func:`split_pointer` cuts it into

    ptr(iv)[r, c] = P[r, c] + sum_t ext_t(o_t(iv)[r', c'])            (64-bit addition)

where ``P``, the root pointer plus every offset that does not depend on the induction variable
``iv`` (``a_ptr + rm * K``), is loop invariant, and the ``o_t`` are the offsets that do
(``k + rk``). A copy's address is then ``P`` of its piece, computed once before the loop
(:func:`piece_base`), plus the piece's ``o_t`` of the iteration, evaluated from the same IR as
before: one wide multiply-add per piece and offset instead of the whole expression (the light
LLVM pipeline has no LICM and ptxas does not hoist it). Every offset keeps its own extension
(``sext``/``zext`` by its dtype) and its own wrap-around, and 64-bit addition is associative,
so the addresses are bit for bit those of the unsplit expression.

Measured against advancing each piece's offset by the K step (``o_t(0) + iv * d_t``, carried as
Triton advances its pointers): the same K-loop SASS on every configuration of
``bench.mma_static`` and fewer registers (wgmma 128x128x32: 168 against 230), since ``o_t(0)``
no longer lives across the loop. Pointers carried by the loop (``a_ptrs += BK``) and other
forms are left alone (None).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from llvmlite import ir

from eggpu.ir.graph import Block, Operation, Value

from . import scalar_ops as S

CoordMap = Callable[[object, list], list]  # (em, coords of the load's element) -> coords of the value


@dataclass
class Term:
    """One summand of the split pointer: ``kind`` ``"ptr"`` (the invariant root pointer),
    ``"inv"`` (an invariant offset) or ``"dep"`` (an offset that depends on ``iv``), and the
    map from the load's element coordinates to the value's."""

    kind: str
    value: Value
    cmap: CoordMap


@dataclass
class Split:
    """A load's pointer, split (module docstring)."""

    terms: list[Term]

    @property
    def deps(self) -> list[Term]:
        return [t for t in self.terms if t.kind == "dep"]


def split_pointer(region: Block, slice_ops: list[Operation], ptr: Value) -> Split | None:
    """The split of ``ptr`` (a load's pointer operand in the pipelined loop body, computed by
    ``slice_ops``), or None when its form is not covered, it depends on a carried value, or
    nothing in it is invariant beyond the root pointer (no work to hoist)."""
    iv = region.args[0]
    dep: set[int] = {id(iv)}
    carried = {id(a) for a in region.args[1:]}
    for o in slice_ops:
        if any(id(x) in carried for x in o.operands):
            carried.update(id(r) for r in o.results)
        elif any(id(x) in dep for x in o.operands):
            dep.update(id(r) for r in o.results)
    terms: list[Term] = []
    if not _parts(ptr, lambda em, c: c, dep, carried, terms):
        return None
    if not any(t.kind == "dep" for t in terms) or not any(t.kind == "inv" for t in terms) and _is_splat(terms):
        return None
    return Split(terms)


def _is_splat(terms: list[Term]) -> bool:
    """Whether the root pointer is a splat of a scalar (nothing per element to hoist with it)."""
    root = next(t.value for t in terms if t.kind == "ptr")
    o = root.owner
    return not root.type.shape or (isinstance(o, Operation) and o.op == "splat")


def _parts(v: Value, cmap: CoordMap, dep: set[int], carried: set[int], out: list[Term]) -> bool:
    if id(v) in carried:
        return False
    if id(v) not in dep:
        out.append(Term("ptr", v, cmap))
        return True
    o = v.owner
    if not isinstance(o, Operation):
        return False
    if o.op == "addptr":
        p, off = o.operands
        if id(off) in carried:
            return False
        out.append(Term("dep" if id(off) in dep else "inv", off, cmap))
        return _parts(p, cmap, dep, carried, out)
    inner = _through(o, cmap)
    return inner is not None and _parts(o.operands[0], inner, dep, carried, out)


def _through(o: Operation, cmap: CoordMap) -> CoordMap | None:
    """The coordinate map of a shape op's operand, given the result's (None: not a shape op)."""
    if o.op == "splat":
        return lambda em, c: []
    if o.op == "expand_dims":
        axis = o.attrs["axis"]
        return lambda em, c: (lambda cc: cc[:axis] + cc[axis + 1:])(cmap(em, c))
    if o.op == "broadcast":
        src, dst = o.operands[0].type.shape, o.results[0].type.shape
        if len(src) != len(dst):
            return None
        ones = {i for i, (s, t) in enumerate(zip(src, dst)) if s == 1 and t != 1}
        return lambda em, c: [em.k(x, 0) if i in ones else x for i, x in enumerate(cmap(em, c))]
    return None


def piece_base(lw, split: Split, pointee, r: ir.Value, c: ir.Value) -> ir.Value:
    """``P`` at the piece ``[r, c]``: the root pointer plus the invariant offsets (evaluated where
    the slice is bound)."""
    em = lw.em
    et = em.mem_type(pointee)
    root = next(t for t in split.terms if t.kind == "ptr")
    p = lw.at(lw.get(root.value), root.cmap(em, [r, c]))
    for t in split.terms:
        if t.kind == "inv":
            o = lw.at(lw.get(t.value), t.cmap(em, [r, c]))
            p = em.b.gep(p, [S.offset_i64(em, t.value.type.dtype, o)], source_etype=et)
    return p


def address(lw, split: Split, dep_lvs: list, pointee, base: ir.Value, r: ir.Value, c: ir.Value) -> ir.Value:
    """``P + sum_t ext_t(o_t)``: a copy's source address, ``dep_lvs`` the iteration's lowered ``o_t``."""
    em = lw.em
    et = em.mem_type(pointee)
    p = base
    for t, lv in zip(split.deps, dep_lvs):
        o = lw.at(lv, t.cmap(em, [r, c]))
        p = em.b.gep(p, [S.offset_i64(em, t.value.type.dtype, o)], source_etype=et)
    return p


__all__ = ["Split", "address", "piece_base", "split_pointer"]
