"""Lowering of the ``libdevice`` op (a libdevice function without an op of its own, Triton's
``extern_elementwise``; :mod:`eggpu.ir.libdevice_table`).

* PTX: a call of the ``__nv_*`` symbol per element, linked from libdevice like the math ops'.
* Host (run_cpu): a ``libm`` or ``exact`` symbol that libdevice computes with exactly specified
  arithmetic only (:data:`.libdevice_host.HOST_SYMBOLS`) calls libdevice's own code built for the
  host (the GPU's bits). The others, by the table's ``host_kind``: ``libm`` calls the C library's
  function of the same name (``nextafterf``); ``bitcast`` is an LLVM ``bitcast``; ``exact`` calls
  back into the interpreter's scalar reference (:func:`eggpu.ir.libdevice_refs.scalar`) through a
  ctypes function registered as the JIT symbol ``__eggpu_libdevice_<symbol>``, so run_cpu and the
  interpreter compute the same bits; ``gpu`` is refused with the located GPU-only error.
Host values are vectors across the CTA's threads: a helper function applies the scalar call lane
by lane.
"""

from __future__ import annotations

import ctypes
import threading
from dataclasses import dataclass
from typing import Any

from llvmlite import ir

from eggpu.ir.dtypes import BY_NAME
from eggpu.ir.errors import CodegenError, gpu_only_message
from eggpu.ir.graph import Operation
from eggpu.ir.libdevice_table import NEGATIVE_ORDER_NAN, ORDER_LIMIT, SYMBOLS, host_kind, order_bounded

from .lanewise import lanewise_function
from .libdevice_host import host_symbol

I32 = ir.IntType(32)
I64 = ir.IntType(64)
_CTYPES = {"f32": ctypes.c_float, "f64": ctypes.c_double, "i32": ctypes.c_int32, "u32": ctypes.c_uint32,
           "i64": ctypes.c_int64, "u64": ctypes.c_uint64}
_LOCK = threading.Lock()
_CALLBACKS: dict[str, Any] = {}  # symbol -> ctypes callback, kept alive for the process


def callback_symbol(symbol: str) -> str:
    """The JIT symbol of ``symbol``'s host reference, registered on first use."""
    import llvmlite.binding as llvm

    from eggpu.ir.libdevice_refs import scalar

    name = f"__eggpu_libdevice_{symbol}"
    with _LOCK:
        if symbol not in _CALLBACKS:
            _, args, res = SYMBOLS[symbol]
            proto = ctypes.CFUNCTYPE(_CTYPES[res], *(_CTYPES[a] for a in args))
            cb = proto(scalar(symbol))
            _CALLBACKS[symbol] = cb
            llvm.add_symbol(name, ctypes.cast(cb, ctypes.c_void_p).value)
    return name


def lower_libdevice(lw, op: Operation) -> list[Any]:
    """One ``libdevice`` op (see the module docstring)."""
    # imported here: lower_ops builds its table from this module's HANDLERS when it loads, so a
    # module-level import made `import eggpu.codegen.lower_libdevice` (before lower_ops) fail
    from .lower_ops import elementwise

    em = lw.em
    symbol = op.attrs["symbol"]
    name, args, res = SYMBOLS[symbol]
    arg_types = [em.reg_type(BY_NAME[a]) for a in args]
    ret_type = em.reg_type(BY_NAME[res])
    if em.is_ptx:
        fn = em.declare(symbol, ret_type, arg_types)
        return elementwise(lw, op, lambda *vs: em.b.call(fn, list(vs)))
    kind = host_kind(name)
    if kind == "gpu":
        raise CodegenError(gpu_only_message(lw.fn.name, op, "run_cpu (the host lowering)"))
    if kind == "bitcast":
        return elementwise(lw, op, lambda v: em.b.bitcast(v, em.like_type(v, ret_type)))
    if host_symbol(symbol, fast_math=em.fast_math):  # libdevice's own code built for the host: the GPU's bits
        callee = symbol
    elif kind == "libm":
        callee = symbol[len("__nv_"):]
    else:
        callee = callback_symbol(symbol)
    scalar_fn = em.declare(callee, ret_type, arg_types)
    bounded = order_bounded(symbol)
    if bounded:
        _check_order(lw, op)

    def libm_call(*vs: ir.Value) -> ir.Value:
        if not isinstance(vs[0].type, ir.VectorType):
            return em.b.call(scalar_fn, list(vs))
        n = vs[0].type.count
        helper = lanewise_function(em.module, f"{callee}_v{n}", scalar_fn, [v.type for v in vs],
                                  ir.VectorType(ret_type, n))
        return em.b.call(helper, list(vs))

    def call(*vs: ir.Value) -> ir.Value:
        if not bounded:
            return libm_call(*vs)
        b, order = em.b, vs[0]
        # libdevice's NaN for a negative order (the C library would reflect); lanes past the
        # check are padding (no element): order 0 keeps them and the negative ones fast
        negative = b.icmp_signed("<", order, em.k(order, 0))
        safe = b.select(b.or_(negative, _beyond(em, order)), em.k(order, 0), order)
        result = libm_call(safe, *vs[1:])
        bits = ir.IntType(BY_NAME[res].bits)
        nan = b.bitcast(em.kt(result, bits, NEGATIVE_ORDER_NAN[symbol]), result.type)
        return b.select(negative, nan, result)

    return elementwise(lw, op, call)


@dataclass(frozen=True)
class OrderCheck:
    """A ``jn``/``yn`` op of a host module (an entry of ``LoweredModule.bounds_checks``): the
    error record holds the first lane whose order is beyond ``ORDER_LIMIT`` and that order."""

    symbol: str
    loc: Any
    shape: tuple[int, ...]


def _beyond(em, n: ir.Value) -> ir.Value:
    """i1 (per thread): ``n > ORDER_LIMIT`` for the i32 order ``n`` (a negative order is NaN)."""
    return em.b.icmp_signed(">", n, em.k(n, ORDER_LIMIT))


def _check_order(lw, op: Operation) -> None:
    """Leave the CTA with an :class:`OrderCheck` failure when an element's order is beyond
    ``ORDER_LIMIT`` (the interpreter's check, interp.py ``_order_checked``): the first such
    element in row-major order, its flat index and order packed in one key ``flat << 32 | order``
    so one unsigned-min reduction finds both."""
    em, b = lw.em, lw.em.b
    shape = tuple(op.operands[0].type.shape)
    check = OrderCheck(op.attrs["symbol"], op.loc, shape)
    lv = lw.get(op.operands[0])
    if lv.u is not None:  # one order for the whole block: the first lane names it
        lw.bounds.report(check, _beyond(em, lv.u), I64(0 if shape else -1), value=b.sext(lv.u, I64))
        return
    lay = lw.layout(shape)
    none = (1 << 64) - 1
    best = None
    for j, n in enumerate(lw.elems(lv)):
        bad = _beyond(em, n)
        owned = lay.owned(em, j)
        if owned is not None:
            bad = b.and_(bad, owned)
        flat = lay.flat(em, j)
        wide = em.kt(flat, I64, 0).type  # i64, or a vector of i64 across the threads
        key = b.or_(b.shl(b.zext(flat, wide), em.kt(flat, I64, 32)), b.zext(n, wide))
        cand = b.select(bad, key, em.kt(flat, I64, none))
        best = cand if best is None else b.select(b.icmp_unsigned("<", cand, best), cand, best)
    if isinstance(best.type, ir.VectorType):
        best = em.intrinsic("llvm.vector.reduce.umin", I64, [best], overload=[best.type])
    lane = b.lshr(best, I64(32))
    lw.bounds.report(check, b.icmp_unsigned("!=", best, I64(none)), lane, value=b.sext(b.trunc(best, I32), I64))


HANDLERS = {"libdevice": lower_libdevice}
