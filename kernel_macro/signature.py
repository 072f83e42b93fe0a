"""Parameter analysis of a ``@kernel`` function.

Every parameter needs an annotation, one of:

* ``tl.Pointer[T]`` — a pointer launch argument; ``T`` a dtype or a dtype ``TypeVar``;
* a dtype (``tl.i32``) or a dtype ``TypeVar`` — a scalar launch argument;
* ``tl.constexpr`` — a compile-time constant (int, float, bool or dtype), part of the
  specialization; it may have a default value.

Dtype ``TypeVar``s must be bound by a category (``tl.Float``, ``tl.Int``, ``tl.Num``, ``tl.Bool``,
``tl.Dtype``); their order is the PEP 695 ``__type_params__`` order when present, else the order
of first use in the parameter list. String annotations (``from __future__ import annotations``)
are evaluated in the function's globals and closure.
"""

from __future__ import annotations

import types

from eggpu.ir.dtypes import DType
from eggpu.ir.record import Frozen

from . import language as tl
from .errors import KernelSignatureError
from .language_types import _TypeVar

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing on a cache hit
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any



class _Missing:
    """The marker of an absent default or annotation (one object each, compared with ``is``)."""

    __slots__ = ("_name",)

    def __init__(self, name: str):
        self._name = name

    def __repr__(self) -> str:
        return self._name


#: a parameter's ``default`` when it has none
NO_DEFAULT: Any = _Missing("NO_DEFAULT")
_NO_ANNOTATION = _Missing("NO_ANNOTATION")
_CO_VARARGS, _CO_VARKEYWORDS = 0x04, 0x08  # inspect.CO_VARARGS, inspect.CO_VARKEYWORDS

POINTER = "pointer"
SCALAR = "scalar"
CONSTEXPR = "constexpr"

# Attribute names of Kernel instances that a lowercased constexpr name may not shadow.
RESERVED_ATTRIBUTES = frozenset({
    "name", "id", "dtypes", "consts", "kernel_source", "entry_point_source", "source",
    "entry_point", "arg_types", "ir", "interpret", "compile", "signature", "kernel",
})


class DtypeVar(Frozen):
    """A dtype parameter of a kernel: a ``TypeVar`` with its category and allowed dtypes."""

    _fields = ("typevar", "name", "category", "allowed")
    typevar: Any
    name: str
    category: str
    allowed: tuple[DType, ...]

    def __init__(self, typevar: Any, name: str, category: str, allowed: tuple[DType, ...]):
        self._assign(typevar, name, category, allowed)

    def __str__(self) -> str:
        return f"{self.name}: {self.category}"


class Param(Frozen):
    """One kernel parameter. ``kind`` is ``pointer``, ``scalar`` or ``constexpr``; the element
    dtype is ``dtype`` (fixed) or ``typevar`` (a dtype parameter)."""

    _fields = ("name", "kind", "annotation", "dtype", "typevar", "default")
    name: str
    kind: str
    annotation: Any
    dtype: DType | None
    typevar: DtypeVar | None
    default: Any

    def __init__(self, name: str, kind: str, annotation: Any, dtype: DType | None = None,
                 typevar: DtypeVar | None = None, default: Any = NO_DEFAULT):
        self._assign(name, kind, annotation, dtype, typevar, default)

    @property
    def is_constexpr(self) -> bool:
        return self.kind == CONSTEXPR

    def element_dtype(self, binding: dict[Any, DType]) -> DType:
        """The pointee (pointer) or value (scalar) dtype under a TypeVar binding."""
        if self.typevar is not None:
            return binding[self.typevar.typevar]
        assert self.dtype is not None
        return self.dtype

    def launch_type(self, binding: dict[Any, DType]) -> Any:
        """``tl.Pointer[f32]`` for pointers, the dtype for scalars."""
        dt = self.element_dtype(binding)
        return tl.PointerAnnotation(dt) if self.kind == POINTER else dt


class Signature(Frozen):
    """The analysed parameter list of a kernel function."""

    _fields = ("name", "params", "typevars")
    name: str
    params: tuple[Param, ...]
    typevars: tuple[DtypeVar, ...]

    def __init__(self, name: str, params: tuple[Param, ...], typevars: tuple[DtypeVar, ...]):
        self._assign(name, params, typevars)

    @property
    def runtime_params(self) -> tuple[Param, ...]:
        return tuple(p for p in self.params if not p.is_constexpr)

    @property
    def constexprs(self) -> tuple[Param, ...]:
        return tuple(p for p in self.params if p.is_constexpr)


def _closure_vars(fn: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    code = getattr(fn, "__code__", None)
    if code is None or not fn.__closure__:
        return out
    for name, cell in zip(code.co_freevars, fn.__closure__):
        try:
            out[name] = cell.cell_contents
        except ValueError:  # empty cell (not assigned yet)
            pass
    return out


def _eval_annotation(fn: Any, pname: str, ann: Any) -> Any:
    if not isinstance(ann, str):
        return ann
    ns = {**fn.__globals__, **_closure_vars(fn)}
    try:
        return eval(ann, ns)  # noqa: S307 - annotations are the user's own source
    except Exception as e:  # noqa: BLE001
        raise KernelSignatureError(
            f"{fn.__name__}: cannot evaluate the annotation {ann!r} of parameter {pname}: {e}"
        ) from None


def category_of(kernel: str, tv: Any) -> DtypeVar:
    """The :class:`DtypeVar` of a TypeVar, checking its bound is a dtype category."""
    if tv.__constraints__:
        raise KernelSignatureError(
            f"{kernel}: TypeVar {tv.__name__} has constraints; dtype parameters must be bound by a "
            f"category instead: {tv.__name__} = TypeVar({tv.__name__!r}, bound=tl.Float) "
            f"(or tl.Int, tl.Num, tl.Bool, tl.Dtype), and dtypes=[...] to restrict the set"
        )
    bound = tv.__bound__
    for cname, cls in tl.CATEGORY_CLASSES.items():
        if bound is cls:
            return DtypeVar(tv, tv.__name__, cname, cls.DTYPES)
    what = "has no bound" if bound is None else f"is bound by {getattr(bound, '__name__', bound)!r}"
    raise KernelSignatureError(
        f"{kernel}: TypeVar {tv.__name__} {what}; a dtype parameter must be bound by a category: "
        f"{tv.__name__} = TypeVar({tv.__name__!r}, bound=tl.Float) (one of Dtype/Num/Int/Float/Bool)"
    )


class _Parameter(Frozen):
    """A positional parameter: its name, annotation (unevaluated) and default, each absent one
    :data:`_NO_ANNOTATION` / :data:`NO_DEFAULT`."""

    _fields = ("name", "annotation", "default")

    def __init__(self, name: str, annotation: Any, default: Any):
        self._assign(name, annotation, default)


def _positional_parameters(fn: Any) -> Iterator[_Parameter]:
    """The parameters of ``fn``, as :func:`inspect.signature` gives them; a parameter that is not
    plain positional (``*args``, ``**kwargs``, keyword-only) is a :class:`KernelSignatureError`.

    A plain function (no ``__wrapped__`` or ``__signature__`` to follow) is read from its code
    object, defaults and annotations, without importing inspect (a fresh-process cache hit
    decorates its kernels: inspect, with ast, dis and tokenize, costs it ~5 ms). Parameters are
    yielded in order, so an earlier parameter's error is raised before a later one's."""
    code = getattr(fn, "__code__", None)
    plain = (isinstance(fn, types.FunctionType) and not hasattr(fn, "__wrapped__")
             and not hasattr(fn, "__signature__") and not code.co_kwonlyargcount
             and not code.co_flags & (_CO_VARARGS | _CO_VARKEYWORDS))
    if plain:
        names = code.co_varnames[:code.co_argcount]
        defaults = fn.__defaults__ or ()
        first_default = len(names) - len(defaults)
        annotations = fn.__annotations__
        for i, n in enumerate(names):
            yield _Parameter(n, annotations.get(n, _NO_ANNOTATION),
                             defaults[i - first_default] if i >= first_default else NO_DEFAULT)
        return
    import inspect

    for p in inspect.signature(fn).parameters.values():
        if p.kind not in (p.POSITIONAL_OR_KEYWORD, p.POSITIONAL_ONLY):
            raise KernelSignatureError(
                f"{fn.__name__}: parameter {p}: kernels take plain positional parameters only "
                f"(no *args, **kwargs or keyword-only parameters)"
            )
        yield _Parameter(p.name, _NO_ANNOTATION if p.annotation is p.empty else p.annotation,
                         NO_DEFAULT if p.default is p.empty else p.default)


def analyze(fn: Any) -> Signature:
    """Analyse ``fn``'s parameters; raise :class:`KernelSignatureError` naming the kernel and
    parameter on anything a kernel cannot take."""
    kname = fn.__name__
    typevars: dict[Any, DtypeVar] = {}
    for tv in getattr(fn, "__type_params__", ()) or ():  # PEP 695 order (Python >= 3.12)
        if isinstance(tv, _TypeVar):
            typevars[tv] = category_of(kname, tv)
    params: list[Param] = []
    lowered: dict[str, str] = {}
    for p in _positional_parameters(fn):
        if p.annotation is _NO_ANNOTATION:
            raise KernelSignatureError(
                f"{kname}: parameter {p.name} has no annotation; annotate it with a pointer type "
                f"({p.name}: tl.Pointer[tl.f32] or tl.Pointer[D]), a dtype ({p.name}: tl.i32) or "
                f"tl.constexpr"
            )
        ann = _eval_annotation(fn, p.name, p.annotation)
        if ann is tl.constexpr:
            low = p.name.lower()
            if low in RESERVED_ATTRIBUTES:
                raise KernelSignatureError(
                    f"{kname}: constexpr parameter {p.name} would become the instance attribute "
                    f"{low!r}, which is reserved; rename it"
                )
            if low in lowered:
                raise KernelSignatureError(
                    f"{kname}: constexpr parameters {lowered[low]} and {p.name} both lowercase to "
                    f"{low!r}; rename one"
                )
            lowered[low] = p.name
            params.append(Param(p.name, CONSTEXPR, ann, default=p.default))
            continue
        if p.default is not NO_DEFAULT:
            raise KernelSignatureError(
                f"{kname}: parameter {p.name} has a default value; only tl.constexpr parameters may"
            )
        if isinstance(ann, tl.PointerAnnotation):
            kind, elem = POINTER, ann.pointee
        elif isinstance(ann, DType | _TypeVar):
            kind, elem = SCALAR, ann
        else:
            shown = getattr(ann, "__name__", None) or repr(ann)
            raise KernelSignatureError(
                f"{kname}: parameter {p.name} has annotation {shown}, which is not a kernel type; "
                f"use tl.Pointer[...] for pointers, a dtype such as tl.i32 or tl.f32 (or a dtype "
                f"TypeVar) for scalars, or tl.constexpr for compile-time constants"
            )
        if isinstance(elem, _TypeVar):
            if elem not in typevars:
                typevars[elem] = category_of(kname, elem)
            params.append(Param(p.name, kind, ann, typevar=typevars[elem]))
        else:
            params.append(Param(p.name, kind, ann, dtype=elem))
    return Signature(kname, tuple(params), tuple(typevars.values()))


# ---------------------------------------------------------------- untyped (Triton-style) kernels


class JitParam(Frozen):
    """One parameter of an ``@eggpu.jit`` function launched as a kernel.

    ``constexpr``: annotated ``tl.constexpr``. ``fixed``: a dtype or ``tl.Pointer[dtype]``
    annotation the argument must match (None: the type comes from the argument)."""

    _fields = ("name", "constexpr", "fixed", "default", "const")
    name: str
    constexpr: bool
    fixed: Any
    default: Any
    const: bool  # annotated tl.const (or a const tl.pointer_type): a read-only pointer

    def __init__(self, name: str, constexpr: bool, fixed: Any = None, default: Any = NO_DEFAULT,
                 const: bool = False):
        self._assign(name, constexpr, fixed, default, const)


# Python's scalar types as annotations: Triton canonicalises them by name (``int`` -> i32,
# ``float`` -> fp32, ``bool`` -> u1), so ``n: int`` is an i32 parameter whatever the argument's value
_PYTHON_SCALARS = {int: tl.int32, float: tl.float32, bool: tl.int1}


def analyze_jit(fn: Any) -> tuple[JitParam, ...]:
    """The parameters of a Triton-style function: unannotated (typed by each launch's arguments),
    ``tl.constexpr``, or a concrete dtype / ``tl.Pointer[dtype]`` (Python's ``int``, ``float`` and
    ``bool`` are Triton's ``int32``, ``float32`` and ``int1``). Raises
    :class:`KernelSignatureError` naming the function and parameter for anything else."""
    kname = fn.__name__
    out: list[JitParam] = []
    for p in _positional_parameters(fn):
        if p.annotation is _NO_ANNOTATION:
            out.append(JitParam(p.name, False, None, p.default))
            continue
        ann = _eval_annotation(fn, p.name, p.annotation)
        ann = _PYTHON_SCALARS.get(ann, ann) if isinstance(ann, type) else ann
        if ann is tl.constexpr:
            out.append(JitParam(p.name, True, None, p.default))
        elif ann is tl.tensor:  # Triton's value type: the same as no annotation
            out.append(JitParam(p.name, False, None, p.default))
        elif ann is tl.const:  # Triton's read-only pointer parameter: typed by the argument
            out.append(JitParam(p.name, False, None, p.default, const=True))
        elif isinstance(ann, DType) or (isinstance(ann, tl.PointerAnnotation) and isinstance(ann.pointee, DType)):
            out.append(JitParam(p.name, False, ann, p.default,
                                const=isinstance(ann, tl.PointerAnnotation) and ann.const))
        elif ann is tl.tensor_descriptor:  # a host TensorDescriptor argument (checked at launch)
            out.append(JitParam(p.name, False, ann, p.default))
        else:
            shown = getattr(ann, "__name__", None) or repr(ann)
            raise KernelSignatureError(
                f"{kname}: parameter {p.name} has annotation {shown}; a kernel launched as {kname}[grid](...) "
                f"takes unannotated parameters (typed by the arguments), tl.constexpr, a dtype, "
                f"tl.Pointer[dtype] or tl.tensor_descriptor (dtype TypeVars need @eggpu.kernel)"
            )
    return tuple(out)


def specialized_signature(name: str, params: tuple[JitParam, ...], kinds: dict[str, tuple[str, Any]]) -> Signature:
    """The :class:`Signature` of one specialization: ``kinds[p]`` is ``(POINTER, dtype)``,
    ``(SCALAR, dtype)`` or ``(CONSTEXPR, None)`` for every parameter ``p``."""
    out: list[Param] = []
    for p in params:
        kind, dt = kinds[p.name]
        if kind == CONSTEXPR:
            out.append(Param(p.name, CONSTEXPR, tl.constexpr, default=p.default))
        else:
            ann = tl.PointerAnnotation(dt, p.const) if kind == POINTER else dt
            out.append(Param(p.name, kind, ann, dtype=dt))
    return Signature(name, tuple(out), ())
