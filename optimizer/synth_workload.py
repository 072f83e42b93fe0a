"""Workload terms for the rule synthesizer (Enumo's workloads): left-hand sides taken from kernels.

Enumerating from the leaves finds identities the kernels may never contain. A *workload* term is
a subterm of a real kernel (an IR :class:`~eggpu.ir.Function`), abstracted into the
synthesizer's term language: every block-shaped elementwise op the synthesizer enumerates (same
signatures, :func:`.synth_terms.signatures`) is kept, a splatted constant becomes a constant
leaf (any value: ``768``, ``0.7071...``), and everything else (loads, parameters, ``arange``,
splatted runtime scalars, casts, reductions) becomes a variable of its dtype, named in
first-occurrence order. A value computed by an op that the term reaches more than once
(``xindex``, read by the ``%`` and the ``//`` of one index expression) is a variable too, so
``x % 512 + 1024 * (x // 512)`` is one term over one variable whatever ``x`` is; each op also
gives a second term in which every value the function uses more than once is a variable (the
index ``xindex = pid * BLOCK + arange`` once, not ``add(x, y)`` in every term that reads it). Terms with more variables than the enumeration
samples, or with too many nodes, are skipped. Each workload term is then evaluated on the
enumeration's samples and looked up among its fingerprint classes: a cheaper class member is a
candidate rule whose left-hand side occurs in the kernel, so once proved it matches that kernel's
e-graph.

A term the shared enumeration has no cheaper equivalent for gets a **targeted search**
(:func:`targeted_candidates`): a small enumeration over the term's own variables whose constant
pool is the term's constants and what index math derives from them (``-c``, ``c - 1``, ``log2 c``,
products and differences: ``512 -> -512``, ``(32 - 1) * 1024``, ``10 - 6``), once with every
sample and, for signed integers, once more with the variables drawn from ``[0, MAX]`` only. A
match of the second kind is an equality for non-negative variables; its rule carries the guard
``(>= (LowerBound x) 0)`` for each variable, which the range analysis establishes for index
values such as ``program_id(0) * BLOCK + arange(0, BLOCK)`` (and the verifier assumes when it
proves the rule). So ``x % 512 + 1024 * (x // 512) => x + (x & -512)`` (4 ops after the shipped
shift rules, 2 after it) is found and proved.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from eggpu.ir import DType, Function, Operation
from eggpu.ir.dtypes import bool_, numpy_dtype

from .synth_terms import (
    BOOL_VARS,
    VALUE_VARS,
    Enumeration,
    Term,
    _canonical_bits,
    constants,
    enumerate_terms,
    fingerprints,
    reference,
    samples,
    signatures,
)

#: the largest workload term kept (nodes)
MAX_WORKLOAD_SIZE = 15
#: how many ops deep a workload term reaches below its root
WORKLOAD_DEPTH = 5
#: the most constants in a targeted search's pool (the enumeration grows with its cube)
MAX_POOL = 24
#: right-hand sides of a targeted search have at most this many nodes
TARGET_SIZE = 5
#: terms one targeted enumeration may build before it stops
TARGET_MAX_TERMS = 300_000
#: ops dearer than this (per lane) are left out of a targeted search: integer and float division,
#: remainder, sqrt. Its right-hand sides are built from cheap ops (the expensive ones are what
#: the workload term is trying to lose); this keeps one search to seconds
TARGET_MAX_OP_COST = 4.0
#: the most kernel terms one workload term's sharing search may reuse (:func:`shared_terms`)
MAX_SHARED = 4
#: the single-term targeted searches' share of their time limit (the sharing and composition
#: passes get the rest, :func:`targeted_candidates`)
ALONE_SHARE = 0.6
#: a bool term's sharing search reuses the kernel's terms costing at least this (per lane): a
#: comparison and-ed with a mask, which the kernel's other load masks compute anyway
MASK_MIN_COST = 2.0


def _producers_and_reused(fn: Function) -> tuple[dict[int, Operation], set[int]]:
    """The op producing each value of ``fn`` (by ``id``) and the ids of the values it uses more
    than once (one synthesizer variable each: Inductor's ``xindex`` read by a ``%`` and a ``//``)."""
    producers = {id(r): op for op in fn.walk() for r in op.results}
    uses: dict[int, int] = {}
    for op in fn.walk():
        for v in op.operands:
            uses[id(v)] = uses.get(id(v), 0) + 1
    return producers, {i for i, n in uses.items() if n > 1}


def workload_terms(fns: Iterable[Function], dtype: DType, n_vars: int,
                   lane_cost: Callable[[str, DType], float], const_cost: float,
                   max_size: int = MAX_WORKLOAD_SIZE, depth: int = WORKLOAD_DEPTH) -> list[Term]:
    """Distinct abstracted subterms of ``fns`` whose result dtype is ``dtype`` or bool (see the
    module docstring), each rooted at an op and reaching at most ``depth`` ops below it, with at
    most ``n_vars`` value variables and one bool."""
    sigs = {(s.op, s.operands): s for s in signatures(dtype)}
    out: dict[str, Term] = {}
    for fn in fns:
        producers, reused = _producers_and_reused(fn)
        for op in fn.walk():
            if len(op.results) != 1 or op.results[0].type.shape == ():
                continue
            key = (op.op, tuple(v.type.dtype for v in op.operands))
            if key not in sigs:
                continue
            repeated = _repeated(op.results[0], producers, depth + 1)
            for shared in (repeated, repeated | reused):
                names: dict[int, Term] = {}
                t = _abstract(op.results[0], producers, sigs, names, dtype, lane_cost, const_cost, depth + 1,
                              shared, root=True)
                nvals = sum(1 for v in names.values() if v.dtype != bool_)
                nbools = len(names) - nvals
                if t is not None and t.op not in ("var", "const") and t.size <= max_size and nvals <= n_vars \
                        and nbools <= 1:
                    out.setdefault(str(t), t)
    return list(out.values())


def shared_terms(fns: Iterable[Function], dtype: DType, n_vars: int,
                 lane_cost: Callable[[str, DType], float], const_cost: float,
                 max_size: int = MAX_WORKLOAD_SIZE, depth: int = WORKLOAD_DEPTH,
                 min_cost: float = TARGET_MAX_OP_COST, limit: int = MAX_SHARED,
                 mask_min_cost: float = MASK_MIN_COST) -> dict[str, list[Term]]:
    """For each workload term of ``dtype`` or bool (as :func:`workload_terms` names it, every value the
    function reuses a variable), the other expensive terms of the same function over a subset of its
    leaves (same IR values, same variable names; the other term is abstracted with exactly those
    values as variables, so a comparison it shares with the kernel's other masks is spelt out):
    ``rem(x, 768)`` -> ``[div(x, 768)]`` in a kernel computing both ``xindex % 768`` and ``xindex //
    768``; ``and(le(256, x), p)`` -> ``[and(lt(x, 256), p)]`` in ``poi_cat``, whose two loads are
    masked by ``x0 < 256`` and ``x0 >= 256``, each and-ed with ``xmask``. A right-hand side that
    reuses one of them costs only what it adds in that kernel (the extraction pays a shared node
    once). Only terms costing at least ``min_cost`` (divisions, remainders: what sharing saves) for a
    term of ``dtype``, ``mask_min_cost`` for a bool one (a comparison and-ed with a mask), at most
    ``limit`` each."""
    sigs = {(s.op, s.operands): s for s in signatures(dtype)}
    out: dict[str, list[Term]] = {}
    for fn in fns:
        producers, reused = _producers_and_reused(fn)
        roots = [op.results[0] for op in fn.walk() if len(op.results) == 1 and op.results[0].type.shape != ()
                 and op.results[0].type.dtype in (dtype, bool_)
                 and (op.op, tuple(v.type.dtype for v in op.operands)) in sigs]
        for r in roots:
            names: dict[int, Term] = {}
            t = _abstract(r, producers, sigs, names, dtype, lane_cost, const_cost, depth + 1, reused, root=True)
            if t is None or t.op in ("var", "const") or t.size > max_size or len(names) > n_vars + 1:
                continue
            found = out.setdefault(str(t), [])
            floor = mask_min_cost if t.dtype == bool_ else min_cost
            for u in roots:
                if u is r or len(found) >= limit:
                    continue
                mine = dict(names)
                s = _abstract(u, producers, sigs, mine, dtype, lane_cost, const_cost, depth + 1, set(names), root=True)
                if s is None or len(mine) != len(names) or s.cost < floor or str(s) == str(t) \
                        or str(s) in _subterm_texts(t) or str(t) in _subterm_texts(s) \
                        or any(str(s) == str(x) for x in found):
                    continue
                found.append(s)
    return {k: v for k, v in out.items() if v}


def _subterm_texts(t: Term) -> set[str]:
    """The text of every op node below ``t`` (not ``t`` itself)."""
    out: set[str] = set()
    stack = list(t.args)
    while stack:
        x = stack.pop()
        if x.op not in ("var", "const"):
            out.add(str(x))
            stack.extend(x.args)
    return out


def _repeated(root, producers, depth: int) -> set[int]:
    """The values produced by an op that occur more than once in the tree of ``root`` down to
    ``depth`` levels (a DAG node reached twice): the abstraction makes them variables."""
    seen: dict[int, int] = {}
    stack = [(root, depth)]
    while stack:
        v, d = stack.pop()
        op = producers.get(id(v))
        if op is None or d == 0:
            continue
        seen[id(v)] = seen.get(id(v), 0) + 1
        stack.extend((x, d - 1) for x in op.operands)
    return {i for i, n in seen.items() if n > 1}


def _abstract(v, producers, sigs, names: dict[int, Term], dtype: DType, lane_cost, const_cost: float,
              depth: int, shared: set[int], root: bool = False) -> Term | None:
    op = producers.get(id(v))
    elem = v.type.dtype
    if elem not in (dtype, bool_):
        return None
    if op is not None and op.op == "splat":
        src = producers.get(id(op.operands[0]))
        if src is not None and src.op == "const":
            return Term("const", elem, value=src.attrs["value"], cost=const_cost)
    key = (op.op, tuple(x.type.dtype for x in op.operands)) if op is not None else None
    if op is None or key not in sigs or depth == 0 or (id(v) in shared and not root):
        if id(v) not in names:
            pool = VALUE_VARS if elem != bool_ else BOOL_VARS
            taken = sum(1 for t in names.values() if t.dtype == elem)
            if taken >= len(pool):
                return None
            names[id(v)] = Term("var", elem, value=pool[taken])
        return names[id(v)]
    args = []
    for x in op.operands:
        a = _abstract(x, producers, sigs, names, dtype, lane_cost, const_cost, depth - 1, shared)
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


@dataclass(frozen=True)
class Candidate:
    """``lhs => rhs`` from a workload term; ``nonneg``: the value variables the equality needs to
    be ``>= 0`` (the rule's guards), empty when it holds for every value."""

    lhs: Term
    rhs: Term
    nonneg: tuple[str, ...] = ()
    shares: tuple[Term, ...] = ()  # kernel terms the rhs reuses (:func:`shared_terms`), at their full cost in ``rhs``


def derived_constants(t: Term, dtype: DType, limit: int = MAX_POOL) -> list:
    """The constant pool of a targeted search for ``t`` (module docstring): the default constants,
    ``t``'s own, then what index math derives from them, in that order of preference, at most
    ``limit`` values of ``dtype`` (floats: ``c, -c, 2c, c/2``)."""
    own: list = []
    stack = [t]
    while stack:
        x = stack.pop()
        if x.op == "const" and x.value not in own:
            own.append(x.value)
        stack.extend(x.args)
    out: list = []

    def put(v) -> None:
        if dtype.is_float:
            v = float(np.asarray(v, dtype=numpy_dtype(dtype)))
            if not np.isfinite(v):
                return
        else:
            info = np.iinfo(numpy_dtype(dtype))
            if not info.min <= int(v) <= info.max:
                return
            v = int(v)
        if v not in out and len(out) < limit:
            out.append(v)

    for v in constants(dtype) + own:
        put(v)
    if dtype.is_float:
        for c in own:
            for v in (-c, 2 * c, c / 2):
                put(v)
        return out
    logs = [int(c).bit_length() - 1 for c in own if int(c) > 0 and int(c) & (int(c) - 1) == 0]
    for c in own:
        for v in (-int(c), int(c) - 1):
            put(v)
    for v in logs:
        put(v)
    base = [int(c) for c in own]
    for a in base:
        for b in base:
            if a != b:
                put((a - 1) * b)
    for a in logs:
        for b in logs:
            if a > b:
                put(a - b)
    return out


def targeted_candidates(terms: Iterable[Term], dtype: DType, lane_cost: Callable[[str, DType], float],
                        const_cost: float, min_gain: float, *, n_samples: int, seed: int = 0,
                        deadline: float | None = None,
                        progress: Callable[[str], None] | None = None,
                        shared: Mapping[str, Sequence[Term]] | None = None) -> list[Candidate]:
    """For each term (most expensive first) a cheaper equivalent found by a targeted enumeration
    over its own variables and :func:`derived_constants` (module docstring). For signed integers
    the enumeration samples the value variables from ``[0, MAX]`` only, and a match is then
    evaluated once more on samples of the whole range: when it holds there too the candidate has
    no guard, else it names the variables in ``nonneg``. Stops at ``deadline`` (a
    ``time.perf_counter()`` value). ``shared`` (:func:`shared_terms`): a term still without a
    cheaper equivalent searches once more with the kernel's other terms over its variables as
    leaves at no cost (they are computed anyway): ``rem(x, 768) => x - 768 * div(x, 768)`` where
    the kernel also divides by 768. Such a candidate names them in ``shares``; its ``rhs`` carries
    their full cost (as a term it costs more than the left-hand side: it wins only beside them)."""
    out: list[Candidate] = []
    rng = np.random.default_rng(seed + 1)
    rest = []
    # the single-term searches stop at ALONE_SHARE of the time left, so the sharing and composition
    # passes always get the rest (with many kernels the single-term searches alone fill any budget);
    # a term they did not reach is still tried by the sharing pass
    alone_end = None if deadline is None else time.perf_counter() + ALONE_SHARE * max(0.0, deadline - time.perf_counter())
    stopped = False
    for t in sorted(terms, key=lambda t: (-t.cost, str(t))):
        if t.cost < min_gain:
            continue
        if not stopped and alone_end is not None and time.perf_counter() > alone_end:
            stopped = True
            if progress:
                progress(f"{dtype}: single-term searches stopped at their share of the time limit")
        if stopped:
            rest.append(t)
            continue
        c = _targeted_one(t, dtype, lane_cost, const_cost, min_gain, n_samples, seed, deadline, rng, ())
        if c is None:
            rest.append(t)
            continue
        out.append(c)
        if progress:
            progress(f"{dtype}: targeted: {c.lhs} => {c.rhs}" + (f" ({', '.join(c.nonneg)} >= 0)" if c.nonneg else ""))
    # sharing pass (before the composition pass: one search per term that has kernel terms to
    # share, where the composition pass searches again for every term left)
    for t in rest:  # the kernel's other terms as free leaves
        if deadline is not None and time.perf_counter() > deadline:
            break
        sib = [s for s in (shared or {}).get(str(t), ()) if set(s.variables()) <= set(t.variables())]
        if not sib:
            continue
        free = [replace(s, cost=0.0) for s in sib]
        c = _targeted_one(t, dtype, lane_cost, const_cost, min_gain, n_samples, seed, deadline, rng, free)
        used = tuple(s for s in sib if _uses(c.rhs, s)) if c is not None else ()
        if c is None or not used:
            continue
        c = Candidate(c.lhs, _full_cost(c.rhs, used), c.nonneg, used)
        out.append(c)
        if progress:
            progress(f"{dtype}: targeted (sharing {', '.join(map(str, used))}): {c.lhs} => {c.rhs}"
                     + (f" ({', '.join(c.nonneg)} >= 0)" if c.nonneg else ""))
    # composition pass: a term without a cheaper equivalent of <= TARGET_SIZE nodes searches again
    # with the right-hand sides found for its subterms as leaves; a result that only applies the
    # subterms' rules (no new structure) is dropped
    solved = {str(c.lhs) for c in out}
    alone = [c for c in out if not c.shares]  # a sharing right-hand side is dearer than its term
    for t in rest:
        if deadline is not None and time.perf_counter() > deadline:
            break
        extra = _subterm_rhs(t, alone)
        if str(t) in solved or not extra:
            continue
        c = _targeted_one(t, dtype, lane_cost, const_cost, min_gain, n_samples, seed, deadline, rng, extra)
        if c is not None and _canon(c.rhs) != _canon(_rewrite_subterms(t, alone)):  # not just the subterms' rules
            out.append(c)
            if progress:
                progress(f"{dtype}: targeted (composed): {c.lhs} => {c.rhs}"
                         + (f" ({', '.join(c.nonneg)} >= 0)" if c.nonneg else ""))
    return out


def _uses(t: Term, s: Term) -> bool:
    """Whether ``s`` occurs in ``t`` (as text)."""
    return str(t) == str(s) or any(_uses(a, s) for a in t.args)


def _full_cost(t: Term, used: Sequence[Term]) -> Term:
    """``t`` with every occurrence of a ``used`` term (seeded at no cost) back at its own cost and
    size, and the costs and sizes above it recomputed."""
    for s in used:
        if str(t) == str(s):
            return s
    if not t.args:
        return t
    args = tuple(_full_cost(a, used) for a in t.args)
    own = t.cost - sum(a.cost for a in t.args)
    return Term(t.op, t.dtype, args, t.value, 1 + sum(a.size for a in args), own + sum(a.cost for a in args))


def _subterm_rhs(t: Term, found: list[Candidate]) -> list[Term]:
    """The right-hand sides of ``found`` candidates whose left-hand side is a proper subterm of
    ``t`` (same variable names; at most 8, cheapest first)."""
    subs = _subterm_texts(t)
    out = {str(c.rhs): c.rhs for c in found if str(c.lhs) in subs and set(c.rhs.variables()) <= set(t.variables())}
    return sorted(out.values(), key=lambda r: (r.cost, str(r)))[:8]


def _canon(t: Term) -> str:
    """``t`` as text with the operands of commutative ops sorted (equal up to operand order)."""
    from eggpu.ir import OPS
    from eggpu.ir.ops import COMMUTATIVE

    if not t.args:
        return str(t)
    args = [_canon(a) for a in t.args]
    if t.op in OPS and OPS[t.op].has(COMMUTATIVE):
        args.sort()
    return f"{t.op}({', '.join(args)})"


def _rewrite_subterms(t: Term, found: list[Candidate]) -> Term:
    """``t`` with every subterm that is a ``found`` left-hand side replaced by its right-hand side
    (outermost first): what the subterms' own rules already make of ``t``."""
    for c in found:
        if str(c.lhs) == str(t):
            return c.rhs
    if not t.args:
        return t
    return Term(t.op, t.dtype, tuple(_rewrite_subterms(a, found) for a in t.args), t.value, t.size, t.cost)


def _targeted_one(t: Term, dtype: DType, lane_cost, const_cost: float, min_gain: float, n_samples: int, seed: int,
                  deadline: float | None, rng: np.random.Generator, extra: list[Term] | tuple) -> Candidate | None:
    """One targeted enumeration for ``t`` (``extra``: leaves from subterms' right-hand sides)."""
    vs = t.variables()
    nvals = sum(1 for s, _ in vs if s != bool_)
    e = enumerate_terms(dtype, max_size=TARGET_SIZE, lane_cost=lane_cost, const_cost=const_cost,
                        n_vars=nvals, bool_vars=len(vs) - nvals, n_samples=n_samples, seed=seed,
                        deadline=deadline, max_terms=TARGET_MAX_TERMS, pool=derived_constants(t, dtype),
                        nonneg=dtype.is_signed, max_op_cost=TARGET_MAX_OP_COST, extra=extra)
    found = workload_candidates([t], e, min_gain)
    if not found:
        return None
    lhs, rhs = found[0]
    names: tuple[str, ...] = ()
    if dtype.is_signed:
        env = {k: samples(k[0], n_samples, rng) for k in e.var_samples}
        if not _same(evaluate(lhs, env, n_samples), evaluate(rhs, env, n_samples), dtype):
            names = tuple(n for s, n in vs if s != bool_)
    return Candidate(lhs, rhs, names)


def _same(a: np.ndarray, b: np.ndarray, dtype: DType) -> bool:
    """Equal rows as the fingerprints compare them (bit patterns; floats: every NaN alike)."""
    return bool(np.array_equal(_canonical_bits(a, dtype), _canonical_bits(b, dtype)))


__all__ = ["MAX_WORKLOAD_SIZE", "Candidate", "derived_constants", "evaluate", "shared_terms",
           "targeted_candidates", "workload_candidates", "workload_terms"]
