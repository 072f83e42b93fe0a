"""Reductions: ``reduce_sum``, ``reduce_max``, ``reduce_min``, ``reduce_argmax``, ``reduce_argmin``.

Semantics (op table): integer sums wrap; f16/bf16 accumulate in f32 and round once at the end;
max/min are minimumNumber/maximumNumber folds (NaN ignored unless every element is NaN);
arg-reductions return the i32 index of the *first* extreme element, ignoring NaN (-0.0 ties
+0.0; an all-NaN slice gives 0). Every combine used here is associative and commutative
(arg-reductions select the maximum of a total order on ``(value, -index)``), so any reduction
tree gives the same result; only float sums depend on the order.

Float arg-reductions keep NaN from winning: a state whose index is ``NO_INDEX`` (``0xFFFFFFFF``,
above every real index as an unsigned number) is "nothing", whatever its value; a state with a
real index has a non-NaN value. An element is lifted to ``(x, i)``, or, when ``x`` is NaN, to
``(x, NO_INDEX)`` (only the index is replaced: one select); an unowned slot is NaN first; the
identity is ``(-inf, NO_INDEX)`` (``+inf`` for argmin). The combine is one compare chain, ``b > a
or (b ==u a and b.index < a.index)`` (``>`` ordered, ``==u`` unordered: equal or either NaN;
indices compared unsigned), and two selects: "nothing" never wins by value (an ordered compare
with NaN is false, and the identity's infinity is not above anything), and a real element beats
a NaN "nothing" through the unordered equality and its smaller index, a real -inf beats the
identity on the tie. Two "nothing" states keep ``NO_INDEX`` (their values may differ between
lanes; only the index is ever read). A final ``NO_INDEX`` (every element NaN) becomes 0 by one
signed ``max(index, 0)`` (real indices are non-negative). This is the op table's result on every
input, NaN, -0.0/+0.0 and ties included.

Three strategies:

* **full** (the output has one element): each thread folds its owned elements (unowned slots
  contribute the identity), a warp butterfly with ``shfl_xor`` 16, 8, 4, 2, 1 combines the
  warp, every lane writes the warp's partial to shared memory (each combine is symmetric, so
  after a whole-warp butterfly all lanes hold the same bits, but for the value of a float
  arg-reduction's "nothing", which is never read: no branch around the store), and
  after a barrier every thread reads partial ``tid % num_warps`` and butterflies over
  ``num_warps`` lanes (Triton's form, for every combine: after it ptxas leaves a following
  loop rolled as it does Triton's, see :func:`reduce_all`). The result is a uniform value.
* **rows** (last axis, every layout chunk inside one row and rows tiling one repetition of
  ``NT*V`` elements, ``G = row / V`` lanes per row a power of two): per-chunk fold, butterfly
  over the ``min(G, 32)`` lanes of the row in one warp, then those lanes (holding the same
  partial) hand it to the owner of that output element through shared memory, which folds the
  ``G / 32`` partials of a row spanning several warps in warp order (directly, without shared
  memory, when each chunk is a whole row and the thread owns exactly those rows' outputs). A
  row of ``[2, 512]`` over 128 threads (``G = 128``) is 5 shuffles and 4 partials per row, as
  Triton reduces it, instead of the generic strategy's 512-step loop over shared memory.
* **generic** (any axis): the block goes to shared memory; each thread, for each output element
  it owns, loops over the reduced axis.

A block of at most 32 elements is replicated (:attr:`~eggpu.codegen.layout.Layout.rep` ``= M``,
the next power of two): when its copies are filled (:func:`~eggpu.codegen.layout.replicas_valid`:
a loaded tile, elementwise ops of it, a carried accumulator) every aligned group of ``M`` lanes
holds the whole block, and the full strategy is one ``M``-lane butterfly in every thread, with
no shared memory (a ``BLOCK_SIZE = 16`` row tile, as Triton). Otherwise only the owners (lanes
``< numel`` of warp 0) hold it: the butterfly runs over the ``M`` lanes of warp 0 and thread 0
hands the result to the other warps through one shared-memory slot.

**Sibling reductions** (:func:`siblings`): reductions later in the same region over an operand
of the same shape along the same axis, whose operands are already lowered (``tl.max(x)`` beside
``tl.argmax(x)``, ``tl.sum(a)`` beside ``tl.sum(b)``), are lowered together with the first one
(the full and rows strategies): one tree carrying every member's state (:class:`Fused`), so they
share the shared-memory exchange, its barriers and address math. Each member keeps its own
combine, identity and finish, so every result is exactly the one it has alone. An arg-reduction
beside a max / min of the same operand (``tl.argmax(x)`` with ``tl.max(x)``) carries only its
index: its combine compares the values the max / min member carries (:class:`Fused`,
``partners``), one shuffle and one select fewer per butterfly level.
"""

from __future__ import annotations

from collections.abc import Sequence
from math import prod

from llvmlite import ir

from eggpu.ir.dtypes import DType, f32, i32
from eggpu.ir.graph import Block, Operation

from . import scalar_ops as S
from .emitter import I32, WARP, Emitter
from .layout import LV, ravel, replicas_valid, unravel
from .lower_shape import smem_elem, store_to_smem

State = tuple  # (value,) or (value, index)
INT32_MAX = (1 << 31) - 1
NO_INDEX = -1
"""A float arg-reduction's index of "no real element": ``0xFFFFFFFF``, the largest index as an
unsigned number, -1 as a signed one, so the final "all NaN -> 0" is ``max(index, 0)``."""


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
        if not self.is_arg:
            return (v,)
        return (v, k(I32, NO_INDEX if dt.is_float else INT32_MAX))

    def lift(self, v: ir.Value, index: ir.Value | None, owned: ir.Value | None = None) -> State:
        """An element (register value of ``dt``) and its index along the axis, as a state;
        the identity where ``owned`` (None: always) is false (for a float arg-reduction: NaN
        with ``NO_INDEX``, a "nothing" like the identity)."""
        b = self.em.b
        x = S.wide(self.em, v, self.dt)
        if not self.is_arg:
            return (x,) if owned is None else (b.select(owned, x, self.identity(x)[0]),)
        if self.acc.is_float:
            # "nothing" is the index NO_INDEX whatever the value (see the module docs): a NaN
            # element keeps its NaN and only its index is replaced; an unowned slot becomes NaN
            # too, so one NaN test covers both (3 instructions, the value select only when owned
            # is not None)
            if owned is not None:
                x = b.select(owned, x, self.em.k(x, float("nan")))
            return (x, b.select(b.fcmp_unordered("uno", x, x), self.em.k(index, NO_INDEX), index))
        if owned is None:
            return (x, index)
        ident = self.identity(x)
        return (b.select(owned, x, ident[0]), b.select(owned, index, ident[1]))

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
        first = bb.icmp_unsigned("<", bi, ai)  # indices are >= 0; NO_INDEX is the largest
        if dt.is_float:
            # a state with a real index has a non-NaN value; one with NO_INDEX ("nothing") has NaN
            # or the identity's infinity. The ordered compare never lets "nothing" win by value,
            # and the unordered equality (== or either NaN) lets a real element beat a NaN
            # "nothing" on its smaller index: no per-element value select is needed
            take = bb.or_(bb.fcmp_ordered(op, bv, av), bb.and_(bb.fcmp_unordered("==", bv, av), first))
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
            if self.acc.is_float:  # only NaN elements (or none owned): NO_INDEX, the op table says 0
                b = self.em.b
                zero = self.em.k(s[1], 0)
                return b.select(b.icmp_signed("<", s[1], zero), zero, s[1])
            return s[1]
        return S.narrow(self.em, s[0], self.dt)

    def result_dtype(self) -> DType:
        return i32 if self.is_arg else self.dt

    def finish_uses(self) -> list[bool]:
        """Which state components :meth:`finish` reads (an arg-reduction's value is not)."""
        return [False, True] if self.is_arg else [True]

    @property
    def exact(self) -> bool:
        """Every grouping of the combine gives the same bits (all but float sums)."""
        return not (self.kind == "sum" and self.acc.is_float)


class Fused:
    """Sibling reductions carried through one tree: the state is the concatenation of the
    members' states, each part combined by its own :class:`Combiner` (the combine interface of
    :func:`_butterfly` and :func:`_fold`).

    ``partners[k] = m``: arg-reduction member ``k`` (argmax / argmin) has a max / min member
    ``m`` over the same operand (``tl.max(x)`` beside ``tl.argmax(x)``). Its state is then only
    the index: the value it would carry is, at every node of the tree, the maximum (minimum) of
    the elements below it, which member ``m`` carries already (up to the sign of a zero tie and
    NaN for "no real element", which its compares cannot tell apart: ``>`` and ``==`` see
    -0.0 == +0.0, and a NaN value comes with ``NO_INDEX``). So each butterfly step shuffles and
    selects one value fewer, and shared memory holds one slot fewer."""

    def __init__(self, members: Sequence[Combiner], partners: dict[int, int] | None = None):
        self.members = list(members)
        self.em = self.members[0].em
        self.partners = dict(partners or {})

    def _n(self, k: int) -> int:
        return 1 if k in self.partners else len(self.members[k].types())

    def types(self) -> list[ir.Type]:
        return [t for k, m in enumerate(self.members) for t in (m.types()[1:] if k in self.partners else m.types())]

    def split(self, s: State) -> list[State]:
        out, i = [], 0
        for k in range(len(self.members)):
            n = self._n(k)
            out.append(tuple(s[i:i + n]))
            i += n
        return out

    def _full(self, parts: list[State]) -> list[State]:
        """Each member's whole state: a partnered arg-reduction's value from its partner."""
        return [(parts[self.partners[k]][0], *p) if k in self.partners else p for k, p in enumerate(parts)]

    def _own(self, k: int, st: State) -> State:
        return st[1:] if k in self.partners else st

    def combine(self, a: State, b: State) -> State:
        fa, fb = self._full(self.split(a)), self._full(self.split(b))
        return tuple(x for k, m in enumerate(self.members) for x in self._own(k, m.combine(fa[k], fb[k])))

    def partial(self, states: list[State]) -> State:
        """The concatenated state of the members' own (whole) states."""
        return tuple(x for k, st in enumerate(states) for x in self._own(k, st))

    def finish(self, s: State) -> list[ir.Value]:
        return [m.finish(p) for m, p in zip(self.members, self._full(self.split(s)))]

    def finish_uses(self) -> list[bool]:
        return [u for k, m in enumerate(self.members) for u in self._own(k, tuple(m.finish_uses()))]

    @property
    def exact(self) -> bool:
        return all(m.exact for m in self.members)


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


def _thread_partial(lw, comb: Combiner, src: LV, index_of, slots: Sequence[int] | None = None,
                    copies: bool = False) -> State:
    """Fold of this thread's owned ``slots`` (default: all; identity when it owns none);
    ``copies``: of the slots holding an element, copies of a replicated block included.

    ``index_of(j)`` must increase with ``j`` (slots in ascending element order), which the
    float arg-reduction fold (:func:`_arg_fold`) relies on."""
    em = lw.em
    lay = lw.layout(src.type.shape)
    own = lay.valid if copies else lay.owned
    vals = lw.elems(src)
    js = list(range(len(vals)) if slots is None else slots)
    if comb.is_arg and comb.acc.is_float and len(js) > 1:
        return _arg_fold(comb, [(vals[j], index_of(j), own(em, j)) for j in js])
    states = [comb.lift(vals[j], index_of(j) if comb.is_arg else None, own(em, j)) for j in js]
    return _fold(comb, states)


def _arg_fold(comb: Combiner, elems: Sequence[tuple[ir.Value, ir.Value, ir.Value | None]]) -> State:
    """A float arg-reduction's fold of one thread's ``(value, index, owned)`` in ascending index
    order, lifting NaN once at the end instead of per element.

    The accumulator holds the raw first element (NaN where unowned). A later element replaces
    it when strictly better (``>`` for argmax, ordered: a NaN never wins, a tie keeps the earlier
    index, -0.0 ties +0.0) or when the accumulator is NaN (nothing real seen yet). So the
    accumulator is NaN exactly when every element so far is NaN or unowned, and is otherwise
    the first extreme real element: the op table's fold. A NaN accumulator becomes "nothing",
    ``(NaN, NO_INDEX)``, as :meth:`Combiner.lift` would give (only the index is selected).
    """
    em = comb.em
    b = em.b
    op = ">" if comb.kind == "argmax" else "<"

    def raw(v: ir.Value, owned: ir.Value | None) -> ir.Value:
        x = S.wide(em, v, comb.dt)
        return x if owned is None else b.select(owned, x, em.k(x, float("nan")))

    v0, i0, o0 = elems[0]
    av, ai = raw(v0, o0), i0
    for v, i, owned in elems[1:]:
        x = raw(v, owned)
        take = b.or_(b.fcmp_ordered(op, x, av), b.fcmp_unordered("uno", av, av))
        # the value is maximumNumber(av, x) (minimumNumber for argmin): the selected one but for
        # the sign of a zero tie, which no later compare sees (-0.0 == +0.0), and the same
        # instruction as a sibling tl.max/tl.min fold over the same elements (LLVM merges them)
        av, ai = S.fminmax(em, av, x, is_min=comb.kind == "argmin"), b.select(take, i, ai)
    nan = b.fcmp_unordered("uno", av, av)
    return (av, b.select(nan, em.k(ai, NO_INDEX), ai))


def _fused_partial(lw, fused: Fused, srcs: Sequence[LV], index_of, slots: Sequence[int] | None = None,
                   copies: bool = False) -> State:
    """:func:`_thread_partial` of every member, concatenated (:meth:`Fused.partial`)."""
    return fused.partial([_thread_partial(lw, m, src, index_of, slots, copies) for m, src in zip(fused.members, srcs)])


def reduce_all(lw, fused: Fused, srcs: Sequence[LV]) -> list[ir.Value]:
    """Reduce every element of each of ``srcs`` (same shape; the full strategy): uniform results.

    A block of at most one warp of single-element slots (``numel <= 32``, so only lanes
    ``< numel`` of warp 0 own an element) butterflies over the next power of two of lanes and
    thread 0 hands the result to the other warps through one shared-memory slot.
    """
    em = lw.em
    lay = lw.layout(srcs[0].type.shape)
    if lay.rep and all(replicas_valid(src) for src in srcs):
        # every aligned group of rep lanes holds the whole block: a butterfly over the group
        # leaves the result in every thread, no shared memory (as Triton)
        s = _fused_partial(lw, fused, srcs, lambda j: lay.flat(em, j), copies=True)
        return fused.finish(tuple(em.lane0(x) for x in _butterfly(fused, s, lay.rep)))
    s = _fused_partial(lw, fused, srcs, lambda j: lay.flat(em, j))
    nw = em.num_warps
    small = nw > 1 and lay.per == 1 and lay.numel <= WARP
    width = 1 << (lay.numel - 1).bit_length() if small else min(WARP, lw.nt)
    s = _butterfly(fused, s, width)
    if nw == 1:
        return fused.finish(tuple(em.lane0(x) for x in s))
    b = em.b
    types = fused.types()
    slots = 1 if small else nw
    # one partial is the result: only what finish() reads crosses shared memory (the others
    # stay this thread's own, unread values)
    shared = fused.finish_uses() if small else [True] * len(types)
    em.smem_begin_write()
    offsets, off = [], 0
    for need in shared:
        offsets.append(off)
        off += slots * 8 if need else 0
    em.smem_reserve(off)
    # a later exchange's addresses from a tid read here: LLVM otherwise reuses the first
    # exchange's 64-bit addresses and keeps them live across the loop between two reductions
    # (layer_norm_forward with launch facts: 32 registers, 29 this way; 30 before the
    # butterfly). The first exchange keeps tid: a fresh read there cost registers elsewhere
    # (row_argmax f16 19 -> 21, cross_entropy_forward f64 on sm_90 32 -> 38)
    tid = em.tid_here() if em.exchanges else em.tid()
    em.exchanges += 1
    if small:
        writer, slot = b.icmp_unsigned("==", tid, em.k(tid, 0)), em.k(tid, 0)
    else:
        # after a whole-warp butterfly every lane holds the same state (each combine is
        # symmetric), so all lanes write it: no branch around the store, as Triton
        writer, slot = None, b.lshr(tid, em.k(tid, 5))
    bases = [em.smem_array(o) if need else None for o, need in zip(offsets, shared)]
    for base, t, x in zip(bases, types, s):
        if base is not None:
            em.smem_store(base, t, slot, x, writer)
    em.barrier()
    if not small:
        # as Triton: thread t reads partial t % nw and a butterfly over nw lanes combines them
        # (each combine is symmetric, so every lane ends with the same bits, a float sum too:
        # lane 0 computes (p0+p2)+(p1+p3), lane 1 (p1+p3)+(p0+p2)). Not the nw uniform loads
        # and an in-order fold: with those ptxas (CUDA 13.0, sm_80) unrolls the loop that follows 4x,
        # the normalize-and-store loop of rms_norm / layer_norm (SASS 441 against 310 with the
        # butterfly, Triton 212), which it does not do after a shuffle (docs/codegen.md,
        # "Cross-warp combine and ptxas unrolling")
        w = b.and_(tid, em.k(tid, nw - 1))
        mine = tuple(em.smem_load(base, t, w) for base, t in zip(bases, types))
        em.smem_dirty = True
        return fused.finish(tuple(em.lane0(x) for x in _butterfly(fused, mine, nw)))
    # small: thread 0's result, in slot 0
    one = tuple(em.smem_load_uniform(base, t, I32(0)) if base is not None else em.lane0(x)
                for base, t, x in zip(bases, types, s))
    em.smem_dirty = True
    return fused.finish(one)


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


def _strategy(lw, src_shape: tuple[int, ...], t, axis: int) -> tuple[str, int]:
    """``("full" | "rows" | "generic", G)`` for a reduction of a distributed ``src_shape`` block."""
    if t.numel == 1:
        return "full", 0
    lay = lw.layout(src_shape)
    R = src_shape[axis]
    V = lay.vec
    if axis == len(src_shape) - 1 and R % V == 0 and lay.stride % R == 0:
        G = R // V
        if G & (G - 1) == 0:  # G divides NT*V / V = NT; a power of two > 32 is whole warps
            return "rows", G
    return "generic", 0


def reduce_ops(lw, ops: Sequence[Operation]) -> list[LV]:
    """Lower reductions over same-shape operands along one axis (``ops[0]``'s), one result each.

    Members with a uniform operand reduce alone; the others share one tree (full and rows
    strategies) or reduce one after the other (generic).
    """
    em = lw.em
    shape = lw.get(ops[0].operands[0]).type.shape
    axis = ops[0].attrs["axis"]
    out: dict[int, LV] = {}
    tree = []
    for k, op in enumerate(ops):
        src = lw.get(op.operands[0])
        t = op.results[0].type
        comb = Combiner(em, _KIND[op.op], src.type.dtype)
        if src.u is not None:
            count = shape[axis] if t.numel != 1 else src.type.numel
            out[k] = LV(t, u=_reduce_uniform(lw, comb, src, count))
        else:
            tree.append((k, comb, src, t))
    if tree:
        kind, G = _strategy(lw, shape, tree[0][3], axis)
        if kind == "generic":
            for k, comb, src, t in tree:
                out[k] = _reduce_generic(lw, comb, src, t, axis)
        else:
            fused = Fused([c for _, c, _, _ in tree], _partners(tree, ops))
            srcs = [src for _, _, src, _ in tree]
            if kind == "full":
                lvs = [LV(t, u=u) for (_, _, _, t), u in zip(tree, reduce_all(lw, fused, srcs))]
            else:
                lvs = [LV(t, elems=e) for (_, _, _, t), e in zip(tree, _reduce_rows(lw, fused, srcs, tree[0][3], G))]
            out.update({k: lv for (k, _, _, _), lv in zip(tree, lvs)})
    return [out[k] for k in range(len(ops))]


_PARTNER = {"argmax": "max", "argmin": "min"}


def _partners(tree, ops: Sequence[Operation]) -> dict[int, int]:
    """``{arg member: max/min member}`` of ``tree`` (positions) over the same operand and dtype."""
    out: dict[int, int] = {}
    for k, (ok, comb, _, _) in enumerate(tree):
        if not comb.is_arg:
            continue
        for m, (om, other, _, _) in enumerate(tree):
            if (other.kind == _PARTNER[comb.kind] and other.dt == comb.dt
                    and ops[om].operands[0] is ops[ok].operands[0]):
                out[k] = m
                break
    return out


def siblings(lw, op: Operation, blk: Block | None) -> list[Operation]:
    """``op`` and the later reductions of ``blk`` that can share its tree: same axis, an operand
    of the same shape that is already lowered (so computing them here changes nothing), a result
    of the same type shape, and no handler override."""
    if blk is None:
        return [op]
    src = op.operands[0]
    axis = op.attrs["axis"]
    shape = op.results[0].type.shape
    group = [op]
    after = False
    for o in blk.ops:
        if o is op:
            after = True
            continue
        if (after and o.op in _KIND and o.attrs["axis"] == axis and id(o) not in lw.op_overrides
                and o.operands[0].type.shape == src.type.shape and o.results[0].type.shape == shape
                and id(o.operands[0]) in lw.env):
            group.append(o)
    return group


def _reduce_rows(lw, fused: Fused, srcs: Sequence[LV], t, G: int) -> list[list[ir.Value]]:
    """Last-axis reduction when every chunk lies in one row and rows tile a repetition.

    With ``R`` the row length, ``V`` the chunk width and ``R | NT*V``: chunk ``r`` of thread
    ``tid`` lies in row ``r*(NT*V/R) + tid // G`` at columns ``(tid % G)*V + i`` (``G = R/V``
    aligned lanes per row, a power of two). Each chunk is folded and combined over the
    ``L = min(G, 32)`` lanes of the row in its warp; those lanes write the (equal) partial to slot ``row * P + (tid % G) // 32`` of shared memory (``P = G / L`` partials per
    row: 1 unless a row spans several warps), and the owner of each output element folds its
    row's ``P`` slots in order. Any grouping is exact for the combines here (module docs).
    ``srcs`` (same shape) are reduced together: the element values of each one's result
    (``t`` gives the output shape).
    """
    em = lw.em
    b = em.b
    lay = lw.layout(srcs[0].type.shape)
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
        s = _fused_partial(lw, fused, srcs, index_of, range(r * V, r * V + V))
        parts.append(_butterfly(fused, s, L))
    out_lay = lw.layout(t.shape)
    rows = out_lay.numel
    rows_per_rep = lay.stride // (G * V)
    if G == 1 and out_lay.vec == 1 and out_lay.per == lay.chunks:
        # chunk r of thread tid is row r*NT + tid, which is exactly its output slot r
        return [list(e) for e in zip(*(fused.finish(s) for s in parts))]
    types = fused.types()
    em.smem_begin_write()
    offsets, off = [], 0
    for _ in types:
        offsets.append(off)
        off += rows * P * 8
    em.smem_reserve(off)
    bases = [em.smem_array(o) for o in offsets]
    row0 = b.lshr(tid, em.k(tid, G.bit_length() - 1)) if G > 1 else tid
    # the warp's place within its row (a row spanning P warps leaves P partials)
    part = b.lshr(b.and_(tid, em.k(tid, G - 1)), em.k(tid, WARP.bit_length() - 1)) if P > 1 else None
    for r, s in enumerate(parts):
        row = b.add(row0, em.k(tid, r * rows_per_rep)) if r else row0
        # all L lanes of the row hold the same state after the butterfly (each combine is
        # symmetric) and write it together; only rows past the end (a partial block) are masked
        mask = None if lay.all_owned else b.icmp_unsigned("<", row, em.k(row, rows))
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
        out.append(fused.finish(_fold(fused, sts)))
    em.smem_dirty = True
    return [list(e) for e in zip(*out)]


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
    """Lower ``op``, or hand back its result when an earlier sibling lowered it (:func:`siblings`)."""
    done = lw.fused_results.pop(id(op), None)
    if done is not None:
        return [done]
    group = siblings(lw, op, lw.blocks[-1] if lw.blocks else None)
    lvs = reduce_ops(lw, group)
    for o, lv in zip(group[1:], lvs[1:]):
        lw.fused_results[id(o)] = lv
    return [lvs[0]]


HANDLERS = {name: lower_reduce for name in _KIND}
