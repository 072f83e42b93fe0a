"""TF32 tensor-core ``dot`` (``precision="tf32"``, f32 operands): ``mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32``.

Data movement, per ``dot(a[M,K], b[K,N], precision="tf32")`` on sm_80+:

1. every thread rounds its owned elements of ``a`` and ``b`` to TF32 (:func:`round_tf32`: PTX
   ``cvt.rna.tf32.f32``, ties away from zero, what Triton emits) and stores them into shared
   memory, row-major with padded rows: ``a`` rows of ``K + 4`` floats, ``b`` rows of ``N`` or
   ``N + 8`` floats (:func:`row_strides`), so each fragment load below touches 32 different
   banks;
2. a barrier; the output tiles (16 x 8) are spread over the warps exactly as the f16 path does
   (:func:`eggpu.codegen.lower_mma.plan_mma`);
3. for each 8-wide step of ``K``, every lane loads its fragment elements with plain 32-bit
   shared-memory loads (``ldmatrix`` moves 16-bit elements only) following the PTX ISA's
   m16n8k8 ``.tf32`` layout (``groupID g = L/4``, ``tig t = L%4``): ``a0 = A[g, t]``,
   ``a1 = A[g+8, t]``, ``a2 = A[g, t+4]``, ``a3 = A[g+8, t+4]``; ``b0 = B[t, g]``,
   ``b1 = B[t+4, g]``; and one ``mma.sync`` per tile accumulates in f32 (C fragment as for
   m16n8k16: ``c0,c1 = C[g, 2t..2t+1]``, ``c2,c3 = C[g+8, ...]``);
4. the f32 fragments go back through shared memory into the result's blocked layout
   (:func:`eggpu.codegen.lower_mma.fragments_to_layout`, shared with the f16 path).

Host mode (``run_cpu``) runs the same steps lane by lane: the same rounding (integer arithmetic
on the bits), the same padded stores and per-lane fragment gathers, and the mma from the
fragment layout above, each accumulator adding its 8 products of one step in k order with
``fma``. Products of two TF32 values (11-bit significands) are exact in f32 (barring underflow),
so host and GPU differ only by the tensor core's internal summation order within one step.
"""

from __future__ import annotations

from llvmlite import ir

from eggpu.ir.graph import Operation

from .emitter import F32, I32, Emitter
from .layout import LV
from .lower_mma import (
    MMA_K_TF32,
    MMA_M,
    MMA_N,
    Fragments,
    MmaPlan,
    fragments_to_layout,
    gather_smem,
    host_mma_function,
    row_strides,
    tf32_ab_bytes,
    warp_coords,
    zero_fragments,
)

TF32_HALF_ULP = 0x1000  # half a TF32 ulp in the f32 bit pattern (13 dropped mantissa bits)
TF32_MASK = 0xFFFFE000


def round_tf32(em: Emitter, v: ir.Value) -> ir.Value:
    """An f32 (thread-level) value rounded to TF32, kept as f32 with the low 13 bits clear.

    GPU: ``cvt.rna.tf32.f32`` (``llvm.nvvm.f2tf32.rna``). Host: ``(bits + 0x1000) & ~0x1fff``
    on finite values (ties away from zero, overflow to inf), inf/NaN unchanged; the same
    function as :func:`eggpu.ir.semantics.round_tf32`.
    """
    b = em.b
    if em.is_ptx:
        r = b.call(em.declare("llvm.nvvm.f2tf32.rna", I32, [F32]), [v])
        return b.bitcast(r, F32)
    it = em.like_type(v, I32)
    bits = b.bitcast(v, it)
    r = b.and_(b.add(bits, em.k(bits, TF32_HALF_ULP)), em.k(bits, TF32_MASK - (1 << 32)))
    ax = em.intrinsic("llvm.fabs", v.type, [v], [v.type])
    finite = b.fcmp_ordered("<", ax, em.k(v, float("inf")))
    return b.bitcast(b.select(finite, r, bits), v.type)


def _store_padded(lw, src: LV, base: ir.Value, stride: int) -> None:
    """Every thread stores its owned elements of ``src``, rounded to TF32, at ``r*stride + c``."""
    em = lw.em
    b = em.b
    lay = lw.layout(src.type.shape)
    ptrs, vals, masks = [], [], []
    for j, v in enumerate(lw.elems(src)):
        r, c = lay.coords(em, j)
        idx = b.add(b.mul(r, em.k(r, stride)), c)
        x = round_tf32(em, v)
        if em.is_ptx:
            em.smem_store(base, F32, idx, x, lay.owned(em, j))
        else:
            ptrs.append(b.gep(em.spread(base), [idx], source_etype=F32))
            vals.append(x)
            masks.append(lay.owned(em, j))
    if ptrs:
        em.scatter_slots(ptrs, vals, masks)  # host: one lane loop for the whole block


def _load_frag(em: Emitter, base: ir.Value, idxs: list[ir.Value]) -> list[ir.Value]:
    """Fragment registers at these per-lane element indices: i32 bit patterns (GPU), f32 (host)."""
    if em.is_host:
        return gather_smem(em, base, F32, idxs)
    return [em.b.bitcast(em.smem_load(base, F32, i), I32) for i in idxs]


def mma_m16n8k8_tf32(em: Emitter, a_regs: list, b_regs: list, c: list[ir.Value]) -> list[ir.Value]:
    """One ``mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32``: ``c += A @ B`` per warp."""
    b = em.b
    if em.is_ptx:
        st = ir.LiteralStructType([F32] * 4)
        fn = em.declare("llvm.nvvm.mma.m16n8k8.row.col.tf32", st, [I32] * 6 + [F32] * 4)
        r = b.call(fn, list(a_regs) + list(b_regs) + list(c))
    else:
        r = b.call(_host_mma_helper(em), list(a_regs) + list(b_regs) + list(c))
    return [b.extract_value(r, i) for i in range(4)]


def _host_mma_helper(em: Emitter) -> ir.Function:
    """Host: ``__eggpu_mma_m16n8k8_tf32_v{NT}(a0..a3, b0, b1, c0..c3)``: one mma per warp, all warps.

    For accumulator ``c_i`` of lane ``L`` (row ``g + 8*(i>=2)``, column ``2t + i%2``) and each
    ``k < 8``: the A element is register ``(i>=2) + 2*(k>=4)`` of lane ``4g + k%4`` and the B
    element register ``(k>=4)`` of lane ``4*column + k%4`` (same warp); ``c_i = fma(a, b, c_i)``
    in k order. A noinline function with a scalar lane loop, as for the f16 mma.
    """
    return host_mma_function(
        em, f"__eggpu_mma_m16n8k8_tf32_v{em.nt}", n_inputs=6, k_steps=MMA_K_TF32,
        a_source=lambda i, k: ((i >= 2) + 2 * (k >= 4), k % 4),
        b_source=lambda i, k: (4 + (k >= 4), 4 * (i % 2) + k % 4))


def dot_mma_tf32(lw, op: Operation, a: LV, bv: LV, plan: MmaPlan) -> list[ir.Value]:
    """The TF32 tensor-core strategy (see the module docstring); per-slot f32 products."""
    acc = mma_tf32_fragments(lw, op, a, bv, plan, zero_fragments(lw.em, plan))
    return fragments_to_layout(lw, plan, acc)


def mma_tf32_fragments(lw, op: Operation, a: LV, bv: LV, plan: MmaPlan, acc: Fragments) -> Fragments:
    """Steps 1-3 of the module docstring: ``acc + a @ b`` in the mma fragment layout (``acc`` is
    the C input of each tile's first mma, as in :func:`eggpu.codegen.lower_mma.mma_sync_fragments`)."""
    em: Emitter = lw.em
    b = em.b
    M, N, K = plan.M, plan.N, plan.K
    sa, sb = row_strides(K, N)
    em.smem_begin_write()
    em.smem_reserve(plan.ab_bytes)
    _, off_b = tf32_ab_bytes(M, N, K)
    base_a, base_b = em.smem_array(0), em.smem_array(off_b)
    _store_padded(lw, a, base_a, sa)
    _store_padded(lw, bv, base_b, sb)
    em.barrier()

    wi, wj, lane = warp_coords(em, plan)
    g = b.lshr(lane, em.k(lane, 2))
    t = b.and_(lane, em.k(lane, 3))
    # element index of A[row0 + g, t] / B[t, col0 + g] at k = 0; steps add constants
    a_idx = [b.add(b.mul(b.add(b.mul(b.add(em.k(wi, i * plan.wm), wi), em.k(wi, MMA_M)), g), em.k(g, sa)), t)
             for i in range(plan.tiles_m)]
    b_idx = [b.add(b.mul(t, em.k(t, sb)), b.add(b.mul(b.add(em.k(wj, j * plan.wn), wj), em.k(wj, MMA_N)), g))
             for j in range(plan.tiles_n)]

    def plus(v: ir.Value, c: int) -> ir.Value:
        return b.add(v, em.k(v, c)) if c else v

    acc = [[list(c) for c in row] for row in acc]
    for k0 in range(0, K, MMA_K_TF32):
        afr = [_load_frag(em, base_a, [plus(x, k0), plus(x, 8 * sa + k0), plus(x, k0 + 4), plus(x, 8 * sa + k0 + 4)])
               for x in a_idx]
        bfr = [_load_frag(em, base_b, [plus(y, k0 * sb), plus(y, (k0 + 4) * sb)]) for y in b_idx]
        for i in range(plan.tiles_m):
            for j in range(plan.tiles_n):
                acc[i][j] = mma_m16n8k8_tf32(em, afr[i], bfr[j], acc[i][j])
    em.smem_dirty = True
    return acc
