"""Seams the facade fills in (``kernel_macro`` may not import the compile pipeline itself).

``COMPILE_HOOK(kernel, **options)`` compiles a :class:`~eggpu.kernel_macro.kernel.Kernel`
instance (what ``eggpu.compile(kernel, **options)`` does) and returns the compiled kernel. The
facade assigns it when its compile module is imported; ``Kernel.compile`` and
``KernelInstance.compile`` call it and raise
:class:`~eggpu.kernel_macro.errors.CompileUnavailableError` while it is ``None``.

``GPU_AVAILABLE_HOOK()`` says whether a CUDA GPU can be used (the facade's
``eggpu.runtime.gpu_available``); a ``@eggpu.jit`` launch (``fn[grid](...)``) runs on the GPU when
it returns True and on the CPU otherwise (also while it is ``None``).

``GPU_SYNCHRONIZE_HOOK()`` waits until the GPU has finished everything launched so far (the
facade's ``eggpu.runtime.synchronize``): ``@eggpu.jit`` launches are asynchronous, so the
autotuner's wall-clock timing brackets its launches with it.
"""

from __future__ import annotations

from collections.abc import Callable

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing on a cache hit
if TYPE_CHECKING:
    from typing import Any

COMPILE_HOOK: Callable[..., Any] | None = None
GPU_AVAILABLE_HOOK: Callable[[], bool] | None = None
GPU_SYNCHRONIZE_HOOK: Callable[[], None] | None = None
