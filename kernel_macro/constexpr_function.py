"""Functions a kernel calls at compile time: Triton's ``triton.constexpr_function``.

``@eggpu.constexpr_function`` wraps a plain Python function so that a kernel may call it on
compile-time values (constexpr parameters, Python numbers, dtypes, strings); the call runs as
Python while the kernel is compiled and its result is a compile-time value. Called from host code
it is the plain function. ``eggpu.cdiv`` and ``eggpu.next_power_of_2`` are such functions, as
``triton.cdiv`` and ``triton.next_power_of_2`` are in Triton 3.5+, so kernels may size loops with
them (``tl.static_range(triton.cdiv(H, BLOCK_H))``).

This module imports nothing from the rest of eggpu: the frontend recognises the wrapper by type.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any


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
