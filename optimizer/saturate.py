"""Bounded equality saturation on an ``egglog.bindings.EGraph``.

egglog 13.2 has no node or time limit of its own, so :func:`saturate` runs the rules in steps
of ``Limits.step`` iterations (default 1). Before a step it pushes the e-graph; after it, it
counts the ``Term`` e-nodes (``print-size``) and the elapsed time:

* the step changed nothing (egglog reports no update) -> ``SATURATED``;
* more e-nodes than ``Limits.nodes`` -> the step is rolled back (``pop``) and the run stops with
  ``NODE_LIMIT``: the e-graph is the last one within the limit;
* ``Limits.iterations`` iterations done -> ``ITERATION_LIMIT``;
* more than ``Limits.seconds`` elapsed -> ``TIME_LIMIT`` (a step is never interrupted, so a run
  can overshoot the time limit by the duration of its last step).

One iteration runs the analysis rulesets (``ranges``) ``analysis_repeat`` times, then every rule
ruleset once. Rule hit counts (matches per rule name, from egglog's run report) are summed over
the kept steps. egglog panics (``PanicException`` derives from ``BaseException``) and egglog
errors become :class:`SaturationError`.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from eggpu.ir.errors import EggpuError

from .schema import CONSTRUCTORS


class SaturationError(EggpuError):
    """egglog failed (error or panic) while running rules."""


class StopReason(enum.Enum):
    """Why a saturation run stopped."""

    SATURATED = "saturated"
    ITERATION_LIMIT = "iteration_limit"
    NODE_LIMIT = "node_limit"
    TIME_LIMIT = "time_limit"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Limits:
    """Bounds of one saturation run: iterations, ``Term`` e-nodes, seconds; ``step`` iterations
    run between two checks."""

    iterations: int = 16
    nodes: int = 20_000
    seconds: float = 2.0
    step: int = 1

    def __post_init__(self) -> None:
        if self.iterations < 0 or self.nodes < 1 or self.seconds < 0 or self.step < 1:
            raise EggpuError(f"invalid limits {self}: iterations >= 0, nodes >= 1, seconds >= 0, step >= 1")


@dataclass
class SaturationReport:
    """Outcome of :func:`saturate`."""

    stop_reason: StopReason
    iterations: int
    nodes: int
    seconds: float
    rule_hits: dict[str, int] = field(default_factory=dict)
    rolled_back: bool = False
    pushes: int = 0  # push levels left on the e-graph (the caller pops them with the run)


def run_commands(eg: Any, text_or_cmds: str | Sequence[Any], what: str) -> list[Any]:
    """Run egglog commands; egglog errors and panics become :class:`SaturationError`."""
    try:
        cmds = eg.parse_program(text_or_cmds) if isinstance(text_or_cmds, str) else text_or_cmds
        return eg.run_program(*cmds)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:  # egglog's PanicException is a BaseException
        raise SaturationError(f"egglog failed while {what}: {type(e).__name__}: {e}") from None


def term_nodes(eg: Any) -> int:
    """Number of ``Term`` e-nodes (rows of schema constructors) in ``eg``."""
    out = run_commands(eg, "(print-size)", "counting e-nodes")
    sizes = out[0].sizes
    return sum(n for name, n in sizes if name in CONSTRUCTORS)


def step_program(rulesets: Sequence[str], analysis: Sequence[str], iterations: int,
                 analysis_repeat: int = 2) -> str:
    """The ``run-schedule`` text of one step."""
    parts = []
    for a in analysis:
        parts.append(f"(repeat {analysis_repeat} (run {a}))")
    parts += [f"(run {rs})" for rs in rulesets]
    body = " ".join(parts) if parts else ""
    return f"(run-schedule (repeat {iterations} (seq {body})))"


def saturate(eg: Any, rulesets: Sequence[str], limits: Limits, analysis: Sequence[str] = ("ranges",),
             analysis_repeat: int = 2) -> SaturationReport:
    """Run ``rulesets`` on ``eg`` within ``limits`` (see the module docstring).

    The e-graph is left with ``report.pushes`` extra ``push`` levels (one per kept step) so the
    caller can ``(pop n)`` back to its own checkpoint."""
    t0 = time.perf_counter()
    hits: dict[str, int] = {}
    nodes = term_nodes(eg)
    done = 0
    pushes = 0
    reason = StopReason.ITERATION_LIMIT
    rolled_back = False
    if limits.iterations == 0:
        return SaturationReport(reason, 0, nodes, time.perf_counter() - t0, hits, False, 0)
    if nodes > limits.nodes:
        return SaturationReport(StopReason.NODE_LIMIT, 0, nodes, time.perf_counter() - t0, hits, False, 0)
    if not rulesets and not analysis:
        return SaturationReport(StopReason.SATURATED, 0, nodes, time.perf_counter() - t0, hits, False, 0)
    push = eg.parse_program("(push)")
    pop = eg.parse_program("(pop)")
    programs: dict[int, list[Any]] = {}
    while True:
        if done >= limits.iterations:
            reason = StopReason.ITERATION_LIMIT
            break
        if time.perf_counter() - t0 > limits.seconds:
            reason = StopReason.TIME_LIMIT
            break
        k = min(limits.step, limits.iterations - done)
        if k not in programs:
            programs[k] = eg.parse_program(step_program(rulesets, analysis, k, analysis_repeat))
        run_commands(eg, push, "pushing the e-graph")
        pushes += 1
        out = run_commands(eg, programs[k], "running rules")
        report = next((o.report for o in out if hasattr(o, "report")), None)
        new_nodes = term_nodes(eg)
        if new_nodes > limits.nodes:
            run_commands(eg, pop, "rolling back a step")
            pushes -= 1
            rolled_back = True
            reason = StopReason.NODE_LIMIT
            break
        done += k
        nodes = new_nodes
        if report is not None:
            for name, n in report.num_matches_per_rule.items():
                if n:
                    hits[name] = hits.get(name, 0) + n
        if report is not None and not report.updated:
            reason = StopReason.SATURATED
            break
    return SaturationReport(reason, done, nodes, time.perf_counter() - t0, hits, rolled_back, pushes)


__all__ = ["Limits", "SaturationError", "SaturationReport", "StopReason", "run_commands", "saturate",
           "step_program", "term_nodes"]
