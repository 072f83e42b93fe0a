"""CPU execution of the lowering: the ``host`` mode module, JIT-compiled by llvmlite's MCJIT.

:func:`build_host` lowers an IR function in ``host`` mode (one call = one CTA in lock-step,
see :mod:`eggpu.codegen.emitter`), optimizes it at O3 for the host CPU and JIT-compiles it.
:meth:`HostKernel.run` checks the arguments the way the interpreter does (count, pointer dtype,
C-contiguity, scalar range), checks the lowering's recorded assumptions (e.g. a pointer
parameter 16-byte aligned) and runs every program of the grid in row-major order (last axis
fastest, the interpreter's order) on one thread. Arrays are written in place.

Math functions come from the C library (libm): ``expf``, ``erff``, ``tanhf``... are correctly
rounded or within 1-2 ulp depending on the libm; libdevice (the GPU) documents up to 2 ulp for
``__nv_expf``/``__nv_erff`` and 1-4 ulp for the others. ``rsqrt`` on the host is ``1/sqrt``
(two correctly rounded operations), on the GPU ``__nv_rsqrtf`` (<= 2 ulp).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from eggpu.ir.dtypes import DType, from_numpy
from eggpu.ir.errors import CodegenError, EggpuError, LaunchError
from eggpu.ir.graph import Function, Operation, Value

from .lowering import LoweredModule, lower_function

HOST_IR_OPT = 1
"""LLVM IR pipeline level (``default<O1>``) for host modules: JIT time matters more than peak speed."""
HOST_CODEGEN_OPT = 0
"""Code generation level of the host target machine."""

_LOCK = threading.RLock()
_state: dict[str, Any] = {}


def _host_machine():
    """A new host target machine (an MCJIT engine owns and frees its machine); the LLVM setup
    (native target, libm visible to the JIT) happens once per process."""
    import llvmlite.binding as llvm

    with _LOCK:
        if "init" not in _state:
            llvm.initialize_native_target()
            llvm.initialize_native_asmprinter()
            libm = ctypes.util.find_library("m")
            if libm:
                try:
                    llvm.load_library_permanently(libm)
                except RuntimeError:  # pragma: no cover - libm already in the process
                    pass
            try:
                _state["features"] = llvm.get_host_cpu_features().flatten()
            except RuntimeError:  # pragma: no cover
                _state["features"] = ""
            _state["init"] = True
        target = llvm.Target.from_triple(llvm.get_process_triple())
        return target.create_target_machine(cpu=llvm.get_host_cpu_name(), features=_state["features"],
                                            opt=HOST_CODEGEN_OPT, jit=True)


class HostKernel:
    """A kernel JIT-compiled for the CPU. Call :meth:`run` with the grid and numpy arguments."""

    def __init__(self, fn: Function, lowered: LoweredModule, engine: Any, address: int):
        self.fn = fn
        self.lowered = lowered
        self.written = written_params(fn)
        self._engine = engine  # keeps the machine code alive
        self._cfunc = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int32, ctypes.c_int32,
                                       ctypes.c_int32)(address)

    @property
    def name(self) -> str:
        return self.fn.name

    @property
    def llvm_ir(self) -> str:
        return self.lowered.llvm_ir

    def run(self, grid: int | Sequence[int], *args: Any) -> None:
        """Run every program of ``grid`` (an int or 1-3 ints) on ``args`` (numpy arrays and scalars).

        Raises LaunchError for a wrong argument count, a non-array or wrong-dtype or
        non-contiguous array for a pointer, a scalar of the wrong kind or out of range, a
        recorded assumption the arguments break, or a bad grid.
        """
        dims = _grid(self.fn.name, grid)
        slots, keep = self._pack(args)
        if 0 in dims:
            return
        self._cfunc(ctypes.addressof(slots), *dims)
        del keep

    def _pack(self, args: Sequence[Any]):
        fn = self.fn
        params = fn.params
        if len(args) != len(params):
            names = ", ".join(p.name or f"arg{i}" for i, p in enumerate(params))
            raise LaunchError(f"{fn.name} takes {len(params)} argument(s) ({names}), got {len(args)}")
        slots = (ctypes.c_uint64 * max(1, len(params)))()
        keep = []
        for i, (p, a) in enumerate(zip(params, args)):
            name = p.name or f"arg{i}"
            t = p.type
            if t.is_pointer:
                arr = _check_array(fn.name, name, t.dtype, a, name in self.written)
                what = self.lowered.assumptions.get(name)
                addr = arr.__array_interface__["data"][0]
                if what == "align16" and addr % 16:
                    raise LaunchError(
                        f"{fn.name}: argument '{name}' must be 16-byte aligned (the compiled code uses vector "
                        f"accesses), but its data starts at address {addr:#x}; pass a fresh array (np.copy) "
                        f"or compile with assume_aligned=False")
                slots[i] = addr
                keep.append(arr)
            else:
                slots[i] = _scalar_bits(fn.name, name, t.dtype, a)
        return slots, keep


def _grid(name: str, grid: Any) -> tuple[int, int, int]:
    def is_int(x: Any) -> bool:
        return isinstance(x, int | np.integer) and not isinstance(x, bool | np.bool_)

    if is_int(grid):
        dims = (int(grid),)
    elif isinstance(grid, tuple | list) and 1 <= len(grid) <= 3 and all(is_int(g) for g in grid):
        dims = tuple(int(g) for g in grid)
    else:
        raise LaunchError(f"{name}: grid must be an int or a tuple of 1 to 3 ints, got {grid!r}")
    if any(d < 0 or d >= 2 ** 31 for d in dims):
        raise LaunchError(f"{name}: grid dimensions must be in [0, 2**31), got {dims}")
    return (dims + (1, 1, 1))[:3]  # type: ignore[return-value]


def _check_array(kernel: str, name: str, dt: DType, a: Any, written: bool) -> np.ndarray:
    if not isinstance(a, np.ndarray):
        raise LaunchError(f"{kernel}: argument '{name}' (ptr<{dt}>) expects a numpy array of {dt}, "
                          f"got {type(a).__name__}")
    if a.dtype != dt.np:
        try:
            got = str(from_numpy(a.dtype))
        except EggpuError:
            got = str(a.dtype)
        raise LaunchError(f"{kernel}: argument '{name}' (ptr<{dt}>) expects an array of {dt}, got an array of {got}")
    if not a.flags.c_contiguous:
        raise LaunchError(f"{kernel}: argument '{name}' needs a C-contiguous array (got strides {a.strides}); "
                          "pass np.ascontiguousarray(...)")
    if written and not a.flags.writeable:
        raise LaunchError(f"{kernel}: argument '{name}' is a read-only array, but the kernel may write through it")
    return a


def written_params(fn: Function) -> frozenset[str]:
    """Names of the pointer parameters a store or atomic of ``fn`` may write through.

    Conservative: follows every operand of every op (and loop/branch values) back from the
    pointer operand of each store and atomic.
    """
    producers: dict[int, list[Value]] = {}  # block argument / control-flow result -> sources

    def visit(blk) -> None:
        for op in blk.ops:
            if op.op == "for":
                body = op.regions[0]
                inits = op.operands[3:]
                ys = body.ops[-1].operands if body.ops and body.ops[-1].op == "yield" else ()
                for i, a in enumerate(body.args[1:]):
                    producers[id(a)] = [inits[i]] + ([ys[i]] if i < len(ys) else [])
                for i, r in enumerate(op.results):
                    producers[id(r)] = [inits[i]] + ([ys[i]] if i < len(ys) else [])
            elif op.op == "if":
                for i, r in enumerate(op.results):
                    producers[id(r)] = [reg.ops[-1].operands[i] for reg in op.regions
                                        if reg.ops and reg.ops[-1].op == "yield"]
            for reg in op.regions:
                visit(reg)

    visit(fn.body)
    names = {id(p): p.name for p in fn.params}
    out: set[str] = set()
    seen: set[int] = set()
    stack = [op.operands[0] for op in fn.walk() if op.op == "store" or op.op.startswith("atomic_")]
    while stack:
        v = stack.pop()
        if id(v) in seen:
            continue
        seen.add(id(v))
        if id(v) in names:
            if v.type.is_pointer:
                out.add(names[id(v)] or "")
        elif id(v) in producers:
            stack.extend(producers[id(v)])
        elif isinstance(v.owner, Operation):
            stack.extend(v.owner.operands)
    return frozenset(out)


def _scalar_bits(kernel: str, name: str, dt: DType, a: Any) -> int:
    """The parameter's value converted to ``dt`` (like the interpreter), as slot bits."""
    from eggpu.ir.semantics import cast, round_f64

    what = f"{kernel}: argument '{name}' ({dt})"
    v = a
    if isinstance(v, np.ndarray):
        if v.ndim != 0:
            raise LaunchError(f"{what} expects a scalar, got an array of shape {v.shape}")
        v = v[()]
    is_bool = isinstance(v, bool | np.bool_)
    is_int = isinstance(v, int | np.integer) and not is_bool
    is_float = isinstance(v, float | np.floating)
    if dt.is_bool:
        if is_bool or (is_int and int(v) in (0, 1)):
            return int(bool(v))
        raise LaunchError(f"{what} expects a bool, got {v!r}")
    if dt.is_int:
        if not (is_int or is_bool):
            raise LaunchError(f"{what} expects an integer, got {v!r}")
        iv = int(v)
        if not dt.min <= iv <= dt.max:
            raise LaunchError(f"{what}: value {iv} is out of range [{dt.min}, {dt.max}]")
        return iv & ((1 << dt.bits) - 1)
    if not (is_int or is_bool or is_float):
        raise LaunchError(f"{what} expects a number, got {v!r}")
    if is_float:
        r = round_f64(np.asarray(float(v), dtype=np.float64), dt)
        if np.isfinite(float(v)) and not np.isfinite(r):
            raise LaunchError(f"{what}: value {float(v)!r} is out of range for {dt}")
    else:
        iv = int(v)
        if not -(1 << 63) <= iv < (1 << 64):
            raise LaunchError(f"{what}: value {iv} is out of range for {dt}")
        src = np.asarray(iv, dtype=np.int64 if iv < (1 << 63) else np.uint64)
        r = cast(src, from_numpy(src.dtype), dt)
        if not np.isfinite(r):
            raise LaunchError(f"{what}: value {iv} is out of range for {dt}")
    raw = np.asarray(r, dtype=dt.np).reshape(1).view(f"u{dt.bits // 8}")[0]
    return int(raw)


def build_host(fn: Function, *, num_warps: int = 4, assume_aligned: bool = True,
               fast_math: bool = False) -> HostKernel:
    """Lower ``fn`` in host mode and JIT-compile it (CodegenError if it cannot be lowered)."""
    import llvmlite.binding as llvm

    from .target import get_target

    get_target("host", num_warps=num_warps)  # validates num_warps
    _module, lowered = lower_function(fn, "host", num_warps, fast_math=fast_math, assume_aligned=assume_aligned,
                                      verify_llvm=False)
    tm = _host_machine()
    with _LOCK:
        try:
            mod = llvm.parse_assembly(lowered.llvm_ir)
            mod.verify()
        except RuntimeError as exc:
            raise CodegenError(f"{fn.name}: the host lowering produced invalid LLVM IR: {str(exc).strip()}") from exc
        mod.triple = tm.triple
        mod.data_layout = str(tm.target_data)
        if HOST_IR_OPT > 0:
            pto = llvm.create_pipeline_tuning_options(speed_level=HOST_IR_OPT)
            pto.loop_vectorization = False  # the code is already vectorized across lanes
            pto.slp_vectorization = False
            pb = llvm.create_pass_builder(tm, pto)
            pb.getModulePassManager().run(mod, pb)
        engine = llvm.create_mcjit_compiler(mod, tm)
        engine.finalize_object()
        address = engine.get_function_address(lowered.entry)
    return HostKernel(fn, lowered, engine, address)
