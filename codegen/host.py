"""CPU execution of the lowering: the ``host`` mode module, JIT-compiled by llvmlite's MCJIT.

:func:`build_host` lowers an IR function in ``host`` mode (one call = one CTA in lock-step,
see :mod:`eggpu.codegen.emitter`), optimizes it at O3 for the host CPU and JIT-compiles it.
:meth:`HostKernel.run` checks the arguments with the interpreter's rules and wording
(:mod:`eggpu.ir.launch_args`: count, pointer dtype, C-contiguity, writability of the arrays the
kernel may write, scalar kind and range, grid within CUDA's limits), checks the lowering's
recorded assumptions (e.g. a pointer parameter 16-byte aligned) and runs every program of the
grid in row-major order (last axis fastest, the interpreter's order) on one thread. Arrays are
written in place. Every load, store and atomic is bounds-checked before it happens
(:mod:`eggpu.codegen.bounds`): an active lane outside its array raises the interpreter's
OutOfBoundsError.

Math functions: libdevice's own code built for the host where libdevice computes them with
exactly specified arithmetic only (``__nv_sinf``, ``__nv_exp``...: the GPU's bits,
:mod:`.libdevice_host`, linked by :func:`build_host`); the others come from the C library (libm):
``expf``, ``erff``, ``tanhf``... are correctly rounded or within 1-2 ulp depending on the libm;
libdevice (the GPU) documents up to 2 ulp for ``__nv_expf``/``__nv_erff`` and 1-4 ulp for the
others. ``rsqrt`` on the host is ``1/sqrt`` (two correctly rounded operations), on the GPU
``__nv_rsqrtf`` (<= 2 ulp).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from eggpu.ir import launch_args
from eggpu.ir.debug_ops import assertion_error
from eggpu.ir.effects import written_params
from eggpu.ir.errors import CodegenError, InterpreterError, LaunchError, OutOfBoundsError
from eggpu.ir.facts import loop_bound_message
from eggpu.ir.graph import Function
from eggpu.ir.libdevice_table import order_limit_message
from eggpu.ir.raw_memory import check_buffers

from .bounds import RAW_TABLE_SLOT, RECORD_SLOTS
from .bounds import message as bounds_message
from .host_debug import AssertCheck, PrintRun, register_print_symbol
from .libdevice_host import link_host_libdevice
from .lower_libdevice import OrderCheck
from .lowering import LoweredModule, lower_function

HOST_IR_OPT = 1
"""LLVM IR pipeline level (``default<O1>``) for host modules: JIT time matters more than peak speed."""
HOST_PIPELINE: tuple[str, ...] = ("sroa", "instruction_combine", "simplify_cfg", "sccp", "new_gvn",
                                   "aggressive_dce", "instruction_combine", "simplify_cfg")
HOST_IR_OPT_MAX_INSTRUCTIONS = 8000
"""Modules with more instructions skip the IR pipeline. Its time grows faster than linearly:
the attention-backward kernel of tests/codegen/big_kernels.py (64x64 blocks, 20k
instructions) spends 28 s in ``default<O1>`` and 3 s in code generation, against 1.7 s of code
generation alone, for a run only 1.7x slower."""
HOST_CODEGEN_OPT = 0
"""Code generation level of the host target machine."""
HOST_STACK_LIMIT = 1 << 30
"""Largest stack (bytes, an upper bound computed from the module) a host kernel may need; a
kernel that may need more is refused by :func:`build_host` before it ever runs."""
INLINE_STACK_BYTES = 1 << 20
"""Kernels that may need at most this much stack run on the calling thread; bigger ones on a
dedicated thread whose stack is sized to their bound (the calling thread's stack, 8 MiB for
the main thread by default, is not enough for big blocks and overflowing it kills the process)."""
_STACK_SIZE_LOCK = threading.Lock()

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

    def __init__(self, fn: Function, lowered: LoweredModule, engine: Any, address: int, stack_bytes: int = 0):
        self.fn = fn
        self.lowered = lowered
        self.stack_bytes = stack_bytes
        """Upper bound of the stack one run needs (:func:`stack_bound`)."""
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

    def run(self, grid: int | Sequence[int], *args: Any, buffers: Sequence[np.ndarray] | None = None) -> None:
        """Run every program of ``grid`` (an int or 1-3 ints) on ``args`` (numpy arrays and scalars).

        Raises LaunchError for a wrong argument count, a non-array or wrong-dtype or
        non-contiguous array for a pointer (or a read-only one the kernel may write), a scalar of
        the wrong kind or out of range, a recorded assumption the arguments break, or a bad grid
        (a grid with a 0 axis checks the arguments and runs nothing).

        Raises OutOfBoundsError (an InterpreterError, with the interpreter's wording) when an
        active lane of a load, store or atomic lies outside the array of the pointer parameter
        its address derives from; the check runs before the access, so nothing outside an
        array is ever read or written, and no later program runs (earlier programs' and the
        failing program's earlier accesses have happened, as in the interpreter).

        ``buffers``: the arrays the kernel reaches through raw addresses (``int_to_ptr``) besides
        the pointer arguments; an access through a raw address is checked against all of them
        (:mod:`eggpu.ir.raw_memory`, :mod:`eggpu.codegen.bounds`).
        """
        dims, rank = launch_args.normalize_grid(self.fn.name, grid, LaunchError, limit=launch_args.GRID_LIMIT)
        bufs = check_buffers(self.fn.name, buffers, LaunchError)
        slots, keep, sizes = self._pack(args)
        if 0 in dims:
            return
        record = np.zeros(RECORD_SLOTS, np.int64)
        table = _address_table(keep + bufs)
        record[RAW_TABLE_SLOT], record[RAW_TABLE_SLOT + 1] = table.ctypes.data, table.shape[0]
        nslot = len(self.fn.params) + len(self.lowered.pointer_params)
        slots[nslot] = record.ctypes.data
        smem = _aligned_buffer(self.lowered.shared_bytes)
        slots[nslot + 1] = smem.ctypes.data
        with PrintRun(record.ctypes.data, self.lowered.prints):
            self._call(ctypes.addressof(slots), *dims)
        del smem, table, bufs
        if record[0]:
            chk = self.lowered.bounds_checks[int(record[0]) - 1]
            if isinstance(chk, OrderCheck):
                pid = tuple(int(x) for x in record[3:6])[:rank]
                where = f" at {chk.loc}" if chk.loc is not None else ""
                flat = int(record[1])
                lane = tuple(int(i) for i in np.unravel_index(flat, chk.shape)) if chk.shape and flat >= 0 else None
                head = f"{self.fn.name}: libdevice{where} in program {pid[0] if len(pid) == 1 else pid}"
                raise InterpreterError(order_limit_message(head, chk.symbol, int(record[2]), lane, chk.loc))
            if isinstance(chk, AssertCheck):
                raise assertion_error(self.fn.name, chk.msg, chk.src, [int(x) for x in record[3:6]], rank,
                                      _lane(int(record[1]), chk.shape))
            arrays = dict(zip(sizes, keep))  # the pointer arguments, in the order _pack saw them
            raise OutOfBoundsError(bounds_message(self.fn.name, chk, record, rank, sizes, arrays))

    def _call(self, *cargs: Any) -> None:
        """Call the grid function, on a thread with a big enough stack when the calling thread's
        may not be (see :data:`INLINE_STACK_BYTES`)."""
        if self.stack_bytes <= INLINE_STACK_BYTES:
            self._cfunc(*cargs)
            return
        size = -(-(self.stack_bytes + (1 << 20)) // (1 << 20)) << 20  # whole MiB, plus 1 MiB for libm
        with _STACK_SIZE_LOCK:  # threading.stack_size is process-wide: set, start, restore
            old = threading.stack_size(size)
            try:
                th = threading.Thread(target=self._cfunc, args=cargs, name=f"eggpu-run_cpu-{self.name}", daemon=True)
                th.start()
            finally:
                threading.stack_size(old)
        try:
            th.join()
        except BaseException:
            th.join()  # the arrays must outlive the running program, even on KeyboardInterrupt
            raise

    def _pack(self, args: Sequence[Any]):
        fn = self.fn
        params = fn.params
        names = launch_args.param_names(params)
        launch_args.check_arg_count(fn.name, names, args, LaunchError)
        # parameter slots, then each pointer parameter's byte limit, then the error record
        nptr = len(self.lowered.pointer_params)
        slots = (ctypes.c_uint64 * (len(params) + nptr + 2))()  # + error record, shared memory
        keep = []
        sizes: dict[str, int] = {}
        for i, (name, p, a) in enumerate(zip(names, params, args)):
            t = p.type
            if t.is_pointer:
                arr = launch_args.check_host_array(fn.name, name, t, a, LaunchError, writable=name in self.written)
                what = self.lowered.assumptions.get(name)
                addr = arr.__array_interface__["data"][0]
                if what == "align16" and addr % 16:
                    raise LaunchError(
                        f"{fn.name}: argument '{name}' must be 16-byte aligned (the compiled code uses vector "
                        f"accesses), but its data starts at address {addr:#x}; pass a fresh array (np.copy) "
                        f"or compile with assume_aligned=False")
                slots[i] = addr
                # an address is inside the array when 0 <= address - start < limit (bytes)
                slots[len(params) + self.lowered.pointer_params.index(name)] = max(0, arr.nbytes - arr.itemsize + 1)
                sizes[name] = arr.size
                keep.append(arr)
            else:
                v = launch_args.convert_scalar(fn.name, name, t.dtype, a, LaunchError)
                if msg := loop_bound_message(fn.name, name, self.lowered.assumptions.get(name), v):
                    raise LaunchError(msg)  # a loop's le{K} assumption (codegen/loop_form.py)
                slots[i] = _scalar_bits(v)
        return slots, keep, sizes


def _lane(flat: int, shape: tuple[int, ...]) -> tuple[int, ...] | None:
    """The coordinates of flat index ``flat`` in ``shape`` (None for a scalar: ``flat`` is -1)."""
    if flat < 0 or not shape:
        return None
    out = []
    for d in reversed(shape):
        flat, i = divmod(flat, d)
        out.append(i)
    return tuple(reversed(out))


def _address_table(arrays: list[np.ndarray]) -> np.ndarray:
    """The address table of raw-address checks (:mod:`eggpu.codegen.bounds`): one row per array,
    ``(start address, size in bytes, writable)``."""
    rows = [(a.__array_interface__["data"][0], a.nbytes, int(a.flags.writeable)) for a in arrays]
    return np.array(rows, dtype=np.int64).reshape(-1, 3)


def _aligned_buffer(nbytes: int) -> np.ndarray:
    """A zeroed 64-byte aligned byte buffer of at least ``nbytes`` (16) bytes: the CTA's shared memory."""
    n = max(nbytes, 16)
    raw = np.zeros(n + 64, np.uint8)
    off = -raw.ctypes.data % 64
    return raw[off:off + n]


def stack_bound(module: Any) -> int:
    """An upper bound of the stack (bytes) one call of the llvmlite host ``module`` needs
    (:func:`module_stats`)."""
    return module_stats(module)[1]


def module_stats(module: Any) -> tuple[int, int]:
    """The number of instructions of the llvmlite ``module`` and an upper bound of the stack
    (bytes) one call of its grid function needs.

    The bound adds the frames of *all* functions (the call chain grid -> CTA -> math helper is
    shorter than that) and counts, per function, every ``alloca`` plus one spill slot per
    instruction result: the host target machine allocates registers at level 0 (LLVM's fast
    register allocator gives each spilled virtual register its own slot and shares none), so
    a frame grows with the number of values, not with the number live at once. A vector lane
    is counted as at least 4 bytes (masks ``<N x i1>`` as 8: x86 holds compare results in
    lanes as wide as the compared values) and the sum is doubled for what instruction
    selection adds (measured: the attention-backward kernel of tests/codegen/big_kernels.py,
    64x64 blocks, is bounded by 11 MB; its JIT'd frame is 1.1 MB).
    """
    from llvmlite import ir

    def mem_size(t: Any) -> int:  # bytes of an alloca'd type (generous for anything unusual)
        if isinstance(t, (ir.ArrayType, ir.VectorType)):
            return t.count * mem_size(t.element)
        if isinstance(t, ir.IntType):
            return max(1, t.width // 8)
        if isinstance(t, (ir.HalfType, ir.FloatType)):
            return 4
        return 16

    def slot_size(t: Any) -> int:  # bytes a value may take in spill slots
        if isinstance(t, ir.VectorType):
            e = t.element
            if isinstance(e, ir.IntType) and e.width == 1:
                return 8 * t.count
            bits = e.width if isinstance(e, ir.IntType) else 64 if isinstance(e, (ir.DoubleType, ir.PointerType)) else 32
            return max(4, bits // 8) * t.count
        return 16

    total = count = 0
    for fn in module.functions:
        for bb in fn.blocks:
            count += len(bb.instructions)
            for ins in bb.instructions:
                if isinstance(ins, ir.AllocaInstr):
                    total += mem_size(ins.allocated_type) + 64
                elif not isinstance(ins.type, ir.VoidType):
                    total += slot_size(ins.type)
    return count, 2 * total + (64 << 10)


def _scalar_bits(value: np.generic) -> int:
    """A converted scalar (:func:`eggpu.ir.launch_args.convert_scalar`) as the bits of its 8-byte
    slot: the value's own bytes zero-extended (bool: 0 or 1)."""
    raw = np.asarray(value).reshape(1)
    return int(raw.view(f"u{raw.itemsize}")[0])


def _run_host_pipeline(mod, tm) -> None:
    """Run :data:`HOST_PIPELINE` on ``mod`` (or LLVM's ``default<O1>`` when it is empty) with a
    pass builder of its own: llvmlite's run registers instrumentation callbacks into the
    builder that outlive the run, so a builder is never run twice (see HOST_PIPELINE)."""
    import llvmlite.binding as llvm

    pto = llvm.create_pipeline_tuning_options(speed_level=HOST_IR_OPT)
    pto.loop_vectorization = False  # the code is already vectorized across lanes
    pto.slp_vectorization = False
    pb = llvm.create_pass_builder(tm, pto)
    if not HOST_PIPELINE:
        pb.getModulePassManager().run(mod, pb)
        return
    mpm = llvm.create_new_module_pass_manager()
    for name in HOST_PIPELINE:
        getattr(mpm, f"add_{name}_pass")()
    mpm.run(mod, pb)


def build_host(fn: Function, *, num_warps: int = 4, assume_aligned: bool = True,
               fast_math: bool = False, sm: int | None = 90, num_stages: int | None = 1,
               dot_strategy: str | None = None) -> HostKernel:
    """Lower ``fn`` in host mode and JIT-compile it (CodegenError if it cannot be lowered)."""
    import llvmlite.binding as llvm

    from .target import get_target

    get_target("host", num_warps=num_warps)  # validates num_warps
    module, lowered = lower_function(fn, "host", num_warps, fast_math=fast_math, assume_aligned=assume_aligned,
                                     verify_llvm=False, sm=sm, num_stages=num_stages, dot_strategy=dot_strategy)
    count, stack = module_stats(module)
    if stack > HOST_STACK_LIMIT:
        raise CodegenError(
            f"{fn.name}: the CPU build of this kernel may need {stack} bytes of stack, more than the "
            f"{HOST_STACK_LIMIT} bytes run_cpu allows (every element slot of its blocks is a "
            f"{lowered.num_threads}-lane vector); use smaller blocks")
    tm = _host_machine()
    register_print_symbol()  # device_print's callback (host_debug), resolvable by the JIT
    with _LOCK:
        try:
            mod = llvm.parse_assembly(lowered.llvm_ir)
            mod.verify()
        except RuntimeError as exc:
            raise CodegenError(f"{fn.name}: the host lowering produced invalid LLVM IR: {str(exc).strip()}") from exc
        mod.triple = tm.triple
        mod.data_layout = str(tm.target_data)
        link_host_libdevice(mod, sm)  # the __nv_* functions the lowering declared (libdevice_host)
        if HOST_IR_OPT > 0 and count <= HOST_IR_OPT_MAX_INSTRUCTIONS:
            _run_host_pipeline(mod, tm)
        engine = llvm.create_mcjit_compiler(mod, tm)
        engine.finalize_object()
        address = engine.get_function_address(lowered.entry)
    return HostKernel(fn, lowered, engine, address, stack)
