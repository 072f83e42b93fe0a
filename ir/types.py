"""IR value types: a block (tensor) of elements with a static shape.

Every IR value has a :class:`BlockType`: an element type (a :class:`DType` or a
:class:`PointerType`) and a static shape. Shape ``()`` is a scalar (a per-program value);
``(128,)`` is a 1-D block, ``(16, 32)`` a 2-D block. Text form: ``f32``, ``i32[128]``,
``ptr<f16>``, ``ptr<f32>[16,32]``.
"""

from __future__ import annotations

from math import prod

from .dtypes import DType, i64
from .record import Frozen


class PointerType(Frozen):
    """A pointer into global memory whose elements have dtype ``pointee``. A ``const`` pointer
    (Triton's ``tl.pointer_type(dt, const=True)`` / a ``tl.const`` parameter) is only read
    through: store and atomics refuse it, and loads may use the read-only path (``ld.global.nc``)."""

    __slots__ = _fields = ("pointee", "const")
    pointee: DType
    const: bool

    def __init__(self, pointee: DType, const: bool = False):
        object.__setattr__(self, "pointee", pointee)
        object.__setattr__(self, "const", bool(const))

    def __str__(self) -> str:
        return f"ptr<{self.pointee}, const>" if self.const else f"ptr<{self.pointee}>"

    __repr__ = __str__

    # Pointers behave as 64-bit values for layout purposes.
    bits = 64
    kind = "p"


Elem = DType | PointerType


class BlockType(Frozen):
    """Element type plus static shape. ``shape == ()`` means a scalar."""

    __slots__ = _fields = ("elem", "shape")
    elem: Elem
    shape: tuple[int, ...]

    def __init__(self, elem: Elem, shape: tuple[int, ...] = ()):
        object.__setattr__(self, "elem", elem)
        object.__setattr__(self, "shape", shape)

    def __str__(self) -> str:
        if not self.shape:
            return str(self.elem)
        return f"{self.elem}[{','.join(map(str, self.shape))}]"

    __repr__ = __str__

    @property
    def is_scalar(self) -> bool:
        return self.shape == ()

    @property
    def is_pointer(self) -> bool:
        return isinstance(self.elem, PointerType)

    @property
    def dtype(self) -> DType:
        """The element dtype; for pointer blocks, the pointee's dtype."""
        return self.elem.pointee if isinstance(self.elem, PointerType) else self.elem

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def numel(self) -> int:
        return prod(self.shape) if self.shape else 1

    def with_shape(self, shape: tuple[int, ...]) -> BlockType:
        return BlockType(self.elem, tuple(shape))

    def with_elem(self, elem: Elem) -> BlockType:
        return BlockType(elem, self.shape)


def scalar(elem: Elem) -> BlockType:
    return BlockType(elem, ())


def block(elem: Elem, *shape: int) -> BlockType:
    return BlockType(elem, tuple(shape))


def pointer(dt: DType, const: bool = False) -> BlockType:
    return BlockType(PointerType(dt, const), ())


OFFSET_DTYPE = i64
"""Offsets added to pointers may be any integer dtype; address math is done in 64 bits."""
