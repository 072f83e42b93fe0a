"""The solver side of translation validation (:mod:`.validate`): the result type, the checker
that proves obligations cheapest first (identical terms, a structural diff with small generalized
queries cached by text, then one whole query) and the deterministic budgets it runs under.

Every solver check is bounded by z3 resource units (:mod:`.rule_budget`) and runs in a fresh z3
context; the simplification of the structural diff runs in a scratch context of the validation's
own. So the verdict and the unit count of a pair of functions are the same in every fresh
process, however loaded the machine. A cached generalized proof is reused only when its recorded
units fit the current budget and is charged them, so the count does not depend on what the
process validated before either (a counterexample's model is read in its session, never translated
into the main context: see :mod:`.rule_budget`).
"""

from __future__ import annotations

import time
from typing import Any

import z3

from . import z3ops
from .rule_budget import WALL_CAPPED, WALL_FACTOR, WALL_MIN_MS, Session, SessionModel, strategy_for, units
from .validate_result import Validation
from .z3ops import Enc


def abstract_fp_rem(formula: z3.ExprRef) -> tuple[z3.ExprRef, bool]:
    """``formula`` with every IEEE ``fp.rem(a, b)`` replaced by ``rem_S(a, b)``, one uninterpreted
    function per float sort, consistently (equal arguments give equal results, as for fp.rem);
    and whether anything was replaced."""
    rems: list[z3.ExprRef] = []
    seen: set[int] = set()

    def walk(e: z3.ExprRef) -> None:  # post-order: inner rems before the rems that contain them
        stack = [(e, False)]
        while stack:
            x, done = stack.pop()
            if done:
                if z3.is_app(x) and x.decl().kind() == z3.Z3_OP_FPA_REM:
                    rems.append(x)
                continue
            if x.get_id() in seen:
                continue
            seen.add(x.get_id())
            stack.append((x, True))
            stack.extend((c, False) for c in x.children())

    walk(formula)
    if not rems:
        return formula, False
    out: list[tuple[z3.ExprRef, z3.ExprRef]] = []
    for r in rems:
        srt = r.sort()
        uf = z3.Function(f"__fp_rem_{srt.ebits()}_{srt.sbits()}", srt, srt, srt)
        a, b = (z3.substitute(c, *out) if out else c for c in r.children())
        out.append((r, uf(a, b)))
    return z3.substitute(formula, *out), True


class _Checker:
    """The solver side of one validation: facts, budgets and the units spent (see the module
    docstring for the budgets)."""

    def __init__(self, timeout_ms: int, total_seconds: float, mode: str = z3ops.EXACT, lemmas: Any = ()):
        self.mode = mode
        self.timeout_ms = timeout_ms
        self.total_units = units("z3", total_seconds * 1000)
        # only a runaway cap: on an idle machine the units run out long before it
        self.wall_deadline = time.perf_counter() + max(WALL_MIN_MS / 1000, WALL_FACTOR * total_seconds)
        self.used = 0
        self.by_strategy: dict[str, int] = {}
        self.wall_capped = False
        self.last_reason = ""  # why the last check answered unknown
        self._scratch: z3.Context | None = None  # see simplified()
        self._facts_key: tuple[tuple[int, ...], str] = ((), "")
        self.facts: dict[int, z3.BoolRef] = {}
        self.blocks: Any = None  # the reductions/dots shared by both sides (set by validate)
        self.block_names: dict[tuple[str, int], str] = {}
        self.checks = 0
        self.solver_calls = 0
        self.pair_timeout_ms = min(timeout_ms, 500)
        self._equal_memo: dict[tuple[int, int, int], tuple[bool, Any, Any, Any]] = {}
        # proved rules (:mod:`.validate_lemmas`): in exact mode only, the semantics they were proved in
        # (a :class:`.validate_lemmas.Lemmas` stays lazy: its generic lemmas are built when reached)
        from .validate_lemmas import Lemmas

        self.lemmas: Any = (lemmas if isinstance(lemmas, Lemmas) else list(lemmas)) if mode == z3ops.EXACT else []
        self.lemma_hits = 0
        self.guarded_hits = 0  # lemma hits whose guards were re-established (:mod:`.validate_guards`)
        self._bounds: dict[tuple[int, int], tuple[z3.BoolRef, Any]] = {}  # (context id, #facts) -> (context, Bounds)
        self._fact_bounds: tuple[int, Any] | None = None  # (#facts, Bounds of the facts alone)
        self._no_solver = False  # equal(): identity and lemmas only (see there)
        from .validate_canon import Canon

        self.canon = Canon()  # canonical forms modulo AC (:mod:`.validate_canon`)

    def canonical(self, e: Enc) -> Enc:
        """``e`` with its value and definedness in canonical form modulo associativity and
        commutativity (:mod:`.validate_canon`): equal under every assignment."""
        return Enc(self.canon.of(e.value), self.canon.of(e.defined))

    def add_fact(self, f: z3.BoolRef) -> None:
        if not z3.is_true(f):
            self.facts[f.get_id()] = f

    def result(self, verdict: str, detail: str, secs: float) -> Validation:
        return Validation(verdict, detail, self.checks, self.solver_calls, secs, units=self.used,
                          budget_units=self.total_units, strategies=tuple(sorted(self.by_strategy.items())),
                          wall_capped=self.wall_capped, lemma_hits=self.lemma_hits,
                          guarded_lemma_hits=self.guarded_hits)

    def facts_text(self) -> str:
        """The facts as text (part of the pair-proof cache key: a proof under one kernel's facts
        says nothing about another kernel)."""
        ids = tuple(self.facts)
        if self._facts_key[0] != ids:
            self._facts_key = (ids, " ".join(f.sexpr() for f in self.facts.values()))
        return self._facts_key[1]

    def charge(self, strategy: str, n: int) -> None:
        self.used += n
        self.by_strategy[strategy] = self.by_strategy.get(strategy, 0) + n

    def simplified(self, e: z3.ExprRef, **options: Any) -> z3.ExprRef:
        """``z3.simplify(e)`` computed in this validation's own scratch context (the result lives
        there): z3's simplifier orders the arguments of AC operators by term id, and ids in the
        process-wide context depend on everything the process built before, so simplifying there
        would make the queries — and their units — depend on the process's history."""
        if self._scratch is None:
            self._scratch = z3.Context()
        return z3.simplify(e.translate(self._scratch), **options)

    def affordable(self, spent: tuple[tuple[str, int], ...], ms: float) -> bool:
        """Whether a check that used ``spent`` units fits a budget of ``ms`` and what is left of the
        validation's: a cached proof is reused only then, so the verdict is the one a fresh
        check would give."""
        left = self.total_units - self.used
        return all(n <= min(units(k, ms), left) for k, n in spent)

    def solve(self, formula: z3.BoolRef, timeout_ms: int | None = None) -> tuple[z3.CheckSatResult, SessionModel | None]:
        """Satisfiability of ``formula`` under the facts, with ``timeout_ms`` (default: the
        checker's) idle-machine milliseconds converted to resource units, and never more than what
        is left of the validation's budget (``unknown`` when either runs out; ``last_reason``
        says which, with the count). Each check runs in a fresh z3 context
        (:class:`.rule_budget.Session`), so the units do not depend on what the process did before.

        IEEE ``fp.rem`` terms are first abstracted as uninterpreted functions (see
        :func:`abstract_fp_rem`): z3's fp.rem procedure does not honour the solver's timeout (an f64
        ``rem`` by a constant kept a compile in this call for good). The abstraction is sound for
        ``unsat`` (equal for every function is equal for fp.rem); a ``sat`` answer over it is no real
        counterexample and is reported as ``unknown``."""
        left = self.total_units - self.used
        if left <= 0:
            self.last_reason = f"the validation's budget of {self.total_units} resource units is spent"
            return z3.unknown, None
        if time.perf_counter() > self.wall_deadline:
            self.wall_capped = True
            self.last_reason = WALL_CAPPED
            return z3.unknown, None
        facts = [abstract_fp_rem(f) for f in self.facts.values()]
        abstracted = abstract_fp_rem(formula)
        body = [f for f, _ in facts] + [abstracted[0]]
        strategy = strategy_for(body, self.mode == z3ops.REAL)
        budget = min(units(strategy, self.timeout_ms if timeout_ms is None else timeout_ms), left)
        # a fresh context per check: z3's heuristics follow term ids, so a check must not see
        # what earlier checks (or the ones a cached proof skipped) left in a shared context
        session = Session()
        self.solver_calls += 1
        c = session.check(strategy, budget, body)
        self.charge(strategy, c.units)
        self.wall_capped |= c.wall_capped
        r = c.result
        if r == z3.unknown:
            self.last_reason = self._unknown_reason(c, budget)
        if r == z3.sat and (abstracted[1] or any(changed for _, changed in facts)):
            self.last_reason = "a counterexample only through the fp.rem abstraction (not a real one)"
            return z3.unknown, None
        return r, (session.model(c) if r == z3.sat else None)

    @staticmethod
    def _unknown_reason(c: Any, budget: int) -> str:
        """Why check ``c`` (of ``budget`` units) answered unknown: its resource limit, the wall-clock
        cap, or z3's own reason (an incomplete theory) with the units it used."""
        if c.wall_capped:
            return c.reason
        why = c.solver.reason_unknown()
        if c.units >= budget or "resource" in why or "canceled" in why:
            return f"resource limit ({c.units} units of a {budget}-unit {c.strategy} budget)"
        return f"z3 answered unknown ({why}) after {c.units} units"

    def refines(self, before: Enc, after: Enc, context: z3.BoolRef) -> bool:
        """Cheaply prove that ``after`` refines ``before`` under ``context`` (lane ranges and the
        mask condition): the values are equal (structurally, or by local proofs of the differing
        subterms — see :meth:`equal`) and ``after`` is defined wherever ``before`` is. False means
        "not shown", not "different"."""
        if not self.equal(before.value, after.value, context):
            return False
        da = after.defined
        if z3.is_true(da) or z3.is_true(self.simplified(da)) or self.equal(before.defined, after.defined, context):
            return True
        r, _ = self.solve(z3.And(context, before.defined, z3.Not(da)))
        return r == z3.unsat

    def refines_without_solver(self, before: Enc, after: Enc, context: z3.BoolRef) -> bool:
        """:meth:`refines` by identity and lemmas only (no solver call, no canonical forms): the
        cheap first try, worth it when lemmas are given."""
        if not self.lemmas or not (z3.is_true(after.defined) or before.defined.eq(after.defined)):
            return False
        self._no_solver = True
        try:
            return self.equal(before.value, after.value, context)
        finally:
            self._no_solver = False

    def build_lemmas(self) -> bool:
        """Build the lemmas still pending (:class:`.validate_lemmas.Lemmas`); whether there were any."""
        from .validate_lemmas import Lemmas

        if isinstance(self.lemmas, Lemmas) and self.lemmas.pending:
            self.lemmas.build()
            return True
        return False

    def lanes_equal(self, before: Enc, after: Enc, ranges: z3.BoolRef) -> bool:
        """Whether ``after`` refines ``before`` on every lane in ``ranges``."""
        if self.refines(before, after, ranges):
            return True
        bad = z3.And(ranges, before.defined, z3.Not(z3.And(after.defined, after.value == before.value)))
        r, _ = self.solve(bad)
        return r == z3.unsat

    # -------------------------------------------------------------- structural diff + local proofs

    def equal(self, a: z3.ExprRef, b: z3.ExprRef, context: z3.BoolRef) -> bool:
        """Whether ``a == b`` for every assignment satisfying ``context`` and the facts, shown by
        congruence (same function, equal arguments) down to the subterms that differ, each of
        which is proved equal by a small z3 query (first generalized: subterms common to both
        sides replaced by fresh variables, cached across runs; then as is). Two chains of one
        associative-commutative operator are compared as multisets of operands
        (:meth:`_ac_equal`), so a difference inside a reordered chain stays a small query."""
        if a.eq(b):
            return True
        key = (a.get_id(), b.get_id(), context.get_id())
        hit = self._equal_memo.get(key)
        if hit is not None:
            return hit[0]
        res = False
        ac = self._ac_equal(a, b, context)
        if ac is not None:
            res, final = ac
            if final:
                if res or not self._no_solver:
                    self._equal_memo[key] = (res, a, b, context)
                return res
        elif (z3.is_app(a) and z3.is_app(b) and a.num_args() > 0 and a.num_args() == b.num_args()
                and a.decl().eq(b.decl())):
            xs, ys = a.children(), b.children()
            orders = [ys]
            pair = _commutative_pair(a)
            if pair is not None:
                # try the pairing of the interchangeable arguments that looks most alike first
                i, j = pair
                swapped = list(ys)
                swapped[i], swapped[j] = ys[j], ys[i]
                straight_score = _similarity(xs[i], ys[i]) + _similarity(xs[j], ys[j])
                swapped_score = _similarity(xs[i], ys[j]) + _similarity(xs[j], ys[i])
                orders = [swapped, ys] if swapped_score > straight_score else [ys, swapped]
                if min(straight_score, swapped_score) == 0:
                    orders = orders[:1]
            if len(orders) > 1 and self.lemmas and not self._no_solver:
                # a pairing that identity and the lemmas show equal, before any solver call
                # spends the budget on the other (a rewritten operand looks unlike its original)
                self._no_solver = True
                try:
                    res = any(all(self.equal(x, y, context) for x, y in zip(xs, o)) for o in orders)
                finally:
                    self._no_solver = False
            res = res or any(all(self.equal(x, y, context) for x, y in zip(xs, o)) for o in orders)
        if not res:
            res = self._prove_pair(a, b, context)
        if res or not self._no_solver:  # "not shown without a solver" is no verdict
            self._equal_memo[key] = (res, a, b, context)  # keep the terms alive: their ids key the memo
        return res

    def _ac_equal(self, a: z3.ExprRef, b: z3.ExprRef, context: z3.BoolRef) -> tuple[bool, bool] | None:
        """Equality of two chains of one associative-commutative operator (canonical terms,
        :mod:`.validate_canon`), as ``(shown, final)``; None when ``a`` and ``b`` are not such
        chains. The operands the chains share are cancelled first: for ``+`` and ``^`` (groups)
        the chains are equal exactly when what is left is, so that verdict is final; for the others
        the leftovers are paired up (most alike first) and shown equal pairwise — sufficient, not
        necessary, so a failure is not final (the caller then proves the whole pair)."""
        from .validate_canon import ac_operands, is_group, rebuild

        pa, pb = ac_operands(a), ac_operands(b)
        if pa is None or pb is None or pa[0] != pb[0] or not a.sort().eq(b.sort()):
            return None
        kind, xs, ys = pa[0], pa[1], pb[1]
        left = {}
        for y in ys:
            left.setdefault(y.get_id(), []).append(y)
        ra = []
        for x in xs:
            same = left.get(x.get_id())
            if same:
                same.pop()
            else:
                ra.append(x)
        rb = [y for ids in left.values() for y in ids]
        if is_group(kind) and len(ra) < len(xs):
            ca, cb = rebuild(kind, ra, a.sort()), rebuild(kind, rb, a.sort())
            return self.equal(ca, cb, context), True
        if len(ra) != len(rb) or len(ra) > 8:
            return False, False
        pairs = []
        rest = list(rb)
        for x in ra:
            best = max(range(len(rest)), key=lambda i: _similarity(x, rest[i]))
            pairs.append((x, rest.pop(best)))
        return all(self.equal(x, y, context) for x, y in pairs), False

    def _by_lemma(self, a: z3.ExprRef, b: z3.ExprRef, context: z3.BoolRef) -> bool:
        """Whether a proved rule says ``a == b``: one side matches ``a``, the other ``b``, and the
        terms bound to each variable on both are equal (:meth:`equal`; no solver call when they
        are the same term). A rule holds for every value of its variables, so those bound on one
        side only do not matter."""
        from .validate_lemmas import Lemmas, match, matches

        lemmas = self.lemmas.ready() if self._no_solver and isinstance(self.lemmas, Lemmas) else self.lemmas
        for lm in lemmas:
            ids = frozenset(v.get_id() for v in lm.variables)
            for p, q in ((lm.lhs, lm.rhs), (lm.rhs, lm.lhs)):
                for n, ba in enumerate(matches(p, a, ids, {})):
                    # first with each variable bound to the same term on both sides: canonical
                    # forms order commutative operands by hash, so the pairing of ``b``'s operands
                    # that agrees with ``a``'s bindings need not be the first that matches
                    seeded = dict(ba)
                    if match(q, b, ids, seeded) and self._guards_hold(lm, seeded, context):
                        self._hit(lm)
                        return True
                    bb: dict[int, z3.ExprRef] = {}
                    if match(q, b, ids, bb) and self._guards_hold(lm, {**bb, **ba}, context) and \
                            self._bindings_equal(ba, bb, context, solver=n == 0):
                        self._hit(lm)
                        return True
        return False

    def _bindings_equal(self, ba: dict[int, z3.ExprRef], bb: dict[int, z3.ExprRef], context: z3.BoolRef,
                        solver: bool) -> bool:
        """Whether the variables both matches bind are bound to equal terms; with ``solver=False``
        (a further pairing of commutative operands) by identity and lemmas only, so trying
        pairings never costs a solver call."""
        keys = ba.keys() & bb.keys()
        if solver or self._no_solver:
            return all(self.equal(ba[k], bb[k], context) for k in keys)
        self._no_solver = True
        try:
            return all(self.equal(ba[k], bb[k], context) for k in keys)
        finally:
            self._no_solver = False

    def _guards_hold(self, lm: Any, binds: dict[int, z3.ExprRef], context: z3.BoolRef) -> bool:
        """Whether the guards of lemma ``lm`` hold at the instance ``binds`` on every lane of
        ``context`` under the facts (:mod:`.validate_guards`; an unguarded lemma: True). The
        bindings of variables shared by both sides were shown equal, so either side's serve."""
        if not lm.guards:
            return True
        from .validate_guards import Bounds, guards_hold

        n = len(self.facts)  # facts added since (program_id ranges) count too
        key = (context.get_id(), n)
        bounds = self._bounds.get(key)
        if bounds is None or bounds[0] is not context:
            if self._fact_bounds is None or self._fact_bounds[0] != n:
                self._fact_bounds = (n, Bounds(self.facts.values()))
            bounds = self._bounds[key] = (context, self._fact_bounds[1].extended([context]))
        return guards_hold(lm, binds, bounds[1])

    def _hit(self, lm: Any) -> None:
        from .validate_guards import STATIC_GUARDS

        self.lemma_hits += 1
        if any(g.head not in STATIC_GUARDS for g in lm.guards):  # range guards were re-established
            self.guarded_hits += 1

    def _prove_pair(self, a: z3.ExprRef, b: z3.ExprRef, context: z3.BoolRef) -> bool:
        if self.lemmas and self._by_lemma(a, b, context):
            return True
        if self._no_solver:
            return False
        sa, sb = self.simplified(a, mul2concat=True), self.simplified(b, mul2concat=True)
        if sa.eq(sb):
            return True
        context = self.simplified(context)
        ga, gb = _generalize(sa, sb)
        if ga is not None:
            gkey = (ga.sexpr(), gb.sexpr(), context.sexpr(), self.facts_text(), self.mode)
            cached = _PAIR_CACHE.get(gkey)
            if cached is not None and not self.affordable(cached[1], self.pair_timeout_ms):
                cached = None  # a fresh check under this budget would not have finished: solve again
            if cached is None:
                before = dict(self.by_strategy)
                r, _ = self.solve(z3.And(context, ga != gb), self.pair_timeout_ms)
                hit = r == z3.unsat
                if r != z3.unknown:
                    if len(_PAIR_CACHE) > 50_000:
                        _PAIR_CACHE.clear()
                    spent = [(k, n - before.get(k, 0)) for k, n in self.by_strategy.items() if n != before.get(k, 0)]
                    _PAIR_CACHE[gkey] = (hit, tuple(spent))
            else:
                # charge what the proof cost when it was made: the unit count of a validation
                # must not depend on what the process validated before
                hit, spent = cached
                for k, n in spent:
                    self.charge(k, n)
            if hit:
                return True
        r, _ = self.solve(z3.And(context, sa != sb), self.pair_timeout_ms)
        return r == z3.unsat


#: generalized pair proofs by text (with the facts and mode): (proved?, units spent per strategy)
_PAIR_CACHE: dict[tuple[str, ...], tuple[bool, tuple[tuple[str, int], ...]]] = {}


def _similarity(x: z3.ExprRef, y: z3.ExprRef, depth: int = 2) -> int:
    """How alike two terms look: 1000 when identical, else matching heads (recursively to
    ``depth`` levels) score points; 0 when the heads differ."""
    if x.eq(y):
        return 1000
    if not (z3.is_app(x) and z3.is_app(y)) or not x.decl().eq(y.decl()) or x.num_args() != y.num_args():
        return 0
    score = 10
    if depth > 0:
        score += sum(_similarity(a, b, depth - 1) for a, b in zip(x.children(), y.children()))
    return score


def _subterm_ids(e: z3.ExprRef) -> set[int]:
    seen: set[int] = set()
    stack = [e]
    while stack:
        x = stack.pop()
        i = x.get_id()
        if i in seen:
            continue
        seen.add(i)
        if z3.is_app(x):
            stack.extend(x.children())
    return seen


def _generalize(a: z3.ExprRef, b: z3.ExprRef) -> tuple[z3.ExprRef | None, z3.ExprRef | None]:
    """Replace the maximal compound subterms shared by ``a`` and ``b`` with fresh variables
    (named in discovery order, so equal shapes give equal text); None when nothing is shared."""
    shared = _subterm_ids(a) & _subterm_ids(b)
    found: dict[int, z3.ExprRef] = {}
    for root in (a, b):
        stack = [root]
        seen: set[int] = set()
        while stack:
            x = stack.pop()
            i = x.get_id()
            if i in seen:
                continue
            seen.add(i)
            if i in shared and z3.is_app(x) and x.num_args() > 0 and not _is_value(x):
                found.setdefault(i, x)
                continue
            if z3.is_app(x):
                stack.extend(reversed(x.children()))
    if not found:
        return None, None
    pairs = [(t, z3.Const(f"g{n}", t.sort())) for n, t in enumerate(found.values())]
    return z3.substitute(a, *pairs), z3.substitute(b, *pairs)


_COMMUTATIVE_KINDS = frozenset({
    z3.Z3_OP_BADD, z3.Z3_OP_BMUL, z3.Z3_OP_BAND, z3.Z3_OP_BOR, z3.Z3_OP_BXOR, z3.Z3_OP_AND, z3.Z3_OP_OR,
    z3.Z3_OP_XOR, z3.Z3_OP_EQ, z3.Z3_OP_FPA_ADD, z3.Z3_OP_FPA_MUL, z3.Z3_OP_FPA_EQ, z3.Z3_OP_ADD, z3.Z3_OP_MUL,
})


def _commutative_pair(x: z3.ExprRef) -> tuple[int, int] | None:
    """Indices of the two interchangeable arguments of a commutative z3 operator (FP add/mul
    take the rounding mode first), or None."""
    if x.decl().kind() not in _COMMUTATIVE_KINDS:
        return None
    n = x.num_args()
    return (n - 2, n - 1) if n in (2, 3) else None


def _is_value(x: z3.ExprRef) -> bool:
    return z3.is_bv_value(x) or z3.is_fp_value(x) or z3.is_true(x) or z3.is_false(x) or z3.is_rational_value(x)
