"""The time budget of the e-graph phase (optimizer/budget.py): ``Limits.seconds`` bounds the
steps, the forked child, copying its e-graph back and extraction together, within 20 %.

Every test here runs on a fake clock that advances only where the test says (a rule step, the
copy-back and extraction of a view), so the decisions are checked exactly and no test asserts a
wall-clock time.
"""

from __future__ import annotations

import pytest

import eggpu.optimizer.budget as budget_mod
import eggpu.optimizer.extract as extract_mod
import eggpu.optimizer.saturate as sat
from bench.saturation_bound import sum_of
from eggpu.optimizer import Limits, StopReason, isolate, optimize
from eggpu.optimizer.budget import Budget, observe_tail, reset_tail_estimate


class FakeClock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t



@pytest.fixture
def clock(monkeypatch):
    """A fake clock for every budget; the tail estimate starts from its defaults."""
    c = FakeClock()
    monkeypatch.setattr(budget_mod, "CLOCK", c)
    reset_tail_estimate()
    yield c
    reset_tail_estimate()


def _step_costs(monkeypatch, clock: FakeClock, costs) -> None:
    """Rule step number k (from 1) advances the fake clock by ``costs(k)`` seconds."""
    real = sat.run_commands
    count = [0]

    def run(eg, cmds, what):
        out = real(eg, cmds, what)
        if what == "running rules":
            count[0] += 1
            clock.t += costs(count[0])
        return out

    monkeypatch.setattr(sat, "run_commands", run)


def _tail_costs(monkeypatch, clock: FakeClock, per_node: float) -> list:
    """Extraction advances the clock by ``per_node`` per e-node of the view it reads; returns
    the list of (nodes, seconds) the optimizer reports to the tail estimate, each with the
    clock when it did (the end of the phase)."""
    real = extract_mod.TypedGraph
    seen: list = []

    def typed(view, *a, **k):
        clock.t += per_node * len(view.nodes)
        return real(view, *a, **k)

    def observed(nodes, seconds):
        seen.append((nodes, seconds, clock.t))
        real_observe(nodes, seconds)

    real_observe = budget_mod.observe_tail
    monkeypatch.setattr(extract_mod, "TypedGraph", typed)
    monkeypatch.setattr(budget_mod, "observe_tail", observed)
    return seen


# ---------------------------------------------------------------------- the budget itself


def test_budget_ends_and_tail_reserve(clock):
    clock.t = 100.0
    b = Budget(2.0)
    assert (b.start, b.soft_end, b.hard_end) == (100.0, 102.0, pytest.approx(102.4))
    assert Limits(seconds=2.0).hard_seconds == pytest.approx(2.4)
    assert b.tail(0) == pytest.approx(0.01) and b.tail(1000) == pytest.approx(0.01 + 1000 * 1e-4)
    clock.t = 101.0
    assert b.elapsed() == 1.0 and b.hard_left(1000) == pytest.approx(1.4 - 0.11)
    assert b.kill_at(1000) == pytest.approx(102.4 - 0.11)


def test_tail_estimate_follows_measurements_with_a_floor(clock):
    observe_tail(1000, 0.01 + 1000 * 4e-4)  # slower than estimated: the rate jumps at once
    assert Budget.tail(1000) == pytest.approx(0.01 + 0.4)
    observe_tail(1000, 0.01 + 1000 * 2e-4)  # faster: half way
    assert Budget.tail(1000) == pytest.approx(0.01 + 0.3)
    for _ in range(40):  # never below half the default rate, however fast the measurements
        observe_tail(1000, 0.0)
    assert Budget.tail(1000) == pytest.approx(0.01 + 0.05)
    observe_tail(0, 5.0)  # nothing to learn from
    observe_tail(10, -1.0)
    assert Budget.tail(1000) == pytest.approx(0.01 + 0.05)


# ---------------------------------------------------------------------- in-process steps


def test_steps_stop_at_the_soft_limit(clock, boom_rules, monkeypatch):
    _step_costs(monkeypatch, clock, lambda k: 0.3)
    res = optimize(sum_of(5), rules=boom_rules, shipped_rules=False, validate=False,
                   limits=Limits(iterations=50, nodes=10**6, seconds=1.0, match_limit=10**9, isolate=False))
    # steps end at 0.3, 0.6, 0.9; a 4th would end at 1.2 > 1.05
    assert res.stop_reason is StopReason.TIME_LIMIT and res.iterations == 3, res.summary()
    assert "iteration 4 was not started" in res.stop_detail and "past the limit of 1 s" in res.stop_detail


def test_steps_leave_time_to_copy_back_and_extract(clock, boom_rules, monkeypatch):
    """With 0.5 s of tail to reserve, the 3rd step (0.6 -> 0.9 s) would leave 0.3 - 0.5 < 0 s of
    the 1.2 s bound: it is not started although the soft limit alone would allow it."""
    _step_costs(monkeypatch, clock, lambda k: 0.3)
    monkeypatch.setitem(budget_mod._rate, "fixed", 0.5)
    monkeypatch.setitem(budget_mod._rate, "per_node", 0.0)
    seen = _tail_costs(monkeypatch, clock, 0.0)
    res = optimize(sum_of(5), rules=boom_rules, shipped_rules=False, validate=False,
                   limits=Limits(iterations=50, nodes=10**6, seconds=1.0, match_limit=10**9, isolate=False))
    assert res.stop_reason is StopReason.TIME_LIMIT and res.iterations == 2, res.summary()
    assert "iteration 3 was not started" in res.stop_detail
    assert "too little of the 1.20 s bound to copy back and extract" in res.stop_detail
    assert seen and seen[-1][2] <= 1.2


@pytest.mark.parametrize("seconds", [0.5, 2.0])
def test_whole_phase_ends_within_the_bound_with_a_learned_tail(clock, boom_rules, monkeypatch, seconds):
    """Steps cost a fifth of the limit and the tail costs 3 ms per e-node, 30x the default
    estimate: the first run learns the rate from its own tail and the second leaves room for it,
    ending (steps, copy-back, extraction) within limit * 1.2."""
    _step_costs(monkeypatch, clock, lambda k: seconds / 5)
    seen = _tail_costs(monkeypatch, clock, 3e-3)
    limits = Limits(iterations=50, nodes=10**6, seconds=seconds, match_limit=10**9, isolate=False)
    optimize(sum_of(5), rules=boom_rules, shipped_rules=False, validate=False, limits=limits)
    assert budget_mod._rate["per_node"] >= 2.9e-3  # measured from the first run's tail (3 ms less fixed 10 ms)
    clock.t = 1000.0
    res = optimize(sum_of(5), rules=boom_rules, shipped_rules=False, validate=False, limits=limits)
    assert res.stop_reason is StopReason.TIME_LIMIT, res.summary()
    nodes, tail, end = seen[-1]
    assert end - 1000.0 <= seconds * 1.2 + 1e-9, (end, res.summary())
    assert tail == pytest.approx(3e-3 * nodes, rel=1e-6)


# ---------------------------------------------------------------------- the forked child


needs_fork = pytest.mark.skipif(not isolate.AVAILABLE, reason="needs fork()")


def _recording_forks(monkeypatch, clock: FakeClock) -> list:
    """Record, for each fork, how many (fake) seconds before the budget's hard end the child
    is to be killed; the deadline given to run_forked is real time."""
    import time

    real = isolate.run_forked
    kills: list = []

    def run(fn, *, deadline, memory_mb=None):
        kills.append(clock.t + (deadline - time.monotonic()))
        return real(fn, deadline=deadline, memory_mb=memory_mb)

    monkeypatch.setattr(isolate, "run_forked", run)
    return kills


@needs_fork
def test_child_is_killed_early_enough_to_fall_back_in_time(clock, boom_rules, monkeypatch):
    monkeypatch.setattr(sat, "CALM_NODES", 0)  # every step in the child
    monkeypatch.setitem(budget_mod._rate, "fixed", 0.25)
    monkeypatch.setitem(budget_mod._rate, "per_node", 0.0)
    kills = _recording_forks(monkeypatch, clock)
    _step_costs(monkeypatch, clock, lambda k: 1.0)
    res = optimize(sum_of(5), rules=boom_rules, shipped_rules=False, validate=False,
                   limits=Limits(iterations=3, nodes=10**6, seconds=10.0, match_limit=10**9))
    # the old deadline was seconds * 1.15 + 0.05 = 11.55; now hard end 12 less the calm tail 0.25
    assert kills and kills[0] == pytest.approx(11.75, abs=0.5)
    assert res.stop_reason is StopReason.ITERATION_LIMIT and res.iterations == 3, res.summary()


@needs_fork
def test_child_sends_the_last_e_graph_it_can_copy_back_in_time(clock, boom_rules, monkeypatch):
    """Steps cost 0.1, 0.3, 0.9, 2.7 and 7 s of a 10 s limit (12 s bound); at 6 ms of tail per
    e-node the 5th step's e-graph (187 e-nodes, 1.12 s of tail) cannot be copied back and
    extracted in the 1 s left when it ends, the 4th's (162 e-nodes, 0.97 s) can: the child sends
    that one, not nothing."""
    monkeypatch.setattr(sat, "CALM_NODES", 0)
    monkeypatch.setitem(budget_mod._rate, "fixed", 0.0)
    monkeypatch.setitem(budget_mod._rate, "per_node", 0.006)
    _step_costs(monkeypatch, clock, lambda k: (0.1, 0.3, 0.9, 2.7, 7.0)[k - 1])
    seen = _tail_costs(monkeypatch, clock, 0.0)
    res = optimize(sum_of(5), rules=boom_rules, shipped_rules=False, validate=False,
                   limits=Limits(iterations=5, nodes=10**6, seconds=10.0, match_limit=10**9))
    assert res.stop_reason is StopReason.TIME_LIMIT and res.iterations == 4, res.summary()
    assert "iteration 5 ended at 11.00 s with 187 e-nodes, too many to copy back" in res.stop_detail
    assert "using the e-graph after iteration 4 (162 e-nodes)" in res.stop_detail
    assert res.egraph_nodes == 162 and seen[-1][0] == 162


@needs_fork
def test_a_child_with_nothing_to_send_in_time_falls_back_to_the_calm_e_graph(clock, boom_rules, monkeypatch):
    """The only step in the child ends at 11.8 s of a 12 s bound with 0.5 s of tail to reserve:
    neither its e-graph nor the one before the step can be copied back in time, so the child
    sends none and the parent keeps its own."""
    monkeypatch.setattr(sat, "CALM_NODES", 0)
    monkeypatch.setitem(budget_mod._rate, "fixed", 0.5)
    monkeypatch.setitem(budget_mod._rate, "per_node", 0.0)
    _step_costs(monkeypatch, clock, lambda k: 11.8)
    res = optimize(sum_of(5), rules=boom_rules, shipped_rules=False, validate=False,
                   limits=Limits(iterations=5, nodes=10**6, seconds=10.0, match_limit=10**9))
    assert res.stop_reason is StopReason.TIME_LIMIT and res.iterations == 0, res.summary()
    assert ("the isolated saturation process finished iteration 1 at 11.80 s, too late to copy its"
            in res.stop_detail), res.stop_detail
    assert "using the e-graph after iteration 0" in res.stop_detail
    assert not res.fell_back
