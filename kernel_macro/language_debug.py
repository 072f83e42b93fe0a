"""Debugging in the kernel language: Triton's ``tl.debug_barrier``, ``tl.static_print``,
``tl.static_assert`` (compile time).

Declarations only, like :mod:`eggpu.kernel_macro.language`, which re-exports them; their meanings
are in the frontend."""

from __future__ import annotations

from typing import Any

from .language_base import _builtin, _outside


@_builtin
def debug_barrier() -> Any:
    """Triton's barrier among the threads of a program. eggpu programs have no user-visible
    shared memory, and a program's own stores are visible to its later loads, so it is a no-op."""
    raise _outside("debug_barrier")


@_builtin
def static_print(*values: Any, sep: str = " ", end: str = "\n") -> Any:
    """Print compile-time values (and the types of runtime ones) while the kernel is compiled."""
    raise _outside("static_print")


@_builtin
def static_assert(condition: Any, msg: str = "") -> Any:
    """Fail compilation with ``msg`` when the compile-time ``condition`` is false."""
    raise _outside("static_assert")

