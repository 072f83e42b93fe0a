"""The exception hierarchy of eggpu, rooted in :class:`EggpuError`.

It lives in ``ir`` (the leaf package) so that every layer can raise it; the facade
re-exports it as ``eggpu.EggpuError`` and friends.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing on a cache hit
if TYPE_CHECKING:
    from typing import Any, TypeVar

    F = TypeVar("F", bound=Callable[..., Any])


class EggpuError(Exception):
    """Base of every error eggpu raises on purpose (a user mistake or a clear limit)."""


class IRError(EggpuError):
    """A malformed IR program: bad types, arity, attributes, or structure."""


class IRParseError(IRError):
    """The textual IR form could not be parsed; the message names line and column."""


class InterpreterError(EggpuError):
    """The reference interpreter could not run a program (bad arguments, out-of-bounds access)."""


class OutOfBoundsError(InterpreterError):
    """A load, store or atomic lane outside its buffer: raised by the interpreter and by the CPU
    build of the lowering (``run_cpu``), with the same wording, before the access happens."""


class DeviceAssertionError(InterpreterError):
    """A ``tl.device_assert`` failed in a kernel compiled (or interpreted) with ``debug=True``:
    raised by the interpreter and by ``run_cpu`` with the same words, naming the kernel, the
    source line, the message and the first failing program and lane."""


class KernelError(EggpuError):
    """A problem with a ``@kernel`` definition, its specialization or its dispatch."""


class CompileError(EggpuError):
    """A kernel body uses something the language does not support; message has file:line:col and a caret."""


class RuleError(EggpuError):
    """A rewrite-rule file is malformed; message is ``file:line: rule 'name': problem``."""


class VerificationError(EggpuError):
    """A rule or an optimized program could not be proved equivalent."""


class CodegenError(EggpuError):
    """The IR could not be lowered to LLVM IR / PTX."""


class ToolchainError(EggpuError):
    """An external tool (ptxas, libdevice) is missing; the message names the package to install."""


class LaunchError(EggpuError):
    """Launch arguments do not match a kernel's ``arg_types`` or no GPU is available."""


def checked_call(what: str, error: type[EggpuError] = CompileError) -> Callable[[F], F]:
    """Decorate a public function so that an unknown keyword argument or too many positional
    ones raise ``error`` naming ``what`` (e.g. ``"eggpu.compile"``), the argument and the closest
    known keyword, instead of Python's raw TypeError. The check is two set operations per call
    (nothing is imported or inspected on the hot path)."""
    import functools

    def wrap(fn: F) -> F:
        code = fn.__code__
        n_pos = code.co_argcount
        names = code.co_varnames[:n_pos + code.co_kwonlyargcount]
        accepts_kwargs = bool(code.co_flags & 0x08)  # **kwargs: anything goes
        known = frozenset(names)

        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            if len(args) > n_pos and not code.co_flags & 0x04:  # no *args
                raise error(f"{what} takes at most {n_pos} positional arguments ({', '.join(names[:n_pos])}), "
                            f"got {len(args)}")
            if not accepts_kwargs and not known.issuperset(kwargs):
                raise error(unknown_keyword(what, next(k for k in kwargs if k not in known), names))
            return fn(*args, **kwargs)

        return call  # type: ignore[return-value]

    return wrap


def unknown_keyword(what: str, name: str, known: Iterable[str]) -> str:
    """The message for an unknown keyword ``name`` of ``what``, with the closest known one."""
    import difflib

    known = list(known)
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return f"{what}: unknown keyword argument {name!r}{hint} (known: {', '.join(known)})"


def gpu_only_message(kernel: str, op: Any, runner: str) -> str:
    """Why ``runner`` (the interpreter, run_cpu) cannot run ``op`` (an ``inline_asm``, or a
    ``libdevice`` call the host has no implementation of: ``op.op`` is then ``"libdevice"`` and
    ``op.attrs["symbol"]`` its symbol), located: ``file:line:col: kernel: ...`` then the source
    line with a caret when the file is readable."""
    loc = getattr(op, "loc", None)
    head = f"{loc}: " if loc is not None else ""
    symbol = (getattr(op, "attrs", None) or {}).get("symbol") if getattr(op, "op", None) == "libdevice" else None
    if symbol is not None:
        from .libdevice_table import SYMBOLS, gpu_only_reason

        what = (f"libdevice.{SYMBOLS[symbol][0]} ({symbol}) is GPU-only: {runner} cannot run it "
                f"({gpu_only_reason(symbol)})")
    else:
        what = f"tl.inline_asm_elementwise is GPU-only: {runner} cannot run PTX assembly"
    text = (f"{head}{kernel}: {what}; launch the kernel on a CUDA GPU (ck.launch, or kernel[grid] with a GPU), "
            "or write the computation with tl operations")
    excerpt = loc.excerpt() if loc is not None else ""
    return f"{text}\n{excerpt}" if excerpt else text
