"""The exception hierarchy of eggpu, rooted in :class:`EggpuError`.

It lives in ``ir`` (the leaf package) so that every layer can raise it; the facade
re-exports it as ``eggpu.EggpuError`` and friends.
"""

from __future__ import annotations


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
