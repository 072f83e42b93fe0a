"""Proved rules as lemmas on z3-free lane terms (:mod:`.term_bounds`), for translation validation
without a solver (:mod:`.validate_terms`).

The same lemmas :mod:`.validate_lemmas` builds in z3, restricted to what is decided on the rule's
text alone: rules at concrete dtypes and dtype-generic rules of the plain shape
(:func:`.lemma_rules.plain`, their proved assignments told without the verifier). A lemma's sides
are matched on the terms directly: a constructor matches a pure op of the same name at the same
dtype (either operand order for a commutative op), ``Splat`` is a lane identity, ``Const`` an
integer numeral of its dtype, a variable any term of the dtype its position expects (the same term
wherever it occurs). Float literals (``ConstF``), attributes and casts are not matched here: such
an instance is left to the solver path. Guards are evaluated by :mod:`.guard_eval` with the
bounds of :class:`.term_bounds.Bounds`.

Sound for the reasons the z3 lemmas are: the rule's proof covers every value of its variables at
those dtypes (and every value of the bounds its guards allow), and these terms have the meaning
of the IR ops they name.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from eggpu.ir import OPS, DType
from eggpu.ir.dtypes import bool_
from eggpu.ir.ops import Trait

from .guard_eval import STATIC_GUARDS, guards_established
from .lemma_rules import NotALemma, i64_ok, literals_canonical, plain, plain_assignments, rule_dtype
from .rules_loader import Atom, Rule, SList, Sx
from .term_bounds import Bounds, Terms

_COMPARISONS = frozenset({"eq", "ne", "lt", "le", "gt", "ge"})


@dataclass(frozen=True, eq=False)
class TermLemma:
    """``rule``'s two sides are equal at the dtypes ``env`` gives its dtype variables, wherever
    its guards hold."""

    rule: Rule
    env: Mapping[str, DType]
    ints: Mapping[str, int]  # i64 variables that ``Width`` fixes
    defined: frozenset[str]  # Term variables a guard ``(= v (Ctor ...))`` names

    @property
    def guarded(self) -> bool:
        """Whether it has range guards (re-established at each instance)."""
        return any(isinstance(g, SList) and g.head not in STATIC_GUARDS for g in self.rule.guards)


def term_lemmas(rules: Iterable[Rule], dtypes: Iterable[DType] | None) -> list[TermLemma]:
    """The lemmas of ``rules`` usable without z3, in the order :class:`.validate_lemmas.Lemmas`
    tries them (rules at concrete dtypes, then the dtype-generic ones per assignment among the
    kernel's ``dtypes``)."""
    pool = None if dtypes is None else sorted(set(dtypes), key=lambda d: d.name)
    concrete: list[TermLemma | None] = []
    generic: list[TermLemma | None] = []
    for r in rules:
        if not any(s == "DT" for s in r.var_sorts.values()):
            concrete.append(_lemma(r, {}))
        elif r.kind == "rewrite" and not r.fast_math and plain(r):
            generic += [_lemma(r, env) for env in plain_assignments(r, pool) if literals_canonical(r, env)]
    return [lm for lm in concrete + generic if lm is not None]


def _lemma(rule: Rule, env: Mapping[str, DType]) -> TermLemma | None:
    """Mirrors :func:`.validate_lemmas.lemma_of`'s acceptance: a proved, exact rewrite whose
    variables are terms, strings, dtypes or guarded i64s and whose guards are of the kinds
    :mod:`.guard_eval` evaluates."""
    sorts = rule.var_sorts
    if rule.kind != "rewrite" or rule.fast_math or rule.lhs is None or rule.rhs is None:
        return None
    if any(s not in ("Term", "String", "DT", "i64") for s in sorts.values()):
        return None
    if any(s == "DT" and v not in env for v, s in sorts.items()):
        return None
    if any(s == "i64" for s in sorts.values()) and not rule.guards:
        return None
    pattern_vars = _term_vars(rule)
    ints: dict[str, int] = {}
    defined: set[str] = set()
    try:
        for g in rule.guards:
            if not isinstance(g, SList) or not isinstance(g.items[0], Atom):
                return None
            h = g.head
            if h == "Width":
                if isinstance(g.items[2], Atom) and sorts.get(g.items[2].text) == "i64":
                    ints[g.items[2].text] = rule_dtype(g.items[1], env).bits
            elif h in STATIC_GUARDS:
                continue
            elif h == "=" and isinstance(g.items[1], Atom) and sorts.get(g.items[1].text) == "Term":
                if g.items[1].text in pattern_vars or not isinstance(g.items[2], SList):
                    return None
                defined.add(g.items[1].text)
            elif not (h in ("<", "<=", ">", ">=", "!=", "=") and all(i64_ok(x, rule) for x in g.items[1:])):
                return None
    except (NotALemma, KeyError):
        return None
    return TermLemma(rule, dict(env), ints, frozenset(defined))


def _term_vars(rule: Rule) -> set[str]:
    """The Term variables of the rule's two sides."""
    out: set[str] = set()
    stack = [rule.lhs, rule.rhs]
    while stack:
        x = stack.pop()
        if isinstance(x, Atom) and rule.var_sorts.get(x.text) == "Term":
            out.add(x.text)
        elif isinstance(x, SList):
            stack.extend(x.items)
    return out


Binds = dict[str, tuple[int, DType]]


class Matcher:
    """Lemma instances on one validation's terms."""

    def __init__(self, terms: Terms, commutative: frozenset[str]):
        self.terms = terms
        self.commutative = commutative

    def matches(self, lm: TermLemma, pat: Sx, t: int, want: DType | None, binds: Binds,
                limit: int = 16) -> Iterator[Binds]:
        """Every way (at most ``limit``) term ``t`` is an instance of ``pat`` extending ``binds``."""
        for n, found in enumerate(self._match(lm, pat, t, want, binds)):
            if n >= limit:
                return
            yield found

    def _match(self, lm: TermLemma, pat: Sx, t: int, want: DType | None, binds: Binds) -> Iterator[Binds]:
        terms = self.terms
        if isinstance(pat, Atom):
            if want is None:
                return
            hit = binds.get(pat.text)
            if hit is not None:
                if hit[0] == t:
                    yield binds
                return
            if terms.dtypes[t] == want:
                yield {**binds, pat.text: (t, want)}
            return
        if not isinstance(pat, SList) or not isinstance(pat.items[0], Atom):
            return
        try:
            dt = rule_dtype(pat.items[1], lm.env)
        except (NotALemma, KeyError, IndexError):
            return
        head = pat.head
        if head == "Splat":
            yield from self._match(lm, pat.items[3], t, dt, binds)
            return
        if head == "Const":
            lit = pat.items[2]
            if isinstance(lit, Atom) and dt.is_int and lit.text.lstrip("-").isdigit() and \
                    t == terms.const(int(lit.text), dt):
                yield binds
            return
        op = _op_of(head)
        if op is None:
            return  # ConstF, attributes, casts, leaves: left to the solver path
        node_head, kids = terms.nodes[t]
        operands = pat.items[2:]
        if node_head != ("op", op, dt.name, ()) or len(kids) != len(operands):
            return
        kinds: list[DType] = [dt] * len(operands)
        if op == "where":
            kinds[0] = bool_
        orders = [kids]
        if op in self.commutative and len(kids) == 2:
            orders.append((kids[1], kids[0]))
        for order in orders:
            yield from self._match_all(lm, list(operands), list(order), kinds, binds)

    def _match_all(self, lm: TermLemma, ps: list[Sx], ts: list[int], kinds: list[DType],
                   binds: Binds) -> Iterator[Binds]:
        if not ps:
            yield binds
            return
        for b in self._match(lm, ps[0], ts[0], kinds[0], binds):
            yield from self._match_all(lm, ps[1:], ts[1:], kinds[1:], b)

    def build(self, lm: TermLemma, node: Sx, binds: Binds, want: DType | None = None) -> int:
        """The term a guard's ``(Ctor ...)`` names at the instance ``binds`` (commutative operands
        in the evaluator's canonical order)."""
        if isinstance(node, Atom):
            return binds[node.text][0]
        if not isinstance(node, SList) or not isinstance(node.items[0], Atom):
            raise NotALemma
        dt = rule_dtype(node.items[1], lm.env)
        if node.head == "Splat":
            return self.build(lm, node.items[3], binds, dt)
        if node.head == "Const" and isinstance(node.items[2], Atom) and dt.is_int:
            return self.terms.const(int(node.items[2].text), dt)
        op = _op_of(node.head)
        if op is None:
            raise NotALemma
        kids = [self.build(lm, x, binds) for x in node.items[2:]]
        if op in self.commutative and len(kids) == 2:
            kids.sort()
        return self.terms.op(op, dt.name, (), tuple(kids), bool_ if op in _COMPARISONS else dt)

    def guards_hold(self, lm: TermLemma, binds: Binds, bounds: Bounds) -> bool:
        """Whether ``lm``'s guards hold at ``binds`` with the intervals of ``bounds``."""
        if not lm.rule.guards:
            return True
        rule = lm.rule
        terms = {name: (t, dt.is_signed) for name, (t, dt) in binds.items()}
        exprs = {g.items[1].text: g.items[2] for g in rule.guards
                 if isinstance(g, SList) and g.head == "=" and isinstance(g.items[1], Atom)
                 and g.items[1].text in lm.defined}

        def define(name: str) -> tuple[int, bool]:
            t = self.build(lm, exprs[name], binds)
            dt = self.terms.dtypes[t]
            return t, dt is not None and (dt.is_bool or dt.is_signed)

        int_names = frozenset(v for v, s in rule.var_sorts.items() if s == "i64")
        try:
            return guards_established(rule.guards, terms, lm.ints, int_names, lm.defined, define, bounds.bound)
        except (NotALemma, ValueError):
            return False


def _op_of(head: str) -> str | None:
    """The IR op a constructor names when a lemma may match it: one dtype argument, no attributes,
    not a cast (:func:`.validate_lemmas._encode`'s conditions)."""
    from .schema import CONSTRUCTORS

    info = CONSTRUCTORS.get(head)
    if info is None or info.op is None or info.attrs or len(info.dtypes) != 1 or info.op in ("cast", "bitcast"):
        return None
    return info.op


def commutative_ops() -> frozenset[str]:
    """The binary ops whose operands commute (the op table's trait)."""
    return frozenset(name for name, d in OPS.items() if d.has(Trait.COMMUTATIVE))


__all__ = ["Matcher", "TermLemma", "commutative_ops", "term_lemmas"]
