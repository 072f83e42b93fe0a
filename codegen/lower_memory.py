"""Global memory: ``load``, ``store`` and the atomics.

Masks. An element is accessed when its slot is owned by the thread (see
:class:`~eggpu.codegen.layout.Layout`) and its mask lane is true; masked-off loads take
``other`` (0 without it) and never touch memory.

Vector accesses (GPU). When the address analysis (:mod:`eggpu.codegen.analysis`) proves that a
thread's layout chunks (``Layout.vec`` consecutive elements each) are contiguous and aligned in
pieces of ``w`` elements, each piece is one ``ld.global.v{w}``/``st.global.v{w}``. Chunks are
grouped to span at least 16 bytes (one chunk for 32/64-bit types); per group one branch: when
every slot of the group is valid the vector instructions run, otherwise each element is
loaded/stored under its own predicate. When the mask is constant on each piece
(:func:`~eggpu.codegen.analysis.chunk_uniform`: e.g. ``offs < n`` with ``n`` specialized
divisible by 16), each piece is one predicated vector access and there is no fallback. Alignment
of a pointer *parameter* is never proven, only assumed: with ``assume_aligned`` the lowering
records ``{param: "align16"}`` in the module's assumptions and the launcher must check it.

Host: every thread-level access is a loop over the CTA's lanes, and every access is preceded by
a bounds check of its active lanes (:mod:`eggpu.codegen.bounds`; host mode only).

Scalar (shape ``()``) accesses happen once per program: every thread loads the same address
(a uniform value); a store or an atomic is done by thread 0 only, and an atomic's old value is
broadcast through shared memory.

Atomics apply element by element in row-major order (the host loops over chunks, then lanes,
then the chunk's slots) and return the old value (0 for masked-off lanes). Integer
add/max/min and float add use ``atomicrmw``; float max/min (minimumNumber semantics) use a
compare-and-swap loop; ``atomic_cas`` is ``cmpxchg``.

Memory ordering (GPU). Each atomic carries Triton's ``sem`` (absent: ``acq_rel``) and ``scope``
(absent: ``gpu``) and is lowered to the instruction Triton emits: one
``atom.global.{scope}.{sem}.{op}.{type}`` (inline PTX: LLVM's NVPTX back end drops the ordering of
an ``atomicrmw`` it selects to one ``atom``) where the target has that instruction, otherwise an
``atomicrmw``/``cmpxchg`` with the LLVM ordering and ``syncscope`` (LLVM keeps those on ``cmpxchg``,
also inside the compare-and-swap loops it expands 8/16-bit atomics to). The host runs lanes one
at a time: ``monotonic``, nothing to order.
"""

from __future__ import annotations

from llvmlite import ir

from eggpu.ir.dtypes import DType
from eggpu.ir.graph import Operation

from . import scalar_ops as S
from .analysis import chunk_contiguous, chunk_uniform, down_closed, run_of, run_vector_width, vector_width
from .emitter import I1, I32, Emitter, is_const_false, is_const_true
from .layout import LV, and_masks, replicas_valid, to_i1
from .predicated import (
    predicated_load,
    predicated_load_vector,
    predicated_store,
    register_bits,
    volatile_load,
)
from .read_only import read_only

ALIGN_ASSUMPTION = "align16"
PARAM_ALIGN = 16


def _elem_bytes(dt: DType) -> int:
    return max(1, dt.bits // 8)


def _loaded(em: Emitter, dt: DType, v: ir.Value) -> ir.Value:
    return to_i1(em, v) if dt.is_bool else v


def _stored(em: Emitter, dt: DType, v: ir.Value) -> ir.Value:
    return em.b.zext(v, em.like_type(v, em.mem_type(dt))) if dt.is_bool else v


def _width(lw, op: Operation) -> int:
    """Vector width for the thread runs of a block access through pointer operand 0 (GPU only)."""
    em = lw.em
    if em.is_host:
        return 1
    ptr = op.operands[0]
    shape = ptr.type.shape
    fact = lw.facts.get(ptr)
    if fact is not None:
        origin = fact.origin

        def width(align: int) -> int:
            return vector_width(fact, shape, chunk, size, align)
    else:  # index math beyond affine (x % C, x // C, ...): runs of consecutive elements
        run = run_of(ptr, 1, lw.facts) if shape else None
        origin = run.origin if run is not None else None

        def width(align: int) -> int:
            return run_vector_width(ptr, shape, chunk, size, align, lw.facts)
    if origin is None:
        return 1
    size = _elem_bytes(ptr.type.dtype)
    chunk = lw.layout(shape).vec
    # a stated alignment fact (checked at launch with the other specialization facts) needs no
    # assumption of its own
    stated = max(size, lw.fn.facts.alignment(origin))
    origin_align = max(stated, PARAM_ALIGN if lw.assume_aligned else size)
    w = width(origin_align)
    if w > 1 and origin_align > stated and width(stated) < w:
        # the proof used the parameter's alignment only if the stated alignment is not enough
        lw.record_assumption(origin, ALIGN_ASSUMPTION)
    return w


def _masks(lw, op: Operation, mask_index: int, copies: bool = False) -> list[ir.Value | None]:
    """Per slot: the thread-level validity (ownership and mask operand), None = always.
    ``copies``: the copies of a replicated block count too (:meth:`Layout.valid`: a load)."""
    t = op.operands[0].type
    lay = lw.layout(t.shape)
    m = lw.elems(lw.get(op.operands[mask_index])) if len(op.operands) > mask_index else None
    own = lay.valid if copies else lay.owned
    return [and_masks(lw.em, own(lw.em, j), m[j] if m is not None else None) for j in range(lay.per)]


def _loads_copies(lw, op: Operation) -> bool:
    """Whether a load of a replicated block reads in the copies' slots too: only when its
    address, mask and ``other`` are computed there (:func:`replicas_valid`), so a copy reads
    exactly what its owner reads (same address, same validity) and the result's copies hold
    their elements."""
    return bool(lw.layout(op.results[0].type.shape).rep) and all(replicas_valid(lw.get(v)) for v in op.operands)


def _check(lw, op: Operation, ptrs: list[ir.Value], masks: list[ir.Value | None], verb: str) -> None:
    """Host mode: the bounds check of ``op``'s active lanes before any of them is accessed
    (:mod:`eggpu.codegen.bounds`); nothing on the GPU."""
    if lw.bounds is not None:
        lw.bounds.check(lw, op, ptrs, masks, _elem_bytes(op.operands[0].type.dtype), verb)


def _all(em: Emitter, masks: list[ir.Value | None]) -> ir.Value | None:
    out = None
    for m in masks:
        out = m if out is None else (out if m is None else em.b.and_(out, m))
    return out


# ---------------------------------------------------------------- load


def lower_load(lw, op: Operation) -> list[LV]:
    em = lw.em
    t = op.results[0].type
    dt = t.dtype
    mt = em.mem_type(dt)
    if op.attrs.get("volatile") and not em.is_host:
        return _lower_volatile_load(lw, op)
    if t.is_scalar:
        p = lw.uniform(lw.get(op.operands[0]))
        mask = lw.uniform(lw.get(op.operands[1])) if len(op.operands) > 1 else None
        other = lw.uniform(lw.get(op.operands[2])) if len(op.operands) > 2 else None
        if other is not None and dt.is_bool:
            other = _stored(em, dt, other)
        _check(lw, op, [p], [mask], "reads")
        return [LV(t, u=_loaded(em, dt, em.gload(p, mt, mask, other)))]
    lay = lw.layout(t.shape)
    ptrs = lw.elems(lw.get(op.operands[0]))
    copies = _loads_copies(lw, op)
    masks = _masks(lw, op, 1, copies)
    others = lw.elems(lw.get(op.operands[2])) if len(op.operands) > 2 else [None] * lay.per
    others = [_stored(em, dt, o) if o is not None else None for o in others]
    _check(lw, op, ptrs, masks, "reads")
    w = _width(lw, op)
    n = lay.per
    if w == 1:
        r = _constant_run(lw, op, lay.vec)
        out = []
        for j0 in range(0, n, r):  # a run-constant piece reads one element, once
            out.extend([_gload(em, ptrs[j0], mt, masks[j0], others[j0])] * r)
        return [LV(t, elems=[_loaded(em, dt, v) for v in out], rep=copies)]

    out = []
    if _uniform(lw, op, 1, w):
        pred = _straight_line(lw)
        for j0 in range(0, n, w):
            out.extend(_load_piece(em, range(j0, j0 + w), mt, dt, ptrs, masks[j0], others, pred))
        return [LV(t, elems=[_loaded(em, dt, v) for v in out])]
    closed = _closed(lw, op, 1, w)
    for g in _groups(n, w, dt):
        out.extend(_load_group(em, g, w, mt, dt, ptrs, masks, others, closed))
    return [LV(t, elems=[_loaded(em, dt, v) for v in out])]


def _lower_volatile_load(lw, op: Operation) -> list[LV]:
    """GPU: ``tl.load(..., volatile=True)``: one ``ld.volatile`` per element (no vector loads, no
    sharing of a run-constant element), each predicated by its mask. The host lowering reads
    memory as an ordinary load: a CPU run has no other agent writing it meanwhile."""
    em = lw.em
    t = op.results[0].type
    dt = t.dtype
    mt = em.mem_type(dt)
    zero = em.const(mt, 0)
    if t.is_scalar:
        p = lw.uniform(lw.get(op.operands[0]))
        mask = lw.uniform(lw.get(op.operands[1])) if len(op.operands) > 1 else None
        other = _stored(em, dt, lw.uniform(lw.get(op.operands[2]))) if len(op.operands) > 2 else zero
        return [LV(t, u=_loaded(em, dt, volatile_load(em.b, p, mt, mask, other)))]
    lay = lw.layout(t.shape)
    ptrs = lw.elems(lw.get(op.operands[0]))
    copies = _loads_copies(lw, op)
    masks = _masks(lw, op, 1, copies)
    others = lw.elems(lw.get(op.operands[2])) if len(op.operands) > 2 else [None] * lay.per
    out = [volatile_load(em.b, p, mt, m, _stored(em, dt, o) if o is not None else zero)
           for p, m, o in zip(ptrs, masks, others)]
    return [LV(t, elems=[_loaded(em, dt, v) for v in out], rep=copies)]


# ---------------------------------------------------------------- store


def lower_store(lw, op: Operation) -> list[LV]:
    em = lw.em
    pt = op.operands[0].type
    dt = pt.dtype
    if pt.is_scalar:
        p = lw.uniform(lw.get(op.operands[0]))
        v = _stored(em, dt, lw.uniform(lw.get(op.operands[1])))
        mask = lw.uniform(lw.get(op.operands[2])) if len(op.operands) > 2 else None
        _check(lw, op, [p], [mask], "writes")
        with em.only_thread0():
            em.gstore(p, v, mask)
        return []
    lay = lw.layout(pt.shape)
    ptrs = lw.elems(lw.get(op.operands[0]))
    vals = [_stored(em, dt, v) for v in lw.elems(lw.get(op.operands[1]))]
    masks = _masks(lw, op, 2)
    if em.is_host:
        _check(lw, op, ptrs, masks, "writes")
        # chunk by chunk, lanes in order, slots of the chunk in order: row-major
        v = lay.vec
        for j0 in range(0, lay.per, v):
            em.scatter_slots(ptrs[j0:j0 + v], vals[j0:j0 + v], masks[j0:j0 + v])
        return []
    w = _width(lw, op)
    n = lay.per
    if w == 1:
        # consecutive elements of a chunk store through the chunk's first address + offsets
        v = lay.vec if lay.vec > 1 and chunk_contiguous(op.operands[0], lay.vec, lw.facts) else 1
        size = _elem_bytes(dt)
        for j in range(n):
            _gstore(em, ptrs[j], vals[j], masks[j], ptrs[j - j % v], (j % v) * size)
        return []
    if _uniform(lw, op, 2, w):
        pred = _straight_line(lw)
        for j0 in range(0, n, w):
            m = masks[j0]
            if is_const_false(m):
                continue
            if m is None or is_const_true(m):
                em.gstore_vector(ptrs[j0], vals[j0:j0 + w], w * _elem_bytes(dt))
                continue
            if (pred and (register_bits(vals[j0].type) or 0) >= 32
                    and predicated_store(em.b, ptrs[j0], vals[j0:j0 + w], m)):
                continue  # one predicated vector store, no branch (_straight_line)
            with em.b.if_then(m):
                em.gstore_vector(ptrs[j0], vals[j0:j0 + w], w * _elem_bytes(dt))
        return []
    closed = _closed(lw, op, 2, w)
    for g in _groups(n, w, dt):
        _store_group(em, g, w, dt, ptrs, vals, masks, closed)
    return []


def _gstore(em: Emitter, ptr: ir.Value, val: ir.Value, mask: ir.Value | None, base: ir.Value | None = None,
            offset: int = 0) -> None:
    """GPU thread-level store of one element at ``ptr`` where ``mask``: one predicated
    ``st.global`` at ``base + offset`` bytes (``base + offset == ptr``; :mod:`eggpu.codegen.predicated`,
    no branch for LLVM to sink the value's computation into) when the mask is not constant,
    else :meth:`Emitter.gstore`."""
    if base is None:
        base, offset = ptr, 0
    if (mask is None or is_const_true(mask) or is_const_false(mask)
            or not predicated_store(em.b, base, [val], mask, offset)):
        em.gstore(ptr, val, mask)


def _gload(em: Emitter, ptr: ir.Value, mt: ir.Type, mask: ir.Value | None, other: ir.Value | None) -> ir.Value:
    """GPU thread-level load of one element where ``mask`` (else ``other``, 0 without): one
    predicated ``ld.global`` (:func:`~eggpu.codegen.predicated.predicated_load`) when the mask is
    not constant and the type has one, as Triton emits it: no branch, so the loop body stays one
    basic block and LLVM hoists its loop-invariant address parts; else :meth:`Emitter.gload`."""
    if not em.is_host and mask is not None and not is_const_true(mask) and not is_const_false(mask):
        r = predicated_load(em.b, ptr, mt, mask, other if other is not None else em.const(mt, 0))
        if r is not None:
            return r
    return em.gload(ptr, mt, mask, other)


def _constant_run(lw, op: Operation, chunk: int) -> int:
    """The longest piece of a thread's chunk (a power of two dividing ``chunk`` and the last
    dimension) on which the load reads one element: address, mask and ``other`` constant on
    every run of that many lanes (:func:`~eggpu.codegen.analysis.run_of`), so the piece's
    slots all get the element its first slot reads (``x // 512`` indices, an embedding's
    row). 1 when there is none."""
    v = op.results[0]
    r = chunk
    while r > 1:
        if v.type.shape[-1] % r == 0:
            run = run_of(v, r, lw.facts)
            if run is not None and run.step == 0:
                return r
        r //= 2
    return 1


def _uniform(lw, op: Operation, mask_index: int, w: int) -> bool:
    """Whether the access's validity is the same on each piece of ``w`` slots: no mask, or a
    mask :func:`~eggpu.codegen.analysis.chunk_uniform` proves so (ownership is: the last
    dimension, hence the block, is a multiple of ``w``). Then each piece is one predicated
    vector access and no per-element fallback is emitted."""
    if len(op.operands) <= mask_index:
        return True
    return chunk_uniform(op.operands[mask_index], w, lw.facts)


def _closed(lw, op: Operation, mask_index: int, w: int) -> bool:
    """Whether every slot's validity (ownership and mask) is true on a prefix of each piece of
    ``w`` slots (:func:`~eggpu.codegen.analysis.down_closed`; ownership is ``flat < numel`` over
    consecutive flat indices), so a piece is all valid iff its last slot is: the vector path's
    condition is one comparison per piece, not the conjunction of all of them (LLVM folds that
    conjunction for ``offs < n`` alone, not for ``rmask & xmask``)."""
    if lw.layout(op.operands[0].type.shape).rep:
        return False
    return len(op.operands) <= mask_index or down_closed(op.operands[mask_index], w, lw.facts)


def _group_valid(em: Emitter, g: range, w: int, masks: list[ir.Value | None], closed: bool) -> ir.Value | None:
    """The condition under which every live slot of the group ``g`` is valid (the vector path):
    with ``closed`` (:func:`_closed`), a group of one piece (32 and 64-bit types) and no slot
    statically off, its last slot's. A group of several pieces (16 and 8-bit types) keeps the
    whole conjunction, which LLVM folds for ``offs < n`` (given the pieces' last slots instead,
    relu_forward[f16] on sm_80 took one SASS instruction more)."""
    live = [masks[j] for j in g if not is_const_false(masks[j])]
    if closed and len(g) == w and len(live) == w:
        return masks[g.stop - 1]
    return _all(em, live)


def _straight_line(lw) -> bool:
    """Whether a masked vector access in the op being lowered is emitted as one predicated
    instruction (GPU, outside every loop) rather than under a branch.

    Why not in loops: a loop body without branches is one basic block, which ptxas unrolls 4x
    (as it does Triton's), multiplying its static size (layer_norm_forward with launch
    facts: 545 -> 769 SASS instructions on sm_90) for a speed-up no GPU run has measured yet.
    Outside loops it removes the branches (vector_add with ``n`` divisible by 16: 46 -> 40 on
    sm_90, Triton 41; on the naive suite only embedding got longer, 42 -> 44 on sm_80), at some
    cost in registers where values stay live across a long computation (docs/codegen.md)."""
    return not lw.em.is_host and getattr(lw, "loop_depth", 0) == 0


def _load_piece(em: Emitter, piece: range, mt: ir.Type, dt: DType, ptrs, mask, others,
                predicated: bool = False) -> list[ir.Value]:
    """One vector load of the slots ``piece`` where ``mask`` (valid for all of them), else their
    ``other`` values (0 without). ``predicated``: as one ``@mask ld.global.v{w}`` when the element
    type has one (32 and 64-bit elements; narrower ones keep the branch and its vector phi)."""
    b = em.b
    w = len(piece)
    j0 = piece.start
    dflt = [others[j] if others[j] is not None else em.const(mt, 0) for j in piece]
    if is_const_false(mask):
        return dflt
    if mask is None or is_const_true(mask):
        return em.gload_vector(ptrs[j0], mt, w, w * _elem_bytes(dt))
    if predicated and (register_bits(mt) or 0) >= 32:
        # one predicated vector load, as Triton emits it: no branch, so LLVM keeps one basic block
        # and forms each address as one 32 x 32 -> 64 multiply-add from the i32 offset
        vals = predicated_load_vector(b, ptrs[j0], mt, mask, dflt)
        if vals is not None:
            return vals
    # one phi of the whole vector (not one per element), so a consumer that re-packs the
    # elements (the tensor-core staging stores) gets the loaded vector back without byte permutes
    vt = ir.VectorType(mt, w)
    dv = ir.Constant(vt, ir.Undefined)
    for i, d in enumerate(dflt):
        dv = b.insert_element(dv, d, I32(i))
    entry = b.block
    with b.if_then(mask):
        loaded = b.load(ptrs[j0], typ=vt, align=w * _elem_bytes(dt))
        then = b.block
    phi = b.phi(vt)
    phi.add_incoming(loaded, then)
    phi.add_incoming(dv, entry)
    return [b.extract_element(phi, I32(i)) for i in range(w)]


def _groups(n: int, w: int, dt: DType) -> list[range]:
    """Slot ranges that share one validity branch: chunks of ``w`` slots, grouped so that a
    group spans at least 16 bytes (fewer, larger branches for narrow types)."""
    size = w * max(1, 16 // (w * _elem_bytes(dt)))
    return [range(g0, min(n, g0 + size)) for g0 in range(0, n, size)]


def _load_group(em: Emitter, g: range, w: int, mt: ir.Type, dt: DType, ptrs, masks, others,
                closed: bool = False) -> list[ir.Value]:
    """Loads of the slots ``g``: vector loads when every live slot is valid, else per element
    (``closed``: see :func:`_group_valid`)."""
    b = em.b

    def vector_path() -> list[ir.Value]:
        vals: list[ir.Value] = []
        for j0 in range(g.start, g.stop, w):
            chunk = range(j0, j0 + w)
            if all(is_const_false(masks[j]) for j in chunk):
                vals.extend(em.gload(ptrs[j], mt, masks[j], others[j]) for j in chunk)
            else:
                vals.extend(em.gload_vector(ptrs[j0], mt, w, w * _elem_bytes(dt)))
        return vals

    valid = _group_valid(em, g, w, masks, closed)
    if is_const_true(valid):
        return vector_path()
    if not em.is_host and len(ptrs) >= BRANCH_FREE_SLOTS and _predicable(mt, w):
        return _load_group_predicated(em, g, w, mt, dt, ptrs, masks, others, valid)
    vec_bb = em.new_block("ld.vec")
    sc_bb = em.new_block("ld.scalar")
    merge = em.new_block("ld.end")
    b.cbranch(valid, vec_bb, sc_bb)
    b.position_at_end(vec_bb)
    vec_vals = vector_path()
    vec_end = b.block
    b.branch(merge)
    b.position_at_end(sc_bb)
    sc_vals = [em.gload(ptrs[j], mt, masks[j], others[j]) for j in g]
    sc_end = b.block
    b.branch(merge)
    b.position_at_end(merge)
    out = []
    for vv, sv in zip(vec_vals, sc_vals):
        phi = b.phi(mt)
        phi.add_incoming(vv, vec_end)
        phi.add_incoming(sv, sc_end)
        out.append(phi)
    return out


def _store_group(em: Emitter, g: range, w: int, dt: DType, ptrs, vals, masks, closed: bool = False) -> None:
    """Stores of the slots ``g``: vector stores when every live slot is valid, else per element
    (``closed``: see :func:`_group_valid`)."""
    b = em.b
    align = w * _elem_bytes(dt)

    def vector_path() -> None:
        for j0 in range(g.start, g.stop, w):
            if not all(is_const_false(masks[j]) for j in range(j0, j0 + w)):
                em.gstore_vector(ptrs[j0], vals[j0:j0 + w], align)

    valid = _group_valid(em, g, w, masks, closed)
    if is_const_true(valid):
        vector_path()
        return
    if not em.is_host and len(ptrs) >= BRANCH_FREE_SLOTS and _predicable(vals[g.start].type, w):
        _store_group_predicated(em, g, w, dt, ptrs, vals, masks, valid)
        return
    vec_bb = em.new_block("st.vec")
    sc_bb = em.new_block("st.scalar")
    merge = em.new_block("st.end")
    b.cbranch(valid, vec_bb, sc_bb)
    b.position_at_end(vec_bb)
    vector_path()
    b.branch(merge)
    b.position_at_end(sc_bb)
    for j in g:
        em.gstore(ptrs[j], vals[j], masks[j])
    b.branch(merge)
    b.position_at_end(merge)


# Threads with at least this many slots access non-uniformly masked groups branch-free. Every
# thread does: the fallback addresses each element from its piece's start plus an immediate
# offset, as the branchy form's plain loads do, and the branches and their reconvergence
# (BSSY/BRA/BSYNC per group) cost more SASS than the predicated accesses (no kernel of
# `python -m bench naive` got longer when this went from 64 to 1): vector_add
# (8 slots, n without a divisibility fact) 104 -> 69 SASS instructions on sm_80 (Triton 76). It
# can cost registers where a long computation sits between load and store (gelu_forward on sm_90:
# 31 -> 36; docs/codegen.md, "Memory, vectorization and assumptions").
BRANCH_FREE_SLOTS = 1


def _predicable(t: ir.Type, w: int) -> bool:
    """Whether a group of ``w``-element pieces of ``t`` can be accessed branch-free: PTX has a
    predicated ``ld/st.global.v{w}`` and a predicated scalar access for ``t``."""
    bits = register_bits(t)
    return bits is not None and w in (2, 4) and not (bits == 64 and w == 4)


def _load_group_predicated(em: Emitter, g: range, w: int, mt: ir.Type, dt: DType, ptrs, masks, others,
                           valid: ir.Value) -> list[ir.Value]:
    """:func:`_load_group` without branches (same values): each piece is ``@valid ld.v{w}``
    (else its ``other`` values), then each element ``@(mask & !valid) ld`` keeping the vector's
    value otherwise. One basic block however large the group: branches per group made LLVM's
    back end take seconds on 256-element-per-thread blocks. ``valid`` implies every live slot's
    mask, so ``mask & !valid`` is emitted as ``mask ^ valid``: ptxas fuses it into the mask's
    comparison (``ISETP.LT.XOR``), where ``!valid`` would be a comparison of its own."""
    b = em.b
    inv = b.not_(valid)
    out: list[ir.Value] = []
    for j0 in range(g.start, g.stop, w):
        chunk = range(j0, j0 + w)
        dflt = [others[j] if others[j] is not None else em.const(mt, 0) for j in chunk]
        if all(is_const_false(masks[j]) for j in chunk):
            out.extend(dflt)
            continue
        vec = predicated_load_vector(b, ptrs[j0], mt, valid, dflt)
        assert vec is not None  # _predicable
        for j, v, d in zip(chunk, vec, dflt):
            m = masks[j]
            if is_const_false(m):  # the branchy form: the vector's element where valid, else other
                out.append(b.select(valid, v, d))
            else:
                r = predicated_load(b, ptrs[j0], mt, inv if m is None else b.xor(valid, m), v,
                                    (j - j0) * _elem_bytes(dt))
                assert r is not None  # _predicable
                out.append(r)
    return out


def _store_group_predicated(em: Emitter, g: range, w: int, dt: DType, ptrs, vals, masks, valid: ir.Value) -> None:
    """:func:`_store_group` without branches (same stores): ``@valid st.v{w}`` per piece, then
    ``@(mask & !valid) st`` per element (see :func:`_load_group_predicated`)."""
    b = em.b
    inv = b.not_(valid)
    for j0 in range(g.start, g.stop, w):
        if not all(is_const_false(masks[j]) for j in range(j0, j0 + w)):
            ok = predicated_store(b, ptrs[j0], vals[j0:j0 + w], valid)
            assert ok  # _predicable
    for j in g:
        m = masks[j]
        if not is_const_false(m):
            j0 = j - (j - g.start) % w  # the piece's first slot: its elements are contiguous
            ok = predicated_store(b, ptrs[j0], [vals[j]], inv if m is None else b.xor(valid, m),
                                  (j - j0) * _elem_bytes(dt))
            assert ok  # _predicable


# ---------------------------------------------------------------- atomics

_RMW_INT = {"atomic_add": ("add", "add"), "atomic_max": ("max", "umax"), "atomic_min": ("min", "umin"),
            "atomic_xchg": ("xchg", "xchg"), "atomic_and": ("and", "and"), "atomic_or": ("or", "or"),
            "atomic_xor": ("xor", "xor")}


def _combine(em: Emitter, name: str, dt: DType, old: ir.Value, v: ir.Value, cmp: ir.Value | None) -> ir.Value:
    """The value an atomic writes, given the old one (register values)."""
    if name == "atomic_add":
        return S.add(em, dt, old, v)
    if name == "atomic_max":
        return S.maximum(em, dt, old, v)
    if name == "atomic_min":
        return S.minimum(em, dt, old, v)
    if name == "atomic_xchg":
        return v
    if name in ("atomic_and", "atomic_or", "atomic_xor"):
        return S.BINARY[name[len("atomic_"):]](em, dt, old, v)
    assert name == "atomic_cas" and cmp is not None
    return em.b.select(em.b.icmp_unsigned("==", old, cmp), v, old)


_LLVM_SCOPE = {"cta": 'syncscope("block") ', "gpu": 'syncscope("device") ', "sys": ""}
_LLVM_ORDER = {"relaxed": ("monotonic", "monotonic"), "acquire": ("acquire", "acquire"),
               "release": ("release", "monotonic"), "acq_rel": ("acq_rel", "acquire")}
"""LLVM (success, failure) orderings of a Triton ``sem``."""
_PTX_OP = {"atomic_add": "add", "atomic_max": "max", "atomic_min": "min", "atomic_xchg": "exch",
           "atomic_and": "and", "atomic_or": "or", "atomic_xor": "xor"}
_PTX_REG = {16: "h", 32: "r", 64: "l"}


def _ptx_atom_type(em: Emitter, name: str, dt: DType) -> str | None:
    """The type suffix of the one PTX ``atom`` that does ``name`` on ``dt``, or None where the
    target has none (8/16-bit integers, bool, float max/min, f16 add before sm_70, bf16 add
    before sm_90): those go through LLVM, which expands them to a compare-and-swap loop."""
    bits = dt.bits
    if dt.is_bool:
        return None
    if name in ("atomic_xchg", "atomic_and", "atomic_or", "atomic_xor"):
        return f"b{bits}" if bits in (32, 64) else None
    if dt.is_float:
        if name != "atomic_add":
            return None
        if bits in (32, 64):
            return f"f{bits}"
        need = 90 if dt.name == "bf16" else 70
        return f"noftz.{dt.name}" if em.sm is not None and em.sm >= need else None
    if bits not in (32, 64):
        return None
    return f"u{bits}" if name == "atomic_add" or dt.is_unsigned else f"s{bits}"


def _atom_asm(em: Emitter, name: str, dt: DType, p: ir.Value, v: ir.Value, ty: str,
              order: tuple[str, str]) -> ir.Value:
    """``atom.global.{scope}.{sem}.{op}.{ty} old, [p], v`` as inline PTX (Triton's spelling); the
    call has side effects and clobbers memory, so LLVM keeps loads and stores on their side."""
    sem, scope = order
    bits = dt.bits
    it = ir.IntType(bits)
    reg = _PTX_REG[bits]
    text = f"atom.global.{scope}.{sem}.{_PTX_OP[name]}.{ty} $0, [$1], $2;"
    fnty = ir.FunctionType(it, [p.type, it])
    bits_in = em.float_bits(v, dt) if dt.is_float else v
    old = em.b.call(ir.InlineAsm(fnty, text, f"={reg},l,{reg},~{{memory}}", side_effect=True), [p, bits_in])
    return em.float_from_bits(old, dt) if dt.is_float else old


def _atomic_gpu(em: Emitter, name: str, dt: DType, p: ir.Value, v: ir.Value, cmp: ir.Value | None,
                order: tuple[str, str] = ("acq_rel", "gpu")) -> ir.Value:
    """One atomic read-modify-write by this thread with ``order`` = (sem, scope); returns the old
    register value."""
    b = em.b
    sem, scope = order
    succ, fail = _LLVM_ORDER[sem]
    succ = _LLVM_SCOPE[scope] + succ
    mv = _stored(em, dt, v)
    if name == "atomic_cas":
        res = b.cmpxchg(p, _stored(em, dt, cmp), mv, succ, fail)
        return _loaded(em, dt, b.extract_value(res, 0))
    if dt.is_float and name in ("atomic_max", "atomic_min"):
        return _cas_loop(em, name, dt, p, v, (succ, fail))
    ty = _ptx_atom_type(em, name, dt)
    if ty is not None:
        return _atom_asm(em, name, dt, p, v, ty, order)
    if dt.is_float:
        op = {"atomic_add": "fadd", "atomic_xchg": "xchg"}[name]
    else:
        signed, unsigned = _RMW_INT[name]
        op = unsigned if dt.is_unsigned or dt.is_bool else signed
    old = b.atomic_rmw(op, p, mv, succ)
    return _loaded(em, dt, old)


def _cas_loop(em: Emitter, name: str, dt: DType, p: ir.Value, v: ir.Value,
              orders: tuple[str, str] = ("monotonic", "monotonic")) -> ir.Value:
    """Float max/min: compare-and-swap until no other thread wrote in between; ``orders`` are the
    LLVM (success, failure) orderings of the ``cmpxchg`` (the first read is only a guess)."""
    b = em.b
    it = ir.IntType(dt.bits)
    first = b.load(p, typ=it)
    pre = b.block
    loop = em.new_block("cas.loop")
    done = em.new_block("cas.done")
    b.branch(loop)
    b.position_at_end(loop)
    old_bits = b.phi(it)
    old_bits.add_incoming(first, pre)
    old = em.float_from_bits(old_bits, dt)
    new = _combine(em, name, dt, old, v, None)
    res = b.cmpxchg(p, old_bits, em.float_bits(new, dt), *orders)
    seen = b.extract_value(res, 0)
    ok = b.extract_value(res, 1)
    old_bits.add_incoming(seen, b.block)
    b.cbranch(ok, done, loop)
    b.position_at_end(done)
    return old


def _atomic_serial(em: Emitter, name: str, dt: DType, p: ir.Value, v: ir.Value, cmp: ir.Value | None) -> ir.Value:
    """Host: the read-modify-write as plain load/compute/store (one lane at a time, single thread)."""
    b = em.b
    mt = em.mem_type(dt)
    old = _loaded(em, dt, b.load(p, typ=mt))
    b.store(_stored(em, dt, _combine(em, name, dt, old, v, cmp)), p)
    return old


def _guarded(em: Emitter, mask: ir.Value | None, rt: ir.Type, body) -> ir.Value:
    """``body()`` under a scalar predicate; 0 when the predicate is false."""
    if is_const_true(mask):
        return body()
    b = em.b
    pre = b.block
    with b.if_then(mask):
        r = body()
        then = b.block
    phi = b.phi(rt)
    phi.add_incoming(r, then)
    phi.add_incoming(em.const(rt, 0), pre)
    return phi


def lower_atomic(lw, op: Operation) -> list[LV]:
    order = (op.attrs.get("sem", "acq_rel"), op.attrs.get("scope", "gpu"))
    return _lower_atomic(lw, op, order)


def _lower_atomic(lw, op: Operation, order: tuple[str, str]) -> list[LV]:
    em = lw.em
    name = op.op
    pt = op.operands[0].type
    dt = pt.dtype
    rt = em.reg_type(dt)
    t = op.results[0].type
    is_cas = name == "atomic_cas"
    if em.is_host:
        serial = _atomic_serial
    else:
        def serial(em, name, dt, p, v, cmp):
            return _atomic_gpu(em, name, dt, p, v, cmp, order)
    if pt.is_scalar:
        p = lw.uniform(lw.get(op.operands[0]))
        if is_cas:
            cmp, v, mask = lw.uniform(lw.get(op.operands[1])), lw.uniform(lw.get(op.operands[2])), None
        else:
            v = lw.uniform(lw.get(op.operands[1]))
            cmp = None
            mask = lw.uniform(lw.get(op.operands[2])) if len(op.operands) > 2 else None
        if em.is_host:
            _check(lw, op, [p], [mask], "updates")
            return [LV(t, u=_guarded(em, mask, rt, lambda: serial(em, name, dt, p, v, cmp)))]
        return [LV(t, u=_broadcast_from_thread0(lw, dt, lambda: _guarded(em, mask, rt,
                                                                      lambda: serial(em, name, dt, p, v, cmp))))]
    lay = lw.layout(pt.shape)
    ptrs = lw.elems(lw.get(op.operands[0]))
    if is_cas:
        cmps = lw.elems(lw.get(op.operands[1]))
        vals = lw.elems(lw.get(op.operands[2]))
        masks = [lay.owned(em, j) for j in range(lay.per)]
    else:
        vals = lw.elems(lw.get(op.operands[1]))
        cmps = [None] * lay.per
        masks = _masks(lw, op, 2)
    if em.is_ptx:
        olds = [_guarded(em, masks[j], rt, lambda j=j: serial(em, name, dt, ptrs[j], vals[j], cmps[j]))
                for j in range(lay.per)]
        return [LV(t, elems=olds)]
    # host: chunk by chunk, lanes in order, the chunk's slots in order = row-major element order
    _check(lw, op, ptrs, masks, "updates")
    n = lay.vec
    mvecs = [m if m is not None else em.const(em.thread_type(I1), 1) for m in masks]

    def body(lanes: list[ir.Value]) -> list[ir.Value]:
        ps, vs, ms = lanes[:n], lanes[n:2 * n], lanes[2 * n:3 * n]
        cs = lanes[3 * n:] if is_cas else [None] * n
        return [_guarded(em, ms[j], rt, lambda j=j: serial(em, name, dt, ps[j], vs[j], cs[j])) for j in range(n)]

    olds: list[ir.Value] = []
    for j0 in range(0, lay.per, n):
        sl = slice(j0, j0 + n)
        inputs = list(ptrs[sl]) + list(vals[sl]) + mvecs[sl] + (list(cmps[sl]) if is_cas else [])
        olds.extend(em.lane_loop(inputs, [rt] * n, body))
    return [LV(t, elems=olds)]


def _broadcast_from_thread0(lw, dt: DType, compute) -> ir.Value:
    """GPU: thread 0 runs ``compute()``; every thread gets its result through shared memory."""
    em = lw.em
    b = em.b
    mt = em.mem_type(dt)
    em.smem_begin_write()
    em.smem_reserve(max(1, dt.bits // 8))
    base = em.smem_array(0)
    is0 = b.icmp_unsigned("==", em.tid(), I32(0))
    with b.if_then(is0):
        r = compute()
        b.store(_stored(em, dt, r), base)
    em.barrier()
    v = b.load(base, typ=mt)
    em.smem_dirty = True
    return _loaded(em, dt, v)


HANDLERS = {
    "load": read_only(lower_load),
    "store": lower_store,
    "atomic_add": lower_atomic,
    "atomic_max": lower_atomic,
    "atomic_min": lower_atomic,
    "atomic_xchg": lower_atomic,
    "atomic_and": lower_atomic,
    "atomic_or": lower_atomic,
    "atomic_xor": lower_atomic,
    "atomic_cas": lower_atomic,
}
