"""Meaning of each ``tl.*`` function during lowering: ``IMPLS[name](sem, args)``.

``args`` are the call's arguments bound to the language function's signature (defaults
applied), so every implementation receives them by parameter name. ``static_range`` is handled
by the frontend's ``for`` statement and is not listed here.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from . import language as tl
from .frontend_ops import FLOAT_FUNCTIONS, Semantic, SemanticError, Tensor, describe

Impl = Callable[[Semantic, dict[str, Any]], Any]


def _static_assert(sem: Semantic, a: dict[str, Any]) -> None:
    cond, msg = a["condition"], a["msg"]
    if isinstance(cond, Tensor):
        raise SemanticError("tl.static_assert needs a compile-time condition, got a runtime value",
                            "static_assert checks tl.constexpr values only", arg="condition")
    if not cond:
        raise SemanticError(f"static assertion failed{': ' + str(msg) if msg else ''}")


def _cast(sem: Semantic, a: dict[str, Any]) -> Tensor:
    if not isinstance(a["bitcast"], bool):
        raise SemanticError(f"bitcast must be a compile-time bool, got {describe(a['bitcast'])}", arg="bitcast")
    return sem.cast(a["input"], a["dtype"], a["bitcast"])


def _zeros_like(sem: Semantic, a: dict[str, Any]) -> Tensor:
    x = a["input"]
    if not isinstance(x, Tensor) or x.is_pointer:
        raise SemanticError(f"tl.zeros_like needs a block, got {describe(x)}", arg="input")
    return sem.full(x.shape, 0, x.dtype)


def _broadcast(sem: Semantic, a: dict[str, Any]) -> tuple[Tensor, Tensor]:
    x, y = sem.to_tensor(a["input"]), sem.to_tensor(a["other"])
    return sem.broadcast_pair(x, y)


def _broadcast_to(sem: Semantic, a: dict[str, Any]) -> Tensor:
    return sem.broadcast_to(sem.to_tensor(a["input"]), sem.shape_arg(a["shape"]))


IMPLS: dict[str, Impl] = {
    "program_id": lambda s, a: s.program_id(a["axis"]),
    "num_programs": lambda s, a: s.num_programs(a["axis"]),
    "cdiv": lambda s, a: s.cdiv(a["a"], a["b"]),
    "arange": lambda s, a: s.arange(a["start"], a["end"]),
    "full": lambda s, a: s.full(a["shape"], a["value"], a["dtype"]),
    "zeros": lambda s, a: s.full(a["shape"], 0, a["dtype"]),
    "zeros_like": _zeros_like,
    "expand_dims": lambda s, a: s.expand_dims(a["input"], a["axis"]),
    "reshape": lambda s, a: s.reshape(a["input"], a["shape"]),
    "trans": lambda s, a: s.trans(a["input"], a["dims"]),
    "broadcast_to": _broadcast_to,
    "broadcast": _broadcast,
    "load": lambda s, a: s.load(a["ptr"], a["mask"], a["other"]),
    "store": lambda s, a: s.store(a["ptr"], a["value"], a["mask"]),
    "atomic_add": lambda s, a: s.atomic("atomic_add", a["ptr"], a["val"], a["mask"]),
    "atomic_max": lambda s, a: s.atomic("atomic_max", a["ptr"], a["val"], a["mask"]),
    "atomic_min": lambda s, a: s.atomic("atomic_min", a["ptr"], a["val"], a["mask"]),
    "atomic_xchg": lambda s, a: s.atomic("atomic_xchg", a["ptr"], a["val"], a["mask"]),
    "atomic_cas": lambda s, a: s.atomic_cas(a["ptr"], a["cmp"], a["val"]),
    "where": lambda s, a: s.where(a["condition"], a["x"], a["y"]),
    "minimum": lambda s, a: s.binary("minimum", a["x"], a["y"]),
    "maximum": lambda s, a: s.binary("maximum", a["x"], a["y"]),
    "clamp": lambda s, a: s.binary("minimum", s.binary("maximum", a["x"], a["lo"]), a["hi"]),
    "abs": lambda s, a: s.abs(a["x"]),
    "sigmoid": lambda s, a: s.float_unary("sigmoid", a["x"]),
    "fma": lambda s, a: s.fma(a["x"], a["y"], a["z"]),
    "cast": _cast,
    "sum": lambda s, a: s.reduce("reduce_sum", a["input"], a["axis"], a["keep_dims"]),
    "max": lambda s, a: s.reduce("reduce_max", a["input"], a["axis"], a["keep_dims"]),
    "min": lambda s, a: s.reduce("reduce_min", a["input"], a["axis"], a["keep_dims"]),
    "argmax": lambda s, a: s.reduce("reduce_argmax", a["input"], a["axis"], a["keep_dims"]),
    "argmin": lambda s, a: s.reduce("reduce_argmin", a["input"], a["axis"], a["keep_dims"]),
    "dot": lambda s, a: s.dot(a["a"], a["b"], a["acc"]),
    "static_assert": _static_assert,
}
for _name in FLOAT_FUNCTIONS:
    IMPLS[_name] = (lambda n: lambda s, a: s.float_unary(n, a["x"]))(_name)


class BuiltinSig:
    """The signature of a language function, prepared for fast binding and readable messages."""

    __slots__ = ("name", "sig", "params", "text")

    def __init__(self, fn: Any):
        self.name = fn.__eggpu_builtin__
        self.sig = inspect.signature(fn)
        self.params = tuple(self.sig.parameters)
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
    fn.__eggpu_builtin__: BuiltinSig(fn) for fn in tl.BUILTIN_FUNCTIONS.values()
}

_missing = set(SIGNATURES) - set(IMPLS) - {"static_range"}
assert not _missing, f"language functions without an implementation: {sorted(_missing)}"
