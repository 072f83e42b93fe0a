"""KernelError subclasses raised by ``@kernel`` and its generated classes.

Each names the kernel; each also derives from the matching builtin (``TypeError`` /
``ValueError`` / ``NameError``) so generic handlers keep working.
"""

from __future__ import annotations

from eggpu.ir.errors import KernelError


class KernelSignatureError(KernelError, TypeError):
    """A ``@kernel`` function's parameters cannot be analysed (missing or unknown annotation,
    a dtype TypeVar without a category bound, ``*args``, an attribute-name clash)."""


class DecoratorArgumentError(KernelError, TypeError):
    """``@kernel(...)`` got an argument it does not know."""


class UnknownDtypeError(KernelError, ValueError):
    """A dtype name (or numpy dtype) that is not one of the 13 dtypes."""


class DuplicateDtypeError(KernelError, ValueError):
    """``dtypes=[...]`` lists a dtype twice."""


class UnsupportedDtypeError(KernelError, ValueError):
    """A dtype outside a kernel's supported set or outside a TypeVar's bound."""


class DtypeInferenceError(KernelError, TypeError):
    """Dispatch was requested but no supported dtype set can be inferred."""


class DtypeArgumentError(KernelError, TypeError):
    """Wrong number of dtypes in ``Kernel[...]``, or dtypes missing."""


class ConstexprArgumentError(KernelError, TypeError):
    """Wrong number, name or type of constexpr arguments."""


class BackwardKernelError(KernelError, ValueError):
    """``backward=`` cannot be resolved, or its constexpr parameters differ from the forward's."""


class CompileUnavailableError(KernelError, RuntimeError):
    """No compile pipeline is registered in :mod:`eggpu.kernel_macro.hooks`."""
