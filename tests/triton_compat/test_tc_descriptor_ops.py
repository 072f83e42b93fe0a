"""The rest of Triton's device-side descriptor API (kernel_macro/descriptor_ops.py): attributes,
``desc.atomic_*``, ``desc.gather``/``desc.scatter`` — out-of-bounds elements read 0 and are not
written — in the interpreter and run_cpu against numpy, with ragged shapes."""

from __future__ import annotations

import numpy as np
import pytest

import eggpu
import eggpu.language as tl


@eggpu.jit
def gather_scatter(x_ptr, i_ptr, o_ptr, M, N, y_off, BN: tl.constexpr, R: tl.constexpr):
    d = tl.make_tensor_descriptor(x_ptr, [M, N], [N, 1], [1, BN])
    o = tl.make_tensor_descriptor(o_ptr, [R, BN], [BN, 1], [1, BN])
    rows = tl.load(i_ptr + tl.arange(0, R))
    o.scatter(d.gather(rows, y_off) * 2, tl.arange(0, R), 0)


@pytest.mark.parametrize("m,n,y_off", [(1, 8, 0), (10, 20, 3), (33, 17, 12)])
def test_gather_scatter_rows_out_of_bounds_zero(run_both, m, n, y_off):
    rng = np.random.default_rng(m + n)
    x = rng.standard_normal((m, n)).astype(np.float32)
    rows = rng.integers(-2, m + 2, 16).astype(np.int32)
    o = np.full((16, 8), -1.0, np.float32)
    want = np.zeros((16, 8), np.float32)
    for r, i in enumerate(rows):
        for c in range(8):
            if 0 <= i < m and y_off + c < n:
                want[r, c] = 2 * x[i, y_off + c]
    for dev, (_, _, got) in run_both(gather_scatter, (1,), x, rows, o, m, n, y_off, BN=8, R=16).items():
        np.testing.assert_array_equal(got, want, err_msg=dev)


@eggpu.jit
def scatter_part(o_ptr, M, N, BN: tl.constexpr):
    o = tl.make_tensor_descriptor(o_ptr, [M, N], [N, 1], [1, BN])
    o.scatter(tl.full((8, BN), 7, tl.int32), tl.arange(0, 8) * 2 - 1, N - BN // 2)  # rows -1, 1, 3, ...; half out


def test_scatter_does_not_write_out_of_bounds(run_both):
    m, n = 6, 12
    for dev, (got,) in run_both(scatter_part, (1,), np.zeros((m, n + 4), np.int32), m, n + 4, BN=8).items():
        want = np.zeros((m, n + 4), np.int32)
        want[[1, 3, 5], n + 4 - 4:] = 7
        np.testing.assert_array_equal(got, want, err_msg=dev)


@eggpu.jit
def tile_atomics(acc_ptr, bits_ptr, info_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    a = tl.make_tensor_descriptor(acc_ptr, [M, N], [N, 1], [BM, BN])
    b = tl.make_tensor_descriptor(bits_ptr, [M, N], [N, 1], [BM, BN])
    pm, pn = tl.program_id(0), tl.program_id(1)
    one = tl.full((BM, BN), 1.0, tl.float32)
    a.atomic_add([pm * BM, pn * BN], one)
    a.atomic_add([pm * BM + 1, pn * BN], one)  # overlaps the next tile: atomics, not stores
    a.atomic_max([0, 0], one * 5)
    b.atomic_or([pm * BM, pn * BN], tl.full((BM, BN), 2, tl.int32))
    b.atomic_xor([pm * BM, pn * BN], tl.full((BM, BN), 1, tl.int32))
    b.atomic_and([pm * BM, pn * BN], tl.full((BM, BN), 3, tl.int32))
    tl.static_assert(a.dtype == tl.float32)
    tl.static_assert(a.block_shape[1] == BN)
    tl.store(info_ptr, a.shape[0] * 1000 + a.shape[1] + a.strides[0] * 1000000)


@pytest.mark.parametrize("m,n", [(1, 1), (10, 45), (33, 17)])
def test_descriptor_atomics_and_attributes(run_both, m, n):
    acc, bits, info = np.zeros((m, n), np.float32), np.zeros((m, n), np.int32), np.zeros(1, np.int32)
    grid = (-(-m // 4), -(-n // 8))
    want = np.zeros((m, n), np.float32)
    for pm in range(grid[0]):
        for pn in range(grid[1]):
            want[pm * 4:pm * 4 + 4, pn * 8:pn * 8 + 8] += 1
            want[pm * 4 + 1:pm * 4 + 5, pn * 8:pn * 8 + 8] += 1
    for dev, (a, b, i) in run_both(tile_atomics, grid, acc, bits, info, m, n, BM=4, BN=8).items():
        w = want.copy()
        w[:4, :8] = np.maximum(w[:4, :8], 5)  # every program's atomic_max of the first tile (after or before)
        np.testing.assert_array_equal(a[4:, :], want[4:, :], err_msg=dev)
        np.testing.assert_array_equal(a[:4, 8:], want[:4, 8:], err_msg=dev)
        assert (a[:4, :8] >= 5).all(), dev
        np.testing.assert_array_equal(b, np.full((m, n), (((0 | 2) ^ 1) & 3), np.int32), err_msg=dev)
        assert i[0] == n * 1000000 + m * 1000 + n, dev


@eggpu.jit
def desc_misuse(x_ptr, i_ptr, WHICH: tl.constexpr):
    d = tl.make_tensor_descriptor(x_ptr, [16, 16], [16, 1], [4, 16])
    r = tl.make_tensor_descriptor(x_ptr, [16, 16], [16, 1], [1, 16])
    idx = tl.load(i_ptr + tl.arange(0, 8))
    if WHICH == 0:
        d.gather(idx, 0)
    if WHICH == 1:
        r.gather(idx.to(tl.float32), 0)
    if WHICH == 2:
        d.atomic_add([0, 0], tl.zeros((2, 16), tl.float32))
    if WHICH == 3:
        d.atomic_or([0, 0], tl.zeros((4, 16), tl.float32))
    if WHICH == 4:
        r.scatter(tl.zeros((8, 16), tl.float32), idx)
    if WHICH == 5:
        d.reduce([0, 0])


@pytest.mark.parametrize("which,message", [
    (0, "desc.gather needs a 2-D descriptor of block_shape [1, BN], got [4, 16]"),
    (1, "desc.gather: x_offsets must be a 1-D block of i16 or i32 row indices, got f32[8]"),
    (2, "desc.atomic_add: the value has shape [2, 16], the tile [4, 16]"),
    (3, "desc.atomic_or needs an integer tensor, got a descriptor of f32"),
    (4, "desc.scatter(): missing a required argument: 'y_offset'"),
    (5, "tensor descriptors have no attribute 'reduce'"),
])
def test_descriptor_method_misuse_is_a_located_error(which, message):
    with pytest.raises(eggpu.CompileError) as ei:
        desc_misuse.specialize(np.zeros(256, np.float32), np.zeros(8, np.int32), WHICH=which).ir()
    msg = str(ei.value).splitlines()
    assert message in msg[0], msg[0]
    assert "^" in msg[2]


def test_descriptor_ops_assemble_for_the_gpu():
    from eggpu.codegen.ptxas import run_ptxas
    from eggpu.codegen.toolchain import ToolchainError, find_ptxas

    f, i = np.zeros(64, np.float32), np.zeros(16, np.int32)
    cks = [eggpu.compile(gather_scatter.specialize(f, i, f, 4, 16, 3, BN=8, R=16), target="sm_90"),
           eggpu.compile(tile_atomics.specialize(f, i, i, 4, 16, BM=4, BN=8), target="sm_80")]
    assert "atom.global" in cks[1].ptx or "red.global" in cks[1].ptx
    try:
        find_ptxas()
    except ToolchainError:
        pytest.skip("ptxas not installed")
    for ck, t in zip(cks, ("sm_90", "sm_80")):
        assert run_ptxas(ck.ptx, t).registers > 0
