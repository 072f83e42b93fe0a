"""The lean launch path (issue 16, item 4): ``ck.launch`` through a per-kernel LaunchPlan and the
``@eggpu.jit`` launch cache, checked without a GPU through eggpu.testing.FakeCudaDriver.

The plan must accept exactly what the general path (``ck._launch_checked``) accepts, pack the
same bits, and report every error with the general path's words; the jit launch cache must pick
the specialization the general path would pick."""

from __future__ import annotations

import pickle
import threading

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import eggpu
import eggpu.language as tl
from eggpu.ir.errors import LaunchError
from eggpu.testing import FakeCudaDriver, fake_cuda


@eggpu.kernel
def many_args(x_ptr: tl.Pointer[tl.f32], out_ptr: tl.Pointer[tl.f32], a: tl.i8, b: tl.i16, c: tl.i64, d: tl.u64,
              e: tl.f16, f: tl.bf16, g: tl.f64, h: tl.bool, u: tl.u8, w: tl.f32, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < c
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    s = a.to(tl.f32) + b.to(tl.f32) + d.to(tl.f32) + e.to(tl.f32) + f.to(tl.f32) + g.to(tl.f32) + h.to(tl.f32)
    tl.store(out_ptr + offs, x + s + u.to(tl.f32) + w, mask=m)


@eggpu.jit
def jit_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


class Dtype:
    """A dtype object printing as PyTorch's do."""

    def __init__(self, name: str):
        self.name = name

    def __str__(self) -> str:
        return f"torch.{self.name}"


class TorchLike:
    """A CUDA tensor as PyTorch presents one (no ``__cuda_array_interface__``: ``data_ptr()`` only)."""

    def __init__(self, address: int, n: int = 8, dtype: str = "float32", contiguous: bool = True,
                 is_cuda: bool = True):
        self.address, self.shape, self.dtype = address, (n,), Dtype(dtype)
        self.is_cuda, self.contiguous, self.data_ptr_calls = is_cuda, contiguous, 0

    def data_ptr(self) -> int:
        self.data_ptr_calls += 1
        return self.address

    def is_contiguous(self) -> bool:
        return self.contiguous

    def stride(self) -> tuple[int, ...]:
        return (1,) if self.contiguous else (2,)


class CupyLike:
    """A device array exposing ``__cuda_array_interface__`` (CuPy's protocol)."""

    def __init__(self, address: int, n: int = 8, typestr: str = "<f4", strides=None):
        self.__cuda_array_interface__ = {"shape": (n,), "typestr": typestr, "data": (address, False),
                                         "strides": strides, "version": 3}


@pytest.fixture(scope="module")
def many(tmp_path_factory):
    return eggpu.compile(many_args.Kernel(256), optimize=False, cache=tmp_path_factory.mktemp("many"),
                         specialize={"c": "div16", "d": "eq1", "x_ptr": "align16"})


@pytest.fixture
def cu():
    with fake_cuda() as driver:
        yield driver


def good_args():
    return [TorchLike(0x10000), CupyLike(0x20000), -5, 300, 1024, 1, 1.5, 2.25, -3.125, True, 200, 0.1]


def expected_bits(args):
    """The parameter values as the PTX reads them (pointers, ints as unsigned bits, f16/bf16 bits)."""
    import ml_dtypes

    x, out, a, b, c, d, e, f, g, h, u, w = args
    return (x.address, out.__cuda_array_interface__["data"][0], a & 0xFF, b & 0xFFFF, c, d,
            int(np.float16(e).view(np.uint16)), int(np.array(f, ml_dtypes.bfloat16).view(np.uint16)), g,
            int(h), u, float(np.float32(w)))


# ------------------------------------------------------------------ packing


def test_plan_packs_every_scalar_dtype_like_the_general_path(many, cu):
    args = good_args()
    many.launch((3,), *args)
    many._launch_checked((3,), args)
    fast, general = cu.launches
    assert fast.args == general.args == expected_bits(args)
    assert fast.grid == (3, 1, 1) and fast.block == (many.num_threads, 1, 1) and fast.shared == 0
    assert "cuMemAlloc" not in cu.calls  # device buffers are passed by address, never copied


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(a=st.integers(-128, 127), b=st.integers(-(2**15), 2**15 - 1), c=st.integers(0, 2**40).map(lambda v: v * 16),
       e=st.floats(allow_nan=False, width=16), f=st.floats(-1e30, 1e30), g=st.floats(allow_nan=False),
       h=st.booleans(), u=st.integers(0, 255), w=st.one_of(st.floats(-3e38, 3e38), st.integers(-(2**62), 2**62)))
def test_plan_and_general_path_agree_on_values(many, a, b, c, e, f, g, h, u, w):
    args = [TorchLike(0x10000), CupyLike(0x20000), a, b, c, 1, e, f, g, h, u, w]
    with fake_cuda() as driver:
        many.launch(1, *args)
        many._launch_checked(1, args)
    fast, general = driver.launches
    assert fast.args == general.args
    assert fast.args[2:6] == (a & 0xFF, b & 0xFFFF, c, 1)


def test_numpy_scalars_and_zero_d_arrays_pack_like_python_numbers(many, cu):
    args = good_args()
    args[2], args[3], args[4], args[11] = np.int8(-5), np.array(300, np.int64), np.uint32(1024), np.float64(0.1)
    many.launch(1, *args)
    assert cu.launches[0].args == expected_bits(good_args())


# ------------------------------------------------------------------ the same errors as the general path


def _bad_launches():
    def with_(i, v, grid=(2,)):
        args = good_args()
        args[i] = v
        return grid, args

    return [
        ((2,), good_args()[:11]),
        with_(0, TorchLike(0x10000, dtype="float64")),
        with_(0, TorchLike(0x10000, contiguous=False)),
        with_(0, TorchLike(0x10000, is_cuda=False)),
        with_(1, CupyLike(0x20000, typestr="<f8")),
        with_(1, CupyLike(0x20000, strides=(8,))),
        with_(1, np.zeros(4, np.float32)[::2]),
        with_(1, _readonly()),
        with_(0, TorchLike(0x10004)),           # breaks align16 (fact and assumption)
        with_(1, CupyLike(0x20008)),            # breaks the PTX's align16 assumption
        with_(2, 128),
        with_(2, 1.0),
        with_(4, 1000),                         # breaks div16
        with_(5, 2),                            # breaks eq1
        with_(5, -1),
        with_(9, 2),
        with_(11, 1e39),
        with_(6, 1e5),
        with_(0, [1.0, 2.0]),
        ((2, -1), good_args()),
        ((1, 2, 3, 4), good_args()),
        (2.0, good_args()),
        ((2**31,), good_args()),
        ((1, 65536), good_args()),
    ]


def _readonly():
    a = np.zeros(4, np.float32)
    a.setflags(write=False)
    return a


@pytest.mark.parametrize("case", range(len(_bad_launches())))
def test_plan_reports_the_general_paths_error_and_launches_nothing(many, cu, case):
    grid, args = _bad_launches()[case]
    with pytest.raises(LaunchError) as fast:
        many.launch(grid, *args)
    with pytest.raises(LaunchError) as general:
        many._launch_checked(grid, args)
    assert str(fast.value) == str(general.value)
    assert str(fast.value).startswith("many_args")
    assert cu.launches == [] and "cuMemAlloc" not in cu.calls


def test_error_messages_name_argument_and_fact(many, cu):
    args = good_args()
    args[4] = 1000
    with pytest.raises(LaunchError, match=r"^many_args: argument 'c' must be divisible by 16 \(the kernel was compiled "
                                          r"with the specialization fact div16\), got 1000"):
        many.launch(1, *args)
    args = good_args()
    args[0] = TorchLike(0x10000, dtype="float64")
    with pytest.raises(LaunchError, match=r"^many_args: parameter 'x_ptr' \(ptr<f32>\) expects an array of f32, got "
                                          r"a device tensor of f64 \(torch\.float64\)$"):
        many.launch(1, *args)
    args[0] = TorchLike(0x10000, contiguous=False)
    with pytest.raises(LaunchError, match=r"^many_args: parameter 'x_ptr' needs a C-contiguous array \(got strides "
                                          r"\(8,\) for shape \(8,\)\); pass a contiguous copy"):
        many.launch(1, *args)


# ------------------------------------------------------------------ host arrays, grids, synchronization


def test_host_arrays_are_copied_in_and_out(many):
    def kernel(launch, driver):  # emulate the kernel: out = x (through device memory)
        x, out = launch.args[0], launch.args[1]
        driver.memory(out, np.float32, 5)[:] = driver.memory(x, np.float32, 5)

    with fake_cuda(FakeCudaDriver(on_launch=kernel)) as cu:
        for n in (1, 1000, 1001):
            x = np.arange(n, dtype=np.float32) + 0.5
            out = np.zeros(n, np.float32)
            args = good_args()
            args[0], args[1] = x, out
            many.launch(1, *args)
            np.testing.assert_array_equal(out[:5], x[:5])
            assert not out[5:].any()
        assert cu.calls.count("cuMemAlloc") == cu.calls.count("cuMemFree") == 6


def test_zero_grid_launches_nothing_and_synchronize_is_honoured(many, cu):
    many.launch((4, 0), *good_args())
    assert cu.launches == []
    many.launch(4, *good_args(), synchronize=False)
    assert cu.calls[-1] != "cuCtxSynchronize"
    many.launch([4, 2], *good_args())
    assert cu.calls[-1] == "cuCtxSynchronize" and cu.launches[-1].grid == (4, 2, 1)


def test_launch_failure_is_a_launch_error(many):
    with fake_cuda(FakeCudaDriver(fail={"cuLaunchKernel": 701})):
        with pytest.raises(LaunchError, match=r"^cuLaunchKernel failed: CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES \(701\)$"):
            many.launch(1, *good_args())
    with fake_cuda(FakeCudaDriver(fail={"cuCtxSynchronize": 999})) as cu:
        many.launch(1, *good_args(), synchronize=False)
        with pytest.raises(LaunchError, match=r"^cuCtxSynchronize failed: CUDA_ERROR_UNKNOWN \(999\)$"):
            many.launch(1, *good_args())
        assert len(cu.launches) == 2


def test_plan_follows_the_runtime_it_runs_on(many):
    with fake_cuda() as first:
        many.launch(1, *good_args())
    with fake_cuda() as second:
        many.launch(1, *good_args())
    assert len(first.launches) == len(second.launches) == 1
    assert second.calls.count("cuModuleLoadData") == 1


def test_compiled_kernel_with_a_plan_pickles(many, cu):
    many.launch(1, *good_args())
    again = pickle.loads(pickle.dumps(many))
    assert again._plan is None and again.ptx == many.ptx
    again.launch(1, *good_args())
    assert cu.launches[0].args == cu.launches[1].args


def test_concurrent_launches_keep_their_own_arguments(many, cu):
    def work(k):
        for i in range(20):
            args = good_args()
            args[4] = 16 * (100 * k + i)
            many.launch(1, *args, synchronize=False)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    got = sorted(launch.args[4] for launch in cu.launches)
    assert got == sorted(16 * (100 * k + i) for k in range(4) for i in range(20))


# ------------------------------------------------------------------ the driver failing to start


def test_cuinit_failure_is_a_clear_launch_error(many, monkeypatch):
    from eggpu import runtime

    monkeypatch.setattr(runtime.CudaRuntime, "_instance", None)
    monkeypatch.setattr(runtime, "_import_driver", lambda: FakeCudaDriver(fail={"cuInit": 100}))
    with pytest.raises(LaunchError, match=r"^cuInit failed: CUDA_ERROR_NO_DEVICE \(100\); no usable CUDA GPU or "
                                          r"driver \(use ck\.run_cpu\(\.\.\.\) to run the same lowering on the CPU\)$"):
        many.launch(1, *good_args())
    assert not runtime.gpu_available()


def test_a_driver_that_raises_is_a_clear_launch_error(monkeypatch):
    from eggpu import runtime

    class Broken(FakeCudaDriver):
        def cuInit(self, flags):  # noqa: N802 - cuda-python's name
            raise RuntimeError("Failed to dlopen libcuda.so.1")

    with pytest.raises(LaunchError, match=r"^the CUDA driver cannot be used: RuntimeError: Failed to dlopen "
                                          r"libcuda\.so\.1 \(is an NVIDIA driver installed\?"):
        runtime.CudaRuntime(Broken())
    with pytest.raises(LaunchError, match=r"^no CUDA device found"):
        runtime.CudaRuntime(FakeCudaDriver(devices=0))


def test_missing_function_in_the_module_is_a_launch_error(many, cu, monkeypatch):
    monkeypatch.setattr(many, "_plan", None)
    monkeypatch.setattr(many, "entry_point", "nope_entry_point")
    with pytest.raises(LaunchError, match=r"^cuModuleGetFunction failed: CUDA_ERROR_NOT_FOUND \(500\)$"):
        many.launch(1, *good_args())


# ------------------------------------------------------------------ @eggpu.jit launch cache


@pytest.fixture
def fast_compile(monkeypatch):
    """Compile jit specializations without the optimizer (the launch path is under test) and count them."""
    from eggpu.kernel_macro import hooks

    compiled = []

    def compile_hook(kernel, **options):
        compiled.append(options)
        return eggpu.compile(kernel, optimize=False, **options)

    monkeypatch.setattr(hooks, "COMPILE_HOOK", compile_hook)
    return compiled


@pytest.mark.parametrize("n", [1, 1000, 1001])
def test_jit_cpu_launches_hit_the_cache_and_match_numpy(fast_compile, monkeypatch, n):
    monkeypatch.setenv("EGGPU_JIT_DEVICE", "cpu")
    fn = eggpu.jit(jit_add.fn)
    rng = np.random.default_rng(n)
    x, y, out = np.empty(n, np.float32), np.empty(n, np.float32), np.empty(n, np.float32)
    for _ in range(3):  # the same buffers (so the same alignment facts), new values
        x[:], y[:], out[:] = rng.standard_normal(n), rng.standard_normal(n), 0.0
        ck = fn[(eggpu.cdiv(n, 256),)](x, y, out, n, BLOCK=256)
        np.testing.assert_allclose(out, x + y, rtol=1e-6)
    assert len(fast_compile) == 1 and len(fn._fast) == 1
    assert ("eq1" in ck.report["specialization"].get("n", ())) == (n == 1)


def test_jit_gpu_launches_pass_tensors_by_address(fast_compile, cu):
    fn = eggpu.jit(jit_add.fn)
    x, y, out = TorchLike(0x100000, 4096), TorchLike(0x200000, 4096), TorchLike(0x300000, 4096)
    first = fn[(16,)](x, y, out, 4096, BLOCK=256)
    second = fn[lambda meta: (eggpu.cdiv(meta["n"], meta["BLOCK"]),)](x, y, out, 4096, BLOCK=256)
    assert first is second and len(fast_compile) == 1
    assert first.report["specialization"] == {"n": ["div16"], "out_ptr": ["align16"], "x_ptr": ["align16"],
                                              "y_ptr": ["align16"], "*": ["offsets_i32=256"]}
    assert [launch.args for launch in cu.launches] == [(0x100000, 0x200000, 0x300000, 4096)] * 2
    assert [launch.grid for launch in cu.launches] == [(16, 1, 1)] * 2
    cai = [CupyLike(0x100000, 4096), CupyLike(0x200000, 4096), CupyLike(0x300000, 4096)]
    assert fn[(16,)](*cai, 4096, BLOCK=256) is first  # same dtypes and facts: same specialization
    assert cu.launches[-1].args == (0x100000, 0x200000, 0x300000, 4096)


def test_jit_cache_separates_what_the_specialization_depends_on(fast_compile, cu):
    fn = eggpu.jit(jit_add.fn)
    t = [TorchLike(0x100000), TorchLike(0x200000), TorchLike(0x300000)]
    base = fn[(4,)](*t, 4096, BLOCK=256)
    assert fn[(4,)](*t, 4008, BLOCK=256) is not base  # not divisible by 16
    assert "n" not in fn[(4,)](*t, 4001, BLOCK=256).report["specialization"]
    assert fn[(4,)](*t, 1, BLOCK=256).report["specialization"]["n"] == ["eq1"]
    # a misaligned tensor gets code compiled without align16 on it, whose PTX still assumes it (codegen's
    # vector accesses): the launch check refuses it, on the cached path as on the first launch
    for _ in range(2):
        with pytest.raises(LaunchError, match=r"^jit_add: argument 'x_ptr' must be 16-byte aligned \(the PTX was "
                                              r"specialized on it\), got address 0x100004"):
            fn[(4,)](TorchLike(0x100004), *t[1:], 4096, BLOCK=256)
    big = fn[(2**23 + 1,)](*t, 4096, BLOCK=256)  # 2**23 + 1 programs of 256 overflow i32 offsets
    assert "*" not in big.report["specialization"]
    assert fn[(4,)](*t, 4096, BLOCK=128) is not base
    assert fn[(4,)](*t, 4096, BLOCK=256, num_warps=2) is not base
    assert fn[(4,)](*t, 2**40, BLOCK=256).arg_types[3].dtype.name == "i64"
    assert fn[(4,)](*t, 4096, BLOCK=256) is base
    assert len(fast_compile) == 8
    # numpy scalars: their dtype, and facts on integer ones
    i16 = fn[(4,)](*t, np.int16(4096), BLOCK=256)
    assert i16.arg_types[3].dtype.name == "i16" and i16.report["specialization"]["n"] == ["div16"]
    assert fn[(4,)](*t, np.int16(4000 + 8), BLOCK=256) is not i16
    assert fn[(4,)](*t, np.int16(32), BLOCK=256) is i16 and len(fast_compile) == 10
    assert fn[(4,)](*t, np.uint8(1), BLOCK=256).report["specialization"]["n"] == ["eq1"]


def test_jit_cache_keeps_bools_and_ints_apart(fast_compile, monkeypatch):
    monkeypatch.setenv("EGGPU_JIT_DEVICE", "cpu")

    @eggpu.jit
    def flagged(out_ptr, flag, SCALE: tl.constexpr):
        v = flag.to(tl.int32)
        if SCALE:
            v = v + 1
        tl.store(out_ptr + tl.arange(0, 16), tl.zeros((16,), tl.int32) + v)

    out = np.zeros(16, np.int32)
    a = flagged[(1,)](out, 1, SCALE=1)
    b = flagged[(1,)](out, True, SCALE=1)
    c = flagged[(1,)](out, 1, SCALE=True)
    assert len({id(a), id(b), id(c)}) == 3
    assert a.arg_types[1].dtype.name == "i32" and b.arg_types[1].dtype.name == "bool"
    assert "true" in c.id and "__1" in a.id


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.sampled_from([1, 2, 16, 17, 32, 4096, 2**31 - 1, 2**31, 2**63, np.int64(16), np.int8(1), np.uint16(7),
                          np.float32(2.5), True, 2.5]),
       offset=st.sampled_from([0, 4, 16]), programs=st.sampled_from([1, 3, 2**23 + 1]))
def test_jit_cache_picks_what_the_general_path_picks(fast_compile, n, offset, programs):
    t = [TorchLike(0x100000 + offset), TorchLike(0x200000), TorchLike(0x300000)]

    def outcome(launch):
        try:
            return launch()
        except LaunchError as e:
            return str(e)

    with fake_cuda() as cu:
        fast = outcome(lambda: jit_add[(programs,)](*t, n, BLOCK=256))
        again = outcome(lambda: jit_add[(programs,)](*t, n, BLOCK=256))
        general = outcome(lambda: jit_add._launch_general((programs,), (*t, n), {"BLOCK": 256}))
    assert fast is again is general or fast == again == general
    assert len(cu.launches) == (0 if isinstance(fast, str) else 3)


def test_jit_errors_stay_the_same_on_the_cached_path(fast_compile, cu, monkeypatch):
    fn = eggpu.jit(jit_add.fn)
    t = [TorchLike(0x100000), TorchLike(0x200000), TorchLike(0x300000)]
    fn[(4,)](*t, 4096, BLOCK=256)
    with pytest.raises(LaunchError, match=r"^jit_add\[grid\]\(\.\.\.\): missing a required argument: 'n'"):
        fn[(4,)](*t, BLOCK=256)
    with pytest.raises(LaunchError, match=r"^jit_add\[grid\]\(\.\.\.\): multiple values for argument 'n'"):
        fn[(4,)](*t, 4096, n=4096, BLOCK=256)
    with pytest.raises(LaunchError, match=r"^jit_add: grid must be an int or a tuple of 1 to 3 ints, got 4\.0$"):
        fn[4.0](*t, 4096, BLOCK=256)
    with pytest.raises(LaunchError, match=r"^jit_add: parameter 'x_ptr' needs a C-contiguous array"):
        fn[(4,)](TorchLike(0x100000, contiguous=False), *t[1:], 4096, BLOCK=256)
    monkeypatch.setenv("EGGPU_JIT_DEVICE", "tpu")
    with pytest.raises(LaunchError, match=r"^EGGPU_JIT_DEVICE='tpu' is not one of auto, gpu, cpu, interpret$"):
        fn[(4,)](*t, 4096, BLOCK=256)
    monkeypatch.setenv("EGGPU_JIT_DEVICE", "cpu")
    with pytest.raises(LaunchError, match=r"^jit_add: parameter x_ptr is a device array, but this launch runs on "
                                          r"the CPU"):
        fn[(4,)](*t, 4096, BLOCK=256)


def test_unloadable_cuda_python_is_a_clear_launch_error(monkeypatch):
    import sys
    import types

    from eggpu import runtime

    class Unloadable(types.ModuleType):
        def __getattr__(self, name):
            raise RuntimeError("undefined symbol: cuGetProcAddress_v2")

    cuda = types.ModuleType("cuda")
    cuda.__path__ = []
    monkeypatch.setitem(sys.modules, "cuda", cuda)
    monkeypatch.setitem(sys.modules, "cuda.bindings", Unloadable("cuda.bindings"))
    with pytest.raises(LaunchError, match=r"^cuda-python cannot be loaded: RuntimeError: undefined symbol: "
                                          r"cuGetProcAddress_v2$"):
        runtime.CudaRuntime()
    monkeypatch.setitem(sys.modules, "cuda.bindings", None)  # not installed
    monkeypatch.delitem(sys.modules, "cuda")
    monkeypatch.setitem(sys.modules, "cuda", None)
    with pytest.raises(LaunchError, match=r"^launching on a GPU needs cuda-python: pip install 'eggpu\[cuda\]'$"):
        runtime.CudaRuntime()


def test_jit_refuses_a_tensor_of_a_dtype_eggpu_lacks(fast_compile, cu):
    fn = eggpu.jit(jit_add.fn)
    t = [TorchLike(0x100000, dtype="complex64"), TorchLike(0x200000), TorchLike(0x300000)]
    with pytest.raises(LaunchError, match=r"^jit_add: parameter x_ptr: a \S*TorchLike has "
                                          r"dtype torch\.complex64, which eggpu has no dtype for$"):
        fn[(4,)](*t, 4096, BLOCK=256)
    assert fast_compile == [] and cu.launches == []


class GradTensor(TorchLike):
    """A CUDA tensor that requires grad: PyTorch refuses its ``__cuda_array_interface__``."""

    @property
    def __cuda_array_interface__(self):
        raise RuntimeError("Can't get __cuda_array_interface__ on Variable that requires grad.")


def test_tensors_are_read_through_data_ptr_on_every_path(many, fast_compile, cu):
    args = good_args()
    args[0] = GradTensor(0x10000)
    many.launch(1, *args)  # the plan
    args[1] = np.zeros(8, np.float32)
    many.launch(1, *args)  # the general path (a host array)
    assert [launch.args[0] for launch in cu.launches] == [0x10000, 0x10000]
    args[0] = GradTensor(0x10008)  # misaligned: the general path's error, not torch's
    with pytest.raises(LaunchError, match=r"^many_args: argument 'x_ptr' must be 16-byte aligned"):
        many.launch(1, *args)
    t = [GradTensor(0x100000), GradTensor(0x200000), GradTensor(0x300000)]
    ck = jit_add[(4,)](*t, 4096, BLOCK=256)
    assert ck.report["specialization"]["x_ptr"] == ["align16"]
    assert cu.launches[-1].args == (0x100000, 0x200000, 0x300000, 4096)
