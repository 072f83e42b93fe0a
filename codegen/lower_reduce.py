"""Reductions: ``reduce_sum``, ``reduce_max``, ``reduce_min``, ``reduce_argmax``, ``reduce_argmin``.

Semantics (op table): integer sums wrap; f16/bf16 accumulate in f32 and round once at the end;
max/min are minimumNumber/maximumNumber folds (NaN ignored unless every element is NaN);
arg-reductions return the i32 index of the *first* extreme element, ignoring NaN (-0.0 ties
+0.0; an all-NaN slice gives 0). Every combine used here is associative and commutative
(arg-reductions select the maximum of a total order on ``(value, -index)``), so any reduction
tree gives the same result; only float sums depend on the order.

Float arg-reductions keep NaN out of the combine: an element is lifted to ``(x, i)``, or, when
``x`` is NaN (or the slot is not owned), to the identity ``(-inf, INT32_MAX)`` (``+inf`` for
argmin). Every real element then wins against a NaN one: by value, or on a tie with a real
``-inf`` by its smaller index. The combine is one ordered compare chain, ``b > a or (b == a and
b.index < a.index)``, and two selects; a final index of ``INT32_MAX`` (every element NaN)
becomes 0. This is the op table's result on every input, NaN, -0.0/+0.0 and ties included.

Three strategies:

* **full** (the output has one element): each thread folds its owned elements (unowned slots
  contribute the identity), a warp butterfly with ``shfl_xor`` 16, 8, 4, 2, 1 combines the
  warp, lane 0 of each warp writes its partial to shared memory, and after a barrier every
  thread folds the ``num_warps`` partials in order. The result is a uniform value.
* **rows** (last axis, every layout chunk inside one row and rows tiling one repetition of
  ``NT*V`` elements, ``G = row / V`` lanes per row a power of two): per-chunk fold, butterfly
  over the ``min(G, 32)`` lanes of the row in one warp, then each warp's leader hands its
  partial to the owner of that output element through shared memory, which folds the
  ``G / 32`` partials of a row spanning several warps in warp order (directly, without shared
  memory, when each chunk is a whole row and the thread owns exactly those rows' outputs). A
  row of ``[2, 512]`` over 128 threads (``G = 128``) is 5 shuffles and 4 partials per row, as
  Triton reduces it, instead of the generic strategy's 512-step loop over shared memory.
* **generic** (any axis): the block goes to shared memory; each thread, for each output element
  it owns, loops over the reduced axis.
"""

from __future__ import annotations

from collections.abc import Sequence
from math import prod

from llvmlite import ir

from eggpu.ir.dtypes import DType, f32, i32
from eggpu.ir.graph import Operation

from . import scalar_ops as S
from .emitter import I32, WARP, Emitter
from .layout import LV, ravel, unravel
from .lower_shape import smem_elem, store_to_smem

State = tuple  # (value,) or (value, index)
INT32_MAX = (1 << 31) - 1


class Combiner:
    """The algebra of one reduction kind over one element dtype."""

    def __init__(self, em: Emitter, kind: str, dt: DType):
        self.em = em
        self.kind = kind  # sum, max, min, argmax, argmin
        self.dt = dt
        self.acc = f32 if dt.is_float and dt.bits == 16 else dt
        self.is_arg = kind in ("argmax", "argmin")

    @property
    def acc_type(self) -> ir.Type:
        return self.em.reg_type(self.acc)

    def types(self) -> list[ir.Type]:
        return [self.acc_type, I32] if self.is_arg else [self.acc_type]

    def identity(self, like: ir.Value | None) -> State:
        """The identity state, shaped like ``like`` (None: uniform scalar)."""
        em = self.em
        dt = self.acc

        def k(t: ir.Type, v) -> ir.Value:
            return em.kt(like, t, v) if like is not None else em.const(t, v)

        if self.kind == "sum":
            v = k(self.acc_type, -0.0 if dt.is_float else 0)
        elif dt.is_float and self.is_arg:
            v = k(self.acc_type, float("-inf") if self.kind == "argmax" else float("inf"))
        elif dt.is_float:
            v = k(self.acc_type, float("nan"))  # the identity of minimumNumber/maximumNumber
        elif self.kind in ("max", "argmax"):
            v = k(self.acc_type, dt.min)
        else:
            v = k(self.acc_type, dt.max)
        return (v, k(I32, INT32_MAX)) if self.is_arg else (v,)

    def lift(self, v: ir.Value, index: ir.Value | None) -> State:
        """An element (register value of ``dt``) and its index along the axis, as a state."""
        x = S.wide(self.em, v, self.dt)
        if not self.is_arg:
            return (x,)
        if self.acc.is_float:  # NaN is lifted to the identity (see the module docs)
            b = self.em.b
            nan = b.fcmp_unordered("uno", x, x)
            ident = self.identity(x)
            return (b.select(nan, ident[0], x), b.select(nan, ident[1], index))
        return (x, index)

    def combine(self, a: State, b: State) -> State:
        em = self.em
        bb = em.b
        dt = self.acc
        if self.kind == "sum":
            return (S.add(em, dt, a[0], b[0]),)
        if self.kind == "max":
            return (S.maximum(em, dt, a[0], b[0]),)
        if self.kind == "min":
            return (S.minimum(em, dt, a[0], b[0]),)
        op = ">" if self.kind == "argmax" else "<"
        av, ai = a
        bv, bi = b
        first = bb.icmp_signed("<", bi, ai)
        if dt.is_float:  # no NaN in a state: lift() maps it to the identity
            take = bb.or_(bb.fcmp_ordered(op, bv, av), bb.and_(bb.fcmp_ordered("==", bv, av), first))
        else:
            cmp = bb.icmp_signed if dt.is_signed else bb.icmp_unsigned
            take = bb.or_(cmp(op, bv, av), bb.and_(bb.icmp_unsigned("==", bv, av), first))
        return (bb.select(take, bv, av), bb.select(take, bi, ai))

    def select(self, cond: ir.Value | None, a: State, b: State) -> State:
        """``a`` where ``cond`` else ``b`` (None: ``a``)."""
        if cond is None:
            return a
        return tuple(self.em.b.select(cond, x, y) for x, y in zip(a, b))

    def finish(self, s: State) -> ir.Value:
        """The op's result value from a final state."""
        if self.is_arg:
            if self.acc.is_float:  # only NaN elements (or none owned): the op table says 0
                b = self.em.b
                return b.select(b.icmp_unsigned("==", s[1], self.em.k(s[1], INT32_MAX)), self.em.k(s[1], 0), s[1])
            return s[1]
        return S.narrow(self.em, s[0], self.dt)

    def result_dtype(self) -> DType:
        return i32 if self.is_arg else self.dt


_KIND = {"reduce_sum": "sum", "reduce_max": "max", "reduce_min": "min",
         "reduce_argmax": "argmax", "reduce_argmin": "argmin"}


def _fold(comb: Combiner, states: Sequence[State]) -> State:
    acc = states[0]
    for s in states[1:]:
        acc = comb.combine(acc, s)
    return acc


def _butterfly(comb: Combiner, s: State, width: int) -> State:
    """Combine ``s`` across aligned groups of ``width`` lanes (a power of two <= 32)."""
    k = width // 2
    while k >= 1:
        other = tuple(comb.em.shfl_xor(x, k) for x in s)
        s = comb.combine(s, other)
        k //= 2
    return s


def _thread_partial(lw, comb: Combiner, src: LV, index_of, slots: Sequence[int] | None = None) -> State:
    """Fold of this thread's owned ``slots`` (default: all; identity when it owns none)."""
    em = lw.em
    lay = lw.layout(src.type.shape)
    vals = lw.elems(src)
    states = []
    for j in (range(len(vals)) if slots is None else slots):
        v = vals[j]
        s = comb.lift(v, index_of(j) if comb.is_arg else None)
        owned = lay.owned(em, j)
        if owned is not None:
            s = comb.select(owned, s, comb.identity(v))
        states.append(s)
    return _fold(comb, states)


def reduce_all(lw, comb: Combiner, src: LV) -> ir.Value:
    """Reduce every element of ``src`` (the full strategy); a uniform result."""
    em = lw.em
    lay = lw.layout(src.type.shape)
    if src.u is not None:
        return _reduce_uniform(lw, comb, src, src.type.numel)
    s = _thread_partial(lw, comb, src, lambda j: lay.flat(em, j))
    s = _butterfly(comb, s, min(WARP, lw.nt))
    nw = em.num_warps
    if nw == 1:
        return comb.finish(tuple(em.lane0(x) for x in s))
    b = em.b
    types = comb.types()
    em.smem_begin_write()
    offsets, off = [], 0
    for _ in types:
        offsets.append(off)
        off += nw * 8
    em.smem_reserve(off)
    tid = em.tid()
    lane0 = b.icmp_unsigned("==", b.and_(tid, em.k(tid, WARP - 1)), em.k(tid, 0))
    warp = b.lshr(tid, em.k(tid, 5))
    bases = [em.smem_array(o) for o in offsets]
    for base, t, x in zip(bases, types, s):
        em.smem_store(base, t, warp, x, lane0)
    em.barrier()
    parts = [tuple(em.smem_load_uniform(base, t, I32(w)) for base, t in zip(bases, types)) for w in range(nw)]
    em.smem_dirty = True
    return comb.finish(_fold(comb, parts))


def _reduce_uniform(lw, comb: Combiner, src: LV, count: int) -> ir.Value:
    """A reduction of ``count`` copies of a uniform value."""
    em = lw.em
    if comb.is_arg:
        return I32(0)
    (x,) = comb.lift(src.u, None)
    if comb.kind == "sum" and count > 1:
        if comb.acc.is_float:
            x = S.mul(em, comb.acc, x, em.k(x, float(count)))
        else:
            x = em.b.mul(x, em.k(x, count))
    return comb.finish((x,))


def reduce_axis(lw, op: Operation) -> LV:
    em = lw.em
    src = lw.get(op.operands[0])
    t = op.results[0].type
    shape = src.type.shape
    axis = op.attrs["axis"]
    comb = Combiner(em, _KIND[op.op], src.type.dtype)
    if t.numel == 1:
        return LV(t, u=reduce_all(lw, comb, src))
    if src.u is not None:
        return LV(t, u=_reduce_uniform(lw, comb, src, shape[axis]))
    lay = lw.layout(shape)
    R = shape[axis]
    V = lay.vec
    if axis == len(shape) - 1 and R % V == 0 and lay.stride % R == 0:
        G = R // V
        if G & (G - 1) == 0:  # G divides NT*V / V = NT; a power of two > 32 is whole warps
            return _reduce_rows(lw, comb, src, t, G)
    return _reduce_generic(lw, comb, src, t, axis)


def _reduce_rows(lw, comb: Combiner, src: LV, t, G: int) -> LV:
    """Last-axis reduction when every chunk lies in one row and rows tile a repetition.

    With ``R`` the row length, ``V`` the chunk width and ``R | NT*V``: chunk ``r`` of thread
    ``tid`` lies in row ``r*(NT*V/R) + tid // G`` at columns ``(tid % G)*V + i`` (``G = R/V``
    aligned lanes per row, a power of two). Each chunk is folded and combined over the
    ``L = min(G, 32)`` lanes of the row in its warp; the leader of those lanes writes the
    partial to slot ``row * P + (tid % G) // 32`` of shared memory (``P = G / L`` partials per
    row: 1 unless a row spans several warps), and the owner of each output element folds its
    row's ``P`` slots in order. Any grouping is exact for the combines here (module docs).
    """
    em = lw.em
    b = em.b
    lay = lw.layout(src.type.shape)
    V = lay.vec
    tid = em.tid()
    col0 = b.mul(b.and_(tid, em.k(tid, G - 1)), em.k(tid, V)) if G > 1 else em.k(tid, 0)

    def index_of(j: int) -> ir.Value:
        i = j % V
        return b.add(col0, em.k(tid, i)) if i else col0

    L = min(G, WARP)
    P = G // L  # partials per row (warps spanned by a row)
    parts = []
    for r in range(lay.chunks):
        s = _thread_partial(lw, comb, src, index_of, range(r * V, r * V + V))
        parts.append(_butterfly(comb, s, L))
    out_lay = lw.layout(t.shape)
    rows = out_lay.numel
    rows_per_rep = lay.stride // (G * V)
    if G == 1 and out_lay.vec == 1 and out_lay.per == lay.chunks:
        # chunk r of thread tid is row r*NT + tid, which is exactly its output slot r
        return LV(t, elems=[comb.finish(s) for s in parts])
    types = comb.types()
    em.smem_begin_write()
    offsets, off = [], 0
    for _ in types:
        offsets.append(off)
        off += rows * P * 8
    em.smem_reserve(off)
    bases = [em.smem_array(o) for o in offsets]
    leader = b.icmp_unsigned("==", b.and_(tid, em.k(tid, L - 1)), em.k(tid, 0)) if L > 1 else None
    row0 = b.lshr(tid, em.k(tid, G.bit_length() - 1)) if G > 1 else tid
    # the warp's place within its row (a row spanning P warps leaves P partials)
    part = b.lshr(b.and_(tid, em.k(tid, G - 1)), em.k(tid, WARP.bit_length() - 1)) if P > 1 else None
    for r, s in enumerate(parts):
        row = b.add(row0, em.k(tid, r * rows_per_rep)) if r else row0
        owned = b.icmp_unsigned("<", row, em.k(row, rows))
        mask = b.and_(leader, owned) if leader is not None else owned
        slot = b.add(b.mul(row, em.k(row, P)), part) if part is not None else row
        for base, ty, x in zip(bases, types, s):
            em.smem_store(base, ty, slot, x, mask)
    em.barrier()
    out = []
    for j in range(out_lay.per):
        o = out_lay.flat(em, j)
        if not out_lay.all_owned:
            o = b.select(b.icmp_unsigned("<", o, em.k(o, rows)), o, em.k(o, rows - 1))
        first = b.mul(o, em.k(o, P)) if P > 1 else o
        sts = [tuple(em.smem_load(base, ty, b.add(first, em.k(o, p)) if p else first) for base, ty in zip(bases, types))
               for p in range(P)]
        out.append(comb.finish(_fold(comb, sts)))
    em.smem_dirty = True
    return LV(t, elems=out)


UNROLL_LIMIT = 8


def _reduce_generic(lw, comb: Combiner, src: LV, t, axis: int) -> LV:
    em = lw.em
    b = em.b
    shape = src.type.shape
    R = shape[axis]
    inner = prod(shape[axis + 1:])
    em.smem_begin_write()
    base = store_to_smem(lw, src)
    em.barrier()
    st, _ = smem_elem(lw, src.type)
    out_lay = lw.layout(t.shape)
    starts = []
    for j in range(out_lay.per):
        o = out_lay.flat(em, j)
        if not out_lay.all_owned:
            o = b.select(b.icmp_unsigned("<", o, em.k(o, out_lay.numel)), o, em.k(o, out_lay.numel - 1))
        c = unravel(em, o, t.shape)
        c.insert(axis, em.k(o, 0))
        starts.append(ravel(em, c, shape))

    def step(states: list[State], r: ir.Value) -> list[State]:
        out = []
        for s, start in zip(states, starts):
            rr = em.spread(r)
            idx = b.add(start, b.mul(rr, em.k(rr, inner))) if inner != 1 else b.add(start, rr)
            v = em.smem_load(base, st, idx)
            out.append(comb.combine(s, comb.lift(v, rr if comb.is_arg else None)))
        return out

    states = [comb.identity(s0) for s0 in starts]
    if R <= UNROLL_LIMIT:
        for r in range(R):
            states = step(states, I32(r))
    else:
        pre = b.block
        head = em.new_block("red.head")
        body = em.new_block("red.body")
        done = em.new_block("red.done")
        b.branch(head)
        b.position_at_end(head)
        r = b.phi(I32)
        r.add_incoming(I32(0), pre)
        phis = []
        for s in states:
            ps = []
            for x in s:
                p = b.phi(x.type)
                p.add_incoming(x, pre)
                ps.append(p)
            phis.append(tuple(ps))
        b.cbranch(b.icmp_unsigned("<", r, I32(R)), body, done)
        b.position_at_end(body)
        new = step(phis, r)
        r_next = b.add(r, I32(1))
        latch = b.block
        b.branch(head)
        r.add_incoming(r_next, latch)
        for ps, ns in zip(phis, new):
            for p, x in zip(ps, ns):
                p.add_incoming(x, latch)
        b.position_at_end(done)
        states = phis
    em.smem_dirty = True
    return LV(t, elems=[comb.finish(s) for s in states])


def lower_reduce(lw, op: Operation) -> list[LV]:
    return [reduce_axis(lw, op)]


HANDLERS = {name: lower_reduce for name in _KIND}
