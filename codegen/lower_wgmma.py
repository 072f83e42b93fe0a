"""Tensor-core ``dot`` on sm_90a: ``wgmma.mma_async.sync.aligned.m64nNk16.f32.{f16,bf16}`` (opt-in).

Chosen only with ``dot_strategy="wgmma"`` (``eggpu.compile``; the default choice never picks
it until a GPU run has checked it). Data movement, per ``dot(a[M,K], b[K,N])``:

1. every thread stores its owned elements of ``a`` and ``b`` into shared memory in the
   canonical layouts of the PTX ISA's matrix descriptors, as Triton stages them: ``a``
   K-major (:func:`kmajor_byte`: ``K`` cut into blocks of ``W`` = 64, 32 or 16 elements, the
   largest dividing ``K``, each block a ``M x 2W``-byte array with the hardware's ``2W``-byte
   swizzle: 16-byte chunk ``c`` of a 128-byte line ``l`` lives at chunk ``c ^ (l % (2W/16))``,
   on absolute shared addresses, so the operand bases are 1024-byte aligned); ``b`` MN-major
   when ``N % 16 == 0`` (:func:`mnmajor_byte`: atoms of ``W`` columns, ``W`` from ``N``, each
   ``K`` rows of ``2W`` bytes, swizzled; the descriptor's leading byte offset steps from atom to
   atom and ``imm-trans-b = 1``), else K-major like ``a`` (``b`` transposed, scalar stores);
2. ``fence.proxy.async.shared::cta`` (the generic-proxy stores become visible to the async
   proxy that wgmma reads through), a barrier, ``wgmma.fence``;
3. warps form warpgroups of 4 (``num_warps`` a multiple of 4); warpgroup ``g`` of the ``G``
   that get distinct work owns the 64-row blocks ``g, g+G, ...`` of ``C`` and all ``N``
   columns; extra warpgroups repeat warpgroup ``g % G``. For each 16-step of ``K``, each block
   issues ``N / n`` wgmma instructions of ``m64nNk16`` (``n`` <= 256) whose descriptors point at
   the step's 16 k (``a``: start address advanced by 32 bytes within a swizzle block; MN-major
   ``b``: by 16 rows; both as Triton does); then ``wgmma.commit_group`` and
   ``wgmma.wait_group 0`` (which also re-defines the accumulator registers, so nothing reads
   them before the wait). In a K loop whose accumulator only feeds the dot
   (:mod:`eggpu.codegen.mma_carry`) the registers stay carried across iterations; when that
   loop is software-pipelined (:mod:`eggpu.codegen.mma_pipeline`) steps 1-2 are its cp.async
   stages (``staged``), the wait is ``wgmma.wait_group 1`` (one group in flight) and the
   last group is waited for after the loop;
4. the accumulator fragment of ``m64nNk16`` per warp is that of ``mma.m16n8`` per 16 rows
   (warp ``w % 4`` of the group holds rows ``16*(w%4) + groupID (+8)``; register ``4j + r`` is
   column ``8j + 2*(lane%4) + r%2``), so the f32 result goes through
   :func:`eggpu.codegen.lower_mma.fragments_to_layout` with a ``4G x 1`` warp grid.

Host mode (``run_cpu``) executes the same steps: the same stores at the same swizzled byte
offsets, and each wgmma is emulated by :func:`_host_wgmma_helper`, which decodes the two 64-bit
descriptors as the PTX ISA defines them (start address, leading and stride byte offsets,
swizzle mode, K-major or MN-major by ``imm-trans-b``) and
reads every A/B element from shared memory through that decoding, so a mismatch between the
store layout and the descriptors fails ``run_cpu`` vs numpy. Each accumulator adds the 16
products of one step in k order with ``fma`` (exact products of 16-bit floats; the hardware's
summation order inside one step is unspecified, as for mma.sync).
"""

from __future__ import annotations

from llvmlite import ir

from eggpu.ir.dtypes import bf16, f16
from eggpu.ir.graph import Operation

from .emitter import Emitter
from .layout import LV
from .llvm_values import F32, I16, I32, I64, VOID, counted_loop
from .lower_mma import (
    MMA_M,
    MMA_N,
    SMEM_LIMIT,
    Fragments,
    MmaPlan,
    dot_dims,
    fragments_to_layout,
    staging_band,
    store_staged,
    warp_coords,
    zero_fragments,
)

WG_M, WG_K, WG_N_MAX = 64, 16, 256
MAX_ACC = 128  # f32 accumulators per thread beyond which registers would spill
ALIGN = 1024  # the 128B swizzle pattern repeats every 1024 bytes (absolute shared address)
SWIZZLE_MODE = {128: 1, 64: 2, 32: 3}  # descriptor bits 62-63


def swizzle_bytes(K: int) -> int:
    """The swizzle width (bytes) of a K-major operand with ``K`` columns: ``2W``, ``W`` the
    largest of 64, 32, 16 dividing ``K`` (``K % 16 == 0``)."""
    return next(2 * w for w in (64, 32, 16) if K % w == 0)


def swizzle(addr: int, S: int) -> int:
    """The hardware's ``S``-byte swizzle of a byte address (Python twin of the IR in :func:`kmajor_index`)."""
    return addr ^ (((addr >> 7) & (S // 16 - 1)) << 4)


def kmajor_byte(r: int, k: int, rows: int, K: int) -> int:
    """Byte offset of element ``[r, k]`` of a K-major 16-bit ``[rows, K]`` operand (see the module docstring)."""
    S = swizzle_bytes(K)
    W = S // 2
    return swizzle((k // W) * rows * S + r * S + (k % W) * 2, S)


def kmajor_index(em: Emitter, r: ir.Value, k: ir.Value, rows: int, K: int) -> ir.Value:
    """Element index (bytes / 2) of ``[r, k]`` of a K-major ``[rows, K]`` operand (thread-level)."""
    b = em.b
    S = swizzle_bytes(K)
    W = S // 2
    kb = b.lshr(k, em.k(k, W.bit_length() - 1))
    kin = b.and_(k, em.k(k, W - 1))
    logical = b.add(b.add(b.mul(kb, em.k(kb, rows * S)), b.mul(r, em.k(r, S))), b.shl(kin, em.k(kin, 1)))
    phase = b.and_(b.lshr(logical, em.k(logical, 7)), em.k(logical, S // 16 - 1))
    phys = b.xor(logical, b.shl(phase, em.k(phase, 4)))
    return b.lshr(phys, em.k(phys, 1))


def mn_major(N: int) -> bool:
    """Whether ``b [K, N]`` is staged MN-major (``N % 16 == 0``: rows of ``N`` with a swizzle of
    ``2W`` bytes, ``W`` the largest of 64, 32, 16 dividing ``N``; ``imm-trans-b = 1``, as Triton
    stages it), else K-major like ``a`` (``N % 16 == 8``)."""
    return N % 16 == 0


def mnmajor_byte(k: int, n: int, K: int, N: int) -> int:
    """Byte offset of element ``[k, n]`` of an MN-major 16-bit ``[K, N]`` operand: ``N`` cut into
    atoms of ``W = S/2`` columns, each a ``K x S``-byte array with the ``S``-byte swizzle."""
    S = swizzle_bytes(N)
    W = S // 2
    return swizzle((n // W) * K * S + k * S + (n % W) * 2, S)


def instr_n(N: int) -> int:
    """The ``n`` of each wgmma covering ``N`` columns: the largest multiple of 8 <= 256 dividing
    ``N`` (of the swizzle atom's ``W`` columns when ``b`` is MN-major)."""
    step = swizzle_bytes(N) // 2 if mn_major(N) else 8
    return next(d for d in range(WG_N_MAX // step * step, step - 1, -step) if N % d == 0)


def operand_offsets(M: int, N: int, K: int) -> tuple[int, int]:
    """``(byte offset of b, bytes of both operands)``: ``a`` at 0, ``b`` at the next 1024-byte boundary."""
    off_b = -(-(M * K * 2) // ALIGN) * ALIGN
    return off_b, off_b + N * K * 2


def plan_wgmma(lw, op: Operation) -> MmaPlan | str:
    """The tiling of ``op`` for wgmma (``wm = 4G`` warps in one column), or why it cannot use it."""
    em: Emitter = lw.em
    M, K, N, dt = dot_dims(op)
    where = getattr(lw, "target_name", "") or ("host (emulating sm_90a)" if em.is_host else "unknown")
    if em.is_ptx and getattr(lw, "target_name", "") != "sm_90a":
        return f"wgmma needs the sm_90a target (target: {where})"
    if em.is_host and em.sm != 90:
        return f"wgmma needs the sm_90a target (the CPU build emulates sm_{em.sm})"
    if dt not in (f16, bf16):
        return f"{dt} operands: wgmma is used for f16/bf16 operands (f32 accumulation)"
    if em.num_warps % 4:
        return f"wgmma needs warpgroups of 4 warps: num_warps={em.num_warps} is not a multiple of 4"
    if M % WG_M or N % MMA_N or K % WG_K:
        return f"shape {M}x{K} @ {K}x{N} is not a multiple of the m64nNk16 tile (M%64, N%8, K%16)"
    groups = em.num_warps // 4
    gm = 1
    while gm * 2 <= groups and (M // WG_M) % (gm * 2) == 0:
        gm *= 2
    acc = (M // WG_M // gm) * N // 2
    if acc > MAX_ACC:
        return (f"{acc} f32 accumulators per thread (more than {MAX_ACC}: registers would spill); "
                "use more warps or a smaller tile")
    if mn_major(N) and K * swizzle_bytes(N) >= 1 << 18:
        return f"K={K} is too deep for the 14-bit leading byte offset of an MN-major b descriptor"
    ab = operand_offsets(M, N, K)[1]
    limit = max(getattr(lw, "smem_limit", SMEM_LIMIT), SMEM_LIMIT)
    if ab > limit:
        return f"operands need {ab} bytes of shared memory, more than the {limit} bytes a CTA may use"
    wm = 4 * gm
    band = staging_band(lw, M, N, wm, ab)
    if isinstance(band, str):  # a 64-row block per warpgroup is the smallest band: more shared memory
        band = staging_band(lw, M, N, wm, ab, limit)
    if isinstance(band, str):
        return band
    return MmaPlan(M, N, K, wm, 1, band, ab, band * wm * MMA_M * (N + 8) * 4)


def reason(plan: MmaPlan, dt) -> str:
    """The ``ck.report["dot"]`` reason of a wgmma dot."""
    n = instr_n(plan.N)
    return (f"tensor cores: wgmma.mma_async m64n{n}k16 f32 += {dt} x {dt} from shared memory "
            f"(K-major operands, {swizzle_bytes(plan.K)}-byte swizzle, matrix descriptors), "
            f"{plan.wm // 4} warpgroup(s) of {plan.tiles_m} m64 block(s); opt-in "
            "(dot_strategy='wgmma'), not yet checked on a GPU")


# ---------------------------------------------------------------- PTX pieces


def _asm(em: Emitter, text: str, outs: int = 0, ins: list[ir.Value] = (), cons: str = "") -> list[ir.Value]:
    """A side-effecting inline-asm statement; ``outs`` f32 results tied to the first inputs."""
    b = em.b
    ret = ir.LiteralStructType([F32] * outs) if outs > 1 else (F32 if outs else VOID)
    fnty = ir.FunctionType(ret, [x.type for x in ins])
    r = b.call(ir.InlineAsm(fnty, text, cons + ("," if cons else "") + "~{memory}", side_effect=True), list(ins))
    if outs == 0:
        return []
    return [r] if outs == 1 else [b.extract_value(r, i) for i in range(outs)]


def _wgmma_ptx(em: Emitter, dt, n: int, da: ir.Value, db: ir.Value, acc: list[ir.Value], trans_b: bool) -> list[ir.Value]:
    """One ``wgmma.mma_async`` (scale-d true: ``D = A @ B + D``), ``a`` K-major, ``b`` MN-major
    when ``trans_b``."""
    m = n // 2
    t = "f16" if dt == f16 else "bf16"
    regs = ",".join(f"${i}" for i in range(m))
    text = (f"{{\n.reg .pred p;\nsetp.ne.b32 p, ${m + 2}, 0;\n"
            f"wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{t}.{t} {{{regs}}}, ${m}, ${m + 1}, p, 1, 1, 0, {int(trans_b)};\n}}")
    cons = ",".join(["=f"] * m + ["l", "l", "r"] + [str(i) for i in range(m)])
    return _asm(em, text, m, [da, db, I32(1), *acc], cons)


def descriptor_bits(S: int, lbo: int = 0) -> int:
    """The address-independent bits of the matrix descriptor of an operand with an ``S``-byte
    swizzle (an unsigned 64-bit int): leading byte offset ``lbo >> 4`` (bits 16-29: MN-major,
    the distance between atoms of ``S/2`` columns; unused by K-major swizzled layouts, where it
    is 0 as Triton sets it), stride byte offset ``8*S >> 4`` (bits 32-45: the next group of 8
    rows, K-major, or of 8 k, MN-major), base offset 0 (bits 49-51: the bases are 1024-byte
    aligned), swizzle mode (bits 62-63: 1 = 128B, 2 = 64B, 3 = 32B)."""
    return ((8 * S) >> 4) << 32 | (lbo >> 4) << 16 | SWIZZLE_MODE[S] << 62


def _start_field(em: Emitter, addr: ir.Value) -> ir.Value:
    """The start-address field ``(addr & 0x3FFFF) >> 4`` (i32) of a shared byte address."""
    return em.b.and_(em.b.lshr(addr, em.k(addr, 4)), em.k(addr, 0x3FFF))


def _descriptor(em: Emitter, field: ir.Value, S: int, lbo: int = 0) -> ir.Value:
    """The 64-bit matrix descriptor of the operand whose :func:`_start_field` is ``field``:
    the field in bits 0-13, then :func:`descriptor_bits`."""
    b = em.b
    wide = b.zext(field, em.like_type(field, I64))
    const = descriptor_bits(S, lbo)
    return b.or_(wide, em.k(wide, const - (1 << 64) if const >= 1 << 63 else const))


# ---------------------------------------------------------------- host emulation


def _host_reader(em: Emitter, b: ir.IRBuilder, smem: ir.Value, dt):
    """``(decode, element)`` for :func:`_host_wgmma_helper`: ``decode(desc)`` gives the
    descriptor's ``(start, LBO, SBO, S)`` in bytes, ``element(start, lbo, sbo, S, x, k, mn)`` the
    f32 value of row/column ``x`` at step ``k`` read from shared memory through them."""
    def field(d: ir.Value, shift: int) -> ir.Value:
        """A 14-bit descriptor field, in bytes."""
        return b.shl(b.trunc(b.and_(b.lshr(d, I64(shift)), I64(0x3FFF)), I32), I32(4))

    def decode(d: ir.Value) -> tuple[ir.Value, ir.Value, ir.Value, ir.Value]:
        mode = b.trunc(b.lshr(d, I64(62)), I32)
        S = b.select(b.icmp_unsigned("==", mode, I32(1)), I32(128),
                     b.select(b.icmp_unsigned("==", mode, I32(2)), I32(64), I32(32)))
        return field(d, 0), field(d, 16), field(d, 32), S

    def element(start, lbo, sbo, S, x, k: int, mn: bool = False) -> ir.Value:
        if mn:  # x is the column: atoms of S/2 columns at LBO, groups of 8 k at SBO, k rows of S bytes
            w = b.lshr(S, I32(1))
            logical = b.add(b.add(start, b.mul(b.udiv(x, w), lbo)), b.add(b.mul(I32(k // 8), sbo), b.mul(I32(k % 8), S)))
            logical = b.add(logical, b.shl(b.urem(x, w), I32(1)))
        else:
            logical = b.add(b.add(b.add(start, b.mul(b.lshr(x, I32(3)), sbo)), b.mul(b.and_(x, I32(7)), S)),
                            I32(2 * k))
        mask = b.sub(b.lshr(S, I32(4)), I32(1))
        phys = b.xor(logical, b.shl(b.and_(b.lshr(logical, I32(7)), mask), I32(4)))
        return em.ext_f32(b.load(b.gep(smem, [phys], source_etype=ir.IntType(8)), typ=I16), dt)

    return decode, element


def _host_wgmma_helper(em: Emitter, dt, n: int, trans_b: bool) -> ir.Function:
    """Host: ``__eggpu_wgmma_m64n{n}k16_{dt}_{kk|kt}_v{NT}(smem, desc_a, desc_b, d_0..d_{n/2-1})``:
    one wgmma per warpgroup, all warpgroups, lane by lane. For lane ``t`` (warp ``w = t/32`` of its
    group ``w % 4``, ``g = (t%32)/4``, ``q = t%4``) and register ``r``: row ``16*(w%4) + g +
    8*((r>>1)&1)``, column ``8*(r>>2) + 2q + (r&1)``; ``d_r = fma(A[row, k], B[k, col], d_r)`` for
    k = 0..15, each element read at the address its descriptor gives, then the ``S``-byte swizzle
    (``S`` from the mode bits): K-major, start + ``(x/8)*SBO + (x%8)*S + 2k`` for row/column
    ``x``; MN-major (``b`` with ``trans_b``), start + ``(col/W)*LBO + (k/8)*SBO + (k%8)*S +
    2*(col%W)``, ``W = S/2``."""
    name = f"__eggpu_wgmma_m64n{n}k16_{dt}_{'kt' if trans_b else 'kk'}_v{em.nt}"
    fn = em.module.globals.get(name)
    if fn is not None:
        return fn
    nt, m = em.nt, n // 2
    fv, dv = ir.VectorType(F32, nt), ir.VectorType(I64, nt)
    st = ir.LiteralStructType([fv] * m)
    ptr = ir.PointerType()
    fn = ir.Function(em.module, ir.FunctionType(st, [ptr, dv, dv] + [fv] * m), name)
    fn.linkage = "internal"
    fn.attributes.add("noinline")
    b = em.builder(fn.append_basic_block("entry"))
    smem, desc_a, desc_b, *accs = fn.args
    acc_t = ir.ArrayType(ir.ArrayType(F32, nt), m)
    acc_buf = b.alloca(acc_t)
    dbufs = [b.alloca(ir.ArrayType(I64, nt)) for _ in range(2)]
    for x in (acc_buf, *dbufs):
        x.align = 64
        x.type = ir.PointerType()  # opaque pointer: a vector is stored into the array's bytes
    for r, v in enumerate(accs):
        b.store(v, b.gep(acc_buf, [I32(0), I32(r)], source_etype=acc_t))
    for buf, v in zip(dbufs, (desc_a, desc_b)):
        b.store(v, buf)
    saved, em.b = em.b, b
    fma = em.declare("llvm.fma.f32", F32, [F32, F32, F32])

    decode, element = _host_reader(em, b, smem, dt)

    def lane(t: ir.Value) -> None:
        da, db = (b.load(b.gep(buf, [I32(0), t], source_etype=ir.ArrayType(I64, nt)), typ=I64) for buf in dbufs)
        a_fields, b_fields = decode(da), decode(db)
        g = b.lshr(b.and_(t, I32(31)), I32(2))
        q = b.and_(t, I32(3))
        row0 = b.add(b.shl(b.and_(b.lshr(t, I32(5)), I32(3)), I32(4)), g)

        def reg(r: ir.Value) -> None:
            row = b.add(row0, b.shl(b.and_(b.lshr(r, I32(1)), I32(1)), I32(3)))
            col = b.add(b.add(b.shl(b.lshr(r, I32(2)), I32(3)), b.shl(q, I32(1))), b.and_(r, I32(1)))
            p = b.gep(acc_buf, [I32(0), r, t], source_etype=acc_t)
            acc = b.load(p, typ=F32)
            for k in range(WG_K):
                acc = b.call(fma, [element(*a_fields, row, k), element(*b_fields, col, k, trans_b), acc])
            b.store(acc, p)

        counted_loop(b, m, reg)

    counted_loop(b, nt, lane)
    em.b = saved
    res = ir.Constant(st, ir.Undefined)
    for r in range(m):
        res = b.insert_value(res, b.load(b.gep(acc_buf, [I32(0), I32(r)], source_etype=acc_t), typ=fv), r)
    b.ret(res)
    return fn


# ---------------------------------------------------------------- the strategy


def _stage(lw, src: LV, base: ir.Value, rows: int, cols: int, transposed: bool) -> None:
    """Every thread stores its owned elements of the ``[rows, cols]`` operand ``src`` at
    :func:`kmajor_index` (``a``; an MN-major ``b`` is the same arithmetic on ``[K, N]``; a K-major
    ``b`` is ``transposed``: ``[K, rows]`` stored as ``rows`` rows of ``cols = K``). On the GPU a
    layout chunk (``vec`` elements of one row, inside one 16-byte chunk) is one vector store,
    except transposed; the host scatters per element in one lane loop."""
    em: Emitter = lw.em
    lay = lw.layout(src.type.shape)
    t = em.mem_type(src.type.dtype)
    elems = lw.elems(src)
    w = lay.vec if em.is_ptx and not transposed and lay.vec > 1 and cols % lay.vec == 0 else 1
    idxs = []
    for j0 in range(0, lay.per, w):
        r, c = lay.coords(em, j0)
        idxs.append((kmajor_index(em, c, r, rows, cols) if transposed else kmajor_index(em, r, c, rows, cols),
                     lay.owned(em, j0)))
    store_staged(em, base, t, w, idxs, elems)


def wgmma_fragments(lw, op: Operation, a: LV, bv: LV, plan: MmaPlan, acc: Fragments,
                    staged: tuple[ir.Value, ir.Value] | None = None, after=None) -> Fragments:
    """Steps 1-3 of the module docstring: ``acc + a @ b`` in the accumulator fragment layout
    (``acc[i][j][r]``: local 64-row block ``i`` of the warp's group, 16 rows of its warp, column
    tile ``j``, register ``r``, the :data:`~eggpu.codegen.lower_mma.Fragments` of a ``4G x 1`` grid).

    ``staged``: the byte offsets (i32, from the shared buffer's start) of ``a`` and an MN-major
    ``b`` already copied there in
    this layout (a cp.async stage of a software-pipelined K loop, :mod:`eggpu.codegen.mma_pipeline`,
    whose wait and barrier precede this): no staging stores; after the wgmmas' commit,
    ``wgmma.wait_group 1`` keeps this step's group in flight (the previous one is complete) and
    ``after()`` (the barrier and the next copies) follows it."""
    em: Emitter = lw.em
    b = em.b
    M, N, K = plan.M, plan.N, plan.K
    dt = a.type.dtype
    S = swizzle_bytes(K)
    W = S // 2
    trans_b = mn_major(N)
    base = em.smem_array(0)
    off_b = _stage_operands(lw, a, bv, plan, trans_b) if staged is None else None
    Sb = swizzle_bytes(N) if trans_b else S
    wi, _wj, _lane = warp_coords(em, plan)
    group = b.lshr(wi, em.k(wi, 2))
    gm = plan.wm // 4
    n = instr_n(N)
    addr_a, addr_b = _operand_addresses(em, base, staged, off_b)
    helper = None if em.is_ptx else _host_wgmma_helper(em, dt, n, trans_b)
    acc = [[list(c) for c in row] for row in acc]
    blocks = M // WG_M // gm
    # pipelined: every operand address is the stage's base plus a multiple of 16 bytes, below
    # 2^18, so its start field is the base's plus offset >> 4 (no wrap), added in 32 bits as
    # Triton does; staged here, the field of each full address measured shorter (ptxas: 128x128x32
    # K loop 264 SASS against 288)
    fa0, fb0 = _start_field(em, addr_a), _start_field(em, addr_b)

    def field(base: ir.Value, base_field: ir.Value, off: ir.Value) -> ir.Value:
        if staged is None:
            return _start_field(em, b.add(base, off))
        return b.add(base_field, b.lshr(off, em.k(off, 4)))

    lbo = K * Sb if trans_b else 0
    for ks in range(K // WG_K):
        kb, kin = divmod(ks * WG_K, W)
        for i in range(blocks):
            blk = b.add(group, em.k(group, i * gm))
            da = _descriptor(em, field(addr_a, fa0, b.add(b.mul(blk, em.k(blk, WG_M * S)),
                                                           em.k(blk, kb * M * S + kin * 2))), S)
            for q in range(N // n):
                if trans_b:  # atom q*n/W of S_b/2 columns, then k rows 16*ks of S_b bytes (Triton's order)
                    off = (q * n // (Sb // 2)) * K * Sb + ks * WG_K * Sb
                else:
                    off = kb * N * S + kin * 2 + q * n * S
                db = _descriptor(em, field(addr_b, fb0, em.k(addr_b, off)), Sb, lbo)
                tiles = range(q * n // MMA_N, (q + 1) * n // MMA_N)
                regs = [acc[i][j][r] for j in tiles for r in range(4)]
                if em.is_ptx:
                    out = _wgmma_ptx(em, dt, n, da, db, regs, trans_b)
                else:
                    call = b.call(helper, [base, da, db, *regs])
                    out = [b.extract_value(call, x) for x in range(len(regs))]
                for x, j in enumerate(tiles):
                    acc[i][j] = out[4 * x:4 * x + 4]
    if em.is_ptx:
        _asm(em, "wgmma.commit_group.sync.aligned;")
        acc = wait_group(em, acc, 0 if staged is None else 1)
    if after is not None:
        after()
    em.smem_dirty = True
    return acc


def _stage_operands(lw, a: LV, bv: LV, plan: MmaPlan, trans_b: bool) -> int:
    """Unpipelined: store ``a`` and ``b`` into the descriptors' swizzled layout at the shared
    buffer's start (``b`` K-major, or MN-major when ``trans_b``), fence them for wgmma's async
    proxy and wait for the CTA; returns ``b``'s byte offset."""
    em: Emitter = lw.em
    M, N, K = plan.M, plan.N, plan.K
    base = em.smem_array(0)
    off_b = operand_offsets(M, N, K)[0]
    em.smem_begin_write()
    em.smem_reserve(plan.ab_bytes)
    em.smem_align(ALIGN)
    _stage(lw, a, base, M, K, False)
    if trans_b:
        _stage(lw, bv, em.smem_array(off_b), K, N, False)
    else:
        _stage(lw, bv, em.smem_array(off_b), N, K, True)
    if em.is_ptx:
        _asm(em, "fence.proxy.async.shared::cta;")
    em.barrier()
    return off_b


def _operand_addresses(em: Emitter, base: ir.Value, staged, off_b: int | None) -> tuple[ir.Value, ir.Value]:
    """The shared-memory addresses of ``a`` and ``b`` (GPU: 32-bit shared addresses, after the
    fences wgmma needs; host: byte offsets from the buffer's start, what the emulation's
    descriptors hold)."""
    b = em.b
    if not em.is_ptx:
        if staged is None:
            return em.spread(I32(0)), em.spread(I32(off_b))
        return tuple(em.spread(x) for x in staged)
    if staged is None:
        addr_a = b.ptrtoint(base, I32)
        addr_b = b.add(addr_a, I32(off_b))
    else:
        addr_a, addr_b = (b.add(b.ptrtoint(base, I32), x) for x in staged)
        _asm(em, "fence.proxy.async.shared::cta;")  # the cp.async writes, for wgmma's async proxy
    _asm(em, "wgmma.fence.sync.aligned;")
    return addr_a, addr_b


def opaque_copies(em: Emitter, vals: list[ir.Value]) -> list[ir.Value]:
    """``vals`` (f32) through one empty inline asm (GPU): distinct values LLVM cannot see through."""
    cons = ",".join(["=f"] * len(vals) + [str(i) for i in range(len(vals))])
    return _asm(em, "", len(vals), vals, cons)


def wait_group(em: Emitter, acc: Fragments, pending: int) -> Fragments:
    """``wgmma.wait_group pending`` (GPU), re-defining the accumulator registers (tied), so nothing
    reads or moves them while a wgmma that writes them may be in flight. Host: no-op (each wgmma
    completed at issue)."""
    if not em.is_ptx:
        return acc
    flat = [v for row in acc for tile in row for v in tile]
    cons = ",".join(["=f"] * len(flat) + [str(i) for i in range(len(flat))])
    waited = iter(_asm(em, f"wgmma.wait_group.sync.aligned {pending};", len(flat), flat, cons))
    return [[[next(waited) for _ in tile] for tile in row] for row in acc]


def dot_wgmma(lw, op: Operation, a: LV, bv: LV) -> list[ir.Value]:
    """The wgmma strategy (see the module docstring); per-slot f32 products."""
    plan = plan_wgmma(lw, op)
    if isinstance(plan, str):
        raise lw.error(f"dot strategy 'wgmma' does not apply: {plan}")
    acc = wgmma_fragments(lw, op, a, bv, plan, zero_fragments(lw.em, plan))
    return fragments_to_layout(lw, plan, acc)


__all__ = ["descriptor_bits", "dot_wgmma", "kmajor_byte", "mn_major", "mnmajor_byte", "plan_wgmma", "swizzle_bytes",
           "opaque_copies", "wait_group", "wgmma_fragments"]
