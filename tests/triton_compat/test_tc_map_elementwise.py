"""``tl.map_elementwise(scalar_fn, *args, pack=1)``: a scalar @eggpu.jit function applied per
element — ``if`` on a per-element condition selects per element, early returns included, multiple
results as a tuple, ``pack=k`` passes k consecutive elements per call — in the interpreter and
run_cpu, against numpy on ragged sizes."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import eggpu
import eggpu.language as tl
from bench.compat_core import load as load_core_catalogue

#: the scalar SELU of Triton's test_map_elementwise, as the core catalogue has it for eggpu
#: (bench/compat_core_kernels.py, which the benchmark also runs with Triton)
selu_scalar = load_core_catalogue("eggpu").selu_scalar


@eggpu.jit
def classify(x, lo, hi):
    """Early returns and a variable assigned on some paths only, then a tuple."""
    k = 1
    if x < lo:
        return -1, x * 0
    if x > hi:
        k = 2
        y = x - hi
    else:
        y = x * 2
    return k, y


@eggpu.jit
def map_kernel(x_ptr, out_ptr, k_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    tl.store(out_ptr + offs, tl.map_elementwise(selu_scalar, x, alpha), mask=m)
    k, y = tl.map_elementwise(classify, x, -0.5, 0.5)
    tl.store(out_ptr + n + offs, y, mask=m)
    tl.store(k_ptr + offs, k, mask=m)


@pytest.mark.parametrize("n", [1, 1000, 1001])
def test_map_elementwise_matches_numpy(run_both, n):
    x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    out = np.zeros(2 * n, np.float32)
    k = np.zeros(n, np.int32)
    alpha = 1.6732632
    want_selu = np.where(x > 0, x, np.float32(alpha) * (np.exp(x) - 1)).astype(np.float32)
    want_k = np.where(x < -0.5, -1, np.where(x > 0.5, 2, 1))
    want_y = np.where(x < -0.5, x * 0, np.where(x > 0.5, x - np.float32(0.5), x * 2)).astype(np.float32)
    for dev, (_, o, kk) in run_both(map_kernel, (-(-n // 256),), x, out, k, n, alpha, BLOCK=256).items():
        np.testing.assert_allclose(o[:n], want_selu, rtol=2e-6, atol=1e-7, err_msg=dev)
        np.testing.assert_array_equal(o[n:], want_y, err_msg=dev)
        np.testing.assert_array_equal(kk, want_k, err_msg=dev)


@eggpu.jit
def swap_add(a0, a1, b0, b1):
    """pack=2: two consecutive elements of each argument; two values per result."""
    return a1 + b0, a0 - b1


@eggpu.jit
def packed_kernel(x_ptr, y_ptr, out_ptr, BM: tl.constexpr, BN: tl.constexpr):
    offs = tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :]
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + tl.arange(0, BN))[None, :]  # broadcast to [BM, BN]
    tl.store(out_ptr + offs, tl.map_elementwise(swap_add, x, y, pack=2))


def test_map_elementwise_pack_passes_consecutive_elements(run_both):
    x = np.arange(24, dtype=np.int32).reshape(4, 6)
    y = (np.arange(6, dtype=np.int32) * 100)
    out = np.zeros((4, 6), np.int32)
    yb = np.broadcast_to(y, (4, 6)).reshape(-1)
    xf = x.reshape(-1)
    want = np.empty(24, np.int32)
    want[0::2] = xf[1::2] + yb[0::2]
    want[1::2] = xf[0::2] - yb[1::2]
    for dev, (_, _, o) in run_both(packed_kernel, (1,), x, y, out, BM=4, BN=6).items():
        np.testing.assert_array_equal(o.reshape(-1), want, err_msg=dev)


@eggpu.jit
def clamp_int(v):
    r = v
    if v < 0:
        r = 0
    elif v > 100:
        r = 100
    return r


@eggpu.jit
def combine_max_with_if(a, b):
    """A combine function with a per-element if (selected per element, as in map_elementwise)."""
    if a > b:
        return a
    return b


@eggpu.jit
def int_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=-1000)
    tl.store(out_ptr + offs, tl.map_elementwise(clamp_int, x), mask=m)
    tl.store(out_ptr + BLOCK, tl.reduce(x, 0, combine_max_with_if))


@pytest.mark.parametrize("n", [1, 1000])
def test_map_elementwise_integer_chain_and_combine_fn_with_if(run_both, n):
    x = np.random.default_rng(n).integers(-300, 300, n).astype(np.int32)
    out = np.zeros(1025, np.int32)
    for dev, (_, o) in run_both(int_kernel, (1,), x, out, n, BLOCK=1024).items():
        np.testing.assert_array_equal(o[:n], np.clip(x, 0, 100), err_msg=dev)
        assert o[1024] == x.max(), dev


@eggpu.jit
def stores_in_branch(p, x):
    if x > 0:
        tl.store(p, x)
    return x


@eggpu.jit
def sums(x):
    return tl.sum(x, axis=0)


@eggpu.jit
def three(a, b, c):
    return a + b + c


@eggpu.jit
def misuse(x_ptr, WHICH: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, 16))
    if WHICH == 0:
        x = tl.map_elementwise(sums, x)
    if WHICH == 1:
        x = tl.map_elementwise(three, x, x, x, pack=3)
    if WHICH == 2:
        x = tl.map_elementwise(stores_in_branch, x_ptr + tl.arange(0, 16), x)
    if WHICH == 3:
        x = tl.map_elementwise(x, x)
    if WHICH == 4:
        x = tl.map_elementwise(three, x, x, x, pack=0)
    tl.store(x_ptr + tl.arange(0, 16), x)


@pytest.mark.parametrize("which,marker,message", [
    (0, "sums", "tl.map_elementwise: scalar_fn uses reduce_sum, which needs a whole block; scalar_fn sees one "
                "element at a time"),
    (1, "pack=3", "tl.map_elementwise: pack=3 does not divide the 16 elements of a block of shape [16]"),
    (3, "x, x)", "tl.map_elementwise: scalar_fn must be an @eggpu.jit function, got a block of type f32[16]"),
    (4, "pack=0", "tl.map_elementwise: pack must be a positive compile-time int, got the compile-time int 0"),
])
def test_map_elementwise_misuse_is_a_located_error(which, marker, message, located_which):
    located_which(misuse, which, marker, message, np.zeros(16, np.float32))


def test_effect_in_a_per_element_branch_is_refused_at_the_if():
    with pytest.raises(eggpu.CompileError) as ei:
        misuse.specialize(np.zeros(16, np.float32), WHICH=2).ir()
    msg = str(ei.value)
    lines, first = inspect.getsourcelines(stores_in_branch)
    assert f":{first + 2}:5: store in a branch on a per-element condition of a function applied per element" in msg
    assert "in stores_in_branch(), inlined from misuse" in msg


@eggpu.jit
def collatz_steps(x):
    """A while loop on a per-element condition, with a per-element if inside."""
    n = 0
    while x != 1:
        if x % 2 == 0:
            x = x // 2
        else:
            x = 3 * x + 1
        n += 1
    return n


@eggpu.jit
def halve_until(x, lim):
    k = 0.0
    while tl.abs(x) > lim:
        x = x * 0.5
        k = k + 1.0
    return x, k


@eggpu.jit
def loop_kernel(x_ptr, f_ptr, n_ptr, y_ptr, k_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=1)
    tl.store(n_ptr + offs, tl.map_elementwise(collatz_steps, x), mask=m)
    y, k = tl.map_elementwise(halve_until, tl.load(f_ptr + offs, mask=m, other=0.0), 3.0)
    tl.store(y_ptr + offs, y, mask=m)
    tl.store(k_ptr + offs, k, mask=m)


def _collatz(v: int) -> int:
    c = 0
    while v != 1:
        v = v // 2 if v % 2 == 0 else 3 * v + 1
        c += 1
    return c


@pytest.mark.parametrize("n", [1, 1000, 1001])
def test_map_elementwise_while_on_a_per_element_condition(run_both, n):
    rng = np.random.default_rng(n)
    x = rng.integers(1, 200, n).astype(np.int32)
    f = (rng.standard_normal(n) * 100).astype(np.float32)
    wy, wk = f.copy(), np.zeros(n, np.float32)
    while (np.abs(wy) > 3).any():
        a = np.abs(wy) > 3
        wy, wk = np.where(a, wy * np.float32(0.5), wy), np.where(a, wk + 1, wk)
    z = [np.zeros(n, np.int32), np.zeros(n, np.float32), np.zeros(n, np.float32)]
    for dev, (_, _, steps, y, k) in run_both(loop_kernel, (-(-n // 512),), x, f, *z, n, BLOCK=512).items():
        np.testing.assert_array_equal(steps, [_collatz(int(v)) for v in x], err_msg=dev)
        np.testing.assert_array_equal(y, wy, err_msg=dev)
        np.testing.assert_array_equal(k, wk, err_msg=dev)


@eggpu.jit
def stores_in_loop(p, x):
    while x > 0:
        tl.store(p, x)
        x = x - 1
    return x


@eggpu.jit
def loop_misuse(x_ptr):
    offs = tl.arange(0, 16)
    tl.store(x_ptr + offs, tl.map_elementwise(stores_in_loop, x_ptr + offs, tl.load(x_ptr + offs)))


def test_effect_in_a_per_element_while_is_refused():
    with pytest.raises(eggpu.CompileError) as ei:
        loop_misuse.specialize(np.zeros(16, np.float32)).ir()
    lines, first = inspect.getsourcelines(stores_in_loop)
    assert (f":{first + 2}:5: store in a while loop on a per-element condition of a function applied per "
            f"element (tl.map_elementwise): the body runs for every element") in str(ei.value)
