"""A tensor-core accumulator carried in registers across a ``for`` loop (the matmul K loop).

Pattern (in the loop body's own block, not nested in an ``if``)::

    for k ...: acc = dot(a, b, acc)              # or: acc = acc + dot(a, b) / dot(a, b) + acc

where the carried ``acc`` (f32) has no other use in the body, the dot's result no use but the
``yield`` (the ``add``'s, in the second form), and the dot takes the tensor-core strategy
(``mma_sync``, f16/bf16 or TF32, or the opt-in ``wgmma`` of sm_90a, whose accumulator
fragment per warp is the same, :mod:`eggpu.codegen.lower_wgmma`). Such a carried value is kept in the **mma fragment layout**
(:data:`eggpu.codegen.lower_mma.Fragments`: ``tiles_m x tiles_n x 4`` f32 registers per
thread) instead of the blocked layout:

- before the loop the initial value is converted once: a uniform value (``tl.zeros``) is
  splatted into the registers, any other value goes through shared memory in the row bands of
  the result staging (every thread stores its blocked elements of a band, a barrier, every lane
  reads its fragment elements);
- in the body the dot's mmas take the carried registers as their C input and yield their D
  registers: no shared-memory round trip and no re-layout per iteration; the shared-memory
  indices of the staging stores and of the ``ldmatrix`` loads (functions of ``tid`` only) are
  computed once before the loop (:func:`eggpu.codegen.lower_mma.mma_addresses`);
- after the loop the fragments are converted to the blocked layout once
  (:func:`eggpu.codegen.lower_mma.fragments_to_layout`).

Summation order: ``dot(a, b, acc)`` is ``round_f32(a @ b) + acc`` in the op table; here the
products of each 16-step (8 for TF32) are added to the running accumulator inside the mma.
Both are f32 sums of the same (exact) products in different orders, like any GPU matmul; host
mode (``run_cpu``) runs the same mmas with the same C inputs, adding each product to the running
sum in k order, so run_cpu and the PTX differ only by the tensor core's internal order within
one step. The interpreter keeps the op table's order (tolerances as for any f32 accumulation).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from llvmlite import ir

from eggpu.ir.dtypes import f32
from eggpu.ir.errors import CodegenError
from eggpu.ir.graph import Block, Operation, Value
from eggpu.ir.types import BlockType

from .emitter import F32, Emitter
from .layout import LV
from .lower_mma import (
    C_PAD,
    MMA_M,
    MMA_N,
    Fragments,
    MmaAddresses,
    MmaPlan,
    fragments_to_layout,
    gather_smem,
    mma_addresses,
    mma_sync_fragments,
    plan_mma,
    warp_coords,
)
from .lower_mma_tf32 import mma_tf32_fragments
from .lower_wgmma import opaque_copies, plan_wgmma, wait_group, wgmma_fragments

HOIST_MIN_WARPS = 4
"""Hoist the shared-memory indices out of the K loop only with this many warps or more. Measured
over the 60-configuration ptxas sweep (sm_80): with >= 4 warps hoisting removed every spill
(16x128x64: 68 -> 0 bytes, 64x32x64: 8 -> 0, 128x8x64: 40 -> 0) and shortened the K loop
(64x64x32: 249 -> 223 SASS); with 1 or 2 warps a thread holds a whole warp's tiles and the
extra live registers made ptxas spill more (16x128x16 at 1 warp: 0 -> 88 bytes)."""


@dataclass
class MmaCarry:
    """One carried slot of a ``for`` kept in fragment registers (see the module docstring)."""

    dot: Operation
    add: Operation | None  # the ``acc + dot(a, b)`` form; None for ``dot(a, b, acc)``
    plan: MmaPlan
    phis: list[ir.Value] = field(default_factory=list)  # the loop-head registers, flat
    out: list[ir.Value] | None = None  # the body's new registers, flat
    addr: MmaAddresses | None = None  # f16/bf16: shared-memory indices computed before the loop
    staged: tuple[ir.Value, ir.Value] | None = None  # software pipelining: this iteration's a/b stage
    pipeline_note: str | None = None  # why the loop is (not) software-pipelined (mma_pipeline)
    stages: int = 1  # the cp.async stages of its software-pipelined loop (1: not pipelined)
    wgmma: bool = False  # the dot takes the wgmma strategy (lower_wgmma; plan is a 4G x 1 warp grid)
    after_mma: Callable[[], None] | None = None  # pipelined wgmma: the next copies, issued after the wgmmas

    def init(self, lw, lv: LV) -> list[ir.Value]:
        """The initial registers, flat (i, j, r order) from the blocked/uniform initial value."""
        em: Emitter = lw.em
        n = self.plan.tiles_m * self.plan.tiles_n * 4
        if not self.plan.tf32 and not self.wgmma and em.num_warps >= HOIST_MIN_WARPS:
            # loop-invariant (tid only); the light LLVM pipeline has no LICM, so hoist them here
            self.addr = mma_addresses(lw, self.plan)
        if lv.is_uniform and self.wgmma and self.stages > 1 and em.is_ptx:
            # distinct registers defined once before the loop (an empty asm): the loop and its
            # zero-trip path then leave the loop in the same registers, with no moves on the way
            # to the wgmma.wait_group after it (moves there make ptxas serialize every wgmma)
            return opaque_copies(em, [em.spread(lv.u)] * n)
        if lv.is_uniform:
            return [em.spread(lv.u)] * n
        return _flatten(_layout_to_fragments(lw, self.plan, lw.elems(lv)))

    def begin(self, lw, phis: list[ir.Value]) -> None:
        """Enter the body: the dot (and add) of the pattern read ``phis`` and produce ``out``."""
        self.phis = list(phis)
        self.out = None
        lw.op_overrides[id(self.dot)] = self._lower_dot
        if self.add is not None:
            lw.op_overrides[id(self.add)] = self._lower_add

    def end(self, lw) -> list[ir.Value]:
        """Leave the body: the registers the body yields."""
        lw.op_overrides.pop(id(self.dot), None)
        if self.add is not None:
            lw.op_overrides.pop(id(self.add), None)
        if self.out is None:
            raise lw.error("internal: the carried dot was not lowered")
        return self.out

    def result(self, lw, regs: list[ir.Value], t: BlockType) -> LV:
        """The loop's result in the blocked layout, from the registers after the loop."""
        acc = _unflatten(self.plan, regs)
        if self.wgmma and self.stages > 1:  # the last step's wgmma group was left in flight
            acc = wait_group(lw.em, acc, 0)
        return LV(t, elems=fragments_to_layout(lw, self.plan, acc))

    def placeholder(self, lw, t: BlockType) -> LV:
        """The value bound to the carried argument and the dot's result inside the body: only
        the pattern's ops read it (through the overrides); materializing it is an internal error."""
        def fail(_coords):
            raise lw.error("internal: the register-carried dot accumulator was read outside its pattern")
        return LV(t, fn=fail)

    def _lower_dot(self, lw, op: Operation) -> list[LV]:
        a, bv = lw.get(op.operands[0]), lw.get(op.operands[1])
        acc = _unflatten(self.plan, self.phis)
        from .lower_dot import select_strategy

        name, reason = select_strategy(lw, op)
        M, K = a.type.shape
        note = f"; {self.pipeline_note}" if self.pipeline_note else ""
        lw.dots.append({"shape": [M, bv.type.shape[1], K], "dtype": str(a.type.dtype), "strategy": name,
                        "reason": reason + "; accumulator carried in mma registers across the loop" + note,
                        "precision": op.attrs.get("precision", "ieee"), "acc_in_registers": True,
                        "num_stages": self.stages if self.staged is not None else 1,
                        "pipelined": self.staged is not None})
        if self.wgmma:
            frags = wgmma_fragments(lw, op, a, bv, self.plan, acc, self.staged, self.after_mma)
        elif self.plan.tf32:
            frags = mma_tf32_fragments(lw, op, a, bv, self.plan, acc)
        else:
            frags = mma_sync_fragments(lw, op, a, bv, self.plan, acc, self.addr, self.staged)
        self.out = _flatten(frags)
        return [self.placeholder(lw, op.results[0].type)]

    def _lower_add(self, lw, op: Operation) -> list[LV]:
        return [self.placeholder(lw, op.results[0].type)]


def _flatten(acc: Fragments) -> list[ir.Value]:
    return [v for row in acc for tile in row for v in tile]


def _unflatten(plan: MmaPlan, regs: list[ir.Value]) -> Fragments:
    it = iter(regs)
    return [[[next(it) for _ in range(4)] for _ in range(plan.tiles_n)] for _ in range(plan.tiles_m)]


def _layout_to_fragments(lw, plan: MmaPlan, elems: list[ir.Value]) -> Fragments:
    """Blocked-layout f32 elements -> fragment registers through shared memory: the reverse of
    :func:`eggpu.codegen.lower_mma.fragments_to_layout`, in the same row bands (rows of
    ``N + C_PAD`` floats, ``plan.band`` local tile rows of every warp per band; the plan keeps
    every layout chunk inside one band)."""
    em: Emitter = lw.em
    b = em.b
    M, N = plan.M, plan.N
    cs = N + C_PAD
    lay = lw.layout((M, N))
    band_rows = plan.band * plan.wm * MMA_M
    em.smem_reserve(plan.c_bytes)
    base = em.smem_array(0)
    wi, wj, lane = warp_coords(em, plan)
    g = b.lshr(lane, em.k(lane, 2))
    t2 = b.shl(b.and_(lane, em.k(lane, 3)), em.k(lane, 1))
    vals: list[ir.Value] = []
    for first in range(0, plan.tiles_m, plan.band):
        row0 = first * plan.wm * MMA_M
        lo, hi = row0 * N, (row0 + band_rows) * N
        em.smem_begin_write()
        ptrs, svals, masks = [], [], []
        for j, v in enumerate(elems):
            if not (lo <= (j // lay.vec) * lay.stride < hi or band_rows == M):
                continue
            m, n = lay.coords(em, j)
            rel = b.sub(m, em.k(m, row0)) if row0 else m
            idx = b.add(b.mul(rel, em.k(rel, cs)), n)
            if em.is_ptx:
                em.smem_store(base, F32, idx, v, lay.owned(em, j))
            else:
                ptrs.append(b.gep(em.spread(base), [idx], source_etype=F32))
                svals.append(v)
                masks.append(lay.owned(em, j))
        if ptrs:
            em.scatter_slots(ptrs, svals, masks)
        em.barrier()
        idxs = []
        for i in range(first, first + plan.band):
            row = b.add(b.mul(b.add(em.k(wi, (i - first) * plan.wm), wi), em.k(wi, MMA_M)), g)
            for j in range(plan.tiles_n):
                col = b.add(b.mul(b.add(em.k(wj, j * plan.wn), wj), em.k(wj, MMA_N)), t2)
                for r in range(4):
                    rr = b.add(row, em.k(row, 8)) if r >= 2 else row
                    c = b.add(col, em.k(col, 1)) if r % 2 else col
                    idxs.append(b.add(b.mul(rr, em.k(rr, cs)), c))
        vals += gather_smem(em, base, F32, idxs) if em.is_host else [em.smem_load(base, F32, i) for i in idxs]
        em.smem_dirty = True
    return _unflatten(plan, vals)


def _uses(blk: Block, v: Value) -> list[Operation]:
    """The operations of ``blk`` (nested regions included) that read ``v``, once per operand."""
    return [op for op in blk.walk() for x in op.operands if x is v]


def _match(region: Block, arg: Value, yielded: Value) -> tuple[Operation, Operation | None] | None:
    """``(dot, add)`` when ``yielded`` is ``dot(a, b, arg)`` or ``arg + dot(a, b)`` (either order)
    in ``region``'s own ops and nothing else reads ``arg`` or the intermediate values."""
    prod = yielded.owner
    if not isinstance(prod, Operation) or prod not in region.ops:
        return None
    if len(_uses(region, yielded)) != 1 or len(_uses(region, arg)) != 1:
        return None
    if prod.op == "dot" and len(prod.operands) == 3 and prod.operands[2] is arg:
        return prod, None
    if prod.op == "add" and len(prod.operands) == 2 and arg in prod.operands:
        other = prod.operands[1] if prod.operands[0] is arg else prod.operands[0]
        dot = other.owner
        if (isinstance(dot, Operation) and dot.op == "dot" and len(dot.operands) == 2 and dot in region.ops
                and other is not arg and len(_uses(region, other)) == 1):
            return dot, prod
    return None


def find_carries(lw, op: Operation, inits: list[LV]) -> dict[int, MmaCarry]:
    """The carried slots of the ``for`` ``op`` to keep in mma registers (see the module docstring)."""
    from .lower_dot import select_strategy

    region = op.regions[0]
    term = region.terminator
    if term is None:
        return {}
    out: dict[int, MmaCarry] = {}
    for i, (arg, yielded) in enumerate(zip(region.args[1:], term.operands)):
        t = arg.type
        if t.is_scalar or t.dtype != f32 or len(t.shape) != 2:
            continue
        got = _match(region, arg, yielded)
        if got is None:
            continue
        dot, add = got
        if dot.results[0].type.dtype != f32 or tuple(dot.results[0].type.shape) != tuple(t.shape):
            continue
        try:
            strategy = select_strategy(lw, dot)[0]
        except CodegenError:
            continue  # a forced strategy that does not apply: the dot's own lowering reports it
        if strategy not in ("mma_sync", "wgmma"):
            continue
        plan = plan_wgmma(lw, dot) if strategy == "wgmma" else plan_mma(lw, dot)
        if isinstance(plan, str):
            continue
        out[i] = MmaCarry(dot, add, plan, wgmma=strategy == "wgmma")
    return out


__all__ = ["MmaCarry", "find_carries"]
