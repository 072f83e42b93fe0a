"""Per-specialization launch plans: the per-call work of ``ck.launch`` done once per compiled kernel.

A :class:`LaunchPlan` is built the first time a :class:`~eggpu.pipeline.CompiledKernel` is
launched. It precomputes, per parameter, what a valid argument looks like (the pointee dtype and
the device-array typestrs that name it, whether the kernel writes through a pointer, a scalar's
range and ctypes type, the specialization facts to check and the alignment the PTX assumes), a
ctypes ``Structure`` that packs every argument (one per thread, with the kernel-parameter
pointer array into it made once), and the grid bound of the ``offsets_i32`` fact. A launch is
then one loop over the arguments and one ``cuLaunchKernel``.

The plan never decides an error itself. Anything it does not recognize at once (a host numpy
array, whose launch copies it anyway; a numpy scalar it cannot convert; a wrong dtype; a
violated fact; an odd grid) sends the whole launch down the general path,
:meth:`CompiledKernel._launch_checked`, which runs every check in the documented order
(grid, arguments, specialization facts, alignment assumptions) and raises the same errors as
before. So the fast path only ever accepts launches the general path accepts, with the same
values.

Device buffers are taken by address, never copied: CUDA tensors through ``data_ptr()`` (PyTorch's
protocol, :mod:`eggpu.ir.device_buffers`: torch builds its ``__cuda_array_interface__`` dict in
Python at every access, and refuses it for tensors that require grad), other device arrays
through ``__cuda_array_interface__`` (CuPy, Numba).
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from eggpu.ir.device_buffers import device_tensor
from eggpu.ir.facts import I32_SPAN, assumed_max, parse_fact
from eggpu.runtime import CudaRuntime, _c_contiguous, convert_scalar
from eggpu.streams import launch_target

if TYPE_CHECKING:
    from eggpu.pipeline import CompiledKernel

__all__ = ["LaunchPlan"]

_CTYPES = {
    "bool": ctypes.c_bool, "i8": ctypes.c_int8, "i16": ctypes.c_int16, "i32": ctypes.c_int32,
    "i64": ctypes.c_int64, "u8": ctypes.c_uint8, "u16": ctypes.c_uint16, "u32": ctypes.c_uint32,
    "u64": ctypes.c_uint64, "f16": ctypes.c_uint16, "bf16": ctypes.c_uint16, "f32": ctypes.c_float,
    "f64": ctypes.c_double,
}
"""The ctypes field of each scalar dtype in the packed arguments (f16/bf16 as their bits)."""

_F32_OVERFLOW = 3.4028235677973366e38
"""Half an ulp above f32's largest value: a finite double below it in magnitude rounds to a finite f32."""

_SLOW = object()
_MAX_HANDLE = 2**64


class _Slot:
    """What one parameter accepts, precomputed (see the module docstring)."""

    __slots__ = ("name", "pointer", "dtype", "np_dtype", "typestrs", "torch_name", "tensor_dtype", "written",
                 "align", "lo", "hi", "divs", "eq1", "kind")

    def __init__(self, param: Any, ck: CompiledKernel, written: frozenset[str], assumptions: dict[str, str]):
        t = param.type
        self.name = param.name
        self.pointer = bool(t.is_pointer)
        self.dtype = t.dtype
        self.np_dtype = t.dtype.np
        self.typestrs = frozenset({self.np_dtype.str, self.np_dtype.str.replace("<", "=")})
        self.torch_name = t.dtype.name
        self.tensor_dtype: Any = _SLOW  # no tensor dtype object accepted yet
        self.written = param.name in written
        facts = ck.facts.of(param.name)
        parsed = [parse_fact(f) for f in facts]
        aligns = [k for kind, k in parsed if kind == "align"]
        if assumptions.get(param.name) == "align16":
            aligns.append(16)
        self.align = tuple(aligns)
        self.divs = tuple(k for kind, k in parsed if kind == "div")
        self.eq1 = any(kind == "eq" for kind, _ in parsed)
        d = t.dtype
        self.kind = "ptr" if self.pointer else "bool" if d.is_bool else "int" if d.is_int else d.name
        self.lo, self.hi = (d.min, d.max) if d.is_int and not d.is_bool else (0, 0)
        bound = assumed_max(assumptions.get(param.name))  # a loop bound's (codegen/loop_form.py)
        if bound is not None:
            self.hi = min(self.hi, bound)


class LaunchPlan:
    """The launch path of one compiled kernel (module docstring). Thread-safe: each thread packs
    into a buffer of its own, which the driver has copied by the time ``cuLaunchKernel`` returns."""

    def __init__(self, ck: CompiledKernel):
        self.ck = ck
        report = ck.report
        written = frozenset(report.get("written_params", ()))
        assumptions = dict(report.get("assumptions", {}))
        self.slots = tuple(_Slot(p, ck, written, assumptions) for p in ck.params)
        self.nargs = len(self.slots)
        block = ck.facts.block
        self.max_programs = I32_SPAN // block if block else None
        fields = [(f"a{i}", ctypes.c_uint64 if s.pointer else _CTYPES[s.dtype.name]) for i, s in enumerate(self.slots)]
        self.packed = type(f"{ck.name}_args", (ctypes.Structure,), {"_fields_": fields})
        self.offsets = tuple(getattr(self.packed, f).offset for f, _ in fields)
        self.pointers = ctypes.c_void_p * max(self.nargs, 1)
        # the driver copies the parameter values during cuLaunchKernel, so one buffer per thread serves
        self.buffer = type(f"{ck.name}_buffer", (ctypes.Structure,),
                           {"_fields_": [("args", self.packed), ("ptrs", self.pointers)]})
        self._local = threading.local()
        self.num_threads = ck.num_threads
        self.shared = ck.dynamic_shared_bytes
        self._rt: Any = None
        self._fns: dict[int, Any] = {}  # device ordinal -> the loaded function

    # ------------------------------------------------------------------ per call

    def target(self, stream: Any, args: Sequence[Any]) -> tuple[int, int]:
        """``(device, raw stream)`` of a launch (:func:`eggpu.streams.launch_target`)."""
        return launch_target(self.ck.name, stream, args)

    def launch(self, grid: Any, args: Sequence[Any], synchronize: bool = True, stream: int = 0,
               device: int = 0) -> None:
        """Launch ``args`` on ``grid`` on device ``device``, on its raw CUDA ``stream`` (the
        semantics of ``CompiledKernel.launch``)."""
        g = _grid(grid)
        if g is None or len(args) != self.nargs:
            return self.ck._launch_checked(grid, args, synchronize, stream, device)
        mp = self.max_programs
        if mp is not None and (g[0] > mp or g[1] > mp or g[2] > mp):
            return self.ck._launch_checked(grid, args, synchronize, stream, device)
        values = []
        producers: list[int] = []  # streams device arrays were written on (__cuda_array_interface__)
        for s, a in zip(self.slots, args):
            v = self._pointer(s, a, producers) if s.pointer else self._scalar(s, a)
            if v is _SLOW:
                return self.ck._launch_checked(grid, args, synchronize, stream, device)
            values.append(v)
        rt = CudaRuntime.get()
        if rt is not self._rt:
            self._rt, self._fns = rt, {}
        if not (g[0] and g[1] and g[2]):
            return None  # a 0 axis runs no program
        rt.use_device(device)
        if producers:
            rt.wait_for(producers, stream)
        fn = self._fns.get(device)
        if fn is None:
            fn = self._bind(rt, device)
        try:
            packed, params = self._local.buffer
        except AttributeError:
            packed, params = self._local.buffer = self._new_buffer()
        packed.__init__(*values)
        cu = rt.cu
        r = cu.cuLaunchKernel(fn, g[0], g[1], g[2], self.num_threads, 1, 1, self.shared, stream, params, 0)
        if (r[0] if type(r) is tuple else r) != 0:
            rt._check(r, "cuLaunchKernel")
        if synchronize:
            r = cu.cuCtxSynchronize()
            if (r[0] if type(r) is tuple else r) != 0:
                rt._check(r, "cuCtxSynchronize")
        return None

    def _new_buffer(self) -> tuple[Any, int]:
        """(the packed-arguments structure, the address of the kernel-parameter pointer array into it)."""
        buf = self.buffer()
        base = ctypes.addressof(buf)
        buf.ptrs = self.pointers(*[base + o for o in self.offsets])
        return buf.args, base + type(buf).ptrs.offset

    def _bind(self, rt: Any, device: int) -> Any:
        """Load the function on ``rt``'s ``device`` (its context current) and opt in to its
        dynamic shared memory, once per device; the function."""
        ck = self.ck
        fn = rt.function(ck.ptx, ck.entry_point, device)
        if self.shared:
            rt.opt_in_shared(ck.ptx, ck.entry_point, fn, self.shared, device)
        self._fns[device] = fn
        return fn

    @staticmethod
    def _pointer(s: _Slot, a: Any, producers: list[int]) -> Any:
        """The device address of ``a`` for pointer slot ``s``, or _SLOW; the stream a device
        array's ``__cuda_array_interface__`` says it was written on goes to ``producers``
        (:func:`eggpu.runtime.cai_stream`; an odd value takes the general path, which reports it)."""
        if getattr(a, "is_cuda", None) is True:  # a CUDA tensor: read through data_ptr() (PyTorch's protocol)
            dtype = getattr(a, "dtype", None)
            if dtype is not s.tensor_dtype:  # the dtype object last accepted (PyTorch's are singletons)
                t = device_tensor(a)
                if t is None or t[1] != s.torch_name or not t[2]:
                    return _SLOW
                s.tensor_dtype = dtype
                addr = t[0]
            else:
                is_contiguous = getattr(a, "is_contiguous", None)
                if callable(is_contiguous) and not is_contiguous():
                    return _SLOW
                try:
                    addr = int(a.data_ptr())
                except (AttributeError, TypeError):
                    return _SLOW
        else:
            iface = getattr(a, "__cuda_array_interface__", None)
            if type(iface) is not dict or iface.get("typestr") not in s.typestrs:
                return _SLOW  # a host array (copied by the general path), a wrong dtype, anything else
            strides = iface.get("strides")
            if strides is not None and not _c_contiguous(tuple(iface["shape"]), strides, s.np_dtype.itemsize):
                return _SLOW
            addr = int(iface["data"][0])
            written_on = iface.get("stream")
            if written_on is not None:
                if type(written_on) is not int or not 0 < written_on < _MAX_HANDLE:
                    return _SLOW
                producers.append(written_on)
        for k in s.align:
            if addr % k:
                return _SLOW
        return addr

    @staticmethod
    def _scalar(s: _Slot, a: Any) -> Any:
        """``a`` as the ctypes value of scalar slot ``s`` with its facts checked, or _SLOW."""
        t = type(a)
        kind = s.kind
        if kind == "int" and (t is int or t is bool):
            v = int(a)
            if not s.lo <= v <= s.hi:
                return _SLOW
        elif (kind == "f32" and t is float and -_F32_OVERFLOW < a < _F32_OVERFLOW) or (kind == "f64" and t is float) \
                or (kind == "bool" and t is bool):
            return a
        else:
            v = _convert(s, a)
            if v is _SLOW or kind != "int":
                return v
        for k in s.divs:
            if v % k:
                return _SLOW
        if s.eq1 and v != 1:
            return _SLOW
        return v


def _convert(s: _Slot, a: Any) -> Any:
    """The general scalar conversion (numpy scalars, ints for float parameters, f16/bf16):
    :func:`eggpu.runtime.convert_scalar`, as a ctypes value; _SLOW when it refuses ``a``."""
    import numpy as np

    from eggpu.ir.errors import LaunchError

    try:
        v = convert_scalar("", s.name, s.dtype, a)
    except LaunchError:
        return _SLOW
    if s.kind in ("f16", "bf16"):
        return int(np.asarray(v).view(np.uint16))
    return v.item()


def _grid(grid: Any) -> tuple[int, int, int] | None:
    """``grid`` as three axes when it is plainly valid (ints in CUDA's limits), else None (the
    general path normalizes it or reports it)."""
    t = type(grid)
    if t is int:
        return (grid, 1, 1) if 0 <= grid < I32_SPAN else None
    if t is tuple or t is list:
        n = len(grid)
        if n == 1:
            x, y, z = grid[0], 1, 1
        elif n == 2:
            x, y, z = grid[0], grid[1], 1
        elif n == 3:
            x, y, z = grid
        else:
            return None
        if type(x) is int and type(y) is int and type(z) is int and 0 <= x < I32_SPAN and 0 <= y <= 65535 \
                and 0 <= z <= 65535:
            return x, y, z
    return None
