"""Debugging in the kernel language: Triton's ``tl.debug_barrier``, ``tl.static_print``,
``tl.static_assert`` (compile time), ``tl.device_print`` and ``tl.device_assert`` (run time).

Declarations only, like :mod:`eggpu.kernel_macro.language`, which re-exports them; their meanings
are in the frontend (:mod:`.debugging`, :mod:`.builtins`, :mod:`.compat`)."""

from __future__ import annotations

from .language_base import _builtin

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing on a cache hit
if TYPE_CHECKING:
    from typing import Any


@_builtin
def debug_barrier() -> Any:
    """Triton's barrier among the threads of a program. eggpu programs have no user-visible
    shared memory, and a program's own stores are visible to its later loads, so it is a no-op."""


@_builtin
def static_print(*values: Any, sep: str = " ", end: str = "\n") -> Any:
    """Print compile-time values (and the types of runtime ones) while the kernel is compiled."""


@_builtin
def static_assert(condition: Any, msg: str = "") -> Any:
    """Fail compilation with ``msg`` when the compile-time ``condition`` is false."""


@_builtin
def device_print(prefix: str, *args: Any, hex: bool = False) -> Any:  # noqa: A002 - Triton's name
    """Print ``prefix`` and the values of ``args`` at run time, one line per lane in Triton's format
    ``pid (x, y, z) idx (i, ...) prefix: value`` (``hex=True`` prints integers/floats' bits in hex).
    Interpreter and ``run_cpu`` print to ``sys.stdout``; the PTX calls ``vprintf``
    (docs/language.md, "Debugging")."""


@_builtin
def device_assert(cond: Any, msg: str = "", mask: Any = None) -> Any:
    """Check ``cond`` on every lane (where ``mask`` is true) at run time, only in a kernel compiled
    with ``debug=True`` (Triton's option; ``TRITON_DEBUG=1`` sets the default); otherwise it
    compiles to nothing. A failing lane stops the kernel: an :class:`eggpu.DeviceAssertionError` naming the kernel, the source line, ``msg``
    and the first failing program and lane in the interpreter and ``run_cpu``; ``__assertfail``
    (a device-side assert) in PTX."""
