"""Constants generalized into guarded pattern variables (Ruler's generalization step).

A workload candidate such as ``(x // 64) % 32 => (x >> 6) & 31`` (x >= 0) holds for the kernel's
own constants only as written; the family it belongs to holds for every pair of powers of two.
:func:`generalize` turns a concrete integer candidate into that family:

1. **Left-hand side constants become i64 pattern variables** ``c0, c1, ...`` (one per distinct
   value, first-occurrence order; ``-1``, ``0`` and ``1`` stay literals: they are structure, not
   parameters). Each variable either ranges freely under a guard the rule language states from
   its concrete value -- a power of two ``(> c 0) (= k (log2 (max c 1))) (= c (<< 1 k))`` (which
   also names its log ``k``), else its sign ``(> c 0)`` / ``(< c 0)`` -- or is tied to earlier
   ones by an equation ``(= c1 (* 2 c0))`` (and its concrete sign) when the free form does not
   hold.
2. **Right-hand side constants become i64 expressions** over those variables and their logs,
   from a small grammar (``c``, ``-c``, ``c - 1``, ``2c``, ``c >> 1``, ``a - b``, ``a * b``,
   ``(a - 1) * b``, ``a << b``, ...; the same index-math derivations the targeted search's
   constant pool uses), bound in guards ``(= r0 (- k0 k1))``, each with the sign of its concrete
   value and the dtype's bound on that side as guards (so the right-hand side's constant is canonical and a
   shift amount is never negative). ``-1``, ``0``, ``1`` and ``2`` may stay literals.
3. **Instances decide which combination is kept**: for each combination (most general first)
   the free variables are drawn at random (powers of two over the dtype's width, other values
   over its range), dependent ones computed, instances whose guards fail skipped, and both sides
   evaluated with the op table's reference semantics on the sample inputs. The first
   combination that agrees on every one of at least :data:`MIN_INSTANCES` instances is the
   generalization; z3 then proves it (:mod:`.synthesize`), with its guards, at the dtype it names.
   When z3 cannot, the concrete rule is tried instead.

Float constants are not generalized (rounding makes such families rare and their proofs slow).
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from eggpu.ir import DType
from eggpu.ir.dtypes import numpy_dtype

from .egglog_i64 import I64Undefined, i64_binary
from .synth_terms import Term, _canonical_bits, render, samples

#: left-hand side constants that stay literals (structure, not parameters)
LITERAL_LHS = (-1, 0, 1)
#: right-hand side constants that may stay literals
LITERAL_RHS = (-1, 0, 1, 2)
#: random instances drawn per combination, and how many must pass (guards holding) to keep it
INSTANCES = 48
MIN_INSTANCES = 6
#: the most combinations (lhs relations x rhs expressions) tried per candidate
MAX_COMBOS = 256


@dataclass(frozen=True)
class Expr:
    """An egglog i64 expression over the constant variables: its text and its evaluation
    (None where egglog's checked arithmetic fails: overflow, a shift outside [0, 64))."""

    text: str
    fn: Callable[[dict[str, int]], int | None]
    atom: bool = False  # a bare variable (no guard binding needed)

    def at(self, env: dict[str, int]) -> int | None:
        """The value at ``env``; None when it fails or names a variable ``env`` lacks (the log of
        a tied constant is not bound by any guard)."""
        try:
            return self.fn(env)
        except KeyError:
            return None


@dataclass(frozen=True)
class Generalized:
    """A generalized candidate: the rule ``text`` (no ``:name`` yet), its name, and ``about``, a
    one-line description of the constant variables for the provenance comment."""

    text: str
    name: str
    about: str


def _op(op: str, a: int | None, b: int | None) -> int | None:
    """egglog's i64 ``(op a b)``; None where it panics or an operand is already None."""
    if a is None or b is None:
        return None
    try:
        return i64_binary(op, a, b)
    except I64Undefined:
        return None


def _grammar(atoms: list[tuple[str, int]]) -> list[Expr]:
    """Every expression of the grammar (module docstring) over ``atoms`` (name, concrete value),
    simplest first."""
    out = [Expr(n, (lambda e, n=n: e[n]), atom=True) for n, _ in atoms]
    for n, _ in atoms:
        out += [Expr(f"(- 0 {n})", lambda e, n=n: _op("-", 0, e[n])),
                Expr(f"(- {n} 1)", lambda e, n=n: _op("-", e[n], 1)),
                Expr(f"(+ {n} 1)", lambda e, n=n: _op("+", e[n], 1)),
                Expr(f"(* 2 {n})", lambda e, n=n: _op("*", 2, e[n])),
                Expr(f"(>> {n} 1)", lambda e, n=n: _op(">>", e[n], 1))]
    for (a, _), (b, _) in itertools.permutations(atoms, 2):
        out += [Expr(f"(- {a} {b})", lambda e, a=a, b=b: _op("-", e[a], e[b])),
                Expr(f"(<< {a} {b})", lambda e, a=a, b=b: _op("<<", e[a], e[b])),
                Expr(f"(>> {a} {b})", lambda e, a=a, b=b: _op(">>", e[a], e[b])),
                Expr(f"(* (- {a} 1) {b})", lambda e, a=a, b=b: _op("*", _op("-", e[a], 1), e[b])),
                Expr(f"(- 0 (* {a} {b}))", lambda e, a=a, b=b: _op("-", 0, _op("*", e[a], e[b])))]
        if a < b:
            out.append(Expr(f"(* {a} {b})", lambda e, a=a, b=b: _op("*", e[a], e[b])))
    return out


def _const_values(t: Term) -> list[int]:
    """The distinct integer constants of ``t``, left to right."""
    out: list[int] = []

    def walk(x: Term) -> None:
        if x.op == "const" and int(x.value) not in out:
            out.append(int(x.value))
        for a in x.args:
            walk(a)
    walk(t)
    return out


def _pow2(v: int) -> bool:
    return v > 0 and v & (v - 1) == 0


def _substitute(t: Term, values: dict[int, int]) -> Term:
    """``t`` with each constant ``v`` replaced by ``values[v]`` (others unchanged)."""
    if t.op == "const":
        v = int(t.value)
        return Term("const", t.dtype, value=values.get(v, v), cost=t.cost)
    if not t.args:
        return t
    return Term(t.op, t.dtype, tuple(_substitute(a, values) for a in t.args), t.value, t.size, t.cost)


def _eval(t: Term, env: dict, n: int) -> np.ndarray:
    from .synth_workload import evaluate

    return evaluate(t, env, n)


def generalize(lhs: Term, rhs: Term, dtype: DType, nonneg: tuple[str, ...] = (), *, seed: int = 0,
               n_samples: int = 192) -> Generalized | None:
    """The generalization of the concrete candidate ``lhs => rhs`` at the integer ``dtype`` (its
    value variables in ``nonneg`` guarded ``>= 0``), or None when it has no constant to generalize
    or no combination passes the instances (module docstring)."""
    if not dtype.is_int:
        return None
    lvals = [v for v in _const_values(lhs) if v not in LITERAL_LHS]
    if not lvals:
        return None
    info = np.iinfo(numpy_dtype(dtype))
    lo, hi = int(info.min), int(info.max)
    names = {v: f"c{i}" for i, v in enumerate(lvals)}
    concrete = {names[v]: v for v in lvals}
    logs = {f"k{i}": v.bit_length() - 1 for i, v in enumerate(lvals) if _pow2(v)}
    # each lhs constant: free (None) or tied to earlier ones by an expression matching its value
    lhs_opts: list[list[Expr | None]] = []
    for i, v in enumerate(lvals):
        earlier = [(names[u], u) for u in lvals[:i]] + [(k, logs[k]) for k in logs if int(k[1:]) < i]
        ties = [e for e in _grammar(earlier) if not e.atom and e.at({**concrete, **logs}) == v]
        lhs_opts.append([None] + ties[:6])
    env0 = {**concrete, **logs}
    rvals = [v for v in _const_values(rhs)]
    rhs_opts: list[list[Expr | None]] = []
    gram = _grammar(list(concrete.items()) + list(logs.items()))
    for v in rvals:
        exprs = [e for e in gram if e.at(env0) == v][:8]
        opts: list[Expr | None] = ([None] if v in LITERAL_RHS else []) + exprs
        if not opts:
            return None
        rhs_opts.append(opts)
    rng = np.random.default_rng(seed + 7)
    xenv = {}
    for sort, name in lhs.variables():
        s = samples(sort, n_samples, rng)
        if name in nonneg and sort.is_signed:
            s = s & np.asarray(hi, dtype=s.dtype)
        xenv[(sort, name)] = s
    for combo in itertools.islice(itertools.product(*lhs_opts, *rhs_opts), MAX_COMBOS):
        ties, rexprs = combo[:len(lvals)], combo[len(lvals):]
        if _passes(lhs, rhs, dtype, lvals, names, ties, rvals, rexprs, xenv, n_samples, lo, hi, rng):
            return _render(lhs, rhs, dtype, lvals, names, logs, ties, rvals, rexprs, nonneg, lo, hi)
    return None


def _instances(lvals: list[int], names: dict[int, str], ties, rng, lo: int, hi: int,
               bits: int) -> Iterator[dict[str, int]]:
    """Random assignments of the constant variables (their logs included) that satisfy the free
    variables' guards and the ties; the concrete assignment first."""
    first = True
    for _ in range(INSTANCES):
        env: dict[str, int] = {}
        ok = True
        for i, v in enumerate(lvals):
            n = names[v]
            if ties[i] is not None:
                w = ties[i].at(env)
            elif first:
                w = v
            elif _pow2(v):
                w = 1 << int(rng.integers(0, bits - (1 if lo < 0 else 0)))
            elif v > 0:
                w = int(rng.integers(2, hi, endpoint=True))
            else:
                w = -int(rng.integers(2, -lo, endpoint=True))
            if w is None or not lo <= w <= hi or (w > 0) != (v > 0):  # a tie also keeps its sign
                ok = False
                break
            env[n] = w
            if _pow2(v) and ties[i] is None:
                env[f"k{i}"] = w.bit_length() - 1
        first = False
        if ok:
            yield env


def _edge_instances(lvals: list[int], names: dict[int, str], ties, lo: int, hi: int,
                    bits: int) -> Iterator[dict[str, int]]:
    """Assignments of the constant variables on which a guard is tested for redundancy: every
    power of two of the dtype for a free power-of-two variable (the smallest and largest few when
    there are too many combinations), edge values (1, 2, 3, MAX - 1,
    MAX, or their negatives) for another free one; tied variables computed, kept when canonical.
    A guard that holds on all of them is left out (z3 still proves the rule without it)."""
    top = bits - (1 if lo < 0 else 0)  # powers of two 2^0 .. 2^(top-1) fit the dtype
    n_pow2 = sum(1 for i, v in enumerate(lvals) if ties[i] is None and _pow2(v))
    # every power of two while the product stays small, else the smallest and largest ones
    logs = list(range(top)) if top ** max(n_pow2, 1) <= 20_000 else sorted({0, 1, 2, 3, top // 2, top - 3, top - 2, top - 1})
    domains = []
    for i, v in enumerate(lvals):
        if ties[i] is not None:
            domains.append([None])
        elif _pow2(v):
            domains.append([1 << k for k in logs])
        else:
            edge = [1, 2, 3, hi - 1, hi]
            domains.append(edge if v > 0 else [-w for w in edge])
    for combo in itertools.product(*domains):
        env: dict[str, int] = {}
        for i, (v, w) in enumerate(zip(lvals, combo)):
            if w is None:
                w = ties[i].at(env)
            elif _pow2(v):
                env[f"k{i}"] = w.bit_length() - 1
            if w is None or not lo <= w <= hi:
                break
            env[names[v]] = w
        else:
            yield env


def _passes(lhs, rhs, dtype, lvals, names, ties, rvals, rexprs, xenv, n, lo, hi, rng) -> bool:
    good = 0
    for env in _instances(lvals, names, ties, rng, lo, hi, dtype.bits):
        rv = {}
        ok = True
        for v, e in zip(rvals, rexprs):
            w = v if e is None else e.at(env)
            if w is None or not lo <= w <= hi or (w >= 0) != (v >= 0):
                ok = False  # a guard fails: this instance does not match
                break
            rv[v] = w
        if not ok:
            continue
        lsub = {v: env[names[v]] for v in lvals}
        a = _eval(_substitute(lhs, lsub), xenv, n)
        b = _eval(_substitute(rhs, rv), xenv, n)
        if not np.array_equal(_canonical_bits(a, dtype), _canonical_bits(b, dtype)):
            return False
        good += 1
    return good >= MIN_INSTANCES


def _render(lhs, rhs, dtype, lvals, names, logs, ties, rvals, rexprs, nonneg, lo, hi) -> Generalized:
    from .schema import DTYPE_CONSTRUCTORS
    from .synthesize import _const

    d = f"({DTYPE_CONSTRUCTORS[dtype]})"
    guards = [f"(>= (LowerBound {v}) 0)" for v in nonneg]
    about = []
    edges = list(_edge_instances(lvals, names, ties, lo, hi, dtype.bits))
    for i, v in enumerate(lvals):
        n = names[v]
        if ties[i] is not None:
            guards.append(f"(= {n} {ties[i].text})")
            if not all((env[n] > 0) == (v > 0) for env in edges):
                guards.append(f"(> {n} 0)" if v > 0 else f"(< {n} 0)")
            about.append(f"{n} = {ties[i].text}")
        elif _pow2(v):  # (> c 0) is implied: c <= 0 gives k = 0 and c != 1
            guards += [f"(= k{i} (log2 (max {n} 1)))", f"(= {n} (<< 1 k{i}))"]
            about.append(f"{n} a power of two")
        else:
            guards.append(f"(> {n} 0)" if v > 0 else f"(< {n} 0)")
            about.append(f"{n} {'> 0' if v > 0 else '< 0'}")
    valid = [env for env in edges if all((env[names[v]] > 0) == (v > 0) for v in lvals)]
    rnames: dict[int, str] = {}
    for j, (v, e) in enumerate(zip(rvals, rexprs)):
        if e is None:
            continue
        if e.atom and (e.text in logs or e.text.startswith("c")):
            rnames[v] = e.text
            continue
        r = f"r{j}"
        rnames[v] = r
        ws = [w for env in valid if (w := e.at(env)) is not None]
        guards.append(f"(= {r} {e.text})")
        # the sign and the dtype's bound on that side, unless every edge instance has them
        if v >= 0:
            guards += [g for g, ok in ((f"(>= {r} 0)", all(w >= 0 for w in ws)), (f"(<= {r} {hi})", all(w <= hi for w in ws)))
                       if not ok]
        else:
            guards += [g for g, ok in ((f"(< {r} 0)", all(w < 0 for w in ws)), (f"(>= {r} {lo})", all(w >= lo for w in ws)))
                       if not ok]
        about.append(f"{r} = {e.text}")
    lnames = {v: names[v] for v in lvals}

    def const_of(table: dict[int, str]) -> Callable[[Term], str]:
        def f(t: Term) -> str:
            v = int(t.value)
            if v in table:
                return f"(Splat {d} s (Const {d} {table[v]}))"
            return _const(t)
        return f

    body_l, body_r = render(lhs, const_of(lnames)), render(rhs, const_of(rnames))
    when = " ".join(guards)
    body = f"(rewrite {body_l} {body_r} :when ({when})"
    digest = hashlib.sha256(body.encode()).hexdigest()[:8]
    ops = "-".join(lhs.ops()[:3]) or "leaf"
    name = f"syn-{dtype}-{ops}-{digest}"
    return Generalized(f'{body} :name "{name}")', name, "; ".join(about))


__all__ = ["Generalized", "generalize"]
