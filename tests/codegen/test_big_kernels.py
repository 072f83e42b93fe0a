"""Big kernels: run_cpu's stack use, shared memory beyond 48 KiB, compile cost at large blocks."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from eggpu.ir import Builder, f32, i32, pointer, scalar
from eggpu.ir.errors import CodegenError

HERE = Path(__file__).parent


def _module(name: str, filename: str):
    """``tests/codegen/<filename>`` as module ``name``, executed once (pytest runs with
    --import-mode=importlib: no sys.path entry)."""
    import importlib.util

    mod = sys.modules.get(name)
    if mod is None:
        spec = importlib.util.spec_from_file_location(name, HERE / filename)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    return mod


def big_kernels():
    """tests/codegen/big_kernels.py."""
    return _module("big_kernels", "big_kernels.py")


def _small_stack() -> None:  # runs in the child before exec: a 1 MiB main-thread stack
    import resource

    _soft, hard = resource.getrlimit(resource.RLIMIT_STACK)
    limit = 1 << 20
    resource.setrlimit(resource.RLIMIT_STACK, (limit, hard if hard == resource.RLIM_INFINITY or hard > limit
                                                 else limit))


@pytest.mark.skipif(sys.platform == "win32", reason="RLIMIT_STACK is POSIX")
def test_attention_backward_runs_on_cpu_with_a_small_stack():
    """The CTA frame of this kernel is about 1.1 MiB (every spilled lane vector has its own slot;
    2.7 MiB before the lane buffers were pooled): more than the child's 1 MiB main-thread stack,
    so run_cpu must run it on a thread of its own instead of crashing the process with SIGSEGV
    (which it did, checked by forcing the inline call); the results match numpy."""
    code = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(HERE)!r})
        from big_kernels import run_attn_bwd_on_cpu
        print(run_attn_bwd_on_cpu(64, 64))
    """)
    env = dict(os.environ)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600,
                          preexec_fn=_small_stack, env=env)
    assert proc.returncode == 0, f"rc={proc.returncode}\n{proc.stdout}\n{proc.stderr[-3000:]}"
    line = proc.stdout.strip().splitlines()[-1]
    assert line.startswith("ok stack_bytes=")
    assert int(line.split("=")[1]) > 1 << 20  # the bound says it does not fit the main thread


def _loads_kernel(n_loads: int):
    """``y = x[0:128] + x[128:256] + ...`` with ``n_loads`` masked block loads."""
    b = Builder("many_loads", [("x", pointer(f32)), ("y", pointer(f32)), ("n", scalar(i32))])
    offs = b.op("arange", start=0, end=128)
    acc = None
    for j in range(n_loads):
        o = b.op("add", offs, b.op("splat", b.const(128 * j, i32), shape=(128,)))
        mask = b.op("lt", o, b.op("splat", b.param("n"), shape=(128,)))
        v = b.op("load", b.op("addptr", b.op("splat", b.param("x"), shape=(128,)), o), mask)
        acc = v if acc is None else b.op("add", acc, v)
    b.effect("store", b.op("addptr", b.op("splat", b.param("y"), shape=(128,)), offs), acc)
    return b.finish()


def test_lane_buffers_are_reused_across_accesses():
    """The stack buffers of the lane loops come from a pool: the frame does not grow with the
    number of memory accesses (it did: two fresh buffers per access)."""
    from eggpu.codegen.lowering import lower_function

    counts = []
    for n in (1, 8):
        _m, lm = lower_function(_loads_kernel(n), "host", 4, verify_llvm=False)
        counts.append(lm.llvm_ir.count(" alloca "))
    assert counts[0] == counts[1]


def test_many_loads_run_on_cpu():
    import numpy as np

    from eggpu.codegen import build_host

    hk = build_host(_loads_kernel(8))
    for n in (1, 1000, 1001):
        x = np.arange(1024, dtype=np.float32)
        y = np.zeros(128, np.float32)
        hk.run(1, x, y, n)
        xm = np.where(np.arange(1024) < n, x, 0).reshape(8, 128)
        np.testing.assert_array_equal(y, xm.sum(0, dtype=np.float32))


def test_host_stack_budget_is_checked_before_running(monkeypatch):
    from eggpu.codegen import build_host
    from eggpu.codegen import host as host_mod

    monkeypatch.setattr(host_mod, "HOST_STACK_LIMIT", 1000)
    with pytest.raises(CodegenError, match=r"many_loads: the CPU build of this kernel may need \d+ bytes of "
                                           r"stack, more than the 1000 bytes run_cpu allows"):
        build_host(_loads_kernel(1))


def test_shared_memory_is_not_on_the_stack():
    """The host's shared-memory buffer is allocated by the caller (it used to be an alloca of
    the grid function, so stack use grew with the kernel's shared memory)."""
    from eggpu.codegen.lowering import lower_function
    bk = big_kernels()
    args = bk.attn_bwd_inputs(64, 16)
    fn = bk.attn_bwd.specialize(*args, BLOCK=32, HEAD=16).ir()
    _m, lm = lower_function(fn, "host", 4, verify_llvm=False)
    assert lm.shared_bytes > 0
    assert f"alloca [{lm.shared_bytes} x i8]" not in lm.llvm_ir


# ------------------------------------------------------------------ dynamic shared memory


@pytest.fixture(scope="module")
def wide_dot_kernel():
    bk = big_kernels()
    return bk, bk.wide_dot.specialize(*bk.wide_dot_inputs(), BM=16, BN=32, BK=512)


@pytest.fixture(scope="module")
def wide_dot_sm90(wide_dot_kernel):
    """The 96 KiB dot compiled for sm_90 (unoptimized: the optimizer is not what is tested)."""
    import eggpu

    return eggpu.compile(wide_dot_kernel[1], target="sm_90", optimize=False, cache=False)


def test_dot_needing_96_kib_of_shared_memory_compiles_for_sm_90_and_runs_on_cpu(wide_dot_kernel, wide_dot_sm90):
    import numpy as np

    from eggpu.codegen.toolchain import find_ptxas
    from eggpu.ir.errors import ToolchainError

    bk = wide_dot_kernel[0]
    ck = wide_dot_sm90
    assert ck.shared_bytes == ck.dynamic_shared_bytes == 4 * 512 * (16 + 32) == 98304
    assert ck.report["dynamic_shared_bytes"] == 98304
    assert ".extern .shared .align 16 .b8 __eggpu_smem[];" in ck.ptx
    try:
        find_ptxas()
    except ToolchainError:
        pass
    else:  # ptxas accepted it (the pipeline runs it) and sees no static shared memory
        assert ck.report["ptxas"]["shared_bytes"] == 0
    args = bk.wide_dot_inputs()
    ck.run_cpu((2,), *args)
    a, b, c = args
    want = np.stack([a[:16] @ b, a[16:] @ b]).reshape(32, 32)
    np.testing.assert_allclose(c, want, rtol=1e-4, atol=1e-4)


def test_static_shared_memory_is_unchanged_below_48_kib():
    from eggpu.codegen import compile_ptx_module

    bk = big_kernels()
    fn = bk.wide_dot.specialize(*bk.wide_dot_inputs(bk=64), BM=16, BN=32, BK=64).ir()
    c = compile_ptx_module(fn, "sm_75")
    assert c.lowered.shared_bytes == 4 * 64 * 48 and c.lowered.dynamic_shared_bytes == 0
    assert ".shared .align 16 .b8 __eggpu_smem[12288];" in c.ptx


@pytest.mark.parametrize("target, limit", [("sm_75", 65536), ("sm_80", 166912), ("sm_86", 101376),
                                           ("sm_89", 101376), ("sm_90", 232448), ("sm_90a", 232448)])
def test_shared_memory_limits_per_target(target, limit):
    from eggpu.codegen.target import get_target

    assert get_target(target).max_shared_bytes == limit
    assert get_target("host").max_shared_bytes is None


def test_too_much_shared_memory_is_a_compile_error_naming_kernel_bytes_and_limit(wide_dot_kernel):
    import eggpu

    _bk, kern = wide_dot_kernel
    with pytest.raises(CodegenError, match=r"^wide_dot: needs 98304 bytes of shared memory, more than the 65536 "
                                           r"bytes a CTA may use on sm_75; use smaller blocks"):
        eggpu.compile(kern, target="sm_75", optimize=False, cache=False)
    assert issubclass(CodegenError, eggpu.EggpuError)


class _FakeDriver:
    """The part of cuda-python's driver API CudaRuntime.launch uses, recording the calls."""

    class CUdevice_attribute:  # noqa: N801 - cuda-python's names
        CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = "optin"

    class CUfunction_attribute:  # noqa: N801
        CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = "max_dynamic"

    def __init__(self, optin: int):
        self.optin = optin
        self.calls: list[tuple] = []

    def cuModuleLoadData(self, image):  # noqa: N802
        return 0, "module"

    def cuModuleGetFunction(self, module, name):  # noqa: N802
        return 0, f"fn:{name.decode()}"

    def cuDeviceGetAttribute(self, attr, dev):  # noqa: N802
        self.calls.append(("cuDeviceGetAttribute", attr, dev))
        return 0, self.optin

    def cuFuncSetAttribute(self, fn, attr, value):  # noqa: N802
        self.calls.append(("cuFuncSetAttribute", fn, attr, value))
        return (0,)

    def cuLaunchKernel(self, fn, gx, gy, gz, bx, by, bz, shared, stream, params, extra):  # noqa: N802
        self.calls.append(("cuLaunchKernel", fn, (gx, gy, gz), (bx, by, bz), shared))
        return (0,)

    class CUpointer_attribute:  # noqa: N801
        CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = "ordinal"

    def cuPointerGetAttribute(self, attr, address):  # noqa: N802 - which device an array is on: this one
        return 0, 0

    def cuCtxSynchronize(self):  # noqa: N802
        return (0,)

    def cuCtxGetCurrent(self):  # noqa: N802
        return 0, 1  # device 0's context (handle 1, see _fake_runtime) is current


class _DeviceArray:
    def __init__(self, shape):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": "<f4", "data": (1 << 20, False),
                                         "strides": None, "version": 3}


def _fake_runtime(monkeypatch, optin: int):
    from eggpu.runtime import CudaRuntime

    rt = object.__new__(CudaRuntime)
    rt.cu = _FakeDriver(optin)
    rt.device = "dev0"
    rt.device_count = 1
    rt._contexts = {0: ("dev0", "ctx0", 1)}
    rt._modules = {}
    rt._dynamic_opt_in = {}
    monkeypatch.setattr(CudaRuntime, "get", classmethod(lambda cls: rt))
    return rt


def test_launch_opts_in_to_dynamic_shared_memory_and_passes_its_size(monkeypatch, wide_dot_sm90):
    ck = wide_dot_sm90
    rt = _fake_runtime(monkeypatch, optin=232448)
    args = [_DeviceArray((32, 512)), _DeviceArray((512, 32)), _DeviceArray((32, 32))]
    ck.launch((2,), *args)
    ck.launch((2,), *args)
    fn = "fn:wide_dot_entry_point"
    assert rt.cu.calls == [
        ("cuDeviceGetAttribute", "optin", "dev0"),
        ("cuFuncSetAttribute", fn, "max_dynamic", 98304),  # once per function
        ("cuLaunchKernel", fn, (2, 1, 1), (128, 1, 1), 98304),
        ("cuLaunchKernel", fn, (2, 1, 1), (128, 1, 1), 98304),
    ]


def test_launch_refuses_more_shared_memory_than_the_device_allows(monkeypatch, wide_dot_sm90):
    from eggpu.ir.errors import LaunchError

    ck = wide_dot_sm90
    rt = _fake_runtime(monkeypatch, optin=65536)
    args = [_DeviceArray((32, 512)), _DeviceArray((512, 32)), _DeviceArray((32, 32))]
    with pytest.raises(LaunchError, match=r"^wide_dot_entry_point: needs 98304 bytes of shared memory, but this "
                                          r"device allows at most 65536 per block"):
        ck.launch((2,), *args)
    assert [c[0] for c in rt.cu.calls] == ["cuDeviceGetAttribute"]


def test_static_shared_memory_launch_passes_zero(monkeypatch):
    from eggpu.runtime import CheckedArg, Param

    rt = _fake_runtime(monkeypatch, optin=0)
    p = Param("x", pointer(f32))
    rt.launch("ptx", "k_entry_point", (1, 1, 1), 64, [CheckedArg(p, "device", 4096)])
    assert rt.cu.calls == [("cuLaunchKernel", "fn:k_entry_point", (1, 1, 1), (64, 1, 1), 0)]


# ------------------------------------------------------------------ the refused kernels, run on the CPU


def test_transposition_needing_128_kib_compiles_for_sm_90_and_runs_on_cpu():
    """A 256x128 f32 tile transposed through shared memory (128 KiB, refused by the old 48 KiB
    static cap): dynamic shared memory on sm_90; run_cpu equals numpy's transpose exactly."""
    import numpy as np

    import eggpu
    import eggpu.language as tl

    @eggpu.jit
    def transpose(x_ptr, y_ptr, R: tl.constexpr, C: tl.constexpr):
        r, c = tl.arange(0, R), tl.arange(0, C)
        x = tl.load(x_ptr + r[:, None] * C + c[None, :])
        tl.store(y_ptr + c[:, None] * R + r[None, :], tl.trans(x))

    x = np.random.default_rng(3).standard_normal((256, 128)).astype(np.float32)
    y = np.zeros((128, 256), np.float32)
    ck = eggpu.compile(transpose.specialize(x, y, R=256, C=128), target="sm_90", cache=False)
    assert ck.dynamic_shared_bytes >= 128 * 1024
    ck.run_cpu(1, x, y)
    np.testing.assert_array_equal(y, x.T)


def test_f16_dot_needing_64_kib_runs_on_cpu_like_numpy():
    """128x128x128 f16 tensor-core operands (64 KiB of shared memory, dynamic on sm_90): the
    host build emulating sm_90 plans the same and matches numpy on a ragged 200x150x170."""
    import numpy as np

    from eggpu.codegen import build_host

    spec = importlib_test_mma()
    M, N, K = 200, 150, 170
    fn = spec._kernel_ir("f16", (128, 128, 128), M, N, K)
    hk = build_host(fn, num_warps=8, sm=90)
    assert hk.lowered.dots[0]["strategy"] == "mma_sync" and hk.lowered.shared_bytes == 65536
    a, b, c = spec._inputs("f16", M, N, K, seed=5)
    hk.run((2, 2), a, b, c, M, N, K)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-5, atol=1e-5 * np.sqrt(K))


def importlib_test_mma():
    """tests/codegen/test_mma.py as a module (its ``mm`` kernel and input helpers)."""
    return _module("_test_mma_helpers", "test_mma.py")
