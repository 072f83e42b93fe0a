"""Triton's host-side ``triton.runtime.driver.active``, for code that runs ``import eggpu as triton``.

Kernel libraries written for Triton ask the active driver what they run on before choosing a
kernel or its block sizes: ``triton.runtime.driver.active.get_current_target().backend == "hip"``
(an AMD check, in attorch and unsloth), ``.arch`` (the compute capability, e.g. 90), and the
current device. With ``import eggpu as triton`` those calls reach this module
(``eggpu.runtime.driver``), so the wrappers around the kernels keep working unchanged.

* :meth:`ActiveDriver.get_current_target` is ``GPUTarget("cuda", arch, 32)``: ``arch`` is the
  current device's compute capability (major * 10 + minor, as Triton's) when a CUDA GPU can be
  used, else the SM of eggpu's default compile target (90: eggpu compiles and runs kernels
  without a GPU, through ``EGGPU_JIT_DEVICE=interpret``/``cpu``, where Triton would have no active
  driver at all);
* :meth:`ActiveDriver.get_current_device` is PyTorch's current CUDA device when PyTorch is loaded
  with CUDA, else 0.

Nothing else of Triton's driver object is offered: an attribute it lacks is an AttributeError
naming it.
"""

from __future__ import annotations

import sys
from typing import Any

from eggpu.ir.record import Frozen

__all__ = ["ActiveDriver", "GPUTarget", "driver"]


class GPUTarget(Frozen):
    """Triton's ``triton.backends.compiler.GPUTarget``: ``backend`` ("cuda"), ``arch`` (the
    compute capability as an int, e.g. 90) and ``warp_size`` (32)."""

    _fields = ("backend", "arch", "warp_size")
    backend: str
    arch: int
    warp_size: int

    def __init__(self, backend: str, arch: int, warp_size: int):
        self._assign(backend, arch, warp_size)


class ActiveDriver:
    """``triton.runtime.driver.active`` as eggpu answers it (see the module docs)."""

    def get_current_device(self) -> int:
        """PyTorch's current CUDA device when PyTorch is loaded with CUDA, else 0."""
        torch = sys.modules.get("torch")
        try:
            if torch is not None and torch.cuda.is_available():
                return int(torch.cuda.current_device())
        except Exception:  # noqa: BLE001 - a PyTorch without a usable CUDA: device 0
            pass
        return 0

    def get_current_target(self) -> GPUTarget:
        """``GPUTarget("cuda", compute capability, 32)`` of the current device; without a usable
        GPU, of eggpu's default compile target (sm_90: 90)."""
        from eggpu.runtime import CudaRuntime, gpu_available

        if gpu_available():
            return GPUTarget("cuda", CudaRuntime.get().compute_capability(self.get_current_device()), 32)
        from eggpu.pipeline import DEFAULT_TARGET

        return GPUTarget("cuda", int(DEFAULT_TARGET.removeprefix("sm_")), 32)

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(f"eggpu's stand-in for triton.runtime.driver.active has no {name!r} (it answers "
                             "get_current_target() and get_current_device())")


class _Driver:
    """``triton.runtime.driver``: its ``active`` driver."""

    def __init__(self) -> None:
        self.active = ActiveDriver()


driver = _Driver()
