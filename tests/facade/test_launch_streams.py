"""Launches go to the arguments' current CUDA device and stream, and ``@eggpu.jit`` launches are
asynchronous, as Triton's (issue 16 item 4; :mod:`eggpu.streams`). Checked without a GPU through
:class:`eggpu.testing.FakeCudaDriver` (each recorded launch carries its stream, the device of the
context that was current, and the number of ``cuCtxSynchronize`` calls made after it; a function
launched in another context than its module's fails as on a GPU) and stand-ins for PyTorch's and
CuPy's modules."""

from __future__ import annotations

import sys
import threading
import types

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import eggpu
import eggpu.language as tl
from eggpu.ir.errors import LaunchError
from eggpu.streams import current_target, launch_target
from eggpu.testing import FakeCudaDriver, fake_cuda


@eggpu.kernel
def scale(x_ptr: tl.Pointer[tl.f32], out_ptr: tl.Pointer[tl.f32], n: tl.i32, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2.0, mask=m)


@eggpu.jit
def jit_scale(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2.0, mask=m)


class Dtype:
    def __init__(self, name: str):
        self.name = name

    def __str__(self) -> str:
        return f"torch.{self.name}"


class TorchTensor:
    """A CUDA tensor as PyTorch presents one (``is_cuda``, ``data_ptr()``, ``get_device()``); on
    device 1 unless told."""

    is_cuda = True

    def __init__(self, address: int, n: int = 64, device: int = 1):
        self.address, self.shape, self.dtype, self.device_index = address, (n,), Dtype("float32"), device

    def get_device(self) -> int:
        return self.device_index

    def data_ptr(self) -> int:
        return self.address

    def is_contiguous(self) -> bool:
        return True

    def stride(self) -> tuple[int, ...]:
        return (1,)

    def dim(self) -> int:
        return 1


CupyArray = type("ndarray", (), {"__module__": "cupy._core.core"})


def cupy_array(address: int, n: int = 64, device: int = 1):
    a = CupyArray()
    a.device = types.SimpleNamespace(id=device)
    a.__cuda_array_interface__ = {"shape": (n,), "typestr": "<f4", "data": (address, False), "strides": None,
                                  "version": 3}
    return a


@pytest.fixture
def fake_torch(monkeypatch):
    """A ``torch`` module whose current stream on device d is 0x7000 + d (its current device is 0:
    a launch follows its tensors' device, not the current one)."""
    torch = types.ModuleType("torch")
    torch._C = types.SimpleNamespace(_cuda_getCurrentRawStream=lambda d: 0x7000 + d)
    torch.cuda = types.SimpleNamespace(current_device=lambda: 0)
    monkeypatch.setitem(sys.modules, "torch", torch)
    return torch


@pytest.fixture
def fake_cupy(monkeypatch):
    """A ``cupy`` module whose current stream on device d is 0x9100 + d."""
    cupy = types.ModuleType("cupy")
    cupy.cuda = types.SimpleNamespace(get_current_stream=lambda d: types.SimpleNamespace(ptr=0x9100 + d))
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    return cupy


@pytest.fixture(scope="module")
def ck(tmp_path_factory):
    return eggpu.compile(scale.Kernel(64), cache=tmp_path_factory.mktemp("streams"))


def test_stream_argument_forms():
    assert launch_target("k", None, [1, 2]) == (0, 0)
    assert launch_target("k", 0x1234, []) == (0, 0x1234)
    torch_stream = types.SimpleNamespace(cuda_stream=0x55, device_index=1)
    assert launch_target("k", torch_stream, []) == (1, 0x55)
    assert launch_target("k", types.SimpleNamespace(ptr=0x66, device_id=2), []) == (2, 0x66)  # cupy.cuda.Stream
    with pytest.raises(LaunchError, match=r"^scale: stream must be None, a raw CUstream handle \(int\), a "
                                          r"torch.cuda.Stream or a cupy.cuda.Stream, got str$"):
        launch_target("scale", "s1", [])
    with pytest.raises(LaunchError, match=r"^softmax: stream handle -3 is not a CUstream \(0 .. 2\*\*64-1\)$"):
        launch_target("softmax", -3, [])


def test_current_target_follows_the_arguments_framework(fake_torch, fake_cupy):
    assert current_target([np.zeros(4), 3]) == (0, 0)
    assert current_target([cupy_array(0x1000), 3]) == (1, 0x9101)
    assert current_target([cupy_array(0x1000), TorchTensor(0x2000, device=0)]) == (0, 0x7000)  # a tensor decides
    assert launch_target("k", 0x42, [TorchTensor(0x2000)]) == (1, 0x42)  # a raw handle: the arrays' device
    del sys.modules["torch"]
    assert current_target([TorchTensor(0x2000)]) == (0, 0)  # no PyTorch loaded: a look-alike has no stream


def test_ck_launch_goes_to_torchs_current_stream_and_synchronizes_by_default(ck, fake_torch):
    with fake_cuda(FakeCudaDriver(devices=2)) as cu:
        ck.launch(1, TorchTensor(0x10000), TorchTensor(0x20000), 64)
        ck.launch(1, TorchTensor(0x10000), TorchTensor(0x20000), 64, stream=0x4242, synchronize=False)
        ck.launch(1, TorchTensor(0x10000), TorchTensor(0x20000), 64, stream=0)
    default, explicit, legacy = cu.launches
    assert (default.device, default.stream, default.synchronized) == (1, 0x7001, 1)
    assert (explicit.device, explicit.stream, explicit.synchronized) == (1, 0x4242, 0)
    assert (legacy.device, legacy.stream) == (1, 0)


def test_launches_follow_their_tensors_device_and_load_the_module_there(ck, fake_torch):
    """A multi-GPU process launches on the device its tensors are on: the module is loaded once
    per device, in that device's primary context, and the context is made current again when
    another library changed it in between."""
    args = (TorchTensor(0x10000), TorchTensor(0x20000), 64)
    with fake_cuda(FakeCudaDriver(devices=2)) as cu:
        ck.launch(1, *args)
        ck.launch(1, TorchTensor(0x10000, device=0), TorchTensor(0x20000, device=0), 64)
        cu.set_current(0xC000)  # what torch.cuda.set_device(0) would do to this thread's context
        ck.launch(1, *args)
        ck._launch_checked(1, list(args), True, 0x7001, 1)  # the general path does the same
    assert [la.device for la in cu.launches] == [1, 0, 1, 1]
    assert cu.module_devices == [1, 0]


def test_a_device_that_does_not_exist_is_a_launch_error(ck, fake_torch):
    with fake_cuda(FakeCudaDriver(devices=2)), \
            pytest.raises(LaunchError, match=r"^CUDA device 3 does not exist: this machine has 2 \(0 .. 1\)$"):
        ck.launch(1, TorchTensor(0x10000, device=3), TorchTensor(0x20000, device=3), 64)


def test_a_launch_from_a_thread_without_a_context_makes_the_context_current(ck, fake_torch):
    errors = []

    def worker():
        try:
            ck.launch(1, TorchTensor(0x10000), TorchTensor(0x20000), 64)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    with fake_cuda(FakeCudaDriver(devices=2)) as cu:
        ck.launch(1, TorchTensor(0x10000), TorchTensor(0x20000), 64)
        t = threading.Thread(target=worker)
        t.start()
        t.join()
    assert not errors and [la.device for la in cu.launches] == [1, 1]


def test_a_launch_with_host_arrays_uses_the_stream_and_copies_back(ck):
    x, out = np.arange(64, dtype=np.float32), np.zeros(64, np.float32)
    with fake_cuda() as cu:
        ck.launch(1, x, out, 64, stream=0x31, synchronize=False)
    (launch,) = cu.launches
    assert launch.stream == 0x31 and launch.synchronized == 1  # the copy back waits for the kernel
    assert "cuMemcpyDtoH" in cu.calls


def test_cupy_arrays_launch_on_cupys_current_device_and_stream(ck, fake_cupy):
    with fake_cuda(FakeCudaDriver(devices=2)) as cu:
        ck.launch(1, cupy_array(0x10000), cupy_array(0x20000), 64)
    assert (cu.launches[0].device, cu.launches[0].stream) == (1, 0x9101)


def test_jit_launches_are_asynchronous_on_the_current_stream(fake_torch):
    with fake_cuda(FakeCudaDriver(devices=2)) as cu:
        for _ in range(3):  # the first goes through the general path, the others through the launch cache
            jit_scale[(1,)](TorchTensor(0x10000), TorchTensor(0x20000), 64, BLOCK=64)
    assert [(la.device, la.stream, la.synchronized) for la in cu.launches] == [(1, 0x7001, 0)] * 3
    assert "cuCtxSynchronize" not in cu.calls


def test_jit_launches_with_debug_wait_for_the_kernel(fake_torch):
    with fake_cuda(FakeCudaDriver(devices=2)) as cu:
        for _ in range(2):
            jit_scale[(1,)](TorchTensor(0x10000), TorchTensor(0x20000), 64, BLOCK=64, debug=True)
    assert [(la.stream, la.synchronized) for la in cu.launches] == [(0x7001, 1)] * 2


_LAUNCH = st.fixed_dictionaries({
    "api": st.sampled_from(["ck", "jit"]),
    "device": st.integers(0, 2),
    "stream": st.one_of(st.none(), st.integers(1, 2**40), st.sampled_from(["torch", "cupy_stream"])),
    "foreign_context": st.one_of(st.none(), st.integers(0, 2)),
    "thread": st.booleans(),
    "debug": st.booleans(),
})


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(launches=st.lists(_LAUNCH, min_size=1, max_size=8))
def test_any_sequence_of_launches_goes_where_its_tensors_and_stream_say(ck, fake_torch, launches):
    """Interleaved ck.launch / jit launches on three devices, with and without ``stream=``, after
    another library switched the thread's context, from other threads: each launch runs on its
    tensors' device (its module loaded there), on the stream it names or PyTorch's current stream
    of that device, and waits exactly when it should."""
    expected, errors = [], []

    def one(spec):
        if spec["foreign_context"] is not None:
            cu.set_current(0xC000 + spec["foreign_context"])
        d = spec["device"]
        args = (TorchTensor(0x10000, device=d), TorchTensor(0x20000, device=d), 64)
        stream = spec["stream"]
        if stream == "torch":
            stream = types.SimpleNamespace(cuda_stream=0x5000 + d, device_index=d)
        elif stream == "cupy_stream":
            stream = types.SimpleNamespace(ptr=0x6000 + d, device_id=d)
        raw = {None: 0x7000 + d}.get(spec["stream"], None)
        if raw is None:
            raw = stream if isinstance(stream, int) else getattr(stream, "cuda_stream", None) or stream.ptr
        if spec["api"] == "ck":
            ck.launch(1, *args, stream=stream)
            expected.append((d, raw, 1))
        else:  # jit takes no stream=: always the current stream, waits only under debug
            jit_scale[(1,)](*args, BLOCK=64, debug=spec["debug"])
            expected.append((d, 0x7000 + d, int(spec["debug"])))

    def guarded(spec):
        try:
            one(spec)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    with fake_cuda(FakeCudaDriver(devices=3)) as cu:
        for spec in launches:
            if spec["thread"]:
                t = threading.Thread(target=guarded, args=(spec,))
                t.start()
                t.join()
            else:
                one(spec)
    assert not errors
    assert [(la.device, la.stream, la.synchronized) for la in cu.launches] == expected
    assert all(dev in (0, 1, 2) for dev in cu.module_devices)
