"""Counterexamples checked against the op table's reference semantics, and a concrete search.

A rule verdict ``refuted`` must never rest on the z3 encoding alone: an encoding that disagrees
with the reference (``eggpu.ir.semantics``, which the interpreter runs) would then "refute" sound
rules, or — worse, the mirror case — hide real differences. So every counterexample the
verifier reports is re-evaluated here: the rule's two sides are computed lane-wise with
``OpDef.reference`` on the counterexample's values, and compared structurally (NaN equals NaN,
-0.0 differs from +0.0).

* :func:`evaluate` computes one side of a rule (an s-expression over the generated schema) on
  concrete values. Transcendental ops are *computed* here (numpy), although z3 treats them as
  uninterpreted functions: a z3 model may give ``exp(1.0)`` any value, so a z3 counterexample
  over ``exp``/``log`` is only a counterexample once the reference agrees.
* Reductions, ``dot`` and ``trans`` depend on whole blocks, not on one lane: :class:`NotEvaluable`.
* :func:`search` looks for a counterexample by evaluating the negated obligation on concrete
  values — values lifted from a narrower-width model first (a rule refuted at 8 bits usually
  fails at 32 for the sign- or zero-extended values), then edge values (0, ±1, INT_MIN, INT_MAX,
  powers of two, NaN, ±0.0, ±inf, the largest and smallest floats) and random ones. It runs when
  z3 answers ``unknown``, so that an unsound rule gets a concrete counterexample instead.

This module reads the verifier's per-instance encoding (``inst``: an ``_Instance`` of
:mod:`.rule_verifier`) only through its public-by-convention fields: ``terms``, ``ints``,
``leaves``, ``types``, ``dt()``.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import z3

from eggpu.ir import OPS, DType
from eggpu.ir.dtypes import bool_

from . import z3ops
from .rules_loader import Atom, Sx
from .schema import CONSTRUCTORS, bits_float

if TYPE_CHECKING:
    from .rule_budget import SessionModel

ValueOf = Callable[[z3.ExprRef], z3.ExprRef]


class NotEvaluable(Exception):
    """The term cannot be computed lane-wise from the counterexample (block ops, real mode)."""


# ------------------------------------------------------------------ evaluation


def _concrete(v: z3.ExprRef, ty: Any) -> Any:
    """A concrete z3 value as a Python scalar of the instance type ``ty`` (a DType or Ptr)."""
    if not isinstance(ty, DType):  # pointer: an integer byte address
        return z3.simplify(v).as_long()
    return z3ops.to_python(v, ty)


def _arr(v: Any, dt: DType) -> Any:
    import numpy as np  # only when a counterexample is checked (never on a compile that proves nothing)

    with np.errstate(all="ignore"):
        if dt.is_int and not isinstance(v, bool):
            return np.asarray(int(v) % (1 << dt.bits), dtype=np.uint64).astype(dt.np)
        return np.asarray(v, dtype=dt.np)


def _scalar(a: Any) -> Any:
    import numpy as np

    x = np.asarray(a).reshape(()).item()
    return float(x) if isinstance(x, float) else x


def _signed64(n: int) -> int:
    n %= 1 << 64
    return n - (1 << 64) if n >= 1 << 63 else n


class _Evaluator:
    def __init__(self, inst: Any, value_of: ValueOf):
        self.inst = inst
        self.value_of = value_of

    def i64(self, node: Sx) -> int:
        if isinstance(node, Atom):
            try:
                return int(node.text)
            except ValueError:
                pass
            expr = self.inst.ints.get(node.text)
            if expr is None:
                raise NotEvaluable(f"i64 variable {node.text} has no value")
            return _signed64(z3.simplify(self.value_of(expr)).as_long())
        # i64 expressions inside a Const payload: evaluate through the encoding of the instance
        v, _ = self.inst.i64(node)
        return _signed64(z3.simplify(self.value_of(v)).as_long())

    def term(self, node: Sx) -> tuple[Any, Any]:
        """(value, type) of a Term s-expression."""
        inst = self.inst
        if isinstance(node, Atom):
            expr = inst.terms[node.text][0]
            ty = inst.types[node.text]
            return _concrete(self.value_of(expr), ty), ty
        info = CONSTRUCTORS[node.head]
        dt_nodes, attr_nodes, operands = info.split(node.items[1:])
        dts = [inst.dt(a) for a in dt_nodes]
        t = dts[0]
        op = info.op
        if op is None:  # Opaque / OpaquePtr: a leaf of the instance
            key = f"{node.head}({t},{attr_nodes[0]})"
            ty = t if node.head == "Opaque" else ("ptr", t)
            return _concrete(self.value_of(inst.leaves[key]), t if node.head == "Opaque" else ty), ty
        if op == "const":
            payload = self.i64(attr_nodes[0])
            if node.head == "ConstF":
                v = bits_float(payload % (1 << 64))
                return _scalar(_arr(v, t)) if t.bits != 64 else v, t
            if t.is_bool:
                return payload != 0, t
            return _scalar(_arr(payload, t)), t
        if op in ("program_id", "num_programs", "arange"):
            key = f"{op}({','.join(map(str, attr_nodes))})"
            return _concrete(self.value_of(inst.leaves[key]), t), t
        if op in z3ops.BLOCK_OPS:
            raise NotEvaluable(f"{op} depends on the whole block")
        vals = [self.term(o) for o in operands]
        if op in z3ops.LANE_IDENTITY_OPS:
            return vals[0]
        if op == "addptr":
            (p, _), (off, odt) = vals
            return (int(p) + int(off) * t.itemsize) % (1 << 64), ("ptr", t)
        attrs: dict[str, Any] = {}
        if op in ("cast", "bitcast"):
            attrs["dtype"] = inst.dt(attr_nodes[0])
        if op == "where":
            (c, _), (a, ty), (b, _) = vals
            if not isinstance(ty, DType):
                return (a if c else b), ty
            out = OPS[op].reference(attrs, _arr(c, bool_), _arr(a, ty), _arr(b, ty), dtype=ty)
            return _scalar(out), ty
        arrays = [_arr(v, t) for v, _ in vals]
        out = OPS[op].reference(attrs, *arrays, dtype=t)
        rdt = z3ops.result_dtype(op, t, attrs)
        return _scalar(out), rdt


def evaluate(inst: Any, node: Sx, value_of: ValueOf) -> tuple[Any, Any]:
    """(value, type) of rule side ``node`` computed with the reference semantics, reading the
    counterexample's values through ``value_of`` (a z3 model's ``eval`` or a substitution).
    Raises :class:`NotEvaluable` for block ops."""
    return _Evaluator(inst, value_of).term(node)


def same(a: Any, b: Any) -> bool:
    """Structural equality of two concrete lane values: NaN == NaN, -0.0 != +0.0."""
    if isinstance(a, float) or isinstance(b, float):
        fa, fb = float(a), float(b)
        if math.isnan(fa) or math.isnan(fb):
            return math.isnan(fa) and math.isnan(fb)
        return fa == fb and math.copysign(1.0, fa) == math.copysign(1.0, fb)
    return a == b


def fmt(v: Any, ty: Any) -> str:
    if isinstance(ty, tuple):
        return f"{hex(int(v))} (ptr<{ty[1]}>)"
    if not isinstance(ty, DType):
        return f"{hex(int(v))} ({ty})"
    if isinstance(v, bool) or (isinstance(ty, DType) and ty.is_bool):
        return f"{'true' if v else 'false'} ({ty})"
    return f"{v!r} ({ty})"


# ------------------------------------------------------------------ uninterpreted functions


def uninterpreted_apps(formula: z3.ExprRef) -> list[z3.ExprRef]:
    """Applications of uninterpreted functions (exp, log, ... per dtype; block stand-ins are
    constants, not applications) in ``formula``."""
    out: list[z3.ExprRef] = []
    seen: set[int] = set()
    stack = [formula]
    while stack:
        e = stack.pop()
        if e.get_id() in seen:
            continue
        seen.add(e.get_id())
        if z3.is_app(e) and e.decl().kind() == z3.Z3_OP_UNINTERPRETED and e.num_args() > 0:
            out.append(e)
        stack.extend(e.children())
    return out


def describe_uninterpreted(apps: Iterable[z3.ExprRef], value_of: ValueOf) -> str:
    """``exp_f32(1.0) := 0.5`` for each application: values a z3 model CHOSE, not computed ones."""
    parts = []
    for a in apps:
        name = a.decl().name()
        args = ", ".join(str(z3.simplify(value_of(x))) for x in a.children())
        parts.append(f"{name}({args}) := {z3.simplify(value_of(a))}")
    return "; ".join(sorted(set(parts)))


# ------------------------------------------------------------------ concrete search

_EDGE_BV = (0, 1, 2, 3, 7, 8, -1, -2, -8)


def _bv_sample(w: int, rng: random.Random) -> int:
    r = rng.random()
    m = 1 << w
    if r < 0.35:
        return rng.choice(_EDGE_BV) % m
    if r < 0.5:
        return rng.choice([1 << (w - 1), (1 << (w - 1)) - 1, (1 << (w - 1)) + 1, m - 1]) % m
    if r < 0.65:
        k = rng.randrange(w)
        return ((1 << k) + rng.choice((-1, 0, 1))) % m
    if r < 0.8:
        return rng.randrange(-64, 64) % m
    return rng.getrandbits(w)


def _fp_edges(sort: z3.FPSortRef) -> list[z3.ExprRef]:
    vals = [z3.fpNaN(sort), z3.fpPlusInfinity(sort), z3.fpMinusInfinity(sort), z3.fpPlusZero(sort),
            z3.fpMinusZero(sort)]
    for f in (1.0, -1.0, 0.5, 2.0, -2.0, 3.0, 1.5, -0.75, 1e-3, 65504.0, 1e30, -1e30):
        vals.append(z3.FPVal(f, sort))
    e, s = sort.ebits(), sort.sbits()
    w = e + s
    vals.append(z3.fpBVToFP(z3.BitVecVal(1, w), sort))  # smallest subnormal
    largest = (((1 << e) - 2) << (s - 1)) | ((1 << (s - 1)) - 1)
    vals.append(z3.fpBVToFP(z3.BitVecVal(largest, w), sort))  # largest finite
    return vals


def _sample_value(c: z3.ExprRef, rng: random.Random) -> z3.ExprRef | None:
    s = c.sort()
    if s.kind() == z3.Z3_BV_SORT:
        return z3.BitVecVal(_bv_sample(s.size(), rng), s.size())
    if s.kind() == z3.Z3_BOOL_SORT:
        return z3.BoolVal(rng.random() < 0.5)
    if s.kind() == z3.Z3_FLOATING_POINT_SORT:
        if rng.random() < 0.4:
            return rng.choice(_fp_edges(s))
        w = s.ebits() + s.sbits()
        return z3.fpBVToFP(z3.BitVecVal(_bv_sample(w, rng), w), s)
    return None


def free_constants(formula: z3.ExprRef) -> dict[str, z3.ExprRef]:
    consts: dict[str, z3.ExprRef] = {}
    seen: set[int] = set()
    stack = [formula]
    while stack:
        e = stack.pop()
        if e.get_id() in seen:
            continue
        seen.add(e.get_id())
        if z3.is_const(e) and e.decl().kind() == z3.Z3_OP_UNINTERPRETED:
            consts[str(e)] = e
        stack.extend(e.children())
    return consts


def rebuild(v: z3.ExprRef, sort: z3.SortRef) -> z3.ExprRef:
    """The concrete value ``v`` (bool, bit-vector, float or rational; of any z3 context, e.g. a
    model's value in its solver session) as a value of ``sort`` in ``sort``'s context, built from
    Python data. Never by ``translate``: translating out of a context a solver ran in would copy the
    families it registered (see :mod:`.rule_budget`). Raises ``ValueError`` for anything else."""
    v = z3.simplify(v)
    ctx = sort.ctx
    kind = sort.kind()
    if kind == z3.Z3_BOOL_SORT and (z3.is_true(v) or z3.is_false(v)):
        return z3.BoolVal(z3.is_true(v), ctx)
    if kind == z3.Z3_BV_SORT and z3.is_bv_value(v) and v.size() == sort.size():
        return z3.BitVecVal(v.as_long(), sort.size(), ctx)
    if (kind == z3.Z3_FLOATING_POINT_SORT and isinstance(v, z3.FPNumRef)
            and (v.ebits(), v.sbits()) == (sort.ebits(), sort.sbits())):
        if v.isNaN():
            return z3.fpNaN(sort)
        bits = z3.simplify(z3.fpToIEEEBV(v, v.ctx)).as_long()
        return z3.simplify(z3.fpBVToFP(z3.BitVecVal(bits, sort.ebits() + sort.sbits(), ctx), sort, ctx))
    if kind == z3.Z3_REAL_SORT and z3.is_rational_value(v):
        return z3.RealVal(v.as_fraction(), ctx)
    raise ValueError(f"not a concrete value of sort {sort}: {v}")


def lift(model: SessionModel, narrow: Mapping[str, z3.ExprRef], wide: Mapping[str, z3.ExprRef],
         signed: Mapping[str, bool]) -> list[tuple[z3.ExprRef, z3.ExprRef]]:
    """Substitution for the wide formula's constants from a narrower model: bit-vectors extended by
    the signedness of their dtype (``signed``; default signed), other sorts copied when they
    match (rebuilt in the main context: :func:`rebuild`). Constants the narrow model lacks are left out (the caller samples them)."""
    subs = []
    for name, c in wide.items():
        n = narrow.get(name)
        if n is None:
            continue
        v = model.eval(n, model_completion=True)
        if c.sort() == n.sort():
            subs.append((c, rebuild(v, c.sort())))
        elif c.sort().kind() == z3.Z3_BV_SORT and n.sort().kind() == z3.Z3_BV_SORT:
            x = z3.simplify(v).as_long()
            wn, wc = n.sort().size(), c.sort().size()
            if signed.get(name, True) and x >= 1 << (wn - 1):
                x -= 1 << wn
            subs.append((c, z3.BitVecVal(x % (1 << wc), wc)))
    return subs


def search(formula: z3.BoolRef, *, tries: int, seed: int = 0,
           seeds: Iterable[list[tuple[z3.ExprRef, z3.ExprRef]]] = ()) -> tuple[int, list | None]:
    """Evaluate ``formula`` (the negated obligation: true = a counterexample) on concrete values.

    ``seeds`` are partial substitutions tried first (missing constants sampled); then ``tries``
    random/edge assignments. Returns (assignments where the formula evaluated to false, the
    substitution of a counterexample or None). Returns (0, None) when the formula cannot be
    evaluated concretely (uninterpreted functions, reals)."""
    rng = random.Random(seed)
    holds = 0
    for subs in assignments(free_constants(formula), seeds, tries, lambda c: _sample_value(c, rng)):
        if subs is None:
            return 0, None
        r = z3.simplify(z3.substitute(formula, *subs)) if subs else z3.simplify(formula)
        if z3.is_true(r):
            return holds, subs
        if not z3.is_false(r):
            return 0, None  # not concrete: uninterpreted functions or reals
        holds += 1
    return holds, None


def assignments(consts: dict[str, z3.ExprRef], seeds: Iterable[list[tuple[z3.ExprRef, z3.ExprRef]]], tries: int,
                sample: Callable[[z3.ExprRef], z3.ExprRef | None]) -> Iterator[list[tuple[z3.ExprRef, z3.ExprRef]] | None]:
    """Substitutions of ``consts`` (name -> constant) to evaluate on: each seed (a partial
    substitution; the constants it lacks drawn with ``sample``), then ``tries`` fully sampled
    ones. Yields None, and stops, when ``sample`` cannot draw a constant (a sort without concrete
    values)."""
    plans = [dict((str(c), v) for c, v in s) for s in seeds] + [{}] * tries
    for fixed in plans:
        subs = []
        for name, c in consts.items():
            v = fixed.get(name)
            if v is None:
                v = sample(c)
            if v is None:
                yield None
                return
            subs.append((c, v))
        yield subs


def substitution(subs: list[tuple[z3.ExprRef, z3.ExprRef]]) -> ValueOf:
    """A ``value_of`` for a substitution (constants not in it stay symbolic)."""
    return lambda e: z3.simplify(z3.substitute(e, *subs)) if subs else z3.simplify(e)


__all__ = ["NotEvaluable", "assignments", "describe_uninterpreted", "evaluate", "fmt", "free_constants", "lift", "rebuild",
           "same", "search", "substitution", "uninterpreted_apps"]
