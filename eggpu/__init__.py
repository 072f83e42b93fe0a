"""eggpu — GPU kernels in a Triton-style block language, optimized by egglog with z3-verified
rewrite rules and lowered through llvmlite to PTX.

``import eggpu`` is light: it does not import egglog, z3 or llvmlite (they load on first use).
"""

from eggpu.ir.errors import (
    CodegenError,
    CompileError,
    DeviceAssertionError,
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

from eggpu.kernel_macro import hooks as _hooks  # noqa: E402
from eggpu.kernel_macro.kernel import jit, kernel  # noqa: E402
from eggpu.pipeline import CompiledKernel, compile  # noqa: E402

_hooks.COMPILE_HOOK = compile


def _gpu_available() -> bool:
    from eggpu.runtime import gpu_available  # lazily: cuda-python loads on first use

    return gpu_available()


_hooks.GPU_AVAILABLE_HOOK = _gpu_available


def _gpu_synchronize() -> None:
    from eggpu.runtime import synchronize

    synchronize()


_hooks.GPU_SYNCHRONIZE_HOOK = _gpu_synchronize


#: names that load their module on first use: a cache hit in a fresh process pays for none of
#: them (``@eggpu.jit`` loads the launcher itself; ``@eggpu.kernel`` needs none of them)
_LAZY = {
    "compile_many": "eggpu.batch",
    "Config": "eggpu.kernel_macro.autotune", "autotune": "eggpu.kernel_macro.autotune",
    "heuristics": "eggpu.kernel_macro.autotune",
    "cdiv": "eggpu.kernel_macro.constexpr_function", "next_power_of_2": "eggpu.kernel_macro.constexpr_function",
    "constexpr_function": "eggpu.kernel_macro.constexpr_function",
    "reinterpret": "eggpu.kernel_macro.jitfunction",
}


def __getattr__(name: str):
    import importlib

    if name == "runtime":  # triton.runtime.driver for ``import eggpu as triton`` (eggpu/triton_driver.py)
        return importlib.import_module("eggpu.runtime")
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'eggpu' has no attribute {name!r}")

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later look-ups skip this function
    return value

__all__ = [
    "CodegenError", "CompileError", "CompiledKernel", "Config", "EggpuError", "IRError", "IRParseError",
    "InterpreterError", "DeviceAssertionError", "KernelError", "LaunchError", "RuleError", "ToolchainError",
    "VerificationError",
    "__version__", "autotune", "cdiv", "compile", "compile_many", "constexpr_function", "heuristics", "jit", "kernel",
    "next_power_of_2",
    "reinterpret",
]
