"""eggpu.kernel_macro — the kernel language, the Python-AST frontend to the IR, and ``@kernel``.

* :mod:`.language` — the names of ``import eggpu.language as tl``;
* :mod:`.signature` — parameter analysis of kernel functions;
* :mod:`.frontend` (+ :mod:`.frontend_ops`, :mod:`.loops`, :mod:`.builtins`, :mod:`.compat`) — lowering to
  :mod:`eggpu.ir`; :mod:`.unsupported` — the Triton names eggpu lacks;
* :mod:`.jitfunction` — ``@eggpu.jit`` kernels launched Triton-style (``fn[grid](...)``);
* :mod:`.diagnostics` — ``file:line:col`` compile errors with a caret and a hint;
* :mod:`.kernel` — ``@kernel``/``@jit`` and the generated Kernel/Dispatch classes;
* :mod:`.hooks` — the compile seam the facade fills in.
"""

from .diagnostics import InternalCompilerError, KernelCompileError
from .errors import (
    BackwardKernelError,
    CompileUnavailableError,
    ConstexprArgumentError,
    DecoratorArgumentError,
    DtypeArgumentError,
    DtypeInferenceError,
    DuplicateDtypeError,
    KernelSignatureError,
    UnknownDtypeError,
    UnsupportedDtypeError,
)

# Note: the decorators live in the submodule ``kernel`` (``eggpu.kernel_macro.kernel.kernel``); they are
# not re-exported here because a package attribute named ``kernel`` would shadow that submodule.
from .kernel import Dispatch, Kernel, KernelInstance

__all__ = [
    "BackwardKernelError", "CompileUnavailableError", "ConstexprArgumentError", "DecoratorArgumentError",
    "Dispatch", "DtypeArgumentError", "DtypeInferenceError", "DuplicateDtypeError", "Kernel",
    "InternalCompilerError", "KernelCompileError", "KernelInstance", "KernelSignatureError", "UnknownDtypeError",
    "UnsupportedDtypeError",
]
