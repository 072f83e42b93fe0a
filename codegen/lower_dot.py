"""``dot(a[M,K], b[K,N][, acc])``: matrix product with f32 (integers: i32) accumulation.

Semantics (op table): floats accumulate in f32 (f16/bf16/f32 inputs; f64 inputs are summed in
f64 and rounded once to f32, as the reference does), integers wrap in i32; the optional
accumulator is added after the product is rounded: ``round_f32(a @ b) + acc``.

Strategy today (:func:`dot_shared_fma`): ``a`` and ``b`` are written to shared memory (each
thread stores its owned elements), a barrier, then each thread computes the ``C`` elements it
owns by a loop over ``K`` of fused multiply-adds reading ``a[m, k]`` and ``b[k, n]`` from shared
memory. :data:`DOT_STRATEGIES` is the seam: a strategy is a function ``(lowerer, op, a, b) ->
list of per-slot accumulators`` chosen by :func:`select_strategy` from the target and the
operand types. ``mma_sync`` (:mod:`eggpu.codegen.lower_mma`) uses tensor cores for f16/bf16 on
sm_80+; the choice and its reason are recorded per dot in ``LoweredModule.dots``.
"""

from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir

from eggpu.ir.dtypes import DType, f64
from eggpu.ir.graph import Operation

from . import scalar_ops as S
from .emitter import F32, F64, I32, Emitter
from .layout import LV
from .lower_mma import dot_mma_sync, plan_mma
from .lower_mma_tf32 import dot_mma_tf32, round_tf32
from .lower_shape import smem_elem, store_to_smem
from .lower_wgmma import dot_wgmma, plan_wgmma
from .lower_wgmma import reason as wgmma_reason

UNROLL_K = 8


def _compute_type(dt: DType) -> ir.Type:
    if dt.is_float:
        return F64 if dt == f64 else F32
    return I32


def _to_compute(em: Emitter, dt: DType, v: ir.Value) -> ir.Value:
    b = em.b
    if dt.is_float:
        x = S.wide(em, v, dt)
        return x
    t = em.like_type(v, I32)
    if dt.bits < 32:
        return b.sext(v, t) if dt.is_signed else b.zext(v, t)
    if dt.bits > 32:
        return b.trunc(v, t)
    return v


def dot_shared_fma(lw, op: Operation, a: LV, bv: LV) -> list[ir.Value]:
    """The shared-memory FMA strategy (see the module docstring); per-slot accumulators."""
    em = lw.em
    b = em.b
    M, K = a.type.shape
    N = bv.type.shape[1]
    dt = a.type.dtype
    ct = _compute_type(dt)
    ta, size = smem_elem(lw, a.type)
    if rounds_to_tf32(lw, op):  # same operands as the TF32 tensor-core path, exact f32 products
        a = LV(a.type, elems=[round_tf32(em, x) for x in lw.elems(a)])
        bv = LV(bv.type, elems=[round_tf32(em, x) for x in lw.elems(bv)])
    em.smem_begin_write()
    base_a = store_to_smem(lw, a, 0)
    off_b = -(-(M * K * size) // 16) * 16
    base_b = store_to_smem(lw, bv, off_b)
    em.barrier()
    out_lay = lw.layout((M, N))
    rows, cols = [], []
    for j in range(out_lay.per):
        m, n = out_lay.coords(em, j)
        rows.append(b.mul(m, em.k(m, K)))
        cols.append(n)

    def step(accs: list[ir.Value], k: ir.Value) -> list[ir.Value]:
        kk = em.spread(k)
        krow = b.mul(kk, em.k(kk, N))
        out = []
        for acc, row, col in zip(accs, rows, cols):
            x = _to_compute(em, dt, em.smem_load(base_a, ta, b.add(row, kk)))
            y = _to_compute(em, dt, em.smem_load(base_b, ta, b.add(krow, col)))
            if dt.is_float:
                out.append(em.intrinsic("llvm.fma", x.type, [x, y, acc], [x.type]))
            else:
                out.append(b.add(acc, b.mul(x, y)))
        return out

    zero = em.const(em.thread_type(ct), 0.0 if dt.is_float else 0)
    accs = [zero] * out_lay.per
    if K <= UNROLL_K:
        for k in range(K):
            accs = step(accs, I32(k))
    else:
        pre = b.block
        head = em.new_block("dot.head")
        body = em.new_block("dot.body")
        done = em.new_block("dot.done")
        b.branch(head)
        b.position_at_end(head)
        k = b.phi(I32)
        k.add_incoming(I32(0), pre)
        phis = []
        for acc in accs:
            p = b.phi(acc.type)
            p.add_incoming(acc, pre)
            phis.append(p)
        b.cbranch(b.icmp_unsigned("<", k, I32(K)), body, done)
        b.position_at_end(body)
        new = step(phis, k)
        k_next = b.add(k, I32(1))
        latch = b.block
        b.branch(head)
        k.add_incoming(k_next, latch)
        for p, v in zip(phis, new):
            p.add_incoming(v, latch)
        b.position_at_end(done)
        accs = phis
    em.smem_dirty = True
    return accs


def rounds_to_tf32(lw, op: Operation) -> bool:
    """Whether this dot's operands are rounded to TF32: ``precision="tf32"`` on a target with
    TF32 tensor cores (sm_80+), whichever strategy runs it, so the result does not depend on
    the tile shape. Older targets and portable builds compute exact f32, as Triton does there."""
    return op.attrs.get("precision") == "tf32" and lw.em.sm is not None and lw.em.sm >= 80


def dot_mma(lw, op: Operation, a: LV, bv: LV) -> list[ir.Value]:
    """The tensor-core strategy (:mod:`eggpu.codegen.lower_mma`); CodegenError if it does not apply."""
    plan = plan_mma(lw, op)
    if isinstance(plan, str):
        raise lw.error(f"dot strategy 'mma_sync' does not apply: {plan}")
    if plan.tf32:
        return dot_mma_tf32(lw, op, a, bv, plan)
    return dot_mma_sync(lw, op, a, bv, plan)


Strategy = Callable[..., list[ir.Value]]
DOT_STRATEGIES: dict[str, Strategy] = {"shared_fma": dot_shared_fma, "mma_sync": dot_mma, "wgmma": dot_wgmma}


def fp8_sources(op: Operation) -> tuple[str, str] | None:
    """The FP8 dtypes of a dot's operands when both are exact FP8 -> f16 conversions (the frontend
    lowers an FP8 ``tl.dot`` so), else None: reported with the strategy."""
    srcs = []
    for v in op.operands[:2]:
        src = v.owner
        if not (isinstance(src, Operation) and src.op == "cast" and src.operands[0].type.dtype.is_fp8):
            return None
        srcs.append(str(src.operands[0].type.dtype))
    return srcs[0], srcs[1]


def select_strategy(lw, op: Operation) -> tuple[str, str]:
    """:func:`choose_strategy`, with the FP8 origin of the operands (:func:`fp8_sources`) added to the reason."""
    name, reason = choose_strategy(lw, op)
    fp8 = fp8_sources(op)
    if fp8 is not None:
        reason += f"; FP8 operands {fp8[0]} x {fp8[1]} converted exactly to f16 before the dot"
    return name, reason


def choose_strategy(lw, op: Operation) -> tuple[str, str]:
    """``(strategy name, reason)`` for this dot on this target (a key of :data:`DOT_STRATEGIES`).

    The compile option ``dot_strategy`` (``lw.dot_strategy``) forces one, CodegenError where it
    does not apply; ``wgmma`` (sm_90a) is chosen only that way. Otherwise
    ``mma_sync`` (tensor cores) for f16/bf16 operands on sm_80+ when the shape tiles by
    m16n8k16 (f32 operands of a ``precision="tf32"`` dot: m16n8k8) and the staging fits in
    shared memory; otherwise ``shared_fma``, with the reason
    the tensor-core path was not taken (reported in ``ck.report["dot"]``).
    """
    forced = getattr(lw, "dot_strategy", None)
    if forced is not None:
        return _forced(lw, op, forced)
    plan = plan_mma(lw, op)
    if isinstance(plan, str):
        if rounds_to_tf32(lw, op) and "TF32" not in plan:
            plan += "; operands rounded to TF32 on CUDA cores"
        return "shared_fma", plan
    if plan.tf32:
        return "mma_sync", (f"tensor cores: mma.sync m16n8k8 f32 += tf32 x tf32 (operands rounded with "
                            f"cvt.rna.tf32.f32), padded shared memory, {plan.wm}x{plan.wn} warps of "
                            f"{plan.tiles_m}x{plan.tiles_n} tiles")
    return "mma_sync", (f"tensor cores: mma.sync m16n8k16 f32 += {op.operands[0].type.dtype} x "
                        f"{op.operands[0].type.dtype}, ldmatrix from swizzled shared memory, "
                        f"{plan.wm}x{plan.wn} warps of {plan.tiles_m}x{plan.tiles_n} tiles")


def _forced(lw, op: Operation, name: str) -> tuple[str, str]:
    """The strategy the compile option ``dot_strategy`` asks for, or CodegenError naming the
    kernel, the dot's shape and why that strategy does not apply to it."""
    if name == "shared_fma":
        return name, "dot_strategy='shared_fma' (compile option)"
    plan = plan_wgmma(lw, op) if name == "wgmma" else plan_mma(lw, op)
    if isinstance(plan, str):
        (M, K), N = op.operands[0].type.shape, op.operands[1].type.shape[1]
        raise lw.error(f"dot_strategy={name!r} does not apply to the {M}x{K} @ {K}x{N} "
                       f"{op.operands[0].type.dtype} dot: {plan}")
    if name == "wgmma":
        return name, wgmma_reason(plan, op.operands[0].type.dtype)
    lw.dot_strategy = None  # the automatic reason of mma_sync (it applies)
    try:
        return choose_strategy(lw, op)
    finally:
        lw.dot_strategy = name


def lower_dot(lw, op: Operation) -> list[LV]:
    em = lw.em
    b = em.b
    a, bv = lw.get(op.operands[0]), lw.get(op.operands[1])
    t = op.results[0].type
    dt = a.type.dtype
    name, reason = select_strategy(lw, op)
    M, K = a.type.shape
    lw.dots.append({"shape": [M, bv.type.shape[1], K], "dtype": str(dt), "strategy": name, "reason": reason,
                    "precision": op.attrs.get("precision", "ieee")})
    accs = DOT_STRATEGIES[name](lw, op, a, bv)
    if dt == f64:
        accs = [b.fptrunc(x, em.like_type(x, F32)) for x in accs]
    if len(op.operands) == 3:
        extra = lw.elems(lw.get(op.operands[2]))
        accs = [b.fadd(x, y) if dt.is_float else b.add(x, y) for x, y in zip(accs, extra)]
    return [LV(t, elems=accs)]


HANDLERS = {"dot": lower_dot}
