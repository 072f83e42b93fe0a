"""``triton.language.core`` / ``triton.language.standard`` spelled for eggpu: both hold the
language's own names (the same objects) plus Triton's internals, importable as modules (``import eggpu.language.core as core``), and kernels
reach the language through them (``core.reshape``, ``core.static_range``, ``x: core.constexpr``),
as FlagGems' topk and sort do. Interpreted and run on the CPU, compared with numpy."""

from __future__ import annotations

import numpy as np
import pytest

import eggpu
import eggpu.language as tl
import eggpu.language.core as core
from eggpu.language.standard import zeros_like


def test_submodules_are_the_language():
    import eggpu.language.standard as standard

    assert core is tl.core and standard is tl.standard
    assert core.reshape is tl.reshape and zeros_like is tl.zeros_like and core.constexpr is tl.constexpr
    assert core.CONSTEXPR_0 == 0 and callable(standard._log2)


@eggpu.jit
def _pair_sums(x_ptr, o_ptr, z_ptr, n, HALF: core.constexpr):
    offs = core.arange(0, 2 * HALF)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    pairs = core.reshape(x, [HALF, 2])
    acc = zeros_like(tl.sum(pairs, 1))
    for i in core.static_range(2):
        acc += tl.sum(core.where(core.arange(0, 2)[None, :] == i, pairs, 0.0), 1)
    tl.store(o_ptr + core.arange(0, HALF), acc)
    tl.store(z_ptr + core.arange(0, HALF), zeros_like(acc) + 1.0)


@pytest.mark.parametrize("n", [1, 1000, 1001])
def test_core_names_in_a_kernel(run_both, n):
    half = eggpu.next_power_of_2(n)
    x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    out = run_both(_pair_sums, (1,), x, np.zeros(half, np.float32), np.zeros(half, np.float32), n, HALF=half)
    padded = np.zeros(2 * half, np.float32)
    padded[:n] = x
    for dev in ("interpret", "cpu"):
        np.testing.assert_allclose(out[dev][1], padded.reshape(half, 2).sum(1), rtol=1e-6, err_msg=dev)
        np.testing.assert_array_equal(out[dev][2], np.ones(half, np.float32), err_msg=dev)
