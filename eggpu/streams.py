"""The CUDA stream a launch goes to: the caller's, or the current stream of its arrays' framework.

Triton launches on PyTorch's current stream, asynchronously. eggpu does the same so a kernel
ported by changing only its decorator keeps its ordering with the PyTorch work around it: inside
``with torch.cuda.stream(s):`` PyTorch queues on ``s``, a stream created non-blocking (it does not
wait for the legacy default stream, nor the default stream for it), so a kernel launched on
stream 0 there could read an input ``s`` has not written yet.

* :func:`stream_handle` turns a ``stream=`` argument into the raw ``CUstream`` handle:
  ``None`` -> the arrays' current stream (:func:`current_stream`); an int (a raw handle, 0 is the
  legacy default stream); an object with ``cuda_stream`` (``torch.cuda.Stream``) or ``ptr``
  (``cupy.cuda.Stream``); anything else is a LaunchError naming the kernel.
* :func:`current_stream`: PyTorch's current stream of the current device when an argument is a
  CUDA tensor (``is_cuda``), else CuPy's current stream when an argument is a CuPy array, else 0.
  Neither framework is imported here: a tensor's module is already loaded when one exists.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from eggpu.ir.errors import LaunchError

__all__ = ["current_stream", "stream_handle"]

_MAX_HANDLE = 2**64 - 1


def stream_handle(kernel: str, stream: Any, args: Sequence[Any]) -> int:
    """The raw ``CUstream`` of a launch of ``kernel`` with ``stream=`` (see the module docs)."""
    if stream is None:
        return current_stream(args)
    if type(stream) is int:
        value = stream
    else:
        value = getattr(stream, "cuda_stream", None)  # torch.cuda.Stream / ExternalStream
        if value is None:
            value = getattr(stream, "ptr", None)  # cupy.cuda.Stream
        if type(value) is not int:
            raise LaunchError(f"{kernel}: stream must be None, a raw CUstream handle (int), a torch.cuda.Stream "
                              f"or a cupy.cuda.Stream, got {type(stream).__name__}")
    if not 0 <= value <= _MAX_HANDLE:
        raise LaunchError(f"{kernel}: stream handle {value} is not a CUstream (0 .. 2**64-1)")
    return value


def current_stream(args: Sequence[Any]) -> int:
    """PyTorch's current raw stream when an argument is a CUDA tensor, else CuPy's current
    stream when one is a CuPy array, else 0 (the legacy default stream)."""
    cupy_seen = False
    for a in args:
        if getattr(a, "is_cuda", None) is True:
            return _torch_stream()
        if not cupy_seen and type(a).__module__.startswith("cupy"):
            cupy_seen = True
    return _cupy_stream() if cupy_seen else 0


def _torch_stream() -> int:
    torch = sys.modules.get("torch")
    if torch is None:  # a tensor-like object that is not PyTorch's: no stream to follow
        return 0
    raw = getattr(getattr(torch, "_C", None), "_cuda_getCurrentRawStream", None)
    try:
        if raw is not None:  # what Triton's launcher calls (no Stream object built)
            return int(raw(torch.cuda.current_device()))
        return int(torch.cuda.current_stream().cuda_stream)
    except (RuntimeError, AssertionError):  # a PyTorch without CUDA: the "tensor" is not one of its own
        return 0


def _cupy_stream() -> int:
    cupy = sys.modules.get("cupy")
    if cupy is None:
        return 0
    return int(cupy.cuda.get_current_stream().ptr)
