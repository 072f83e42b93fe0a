"""``@eggpu.jit``: Triton-style untyped kernels, launched as ``fn[grid](*args, **constexprs)``.

``@eggpu.jit`` returns a :class:`JITFunction`. It is two things at once, as in Triton:

* a **helper**: called from a kernel, its body is inlined (the frontend unwraps
  :attr:`JITFunction.fn`); called as plain Python, it runs ``fn`` as Python;
* a **kernel**: ``fn[grid](*args, **kwargs)`` specializes ``fn`` on the launch arguments and runs it.

Specialization follows Triton's rules for the argument of each unannotated parameter:

=====================================================  ==========================================
argument                                               parameter
=====================================================  ==========================================
numpy array (also DLPack CPU tensors, e.g. torch)      ``tl.Pointer[dtype of the array]``
object with ``__cuda_array_interface__`` (CuPy,         ``tl.Pointer[its dtype]`` (GPU launches only)
torch CUDA tensors)
``bool``                                               ``tl.int1``
``int``                                                ``tl.int32``; ``tl.int64`` when it does not
                                                       fit, ``tl.uint64`` for ``[2**63, 2**64)``
``float``                                              ``tl.float32``
numpy scalar                                           its dtype
``str``, ``None``, a dtype                             a compile-time constant
a host ``TensorDescriptor`` (:mod:`.descriptors`)      a tensor descriptor: its block shape and
                                                       padding compile-time, its array, shape and
                                                       strides hidden runtime parameters
=====================================================  ==========================================

Beyond the types, a compiled launch is specialized on argument *values* as Triton does, and each
such fact is part of the compile (its cache key, ``ck.report["specialization"]``) and checked
again at every launch (:mod:`eggpu.ir.facts`): an integer argument divisible by 16 (``div16``) or
equal to 1 (``eq1``, compiled as the constant), a buffer 16-byte aligned (``align16``; CPU runs
only: a GPU launch copies numpy arrays into aligned buffers), and ``offsets_i32`` when every grid
axis times the kernel's largest block fits in ``2**31``. A launch whose arguments differ gets its
own specialization, never code compiled for other values. ``@eggpu.jit(do_not_specialize=[...])``
(names or positions) keeps parameters out of it. The interpreter (``EGGPU_JIT_DEVICE=interpret``)
runs the source IR with only the kernel's own facts (``tl.multiple_of``, ``tl.assume``).

Parameters annotated ``tl.constexpr`` are compile-time constants (passed by position or keyword);
a parameter annotated with a dtype or ``tl.Pointer[dtype]`` must get an argument of that type.
Each specialization is an ordinary :class:`~eggpu.kernel_macro.kernel.Kernel` instance (built by
the same machinery as ``@eggpu.kernel``; :meth:`JITFunction.specialize` returns it), compiled
through the compile seam (:data:`~eggpu.kernel_macro.hooks.COMPILE_HOOK`, i.e. ``eggpu.compile``
with its disk cache) and cached in-process per (argument types, constexpr values, options).

Where it runs: with a CUDA GPU (:data:`~eggpu.kernel_macro.hooks.GPU_AVAILABLE_HOOK`) through
``CompiledKernel.launch`` (numpy arrays are copied in and back); without one through
``CompiledKernel.run_cpu`` (the compiled lowering on the CPU, numpy arrays written in place). The
environment variable ``EGGPU_JIT_DEVICE`` overrides this: ``gpu``, ``cpu``, or ``interpret``
(the numpy interpreter, no compilation — like Triton's ``TRITON_INTERPRET=1``).

``grid`` is an int, a tuple of up to three ints, or a callable taking the launch's meta dict
(every argument by parameter name, constexprs included) and returning one. Triton's launch
options ``num_warps``, ``num_stages`` and ``debug`` (compile options; ``debug=True`` checks the
kernel's ``tl.device_assert``s, default ``TRITON_DEBUG``) and ``num_ctas``, ``maxnreg``,
``enable_fp_fusion`` (accepted, no effect) may be passed as keywords when no parameter has that name.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from eggpu.ir.debug_ops import debug_default, resolve_debug
from eggpu.ir.device_buffers import device_tensor, tensor_key
from eggpu.ir.dtypes import BY_NAME, DType, bool_, f32, from_numpy, i32, i64, u64
from eggpu.ir.envvars import getenv
from eggpu.ir.errors import IRError, LaunchError
from eggpu.ir.facts import I32_SPAN

from . import descriptors, hooks
from . import language as tl
from .constexpr_function import cdiv, next_power_of_2
from .errors import CompileUnavailableError, DecoratorArgumentError
from .kernel import Kernel, KernelSpec, _render_const, pascal_case
from .signature import CONSTEXPR, POINTER, SCALAR, JitParam, analyze_jit, specialized_signature

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing on a cache hit
if TYPE_CHECKING:
    from typing import Any

__all__ = ["JITFunction", "JitKernel", "cdiv", "next_power_of_2"]

_LAUNCH_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg", "enable_fp_fusion", "debug")
_DEVICES = ("auto", "gpu", "cpu", "interpret")
_gpu: bool | None = None


def _gpu_available() -> bool:
    global _gpu
    if _gpu is None:
        hook = hooks.GPU_AVAILABLE_HOOK
        _gpu = bool(hook()) if hook is not None else False
    return _gpu


def _device_or_none() -> str | None:
    """:func:`_device`, or None where it would raise (the general path reports it in its turn)."""
    try:
        return _device()
    except LaunchError:
        return None


_MODES: dict[str, str] = {}  # EGGPU_JIT_DEVICE values -> device modes, as read (auto is resolved each time)


def _device() -> str:
    raw = getenv("EGGPU_JIT_DEVICE", "auto")
    mode = _MODES.get(raw)
    if mode is None:
        mode = raw.strip().lower() or "auto"
        if mode not in _DEVICES:
            raise LaunchError(f"EGGPU_JIT_DEVICE={mode!r} is not one of {', '.join(_DEVICES)}")
        if len(_MODES) < 32:
            _MODES[raw] = mode
    if mode == "auto":
        return "gpu" if _gpu_available() else "cpu"
    return mode


class JitKernel(Kernel):
    """Base of the Kernel classes of ``@eggpu.jit`` specializations: one class per list of argument
    types. Its ``id`` names those types (``add_kernel__pf32_pf32_pf32_i32__1024``, ``p`` for a
    pointer) so two specializations with the same constants never share an id."""

    _type_tokens: tuple[str, ...] = ()

    @property
    def id(self) -> str:
        parts = [self.name, "_".join(self._type_tokens) or "none"]
        parts += [_render_const(v) for v in self._const_values]
        return "__".join(parts)


_I32_MIN, _I32_MAX, _I64_MIN, _U64_MAX = -(1 << 31), (1 << 31) - 1, -(1 << 63), (1 << 64) - 1


def _int_dtype(v: int) -> DType:
    """Triton's type of a Python int argument (``v`` within 64 bits)."""
    if _I32_MIN <= v <= _I32_MAX:
        return i32
    if 2**63 <= v <= _U64_MAX:
        return u64
    return i64


def _buffers_kw(buffers: Any) -> dict[str, Any]:
    """``run_cpu``'s keyword for ``buffers=`` (none when the launch passed none)."""
    return {} if buffers is None else {"buffers": buffers}


class _Launcher:
    """``fn[grid]``: waiting for the launch arguments."""

    __slots__ = ("jit", "grid")

    def __init__(self, jit: JITFunction, grid: Any):
        self.jit = jit
        self.grid = grid

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.jit._launch(self.grid, args, kwargs)

    def __repr__(self) -> str:
        return f"{self.jit.__name__}[{self.grid!r}]"


class JITFunction:
    """What ``@eggpu.jit`` returns: an inlinable helper and a launchable kernel (module docstring).

    ``fn`` is the decorated function; ``fn[grid](*args, **kwargs)`` launches;
    ``specialize(*args, **kwargs)`` returns the Kernel instance a launch with these arguments
    uses; calling the object runs ``fn`` as plain Python.
    """

    def __init__(self, fn: Callable[..., Any], do_not_specialize: frozenset[str] = frozenset()):
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.do_not_specialize = do_not_specialize
        fn.__eggpu_jit__ = True  # type: ignore[attr-defined]
        tl._JIT_CODES[fn.__code__] = fn.__name__  # for the error of tl.* called as plain Python
        self.__eggpu_jit_target__ = fn  # the frontend inlines calls to this function
        self._params: tuple[JitParam, ...] | None = None
        self._classes: dict[tuple, type[JitKernel]] = {}
        self._compiled: dict[tuple, Any] = {}
        self._blocks: dict[tuple, int] = {}  # the offsets_i32 block extent per specialization
        # the launch cache (_launch_key -> (block, runtime positions, {offsets_i32: compiled}))
        self._fast: dict[tuple, tuple[int, tuple[int, ...], dict[bool, Any]]] = {}
        self._names: list[str] | None = None
        self._index: dict[str, int] = {}
        self._defaults: list[Any] = []
        self._constexpr: list[bool] = []
        self._specialized: list[bool] = []

    # ------------------------------------------------------------ Python protocol

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    def __getitem__(self, grid: Any) -> _Launcher:
        return _Launcher(self, grid)

    def __repr__(self) -> str:
        return f"JITFunction({self.fn.__module__}:{self.fn.__qualname__})"

    @property
    def params(self) -> tuple[JitParam, ...]:
        """The analysed parameters (on first launch: a helper that is never launched is never analysed)."""
        if self._params is None:
            self._params = analyze_jit(self.fn)
        return self._params

    # ------------------------------------------------------------ specialization

    def _bind(self, args: tuple, kwargs: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """(arguments by parameter name with defaults, launch options)."""
        names = {p.name for p in self.params}
        # as in Triton, a launch option that is also a parameter's name (Liger-Kernel's kernels take
        # ``num_warps: tl.constexpr``) is both: the argument and the compile option
        options = {k: (kwargs[k] if k in names else kwargs.pop(k)) for k in list(kwargs) if k in _LAUNCH_OPTIONS}
        import inspect  # on a launch, not when a library decorates its helpers

        try:
            bound = inspect.signature(self.fn).bind(*args, **kwargs)
        except TypeError as e:
            listing = ", ".join(p.name for p in self.params)
            raise LaunchError(f"{self.__name__}[grid](...): {e}; parameters: {listing}") from None
        bound.apply_defaults()
        return dict(bound.arguments), options

    def _kind(self, p: JitParam, v: Any) -> tuple[str, DType | None, Any]:
        """(kind, dtype, launch value) of argument ``v`` for parameter ``p``."""
        name = self.__name__
        if p.constexpr:
            return CONSTEXPR, None, v
        if p.fixed is None and (v is None or isinstance(v, str | DType)):
            return CONSTEXPR, None, v  # Triton specializes these as compile-time values
        kind, dt, value = self._deduce(p, v)
        if p.fixed is not None:
            want_ptr = not isinstance(p.fixed, DType)
            want = p.fixed.pointee if want_ptr else p.fixed
            if want_ptr and (kind != POINTER or dt != want):
                raise LaunchError(f"{name}: parameter {p.name} is annotated {p.fixed}, got {_describe(v)}")
            if not want_ptr:
                if kind == POINTER:
                    raise LaunchError(f"{name}: parameter {p.name} is annotated {p.fixed}, got {_describe(v)}")
                return SCALAR, want, value  # the value is checked against the dtype at launch
        return kind, dt, value

    def _deduce(self, p: JitParam, v: Any) -> tuple[str, DType, Any]:
        import numpy as np  # lazily: importing eggpu (and a cache hit) does not need numpy

        name = self.__name__
        if isinstance(v, Reinterpreted):  # eggpu.reinterpret(x, dtype): x's bytes as dtype
            kind, dt, base = self._deduce(p, v.base)
            if kind != POINTER or dt.bits != v.dtype.bits:
                raise LaunchError(f"{name}: parameter {p.name}: eggpu.reinterpret(..., {v.dtype}) needs an array of "
                                  f"{v.dtype.bits}-bit elements, got {_describe(v.base)}")
            return POINTER, v.dtype, base.view(v.dtype.np) if isinstance(base, np.ndarray) else base
        if isinstance(v, np.generic):  # before float: np.float64 is a float subclass
            return SCALAR, self._numpy_dtype(p, v.dtype, v), v
        if isinstance(v, bool):
            return SCALAR, bool_, v
        if isinstance(v, int):
            if not i64.min <= v <= u64.max:
                raise LaunchError(f"{name}: parameter {p.name}: the int {v} does not fit in 64 bits")
            return SCALAR, _int_dtype(v), v
        if isinstance(v, float):
            return SCALAR, f32, v
        if isinstance(v, np.ndarray):
            return POINTER, self._numpy_dtype(p, v.dtype, v), v
        # a CUDA tensor, read through data_ptr() (PyTorch's protocol) before __cuda_array_interface__,
        # which torch refuses for tensors that require grad
        tensor = device_tensor(v)
        if tensor is not None:
            if tensor[1] is None:
                raise LaunchError(f"{name}: parameter {p.name}: {_describe(v)} has dtype "
                                  f"{getattr(v, 'dtype', None)}, which eggpu has no dtype for")
            return POINTER, BY_NAME[tensor[1]], v
        if hasattr(v, "__cuda_array_interface__"):
            typestr = v.__cuda_array_interface__.get("typestr")
            try:
                npdt = np.dtype(typestr)
            except TypeError:
                raise LaunchError(f"{name}: parameter {p.name}: cannot read the dtype of a device array "
                                  f"(typestr {typestr!r})") from None
            return POINTER, self._numpy_dtype(p, npdt, v), v
        if hasattr(v, "__dlpack__"):
            try:
                arr = np.from_dlpack(v)  # a CPU tensor (torch, jax): shares its memory
            except (RuntimeError, TypeError, ValueError, BufferError) as e:
                raise LaunchError(f"{name}: parameter {p.name}: cannot use {_describe(v)} through DLPack: {e}") from None
            return POINTER, self._numpy_dtype(p, arr.dtype, v), arr
        raise LaunchError(
            f"{name}: parameter {p.name}: cannot pass {_describe(v)} to a kernel; pass a numpy array (or a "
            f"tensor with __cuda_array_interface__ / DLPack) for a pointer, a bool, int or float for a scalar, "
            f"or annotate the parameter tl.constexpr"
        )

    def _numpy_dtype(self, p: JitParam, npdt: Any, v: Any) -> DType:
        try:
            return from_numpy(npdt)
        except (IRError, TypeError):
            raise LaunchError(f"{self.__name__}: parameter {p.name}: {_describe(v)} has dtype {npdt}, which "
                              f"eggpu has no dtype for") from None

    def _expanded(self, values: dict[str, Any]) -> list[tuple[JitParam, Any]]:
        """The parameters with their arguments; a host tensor descriptor argument becomes a
        constexpr (its compile-time part) plus hidden runtime parameters (kernel_macro/descriptors.py)."""
        out: list[tuple[JitParam, Any]] = []
        for p in self.params:
            v = values[p.name]
            wants_descriptor = p.fixed is tl.tensor_descriptor
            if wants_descriptor and not descriptors.is_host_descriptor(v):
                raise LaunchError(f"{self.__name__}: parameter {p.name} is annotated tl.tensor_descriptor, got "
                                  f"{_describe(v)}")
            if p.constexpr or (p.fixed is not None and not wants_descriptor) or not descriptors.is_host_descriptor(v):
                out.append((p, v))
                continue
            why = descriptors.check(self.__name__, p.name, v)
            if why is not None:
                raise LaunchError(why)
            out.append((JitParam(p.name, True), descriptors.encode(v)))
            out += [(JitParam(n, False), hv) for n, hv in descriptors.hidden_params(p.name, v)]
        return out

    def _specialize(self, values: dict[str, Any]) -> tuple[JitKernel, list[Any]]:
        """The Kernel instance for these bound arguments and the runtime launch values."""
        kinds: dict[str, tuple[str, Any]] = {}
        runtime: list[Any] = []
        consts: list[Any] = []
        expanded = self._expanded(values)
        for p, v in expanded:
            kind, dt, value = self._kind(p, v)
            kinds[p.name] = (kind, dt)
            if kind == CONSTEXPR:
                consts.append(value)
            else:
                runtime.append(value)
        key = tuple((n, k, dt.name if dt is not None else None) for n, (k, dt) in kinds.items())
        cls = self._classes.get(key)
        if cls is None:
            cls = self._new_class(kinds, key, tuple(p for p, _ in expanded))
            self._classes[key] = cls
        return cls._create((), tuple(consts), {}), runtime

    def _new_class(self, kinds: dict[str, tuple[str, Any]], key: tuple,
                   params: tuple[JitParam, ...]) -> type[JitKernel]:
        sig = specialized_signature(self.__name__, params, kinds)
        spec = KernelSpec(self.fn, sig, None, None)
        tokens = tuple(("p" if k == POINTER else "") + dt.name for k, dt in kinds.values() if k != CONSTEXPR)
        cls_name = pascal_case(self.__name__)
        cls = type(cls_name, (JitKernel,), {
            "_spec": spec, "_type_tokens": tokens, "__module__": self.fn.__module__, "__qualname__": cls_name,
            "__doc__": f"Kernel class of @eggpu.jit {self.__name__} for arguments {', '.join(tokens)}.",
        })
        spec.kernel_cls = cls
        return cls

    def specialize(self, *args: Any, **kwargs: Any) -> JitKernel:
        """The Kernel instance that ``fn[grid](*args, **kwargs)`` would run (``.ir()``,
        ``.interpret(grid, *runtime_args)``, ``eggpu.compile(...)`` work on it)."""
        values, _ = self._bind(args, dict(kwargs))
        return self._specialize(values)[0]

    # ------------------------------------------------------------ launching

    def _facts(self, kernel: JitKernel, runtime: list[Any], grid: Any, mode: str) -> dict[str, Any]:
        """The launch-time specialization of this launch, as Triton makes it (module docstring):
        compile options ``specialize`` (16-divisible and unit integers, 16-byte aligned buffers;
        not for ``do_not_specialize`` parameters) and ``offsets_i32`` (when the grid allows it)."""
        import numpy as np

        from eggpu.ir.facts import facts_for_args, max_block

        params = kernel._spec.signature.runtime_params
        names = [p.name for p in params]
        kinds = ["pointer" if p.kind == POINTER else "int" if p.element_dtype(kernel.binding).is_int else ""
                 for p in params]
        values = list(runtime)
        if mode == "gpu":  # host arrays are copied into fresh 256-byte-aligned device buffers
            values = [np.empty(0, np.uint8) if isinstance(v, np.ndarray) else v for v in values]
            kinds = ["" if k == "pointer" and isinstance(v, np.ndarray) else k for k, v in zip(kinds, runtime)]
        facts = facts_for_args(names, kinds, values, skip=self.do_not_specialize)
        out: dict[str, Any] = {"specialize": tuple(sorted(facts.items()))} if facts else {}
        key = (type(kernel), kernel._key())
        if key not in self._blocks:
            self._blocks[key] = max_block(kernel.ir())
        if _fits(grid, self._blocks[key]):
            out["offsets_i32"] = True
        return out

    def _compile(self, kernel: JitKernel, options: dict[str, Any]) -> Any:
        key = (type(kernel), kernel._key(), tuple(sorted(options.items())))
        ck = self._compiled.get(key)
        if ck is None:
            hook = hooks.COMPILE_HOOK
            if hook is None:
                raise CompileUnavailableError(
                    f"{self.__name__}[grid](...) needs the compile pipeline, which is not registered "
                    f"(import eggpu), or EGGPU_JIT_DEVICE=interpret")
            if "specialize" in options:
                options = dict(options, specialize=dict(options["specialize"]))
            ck = hook(kernel, **options)
            self._compiled[key] = ck
        return ck

    def _launch(self, grid: Any, args: tuple, kwargs: dict[str, Any]) -> Any:
        """``fn[grid](*args, **kwargs)``: the launch cache first (:meth:`_launch_key`), else the
        general path, whose outcome is remembered under the launch's key. ``buffers=[...]`` (unless
        the kernel has a parameter of that name): the arrays the kernel reaches through raw
        addresses on the host (interpret and run_cpu; :mod:`eggpu.ir.raw_memory`); a GPU launch
        does not need them (its raw addresses are device addresses)."""
        buffers = None
        if "buffers" in kwargs and all(p.name != "buffers" for p in self.params):
            buffers = kwargs.pop("buffers")
        mode = _device_or_none()
        if mode is None or mode == "interpret":
            return self._run_general(grid, args, kwargs, buffers)[0]
        bound = self._launch_key(args, kwargs, mode)
        if bound is None:
            return self._run_general(grid, args, kwargs, buffers)[0]
        key, values, options = bound
        try:
            entry = self._fast.get(key)
        except TypeError:  # an unhashable constexpr
            return self._run_general(grid, args, kwargs, buffers)[0]
        if entry is not None:
            block, positions, compiled = entry
            if callable(grid):
                grid = self._call_grid(grid, {**dict(zip(self._names, values)), **options})
            ck = compiled.get(_fits(grid, block))
            if ck is not None:
                runtime = [values[i] for i in positions]
                if mode == "gpu":
                    plan = ck._plan
                    if plan is None:
                        _launch_async(ck, grid, runtime)
                    else:  # what ck.launch does, without re-packing the arguments
                        device, stream = plan.target(None, runtime)
                        plan.launch(grid, runtime, bool(ck.options.debug), stream, device)
                else:
                    ck.run_cpu(grid, *runtime, **_buffers_kw(buffers))
                return ck
        ck, kernel, grid = self._run_general(grid, args, kwargs, buffers)
        if _device() != mode:  # EGGPU_JIT_DEVICE changed meanwhile (another thread): remember nothing
            return ck
        block = self._blocks[(type(kernel), kernel._key())]
        if entry is None:
            names = {p.name for p in kernel._spec.signature.runtime_params}
            entry = (block, tuple(i for i, n in enumerate(self._names) if n in names), {})
            self._fast[key] = entry
        entry[2][_fits(grid, block)] = ck
        return ck

    def _launch_key(self, args: tuple, kwargs: dict[str, Any], mode: str) -> tuple[tuple, list, dict] | None:
        """``(key, argument values by position, launch options)``, where the key holds all that the
        general path decides a specialization from (module docstring): each argument's type,
        dtype and specialization facts (16-divisible or unit ints, 16-byte aligned buffers where
        alignment matters), the constexpr values (with their types: ``1`` and ``True`` differ),
        the launch options and ``mode``; the grid enters through the ``offsets_i32`` fact, by
        value, at lookup. None for anything the general path must see (a missing or duplicate
        argument, DLPack tensors, device arrays on the CPU, ...)."""
        names = self._names
        if names is None:
            self._prepare_fast()
            names = self._names
        if names is None or len(args) > len(names):
            return None
        values = list(args) + self._defaults[len(args):] if len(args) < len(names) else list(args)
        options: dict[str, Any] = {}
        if kwargs:
            index = self._index
            for k, v in kwargs.items():
                i = index.get(k)
                if i is None:
                    if k not in _LAUNCH_OPTIONS:
                        return None
                    options[k] = v
                elif i < len(args):
                    return None
                else:
                    values[i] = v
        # TRITON_DEBUG is the default of debug=: read at every launch, as the general path does
        key: list[Any] = [mode, tuple(sorted(options.items())) if options else (), debug_default()]
        append = key.append
        for v, constexpr, specialized in zip(values, self._constexpr, self._specialized):
            t = type(v)
            if t is int and not constexpr and _I32_MIN <= v <= _I32_MAX:  # the commonest cases first
                append((int, i32, (v == 1 or 2 * (v % 16 == 0)) if specialized else 0))
                continue
            if t in _TENSOR_TYPES and not constexpr and mode == "gpu":
                tk = tensor_key(v)
                if tk is not None:
                    append((t, tk[1], specialized and tk[0] % 16 == 0))
                    continue
            if v is _MISSING:
                return None
            token = _token(v, mode, constexpr, specialized)
            if token is None:
                return None
            append(token)
        return tuple(key), values, options

    def _prepare_fast(self) -> None:
        """The parameter tables of :meth:`_launch_key` (left unset for signatures it does not
        handle: ``*args``, keyword-only parameters)."""
        import inspect

        sig = inspect.signature(self.fn)
        if any(q.kind is not inspect.Parameter.POSITIONAL_OR_KEYWORD for q in sig.parameters.values()):
            return
        params = self.params
        self._index = {p.name: i for i, p in enumerate(params)}
        self._defaults = [q.default if q.default is not inspect.Parameter.empty else _MISSING
                          for q in sig.parameters.values()]
        self._constexpr = [p.constexpr for p in params]
        self._specialized = [p.name not in self.do_not_specialize for p in params]
        self._names = [p.name for p in params]

    def _launch_general(self, grid: Any, args: tuple, kwargs: dict[str, Any]) -> Any:
        """The launch without the launch cache: bind, specialize, compile (cached), run."""
        return self._run_general(grid, args, kwargs)[0]

    def _run_general(self, grid: Any, args: tuple, kwargs: dict[str, Any],
                     buffers: Any = None) -> tuple[Any, Any, Any]:
        """(compiled kernel, or the Kernel instance when interpreted; Kernel instance; resolved grid)."""
        values, options = self._bind(args, dict(kwargs))
        kernel, runtime = self._specialize(values)
        if callable(grid):
            grid = self._call_grid(grid, {**values, **options})
        from eggpu.ir.launch_args import normalize_grid

        normalize_grid(self.__name__, grid, LaunchError)  # before anything reads it
        mode = _device()
        if mode == "interpret":
            kernel.interpret(grid, *runtime, buffers=buffers, debug=options.get("debug"))
            return kernel, kernel, grid
        compile_options: dict[str, Any] = {k: options[k] for k in ("num_warps", "num_stages") if k in options}
        compile_options["debug"] = resolve_debug(options.get("debug"), f"{self.__name__}[grid]", LaunchError)
        compile_options.update(self._facts(kernel, runtime, grid, mode))
        ck = self._compile(kernel, compile_options)
        if mode == "gpu":
            _launch_async(ck, grid, runtime)
        else:
            import numpy as np

            for p, v in zip(kernel._spec.signature.runtime_params, runtime):
                if (device_tensor(v) is not None or hasattr(v, "__cuda_array_interface__")) \
                        and not isinstance(v, np.ndarray):
                    raise LaunchError(
                        f"{self.__name__}: parameter {p.name} is a device array, but this launch runs on the CPU "
                        f"(no CUDA GPU, or EGGPU_JIT_DEVICE=cpu); pass numpy arrays")
            ck.run_cpu(grid, *runtime, **_buffers_kw(buffers))
        return ck, kernel, grid

    def _call_grid(self, grid: Any, meta: dict[str, Any]) -> Any:
        """``grid(meta)``; whatever it raises becomes a LaunchError naming the kernel (and the
        missing name for a KeyError: usually a constexpr not passed to the launch)."""
        try:
            out = grid(meta)
        except KeyError as e:
            raise LaunchError(f"{self.__name__}: the grid function raised KeyError: {e} (it reads meta[{e}]; "
                              f"the launch passed {', '.join(sorted(meta)) or 'nothing'})") from None
        except Exception as e:  # noqa: BLE001 - the user's code: any error is the user's mistake
            raise LaunchError(f"{self.__name__}: the grid function raised {type(e).__name__}: {e}") from None
        return out


_MISSING = object()
_TENSOR_TYPES: set[type] = set()  # types seen to be CUDA tensors (data_ptr()); their instances may be CPU ones


def _fits(grid: Any, block: int) -> bool:
    """Whether a launch of ``grid`` gets the ``offsets_i32`` fact: every axis an int in
    ``[0, 2**31 / block]`` (an invalid grid never does; the launch reports it)."""
    if type(grid) is tuple and len(grid) == 1 and type(grid[0]) is int:
        return 0 <= grid[0] and grid[0] * block <= I32_SPAN
    try:
        dims = (grid,) if isinstance(grid, int) else tuple(grid)
    except TypeError:
        return False
    return all(isinstance(g, int) and 0 <= g and g * block <= I32_SPAN for g in dims)


def _token(v: Any, mode: str, constexpr: bool, specialized: bool) -> Any:
    """What the general path's specialization reads from argument ``v`` (see
    :meth:`JITFunction._launch_key`), or None when only the general path may handle ``v``."""
    t = type(v)
    if constexpr or v is None or t is str or t is DType:
        return (0, t, v)
    if t is int:
        if not _I64_MIN <= v <= _U64_MAX:
            return None
        return (int, _int_dtype(v), (v == 1 or 2 * (v % 16 == 0)) if specialized else 0)
    if t is float or t is bool:
        return (t,)
    if t.__module__ == "numpy":
        import numpy as np

        if t is np.ndarray:
            aligned = specialized and mode == "cpu" and v.ctypes.data % 16 == 0  # a GPU launch copies it
            return (t, v.dtype, aligned)
        if isinstance(v, np.generic):  # a numpy scalar: its type is its dtype; an integer one gets facts
            if v.dtype.kind not in "iu" or not specialized:
                return (t, 0)
            iv = int(v)
            return (t, iv == 1 or 2 * (iv % 16 == 0))
        return None
    if mode != "gpu":
        return None
    tensor = tensor_key(v)
    if tensor is not None:
        if len(_TENSOR_TYPES) < 16:
            _TENSOR_TYPES.add(t)
        return (t, tensor[1], specialized and tensor[0] % 16 == 0)
    iface = getattr(v, "__cuda_array_interface__", None)
    if isinstance(iface, dict) and isinstance(iface.get("data"), tuple):
        return (t, iface.get("typestr"), specialized and int(iface["data"][0]) % 16 == 0)
    return None


class Reinterpreted:
    """An array whose elements a ``kernel[grid]`` launch reads as another dtype of the same width
    (Triton's ``triton.reinterpret``): ``eggpu.reinterpret(codes_u8, tl.float8e4b15)``."""

    __slots__ = ("base", "dtype")

    def __init__(self, base: Any, dtype: DType):
        self.base, self.dtype = base, dtype


def reinterpret(tensor: Any, dtype: Any) -> Reinterpreted:
    """``tensor`` (a numpy array or device tensor) passed to an ``@eggpu.jit`` kernel as a pointer to
    ``dtype`` (an eggpu dtype or its name, of the same width as ``tensor``'s elements); the bytes are
    not converted. The way to pass fp8e4b15 data, which no numpy or torch dtype holds."""
    dt = dtype if isinstance(dtype, DType) else BY_NAME.get(str(dtype)) or tl.TRITON_DTYPE_NAMES.get(str(dtype))
    if dt is None:
        raise LaunchError(f"eggpu.reinterpret: {dtype!r} is not a dtype (known: {', '.join(BY_NAME)})")
    return Reinterpreted(tensor.base if isinstance(tensor, Reinterpreted) else tensor, dt)


def _describe(v: Any) -> str:
    import numpy as np

    if isinstance(v, np.ndarray):
        return f"a numpy array of {v.dtype}"
    return f"a {type(v).__module__}.{type(v).__qualname__}" if type(v).__module__ != "builtins" else \
        f"a {type(v).__name__} ({v!r})"


def make_jit(fn: Any, do_not_specialize: Any = ()) -> JITFunction:
    """``@eggpu.jit`` (see :func:`eggpu.kernel_macro.kernel.jit`)."""
    if isinstance(fn, JITFunction):
        return fn
    if not callable(fn) or not hasattr(fn, "__code__"):
        raise DecoratorArgumentError(f"@eggpu.jit decorates a function, got {fn!r}")
    return JITFunction(fn, _no_specialize(fn, do_not_specialize))


def _no_specialize(fn: Any, names: Any) -> frozenset[str]:
    """``do_not_specialize`` (names or positions of ``fn``'s parameters) as a set of names. A name
    or position that is no parameter is ignored, as Triton does (libraries copy one list onto
    several kernels: FlagGems' masked_select), with a :class:`DoNotSpecializeWarning` naming it;
    an entry that is neither a str nor an int is refused."""
    if isinstance(names, str | int):
        names = [names]
    try:
        items = list(names)
    except TypeError:
        raise DecoratorArgumentError(f"@eggpu.jit(do_not_specialize=...) takes parameter names or positions, "
                                     f"got {names!r}") from None
    if not items:
        return frozenset()
    import inspect  # only to check names: a plain @eggpu.jit is decorated without it

    params = list(inspect.signature(fn).parameters)
    out, unknown = set(), []
    for x in items:
        if isinstance(x, int) and not isinstance(x, bool) and 0 <= x < len(params):
            out.add(params[x])
        elif isinstance(x, str) and x in params:
            out.add(x)
        elif isinstance(x, str) or (isinstance(x, int) and not isinstance(x, bool)):
            unknown.append(x)
        else:
            raise DecoratorArgumentError(f"@eggpu.jit(do_not_specialize=...) on {fn.__name__}: {x!r} is neither a "
                                         f"parameter name nor a position (parameters: {', '.join(params)})")
    if unknown:
        import warnings

        warnings.warn(f"@eggpu.jit(do_not_specialize=...) on {fn.__name__}: "
                      f"{', '.join(map(repr, unknown))} {'is' if len(unknown) == 1 else 'are'} no parameter name or "
                      f"position, ignored as Triton does (parameters: {', '.join(params)})",
                      DoNotSpecializeWarning, stacklevel=4)
    return frozenset(out)


class DoNotSpecializeWarning(UserWarning):
    """``do_not_specialize=`` names something that is not a parameter of the kernel (ignored)."""


def _launch_async(ck: Any, grid: Any, runtime: list[Any]) -> None:
    """A GPU launch as Triton's: on the arguments' current device and stream (PyTorch's for CUDA
    tensors, :mod:`eggpu.streams`), not waited for; a kernel compiled with ``debug`` (device asserts) is
    waited for, so a failed assert is reported at its launch. Host (numpy) arrays are copied back,
    which waits anyway."""
    ck.launch(grid, *runtime, synchronize=bool(ck.options.debug))
