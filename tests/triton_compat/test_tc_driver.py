"""``import eggpu as triton``: the host code around Triton kernels asks
``triton.runtime.driver.active`` what it runs on (attorch's and unsloth's AMD checks,
``get_current_target().backend == "hip"``, and ``.arch``); eggpu answers as Triton's CUDA driver
does (:mod:`eggpu.triton_driver`)."""

from __future__ import annotations

import sys
import types

import pytest

import eggpu
import eggpu.runtime
from eggpu.testing import FakeCudaDriver, fake_cuda
from eggpu.triton_driver import GPUTarget


def is_hip() -> bool:  # a wrapper's check, as the libraries write it
    triton = eggpu
    return triton.runtime.driver.active.get_current_target().backend == "hip"


def test_the_current_target_is_the_gpus_compute_capability():
    for cc, arch in (((8, 6), 86), ((9, 0), 90), ((12, 1), 121)):
        with fake_cuda(FakeCudaDriver(compute_capability=cc)):
            target = eggpu.runtime.driver.active.get_current_target()
            assert target == GPUTarget("cuda", arch, 32)
            assert (target.backend, target.arch, target.warp_size) == ("cuda", arch, 32)
            assert not is_hip()


def test_without_a_gpu_it_is_the_default_compile_target(monkeypatch):
    monkeypatch.setattr(eggpu.runtime, "gpu_available", lambda: False)
    assert eggpu.runtime.driver.active.get_current_target() == GPUTarget("cuda", 90, 32)
    assert eggpu.runtime.driver.active.get_current_device() == 0


def test_the_current_device_is_pytorchs(monkeypatch):
    torch = types.ModuleType("torch")
    torch.cuda = types.SimpleNamespace(is_available=lambda: True, current_device=lambda: 3)
    monkeypatch.setitem(sys.modules, "torch", torch)
    assert eggpu.runtime.driver.active.get_current_device() == 3
    torch.cuda = types.SimpleNamespace(is_available=lambda: False, current_device=lambda: 3)
    assert eggpu.runtime.driver.active.get_current_device() == 0
    with fake_cuda(FakeCudaDriver(devices=4, compute_capability=(8, 0))):
        torch.cuda = types.SimpleNamespace(is_available=lambda: True, current_device=lambda: 3)
        assert eggpu.runtime.driver.active.get_current_target().arch == 80


def test_what_it_does_not_offer_is_named():
    with pytest.raises(AttributeError, match=r"^eggpu's stand-in for triton.runtime.driver.active has no "
                                             r"'get_device_interface' \(it answers get_current_target\(\) and "
                                             r"get_current_device\(\)\)$"):
        eggpu.runtime.driver.active.get_device_interface()
    with pytest.raises(AttributeError, match=r"^module 'eggpu.runtime' has no attribute 'drivers'$"):
        eggpu.runtime.drivers  # noqa: B018
