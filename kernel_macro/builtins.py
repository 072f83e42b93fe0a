"""Meaning of each ``tl.*`` function during lowering: ``IMPLS[name](sem, args)``.

``args`` are the call's arguments bound to the language function's signature (defaults
applied), so every implementation receives them by parameter name. ``static_range`` and ``range``
are handled by the frontend's ``for`` statement and are not listed here. The functions with
Triton's keyword arguments (memory, min/max, reductions, dot, hints) live in :mod:`.compat`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from . import language as tl
from .block_pointers import IMPLS as BLOCK_POINTER_IMPLS
from .compat import IMPLS as COMPAT_IMPLS
from .debugging import IMPLS as DEBUG_IMPLS
from .frontend_ops import FLOAT_FUNCTIONS, Semantic, SemanticError, Tensor, describe
from .lanewise import IMPLS as LANEWISE_IMPLS
from .libdevice_calls import IMPLS as LIBDEVICE_IMPLS
from .philox import IMPLS as PHILOX_IMPLS
from .scaled_dot import IMPLS as SCALED_DOT_IMPLS
from .scans import IMPLS as SCAN_IMPLS
from .shuffles import IMPLS as SHUFFLE_IMPLS
from .sorting import IMPLS as SORTING_IMPLS

Impl = Callable[[Semantic, dict[str, Any]], Any]


def _static_assert(sem: Semantic, a: dict[str, Any]) -> None:
    cond, msg = a["condition"], a["msg"]
    if isinstance(cond, Tensor):
        raise SemanticError("tl.static_assert needs a compile-time condition, got a runtime value",
                            "static_assert checks tl.constexpr values only", arg="condition")
    if not cond:
        raise SemanticError(f"static assertion failed{': ' + str(msg) if msg else ''}")


def _zeros_like(sem: Semantic, a: dict[str, Any]) -> Tensor:
    x = a["input"]
    if not isinstance(x, Tensor) or x.is_pointer:
        raise SemanticError(f"tl.zeros_like needs a block, got {describe(x)}", arg="input")
    return sem.full(x.shape, 0, x.dtype)


def _broadcast(sem: Semantic, a: dict[str, Any]) -> tuple[Tensor, Tensor]:
    x, y = sem.to_tensor(a["input"]), sem.to_tensor(a["other"])
    return sem.broadcast_pair(x, y)


IMPLS: dict[str, Impl] = {
    "program_id": lambda s, a: s.program_id(a["axis"]),
    "num_programs": lambda s, a: s.num_programs(a["axis"]),
    "cdiv": lambda s, a: s.cdiv(a["a"], a["b"]),
    "arange": lambda s, a: s.arange(a["start"], a["end"]),
    "full": lambda s, a: s.full(a["shape"], a["value"], a["dtype"]),
    "zeros": lambda s, a: s.full(a["shape"], 0, a["dtype"]),
    "zeros_like": _zeros_like,
    "expand_dims": lambda s, a: s.expand_dims(a["input"], a["axis"]),
    "trans": lambda s, a: s.trans(a["input"], a["dims"]),
    "broadcast": _broadcast,
    "where": lambda s, a: s.where(a["condition"], a["x"], a["y"]),
    "abs": lambda s, a: s.abs(a["x"]),
    "sigmoid": lambda s, a: s.float_unary("sigmoid", a["x"]),
    "fma": lambda s, a: s.fma(a["x"], a["y"], a["z"]),
    "static_assert": _static_assert,
}
for _name in FLOAT_FUNCTIONS:
    IMPLS[_name] = (lambda n: lambda s, a: s.float_unary(n, a["x"]))(_name)
IMPLS.update(COMPAT_IMPLS)  # Triton's keywords and Triton-only functions (kernel_macro/compat.py)
IMPLS.update(SCALED_DOT_IMPLS)  # tl.dot_scaled (kernel_macro/scaled_dot.py)
IMPLS.update(SCAN_IMPLS)  # scans and reductions with a combine function (kernel_macro/scans.py)
IMPLS.update(SHUFFLE_IMPLS)  # gather, join, split, ... (kernel_macro/shuffles.py)
IMPLS.update(SORTING_IMPLS)  # sort, swizzle2d, reduce_or (kernel_macro/sorting.py)
IMPLS.update(PHILOX_IMPLS)  # random numbers (kernel_macro/philox.py)
IMPLS.update(DEBUG_IMPLS)  # tl.device_print, tl.device_assert (kernel_macro/debugging.py)
IMPLS.update(BLOCK_POINTER_IMPLS)  # tl.make_block_ptr, tl.advance (kernel_macro/block_pointers.py)
IMPLS.update(LANEWISE_IMPLS)  # tl.map_elementwise (kernel_macro/lanewise.py)
IMPLS.update(LIBDEVICE_IMPLS)  # libdevice.nextafter, ... (one libdevice op; kernel_macro/libdevice_calls.py)

COMBINE_FUNCTIONS = {"reduce": "combine_fn", "associative_scan": "combine_fn", "map_elementwise": "scalar_fn"}
"""Functions whose function argument (by parameter name) the frontend turns into a callable that
inlines it per element (an ``if`` on a per-element condition selects; kernel_macro/lanewise.py)."""


class BuiltinSig:
    """The signature of a language function, prepared for fast binding and readable messages."""

    __slots__ = ("name", "sig", "params", "keywords", "text")

    def __init__(self, fn: Any):
        self.name = fn.__eggpu_builtin__
        self.sig = inspect.signature(fn)
        self.params = tuple(self.sig.parameters)
        self.keywords = tuple(n for n, p in self.sig.parameters.items() if p.kind is not p.VAR_POSITIONAL)
        """The parameters that may be passed by keyword (``*shape`` of tl.reshape may not)."""
        parts = []
        for p in self.sig.parameters.values():
            if p.kind is p.VAR_POSITIONAL:
                parts.append(f"*{p.name}")
            elif p.default is p.empty:
                parts.append(p.name)
            else:
                parts.append(f"{p.name}={p.default!r}")
        self.text = f"tl.{self.name}({', '.join(parts)})"


SIGNATURES: dict[str, BuiltinSig] = {
    fn.__eggpu_builtin__: BuiltinSig(fn) for fn in (*tl.BUILTIN_FUNCTIONS.values(), *tl.EXTERN_FUNCTIONS.values())
}

_missing = set(SIGNATURES) - set(IMPLS) - {"static_range", "range"}
assert not _missing, f"language functions without an implementation: {sorted(_missing)}"
