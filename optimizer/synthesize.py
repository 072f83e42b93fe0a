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
   unknown candidates are dropped and counted.
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

from eggpu.ir import DType
from eggpu.ir.errors import RuleError

from .rules_loader import Atom, Rule, SList, Sx, parse_rules
from .synth_terms import DEFAULT_SAMPLES, Enumeration, Term, canonical_names, enumerate_terms, render

#: written into every provenance comment; bump when what a rule means or how it is found changes
SYNTH_VERSION = "1"
#: the largest ``max_size`` accepted (size 7 alone is tens of millions of terms)
MAX_SIZE_LIMIT = 7
#: z3 budget per candidate, in idle-machine milliseconds (z3 resource units; :mod:`.rule_budget`)
DEFAULT_PROOF_MS = 1000
#: the least cost a rule must save (scalar-add units): dropping only a constant (0.06) is no win
MIN_GAIN = 0.5
#: share of the time limit the enumeration may use before candidates are proved
ENUM_SHARE = 0.35


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

    def provenance(self) -> str:
        return (f";; eggpu rules synthesize v{SYNTH_VERSION} | dtype {self.dtype} | lhs size {self.lhs.size} | "
                f"cost {self.lhs.cost:.2f} -> {self.rhs.cost:.2f} | proved {self.dtype} by {self.strategy} "
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
    partial: bool = False
    stop_reason: str = "done"
    seconds: float = 0.0

    def summary(self) -> str:
        terms = sum(e.terms for e in self.enumerations)
        return (f"{len(self.rules)} rules proved; {terms} terms enumerated, {self.candidates} candidates, "
                f"{self.tried} tried, {len(self.refuted)} refuted, {len(self.unknown)} unknown, "
                f"{len(self.skipped_shipped)} already shipped, {self.skipped_derivable} derivable, "
                f"{self.skipped_inexpressible} not expressible; {self.seconds:.1f}s"
                + (f" (partial: {self.stop_reason})" if self.partial else ""))


# ------------------------------------------------------------------ rendering


def _const(t: Term) -> str:
    from .schema import DTYPE_CONSTRUCTORS

    d = f"({DTYPE_CONSTRUCTORS[t.dtype]})"
    if t.dtype.is_float:
        return f"(Splat {d} s (ConstF {d} {float(t.value)!r}))"
    return f"(Splat {d} s (Const {d} {int(t.value)}))"


def rule_text(name: str, lhs: Term, rhs: Term) -> str:
    """The rewrite command ``lhs => rhs`` named ``name`` (ruleset ``exact``)."""
    return f'(rewrite {render(lhs, _const)} {render(rhs, _const)} :name "{name}")'


def rule_name(dtype: DType, lhs: Term, rhs: Term) -> str:
    """A stable, unique name: ``syn-<dtype>-<lhs ops>-<8 hex digits of the two sides>``."""
    digest = hashlib.sha256(f"{render(lhs, _const)} {render(rhs, _const)}".encode()).hexdigest()[:8]
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
) -> SynthesisResult:
    """Run the synthesizer (module docstring) for ``dtypes`` and return what it proved.

    ``time_limit`` seconds bound the whole run: enumeration stops at :data:`ENUM_SHARE` of it and
    proving at the end of it, either setting ``partial``. ``max_rules`` stops after that many kept
    rules (also ``partial``). ``proof_ms`` is the z3 budget per candidate (deterministic units);
    ``n_samples`` the sample inputs per variable (fewer samples: more false candidates for z3 to
    refute, never an unsound rule)."""
    from .cost import CostModel
    from .rule_verdicts import PROVED, REFUTED
    from .rule_verifier import verify_rule

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
    pairs: list[tuple[DType, Term, Term]] = []
    for i, dt in enumerate(dtypes):
        share = t0 + (enum_end - t0) * (i + 1) / len(dtypes)
        e = enumerate_terms(dt, max_size=max_size, lane_cost=cm.lane_cost, const_cost=cm.const_cost + cm.shape_lane,
                            n_vars=n_vars, n_samples=n_samples, seed=seed, deadline=share, progress=say)
        res.enumerations.append(e)
        if e.partial:
            res.partial, res.stop_reason = True, f"enumeration of {dt}: {e.stop_reason}"
        pairs += [(dt, lhs, rhs) for lhs, rhs in _candidates(e, res)]
    pairs.sort(key=lambda p: (p[1].size, -(p[1].cost - p[2].cost), p[0].name))
    say(f"{len(pairs)} candidates to prove ({res.candidates} pairs, {res.skipped_inexpressible} not expressible)")
    shipped = _shipped_rules() if skip_shipped else []
    kept: list[Rule] = []
    seen: set[str] = set()
    for n, (dt, lhs, rhs) in enumerate(pairs):
        if time.perf_counter() > end:
            res.partial, res.stop_reason = True, f"time limit reached after {res.tried} of {len(pairs)} candidates"
            break
        if max_rules is not None and len(res.rules) >= max_rules:
            res.partial, res.stop_reason = True, f"rule limit ({max_rules}) reached"
            break
        name = rule_name(dt, lhs, rhs)
        text = rule_text(name, lhs, rhs)
        body = text.rsplit(" :name", 1)[0]
        if body in seen:  # the same bool-only rule from another dtype's run
            continue
        seen.add(body)
        cand = parse_rules(text, "<synthesized>")[0][0]
        if any(states(r, cand) for r in shipped):
            res.skipped_shipped.append(f"{lhs} => {rhs}")
            continue
        if derivable(kept, cand):
            res.skipped_derivable += 1
            continue
        res.tried += 1
        v = verify_rule(cand, timeout_ms=proof_ms)
        if v.results and all(x.status == PROVED for x in v.results):
            r0 = v.results[0]
            kept.append(cand)
            res.rules.append(SynthRule(name, dt, lhs, rhs, text, r0.strategy or "z3",
                                       sum(int(x.rlimit or 0) for x in v.results)))
            say(f"[{n + 1}/{len(pairs)}] proved {name}: {lhs} => {rhs}")
        elif any(x.status == REFUTED for x in v.results):
            res.refuted.append(f"{lhs} => {rhs}")
        else:
            res.unknown.append(f"{lhs} => {rhs}")
    res.seconds = time.perf_counter() - t0
    return res


def _shipped_rules() -> list[Rule]:
    from .rules_loader import load_rules

    return [r for r in load_rules(shipped=True, env=False, validate_egglog=False).rules if r.lhs is not None]


__all__ = ["DEFAULT_PROOF_MS", "MAX_SIZE_LIMIT", "SYNTH_VERSION", "SynthRule", "SynthesisResult", "derivable", "egg_text",
           "rule_name", "rule_text", "states", "synthesize"]
