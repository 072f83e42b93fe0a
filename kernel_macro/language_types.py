"""The kernel language's types: dtypes (eggpu's and Triton's names), ``tl.dtype``, the dtype
categories used as ``TypeVar`` bounds, ``tl.Pointer[T]``, ``tl.pointer_type`` and ``tl.constexpr``.

Re-exported by :mod:`eggpu.kernel_macro.language` (``tl.float32 is tl.f32``).
"""

from __future__ import annotations

import builtins
from types import FunctionType as _FunctionType

from eggpu.ir import dtypes as _dt
from eggpu.ir.dtypes import DType
from eggpu.ir.record import Frozen

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing on a cache hit
if TYPE_CHECKING:
    from typing import Any, ClassVar
try:  # the class of every TypeVar (PEP 695 ones too), without importing typing on a cache hit
    from _typing import TypeVar as _TypeVar  # Python 3.12+: typing.TypeVar is this C type
except ImportError:  # Python 3.11: TypeVar is a class of typing.py, which a cache hit does not import

    class _IsTypeVar(type):
        def __instancecheck__(cls, obj: object) -> bool:
            t = type(obj)
            return t.__name__ == "TypeVar" and t.__module__ in ("typing", "typing_extensions")

    class _TypeVar(metaclass=_IsTypeVar):
        """``isinstance(x, _TypeVar)``: ``x`` is a ``typing.TypeVar``, told by its class."""

_builtin_bool = builtins.bool

# ---------------------------------------------------------------- dtypes

from eggpu.ir.dtypes import (  # noqa: E402 - after _builtin_bool, which keeps the builtin reachable
    bf16,
    f16,
    f32,
    f64,
    fp8e4b15,
    fp8e4nv,  # storage only: load, store, where, .to() (docs/language.md, "FP8")
    fp8e5,
    i8,
    i16,
    i32,
    i64,
    u8,
    u16,
    u32,
    u64,
)
from eggpu.ir.dtypes import bool_ as bool  # noqa: A004, E402 - Triton-style name, shadows the builtin only here

# Triton's spellings of the same dtypes (the very same objects: ``tl.float32 is tl.f32``).
int1 = bool
int8, int16, int32, int64 = i8, i16, i32, i64
uint8, uint16, uint32, uint64 = u8, u16, u32, u64
float16, bfloat16, float32, float64 = f16, bf16, f32, f64
float8e4nv, float8e5, float8e4b15 = fp8e4nv, fp8e5, fp8e4b15

TRITON_DTYPE_NAMES: dict[str, DType] = {
    "int1": bool, "int8": i8, "int16": i16, "int32": i32, "int64": i64, "uint8": u8, "uint16": u16,
    "uint32": u32, "uint64": u64, "float16": f16, "bfloat16": bf16, "float32": f32, "float64": f64,
    "float8e4nv": fp8e4nv, "float8e5": fp8e5, "float8e4b15": fp8e4b15,
}
"""Triton dtype name -> eggpu dtype (``tl.dtype("float32")`` also takes these)."""

UNSUPPORTED_DTYPES: dict[str, str] = {
    f"float8{f}": (f"fp8{f} (AMD's {amd}) is not supported on NVIDIA GPUs, as in Triton ('type fp8{f} not "
                   f"supported in this architecture'); the FP8 dtypes are tl.float8e4nv, tl.float8e5 and "
                   f"tl.float8e4b15")
    for f, amd in (("e4b8", "e4m3fnuz"), ("e5b16", "e5m2fnuz"))
}
UNSUPPORTED_DTYPES["float8e4b15x4"] = "Triton removed it; use tl.float8e4b15"
UNSUPPORTED_DTYPES["void"] = "eggpu has no void dtype (kernels and helpers return nothing or values)"
UNSUPPORTED_DTYPES["pi32_t"] = "eggpu has no pointer dtype values; annotate pointers with tl.Pointer[...]"


class _DtypeMeta(type):
    """Makes ``isinstance(tl.f32, tl.dtype)`` true and ``tl.dtype("float32")`` return ``tl.f32``."""

    def __instancecheck__(cls, obj: Any) -> _builtin_bool:
        return isinstance(obj, DType)

    def __call__(cls, name: Any) -> DType:  # type: ignore[override]
        if isinstance(name, DType):
            return name
        if isinstance(name, str):
            if name in TRITON_DTYPE_NAMES:
                return TRITON_DTYPE_NAMES[name]
            if name in _dt.BY_NAME:
                return _dt.BY_NAME[name]
            if name in UNSUPPORTED_DTYPES:
                raise TypeError(f"tl.dtype({name!r}): {UNSUPPORTED_DTYPES[name]}")
        known = ", ".join(TRITON_DTYPE_NAMES)
        raise TypeError(f"tl.dtype({name!r}): unknown dtype; known: {known} (or eggpu's f32, i32, ...)")


class dtype(metaclass=_DtypeMeta):  # noqa: N801 - Triton's name
    """Triton's ``tl.dtype``: ``isinstance(x, tl.dtype)`` is true for every dtype;
    ``tl.dtype("float32") is tl.f32`` (Triton or eggpu names)."""


class PropagateNan:
    """Triton's ``propagate_nan=`` values of ``tl.minimum``/``tl.maximum``/``tl.clamp``.

    ``NONE`` (the default): a NaN operand is ignored; ``ALL``: a NaN operand gives NaN."""

    NONE = "NONE"
    ALL = "ALL"


# ---------------------------------------------------------------- categories


class Dtype:
    """Category of every dtype; the bound of a dtype ``TypeVar`` (``bound=tl.Dtype``).

    Categories are never instantiated; ``DTYPES`` lists their members and ``contains(dt)`` tests
    membership. ``Num`` = ``Int`` + ``Float``.
    """

    DTYPES: ClassVar[tuple[DType, ...]] = _dt.CATEGORIES["Dtype"]

    def __new__(cls, *args: Any, **kwargs: Any):
        raise TypeError(f"tl.{cls.__name__} is a dtype category (a TypeVar bound), not a value")

    @classmethod
    def contains(cls, dt: DType) -> _builtin_bool:
        return dt in cls.DTYPES


class Num(Dtype):
    """Integers and floats."""

    DTYPES = _dt.CATEGORIES["Num"]


class Int(Num):
    """Signed and unsigned integers (not bool)."""

    DTYPES = _dt.CATEGORIES["Int"]


class Float(Num):
    """f16, bf16, f32, f64."""

    DTYPES = _dt.CATEGORIES["Float"]


class Bool(Dtype):
    """The bool dtype."""

    DTYPES = _dt.CATEGORIES["Bool"]


CATEGORY_CLASSES: dict[str, type[Dtype]] = {
    "Dtype": Dtype, "Num": Num, "Int": Int, "Float": Float, "Bool": Bool,
}


# ---------------------------------------------------------------- annotations


class PointerAnnotation(Frozen):
    """``tl.Pointer[T]``: a pointer parameter whose pointee is a dtype or a dtype TypeVar.

    ``str(tl.Pointer[tl.f32]) == "Pointer[f32]"``; ``str(tl.Pointer[D]) == "Pointer[D]"``.
    """

    _fields = ("pointee", "const")
    pointee: Any
    const: bool

    def __init__(self, pointee: Any, const: bool = False):
        self._assign(pointee, _builtin_bool(const))

    @property
    def element_ty(self) -> Any:
        """Triton's spelling of :attr:`pointee`."""
        return self.pointee

    def __str__(self) -> str:
        p = self.pointee
        name = p.__name__ if isinstance(p, _TypeVar) else str(p)
        return f"const Pointer[{name}]" if self.const else f"Pointer[{name}]"

    __repr__ = __str__


class Pointer:
    """Annotation of a pointer parameter: ``x_ptr: tl.Pointer[tl.f32]`` or ``tl.Pointer[D]``."""

    def __new__(cls, *args: Any, **kwargs: Any):
        raise TypeError("tl.Pointer is an annotation: write tl.Pointer[tl.f32] or tl.Pointer[D]")

    def __class_getitem__(cls, item: Any) -> PointerAnnotation:
        if not isinstance(item, DType | _TypeVar):
            raise TypeError(f"tl.Pointer[...] takes a dtype (tl.f32) or a dtype TypeVar, got {item!r}")
        return PointerAnnotation(item)


def pointer_type(element_ty: Any, address_space: Any = 1, const: _builtin_bool = False) -> PointerAnnotation:
    """Triton's ``tl.pointer_type(dtype, address_space, const)``: the target type of a pointer
    conversion, ``addr.to(tl.pointer_type(tl.float16))`` (``addr`` an i64/u64 global address, or a
    pointer; see docs/language.md, "Coming from Triton"). ``const=True`` gives a const pointer: read
    only (a store through it is an error; loads use ``ld.global.nc``). Only global pointers
    (``address_space`` 1, or Triton's name ``"global"``)."""
    if isinstance(element_ty, str):
        element_ty = dtype(element_ty)
    if not isinstance(element_ty, DType):
        raise TypeError(f"tl.pointer_type(element_ty) takes a dtype such as tl.float16, got {element_ty!r}")
    if address_space not in (1, "global"):
        raise TypeError(f"tl.pointer_type: eggpu has only global pointers (address_space=1), got {address_space!r}")
    return PointerAnnotation(element_ty, const)


def const_pointer_type(element_ty: Any) -> PointerAnnotation:
    """Older Triton's ``tl.const_pointer_type(dtype)``: ``tl.pointer_type(dtype, const=True)``."""
    return pointer_type(element_ty, const=True)


class const:  # noqa: N801 - Triton's name
    """Triton's ``tl.const``: the annotation of a pointer parameter that is only read through
    (``in_ptr: tl.const``): its type is ``tl.pointer_type(dtype, const=True)``, a store through it
    is a compile error at the line, and its loads use the read-only path (``ld.global.nc``)."""

    def __new__(cls, *args: Any, **kwargs: Any):
        raise TypeError("tl.const is an annotation of a pointer parameter: in_ptr: tl.const")


class constexpr:  # noqa: N801 - Triton's name
    """Annotation of a compile-time parameter (``BLOCK_SIZE: tl.constexpr``).

    Inside a kernel body ``tl.constexpr(v)`` is just ``v`` (which must be a compile-time value).
    As a decorator on a plain function (``@tl.constexpr def get_int_t(bits, signed): ...``, Triton's
    spelling before ``triton.constexpr_function``, FlagGems' sort) it marks the function to be called
    at compile time, as :func:`eggpu.constexpr_function` does.
    """

    def __new__(cls, value: Any = None):
        if type(value) is _FunctionType:
            from .constexpr_function import constexpr_function

            return constexpr_function(value)
        return value


class tensor:  # noqa: N801 - Triton's name
    """Triton's block/scalar value type, as an annotation only (``def helper(x) -> tl.tensor``,
    ``x: tl.tensor`` on a parameter or variable): a parameter annotated with it is typed by its
    argument, as an unannotated one. Kernel values are made by the language (``tl.load``,
    ``tl.full``, ``tl.arange``, ...); this class is never instantiated."""

    def __new__(cls, *args: Any, **kwargs: Any):
        raise TypeError("tl.tensor is a type for annotations; kernel values are made by the language "
                        "(tl.load, tl.full, tl.zeros, tl.arange, ...)")


class tensor_descriptor:  # noqa: N801 - Triton's name
    """Triton's device-side descriptor type, as an annotation: a kernel parameter annotated
    ``desc: tl.tensor_descriptor`` takes a host ``TensorDescriptor`` (a launch with anything else
    is a ``LaunchError``); on a helper's parameter it documents the argument. Descriptor values
    are made by ``tl.make_tensor_descriptor`` or passed in; this class is never instantiated."""

    def __new__(cls, *args: Any, **kwargs: Any):
        raise TypeError("tl.tensor_descriptor is a type for annotations; make descriptors with "
                        "tl.make_tensor_descriptor(...) in a kernel or TensorDescriptor(...) on the host")


tensor_descriptor_base = tensor_descriptor
"""Triton's base class of descriptor types (the same annotation here)."""
