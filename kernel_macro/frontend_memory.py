"""Memory operations of the kernel language on frontend values: ``tl.load``, ``tl.store`` and the
atomics, with their pointer, mask, ``other`` and stored-value checks. :class:`Memory` is a mixin
of :class:`~eggpu.kernel_macro.frontend_ops.Semantic` (it uses its conversion and broadcasting)."""

from __future__ import annotations

from typing import Any

from eggpu.ir.dtypes import bool_

from .frontend_values import SemanticError, Tensor, describe, fmt_shape, is_number


class Memory:
    """Loads, stores and atomics; mixed into ``Semantic``."""

    def _pointer(self, ptr: Any, fn: str) -> Tensor:
        if not isinstance(ptr, Tensor) or not ptr.is_pointer:
            shown = ptr.type if isinstance(ptr, Tensor) else describe(ptr)
            raise SemanticError(
                f"tl.{fn} needs a pointer, got {shown}",
                f"pass a pointer parameter plus offsets, e.g. tl.{fn}(x_ptr + offs, ...)", arg="ptr",
            )
        if fn != "load" and ptr.type.elem.const:  # Triton: "Cannot store to a constant pointer"
            raise SemanticError(f"tl.{fn}: cannot store to a constant pointer ({ptr.type})",
                                "the pointer is read-only (a tl.const parameter or tl.pointer_type(..., const=True)); "
                                "write through a pointer that is not const", arg="ptr")
        return ptr

    def _mask(self, mask: Any, fn: str) -> Tensor:
        if isinstance(mask, bool):
            return self.const(mask, bool_)
        if not isinstance(mask, Tensor) or mask.is_pointer or not mask.dtype.is_bool:
            shown = mask.type if isinstance(mask, Tensor) else describe(mask)
            raise SemanticError(
                f"the mask of tl.{fn} must be a bool block, got {shown}",
                "build a mask with a comparison, e.g. mask = offs < n (or x != 0 from numbers)",
                arg="mask",
            )
        return mask

    def load(self, ptr: Any, mask: Any, other: Any, volatile: bool = False) -> Tensor:
        """``tl.load``; ``volatile``: the IR load carries ``volatile=True`` (only then, so other
        loads print and hash as before)."""
        attrs = {"volatile": True} if volatile else {}
        p = self._pointer(ptr, "load")
        if mask is None:
            if other is not None:
                raise SemanticError("tl.load got other= without mask= (other fills masked-off lanes)",
                                    "pass mask=... as well, or drop other=", arg="other")
            return Tensor(self.b.op("load", p.value, **attrs))
        m = self._mask(mask, "load")
        shape = self.broadcast_shapes(p.shape, m.shape)
        p, m = self.broadcast_to(p, shape), self.broadcast_to(m, shape)
        if other is None:
            return Tensor(self.b.op("load", p.value, m.value, **attrs))
        if not isinstance(other, Tensor) and not is_number(other):
            raise SemanticError(f"other must be a number or a block, got {describe(other)}", arg="other")
        o = self.broadcast_to(self.convert(other, p.dtype), shape)
        return Tensor(self.b.op("load", p.value, m.value, o.value, **attrs))

    def _stored_value(self, p: Tensor, value: Any, fn: str, arg: str) -> Tensor:
        if not isinstance(value, Tensor) and not is_number(value):
            raise SemanticError(f"tl.{fn} cannot store {describe(value)}", arg=arg)
        v = self.convert(value, p.dtype)
        if v.is_block and not p.is_block:
            raise SemanticError(
                f"tl.{fn} got a block value ({v.type}) for a scalar pointer ({p.type})",
                "add block offsets to the pointer: ptr + tl.arange(0, BLOCK)", arg=arg,
            )
        try:
            return self.broadcast_to(v, p.shape)
        except SemanticError as e:
            raise SemanticError(
                f"tl.{fn}: the value's shape {fmt_shape(v.shape)} does not broadcast to the pointer's "
                f"shape {fmt_shape(p.shape)}", e.hint, arg=arg,
            ) from None

    def _mask_for(self, p: Tensor, mask: Any, fn: str) -> Tensor | None:
        if mask is None:
            return None
        m = self._mask(mask, fn)
        try:
            return self.broadcast_to(m, p.shape)
        except SemanticError:
            raise SemanticError(
                f"tl.{fn}: the mask's shape {fmt_shape(m.shape)} does not broadcast to the pointer's "
                f"shape {fmt_shape(p.shape)}", arg="mask",
            ) from None

    def store(self, ptr: Any, value: Any, mask: Any) -> None:
        p = self._pointer(ptr, "store")
        v = self._stored_value(p, value, "store", "value")
        m = self._mask_for(p, mask, "store")
        ops = (p.value, v.value) + ((m.value,) if m is not None else ())
        self.b.effect("store", *ops)

    def atomic(self, kind: str, ptr: Any, val: Any, mask: Any, **attrs: Any) -> Tensor:
        """``atomic_add/max/min/xchg``. Unlike ``store``, a scalar pointer broadcasts against a block
        value (every lane updates the one address, in lane order)."""
        fn = kind
        p = self._pointer(ptr, fn)
        if p.dtype.is_bool and kind != "atomic_xchg":
            raise SemanticError(f"tl.{fn} needs a numeric pointer, got {p.type}", arg="ptr")
        if kind in ("atomic_and", "atomic_or", "atomic_xor") and not p.dtype.is_int:
            raise SemanticError(f"tl.{fn} needs an integer pointer, got {p.type}",
                                "bitwise atomics work on integers: update the bits through an integer pointer "
                                "of the same width", arg="ptr")
        shape = p.shape
        for extra in (val, mask):
            if isinstance(extra, Tensor) and len(extra.shape) > len(shape):
                shape = self.broadcast_shapes(shape, extra.shape)
        p = self.broadcast_to(p, shape)
        v = self._stored_value(p, val, fn, "val")
        m = self._mask_for(p, mask, fn)
        ops = (p.value, v.value) + ((m.value,) if m is not None else ())
        return Tensor(self.b.op(kind, *ops, **attrs))

    def atomic_cas(self, ptr: Any, cmp: Any, val: Any, **attrs: Any) -> Tensor:
        p = self._pointer(ptr, "atomic_cas")
        if p.dtype.is_float:
            raise SemanticError(f"tl.atomic_cas supports integer and bool pointers, got {p.type}",
                                "compare-and-swap the bits: use an integer pointer of the same width",
                                arg="ptr")
        c = self._stored_value(p, cmp, "atomic_cas", "cmp")
        v = self._stored_value(p, val, "atomic_cas", "val")
        return Tensor(self.b.op("atomic_cas", p.value, c.value, v.value, **attrs))
