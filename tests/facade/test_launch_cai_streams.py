"""Device arrays from other producers (Numba's, any ``__cuda_array_interface__`` object): a launch
runs on the device their memory is on and waits, on the device, for the stream the interface
says they were written on (the protocol's version 3 ``stream``: 1 the legacy default stream, 2
the per-thread default stream, None nothing to wait for). Checked without a GPU through
:class:`eggpu.testing.FakeCudaDriver`: its memory knows its device, its events their stream, and
each recorded launch lists the streams its own stream was made to wait for."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import eggpu
import eggpu.language as tl
from eggpu.ir.errors import LaunchError
from eggpu.runtime import cai_stream
from eggpu.testing import FakeCudaDriver, fake_cuda


@eggpu.kernel
def axpy(x_ptr: tl.Pointer[tl.f32], y_ptr: tl.Pointer[tl.f32], out_ptr: tl.Pointer[tl.f32], n: tl.i32,
         BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, 2.0 * tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)


@eggpu.jit
def jit_axpy(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, 2.0 * tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)


class DeviceArray:
    """A producer's device array as the protocol shows it (as Numba's DeviceNDArray does)."""

    def __init__(self, address: int, n: int = 64, stream: object = None, typestr: str = "<f4"):
        self.__cuda_array_interface__ = {"shape": (n,), "typestr": typestr, "data": (address, False),
                                         "strides": None, "version": 3, "stream": stream}


@pytest.fixture(scope="module")
def ck(tmp_path_factory):
    return eggpu.compile(axpy.Kernel(64), cache=tmp_path_factory.mktemp("cai"))


def test_stream_values_of_the_protocol():
    assert cai_stream("k", "x", {}) is None
    assert cai_stream("k", "x", {"stream": None}) is None
    assert cai_stream("k", "x", {"stream": 1}) == 1
    assert cai_stream("k", "x", {"stream": 2}) == 2
    assert cai_stream("k", "x", {"stream": 0x7F00AB}) == 0x7F00AB
    assert cai_stream("k", "x", {"stream": 0}) == 1  # disallowed by the protocol: the driver's legacy stream
    with pytest.raises(LaunchError, match=r"^axpy: parameter 'y_ptr': the device array's __cuda_array_interface__ "
                                          r"'stream' must be None or a CUDA stream handle \(an int in 0 \.\. "
                                          r"2\*\*64-1\), got '7'$"):
        cai_stream("axpy", "y_ptr", {"stream": "7"})
    with pytest.raises(LaunchError, match=r"^scale: parameter 'out': .* got -5$"):
        cai_stream("scale", "out", {"stream": -5})
    with pytest.raises(LaunchError, match=r"^scale: parameter 'out': .* got True$"):
        cai_stream("scale", "out", {"stream": True})


def test_a_launch_waits_for_each_producer_stream_on_the_device(ck):
    with fake_cuda(FakeCudaDriver(devices=2)) as cu:
        x, y, out = cu.alloc(256, 1), cu.alloc(256, 1), cu.alloc(256, 1)
        ck.launch(1, DeviceArray(x, stream=0x5100), DeviceArray(y, stream=0x5200), DeviceArray(out), 64)
        ck.launch(1, DeviceArray(x, stream=0x5100), DeviceArray(y, stream=0x5100), DeviceArray(out), 64,
                  stream=0x5100)
        ck.launch(1, DeviceArray(x, stream=1), DeviceArray(y, stream=2), DeviceArray(out, stream=None), 64)
    first, same, defaults = cu.launches
    assert (first.device, first.stream, sorted(first.waits)) == (1, 0, [0x5100, 0x5200])
    assert (same.device, same.stream, same.waits) == (1, 0x5100, ())  # written on the launch's own stream
    assert (defaults.stream, defaults.waits) == (0, (2,))  # 1 is the legacy default stream 0 itself
    assert "cuStreamWaitEvent" in cu.calls and "cuCtxSynchronize" in cu.calls
    assert cu.calls.count("cuEventCreate") == cu.calls.count("cuEventDestroy") == 3
    # no host wait was added for the producers: only the one after each launch (synchronize=True)
    assert [launch.synchronized for launch in cu.launches] == [1, 1, 1]


def test_the_general_launch_path_waits_too(ck):
    """A host array sends the launch down the checked path, which must wait as well."""
    with fake_cuda(FakeCudaDriver()) as cu:
        x = cu.alloc(256)
        out = np.zeros(64, np.float32)
        ck.launch(1, DeviceArray(x, stream=0x6100), np.ones(64, np.float32), out, 64)
        with pytest.raises(LaunchError, match=r"^axpy: parameter 'x_ptr': .*'stream' must be None .* got 'abc'$"):
            ck.launch(1, DeviceArray(x, stream="abc"), np.ones(64, np.float32), out, 64)
    (launch,) = cu.launches
    assert launch.waits == (0x6100,)


def test_a_launch_runs_on_the_device_its_arrays_memory_is_on(ck):
    with fake_cuda(FakeCudaDriver(devices=3)) as cu:
        on2 = [cu.alloc(256, 2) for _ in range(3)]
        ck.launch(1, *map(DeviceArray, on2), 64)
        jit_axpy[(1,)](*map(DeviceArray, on2), 64, BLOCK=64)
        ck.launch(1, *map(DeviceArray, on2), 64, stream=0x77)  # a raw handle: the arrays' device still
        unknown = DeviceArray(0x10_0000)  # not memory the driver allocated: device 0, the launch path's default
        ck.launch(1, unknown, unknown, unknown, 64)
    assert [(launch.device, launch.stream) for launch in cu.launches] == [(2, 0), (2, 0), (2, 0x77), (0, 0)]


def test_a_wrong_dtype_is_still_reported_before_any_wait(ck):
    with fake_cuda(FakeCudaDriver()) as cu:
        x = cu.alloc(512)
        with pytest.raises(LaunchError, match=r"^axpy: parameter 'x_ptr' \(ptr<f32>\) expects an array of f32"):
            ck.launch(1, DeviceArray(x, stream=0x6100, typestr="<f8"), DeviceArray(x), DeviceArray(x), 64)
    assert cu.launches == [] and "cuStreamWaitEvent" not in cu.calls


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(streams=st.lists(st.one_of(st.none(), st.sampled_from([1, 2, 0x5100, 0x5200, 0x5300])), min_size=3, max_size=3),
       launch_stream=st.sampled_from([None, 0, 1, 0x5100]), jit=st.booleans())
def test_every_producer_stream_other_than_the_launch_stream_is_waited_for(ck, streams, launch_stream, jit):
    with fake_cuda(FakeCudaDriver()) as cu:
        arrays = [DeviceArray(cu.alloc(256), stream=s) for s in streams]
        if jit:
            jit_axpy[(1,)](*arrays, 64, BLOCK=64)
        else:
            ck.launch(1, *arrays, 64, stream=launch_stream)
    (launch,) = cu.launches
    ours = 0 if jit or launch_stream is None else launch_stream
    want = {s for s in streams if s is not None and s != (ours or 1)}
    assert launch.stream == ours
    assert sorted(launch.waits) == sorted(want)  # each producer stream once
