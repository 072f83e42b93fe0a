"""Shape and layout ops: ``splat``, ``expand_dims``, ``reshape``, ``broadcast``, ``trans``, ``gather``.

* uniform values stay uniform under every shape op (a splat is a splat in any shape);
* lazy values (index arithmetic) are re-indexed: the new value evaluates the old one at mapped
  coordinates, so no data moves;
* distributed values (``elems``): ``reshape`` and ``expand_dims`` keep the flat row-major
  order and therefore each thread's elements; ``broadcast`` and ``trans`` go through shared
  memory (:func:`relayout`): every thread stores its owned elements at their flat index, a
  barrier, every thread reads the source element of each destination slot it owns. A
  broadcast of a one-element block reads that element as a uniform value instead.
"""

from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir

from eggpu.ir.dtypes import i64
from eggpu.ir.graph import Operation
from eggpu.ir.types import BlockType

from .emitter import I8, I32
from .layout import LV, Coords, ravel, to_i1, unravel

CoordMap = Callable[[Coords], Coords]


def smem_elem(lw, t: BlockType) -> tuple[ir.Type, int]:
    """LLVM type and byte size of one element of ``t`` in shared memory."""
    em = lw.em
    if t.is_pointer:
        return em.global_ptr, 8
    dt = t.dtype
    return em.mem_type(dt), max(1, dt.bits // 8)


def to_smem(lw, t: BlockType, v: ir.Value) -> ir.Value:
    if not t.is_pointer and t.dtype.is_bool:
        return lw.em.b.zext(v, lw.em.like_type(v, I8))
    return v


def from_smem(lw, t: BlockType, v: ir.Value) -> ir.Value:
    if not t.is_pointer and t.dtype.is_bool:
        return to_i1(lw.em, v)
    return v


def store_to_smem(lw, src: LV, byte_offset: int = 0) -> ir.Value:
    """Write every owned element of ``src`` at its flat index of an array at ``byte_offset``; return its base.

    Issues the barrier that protects earlier shared-memory readers when needed and reserves the
    space; the caller issues :meth:`Emitter.barrier` before reading.
    """
    em = lw.em
    lay = lw.layout(src.type.shape)
    t, size = smem_elem(lw, src.type)
    em.smem_reserve(byte_offset + lay.numel * size)
    base = em.smem_array(byte_offset)
    for j, v in enumerate(lw.elems(src)):
        em.smem_store(base, t, lay.flat(em, j), to_smem(lw, src.type, v), lay.owned(em, j))
    return base


def relayout(lw, src: LV, dst_type: BlockType, src_coords: CoordMap) -> LV:
    """A distributed value rearranged through shared memory.

    Destination slot ``j`` gets the source element at ``src_coords(coords of j)``.
    """
    em = lw.em
    em.smem_begin_write()
    base = store_to_smem(lw, src)
    em.barrier()
    t, _ = smem_elem(lw, src.type)
    dst = lw.layout(dst_type.shape)
    out = []
    for j in range(dst.per):
        idx = ravel(em, src_coords(dst.coords(em, j)), src.type.shape)
        out.append(from_smem(lw, src.type, em.smem_load(base, t, idx)))
    em.smem_dirty = True
    return LV(dst_type, elems=out)


def read_single(lw, src: LV) -> ir.Value:
    """The only element of a one-element distributed block, as a uniform value."""
    em = lw.em
    em.smem_begin_write()
    base = store_to_smem(lw, src)
    em.barrier()
    t, _ = smem_elem(lw, src.type)
    v = em.smem_load_uniform(base, t, I32(0))
    em.smem_dirty = True
    return from_smem(lw, src.type, v)


def remap(lw, src: LV, dst_type: BlockType, src_coords: CoordMap) -> LV:
    """``src`` viewed with another shape, element ``c`` of the result = ``src[src_coords(c)]``."""
    if src.u is not None:
        return LV(dst_type, u=src.u)
    if src.fn is not None:
        fn = src.fn
        return LV(dst_type, fn=lambda coords: fn(src_coords(coords)))
    if src.type.numel == 1:
        return LV(dst_type, u=read_single(lw, src))
    return relayout(lw, src, dst_type, src_coords)


# ---------------------------------------------------------------- handlers


def lower_splat(lw, op: Operation) -> list[LV]:
    return [LV(op.results[0].type, u=lw.uniform(lw.get(op.operands[0])))]


def lower_expand_dims(lw, op: Operation) -> list[LV]:
    src = lw.get(op.operands[0])
    t = op.results[0].type
    if src.elems is not None:
        return [LV(t, elems=src.elems)]
    axis = op.attrs["axis"]
    return [remap(lw, src, t, lambda c: c[:axis] + c[axis + 1:])]


def lower_reshape(lw, op: Operation) -> list[LV]:
    src = lw.get(op.operands[0])
    t = op.results[0].type
    if src.elems is not None:
        return [LV(t, elems=src.elems)]
    old, new = src.type.shape, t.shape
    em = lw.em
    if [n for n in old if n != 1] == [n for n in new if n != 1]:
        def mapping(c: Coords) -> Coords:
            big = iter(x for x, n in zip(c, new) if n != 1)
            return [next(big) if n != 1 else em.k(c[0], 0) for n in old]
    else:
        def mapping(c: Coords) -> Coords:
            return unravel(em, ravel(em, c, new), old)
    return [remap(lw, src, t, mapping)]


def lower_broadcast(lw, op: Operation) -> list[LV]:
    src = lw.get(op.operands[0])
    t = op.results[0].type
    em = lw.em
    shape = src.type.shape
    return [remap(lw, src, t, lambda c: [em.k(x, 0) if n == 1 else x for x, n in zip(c, shape)])]


def lower_trans(lw, op: Operation) -> list[LV]:
    src = lw.get(op.operands[0])
    t = op.results[0].type
    perm = op.attrs["perm"]

    def mapping(c: Coords) -> Coords:
        out: list = [None] * len(c)
        for d, p in enumerate(perm):
            out[p] = c[d]
        return out

    return [remap(lw, src, t, mapping)]


def lower_gather(lw, op: Operation) -> list[LV]:
    """``gather``: every destination slot reads the source element at its own coordinates with
    the ``axis`` coordinate replaced by its index (clamped into the axis). A lazy source is
    evaluated at those coordinates; a distributed one goes through shared memory."""
    from .scalar_ops import cast

    src, idx = lw.get(op.operands[0]), lw.get(op.operands[1])
    t = op.results[0].type
    if src.u is not None:
        return [LV(t, u=src.u)]
    em, b = lw.em, lw.em.b
    axis = op.attrs["axis"]
    n = src.type.shape[axis]
    idt = op.operands[1].type.dtype
    dst = lw.layout(t.shape)
    index = lw.elems(idx)

    def source_coords(j: int) -> Coords:
        k = cast(em, idt, i64, index[j])  # sign- or zero-extended by the index's signedness
        if idt.is_unsigned:  # a u64 index >= 2**63 is large, not negative: clamp high only
            k = b.select(b.icmp_unsigned(">", k, em.k(k, n - 1)), em.k(k, n - 1), k)
        else:
            k = b.select(b.icmp_signed("<", k, em.k(k, 0)), em.k(k, 0), k)
            k = b.select(b.icmp_signed(">", k, em.k(k, n - 1)), em.k(k, n - 1), k)
        c = list(dst.coords(em, j))
        c[axis] = b.trunc(k, em.like_type(k, I32))
        return c

    if src.fn is not None:
        return [LV(t, elems=[src.fn(source_coords(j)) for j in range(dst.per)])]
    em.smem_begin_write()
    base = store_to_smem(lw, src)
    em.barrier()
    et, _ = smem_elem(lw, src.type)
    out = []
    for j in range(dst.per):
        flat = ravel(em, source_coords(j), src.type.shape)
        out.append(from_smem(lw, src.type, em.smem_load(base, et, flat)))
    em.smem_dirty = True
    return [LV(t, elems=out)]


HANDLERS = {
    "gather": lower_gather,
    "splat": lower_splat,
    "expand_dims": lower_expand_dims,
    "reshape": lower_reshape,
    "broadcast": lower_broadcast,
    "trans": lower_trans,
}
