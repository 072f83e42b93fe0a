"""Lowering of ``device_print`` and ``device_assert`` (docs/language.md, "Debugging").

GPU (PTX):

* ``device_print``: per element this thread owns, one ``vprintf`` call with Triton's format
  ``pid (%u, %u, %u) idx (%Nu, ...)<prefix>[(operand k) ]<value>\\n`` (``%f`` of the value widened
  to f64, ``%i``/``%u`` of integers widened to 32 bits, ``%lli``/``%llu`` for 64 bits, ``0x%0Nx``
  / ``0x%016llx`` of the bits with ``hex``). A replicated block prints each element once (its
  owner); a scalar is printed by thread 0 only (Triton prints it from every thread).
* ``device_assert``: each thread ORs the failures of the elements it owns (under the mask) and,
  if one failed, calls CUDA's ``__assertfail(message, file, line, function, 1)`` as Triton does;
  the message is the user's ``msg``, the function the kernel's name.

Host (``run_cpu``): prints go through the ``eggpu_host_print`` callback (:mod:`.host_debug`);
an assertion finds the failing lane with the smallest flat index and fills the error record
(:meth:`eggpu.codegen.bounds.BoundsChecker.report`), which stops the grid like a failed bounds
check.
"""

from __future__ import annotations

import contextlib

from llvmlite import ir

from eggpu.ir.debug_ops import index_widths, source_loc
from eggpu.ir.dtypes import DType
from eggpu.ir.graph import Operation

from .emitter import F64, I8, I32, I64, VOID, Emitter
from .host_debug import PRINT_SYMBOL, AssertCheck, PrintSpec
from .layout import LV, and_masks

_I32_MAX = (1 << 31) - 1


def _cstring(em: Emitter, text: str, prefix: str) -> ir.Value:
    """A private constant NUL-terminated string of the module (generic address space)."""
    data = bytearray(text.encode("ascii", "replace") + b"\0")
    gv = ir.GlobalVariable(em.module, ir.ArrayType(I8, len(data)), em.name(prefix))
    gv.global_constant = True
    gv.linkage = "private"
    gv.initializer = ir.Constant(ir.ArrayType(I8, len(data)), data)
    return gv


def _scalar(lw, lv: LV) -> ir.Value:
    """The value of a scalar (shape ``()``) operand: uniform, or thread 0's copy."""
    if lv.u is not None:
        return lv.u
    v = lw.elems(lv)[0]
    return lw.em.b.extract_element(v, I32(0)) if isinstance(v.type, ir.VectorType) else v


# ---------------------------------------------------------------- device_print


def lower_device_print(lw, op: Operation) -> list[LV]:
    em = lw.em
    if em.is_host:
        _print_host(lw, op)
    else:
        for k in range(len(op.operands)):
            _print_ptx(lw, op, k)
        if not op.operands:
            with em.only_thread0():
                fmt = "pid (%u, %u, %u)" + op.attrs["prefix"].replace("%", "%%") + "\n"
                _vprintf(em, fmt, [em.program_id(a) for a in range(3)])
    return []


def _print_host(lw, op: Operation) -> None:
    em, b = lw.em, lw.em.b
    specs = lw.prints
    pid = len(specs)
    specs.append(PrintSpec(op.attrs["prefix"], op.attrs["hex"], tuple(v.type.dtype for v in op.operands),
                           tuple(tuple(v.type.shape) for v in op.operands)))
    fn = em.declare(PRINT_SYMBOL, VOID, [ir.PointerType(), I32, I32, I64, I64, I32, I32, I32])
    record = lw.bounds.record
    pids = [em.program_id(a) for a in range(3)]

    def call(k: int, flat: ir.Value, bits: ir.Value) -> None:
        b.call(fn, [record, I32(pid), I32(k), flat, bits, *pids])

    for k, v in enumerate(op.operands):
        if v.type.shape:
            _print_block_host(lw, v, lambda flat, bits, k=k: call(k, flat, bits))
        else:
            call(k, I64(-1), _host_bits(em, _scalar(lw, lw.get(v)), v.type.dtype))
    call(-1, I64(0), I64(0))  # the op is done: print what was collected


def _print_block_host(lw, v, call) -> None:
    """``call(flat, bits)`` for every element of block ``v`` a lane owns: a loop over the CTA's
    lanes (scalar code, as :meth:`Emitter.lane_loop`), each lane visiting its slots."""
    em, b = lw.em, lw.em.b
    dt = v.type.dtype
    lay = lw.layout(v.type.shape)
    per = lay.per
    owned = [lay.owned(em, j) for j in range(per)]
    inputs = lw.elems(lw.get(v)) + [lay.flat(em, j) for j in range(per)] + [m for m in owned if m is not None]

    def body(lanes: list[ir.Value]) -> list[ir.Value]:
        masks = iter(lanes[2 * per:])
        for j in range(per):
            m = next(masks) if owned[j] is not None else None
            with b.if_then(m) if m is not None else contextlib.nullcontext():
                call(b.zext(lanes[per + j], I64), _host_bits(em, lanes[j], dt))
        return []

    em.lane_loop(inputs, [], body)


def _host_bits(em: Emitter, v: ir.Value, dt: DType) -> ir.Value:
    """A scalar host register value's bits, zero-extended to i64."""
    b = em.b
    if dt.is_float and dt.bits in (32, 64):
        v = b.bitcast(v, ir.IntType(dt.bits))
    return v if v.type == I64 else b.zext(v, I64)


def _value_format(dt: DType, hex_: bool) -> str:
    if hex_:
        return "0x%016llx" if dt.bits == 64 else f"0x%0{max(1, dt.bits // 4)}x"
    if dt.is_float:
        return "%f"
    if dt.bits == 64:
        return "%lli" if dt.is_signed else "%llu"
    return "%i" if dt.is_signed else "%u"


def _ptx_value(em: Emitter, v: ir.Value, dt: DType, hex_: bool) -> ir.Value:
    """A GPU register value as ``vprintf`` takes it (C's default argument promotions)."""
    b = em.b
    if hex_:
        if dt.is_float:
            v = em.float_bits(v, dt)
        return v if v.type.width >= 32 else b.zext(v, I32)
    if dt.is_float:
        return v if dt.bits == 64 else b.fpext(v, F64)
    if dt.bits >= 32:
        return v
    return b.sext(v, I32) if dt.is_signed else b.zext(v, I32)


def _print_ptx(lw, op: Operation, k: int) -> None:
    em = lw.em
    v = op.operands[k]
    dt, shape, hex_ = v.type.dtype, tuple(v.type.shape), op.attrs["hex"]
    widths = index_widths(shape)
    idx = ", ".join(f"%{w}u" if w else "%u" for w in widths)
    operand = f"(operand {k}) " if len(op.operands) > 1 else ""
    fmt = (f"pid (%u, %u, %u) idx ({idx}){op.attrs['prefix'].replace('%', '%%')}{operand}"
           f"{_value_format(dt, hex_)}\n")
    pids = [em.program_id(a) for a in range(3)]
    lv = lw.get(v)
    if not shape:
        with em.only_thread0():
            _vprintf(em, fmt, [*pids, _ptx_value(em, _scalar(lw, lv), dt, hex_)])
        return
    lay = lw.layout(shape)
    elems = lw.elems(lv)
    for j in range(lay.per):
        m = lay.owned(em, j)
        coords = lay.coords(em, j)

        def emit(j: int = j, coords=coords) -> None:
            _vprintf(em, fmt, [*pids, *coords, _ptx_value(em, elems[j], dt, hex_)])

        if m is None:
            emit()
        else:
            with em.b.if_then(m):
                emit()


def _vprintf(em: Emitter, fmt: str, args: list[ir.Value]) -> None:
    """``vprintf(fmt, &{args...})``: CUDA's device printf (arguments packed in a local struct)."""
    b = em.b
    fn = em.declare("vprintf", I32, [ir.PointerType(), ir.PointerType()])
    st = ir.LiteralStructType([a.type for a in args])
    buf = em.entry_alloca(st)
    for i, a in enumerate(args):
        b.store(a, b.gep(buf, [I32(0), I32(i)], source_etype=st))
    b.call(fn, [_cstring(em, fmt, "printf_fmt"), buf])


# ---------------------------------------------------------------- device_assert


def _failures(lw, op: Operation) -> tuple[list[ir.Value], list[ir.Value]] | None:
    """Per element slot of the condition: (thread-level i1 'this lane fails', its flat index);
    None for a scalar condition."""
    em, b = lw.em, lw.em.b
    shape = tuple(op.operands[0].type.shape)
    if not shape:
        return None
    lay = lw.layout(shape)
    conds = lw.elems(lw.get(op.operands[0]))
    masks = lw.elems(lw.get(op.operands[1])) if len(op.operands) > 1 else None
    bad, flats = [], []
    for j in range(lay.per):
        f = b.not_(conds[j])
        m = and_masks(em, lay.owned(em, j), masks[j] if masks is not None else None)
        bad.append(f if m is None else b.and_(f, m))
        flats.append(lay.flat(em, j))
    return bad, flats


def _scalar_failure(lw, op: Operation) -> ir.Value:
    b = lw.em.b
    f = b.not_(_scalar(lw, lw.get(op.operands[0])))
    if len(op.operands) > 1:
        f = b.and_(f, _scalar(lw, lw.get(op.operands[1])))
    return f


def lower_device_assert(lw, op: Operation) -> list[LV]:
    em, b = lw.em, lw.em.b
    per_slot = _failures(lw, op)
    if em.is_host:
        check = AssertCheck(op.attrs["msg"], op.attrs["src"], tuple(op.operands[0].type.shape))
        if per_slot is None:
            lw.bounds.report(check, _scalar_failure(lw, op), I64(-1))
            return []
        bad, flats = per_slot
        best = None
        for f, flat in zip(bad, flats):
            cand = b.select(f, flat, em.k(flat, _I32_MAX))
            best = cand if best is None else b.select(b.icmp_unsigned("<", cand, best), cand, best)
        lane = em.intrinsic("llvm.vector.reduce.umin", I32, [best], overload=[best.type])
        lw.bounds.report(check, b.icmp_unsigned("!=", lane, I32(_I32_MAX)), b.zext(lane, I64))
        return []
    if per_slot is None:
        failed = _scalar_failure(lw, op)
    else:
        failed = per_slot[0][0]
        for f in per_slot[0][1:]:
            failed = b.or_(failed, f)
    with b.if_then(failed):
        _assertfail(em, lw.fn.name, op.attrs["msg"], op.attrs["src"])
    return []


def _assertfail(em: Emitter, kernel: str, msg: str, src: str) -> None:
    """CUDA's ``__assertfail(message, file, line, function, charSize)`` (what ``assert`` calls)."""
    loc = source_loc(src) if src else None
    fn = em.declare("__assertfail", VOID, [ir.PointerType(), ir.PointerType(), I32, ir.PointerType(), I64])
    em.b.call(fn, [_cstring(em, msg or "device_assert", "assert_msg"),
                   _cstring(em, loc.file if loc is not None else "<unknown>", "assert_file"),
                   I32(loc.line if loc is not None else 0), _cstring(em, kernel, "assert_func"), I64(1)])


HANDLERS = {"device_print": lower_device_print, "device_assert": lower_device_assert}

__all__ = ["HANDLERS"]
