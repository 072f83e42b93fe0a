"""The frontend of libdevice's functions without an op of their own (Triton's
``extern_elementwise``): ``libdevice.nextafter(x, y)`` becomes one ``libdevice`` op whose symbol
is the overload matching the operand dtypes (:data:`eggpu.ir.libdevice_table.FUNCTIONS`).

Dispatch follows Triton's ``extern_elementwise``: literals become tensors of their default dtype
(int -> i32, float -> f32); when the operand dtypes match an overload exactly they are only
broadcast, otherwise they are first promoted to their common dtype (Triton's arithmetic
promotion: ``nextafter(x_f64, 1.0)`` calls ``__nv_nextafter``); no overload after that is an
error naming the function, the dtypes given and the overloads.
"""

from __future__ import annotations

from typing import Any

from eggpu.ir.dtypes import promote
from eggpu.ir.libdevice_table import FUNCTIONS

from .frontend_ops import Semantic, SemanticError, Tensor


def _find(overloads: tuple, dts: tuple[str, ...]) -> str | None:
    return next((sym for args, sym, _ in overloads if args == dts), None)


def _call(name: str):
    overloads = FUNCTIONS[name]
    n = len(overloads[0][0])

    def impl(s: Semantic, a: dict[str, Any]) -> Tensor:
        ts = [s.to_tensor(a[f"arg{i}"]) for i in range(n)]
        for i, t in enumerate(ts):
            if t.is_pointer:
                raise SemanticError(f"libdevice.{name} takes values, got a pointer for arg{i}", arg=f"arg{i}")
        dts = tuple(str(t.dtype) for t in ts)
        sym = _find(overloads, dts)
        if sym is None and n > 1:  # Triton: promote to the common dtype, then look again
            common = ts[0].dtype
            for t in ts[1:]:
                common = promote(common, t.dtype)
            ts = [s.cast(t, common) for t in ts]
            sym = _find(overloads, tuple(str(t.dtype) for t in ts))
        if sym is None:
            want = " or ".join(f"({', '.join(args)})" for args, _, _ in overloads)
            raise SemanticError(f"libdevice.{name} has no overload for ({', '.join(dts)}): it takes {want}",
                                "convert the arguments first, e.g. x.to(tl.float32)", arg="arg0")
        shape: tuple[int, ...] = ()
        for t in ts:
            shape = s.broadcast_shapes(shape, t.shape)
        ops = [s.broadcast_to(t, shape).value for t in ts]
        return Tensor(s.b.op("libdevice", *ops, symbol=sym))

    return impl


IMPLS: dict[str, Any] = {f"libdevice.{name}": _call(name) for name in FUNCTIONS}
