"""Structural equality of IR functions (for round-trip, optimizer and frontend tests).

Two functions are structurally equal when they have the same name, grid rank and parameter
types, and their bodies match op by op in order: same op names, same attributes (floats compared
by their binary64 bits, so ``-0.0 != 0.0`` and NaNs compare by payload; ``1`` (int), ``1.0``
(float) and ``True`` (bool) all differ), same result types, the same number and types of region
arguments, the same regions, and the same operand *wiring*: each operand refers to the
corresponding parameter, region argument or op result of the other function. Value names and
source locations are ignored unless asked for.
"""

from __future__ import annotations

import struct
from typing import Any

from .dtypes import DType, is_numpy_scalar
from .graph import Block, Function, Value

__all__ = ["attr_identity", "first_difference", "structurally_equal"]


def attr_identity(v: Any) -> tuple:
    """A hashable key that is equal exactly when two attribute values are the same (bitwise floats)."""
    if isinstance(v, bool) or is_numpy_scalar(v, "bool"):
        return ("bool", bool(v))
    if isinstance(v, int) or is_numpy_scalar(v, "int"):
        return ("int", int(v))
    if isinstance(v, float) or is_numpy_scalar(v, "float"):
        return ("float", struct.pack("<d", float(v)))
    if isinstance(v, DType):
        return ("dtype", v.name)
    if isinstance(v, tuple | list):
        return ("tuple", tuple(attr_identity(x) for x in v))
    if isinstance(v, str):
        return ("str", v)
    return ("other", type(v).__name__, repr(v))


def _attrs_key(attrs: dict[str, Any]) -> tuple:
    return tuple(sorted((k, attr_identity(v)) for k, v in attrs.items()))


def _values_text(vs) -> str:
    return "(" + ", ".join(str(v.type) for v in vs) + ")"


class _Compare:
    def __init__(self, names: bool, locs: bool):
        self.names = names
        self.locs = locs
        self.map: dict[int, Value] = {}

    def pair(self, a: Value, b: Value, where: str) -> str | None:
        if a.type != b.type:
            return f"{where}: types differ: {a.type} vs {b.type}"
        if self.names and a.name != b.name:
            return f"{where}: names differ: {a.name!r} vs {b.name!r}"
        self.map[id(a)] = b
        return None

    def block(self, a: Block, b: Block, path: str) -> str | None:
        if len(a.args) != len(b.args):
            return f"{path}: {len(a.args)} vs {len(b.args)} region arguments"
        for i, (x, y) in enumerate(zip(a.args, b.args)):
            if (d := self.pair(x, y, f"{path}.args[{i}]")) is not None:
                return d
        for i, (x, y) in enumerate(zip(a.ops, b.ops)):
            where = f"{path}.ops[{i}] ({x.op})"
            if x.op != y.op:
                return f"{where}: ops differ: {x.op} vs {y.op}"
            if _attrs_key(x.attrs) != _attrs_key(y.attrs):
                return f"{where}: attributes differ: {x.attrs} vs {y.attrs}"
            if len(x.operands) != len(y.operands):
                return f"{where}: {len(x.operands)} vs {len(y.operands)} operands"
            for k, (u, v) in enumerate(zip(x.operands, y.operands)):
                if self.map.get(id(u)) is not v:
                    return f"{where}: operand {k} is wired differently ({u!r} vs {v!r})"
            if len(x.results) != len(y.results):
                return f"{where}: {len(x.results)} vs {len(y.results)} results"
            if self.locs and x.loc != y.loc:
                return f"{where}: locations differ: {x.loc} vs {y.loc}"
            if len(x.regions) != len(y.regions):
                return f"{where}: {len(x.regions)} vs {len(y.regions)} regions"
            for k, (ra, rb) in enumerate(zip(x.regions, y.regions)):
                if (d := self.block(ra, rb, f"{where}.regions[{k}]")) is not None:
                    return d
            for k, (u, v) in enumerate(zip(x.results, y.results)):
                if (d := self.pair(u, v, f"{where}.results[{k}]")) is not None:
                    return d
        if len(a.ops) != len(b.ops):
            return f"{path}: {len(a.ops)} vs {len(b.ops)} operations"
        return None


def first_difference(f: Function, g: Function, *, names: bool = False, locs: bool = False) -> str | None:
    """A description of the first structural difference between ``f`` and ``g``, or None.

    ``names=True`` also compares value names (parameters, region arguments, results);
    ``locs=True`` also compares operation locations.
    """
    if f.name != g.name:
        return f"function names differ: {f.name!r} vs {g.name!r}"
    if f.grid_rank != g.grid_rank:
        return f"grid ranks differ: {f.grid_rank} vs {g.grid_rank}"
    if len(f.params) != len(g.params):
        return f"parameter counts differ: {_values_text(f.params)} vs {_values_text(g.params)}"
    cmp = _Compare(names, locs)
    for i, (a, b) in enumerate(zip(f.params, g.params)):
        if (d := cmp.pair(a, b, f"params[{i}]")) is not None:
            return d
    return cmp.block(f.body, g.body, "body")


def structurally_equal(f: Function, g: Function, *, names: bool = False, locs: bool = False) -> bool:
    """True when ``f`` and ``g`` are the same program up to value identity (see the module docstring)."""
    return first_difference(f, g, names=names, locs=locs) is None
