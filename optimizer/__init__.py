"""eggpu.optimizer — equality saturation over the tensor IR with z3-proved rules.

``optimize(fn)`` runs the whole pipeline on a copy of ``fn`` (the input is never mutated):

1. **encode** every region's pure dataflow as egglog terms (:mod:`.encode`);
2. **saturate** with the proved rules within :class:`Limits` (:mod:`.saturate`), reporting a
   :class:`StopReason` and per-rule hit counts;
3. **extract** the cheapest program under the target's :class:`CostModel` with DAG-aware,
   type-checked extraction (:mod:`.extract`, :mod:`.cost`);
4. **decode** it back to IR, effects and control flow in their original order (:mod:`.decode`);
5. **validate** the result against the input: without z3 when no solver call is needed
   (:mod:`.validate_terms`), else with z3 (:mod:`.validate`).

Rules: the shipped ``rules/*.egg``, then the files/directories in ``rules=``, then
``EGGPU_RULES_PATH``. Only rules the verifier proved for every dtype they can match are given to
egglog (``fast_math`` rules only with ``fast_math=True``); the others are listed in
``rules_rejected``. If anything after loading the rules fails — egglog, extraction, decoding,
or validation does not say ``valid`` — the result is the UNOPTIMIZED function (a copy) with
``fell_back=True`` and the reason: a wrong program is never returned. A program with FP8 values
(storage-only dtypes outside the e-graph schema, :func:`fp8_dtypes`) is returned unoptimized the
same way, the reason saying so. If the optimized program
is more expensive than the input, the input (a copy) is returned instead (``fell_back`` stays
False). With ``fast_math=True`` validation compares floats as real numbers, the semantics the
``fast_math`` rules are proved in (integers and addresses stay exact).

This package imports egglog and z3 lazily: ``import eggpu.optimizer`` is cheap.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from eggpu.ir import Function

from .cost import CostModel
from .saturate import Limits, StopReason

if TYPE_CHECKING:
    from .validate_result import Validation

__all__ = ["CostModel", "Limits", "OptimizeResult", "StopReason", "optimize", "prepare_rules"]

STAGES = ("encode", "saturate", "extract", "decode", "validate")


@dataclass
class OptimizeResult:
    """What :func:`optimize` produced and how.

    ``function`` is the new IR (a copy of the input on fallback); ``stop_reason`` why saturation
    stopped (None when it did not run); costs are :class:`CostModel` totals of the input and of
    ``function``; ``rule_hits`` maps rule names to their match counts as egglog reports them,
    summed over the kept iterations (a match found again in a later iteration counts again);
    ``egraph_nodes`` is the final number of ``Term`` e-nodes; ``times`` has seconds per stage
    (encode, saturate, extract, decode, validate); ``validation`` is the translation-validation
    result; ``rules_used`` are the names of the rules given to egglog, ``rules_rejected`` maps
    the others to their verdict (``refuted``, ``unknown``, or ``fast_math`` when proved but not
    enabled); ``fell_back``/``reason`` say whether and why the input was returned unoptimized
    (``reason`` alone, with ``fell_back`` False: extraction found only costlier programs);
    ``extraction`` names the extraction method(s) that won (``tree``, ``greedy-dag``);
    ``stop_detail`` says more about the stop where the reason alone does not (a rolled-back
    step, the isolated saturation process killed at its time or memory limit: see :mod:`.saturate`).
    ``rules_loaded`` is how many of ``rules_used`` were loaded into the e-graph (only the rules
    that can match this program: :mod:`.rule_subset`) and ``rules_loaded_why`` says why.
    """

    function: Function
    stop_reason: StopReason | None
    cost_before: float
    cost_after: float
    rule_hits: dict[str, int] = field(default_factory=dict)
    egraph_nodes: int = 0
    iterations: int = 0
    times: dict[str, float] = field(default_factory=dict)
    validation: Validation | None = None
    rules_used: list[str] = field(default_factory=list)
    rules_rejected: dict[str, str] = field(default_factory=dict)
    fell_back: bool = False
    reason: str = ""
    extraction: str = ""
    stop_detail: str = ""
    rules_loaded: int = 0
    rules_loaded_why: str = ""

    @property
    def improved(self) -> bool:
        return self.cost_after < self.cost_before

    def summary(self) -> str:
        from .report import format_result

        return format_result(self)


# ---------------------------------------------------------------------- rules and e-graphs


@dataclass
class PreparedRules:
    """Loaded and verified rules ready to run: the egglog program and the rulesets to run;
    ``loaded``/``chosen`` are the parsed rules and the usable ones (for :meth:`selection_for`)."""

    program: str
    rulesets: tuple[str, ...]
    used: list[str]
    rejected: dict[str, str]
    verdicts: dict[str, Any]
    loaded: Any = None
    chosen: tuple[Any, ...] = ()
    _subsets: dict[frozenset[str], Any] = field(default_factory=dict, repr=False)

    def selection_for(self, constructors: frozenset[str]) -> Any:
        """The :class:`~.rule_subset.Selection` of the rules that can match a program applying
        ``constructors`` (cached per constructor set)."""
        with _LOCK:
            hit = self._subsets.get(constructors)
        if hit is None:
            from .rule_subset import select_rules

            hit = select_rules(self.chosen, constructors)
            with _LOCK:
                self._subsets[constructors] = hit
                while len(self._subsets) > 4 * _CACHE_SIZE:
                    self._subsets.pop(next(iter(self._subsets)))
        return hit


# Thread safety: an egglog e-graph is bound to the thread that created it (using or even
# dropping it on another thread panics), so loaded e-graphs are kept per thread (_ENGINES) and
# threads saturate in parallel. z3's Python API shares one global context that is not
# thread-safe (and releases the GIL while it solves), so everything that runs z3 here (proving
# rules on a proof-cache miss, translation validation) holds _Z3_LOCK.
_LOCK = threading.RLock()  # guards _PREPARED, the rule selections and creating e-graphs
_Z3_LOCK = threading.RLock()
_Z3_DEPTH = [0]  # nesting of _z3_section in the thread holding _Z3_LOCK


@contextlib.contextmanager
def _z3_section() -> Iterator[None]:
    """Hold :data:`_Z3_LOCK` with Python's cyclic GC paused, and collect the young generation
    before releasing it.

    A z3 object frees its term (``Z3_dec_ref``, a ctypes call that releases the GIL) when it is
    deallocated — and a z3 object caught in a reference cycle is deallocated by the cyclic GC,
    in whatever thread happens to trigger a collection. Such a thread would touch z3's shared
    context while the lock holder is inside z3 (a segfault in ``Z3_mk_const`` was seen once in
    ``test_threads.py`` on Python 3.11). So no automatic collection runs while z3 works, and the
    cycles made meanwhile (all in generation 0: nothing is promoted while the GC is paused) are
    collected here, under the lock."""
    import gc

    with _Z3_LOCK:
        outer = _Z3_DEPTH[0] == 0
        was_enabled = outer and gc.isenabled()
        if was_enabled:
            gc.disable()
        _Z3_DEPTH[0] += 1
        try:
            yield
        finally:
            _Z3_DEPTH[0] -= 1
            if outer:
                gc.collect(0)
                if was_enabled:
                    gc.enable()
_CACHE_SIZE = 8  # rule sets kept per process, loaded e-graphs per thread; oldest dropped first
_PREPARED: dict[tuple, PreparedRules] = {}
_ENGINES = threading.local()


@dataclass
class _Engine:
    """A loaded e-graph of this thread: the schema plus the rules ``names`` of the rule set whose
    full program is ``family`` (a :attr:`PreparedRules.program`)."""

    egraph: Any
    family: str
    names: frozenset[str]


def _egraphs() -> dict[str, _Engine]:
    """This thread's loaded e-graphs by program text (created, used and dropped in this thread)."""
    cache = getattr(_ENGINES, "egraphs", None)
    if cache is None:
        cache = _ENGINES.egraphs = {}
    return cache


def _sources(rules: Sequence[str | os.PathLike] | None, shipped: bool,
             raw: Sequence[tuple[str, bytes]] | None = None) -> list[tuple[str, str]]:
    """(label, text) of the rule files: ``raw`` (already read) when given, else read now."""
    from eggpu.rules import read_rule_sources

    from .rules_loader import decode_rule_text

    if raw is None:
        raw = read_rule_sources(rules or [], shipped=shipped, env=shipped)
    return [(label, decode_rule_text(data, label)) for label, data in raw]


def prepare_rules(rules: Sequence[str | os.PathLike] | None = None, *, fast_math: bool = False,
                  shipped_rules: bool = True,
                  rule_sources: Sequence[tuple[str, bytes]] | None = None) -> PreparedRules:
    """Load (shipped + ``rules`` + ``EGGPU_RULES_PATH``; only ``rules`` when ``shipped_rules`` is
    False; or exactly ``rule_sources``, see :func:`optimize`), verify (proof cache) and select the
    rules :func:`optimize` gives egglog. Cached per rule text; raises RuleError on bad files."""
    sources = _sources(rules, shipped_rules, rule_sources)
    key = (tuple(sources), fast_math)
    with _LOCK:
        hit = _PREPARED.get(key)
        if hit is not None:
            return hit
    with _z3_section():  # one thread proves (z3 is not thread-safe); the others then find its result
        with _LOCK:
            hit = _PREPARED.get(key)
        return hit if hit is not None else _prepare(sources, key, fast_math)


def _prepare(sources: list[tuple[str, str]], key: tuple, fast_math: bool) -> PreparedRules:
    from .isolate import pin_egglog_threads
    from .rule_verifier import usable_rules, verify_rules
    from .rules_loader import load_sources

    pin_egglog_threads()  # before the loader's first e-graph: hot saturation forks (see .isolate)
    loaded = load_sources(sources)
    verdicts = verify_rules(loaded.rules, progress=_proof_progress())
    chosen = usable_rules(loaded.rules, verdicts, fast_math)
    chosen_names = {r.name for r in chosen}
    rejected: dict[str, str] = {}
    for r in loaded.rules:
        if r.name in chosen_names:
            continue
        v = verdicts.get(r.name)
        rejected[r.name] = "fast_math" if (v is not None and v.usable and r.fast_math) else (
            v.status if v is not None else "unknown")
    run = [rs for rs in loaded.rulesets if rs not in ("ranges", "fast_math")]
    if fast_math:
        run.append("fast_math")
    prepared = PreparedRules(loaded.program(chosen), tuple(run), [r.name for r in chosen], rejected, verdicts,
                             loaded, tuple(chosen))
    with _LOCK:
        _PREPARED[key] = prepared
        while len(_PREPARED) > _CACHE_SIZE:
            _PREPARED.pop(next(iter(_PREPARED)))
    return prepared


def _proof_progress():
    """A progress callback that reports on stderr only while rules are really being proved
    (a cold proof cache: tens of seconds), every 20 rules and at the end."""
    import sys

    proved = 0

    def report(done: int, total: int, verdict: Any) -> None:
        nonlocal proved
        if getattr(verdict, "cached", False):
            return
        proved += 1
        if proved == 1 or done % 20 == 0 or done == total:
            print(f"eggpu: proving rewrite rules with z3: {done}/{total} (proofs are cached for later runs)",
                  file=sys.stderr, flush=True)

    return report


def _engine(prepared: PreparedRules, rules: Sequence[Any] | None) -> tuple[str, _Engine]:
    """This thread's e-graph for running ``rules`` (a subset of ``prepared.chosen``; None: all),
    with its program text. Callers leave it at its base push level.

    Any loaded e-graph of the same rule set whose rules include ``rules`` serves (the extra rules
    cannot match, so the result is the same; the smallest one is used). Otherwise the first
    e-graph of a rule set in a thread holds just ``rules`` (a cold compile loads only what it
    needs) and the second one every rule of the set, which then serves every later program.
    """
    engines = _egraphs()
    everything = rules is None
    needed = frozenset(prepared.used) if everything else frozenset(r.name for r in rules)
    fits = [(len(e.names), p) for p, e in engines.items() if e.family == prepared.program and needed <= e.names]
    if fits:
        program = min(fits)[1]
        return program, engines[program]
    if everything or any(e.family == prepared.program for e in engines.values()):
        program, names = prepared.program, frozenset(prepared.used)
    else:
        program, names = prepared.loaded.program(rules), needed
    engine = _Engine(_load_egraph(program), prepared.program, names)
    engines[program] = engine
    while len(engines) > _CACHE_SIZE:
        engines.pop(next(iter(engines)))
    return program, engine


def _load_egraph(program: str) -> Any:
    """A new e-graph with the schema and ``program`` loaded."""
    from .egglog_bindings import bindings

    EGraph = bindings().EGraph

    from .isolate import pin_egglog_threads
    from .saturate import run_commands
    from .schema import schema_text

    with _LOCK:  # the first e-graph of the process decides egglog's thread pool
        pin_egglog_threads()
        eg = EGraph()
    run_commands(eg, schema_text() + program, "loading the schema and rules")
    return eg


def _loaded_why(sel: Any, loaded: int, usable: int) -> str:
    """Why the e-graph that ran held ``loaded`` of the ``usable`` rules (for reports)."""
    if sel is None:
        return f"all {usable} usable rules (rule subsetting is off)"
    why = sel.why(usable)
    if loaded > len(sel.rules):
        held = f"all {loaded}" if loaded == usable else str(loaded)
        why += (f"; the e-graph that ran holds {held} rules (a thread loads every rule once it needs a second "
                f"subset; the extra rules cannot match)")
    return why


# ---------------------------------------------------------------------- optimize


def optimize(fn: Function, *, rules: Sequence[str | os.PathLike] | None = None, limits: Limits | None = None,
             fast_math: bool = False, target: str = "sm_90", validate: bool = True,
             shipped_rules: bool = True, subset_rules: bool = True,
             rule_sources: Sequence[tuple[str, bytes]] | None = None) -> OptimizeResult:
    """Optimize ``fn`` (see the module docstring); never mutates ``fn``.

    ``rules``: extra rule files or directories; ``limits``: saturation bounds (default
    :class:`Limits`); ``fast_math``: also run the ``fast_math`` ruleset; ``target``: the cost
    model's target; ``shipped_rules=False`` uses only ``rules`` (no shipped rules, no
    ``EGGPU_RULES_PATH``: for testing rule files in isolation); ``validate=False`` skips
    translation validation (for tests of the other stages — the result is then NOT checked);
    ``subset_rules=False`` loads every usable rule instead of only those that can match ``fn``
    (the result is the same: for tests and measurements); ``rule_sources``: the rule files'
    contents as ``(label, bytes)`` pairs already read with :func:`eggpu.rules.read_rule_sources`,
    used instead of reading the files again (the compile pipeline passes the bytes its cache key
    hashed)."""
    from .decode import clone
    from .encode import encode

    limits = limits or Limits()
    model = CostModel.for_target(target)
    cost_before = model.function_cost(fn)
    prepared = prepare_rules(rules, fast_math=fast_math, shipped_rules=shipped_rules, rule_sources=rule_sources)
    times = {s: 0.0 for s in STAGES}
    result = OptimizeResult(fn, None, cost_before, cost_before, times=times, rules_used=list(prepared.used),
                            rules_rejected=dict(prepared.rejected))

    def fall_back(reason: str) -> OptimizeResult:
        result.function = clone(fn)
        result.cost_after = cost_before
        result.fell_back = True
        result.reason = reason
        return result

    from .schema import UNENCODED_ATTRS

    unencoded = sorted({f"{op.op} {a}" for op in fn.walk() for a in UNENCODED_ATTRS if op.attrs.get(a)})
    if unencoded:  # an attribute the e-graph would drop: leave the kernel as it is
        return fall_back(f"the kernel has {', '.join(unencoded)} (a conversion to a const pointer), which the "
                         f"e-graph schema does not encode")
    fp8 = fp8_dtypes(fn)
    if fp8:  # not an e-graph sort, and no rule is proved for them: leave such a kernel as it is
        return fall_back(f"the kernel has FP8 values ({', '.join(fp8)}), a storage-only dtype the e-graph does "
                         f"not hold: not optimized")
    try:
        with _timed(times, "encode"):
            enc = encode(fn)
        rep, budget = _saturate_stage(fn, enc, prepared, limits, subset_rules, result)
        new_fn = _extract_stage(enc, rep, budget, model, result)
    except Exception as e:  # any failure after the rules loaded: keep the input program
        return fall_back(f"{type(e).__name__}: {e}")

    cost_after = model.function_cost(new_fn)
    if cost_after > cost_before:  # DAG extraction is greedy: never hand back a costlier program
        result.reason = f"the extracted program is costlier than the input ({cost_after:.2f} > {cost_before:.2f}): kept the input"
        new_fn = clone(fn)
        cost_after = cost_before
    result.function = new_fn
    result.cost_after = cost_after
    if not validate:
        return result
    fired = [r for r in prepared.chosen if result.rule_hits.get(r.name)]
    problem = _validate_stage(fn, new_fn, fast_math, result, fired)
    return fall_back(problem) if problem else result


def fp8_dtypes(fn: Function) -> list[str]:
    """The names of the FP8 dtypes ``fn`` has values of (parameters' pointees, results, constants'
    dtype attributes), sorted; empty when it has none."""
    found = {t.dtype.name for t in fn.arg_types if t.dtype.is_fp8}
    for op in fn.walk():
        found.update(v.type.dtype.name for v in op.results if v.type.dtype.is_fp8)
    return sorted(found)


@contextlib.contextmanager
def _timed(times: dict[str, float], stage: str) -> Iterator[None]:
    """Adds the time spent in the block to ``times[stage]`` (also when it raises)."""
    t = time.perf_counter()
    try:
        yield
    finally:
        times[stage] += time.perf_counter() - t


def _saturate_stage(fn: Function, enc: Any, prepared: PreparedRules, limits: Limits, subset_rules: bool,
                    result: OptimizeResult) -> tuple[Any, Any]:
    """Load the program (and its launch facts) into the rule set's cached e-graph, saturate
    under ``limits`` (:class:`~eggpu.optimizer.budget.Budget`: Limits.seconds bounds the whole
    e-graph phase, copy-back and extraction included) and restore the base e-graph. Returns the
    saturation report (its ``view`` is the e-graph read back) and the budget; records the stop
    and rule hits in ``result``."""
    from .analyses import fact_seeds
    from .budget import Budget
    from .extract import read_egraph
    from .saturate import run_commands, saturate

    with _timed(result.times, "saturate"):
        budget = Budget(limits.seconds)
        sel = None
        if subset_rules:
            from .rule_subset import program_constructors

            sel = prepared.selection_for(program_constructors(enc.commands))
        program, engine = _engine(prepared, None if sel is None else sel.rules)
        eg = engine.egraph
        result.rules_loaded = len(engine.names)
        result.rules_loaded_why = _loaded_why(sel, len(engine.names), len(prepared.used))
        clean = False
        seeds = fact_seeds(fn, enc.leaves)

        def load(g: Any, what: str = "saving the base e-graph") -> None:
            """The base e-graph saved, then the program and its facts added (again, after
            ``(pop)`` of that save, when saturation undoes a step: ``restart``)."""
            run_commands(g, "(push)", what)
            if enc.commands:
                run_commands(g, enc.commands, "adding the program's terms")
            if seeds:
                run_commands(g, seeds, "seeding the analyses from the launch facts")

        def restart(g: Any) -> None:
            run_commands(g, "(pop)", "rolling back to the base e-graph")
            load(g, "saving the base e-graph again")

        try:
            load(eg)
            rep = saturate(eg, prepared.rulesets, limits,
                           read_view=lambda g: read_egraph(g, enc.let_types), budget=budget, restart=restart)
            run_commands(eg, f"(pop {rep.pushes + 1})", "restoring the base e-graph")
            clean = True
        finally:
            if not clean:  # unknown push depth or a panicked egglog: never reuse this e-graph
                _egraphs().pop(program, None)
    result.stop_reason = rep.stop_reason
    result.stop_detail = rep.detail
    result.rule_hits = rep.rule_hits
    result.egraph_nodes = rep.nodes
    result.iterations = rep.iterations
    return rep, budget


def _extract_stage(enc: Any, rep: Any, budget: Any, model: CostModel, result: OptimizeResult) -> Function:
    """The cheapest program of the saturated e-graph, decoded back to IR."""
    from .budget import observe_tail
    from .decode import Decoder
    from .extract import TypedGraph, mark_original

    view = rep.view
    with _timed(result.times, "extract"):
        mark_original(view, enc.structure)
        seeds: dict[int, list] = {}
        for name, c in view.lets.items():
            seeds.setdefault(c, []).append(enc.let_types[name])
        leaf_types = {lid: leaf.type for lid, leaf in enc.leaves.items()}
        dec = Decoder(enc, TypedGraph(view, seeds, leaf_types, model), view.lets)
        dec.prepare()
    observe_tail(len(view.nodes), budget.now() - rep.tail_start)  # prices the next run's reserve
    with _timed(result.times, "decode"):
        new_fn = dec.run()
    result.extraction = ",".join(sorted({ex.method for ex in dec.extractions}))
    return new_fn


def _validate_stage(fn: Function, new_fn: Function, fast_math: bool, result: OptimizeResult,
                    fired: Sequence[Any] = ()) -> str | None:
    """Translation validation of ``new_fn`` against ``fn``; the reason to fall back, or None.
    ``fired``: the rules that matched, proved (usable): they are lemmas (:mod:`.validate_lemmas`).
    A pair that needs no solver is decided without z3 (:mod:`.validate_terms`: the same verdict);
    any other goes to the solver path, which imports z3 then."""
    from .validate_terms import validate_structurally

    with _timed(result.times, "validate"):
        try:
            dtypes = _dtypes_of(fn)
            v = validate_structurally(fn, new_fn, fired, dtypes, fast_math=fast_math)
            if v is None:
                from .validate import validate as tv
                from .validate_lemmas import Lemmas

                with _z3_section():
                    v = tv(fn, new_fn, fast_math=fast_math, lemmas=Lemmas(fired, dtypes))
        except Exception as e:  # a bug in validation must never let an unchecked program through
            return f"validation raised {type(e).__name__}: {e}"
    result.validation = v
    return None if v.ok else f"translation validation: {v}"


def _dtypes_of(fn: Function) -> set[Any]:
    """The dtypes of ``fn``'s non-pointer values: the ones a dtype-generic lemma is needed at."""
    out = {p.type.dtype for p in fn.params if not p.type.is_pointer}
    for op in fn.walk():
        out.update(r.type.dtype for r in op.results if not r.type.is_pointer)
        for reg in op.regions:
            out.update(a.type.dtype for a in reg.args if not a.type.is_pointer)
    return out


def __getattr__(name: str) -> Any:
    if name == "Validation":
        from .validate_result import Validation

        return Validation
    raise AttributeError(f"module 'eggpu.optimizer' has no attribute {name!r}")

