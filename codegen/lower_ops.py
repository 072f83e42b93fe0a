"""The lowering table: one handler per IR op name, and the ops deliberately not lowered.

``TABLE[name](lowerer, op) -> list[LV]`` lowers one operation (its results in order).
``for``/``if``/``yield`` are structural and lowered by :class:`~eggpu.codegen.lowering.Lowerer`
itself; they appear in :data:`STRUCTURAL`. :data:`UNSUPPORTED` maps an op name to the reason
it has no lowering (empty today: every op of :data:`eggpu.ir.ops.OPS` is lowered). The
coverage test checks ``set(OPS) == set(TABLE) | STRUCTURAL | set(UNSUPPORTED)``.

Elementwise ops work element by element (:func:`elementwise`): on uniform operands the op is
computed once; on uniform/lazy operands the result stays lazy (index arithmetic, masks) unless
the op is expensive (transcendentals, division, fma), which are computed once per owned
element.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from llvmlite import ir

from eggpu.ir.dtypes import DType, i32
from eggpu.ir.errors import CodegenError, gpu_only_message
from eggpu.ir.graph import Operation
from eggpu.ir.op_types import asm_elements_per_register, asm_registers
from eggpu.ir.ops import OPS, TRANSCENDENTAL

from . import scalar_ops as S
from .emitter import I32, I64
from .layout import LV, replicas_valid

Handler = Callable[..., list[LV]]

_EAGER = {"div", "rem", "fma", "inline_asm", "libdevice"}


def elementwise(lw, op: Operation, fn: Callable[..., ir.Value]) -> list[LV]:
    """Lower an elementwise op whose per-element meaning is ``fn(*operand_values)``."""
    ins = [lw.get(v) for v in op.operands]
    t = op.results[0].type
    if all(lv.u is not None for lv in ins):
        return [LV(t, u=fn(*[lv.u for lv in ins]))]
    lazy_ok = op.op not in _EAGER and TRANSCENDENTAL not in OPS[op.op].traits
    if lazy_ok and all(lv.elems is None for lv in ins):
        return [LV(t, fn=lambda coords: fn(*[lw.at(lv, coords) for lv in ins]))]
    per = lw.layout(t.shape).per
    cols = [lw.elems(lv) for lv in ins]
    # every slot is computed from the operands' same slot: copies of a replicated block stay
    # filled when the operands' are (not through user asm, which may read the thread index)
    rep = op.op != "inline_asm" and all(replicas_valid(lv) for lv in ins)
    return [LV(t, elems=[fn(*[c[j] for c in cols]) for j in range(per)], rep=rep)]


def _dtype(op: Operation, i: int = 0) -> DType | None:
    t = op.operands[i].type
    return None if t.is_pointer else t.dtype


def _binary(name: str) -> Handler:
    sem = S.BINARY[name]

    def run(lw, op: Operation) -> list[LV]:
        dt = _dtype(op)
        return elementwise(lw, op, lambda a, b: sem(lw.em, dt, a, b))

    return run


def _unary(name: str) -> Handler:
    sem = S.UNARY[name]

    def run(lw, op: Operation) -> list[LV]:
        dt = _dtype(op)
        return elementwise(lw, op, lambda a: sem(lw.em, dt, a))

    return run


def lower_where(lw, op: Operation) -> list[LV]:
    return elementwise(lw, op, lambda c, a, b: lw.em.b.select(c, a, b))


def lower_fma(lw, op: Operation) -> list[LV]:
    dt = _dtype(op)
    return elementwise(lw, op, lambda a, b, c: S.fma(lw.em, dt, a, b, c))


def lower_cast(lw, op: Operation) -> list[LV]:
    src, dst = _dtype(op), op.attrs["dtype"]
    lv = lw.get(op.operands[0])
    if (src.is_fp8 or dst.is_fp8) and lv.u is None:  # a thread's elements together: two per FP8 cvt
        t = op.results[0].type
        return [LV(t, elems=S.cast_many(lw.em, src, dst, lw.elems(lv)), rep=replicas_valid(lv))]
    return elementwise(lw, op, lambda v: S.cast(lw.em, src, dst, v))


def lower_bitcast(lw, op: Operation) -> list[LV]:
    src, dst = _dtype(op), op.attrs["dtype"]
    return elementwise(lw, op, lambda v: S.bitcast(lw.em, src, dst, v))


def lower_addptr(lw, op: Operation) -> list[LV]:
    em = lw.em
    pointee = op.operands[0].type.dtype
    odt = _dtype(op, 1)
    et = em.mem_type(pointee)
    split = _loop_invariant_split(lw, op)
    if split is not None:
        return split
    return elementwise(lw, op, lambda p, o: em.b.gep(p, [S.offset_i64(em, odt, o)], source_etype=et))


MAX_SPLIT_ELEMS = 4
"""Most elements per thread whose loop-invariant address part :func:`_loop_invariant_split`
keeps live across a loop (two registers each)."""


def _unrollable(lw, body) -> bool:
    """Whether a ``for`` body is one ptxas unrolls (measured on sm_80 and sm_90): no reduction
    (cross-lane shuffles), no libdevice call (a transcendental op) and, outside ``fast_math``,
    no float division (IEEE ``div.rn`` calls its slow-path subroutine)."""
    for o in body.walk():
        if o.op.startswith("reduce_") or TRANSCENDENTAL in OPS[o.op].traits:
            return False
        if o.op == "div" and not lw.em.fast_math and o.results[0].type.dtype.is_float:
            return False
    return True


def _loop_invariant_split(lw, op: Operation) -> list[LV] | None:
    """``addptr(splat(addptr(p, s)), o)`` in a loop body, ``s`` defined in the body and ``p``,
    ``o`` outside it (a row loop's ``row_ptr + start + cols``): each element is lowered as
    ``(p + o) + s`` instead of ``(p + s) + o``, so LLVM hoists ``p + o`` out of the loop and an
    iteration adds only ``s`` (one wide multiply-add per element, as Triton's row loops do);
    ``p + o`` is emitted in the loop's preheader (the light LLVM pipeline has no LICM).
    Only in a body ptxas unrolls (:func:`_unrollable`): elsewhere the split saves little and
    keeps a 64-bit address live across the loop (sm_80: row_argmax 18 -> 20 registers,
    cross_entropy 21 -> 23 at the same SASS count, softmax's IEEE-division loop 23 -> 26 for 5
    instructions fewer), while unrolled row loops gain (layer_norm 417 -> 376 SASS
    instructions, rms_norm 269 -> 254, registers 31 -> 29 and 26 -> 22).
    The same 64-bit sum (each offset extended by its own dtype's rule; 64-bit addition is
    associative). None when the pattern does not apply."""
    if not lw.preheaders or not lw.blocks or lw.preheaders[-1][0] is not lw.blocks[-1]:
        return None  # not directly in a for body
    blk, pre = lw.preheaders[-1]
    if not _unrollable(lw, blk):
        return None  # see the docstring
    ptr, off = op.operands
    sp = ptr.owner
    if not isinstance(sp, Operation) or sp.op != "splat":
        return None
    inner = sp.operands[0].owner
    if not isinstance(inner, Operation) or inner.op != "addptr":
        return None
    p, s = inner.operands
    local = {id(a) for a in blk.args} | {id(r) for o in blk.ops for r in o.results}
    if id(s) not in local or id(p) in local or id(off) in local:
        return None
    offs = lw.get(off)
    if offs.u is not None or lw.layout(op.results[0].type.shape).per > MAX_SPLIT_ELEMS:
        return None
    em = lw.em
    et = em.mem_type(op.operands[0].type.dtype)
    base, step = lw.uniform(lw.get(p)), lw.uniform(lw.get(s))
    sdt, odt = s.type.dtype, off.type.dtype
    with em.b.goto_block(pre):  # before the preheader's branch: computed once per loop
        rows = [em.b.gep(em.spread(base), [S.offset_i64(em, odt, o)], source_etype=et) for o in lw.elems(offs)]
    step64 = S.offset_i64(em, sdt, em.spread(step))
    elems = [em.b.gep(r, [step64], source_etype=et) for r in rows]
    return [LV(op.results[0].type, elems=elems, rep=replicas_valid(offs))]


def lower_int_to_ptr(lw, op: Operation) -> list[LV]:
    """A 64-bit integer address -> a global pointer: ``inttoptr`` (no ``cvta``: the integer is a
    global address already, as Triton's ``int_to_ptr``)."""
    em = lw.em
    return elementwise(lw, op, lambda v: em.b.inttoptr(v, em.like_type(v, em.global_ptr)))


def lower_ptr_to_int(lw, op: Operation) -> list[LV]:
    """A global pointer -> its 64-bit address: ``ptrtoint`` (i64 and u64 are both LLVM ``i64``)."""
    em = lw.em
    return elementwise(lw, op, lambda p: em.b.ptrtoint(p, em.like_type(p, I64)))
def lower_inline_asm(lw, op: Operation) -> list[LV]:
    """``tl.inline_asm_elementwise`` on the GPU: an LLVM inline-asm call per owned element (Triton's
    pack=1), with the user's PTX and constraints verbatim (``$0`` the result, ``$1``.. the
    operands). Side-effecting unless declared pure. The host lowering (run_cpu) cannot run PTX."""
    em = lw.em
    if em.is_host:
        raise CodegenError(gpu_only_message(lw.fn.name, op, "run_cpu (the host lowering)"))
    rets = [em.reg_type(r.type.dtype) for r in op.results]
    args = [em.reg_type(None if v.type.is_pointer else v.type.dtype) for v in op.operands]
    fty = ir.FunctionType(rets[0] if len(rets) == 1 else ir.LiteralStructType(rets), args)
    asm, constraints, effect = op.attrs["asm"], op.attrs["constraints"], not op.attrs["pure"]
    if op.attrs.get("pack", 1) > 1:
        return _lower_packed_asm(lw, op)
    if len(rets) == 1:
        return elementwise(lw, op, lambda *vs: em.b.asm(fty, asm, constraints, list(vs), effect))
    # several results: one call per element returns a struct; each result takes its field
    ins = [lw.get(v) for v in op.operands]
    if all(lv.u is not None for lv in ins):
        call = em.b.asm(fty, asm, constraints, [lv.u for lv in ins], effect)
        return [LV(r.type, u=em.b.extract_value(call, i)) for i, r in enumerate(op.results)]
    cols = [lw.elems(lv) for lv in ins]
    calls = [em.b.asm(fty, asm, constraints, [c[j] for c in cols], effect)
             for j in range(lw.layout(op.results[0].type.shape).per)]
    return [LV(r.type, elems=[em.b.extract_value(c, i) for c in calls]) for i, r in enumerate(op.results)]


def _lower_packed_asm(lw, op: Operation) -> list[LV]:
    """``inline_asm_elementwise(..., pack=k)``: one asm call per ``k`` consecutive elements a thread
    owns. As Triton packs them, each operand's ``k`` elements go in registers of
    ``asm_elements_per_register`` elements (a vector bitcast to i16/i32, element 0 in the low
    bits), operand by operand; each result comes back the same way. A thread's last group is
    padded with zeros when ``k`` does not divide its element count (Triton refuses that case)."""
    em, b = lw.em, lw.em.b
    pack = op.attrs["pack"]
    per = lw.layout(op.results[0].type.shape).per
    cols = [lw.elems(lw.get(v)) for v in op.operands]
    in_dts = [None if v.type.is_pointer else v.type.dtype for v in op.operands]
    out_dts = [r.type.dtype for r in op.results]

    def reg_type(dt: DType | None) -> ir.Type:
        n = asm_elements_per_register(dt, pack)
        return em.reg_type(dt) if n == 1 else ir.IntType(n * dt.bits)

    out_regs = [reg_type(d) for d in out_dts for _ in range(asm_registers(d, pack))]
    in_regs = [reg_type(d) for d in in_dts for _ in range(asm_registers(d, pack))]
    fty = ir.FunctionType(out_regs[0] if len(out_regs) == 1 else ir.LiteralStructType(out_regs), in_regs)
    results: list[list[ir.Value]] = [[] for _ in out_dts]
    for g in range(0, per, pack):
        args = []
        for col, dt in zip(cols, in_dts):
            n = asm_elements_per_register(dt, pack)
            elts = [col[j] if j < per else ir.Constant(col[0].type, None) for j in range(g, g + pack)]
            if n == 1:
                args += elts
                continue
            for r in range(0, pack, n):
                vec: ir.Value = ir.Constant(ir.VectorType(elts[0].type, n), None)
                for i in range(n):
                    vec = b.insert_element(vec, elts[r + i], ir.Constant(I32, i))
                args.append(b.bitcast(vec, ir.IntType(n * dt.bits)))
        call = b.asm(fty, op.attrs["asm"], op.attrs["constraints"], args, not op.attrs["pure"])
        regs = [call] if len(out_regs) == 1 else [b.extract_value(call, i) for i in range(len(out_regs))]
        for k, dt in enumerate(out_dts):
            n = asm_elements_per_register(dt, pack)
            mine, regs = regs[:asm_registers(dt, pack)], regs[asm_registers(dt, pack):]
            for reg in mine:
                if n == 1:
                    results[k].append(reg)
                    continue
                vec = b.bitcast(reg, ir.VectorType(em.reg_type(dt), n))
                results[k] += [b.extract_element(vec, ir.Constant(I32, i)) for i in range(n)]
    return [LV(r.type, elems=vals[:per]) for r, vals in zip(op.results, results)]


# ---------------------------------------------------------------- leaves


def lower_const(lw, op: Operation) -> list[LV]:
    dt = op.attrs["dtype"]
    return [LV(op.results[0].type, u=lw.em.reg_const(dt, op.attrs["value"]))]


def lower_program_id(lw, op: Operation) -> list[LV]:
    return [LV(op.results[0].type, u=lw.em.program_id(op.attrs["axis"]))]


def lower_num_programs(lw, op: Operation) -> list[LV]:
    return [LV(op.results[0].type, u=lw.em.num_programs(op.attrs["axis"]))]


def lower_arange(lw, op: Operation) -> list[LV]:
    start = op.attrs["start"]
    em = lw.em
    t = op.results[0].type
    assert t.dtype == i32

    def fn(coords):
        c = coords[0]
        return em.b.add(c, em.k(c, start)) if start else c

    return [LV(t, fn=fn)]


# ---------------------------------------------------------------- the table


def _lower_dot(*args: Any, **kwargs: Any) -> Any:
    """``dot``'s handler (:mod:`.lower_dot`), loaded on the first ``dot``: its tensor-core
    lowering is four modules a kernel without ``tl.dot`` never needs."""
    from .lower_dot import HANDLERS

    return HANDLERS["dot"](*args, **kwargs)


DEBUG_OPS = ("device_print", "device_assert")


def _lower_debug(name: str) -> Handler:
    """The handler of the debug op ``name`` (:mod:`.lower_debug`), loaded on the first such op: the
    debug lowering and its host half are two modules (~1.5 ms to import) a kernel that neither
    prints nor asserts never needs (a ``device_assert`` is stripped unless ``debug=True``)."""

    def handler(*args: Any, **kwargs: Any) -> Any:
        from .lower_debug import HANDLERS

        return HANDLERS[name](*args, **kwargs)

    handler.__name__ = handler.__qualname__ = f"lower_{name}"
    return handler


def _build() -> dict[str, Handler]:
    from .lower_libdevice import HANDLERS as LIBDEVICE
    from .lower_memory import HANDLERS as MEMORY
    from .lower_reduce import HANDLERS as REDUCE
    from .lower_shape import HANDLERS as SHAPE

    table: dict[str, Handler] = {
        "const": lower_const,
        "program_id": lower_program_id,
        "num_programs": lower_num_programs,
        "arange": lower_arange,
        "where": lower_where,
        "fma": lower_fma,
        "cast": lower_cast,
        "bitcast": lower_bitcast,
        "addptr": lower_addptr,
        "int_to_ptr": lower_int_to_ptr,
        "ptr_to_int": lower_ptr_to_int,
        "inline_asm": lower_inline_asm,
    }
    for name in S.BINARY:
        table[name] = _binary(name)
    for name in S.UNARY:
        table[name] = _unary(name)
    for part in (SHAPE, MEMORY, REDUCE, {n: _lower_debug(n) for n in DEBUG_OPS}, LIBDEVICE, {"dot": _lower_dot}):
        table.update(part)
    return table


STRUCTURAL = frozenset({"for", "while", "if", "yield"})
"""Ops lowered by the Lowerer's control-flow code rather than a table handler."""

UNSUPPORTED: dict[str, str] = {}
"""Op name -> why it cannot be lowered (none today)."""

TABLE: dict[str, Handler] = _build()
