"""``triton.constexpr_function`` as ``eggpu.constexpr_function``: Python functions a kernel calls on
compile-time values, ``triton.cdiv``/``triton.next_power_of_2`` among them (Liger-Kernel's MoE
token-gather kernel loops ``tl.static_range(triton.cdiv(H_dim, BLOCK_H))``)."""

from __future__ import annotations

import numpy as np
import pytest

import eggpu
import eggpu as triton
import eggpu.language as tl


@eggpu.constexpr_function
def tiles_of(n, block, extra=0):
    return (n + block - 1) // block + extra


@eggpu.jit
def tile_sums(x_ptr, out_ptr, N: tl.constexpr, BLOCK: tl.constexpr):
    # one program sums x in BLOCK-wide tiles, the tile count fixed at compile time
    acc = tl.zeros((BLOCK,), tl.float32)
    for t in tl.static_range(triton.cdiv(N, BLOCK)):
        offs = t * BLOCK + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + offs, mask=offs < N, other=0.0)
    tl.store(out_ptr, tl.sum(acc, axis=0))
    tl.store(out_ptr + 1, tiles_of(N, BLOCK, extra=100))


@eggpu.jit
def padded_copy(x_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, triton.next_power_of_2(N))  # a block as wide as the next power of 2
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < N, other=-1.0), mask=offs < N + 1)


@pytest.mark.parametrize("n", [1, 1000, 1001])
@pytest.mark.parametrize("device", ["interpret", "cpu"])
def test_cdiv_and_constexpr_functions_in_a_kernel(n, device, monkeypatch):
    monkeypatch.setenv("EGGPU_JIT_DEVICE", device)
    x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    out = np.zeros(2, np.float32)
    tile_sums[(1,)](x, out, N=n, BLOCK=128)
    np.testing.assert_allclose(out[0], x.astype(np.float64).sum(), rtol=1e-5, atol=1e-4)
    assert out[1] == -(-n // 128) + 100
    got = np.zeros(n + 1, np.float32)
    padded_copy[(1,)](x, got, N=n)
    np.testing.assert_array_equal(got[:n], x)
    # lane n exists only where the block is padded to a power of 2 (1000, 1001 -> 1024; 1 -> 1)
    assert got[n] == (-1.0 if n > 1 else 0.0)


def test_host_calls_are_the_plain_functions():
    assert eggpu.cdiv(1001, 128) == 8 and eggpu.next_power_of_2(1001) == 1024 and eggpu.next_power_of_2(1) == 1
    assert tiles_of(10, 4) == 3 and tiles_of.__name__ == "tiles_of"


def test_runtime_argument_is_a_located_error():
    @eggpu.jit
    def runtime_cdiv(x_ptr, n, BLOCK: tl.constexpr):
        tl.store(x_ptr, triton.cdiv(n, BLOCK))

    with pytest.raises(eggpu.CompileError, match=r"(?s)triton\.cdiv\(\) is a constexpr_function: its arguments must be "
                                                r"compile-time values, got .*i32.*hint: pass tl\.constexpr parameters"):
        runtime_cdiv.specialize(np.zeros(1, np.int32), 7, BLOCK=4).ir()


def test_failing_constexpr_function_is_a_located_error():
    @eggpu.jit
    def bad_tiles(x_ptr, BLOCK: tl.constexpr):
        tl.store(x_ptr, tiles_of(10, BLOCK))

    with pytest.raises(eggpu.CompileError, match=r"tiles_of\(\): ZeroDivisionError: integer division or modulo by zero"):
        bad_tiles.specialize(np.zeros(1, np.int32), BLOCK=0).ir()


def test_constexpr_function_needs_a_callable():
    with pytest.raises(TypeError, match=r"constexpr_function needs a function, got int"):
        eggpu.constexpr_function(3)
