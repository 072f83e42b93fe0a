"""Bounded equality saturation on an ``egglog.bindings.EGraph``.

egglog 13.2 has no node, time or memory limit of its own, and a single rule iteration cannot be
interrupted from Python. With the shipped rules one iteration can explode: ``s * 0`` on an i32
scalar makes the zero class cyclic (``mul-zero-int-scalar``), and the 8th iteration finds
~8,000,000 ``mul-assoc-int`` matches in an e-graph of 7,000 e-nodes (88 s, 3 GB RSS measured
here). :func:`saturate` bounds a run at three levels.

**Steps and checks.** Rules run in steps of ``Limits.step`` iterations (default 1). Before a step
the e-graph is saved; after it the ``Term`` e-nodes (``print-size``) and the time are checked:

* the step changed nothing (egglog reports no update) -> ``SATURATED``;
* more e-nodes than ``Limits.nodes`` -> the step is undone and the run stops with
  ``NODE_LIMIT``: the e-graph is the last one within the limit;
* ``Limits.iterations`` iterations done -> ``ITERATION_LIMIT``;
* more than ``Limits.seconds`` elapsed, or the previous step's duration says the next one would
  end more than 5 % past the limit -> ``TIME_LIMIT``;
* (hot runs only) the e-graph did not change (same e-nodes and e-classes) although egglog says
  "updated" -> ``MATCH_LIMIT``: the back-off scheduler skipped every rule that still had
  matches, and a new step would skip the same ones again.

In steps run in this process "saved" means the run can go back to where it started and replay
the steps it kept: one ``push`` before the first step (or the caller's ``restart``, which
rebuilds the starting e-graph from the caller's own checkpoint), undone by ``pop`` only when a
step overshoots, after which the kept steps are run again (rare; a ``push`` before every step
cost more than the steps themselves on the library kernels: cloning the e-graph with its rule
tables, and popping every level at the end); in the forked child and in hot runs it is a copy of
the e-graph read by the caller's ``read_view`` (an EGraphView): a ``push`` clones every scheduler
the back-off steps created (0.2-0.4 s), and in a forked child egglog's ``push`` of a large e-graph
waits forever for rayon pool workers that exist only in the parent.

**Where steps run.** A plain ``(run ruleset)`` step (every match applied; the library kernels
saturate in 2-3 such steps of about a millisecond) runs in this process only while the e-graph
is *small*: at most :data:`CALM_NODES` e-nodes before the step and at most :data:`CALM_MATCHES`
matches in the previous one (the library kernels stay under 121 e-nodes and 41 matches; an
exploding e-graph grows its matches ~10x per iteration, so the step after a small one is small
too). Every other step — all of them for an input of more than :data:`CALM_NODES` e-nodes —
runs in a ``fork()`` of this process (:mod:`.isolate`) that is killed in time for the caller to
end its whole e-graph phase (steps, copying the result back, extraction) by
``Limits.hard_seconds`` (``1.2 * seconds``; :mod:`.budget`) and may grow to at most
``Limits.memory_mb`` MiB resident. Steps are not started, and a child's e-graph is not sent
back, when the time to copy it back and extract from it would not fit in that bound.
The child sends back the final e-graph (read by the caller's ``read_view``) and its counters.
If it is killed or runs out of memory, the run stops with ``TIME_LIMIT`` or ``MEMORY_LIMIT``
and the e-graph is the one from before the fork (the last in-process step), with ``detail``
saying what happened; if it fails otherwise (an egglog error, a crash)
:class:`SaturationError` is raised. With ``Limits.isolate=False``, without ``fork``, or without
``read_view`` (the caller then reads ``eg`` itself) every step runs in this process and is not
interruptible.

**Calm and hot e-graphs.** The run turns *hot* after a step with more than a quarter of
``Limits.match_limit`` matches in total, when the e-graph holds more than an eighth of
``Limits.nodes`` e-nodes, or after a quarter of ``Limits.seconds``. From then on every iteration
runs the rule rulesets with egglog's back-off scheduler
(``(let-scheduler bo (back-off :match-limit M))``, ``(run-with bo ruleset)``): a rule with more
than ``M = Limits.match_limit`` matches in an iteration is not applied in that iteration (a
fresh scheduler per step, so its ban never expires while the rule keeps matching that much).
That caps what one iteration can add (about ``M`` matches per rule) and stops the
585,000-match iteration. The scheduler costs ~40 ms per step (egglog builds a query and an
action rule per rule), which is why calm e-graphs do not use it. Its matches are still
*enumerated* before they are filtered, so an iteration is bounded only indirectly (the e-graph
it searches stays small) — and by the child's deadline and memory cap.

Forking a process of ~400 MB takes 40-90 ms here, which is why small e-graphs do not fork: the
library kernels never leave the process and pay nothing.

One iteration runs the analysis rulesets (``ranges``) ``analysis_repeat`` times with plain
``run`` (their rules are linear in the e-graph), then every rule ruleset once. Rule hit counts
(matches per rule name, from egglog's run report, applied matches only) are summed over the kept
steps. egglog panics (``PanicException`` derives from ``BaseException``) and egglog errors
become :class:`SaturationError`.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from eggpu.ir.errors import EggpuError

from . import isolate
from .budget import SLACK, Budget
from .schema import CONSTRUCTORS


class SaturationError(EggpuError):
    """egglog failed (error or panic) while running rules."""


class StopReason(enum.Enum):
    """Why a saturation run stopped."""

    SATURATED = "saturated"
    ITERATION_LIMIT = "iteration_limit"
    NODE_LIMIT = "node_limit"
    TIME_LIMIT = "time_limit"
    MEMORY_LIMIT = "memory_limit"
    MATCH_LIMIT = "match_limit"  # hot e-graph stopped changing: only rules over the match limit were left

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Limits:
    """Bounds of one saturation run.

    ``iterations``, ``nodes`` (``Term`` e-nodes) and ``seconds`` stop the run; ``step`` iterations
    run between two checks. ``match_limit`` (default ``max(100, nodes // 20)``: 1,000 for the
    default node limit) is the most matches one rule may apply in one iteration once the e-graph
    is hot; a step with more than a quarter of it in total makes the e-graph hot. ``memory_mb`` caps the resident
    size of the process that runs hot steps; ``isolate=False`` runs them in this process (not
    interruptible, no memory cap)."""

    iterations: int = 16
    nodes: int = 20_000
    seconds: float = 2.0
    step: int = 1
    match_limit: int | None = None
    memory_mb: int = 1024
    isolate: bool = True

    def __post_init__(self) -> None:
        if (self.iterations < 0 or self.nodes < 1 or self.seconds < 0 or self.step < 1
                or (self.match_limit is not None and self.match_limit < 1) or self.memory_mb < 64):
            raise EggpuError(f"invalid limits {self}: iterations >= 0, nodes >= 1, seconds >= 0, step >= 1, "
                             "match_limit >= 1 (or None), memory_mb >= 64")

    @property
    def matches(self) -> int:
        """The effective match limit (see the class docstring)."""
        return self.match_limit if self.match_limit is not None else max(100, self.nodes // 20)

    @property
    def hard_seconds(self) -> float:
        """When the whole e-graph phase (steps, copying the child's e-graph back, extraction)
        is over at the latest, in seconds after it started (:mod:`.budget`)."""
        return self.seconds * (1 + SLACK)


@dataclass
class SaturationReport:
    """Outcome of :func:`saturate`.

    ``hot`` says whether the run turned hot (back-off scheduler), ``isolated`` whether hot steps
    ran in a child process; ``detail`` explains a stop that needs more than the reason (a child
    killed at the deadline or out of memory, a step rolled back); ``view`` is what ``read_view``
    returned for the final e-graph (None when no ``read_view`` was given); ``child_rss_mb`` is
    the child's peak resident size."""

    stop_reason: StopReason
    iterations: int
    nodes: int
    seconds: float
    rule_hits: dict[str, int] = field(default_factory=dict)
    rolled_back: bool = False
    pushes: int = 0  # push levels left on the e-graph (the caller pops them with the run)
    hot: bool = False
    isolated: bool = False
    detail: str = ""
    view: Any = None
    child_rss_mb: float = 0.0
    tail_start: float = 0.0  # budget clock when the steps ended and the tail (copy-back, extraction) began


def run_commands(eg: Any, text_or_cmds: str | Sequence[Any], what: str) -> list[Any]:
    """Run egglog commands; egglog errors and panics become :class:`SaturationError`."""
    try:
        cmds = eg.parse_program(text_or_cmds) if isinstance(text_or_cmds, str) else text_or_cmds
        return [_as_egglog13(o) for o in eg.run_program(*cmds)]
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:  # egglog's PanicException is a BaseException
        raise SaturationError(f"egglog failed while {what}: {type(e).__name__}: {e}") from None


class _HeldBack:
    """A run report whose scheduler held rules back: reads as ``updated`` (see _as_egglog13)."""

    updated = True

    def __init__(self, report: Any):
        self._report = report

    def __getattr__(self, name: str) -> Any:
        return getattr(self._report, name)


class _Output:
    def __init__(self, output: Any):
        self._output = output
        self.report = _HeldBack(output.report)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._output, name)


def _as_egglog13(output: Any) -> Any:
    """An egglog output with egglog 13.2's meaning of a run report's ``updated``.

    egglog 14 says ``updated=False`` after a step that changed nothing even when its scheduler
    still holds rules back (``can_stop=False``: the back-off scheduler skipped rules over the
    match limit); egglog 13.2 said ``updated=True`` there. The step loop tells saturation
    (nothing left to do) from a match-limit fixpoint by 13.2's meaning, so such a report is
    given it. Reports without ``can_stop`` (egglog 13.2) are returned as they are."""
    rep = getattr(output, "report", None)
    if rep is None or rep.updated or getattr(rep, "can_stop", True):
        return output
    return _Output(output)


def term_nodes(eg: Any) -> int:
    """Number of ``Term`` e-nodes (rows of schema constructors) in ``eg``."""
    out = run_commands(eg, "(print-size)", "counting e-nodes")
    sizes = out[0].sizes
    return sum(n for name, n in sizes if name in CONSTRUCTORS)


def step_program(rulesets: Sequence[str], analysis: Sequence[str], iterations: int,
                 analysis_repeat: int = 2, match_limit: int | None = None) -> str:
    """The ``run-schedule`` text of one step; with ``match_limit`` the rule rulesets run with a
    back-off scheduler that skips a rule's matches in an iteration where it has more."""
    parts = [f"(repeat {analysis_repeat} (run {a}))" for a in analysis]
    if match_limit is None:
        parts += [f"(run {rs})" for rs in rulesets]
        return f"(run-schedule (repeat {iterations} (seq {' '.join(parts)})))"
    parts += [f"(run-with bo {rs})" for rs in rulesets]
    # ban-length only matters between the iterations of one step (the scheduler is per step)
    return (f"(run-schedule (let-scheduler bo (back-off :match-limit {match_limit} :ban-length 1)) "
            f"(repeat {iterations} (seq {' '.join(parts)})))")


# ---------------------------------------------------------------------- the step loop


@dataclass
class _State:
    """Counters of a run; ``reason`` is None while it goes on."""

    done: int
    nodes: int
    hits: dict[str, int] = field(default_factory=dict)
    pushes: int = 0
    rolled_back: bool = False
    reason: StopReason | None = None
    detail: str = ""
    view: Any = None  # with keep_view: the e-graph after the last kept step
    last_step: float = 0.0  # seconds the last step took
    last_matches: int = 0  # matches of the last step
    hot: bool = False  # the e-graph turned hot (back-off steps from now on)
    prev: tuple | None = None  # with keep_view: (done, nodes, hits, view) before the last kept step
    #: in-process steps: the programs run since the start (replayed after undoing an overshoot)
    replay: list = field(default_factory=list)
    #: rebuilds the e-graph the run started from (None: push a checkpoint before the first step)
    restart: Callable[[Any], None] | None = None
    started: bool = False  # the checkpoint exists (or ``restart`` stands for it)


def _limit_reached(st: _State, limits: Limits, budget: Budget) -> bool:
    """Set ``st.reason`` and return True when the iteration or time limit stops the run. A step
    that would end well past the time limit, judging by the previous one, is not started, nor
    one that would leave too little of the hard bound to copy the e-graph back and extract
    from it (:meth:`Budget.hard_left`)."""
    if st.done >= limits.iterations:
        st.reason = StopReason.ITERATION_LIMIT
        return True
    elapsed = budget.elapsed()
    if elapsed > limits.seconds:
        st.reason = StopReason.TIME_LIMIT
        st.detail = f"{elapsed:.2f} s spent (limit {limits.seconds:g} s) after iteration {st.done}"
        return True
    if st.done and elapsed + st.last_step > limits.seconds * 1.05:
        st.reason = StopReason.TIME_LIMIT
        st.detail = (f"iteration {st.done + 1} was not started: after {elapsed:.2f} s, a step as long as "
                     f"the last one ({st.last_step:.2f} s) would end past the limit of {limits.seconds:g} s")
        return True
    left = budget.hard_left(st.nodes)
    if left < st.last_step:
        st.reason = StopReason.TIME_LIMIT
        st.detail = (f"iteration {st.done + 1} was not started: after {elapsed:.2f} s, a step as long as the "
                     f"last one ({st.last_step:.2f} s) would leave too little of the {limits.hard_seconds:.2f} s "
                     f"bound to copy back and extract {st.nodes} e-nodes ({budget.tail(st.nodes):.2f} s)")
        return True
    return False


def _run_steps(eg: Any, st: _State, limits: Limits, make_program: Callable[[int], list[Any]], budget: Budget,
               hot_check: Callable[[Any, _State, float], bool] | None,
               keep_view: Callable[[Any], Any] | None = None) -> bool:
    """Run checked steps until a limit stops the run (``st.reason`` set; returns False) or
    ``hot_check`` says the e-graph turned hot (returns True).

    A step that overshoots the node limit is undone: by going back to the run's start
    (:func:`_rewind`: ``pop`` of one checkpoint ``push``, or the caller's ``restart``) and
    replaying the steps kept before it, or, with ``keep_view``, by keeping ``st.view =
    keep_view(eg)`` of the e-graph before each step. (A push clones the whole e-graph, and after back-off steps that includes
    every scheduler they created: in hot runs a push costs 0.2-0.4 s, reading a small e-graph a
    few ms; in a forked child a push of a large e-graph hangs, see the module docstring.) Only
    back-off steps (no ``hot_check``) stop with ``MATCH_LIMIT`` on an unchanged e-graph."""
    if keep_view is not None and st.view is None:
        st.view = keep_view(eg)
    if keep_view is None and not st.started:
        if st.restart is None:
            run_commands(eg, "(push)", "saving the e-graph before the first step")
            st.pushes += 1
        st.started = True
    while True:
        if _limit_reached(st, limits, budget):
            return False
        now = budget.now()
        k = min(limits.step, limits.iterations - st.done)
        program = make_program(k)
        out = run_commands(eg, program, "running rules")
        report = next((o.report for o in out if hasattr(o, "report")), None)
        new_nodes = term_nodes(eg)
        if new_nodes > limits.nodes:
            if keep_view is None:
                _rewind(eg, st, limits)
            st.rolled_back = True
            st.reason = StopReason.NODE_LIMIT
            st.detail = (f"iteration {st.done + 1} grew the e-graph to {new_nodes} e-nodes "
                         f"(limit {limits.nodes}) and was rolled back")
            return False
        if keep_view is not None:
            st.prev = (st.done, st.nodes, dict(st.hits), st.view)
        else:
            st.replay.append(program)
        st.done += k
        unchanged = False
        if keep_view is not None:
            before = st.view
            st.view = keep_view(eg)
            # a fixpoint under the match limit only means something for back-off steps (no hot_check)
            unchanged = (hot_check is None and new_nodes == st.nodes and before is not None and st.view is not None
                         and getattr(before, "n_classes", None) == getattr(st.view, "n_classes", 0))
        st.nodes = new_nodes
        st.last_step = budget.now() - now
        matches = 0
        if report is not None:
            for name, n in report.num_matches_per_rule.items():
                if n:
                    st.hits[name] = st.hits.get(name, 0) + n
                    matches += n
        st.last_matches = matches
        if report is not None and not report.updated:
            st.reason = StopReason.SATURATED
            return False
        if unchanged:
            # egglog says "updated" only because the back-off scheduler skipped rules; a fresh
            # scheduler next step would skip the same matches again: a fixpoint under the limit
            st.reason = StopReason.MATCH_LIMIT
            st.detail = (f"the e-graph stopped changing; rules with more than {limits.matches} matches "
                         "in an iteration were skipped")
            return False
        if hot_check is not None and hot_check(report, st, matches):
            return True


def _rewind(eg: Any, st: _State, limits: Limits) -> None:
    """Undo the last in-process step: back to the e-graph the run started from (``pop`` of its
    checkpoint and a new ``push``, or the caller's ``restart``), then the kept steps again.
    egglog's steps are deterministic on the same e-graph; should a replay still end elsewhere,
    its size is what is reported, and one past the node limit leaves the starting e-graph."""
    def back() -> None:
        if st.restart is not None:
            st.restart(eg)
        else:
            run_commands(eg, "(pop) (push)", "rolling back to the start of the run")

    back()
    for program in st.replay:
        run_commands(eg, program, "replaying a kept step")
    nodes = term_nodes(eg)
    if nodes > limits.nodes:  # not the e-graph the kept steps made: keep none of them
        back()
        st.replay.clear()
        st.done, st.hits, nodes = 0, {}, term_nodes(eg)
    st.nodes = nodes


def _is_hot(limits: Limits, budget: Budget) -> Callable[[Any, _State, float], bool]:
    def hot(report: Any, st: _State, matches: float) -> bool:
        return (matches > limits.matches // 4 or st.nodes > max(64, limits.nodes // 8)
                or budget.elapsed() > limits.seconds / 4)

    return hot


#: a plain step runs in this process only on an e-graph of at most this many e-nodes whose
#: previous step had at most CALM_MATCHES matches (the library kernels: <= 121 e-nodes, <= 41
#: matches); every other step runs in the forked child, under its hard deadline and memory cap
CALM_NODES = 256
CALM_MATCHES = 64


def _stays_in_process(hot: Callable[[Any, _State, float], bool]) -> Callable[[Any, _State, float], bool]:
    """The check after an in-process step: True (leave the process) when the e-graph turned hot
    (``st.hot`` set) or is no longer small enough for a plain step to be safely bounded."""
    def leave(report: Any, st: _State, matches: float) -> bool:
        if hot(report, st, matches):
            st.hot = True
            return True
        return st.nodes > CALM_NODES or matches > CALM_MATCHES

    return leave


def _programs(eg: Any, rulesets: Sequence[str], analysis: Sequence[str], analysis_repeat: int,
              match_limit: int | None) -> Callable[[int], list[Any]]:
    cache: dict[int, list[Any]] = {}

    def get(k: int) -> list[Any]:
        if k not in cache:
            cache[k] = eg.parse_program(step_program(rulesets, analysis, k, analysis_repeat, match_limit))
        return cache[k]

    return get


# ---------------------------------------------------------------------- moving a view across a fork


def _view_to_wire(view: Any) -> Any:
    """An ``EGraphView`` as plain tuples (dtypes by name, so the parent gets its own dtype
    objects back: dtypes are compared by identity in places)."""
    if view is None or not hasattr(view, "nodes"):
        return ("raw", view)
    from eggpu.ir.dtypes import DType

    def attr(v: Any) -> Any:
        return ("dt", v.name) if isinstance(v, DType) else ("v", v)

    nodes = [(n.ctor, tuple(d.name for d in n.dtypes), tuple((k, attr(v)) for k, v in n.attrs.items()),
              n.children, n.eclass, n.leaf) for n in view.nodes]
    return ("view", nodes, dict(view.lets), view.n_classes)


def _view_from_wire(wire: Any) -> Any:
    if wire[0] == "raw":
        return wire[1]
    from eggpu.ir.dtypes import parse_dtype

    from .extract import EGraphView, ENode

    _, rows, lets, n_classes = wire
    nodes, class_nodes = [], {}
    for ctor, dts, attrs, children, eclass, leaf in rows:
        a = {k: parse_dtype(v) if kind == "dt" else v for k, (kind, v) in attrs}
        n = ENode(ctor, CONSTRUCTORS[ctor], tuple(parse_dtype(d) for d in dts), a, children, eclass, leaf)
        nodes.append(n)
        class_nodes.setdefault(eclass, []).append(n)
    return EGraphView(nodes, class_nodes, lets, n_classes)


# ---------------------------------------------------------------------- saturate


def saturate(eg: Any, rulesets: Sequence[str], limits: Limits, analysis: Sequence[str] = ("ranges",),
             analysis_repeat: int = 2, read_view: Callable[[Any], Any] | None = None,
             budget: Budget | None = None, restart: Callable[[Any], None] | None = None) -> SaturationReport:
    """Run ``rulesets`` on ``eg`` within ``limits`` (see the module docstring).

    ``budget`` is the time budget of the caller's whole e-graph phase (:mod:`.budget`; default:
    one of ``limits.seconds`` starting now): steps, the child's deadline and the decision to use
    its result all leave the time the caller needs afterwards to copy the e-graph back and
    extract from it. ``report.tail_start`` is the budget's clock when that tail began.

    ``restart(eg)``, when given, rebuilds the e-graph as it is at this call (the caller's
    checkpoint and program): an in-process step past the node limit is then undone without a
    ``push`` of this function's own (see the module docstring).

    The e-graph is left with ``report.pushes`` extra ``push`` levels (one per kept in-process
    step) so the caller can ``(pop n)`` back to its own checkpoint. When hot steps ran in a child
    process, ``eg`` holds the e-graph from before them and ``report.view`` the child's final
    one: callers that read the result must pass ``read_view`` (called on the final e-graph,
    in the child when there is one) and use ``report.view``."""
    budget = budget or Budget(limits.seconds)
    nodes = term_nodes(eg)
    st = _State(0, nodes, restart=restart)

    def finish(tail_start: float | None = None, **extra: Any) -> SaturationReport:
        rep = SaturationReport(st.reason or StopReason.ITERATION_LIMIT, st.done, st.nodes, 0.0, st.hits,
                               st.rolled_back, st.pushes, detail=st.detail, **extra)
        rep.tail_start = budget.now() if tail_start is None else tail_start
        if read_view is not None and rep.view is None:
            rep.view = read_view(eg)
        rep.seconds = budget.elapsed()
        return rep

    if limits.iterations == 0:
        st.reason = StopReason.ITERATION_LIMIT
        return finish()
    if nodes > limits.nodes:
        st.reason = StopReason.NODE_LIMIT
        st.detail = f"the input already has {nodes} e-nodes (limit {limits.nodes})"
        return finish()
    if not rulesets and not analysis:
        st.reason = StopReason.SATURATED
        return finish()
    plain = _programs(eg, rulesets, analysis, analysis_repeat, None)
    backoff = _programs(eg, rulesets, analysis, analysis_repeat, limits.matches)
    is_hot = _is_hot(limits, budget)
    if read_view is None or not (limits.isolate and isolate.AVAILABLE):
        # everything in this process (not interruptible); without read_view the caller reads
        # ``eg``, so overshooting steps are undone with push/pop
        if not _run_steps(eg, st, limits, plain, budget, is_hot):
            return finish()
        if _limit_reached(st, limits, budget):
            return finish(hot=True)
        _run_steps(eg, st, limits, backoff, budget, None, read_view)
        return finish(hot=True, view=st.view)

    # small and calm: plain steps here; from the first step that is not provably small, in a child
    if nodes <= CALM_NODES and not _run_steps(eg, st, limits, plain, budget, _stays_in_process(is_hot)):
        return finish()
    if _limit_reached(st, limits, budget):  # not worth a fork
        return finish(hot=st.hot)
    return _saturate_in_child(eg, st, limits, budget, plain, backoff, is_hot, read_view, finish)


def _saturate_in_child(eg: Any, st: _State, limits: Limits, budget: Budget, plain: Callable[[int], list[Any]],
                       backoff: Callable[[int], list[Any]], is_hot: Callable[[Any, _State, float], bool],
                       read_view: Callable[[Any], Any], finish: Callable[..., SaturationReport]) -> SaturationReport:
    """The steps of :func:`saturate` from the first one that is not provably small, in a forked
    child killed when the parent, keeping its own (calm) e-graph, would just end by the budget's
    hard end. The child sends its e-graph only if there is time left to copy it back and extract
    from it; otherwise (and when it is killed) the calm e-graph is used."""
    calm = _State(st.done, st.nodes, dict(st.hits), 0, st.rolled_back)

    def child() -> Any:
        # no push/pop here: in a forked child egglog's push of a large e-graph waits for rayon pool
        # workers that only exist in the parent (it hung until the deadline); keep views instead
        if not st.hot and _run_steps(eg, st, limits, plain, budget, is_hot, read_view):
            st.hot = True
        if st.hot and st.reason is None and not _limit_reached(st, limits, budget):
            _run_steps(eg, st, limits, backoff, budget, None, read_view)
        view = st.view if st.view is not None else read_view(eg)
        n = len(getattr(view, "nodes", ()))
        sent = budget.now()
        if sent + budget.tail(n) > budget.hard_end and st.prev is not None:
            # the last step's e-graph came too late to copy back and extract: the one before it?
            done, nodes, hits, pview = st.prev
            pn = len(getattr(pview, "nodes", ()))
            if pview is not None and sent + budget.tail(pn) <= budget.hard_end:
                st.reason = StopReason.TIME_LIMIT
                st.detail = (f"iteration {st.done} ended at {sent - budget.start:.2f} s with {n} e-nodes, too many "
                             f"to copy back and extract within {limits.hard_seconds:.2f} s; using the e-graph "
                             f"after iteration {done} ({nodes} e-nodes)")
                st.done, st.nodes, st.hits, view, n = done, nodes, hits, pview, pn
        if sent + budget.tail(n) > budget.hard_end:  # the parent could not copy it back in time
            return ("late", st.done, n, sent - budget.start)
        return ("ok", st.done, st.nodes, st.hits, st.rolled_back, st.reason, st.detail, st.hot,
                _view_to_wire(view), sent)

    # run_forked wants a time.monotonic() deadline; the budget's clock may be another one (tests)
    kill = time.monotonic() + (budget.kill_at(calm.nodes) - budget.now())
    out = isolate.run_forked(child, deadline=kill, memory_mb=limits.memory_mb)
    if out.status == "ok" and out.value[0] == "ok":
        done, n, hits, rolled_back, reason, detail, hot, wire, sent = out.value[1:]
        st.done, st.nodes, st.hits, st.rolled_back, st.reason, st.detail = done, n, hits, rolled_back, reason, detail
        return finish(tail_start=sent, hot=hot, isolated=True, view=_view_from_wire(wire),
                      child_rss_mb=out.max_rss_mb)
    if out.status in ("error", "crashed"):
        raise SaturationError(f"saturation failed in its child process: {out.detail}")
    # killed, out of memory or too late: keep the calm e-graph (this process's, untouched by the child)
    st.done, st.nodes, st.hits, st.rolled_back = calm.done, calm.nodes, calm.hits, calm.rolled_back
    st.reason = StopReason.TIME_LIMIT
    if out.status == "ok":
        _, late_done, late_nodes, at = out.value
        what = (f"finished iteration {late_done} at {at:.2f} s, too late to copy its {late_nodes} e-nodes "
                f"back and extract within {limits.hard_seconds:.2f} s")
    elif out.status == "timeout":
        what = f"was killed at the hard time limit ({limits.hard_seconds:.2f} s, less the time to extract)"
    else:
        st.reason = StopReason.MEMORY_LIMIT
        what = f"exceeded its memory limit ({limits.memory_mb} MiB)"
    st.detail = (f"the isolated saturation process {what}; using the e-graph after iteration {st.done} "
                 f"({st.nodes} e-nodes)")
    return finish(hot=st.hot, isolated=True, child_rss_mb=out.max_rss_mb)


__all__ = ["Limits", "SaturationError", "SaturationReport", "StopReason", "run_commands", "saturate",
           "step_program", "term_nodes"]
