"""``@kernel`` and ``@jit``: the generated Kernel and Dispatch classes (DESIGN.md §3).

From one ``@kernel`` function three things:

1. the function itself, unchanged (with ``fn.Kernel`` and, when dispatch is enabled,
   ``fn.Dispatch``);
2. a :class:`Kernel` subclass named by PascalCasing the function name (``gelu_forward`` ->
   ``GeluForward``), bound in the function's module: ``GeluForward[tl.f32](1024)`` or
   ``GeluForward[tl.f32](block_size=1024)``; without dtype parameters ``AdamStep(1024)``;
3. with ``dtypes=[...]`` or ``backward=...``, a :class:`Dispatch` subclass
   (``GeluForwardDispatch``) whose ``dispatch(dtype, *consts)`` returns a
   :class:`KernelInstance` (with the paired backward kernel, if any).

Errors are :class:`~eggpu.KernelError` subclasses from :mod:`eggpu.kernel_macro.errors`, each
naming the kernel.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence

from eggpu.ir.dtypes import ALL_DTYPES, BY_NAME, DType, from_numpy
from eggpu.ir.errors import IRError, LaunchError
from eggpu.ir.types import pointer, scalar

from . import hooks
from . import language as tl
from .diagnostics import Source
from .errors import (
    BackwardKernelError,
    CompileUnavailableError,
    ConstexprArgumentError,
    DecoratorArgumentError,
    DtypeArgumentError,
    DtypeInferenceError,
    DuplicateDtypeError,
    UnknownDtypeError,
    UnsupportedDtypeError,
)
from .ir_cache import IR_CACHE_SIZE, LruCache
from .signature import NO_DEFAULT, POINTER, Signature, analyze

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing on a cache hit
if TYPE_CHECKING:  # the IR graph (and numpy) load only when a kernel is lowered, not on a cache hit
    from typing import Any, ClassVar

    from eggpu.ir.graph import Function

__all__ = ["Dispatch", "Kernel", "KernelInstance", "jit", "kernel", "pascal_case", "to_dtype"]

_DECORATOR_ARGS = ("dtypes", "backward")


def pascal_case(name: str) -> str:
    """``gelu_forward`` -> ``GeluForward``; ``conv2d_bn_silu`` -> ``Conv2dBnSilu``."""
    return "".join(part[:1].upper() + part[1:] for part in name.split("_") if part)


def to_dtype(x: Any, kernel: str) -> DType:
    """A dtype from ``tl.f32``, ``"f32"`` or a numpy dtype (``np.float32``, ``np.dtype("float32")``,
    ``ml_dtypes.bfloat16``); :class:`UnknownDtypeError` naming ``kernel`` otherwise."""
    if isinstance(x, DType):
        return x
    known = ", ".join(BY_NAME)
    if isinstance(x, str):
        if x in BY_NAME:
            return BY_NAME[x]
        import difflib  # lazily: only error messages suggest names

        close = difflib.get_close_matches(x, list(BY_NAME), n=1)
        if not close:
            try:
                import numpy as np

                close = [from_numpy(np.dtype(x)).name]
            except (TypeError, IRError):
                close = []
        dym = f" (did you mean {close[0]}?)" if close else ""
        raise UnknownDtypeError(f"{kernel}: unknown dtype {x!r}{dym}; known dtypes: {known}")
    try:
        return from_numpy(x)
    except (TypeError, IRError):
        raise UnknownDtypeError(
            f"{kernel}: {x!r} is not a dtype; pass tl.f32, a name such as 'f32', or a numpy dtype "
            f"(known dtypes: {known})"
        ) from None


def _const_key(v: Any) -> tuple:
    return (type(v).__name__, v.name if isinstance(v, DType) else v)


def _render_const(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "none"
    if isinstance(v, str):
        return repr(v)  # quoted, so "4" and 4, "none" and None stay distinct ids
    if isinstance(v, DType):
        return v.name
    return repr(v) if isinstance(v, float) else str(v)


def _python_const(v: Any) -> str:
    return v.name if isinstance(v, DType) else repr(v)


class KernelSpec:
    """What ``@kernel`` learned about a function (shared by its Kernel and Dispatch classes)."""

    def __init__(self, fn: Any, signature: Signature, dtypes: tuple[DType, ...] | None, backward: Any):
        self.fn = fn
        self.name: str = fn.__name__
        self.signature = signature
        self.explicit_dtypes = dtypes
        self.backward_ref = backward
        self._backward_cls: type[Kernel] | None = None
        self.kernel_cls: type[Kernel] | None = None

    @property
    def source(self) -> Source:
        return Source.of(self.fn)

    def resolve_backward(self) -> type[Kernel] | None:
        """The backward Kernel class (resolving a name in the function's module on first use)."""
        ref = self.backward_ref
        if ref is None:
            return None
        if self._backward_cls is not None:
            return self._backward_cls
        target = ref
        if isinstance(ref, str):
            g = self.fn.__globals__
            if ref not in g:
                import difflib  # lazily: only error messages suggest names

                close = difflib.get_close_matches(ref, [k for k in g if not k.startswith("_")], n=1)
                dym = f" (did you mean {close[0]}?)" if close else ""
                raise BackwardKernelError(
                    f"{self.name}: backward={ref!r} is not defined in module {self.fn.__module__}{dym}; "
                    f"define that @kernel function there or pass its Kernel class"
                )
            target = g[ref]
        cls = _kernel_class_of(target)
        if cls is None:
            raise BackwardKernelError(
                f"{self.name}: backward={ref!r} is not a @kernel function or Kernel class "
                f"(got {type(target).__name__})"
            )
        mine = tuple(p.name for p in self.signature.constexprs)
        theirs = tuple(p.name for p in cls._spec.signature.constexprs)
        if mine != theirs:
            raise BackwardKernelError(
                f"{self.name}: backward kernel {cls._spec.name} has constexpr parameters "
                f"({', '.join(theirs)}) but {self.name} has ({', '.join(mine)}); they must match so "
                f"dispatch can build both with the same constants"
            )
        self._backward_cls = cls
        return cls


def _kernel_class_of(obj: Any) -> type[Kernel] | None:
    if isinstance(obj, type) and issubclass(obj, Kernel) and obj is not Kernel:
        return obj
    cls = getattr(obj, "__eggpu_kernel__", None)
    if isinstance(cls, type) and issubclass(cls, Kernel):
        return cls
    return None


# ---------------------------------------------------------------- Kernel


class _Specializer:
    """``GeluForward[tl.f32]``: waiting for its constexpr arguments."""

    __slots__ = ("cls", "dtypes")

    def __init__(self, cls: type[Kernel], dtypes: tuple[DType, ...]):
        self.cls = cls
        self.dtypes = dtypes

    def __call__(self, *args: Any, **kwargs: Any) -> Kernel:
        return self.cls._create(self.dtypes, args, kwargs)

    def __repr__(self) -> str:
        return f"{self.cls.__name__}[{', '.join(d.name for d in self.dtypes)}]"


#: (Kernel class, specialization) -> IR, tagged with the dependency digest (a changed digest
#: replaces the entry); bounded to ir_cache.IR_CACHE_SIZE entries, least recently used evicted
_IR_CACHE: LruCache[Function] = LruCache(IR_CACHE_SIZE)


class Kernel:
    """Base of the generated Kernel classes. An instance is one specialization: dtypes for the
    dtype parameters plus values for the constexpr parameters.

    Attributes: ``name``, ``id``, one lowercased attribute per constexpr, ``dtypes``, ``consts``,
    ``kernel_source``, ``entry_point_source``, ``source``, ``entry_point``, ``arg_types``;
    methods ``ir()``, ``interpret(grid, *args)``, ``compile(**options)``.
    """

    _spec: ClassVar[KernelSpec]

    def __class_getitem__(cls, item: Any) -> _Specializer:
        return _Specializer(cls, cls._check_dtypes(item))

    def __new__(cls, *args: Any, **kwargs: Any) -> Kernel:
        if cls is Kernel:
            raise TypeError("Kernel is the base of the classes @eggpu.kernel generates")
        spec = cls._spec
        if spec.signature.typevars:
            names = ", ".join(str(tv) for tv in spec.signature.typevars)
            example = ", ".join(f"tl.{tv.allowed[0]}" for tv in spec.signature.typevars)
            raise DtypeArgumentError(
                f"{spec.name}: {cls.__name__} has dtype parameters ({names}); give them first: "
                f"{cls.__name__}[{example}](...)"
            )
        return cls._create((), args, kwargs)

    def __init__(self, *args: Any, **kwargs: Any):
        pass  # everything happens in _create

    # ------------------------------------------------------------ construction

    @classmethod
    def _check_dtypes(cls, item: Any) -> tuple[DType, ...]:
        spec = cls._spec
        tvs = spec.signature.typevars
        items = item if isinstance(item, tuple) else (item,)
        if not tvs:
            raise DtypeArgumentError(
                f"{spec.name}: {cls.__name__} has no dtype parameters; construct it directly: "
                f"{cls.__name__}(...)"
            )
        if len(items) != len(tvs):
            raise DtypeArgumentError(
                f"{spec.name}: {cls.__name__}[...] takes {len(tvs)} dtype{'s' if len(tvs) > 1 else ''} "
                f"({', '.join(str(tv) for tv in tvs)}), got {len(items)}"
            )
        out = []
        for tv, x in zip(tvs, items):
            dt = to_dtype(x, spec.name)
            if dt not in tv.allowed:
                raise UnsupportedDtypeError(
                    f"{spec.name}: dtype {dt} is not a {tv.category} (dtype parameter {tv.name} accepts "
                    f"{', '.join(d.name for d in tv.allowed)})"
                )
            out.append(dt)
        return tuple(out)

    @classmethod
    def _bind_consts(cls, label: str, args: Sequence[Any], kwargs: dict[str, Any]) -> tuple[Any, ...]:
        spec = cls._spec
        params = spec.signature.constexprs
        lowered = [p.name.lower() for p in params]
        listing = ", ".join(lowered) if lowered else "none"
        if len(args) > len(params):
            raise ConstexprArgumentError(
                f"{spec.name}: {label}(...) takes {len(params)} constexpr argument"
                f"{'' if len(params) == 1 else 's'} ({listing}), got {len(args)}"
            )
        values: dict[str, Any] = {p.name: v for p, v in zip(params, args)}
        for k, v in kwargs.items():
            match = next((p for p in params if k in (p.name.lower(), p.name)), None)
            if match is None:
                import difflib  # lazily: only error messages suggest names

                close = difflib.get_close_matches(k.lower(), lowered, n=1)
                dym = f" (did you mean {close[0]}?)" if close else ""
                raise ConstexprArgumentError(
                    f"{spec.name}: {label}(...) got an unexpected constexpr keyword {k!r}{dym}; "
                    f"constexpr parameters: {listing}"
                )
            if match.name in values:
                raise ConstexprArgumentError(
                    f"{spec.name}: {label}(...) got multiple values for constexpr {match.name.lower()}"
                )
            values[match.name] = v
        out = []
        for p in params:
            if p.name not in values:
                if p.default is NO_DEFAULT:
                    raise ConstexprArgumentError(
                        f"{spec.name}: {label}(...) is missing constexpr argument {p.name.lower()} "
                        f"({len(params)} expected: {listing})"
                    )
                values[p.name] = p.default
            out.append(cls._check_const(p.name, values[p.name]))
        return tuple(out)

    @classmethod
    def _check_const(cls, pname: str, v: Any) -> Any:
        np = sys.modules.get("numpy")  # a numpy scalar exists only once numpy is imported
        if np is not None and isinstance(v, np.generic) and not isinstance(v, np.void):
            v = v.item()
        if isinstance(v, bool | int | float | str | DType) or v is None:
            return v
        raise ConstexprArgumentError(
            f"{cls._spec.name}: constexpr {pname} must be an int, float, bool, string, None or dtype, "
            f"got {type(v).__name__} ({v!r})"
        )

    @classmethod
    def _create(cls, dtypes: tuple[DType, ...], args: Sequence[Any], kwargs: dict[str, Any]) -> Kernel:
        label = f"{cls.__name__}[{', '.join(d.name for d in dtypes)}]" if dtypes else cls.__name__
        consts = cls._bind_consts(label, args, kwargs)
        obj = object.__new__(cls)
        obj._dtypes = dtypes
        obj._const_values = consts
        for p, v in zip(cls._spec.signature.constexprs, consts):
            obj.__dict__[p.name.lower()] = v
        return obj

    # ------------------------------------------------------------ attributes

    _dtypes: tuple[DType, ...]
    _const_values: tuple[Any, ...]

    @property
    def name(self) -> str:
        return self._spec.name

    @property
    def dtypes(self) -> tuple[DType, ...]:
        """The dtypes bound to the dtype parameters, in declaration order."""
        return self._dtypes

    @property
    def consts(self) -> dict[str, Any]:
        """Constexpr values by parameter name (original case), in declaration order."""
        return {p.name: v for p, v in zip(self._spec.signature.constexprs, self._const_values)}

    @property
    def binding(self) -> dict[Any, DType]:
        return {tv.typevar: dt for tv, dt in zip(self._spec.signature.typevars, self._dtypes)}

    @property
    def id(self) -> str:
        """``name__dtypes__consts`` (bools as ``true``/``false``), e.g. ``gelu_forward__f32__1024``."""
        parts = [self.name] + [d.name for d in self._dtypes] + [_render_const(v) for v in self._const_values]
        return "__".join(parts)

    @property
    def entry_point(self) -> str:
        """Symbol of the compiled entry (``.visible .entry`` in the PTX)."""
        return f"{self.name}_entry_point"

    @property
    def arg_types(self) -> tuple[Any, ...]:
        """Launch argument types in order: ``tl.Pointer[dt]`` or a dtype."""
        b = self.binding
        return tuple(p.launch_type(b) for p in self._spec.signature.runtime_params)

    @property
    def kernel_source(self) -> str:
        """The kernel function's source text (dedented, decorators included)."""
        return self._spec.source.text

    @property
    def entry_point_source(self) -> str:
        """The specialized entry point as Python-like text, dtypes and constants filled in."""
        b = self.binding
        sig = self._spec.signature
        header = ", ".join(f"{p.name}: {p.launch_type(b)}" for p in sig.runtime_params)
        consts = self.consts
        call, keyword = [], False
        for p in sig.params:
            if p.is_constexpr:
                keyword = True
                call.append(f"{p.name}={_python_const(consts[p.name])}")
            else:
                call.append(f"{p.name}={p.name}" if keyword else p.name)
        return f"def {self.entry_point}({header}):\n    {self.name}({', '.join(call)})"

    @property
    def source(self) -> str:
        """``kernel_source`` and ``entry_point_source`` joined (two blank lines between)."""
        return f"{self.kernel_source.rstrip()}\n\n\n{self.entry_point_source}\n"

    # ------------------------------------------------------------ IR and running

    def dependencies(self) -> Any:
        """What lowering this kernel reads besides its specialization: helper sources, module
        values (see :func:`eggpu.kernel_macro.deps.dependencies`); the caches are keyed on it."""
        from .deps import dependencies

        return dependencies(self._spec.fn)

    def ir(self) -> Function:
        """The tensor IR before optimization. Lowered once per specialization and set of
        :meth:`dependencies` (a rebound module constant or a reloaded helper lowers again; a
        kernel whose inputs cannot be enumerated is lowered every time); every call returns a
        fresh copy, so callers may transform it freely."""
        from .deps import dependencies

        deps = dependencies(self._spec.fn)  # (not self.dependencies(): a constexpr may shadow it)
        key = (type(self), self._key())
        fn = _IR_CACHE.get(key, deps.digest) if deps.opaque is None else None
        if fn is None:
            from .frontend import lower_kernel

            b = self.binding
            params = [
                (p.name, pointer(p.element_dtype(b), p.annotation.const) if p.kind == POINTER
                 else scalar(p.element_dtype(b)))
                for p in self._spec.signature.runtime_params
            ]
            fn = lower_kernel(self._spec.fn, self.name, params, self.consts, b)
            if deps.opaque is None:
                _IR_CACHE.put(key, deps.digest, fn)
        return fn.clone()

    def interpret(self, grid: Any, *args: Any, buffers: Any = None, debug: bool | None = None) -> Any:
        """Run the IR with the numpy interpreter (pointer arguments are numpy arrays, written in place;
        ``buffers``: the arrays the kernel reaches through raw addresses, see :mod:`eggpu.ir.raw_memory`).
        ``debug=True`` checks the kernel's ``tl.device_assert``s (None: ``TRITON_DEBUG``), as
        ``eggpu.compile(..., debug=True)`` does."""
        if not isinstance(self, Kernel):  # called on the class: Kadd.interpret(grid, ...)
            from eggpu.ir.launch_args import short_repr  # (imports numpy: not on a cache hit's path)

            raise LaunchError(f"interpret is called on a kernel instance: construct the Kernel class with its "
                              f"constexpr values first (e.g. Kadd(1024).interpret(grid, *args)); it was called on "
                              f"the class with {short_repr(self)} in place of the instance")
        want = self.arg_types
        if len(args) != len(want):
            raise LaunchError(
                f"{self.id} takes {len(want)} launch argument{'' if len(want) == 1 else 's'} "
                f"({', '.join(map(str, want))}), got {len(args)}"
            )
        from eggpu.ir import interp
        from eggpu.ir.debug_ops import resolve_debug, strip_device_asserts

        fn = self.ir()
        if not resolve_debug(debug, f"{self.id}.interpret", LaunchError):
            strip_device_asserts(fn)
        return interp.interpret(fn, grid, *args, buffers=buffers)

    def compile(self, **options: Any) -> Any:
        """Compile through the pipeline registered in :mod:`eggpu.kernel_macro.hooks`
        (what ``eggpu.compile(self, **options)`` does)."""
        hook = hooks.COMPILE_HOOK
        if hook is None:
            raise CompileUnavailableError(
                f"eggpu.compile is not available: no compile pipeline is registered in "
                f"eggpu.kernel_macro.hooks.COMPILE_HOOK (the eggpu facade registers it when its "
                f"compiler is imported); cannot compile {self.id}"
            )
        return hook(self, **options)

    # ------------------------------------------------------------ identity

    def _key(self) -> tuple:
        return (tuple(d.name for d in self._dtypes), tuple(_const_key(v) for v in self._const_values))

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other._key() == self._key()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self).__qualname__, self.name, self._key()))

    def __repr__(self) -> str:
        dt = f"[{', '.join(d.name for d in self._dtypes)}]" if self._dtypes else ""
        args = ", ".join(f"{k.lower()}={_python_const(v)}" for k, v in self.consts.items())
        return f"{type(self).__name__}{dt}({args})"

    # ------------------------------------------------------------ pickling

    def __reduce__(self) -> tuple:
        """Pickled by reference, so a worker process (a process pool, a Dask or Ray cluster)
        rebuilds the same specialization: the kernel's module and class name, the dtype names and
        the constexpr values. The worker imports that module, so the class must be reachable
        there under its name (defined at module level, not inside a function); a class that is
        not reachable so in this process cannot be pickled and the error says why."""
        cls = type(self)
        _check_reachable(cls)
        consts = tuple(("dtype", v.name) if isinstance(v, DType) else ("value", v) for v in self._const_values)
        return (_rebuild_kernel, (cls.__module__, cls.__qualname__, tuple(d.name for d in self._dtypes), consts))

    def __copy__(self) -> Kernel:
        return self  # a specialization is an immutable value

    def __deepcopy__(self, memo: dict) -> Kernel:
        return self


def _find_class(module: str, qualname: str) -> Any:
    """The object named ``qualname`` in the already imported or importable ``module``."""
    import importlib

    obj: Any = sys.modules.get(module) or importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def _check_reachable(cls: type) -> None:
    import pickle

    where = f"{cls.__module__}.{cls.__qualname__}"
    problem = None
    fn_qualname = getattr(getattr(cls, "_spec", None) and cls._spec.fn, "__qualname__", "")  # type: ignore[attr-defined]
    if "<locals>" in cls.__qualname__ or "<locals>" in fn_qualname:
        problem = "it is defined inside a function"
    else:
        try:
            found = _find_class(cls.__module__, cls.__qualname__)
        except (ImportError, AttributeError):
            found = None
        if found is not cls:
            problem = f"{where} does not name it (the module defines another object under that name, or none)"
    if problem is not None:
        raise pickle.PicklingError(
            f"{cls._spec.name}: cannot send kernel class {cls.__qualname__} to another process: {problem}; "  # type: ignore[attr-defined]
            f"define the @kernel at module level in an importable module"
        )


def _rebuild_kernel(module: str, qualname: str, dtypes: tuple[str, ...], consts: tuple[tuple[str, Any], ...]) -> Kernel:
    """Unpickle a :class:`Kernel` specialization (see :meth:`Kernel.__reduce__`)."""
    cls = _find_class(module, qualname)
    values = [BY_NAME[v] if kind == "dtype" else v for kind, v in consts]
    return cls._create(tuple(BY_NAME[d] for d in dtypes), values, {})


# ---------------------------------------------------------------- Dispatch


class KernelInstance:
    """What ``Dispatch.dispatch`` returns: a specialized kernel plus its backward pair.

    ``name``, ``id``, ``dtype``, ``source``, ``kernel`` (the Kernel instance), ``backward`` (a
    KernelInstance of the paired kernel with the same constants, or None), ``compile(**options)``
    (compiled on demand through the registered pipeline, memoized per options).
    """

    def __init__(self, kernel: Kernel, dtype: DType, backward: KernelInstance | None = None):
        self.kernel = kernel
        self.dtype = dtype
        self.backward = backward
        self._compiled: dict[tuple, Any] = {}

    @property
    def name(self) -> str:
        return self.kernel.name

    @property
    def id(self) -> str:
        return self.kernel.id

    @property
    def source(self) -> str:
        return self.kernel.source

    def compile(self, **options: Any) -> Any:
        try:
            key = tuple(sorted(options.items()))
            hash(key)
        except TypeError:
            return self.kernel.compile(**options)
        if key not in self._compiled:
            self._compiled[key] = self.kernel.compile(**options)
        return self._compiled[key]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, KernelInstance) and (self.kernel, self.backward) == (other.kernel, other.backward)

    def __hash__(self) -> int:
        return hash((self.kernel, self.backward))

    def __repr__(self) -> str:
        bw = f", backward={self.backward.kernel!r}" if self.backward is not None else ""
        return f"KernelInstance({self.kernel!r}{bw})"


class Dispatch:
    """Base of the generated Dispatch classes: pick a specialization by dtype at run time."""

    KERNEL: ClassVar[type[Kernel]]
    SUPPORTED_DTYPES: ClassVar[tuple[DType, ...]]

    @classmethod
    def backward_kernel(cls) -> type[Kernel] | None:
        """The paired backward Kernel class, or None."""
        return cls.KERNEL._spec.resolve_backward()

    @classmethod
    def dispatch(cls, dtype: Any, *consts: Any, **named_consts: Any) -> KernelInstance:
        """The specialization for ``dtype`` (``tl.f32``, ``"f32"`` or a numpy dtype; used for every
        dtype parameter) and the constexprs (positional or by lowercased name)."""
        k = cls.KERNEL
        spec = k._spec
        dt = to_dtype(dtype, spec.name)
        if dt not in cls.SUPPORTED_DTYPES:
            raise UnsupportedDtypeError(
                f"{spec.name} does not support dtype {dt} "
                f"(supported: {', '.join(d.name for d in cls.SUPPORTED_DTYPES)})"
            )
        inst = k._create((dt,) * len(spec.signature.typevars), consts, named_consts)
        backward = None
        bw = cls.backward_kernel()
        if bw is not None:
            bdt = bw._check_dtypes((dt,) * len(bw._spec.signature.typevars)) if bw._spec.signature.typevars else ()
            backward = KernelInstance(bw._create(bdt, consts, named_consts), dt)
        return KernelInstance(inst, dt, backward)


# ---------------------------------------------------------------- decorators


def _parse_dtypes(name: str, dtypes: Any) -> tuple[DType, ...]:
    if isinstance(dtypes, str | DType) or not hasattr(dtypes, "__iter__"):
        raise DecoratorArgumentError(f"{name}: dtypes= must be a list of dtypes, e.g. dtypes=[tl.f32, tl.f16]")
    out: list[DType] = []
    for x in dtypes:
        dt = to_dtype(x, name)
        if dt in out:
            raise DuplicateDtypeError(f"{name}: dtypes=[...] lists {dt} twice")
        out.append(dt)
    if not out:
        raise DecoratorArgumentError(f"{name}: dtypes=[...] is empty")
    return tuple(out)


def _supported_dtypes(name: str, sig: Signature, explicit: tuple[DType, ...] | None) -> tuple[DType, ...]:
    if explicit is not None:
        for tv in sig.typevars:
            for dt in explicit:
                if dt not in tv.allowed:
                    raise UnsupportedDtypeError(
                        f"{name}: dtypes=[...] lists {dt}, which is outside the bound of dtype parameter "
                        f"{tv.name}: {tv.category} ({', '.join(d.name for d in tv.allowed)})"
                    )
        return explicit
    if not sig.typevars:
        raise DtypeInferenceError(
            "cannot infer supported dtypes: a @kernel that opts into dispatch without an explicit "
            "dtypes=[...] must have a dtype parameter bound by one of Dtype/Num/Int/Float/Bool"
        )
    allowed = [d for d in ALL_DTYPES if all(d in tv.allowed for tv in sig.typevars)]
    order = sig.typevars[0].allowed  # the category's listing order (Float: f16, bf16, f32, f64)
    return tuple(d for d in order if d in allowed)


def _build(fn: Any, dtypes: Any, backward: Any, unknown: dict[str, Any]) -> Any:
    name = getattr(fn, "__name__", None)
    if not callable(fn) or name is None or not hasattr(fn, "__code__"):
        raise DecoratorArgumentError(f"@eggpu.kernel decorates a function, got {fn!r}")
    if unknown:
        k = next(iter(unknown))
        import difflib  # lazily: only error messages suggest names

        close = difflib.get_close_matches(k, _DECORATOR_ARGS, n=1)
        dym = f" (did you mean {close[0]}=?)" if close else ""
        raise DecoratorArgumentError(
            f"{name}: @kernel got an unknown argument {k!r}{dym}; it accepts dtypes=[...] and backward=..."
        )
    sig = analyze(fn)
    explicit = _parse_dtypes(name, dtypes) if dtypes is not None else None
    if backward is not None and not isinstance(backward, str) and _kernel_class_of(backward) is None:
        raise DecoratorArgumentError(
            f"{name}: backward= must be a @kernel function, its Kernel class or the name of one in the "
            f"same module, got {backward!r}"
        )
    spec = KernelSpec(fn, sig, explicit, backward)
    cls_name = pascal_case(name)
    cls = type(cls_name, (Kernel,), {
        "_spec": spec, "__module__": fn.__module__, "__qualname__": cls_name,
        "__doc__": f"Kernel class of @kernel {name} (generated by eggpu.kernel).",
    })
    spec.kernel_cls = cls
    fn.Kernel = cls
    fn.__eggpu_kernel__ = cls
    g = fn.__globals__
    g[cls_name] = cls
    if explicit is not None or backward is not None:
        supported = _supported_dtypes(name, sig, explicit)
        dname = f"{cls_name}Dispatch"
        dcls = type(dname, (Dispatch,), {
            "KERNEL": cls, "SUPPORTED_DTYPES": supported, "__module__": fn.__module__,
            "__qualname__": dname, "__doc__": f"Dispatch class of @kernel {name} (generated by eggpu.kernel).",
        })
        fn.Dispatch = dcls
        cls.Dispatch = dcls
        g[dname] = dcls
        if backward is not None and not isinstance(backward, str):
            spec.resolve_backward()  # check the constexpr lists now
    tl._KERNEL_CODES[fn.__code__] = cls
    return fn


def kernel(fn: Any = None, /, *, dtypes: Any = None, backward: Any = None, **unknown: Any) -> Any:
    """Mark a kernel function; generate its Kernel (and Dispatch) classes. Returns ``fn`` unchanged.

    ``@kernel``, ``@kernel()``, ``@kernel(dtypes=[tl.f32, "f16"])``,
    ``@kernel(backward="gelu_backward")`` (a name resolved lazily in the function's module, a
    Kernel class or a @kernel function).
    """
    if fn is not None:
        return _build(fn, dtypes, backward, unknown)

    def decorate(f: Any) -> Any:
        return _build(f, dtypes, backward, unknown)

    return decorate


def jit(fn: Callable[..., Any] | None = None, *, do_not_specialize: Any = (), noinline: bool = False,
        debug: Any = None) -> Any:
    """``@eggpu.jit``: a :class:`~eggpu.kernel_macro.jitfunction.JITFunction` wrapping ``fn``.

    Called from a kernel, ``fn`` is inlined (plain functions of the kernel's own module are inlined
    without the mark); called as Python it runs ``fn``; ``fn[grid](*args, **constexprs)`` launches
    it as a Triton-style kernel typed by its arguments and specialized on their values
    (see :mod:`eggpu.kernel_macro.jitfunction`). ``@eggpu.jit(do_not_specialize=["n", 2])``
    (parameter names or positions, Triton's spelling) keeps those arguments out of the value
    specialization. Triton's ``noinline=`` and ``debug=`` are accepted and have no effect: eggpu
    inlines every helper (a call's result is the same either way) and has no device assertions.
    """
    from .jitfunction import make_jit

    del noinline, debug  # accepted for Triton source compatibility; see the docstring

    if fn is None:
        return lambda f: make_jit(f, do_not_specialize=do_not_specialize)
    return make_jit(fn, do_not_specialize=do_not_specialize)
