"""Workload terms for the rule synthesizer (Enumo's workloads): left-hand sides taken from kernels.

Enumerating from the leaves finds identities the kernels may never contain. A *workload* term is
a subterm of a real kernel (an IR :class:`~eggpu.ir.Function`), abstracted into the
synthesizer's term language: every block-shaped elementwise op the synthesizer enumerates (same
signatures, :func:`.synth_terms.signatures`) is kept, a splatted constant becomes a constant
leaf (any value: ``768``, ``0.7071...``), and everything else (loads, parameters, ``arange``,
splatted runtime scalars, casts, reductions) becomes a variable of its dtype, named in
first-occurrence order. Terms with more variables than the enumeration samples, or with too
many nodes, are skipped. Each workload term is then evaluated on the enumeration's samples and
looked up among its fingerprint classes: a cheaper class member is a candidate rule whose
left-hand side occurs in the kernel, so once proved it matches that kernel's e-graph.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np

from eggpu.ir import DType, Function
from eggpu.ir.dtypes import bool_, numpy_dtype

from .synth_terms import BOOL_VARS, VALUE_VARS, Enumeration, Term, fingerprints, reference, signatures

#: the largest workload term kept (nodes)
MAX_WORKLOAD_SIZE = 9


def workload_terms(fns: Iterable[Function], dtype: DType, n_vars: int,
                   lane_cost: Callable[[str, DType], float], const_cost: float,
                   max_size: int = MAX_WORKLOAD_SIZE) -> list[Term]:
    """Distinct abstracted subterms of ``fns`` whose result dtype is ``dtype`` or bool (see the
    module docstring), each rooted at an op, with at most ``n_vars`` value variables and one bool."""
    sigs = {(s.op, s.operands): s for s in signatures(dtype)}
    out: dict[str, Term] = {}
    for fn in fns:
        producers = {id(r): op for op in fn.walk() for r in op.results}
        for op in fn.walk():
            if len(op.results) != 1 or op.results[0].type.shape == ():
                continue
            key = (op.op, tuple(v.type.dtype for v in op.operands))
            if key not in sigs:
                continue
            names: dict[int, Term] = {}
            t = _abstract(op.results[0], producers, sigs, names, dtype, lane_cost, const_cost, depth=3)
            nvals = sum(1 for v in names.values() if v.dtype != bool_)
            nbools = len(names) - nvals
            if t is not None and t.op not in ("var", "const") and t.size <= max_size and nvals <= n_vars \
                    and nbools <= 1:
                out.setdefault(str(t), t)
    return list(out.values())


def _abstract(v, producers, sigs, names: dict[int, Term], dtype: DType, lane_cost, const_cost: float,
              depth: int) -> Term | None:
    op = producers.get(id(v))
    elem = v.type.dtype
    if elem not in (dtype, bool_):
        return None
    if op is not None and op.op == "splat":
        src = producers.get(id(op.operands[0]))
        if src is not None and src.op == "const":
            return Term("const", elem, value=src.attrs["value"], cost=const_cost)
    key = (op.op, tuple(x.type.dtype for x in op.operands)) if op is not None else None
    if op is None or key not in sigs or depth == 0:
        if id(v) not in names:
            pool = VALUE_VARS if elem != bool_ else BOOL_VARS
            taken = sum(1 for t in names.values() if t.dtype == elem)
            if taken >= len(pool):
                return None
            names[id(v)] = Term("var", elem, value=pool[taken])
        return names[id(v)]
    args = []
    for x in op.operands:
        a = _abstract(x, producers, sigs, names, dtype, lane_cost, const_cost, depth - 1)
        if a is None:
            return None
        args.append(a)
    sig = sigs[key]
    price = sig.operands[1] if op.op == "where" else sig.operands[0]
    return Term(op.op, sig.result, tuple(args), size=1 + sum(a.size for a in args),
                cost=lane_cost(op.op, price) + sum(a.cost for a in args))


def evaluate(t: Term, env: dict[tuple[DType, str], np.ndarray], n: int) -> np.ndarray:
    """The value of ``t`` on the samples (``env``: each variable's sample row)."""
    if t.op == "var":
        return env[(t.dtype, t.value)]
    if t.op == "const":
        with np.errstate(all="ignore"):
            return np.full(n, t.value, dtype=numpy_dtype(t.dtype))
    args = [evaluate(a, env, n) for a in t.args]
    with np.errstate(all="ignore"):
        return np.asarray(reference(t.op)({}, *args, dtype=t.args[0].dtype))


def workload_candidates(terms: Iterable[Term], enum: Enumeration, min_gain: float) -> list[tuple[Term, Term]]:
    """``term => cheaper class member`` for each workload term whose fingerprint class (in
    ``enum``) has a member cheaper by at least ``min_gain`` using no other variables."""
    out = []
    env = enum.var_samples
    for t in terms:
        if any((s, name) not in env for s, name in t.variables()):
            continue
        vals = evaluate(t, env, enum.n_samples)
        (fp,) = fingerprints(vals[None, :], t.dtype, enum.mult)
        cl = enum.index.get((t.dtype, fp))
        if cl is None:
            continue
        best = cl.best
        if best.cost + min_gain <= t.cost and set(best.variables()) <= set(t.variables()) \
                and (t.has_const() or not best.has_const()):
            out.append((t, best))
    return out


__all__ = ["MAX_WORKLOAD_SIZE", "evaluate", "workload_candidates", "workload_terms"]
