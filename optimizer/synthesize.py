"""``eggpu rules synthesize``: rewrite rules written by the machine (Ruler/Enumo style).

Pipeline (each stage bounded by one overall time limit; progress lines go to ``progress``):

1. **Enumerate** terms up to ``max_size`` nodes per dtype over the op table, fingerprint them on
   sample inputs with the reference semantics and group them by fingerprint
   (:mod:`.synth_terms`).
2. **Candidates**: in each fingerprint class, every member that costs more than the class's
   cheapest member (by the optimizer's cost model, :mod:`.cost`) gives ``member => cheapest``.
   Dropped before proving: renamings (variables not in first-occurrence order), right-hand sides
   with a variable the left-hand side lacks, or with a constant when the left-hand side has none
   (a block constant ``(Splat t s (Const t c))`` needs the shape ``s`` bound on the left), pairs
   the shipped rules already state (the candidate is an instance of a shipped rule, both sides
   under one substitution, family guards checked), and pairs derivable from kept ones (the
   left-hand side, or one of its subterms, is an instance of a kept rule's left-hand side).
   Candidates must save at least :data:`MIN_GAIN` and are tried smallest first, bigger cost gain first.
3. **Prove** each candidate with the rule verifier (:func:`.rule_verifier.verify_rule`) at its
   dtype: only a full proof counts (``proved``; never reduced width or sampling); refuted and
   unknown candidates are dropped and counted. A workload candidate's integer constants are
   first generalized into guarded pattern variables (:mod:`.synth_generalize`); the general rule
   is kept when z3 proves it, else the concrete one is tried.
4. **Write** the kept rules as an ``.egg`` file (:func:`egg_text`): one named ``rewrite`` per rule
   in ruleset ``exact``, each with a provenance comment (synthesizer version, dtype, lhs size,
   costs, proof strategy and z3 units). :func:`eggpu.optimizer.rules_loader.load_rule_files`
   loads it back.

Rules are emitted per dtype, at concrete dtypes (``(I32)``): the proof is exactly the dtype the
rule names. Constants are block constants (``Splat`` of ``Const``/``ConstF``), the form kernels
contain. When the time limit ends a stage early the result says so (``partial``, ``stop_reason``)
and holds every rule proved so far.
"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from eggpu.ir import DType, Function
from eggpu.ir.errors import RuleError

from .rules_loader import Atom, Rule, SList, Sx, parse_rules
from .synth_terms import (
    DEFAULT_SAMPLES,
    VALUE_VARS,
    Enumeration,
    Term,
    canonical_names,
    enumerate_terms,
    render,
)

#: written into every provenance comment; bump when what a rule means or how it is found changes
SYNTH_VERSION = "2"
#: the largest ``max_size`` accepted (size 7 alone is tens of millions of terms)
MAX_SIZE_LIMIT = 7
#: z3 budget per candidate, in idle-machine milliseconds (z3 resource units; :mod:`.rule_budget`)
DEFAULT_PROOF_MS = 1000
#: the least cost a rule must save (scalar-add units): dropping only a constant (0.06) is no win
MIN_GAIN = 0.5
#: wall-clock seconds one candidate's proof may take before it is stopped (and counted unknown)
CANDIDATE_CAP_S = 4.0
#: workload candidates (left-hand sides from kernels) get this many times the proof budget and cap:
#: ``0.5 * (1.0 + x) => fma(x, 0.5, 0.5)`` at f32 takes 13 M z3 units (2.7 idle seconds)
WORKLOAD_BOOST = 15
#: generalized workload candidates (constants as guarded variables) get this many times the
#: budget and cap: ``(x // c) % d => (x >> log2 c) & (d - 1)`` over powers of two takes ~30 s
GENERAL_BOOST = 40
#: share of the time limit the enumeration may use before candidates are proved
ENUM_SHARE = 0.35
#: share of the time limit the targeted searches of workload terms may use after it
TARGET_SHARE = 0.3


@dataclass
class SynthRule:
    """One proved rule: its name, dtype, the two sides, rule text and how it was proved."""

    name: str
    dtype: DType
    lhs: Term
    rhs: Term
    text: str
    strategy: str
    units: int
    verdict: dict[str, Any] = field(default_factory=dict, repr=False)  # the verifier's JSON
    workload: bool = False  # the left-hand side came from a workload kernel
    nonneg: tuple[str, ...] = ()  # variables guarded ``(>= (LowerBound v) 0)``
    general: str = ""  # constants generalized into guarded variables (:mod:`.synth_generalize`)
    shares: str = ""  # kernel terms the right-hand side reuses (:func:`.synth_workload.shared_terms`)

    def provenance(self) -> str:
        guard = f" | guard {', '.join(f'{v} >= 0' for v in self.nonneg)}" if self.nonneg else ""
        guard += f" | generalized: {self.general}" if self.general else ""
        guard += f" | wins beside {self.shares} (computed anyway)" if self.shares else ""
        return (f";; eggpu rules synthesize v{SYNTH_VERSION} | dtype {self.dtype} | lhs size {self.lhs.size} | "
                f"cost {self.lhs.cost:.2f} -> {self.rhs.cost:.2f} | {'workload' if self.workload else 'enumerated'}"
                f"{guard} | proved {self.dtype} by {self.strategy} "
                f"({self.units} units)\n;;   {self.lhs}  =>  {self.rhs}")


@dataclass
class SynthesisResult:
    """Everything a run produced: the rules and counts per stage, and whether it was cut short."""

    rules: list[SynthRule] = field(default_factory=list)
    enumerations: list[Enumeration] = field(default_factory=list)
    candidates: int = 0
    tried: int = 0
    refuted: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)
    skipped_shipped: list[str] = field(default_factory=list)
    skipped_derivable: int = 0
    skipped_inexpressible: int = 0
    workload_terms: int = 0
    workload_candidates: int = 0
    targeted_candidates: int = 0  # of workload_candidates: found by a targeted search
    generalized: int = 0  # workload candidates kept as a generalized rule (constants as variables)
    shares: dict[str, str] = field(default_factory=dict)  # "lhs => rhs" -> the kernel terms its rhs reuses
    partial: bool = False
    stop_reason: str = "done"
    seconds: float = 0.0

    def summary(self) -> str:
        terms = sum(e.terms for e in self.enumerations)
        return (f"{len(self.rules)} rules proved; {terms} terms enumerated, {self.candidates} candidates, "
                f"{self.tried} tried, {len(self.refuted)} refuted, {len(self.unknown)} unknown, "
                f"{len(self.skipped_shipped)} already shipped, {self.skipped_derivable} derivable, "
                f"{self.skipped_inexpressible} not expressible"
                + (f", {self.workload_candidates} of {self.workload_terms} workload terms with a cheaper equivalent"
                   f" ({self.targeted_candidates} by a targeted search, {self.generalized} kept generalized)"
                   if self.workload_terms else "")
                + f"; {self.seconds:.1f}s"
                + (f" (partial: {self.stop_reason})" if self.partial else ""))


# ------------------------------------------------------------------ rendering


def _const(t: Term) -> str:
    from .schema import DTYPE_CONSTRUCTORS

    d = f"({DTYPE_CONSTRUCTORS[t.dtype]})"
    if t.dtype.is_float:
        return f"(Splat {d} s (ConstF {d} {float(t.value)!r}))"
    v = int(t.value)
    if v >= 1 << 63:  # the schema's i64: unsigned values >= 2**63 wrap to two's complement
        v -= 1 << 64
    return f"(Splat {d} s (Const {d} {v}))"


def rule_text(name: str, lhs: Term, rhs: Term, nonneg: Sequence[str] = ()) -> str:
    """The rewrite command ``lhs => rhs`` named ``name`` (ruleset ``exact``), guarded
    ``(>= (LowerBound v) 0)`` for each variable ``v`` of ``nonneg``."""
    when = f" :when ({' '.join(f'(>= (LowerBound {v}) 0)' for v in nonneg)})" if nonneg else ""
    return f'(rewrite {render(lhs, _const)} {render(rhs, _const)}{when} :name "{name}")'


def rule_name(dtype: DType, lhs: Term, rhs: Term, nonneg: Sequence[str] = ()) -> str:
    """A stable, unique name: ``syn-<dtype>-<lhs ops>-<8 hex digits of the two sides and guards>``."""
    key = f"{render(lhs, _const)} {render(rhs, _const)}" + (f" nonneg {' '.join(nonneg)}" if nonneg else "")
    digest = hashlib.sha256(key.encode()).hexdigest()[:8]
    ops = "-".join(lhs.ops()[:3]) or "leaf"
    return f"syn-{dtype}-{ops}-{digest}"


def egg_text(result: SynthesisResult, command: str = "") -> str:
    """The ``.egg`` file of ``result``'s rules, with a header and one provenance comment per rule."""
    head = [f";; Rules written by eggpu rules synthesize v{SYNTH_VERSION} (optimizer/synthesize.py).",
            ";; Each was enumerated, fingerprinted with the op table's reference semantics and proved",
            ";; by z3 at the dtype it names; load it with eggpu.compile(..., rules=[this file]).",
            f";; {result.summary()}"]
    if command:
        head.append(f";; command: {command}")
    body = [f"{r.provenance()}\n{r.text}" for r in result.rules]
    return "\n".join(head) + "\n\n" + "\n".join(body) + ("\n" if body else "")


# ------------------------------------------------------------------ matching (instances)


def _commutative_heads() -> frozenset[str]:
    from eggpu.ir import OPS
    from eggpu.ir.ops import COMMUTATIVE

    from .schema import CONSTRUCTORS

    return frozenset(c.name for c in CONSTRUCTORS.values() if c.op and c.operands == 2 and OPS[c.op].has(COMMUTATIVE))


def _match(pat: Sx, node: Sx, pvars: set[str], env: dict[str, Sx]) -> bool:
    """Whether ``node`` is an instance of ``pat`` (pattern variables ``pvars``), extending ``env``
    (left unchanged on failure). Operands of commutative ops match in either order."""
    if isinstance(pat, Atom):
        if pat.text in pvars:
            if pat.text in env:
                return str(env[pat.text]) == str(node)
            env[pat.text] = node
            return True
        return isinstance(node, Atom) and node.text == pat.text
    if not isinstance(node, SList) or len(node.items) != len(pat.items):
        return False
    orders = [node.items]
    if pat.head in _COMMUTATIVE and node.head == pat.head:
        orders.append(node.items[:-2] + (node.items[-1], node.items[-2]))
    for items in orders:
        trial = dict(env)
        if all(_match(p, n, pvars, trial) for p, n in zip(pat.items, items)):
            env.update(trial)
            return True
    return False


_COMMUTATIVE = _commutative_heads()


def _family_guards_ok(rule: Rule, env: dict[str, Sx]) -> bool:
    """The rule's family-relation guards hold for the dtypes ``env`` binds (others are ignored)."""
    from .schema import CONSTRUCTOR_DTYPES, FAMILY_RELATIONS

    for g in rule.guards:
        if isinstance(g, SList) and g.head in FAMILY_RELATIONS and len(g.items) == 2:
            a = g.items[1]
            bound = env.get(a.text) if isinstance(a, Atom) else a
            if isinstance(bound, SList) and bound.head in CONSTRUCTOR_DTYPES:
                if not FAMILY_RELATIONS[g.head](CONSTRUCTOR_DTYPES[bound.head]):
                    return False
    return True


def states(rule: Rule, cand: Rule) -> bool:
    """Whether ``rule`` (a shipped rewrite) already states ``cand``: both sides are instances under
    one substitution and the family guards hold (other guards are assumed to hold: a candidate
    that only a guarded shipped rule covers is skipped, not re-proved)."""
    if rule.lhs is None or rule.rhs is None or rule.fast_math:
        return False
    pvars = set(rule.var_sorts)
    pairs = [(rule.lhs, rule.rhs)] + ([(rule.rhs, rule.lhs)] if rule.kind == "birewrite" else [])
    for lhs, rhs in pairs:
        env: dict[str, Sx] = {}
        if _match(lhs, cand.lhs, pvars, env) and _match(rhs, cand.rhs, pvars, env) and _family_guards_ok(rule, env):
            return True
    return False


def _subterms(node: Sx) -> Iterable[Sx]:
    yield node
    if isinstance(node, SList):
        for i in node.items[1:]:
            yield from _subterms(i)


def derivable(kept: Sequence[Rule], cand: Rule) -> bool:
    """Whether the candidate's left-hand side, or one of its subterms, is an instance of a kept
    rule's left-hand side (the e-graph rewrites it with that rule first)."""
    subs = [s for s in _subterms(cand.lhs) if isinstance(s, SList)]
    for k in kept:
        pv = set(k.var_sorts)
        if any(_match(k.lhs, s, pv, {}) for s in subs):
            return True
    return False


# ------------------------------------------------------------------ the pipeline


def _candidates(enum: Enumeration, res: SynthesisResult) -> list[tuple[Term, Term]]:
    """``member => cheapest`` pairs of every class (see the module docstring), best first."""
    out = []
    for cl in enum.classes:
        if len(cl.members) < 2:
            continue
        best = cl.best
        bvars = set(best.variables())
        for t in cl.members:
            if t is best or t.cost < best.cost + MIN_GAIN or t.op in ("var", "const"):
                continue
            res.candidates += 1
            if not canonical_names(t) or not bvars <= set(t.variables()) or (best.has_const() and not t.has_const()):
                res.skipped_inexpressible += 1
                continue
            out.append((t, best))
    return out


def synthesize(
    dtypes: Sequence[DType],
    *,
    max_size: int = 5,
    time_limit: float = 600.0,
    n_vars: int = 2,
    proof_ms: int = DEFAULT_PROOF_MS,
    target: str = "sm_90",
    skip_shipped: bool = True,
    seed: int = 0,
    n_samples: int = DEFAULT_SAMPLES,
    progress: Callable[[str], None] | None = None,
    max_rules: int | None = None,
    candidate_cap_s: float = CANDIDATE_CAP_S,
    workload: Sequence[Function] = (),
    generalize: bool = True,
) -> SynthesisResult:
    """Run the synthesizer (module docstring) for ``dtypes`` and return what it proved.

    ``time_limit`` seconds bound the whole run: enumeration stops at :data:`ENUM_SHARE` of it and
    proving at the end of it, either setting ``partial``. ``max_rules`` stops after that many kept
    rules (also ``partial``). ``proof_ms`` is the z3 budget per candidate (deterministic units);
    ``n_samples`` the sample inputs per variable (fewer samples: more false candidates for z3 to
    refute, never an unsound rule). ``workload``: IR functions whose own subterms are tried as
    left-hand sides first (:mod:`.synth_workload`); ``generalize``: their integer constants are
    first generalized into guarded variables (:mod:`.synth_generalize`)."""
    from .cost import CostModel

    if not 1 <= max_size <= MAX_SIZE_LIMIT:
        raise RuleError(f"rules synthesize: max size must be between 1 and {MAX_SIZE_LIMIT}, got {max_size}")
    if not (time_limit > 0 and math.isfinite(time_limit)):
        raise RuleError(f"rules synthesize: time limit must be a positive number of seconds, got {time_limit}")
    say = progress or (lambda _m: None)
    t0 = time.perf_counter()
    end = t0 + time_limit
    res = SynthesisResult()
    cm = CostModel.for_target(target)
    enum_end = t0 + time_limit * ENUM_SHARE
    pairs: list[tuple[DType, Term, Term, tuple[str, ...]]] = []
    first: list[tuple[DType, Term, Term, tuple[str, ...]]] = []  # workload candidates: tried before the others
    for i, dt in enumerate(dtypes):
        share = t0 + (enum_end - t0) * (i + 1) / len(dtypes)
        e = enumerate_terms(dt, max_size=max_size, lane_cost=cm.lane_cost, const_cost=cm.const_cost + cm.shape_lane,
                            n_vars=n_vars, n_samples=n_samples, seed=seed, deadline=share, progress=say)
        res.enumerations.append(e)
        if e.partial:
            res.partial, res.stop_reason = True, f"enumeration of {dt}: {e.stop_reason}"
        pairs += [(dt, lhs, rhs, ()) for lhs, rhs in _candidates(e, res)]
        if workload:
            first += _workload_candidates(workload, dt, e, cm, res, say, n_samples, seed,
                                          t0 + time_limit * (ENUM_SHARE + TARGET_SHARE * (i + 1) / len(dtypes)))
    pairs.sort(key=lambda p: (p[1].size, -(p[1].cost - p[2].cost), p[0].name))
    first.sort(key=lambda p: (-(p[1].cost - p[2].cost), p[1].size, p[0].name))  # the biggest saving first
    pairs = first + pairs
    say(f"{len(pairs)} candidates to prove ({res.candidates} pairs, {res.skipped_inexpressible} not expressible)")
    shipped = _shipped_rules() if skip_shipped else []
    prover = _Prover(proof_ms)
    try:
        _prove_candidates(pairs, res, prover, shipped, end, max_rules, candidate_cap_s, say, len(first), generalize)
    finally:
        prover.close()
    res.seconds = time.perf_counter() - t0
    return res


def _workload_candidates(workload: Sequence[Function], dt: DType, e: Enumeration, cm: Any, res: SynthesisResult,
                         say: Callable[[str], None], n_samples: int, seed: int,
                         deadline: float) -> list[tuple[DType, Term, Term, tuple[str, ...]]]:
    """The candidates whose left-hand sides are workload terms of ``dt``: looked up in the shared
    enumeration ``e``, then a targeted search for the rest until ``deadline``
    (:mod:`.synth_workload`)."""
    from .synth_workload import shared_terms, targeted_candidates, workload_candidates, workload_terms

    const_cost = cm.const_cost + cm.shape_lane
    terms = workload_terms(workload, dt, len(VALUE_VARS), cm.lane_cost, const_cost)
    found = workload_candidates(terms, e, MIN_GAIN)
    done = {str(lhs) for lhs, _ in found}
    rest = [t for t in terms if str(t) not in done]
    shared = shared_terms(workload, dt, len(VALUE_VARS), cm.lane_cost, const_cost)
    targeted = targeted_candidates(rest, dt, cm.lane_cost, const_cost, MIN_GAIN, n_samples=n_samples, seed=seed,
                                   deadline=deadline, progress=say, shared=shared)
    for c in targeted:
        if c.shares:
            res.shares[f"{c.lhs} => {c.rhs}"] = ", ".join(map(str, c.shares))
    res.workload_terms += len(terms)
    res.workload_candidates += len(found) + len(targeted)
    res.targeted_candidates += len(targeted)
    say(f"{dt}: {len(terms)} workload terms, {len(found) + len(targeted)} with a cheaper equivalent "
        f"({len(targeted)} by a targeted search)")
    return [(dt, lhs, rhs, ()) for lhs, rhs in found] + [(dt, c.lhs, c.rhs, c.nonneg) for c in targeted]


def _prove_candidates(pairs: list[tuple[DType, Term, Term, tuple[str, ...]]], res: SynthesisResult, prover: _Prover,
                      shipped: list[Rule], end: float, max_rules: int | None, cap_s: float,
                      say: Callable[[str], None], n_first: int = 0, generalize_on: bool = True) -> None:
    """Stage 2-3 of the module docstring: filter, prove and keep, until ``end``. The first
    ``n_first`` pairs (workload candidates) get :data:`WORKLOAD_BOOST` times the budget and cap;
    with ``generalize_on`` their integer constants are first generalized into guarded variables
    (:mod:`.synth_generalize`) and the general rule is kept when z3 proves it."""
    from .rule_verdicts import PROVED, REFUTED, RuleVerdict

    kept: list[Rule] = []
    seen: set[str] = set()
    general_tried: dict[str, bool] = {}  # generalized rule body -> proved (each is proved once)
    for n, (dt, lhs, rhs, nonneg) in enumerate(pairs):
        if time.perf_counter() > end:
            res.partial, res.stop_reason = True, f"time limit reached after {res.tried} of {len(pairs)} candidates"
            break
        if max_rules is not None and len(res.rules) >= max_rules:
            res.partial, res.stop_reason = True, f"rule limit ({max_rules}) reached"
            break
        name = rule_name(dt, lhs, rhs, nonneg)
        text = rule_text(name, lhs, rhs, nonneg)
        body = text.rsplit(" :name", 1)[0]
        if body in seen:  # the same bool-only rule from another dtype's run
            continue
        seen.add(body)
        cand = parse_rules(text, "<synthesized>")[0][0]
        if any(states(r, cand) for r in shipped):
            res.skipped_shipped.append(f"{lhs} => {rhs}")
            continue
        if n >= n_first and derivable(kept, cand):  # a workload term's rule is wanted whole
            res.skipped_derivable += 1
            continue
        res.tried += 1
        boost = WORKLOAD_BOOST if n < n_first else 1  # few and valuable: a bigger budget
        general = ""
        d = None
        if n < n_first and generalize_on:
            g = _general_proof(dt, lhs, rhs, nonneg, prover, end, cap_s, general_tried, shipped)
            if g is not None and g[0] is None:  # the same generalization was kept (or shipped) already
                continue
            if g is not None:
                d, name, text, general = g
                cand = parse_rules(text, "<synthesized>")[0][0]
        if d is None:
            left = end - time.perf_counter()
            d = prover.prove(text, min(cap_s * boost, max(left, 0.1)), prover.proof_ms * boost)
        if d is None:  # stopped at the wall-clock cap (or the time limit)
            res.unknown.append(f"{lhs} => {rhs} (stopped after {min(cap_s, max(left, 0.1)):.1f}s)")
            continue
        v = RuleVerdict.from_json(d)
        if v.results and all(x.status == PROVED for x in v.results):
            r0 = v.results[0]
            kept.append(cand)
            res.rules.append(SynthRule(name, dt, lhs, rhs, text, r0.strategy or "z3",
                                       sum(int(x.rlimit or 0) for x in v.results), d, n < n_first, nonneg, general,
                                       res.shares.get(f"{lhs} => {rhs}", "")))
            res.generalized += bool(general)
            say(f"[{n + 1}/{len(pairs)}] proved {name}: {lhs} => {rhs}")
        elif any(x.status == REFUTED for x in v.results):
            res.refuted.append(f"{lhs} => {rhs}")
        else:
            res.unknown.append(f"{lhs} => {rhs}")
        if res.tried % 100 == 0:
            say(f"[{n + 1}/{len(pairs)}] {res.tried} tried: {len(res.rules)} proved, {len(res.refuted)} refuted, "
                f"{len(res.unknown)} unknown")


def _general_proof(dt: DType, lhs: Term, rhs: Term, nonneg: tuple[str, ...], prover: _Prover, end: float,
                   cap_s: float, tried: dict[str, bool], shipped: list[Rule]) -> tuple[Any, str, str, str] | None:
    """Generalize a workload candidate (:func:`.synth_generalize.generalize`) and prove the general
    rule with :data:`GENERAL_BOOST` times the budget and cap: ``(verdict JSON, name, text, about)``
    when proved; ``(None, ...)`` when that general rule was proved before (``tried``: body ->
    proved) or a shipped rule states it; None when there is none or z3 did not prove it (the
    concrete rule is tried then)."""
    from .rule_verdicts import PROVED, RuleVerdict
    from .synth_generalize import generalize

    g = generalize(lhs, rhs, dt, nonneg)
    if g is None:
        return None
    body = g.text.rsplit(" :name", 1)[0]
    if body in tried:
        return (None, g.name, g.text, g.about) if tried[body] else None
    tried[body] = False
    if any(states(r, parse_rules(g.text, "<synthesized>")[0][0]) for r in shipped):
        tried[body] = True
        return (None, g.name, g.text, g.about)
    left = end - time.perf_counter()
    d = prover.prove(g.text, min(cap_s * GENERAL_BOOST, max(left, 0.1)), prover.proof_ms * GENERAL_BOOST)
    if d is None:
        return None
    v = RuleVerdict.from_json(d)
    if v.results and all(x.status == PROVED for x in v.results):
        tried[body] = True
        return (d, g.name, g.text, g.about)
    return None


def _prove_job(conn: Any, proof_ms: int) -> None:
    """The prover process: rule text in, verdict JSON out, until None."""
    from .rule_verifier import verify_rule

    while True:
        job = conn.recv()
        if job is None:
            return
        text, ms = job
        conn.send(verify_rule(parse_rules(text, "<synthesized>")[0][0], timeout_ms=ms or proof_ms).to_json())


class _Prover:
    """Proves candidates in a forked child process, so one candidate can be stopped at a wall-clock
    cap: the verifier's budgets are z3 resource units, but a query can run for minutes on a loaded
    machine before its units run out, and the run must end at its time limit. A candidate stopped
    that way counts as unknown; the child is killed and a fresh one started. Where fork is not
    available the candidates are proved in this process (no cap)."""

    def __init__(self, proof_ms: int):
        import multiprocessing as mp

        self.proof_ms = proof_ms
        self.ctx = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else None
        self.proc: Any = None
        self.conn: Any = None

    def _start(self) -> None:
        self.conn, child = self.ctx.Pipe()
        self.proc = self.ctx.Process(target=_prove_job, args=(child, self.proof_ms), daemon=True)
        self.proc.start()
        child.close()

    def prove(self, text: str, cap_s: float, proof_ms: int | None = None) -> dict[str, Any] | None:
        """The verdict JSON of the rule ``text`` (z3 budget ``proof_ms``, default the prover's), or
        None when it took more than ``cap_s`` seconds."""
        if self.ctx is None:
            from .rule_verifier import verify_rule

            return verify_rule(parse_rules(text, "<synthesized>")[0][0], timeout_ms=proof_ms or self.proof_ms).to_json()
        if self.proc is None or not self.proc.is_alive():
            self._start()
        self.conn.send((text, proof_ms))
        try:
            if self.conn.poll(cap_s):
                return self.conn.recv()
        except EOFError:  # the child died (e.g. out of memory): a fresh one for the next candidate
            pass
        self.proc.kill()
        self.proc.join()
        self.proc = None
        return None

    def close(self) -> None:
        if self.proc is not None:
            try:
                self.conn.send(None)
            except OSError:
                pass
            self.proc.join(2)
            if self.proc.is_alive():
                self.proc.kill()
                self.proc.join()
            self.proc = None


def remember_proofs(result: SynthesisResult, rules: Iterable[Rule], cache: Any | None = None) -> int:
    """Store the verdicts of ``result``'s rules, as loaded back from the written file (``rules``),
    in the proof cache (default: the user's), so the first compile with the file does not prove
    them again. Returns how many were stored."""
    from .proof_cache import ProofCache
    from .rule_verifier import _cache_key

    by_name = {r.name: r for r in result.rules}
    entries = {_cache_key(r, 0): by_name[r.name].verdict for r in rules if r.name in by_name and by_name[r.name].verdict}
    if entries:
        (cache or ProofCache()).put_many(entries)
    return len(entries)


def _shipped_rules() -> list[Rule]:
    from .rules_loader import load_rules

    return [r for r in load_rules(shipped=True, env=False, validate_egglog=False).rules if r.lhs is not None]


__all__ = ["DEFAULT_PROOF_MS", "MAX_SIZE_LIMIT", "SYNTH_VERSION", "SynthRule", "SynthesisResult", "derivable", "egg_text",
           "remember_proofs", "rule_name", "rule_text", "states", "synthesize"]
