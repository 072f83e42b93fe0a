"""Proved rewrite rules as lemmas of translation validation (:mod:`.validate_solver`).

A rule the verifier proved at a concrete dtype (every dtype argument written out, ``(F32)``; no
guards) says ``lhs == rhs`` for every value of its variables. When the structural diff of a
validation reaches two subterms that differ, and the original's subterm is an instance of such
a rule's left-hand side while the optimized one is an instance of its right-hand side, the two
are equal as soon as the terms bound to each variable on the two sides are equal (which the
diff shows recursively, usually by identity). So a rewrite z3 proved once with a large budget —
``0.5 * (1.0 + x) => fma(x, 0.5, 0.5)`` at f32 takes 13 M z3 units — is not proved again inside
every compile's validation budget (500 ms a pair).

The lemma's two sides are built with the same encoders the validation uses (:func:`.z3ops.encode`,
:func:`.z3ops.const`), with one fresh z3 constant per rule variable, so an instance matches
syntactically: same declarations, same numerals, operands of commutative operators in either
order. Sound because the rule's proof covers every value of the variables at that dtype and the
encodings are the validation's own; only exact mode (the rules' semantics) uses lemmas.

A rule with dtype variables gives one lemma per assignment its family relations allow (the
verifier proved each: :func:`.rule_verifier.assignments`), restricted to the dtypes the kernel
uses when the caller says which. A rule with guards gives a *guarded* lemma: its range guards
(comparisons of egglog i64 expressions over ``LowerBound``/``UpperBound`` of its variables, ``(=
v (Ctor ...))`` naming a term, ``Width``) are re-established at each instance from the bounds the
validation computes itself (:mod:`.validate_guards`); an instance whose guards cannot be shown is
left to z3. Rules with analysis guards (``Divisible``, ``NotNan``, ...), attributes or casts are
not lemmas (:func:`lemma_of` returns None).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

import z3

from eggpu.ir import DType
from eggpu.ir.dtypes import bool_

from . import z3ops
from .lemma_rules import NotALemma as _NotALemma
from .lemma_rules import i64_ok as _i64_ok
from .lemma_rules import literals_canonical as _literals_canonical
from .lemma_rules import plain as _plain
from .lemma_rules import plain_assignments as _plain_assignments
from .lemma_rules import range_guarded as _range_guarded
from .lemma_rules import rule_dtype as _dtype
from .rules_loader import Atom, Rule, SList, Sx

_COMMUTATIVE_KINDS = frozenset({
    z3.Z3_OP_BADD, z3.Z3_OP_BMUL, z3.Z3_OP_BAND, z3.Z3_OP_BOR, z3.Z3_OP_BXOR, z3.Z3_OP_AND, z3.Z3_OP_OR,
    z3.Z3_OP_XOR, z3.Z3_OP_EQ, z3.Z3_OP_FPA_ADD, z3.Z3_OP_FPA_MUL, z3.Z3_OP_FPA_EQ,
})


@dataclass(frozen=True, eq=False)
class Lemma:
    """``lhs == rhs`` for all values of ``variables`` (z3 constants private to the lemma) that
    satisfy ``guards`` (none for an unguarded rule; see :mod:`.validate_guards`)."""

    name: str
    lhs: z3.ExprRef
    rhs: z3.ExprRef
    variables: tuple[z3.ExprRef, ...]
    guards: tuple[Sx, ...] = ()
    #: Term variable name -> (its z3 constant, whether its dtype reads signed)
    term_vars: Mapping[str, tuple[z3.ExprRef, bool]] = field(default_factory=dict)
    #: i64 variables fixed by the dtypes (``(Width t w)``): name -> value
    int_vars: Mapping[str, int] = field(default_factory=dict)
    #: every i64 variable of the rule
    int_names: frozenset[str] = frozenset()
    #: Term variables named by a guard ``(= v (Ctor ...))``: name -> (term over ``variables``, signed)
    defined_terms: Mapping[str, tuple[z3.ExprRef, bool]] = field(default_factory=dict)


def lemma_of(rule: Rule, index: int = 0, env: Mapping[str, DType] | None = None) -> Lemma | None:
    """The lemma of a proved ``rewrite`` at the dtypes ``env`` gives its dtype variables (none
    needed for a rule at concrete dtypes), else None (the caller passes only rules whose every
    dtype was proved: :func:`.rule_verifier.usable_rules`)."""
    if rule.kind != "rewrite" or rule.fast_math or rule.lhs is None or rule.rhs is None:
        return None
    env = dict(env or {})
    sorts = rule.var_sorts
    if any(s not in ("Term", "String", "DT", "i64") for s in sorts.values()):
        return None
    if any(s == "DT" and v not in env for v, s in sorts.items()):
        return None  # a dtype variable without a dtype: not one concrete instance
    if any(s == "i64" for s in sorts.values()) and not rule.guards:
        return None  # an i64 variable in a pattern (a constant's payload): not a lemma
    names: dict[str, tuple[z3.ExprRef, DType]] = {}
    suffix = "_".join(f"{k}{d.name}" for k, d in sorted(env.items()))
    prefix = f"lemma{index}{suffix and '_' + suffix}!"
    try:
        lhs = _encode(rule.lhs, None, names, prefix, env)
        rhs = _encode(rule.rhs, None, names, prefix, env)
        extra = _guard_parts(rule, names, prefix, env)
    except (_NotALemma, KeyError, ValueError, z3.Z3Exception):
        return None
    if extra is None:
        return None
    int_vars, defined = extra
    return Lemma(rule.name, lhs, rhs, tuple(v for v, _ in names.values()), tuple(rule.guards),
                 {k: (v, d.is_signed) for k, (v, d) in names.items()}, int_vars,
                 frozenset(v for v, s in sorts.items() if s == "i64"), defined)


def _guard_parts(rule: Rule, names: dict, prefix: str, env: Mapping[str, DType]
                 ) -> tuple[dict[str, int], dict[str, tuple[z3.ExprRef, bool]]] | None:
    """The i64 variables ``Width`` fixes and the terms ``(= v (Ctor ...))`` names, or None when a
    guard is of a kind :mod:`.validate_guards` cannot re-establish (an analysis, a bare fact)."""
    from .guard_eval import STATIC_GUARDS

    int_vars: dict[str, int] = {}
    defined: dict[str, tuple[z3.ExprRef, bool]] = {}
    for g in rule.guards:
        if not isinstance(g, SList) or not isinstance(g.items[0], Atom):
            return None
        h = g.head
        if h == "Width":
            if isinstance(g.items[2], Atom) and rule.var_sorts.get(g.items[2].text) == "i64":
                int_vars[g.items[2].text] = _dtype(g.items[1], env).bits
            continue
        if h in STATIC_GUARDS:
            continue
        if h == "=" and isinstance(g.items[1], Atom) and rule.var_sorts.get(g.items[1].text) == "Term":
            v, term = g.items[1].text, g.items[2]
            if v in names or not isinstance(term, SList):
                return None  # a pattern variable equated to a term: not re-established here
            value = _encode(term, None, names, prefix, env, fresh=False)
            signed = z3.is_bool(value) or _dtype(term.items[1], env).is_signed
            defined[v] = (value, signed)
            continue
        if h in ("<", "<=", ">", ">=", "!=", "=") and all(_i64_ok(x, rule) for x in g.items[1:]):
            continue
        return None
    return int_vars, defined


def lemmas_of(rules: Iterable[Rule], dtypes: Iterable[DType] | None = None) -> list[Lemma]:
    """:func:`lemma_of` of each rule that has one. A rule with dtype variables gives lemmas only
    when it has range guards (the rewrites a validation cannot otherwise show without z3): one
    per dtype assignment the verifier proved (among ``dtypes`` when given: the dtypes of the
    kernel validated)."""
    return list(Lemmas(rules, dtypes))


class Lemmas:
    """The lemmas of :func:`lemmas_of`, built on demand: those of rules at concrete dtypes at
    once (cheap), the dtype-generic guarded ones the first time an iteration reaches them (each
    assignment is checked against the verifier's encoding: a few milliseconds a rule, and the
    verifier's modules imported), so a validation that settles every check by identity, the
    concrete lemmas or canonical forms pays nothing for them (:meth:`ready` lists only what is
    built; the validation calls :meth:`build` before it would call a solver)."""

    def __init__(self, rules: Iterable[Rule], dtypes: Iterable[DType] | None = None) -> None:
        self._pool = None if dtypes is None else sorted(set(dtypes), key=lambda d: d.name)
        self._concrete: list[Lemma] = []
        self._generic: list[tuple[int, Rule]] = []
        self._built: list[Lemma] | None = None
        for i, r in enumerate(rules):
            if not any(s == "DT" for s in r.var_sorts.values()):
                lm = lemma_of(r, i)
                if lm is not None:
                    self._concrete.append(lm)
            elif r.kind == "rewrite" and not r.fast_math and (_range_guarded(r) or _plain(r)):
                self._generic.append((i, r))

    def __bool__(self) -> bool:
        return bool(self._concrete or self._generic)

    def __iter__(self) -> Iterator[Lemma]:
        self.build()
        yield from self.ready()

    def ready(self) -> list[Lemma]:
        """The lemmas built so far (no verifier module is imported)."""
        return self._concrete + (self._built or [])

    @property
    def pending(self) -> bool:
        """Whether dtype-generic lemmas are still to be built."""
        return bool(self._generic) and self._built is None

    def build(self) -> None:
        """Build the dtype-generic guarded lemmas (once)."""
        if self._built is None:
            built = []
            for i, r in self._generic:
                for env in _proved_assignments(r, self._pool):
                    lm = lemma_of(r, i, env)
                    if lm is not None:
                        built.append(lm)
            self._built = built


def _proved_assignments(rule: Rule, pool: list[DType] | None) -> list[dict[str, DType]]:
    """The dtype assignments of a usable rule that the verifier proved: those its relations allow
    (:func:`.rule_verifier.assignments`) that it could encode (an assignment whose pattern cannot
    match has no proof). For a rule of the plain shape (:func:`_plain`) that is decided here as
    the verifier decides it — integer literals canonical at the dtype, the pattern well typed
    (the lemma encodes) — without importing the verifier; any other rule is encoded by
    :func:`.rule_encoding._build`, as :func:`.rule_solving._verify_instance` does
    (``tests/optimizer/test_validate_guards.py`` checks both ways agree on every shipped rule)."""
    if _plain(rule):
        return [env for env in _plain_assignments(rule, pool) if _literals_canonical(rule, env)]
    from .rule_verifier import assignments

    return [env for env in assignments(rule, pool) if _verifier_encodes(rule, env)]


def _verifier_encodes(rule: Rule, env: Mapping[str, DType]) -> bool:
    from .rule_analysis import _IllTyped, _Infeasible, _Unsupported
    from .rule_encoding import _build
    from .rule_verifier import _mode_for

    try:
        _build(rule, env, _mode_for(rule))
    except (_Infeasible, _IllTyped, _Unsupported):
        return False
    return True


def _encode(node: Sx, want: DType | None, names: dict[str, tuple[z3.ExprRef, DType]], prefix: str,
            env: Mapping[str, DType] | None = None, fresh: bool = True) -> z3.ExprRef:
    """The lane value of a rule side (``want``: the dtype its position expects, None at the root;
    ``env``: the dtypes of the rule's dtype variables; ``fresh=False``: every variable must
    already be known, as in a guard's term)."""
    from .schema import CONSTRUCTORS

    if isinstance(node, Atom):  # a Term variable
        if want is None:
            raise _NotALemma
        hit = names.get(node.text)
        if hit is None and not fresh:
            raise _NotALemma
        if hit is None:
            hit = names[node.text] = (z3ops.var(prefix + node.text, want), want)
        if hit[1] != want:
            raise _NotALemma
        return hit[0]
    if not isinstance(node, SList) or not isinstance(node.items[0], Atom):
        raise _NotALemma
    head = node.head
    if head == "Splat":  # a lane identity: (Splat t shape x)
        return _encode(node.items[3], _dtype(node.items[1], env), names, prefix, env, fresh)
    if head in ("Const", "ConstF"):
        t = _dtype(node.items[1], env)
        lit = node.items[2]
        if not isinstance(lit, Atom):
            raise _NotALemma
        v = int(lit.text)
        if head == "ConstF":
            (value,) = struct.unpack("<d", struct.pack("<q", v))
            return z3ops.const(value, t).value
        return z3ops.const(v, t).value
    info = CONSTRUCTORS[head]
    if info.op is None or info.attrs or len(info.dtypes) != 1 or info.op in ("cast", "bitcast"):
        raise _NotALemma
    t = _dtype(node.items[1], env)
    operands = node.items[2:]
    if len(operands) != info.operands:
        raise _NotALemma
    kinds = [t] * len(operands)
    if info.op == "where":
        kinds[0] = bool_
    args = [_encode(o, k, names, prefix, env, fresh) for o, k in zip(operands, kinds)]
    enc = z3ops.encode(info.op, t, {}, args)
    if not z3.is_true(enc.defined):
        raise _NotALemma  # the IR is total: every op the synthesizer uses is defined everywhere
    return enc.value


def match(pattern: z3.ExprRef, term: z3.ExprRef, variables: frozenset[int], binds: dict[int, z3.ExprRef]) -> bool:
    """Whether ``term`` is an instance of ``pattern`` (whose variables have the ids
    ``variables``), extending ``binds`` (variable id -> subterm; unchanged on failure) with the
    first match :func:`matches` finds."""
    for found in matches(pattern, term, variables, binds):
        binds.clear()
        binds.update(found)
        return True
    return False


def matches(pattern: z3.ExprRef, term: z3.ExprRef, variables: frozenset[int], binds: dict[int, z3.ExprRef],
            limit: int = 16) -> Iterator[dict[int, z3.ExprRef]]:
    """Every way (at most ``limit``) ``term`` is an instance of ``pattern`` extending ``binds``:
    a variable met twice must bind the same term (identity); the two operands of a commutative
    operator match in either order, so ``i + x`` against ``a + b`` binds ``i`` to ``a`` or to
    ``b`` (the other side of a lemma may only agree with one of them)."""
    count = 0
    for found in _matches(pattern, term, variables, binds):
        yield found
        count += 1
        if count >= limit:
            return


def _matches(pattern: z3.ExprRef, term: z3.ExprRef, variables: frozenset[int],
             binds: dict[int, z3.ExprRef]) -> Iterator[dict[int, z3.ExprRef]]:
    pid = pattern.get_id()
    if pid in variables:
        hit = binds.get(pid)
        if hit is not None:
            if hit.eq(term):
                yield binds
            return
        if pattern.sort().eq(term.sort()):
            yield {**binds, pid: term}
        return
    if pattern.eq(term):
        yield binds
        return
    if not (z3.is_app(pattern) and z3.is_app(term)) or pattern.num_args() == 0:
        return
    if not pattern.decl().eq(term.decl()) or pattern.num_args() != term.num_args():
        return
    ps, ts = pattern.children(), term.children()
    orders = [ts]
    if pattern.decl().kind() in _COMMUTATIVE_KINDS and len(ts) >= 2:
        swapped = list(ts)
        swapped[-2], swapped[-1] = ts[-1], ts[-2]
        orders.append(swapped)
    for order in orders:
        yield from _match_all(ps, order, variables, binds)


def _match_all(ps: list[z3.ExprRef], ts: list[z3.ExprRef], variables: frozenset[int],
               binds: dict[int, z3.ExprRef]) -> Iterator[dict[int, z3.ExprRef]]:
    if not ps:
        yield binds
        return
    for b in _matches(ps[0], ts[0], variables, binds):
        yield from _match_all(ps[1:], ts[1:], variables, b)


__all__ = ["Lemma", "Lemmas", "lemma_of", "lemmas_of", "match", "matches"]
