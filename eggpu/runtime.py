"""Launch arguments checking and the CUDA driver runtime (cuda-python).

:func:`check_args` validates launch arguments against a kernel's parameters before anything
touches a device (count, pointer dtypes, contiguity, scalar kinds and ranges), so it is tested
without a GPU. :class:`CudaRuntime` loads PTX with ``cuModuleLoadData`` (the driver JIT-compiles
it), launches with the kernel's ``.reqntid`` block size, and copies numpy arrays in and out;
device arrays (CuPy, PyTorch: ``__cuda_array_interface__``) are passed without copies.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from eggpu.ir.dtypes import DType, from_numpy
from eggpu.ir.errors import IRError, LaunchError
from eggpu.ir.types import BlockType


@dataclass(frozen=True)
class Param:
    """A launch parameter: its name and IR type (``ptr<f32>`` or a scalar dtype)."""

    name: str
    type: BlockType


@dataclass
class CheckedArg:
    """One validated argument: kind 'host' (numpy array), 'device' (pointer int) or 'scalar'."""

    param: Param
    kind: str
    value: Any


def normalize_grid(grid: int | Sequence[int]) -> tuple[int, int, int]:
    if isinstance(grid, int | np.integer):
        g: tuple = (grid,)
    elif isinstance(grid, tuple | list):
        g = tuple(grid)
    else:
        raise LaunchError(f"grid must be 1 to 3 positive integers, got {grid!r}")
    if not 1 <= len(g) <= 3 or any((not isinstance(x, int | np.integer)) or x < 1 for x in g):
        raise LaunchError(f"grid must be 1 to 3 positive integers, got {grid!r}")
    return tuple(int(x) for x in g) + (1,) * (3 - len(g))  # type: ignore[return-value]


def _array_dtype(obj: Any) -> DType:
    try:
        return from_numpy(obj.dtype)
    except (IRError, TypeError):
        raise LaunchError(f"unsupported array dtype {obj.dtype}") from None


def check_args(kernel: str, params: Sequence[Param], args: Sequence[Any]) -> list[CheckedArg]:
    """Validate ``args`` against ``params``; raise LaunchError naming the kernel and parameter."""
    if len(args) != len(params):
        names = ", ".join(p.name for p in params)
        raise LaunchError(f"{kernel} takes {len(params)} launch arguments ({names}), got {len(args)}")
    out = []
    for p, a in zip(params, args):
        where = f"{kernel}: argument {p.name!r}"
        if p.type.is_pointer:
            want = p.type.dtype
            if hasattr(a, "__cuda_array_interface__"):
                iface = a.__cuda_array_interface__
                got = from_numpy(np.dtype(iface["typestr"]))
                if got != want:
                    raise LaunchError(f"{where} must point to {want} elements, got a device array of {got}")
                if iface.get("strides") is not None and not _c_contiguous(iface["shape"], iface["strides"], np.dtype(iface["typestr"]).itemsize):
                    raise LaunchError(f"{where} must be a contiguous array (call .contiguous() / cupy.ascontiguousarray)")
                out.append(CheckedArg(p, "device", int(iface["data"][0])))
                continue
            if not isinstance(a, np.ndarray):
                raise LaunchError(f"{where} must be an array of {want} (numpy, CuPy or PyTorch), got {type(a).__name__}")
            got = _array_dtype(a)
            if got != want:
                raise LaunchError(f"{where} must point to {want} elements, got an array of {got}")
            if not a.flags.c_contiguous:
                raise LaunchError(f"{where} must be a C-contiguous array (use np.ascontiguousarray)")
            out.append(CheckedArg(p, "host", a))
        else:
            out.append(CheckedArg(p, "scalar", convert_scalar(where, p.type.dtype, a)))
    return out


def _c_contiguous(shape, strides, itemsize) -> bool:
    expect = itemsize
    for dim, st in zip(reversed(shape), reversed(strides)):
        if dim > 1 and st != expect:
            return False
        expect *= dim
    return True


def convert_scalar(where: str, dt: DType, value: Any) -> Any:
    """A Python/numpy scalar as a numpy scalar of ``dt``; rejects lossy kinds and out-of-range ints."""
    if isinstance(value, np.ndarray) and value.shape == ():
        value = value[()]
    if isinstance(value, bool | np.bool_):
        if not dt.is_bool:
            raise LaunchError(f"{where} is {dt}, got the bool {bool(value)!r}")
        return np.bool_(value)
    if isinstance(value, int | np.integer):
        if dt.is_float:
            return dt.np.type(float(value))
        iv = int(value)
        if dt.is_bool:
            if iv not in (0, 1):
                raise LaunchError(f"{where} is bool, got {iv}")
            return np.bool_(iv)
        if not dt.min <= iv <= dt.max:
            raise LaunchError(f"{where} is {dt}; {iv} is out of range [{dt.min}, {dt.max}]")
        return dt.np.type(iv)
    if isinstance(value, float | np.floating):
        if not dt.is_float:
            raise LaunchError(f"{where} is {dt}, got the float {value!r} (pass an int)")
        return np.asarray(value).astype(dt.np)[()]
    raise LaunchError(f"{where} must be a {dt} scalar, got {type(value).__name__}")


# ------------------------------------------------------------------ CUDA driver


class CudaRuntime:
    """A CUDA context on device 0 via cuda-python's driver API (created on first use)."""

    _instance: CudaRuntime | None = None

    def __init__(self) -> None:
        try:
            from cuda.bindings import driver  # cuda-python >= 12.6
        except ImportError:
            try:
                from cuda import cuda as driver  # older cuda-python
            except ImportError:
                raise LaunchError("launching on a GPU needs cuda-python: pip install 'eggpu[cuda]'") from None
        self.cu = driver
        self._check(driver.cuInit(0), "cuInit")
        count = self._check(driver.cuDeviceGetCount(), "cuDeviceGetCount")
        if not count:
            raise LaunchError("no CUDA device found (use ck.run_cpu(...) to run the same lowering on the CPU)")
        self.device = self._check(driver.cuDeviceGet(0), "cuDeviceGet")
        self.context = self._check(driver.cuDevicePrimaryCtxRetain(self.device), "cuDevicePrimaryCtxRetain")
        self._check(driver.cuCtxSetCurrent(self.context), "cuCtxSetCurrent")
        self._modules: dict[tuple[str, str], Any] = {}

    @classmethod
    def get(cls) -> CudaRuntime:
        if cls._instance is None:
            cls._instance = cls()
        return cls._instance

    def _check(self, result: Any, what: str) -> Any:
        err, *rest = result if isinstance(result, tuple) else (result,)
        if int(err) != 0:
            _, msg = self.cu.cuGetErrorString(err)
            text = msg.decode() if isinstance(msg, bytes) else str(msg)
            raise LaunchError(f"{what} failed: {text} ({int(err)})")
        if not rest:
            return None
        return rest[0] if len(rest) == 1 else tuple(rest)

    def function(self, ptx: str, entry: str) -> Any:
        key = (ptx, entry)
        if key not in self._modules:
            module = self._check(self.cu.cuModuleLoadData(ptx.encode() + b"\0"), "cuModuleLoadData")
            fn = self._check(self.cu.cuModuleGetFunction(module, entry.encode()), "cuModuleGetFunction")
            self._modules[key] = (module, fn)
        return self._modules[key][1]

    def launch(self, ptx: str, entry: str, grid: tuple[int, int, int], num_threads: int,
               checked: list[CheckedArg], *, synchronize: bool = True) -> None:
        """Launch; numpy arrays are copied in before and out after (which synchronizes)."""
        cu = self.cu
        fn = self.function(ptx, entry)
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
            self._check(cu.cuLaunchKernel(fn, *grid, num_threads, 1, 1, 0, 0, params.ctypes.data, 0),
                        "cuLaunchKernel")
            if copies or synchronize:
                self._check(cu.cuCtxSynchronize(), "cuCtxSynchronize")
            for arr, dptr in copies:
                if arr.nbytes:
                    self._check(cu.cuMemcpyDtoH(arr.ctypes.data, dptr, arr.nbytes), "cuMemcpyDtoH")
        finally:
            for dptr in allocs:
                cu.cuMemFree(dptr)


def gpu_available() -> bool:
    """True when cuda-python imports and a CUDA device can be opened."""
    try:
        CudaRuntime.get()
        return True
    except LaunchError:
        return False
