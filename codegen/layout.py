"""How block values are distributed over the threads of a CTA, and how lowered values look.

Layout rule (DESIGN.md §6): a block of static shape ``S`` with ``E = numel(S)`` elements is
split into ``NT`` (threads per CTA) runs of ``per = ceil(E / NT)`` consecutive elements in flat
row-major order: thread ``t`` owns flat indices ``[t*per, t*per + per) ∩ [0, E)``. Threads
past the end own nothing (their element slots hold don't-care values that stores, atomics and
reductions mask off). Consequences used by the lowering:

* elementwise ops work element by element on each thread's ``per`` values;
* ``reshape`` and ``expand_dims`` keep the flat order, so they move no data;
* a thread's elements are contiguous in memory whenever the block's addresses are, which is
  what lets loads and stores vectorize.

A lowered value (:class:`LV`) has one of three forms:

``uniform``
    one LLVM scalar equal in every thread and for every element: IR scalars, ``splat``
    results and reductions to one element. No per-thread storage.
``lazy``
    a pure function of the element coordinates (built from ``arange``, constants and
    uniforms by elementwise and shape ops). It is evaluated at the coordinates a consumer
    needs, so ``broadcast``/``trans``/``expand_dims`` of index arithmetic cost nothing.
``elems``
    ``per`` thread-level LLVM values: element ``j`` of thread ``t`` is flat index ``t*per + j``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from math import prod

from llvmlite import ir

from eggpu.ir.types import BlockType

from .emitter import I1, Emitter

Coords = list[ir.Value]
LazyFn = Callable[[Coords], ir.Value]


@dataclass(frozen=True)
class Layout:
    """The distribution of a block of ``shape`` over ``nt`` threads."""

    shape: tuple[int, ...]
    nt: int

    @property
    def numel(self) -> int:
        return prod(self.shape) if self.shape else 1

    @property
    def per(self) -> int:
        """Elements per thread: ``ceil(numel / nt)``."""
        return -(-self.numel // self.nt)

    @property
    def all_owned(self) -> bool:
        """True when every element slot of every thread holds a real element."""
        return self.per * self.nt == self.numel

    def flat(self, em: Emitter, j: int) -> ir.Value:
        """Flat index (thread-level i32) of element slot ``j``: ``tid * per + j``."""
        b = em.b
        t = em.tid()
        base = b.mul(t, em.k(t, self.per)) if self.per != 1 else t
        return b.add(base, em.k(t, j)) if j else base

    def owned(self, em: Emitter, j: int) -> ir.Value | None:
        """Thread-level i1: slot ``j`` holds a real element; None when that is always so."""
        if self.all_owned:
            return None
        f = self.flat(em, j)
        return em.b.icmp_unsigned("<", f, em.k(f, self.numel))

    def owned_any(self, em: Emitter) -> ir.Value | None:
        """Thread-level i1: the thread owns at least one element (None: every thread does)."""
        if self.numel >= self.nt:
            return None
        t = em.tid()
        return em.b.icmp_unsigned("<", t, em.k(t, self.numel))

    def coords(self, em: Emitter, j: int) -> Coords:
        """Coordinates (thread-level i32 per dimension) of the element in slot ``j``.

        Uses the alignment of the thread's run to the shape to avoid divisions: when the run
        lies inside one slab of a dimension (``per`` divides the slab) the coordinate does not
        depend on ``j``; when it covers whole slabs, ``j`` adds a static offset.
        """
        b = em.b
        t = em.tid()
        per = self.per
        out: Coords = []
        for d, size in enumerate(self.shape):
            slab = prod(self.shape[d + 1:])
            if size == 1:
                out.append(em.k(t, 0))
                continue
            if slab % per == 0:
                # the run sits inside one slab: coordinate of the run's start
                q = b.udiv(b.mul(t, em.k(t, per)), em.k(t, slab)) if slab != per else t
                out.append(b.urem(q, em.k(t, size)))
            elif per % slab == 0:
                step = per // slab
                q = b.mul(t, em.k(t, step)) if step != 1 else t
                r = j // slab
                if size % step == 0:
                    c = b.urem(q, em.k(t, size))
                    out.append(b.add(c, em.k(t, r)) if r else c)
                else:
                    out.append(b.urem(b.add(q, em.k(t, r)), em.k(t, size)))
            else:
                f = self.flat(em, j)
                out.append(b.urem(b.udiv(f, em.k(t, slab)), em.k(t, size)))
        return out


def ravel(em: Emitter, coords: Coords, shape: tuple[int, ...]) -> ir.Value:
    """Row-major flat index (thread-level i32) of ``coords`` in ``shape``."""
    b = em.b
    idx = None
    for c, size in zip(coords, shape):
        if idx is None:
            idx = c
        else:
            idx = b.add(b.mul(idx, em.k(idx, size)), c) if size != 1 else idx
    assert idx is not None
    return idx


def unravel(em: Emitter, flat: ir.Value, shape: tuple[int, ...]) -> Coords:
    """Coordinates of the row-major flat index ``flat`` in ``shape``."""
    b = em.b
    out: Coords = []
    for d, size in enumerate(shape):
        slab = prod(shape[d + 1:])
        if size == 1:
            out.append(em.k(flat, 0))
            continue
        q = b.udiv(flat, em.k(flat, slab)) if slab != 1 else flat
        out.append(b.urem(q, em.k(flat, size)) if d else q)
    return out


class LV:
    """A lowered IR value: ``uniform`` (``u``), ``lazy`` (``fn``) or ``elems`` (``elems``).

    ``type`` is the IR BlockType. ``cache`` memoizes the materialized elements of a lazy value
    per code region (see :class:`eggpu.codegen.lowering.Lowerer`).
    """

    __slots__ = ("type", "u", "fn", "elems", "cache")

    def __init__(self, type: BlockType, *, u: ir.Value | None = None, fn: LazyFn | None = None,
                 elems: list[ir.Value] | None = None):
        assert (u is not None) + (fn is not None) + (elems is not None) == 1
        self.type = type
        self.u = u
        self.fn = fn
        self.elems = elems
        self.cache: dict[int, list[ir.Value]] = {}

    @property
    def is_uniform(self) -> bool:
        return self.u is not None

    @property
    def is_lazy(self) -> bool:
        return self.fn is not None

    def __repr__(self) -> str:
        form = "uniform" if self.u is not None else "lazy" if self.fn is not None else f"elems[{len(self.elems or [])}]"
        return f"LV({self.type}, {form})"


def and_masks(em: Emitter, a: ir.Value | None, b_: ir.Value | None) -> ir.Value | None:
    """Conjunction of two optional thread-level masks (None = all true)."""
    if a is None:
        return b_
    if b_ is None:
        return a
    return em.b.and_(a, b_)


def to_i1(em: Emitter, v: ir.Value) -> ir.Value:
    """A bool register value (``i1``) from an ``i1`` or byte value."""
    t = v.type.element if isinstance(v.type, ir.VectorType) else v.type
    if t == I1:
        return v
    return em.b.icmp_unsigned("!=", v, em.k(v, 0))


__all__ = ["LV", "Coords", "Layout", "LazyFn", "and_masks", "ravel", "to_i1", "unravel"]
