"""eggpu — GPU kernels in a Triton-style block language, optimized by egglog with z3-verified
rewrite rules and lowered through llvmlite to PTX.

``import eggpu`` is light: it does not import egglog, z3 or llvmlite (they load on first use).
"""

from eggpu.ir.errors import (
    CodegenError,
    CompileError,
    EggpuError,
    InterpreterError,
    IRError,
    IRParseError,
    KernelError,
    LaunchError,
    RuleError,
    ToolchainError,
    VerificationError,
)

__version__ = "0.1.0"

__all__ = [
    "CodegenError", "CompileError", "EggpuError", "IRError", "IRParseError", "InterpreterError",
    "KernelError", "LaunchError", "RuleError", "ToolchainError", "VerificationError", "__version__",
    "jit", "kernel",
]


def __getattr__(name: str):
    # The frontend is imported on first use so `import eggpu` stays fast.
    if name in ("kernel", "jit"):
        from eggpu.kernel_macro import kernel as _k

        return getattr(_k, name)
    if name == "language":
        import eggpu.language as lang

        return lang
    raise AttributeError(f"module 'eggpu' has no attribute {name!r}")
