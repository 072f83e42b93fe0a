"""Tensor-core ``dot``: ``mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}`` fed by ``ldmatrix``.

Data movement, per ``dot(a[M,K], b[K,N])`` with 16-bit float operands (sm_80+):

1. every thread stores its owned elements of ``a`` and ``b`` (the blocked layout) into shared
   memory, row-major with an XOR swizzle of the 16-byte chunks of each row
   (:func:`swizzled_index`), so the eight 16-byte rows one ``ldmatrix`` phase reads fall in
   eight different bank groups;
2. a barrier; the ``M/16 x N/8`` output tiles are spread over a ``wm x wn`` grid of warps,
   interleaved (warp ``(wi, wj)`` owns tile rows ``wi, wi+wm, ...`` and tile columns ``wj,
   wj+wn, ...``); warps beyond ``wm*wn`` repeat the work of warp ``w % (wm*wn)`` (they
   write the same values);
3. for each 16-wide step of ``K``: ``ldmatrix.x4`` loads the A fragment of each of the warp's
   tile rows, ``ldmatrix.x4.trans`` the B fragments of two of its tile columns (``.x2.trans``
   for an odd last one), and one ``mma.sync`` per tile accumulates in f32
   (:func:`mma_sync_fragments`, which takes the C input of the first step);
4. the f32 fragments go back to shared memory (row stride ``N + 8`` floats against bank
   conflicts; in row bands when the whole ``M x N`` does not fit) and every thread reads the
   elements it owns in the blocked layout of the result (:func:`fragments_to_layout`). In a
   K loop whose carried accumulator only feeds the dot, :mod:`eggpu.codegen.mma_carry` keeps
   the fragments as loop-carried registers and runs this step once, after the loop.

Host mode (``run_cpu``) executes the same steps lane by lane in lock-step: ``ldmatrix`` is
emulated from its definition (lane ``L`` of matrix ``i`` receives elements ``2*(L%4)`` and
``2*(L%4)+1`` of the row whose address lane ``8*i + L/4`` gave; ``.trans`` the transposed
pair) with in-warp permutations and shared-memory gathers, and ``mma`` from the PTX ISA's
m16n8k16 fragment layout (``groupID = L/4``, ``tig = L%4``: ``a0,a1`` = A[g, 2t..2t+1],
``a2,a3`` = A[g+8, ...], ``a4..a7`` the same at k+8; ``b0,b1`` = B[2t..2t+1, g], ``b2,b3`` at
k+8; ``c0,c1`` = C[g, 2t..2t+1], ``c2,c3`` = C[g+8, ...]): each accumulator adds the 16
products of one step one after another in k order with ``fma``. Products of 16-bit floats
are exact in f32, so host and GPU differ only by the tensor core's internal summation order
within one 16-step (not specified by NVIDIA), like any f32 accumulation order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from llvmlite import ir

from eggpu.ir.dtypes import bf16, f16, f32
from eggpu.ir.graph import Operation

from .emitter import F32, I16, I32, Emitter
from .layout import LV
from .llvm_values import counted_loop

MMA_M, MMA_N, MMA_K = 16, 8, 16
MMA_K_TF32 = 8  # m16n8k8 for TF32 (:mod:`eggpu.codegen.lower_mma_tf32`)
SMEM_LIMIT = 48 * 1024  # static shared memory (lowering.MAX_SHARED_BYTES); beyond it, dynamic up to lw.smem_limit
C_PAD = 8  # floats of padding per row of the f32 staging buffer


@dataclass(frozen=True)
class MmaPlan:
    """How one dot is tiled: ``wm x wn`` warps, output staged in bands of ``band`` tile-row groups."""

    M: int
    N: int
    K: int
    wm: int
    wn: int
    band: int  # local tile rows per staging band (a band covers band*wm*16 rows of C)
    ab_bytes: int
    c_bytes: int
    tf32: bool = False  # f32 operands rounded to TF32, m16n8k8 (lower_mma_tf32)

    @property
    def tiles_m(self) -> int:
        return self.M // MMA_M // self.wm

    @property
    def tiles_n(self) -> int:
        return self.N // MMA_N // self.wn


def _pow2_divisor(n: int, cap: int) -> int:
    """The largest power of two <= cap dividing n."""
    d = 1
    while d * 2 <= cap and n % (d * 2) == 0:
        d *= 2
    return d


def dot_dims(op: Operation) -> tuple[int, int, int, object]:
    """``(M, K, N, operand dtype)`` of the 2-D ``dot`` ``op`` (``a: [M, K]``, ``b: [K, N]``)."""
    a, b = op.operands[0].type, op.operands[1].type
    return a.shape[0], a.shape[1], b.shape[1], a.dtype


def plan_mma(lw, op: Operation) -> MmaPlan | str:
    """The tiling of ``op`` for mma.sync, or the reason it cannot use it (a string)."""
    em: Emitter = lw.em
    M, K, N, dt = dot_dims(op)
    tf32 = dt == f32 and op.attrs.get("precision") == "tf32"
    if em.sm is None or em.sm < 80:
        where = f"sm_{em.sm}" if em.sm else "none (a portable build)"
        if tf32:
            return f"TF32 tensor cores need sm_80 or newer (target: {where}): exact f32 on CUDA cores, as Triton"
        return f"mma.sync m16n8k16 needs sm_80 or newer (target: {where})"
    if dt not in (f16, bf16) and not tf32:
        return (f"{dt} operands: tensor cores are used for f16/bf16, and for f32 with input_precision='tf32' "
                "(f32 is exact on CUDA cores by default)")
    kstep = MMA_K_TF32 if tf32 else MMA_K
    if M % MMA_M or N % MMA_N or K % kstep:
        rounded = "; operands rounded to TF32 on CUDA cores" if tf32 else ""
        return (f"shape {M}x{K} @ {K}x{N} is not a multiple of the m16n8k{kstep} tile (M%16, N%8, K%{kstep})"
                + rounded)
    nw = em.num_warps
    mt, nt = M // MMA_M, N // MMA_N
    # the most warps with distinct tiles, then the squarest per-warp block of tiles
    best = None
    wm = 1
    while wm <= nw and mt % wm == 0:
        wn = _pow2_divisor(nt, nw // wm)
        key = (wm * wn, -abs((mt // wm) * MMA_M - (nt // wn) * MMA_N))
        if best is None or key > best[0]:
            best = (key, wm, wn)
        wm *= 2
    _, wm, wn = best
    ab = tf32_ab_bytes(M, N, K)[0] if tf32 else -(-(M * K * 2) // 16) * 16 + K * N * 2
    limit = max(getattr(lw, "smem_limit", SMEM_LIMIT), SMEM_LIMIT)
    if ab > limit:
        return f"operands need {ab} bytes of shared memory, more than the {limit} bytes a CTA may use"
    band = staging_band(lw, M, N, wm, ab)
    if isinstance(band, str):
        return band
    return MmaPlan(M, N, K, wm, wn, band, ab, band * wm * MMA_M * (N + C_PAD) * 4, tf32)


def staging_band(lw, M: int, N: int, wm: int, ab: int, limit: int = 0) -> int | str:
    """The local tile rows per staging band of the f32 result (:func:`fragments_to_layout`), or
    the reason it cannot be staged. The result is staged in the operands' bytes: bands within
    48 KiB (static shared memory) unless the operands (``ab`` bytes) or ``limit`` allow more;
    a band never splits a layout chunk of the result."""
    c_limit = max(SMEM_LIMIT, ab, limit)
    stride = lw.layout((M, N)).stride
    groups = M // MMA_M // wm
    cs = (N + C_PAD) * 4
    for g in range(groups, 0, -1):
        if groups % g:
            continue
        rows = g * wm * MMA_M
        if rows * cs > c_limit:
            continue
        if g != groups and (rows * N) % stride:
            continue  # a layout chunk of the result would straddle two bands
        return g
    return f"the f32 result tile {M}x{N} cannot be staged within {c_limit} bytes of shared memory"


# ---------------------------------------------------------------- shared-memory layout


def row_strides(K: int, N: int) -> tuple[int, int]:
    """Row strides (in floats) of the staged ``a`` (``[M, K]``) and ``b`` (``[K, N]``).

    A fragment load reads ``A[g, t]`` for the 32 lanes (``g < 8``, ``t < 4``): with a stride
    ``= 4 (mod 8)`` the banks ``4*(g*odd % 8) + t`` are all distinct. A ``B[t, g]`` load needs
    the stride ``= 8 (mod 16)`` (banks ``8*(t*odd % 4) + g``). K and N are multiples of 8.
    """
    return K + 4, N if N % 16 == 8 else N + 8


def tf32_ab_bytes(M: int, N: int, K: int) -> tuple[int, int]:
    """``(bytes of the staged operands, byte offset of b)`` in shared memory."""
    sa, sb = row_strides(K, N)
    off_b = -(-(M * sa * 4) // 16) * 16
    return off_b + K * sb * 4, off_b


def swizzle_params(cols: int) -> tuple[int, int]:
    """``(p, s)`` of :func:`swizzled_index` for rows of ``cols`` 16-bit elements."""
    chunks = cols // 8
    p = _pow2_divisor(chunks, 8)
    s = (8 // p).bit_length() - 1 if chunks & (chunks - 1) == 0 else 0
    return p, s


def swizzled_chunk(r: int, chunk: int, cols: int) -> int:
    """Python twin of :func:`swizzled_index` for one 16-byte chunk: the physical chunk of ``[r, chunk]``."""
    p, s = swizzle_params(cols)
    return chunk ^ ((r >> s) & (p - 1))


def swizzled_index(em: Emitter, r: ir.Value, c: ir.Value, cols: int) -> ir.Value:
    """Element index of ``[r, c]`` in a row-major ``[*, cols]`` 16-bit array with XOR-swizzled chunks.

    A row is ``cols / 8`` chunks of 16 bytes; chunk ``c / 8`` of row ``r`` is stored at chunk
    ``(c / 8) ^ phase(r)``, ``phase(r) = (r >> s) & (p - 1)`` with ``p`` the largest power of
    two <= 8 dividing the chunk count and ``s = log2(8 / p)`` when the chunk count is a power
    of two (rows shorter than 128 bytes share a 128-byte line). Eight consecutive rows at
    the same logical chunk then occupy eight different 16-byte bank groups (conflict-free
    ``ldmatrix``); the permutation stays inside each row, so it is a bijection.
    """
    b = em.b
    p, s = swizzle_params(cols)
    if p == 1:
        return b.add(b.mul(r, em.k(r, cols)), c)
    phase = b.and_(b.lshr(r, em.k(r, s)) if s else r, em.k(r, p - 1))
    chunk = b.xor(b.lshr(c, em.k(c, 3)), phase)
    return b.add(b.add(b.mul(r, em.k(r, cols)), b.shl(chunk, em.k(c, 3))), b.and_(c, em.k(c, 7)))


def _chunked(lw, shape: tuple[int, ...], cols: int) -> int:
    """Slots per staging store: the layout chunk ``vec`` on the GPU when it divides the row
    (``vec`` consecutive elements of one row sit inside one 16-byte swizzle chunk, since ``vec``
    divides 8), else 1; the host scatters per element."""
    lay = lw.layout(shape)
    return lay.vec if lw.em.is_ptx and lay.vec > 1 and cols % lay.vec == 0 else 1


def staging_indices(lw, shape: tuple[int, ...], cols: int) -> list[tuple[ir.Value, ir.Value | None]]:
    """``(swizzled element index, owned mask)`` of every staging store of a ``shape`` operand
    (one per :func:`_chunked` slots; ownership is per chunk since numel is a multiple of vec).
    Pure functions of ``tid``: a K loop computes them once, before the loop."""
    em = lw.em
    lay = lw.layout(shape)
    w = _chunked(lw, shape, cols)
    out = []
    for j0 in range(0, lay.per, w):
        r, c = lay.coords(em, j0)
        out.append((swizzled_index(em, r, c, cols), lay.owned(em, j0)))
    return out


def _store_swizzled(lw, src: LV, base: ir.Value, cols: int,
                    idxs: list[tuple[ir.Value, ir.Value | None]] | None = None) -> None:
    """Every thread stores its owned elements of ``src`` at :func:`swizzled_index` (``idxs``:
    :func:`staging_indices`, computed here when not given). On the GPU a layout chunk is one
    vector store; the host scatters per element in one lane loop."""
    em = lw.em
    shape = src.type.shape
    t = em.mem_type(src.type.dtype)
    elems = lw.elems(src)
    w = _chunked(lw, shape, cols)
    if idxs is None:
        idxs = staging_indices(lw, shape, cols)
    store_staged(em, base, t, w, idxs, elems)


def store_staged(em: Emitter, base: ir.Value, t: ir.Type, w: int,
                 idxs: list[tuple[ir.Value, ir.Value | None]], elems: list[ir.Value]) -> None:
    """Store ``elems`` into shared memory at ``base``: entry ``n`` of ``idxs`` (element index,
    ownership predicate or None) takes ``elems[n*w : (n+1)*w]``. On the GPU each entry is one
    ``w``-wide vector store (under its predicate); the host scatters per element in one lane loop."""
    b = em.b
    if em.is_host:
        ptrs = [b.gep(em.spread(base), [idx], source_etype=t) for idx, _ in idxs]
        em.scatter_slots(ptrs, elems, [m for _, m in idxs])
        return
    for n, (idx, owned) in enumerate(idxs):
        val = elems[n * w]
        if w > 1:
            val = ir.Constant(ir.VectorType(t, w), ir.Undefined)
            for i in range(w):
                val = b.insert_element(val, elems[n * w + i], I32(i))
        p = b.gep(base, [idx], source_etype=t)
        if owned is None:
            b.store(val, p, align=w * 2)
        else:
            with b.if_then(owned):
                b.store(val, p, align=w * 2)


# ---------------------------------------------------------------- warp-level primitives


def warp_permute(em: Emitter, v: ir.Value, src_lane) -> ir.Value:
    """Host only: lane ``L`` of every warp gets ``v`` of lane ``src_lane(L)`` of the same warp."""
    perm = [(t & ~31) | src_lane(t & 31) for t in range(em.nt)]
    return em.b.shuffle_vector(v, ir.Constant(v.type, ir.Undefined), ir.Constant(ir.VectorType(I32, em.nt), perm))


def _lane_consts(em: Emitter, fn) -> ir.Value:
    """A thread-level i32 constant ``fn(lane)`` (host: a vector constant; GPU: computed)."""
    if em.is_host:
        return ir.Constant(ir.VectorType(I32, em.nt), [fn(t & 31) for t in range(em.nt)])
    raise AssertionError("host only")


def ldmatrix(em: Emitter, base: ir.Value, elem_t: ir.Type, idx: ir.Value, count: int, trans: bool) -> list:
    """``ldmatrix.sync.aligned.m8n8.x{count}{.trans}.shared.b16``: ``count`` 8x8 16-bit matrices.

    ``idx`` (thread-level) is the element index of the 8-element row this lane addresses
    (lanes ``8i..8i+7`` give the rows of matrix ``i``). Returns one register per matrix: an
    i32 on the GPU, a ``(lo, hi)`` pair of 16-bit lane vectors on the host.
    """
    b = em.b
    if em.is_ptx:
        p = b.gep(base, [idx], source_etype=I16)
        name = f"llvm.nvvm.ldmatrix.sync.aligned.m8n8.x{count}{'.trans' if trans else ''}.b16.p3"
        st = ir.LiteralStructType([I32] * count)
        fn = em.declare(name, st, [p.type])
        r = b.call(fn, [p])
        return [b.extract_value(r, i) for i in range(count)]
    idxs = []
    for i in range(count):
        if not trans:
            row = warp_permute(em, idx, lambda L, i=i: 8 * i + L // 4)
            e = b.add(row, _lane_consts(em, lambda L: 2 * (L % 4)))
            idxs += [e, b.add(e, em.k(e, 1))]
        else:
            col = _lane_consts(em, lambda L: L // 4)
            r0 = warp_permute(em, idx, lambda L, i=i: 8 * i + 2 * (L % 4))
            r1 = warp_permute(em, idx, lambda L, i=i: 8 * i + 2 * (L % 4) + 1)
            idxs += [b.add(r0, col), b.add(r1, col)]
    vals = gather_smem(em, base, elem_t, idxs)
    return [(vals[2 * i], vals[2 * i + 1]) for i in range(count)]


def gather_smem(em: Emitter, base: ir.Value, t: ir.Type, idxs: list[ir.Value]) -> list[ir.Value]:
    """Host: every lane loads element ``idxs[n]`` of the array ``t[]`` at ``base``, for every n, in one lane loop."""
    b = em.b
    ptrs = [b.gep(em.spread(base), [i], source_etype=t) for i in idxs]
    return em.lane_loop(ptrs, [t] * len(ptrs), lambda lanes: [b.load(p, typ=t) for p in lanes])


def mma_m16n8k16(em: Emitter, dt, a_regs: list, b_regs: list, c: list[ir.Value]) -> list[ir.Value]:
    """One ``mma.sync.aligned.m16n8k16.row.col.f32.{f16|bf16}.{f16|bf16}.f32``: ``c += A @ B`` per warp."""
    b = em.b
    if em.is_ptx:
        if dt == f16:
            h2 = ir.VectorType(em.reg_type(f16), 2)
            args = [b.bitcast(x, h2) for x in a_regs + b_regs]
            name = "llvm.nvvm.mma.m16n8k16.row.col.f32.f32"
        else:
            args = list(a_regs) + list(b_regs)
            name = "llvm.nvvm.mma.m16n8k16.row.col.bf16"
        st = ir.LiteralStructType([F32] * 4)
        fn = em.declare(name, st, [x.type for x in args] + [F32] * 4)
        r = b.call(fn, args + list(c))
        return [b.extract_value(r, i) for i in range(4)]
    # host: a_regs/b_regs hold f32 lane vectors already (host_fragments_f32)
    helper = _host_mma_helper(em)
    r = b.call(helper, [x for reg in a_regs for x in reg] + [x for reg in b_regs for x in reg] + list(c))
    return [b.extract_value(r, i) for i in range(4)]


def host_fragments_f32(em: Emitter, dt, regs: list) -> list:
    """Host: ldmatrix registers of 16-bit values widened (exactly) to f32, once per fragment."""
    return [tuple(em.ext_f32(x, dt) for x in reg) for reg in regs]


def _host_mma_helper(em: Emitter) -> ir.Function:
    """Host: ``__eggpu_mma_m16n8k16_v{NT}(a0..a7, b0..b3, c0..c3)``: one mma per warp, all warps.

    The operands are f32 lane vectors (16-bit values widened exactly). A loop over the lanes
    reads, for each accumulator ``c_i`` of lane ``L`` and each ``k``, the A element from lane
    ``(L & ~3) | (k%8)/2`` (register ``2*(i>=2) + 4*(k>=8) + k%2``) and the B element from lane
    ``4*(2*(L%4) + i%2) + (k%8)/2`` (register ``2*(k>=8) + k%2``) of the same warp and
    accumulates ``c_i = fma(a, b, c_i)`` for k = 0..15. A separate (noinline) function with a
    scalar loop keeps JIT time small however many tiles a dot has.
    """
    return host_mma_function(
        em, f"__eggpu_mma_m16n8k16_v{em.nt}", n_inputs=12, k_steps=MMA_K,
        a_source=lambda i, k: (2 * (i >= 2) + 4 * (k >= 8) + k % 2, (k % 8) >> 1),
        b_source=lambda i, k: (8 + 2 * (k >= 8) + k % 2, 4 * (i % 2) + (k % 8) // 2))


def host_mma_function(em: Emitter, name: str, *, n_inputs: int, k_steps: int,
                      a_source: Callable[[int, int], tuple[int, int]],
                      b_source: Callable[[int, int], tuple[int, int]]) -> ir.Function:
    """Host: the (cached, internal, noinline) function ``name(in_0.., c0..c3) -> {d0..d3}`` that
    runs one mma per warp for every warp of the CTA, lane by lane, as the tensor core's fragment
    layout says. Its arguments are ``n_inputs`` f32 lane vectors of A then B registers, then the
    four accumulators. For lane ``L`` and accumulator ``i`` it computes ``c_i = fma(a, b, c_i)`` for
    ``k = 0 .. k_steps-1`` in order, where ``a_source(i, k) = (register, d)`` reads that register
    of lane ``(L & ~3) + d`` and ``b_source(i, k) = (register, d)`` reads that register of lane
    ``(L & ~31) + 8 * (L % 4) + d``. A scalar loop over the lanes in a separate function keeps JIT
    time small however many tiles a dot has."""
    fn = em.module.globals.get(name)
    if fn is not None:
        return fn
    nt = em.nt
    fv = ir.VectorType(F32, nt)
    st = ir.LiteralStructType([fv] * 4)
    fn = ir.Function(em.module, ir.FunctionType(st, [fv] * (n_inputs + 4)), name)
    fn.linkage = "internal"
    fn.attributes.add("noinline")
    b = em.builder(fn.append_basic_block("entry"))
    arr = ir.ArrayType(F32, nt)

    def alloca() -> ir.Value:
        a = b.alloca(arr)
        a.align = 64
        a.type = ir.PointerType()  # opaque pointer: a vector is stored into the array's bytes
        return a

    bufs = []
    for v in fn.args:
        bufs.append(alloca())
        b.store(v, bufs[-1])
    outs = [alloca() for _ in range(4)]
    fma = em.declare("llvm.fma.f32", F32, [F32, F32, F32])

    def elem(buf, at):
        return b.load(b.gep(buf, [I32(0), at], source_etype=arr), typ=F32)

    def lane(t: ir.Value) -> None:
        quad = b.and_(t, I32(~3))  # first lane of the thread's group of 4
        col = b.add(b.and_(t, I32(~31)), b.shl(b.and_(t, I32(3)), I32(3)))  # warp's first lane + 8 * (L % 4)
        for i in range(4):
            acc = elem(bufs[n_inputs + i], t)
            for k in range(k_steps):
                (ra, da), (rb, db) = a_source(i, k), b_source(i, k)
                acc = b.call(fma, [elem(bufs[ra], b.add(quad, I32(da))), elem(bufs[rb], b.add(col, I32(db))), acc])
            b.store(acc, b.gep(outs[i], [I32(0), t], source_etype=arr))

    counted_loop(b, nt, lane)
    res = ir.Constant(st, ir.Undefined)
    for i in range(4):
        res = b.insert_value(res, b.load(outs[i], typ=fv), i)
    b.ret(res)
    return fn


# ---------------------------------------------------------------- the strategy


Fragments = list[list[list[ir.Value]]]
"""The f32 accumulators of a warp's tiles: ``acc[i][j][r]`` is register ``c_r`` of the warp's
local tile ``(i, j)`` (tile row ``i*wm + wi``, tile column ``j*wn + wj``), a thread-level value."""


def warp_coords(em: Emitter, plan: MmaPlan) -> tuple[ir.Value, ir.Value, ir.Value]:
    """``(wi, wj, lane)`` of this thread: its warp's place in the ``wm x wn`` grid (warps beyond
    the grid repeat warp ``w % (wm*wn)``) and its lane. Pure functions of ``tid``."""
    b = em.b
    tid = em.tid()
    lane = b.and_(tid, em.k(tid, 31))
    warp = b.lshr(tid, em.k(tid, 5))
    grid = plan.wm * plan.wn
    wslot = b.urem(warp, em.k(warp, grid)) if em.num_warps > grid else warp
    wi = b.udiv(wslot, em.k(wslot, plan.wn))
    wj = b.urem(wslot, em.k(wslot, plan.wn))
    return wi, wj, lane


def zero_fragments(em: Emitter, plan: MmaPlan) -> Fragments:
    """Accumulators all 0.0 (a dot without an accumulator)."""
    zero = em.const(em.thread_type(F32), 0.0)
    return [[[zero] * 4 for _ in range(plan.tiles_n)] for _ in range(plan.tiles_m)]


def dot_mma_sync(lw, op: Operation, a: LV, bv: LV, plan: MmaPlan) -> list[ir.Value]:
    """The tensor-core strategy (see the module docstring); per-slot f32 products."""
    acc = mma_sync_fragments(lw, op, a, bv, plan, zero_fragments(lw.em, plan))
    return fragments_to_layout(lw, plan, acc)


@dataclass
class MmaAddresses:
    """Shared-memory element indices of one f16/bf16 mma dot, per thread (pure functions of
    ``tid``): the staging stores of ``a`` and ``b`` (:func:`staging_indices`) and the
    ``ldmatrix`` row addresses per 16-step ``ks``: ``a_ld[ks][i]`` (tile row ``i``),
    ``b_ld[ks][p]`` (tile-column pair ``p``, then the odd last column)."""

    a_store: list[tuple[ir.Value, ir.Value | None]]
    b_store: list[tuple[ir.Value, ir.Value | None]]
    a_ld: list[list[ir.Value]]
    b_ld: list[list[ir.Value]]


def mma_addresses(lw, plan: MmaPlan) -> MmaAddresses:
    """The :class:`MmaAddresses` of ``plan`` (a K loop emits them once, before the loop)."""
    M, N, K = plan.M, plan.N, plan.K
    a_store = staging_indices(lw, (M, K), K)
    b_store = staging_indices(lw, (K, N), N)
    return MmaAddresses(a_store, b_store, *ldmatrix_indices(lw, plan))


def ldmatrix_indices(lw, plan: MmaPlan) -> tuple[list[list[ir.Value]], list[list[ir.Value]]]:
    """``(a_ld, b_ld)`` of :class:`MmaAddresses`."""
    em: Emitter = lw.em
    b = em.b
    N, K = plan.N, plan.K
    wi, wj, lane = warp_coords(em, plan)
    # per-lane ldmatrix row addresses (element index of the 8-element row the lane gives)
    a_row = b.add(b.and_(lane, em.k(lane, 7)), b.shl(b.and_(b.lshr(lane, em.k(lane, 3)), em.k(lane, 1)), em.k(lane, 3)))
    a_col = b.shl(b.lshr(lane, em.k(lane, 4)), em.k(lane, 3))  # 0 or 8
    b_row = b.and_(lane, em.k(lane, 15))  # k row within the step (lanes 16-31: the second column's)
    hi_half = b.icmp_unsigned(">=", lane, em.k(lane, 16))
    rows = [b.add(b.mul(b.add(b.mul(em.k(wi, i), em.k(wi, plan.wm)), wi), em.k(wi, MMA_M)), a_row)
            for i in range(plan.tiles_m)]
    cols = [b.mul(b.add(em.k(wj, j * plan.wn), wj), em.k(wj, MMA_N)) for j in range(plan.tiles_n)]
    # lanes 0-15 address column pair member 2p, lanes 16-31 member 2p+1 (x4); the odd last one: x2
    b_cols = [b.select(hi_half, cols[j + 1], cols[j]) for j in range(0, plan.tiles_n - 1, 2)]
    if plan.tiles_n % 2:
        b_cols.append(cols[-1])
    a_ld, b_ld = [], []
    for ks in range(K // MMA_K):
        k0 = ks * MMA_K
        krow = b.add(b_row, em.k(b_row, k0))
        a_ld.append([swizzled_index(em, r, b.add(a_col, em.k(a_col, k0)), K) for r in rows])
        b_ld.append([swizzled_index(em, krow, c, N) for c in b_cols])
    return a_ld, b_ld


def mma_sync_fragments(lw, op: Operation, a: LV, bv: LV, plan: MmaPlan, acc: Fragments,
                       addr: MmaAddresses | None = None,
                       staged: tuple[ir.Value, ir.Value] | None = None) -> Fragments:
    """Steps 1-3 of the module docstring: ``acc + a @ b`` in the mma fragment layout.

    ``acc`` is the C input of the first mma of every tile (each mma adds its 16 products to
    it), so a caller that passes the running accumulator of a K loop gets the tensor core's
    summation order: per 16-step, the products are added to the running sum.
    B fragments of two tile columns come from one ``ldmatrix.x4.trans`` (lanes 16-31 give the
    rows of the second column); an odd last column uses ``.x2.trans``. ``addr``: the
    shared-memory indices (:func:`mma_addresses`), computed here when not given. ``staged``:
    the shared-memory bases where ``a`` and ``b`` already are, swizzled and visible to every
    thread (a software-pipelined K loop, :mod:`eggpu.codegen.mma_pipeline`): no staging here."""
    em: Emitter = lw.em
    M, K = plan.M, plan.K
    dt = a.type.dtype
    et = em.mem_type(dt)
    if staged is not None:
        base_a, base_b = staged
    else:
        em.smem_begin_write()
        em.smem_reserve(plan.ab_bytes)
        off_b = -(-(M * K * 2) // 16) * 16
        base_a, base_b = em.smem_array(0), em.smem_array(off_b)
        _store_swizzled(lw, a, base_a, K, addr.a_store if addr else None)
        _store_swizzled(lw, bv, base_b, plan.N, addr.b_store if addr else None)
        em.barrier()
    # not hoisted: the fragment addresses after the barrier (shorter live ranges, fewer spills)
    a_ld, b_ld = (addr.a_ld, addr.b_ld) if addr else ldmatrix_indices(lw, plan)

    acc = [[list(c) for c in row] for row in acc]
    pairs = plan.tiles_n // 2
    for ks in range(K // MMA_K):
        afr = [ldmatrix(em, base_a, et, idx, 4, False) for idx in a_ld[ks]]
        bfr: list = []
        for p, idx in enumerate(b_ld[ks]):
            if p < pairs:
                regs = ldmatrix(em, base_b, et, idx, 4, True)
                bfr += [regs[:2], regs[2:]]
            else:
                bfr.append(ldmatrix(em, base_b, et, idx, 2, True))
        if em.is_host:
            afr = [host_fragments_f32(em, dt, f) for f in afr]
            bfr = [host_fragments_f32(em, dt, f) for f in bfr]
        for i in range(plan.tiles_m):
            for j in range(plan.tiles_n):
                acc[i][j] = mma_m16n8k16(em, dt, afr[i], bfr[j], acc[i][j])
    em.smem_dirty = True
    return acc


def fragments_to_layout(lw, plan: MmaPlan, acc: Fragments) -> list[ir.Value]:
    """The C fragments, through shared memory (row bands), as the result's per-slot values."""
    em: Emitter = lw.em
    b = em.b
    wi, wj, lane = warp_coords(em, plan)
    M, N = plan.M, plan.N
    cs = N + C_PAD
    g = b.lshr(lane, em.k(lane, 2))
    t2 = b.shl(b.and_(lane, em.k(lane, 3)), em.k(lane, 1))
    out_lay = lw.layout((M, N))
    band_rows = plan.band * plan.wm * MMA_M
    out: list[ir.Value | None] = [None] * out_lay.per
    em.smem_reserve(plan.c_bytes)
    base = em.smem_array(0)
    for first in range(0, plan.tiles_m, plan.band):
        row0 = first * plan.wm * MMA_M
        em.smem_begin_write()
        st_ptrs: list[ir.Value] = []
        st_vals: list[ir.Value] = []
        for i in range(first, first + plan.band):
            # tile row i*wm + wi, relative to the band's first row
            r_base = b.add(b.mul(b.add(em.k(wi, (i - first) * plan.wm), wi), em.k(wi, MMA_M)), g)
            for j in range(plan.tiles_n):
                col = b.add(b.mul(b.add(em.k(wj, j * plan.wn), wj), em.k(wj, MMA_N)), t2)
                for r in range(4):
                    row = b.add(r_base, em.k(r_base, 8)) if r >= 2 else r_base
                    c = b.add(col, em.k(col, 1)) if r % 2 else col
                    idx = b.add(b.mul(row, em.k(row, cs)), c)
                    if em.is_ptx:
                        em.smem_store(base, F32, idx, acc[i][j][r])
                    else:
                        st_ptrs.append(b.gep(em.spread(base), [idx], source_etype=F32))
                        st_vals.append(acc[i][j][r])
        if st_ptrs:
            em.scatter_slots(st_ptrs, st_vals, [None] * len(st_ptrs))  # host: one lane loop
        em.barrier()
        lo, hi = row0 * N, (row0 + band_rows) * N
        slots, idxs = [], []
        for j in range(out_lay.per):
            first_flat = (j // out_lay.vec) * out_lay.stride
            if not (lo <= first_flat < hi or band_rows == M):
                continue
            m, n = out_lay.coords(em, j)
            rel = b.sub(m, em.k(m, row0)) if row0 else m
            slots.append(j)
            idxs.append(b.add(b.mul(rel, em.k(rel, cs)), n))
        vals = (gather_smem(em, base, F32, idxs) if em.is_host and idxs
                else [em.smem_load(base, F32, i) for i in idxs])
        for j, v in zip(slots, vals):
            out[j] = v
        em.smem_dirty = True
    zero = em.const(em.thread_type(F32), 0.0)
    return [v if v is not None else zero for v in out]  # slots beyond numel: don't-care
