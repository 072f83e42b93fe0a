"""Functions a kernel calls at compile time: Triton's ``triton.constexpr_function``.

``@eggpu.constexpr_function`` wraps a plain Python function so that a kernel may call it on
compile-time values (constexpr parameters, Python numbers, dtypes, strings); the call runs as
Python while the kernel is compiled and its result is a compile-time value. Called from host code
it is the plain function. ``eggpu.cdiv`` and ``eggpu.next_power_of_2`` are such functions, as
``triton.cdiv`` and ``triton.next_power_of_2`` are in Triton 3.5+, so kernels may size loops with
them (``tl.static_range(triton.cdiv(H, BLOCK_H))``).

Dtype arguments reach the function as :class:`TritonDType` views with Triton's query methods
(``d.is_bf16()``, ``d.is_int()``, ``d.int_bitwidth``; ``==`` compares the dtype, ``is`` does not
hold), as FlagGems' ``get_scan_accum_type`` asks them (:func:`call_in_kernel`); a view returned is
the dtype again. The frontend recognises the wrapper by type.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from eggpu.ir.dtypes import DType


class ConstexprFunction:
    """A Python function callable from a kernel on compile-time values (see the module docstring)."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        if not callable(fn):
            raise TypeError(f"constexpr_function needs a function, got {type(fn).__name__}")
        self.fn = fn
        functools.update_wrapper(self, fn)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<constexpr_function {getattr(self.fn, '__qualname__', self.fn)!r}>"


def constexpr_function(fn: Callable[..., Any]) -> ConstexprFunction:
    """Mark ``fn`` as callable from kernels at compile time (Triton's ``triton.constexpr_function``)."""
    return ConstexprFunction(fn)


@constexpr_function
def cdiv(x: int, y: int) -> int:
    """Ceiling division, Triton's ``triton.cdiv``: for grids (``cdiv(n, BLOCK)``) and, in a
    kernel, on compile-time values."""
    return (x + y - 1) // y


@constexpr_function
def next_power_of_2(n: int) -> int:
    """The smallest power of 2 >= ``n`` (1 for ``n <= 1``), Triton's ``triton.next_power_of_2``."""
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


class TritonDType:
    """A dtype as a constexpr_function sees it in a kernel: Triton's ``tl.dtype`` query methods
    (:mod:`.dtype_queries`) over an eggpu :class:`~eggpu.ir.dtypes.DType`, whose own
    ``is_int``/``is_bool`` are properties; any other attribute is the dtype's."""

    __slots__ = ("dtype",)

    def __init__(self, dtype: DType):
        self.dtype = dtype

    def __getattr__(self, name: str) -> Any:
        from .dtype_queries import attribute

        if name.startswith("__"):
            raise AttributeError(name)
        found = attribute(self.dtype, name)
        return getattr(self.dtype, name) if found is None else found

    def __eq__(self, other: object) -> bool:
        return self.dtype == (other.dtype if isinstance(other, TritonDType) else other)

    def __hash__(self) -> int:
        return hash(self.dtype)

    def __repr__(self) -> str:
        return repr(self.dtype)


def call_in_kernel(fn: ConstexprFunction, args: list[Any], kwargs: dict[str, Any]) -> Any:
    """``fn(*args, **kwargs)`` as a kernel calls it: dtypes (also inside tuples and lists) seen as
    :class:`TritonDType`, views in the result unwrapped to dtypes."""
    def wrap(v: Any) -> Any:
        if isinstance(v, DType):
            return TritonDType(v)
        return type(v)(wrap(x) for x in v) if isinstance(v, tuple | list) else v

    def unwrap(v: Any) -> Any:
        if isinstance(v, TritonDType):
            return v.dtype
        return type(v)(unwrap(x) for x in v) if isinstance(v, tuple | list) else v

    return unwrap(fn.fn(*wrap(args), **{k: wrap(v) for k, v in kwargs.items()}))
