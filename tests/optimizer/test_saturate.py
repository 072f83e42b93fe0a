"""Bounded saturation: e-graphs that explode inside one egglog iteration stay within their time,
node and memory limits, and say why they stopped (optimizer/saturate.py, optimizer/isolate.py).

The pathological kernels are the ones of issue 9: ``s * 0`` on an i32 scalar and a block
``load(...) * 0`` made the zero class cyclic and one iteration found ~8,000,000
``mul-assoc-int`` matches (88 s, 3 GB) with the shipped rules. The time bounds below are bounds
on pathological cases (a 0.5 s limit must return within 5 s), not benchmarks.
"""

from __future__ import annotations

import os
import signal
import time

import numpy as np
import pytest

from bench.saturation_bound import block_times_zero, scalar_times_zero, sum_of
from eggpu.ir.errors import EggpuError
from eggpu.ir.interp import interpret
from eggpu.optimizer import Limits, StopReason, isolate, optimize
from eggpu.optimizer.saturate import step_program

pytestmark = pytest.mark.skipif(not isolate.AVAILABLE, reason="needs fork()")






@pytest.fixture(scope="module", autouse=True)
def warm_egraph():
    """Prove the shipped rules and build their e-graph once, so timings below are saturation."""
    optimize(sum_of(2))


def _timed(fn, **kw):
    t = time.monotonic()
    res = optimize(fn, **kw)
    return res, time.monotonic() - t


# ---------------------------------------------------------------------- the kernels


@pytest.mark.parametrize("seconds", [0.5, 2.0])
def test_scalar_times_zero_is_bounded(seconds):
    fn = scalar_times_zero.__eggpu_kernel__().ir()
    res, took = _timed(fn, limits=Limits(seconds=seconds))
    assert took < 5.0, res.summary()
    assert res.times["saturate"] < seconds * 1.2 + 0.3, res.summary()  # generous: 6 engineers share 2 cores
    assert res.stop_reason in (StopReason.MATCH_LIMIT, StopReason.TIME_LIMIT), res.summary()
    assert 0 < res.egraph_nodes < 2_000
    assert res.rule_hits.get("mul-assoc-int", 0) < 10_000  # was 585,722 in one iteration
    assert not res.fell_back and res.validation.ok
    assert res.cost_after < res.cost_before  # s * 0 -> 0 survived the cut
    out = np.full(1, 7, np.int32)
    interpret(res.function, 1, out, 12345)
    assert out[0] == 0


def test_block_times_zero_is_bounded_and_keeps_its_results():
    k = block_times_zero.__eggpu_kernel__(BLOCK=128)
    fn = k.ir()
    res, took = _timed(fn, limits=Limits(seconds=0.5))
    assert took < 5.0 and res.times["saturate"] < 0.9, res.summary()
    assert res.stop_reason in (StopReason.MATCH_LIMIT, StopReason.TIME_LIMIT), res.summary()
    assert 0 < res.egraph_nodes < 2_000
    assert not res.fell_back and res.validation.ok
    if res.iterations == 0:  # a loaded machine: the 0.5 s ran out inside the first iteration
        pytest.skip(f"no iteration finished within 0.5 s on this machine (load), so none could be kept: "
                    f"{res.summary()}")
    assert res.cost_after < res.cost_before  # load * 0 -> 0 survived the cut
    n = 300  # ragged: three programs, the last one masked
    x = np.arange(n, dtype=np.int32) - 150
    y = np.full(n + 5, -1, np.int32)
    interpret(res.function, 3, x, y, n)
    assert np.array_equal(y[:n], np.zeros(n, np.int32)) and np.all(y[n:] == -1)


def test_match_limit_stop_is_reported():
    res = optimize(scalar_times_zero.__eggpu_kernel__().ir(), limits=Limits(seconds=30))
    assert res.stop_reason is StopReason.MATCH_LIMIT and str(res.stop_reason) == "match_limit"
    assert "more than 1000 matches" in res.stop_detail
    assert "stopped: match_limit" in res.summary() and "stop: the e-graph stopped changing" in res.summary()
    res = optimize(scalar_times_zero.__eggpu_kernel__().ir(), limits=Limits(seconds=30, match_limit=700))
    assert "more than 700 matches" in res.stop_detail


# ---------------------------------------------------------------------- one iteration explodes


@pytest.fixture
def hot_at_once(monkeypatch):
    """Every e-graph turns hot after its first step (so the calm e-graph is small)."""
    import eggpu.optimizer.saturate as sat

    monkeypatch.setattr(sat, "_is_hot", lambda limits, t0: lambda report, st, matches: True)


def test_an_iteration_that_explodes_is_killed_at_the_hard_deadline(boom_rules, hot_at_once, monkeypatch):
    """No match limit to speak of: comm + assoc over 30 operands, whose 5th iteration takes 6.5 s
    and grows the e-graph from 32,837 to 914,542 e-nodes; the child running it is killed and
    the e-graph of the last calm step is used."""
    fn = sum_of(30)
    # 2 s: iterations 2-4 (and reading their e-graphs) and the time reserved to copy back and
    # extract the 4th one's 32,837 e-nodes must fit before the 5th, or the child stops by itself;
    # the reserve is pinned low (10 us per e-node) so that this test reaches the 5th iteration
    import eggpu.optimizer.budget as budget_mod

    monkeypatch.setitem(budget_mod._rate, "per_node", 1e-5)
    limits = Limits(iterations=100, nodes=10**7, seconds=2.0, match_limit=10**9)
    res, _ = _timed(fn, rules=boom_rules, shipped_rules=False, limits=limits)
    assert res.times["saturate"] < limits.hard_seconds + 0.3, res.summary()
    if "was not started" in res.stop_detail:
        # a loaded machine runs iterations 2-4 so slowly that the child stops before the 5th by
        # itself (also within the limit, checked above): the kill this test is about never happens
        pytest.skip(f"the machine is too slow to reach the exploding iteration: {res.stop_detail}")
    # whichever hard bound the child hits first on this machine (time, or memory under load)
    assert res.stop_reason in (StopReason.TIME_LIMIT, StopReason.MEMORY_LIMIT), res.summary()
    assert ("killed at the hard time limit (2.40 s" in res.stop_detail
            or "exceeded its memory limit" in res.stop_detail), res.summary()
    assert res.iterations == 1 and "after iteration 1 (144 e-nodes)" in res.stop_detail
    assert res.egraph_nodes == 144
    assert not res.fell_back and res.validation.ok
    out = np.zeros(1, np.int32)
    interpret(res.function, 1, out, *range(1, 31))
    assert out[0] == sum(range(1, 31))


@pytest.mark.slow  # ~7 s: the exploding iteration takes that long to allocate 64 MiB
def test_an_iteration_that_explodes_stops_at_the_memory_limit(boom_rules, hot_at_once):
    fn = sum_of(30)
    limits = Limits(iterations=100, nodes=10**7, seconds=20, match_limit=10**9, memory_mb=64)
    res, took = _timed(fn, rules=boom_rules, shipped_rules=False, limits=limits)
    assert took < 20.0
    assert res.stop_reason is StopReason.MEMORY_LIMIT, res.summary()
    assert "exceeded its memory limit (64 MiB)" in res.stop_detail
    assert not res.fell_back and res.validation.ok


def test_exploding_rules_with_the_default_match_limit(boom_rules):
    """The same rules under the default limits end quickly: the back-off scheduler skips the
    rules once they have more than 1,000 matches an iteration."""
    fn = sum_of(30)
    res, took = _timed(fn, rules=boom_rules, shipped_rules=False, limits=Limits(seconds=0.5))
    assert took < 5.0 and res.times["saturate"] < 0.9, res.summary()
    assert res.stop_reason in (StopReason.MATCH_LIMIT, StopReason.TIME_LIMIT, StopReason.NODE_LIMIT)
    assert 0 < res.egraph_nodes <= 20_000
    assert not res.fell_back and res.validation.ok


def test_hot_steps_in_process_without_isolation():
    fn = scalar_times_zero.__eggpu_kernel__().ir()
    res = optimize(fn, limits=Limits(seconds=2.0, isolate=False))
    assert res.stop_reason in (StopReason.MATCH_LIMIT, StopReason.TIME_LIMIT), res.summary()
    assert 0 < res.egraph_nodes < 2_000 and not res.fell_back and res.validation.ok
    assert res.cost_after < res.cost_before


def test_calm_kernels_do_not_fork(monkeypatch):
    def no_fork(*a, **k):
        raise AssertionError("a calm e-graph must not fork")

    monkeypatch.setattr(isolate, "run_forked", no_fork)
    from eggpu.kernels import BY_NAME

    lk = BY_NAME["vector_add"]
    fn = lk.instance(lk.make_case(lk.sizes[0], lk.dtypes[0], np.random.default_rng(0))).ir()
    res = optimize(fn)
    assert res.stop_reason is StopReason.SATURATED and not res.fell_back


def test_a_failing_child_falls_back(monkeypatch):
    import eggpu.optimizer.saturate as sat

    def broken(*a, **k):
        return isolate.ForkOutcome("crashed", detail="died of signal SIGSEGV")

    monkeypatch.setattr(sat.isolate, "run_forked", broken)
    res = optimize(scalar_times_zero.__eggpu_kernel__().ir())
    assert res.fell_back and "SIGSEGV" in res.reason and res.stop_reason is None


# ---------------------------------------------------------------------- pieces


def test_step_program_uses_the_back_off_scheduler_only_with_a_match_limit():
    plain = step_program(["exact"], ["ranges"], 1)
    assert "back-off" not in plain and "(run exact)" in plain
    bo = step_program(["exact", "mine"], ["ranges"], 3, match_limit=250)
    assert "(back-off :match-limit 250" in bo and "(run-with bo exact)" in bo and "(run-with bo mine)" in bo
    assert "(repeat 3 " in bo and "(repeat 2 (run ranges))" in bo


def test_limits_defaults_and_checks():
    assert Limits().matches == 1000 and Limits(nodes=500).matches == 100 and Limits(match_limit=7).matches == 7
    assert Limits(seconds=2.0).hard_seconds == pytest.approx(2.4)
    for bad in (dict(match_limit=0), dict(memory_mb=10)):
        with pytest.raises(EggpuError, match="match_limit >= 1 .* memory_mb >= 64"):
            Limits(**bad)


def test_run_forked_outcomes():
    far = time.monotonic() + 30
    assert isolate.run_forked(lambda: {"a": [1, 2]}, deadline=far).value == {"a": [1, 2]}
    out = isolate.run_forked(lambda: 1 / 0, deadline=far)
    assert out.status == "error" and out.detail.startswith("ZeroDivisionError")
    out = isolate.run_forked(lambda: time.sleep(30), deadline=time.monotonic() + 0.3)
    assert out.status == "timeout" and out.seconds < 5
    out = isolate.run_forked(lambda: bytearray(512 << 20), deadline=far, memory_mb=64)
    assert out.status == "memory" and "64" in out.detail
    out = isolate.run_forked(lambda: os.kill(os.getpid(), signal.SIGSEGV), deadline=far)
    assert out.status == "crashed" and "SIGSEGV" in out.detail
    out = isolate.run_forked(lambda: (lambda: 0), deadline=far)  # not picklable
    assert out.status == "error" and "not picklable" in out.detail


@pytest.mark.slow  # ~5 s: a fresh process builds its e-graph
def test_peak_memory_of_the_pathological_kernels(tmp_path):
    """Peak RSS of a fresh process optimizing the issue's kernels stays under 1 GB (the child
    that runs hot steps included)."""
    import subprocess
    import sys

    script = tmp_path / "rss.py"
    script.write_text(
        "import resource, sys\n"
        f"sys.path.insert(0, {os.path.dirname(__file__)!r})\n"
        "import test_saturate as t\n"
        "from eggpu.optimizer import optimize\n"
        "for fn in (t.scalar_times_zero.__eggpu_kernel__().ir(), t.block_times_zero.__eggpu_kernel__(BLOCK=128).ir()):\n"
        "    assert not optimize(fn).fell_back\n"
        "me = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024\n"
        "kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024\n"
        "print(f'{me:.0f} {kids:.0f}')\n")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    me, kids = map(float, out.stdout.split())
    assert me < 1024 and kids < 1024, (me, kids)


@pytest.mark.parametrize("user_value", [None, "3"])
def test_egglog_thread_pool_is_pinned_to_one_thread_and_the_environment_restored(tmp_path, user_value):
    """A forked child cannot use a multi-threaded rayon pool (its workers do not exist there:
    with RAYON_NUM_THREADS=2 a large hot iteration hangs until the deadline), so the pool gets
    one thread even when the user set RAYON_NUM_THREADS; the variable is restored."""
    import subprocess
    import sys

    script = tmp_path / "pin.py"
    script.write_text(
        "import os\n"
        "from eggpu.optimizer.isolate import pin_egglog_threads\n"
        "before = len(os.listdir('/proc/self/task'))\n"
        "pin_egglog_threads()\n"
        "pin_egglog_threads()\n"
        "print(len(os.listdir('/proc/self/task')) - before, os.environ.get('RAYON_NUM_THREADS'))\n")
    env = {k: v for k, v in os.environ.items() if k != "RAYON_NUM_THREADS"}
    if user_value is not None:
        env["RAYON_NUM_THREADS"] = user_value
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    # egglog 13.2 builds its rayon pool with the first e-graph (one thread); egglog 14 builds none
    # then (none to miss in a forked child either)
    assert out.stdout.split() in (["1", str(user_value)], ["0", str(user_value)])


@pytest.mark.slow  # ~10 s: a fresh process and a 32,837-node iteration
def test_a_large_forked_iteration_finishes_with_rayon_threads_set(tmp_path):
    """With RAYON_NUM_THREADS=2 in the environment, a forked step whose iteration egglog runs in
    parallel used to wait for pool workers that do not exist in the child until its deadline."""
    import subprocess
    import sys

    script = tmp_path / "rayon.py"
    script.write_text(
        "import sys, time\n"
        f"sys.path.insert(0, {os.path.dirname(__file__)!r})\n"
        "import test_saturate as t\n"
        "import eggpu.optimizer.saturate as sat\n"
        "from eggpu.optimizer import Limits, optimize\n"
        "sat._is_hot = lambda limits, t0: (lambda report, st, matches: True)\n"
        f"open({str(tmp_path / 'boom.egg')!r}, 'w').write(t.BOOM)\n"
        "lim = Limits(iterations=4, nodes=10**7, seconds=60, match_limit=10**9)\n"
        f"r = optimize(t.sum_of(30), rules=[{str(tmp_path / 'boom.egg')!r}], shipped_rules=False, limits=lim,"
        " validate=False)\n"
        "print(r.stop_reason, r.egraph_nodes)\n")
    env = dict(os.environ, RAYON_NUM_THREADS="2")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["iteration_limit", "32837"], out.stdout


# ---------------------------------------------------------------------- where steps run


def _counting_forks(monkeypatch):
    calls = []
    real = isolate.run_forked

    def counted(*a, **k):
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr(isolate, "run_forked", counted)
    return calls


def test_an_e_graph_that_never_turns_hot_is_still_bounded(boom_rules, monkeypatch):
    """Calm steps used to run in this process until the e-graph turned hot: with a hot check
    that never fires, comm + assoc over 30 operands ran in process through its 6.5 s 5th
    iteration. Now only small steps run here; the rest run in the child under its deadline."""
    import eggpu.optimizer.saturate as sat

    monkeypatch.setattr(sat, "_is_hot", lambda limits, t0: lambda report, st, matches: False)
    forks = _counting_forks(monkeypatch)
    limits = Limits(iterations=100, nodes=10**7, seconds=1.0, match_limit=10**9)
    res = optimize(sum_of(30), rules=boom_rules, shipped_rules=False, limits=limits, validate=False)
    # the child never sends the 32,837-node e-graph: it could not be extracted within the bound
    assert forks and res.times["saturate"] < limits.hard_seconds + 0.5, res.summary()
    assert res.stop_reason in (StopReason.TIME_LIMIT, StopReason.MEMORY_LIMIT), res.summary()
    assert ("isolated saturation process" in res.stop_detail or "was not started" in res.stop_detail
            or "too many to copy back and extract" in res.stop_detail), res.summary()
    assert res.egraph_nodes < 32_837
    assert not res.fell_back


def test_steps_of_an_e_graph_past_the_small_sizes_run_in_the_child_with_the_same_result(monkeypatch):
    import eggpu.optimizer.saturate as sat
    from eggpu.ir.structural import first_difference
    from eggpu.kernels import BY_NAME

    lk = BY_NAME["gelu_backward"]
    fn = lk.instance(lk.make_case(lk.sizes[0], lk.dtypes[0], np.random.default_rng(0))).ir()
    # The first run on a freshly loaded e-graph can stop by back-off (match_limit) on the same
    # program: egglog re-finds old matches once (semi-naive timestamps survive pop). Whether this
    # thread loads a new e-graph here depends on the tests run before, so settle it first.
    optimize(fn)
    here = optimize(fn)
    assert here.stop_reason is StopReason.SATURATED
    monkeypatch.setattr(sat, "CALM_NODES", 4)  # every input is "large": all its steps are forked
    forks = _counting_forks(monkeypatch)
    there = optimize(fn)
    assert forks == [1] and there.stop_reason is StopReason.SATURATED and there.iterations == here.iterations
    assert first_difference(there.function, here.function) is None
    assert there.rule_hits == here.rule_hits and there.egraph_nodes == here.egraph_nodes


def test_a_large_input_is_saturated_in_the_child(monkeypatch):
    from eggpu.optimizer.saturate import CALM_NODES

    fn = sum_of(CALM_NODES // 2 + 10)  # params, adds and the store: more than CALM_NODES e-nodes
    forks = _counting_forks(monkeypatch)
    res = optimize(fn, limits=Limits(seconds=5))
    assert forks == [1] and not res.fell_back and res.validation.ok
    out = np.zeros(1, np.int32)
    interpret(res.function, 1, out, *range(CALM_NODES // 2 + 10))
    assert out[0] == sum(range(CALM_NODES // 2 + 10))


# ---------------------------------------------------------------------- undoing an in-process step


def test_an_in_process_step_past_the_node_limit_is_undone_by_replaying_the_kept_steps(boom_rules, monkeypatch):
    """No push before each step: the third iteration of comm + assoc over 6 operands grows the
    e-graph from 62 to 178 e-nodes, past 80; the run goes back to its start (the optimizer's
    ``restart``) and replays the two kept iterations: the result is the 2-iteration run's."""
    import eggpu.optimizer.saturate as sat
    from eggpu.ir.structural import first_difference

    rewinds = []
    real = sat._rewind
    monkeypatch.setattr(sat, "_rewind", lambda eg, st, limits: (rewinds.append(len(st.replay)), real(eg, st, limits)))
    fn = sum_of(6)
    kw = {"rules": boom_rules, "shipped_rules": False}
    res = optimize(fn, **kw, limits=Limits(iterations=100, nodes=80, seconds=30, match_limit=10**9))
    two = optimize(fn, **kw, limits=Limits(iterations=2, nodes=10**6, seconds=30, match_limit=10**9))
    assert rewinds == [2] and res.stop_reason is StopReason.NODE_LIMIT, res.summary()
    assert "iteration 3 grew the e-graph to 178 e-nodes (limit 80)" in res.stop_detail
    assert (res.iterations, res.egraph_nodes, res.rule_hits) == (2, 62, two.rule_hits) and two.egraph_nodes == 62
    assert first_difference(res.function, two.function) is None and res.validation.ok
    out = np.zeros(1, np.int32)
    interpret(res.function, 1, out, *range(1, 7))
    assert out[0] == sum(range(1, 7))


def test_without_restart_a_single_checkpoint_push_is_left_for_the_caller(boom_rules):
    """Called without ``restart``, saturate pushes once before its first in-process step (not
    once a step), undoes an overshooting step from that checkpoint, and leaves one push level."""
    from egglog.bindings import EGraph

    from eggpu.optimizer import prepare_rules
    from eggpu.optimizer.encode import encode
    from eggpu.optimizer.saturate import run_commands, saturate, term_nodes
    from eggpu.optimizer.schema import schema_text

    prepared = prepare_rules(boom_rules, shipped_rules=False)
    enc = encode(sum_of(6))
    eg = EGraph()
    eg.run_program(*eg.parse_program(schema_text() + prepared.program + enc.commands))
    start = term_nodes(eg)
    rep = saturate(eg, prepared.rulesets, Limits(iterations=100, nodes=80, seconds=30, match_limit=10**9))
    assert rep.stop_reason is StopReason.NODE_LIMIT and rep.rolled_back and rep.pushes == 1
    assert (rep.iterations, rep.nodes, term_nodes(eg)) == (2, 62, 62)
    run_commands(eg, "(pop 1)", "back to the input")
    assert term_nodes(eg) == start
    rep = saturate(eg, prepared.rulesets, Limits(iterations=2, nodes=10**6, seconds=30, match_limit=10**9))
    assert (rep.stop_reason, rep.nodes, rep.pushes) == (StopReason.ITERATION_LIMIT, 62, 1)
