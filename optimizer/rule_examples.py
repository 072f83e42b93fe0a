"""Firing examples for rewrite rules: every rule shown to match, egg ``test_fn!`` style.

:func:`generate` turns a rule's left-hand side into a concrete e-graph term for one dtype
assignment (a :class:`RuleExample`): dtype variables take the assignment, term variables become
``(Opaque t id)`` / ``(OpaquePtr t id)`` leaves, shapes ``"16"``, and the i64 variables (constant
payloads, attributes) take the first values from small pools that make every guard hold. A guard
on ``(LowerBound x)``/``(UpperBound x)`` of a leaf is met by asserting range facts on that leaf
(:attr:`RuleExample.facts`); an analysis guard (``(NotNan x)``, ``(Divisible x k)``, with ``k``
16 when the guard binds it) by asserting the relation on the leaf, and an analysis action is
expected as ``bounds["NotNan"] == 1`` / ``bounds["Divisible 16"] == 1`` (:class:`FireBench` reads
the relation back). The guards are evaluated here with egglog's checked i64 semantics
(overflow, division by zero or a shift outside [0, 64) make a guard fail), which also computes
the variables the guards bind, so the right-hand side (or, for an analysis ``rule``, the bound
each ``set`` action writes) is known in advance.

:func:`negatives` builds the same kind of term for dtypes the rule's dtype guards exclude (one
per guard: a family relation, a ``Width``, a comparison of widths; and a concrete dtype of the
pattern swapped for another of its family), every other guard met; :func:`value_negatives` one
term per guard on values where only that guard fails. The rule must not fire on any of them.

:class:`FireBench` is one e-graph with the schema and the given rules, each in a ruleset of its
own; :meth:`FireBench.run` adds an example's term and facts (after a ``push``), runs only that
rule once (after saturating any ``support`` rules, e.g. the range analysis), and reports the
rule's match count and whether the term and the expected result ended in one e-class.

The dtype feasibility of an assignment (the patterns type-check) is the verifier's type
inference (its private ``_Instance.infer``, used without z3), so examples exist for the same
assignments ``eggpu rules check`` proves.
"""

from __future__ import annotations

import itertools
import operator
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from eggpu.ir import ALL_DTYPES, DType

from .analyses import ANALYSES
from .egglog_i64 import I64Undefined, i64_binary
from .rules_loader import Atom, Rule, SList, Sx
from .schema import CONSTRUCTOR_DTYPES, CONSTRUCTORS, DTYPE_CONSTRUCTORS, FAMILY_RELATIONS, const_payload

#: shape given to every String variable (shapes are opaque strings to the rules); ``trans``
#: permutations get ``PERM``
SHAPE = '"16"'
PERM = '"0"'
#: candidate payloads of integer constants, most telling first (0 and 1 are identities)
INT_POOL = (2, 3, 1, 0, 4, 8, -1, 5, 16, -2, 7)
#: candidate values of float constants
FLOAT_POOL = (2.0, 0.5, 3.0, 1.0, -1.0, 0.0, -0.0, 4.0)
#: candidate values of attributes (axis, arange start/end)
ATTR_POOL = {"axis": (0,), "start": (0,), "end": (16,)}
#: candidate range facts (lower, upper) for a leaf whose bounds a guard reads (the last one
#: overflows narrow sums: for guard tests)
BOUND_POOL = ((0, 15), (1, 16), (-8, -1), (-3, 5), (0, 1), (0, (1 << 31) - 1))
#: the i64 comparisons a guard may make
_COMPARISONS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
                "!=": operator.ne}
#: the most combinations of pool values tried per dtype assignment
MAX_TRIES = 20000
#: dtypes tried first when one assignment is enough
PREFERRED = ("i32", "f32", "i64", "u32", "bool", "f64", "i16", "u8", "f16", "bf16", "i8", "u16", "u64")

class _Fail(Exception):
    """A guard does not hold (or an i64 primitive is undefined) for the chosen values."""


class _Unbound(_Fail):
    """A guard reads a variable or range fact that has no value (yet)."""


@dataclass
class RuleExample:
    """One concrete match of a rule.

    ``before`` is the instantiated left-hand side (for an analysis ``rule``, the term its first
    ``(= e PATTERN)`` fact binds) and ``after`` the instantiated right-hand side (None for
    analysis rules); ``facts`` are egglog commands asserting range facts on leaves; ``bounds``
    the values the rule's ``set`` actions must write (``{"LowerBound": 0}``); ``terms`` extra
    terms a bare fact pattern needs in the e-graph; ``values`` the chosen i64 values (for
    messages)."""

    rule: str
    env: dict[str, DType]
    before: str
    after: str | None = None
    facts: tuple[str, ...] = ()
    bounds: dict[str, int] = field(default_factory=dict)
    terms: tuple[str, ...] = ()
    values: dict[str, int] = field(default_factory=dict)

    @property
    def dtypes(self) -> str:
        return ",".join(f"{k}={v.name}" for k, v in sorted(self.env.items())) or "-"

    def describe(self) -> str:
        tail = f" => {self.after}" if self.after is not None else (
            " => " + ", ".join(f"{k} {v}" for k, v in self.bounds.items()) if self.bounds else "")
        facts = f" given {' '.join(self.facts)}" if self.facts else ""
        return f"{self.rule} [{self.dtypes}]: {self.before}{tail}{facts}"


# ---------------------------------------------------------------------- i64 evaluation


class _Scope:
    """Values of one candidate: dtype env, i64 variables, range facts per term variable."""

    def __init__(self, rule: Rule, env: Mapping[str, DType], ints: dict[str, int],
                 bounds: Mapping[str, tuple[int, int]], skip_dtype_guards: bool = False):
        self.rule = rule
        self.env = env
        self.ints = ints
        self.bounds = bounds
        self.skip = skip_dtype_guards
        self.widths: set[str] = set()  # i64 variables bound by (Width t w)
        self.analyses: list[tuple[str, str, int | None]] = []  # (relation, term variable, divisor)

    def dt(self, node: Sx) -> DType:
        return CONSTRUCTOR_DTYPES[node.head] if isinstance(node, SList) else self.env[node.text]

    def i64(self, node: Sx) -> int:
        if isinstance(node, Atom):
            if re.fullmatch(r"[+-]?\d+", node.text):
                return int(node.text)
            if node.text not in self.ints:
                raise _Unbound(f"unbound {node.text}")
            return self.ints[node.text]
        h = node.head
        if h in ("LowerBound", "UpperBound"):
            arg = node.items[1]
            if not isinstance(arg, Atom) or arg.text not in self.bounds:
                raise _Unbound(f"no range fact for {arg}")
            return self.bounds[arg.text][0 if h == "LowerBound" else 1]
        args = [self.i64(a) for a in node.items[1:]]
        if h == "not-i64":
            return ~args[0]
        if h == "log2":
            if args[0] <= 0:
                raise _Fail("log2 of a non-positive value")
            return args[0].bit_length() - 1
        try:
            return i64_binary(h, *args)
        except I64Undefined as e:
            raise _Fail(str(e)) from None

    def guard(self, g: Sx) -> None:
        """Check one guard, binding the variable of an ``(= v expr)`` that is still free."""
        h, args = g.head, g.items[1:]
        if h in FAMILY_RELATIONS:
            if not self.skip and not FAMILY_RELATIONS[h](self.dt(args[0])):
                raise _Fail(f"({h} {self.dt(args[0])}) is false")
        elif h == "Width":
            self._width_guard(self.dt(args[0]).bits, args[1])
        elif h in ANALYSES:
            self._analysis_guard(g, h, args)
        elif h == "=":
            self._equation(args[0], args[1])
        elif h in _COMPARISONS:
            a, b = self.i64(args[0]), self.i64(args[1])
            if not _COMPARISONS[h](a, b) and not (self.skip and self.on_widths(g)):
                raise _Fail(f"{g} is false")

    def _is_free(self, a: Sx) -> bool:
        """Whether ``a`` is an i64 variable the guards have not bound yet."""
        return isinstance(a, Atom) and not re.fullmatch(r"[+-]?\d+", a.text) and a.text not in self.ints

    def _width_guard(self, w: int, a: Sx) -> None:
        """``(Width t a)``: binds a free ``a`` to the bit width ``w`` (and remembers it as a width)."""
        if self._is_free(a):
            self.ints[a.text] = w
            self.widths.add(a.text)
        elif self.i64(a) != w and not self.skip:
            raise _Fail("width differs")

    def _analysis_guard(self, g: Sx, h: str, args: list[Sx]) -> None:
        """An analysis guard is met by asserting it on the variable's leaf (like range facts);
        a divisor the guard binds gets 16."""
        if not isinstance(args[0], Atom):
            raise _Fail(f"{g}: an analysis of a compound term needs a hand-written case")
        k = None
        if h == "Divisible":
            if self._is_free(args[1]):
                self.ints[args[1].text] = 16
            k = self.i64(args[1])
        self.analyses.append((h, args[0].text, k))

    def on_widths(self, g: Sx) -> bool:
        """Whether a comparison reads only widths and literals (a dtype guard)."""
        names = {a.text for a in _atoms(g) if not re.fullmatch(r"[+-]?\d+", a.text)} - {g.head}
        return bool(names) and names <= self.widths

    def dtype_guards_hold(self) -> bool:
        """Whether the guards that depend on the dtypes alone (family relations, widths and
        comparisons of widths) hold; guards that read other values are not looked at."""
        for g in self.rule.guards:
            try:
                self.guard(g)
            except _Unbound:
                continue
            except _Fail:
                if g.head in FAMILY_RELATIONS or g.head == "Width" or self.on_widths(g):
                    return False
        return True

    def _equation(self, a: Sx, b: Sx) -> None:
        if isinstance(a, SList) and a.head in CONSTRUCTORS or isinstance(b, SList) and b.head in CONSTRUCTORS:
            return  # a term binding: handled by the caller (the fact pattern of an analysis rule)
        for x, y in ((a, b), (b, a)):
            if isinstance(x, Atom) and self.rule.var_sorts.get(x.text) == "i64" and x.text not in self.ints:
                self.ints[x.text] = self.i64(y)
                return
        if self.i64(a) != self.i64(b):
            raise _Fail("equation is false")


def _atoms(node: Sx) -> Iterator[Atom]:
    if isinstance(node, Atom):
        yield node
    else:
        for i in node.items:
            yield from _atoms(i)


# ---------------------------------------------------------------------- instantiation


class _Inst:
    """egglog text of patterns under one candidate; term variables become numbered leaves."""

    def __init__(self, scope: _Scope, types: Mapping[str, Any], ctor_swap: Mapping[str, str] | None = None):
        self.scope = scope
        self.types = types
        self.swap = ctor_swap or {}
        self.leaves: dict[str, str] = {}
        roles: dict[str, tuple] = {}
        _roles(_lhs_of(scope.rule), roles)
        self.perms = {n for n, r in roles.items() if r == ("attr", "perm")}

    def leaf(self, name: str) -> str:
        """``(Opaque t id)`` for a term variable: ``t`` its inferred dtype (an ill-typed
        instance, used for guard tests only: the first dtype variable's value)."""
        if name not in self.leaves and (bound := self._bound_term(name)) is not None:
            # a guard (= v (Ctor ...)) names a term: its facts are about that term, not a leaf
            self.leaves[name] = self.text(bound)
        if name not in self.leaves:
            ty = self.types.get(name)
            ptr = ty is not None and not isinstance(ty, DType)
            d = ty.pointee if ptr else ty
            if d is None:
                d = next(iter(self.scope.env.values()), CONSTRUCTOR_DTYPES["I32"])
            d = CONSTRUCTOR_DTYPES[self.swap.get(DTYPE_CONSTRUCTORS[d], DTYPE_CONSTRUCTORS[d])]
            self.leaves[name] = f"({'OpaquePtr' if ptr else 'Opaque'} ({DTYPE_CONSTRUCTORS[d]}) {len(self.leaves) + 1})"
        return self.leaves[name]

    def _bound_term(self, name: str) -> SList | None:
        """The constructor term a guard ``(= name (Ctor ...))`` binds ``name`` to (not the rule's
        own pattern, which an analysis rule binds the same way), else None."""
        pattern = _lhs_of(self.scope.rule)
        for g in self.scope.rule.guards:
            if g.head != "=" or len(g.items) != 3:
                continue
            a, b = g.items[1], g.items[2]
            for x, y in ((a, b), (b, a)):
                if (isinstance(x, Atom) and x.text == name and isinstance(y, SList) and y.head in CONSTRUCTORS
                        and y is not pattern):
                    return y
        return None

    def text(self, node: Sx) -> str:
        if isinstance(node, Atom):
            name = node.text
            sort = self.scope.rule.var_sorts.get(name)
            if sort == "DT":
                return f"({DTYPE_CONSTRUCTORS[self.scope.env[name]]})"
            if sort == "Term":
                return self.leaf(name)
            if sort == "String":
                return PERM if self.perms and name in self.perms else SHAPE
            if sort == "i64":
                return str(self.scope.ints[name])
            return name  # literal
        if node.head in CONSTRUCTOR_DTYPES:
            return f"({self.swap.get(node.head, node.head)})"
        return "(" + " ".join([node.head, *(self.text(i) for i in node.items[1:])]) + ")"


def _lhs_of(rule: Rule) -> Sx | None:
    """The pattern a rule matches: the lhs of a rewrite, the first ``(= e PATTERN)`` fact of a
    rule (or its first bare constructor fact)."""
    if rule.kind != "rule":
        return rule.lhs
    for g in rule.guards:
        if g.head == "=":
            for side in g.items[1:]:
                if isinstance(side, SList) and side.head in CONSTRUCTORS:
                    return side
    for g in rule.guards:
        if g.head in CONSTRUCTORS:
            return g
    return None


def _roles(node: Sx, out: dict[str, tuple]) -> None:
    """For each attribute variable of a pattern, where it first appears: ``("int", dtype node)``,
    ``("float", dtype node)`` or ``("attr", attribute name)``."""
    if not isinstance(node, SList) or node.head not in CONSTRUCTORS:
        return
    info = CONSTRUCTORS[node.head]
    args = node.items[1:]
    nd = len(info.dtypes)
    for (aname, kind), a in zip(info.attrs, args[nd:nd + len(info.attrs)]):
        if isinstance(a, Atom) and not re.fullmatch(r"[+-]?\d+", a.text):
            role = ("float", args[0]) if kind == "bits" else ("int", args[0]) if node.head == "Const" else (
                "attr", aname)
            out.setdefault(a.text, role)
    for o in args[nd + len(info.attrs):]:
        _roles(o, out)


def _pool(role: tuple, scope: _Scope) -> list[int]:
    """Candidate values of one i64 variable: canonical payloads of its constant's dtype (for an
    ill-typed instance, a ``Const`` of a float or a ``ConstF`` of an integer dtype: the raw
    integers / binary64 patterns)."""
    kind, what = role
    if kind == "attr":
        return list(ATTR_POOL.get(what, (0,)))
    d = scope.dt(what)
    if d.is_float != (kind == "float"):
        return list(INT_POOL) if kind == "int" else [const_payload(v, CONSTRUCTOR_DTYPES["F64"])[1]
                                                       for v in FLOAT_POOL]
    out = []
    extremes = (d.max, d.min) if d.is_int else ()  # last: overflowing folds, for guard tests
    for v in (FLOAT_POOL if kind == "float" else (*INT_POOL, *extremes)):
        try:
            ctor, payload = const_payload(v, d)
        except Exception:  # out of range for d
            continue
        if (ctor == "ConstF") == (kind == "float") and payload not in out:
            out.append(payload)
    return out


def _bound_vars(rule: Rule) -> list[str]:
    """Term variables whose LowerBound/UpperBound a guard reads."""
    out: list[str] = []

    def walk(n: Sx) -> None:
        if isinstance(n, SList):
            if n.head in ("LowerBound", "UpperBound") and isinstance(n.items[1], Atom):
                if n.items[1].text not in out:
                    out.append(n.items[1].text)
            for i in n.items[1:]:
                walk(i)

    for g in rule.guards:
        walk(g)
    return out


def _types(rule: Rule, env: Mapping[str, DType]) -> dict[str, Any] | None:
    """The verifier's types of the pattern's variables under ``env`` (None: ill-typed)."""
    from . import z3ops
    from .rule_analysis import _IllTyped, _Infeasible, _Unsupported
    from .rule_encoding import _Instance

    lhs = _lhs_of(rule)
    if lhs is None:
        return None
    inst = _Instance(rule, env, z3ops.EXACT)  # type inference only, no z3 query
    try:
        inst.infer(lhs, None, False)
    except (_Infeasible, _IllTyped, _Unsupported):
        return None
    return inst.types


# ---------------------------------------------------------------------- the search


def _candidates(rule: Rule, env: Mapping[str, DType], skip: bool) -> Iterator[_Scope]:
    """Scopes for every combination of pool values of the pattern's i64 variables and range
    facts of the leaves whose bounds a guard reads (at most ``MAX_TRIES``)."""
    lhs = _lhs_of(rule)
    roles: dict[str, tuple] = {}
    _roles(lhs, roles)
    probe = _Scope(rule, env, {}, {}, skip)
    names = [n for n in roles if rule.var_sorts.get(n) == "i64"]
    pools = [_pool(roles[n], probe) for n in names]
    bvars = _bound_vars(rule)
    for n, combo in enumerate(itertools.product(*pools, *[BOUND_POOL] * len(bvars))):
        if n >= MAX_TRIES:
            return
        yield _Scope(rule, env, dict(zip(names, combo[:len(names)])), dict(zip(bvars, combo[len(names):])), skip)


def _example(rule: Rule, env: Mapping[str, DType], types: Mapping[str, Any], skip: bool,
             swap: Mapping[str, str] | None = None) -> RuleExample | None:
    for scope in _candidates(rule, env, skip):
        try:
            for g in rule.guards:
                scope.guard(g)
            inst = _Inst(scope, types, swap)
            before = inst.text(_lhs_of(rule))
            ex = RuleExample(rule.name, dict(env), before, values=dict(scope.ints))
            if rule.kind == "rule":
                _analysis_parts(rule, scope, inst, ex)
            else:
                ex.after = inst.text(rule.rhs)
        except _Fail:
            continue
        ex.facts = _facts(scope, inst)
        return ex
    return None


def _value_guards(rule: Rule) -> list[int]:
    """Indices of the guards on values (comparisons and i64 equations that read constants,
    attributes or range facts, not only dtype widths)."""
    scope = _Scope(rule, {}, {}, {})
    for g in rule.guards:  # the width variables, without evaluating anything
        if g.head == "Width" and isinstance(g.items[2], Atom):
            scope.widths.add(g.items[2].text)
    out = []
    for i, g in enumerate(rule.guards):
        if g.head in ("<", "<=", ">", ">=", "!=") and not scope.on_widths(g):
            out.append(i)
        elif g.head == "=" and not any(isinstance(x, SList) and x.head in CONSTRUCTORS for x in g.items[1:]):
            names = [a.text for a in _atoms(g) if rule.var_sorts.get(a.text) == "i64"] + [
                a.text for a in _atoms(g) if a.text in ("LowerBound", "UpperBound")]
            if set(names) - scope.widths:
                out.append(i)
    return out


def _violates(scope: _Scope, rule: Rule, index: int) -> bool:
    """Whether guard ``index`` fails under ``scope`` while no other guard does (guards that
    need a variable the failing one would have bound are not evaluated)."""
    failed = False
    for i, g in enumerate(rule.guards):
        try:
            scope.guard(g)
        except _Unbound:
            if not failed:
                return False
        except _Fail:
            if i != index:
                return False
            failed = True
    return failed


def value_negatives(rule: Rule) -> list[RuleExample]:
    """For each guard on values, a term at the first accepted dtype assignment where that guard
    fails and every other guard holds (``(> c 1)`` at ``c = 1``, a power-of-two check at 3, a
    ``(>= (LowerBound x) 0)`` with a negative range fact): the rule must not fire on it.
    Guards no pool value violates get no example."""
    env = next(_envs(rule, False, True), None)
    if env is None:
        return []
    types = _types(rule, env) or {}
    out: list[RuleExample] = []
    for index in _value_guards(rule):
        for scope in _candidates(rule, env, False):
            if _violates(scope, rule, index):
                inst = _Inst(scope, types)
                ex = RuleExample(rule.name, dict(env), inst.text(_lhs_of(rule)), values=dict(scope.ints))
                ex.facts = _facts(scope, inst)
                if all(ex.before != o.before or ex.facts != o.facts for o in out):
                    out.append(ex)
                break
    return out


def unblocked_value_guards(rule: Rule) -> list[int]:
    """Indices of the guards on values that are real conditions (not an ``(= v expr)`` binding
    a fresh i64 variable) and that no pool value violates alone: :func:`value_negatives` has
    no example for them, so each needs a hand-written negative (e.g. a constant beyond a
    narrow width, a bound sum that overflows, a shift that loses bits)."""
    env = next(_envs(rule, False, True), None)
    if env is None:
        return []
    return [i for i in _value_guards(rule) if not _binds_fresh(rule, i)
            and not any(_violates(scope, rule, i) for scope in _candidates(rule, env, False))]


def _binds_fresh(rule: Rule, index: int) -> bool:
    """Whether guard ``index`` is ``(= v expr)`` with ``v`` an i64 variable that neither the
    pattern nor an earlier guard mentions (it binds ``v``; only a checked-arithmetic failure
    can stop it, and that is the guard's job, not a condition)."""
    g = rule.guards[index]
    if g.head != "=" or not isinstance(g.items[1], Atom) or rule.var_sorts.get(g.items[1].text) != "i64":
        return False
    before = [_lhs_of(rule), *rule.guards[:index]]
    return all(a.text != g.items[1].text for node in before for a in _atoms(node))


def _facts(scope: _Scope, inst: _Inst) -> tuple[str, ...]:
    ranges = tuple(f"(set ({fn} {inst.leaf(v)}) {lh[i]})" for v, lh in scope.bounds.items()
                   for i, fn in enumerate(("LowerBound", "UpperBound")))
    return ranges + tuple(f"({h} {inst.leaf(v)}{'' if k is None else f' {k}'})" for h, v, k in scope.analyses)


def _pattern_var(rule: Rule) -> str | None:
    """The variable an analysis rule's ``(= e PATTERN)`` fact binds (None: a bare pattern)."""
    pattern = _lhs_of(rule)
    for g in rule.guards:
        if g.head == "=" and pattern in g.items[1:]:
            other = [i for i in g.items[1:] if i is not pattern]
            if other and isinstance(other[0], Atom):
                return other[0].text
    return None


def _analysis_parts(rule: Rule, scope: _Scope, inst: _Inst, ex: RuleExample) -> None:
    """Expected bounds of an analysis rule's ``set`` actions on its pattern's term, the term a
    ``union`` joins to it, and extra fact terms. Actions on other terms have no generated
    example (they need a hand-written case)."""
    pattern, var = _lhs_of(rule), _pattern_var(rule)

    def is_pattern(n: Sx) -> bool:
        return n is pattern or (isinstance(n, Atom) and n.text == var)

    ex.terms = tuple(inst.text(g) for g in rule.guards if g.head in CONSTRUCTORS and g is not pattern)
    for a in rule.actions:
        if a.head == "set" and is_pattern(a.items[1].items[1]):
            ex.bounds[a.items[1].head] = scope.i64(a.items[2])
        elif a.head in ANALYSES and is_pattern(a.items[1]):
            # expected: the relation holds of the pattern's term (read back as 1 by FireBench)
            key = a.head if len(a.items) == 2 else f"{a.head} {scope.i64(a.items[2])}"
            ex.bounds[key] = 1
        elif a.head == "union" and any(is_pattern(x) for x in a.items[1:]) and ex.after is None:
            ex.after = inst.text(next(x for x in a.items[1:] if not is_pattern(x)))
        else:
            raise _Fail(f"action {a} has no generated example")


def _by_preference() -> list[DType]:
    return sorted(ALL_DTYPES, key=lambda d: PREFERRED.index(d.name) if d.name in PREFERRED else len(PREFERRED))


def _envs(rule: Rule, excluded: bool, typed: bool) -> Iterator[dict[str, DType]]:
    from .rule_analysis import _dt_vars, _relation_ok

    dvs = _dt_vars(rule)
    for combo in itertools.product(_by_preference(), repeat=len(dvs)):
        env = dict(zip(dvs, combo))
        accepted = _relation_ok(rule, env) and _Scope(rule, env, {}, {}).dtype_guards_hold()
        if accepted != excluded and (not typed or _types(rule, env) is not None):
            yield env


def assignments(rule: Rule, *, excluded: bool = False, typed: bool = True) -> list[dict[str, DType]]:
    """The dtype assignments of ``rule`` that its dtype guards accept (``excluded``: that they
    reject) and, with ``typed``, under which its pattern type-checks; preferred dtypes (i32,
    f32, ...) first."""
    return list(_envs(rule, excluded, typed))


def generate(rule: Rule, env: Mapping[str, DType] | None = None) -> RuleExample | None:
    """A firing example of ``rule`` at ``env`` (default: the first accepted assignment that has
    one, preferred dtypes first); None when no pool values meet the guards."""
    for e in ([dict(env)] if env is not None else _envs(rule, False, True)):
        types = _types(rule, e)
        if types is not None:
            ex = _example(rule, e, types, skip=False)
            if ex is not None:
                return ex
    return None


def _concrete_swap(rule: Rule) -> dict[str, str] | None:
    """For a pattern with concrete non-bool dtypes (``(F32)``), another dtype of the same family
    for each, so the same term at that dtype tests the pattern's dtype restriction."""
    found: list[str] = []

    def walk(n: Sx) -> None:
        if isinstance(n, SList):
            if n.head in CONSTRUCTOR_DTYPES and n.head != "Bool" and n.head not in found:
                found.append(n.head)
            for i in n.items[1:]:
                walk(i)

    walk(_lhs_of(rule))
    swap = {}
    for ctor in found:
        d = CONSTRUCTOR_DTYPES[ctor]
        other = next((o for o in ALL_DTYPES if o != d and o.is_float == d.is_float and o.is_int == d.is_int
                      and o.is_signed == d.is_signed), None)
        if other is not None:
            swap[ctor] = DTYPE_CONSTRUCTORS[other]
    return swap or None


def has_dtype_guard(rule: Rule) -> bool:
    """Whether the rule's dtype guards (family relations, widths) reject some dtype assignment,
    or its pattern names a concrete non-bool dtype."""
    return next(_envs(rule, True, False), None) is not None or _concrete_swap(rule) is not None


def _failing_dtype_guards(rule: Rule, env: Mapping[str, DType]) -> frozenset[int]:
    """Indices of the rule's dtype guards (relations, widths, width comparisons) that ``env``
    violates."""
    scope = _Scope(rule, env, {}, {})
    out = set()
    for i, g in enumerate(rule.guards):
        try:
            scope.guard(g)
        except _Unbound:
            continue
        except _Fail:
            if g.head in FAMILY_RELATIONS or g.head == "Width" or scope.on_widths(g):
                out.add(i)
    return frozenset(out)


def negatives(rule: Rule) -> list[RuleExample]:
    """Terms like :func:`generate`'s at dtypes the rule's dtype guards exclude, every other guard
    met: one per dtype guard (preferably at a dtype that violates that guard alone), plus one
    per concrete dtype in the pattern (the same term at another dtype of its family). Empty when
    the rule has no dtype guard.

    A well-typed term is preferred; when a guard only excludes dtypes under which the pattern is
    ill-typed anyway (``(IsInt t)`` on ``(Const t 0)``: an f32 ``Const``), the ill-typed term is
    used, as egg's tests do: the guard must still keep the rule from matching it."""
    found: dict[int, RuleExample] = {}
    for typed, alone in ((True, True), (True, False), (False, True), (False, False)):
        for env in _envs(rule, True, typed):
            fails = _failing_dtype_guards(rule, env)
            todo = [i for i in fails if i not in found and (len(fails) == 1 or not alone)]
            if not todo:
                continue
            ex = _example(rule, env, _types(rule, env) or {}, skip=True)
            if ex is not None:
                for i in todo:
                    found[i] = ex
    out = list({id(ex): ex for ex in found.values()}.values())
    swap = _concrete_swap(rule)
    if swap is not None:
        env = next(_envs(rule, False, True), {})
        ex = _example(rule, env, _types(rule, env) or {}, skip=True, swap=swap)
        if ex is not None:
            ex.after = None
            ex.env = {**ex.env, **{k: CONSTRUCTOR_DTYPES[v] for k, v in swap.items()}}
            out.append(ex)
    return out


def negative(rule: Rule) -> RuleExample | None:
    """The first of :func:`negatives` (None when the rule has no dtype guard)."""
    out = negatives(rule)
    return out[0] if out else None


# ---------------------------------------------------------------------- running


@dataclass
class FireResult:
    """What running one rule on an example did: its match count, whether ``before`` and the
    expected ``after`` share an e-class, and the bounds read back for analysis rules."""

    hits: int
    merged: bool | None
    bounds: dict[str, int | None] = field(default_factory=dict)

    @property
    def fired(self) -> bool:
        return self.hits > 0


class FireBench:
    """One e-graph with the schema and ``rules``, each in a ruleset of its own (``fire_N``)."""

    def __init__(self, rules: Iterable[Rule]):
        from .egglog_bindings import bindings

        EGraph = bindings().EGraph

        from .schema import schema_text

        self.rules = {r.name: r for r in rules}
        self.rulesets = {name: f"fire_{i}" for i, name in enumerate(self.rules)}
        parts = [schema_text()]
        for name, r in self.rules.items():
            rs = self.rulesets[name]
            text = re.sub(r":ruleset\s+\S+", "", r.egglog).rstrip()
            parts.append(f"(ruleset {rs})\n{text[:-1]} :ruleset {rs})")
        self.eg = EGraph()
        self._cmd("\n".join(parts))

    def _cmd(self, text: str) -> list[Any]:
        return self.eg.run_program(*self.eg.parse_program(text))

    def _check(self, fact: str) -> bool:
        try:
            self._cmd(f"(check {fact})")
            return True
        except Exception:  # egglog reports a failed check as an error
            return False

    def run(self, ex: RuleExample, support: Sequence[str] = ()) -> FireResult:
        """Add ``ex`` to a pushed e-graph, saturate the ``support`` rules, run ``ex.rule`` once."""
        rs = self.rulesets[ex.rule]
        self._cmd("(push)")
        try:
            prog = [*ex.facts, *(f"(let $t{i} {t})" for i, t in enumerate(ex.terms)), f"(let $before {ex.before})"]
            self._cmd("\n".join(prog))
            sup = [self.rulesets[s] for s in support if s != ex.rule]
            if sup:
                self._cmd(f"(run-schedule (saturate {' '.join(f'(run {s})' for s in sup)}))")
            out = self._cmd(f"(run {rs} 1)")
            report = next((o.report for o in out if hasattr(o, "report")), None)
            hits = report.num_matches_per_rule.get(ex.rule, 0) if report is not None else 0
            merged = None if ex.after is None else self._check(f"(= $before {ex.after})")
            bounds = {fn: self._bound(fn) for fn in ("LowerBound", "UpperBound")}
            for key in ex.bounds:  # analysis relations: "NotNan", "Divisible 16"
                if key not in bounds:
                    name, *k = key.split()
                    bounds[key] = 1 if self._check(f"({name} $before{''.join(' ' + x for x in k)})") else None
            return FireResult(hits, merged, bounds)
        finally:
            self._cmd("(pop)")

    def _bound(self, fn: str) -> int | None:
        try:
            out = self._cmd(f"(extract ({fn} $before))")
        except Exception:  # no value: egglog reports a missing function value as an error
            return None
        termdag, term = out[0].termdag, out[0].term
        return int(termdag.to_string(term))
