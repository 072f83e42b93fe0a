"""Rule examples as IR programs: the end-to-end half of "every rule shown firing".

:func:`example_program` turns the ``before`` terms of :class:`~.rule_examples.RuleExample`\\ s
into ONE kernel whose every example feeds a store, so a single :func:`eggpu.optimizer.optimize`
call shows which rules fire on the terms the encoder really produces from IR, and translation
validation (plus the interpreter, in the tests) checks the result.

Leaves become kernel inputs: a scalar ``(Opaque t i)`` is an ``i``-th scalar parameter, a block
one is loaded from a pointer parameter (``load(splat(p) + arange)``), ``(OpaquePtr t i)`` is a
pointer parameter (splatted where a block of pointers is needed). Which leaves are blocks is
found by trying scalar/block shapes until the builder type-checks the term. A result of pointer
type is loaded before it is stored. Examples whose terms cannot be built (range facts asserted
on leaves, which a program cannot state; shapes the search does not find) are skipped with the
reason.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from eggpu.ir import Builder, DType, Function
from eggpu.ir.errors import IRError
from eggpu.ir.types import BlockType, PointerType, pointer, scalar

from .rule_examples import RuleExample
from .rules_loader import SList, Sx, read_all
from .schema import CONSTRUCTOR_DTYPES, CONSTRUCTORS, const_value, decode_attr

#: lanes of every block in an example (the examples' shape string is ``"16"``)
LANES = 16
#: elements of the buffers of examples that compute addresses (offsets stay below 8 per addptr)
ADDRESS_ELEMENTS = 4 * LANES


@dataclass
class ExampleProgram:
    """One kernel holding many examples: ``included`` lists the rule of each store in order,
    ``skipped`` maps rules to why their example is not in the kernel, ``inputs`` describes each
    parameter (``(kind, dtype, elements, nonneg)``, kind ``"ptr"`` or ``"scalar"``; ``nonneg``:
    the example computes an address from it, so its values must stay small and non-negative)."""

    function: Function
    included: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    inputs: list[tuple] = field(default_factory=list)


def _leaves(node: Sx, out: dict[tuple, None]) -> None:
    if isinstance(node, SList):
        if node.head in ("Opaque", "OpaquePtr"):
            out[(node.head, node.items[1].head, int(node.items[2].text))] = None
        for i in node.items[1:]:
            _leaves(i, out)


class _Emitter:
    """Builds one example's term with the builder, leaves given as IR values."""

    def __init__(self, b: Builder, leaves: dict[tuple, Any]):
        self.b = b
        self.leaves = leaves

    def value(self, node: Sx) -> Any:
        assert isinstance(node, SList)
        if node.head in ("Opaque", "OpaquePtr"):
            return self.leaves[(node.head, node.items[1].head, int(node.items[2].text))]
        info = CONSTRUCTORS[node.head]
        args = node.items[1:]
        nd = len(info.dtypes)
        dt = CONSTRUCTOR_DTYPES[args[0].head]
        if info.op == "const":
            return self.b.const(const_value(node.head, int(args[nd].text), dt), dt)
        attrs = {}
        for (name, kind), a in zip(info.attrs, args[nd:nd + len(info.attrs)]):
            attrs[name] = decode_attr(kind, a.head if isinstance(a, SList) else a.text)
        operands = [self.value(o) for o in args[nd + len(info.attrs):]]
        return self.b.op(info.op, *operands, **attrs)


def _block_ptr(b: Builder, p: Any, n: int = LANES) -> Any:
    """``p + arange(0, n)``: pointers to the first ``n`` elements of a buffer."""
    return b.op("addptr", b.op("splat", p, shape=(n,)), b.op("arange", start=0, end=n))


def _store(b: Builder, out: Any, v: Any) -> None:
    """Store ``v`` at ``out``: a scalar as is, a block flattened (reshape) into its first
    ``numel`` elements."""
    if v.type.is_scalar:
        b.effect("store", out, v)
        return
    n = v.type.numel
    if v.type.rank != 1:
        v = b.op("reshape", v, shape=(n,))
    b.effect("store", _block_ptr(b, out, n), v)


def _try_build(b: Builder, term: SList, shapes: dict[tuple, bool], params: dict[tuple, Any]) -> Any:
    """The term's value with each leaf a block (True) or a scalar; raises IRError."""
    vals = {}
    for key, is_block in shapes.items():
        kind, _, _ = key
        p = params[key]
        if kind == "OpaquePtr":
            vals[key] = b.op("splat", p, shape=(LANES,)) if is_block else p
        else:
            vals[key] = b.op("load", _block_ptr(b, p)) if is_block else p
    v = _Emitter(b, vals).value(term)
    if isinstance(v.type.elem, PointerType):
        v = b.op("load", v)
    return v


def _param_types(keys: Sequence[tuple], shapes: dict[tuple, bool]) -> list[BlockType]:
    out = []
    for kind, dtc, _ in keys:
        d = CONSTRUCTOR_DTYPES[dtc]
        out.append(pointer(d) if kind == "OpaquePtr" or shapes[(kind, dtc, _)] else scalar(d))
    return out


def _shapes_for(term: SList, keys: list[tuple]) -> tuple[dict[tuple, bool], BlockType] | None:
    """The first scalar/block choice per leaf under which the term builds, and its result type."""
    for combo in itertools.product((True, False), repeat=len(keys)):
        shapes = dict(zip(keys, combo))
        types = _param_types(keys, shapes)
        b = Builder("probe", [(f"a{i}", t) for i, t in enumerate(types)])
        try:
            v = _try_build(b, term, shapes, dict(zip(keys, b.params)))
            # again with an output buffer of the result's dtype: the store must type-check too
            b2 = Builder("probe_store", [*((f"a{i}", t) for i, t in enumerate(types)), ("out", pointer(v.type.dtype))])
            _store(b2, b2.params[-1], _try_build(b2, term, shapes, dict(zip(keys, b2.params))))
        except (IRError, KeyError, ValueError):
            continue
        return shapes, v.type
    return None


def example_program(examples: Sequence[RuleExample], name: str = "rule_examples") -> ExampleProgram:
    """One kernel storing every buildable example's ``before`` value (see the module doc)."""
    plans = []
    skipped: dict[str, str] = {}
    for ex in examples:
        if ex.facts:
            skipped[ex.rule] = "range facts asserted on leaves"
            continue
        term = read_all(ex.before)[0]
        keys = list(dict.fromkeys(_leaves_of(term)))
        found = _shapes_for(term, keys)
        if found is None:
            skipped[ex.rule] = "no leaf shapes make the term type-check"
            continue
        plans.append((ex, term, keys, *found))
    params: list[tuple[str, BlockType]] = []
    inputs: list[tuple] = []
    for i, (ex, _, keys, shapes, rt) in enumerate(plans):
        address = "Addptr" in ex.before
        for j, t in enumerate(_param_types(keys, shapes)):
            params.append((f"e{i}_a{j}", t))
            inputs.append(("ptr", t.dtype, ADDRESS_ELEMENTS if address else LANES, address) if t.is_pointer
                          else ("scalar", t.dtype, 1, address))
        out_dt: DType = rt.dtype
        params.append((f"e{i}_out", pointer(out_dt)))
        inputs.append(("ptr", out_dt, max(1, rt.numel), False))
    b = Builder(name, params)
    k = 0
    included = []
    for ex, term, keys, shapes, _rt in plans:
        leaf_params = dict(zip(keys, b.params[k:k + len(keys)]))
        out = b.params[k + len(keys)]
        k += len(keys) + 1
        _store(b, out, _try_build(b, term, shapes, leaf_params))
        included.append(ex.rule)
    return ExampleProgram(b.finish(), included, skipped, inputs)


def _leaves_of(term: SList) -> list[tuple]:
    out: dict[tuple, None] = {}
    _leaves(term, out)
    return list(out)


def random_arguments(prog: ExampleProgram, seed: int = 0) -> list[Any]:
    """Arguments for :func:`eggpu.ir.interp.interpret`: small random values per input (integers
    in [-8, 8], or [0, 8) where they become offsets; floats in [-4, 4]; pointers: arrays)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    args: list[Any] = []
    for inp in prog.inputs:
        kind, d, n, nonneg = inp
        if d.is_bool:
            vals = rng.integers(0, 2, n).astype(bool)
        elif d.is_float:
            vals = rng.uniform(-4, 4, n).astype(d.np)
        else:
            lo = 0 if d.is_unsigned or nonneg else -8
            vals = rng.integers(lo, 8 if nonneg else 9, n).astype(d.np)
        args.append(vals if kind == "ptr" else vals[0].item())
    return args


__all__ = ["ADDRESS_ELEMENTS", "ExampleProgram", "LANES", "example_program", "random_arguments"]
