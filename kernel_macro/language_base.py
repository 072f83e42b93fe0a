"""What every language function shares: the ``@_builtin`` mark the frontend dispatches on, and
the error a language function raises when it is called as plain Python (outside a compile).

The registries :data:`_KERNEL_CODES` and :data:`_JIT_CODES` are filled by ``@kernel`` and
``@eggpu.jit`` so that error can name the kernel and say how to launch it.
"""

from __future__ import annotations

import builtins
import functools
import sys

from eggpu.ir.errors import KernelError

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing on a cache hit
if TYPE_CHECKING:
    from typing import Any

_builtin_range = builtins.range

# Filled by eggpu.kernel_macro.kernel: code object of a @kernel function -> its Kernel class.
_KERNEL_CODES: dict[Any, Any] = {}
# Filled by eggpu.kernel_macro.jitfunction: code object of an @eggpu.jit function -> its name.
_JIT_CODES: dict[Any, str] = {}


def _launch_example(kernel_cls: Any) -> str:
    spec = kernel_cls._spec
    dt = "".join(
        "[" + ", ".join(f"tl.{tv.allowed[0]}" for tv in spec.signature.typevars) + "]"
        for _ in [0] if spec.signature.typevars
    )
    consts = ", ".join(f"{p.name.lower()}=..." for p in spec.signature.constexprs)
    return f"{kernel_cls.__name__}{dt}({consts})"


def _outside(name: str) -> KernelError:
    """The error a language function raises when called as plain Python."""
    frame = sys._getframe(2)
    for _ in _builtin_range(8):  # look for the @kernel function that called us (directly or via helpers)
        if frame is None:
            break
        cls = _KERNEL_CODES.get(frame.f_code)
        if cls is not None:
            ex = _launch_example(cls)
            return KernelError(
                f"{cls._spec.name} is a @kernel and cannot be called directly (tl.{name} only has a "
                f"meaning while the kernel is compiled); launch it with {ex}.interpret(grid, *args) "
                f"or eggpu.compile({ex})"
            )
        jit_name = _JIT_CODES.get(frame.f_code)
        if jit_name is not None:
            return KernelError(
                f"{jit_name} is an @eggpu.jit function and was called as plain Python (tl.{name} only has "
                f"a meaning while a kernel is compiled); launch it with {jit_name}[grid](*args), or call "
                f"it from a kernel"
            )
        frame = frame.f_back
    return KernelError(
        f"tl.{name} can only be used inside a @kernel function; launch it with "
        f"GeluForward[tl.f32](1024).interpret(grid, ...) or eggpu.compile(...) "
        f"(a @kernel function gets a Kernel class named after it)"
    )


def _builtin(fn, shown: str | None = None):
    """Declare a language function by ``fn``: its name, signature and docstring (its body is the
    docstring alone: it does nothing). The frontend looks the function's meaning up by
    ``__eggpu_builtin__``. Called as plain Python, the declared function checks its arguments as
    ``fn`` does (a wrong count is Python's TypeError) and raises :func:`_outside`'s error;
    ``inspect.signature`` and ``help()`` read ``fn`` through ``__wrapped__``. ``shown``: the name
    after ``tl.`` in that error when it is not ``fn``'s (``extra.cuda.libdevice.ldexp``)."""
    name = shown or fn.__name__

    @functools.wraps(fn)
    def declared(*args: Any, **kwargs: Any) -> Any:
        fn(*args, **kwargs)  # only Python's check of the arguments: the body does nothing
        raise _outside(name)

    declared.__eggpu_builtin__ = fn.__name__  # type: ignore[attr-defined]
    return declared
