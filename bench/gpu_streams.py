"""GPU checks of where launches go (used by ``bench.gpu_check``; :mod:`eggpu.streams`).

With PyTorch on a CUDA device:

- ``stream order``: inside ``with torch.cuda.stream(s):`` (a non-blocking stream) the input is
  written by PyTorch behind a ~50 ms spin on ``s``, then ``ck.launch(..., synchronize=False)``
  with no ``stream=``: the kernel must run on ``s``, after the write (on stream 0 it would read
  the input before it is written);
- ``explicit stream``: the same with ``stream=s`` given and the launch made outside the
  ``with`` block;
- ``current device``: with two or more devices, ``torch.cuda.set_device(1)`` and tensors on
  device 1: the kernel must run there (on device 0 it would fault on device 1's addresses);
- ``tensors' device``: tensors on device 1 while the current device is 0: the kernel follows
  the tensors (and PyTorch's current stream on device 1);
- ``producer stream``: the tensors passed as plain ``__cuda_array_interface__`` objects (as
  Numba's arrays reach eggpu) whose ``stream`` is ``s``, launched outside the ``with`` block (on
  the legacy default stream): the launch must wait for ``s`` on the device (an event;
  :meth:`eggpu.runtime.CudaRuntime.wait_for`).

Each returns a row as ``bench.gpu_check``'s (``result`` "ok" or "FAIL" with ``error``).
"""

from __future__ import annotations

import time
import traceback
from typing import Any

import eggpu
import eggpu.language as tl

N = 1 << 20
BLOCK = 1024


@eggpu.kernel
def stream_scale(x_ptr: tl.Pointer[tl.f32], out_ptr: tl.Pointer[tl.f32], n: tl.i32, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2.0, mask=m)


def kernel_instance() -> Any:
    """``out = 2 * x`` over ``n`` f32 elements (BLOCK 1024)."""
    return stream_scale.Kernel(BLOCK)


def prepare(directory: str, target: str) -> int:
    eggpu.compile(kernel_instance(), target=target, cache=directory)
    return 1


def _case(label: str, fn: Any) -> dict[str, Any]:
    row: dict[str, Any] = {"kernel": label, "dtype": "f32", "sizes": [str(N)]}
    t0 = time.perf_counter()
    try:
        row["details"] = fn()
        row["result"] = "ok"
    except Exception as e:  # noqa: BLE001 - report every failure, keep going
        row["result"] = "FAIL"
        row["error"] = "".join(traceback.format_exception_only(type(e), e)).strip()[:2000]
    row["seconds"] = round(time.perf_counter() - t0, 3)
    print(f"{row['result']:4s} {label} {row.get('error', '')[:300]}", flush=True)
    return row


def checks(target: str) -> list[dict[str, Any]]:
    """The rows (see the module docs); none without PyTorch or a CUDA device."""
    try:
        import torch
    except ImportError:
        return []
    if not torch.cuda.is_available():
        return []
    ck = eggpu.compile(kernel_instance(), target=target)
    grid = (-(-N // BLOCK),)

    class Producer:  # a device array that is not PyTorch's: only the protocol, naming its stream
        def __init__(self, t: Any, stream: Any):
            self.__cuda_array_interface__ = {"shape": tuple(t.shape), "typestr": "<f4", "data": (t.data_ptr(), False),
                                             "strides": None, "version": 3, "stream": int(stream.cuda_stream)}

    def produce_and_launch(device: int, explicit: bool, protocol: bool = False) -> dict[str, Any]:
        s = torch.cuda.Stream(device=device)
        x = torch.zeros(N, device=f"cuda:{device}")
        y = torch.zeros_like(x)
        torch.cuda.synchronize(device)
        with torch.cuda.stream(s):
            torch.cuda._sleep(int(1e8))  # ~50 ms on s before the input is written
            x.fill_(3.0)
            if not explicit and not protocol:
                ck.launch(grid, x, y, N, synchronize=False)
        if explicit:
            ck.launch(grid, x, y, N, synchronize=False, stream=s)
        if protocol:
            ck.launch(grid, Producer(x, s), Producer(y, s), N, synchronize=False)  # on stream 0, after s's work
            torch.cuda.synchronize(device)
        s.synchronize()
        wrong = int((y != 6.0).sum())
        if wrong:
            raise AssertionError(f"{wrong} of {N} outputs are not 2 * 3.0: the kernel did not wait for the "
                                 f"input written on the current stream")
        return {"device": device, "stream": int(s.cuda_stream)}

    rows = [_case("stream order (launch inside torch.cuda.stream)", lambda: produce_and_launch(0, False)),
            _case("explicit stream (stream=torch.cuda.Stream)", lambda: produce_and_launch(0, True)),
            _case("producer stream (__cuda_array_interface__ 'stream')", lambda: produce_and_launch(0, False, True))]
    if torch.cuda.device_count() > 1:
        def on_device_1() -> dict[str, Any]:
            before = torch.cuda.current_device()
            torch.cuda.set_device(1)
            try:
                return produce_and_launch(1, False)
            finally:
                torch.cuda.set_device(before)
        rows.append(_case("current device (torch.cuda.set_device(1))", on_device_1))
        rows.append(_case("tensors' device (on device 1, current device 0)", lambda: produce_and_launch(1, False)))
    else:
        print("skip current device: one CUDA device", flush=True)
    return rows
