"""Integer <-> pointer conversions of the kernel language (Triton's ``int_to_ptr``/``ptr_to_int``).

``x.to(tl.pointer_type(dt))`` (or ``tl.cast``) on an ``i64``/``u64`` scalar or block is the IR's
``int_to_ptr`` (the integer is a global address in bytes); ``p.to(tl.int64)`` / ``p.to(tl.uint64)``
on pointers is ``ptr_to_int``; ``p.to(tl.pointer_type(other))`` reinterprets a pointer as a
pointer to another dtype (``ptr_to_int`` then ``int_to_ptr``: the address is kept, element
offsets then count ``other``'s elements); ``tl.pointer_type(dt, const=True)`` gives a const
(read-only) pointer the same way. Every other conversion that involves a pointer is a
:class:`SemanticError` that says what to write instead (the frontend adds the source line).
"""

from __future__ import annotations

from typing import Any

from eggpu.ir.builder import Builder
from eggpu.ir.dtypes import DType, i64

from .frontend_values import SemanticError, Tensor
from .language import PointerAnnotation

ADDRESS_HINT = ("addresses are 64-bit: convert the integer with .to(tl.int64) first, "
                "or load the address table as int64/uint64")


def involves_pointer(x: Tensor, dt: Any) -> bool:
    """Whether ``x.to(dt)`` is a pointer conversion (this module's job)."""
    return x.is_pointer or isinstance(dt, PointerAnnotation)


def pointer_cast(b: Builder, x: Tensor, dt: Any) -> Tensor:
    """``x.to(dt)`` where ``x`` is a pointer or ``dt`` is ``tl.pointer_type(...)`` (see the module
    docstring); raises SemanticError (``arg="dtype"`` where the target is wrong) otherwise."""
    if isinstance(dt, PointerAnnotation):
        pointee = dt.pointee
        if not isinstance(pointee, DType):
            raise SemanticError(f"the pointee of a pointer conversion must be a dtype, got {pointee!r}", arg="dtype")
        const = {"const": 1} if dt.const else {}
        if x.is_pointer:
            if x.dtype == pointee and x.type.elem.const == dt.const:
                return x
            addr = b.op("ptr_to_int", x.value, dtype=i64)
            return Tensor(b.op("int_to_ptr", addr, dtype=pointee, **const))
        src = x.dtype
        if not src.is_int or src.bits != 64:
            raise SemanticError(f"cannot convert {src} to a pointer: only a 64-bit integer (int64 or uint64) "
                                "holds an address", ADDRESS_HINT)
        return Tensor(b.op("int_to_ptr", x.value, dtype=pointee, **const))
    if not isinstance(dt, DType):
        raise SemanticError(f"expected a dtype such as tl.int64, got {dt!r}", arg="dtype")
    if dt.is_int and dt.bits == 64:
        return Tensor(b.op("ptr_to_int", x.value, dtype=dt))
    raise SemanticError(f"cannot convert a pointer ({x.type}) to {dt}: a pointer converts only to int64 or uint64 "
                        "(its address) or to another tl.pointer_type",
                        "to read the values it points to, load them first: tl.load(ptr).to(...)")
