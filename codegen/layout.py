"""How block values are distributed over the threads of a CTA, and how lowered values look.

Layout rule (blocked with repetition, like Triton's blocked layout): a block of static shape
``S`` with ``E = numel(S)`` elements gives each of the ``NT`` threads of a CTA ``per =
ceil(E / NT)`` element slots, grouped in ``per / V`` chunks of ``V`` consecutive flat
(row-major) elements, ``V`` = the largest power of two <= 4 dividing ``per``. Slot ``j = r*V +
i`` of thread ``t`` is flat index ``r*NT*V + t*V + i``: chunk ``r`` of all threads covers
``NT*V`` consecutive elements, thread after thread. Slots at flat indices ``>= E`` are
unowned (don't-care values that stores, atomics and reductions mask off). ``V`` depends only on
``E`` and ``NT``, never on the dtype, so same-shape values of any dtype line up lane by lane.

**Small blocks are replicated** (as Triton's blocked layout over more threads than elements): a
block of ``E <= 32`` elements whose next power of two ``M >= E`` is below ``NT`` has one slot per
thread, owned by thread ``f`` for flat index ``f`` as above, and every thread ``t`` computes in
that slot the element ``t % M`` (``M`` = :attr:`Layout.rep`):
addresses, indices and lazy values are evaluated there. :meth:`Layout.owned` keeps meaning the
owner (stores, atomics and shared-memory staging act once per element); :meth:`Layout.valid`
says a slot holds a real element, owner's or copy. A lowered value whose copies are filled
(:func:`replicas_valid`: uniform and lazy values, loads through such addresses, elementwise ops
of such values) lets a reduction of the whole block run in every group of ``M`` lanes at once,
with no shared memory (:mod:`eggpu.codegen.lower_reduce`).

Consequences used by the lowering:

* elementwise ops work element by element on each thread's ``per`` values;
* ``reshape`` and ``expand_dims`` keep the flat order (and ``E``), so they move no data;
* a chunk is contiguous in memory whenever the block's addresses are, so loads and stores
  vectorize by up to ``V`` elements, and one warp-wide vector access covers ``32*V``
  consecutive elements (fully used sectors).

A lowered value (:class:`LV`) has one of three forms:

``uniform``
    one LLVM scalar equal in every thread and for every element: IR scalars, ``splat``
    results and reductions to one element. No per-thread storage.
``lazy``
    a pure function of the element coordinates (built from ``arange``, constants and
    uniforms by elementwise and shape ops). It is evaluated at the coordinates a consumer
    needs, so ``broadcast``/``trans``/``expand_dims`` of index arithmetic cost nothing.
``elems``
    ``per`` thread-level LLVM values: slot ``j`` of thread ``t`` is flat index
    ``(j // V)*NT*V + t*V + j % V`` (:meth:`Layout.slot_flat`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from math import prod

from llvmlite import ir

from eggpu.ir.types import BlockType

from .emitter import I1, WARP, Emitter

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
    def vec(self) -> int:
        """Chunk width ``V``: the largest power of two <= 4 dividing ``per``.

        It depends only on ``numel`` and ``nt``, so every block of the same shape (any dtype)
        and every reshape of it has the same ownership map.
        """
        v = 4
        while self.per % v:
            v //= 2
        return v

    @property
    def chunks(self) -> int:
        """Chunks per thread: ``per // vec``."""
        return self.per // self.vec

    @property
    def stride(self) -> int:
        """Flat distance between a thread's consecutive chunks: ``nt * vec``."""
        return self.nt * self.vec

    @property
    def rep(self) -> int:
        """Replication modulus ``M`` of a small block (module docs): the next power of two >=
        ``numel`` when ``numel <= 32`` and ``M < nt``, else 0 (not replicated). Thread ``t``'s
        slot then computes flat index ``t % M``; threads ``t < numel`` own their element."""
        n = self.numel
        m = 1 << (n - 1).bit_length() if n else 1
        return m if n <= WARP and m < self.nt else 0

    @property
    def all_owned(self) -> bool:
        """True when every element slot of every thread holds a real element."""
        return self.per * self.nt == self.numel

    def slot_flat(self, t: int, j: int) -> int:
        """Flat index (a Python int) of slot ``j`` of thread ``t`` in the ownership map (may be
        >= numel: unowned; a replicated block's slot computes ``t % rep`` all the same)."""
        v = self.vec
        return (j // v) * self.stride + t * v + j % v

    def owner(self, f: int) -> tuple[int, int]:
        """``(thread, slot)`` holding flat index ``f``."""
        v = self.vec
        r, rest = divmod(f, self.stride)
        t, i = divmod(rest, v)
        return t, r * v + i

    def chunk_base(self, em: Emitter, r: int) -> ir.Value:
        """Flat index (thread-level i32) of the first slot of chunk ``r``: ``r*nt*vec + tid*vec``
        (``tid % rep`` for a replicated block: the element this thread's slot computes)."""
        b = em.b
        t = em.tid()
        if self.rep:
            return b.and_(t, em.k(t, self.rep - 1))
        base = b.mul(t, em.k(t, self.vec)) if self.vec != 1 else t
        return b.add(base, em.k(t, r * self.stride)) if r else base

    def flat(self, em: Emitter, j: int) -> ir.Value:
        """Flat index (thread-level i32) of element slot ``j``: ``chunk_base(j // vec) + j % vec``."""
        base = self.chunk_base(em, j // self.vec)
        i = j % self.vec
        return em.b.add(base, em.k(base, i)) if i else base

    def owned(self, em: Emitter, j: int) -> ir.Value | None:
        """Thread-level i1: this thread owns the element of slot ``j`` (the one thread that
        stores it, counts it, stages it); None when that is always so."""
        if self.all_owned or (j // self.vec + 1) * self.stride <= self.numel:
            return None
        if self.rep:  # the owner of flat index f is thread f; the other threads hold copies
            t = em.tid()
            return em.b.icmp_unsigned("<", t, em.k(t, self.numel))
        f = self.flat(em, j)
        return em.b.icmp_unsigned("<", f, em.k(f, self.numel))

    def valid(self, em: Emitter, j: int) -> ir.Value | None:
        """Thread-level i1: slot ``j`` computes a real element (owned, or a copy of a replicated
        block's); None when that is always so. Equal to :meth:`owned` unless replicated."""
        if not self.rep:
            return self.owned(em, j)
        if self.rep == self.numel:
            return None
        f = self.flat(em, j)
        return em.b.icmp_unsigned("<", f, em.k(f, self.numel))

    def owned_any(self, em: Emitter) -> ir.Value | None:
        """Thread-level i1: the thread owns at least one element (None: every thread does)."""
        if self.numel >= self.stride:
            return None
        if self.rep:
            return self.owned(em, 0)
        f = self.chunk_base(em, 0)
        return em.b.icmp_unsigned("<", f, em.k(f, self.numel))

    def coords(self, em: Emitter, j: int) -> Coords:
        """Coordinates (thread-level i32 per dimension) of the element in slot ``j``.

        Slots of one chunk are consecutive flat indices starting at a multiple of ``vec``:
        when ``vec`` divides a dimension's slab the coordinate is the chunk start's; when the
        repetition stride ``nt*vec`` is a multiple of ``slab*size`` the chunk index drops out.
        Coordinates are always reduced into range (unowned slots get in-range don't-cares);
        only the leading dimension of a fully owned layout skips the reduction.
        """
        b = em.b
        t = em.tid()
        v = self.vec
        r, i = divmod(j, v)
        out: Coords = []
        for d, size in enumerate(self.shape):
            slab = prod(self.shape[d + 1:])
            if size == 1:
                out.append(em.k(t, 0))
                continue
            rr = 0 if self.stride % (slab * size) == 0 else r
            ii = 0 if slab % v == 0 else i
            f = self.chunk_base(em, rr)
            if ii:
                f = b.add(f, em.k(f, ii))
            q = b.udiv(f, em.k(f, slab)) if slab != 1 else f
            if d == 0 and self.all_owned:
                out.append(q)
            else:
                out.append(b.urem(q, em.k(q, size)))
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

    __slots__ = ("type", "u", "fn", "elems", "cache", "rep", "src", "memo")

    def __init__(self, type: BlockType, *, u: ir.Value | None = None, fn: LazyFn | None = None,
                 elems: list[ir.Value] | None = None, rep: bool = False):
        assert (u is not None) + (fn is not None) + (elems is not None) == 1
        self.type = type
        self.u = u
        self.fn = fn
        self.elems = elems
        self.rep = rep  # elems of a replicated layout: the copies hold their elements too
        self.cache: dict[int, list[ir.Value]] = {}
        self.src = None  # the IR value a lazy LV was first bound to (Lowerer.bind): its analyses
        self.memo: tuple[object, object, ir.Value] | None = None  # (coords, block, value): Lowerer.at's last answer

    @property
    def is_uniform(self) -> bool:
        return self.u is not None

    @property
    def is_lazy(self) -> bool:
        return self.fn is not None

    def __repr__(self) -> str:
        form = "uniform" if self.u is not None else "lazy" if self.fn is not None else f"elems[{len(self.elems or [])}]"
        return f"LV({self.type}, {form})"


def replicas_valid(lv: LV) -> bool:
    """Whether every slot of ``lv`` computes its element, copies of a replicated block included
    (uniform and lazy values are evaluated at each slot's element; ``elems`` only when marked)."""
    return lv.u is not None or lv.fn is not None or lv.rep


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


__all__ = ["LV", "Coords", "Layout", "LazyFn", "and_masks", "ravel", "replicas_valid", "to_i1", "unravel"]
