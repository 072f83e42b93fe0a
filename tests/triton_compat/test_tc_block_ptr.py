"""Triton's block pointers: ``tl.make_block_ptr``, ``tl.advance``, ``boundary_check=`` and
``padding_option=`` on ``tl.load``/``tl.store``, written as in Triton, run in the interpreter and
through the compiled CPU lowering, and compared with numpy on ragged shapes; misuse is one located
error naming the argument."""

from __future__ import annotations

import numpy as np
import pytest

import eggpu
import eggpu.language as tl


@eggpu.jit
def copy_tile(x_ptr, y_ptr, M, N, sxm, sxn, sym, syn, BM: tl.constexpr, BN: tl.constexpr, PAD: tl.constexpr):
    pm, pn = tl.program_id(0), tl.program_id(1)
    x_bp = tl.make_block_ptr(base=x_ptr, shape=(M, N), strides=(sxm, sxn), offsets=(pm * BM, pn * BN),
                             block_shape=(BM, BN), order=(1, 0))
    y_bp = tl.make_block_ptr(y_ptr, (M, N), (sym, syn), (pm * BM, pn * BN), (BM, BN), (1, 0))
    x = tl.load(x_bp, boundary_check=(0, 1), padding_option=PAD)
    tl.store(y_bp, x * 2.0, boundary_check=(0, 1))


@pytest.mark.parametrize("m,n", [(1, 1), (10, 781), (33, 17)])
def test_copy_2d_ragged(run_both, m, n):
    rng = np.random.default_rng(m * n)
    x = rng.standard_normal((m, n)).astype(np.float32)
    y = np.full((m, n), -1.0, np.float32)
    grid = (triton_cdiv(m, 16), triton_cdiv(n, 32))
    for out in run_both(copy_tile, grid, x, y, m, n, n, 1, n, 1, BM=16, BN=32, PAD="zero").values():
        np.testing.assert_array_equal(out[1], 2 * x)


def triton_cdiv(a: int, b: int) -> int:
    return (a + b - 1) // b


def test_copy_transposed_strides(run_both):
    # x is read through its transpose's strides: y = 2 * x.T
    m, n = 13, 29
    x = np.arange(n * m, dtype=np.float32).reshape(n, m)
    y = np.zeros((m, n), np.float32)
    for out in run_both(copy_tile, (1, 1), x, y, m, n, 1, m, n, 1, BM=16, BN=32, PAD="").values():
        np.testing.assert_array_equal(out[1], 2 * x.T)


@eggpu.jit
def padded_sum(x_ptr, out_ptr, n, B: tl.constexpr, PAD: tl.constexpr):
    bp = tl.make_block_ptr(x_ptr, (n,), (1,), (tl.program_id(0) * B,), (B,), (0,))
    x = tl.load(bp, boundary_check=(0,), padding_option=PAD)
    tl.store(out_ptr + tl.program_id(0) * B + tl.arange(0, B), x)


@pytest.mark.parametrize("pad,fill", [("zero", 0.0), ("nan", np.nan)])
@pytest.mark.parametrize("n", [1, 1000, 1001])
def test_padding_fills_out_of_bounds(run_both, pad, fill, n):
    x = np.arange(1, n + 1, dtype=np.float32)
    blocks = triton_cdiv(n, 256)
    out = np.full(blocks * 256, 7.0, np.float32)
    expect = np.full(blocks * 256, fill, np.float32)
    expect[:n] = x
    for res in run_both(padded_sum, (blocks,), x, out, n, B=256, PAD=pad).values():
        np.testing.assert_array_equal(res[1], expect)


@eggpu.jit
def row_sums_advance(x_ptr, out_ptr, M, N, stride_m, BM: tl.constexpr, BN: tl.constexpr):
    """Each program sums BM rows, walking the columns with tl.advance (tutorial 03's pattern)."""
    pid = tl.program_id(0)
    bp = tl.make_block_ptr(x_ptr, (M, N), (stride_m, 1), (pid * BM, 0), (BM, BN), (1, 0))
    acc = tl.zeros((BM,), dtype=tl.float32)
    for _ in range(0, tl.cdiv(N, BN)):
        acc += tl.sum(tl.load(bp, boundary_check=(0, 1), padding_option="zero"), axis=1)
        bp = tl.advance(bp, (0, BN))
    out_bp = tl.make_block_ptr(out_ptr, (M,), (1,), (pid * BM,), (BM,), (0,))
    tl.store(out_bp, acc, boundary_check=(0,))


@pytest.mark.parametrize("m,n", [(1, 1), (10, 781), (65, 1001)])
def test_advance_in_runtime_loop(run_both, m, n):
    rng = np.random.default_rng(m + n)
    x = rng.random((m, n), dtype=np.float32)
    out = np.zeros(m, np.float32)
    for res in run_both(row_sums_advance, (triton_cdiv(m, 16),), x, out, m, n, n, BM=16, BN=64).values():
        np.testing.assert_allclose(res[1], x.sum(axis=1), rtol=1e-5)


@eggpu.jit
def tile_matmul(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
                BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """Triton's block-pointer matmul (the tutorial's kernel written with block pointers)."""
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    a_bp = tl.make_block_ptr(a_ptr, (M, K), (sam, sak), (pid_m * BM, 0), (BM, BK), (1, 0))
    b_bp = tl.make_block_ptr(b_ptr, (K, N), (sbk, sbn), (0, pid_n * BN), (BK, BN), (1, 0))
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for _k in range(0, K, BK):
        a = tl.load(a_bp, boundary_check=(0, 1), padding_option="zero")
        b = tl.load(b_bp, boundary_check=(0, 1), padding_option="zero")
        acc = tl.dot(a, b, acc)
        a_bp = tl.advance(a_bp, (0, BK))
        b_bp = tl.advance(b_bp, (BK, 0))
    c_bp = tl.make_block_ptr(c_ptr, (M, N), (scm, scn), (pid_m * BM, pid_n * BN), (BM, BN), (1, 0))
    tl.store(c_bp, acc, boundary_check=(0, 1))


def test_block_pointer_matmul_ragged(run_both):
    m, n, k = 33, 17, 45
    rng = np.random.default_rng(3)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    c = np.zeros((m, n), np.float32)
    grid = (triton_cdiv(m, 16), triton_cdiv(n, 16))
    for res in run_both(tile_matmul, grid, a, b, c, m, n, k, k, 1, n, 1, n, 1, BM=16, BN=16, BK=16).values():
        np.testing.assert_allclose(res[2], a @ b, rtol=1e-4, atol=1e-4)


@eggpu.jit
def advance_in_if(x_ptr, y_ptr, n, SHIFT: tl.constexpr):
    bp = tl.make_block_ptr(x_ptr, (n,), (1,), (0,), (16,), (0,))
    if n > 16:
        bp = tl.advance(bp, (SHIFT,))
    tl.store(y_ptr + tl.arange(0, 16), tl.load(bp, boundary_check=(0,), padding_option="zero"))


@pytest.mark.parametrize("n", [10, 40])
def test_advance_in_runtime_if(run_both, n):
    x = np.arange(n, dtype=np.int32) + 1
    y = np.zeros(16, np.int32)
    start = 16 if n > 16 else 0
    expect = np.zeros(16, np.int32)
    part = x[start:start + 16]
    expect[:len(part)] = part
    for res in run_both(advance_in_if, (1,), x, y, n, SHIFT=16).values():
        np.testing.assert_array_equal(res[1], expect)


# ---------------------------------------------------------------- misuse


def _body(src: str):
    """A kernel whose body line 2 is ``src`` (x_ptr: f32 pointer, n: i32)."""
    ns: dict = {}
    code = ("import eggpu\nimport eggpu.language as tl\n\n@eggpu.jit\ndef k(x_ptr, n, B: tl.constexpr):\n"
            "    bp = tl.make_block_ptr(x_ptr, (n,), (1,), (0,), (B,), (0,))\n    " + src + "\n")
    import linecache
    fname = f"<block-ptr-{abs(hash(src))}>"
    linecache.cache[fname] = (len(code), None, code.splitlines(True), fname)
    exec(compile(code, fname, "exec"), ns)
    return ns["k"]


@pytest.mark.parametrize("src,message", [
    ("tl.load(bp, mask=n > 0)", "tl.load: mask= cannot be used with a block pointer"),
    ("tl.load(bp, other=0.0)", "tl.load: other= cannot be used with a block pointer"),
    ("tl.load(bp, boundary_check=(1,))", "boundary_check dimension 1 is out of range for a 1-d block pointer"),
    ("tl.load(bp, boundary_check=(0,), padding_option='inf')", "padding_option='inf' is not one of"),
    ("tl.load(x_ptr + tl.arange(0, B), boundary_check=(0,))",
     "tl.load(boundary_check=(0,)) is not supported by eggpu: boundary_check= and padding_option= apply to "
     "block pointers"),
    ("tl.load(x_ptr + tl.arange(0, B), padding_option='zero')", "tl.load(padding_option='zero') is not supported"),
    ("tl.store(x_ptr + tl.arange(0, B), 1.0, boundary_check=(0,))", "tl.store(boundary_check=(0,)) is not"),
    ("tl.store(bp, 1.0, mask=n > 0)", "tl.store: mask= cannot be used with a block pointer"),
    ("tl.advance(x_ptr, (1,))", "tl.advance needs a block pointer (from tl.make_block_ptr), got a scalar"),
    ("tl.advance(bp, (1, 2))", "tl.advance: offsets must have one entry per dimension (1), got 2 entries"),
    ("tl.make_block_ptr(x_ptr + tl.arange(0, B), (n,), (1,), (0,), (B,), (0,))",
     "tl.make_block_ptr needs a scalar pointer as base, got a block"),
    ("tl.make_block_ptr(x_ptr, (n, n), (1,), (0,), (B,), (0,))", "shape has 2 entries but block_shape has 1"),
    ("tl.make_block_ptr(x_ptr, (n,), (1,), (0,), (n,), (0,))", "block_shape must be a tuple of positive"),
    ("tl.make_block_ptr(x_ptr, (n,), (1.5,), (0,), (B,), (0,))", "every entry of strides must be an integer"),
    ("tl.make_block_ptr(x_ptr, (n,), (1,), (0,), (B,), (1,))", "order must be a permutation of the 1 dimensions"),
    ("tl.store(x_ptr, bp)", "tl.store cannot store a block pointer of block_shape [16] to f32"),
    ("tl.store(bp, tl.zeros((B, 2), dtype=tl.float32))", "a block of shape [16, 2] cannot be stored through"),
])
def test_misuse_is_a_located_error(src, message):
    k = _body(src)
    x = np.zeros(16, np.float32)
    with pytest.raises(eggpu.EggpuError) as ei:
        k[(1,)](x, 16, B=16)
    text = str(ei.value)
    assert message in text
    assert src.split("(")[0] in text and "^" in text  # the source line with a caret


def test_nan_padding_needs_a_float_pointer():
    k = _body("tl.load(bp, boundary_check=(0,), padding_option='nan')")
    with pytest.raises(eggpu.EggpuError, match="padding_option='nan' needs a float block pointer, got"):
        k[(1,)](np.zeros(16, np.int32), 16, B=16)


def test_block_pointer_reassigned_in_loop_is_an_error():
    k = _body("for i in range(n):\n        bp = tl.make_block_ptr(x_ptr, (n,), (1,), (i,), (2 * B,), (0,))")
    with pytest.raises(eggpu.EggpuError, match="the block pointer bp is .* not the same block pointer moved by "
                       "tl.advance"):
        k[(1,)](np.zeros(16, np.float32), 16, B=16)


# ---------------------------------------------------------------- device-side tensor descriptors


@eggpu.jit
def desc_scale(x_ptr, y_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr, PAD: tl.constexpr):
    x_desc = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN],
                                       padding_option=PAD)
    y_desc = tl.make_tensor_descriptor(y_ptr, [M, N], [N, 1], [BM, BN])
    pm, pn = tl.program_id(0), tl.program_id(1)
    x = x_desc.load([pm * BM, pn * BN])
    y_desc.store([pm * BM, pn * BN], x * 3)
    # the padding of the tile past the end, in the last program: one row below the tensor
    if (pm == tl.num_programs(0) - 1) & (pn == 0):
        below = tl.load_tensor_descriptor(x_desc, [M, 0])
        tl.store(y_ptr + M * N + tl.arange(0, BN), tl.sum(below, axis=0))


@pytest.mark.parametrize("pad", ["zero", "nan"])
@pytest.mark.parametrize("m,n", [(1, 1), (10, 781), (33, 17)])
def test_tensor_descriptor_load_store_ragged(run_both, m, n, pad):
    rng = np.random.default_rng(m + n)
    x = rng.standard_normal((m, n)).astype(np.float32)
    y = np.full(m * n + 32, -1.0, np.float32)
    grid = (triton_cdiv(m, 16), triton_cdiv(n, 32))
    for res in run_both(desc_scale, grid, x, y, m, n, BM=16, BN=32, PAD=pad).values():
        np.testing.assert_array_equal(res[1][:m * n].reshape(m, n), 3 * x)
        np.testing.assert_array_equal(res[1][m * n:], np.full(32, 0.0 if pad == "zero" else np.nan, np.float32))


@eggpu.jit
def desc_matmul(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    a_desc = tl.make_tensor_descriptor(a_ptr, [M, K], [K, 1], [BM, BK])
    b_desc = tl.make_tensor_descriptor(b_ptr, [K, N], [N, 1], [BK, BN])
    c_desc = tl.make_tensor_descriptor(c_ptr, [M, N], [N, 1], [BM, BN])
    off_m, off_n = tl.program_id(0) * BM, tl.program_id(1) * BN
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        acc = tl.dot(a_desc.load([off_m, k * BK]), b_desc.load([k * BK, off_n]), acc)
    c_desc.store([off_m, off_n], acc.to(tl.float16))


def test_tensor_descriptor_matmul_ragged(run_both):
    m, n, k = 33, 17, 45
    rng = np.random.default_rng(4)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    c = np.zeros((m, n), np.float16)
    grid = (triton_cdiv(m, 16), triton_cdiv(n, 16))
    ref = (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16).astype(np.float32)
    for res in run_both(desc_matmul, grid, a, b, c, m, n, k, BM=16, BN=16, BK=16).values():
        np.testing.assert_allclose(res[2].astype(np.float32), ref, rtol=1e-2, atol=1e-2)


def _desc_body(src: str):
    return _body("d = tl.make_tensor_descriptor(x_ptr, [n], [1], [B])\n    " + src)


@pytest.mark.parametrize("src,message", [
    ("tl.make_tensor_descriptor(x_ptr, [n], [n], [B])", "the last stride must be the compile-time 1, got a scalar"),
    ("tl.make_tensor_descriptor(x_ptr, [n], [1], [B], padding_option='one')",
     "tl.make_tensor_descriptor: padding_option='one' is not one of 'zero', 'nan'"),
    ("tl.make_tensor_descriptor(x_ptr, [n, n], [n, 1], [B])",
     "tl.make_tensor_descriptor: shape has 2 entries but block_shape has 1"),
    ("d.load([0, 0])", "tl.load_tensor_descriptor: offsets must have one entry per dimension (1), got 2 entries"),
    ("d.store([0.5], 1.0)", "tl.store_tensor_descriptor: every offset must be an integer scalar, got the"),
    ("tl.load_tensor_descriptor(bp, [0])", "tl.load_tensor_descriptor needs a tensor descriptor (from "
     "tl.make_tensor_descriptor), got a block pointer"),
    ("d.gather([0])", "desc.gather(): missing a required argument: 'y_offset'"),
    ("d.reduce([0])", "tensor descriptors have no attribute 'reduce'"),
    ("tl.store(x_ptr, d)", "tl.store cannot store a tensor descriptor of block_shape [16] to f32"),
    ("tl.make_tensor_descriptor(x_ptr, [n], [1], [2])", "tl.make_tensor_descriptor: the block's last dimension "
     "must span at least 16 bytes, got 2 x 4 = 8 bytes"),
    ("tl.make_tensor_descriptor(x_ptr, [n, n], [6, 1], [B, B])", "tl.make_tensor_descriptor: strides must be "
     "multiples of 16 bytes, got a stride of 6 x 4 = 24 bytes"),
    ("tl.make_tensor_descriptor(x_ptr, [n, n, n, n, n, n], [16, 16, 16, 16, 16, 1], [1, 1, 1, 1, 1, B])",
     "tl.make_tensor_descriptor: a tensor descriptor has 1 to 5 dimensions, got 6"),
])
def test_tensor_descriptor_misuse(src, message):
    k = _desc_body(src)
    with pytest.raises(eggpu.EggpuError) as ei:
        k[(1,)](np.zeros(16, np.float32), 16, B=16)
    assert message in str(ei.value) and "^" in str(ei.value)


# ---------------------------------------------------------------- host-side TensorDescriptor arguments


@eggpu.jit
def host_desc_add(a_desc, c_desc, BM: tl.constexpr, BN: tl.constexpr):
    pm, pn = tl.program_id(0), tl.program_id(1)
    c_desc.store([pm * BM, pn * BN], a_desc.load([pm * BM, pn * BN]) + 1)


@pytest.mark.parametrize("mode", ["interpret", "cpu"])
@pytest.mark.parametrize("m,n,pad", [(1, 1, 4), (10, 781, 784), (33, 17, 20), (8, 32, 32)])
def test_host_tensor_descriptor_arguments(monkeypatch, mode, m, n, pad):
    """Ragged shapes in rows padded to 16 bytes (Triton's stride constraint); the padding columns
    are neither read into the tile nor written."""
    from eggpu.tools.tensor_descriptor import TensorDescriptor

    monkeypatch.setenv("EGGPU_JIT_DEVICE", mode)
    a = np.random.default_rng(m + n).standard_normal((m, pad)).astype(np.float32)
    c = np.full((m, pad), -1.0, np.float32)
    a_desc = TensorDescriptor(a, [m, n], [pad, 1], [16, 32]) if pad != n else TensorDescriptor.from_tensor(a, [16, 32])
    host_desc_add[(triton_cdiv(m, 16), triton_cdiv(n, 32))](
        a_desc, TensorDescriptor(c, [m, n], [pad, 1], [16, 32]), BM=16, BN=32)
    np.testing.assert_array_equal(c[:, :n], a[:, :n] + 1)
    np.testing.assert_array_equal(c[:, n:], -1.0)


@pytest.mark.parametrize("mode", ["interpret", "cpu"])
@pytest.mark.parametrize("m,n", [(1, 4), (37, 40), (130, 132)])
def test_host_descriptors_of_strided_views(monkeypatch, mode, m, n):
    """``from_tensor`` of column slices of one buffer (Liger-Kernel's fused MLP keeps A, G and U
    in ``agu[..., :h]``, ``agu[..., h:2h]``, ``agu[..., 2h:]``): each view's own strides address
    it, reads see only the view and writes land in the view, in place."""
    from eggpu.tools.tensor_descriptor import TensorDescriptor

    monkeypatch.setenv("EGGPU_JIT_DEVICE", mode)
    src = np.random.default_rng(m + n).standard_normal((m, 3 * n)).astype(np.float32)
    dst = np.full((m, 3 * n), -1.0, np.float32)
    a_desc = TensorDescriptor.from_tensor(src[:, n:2 * n], [16, 32])
    c_desc = TensorDescriptor.from_tensor(dst[:, 2 * n:], [16, 32])
    assert a_desc.strides == [3 * n, 1] and (m == 1 or not src[:, n:2 * n].flags.c_contiguous)
    host_desc_add[(triton_cdiv(m, 16), triton_cdiv(n, 32))](a_desc, c_desc, BM=16, BN=32)
    np.testing.assert_array_equal(dst[:, 2 * n:], src[:, n:2 * n] + 1)
    np.testing.assert_array_equal(dst[:, :2 * n], -1.0)  # nothing outside the view is written


def test_host_tensor_descriptor_specialization():
    from eggpu.tools.tensor_descriptor import TensorDescriptor

    a = np.zeros((40, 24), np.float16)
    k1 = host_desc_add.specialize(TensorDescriptor.from_tensor(a, [16, 8]), TensorDescriptor.from_tensor(a, [16, 8]),
                                  BM=16, BN=8)
    k2 = host_desc_add.specialize(TensorDescriptor.from_tensor(a, [8, 8]), TensorDescriptor.from_tensor(a, [16, 8]),
                                  BM=16, BN=8)
    # each descriptor: its array, its shape and all strides but the last (which is 1)
    assert k1.arg_types == (tl.Pointer[tl.f16], tl.i32, tl.i32, tl.i32) * 2
    assert type(k1) is type(k2) and k1 != k2  # the block shape is compile-time: another specialization
    assert k1.ir() is not None


@pytest.mark.parametrize("make,message", [
    (lambda a: __import__("eggpu.tools.tensor_descriptor", fromlist=["x"]).TensorDescriptor(a, [4, 8], [1, 4], [4, 8]),
     "host_desc_add: parameter a_desc: a tensor descriptor's last stride must be 1, got strides=[1, 4]"),
    (lambda a: __import__("eggpu.tools.tensor_descriptor", fromlist=["x"]).TensorDescriptor(a, [4, 8], [8, 1], [4]),
     "host_desc_add: parameter a_desc: a tensor descriptor needs one shape, stride and block_shape entry per "
     "dimension, got shape=[4, 8], strides=[8, 1], block_shape=[4]"),
    (lambda a: __import__("eggpu.tools.tensor_descriptor", fromlist=["x"]).TensorDescriptor(a, [4, 8], [8, 1], [4, 8],
                                                                                          "inf"),
     "host_desc_add: parameter a_desc: padding='inf' is not 'zero' or 'nan'"),
    (lambda a: __import__("eggpu.tools.tensor_descriptor", fromlist=["x"]).TensorDescriptor(a, [4, 6], [6, 1], [4, 8]),
     "host_desc_add: parameter a_desc: a tensor descriptor's strides must be multiples of 16 bytes, got "
     "strides=[6, 1] of 4-byte elements (pad the rows to a multiple of 16 bytes)"),
    (lambda a: __import__("eggpu.tools.tensor_descriptor", fromlist=["x"]).TensorDescriptor(a, [4, 0], [8, 1], [4, 8]),
     "host_desc_add: parameter a_desc: a tensor descriptor's shape must be positive, got shape=[4, 0]"),
    (lambda a: __import__("eggpu.tools.tensor_descriptor", fromlist=["x"]).TensorDescriptor(
        a, [1] * 6, [8] * 5 + [1], [1] * 6),
     "host_desc_add: parameter a_desc: a tensor descriptor has 1 to 5 dimensions, got shape=[1, 1, 1, 1, 1, 1]"),
    (lambda a: __import__("eggpu.tools.tensor_descriptor", fromlist=["x"]).TensorDescriptor(
        a.reshape(-1)[1:], [31], [1], [8]),
     "host_desc_add: parameter a_desc: a tensor descriptor's base must be 16-byte aligned, its address is 0x"),
])
def test_host_tensor_descriptor_misuse(make, message):
    from eggpu.tools.tensor_descriptor import TensorDescriptor

    a = np.zeros((4, 8), np.float32)
    with pytest.raises(eggpu.LaunchError) as ei:
        host_desc_add[(1, 1)](make(a), TensorDescriptor.from_tensor(a, [4, 8]), BM=4, BN=8)
    assert str(ei.value) == message or message.endswith("0x") and str(ei.value).startswith(message)


@eggpu.jit
def advance_in_while(x_ptr, y_ptr, n, B: tl.constexpr):
    """Sums the B-element blocks of x while their first element is below 1000, with a block pointer
    moved by the while loop."""
    bp = tl.make_block_ptr(x_ptr, (n,), (1,), (0,), (B,), (0,))
    acc = tl.zeros((B,), dtype=tl.float32)
    start = 0
    while tl.load(x_ptr + start, mask=start < n, other=1.0e9) < 1000.0:
        acc += tl.load(bp, boundary_check=(0,), padding_option="zero")
        bp = tl.advance(bp, (B,))
        start += B
    tl.store(y_ptr + tl.arange(0, B), acc)


@pytest.mark.parametrize("n", [1, 1000, 1001])
def test_advance_in_while_loop(run_both, n):
    x = np.arange(n, dtype=np.float32)
    blocks = np.zeros(triton_cdiv(n, 16) * 16, np.float32)
    blocks[:n] = x
    rows = blocks.reshape(-1, 16)
    expect = rows[rows[:, 0] < 1000].sum(axis=0)
    for res in run_both(advance_in_while, (1,), x, np.zeros(16, np.float32), n, B=16).values():
        np.testing.assert_array_equal(res[1], expect)


@eggpu.jit
def annotated_desc_copy(a_desc: tl.tensor_descriptor, c_desc: tl.tensor_descriptor, BM: tl.constexpr,
                        BN: tl.constexpr):
    """Triton kernels annotate descriptor parameters with tl.tensor_descriptor."""
    pm, pn = tl.program_id(0), tl.program_id(1)
    c_desc.store([pm * BM, pn * BN], a_desc.load([pm * BM, pn * BN]) * 2)


@pytest.mark.parametrize("mode", ["interpret", "cpu"])
def test_tensor_descriptor_annotation_takes_host_descriptors(monkeypatch, mode):
    from eggpu.tools.tensor_descriptor import TensorDescriptor

    monkeypatch.setenv("EGGPU_JIT_DEVICE", mode)
    m, n, pad = 21, 13, 16
    a = np.random.default_rng(3).standard_normal((m, pad)).astype(np.float32)
    c = np.zeros((m, pad), np.float32)
    annotated_desc_copy[(2, 1)](TensorDescriptor(a, [m, n], [pad, 1], [16, 16]),
                                TensorDescriptor(c, [m, n], [pad, 1], [16, 16]), BM=16, BN=16)
    np.testing.assert_array_equal(c[:, :n], 2 * a[:, :n])
    np.testing.assert_array_equal(c[:, n:], 0.0)
    with pytest.raises(eggpu.LaunchError, match=r"^annotated_desc_copy: parameter a_desc is annotated "
                                                 r"tl\.tensor_descriptor, got a numpy array of float32$"):
        annotated_desc_copy[(1, 1)](a, TensorDescriptor(c, [m, n], [pad, 1], [16, 16]), BM=16, BN=16)
    assert tl.tensor_descriptor_base is tl.tensor_descriptor
    with pytest.raises(TypeError, match="tl.tensor_descriptor is a type for annotations"):
        tl.tensor_descriptor(a)


def _tf32_reference(x: np.ndarray) -> np.ndarray:
    """TF32 as Triton's TMA loads make it: nearest even at 10 mantissa bits, inf/NaN kept (numpy
    on the bits, written from the definition; a max-finite value rounds up to inf)."""
    b = x.view(np.uint32).astype(np.uint64)
    keep = b & 0x1FFF
    trunc = b - keep
    up = (keep > 0x1000) | ((keep == 0x1000) & ((b >> 13) & 1 == 1))
    out = np.where(up, trunc + 0x2000, trunc).astype(np.uint32)
    special = (b & 0x7F800000) == 0x7F800000
    return np.where(special, x.view(np.uint32), out).view(np.float32)


@pytest.mark.parametrize("mode", ["interpret", "cpu"])
def test_host_descriptor_round_f32_to_tf32(monkeypatch, mode):
    from eggpu.tools.tensor_descriptor import TensorDescriptor

    monkeypatch.setenv("EGGPU_JIT_DEVICE", mode)
    m, n, pad = 9, 30, 32
    rng = np.random.default_rng(5)
    a = rng.integers(0, 2**32, (m, pad), dtype=np.uint64).astype(np.uint32).view(np.float32)
    a[0, :6] = [np.inf, -np.inf, np.nan, 3.4028235e38, 1.0 + 2**-11, 1.0 + 3 * 2**-11]  # ties: even
    c = np.zeros((m, pad), np.float32)
    annotated_desc_copy[(1, 2)](TensorDescriptor(a, [m, n], [pad, 1], [16, 16], round_f32_to_tf32=True),
                                TensorDescriptor(c, [m, n], [pad, 1], [16, 16]), BM=16, BN=16)
    want = _tf32_reference(a[:, :n]) * 2
    np.testing.assert_array_equal(c[:, :n], want)
    with pytest.raises(eggpu.LaunchError, match="round_f32_to_tf32=True needs a float32 tensor, got float16"):
        h = np.zeros((4, 8), np.float16)
        annotated_desc_copy[(1, 1)](TensorDescriptor(h, [4, 8], [8, 1], [4, 8], round_f32_to_tf32=True),
                                    TensorDescriptor.from_tensor(h, [4, 8]), BM=4, BN=8)
