"""The Emitter: an llvmlite ``IRBuilder`` wrapper with the two execution modes of the one lowering.

The lowering (:mod:`eggpu.codegen.lowering` and friends) is written once against the primitives of
this class; only the primitives differ between the modes:

``ptx``
    Each CUDA thread runs the code: a *thread-level* value is an LLVM scalar. ``tid()`` reads
    ``%tid.x``, program ids read ``%ctaid``/``%nctaid``, shuffles are ``shfl.sync.bfly``, shared
    memory is one static ``addrspace(3)`` array, barriers are ``bar.sync 0``, math functions
    are libdevice's ``__nv_*``. Global pointers live in ``addrspace(1)``.
``host``
    One call runs a whole CTA of ``NT = num_warps * 32`` threads in lock-step: a thread-level
    value is an LLVM vector ``<NT x T>`` (lane ``t`` = thread ``t``). ``tid()`` is the constant
    ``<0, 1, ..., NT-1>``, shuffles are ``shufflevector`` permutes inside each warp of 32 lanes,
    shared memory is a buffer passed in by the grid loop (per-thread accesses are gathers and
    scatters), barriers are no-ops and math functions are calls made lane by lane (libdevice's own
    code built for the host where it is exact, else libm: :mod:`.libdevice_host`).

*Uniform* values (scalars of the IR: program ids, loop counters, reduction results) are plain
LLVM scalars in both modes. ``spread`` turns a uniform value into a thread-level one;
``lane0`` goes back (only for values that are equal in every thread).

Register types: ``bool`` is ``i1`` (``i8`` in memory). ``f16``/``bf16`` are ``half``/``bfloat``
in ``ptx`` mode and raw ``i16`` bit patterns in ``host`` mode, where x86 has no arithmetic on
them and LLVM would emit libcalls (``__truncsfhf2``...) that a JIT cannot resolve. The lowering
never does arithmetic on 16-bit floats: it converts to f32 with :meth:`Emitter.ext_f32` and
rounds back with :meth:`Emitter.round_from_f32`, which are native ``cvt`` instructions on the
GPU and integer bit manipulation (round to nearest even) on the host.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence

from llvmlite import ir

from eggpu.ir.dtypes import DType, bf16, f16
from eggpu.ir.errors import CodegenError

from .fp_flags import FlaggedBuilder, fp_flags
from .lanewise import lanewise_function
from .libdevice_host import host_symbol
from .llvm_values import (  # noqa: F401 - re-exported: the lowering modules import them from here
    _FLOAT_DTYPE,
    BF16,
    F16,
    F32,
    F64,
    I1,
    I8,
    I16,
    I32,
    I64,
    VOID,
    BFloatType,
    FloatConstant,
    SplatConstant,
    _bf16_bits,
    _float_bits,
    _is_false,
    _is_true,
    counted_loop,
    elem_type,
    float16_bits,
    is_const_false,
    is_const_true,
    mangle,
    round_constant,
)

PTX = "ptx"
HOST = "host"
WARP = 32

_MATH = {
    "exp": ("__nv_expf", "__nv_exp", "expf", "exp"),
    "exp2": ("__nv_exp2f", "__nv_exp2", "exp2f", "exp2"),
    "log": ("__nv_logf", "__nv_log", "logf", "log"),
    "log2": ("__nv_log2f", "__nv_log2", "log2f", "log2"),
    "sin": ("__nv_sinf", "__nv_sin", "sinf", "sin"),
    "cos": ("__nv_cosf", "__nv_cos", "cosf", "cos"),
    "tanh": ("__nv_tanhf", "__nv_tanh", "tanhf", "tanh"),
    "erf": ("__nv_erff", "__nv_erf", "erff", "erf"),
    "asin": ("__nv_asinf", "__nv_asin", "asinf", "asin"),
    "acos": ("__nv_acosf", "__nv_acos", "acosf", "acos"),
    "atan": ("__nv_atanf", "__nv_atan", "atanf", "atan"),
    "sinh": ("__nv_sinhf", "__nv_sinh", "sinhf", "sinh"),
    "cosh": ("__nv_coshf", "__nv_cosh", "coshf", "cosh"),
    "asinh": ("__nv_asinhf", "__nv_asinh", "asinhf", "asinh"),
    "acosh": ("__nv_acoshf", "__nv_acosh", "acoshf", "acosh"),
    "atanh": ("__nv_atanhf", "__nv_atanh", "atanhf", "atanh"),
    "tan": ("__nv_tanf", "__nv_tan", "tanf", "tan"),
    "log10": ("__nv_log10f", "__nv_log10", "log10f", "log10"),
    "log1p": ("__nv_log1pf", "__nv_log1p", "log1pf", "log1p"),
    "expm1": ("__nv_expm1f", "__nv_expm1", "expm1f", "expm1"),
    "exp10": ("__nv_exp10f", "__nv_exp10", "exp10f", "exp10"),
    "cbrt": ("__nv_cbrtf", "__nv_cbrt", "cbrtf", "cbrt"),
    "erfc": ("__nv_erfcf", "__nv_erfc", "erfcf", "erfc"),
    "lgamma": ("__nv_lgammaf", "__nv_lgamma", "lgammaf", "lgamma"),
    "tgamma": ("__nv_tgammaf", "__nv_tgamma", "tgammaf", "tgamma"),
    "atan2": ("__nv_atan2f", "__nv_atan2", "atan2f", "atan2"),  # binary: atan2(y, x)
    "pow": ("__nv_powf", "__nv_pow", "powf", "pow"),
    "hypot": ("__nv_hypotf", "__nv_hypot", "hypotf", "hypot"),
    "rsqrt": ("__nv_rsqrtf", "__nv_rsqrt", None, None),
}
_FAST_MATH_F32 = {"exp": "__nv_fast_expf", "log": "__nv_fast_logf", "log2": "__nv_fast_log2f",
                  "sin": "__nv_fast_sinf", "cos": "__nv_fast_cosf"}
MATH_FUNCTIONS = tuple(_MATH)
"""The math functions :meth:`Emitter.math` provides."""
LIBDEVICE_FUNCTIONS = tuple(sorted({n for names in _MATH.values() for n in names[:2] if n}
                                   | set(_FAST_MATH_F32.values()) | {"__nv_fmodf", "__nv_fmod"}))
"""Every libdevice function the lowering calls (``scalar_ops`` adds the ``fmod`` pair): what
:mod:`.libdevice` keeps in its per-installation cut of libdevice."""


class Emitter:
    """Builds one LLVM function in ``ptx`` or ``host`` mode (see the module docstring).

    Attributes: ``module`` (llvmlite module), ``mode``, ``nt`` (threads per CTA), ``b`` (the
    IRBuilder, positioned by :meth:`begin_function`), ``fast_math``, ``fp_flags`` (put on float
    arithmetic by every builder of :meth:`builder`: ``contract`` under ``fast_math`` in PTX mode),
    ``sm`` (the compute capability, e.g. 90, that decides GPU-specific strategies such as
    tensor-core ``dot``; host mode emulates that GPU's data movement), ``smem_bytes`` (the most
    shared memory any op asked for; the PTX array is sized to it at :meth:`finish`).
    """

    def __init__(self, module: ir.Module, mode: str, num_warps: int, *, fast_math: bool = False,
                 sm: int | None = None):
        if mode not in (PTX, HOST):
            raise CodegenError(f"internal: unknown emitter mode {mode!r}")
        self.module = module
        self.mode = mode
        self.num_warps = num_warps
        self.nt = num_warps * WARP
        self.fast_math = fast_math
        self.sm = sm  # compute capability the code is for (host mode: the GPU it emulates); None: unknown
        # PTX only: the CPU build of host mode stays IEEE (it is compared with the interpreter)
        self.fp_flags = fp_flags(fast_math and mode == PTX)
        self.b: ir.IRBuilder = None  # type: ignore[assignment]
        self.fn: ir.Function = None  # type: ignore[assignment]
        self.smem_bytes = 0
        # how many times shared memory was touched (a base taken, a reservation, a barrier, a read
        # marked in flight): a loop whose body leaves it unchanged cannot have left reads in flight
        self.smem_touches = 0
        self._smem_dirty = False
        self.exchanges = 0  # whole-block reductions' shared-memory exchanges lowered so far
        self._tid: ir.Value | None = None
        self._pid: list[ir.Value] = []
        self._nprog: list[ir.Value] = []
        self._smem_base: ir.Value | None = None
        self._smem_global: ir.GlobalVariable | None = None
        self._counter = 0
        self._scratch: ir.Value | None = None
        self._splat_mask: ir.Constant | None = None
        self._allocas: ir.Block | None = None
        # host: lane buffers by (element type, lanes); the ids of those borrowed by open scopes
        self._lane_pool: dict[tuple[str, int], list[ir.Value]] = {}
        self._lane_busy: set[int] = set()
        self._lane_scopes: list[list[int]] = []

    # ------------------------------------------------------------ modes and types

    @property
    def is_host(self) -> bool:
        return self.mode == HOST

    @property
    def is_ptx(self) -> bool:
        return self.mode == PTX

    @property
    def global_ptr(self) -> ir.PointerType:
        """Type of a pointer into global memory (``ptr addrspace(1)`` on the GPU)."""
        return ir.PointerType(addrspace=1 if self.is_ptx else 0)

    @property
    def shared_ptr(self) -> ir.PointerType:
        return ir.PointerType(addrspace=3 if self.is_ptx else 0)

    def reg_type(self, dt: DType | None) -> ir.Type:
        """LLVM type of a value of ``dt`` in registers (``None`` = a global pointer)."""
        if dt is None:
            return self.global_ptr
        if dt.is_bool:
            return I1
        if dt.is_float:
            if dt.bits == 16:
                return I16 if self.is_host else (BF16 if dt == bf16 else F16)
            return F32 if dt.bits == 32 else F64
        return ir.IntType(dt.bits)

    def mem_type(self, dt: DType) -> ir.Type:
        """LLVM type of ``dt`` in memory (bool is a byte)."""
        return I8 if dt.is_bool else self.reg_type(dt)

    def thread_type(self, t: ir.Type) -> ir.Type:
        """The type of a thread-level value whose per-thread type is ``t``."""
        return ir.VectorType(t, self.nt) if self.is_host else t

    def name(self, prefix: str) -> str:
        self._counter += 1
        return f"{prefix}{self._counter}"

    # ------------------------------------------------------------ constants

    def const(self, t: ir.Type, value) -> ir.Constant:
        """A constant of type ``t`` (a vector type gives a splat)."""
        if isinstance(t, ir.VectorType):
            return SplatConstant(t, self.const(t.element, value))
        if isinstance(t, ir.IntType):
            v = int(value)
            v &= (1 << t.width) - 1
            return ir.Constant(t, v)
        if type(t) in _FLOAT_DTYPE and value is not None and value is not ir.Undefined:
            return FloatConstant(t, value)
        return ir.Constant(t, value)

    def k(self, like: ir.Value, value) -> ir.Constant:
        """A constant shaped like ``like`` (scalar or thread vector) with ``like``'s element type."""
        return self.const(like.type, value)

    def kt(self, like: ir.Value, t: ir.Type, value) -> ir.Constant:
        """A constant of element type ``t`` shaped like ``like``."""
        if isinstance(like.type, ir.VectorType):
            return self.const(ir.VectorType(t, like.type.count), value)
        return self.const(t, value)

    def reg_const(self, dt: DType, value, *, thread: bool = False) -> ir.Constant:
        """A register constant of ``dt`` (16-bit floats are bit patterns on the host)."""
        t = self.reg_type(dt)
        if dt.is_float and dt.bits == 16:
            if self.is_host:
                value = float16_bits(value, dt)
        elif dt.is_bool:
            value = int(bool(value))
        elif dt.is_int:
            value = int(value)
        return self.const(self.thread_type(t) if thread else t, value)

    def like_type(self, like: ir.Value, t: ir.Type) -> ir.Type:
        """``t`` as a vector when ``like`` is a vector."""
        if isinstance(like.type, ir.VectorType):
            return ir.VectorType(t, like.type.count)
        return t

    # ------------------------------------------------------------ functions and declarations

    def declare(self, name: str, ret: ir.Type, args: Sequence[ir.Type], *, attrs: Sequence[str] = ()) -> ir.Function:
        """The function ``name`` of the module, declared on first use."""
        fn = self.module.globals.get(name)
        if fn is None:
            fn = ir.Function(self.module, ir.FunctionType(ret, list(args)), name)
            for a in attrs:
                fn.attributes.add(a)
        return fn

    def intrinsic(self, name: str, ret: ir.Type, args: Sequence[ir.Value], overload: Sequence[ir.Type] = ()) -> ir.Value:
        """Call the LLVM intrinsic ``name`` mangled by ``overload`` types."""
        full = name + "".join("." + mangle(t) for t in overload)
        fn = self.declare(full, ret, [a.type for a in args])
        return self.b.call(fn, list(args))

    def builder(self, block: ir.Block) -> ir.IRBuilder:
        """A builder at the end of ``block`` that puts :attr:`fp_flags` on float arithmetic."""
        return FlaggedBuilder(block, self.fp_flags)

    def begin_function(self, fn: ir.Function, *, pids: Sequence[ir.Value] = (), nprogs: Sequence[ir.Value] = (),
                       smem: ir.Value | None = None) -> None:
        """Position the builder at the entry of ``fn`` and set up tid/program ids/shared memory.

        ``ptx``: the special registers are read here. ``host``: ``pids``/``nprogs`` are the
        CTA function's arguments and ``smem`` its shared-memory buffer argument.
        """
        self.fn = fn
        self._allocas = fn.append_basic_block("allocas")
        body = fn.append_basic_block("entry")
        self.builder(self._allocas).branch(body)
        self.b = self.builder(body)
        if self.is_ptx:
            self._tid = self.intrinsic("llvm.nvvm.read.ptx.sreg.tid.x", I32, [])
            self._pid = [self.intrinsic(f"llvm.nvvm.read.ptx.sreg.ctaid.{a}", I32, []) for a in "xyz"]
            self._nprog = [self.intrinsic(f"llvm.nvvm.read.ptx.sreg.nctaid.{a}", I32, []) for a in "xyz"]
        else:
            # one SSA value (printed once) instead of a 128-element constant at every use
            vt = ir.VectorType(I32, self.nt)
            self._tid = self.b.or_(ir.Constant(vt, list(range(self.nt))), SplatConstant(vt, I32(0)), name="tid")
            self._pid = list(pids)
            self._nprog = list(nprogs)
            self._smem_base = smem

    def finish(self, *, dynamic_shared: bool = False) -> None:
        """Size the PTX shared-memory array (created on first use) to :attr:`smem_bytes`, or,
        with ``dynamic_shared``, make it the kernel's dynamic shared memory: an external
        ``[0 x i8]`` (PTX ``.extern .shared .align 16 .b8 __eggpu_smem[]``) whose size the
        launch gives."""
        gv = self._smem_global
        if gv is None:
            return
        if dynamic_shared:
            gv.value_type = ir.ArrayType(I8, 0)
            gv.linkage = "external"
            return
        arr = ir.ArrayType(I8, max(self.smem_bytes, 16))
        gv.value_type = arr
        gv.initializer = ir.Constant(arr, ir.Undefined)

    # ------------------------------------------------------------ threads and programs

    def tid(self) -> ir.Value:
        """The thread index (thread-level i32)."""
        return self._tid  # type: ignore[return-value]

    def tid_here(self) -> ir.Value:
        """:meth:`tid`, read again at this point on the GPU (a ``volatile`` ``mov.u32 %tid.x``,
        which LLVM neither merges with another read nor hoists), so that a value made from it
        (a shared-memory address: 64 bits, two registers) is recomputed where it is used rather
        than kept live across the loops between two uses. The host's is :meth:`tid`."""
        if not self.is_ptx:
            return self.tid()
        asm = ir.InlineAsm(ir.FunctionType(I32, []), "mov.u32 $0, %tid.x;", "=r", side_effect=True)
        return self.b.call(asm, [])

    def program_id(self, axis: int) -> ir.Value:
        return self._pid[axis]

    def num_programs(self, axis: int) -> ir.Value:
        return self._nprog[axis]

    def spread(self, u: ir.Value) -> ir.Value:
        """A uniform value as a thread-level value (identity on the GPU)."""
        if not self.is_host or isinstance(u.type, ir.VectorType):
            return u
        vt = ir.VectorType(u.type, self.nt)
        if isinstance(u, ir.Constant) and not isinstance(u, SplatConstant):
            return SplatConstant(vt, u)
        one = self.b.insert_element(ir.Constant(ir.VectorType(u.type, 1), ir.Undefined), u, I32(0))
        if self._splat_mask is None:
            self._splat_mask = ir.Constant(ir.VectorType(I32, self.nt), [0] * self.nt)
        return self.b.shuffle_vector(one, ir.Constant(ir.VectorType(u.type, 1), ir.Undefined), self._splat_mask)

    def lane0(self, v: ir.Value) -> ir.Value:
        """A thread-level value known to be equal in every thread, as a uniform value."""
        if self.is_host and isinstance(v.type, ir.VectorType):
            if isinstance(v, SplatConstant):
                return v.scalar
            return self.b.extract_element(v, I32(0))
        return v

    # ------------------------------------------------------------ warps

    def shfl_xor(self, v: ir.Value, lane_mask: int) -> ir.Value:
        """The value of thread ``tid ^ lane_mask`` (``lane_mask < 32``: within the warp)."""
        assert 0 < lane_mask < WARP
        if self.is_host:
            perm = [t ^ lane_mask for t in range(self.nt)]
            return self.b.shuffle_vector(v, ir.Constant(v.type, ir.Undefined), ir.Constant(ir.VectorType(I32, self.nt), perm))
        b = self.b
        t = v.type
        k = I32(lane_mask)

        def shfl32(w: ir.Value) -> ir.Value:
            return self.intrinsic("llvm.nvvm.shfl.sync.bfly.i32", I32, [I32(-1), w, k, I32(WARP - 1)])

        if isinstance(t, ir.PointerType):
            return b.inttoptr(self._shfl64(b.ptrtoint(v, I64), shfl32), t)
        if isinstance(t, ir.IntType):
            if t.width == 32:
                return shfl32(v)
            if t.width < 32:
                return b.trunc(shfl32(b.zext(v, I32)), t)
            return self._shfl64(v, shfl32)
        if isinstance(t, ir.FloatType):
            return b.bitcast(shfl32(b.bitcast(v, I32)), t)
        if isinstance(t, ir.DoubleType):
            return b.bitcast(self._shfl64(b.bitcast(v, I64), shfl32), t)
        # half / bfloat
        return b.bitcast(b.trunc(shfl32(b.zext(b.bitcast(v, I16), I32)), I16), t)

    def _shfl64(self, v: ir.Value, shfl32: Callable[[ir.Value], ir.Value]) -> ir.Value:
        b = self.b
        lo = shfl32(b.trunc(v, I32))
        hi = shfl32(b.trunc(b.lshr(v, I64(32)), I32))
        return b.or_(b.zext(lo, I64), b.shl(b.zext(hi, I64), I64(32)))

    @property
    def smem_dirty(self) -> bool:
        """A shared-memory read may still be in flight: a barrier is due before the next write.
        Setting it counts as a touch (:attr:`smem_touches`)."""
        return self._smem_dirty

    @smem_dirty.setter
    def smem_dirty(self, value: bool) -> None:
        if value:
            self.smem_touches += 1
        self._smem_dirty = value

    def barrier(self) -> None:
        """``bar.sync 0`` on the GPU; nothing on the host (lanes run in lock-step)."""
        if self.is_ptx:
            self.intrinsic("llvm.nvvm.barrier.cta.sync.aligned.all", VOID, [I32(0)])
        self.smem_touches += 1
        self.smem_dirty = False

    # ------------------------------------------------------------ shared memory

    def smem_reserve(self, nbytes: int) -> None:
        self.smem_touches += 1
        self.smem_bytes = max(self.smem_bytes, nbytes)

    def smem_begin_write(self) -> None:
        """Call before writing shared memory: a barrier if earlier reads may be in flight."""
        if self.smem_dirty:
            self.barrier()

    def smem_array(self, byte_offset: int) -> ir.Value:
        """Uniform pointer ``byte_offset`` bytes into the shared buffer."""
        self.smem_touches += 1
        if self._smem_base is None and self.is_ptx:
            gv = ir.GlobalVariable(self.module, ir.ArrayType(I8, 16), "__eggpu_smem", addrspace=3)
            gv.type = ir.PointerType(addrspace=3)  # opaque pointer; the array type is set in finish()
            gv.linkage = "internal"
            gv.align = 16
            self._smem_global = gv
            self._smem_base = gv
        base = self._smem_base
        if byte_offset == 0:
            return base  # type: ignore[return-value]
        return self.b.gep(base, [I32(byte_offset)], source_etype=I8)

    def smem_align(self, nbytes: int) -> None:
        """Align the shared buffer's base to ``nbytes`` (PTX ``.align``; wgmma's swizzle works on
        absolute shared addresses). Host: offsets from the buffer are what counts, nothing to do."""
        if self._smem_global is not None:
            self._smem_global.align = max(self._smem_global.align or 16, nbytes)

    def smem_store(self, base: ir.Value, t: ir.Type, idx: ir.Value, val: ir.Value, mask: ir.Value | None = None) -> None:
        """Each thread stores ``val`` (type ``t``) at element ``idx`` of the array at ``base``."""
        b = self.b
        if self.is_host:
            ptrs = b.gep(self.spread(base), [idx], source_etype=t)
            self._scatter(val, ptrs, mask)
            return
        p = b.gep(base, [idx], source_etype=t)
        if mask is None:
            b.store(val, p)
        else:
            with b.if_then(mask):
                b.store(val, p)

    def smem_load(self, base: ir.Value, t: ir.Type, idx: ir.Value) -> ir.Value:
        """Each thread loads element ``idx`` (thread-level) of the array at ``base``."""
        b = self.b
        if self.is_host:
            ptrs = b.gep(self.spread(base), [idx], source_etype=t)
            return self._gather(ptrs, t, None, None)
        return b.load(b.gep(base, [idx], source_etype=t), typ=t)

    def smem_load_uniform(self, base: ir.Value, t: ir.Type, idx: ir.Value) -> ir.Value:
        """Every thread loads the same element ``idx`` (uniform): a uniform value."""
        b = self.b
        return b.load(b.gep(base, [idx], source_etype=t), typ=t)

    # ------------------------------------------------------------ global memory

    def gload(self, ptr: ir.Value, t: ir.Type, mask: ir.Value | None, other: ir.Value | None) -> ir.Value:
        """Thread-level load of type ``t`` from ``ptr`` where ``mask`` (else ``other`` or 0)."""
        b = self.b
        if self.is_host and isinstance(ptr.type, ir.VectorType):
            return self._gather(ptr, t, mask, other)
        if mask is None or _is_true(mask):
            return b.load(ptr, typ=t)
        dflt = other if other is not None else self.const(t, 0)
        if _is_false(mask):
            return dflt
        entry = b.block
        with b.if_then(mask):
            loaded = b.load(ptr, typ=t)
            then = b.block
        phi = b.phi(t)
        phi.add_incoming(loaded, then)
        phi.add_incoming(dflt, entry)
        return phi

    def gload_vector(self, ptr: ir.Value, t: ir.Type, n: int, align: int) -> list[ir.Value]:
        """GPU only: one ``<n x t>`` load of ``n`` consecutive elements (``ld.global.v{n}``)."""
        b = self.b
        v = b.load(ptr, typ=ir.VectorType(t, n), align=align)
        return [b.extract_element(v, I32(i)) for i in range(n)]

    def gstore(self, ptr: ir.Value, val: ir.Value, mask: ir.Value | None) -> None:
        b = self.b
        if self.is_host and isinstance(ptr.type, ir.VectorType):
            self._scatter(val, ptr, mask)
            return
        if mask is None or _is_true(mask):
            b.store(val, ptr)
            return
        if _is_false(mask):
            return
        with b.if_then(mask):
            b.store(val, ptr)

    def gstore_vector(self, ptr: ir.Value, vals: Sequence[ir.Value], align: int) -> None:
        """GPU only: one vector store of consecutive elements (``st.global.v{n}``)."""
        b = self.b
        t = vals[0].type
        vec = ir.Constant(ir.VectorType(t, len(vals)), ir.Undefined)
        for i, v in enumerate(vals):
            vec = b.insert_element(vec, v, I32(i))
        st = b.store(vec, ptr)
        st.align = align

    def _gather(self, ptrs: ir.Value, t: ir.Type, mask: ir.Value | None, other: ir.Value | None) -> ir.Value:
        """Host: lane-by-lane loads; masked-off lanes read a scratch slot and take ``other``."""
        b = self.b
        masked = mask is not None and not _is_true(mask)
        if masked:
            ptrs = b.select(mask, ptrs, self.spread(self.scratch(ptrs.type.element)))
        (out,) = self.lane_loop([ptrs], [t], lambda lanes: [b.load(lanes[0], typ=t)])
        if masked:
            dflt = other if other is not None else self.const(out.type, 0)
            out = b.select(mask, out, dflt)
        return out

    def _scatter(self, val: ir.Value, ptrs: ir.Value, mask: ir.Value | None) -> None:
        self.scatter_slots([ptrs], [val], [mask])

    def scatter_slots(self, ptrs: Sequence[ir.Value], vals: Sequence[ir.Value],
                      masks: Sequence[ir.Value | None]) -> None:
        """Host: store several slots lane by lane, lane-major; masked-off lanes write a scratch slot.

        Called with the slots of one layout chunk (consecutive flat elements), chunk after
        chunk, this is row-major element order: the last write to an address wins, like the
        interpreter."""
        b = self.b
        safe = []
        for p, m in zip(ptrs, masks):
            if m is not None and _is_false(m):
                continue
            if m is not None and not _is_true(m):
                p = b.select(m, p, self.spread(self.scratch(p.type.element)))
            safe.append(p)
        vals = [v for v, m in zip(vals, masks) if not (m is not None and _is_false(m))]
        if not safe:
            return
        n = len(safe)

        def body(lanes: list[ir.Value]) -> list[ir.Value]:
            for j in range(n):
                b.store(lanes[n + j], lanes[j])
            return []

        self.lane_loop(safe + list(vals), [], body)

    def scratch(self, ptr_type: ir.Type) -> ir.Value:
        """A 16-byte stack slot (in the entry block) that masked-off host lanes may access."""
        if self._scratch is None:
            self._scratch = self.entry_alloca(ir.ArrayType(I8, 16))
        if isinstance(ptr_type, ir.PointerType) and ptr_type.addrspace != 0:
            return self.b.addrspace_cast(self._scratch, ptr_type)
        return self._scratch

    def entry_alloca(self, t: ir.Type) -> ir.Value:
        """An ``alloca`` of ``t`` in the function's first block (64-byte aligned)."""
        eb = self.builder(self._allocas)
        eb.position_before(self._allocas.terminator)
        a = eb.alloca(t)
        a.align = 64
        a.type = ir.PointerType()  # opaque pointer (llvmlite would type-check against T*)
        return a

    # ------------------------------------------------------------ control flow

    def new_block(self, prefix: str) -> ir.Block:
        return self.fn.append_basic_block(self.name(prefix))

    @contextlib.contextmanager
    def only_thread0(self) -> Iterator[None]:
        """Code that one thread of the CTA runs (the GPU branches on ``tid == 0``; the host runs it once)."""
        if self.is_host:
            yield
            return
        with self.b.if_then(self.b.icmp_unsigned("==", self.tid(), I32(0))):
            yield

    def lane_loop(self, inputs: Sequence[ir.Value], out_types: Sequence[ir.Type],
                  body: Callable[[list[ir.Value]], list[ir.Value]]) -> list[ir.Value]:
        """Host only: run ``body`` on lane ``t`` of every input, for t = 0..NT-1 in order.

        ``body`` gets the scalar lanes and returns one scalar per ``out_types``; the results
        are gathered into thread vectors. The inputs are spilled to stack buffers once and read
        back per lane (a small loop instead of ``NT`` unrolled copies, which keeps JIT
        compilation fast). Used for global and shared memory accesses and atomics.
        """
        assert self.is_host
        with self.lane_buffer_scope():
            return self._lane_loop(inputs, out_types, body)

    def _lane_loop(self, inputs: Sequence[ir.Value], out_types: Sequence[ir.Type],
                   body: Callable[[list[ir.Value]], list[ir.Value]]) -> list[ir.Value]:
        b = self.b
        nt = self.nt
        # i1 vectors are bit-packed in memory: buffers hold bytes
        bufs_in = []
        for v in inputs:
            et = v.type.element
            if et == I1:
                v = b.zext(v, ir.VectorType(I8, nt))
            buf = self.lane_buffer(v.type)
            b.store(v, buf)
            bufs_in.append((buf, et))
        bufs_out = [(self.lane_buffer(ir.VectorType(I8 if t == I1 else t, nt)), t) for t in out_types]
        def lane(t: ir.Value) -> None:
            lanes = []
            for buf, et in bufs_in:
                v = b.load(b.gep(buf, [I32(0), t], source_etype=buf.allocated_type), typ=I8 if et == I1 else et)
                lanes.append(b.trunc(v, I1) if et == I1 else v)
            for (buf, et), o in zip(bufs_out, body(lanes)):
                b.store(b.zext(o, I8) if et == I1 else o, b.gep(buf, [I32(0), t], source_etype=buf.allocated_type))

        counted_loop(b, nt, lane, prefix=self.name("lanes"))
        outs = []
        for buf, et in bufs_out:
            v = b.load(buf, typ=ir.VectorType(I8 if et == I1 else et, nt))
            outs.append(b.trunc(v, ir.VectorType(I1, nt)) if et == I1 else v)
        return outs

    def lane_buffer(self, vt: ir.VectorType) -> ir.Value:
        """A stack buffer holding one thread vector, as an array of its lanes.

        Inside :meth:`lane_buffer_scope` the buffer comes from a pool and is reused by later
        scopes (a buffer is only live within the scope that borrowed it), so the CTA's stack
        frame does not grow with the number of memory accesses; outside a scope it is a fresh
        ``alloca``."""
        t = ir.ArrayType(vt.element, vt.count)
        if not self._lane_scopes:
            return self.entry_alloca(t)
        pool = self._lane_pool.setdefault((str(vt.element), vt.count), [])
        for buf in pool:
            if id(buf) not in self._lane_busy:
                break
        else:
            buf = self.entry_alloca(t)
            pool.append(buf)
        self._lane_busy.add(id(buf))
        self._lane_scopes[-1].append(id(buf))
        return buf

    @contextlib.contextmanager
    def lane_buffer_scope(self) -> Iterator[None]:
        """Lane buffers taken by :meth:`lane_buffer` inside the ``with`` are returned to the pool
        at its end: use it around code whose buffers are dead after it (stored, looped over,
        read back)."""
        self._lane_scopes.append([])
        try:
            yield
        finally:
            for i in self._lane_scopes.pop():
                self._lane_busy.discard(i)

    # ------------------------------------------------------------ 16-bit floats

    def ext_f32(self, v: ir.Value, dt: DType) -> ir.Value:
        """A 16-bit float register value (``dt`` f16/bf16) widened exactly to f32."""
        b = self.b
        if self.is_ptx:
            return b.fpext(v, self.like_type(v, F32))
        h = b.zext(v, self.like_type(v, I32))
        if dt == bf16:
            return b.bitcast(b.shl(h, self.k(h, 16)), self.like_type(v, F32))
        # f16: normals and subnormals by an exact power-of-two scaling, inf/NaN by bit surgery.
        sign = b.shl(b.and_(h, self.k(h, 0x8000)), self.k(h, 16))
        em = b.and_(h, self.k(h, 0x7FFF))
        shifted = b.shl(em, self.k(h, 13))
        ft = self.like_type(v, F32)
        scaled = b.fmul(b.bitcast(shifted, ft), self.const(ft, 2.0 ** 112))
        special = b.or_(shifted, self.k(h, 0x7F800000))
        is_special = b.icmp_unsigned(">=", em, self.k(h, 0x7C00))
        bits = b.select(is_special, special, b.bitcast(scaled, h.type))
        return b.bitcast(b.or_(bits, sign), ft)

    def round_from_f32(self, v: ir.Value, dt: DType) -> ir.Value:
        """An f32 value rounded (nearest even) to the 16-bit float ``dt``, as a register value."""
        b = self.b
        if self.is_ptx:
            return b.fptrunc(v, self.like_type(v, self.reg_type(dt)))
        if dt == f16:
            return _soft_round_f32(self, v, exp_bits=5, mant_bits=10)
        return _soft_round_f32(self, v, exp_bits=8, mant_bits=7)

    def float_bits(self, v: ir.Value, dt: DType) -> ir.Value:
        """The bits of a float register value as an integer of the same width."""
        if self.is_host and dt.bits == 16:
            return v
        return self.b.bitcast(v, self.like_type(v, ir.IntType(dt.bits)))

    def float_from_bits(self, v: ir.Value, dt: DType) -> ir.Value:
        if self.is_host and dt.bits == 16:
            return v
        return self.b.bitcast(v, self.like_type(v, self.reg_type(dt)))

    # ------------------------------------------------------------ math library

    def math(self, op: str, x: ir.Value, *more: ir.Value) -> ir.Value:
        """``op`` (a name of ``_MATH``: exp, log, sin, tanh, erf, asin, atanh, ...) of f32 or f64 values
        (``more``: the further operands of a binary function, ``atan2(x, y)`` of the same type).

        GPU: libdevice ``__nv_*`` (the ``__nv_fast_*`` variants under ``fast_math`` for f32).
        Host, one call per lane: libdevice's own ``__nv_*`` where it reaches only exactly specified
        arithmetic (:func:`.libdevice_host.host_symbol`: the GPU's bits), else libm; ``rsqrt`` is
        ``1 / sqrt`` (correctly rounded twice).
        """
        b = self.b
        t = elem_type(x.type)
        is64 = isinstance(t, ir.DoubleType)
        names = _MATH[op]
        args = [x, *more]
        if self.is_ptx:
            name = names[1] if is64 else names[0]
            if self.fast_math and not is64 and op in _FAST_MATH_F32:
                name = _FAST_MATH_F32[op]
            fn = self.declare(name, t, [t] * len(args))
            return b.call(fn, args)
        if op == "rsqrt":
            s = self.intrinsic("llvm.sqrt", x.type, [x], [x.type])
            return b.fdiv(self.k(x, 1.0), s)
        name = names[3] if is64 else names[2]
        if host_symbol(names[1] if is64 else names[0], fast_math=self.fast_math):
            name = names[1] if is64 else names[0]  # libdevice's own code, built for the host
        fn = self.declare(name, t, [t] * len(args))
        if not isinstance(x.type, ir.VectorType):
            return b.call(fn, args)
        return b.call(self._vector_math(name, fn, x.type, len(args)), args)

    def _vector_math(self, name: str, scalar_fn: ir.Function, vt: ir.VectorType, nargs: int = 1) -> ir.Function:
        """``__eggpu_vmath_{name}_v{N}``: a helper applying ``scalar_fn`` (of ``nargs`` operands) lane by lane."""
        return lanewise_function(self.module, f"__eggpu_vmath_{name}_v{vt.count}", scalar_fn, [vt] * nargs, vt)


def _soft_round_f32(em: Emitter, x: ir.Value, *, exp_bits: int, mant_bits: int) -> ir.Value:
    """Round f32 values to a narrower IEEE format (nearest even) with integer operations.

    Returns the ``16``-bit pattern. NaN keeps its sign and top payload bits and is made quiet;
    values at or above the largest finite + half an ulp become inf; results below the normal
    range are rounded as subnormals.
    """
    b = em.b
    w = b.bitcast(x, em.like_type(x, I32))
    bias = (1 << (exp_bits - 1)) - 1
    shift = 23 - mant_bits
    emax = (1 << exp_bits) - 2 - bias
    overflow_bits = ((emax + 127) << 23) | (((1 << (mant_bits + 1)) - 1) << (23 - mant_bits - 1))
    min_normal_bits = (1 - bias + 127) << 23
    inf_t = ((1 << exp_bits) - 1) << mant_bits
    quiet_t = 1 << (mant_bits - 1)

    def k(v):
        return em.k(w, v)

    sign = b.lshr(b.and_(w, k(0x80000000)), k(16))
    a = b.and_(w, k(0x7FFFFFFF))
    is_nan = b.icmp_unsigned(">", a, k(0x7F800000))
    overflow = b.icmp_unsigned(">=", a, k(overflow_bits))
    is_normal = b.icmp_unsigned(">=", a, k(min_normal_bits))

    def rne(m: ir.Value, sh: ir.Value) -> ir.Value:
        q = b.lshr(m, sh)
        rem = b.and_(m, b.sub(b.shl(k(1), sh), k(1)))
        half = b.shl(k(1), b.sub(sh, k(1)))
        up = b.or_(b.icmp_unsigned(">", rem, half),
                   b.and_(b.icmp_unsigned("==", rem, half), b.icmp_unsigned("!=", b.and_(q, k(1)), k(0))))
        return b.add(q, b.zext(up, w.type))

    rebased = b.sub(a, k((127 - bias) << 23)) if bias != 127 else a
    q_norm = rne(rebased, k(shift))
    e = b.lshr(a, k(23))
    e1 = b.select(b.icmp_unsigned("==", e, k(0)), k(1), e)
    m = b.or_(b.and_(a, k(0x7FFFFF)), b.select(b.icmp_unsigned("==", e, k(0)), k(0), k(0x800000)))
    sh = b.sub(k(151 - bias - mant_bits), e1)
    sh = b.select(b.icmp_unsigned(">", sh, k(25)), k(25), sh)
    q_sub = rne(m, sh)
    nan_bits = b.or_(k(inf_t | quiet_t), b.and_(b.lshr(a, k(shift)), k((1 << mant_bits) - 1)))
    r = b.select(is_normal, q_norm, q_sub)
    r = b.select(overflow, k(inf_t), r)
    r = b.select(is_nan, nan_bits, r)
    r = b.or_(r, sign)
    return b.trunc(r, em.like_type(x, I16))
