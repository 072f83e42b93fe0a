"""Software pipelining of the tensor-core K loop: ``cp.async`` into multi-stage shared memory.

Pattern (the tutorial matmul; on top of :mod:`eggpu.codegen.mma_carry`)::

    for k ...:
        a = load(pa(k, s), ma(k, s), oa(k, s))     # f16/bf16 blocks, top-level ops of the body
        b = load(pb(k, s), mb(k, s), ob(k, s))
        acc = dot(a, b, acc)                       # the register-carried mma accumulator
        s = next(k, s)                             # e.g. a_ptrs += BK (optional)

where the loads' results feed only the dot, the loop body writes no memory (prefetching a later
iteration's data would otherwise read stale values), and the pointer, mask and ``other`` of both
loads come from a *slice* of pure, region-free top-level ops of the body that depends only on
the induction variable, loop invariants and carried values whose own updates are in the slice
(``s`` above; never the accumulator). With ``num_stages = S >= 2`` the loop becomes:

- prologue: for ``d = 0 .. S-2``: the slice is evaluated for iteration ``d`` (from the carried
  values' initial state, advanced ``d`` times) and, when ``d < trips``, both tiles are copied
  into stage buffer ``d``; one ``cp.async.commit_group`` per ``d`` (empty when nothing was
  issued). The slice state of iteration ``S-1`` becomes extra loop-carried values;
- iteration ``k``: ``cp.async.wait_group S-2`` (this thread's copies of iteration ``k`` are
  complete), ``bar.sync`` (everybody's are visible, and everybody has finished reading stage
  ``(k-1) % S``), then the copies of iteration ``k+S-1`` (when it exists) into stage ``(k+S-1)
  % S`` and a commit, then ``ldmatrix`` + ``mma`` from stage ``k % S`` (no staging stores and
  no barrier of their own); the body's own loads are not emitted;
- after the loop: ``cp.async.wait_group 0``.

The stage offsets read and written are carried values (no ``urem``).

wgmma (:mod:`eggpu.codegen.lower_wgmma`, ``b`` MN-major): the tiles go to the descriptors'
layouts (:func:`_dest_index`), stages are 1024-byte aligned multiples of 1024 bytes, and the
copies of iteration ``k+S-1`` come *after* the wgmmas of iteration ``k``, their commit,
``wgmma.wait_group 1`` and a second ``bar.sync`` (the stage they overwrite was read by the
group of iteration ``k-1``, now complete in every warpgroup), as in Triton's sm_90a PTX; the
accumulator's last group is waited for after the loop (:class:`~eggpu.codegen.mma_carry.MmaCarry`).
When every copy is one ``cp.async`` with a ``src-size`` select, the ``k+S-1 < trips`` test is
folded into that select instead of a branch, and the pieces' coordinates are computed before
the loop.

Copies (GPU). When the address analysis proves 8-element pieces contiguous and 16-byte aligned
and the loads' pointer, mask and ``other`` are functions of the coordinates (addresses computed
from the induction variable), the tile is cut into 16-byte pieces and thread ``t`` copies
pieces ``t, t+NT, ...`` with one ``cp.async.cg.shared.global`` each, pointer and mask evaluated
at the piece (:func:`_copy_tile_pieces`). Carried per-thread values (``a_ptrs += BK``) exist only
in the blocked layout, which gives a thread chunks of ``V = 4`` consecutive elements (8 bytes):
then chunk
``n`` of lanes ``2i`` and ``2i+1`` is one piece copied by one ``cp.async.cg.shared.global`` of
16 bytes: by the even lane for even ``n``, by the odd lane (from its pointer minus 4 elements)
for odd ``n``, so every lane issues one copy per two chunks (the partner's validity comes by a
``shfl.bfly``); with a mask that is constant on each
8-element piece and a zero ``other`` the copy is unconditional with ``src-size`` 0 or 16 (the
hardware zero-fills); otherwise a pair with any masked-off element is loaded element by element
(``ld.global`` + ``st.shared``, visible after the barrier). With 4-element pieces proven, each
chunk is one ``cp.async.ca`` of 8 bytes. The destination is the swizzled element index the
register staging uses (:func:`eggpu.codegen.lower_mma.swizzled_index`), so ``ldmatrix`` is
unchanged.

Addresses: a load's pointer split by :mod:`eggpu.codegen.mma_addr` (``a_ptr + rm * K + (k +
rk)``) has each piece's loop-invariant part computed once before the loop; a copy adds the
iteration's offsets to it (the same offsets, so the same addresses), in both modes. A zero-filling
piece copy's ``src-size`` comes from an opaque ``selp`` (:func:`_src_size`), so LLVM keeps the
mask conjunction one predicate instead of a chain of selects.

Host (``run_cpu``): the same schedule, stage buffers and swizzle (and the per-thread piece
distribution of :func:`_copy_tile_pieces`; in the lane-pair scheme each lane copies its own
chunks); a ``cp.async`` is a copy at
issue (masked-off elements take ``other``), ``wait_group`` and ``bar.sync`` are no-ops (the
data is already there, and the lanes run in lock-step). The bounds checks run at issue, only for
iterations that exist.

Shared memory: the stage buffers (``S x (a tile + b tile)``, 128-byte aligned stages) sit above
every other shared-memory use of the prologue and the body (reductions, layout changes), so
those never touch a buffer a copy may still be writing: the offset is a constant patched once
the body is lowered. Over the target's limit is a CodegenError naming the kernel.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass, field

from llvmlite import ir

from eggpu.ir.errors import CodegenError
from eggpu.ir.graph import Block, Operation, Value
from eggpu.ir.ops import OPS
from eggpu.ir.targets import DEFAULT_NUM_STAGES

from .analysis import chunk_uniform, run_of, run_vector_width, vector_width
from .emitter import I1, I8, I32, VOID, Emitter, is_const_false, is_const_true
from .layout import LV, and_masks
from .lower_mma import store_staged, swizzled_index
from .lower_wgmma import ALIGN as WG_ALIGN
from .lower_wgmma import kmajor_index, mn_major, operand_offsets
from .mma_addr import Split, address, piece_base, split_pointer
from .mma_carry import MmaCarry, _uses

STAGE_ALIGN = 128
HOIST_ADDRESSES = True
"""Whether the invariant part of the copies' global addresses is computed before the loop
(:mod:`eggpu.codegen.mma_addr`); a switch for measuring it."""


@dataclass
class Pipeline:
    """One pipelined K loop (see the module docstring)."""

    carry: MmaCarry
    loads: tuple[Operation, Operation]
    slice_ops: list[Operation]
    state: list[int]  # indices (into region.args[1:]) of the carried values the slice advances
    stages: int
    widths: tuple[int, int]  # elements per cp.async of a and b: 8 (16 B) or 4 (8 B)
    a_bytes: int
    stage_bytes: int
    wgmma: bool = False  # wgmma's operand layouts and schedule (module docstring)
    offset: ir.Constant = field(default_factory=lambda: ir.Constant(I32, 0))
    base: ir.Value | None = None
    pieces: dict[int, list[tuple]] = field(default_factory=dict)  # per load: piece_coords, before the loop
    splits: dict[int, Split] = field(default_factory=dict)  # per load: its split pointer (mma_addr)
    bases: dict[int, list[ir.Value]] = field(default_factory=dict)  # per load: each piece's invariant P
    dep_lvs: dict[int, list[LV]] = field(default_factory=dict)  # per load: the last _ahead's iv-dependent offsets
    saved_smem: int = 0

    # ------------------------------------------------------------ lowering hooks (lowering._for)

    def prologue(self, lw, op: Operation, lo: ir.Value, step: ir.Value, trips: ir.Value,
                 inits: list[LV]) -> list[ir.Value]:
        """Before the loop: issue stages ``0 .. S-2``; returns the slice state of iteration ``S-1``, flat."""
        em: Emitter = lw.em
        b = em.b
        em.smem_begin_write()  # earlier shared-memory reads (e.g. the accumulator's conversion)
        self.saved_smem = em.smem_bytes
        em.smem_bytes = 0  # measure what the prologue and the body use below the stage buffers
        self.base = b.gep(em.smem_array(0), [self.offset], source_etype=I8)
        if self.wgmma:
            em.smem_align(WG_ALIGN)
        plan = self.carry.plan
        for ld, rows, cols, w in zip(self.loads, (plan.M, plan.K), (plan.K, plan.N), self.widths):
            if (em.is_ptx and self.wgmma) or id(ld) in self.splits:  # loop-invariant piece coordinates, hoisted
                self.pieces[id(ld)] = piece_coords(em, rows, cols, w, _dest_index(rows, cols, self.wgmma))
        state = {i: inits[i] for i in self.state}
        if self.splits:  # each piece's invariant address part, once (mma_addr)
            self._ahead(lw, op, lo, state, inside=lambda: self._piece_bases(lw))
        for d in range(self.stages - 1):
            iv = b.add(lo, b.mul(I32(d), step))
            operands, state = self._ahead(lw, op, iv, state)
            self._issue(lw, operands, I32(d * self.stage_bytes), b.icmp_unsigned("<", I32(d), trips))
            _commit(em)
        # the byte offsets of stage k % S (read) and (k + S - 1) % S (written), carried (no urem)
        return lw._flatten([state[i] for i in self.state]) + [I32(0), I32((self.stages - 1) * self.stage_bytes)]

    def begin(self, lw, op: Operation, k: ir.Value, lo: ir.Value, step: ir.Value, trips: ir.Value,
              phis: list[ir.Value]) -> list[ir.Value]:
        """At the top of the body (iteration ``k``): wait, barrier, issue iteration ``k+S-1``,
        point the dot at stage ``k % S``; returns the advanced slice state, flat."""
        em: Emitter = lw.em
        b = em.b
        S = self.stages
        region = op.regions[0]
        types = [region.args[1 + i].type for i in self.state]
        *phis, use, fill = phis
        state = dict(zip(self.state, lw._rebuild(types, list(phis))))
        _wait(em, S - 2)
        em.barrier()
        j = b.add(k, I32(S - 1))
        iv = b.add(lo, b.mul(j, step))
        operands, state = self._ahead(lw, op, iv, state)

        def issue() -> None:
            self._issue(lw, operands, fill, b.icmp_unsigned("<", j, trips))
            _commit(em)

        if self.wgmma:  # after the wgmmas of iteration k, their wait_group 1 and a barrier
            def after() -> None:
                em.barrier()
                issue()
            self.carry.after_mma = after
        else:
            issue()
        if self.wgmma:  # byte offsets from the buffer's start: the descriptors' 32-bit arithmetic
            off_a = b.add(self.offset, use)
            self.carry.staged = (off_a, b.add(off_a, I32(self.a_bytes)))
        else:
            base_a = b.gep(self.base, [use], source_etype=I8)
            self.carry.staged = (base_a, b.gep(base_a, [I32(self.a_bytes)], source_etype=I8))
        for ld in self.loads:
            lw.op_overrides[id(ld)] = self._lower_load
        return lw._flatten([state[i] for i in self.state]) + [_next_stage(b, use, S, self.stage_bytes),
                                                              _next_stage(b, fill, S, self.stage_bytes)]

    def end(self, lw) -> None:
        """Leave the body."""
        for ld in self.loads:
            lw.op_overrides.pop(id(ld), None)
        self.carry.staged = None
        self.carry.after_mma = None

    def finish(self, lw) -> None:
        """After the loop: no copy in flight; place the stage buffers above what the prologue
        and body used (CodegenError when the total is over the target's limit)."""
        em: Emitter = lw.em
        _wait(em, 0)
        em.smem_dirty = True
        align = WG_ALIGN if self.wgmma else STAGE_ALIGN
        below = -(-em.smem_bytes // align) * align
        self.offset.constant = below
        total = below + self.stages * self.stage_bytes
        limit = lw.smem_limit
        if total > limit:
            raise CodegenError(
                f"{lw.fn.name}: the software-pipelined tensor-core K loop needs {total} bytes of shared memory "
                f"(num_stages={self.stages} x {self.stage_bytes} bytes per stage"
                + (f" above {below} bytes of other use" if below else "")
                + f"), more than the {limit} bytes a CTA may use on this target; compile with a smaller "
                f"num_stages (or 1: no pipelining) or use smaller tiles")
        em.smem_bytes = max(self.saved_smem, total)

    def _lower_load(self, lw, op: Operation) -> list[LV]:
        def fail(_coords):
            raise lw.error("internal: a pipelined load (copied by cp.async into shared memory) was read "
                           "outside its dot")
        return [LV(op.results[0].type, fn=fail)]

    # ------------------------------------------------------------ the slice, ahead of time

    def _piece_bases(self, lw) -> None:
        """In the slice's scope: each split load's per-piece invariant address ``P``
        (:func:`eggpu.codegen.mma_addr.piece_base`); a load whose parts are not all lazy or
        uniform (functions of the coordinates) keeps its whole expression."""
        for ld in self.loads:
            split = self.splits.get(id(ld))
            if split is None:
                continue
            if not all(lw.get(t.value).is_lazy or lw.get(t.value).is_uniform for t in split.terms):
                del self.splits[id(ld)]
                continue
            pointee = ld.operands[0].type.dtype
            self.bases[id(ld)] = [piece_base(lw, split, pointee, r, c) for _o, r, c, _i in self.pieces[id(ld)]]

    def _ahead(self, lw, op: Operation, iv: ir.Value, state: dict[int, LV], inside=None):
        """Evaluate the slice for the iteration whose induction variable is ``iv`` and whose
        carried values are ``state``: ``(per load [ptr, mask|None, other|None], next state)``.
        Operands that are all lazy or uniform stay LVs (functions of the coordinates, evaluated
        where a copy needs them; nothing is cached); otherwise they and the next state are
        materialized here, in the pushed scope, before any branch (the bindings are restored)."""
        region = op.regions[0]
        term = region.terminator
        from .lower_ops import TABLE

        touched: list[Value] = [*region.args] + [r for s in self.slice_ops for r in s.results]
        saved = {id(v): lw.env.get(id(v)) for v in touched}
        lw._push_scope()
        try:
            lw.bind(region.args[0], LV(region.args[0].type, u=iv))
            for i, lv in state.items():
                lw.bind(region.args[1 + i], lv)
            for sop in self.slice_ops:
                lw.current_op = sop
                for r, lv in zip(sop.results, TABLE[sop.op](lw, sop)):
                    lw.bind(r, lv)
            operands = []
            for ld in self.loads:
                lvs = [lw.get(v) for v in ld.operands]
                if all(lv.is_lazy or lv.is_uniform for lv in lvs):
                    operands.append((lvs + [None, None])[:3])  # evaluated at the copy's coordinates
                    split = self.splits.get(id(ld))
                    if split is not None:  # this iteration's iv-dependent offsets (mma_addr)
                        self.dep_lvs[id(ld)] = [lw.get(t.value) for t in split.deps]
                else:
                    operands.append(([lw.elems(lv) for lv in lvs] + [None, None])[:3])
            if inside is not None:
                inside()
            nxt = {}
            for i in self.state:
                lv = lw.get(term.operands[i])
                t = lv.type
                nxt[i] = LV(t, u=lw.uniform(lv)) if t.is_scalar else LV(t, elems=list(lw.elems(lv)))
        finally:
            lw._pop_scope()
            lw.current_op = op
            for v in touched:
                old = saved[id(v)]
                if old is None:
                    lw.env.pop(id(v), None)
                else:
                    lw.env[id(v)] = old
        return operands, nxt

    # ------------------------------------------------------------ the copies

    def _issue(self, lw, operands, stage_off: ir.Value, in_range: ir.Value) -> None:
        """Copy both tiles of one iteration into the stage at byte ``stage_off`` when ``in_range``."""
        em: Emitter = lw.em
        b = em.b
        base_a = b.gep(self.base, [stage_off], source_etype=I8)
        base_b = b.gep(base_a, [I32(self.a_bytes)], source_etype=I8)
        plan = self.carry.plan
        # GPU, every copy one cp.async whose src-size is a select: fold in_range into it (a copy
        # for an iteration that does not exist reads nothing and zero-fills a stage nobody reads),
        # no branch (ptxas then keeps the loop straight and hoists the invariant address parts)
        # (wgmma only: on mma_sync, with the hoisted address parts and _src_size, it lengthens the
        # loop, 161 -> 169 SASS at 128x128x32 sm_80, and costs registers, 236 -> 242)
        guard = in_range if em.is_ptx and self.wgmma and all(
            isinstance(o[0], LV) and _pieces_fast(lw, ld, o[1], o[2], w)
            for ld, o, w in zip(self.loads, operands, self.widths)) else None
        with contextlib.nullcontext() if guard is not None else b.if_then(in_range):
            for ld, ops_, dest, rows, cols, w in zip(self.loads, operands, (base_a, base_b), (plan.M, plan.K),
                                                     (plan.K, plan.N), self.widths):
                index = _dest_index(rows, cols, self.wgmma)
                if isinstance(ops_[0], LV):
                    _copy_tile_pieces(lw, ld, *ops_, dest, cols, w, index, self.pieces.get(id(ld)), guard,
                                      self._sources(lw, ld))
                else:
                    _copy_tile(lw, ld, *ops_, dest, cols, w, index)


    def _sources(self, lw, ld: Operation) -> list[ir.Value] | None:
        """Each piece's source address for the iteration ``_ahead`` evaluated last, when ``ld``'s
        pointer is split: ``P`` (before the loop) plus the iteration's offsets (mma_addr)."""
        bases = self.bases.get(id(ld))
        if bases is None:
            return None
        split, dep_lvs, pointee = self.splits[id(ld)], self.dep_lvs[id(ld)], ld.operands[0].type.dtype
        return [address(lw, split, dep_lvs, pointee, p, r, c) for p, (_o, r, c, _i) in zip(bases, self.pieces[id(ld)])]


def _next_stage(b: ir.IRBuilder, off: ir.Value, stages: int, stage_bytes: int) -> ir.Value:
    """The byte offset of the stage after the one at ``off`` (the ring wraps to 0)."""
    nxt = b.add(off, I32(stage_bytes))
    return b.select(b.icmp_unsigned("==", nxt, I32(stages * stage_bytes)), I32(0), nxt)


def _dest_index(rows: int, cols: int, wgmma: bool):
    """``index(em, r, c)``: the element index of ``[r, c]`` of a ``[rows, cols]`` tile in its
    stage: the ldmatrix swizzle of mma_sync (:func:`eggpu.codegen.lower_mma.swizzled_index`), or
    wgmma's descriptor layout (:func:`eggpu.codegen.lower_wgmma.kmajor_index`: ``a`` K-major and
    ``b`` MN-major are the same arithmetic on ``[M, K]`` and ``[K, N]``). Both keep every
    8-element piece whose first column is a multiple of 8 in one 16-byte chunk."""
    if wgmma:
        return lambda em, r, c: kmajor_index(em, r, c, rows, cols)
    return lambda em, r, c: swizzled_index(em, r, c, cols)


def _copy_tile_pieces(lw, ld: Operation, ptr: LV, mask: LV | None, other: LV | None, dest: ir.Value,
                      cols: int, w: int, index, pieces_at=None, guard: ir.Value | None = None,
                      srcs: list[ir.Value] | None = None) -> None:
    """Operands that are functions of the coordinates (lazy or uniform): the tile is cut in
    pieces of ``w`` elements (16 or 8 bytes), piece ``q*NT + t`` copied by thread ``t`` with one
    ``cp.async`` (as Triton distributes them), its pointer, mask and ``other`` evaluated at the
    piece's coordinates; a piece with masked-off elements (unless ``src-size`` 0 can zero-fill
    it) is loaded element by element. The host runs the same distribution and coordinates, a
    ``cp.async`` being a copy at issue of the piece's elements (with ``src-size`` 0, i.e. the
    piece's first mask element false, zeros); its bounds check covers the tile's active
    elements in the blocked layout first (the same set of elements). ``srcs``: the pieces'
    source addresses from the split pointer (both modes; a piece is contiguous, so its element
    ``i`` is at ``src + i``)."""
    em: Emitter = lw.em
    b = em.b
    t = ld.results[0].type
    rows_n = t.shape[0]
    mt = em.mem_type(t.dtype)
    fast = _pieces_fast(lw, ld, mask, other, w)

    def at(lv: LV | None, r: ir.Value, c: ir.Value) -> ir.Value | None:
        return None if lv is None else lw.at(lv, [r, c])

    if em.is_host and lw.bounds is not None:
        lay = lw.layout(t.shape)
        coords = [lay.coords(em, j) for j in range(lay.per)]
        lw.bounds.check(lw, ld, [lw.at(ptr, xy) for xy in coords],
                        [and_masks(em, lay.owned(em, j), None if mask is None else lw.at(mask, xy))
                         for j, xy in enumerate(coords)], t.dtype.bits // 8, "reads")
    for n, (owned, r, c, idx) in enumerate(pieces_at or piece_coords(em, rows_n, cols, w, index)):
        if em.is_host:
            m0 = at(mask, r, c) if fast else None
            for i in range(w):
                ci = b.add(c, em.k(c, i)) if i else c
                m = and_masks(em, owned, m0 if fast else at(mask, r, ci))
                p = at(ptr, r, ci) if srcs is None else b.gep(srcs[n], [em.k(c, i)], source_etype=mt)
                v = em.gload(p, mt, m, at(other, r, ci))
                em.smem_store(dest, mt, b.add(idx, em.k(idx, i)) if i else idx, v, owned)
            continue
        dst = b.gep(dest, [idx], source_etype=mt)
        src = at(ptr, r, c) if srcs is None else srcs[n]
        if fast:
            valid = and_masks(em, guard, and_masks(em, owned, at(mask, r, c)))
            with contextlib.nullcontext() if owned is None else b.if_then(owned):
                whole = valid is None or is_const_true(valid)
                _cp_async(em, dst, src, 2 * w, I32(2 * w) if whole else _src_size(em, valid, 2 * w))
            continue
        cs = [c] + [b.add(c, I32(i)) for i in range(1, w)]
        ms = [at(mask, r, ci) for ci in cs]
        valid = owned
        for m in ms:
            valid = and_masks(em, valid, m)
        if valid is None or is_const_true(valid):
            _cp_async(em, dst, src, 2 * w)
            continue
        with b.if_else(valid) as (then, otherwise):
            with then:
                _cp_async(em, dst, src, 2 * w)
            with otherwise:  # an unowned piece (beyond the tile) stores nothing
                for i, ci in enumerate(cs):
                    v = em.gload(at(ptr, r, ci), mt, and_masks(em, owned, ms[i]), at(other, r, ci))
                    em.smem_store(dest, mt, b.add(idx, I32(i)), v, owned)


def _pieces_fast(lw, ld: Operation, mask: LV | None, other: LV | None, w: int) -> bool:
    """Whether every piece of ``ld`` is one ``cp.async`` with ``src-size`` 0 or full (a zero
    ``other`` and a mask constant on each ``w``-element piece)."""
    zero_other = other is None or (other.is_uniform and _is_plus_zero(other.u))
    return zero_other and (mask is None or chunk_uniform(ld.operands[1], w, lw.facts))


def piece_coords(em: Emitter, rows: int, cols: int, w: int, index) -> list[tuple]:
    """``(owned or None, r, c, stage element index)`` of each piece of ``w`` elements a thread
    copies of a ``[rows, cols]`` tile (pieces ``t, t+NT, ...``): functions of ``tid`` only, so a
    pipelined loop computes them once, before the loop (the light LLVM pipeline has no LICM)."""
    b = em.b
    tid = em.tid()
    pieces = rows * cols // w
    out = []
    for q in range(-(-pieces // em.nt)):
        flat = b.mul(b.add(tid, em.k(tid, q * em.nt)), em.k(tid, w))
        owned = None if (q + 1) * em.nt <= pieces else b.icmp_unsigned("<", flat, em.k(flat, pieces * w))
        r = b.udiv(flat, em.k(flat, cols))
        c = b.urem(flat, em.k(flat, cols))
        out.append((owned, r, c, index(em, r, c)))
    return out


def _copy_tile(lw, ld: Operation, ptrs, masks_in, others, dest: ir.Value, cols: int, w: int, index) -> None:
    """One tile ``global -> shared`` at the swizzled indices (see the module docstring)."""
    em: Emitter = lw.em
    b = em.b
    t = ld.results[0].type
    lay = lw.layout(t.shape)
    mt = em.mem_type(t.dtype)
    masks = [and_masks(em, lay.owned(em, j), masks_in[j] if masks_in is not None else None) for j in range(lay.per)]
    if others is None:
        others = [None] * lay.per
    if em.is_host:
        if lw.bounds is not None:
            lw.bounds.check(lw, ld, ptrs, masks, t.dtype.bits // 8, "reads")
        vals = [em.gload(ptrs[j], mt, masks[j], others[j]) for j in range(lay.per)]
        idxs = [(index(em, *lay.coords(em, j)), lay.owned(em, j)) for j in range(lay.per)]
        store_staged(em, dest, mt, 1, idxs, vals)
        return
    V = lay.vec
    zero_other = all(o is None or _is_plus_zero(o) for o in others)  # what src-size 0 fills in
    fast = (w == 8 and zero_other and lay.all_owned
            and (len(ld.operands) < 2 or chunk_uniform(ld.operands[1], 8, lw.facts)))
    chunks = []  # per chunk: (first slot, swizzled index, validity)
    for j0 in range(0, lay.per, V):
        r, c = lay.coords(em, j0)
        valid = None
        for j in range(j0, j0 + (1 if fast else V)):  # fast: the mask is constant on the 8-element piece
            valid = and_masks(em, valid, masks[j])
        chunks.append((j0, index(em, r, c), valid))

    def sync_copy(j0: int, idx: ir.Value) -> None:
        for i in range(V):
            v = em.gload(ptrs[j0 + i], mt, masks[j0 + i], others[j0 + i])
            em.smem_store(dest, mt, b.add(idx, I32(i)), v, lay.owned(em, j0 + i))

    if w == 8:
        _copy_pairs(em, chunks, ptrs, dest, mt, fast, sync_copy)
        return
    for j0, idx, valid in chunks:
        dst = b.gep(dest, [idx], source_etype=mt)
        if is_const_false(valid):
            sync_copy(j0, idx)
        elif valid is None or is_const_true(valid):
            _cp_async(em, dst, ptrs[j0], 8)
        else:
            with b.if_else(valid) as (then, otherwise):
                with then:
                    _cp_async(em, dst, ptrs[j0], 8)
                with otherwise:
                    sync_copy(j0, idx)


def _copy_pairs(em: Emitter, chunks, ptrs, dest: ir.Value, mt: ir.Type, fast: bool, sync_copy) -> None:
    """16-byte copies of lane pairs: the 8 elements of chunk ``n`` of lanes ``2i, 2i+1`` are one
    contiguous, 16-byte aligned piece (global and shared). Of two consecutive chunks ``n, n+1``
    the even lane copies chunk ``n``'s piece (from its own pointer) and the odd lane chunk
    ``n+1``'s (from its own pointer minus 4 elements), so every lane issues one ``cp.async`` per
    two chunks. A piece is copied when all its 8 elements are valid (the partner's validity by
    ``shfl.bfly``); otherwise both lanes load their own chunk element by element. ``fast``: the
    validity is the same on the piece and masked-off elements are +0: ``src-size`` 0 zero-fills."""
    b = em.b
    even = b.icmp_unsigned("==", b.and_(em.tid(), I32(1)), I32(0))

    def piece_valid(valid):
        if valid is None or is_const_true(valid):
            return None
        if fast:
            return valid
        vi = b.zext(valid, I32)
        return b.icmp_unsigned("!=", b.and_(vi, em.shfl_xor(vi, 1)), I32(0))

    def at(j0, idx, back: int):
        p = ptrs[j0] if not back else b.gep(ptrs[j0], [I32(-back)], source_etype=mt)
        d = b.gep(dest, [idx if not back else b.sub(idx, I32(back))], source_etype=mt)
        return p, d

    for n in range(0, len(chunks), 2):
        (j0, idx0, v0) = chunks[n]
        pv0 = piece_valid(v0)
        if n + 1 < len(chunks):
            (j1, idx1, v1) = chunks[n + 1]
            pv1 = piece_valid(v1)
            s0, d0 = at(j0, idx0, 0)
            s1, d1 = at(j1, idx1, 4)
            src, dst = b.select(even, s0, s1), b.select(even, d0, d1)
            mine = None if pv0 is None and pv1 is None else b.select(
                even, pv0 if pv0 is not None else ir.Constant(I1, 1), pv1 if pv1 is not None else ir.Constant(I1, 1))
            lanes = [(j0, idx0, pv0), (j1, idx1, pv1)]
        else:  # an odd last chunk: the even lane copies it
            src, dst = at(j0, idx0, 0)
            mine = pv0
            lanes = [(j0, idx0, pv0)]
        if fast:
            size = I32(16) if mine is None else b.select(mine, I32(16), I32(0))
            if len(lanes) == 2:
                _cp_async(em, dst, src, 16, size)
            else:
                with b.if_then(even):
                    _cp_async(em, dst, src, 16, size)
            continue
        go = even if len(lanes) == 1 else None
        go = mine if go is None else (go if mine is None else b.and_(go, mine))
        if go is None:
            _cp_async(em, dst, src, 16)
        else:
            with b.if_then(go):
                _cp_async(em, dst, src, 16)
        for j, idx, pv in lanes:
            if pv is not None:
                with b.if_then(b.not_(pv)):
                    sync_copy(j, idx)


def _is_plus_zero(v: ir.Value) -> bool:
    """A constant whose bits are all zero (+0.0, 0); -0.0 is not (the hardware fills zero bytes)."""
    c = getattr(v, "constant", None)
    return isinstance(v, ir.Constant) and isinstance(c, int | float) and c == 0 and math.copysign(1.0, c) > 0


def _cp_async(em: Emitter, dst: ir.Value, src: ir.Value, nbytes: int, src_size: ir.Value | None = None) -> None:
    """``cp.async.{cg|ca}.shared.global [dst], [src], nbytes[, src_size]`` (GPU)."""
    kind = "cg" if nbytes == 16 else "ca"
    name = f"llvm.nvvm.cp.async.{kind}.shared.global.{nbytes}"
    args = [dst, src]
    if src_size is not None:
        name += ".s"
        args.append(src_size)
    fn = em.declare(name, VOID, [a.type for a in args])
    em.b.call(fn, args)


def _src_size(em: Emitter, valid: ir.Value, nbytes: int) -> ir.Value:
    """``valid ? nbytes : 0`` as a ``cp.async`` ``src-size`` (GPU), through an opaque
    ``selp.b32``: LLVM turns ``select(a & b & c, 16, 0)`` into a chain of selects, which ptxas
    then compares back to a predicate (six instructions per piece at 128x128x32); behind the
    inline asm the conjunction stays one predicate (K loop 178 -> 161 SASS on sm_80). Measured
    against ``cp.async``'s ``ignore-src`` predicate (PTX ISA 7.5+): equal or fewer instructions
    and registers everywhere, and it exists on every target."""
    fnty = ir.FunctionType(I32, [I1])
    return em.b.call(ir.InlineAsm(fnty, f"selp.b32 $0, {nbytes}, 0, $1;", "=r,b"), [valid])


def _commit(em: Emitter) -> None:
    if em.is_ptx:
        em.b.call(em.declare("llvm.nvvm.cp.async.commit.group", VOID, []), [])


def _wait(em: Emitter, n: int) -> None:
    if em.is_ptx:
        em.b.call(em.declare("llvm.nvvm.cp.async.wait.group", VOID, [I32]), [I32(n)])


# ---------------------------------------------------------------- recognition


def plan_pipeline(lw, op: Operation, carries: dict[int, MmaCarry]) -> Pipeline | None:
    """The :class:`Pipeline` of the ``for`` ``op``, or None; a register-carried f16/bf16 dot that
    is not pipelined gets the reason in ``carry.pipeline_note`` (reported in ``ck.report["dot"]``)."""
    for c in carries.values():
        if c.wgmma and not mn_major(c.plan.N):
            c.pipeline_note = (f"not software-pipelined: b is staged K-major for wgmma (N={c.plan.N} is not a multiple "
                               "of 16), a transposed store that cp.async cannot copy")
    cands = [c for c in carries.values() if not c.plan.tf32 and (not c.wgmma or mn_major(c.plan.N))]
    slots = set(carries)
    if not cands:
        return None
    region = op.regions[0]
    asked = getattr(lw, "num_stages", 1)
    S = DEFAULT_NUM_STAGES if asked is None else asked
    why = None
    if S < 2:
        why = f"num_stages={S}"
    elif any(OPS[o.op].has("effect") and o.op != "load" for o in region.walk()):
        why = "the loop body writes memory (prefetching a later iteration could read stale data)"
    for c in cands:
        got = why or _match(lw, region, c, slots)
        stages, fit_note = S, ""
        if not isinstance(got, str) and asked is None:
            stages, fit_note = _fitting_stages(lw, S, got.stage_bytes, WG_ALIGN if got.wgmma else STAGE_ALIGN)
            if stages < 2:
                got = fit_note
        if isinstance(got, str):
            c.pipeline_note = f"not software-pipelined: {got}"
            continue
        c.pipeline_note = (f"software-pipelined: num_stages={stages}{fit_note}, cp.async of "
                           f"{got.widths[0] * 2}/{got.widths[1] * 2} bytes (a/b), {got.stage_bytes} bytes per stage")
        got.stages = c.stages = stages
        for other in cands:
            if other is not c and other.pipeline_note is None:
                other.pipeline_note = "not software-pipelined: one pipelined dot per loop"
        return got
    return None


def _fitting_stages(lw, wanted: int, stage_bytes: int, align: int = STAGE_ALIGN) -> tuple[int, str]:
    """With the default ``num_stages`` (None): the most stages, at most ``wanted``, whose buffers
    fit in the shared memory left on this target (its limit less what is allocated so far), and
    a note saying so when that is fewer than ``wanted`` (below 2: no pipelining). The same
    decision in the PTX and the host build: both plan against the GPU target's limit."""
    room = lw.smem_limit - -(-lw.em.smem_bytes // align) * align
    fits = max(0, room // stage_bytes)
    if fits >= wanted:
        return wanted, ""
    if fits < 2:
        return fits, (f"the default {wanted} stages of {stage_bytes} bytes do not fit in the {lw.smem_limit} "
                      f"bytes of shared memory of this target (nor 2)")
    return fits, (f" (the default {wanted} stages of {stage_bytes} bytes do not fit in the {lw.smem_limit} bytes "
                  f"of shared memory of this target)")


def _match(lw, region: Block, carry: MmaCarry, slots: set[int]) -> Pipeline | str:
    dot, plan = carry.dot, carry.plan
    loads = []
    for v in dot.operands[:2]:
        ld = v.owner
        if not isinstance(ld, Operation) or ld.op != "load" or ld not in region.ops:
            return "the dot's operands are not loads in the loop body"
        if ld.attrs.get("volatile"):  # each element must stay its own ld.volatile
            return "a loaded operand of the dot is a volatile load"
        if len(_uses(region, v)) != 1:
            return "a loaded operand of the dot has another use"
        loads.append(ld)
    got = _slice(region, loads, carry, slots)
    if isinstance(got, str):
        return got
    slice_ops, state = got
    lay_a, lay_b = lw.layout((plan.M, plan.K)), lw.layout((plan.K, plan.N))
    widths = []
    for ld, lay in zip(loads, (lay_a, lay_b)):
        if lay.vec != 4:
            return f"a tile of {lay.numel} elements gives each of the {lw.nt} threads chunks of {lay.vec} (4 needed)"
        w = _proven_width(lw, ld)
        if w < 4:
            return ("the loads are not proven contiguous in 8-byte pieces (cp.async needs them: unit stride "
                    "along the tile's last dimension and aligned rows, e.g. specialize the strides and sizes div16)")
        widths.append(w)
    if carry.wgmma:  # 1024-byte aligned operands (the descriptors' swizzle is on absolute addresses)
        a_bytes, ab = operand_offsets(plan.M, plan.N, plan.K)
        stage = -(-ab // WG_ALIGN) * WG_ALIGN
    else:
        a_bytes = -(-(plan.M * plan.K * 2) // 16) * 16
        stage = -(-(a_bytes + plan.K * plan.N * 2) // STAGE_ALIGN) * STAGE_ALIGN
    pipe = Pipeline(carry, (loads[0], loads[1]), slice_ops, state, 0, (widths[0], widths[1]), a_bytes, stage,
                    carry.wgmma)
    for ld in loads:
        split = split_pointer(region, slice_ops, ld.operands[0]) if HOIST_ADDRESSES else None
        if split is not None:
            pipe.splits[id(ld)] = split
    return pipe


def _slice(region: Block, loads: list[Operation], carry: MmaCarry,
           slots: set[int]) -> tuple[list[Operation], list[int]] | str:
    """The top-level ops of ``region`` the loads' operands need (closed under the carried values
    they read and those values' updates), in program order, and the carried slots involved."""
    term = region.terminator
    top = {id(o) for o in region.ops}
    loads_ids = {id(x) for x in loads}
    args = {id(a): i for i, a in enumerate(region.args)}
    picked: set[int] = set()
    state: set[int] = set()
    work = [v for ld in loads for v in ld.operands]
    while work:
        v = work.pop()
        if id(v) in args:
            i = args[id(v)]
            if i == 0 or i - 1 in state:
                continue
            if term is None or region.args[i].type != term.operands[i - 1].type:
                return "a carried value the addresses need has no yield"
            if i - 1 in slots:
                return "the addresses depend on the accumulator"
            state.add(i - 1)
            work.append(term.operands[i - 1])
            continue
        o = v.owner
        if not isinstance(o, Operation) or id(o) not in top or id(o) in picked:
            continue  # a loop invariant, or already taken
        if id(o) in loads_ids or o is carry.dot or o is carry.add:
            return "the addresses depend on the loaded data or the accumulator"
        if o.regions or not OPS[o.op].is_pure or o.op == "dot":
            return f"the addresses are computed by {o.op!r}, which cannot be evaluated ahead of time"
        picked.add(id(o))
        work.extend(o.operands)
    return [o for o in region.ops if id(o) in picked], sorted(state)


def _proven_width(lw, ld: Operation) -> int:
    """Elements per contiguous, aligned piece of ``ld``'s tile (8, 4 or 1), as
    :func:`eggpu.codegen.lower_memory._width` proves it but for 8-element pieces and in both
    modes (the host executes the GPU's schedule); the align16 assumption is recorded on the GPU."""
    from .lower_memory import ALIGN_ASSUMPTION, PARAM_ALIGN

    ptr = ld.operands[0]
    shape = ptr.type.shape
    size = max(1, ptr.type.dtype.bits // 8)
    fact = lw.facts.get(ptr)
    if fact is not None:
        origin = fact.origin

        def width(align: int, chunk: int) -> int:
            return vector_width(fact, shape, chunk, size, align)
    else:
        run = run_of(ptr, 1, lw.facts) if shape else None
        origin = run.origin if run is not None else None

        def width(align: int, chunk: int) -> int:
            return run_vector_width(ptr, shape, chunk, size, align, lw.facts)
    if origin is None:
        return 1
    stated = max(size, lw.fn.facts.alignment(origin))
    origin_align = max(stated, PARAM_ALIGN if lw.assume_aligned else size)
    for chunk in (8, 4):
        w = width(origin_align, chunk)
        if w >= 4:
            if lw.em.is_ptx and origin_align > stated and width(stated, chunk) < w:
                lw.record_assumption(origin, ALIGN_ASSUMPTION)
            return w
    return 1


__all__ = ["Pipeline", "plan_pipeline"]
