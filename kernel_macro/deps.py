"""Everything a kernel's lowering reads besides its own arguments: the input of both caches.

:func:`dependencies` walks a ``@kernel`` function's body (not its decorators or annotations,
which are fixed when the Kernel class is made and reflected in the kernel id) and collects every
name and dotted attribute chain it loads (``SCALE``, ``cfg.SCALE``, ``helpers.gelu``). Each one
that resolves in the function's closure or module globals is recorded *with its current value*,
resolved the way the frontend resolves it (attributes are followed through modules, classes,
dtypes and pointer annotations). Functions the frontend would inline — ``@eggpu.jit`` helpers,
``@kernel`` functions, plain functions of the referring function's module — are visited
recursively, wherever they are defined: their source text, their default argument values and
their own reads are recorded. The walk over-approximates (a name read only in a branch that a
constexpr removes still counts), which costs at most a needless recompile, never a stale result.

Values are encoded by value: ``None``, ``bool``, ``int``, ``float`` (``repr``, so ``-0.0`` and
``nan`` differ), ``str``, dtypes, ``tl.Pointer[...]``, numpy scalars and scalar types, TypeVars,
tuples (and lists, which the frontend refuses) of those; other callables and classes by their
qualified name. A *user* module or class used as a bare value (``helper(cfg)``, ``c = cfg``)
would let the kernel read attributes this walk cannot see: the result is then :attr:`opaque`
(with the reason) and callers must not cache the kernel.

The syntactic part of the walk is memoized per code object; a call re-reads the current values,
so rebinding a module global (``SCALE = 7``) or reloading a helper's module changes the digest.
"""

from __future__ import annotations

import json
import sys
import types

from eggpu.ir.dtypes import DType
from eggpu.ir.hashing import sha256
from eggpu.ir.record import Frozen

from . import language as tl
from .diagnostics import Source
from .language_types import _TypeVar
from .signature import _closure_vars

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing on a cache hit
if TYPE_CHECKING:
    from typing import Any

__all__ = ["Dependencies", "dependencies"]

#: modules whose contents are fixed by eggpu's or a library's version, so passing one around as a
#: value cannot hide a read the cache key misses
_STABLE_ROOTS = frozenset({"eggpu", "numpy", "ml_dtypes"}) | frozenset(sys.stdlib_module_names)
_MAX_DEPTH = 32


class Dependencies(Frozen):
    """``description``: JSON-able record of every input (see the module docstring); ``digest``:
    its sha256; ``opaque``: None, or why the kernel's inputs cannot be enumerated (do not cache)."""

    _fields = ("description", "digest", "opaque")
    description: list[Any]
    digest: str
    opaque: str | None

    def __init__(self, description: list[Any], digest: str, opaque: str | None):
        self._assign(description, digest, opaque)


def _stable_module(name: str) -> bool:
    return name.split(".")[0] in _STABLE_ROOTS


def _inlinable(v: Any, referrer: Any) -> bool:
    """Mirrors the frontend's rule for which calls are inlined (CodeGenerator._call)."""
    return isinstance(v, types.FunctionType) and (
        getattr(v, "__eggpu_jit__", False) or getattr(v, "__eggpu_kernel__", None) is not None
        or v.__module__ == referrer.__module__)


class _Walk:
    def __init__(self) -> None:
        self.functions: list[dict[str, Any]] = []
        self.index: dict[int, int] = {}
        self.keep: list[Any] = []  # keeps visited functions alive so id() stays unique
        self.opaque: str | None = None

    def visit(self, fn: Any) -> int:
        i = self.index.get(id(fn))
        if i is not None:
            return i
        i = len(self.functions)
        self.index[id(fn)] = i
        self.keep.append(fn)
        entry: dict[str, Any] = {"fn": f"{fn.__module__}.{fn.__qualname__}"}
        self.functions.append(entry)
        try:
            entry["source"] = Source.of(fn).text
            chains = Source.of(fn).names
        except Exception as e:  # noqa: BLE001 - the frontend reports it if the function is inlined
            entry["unreadable"] = str(e)
            return i
        entry["defaults"] = self.encode(fn.__defaults__ or (), fn, "defaults")
        entry["kwdefaults"] = self.encode(tuple(sorted((fn.__kwdefaults__ or {}).items())), fn, "defaults")
        closure = _closure_vars(fn)
        g = fn.__globals__
        reads: dict[str, Any] = {}
        for chain in chains:
            base = chain[0]
            if base in closure:
                v = closure[base]
            elif base in g:
                v = g[base]
            else:
                continue  # a local, a parameter or a builtin
            walked = [base]
            for attr in chain[1:]:
                if not isinstance(v, types.ModuleType | type | DType | tl.PointerAnnotation):
                    break
                try:
                    v = getattr(v, attr)
                except Exception:  # noqa: BLE001 - the frontend reports the missing attribute
                    v = _Missing(attr)
                    break
                walked.append(attr)
            name = ".".join(walked)
            reads[name] = self.encode(v, fn, name)
        entry["reads"] = reads
        return i

    def encode(self, v: Any, referrer: Any, name: str, depth: int = 0) -> Any:
        if depth > _MAX_DEPTH:
            self.opaque = self.opaque or f"{name} is nested too deeply to be part of the cache key"
            return ["deep"]
        if v is None or isinstance(v, bool | int | str):
            return [type(v).__name__, v]
        if isinstance(v, float):
            return ["float", repr(v)]
        if isinstance(v, DType):
            return ["dtype", v.name]
        if isinstance(v, tl.PointerAnnotation):
            return ["ptr", str(v)]
        if isinstance(v, _TypeVar):
            return ["typevar", v.__name__]
        np = sys.modules.get("numpy")  # a numpy scalar exists only once numpy is imported
        if np is not None and isinstance(v, np.generic):
            return ["np", type(v).__name__, repr(v.item())]
        if isinstance(v, tuple | list):
            return [type(v).__name__, [self.encode(x, referrer, name, depth + 1) for x in v]]
        if isinstance(v, _Missing):
            return ["missing", v.attr]
        inner = getattr(v, "fn", None)  # an @eggpu.jit JITFunction wraps the helper it inlines
        if not isinstance(v, types.FunctionType) and isinstance(inner, types.FunctionType) and getattr(
                inner, "__eggpu_jit__", False):
            v = inner
        if isinstance(v, types.FunctionType) and _inlinable(v, referrer):
            return ["fn", self.visit(v)]
        if isinstance(v, types.ModuleType):
            if not _stable_module(v.__name__):
                self.opaque = self.opaque or (
                    f"{referrer.__qualname__} uses module {v.__name__} as a value ({name}); reads through it "
                    f"cannot be tracked")
            return ["module", v.__name__]
        if isinstance(v, type):
            mod = getattr(v, "__module__", "") or ""
            if not _stable_module(mod):
                self.opaque = self.opaque or (
                    f"{referrer.__qualname__} uses class {mod}.{v.__qualname__} as a value ({name}); reads "
                    f"through it cannot be tracked")
            return ["type", mod, v.__qualname__]
        if callable(v):
            return ["callable", getattr(v, "__module__", None), getattr(v, "__qualname__", type(v).__qualname__)]
        # anything else is refused by the frontend when the kernel really reads it
        return ["object", type(v).__module__, type(v).__qualname__]


class _Missing:
    __slots__ = ("attr",)

    def __init__(self, attr: str):
        self.attr = attr


def dependencies(fn: Any) -> Dependencies:
    """The current inputs of lowering ``fn`` (a ``@kernel`` function) besides its specialization."""
    w = _Walk()
    w.visit(fn)
    blob = json.dumps(w.functions, sort_keys=True, separators=(",", ":"), default=str)
    return Dependencies(w.functions, sha256(blob.encode()).hexdigest(), w.opaque)
