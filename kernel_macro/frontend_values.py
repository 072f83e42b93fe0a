"""Frontend values of the kernel language: :class:`Tensor` (an IR value, scalar or block, of
numbers or pointers) beside compile-time Python values, :class:`SemanticError` (a language-level
mistake with its hint and argument), and small helpers that name values in messages."""

from __future__ import annotations

from typing import Any

from eggpu.ir.dtypes import DType
from eggpu.ir.graph import Value
from eggpu.ir.types import BlockType, PointerType

from .language import PointerAnnotation


class SemanticError(Exception):
    """A language-level mistake: ``problem`` (what is wrong), ``hint`` (what to write instead) and
    ``arg`` (the parameter name of the offending argument of a ``tl`` call, for the caret)."""

    def __init__(self, problem: str, hint: str | None = None, arg: str | None = None):
        super().__init__(problem)
        self.problem = problem
        self.hint = hint
        self.arg = arg


class Tensor:
    """A frontend value backed by an IR value (scalar or block; numbers or pointers)."""

    __slots__ = ("value",)

    def __init__(self, value: Value):
        self.value = value

    @property
    def type(self) -> BlockType:
        return self.value.type

    @property
    def shape(self) -> tuple[int, ...]:
        return self.value.type.shape

    @property
    def is_pointer(self) -> bool:
        return isinstance(self.value.type.elem, PointerType)

    @property
    def is_block(self) -> bool:
        return bool(self.value.type.shape)

    @property
    def dtype(self) -> DType:
        """Element dtype (for pointers: the pointee dtype)."""
        return self.value.type.dtype

    @property
    def lang_dtype(self) -> Any:
        """What ``x.dtype`` means in a kernel: the dtype, or ``tl.Pointer[T]`` for pointers."""
        return PointerAnnotation(self.dtype) if self.is_pointer else self.dtype

    def __repr__(self) -> str:
        return f"Tensor({self.type})"


class BlockTypeValue:
    """``x.type`` of a block in a kernel (Triton's ``tl.block_type``): ``element_ty`` (the dtype,
    or ``tl.Pointer[T]`` for a block of pointers), ``scalar`` (the same) and ``shape``."""

    __slots__ = ("element_ty", "shape")

    def __init__(self, element_ty: Any, shape: tuple[int, ...]):
        self.element_ty = element_ty
        self.shape = shape

    @property
    def scalar(self) -> Any:
        return self.element_ty

    def __eq__(self, other: object) -> bool:
        return isinstance(other, BlockTypeValue) and (self.element_ty, self.shape) == (other.element_ty, other.shape)

    def __hash__(self) -> int:
        return hash((self.element_ty, self.shape))

    def __repr__(self) -> str:
        return f"<{list(self.shape)}, {self.element_ty}>"


def is_number(v: Any) -> bool:
    """A Python int/float/bool literal (compile-time number)."""
    return isinstance(v, int | float) and not isinstance(v, Tensor)


def describe(v: Any) -> str:
    """Short text naming a frontend value, for messages."""
    if isinstance(v, Tensor):
        return f"a block of type {v.type}" if v.is_block else f"a scalar of type {v.type}"
    if isinstance(v, DType):
        return f"the dtype {v}"
    if v is None:
        return "None"
    if isinstance(v, bool | int | float):
        return f"the compile-time {type(v).__name__} {v!r}"
    if isinstance(v, tuple):
        return f"a tuple of {len(v)}"
    described = getattr(v, "described", None)  # values defined elsewhere (block pointers) name themselves
    if isinstance(described, str):
        return described
    return f"a {type(v).__name__}"


def fmt_shape(shape: tuple[int, ...]) -> str:
    return "[" + ", ".join(map(str, shape)) + "]"
