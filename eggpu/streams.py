"""Where a launch goes: the device and CUDA stream, from the caller or from its arrays' framework.

Triton launches on PyTorch's current device and current stream, asynchronously. eggpu does the
same, so a kernel ported by changing only its decorator keeps its ordering with the PyTorch work
around it, and runs where its tensors live:

* inside ``with torch.cuda.stream(s):`` PyTorch queues on ``s``, a stream it creates
  non-blocking (no implicit ordering with the legacy default stream), so a kernel launched on
  stream 0 there could read an input ``s`` has not written yet;
* a process that works on GPU 1 (``torch.cuda.set_device(1)``, as each rank of a multi-GPU job
  does) has its tensors there: a launch on device 0 would fault on their addresses.

The device is the first device array's own (a tensor's ``get_device()``, a CuPy array's
``device.id``), so a kernel also runs where its tensors are when they are not on the current
device (Triton launches on the current device whatever its arguments).

:func:`launch_target` answers ``(device ordinal, raw CUstream)`` for a ``stream=`` argument:

* ``None``: the arguments decide (:func:`current_target`): the first CUDA tensor's (``is_cuda``)
  device and PyTorch's current stream on it; else the first CuPy array's device and CuPy's
  current stream; else, for another ``__cuda_array_interface__`` array (Numba's), the device
  its memory is on and the legacy default stream 0; else device 0 and stream 0;
* an int: that raw stream handle (0 is the legacy default stream), on the device the arguments'
  framework says;
* a ``torch.cuda.Stream`` (``cuda_stream``, ``device_index``) or a ``cupy.cuda.Stream`` (``ptr``,
  ``device_id``): that stream, on its own device;
* anything else is a LaunchError naming the kernel.

Whatever the launch stream, a device array whose ``__cuda_array_interface__`` names the stream
its producer wrote it on (the protocol's version 3 ``stream``) is waited for on the device
before the kernel runs (an event, not a host wait: :meth:`eggpu.runtime.CudaRuntime.wait_for`).

Neither framework is imported here: a tensor's module is already loaded when one exists.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from eggpu.ir.errors import LaunchError

__all__ = ["current_target", "launch_target"]

_MAX_HANDLE = 2**64 - 1


def launch_target(kernel: str, stream: Any, args: Sequence[Any]) -> tuple[int, int]:
    """``(device, raw stream)`` of a launch of ``kernel`` with ``stream=`` (see the module docs)."""
    if stream is None:
        return current_target(args)
    if type(stream) is int:
        value, device = stream, None
    else:
        value = getattr(stream, "cuda_stream", None)  # torch.cuda.Stream / ExternalStream
        device = getattr(stream, "device_index", None)
        if value is None:
            value = getattr(stream, "ptr", None)  # cupy.cuda.Stream
            device = getattr(stream, "device_id", None)
        if type(value) is not int:
            raise LaunchError(f"{kernel}: stream must be None, a raw CUstream handle (int), a torch.cuda.Stream "
                              f"or a cupy.cuda.Stream, got {type(stream).__name__}")
    if not 0 <= value <= _MAX_HANDLE:
        raise LaunchError(f"{kernel}: stream handle {value} is not a CUstream (0 .. 2**64-1)")
    if type(device) is not int:
        device = current_target(args)[0]
    return device, value


def current_target(args: Sequence[Any]) -> tuple[int, int]:
    """``(device, raw stream)``: the first CUDA tensor's device and PyTorch's current stream
    there; else the first CuPy array's device and CuPy's current stream; else the device of the
    first other ``__cuda_array_interface__`` array's memory (Numba's, for one) and the legacy
    default stream; else ``(0, 0)`` (device 0, the legacy default stream)."""
    cupy_array = generic = None
    for a in args:
        if getattr(a, "is_cuda", None) is True:
            return _torch_target(a)
        if type(a).__module__.startswith("cupy"):
            if cupy_array is None:
                cupy_array = a
        elif generic is None and hasattr(a, "__cuda_array_interface__"):
            generic = a
    if cupy_array is not None:
        return _cupy_target(cupy_array)
    return (0, 0) if generic is None else (_memory_device(generic), 0)


def _memory_device(array: Any) -> int:
    """The ordinal of the device holding a ``__cuda_array_interface__`` array's memory (the
    interface does not say: the driver is asked about its address); 0 when its interface or
    address is not one the driver knows (the launch path then reports what is wrong)."""
    from eggpu.runtime import CudaRuntime

    try:
        address = int(array.__cuda_array_interface__["data"][0])
    except Exception:  # noqa: BLE001 - a malformed interface is reported by the argument checks
        return 0
    device = CudaRuntime.get().pointer_device(address)
    return 0 if device is None else device


def _torch_target(tensor: Any) -> tuple[int, int]:
    torch = sys.modules.get("torch")
    if torch is None:  # a tensor-like object that is not PyTorch's: nothing to follow
        return 0, 0
    raw = getattr(getattr(torch, "_C", None), "_cuda_getCurrentRawStream", None)
    try:
        device = int(tensor.get_device())
        if raw is not None:  # what Triton's launcher calls (no Stream object built)
            return device, int(raw(device))
        return device, int(torch.cuda.current_stream(device).cuda_stream)
    except (RuntimeError, AssertionError):  # a PyTorch without CUDA: the "tensor" is not one of its own
        return 0, 0


def _cupy_target(array: Any) -> tuple[int, int]:
    cupy = sys.modules.get("cupy")
    if cupy is None:
        return 0, 0
    device = int(array.device.id)
    try:  # the current stream is per device in CuPy
        stream = cupy.cuda.get_current_stream(device)
    except TypeError:  # a CuPy whose get_current_stream takes no device
        stream = cupy.cuda.get_current_stream()
    return device, int(stream.ptr)
