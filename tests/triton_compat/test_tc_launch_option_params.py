"""A kernel parameter named like a launch option (Liger-Kernel's ``num_warps: tl.constexpr``),
passed by keyword: as in Triton the value is both the argument and the compile option."""

from __future__ import annotations

import numpy as np
import pytest

import eggpu
import eggpu.language as tl


@eggpu.jit
def add_warps(x_ptr, n, BLOCK: tl.constexpr, num_warps: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + num_warps, mask=offs < n)


@pytest.mark.parametrize("n", [1, 1000, 1001])
@pytest.mark.parametrize("device", ["interpret", "cpu"])
def test_value_reaches_the_kernel(n, device, monkeypatch):
    monkeypatch.setenv("EGGPU_JIT_DEVICE", device)
    x = np.arange(n + 3, dtype=np.float32)
    add_warps[(-(-n // 256),)](x, n, BLOCK=256, num_warps=8)
    np.testing.assert_array_equal(x[:n], np.arange(n) + 8)
    np.testing.assert_array_equal(x[n:], np.arange(n, n + 3))


def test_value_is_also_the_compile_option(monkeypatch):
    monkeypatch.setenv("EGGPU_JIT_DEVICE", "cpu")
    x = np.zeros(16, np.float32)
    assert add_warps[(1,)](x, 16, BLOCK=16, num_warps=8).options.num_warps == 8
    assert add_warps[(1,)](x, 16, BLOCK=16, num_warps=2).options.num_warps == 2


def test_invalid_value_is_refused_as_an_option(monkeypatch):
    monkeypatch.setenv("EGGPU_JIT_DEVICE", "cpu")
    with pytest.raises(eggpu.CompileError, match=r"num_warps must be one of 1, 2, 4, 8, 16, 32, got 3"):
        add_warps[(1,)](np.zeros(4, np.float32), 4, BLOCK=4, num_warps=3)
