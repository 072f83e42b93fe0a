"""Launch arguments checking and the CUDA driver runtime (cuda-python).

:func:`check_args` validates launch arguments against a kernel's parameters before anything
touches a device (count, pointer dtypes, contiguity, scalar kinds and ranges: the rules and
wording of :mod:`eggpu.ir.launch_args`, shared with the interpreter and the CPU build), so it is
tested without a GPU. :class:`CudaRuntime` loads PTX with ``cuModuleLoadData`` (the driver
JIT-compiles it), launches with the kernel's ``.reqntid`` block size, and copies numpy arrays in
and out; device arrays (CuPy, PyTorch: ``__cuda_array_interface__``, or ``data_ptr()`` with
``is_cuda``) are passed without copies.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from eggpu.ir.dtypes import DType
from eggpu.ir.errors import LaunchError
from eggpu.ir.record import Frozen, Record
from eggpu.ir.types import BlockType

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing on a cache hit
if TYPE_CHECKING:
    from typing import Any

    import numpy as np

# numpy and eggpu.ir.launch_args (which needs numpy) load on first use: a cache hit in a fresh
# process imports this module (for Param) but never checks or launches anything.


class Param(Frozen):
    """A launch parameter: its name and IR type (``ptr<f32>`` or a scalar dtype)."""

    _fields = ("name", "type")
    name: str
    type: BlockType

    def __init__(self, name: str, type: BlockType):
        self._assign(name, type)


class CheckedArg(Record):
    """One validated argument: kind 'host' (numpy array), 'device' (pointer int) or 'scalar';
    ``stream``: the raw stream a device array's ``__cuda_array_interface__`` says its producer
    wrote it on (None: nothing to wait for, see :func:`cai_stream`)."""

    _fields = ("param", "kind", "value", "stream")
    param: Param
    kind: str
    value: Any
    stream: int | None

    def __init__(self, param: Param, kind: str, value: Any, stream: int | None = None):
        self._assign(param, kind, value, stream)


def normalize_grid(kernel: str, grid: int | Sequence[int]) -> tuple[int, int, int]:
    """``grid`` (an int or 1 to 3 ints in ``[0, 2**31)``; a 0 axis launches nothing) padded to
    three axes with 1s; LaunchError naming ``kernel`` otherwise."""
    from eggpu.ir import launch_args

    dims, _rank = launch_args.normalize_grid(kernel, grid, LaunchError, limit=launch_args.GRID_LIMIT)
    return dims


def check_args(kernel: str, params: Sequence[Param], args: Sequence[Any], *,
               written: Collection[str] = ()) -> list[CheckedArg]:
    """Validate ``args`` against ``params``; raise LaunchError naming the kernel and parameter.

    ``written`` names the pointer parameters the kernel may store through: a read-only numpy
    array passed for one of them is refused (its results could not be copied back).

    Host arrays and scalars follow :mod:`eggpu.ir.launch_args` (the interpreter's rules and
    wording); a device array (a CUDA tensor read through ``data_ptr()``, else an object with
    ``__cuda_array_interface__``) needs the pointee dtype and C-contiguous strides and is passed
    by its data pointer.
    """
    from eggpu.ir import launch_args

    names = launch_args.param_names(params)
    launch_args.check_arg_count(kernel, names, args, LaunchError)
    out = []
    for name, p, a in zip(names, params, args):
        if p.type.is_pointer:
            if (tensor := launch_args.device_tensor(a)) is not None:  # before the slow (PyTorch) interface below,
                # which raises for tensors that require grad and for bf16
                out.append(CheckedArg(p, "device", _tensor_pointer(kernel, name, p.type, a, tensor)))
            elif hasattr(a, "__cuda_array_interface__"):
                iface = a.__cuda_array_interface__
                out.append(CheckedArg(p, "device", _device_pointer(kernel, name, p.type, iface),
                                      cai_stream(kernel, name, iface)))
            else:
                arr = launch_args.check_host_array(kernel, name, p.type, a, LaunchError, writable=name in written)
                out.append(CheckedArg(p, "host", arr))
        else:
            out.append(CheckedArg(p, "scalar", convert_scalar(kernel, name, p.type.dtype, a)))
    return out


def _device_pointer(kernel: str, name: str, ptr_type: BlockType, iface: dict[str, Any]) -> int:
    """The data pointer of a device array, once its dtype and layout fit ``ptr_type``."""
    import numpy as np

    from eggpu.ir import launch_args

    got = np.dtype(iface["typestr"])
    if got != ptr_type.dtype.np:
        raise LaunchError(launch_args.pointer_dtype_message(kernel, name, ptr_type, got, what="a device array"))
    shape, strides = tuple(iface["shape"]), iface.get("strides")
    if strides is not None and not _c_contiguous(shape, strides, got.itemsize):
        raise LaunchError(launch_args.contiguity_message(
            kernel, name, strides, shape, fix="pass a contiguous copy (.contiguous() / cupy.ascontiguousarray)"))
    return int(iface["data"][0])


def cai_stream(kernel: str, name: str, iface: dict[str, Any]) -> int | None:
    """The raw stream a device array's producer wrote it on, which a launch must wait for
    (``__cuda_array_interface__`` version 3's ``stream``): None when absent or None (nothing to
    wait for); 1 is the legacy default stream, 2 the per-thread default stream (the driver's
    ``CU_STREAM_LEGACY`` / ``CU_STREAM_PER_THREAD`` handles), any other int a ``CUstream``. The
    protocol disallows 0 as ambiguous; it is taken as the legacy default stream, what 0 means to
    the driver. Anything else is a LaunchError naming the kernel and the parameter."""
    value = iface.get("stream")
    if value is None:
        return None
    if type(value) is not int or not 0 <= value <= _MAX_HANDLE:
        from eggpu.ir import launch_args

        raise LaunchError(f"{kernel}: parameter '{name}': the device array's __cuda_array_interface__ 'stream' "
                          f"must be None or a CUDA stream handle (an int in 0 .. 2**64-1), got "
                          f"{launch_args.short_repr(value)}")
    return value or 1


_MAX_HANDLE = 2**64 - 1
_CU_EVENT_DISABLE_TIMING = 2  # CUevent_flags: an event only waited on needs no timestamp


def _tensor_pointer(kernel: str, name: str, ptr_type: BlockType, a: Any,
                    tensor: tuple[int, str | None, bool]) -> int:
    """The data pointer of a CUDA tensor read through ``data_ptr()`` (:func:`eggpu.ir.device_buffers.device_tensor`),
    once its dtype and layout fit ``ptr_type``."""
    from eggpu.ir import launch_args

    address, dtype, contiguous = tensor
    if dtype != ptr_type.dtype.name:
        text = launch_args.short_repr(str(getattr(a, "dtype", None)))[1:-1]
        got = f"{dtype} ({text})" if dtype is not None else text
        raise LaunchError(f"{kernel}: parameter '{name}' ({ptr_type}) expects an array of {ptr_type.dtype}, "
                          f"got a device tensor of {got}")
    if not contiguous:
        stride = getattr(a, "stride", None)
        steps = tuple(stride()) if callable(stride) else ()
        item = ptr_type.dtype.np.itemsize
        raise LaunchError(launch_args.contiguity_message(
            kernel, name, [st * item for st in steps], tuple(getattr(a, "shape", ())),
            fix="pass a contiguous copy (.contiguous() / cupy.ascontiguousarray)"))
    return address


def _c_contiguous(shape, strides, itemsize) -> bool:
    expect = itemsize
    for dim, st in zip(reversed(shape), reversed(strides)):
        if dim > 1 and st != expect:
            return False
        expect *= dim
    return True


def convert_scalar(kernel: str, name: str, dt: DType, value: Any) -> np.generic:
    """A Python/numpy scalar as a numpy scalar of ``dt`` (:func:`eggpu.ir.launch_args.convert_scalar`:
    floats are rejected for integer parameters, out-of-range values are rejected)."""
    from eggpu.ir import launch_args

    return launch_args.convert_scalar(kernel, name, dt, value, LaunchError)


# ------------------------------------------------------------------ CUDA driver


class CudaRuntime:
    """The CUDA driver through cuda-python (opened on first use): the primary context of each
    device a launch goes to, and the modules loaded in each.

    A launch names its device (an ordinal; :mod:`eggpu.streams` takes it from the arguments'
    framework, PyTorch's current device for CUDA tensors, as Triton does) and :meth:`use_device`
    makes that device's primary context (the one PyTorch and CuPy use) current in the calling
    thread before anything is loaded or launched: the current context is per thread and PyTorch
    changes it (``torch.cuda.set_device``), so it is checked at every launch, not assumed."""

    _instance: CudaRuntime | None = None

    def __init__(self, driver: Any = None) -> None:
        """Open the driver through ``driver`` (cuda-python's driver module, imported when None;
        tests and benchmarks pass :class:`eggpu.testing.FakeCudaDriver`) and device 0. Every
        failure, a missing cuda-python, a missing or broken libcuda, no device, is a LaunchError."""
        if driver is None:
            driver = _import_driver()
        self.cu = driver
        self._contexts: dict[int, tuple[Any, Any, int]] = {}  # ordinal -> (device, context, its handle)
        try:
            self._check(driver.cuInit(0), "cuInit")
            self.device_count = int(self._check(driver.cuDeviceGetCount(), "cuDeviceGetCount"))
            if not self.device_count:
                raise LaunchError("no CUDA device found (use ck.run_cpu(...) to run the same lowering on the CPU)")
            self.device, self.context, _ = self._primary(0)
            self.use_device(0)
        except LaunchError:
            raise
        except Exception as e:  # cuda-python raises when libcuda.so cannot be loaded or is too old
            raise LaunchError(f"the CUDA driver cannot be used: {type(e).__name__}: {e} (is an NVIDIA driver "
                              f"installed? use ck.run_cpu(...) to run the same lowering on the CPU)") from None
        self._modules: dict[tuple[int, str, str], Any] = {}
        self._dynamic_opt_in: dict[tuple[int, str, str], int] = {}

    def _primary(self, ordinal: int) -> tuple[Any, Any, int]:
        """(device, primary context, the context's handle) of device ``ordinal``, retained once."""
        got = self._contexts.get(ordinal)
        if got is None:
            if not 0 <= ordinal < self.device_count:
                raise LaunchError(f"CUDA device {ordinal} does not exist: this machine has {self.device_count} "
                                  f"(0 .. {self.device_count - 1})")
            device = self._check(self.cu.cuDeviceGet(ordinal), "cuDeviceGet")
            context = self._check(self.cu.cuDevicePrimaryCtxRetain(device), "cuDevicePrimaryCtxRetain")
            got = self._contexts[ordinal] = (device, context, int(context))
        return got

    def use_device(self, ordinal: int) -> None:
        """Make device ``ordinal``'s primary context current in this thread, unless it is."""
        _, context, handle = self._contexts.get(ordinal) or self._primary(ordinal)
        cu = self.cu
        r = cu.cuCtxGetCurrent()
        if r[0] != 0 or int(r[1]) != handle:
            self._check(cu.cuCtxSetCurrent(context), "cuCtxSetCurrent")

    @classmethod
    def get(cls) -> CudaRuntime:
        if cls._instance is None:
            cls._instance = cls()
        return cls._instance

    def _check(self, result: Any, what: str) -> Any:
        """The value(s) after the status of a driver call's result; LaunchError naming ``what``
        and the driver's error (with a hint when the driver cannot start) when it failed."""
        err, *rest = result if isinstance(result, tuple) else (result,)
        if int(err) != 0:
            try:
                _, msg = self.cu.cuGetErrorString(err)
                text = msg.decode() if isinstance(msg, bytes) else str(msg)
            except Exception:  # an error code the driver cannot name
                text = "unknown error"
            hint = ("; no usable CUDA GPU or driver (use ck.run_cpu(...) to run the same lowering on the CPU)"
                    if what == "cuInit" else "")
            raise LaunchError(f"{what} failed: {text} ({int(err)}){hint}")
        if not rest:
            return None
        return rest[0] if len(rest) == 1 else tuple(rest)

    def function(self, ptx: str, entry: str, device: int = 0) -> Any:
        """The kernel ``entry`` of ``ptx`` loaded on device ``device`` (once per device; that
        device's context must be current, :meth:`use_device`)."""
        import numpy as np

        key = (device, ptx, entry)
        if key not in self._modules:
            image = np.frombuffer(ptx.encode() + b"\0", dtype=np.uint8)  # NUL-terminated PTX text
            module = self._check(self.cu.cuModuleLoadData(image.ctypes.data), "cuModuleLoadData")
            fn = self._check(self.cu.cuModuleGetFunction(module, entry.encode()), "cuModuleGetFunction")
            self._modules[key] = (module, fn)
        return self._modules[key][1]

    def opt_in_shared(self, ptx: str, entry: str, fn: Any, nbytes: int, device: int = 0) -> None:
        """Allow ``fn`` (loaded on ``device``) ``nbytes`` of dynamic shared memory (needed beyond
        48 KiB): ``cuFuncSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)``, once per
        function. LaunchError naming ``entry`` when the device allows less
        (``CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN``)."""
        key = (device, ptx, entry)
        if self._dynamic_opt_in.get(key, 0) >= nbytes:
            return
        cu = self.cu
        limit = self._check(cu.cuDeviceGetAttribute(
            cu.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, self._primary(device)[0]),
            "cuDeviceGetAttribute")
        if nbytes > int(limit):
            raise LaunchError(f"{entry}: needs {nbytes} bytes of shared memory, but this device allows at most "
                              f"{int(limit)} per block; compile for this device's target or use smaller blocks")
        self._check(cu.cuFuncSetAttribute(
            fn, cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, nbytes),
            "cuFuncSetAttribute")
        self._dynamic_opt_in[key] = nbytes

    def wait_for(self, producers: Collection[int], stream: int) -> None:
        """Make ``stream`` wait for the work queued so far on each raw stream in ``producers``
        (the streams device arrays were written on, :func:`cai_stream`), as the
        ``__cuda_array_interface__`` protocol asks of a consumer: an event recorded on the
        producer's stream and ``cuStreamWaitEvent`` on ours, so the host does not wait. A
        producer that is ``stream`` itself needs nothing (0 and 1 both name the legacy default
        stream). The current context must be the launch's (:meth:`use_device`)."""
        cu = self.cu
        ours = stream or 1
        for producer in dict.fromkeys(producers):  # each stream once, in order
            if (producer or 1) == ours:
                continue
            event = self._check(cu.cuEventCreate(_CU_EVENT_DISABLE_TIMING), "cuEventCreate")
            try:
                self._check(cu.cuEventRecord(event, producer), "cuEventRecord")
                self._check(cu.cuStreamWaitEvent(stream, event, 0), "cuStreamWaitEvent")
            finally:  # the driver keeps a recorded event alive until the wait on it is resolved
                cu.cuEventDestroy(event)

    def compute_capability(self, ordinal: int) -> int:
        """Device ``ordinal``'s compute capability as Triton writes it: major * 10 + minor (90 for sm_90)."""
        cu = self.cu
        device = self._primary(ordinal)[0]
        attr = cu.CUdevice_attribute
        major = self._check(cu.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device),
                            "cuDeviceGetAttribute")
        minor = self._check(cu.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device),
                            "cuDeviceGetAttribute")
        return 10 * int(major) + int(minor)

    def pointer_device(self, address: int) -> int | None:
        """The ordinal of the device whose memory ``address`` points into
        (``cuPointerGetAttribute(CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL)``); None when the driver
        does not know the address (not CUDA memory)."""
        cu = self.cu
        r = cu.cuPointerGetAttribute(cu.CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, address)
        if r[0] != 0:
            return None
        return int(r[1])

    def launch(self, ptx: str, entry: str, grid: tuple[int, int, int], num_threads: int,
               checked: list[CheckedArg], *, synchronize: bool = True, shared_bytes: int = 0,
               stream: int = 0, device: int = 0) -> None:
        """Launch on device ``device``, on its raw CUDA ``stream`` (0: the legacy default stream);
        numpy arrays are copied in before (synchronous copies) and out after (which synchronizes
        the device).

        ``shared_bytes``: the dynamic shared memory the kernel needs (the compiled kernel's
        ``dynamic_shared_bytes``; 0 when its shared memory is static): the function is opted in
        to that size (:meth:`opt_in_shared`) and the launch provides it.

        A grid with a 0 axis runs no program: nothing is loaded, copied or launched.
        """
        import numpy as np

        if 0 in grid:
            return
        cu = self.cu
        self.use_device(device)
        producers = {a.stream for a in checked if a.stream is not None}
        if producers:
            self.wait_for(producers, stream)
        fn = self.function(ptx, entry, device)
        if shared_bytes:
            self.opt_in_shared(ptx, entry, fn, shared_bytes, device)
        holders: list[np.ndarray] = []
        copies: list[tuple[np.ndarray, Any]] = []
        allocs: list[Any] = []
        try:
            for a in checked:
                if a.kind == "host":
                    arr: np.ndarray = a.value
                    nbytes = max(arr.nbytes, 1)
                    dptr = self._check(cu.cuMemAlloc(nbytes), "cuMemAlloc")
                    allocs.append(dptr)
                    if arr.nbytes:
                        self._check(cu.cuMemcpyHtoD(dptr, arr.ctypes.data, arr.nbytes), "cuMemcpyHtoD")
                    copies.append((arr, dptr))
                    holders.append(np.array([int(dptr)], dtype=np.uint64))
                elif a.kind == "device":
                    holders.append(np.array([a.value], dtype=np.uint64))
                else:
                    holders.append(np.array([a.value], dtype=a.param.type.dtype.np))
            params = np.array([h.ctypes.data for h in holders], dtype=np.uint64)
            self._check(cu.cuLaunchKernel(fn, *grid, num_threads, 1, 1, shared_bytes, stream, params.ctypes.data, 0),
                        "cuLaunchKernel")
            if copies or synchronize:
                self._check(cu.cuCtxSynchronize(), "cuCtxSynchronize")
            for arr, dptr in copies:
                if arr.nbytes:
                    self._check(cu.cuMemcpyDtoH(arr.ctypes.data, dptr, arr.nbytes), "cuMemcpyDtoH")
        finally:
            for dptr in allocs:
                cu.cuMemFree(dptr)


def _import_driver() -> Any:
    """cuda-python's driver module; LaunchError when cuda-python is missing or cannot load."""
    try:
        from cuda.bindings import driver  # cuda-python >= 12.6
    except ImportError:
        try:
            from cuda import cuda as driver  # older cuda-python
        except ImportError:
            raise LaunchError("launching on a GPU needs cuda-python: pip install 'eggpu[cuda]'") from None
        except Exception as e:
            raise LaunchError(f"cuda-python cannot be loaded: {type(e).__name__}: {e}") from None
    except Exception as e:  # e.g. a binary mismatch while loading the bindings
        raise LaunchError(f"cuda-python cannot be loaded: {type(e).__name__}: {e}") from None
    return driver


def synchronize() -> None:
    """Wait until the GPU has finished every launch made so far (``cuCtxSynchronize``); a fault
    of an asynchronous launch is raised here as a LaunchError."""
    rt = CudaRuntime.get()
    rt._check(rt.cu.cuCtxSynchronize(), "cuCtxSynchronize")


def gpu_available() -> bool:
    """True when cuda-python imports and a CUDA device can be opened."""
    try:
        CudaRuntime.get()
        return True
    except LaunchError:
        return False


def __getattr__(name: str) -> Any:
    """``driver``: Triton's ``triton.runtime.driver`` for ``import eggpu as triton``
    (:mod:`eggpu.triton_driver`), loaded on first use."""
    if name == "driver":
        from eggpu.triton_driver import driver

        return driver
    raise AttributeError(f"module 'eggpu.runtime' has no attribute {name!r}")
