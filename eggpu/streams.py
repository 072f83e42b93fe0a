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
  current stream; else device 0 and the legacy default stream 0;
* an int: that raw stream handle (0 is the legacy default stream), on the device the arguments'
  framework says;
* a ``torch.cuda.Stream`` (``cuda_stream``, ``device_index``) or a ``cupy.cuda.Stream`` (``ptr``,
  ``device_id``): that stream, on its own device;
* anything else is a LaunchError naming the kernel.

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
    there; else the first CuPy array's device and CuPy's current stream; else ``(0, 0)``
    (device 0, the legacy default stream)."""
    cupy_array = None
    for a in args:
        if getattr(a, "is_cuda", None) is True:
            return _torch_target(a)
        if cupy_array is None and type(a).__module__.startswith("cupy"):
            cupy_array = a
    return (0, 0) if cupy_array is None else _cupy_target(cupy_array)


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
