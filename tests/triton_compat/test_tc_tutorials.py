"""Triton's tutorials 01 (vector add), 02 (fused softmax) and the kernel of 03 (matmul) (02 and 03 from the
dual source file of bench/compat.py), written as in Triton
with only the import and the decorator changed (``import eggpu as triton`` would also do), launched
with ``kernel[grid](...)`` on numpy arrays and compared with numpy on ragged sizes.

Without a GPU (and with ``EGGPU_JIT_DEVICE`` unset) a launch compiles through ``eggpu.compile`` and
runs the compiled lowering on the CPU; on a GPU machine it launches the PTX.
"""

from __future__ import annotations

import numpy as np
import pytest

import eggpu
import eggpu as triton
import eggpu.language as tl
from bench import compat

# ---------------------------------------------------------------- tutorial 01: vector add


@triton.jit
def add_kernel(x_ptr,  # *Pointer* to first input vector.
               y_ptr,  # *Pointer* to second input vector.
               output_ptr,  # *Pointer* to output vector.
               n_elements,  # Size of the vector.
               BLOCK_SIZE: tl.constexpr,  # Number of elements each program should process.
               # NOTE: `constexpr` so it can be used as a shape value.
               ):
    # There are multiple 'programs' processing different data. We identify which program
    # we are here:
    pid = tl.program_id(axis=0)  # We use a 1D launch grid so axis is 0.
    # This program will process inputs that are offset from the initial data.
    # For instance, if you had a vector of length 256 and block_size of 64, the programs
    # would each access the elements [0:64, 64:128, 128:192, 192:256].
    # Note that offsets is a list of pointers:
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    # Create a mask to guard memory operations against out-of-bounds accesses.
    mask = offsets < n_elements
    # Load x and y from DRAM, masking out any extra elements in case the input is not a
    # multiple of the block size.
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    output = x + y
    # Write x + y back to DRAM.
    tl.store(output_ptr + offsets, output, mask=mask)


def add(x: np.ndarray, y: np.ndarray):
    # We need to preallocate the output.
    output = np.empty_like(x)
    n_elements = output.size
    grid = lambda meta: (triton.cdiv(n_elements, meta['BLOCK_SIZE']), )  # noqa: E731 - as in the tutorial
    add_kernel[grid](x, y, output, n_elements, BLOCK_SIZE=1024)
    return output


@pytest.mark.parametrize("size", [1, 1000, 1001, 98432])
def test_tutorial_01_vector_add(size):
    rng = np.random.default_rng(size)
    x = rng.random(size, dtype=np.float32)
    y = rng.random(size, dtype=np.float32)
    np.testing.assert_array_equal(add(x, y), x + y)


def test_vector_add_specializes_on_dtype_and_constexpr():
    x = np.arange(10, dtype=np.float64)
    out = np.zeros_like(x)
    add_kernel[(1,)](x, x, out, 10, BLOCK_SIZE=16)
    np.testing.assert_array_equal(out, 2 * x)
    k64 = add_kernel.specialize(x, x, out, 10, BLOCK_SIZE=16)
    k32 = add_kernel.specialize(x.astype(np.float32), x.astype(np.float32), out.astype(np.float32), 10, 16)
    assert k64.arg_types == (tl.Pointer[tl.f64],) * 3 + (tl.i32,)
    assert k32.arg_types == (tl.Pointer[tl.f32],) * 3 + (tl.i32,)
    assert k64.id == "add_kernel__pf64_pf64_pf64_i32__16" and k32.id == "add_kernel__pf32_pf32_pf32_i32__16"
    assert add_kernel.specialize(x, x, out, 2**40, BLOCK_SIZE=16).arg_types[3] == tl.i64
    assert add_kernel.specialize(x, x, out, 10, BLOCK_SIZE=16) == k64  # cached per (types, constexprs)
    assert type(add_kernel.specialize(x, x, out, 10, BLOCK_SIZE=16)) is type(k64)


# ---------------------------------------------------------------- tutorial 02: fused softmax


softmax_kernel = compat.load("eggpu").softmax_kernel  # the tutorial's kernel (bench/compat_kernels.py)


def softmax(x: np.ndarray, num_programs: int):
    n_rows, n_cols = x.shape
    BLOCK_SIZE = triton.next_power_of_2(n_cols)
    num_stages = 2
    y = np.empty_like(x)
    stride = lambda a: a.strides[0] // a.itemsize  # noqa: E731 - torch's x.stride(0)
    kernel = softmax_kernel
    # Create a number of persistent programs (constexprs passed by position, as in the tutorial).
    kernel[(num_programs, 1, 1)](y, x, stride(x), stride(y), n_rows, n_cols, BLOCK_SIZE, num_stages)
    return y


@pytest.mark.parametrize("n_rows,num_programs", [(1, 1), (37, 8), (20, 32)])
def test_tutorial_02_fused_softmax(n_rows, num_programs):
    x = np.random.default_rng(n_rows).standard_normal((n_rows, 781)).astype(np.float32)
    y = softmax(x, num_programs)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)


# ---------------------------------------------------------------- tutorial 03: matrix multiplication (kernel only)


# The tutorial's kernel is autotuned in bench/compat_kernels.py, as in the tutorial; the inner @jit
# function is launched here with explicit blocks.
matmul_kernel = compat.load("eggpu").matmul_kernel.fn


@pytest.mark.parametrize("m,n,k", [(70, 50, 90), (1, 33, 7)])
def test_tutorial_03_matmul_kernel(monkeypatch, m, n, k):
    # Interpreted to keep the suite fast (the tutorial's kernel, without its @triton.autotune).
    monkeypatch.setenv("EGGPU_JIT_DEVICE", "interpret")
    rng = np.random.default_rng(m)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    c = np.zeros((m, n), np.float16)
    st = lambda x, d: x.strides[d] // x.itemsize  # noqa: E731 - torch's x.stride(d)
    grid = lambda META: (triton.cdiv(m, META['BLOCK_SIZE_M']) * triton.cdiv(n, META['BLOCK_SIZE_N']), )  # noqa: E731
    matmul_kernel[grid](a, b, c, m, n, k, st(a, 0), st(a, 1), st(b, 0), st(b, 1), st(c, 0), st(c, 1),
                        BLOCK_SIZE_M=32, BLOCK_SIZE_N=32, BLOCK_SIZE_K=32, GROUP_SIZE_M=8, ACTIVATION="leaky_relu")
    ref = a.astype(np.float32) @ b.astype(np.float32)
    ref = np.where(ref >= 0, ref, np.float32(0.01) * ref)
    np.testing.assert_allclose(c.astype(np.float32), ref, rtol=2e-3, atol=2e-3)


# ---------------------------------------------------------------- the launch protocol


@eggpu.jit
def fill(out_ptr, value, n, BLOCK: tl.constexpr, MODE: tl.constexpr = "set"):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if MODE == "set":
        tl.store(out_ptr + offs, value, mask=offs < n)
    else:
        tl.store(out_ptr + offs, tl.load(out_ptr + offs, mask=offs < n) + value, mask=offs < n)


def test_interpret_mode_and_meta_grid(monkeypatch):
    monkeypatch.setenv("EGGPU_JIT_DEVICE", "interpret")
    out = np.zeros(70, np.int32)
    seen = {}

    def grid(meta):
        seen.update(meta)
        return (eggpu.cdiv(meta["n"], meta["BLOCK"]),)

    fill[grid](out, 7, 70, BLOCK=16)
    assert out.tolist() == [7] * 70
    assert seen == {"out_ptr": out, "value": 7, "n": 70, "BLOCK": 16, "MODE": "set"}
    fill[(5,)](out, 2, 70, 16, "add", num_warps=2, num_stages=3)  # Triton launch options are accepted
    assert out.tolist() == [9] * 70
    k = fill.specialize(out, 2.5, 70, 16)
    assert k.arg_types == (tl.Pointer[tl.i32], tl.f32, tl.i32) and k.consts == {"BLOCK": 16, "MODE": "set"}


def test_launch_errors(monkeypatch):
    monkeypatch.setenv("EGGPU_JIT_DEVICE", "interpret")
    out = np.zeros(8, np.int32)
    with pytest.raises(eggpu.LaunchError, match=r"fill\[grid\]\(\.\.\.\): missing a required argument: 'BLOCK'; "
                       r"parameters: out_ptr, value, n, BLOCK, MODE"):
        fill[(1,)](out, 1, 8)
    with pytest.raises(eggpu.LaunchError, match=r"fill: parameter value: cannot pass a list \(\[1\]\) to a kernel"):
        fill[(1,)](out, [1], 8, BLOCK=8)
    with pytest.raises(eggpu.LaunchError, match=r"fill: parameter n: the int 36893488147419103232 does not fit"):
        fill[(1,)](out, 1, 2**65, BLOCK=8)
    with pytest.raises(eggpu.LaunchError, match=r"fill: parameter out_ptr: a numpy array of complex64 has dtype "
                       r"complex64, which eggpu has no dtype for"):
        fill[(1,)](np.zeros(8, np.complex64), 1, 8, BLOCK=8)
    monkeypatch.setenv("EGGPU_JIT_DEVICE", "tpu")
    with pytest.raises(eggpu.LaunchError, match=r"EGGPU_JIT_DEVICE='tpu' is not one of auto, gpu, cpu, interpret"):
        fill[(1,)](out, 1, 8, BLOCK=8)


def test_jit_helpers_still_inline():
    @eggpu.jit
    def double(x):
        return x * 2

    assert double(21) == 42  # plain Python call

    @eggpu.jit
    def k(out_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, double(offs))

    out = np.zeros(8, np.int32)
    k.specialize(out, 8).interpret(1, out)
    assert out.tolist() == [2 * i for i in range(8)]


def test_calling_a_jit_kernel_as_python_says_how_to_launch_it():
    x = np.zeros(4, np.float32)
    with pytest.raises(eggpu.KernelError, match=r"^add_kernel is an @eggpu.jit function and was called as plain "
                       r"Python \(tl.program_id only has a meaning while a kernel is compiled\); launch it with "
                       r"add_kernel\[grid\]\(\*args\), or call it from a kernel$"):
        add_kernel(x, x, x, 4, 4)


def test_host_helpers():
    assert [eggpu.cdiv(n, 4) for n in (0, 1, 4, 5)] == [0, 1, 1, 2]
    assert [eggpu.next_power_of_2(n) for n in (0, 1, 2, 3, 781, 1024)] == [1, 1, 2, 4, 1024, 1024]


def test_bad_signature_of_a_jit_kernel():
    def typevar_param(x_ptr: tl.Pointer[tl.f32], n: list):
        pass

    j = eggpu.jit(typevar_param)
    with pytest.raises(eggpu.KernelError, match=r"typevar_param: parameter n has annotation list; a kernel launched "
                       r"as typevar_param\[grid\]\(\.\.\.\) takes unannotated parameters"):
        j[(1,)](np.zeros(1, np.float32), 3)


class _DLPackTensor:
    """A CPU tensor seen only through the DLPack protocol (as a torch CPU tensor is)."""

    def __init__(self, arr):
        self._arr = arr

    def __dlpack__(self, **kwargs):
        return self._arr.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._arr.__dlpack_device__()


class _DeviceArray:
    """A device array seen through ``__cuda_array_interface__`` (as CuPy / torch CUDA tensors are)."""

    __cuda_array_interface__ = {"shape": (8,), "typestr": "<f4", "data": (0, False), "version": 3}


def test_dlpack_tensors_share_memory(monkeypatch):
    monkeypatch.setenv("EGGPU_JIT_DEVICE", "interpret")
    x = np.arange(12, dtype=np.float32)
    out = np.zeros(12, np.float32)
    t = _DLPackTensor(out)
    add_kernel[(1,)](_DLPackTensor(x), x, t, 12, BLOCK_SIZE=16)
    np.testing.assert_array_equal(out, 2 * x)  # written through the shared memory
    assert add_kernel.specialize(t, x, out, 12, BLOCK_SIZE=16).arg_types[0] == tl.Pointer[tl.f32]


def test_device_arrays_need_a_gpu(monkeypatch):
    monkeypatch.setenv("EGGPU_JIT_DEVICE", "cpu")
    x = np.zeros(8, np.float32)
    assert add_kernel.specialize(_DeviceArray(), x, x, 8, BLOCK_SIZE=8).arg_types[0] == tl.Pointer[tl.f32]
    with pytest.raises(eggpu.LaunchError, match=r"add_kernel: parameter x_ptr is a device array, but this launch "
                       r"runs on the CPU"):
        add_kernel[(1,)](_DeviceArray(), x, x, 8, BLOCK_SIZE=8)


def test_triton_tools_imports_in_a_fresh_process_before_any_kernel():
    # `from eggpu.tools.tensor_descriptor import TensorDescriptor` right after `import eggpu` (as the
    # tutorials' dual file does) must not depend on eggpu.jit having been touched first
    import subprocess
    import sys
    from pathlib import Path

    code = ("import eggpu as triton\nimport eggpu.language as tl\n"
            "from eggpu.tools.tensor_descriptor import TensorDescriptor\n"
            "from eggpu.kernel_macro.descriptors import TensorDescriptor as T\n"
            "assert TensorDescriptor is T\n"
            "from bench import compat\nprint(compat.load('eggpu').TensorDescriptor.__name__)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         cwd=Path(__file__).resolve().parents[2])
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "TensorDescriptor"
