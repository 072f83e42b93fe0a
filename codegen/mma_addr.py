"""Strength reduction of the pipelined copies' global addresses (:mod:`eggpu.codegen.mma_pipeline`).

A pipelined load's pointer is a tree of ``addptr`` over shape ops (``splat``, ``broadcast``,
``expand_dims``). :func:`split_pointer` cuts it into

    ptr(iv)[r, c] = P[r, c] + sum_t ext_t(o_t(iv)[r', c'])            (64-bit, exact)

where ``P`` (the root pointer plus every offset that does not depend on the induction variable
``iv``) is loop invariant and each ``o_t`` is an integer offset *affine in iv modulo 2**bits*:
built from ``iv``, loop invariants, ``add``/``sub``, ``mul`` by a uniform invariant and shape ops,
all in ``iv``'s dtype. Then ``o_t(iv) = o_t(0) + iv * d_t (mod 2**bits)`` exactly (``add`` and
``mul`` are ring operations modulo ``2**bits``, which is how the op table defines wrapping
integer arithmetic), so a copy's address is ``P + ext(o_t(0) + iv * d_t)`` with ``P`` and
``o_t(0)`` computed once per piece before the loop and ``iv * d_t`` once per iteration: one add
and one wide multiply-add per piece instead of the whole expression (``row * K + k + col``).
Each offset keeps its own extension (``sext``/``zext`` by its dtype) and its own wrap-around,
so the addresses are bit for bit those of the unreduced expression, also when an ``i32``
offset wraps. Carried pointers (``a_ptrs += BK``) and anything else are left alone (None).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from llvmlite import ir

from eggpu.ir.graph import Block, Operation, Value

from . import scalar_ops as S

CoordMap = Callable[[object, list], list]  # (em, coords of the load's element) -> coords of the value
SHAPE_OPS = ("splat", "broadcast", "expand_dims")


@dataclass
class Term:
    """One summand of the split pointer: ``kind`` ``"ptr"`` (an invariant pointer), ``"inv"``
    (an invariant offset) or ``"dep"`` (an offset affine in ``iv`` with derivative ``deriv``)."""

    kind: str
    value: Value
    cmap: CoordMap
    deriv: tuple | None = None


@dataclass
class Split:
    """A load's pointer, split (module docstring)."""

    terms: list[Term]

    @property
    def deps(self) -> list[Term]:
        return [t for t in self.terms if t.kind == "dep"]


def split_pointer(region: Block, slice_ops: list[Operation], ptr: Value) -> Split | None:
    """The split of ``ptr`` (a load's pointer operand in the pipelined loop body), or None when
    its form is not covered or no part depends on the induction variable."""
    iv = region.args[0]
    if not iv.type.dtype.is_int:
        return None
    dep: set[int] = {id(iv)}
    carried = {id(a) for a in region.args[1:]}
    for o in slice_ops:
        if any(id(x) in carried for x in o.operands):
            carried.update(id(r) for r in o.results)
        elif any(id(x) in dep for x in o.operands):
            dep.update(id(r) for r in o.results)
    terms: list[Term] = []
    if not _parts(ptr, lambda em, c: c, dep, carried, iv, terms) or not any(t.kind == "dep" for t in terms):
        return None
    return Split(terms)


def _parts(v: Value, cmap: CoordMap, dep: set[int], carried: set[int], iv: Value, out: list[Term]) -> bool:
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
        if id(off) not in dep:
            out.append(Term("inv", off, cmap))
        else:
            d = _deriv(off, dep, iv)
            if d is None:
                return False
            out.append(Term("dep", off, cmap, d))
        return _parts(p, cmap, dep, carried, iv, out)
    inner = _through(o, cmap)
    return inner is not None and _parts(o.operands[0], inner, dep, carried, iv, out)


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
        ones = [i for i, (s, t) in enumerate(zip(src, dst)) if s == 1 and t != 1]
        return lambda em, c: [em.k(x, 0) if i in ones else x for i, x in enumerate(cmap(em, c))]
    return None


def _deriv(v: Value, dep: set[int], iv: Value) -> tuple | None:
    """``d`` with ``v(iv) = v(0) + iv * d (mod 2**bits)``: ``("k", int)``, ``("u", scalar Value)``
    (a uniform loop invariant), ``("+"|"-"|"*", a, b)``; None when ``v`` is not of that form."""
    if v is iv:
        return ("k", 1)
    if id(v) not in dep:
        return ("k", 0)
    if v.type.dtype != iv.type.dtype:
        return None  # a cast or a pointer: the wrap-around would differ
    o = v.owner
    if not isinstance(o, Operation):
        return None
    if o.op in SHAPE_OPS:
        return _deriv(o.operands[0], dep, iv)
    if o.op in ("add", "sub"):
        a, b = (_deriv(x, dep, iv) for x in o.operands)
        return None if a is None or b is None else ("+" if o.op == "add" else "-", a, b)
    if o.op == "mul":
        x, y = o.operands
        if id(x) in dep and id(y) in dep:
            return None
        var, inv = (x, y) if id(x) in dep else (y, x)
        d, u = _deriv(var, dep, iv), _uniform_root(inv)
        return None if d is None or u is None else ("*", d, ("u", u))
    return None


def _uniform_root(v: Value) -> Value | None:
    """The scalar whose splat/broadcast/expand_dims ``v`` is, or None."""
    while v.type.shape:
        o = v.owner
        if not isinstance(o, Operation) or o.op not in SHAPE_OPS:
            return None
        v = o.operands[0]
    return v


def eval_deriv(lw, d: tuple, ty: ir.Type) -> ir.Value:
    """The uniform value (LLVM type ``ty``, ``iv``'s) of a derivative, in the scope where its
    invariants are bound."""
    b = lw.em.b
    if d[0] == "k":
        return ir.Constant(ty, d[1])
    if d[0] == "u":
        return lw.uniform(lw.get(d[1]))
    a, c = eval_deriv(lw, d[1], ty), eval_deriv(lw, d[2], ty)
    return {"+": b.add, "-": b.sub, "*": b.mul}[d[0]](a, c)


def piece_base(lw, split: Split, pointee, r: ir.Value, c: ir.Value) -> tuple[ir.Value, list[ir.Value]]:
    """``(P, [o_t(0)])`` at the piece ``[r, c]`` (evaluated where the slice is bound at ``iv = 0``)."""
    em = lw.em
    et = em.mem_type(pointee)
    base = None
    offs = []
    for t in split.terms:
        val = lw.at(lw.get(t.value), t.cmap(em, [r, c]))
        if t.kind == "ptr":
            base = val  # one root: the end of the addptr chain
        elif t.kind == "inv":
            offs.append(("inv", t.value, val))
        else:
            offs.append(("dep", t.value, val))
    assert base is not None
    for kind, v, val in offs:
        if kind == "inv":
            base = em.b.gep(base, [S.offset_i64(em, v.type.dtype, val)], source_etype=et)
    return base, [val for kind, _v, val in offs if kind == "dep"]


def address(em, split: Split, pointee, base: ir.Value, o0: list[ir.Value], ivd: list[ir.Value]) -> ir.Value:
    """``P + sum_t ext_t(o_t(0) + iv * d_t)``: a copy's source address at iteration ``iv``."""
    et = em.mem_type(pointee)
    p = base
    for t, o, k in zip(split.deps, o0, ivd):
        p = em.b.gep(p, [S.offset_i64(em, t.value.type.dtype, em.b.add(o, em.spread(k)))], source_etype=et)
    return p


__all__ = ["Split", "address", "eval_deriv", "piece_base", "split_pointer"]
