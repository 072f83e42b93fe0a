"""optimize(): end to end on random programs, limits and stop reasons, rule hits, costs, the
library kernels, and the public result fields."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings

from bench.saturation_bound import sum_of
from eggpu.ir import Builder, Function, bool_, f32, i32, pointer, scalar
from eggpu.ir.errors import EggpuError, RuleError
from eggpu.ir.interp import interpret
from eggpu.ir.printer import print_function
from eggpu.optimizer import Limits, OptimizeResult, StopReason, optimize


def _strategies():
    name = "eggpu_tests_ir_strategies"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).parents[1] / "ir" / "strategies.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


# ---------------------------------------------------------------------- helpers


def _args(fn: Function, n: int, seed: int):
    rng = np.random.default_rng(seed)
    out = []
    for p in fn.params:
        dt = p.type.dtype
        if not p.type.is_pointer:
            out.append(True if dt.is_bool else (-2.5 if dt.is_float else 3))
        elif dt.is_float:
            vals = rng.standard_normal(n) * 4
            vals[:4] = [0.0, -0.0, np.inf, np.nan][: min(4, n)]
            out.append(vals.astype(dt.np))
        elif dt.is_bool:
            out.append(rng.integers(0, 2, n).astype(bool))
        else:
            out.append(rng.integers(max(dt.min, -50), min(dt.max, 50), n, endpoint=True).astype(dt.np))
    return out


def _outputs(fn: Function, args, grid=1):
    args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    interpret(fn, grid, *args)
    return [a for a in args if isinstance(a, np.ndarray)]


def _bitwise_equal(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal values; floats compared by bits except that any NaN equals any NaN."""
    if a.dtype.kind in "iub":
        return np.array_equal(a, b)
    x, y = a.astype(np.float64), b.astype(np.float64)
    nan = np.isnan(x) & np.isnan(y)
    return bool(np.all(nan | (x.view(np.int64) == y.view(np.int64))))


_UB_OPS = {"div", "rem", "shl", "shr"}


def _has_int_ub(fn: Function) -> bool:
    """Integer division and shifts may hit undefined lanes, where a rewrite may change the
    (reference-defined) value; such programs are only checked by validation."""
    return any(op.op in _UB_OPS and op.operands[0].type.dtype.is_int for op in fn.walk())


def vector_kernel(compute, dt=i32, n=128):
    b = Builder("k", [("x", pointer(dt)), ("out", pointer(dt)), ("a", scalar(dt)), ("c", scalar(dt))])
    offs = b.op("arange", start=0, end=n)
    x = b.op("load", b.op("addptr", b.op("splat", b.param("x"), shape=(n,)), offs))
    v = compute(b, x, b.param("a"), b.param("c"))
    b.effect("store", b.op("addptr", b.op("splat", b.param("out"), shape=(n,)), offs), v)
    return b.finish()


# ---------------------------------------------------------------------- random programs


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(_strategies().random_programs(max_ops=10, shapes=((4,), (3,), (2, 3))))
def test_random_programs_keep_their_meaning(fn):
    before = print_function(fn)
    res = optimize(fn)
    assert print_function(fn) == before, "optimize mutated its input"
    # validation may give up (unknown -> fallback), but it must never find the result wrong
    assert res.validation is not None and res.validation.verdict != "invalid", res.validation
    assert res.fell_back == (res.validation.verdict != "valid")
    if _has_int_ub(fn):
        return
    n = _strategies().max_numel(((4,), (3,), (2, 3)))
    args = _args(fn, n, seed=1)
    for got, want in zip(_outputs(res.function, args), _outputs(fn, args)):
        assert _bitwise_equal(got, want), (print_function(fn), print_function(res.function), got, want)


def test_let_names_are_never_reused_between_programs():
    """Every program is added to one cached e-graph between push and pop; egglog 13.2 can leak a
    let binding of a popped program into a later one that reuses its name (a random program got
    its ``$v1`` e-class for ``$v12`` after 75 earlier programs: 'no extractable term of type
    ptr<u64>[3]'). Names are unique per process, so nothing can leak."""
    from eggpu.optimizer.encode import encode

    fn = vector_kernel(lambda b, x, a, c: b.op("add", x, b.op("splat", a, shape=(128,))))
    first, second = encode(fn), encode(fn)
    assert first.let_types and not set(first.let_types) & set(second.let_types)
    assert sorted(first.structure) == sorted(first.let_types)


@pytest.mark.slow  # ~20 s: a fresh process optimizes 76 programs
def test_random_programs_after_many_others_still_extract(tmp_path):
    """The sequence that exposed the leaked let binding: hypothesis's programs 1-76 (seed 2), in
    a fresh process as they were found. The 76th fell back with 'no extractable term of type
    ptr<u64>[3]' (its 14th let referred to its 2nd let's e-class); no program may fall back on
    extraction. data/leaked_let_sequence.ir holds the programs, separated by blank lines."""
    import subprocess

    data = Path(__file__).parent / "data" / "leaked_let_sequence.ir"
    script = tmp_path / "replay.py"
    script.write_text(
        "import sys\n"
        "from eggpu.ir.parser import parse_function\n"
        "from eggpu.optimizer import optimize\n"
        f"programs = open({str(data)!r}).read().strip().split('\\n\\n')\n"
        "for i, text in enumerate(programs):\n"
        "    res = optimize(parse_function(text))\n"
        "    if res.fell_back and 'extract' in res.reason:\n"
        "        sys.exit(f'program {i + 1}: {res.reason}')\n"
        "print(len(programs))\n")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["76"]


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(_strategies().random_programs(max_ops=8, shapes=((5,),)))
def test_random_programs_survive_tiny_limits(fn):
    """Whatever limit stops saturation, the result is valid (or the input)."""
    assume(fn.op_count() > 3)
    res = optimize(fn, limits=Limits(iterations=1, nodes=10_000, seconds=5))
    assert res.stop_reason in (StopReason.ITERATION_LIMIT, StopReason.SATURATED, StopReason.NODE_LIMIT)
    assert res.validation.verdict != "invalid"


# ---------------------------------------------------------------------- limits





@pytest.mark.parametrize("nodes", [20_000, 30_000])
def test_exploding_rules_stop_at_the_node_limit_with_a_valid_result(boom_rules, nodes):
    """Iteration 4 grows the e-graph from 2,758 to 32,837 e-nodes: it is undone. The e-graph is
    past the small sizes run in process by then, so the step runs in a child process: hot (over
    nodes / 8) with 20,000, still calm (plain steps) with 30,000 — which used to hang there until
    the deadline when the child pushed the e-graph. (A huge match limit turns the back-off
    scheduler off, which would otherwise skip these rules: see test_saturate.py.)"""
    fn = sum_of(30)
    res = optimize(fn, rules=boom_rules, shipped_rules=False,
                   limits=Limits(iterations=100, nodes=nodes, seconds=60, match_limit=10**9))
    assert res.stop_reason is StopReason.NODE_LIMIT, res.summary()
    assert res.iterations == 3 and res.egraph_nodes == 2758
    assert "iteration 4 grew the e-graph to 32837 e-nodes" in res.stop_detail
    assert not res.fell_back and res.validation.ok
    assert set(res.rule_hits) == {"boom-comm", "boom-assoc"}
    args = [np.zeros(1, np.int32)] + list(range(1, 31))
    out = args[0].copy()
    interpret(res.function, 1, out, *args[1:])
    assert out[0] == sum(range(1, 31))


def test_iteration_and_time_limits(boom_rules):
    fn = sum_of(30)
    res = optimize(fn, rules=boom_rules, shipped_rules=False, limits=Limits(iterations=2, nodes=10**6))
    assert res.stop_reason is StopReason.ITERATION_LIMIT and res.iterations == 2 and res.validation.ok
    res = optimize(fn, rules=boom_rules, shipped_rules=False, limits=Limits(iterations=100, nodes=10**6, seconds=0))
    assert res.stop_reason is StopReason.TIME_LIMIT and res.validation.ok


def test_small_rule_sets_saturate():
    fn = vector_kernel(lambda b, x, a, c: b.op("where", b.op("lt", x, x), x, x))
    res = optimize(fn)
    assert res.stop_reason is StopReason.SATURATED
    assert str(res.stop_reason) == "saturated"


def test_limits_are_checked():
    for bad in (dict(nodes=0), dict(iterations=-1), dict(seconds=-1.0), dict(step=0), dict(match_limit=0),
                dict(memory_mb=1)):
        with pytest.raises(EggpuError, match="limits"):
            Limits(**bad)


# ---------------------------------------------------------------------- costs and rule hits


@pytest.mark.parametrize("name,compute", [
    ("mul-by-8", lambda b, x, a, c: b.op("mul", x, b.op("splat", b.const(8, i32), shape=x.type.shape))),
    ("splat-folding", lambda b, x, a, c: b.op("add", x, b.op("add", b.op("splat", a, shape=x.type.shape),
                                                               b.op("splat", c, shape=x.type.shape)))),
    ("where-same", lambda b, x, a, c: b.op("where", b.op("lt", x, b.op("splat", a, shape=x.type.shape)), x, x)),
])
def test_cost_strictly_decreases_on_obvious_wins(name, compute):
    fn = vector_kernel(compute)
    res = optimize(fn)
    assert res.validation.ok and not res.fell_back
    assert res.cost_after < res.cost_before, res.summary()
    assert res.rule_hits and all(isinstance(k, str) and v > 0 for k, v in res.rule_hits.items())
    assert set(res.rule_hits) <= set(res.rules_used)
    args = _args(fn, 128, seed=3)
    for got, want in zip(_outputs(res.function, args), _outputs(fn, args)):
        assert _bitwise_equal(got, want)


def test_fast_math_rules_fire_only_with_fast_math():
    def compute(b, x, a, c):
        return b.op("div", x, b.op("splat", b.const(3.0, f32), shape=x.type.shape))

    fn = vector_kernel(compute, dt=f32)
    exact = optimize(fn)
    assert not any(r.startswith("fm-") for r in exact.rule_hits)
    assert all(v == "fast_math" for n, v in exact.rules_rejected.items() if n.startswith("fm-"))
    fast = optimize(fn, fast_math=True)
    assert any(r.startswith("fm-") for r in fast.rule_hits), fast.rule_hits
    assert fast.cost_after < exact.cost_after and fast.validation is not None


def test_result_fields_and_summary():
    fn = vector_kernel(lambda b, x, a, c: b.op("mul", x, b.op("splat", b.const(8, i32), shape=x.type.shape)))
    res = optimize(fn)
    assert isinstance(res, OptimizeResult)
    assert set(res.times) == {"encode", "saturate", "extract", "decode", "validate"}
    assert all(t >= 0 for t in res.times.values()) and res.times["saturate"] > 0
    assert res.egraph_nodes > 0 and res.iterations >= 1 and res.improved
    assert len(res.rules_used) >= 60
    text = res.summary()
    assert "cost" in text and "validation: valid" in text and "rule hits" in text


def test_extra_rules_from_the_environment(tmp_path, monkeypatch):
    p = tmp_path / "env.egg"
    p.write_text('(rewrite (Not t (Not t (Not t x))) (Not t x) :name "t-env-rule")\n')
    monkeypatch.setenv("EGGPU_RULES_PATH", str(tmp_path))
    res = optimize(vector_kernel(lambda b, x, a, c: b.op("not", b.op("not", b.op("not", x)))))
    assert "t-env-rule" in res.rules_used
    assert res.validation.ok and res.cost_after < res.cost_before


def test_bad_rule_files_raise(tmp_path):
    p = tmp_path / "bad.egg"
    p.write_text('(rewrite (Addd t x y) x :name "t-typo")\n')
    with pytest.raises(RuleError, match="bad.egg"):
        optimize(vector_kernel(lambda b, x, a, c: x), rules=[p])


def test_unknown_target_raises():
    with pytest.raises(EggpuError, match="target"):
        optimize(vector_kernel(lambda b, x, a, c: x), target="gfx1100")


def test_bool_and_pointer_values_survive():
    b = Builder("k", [("x", pointer(f32)), ("m", pointer(bool_)), ("n", scalar(i32))])
    offs = b.op("arange", start=0, end=16)
    p = b.op("addptr", b.op("splat", b.param("x"), shape=(16,)), offs)
    mask = b.op("and", b.op("lt", offs, b.op("splat", b.param("n"), shape=(16,))),
                b.op("lt", offs, b.op("splat", b.param("n"), shape=(16,))))
    b.effect("store", p, b.op("load", p, mask), mask)
    b.effect("store", b.op("addptr", b.op("splat", b.param("m"), shape=(16,)), offs), mask)
    fn = b.finish()
    res = optimize(fn)
    assert res.validation.ok and res.cost_after < res.cost_before  # and(x, x) -> x


# ---------------------------------------------------------------------- the kernel library


def _library():
    try:
        from eggpu.kernels import LIBRARY
    except ImportError as e:  # pragma: no cover - the library is written in parallel
        pytest.skip(f"eggpu.kernels.LIBRARY is not available yet: {e}")
    return LIBRARY


def _library_params():
    try:
        from eggpu.kernels import LIBRARY
    except ImportError:  # pragma: no cover
        return [pytest.param(None, marks=pytest.mark.skip(reason="eggpu.kernels.LIBRARY is not available yet"))]
    return [pytest.param(lk.name, id=lk.name) for lk in LIBRARY]


def _check_library_kernel(name: str, dtype_index: int) -> None:
    lib = {lk.name: lk for lk in _library()}
    lk = lib[name]
    if dtype_index >= len(lk.dtypes):
        pytest.skip(f"{name} has {len(lk.dtypes)} dtypes")
    dtype = lk.dtypes[dtype_index]
    case = lk.make_case(lk.sizes[0], dtype, np.random.default_rng(0))
    fn = lk.instance(case).ir()
    res = optimize(fn)
    assert not res.fell_back, res.reason
    assert res.validation.ok and res.cost_after <= res.cost_before
    want = case.run(lambda grid, *args: interpret(fn, grid, *args))
    got = case.run(lambda grid, *args: interpret(res.function, grid, *args))
    for out in case.outputs:
        assert _bitwise_equal(got[out], want[out]), f"{name}[{dtype}]: output {out} changed"


@pytest.mark.parametrize("name", _library_params())
def test_library_kernels_optimize_validate_and_keep_their_results(name):
    _check_library_kernel(name, 0)


@pytest.mark.slow
@pytest.mark.parametrize("dtype_index", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("name", _library_params())
def test_library_kernels_every_dtype(name, dtype_index):
    _check_library_kernel(name, dtype_index)


# ---------------------------------------------------------------------- eggpu.testing helpers

MUL8_BEFORE = """kernel k(%x: ptr<i32>) grid=1 {
  %0 = arange() {end=128, start=0} : i32[128]
  %1 = splat(%x) {shape=(128)} : ptr<i32>[128]
  %2 = addptr(%1, %0) : ptr<i32>[128]
  %3 = load(%2) : i32[128]
  %4 = const() {dtype=i32, value=8} : i32
  %5 = splat(%4) {shape=(128)} : i32[128]
  %6 = mul(%3, %5) : i32[128]
  store(%2, %6)
}"""
MUL8_AFTER = MUL8_BEFORE.replace("value=8", "value=3").replace("mul(", "shl(")
MUL8_RULE = ('(rewrite (Mul t x (Splat t s (Const t 8))) (Shl t x (Splat t s (Const t 3))) '
             ':when ((IsInt t)) :name "t-mul8-shl")')


def test_assert_rewrites_and_assert_equivalent():
    from eggpu.testing import assert_equivalent, assert_rewrites

    res = assert_rewrites(MUL8_RULE, MUL8_BEFORE, MUL8_AFTER)
    assert res.rule_hits == {"t-mul8-shl": 1}
    with pytest.raises(AssertionError, match="differs from the expected"):
        assert_rewrites(MUL8_RULE, MUL8_BEFORE, MUL8_BEFORE)
    with pytest.raises(AssertionError, match="not proved"):
        assert_rewrites('(rewrite (Mul t x (Splat t s (Const t 8))) (Shl t x (Splat t s (Const t 8))) '
                        ':when ((IsInt t)) :name "t-wrong-shift")', MUL8_BEFORE, MUL8_AFTER)
    assert assert_equivalent(MUL8_BEFORE, MUL8_AFTER).ok
    with pytest.raises(AssertionError, match="invalid"):
        assert_equivalent(MUL8_BEFORE, MUL8_AFTER.replace("value=3", "value=2"))


# ---------------------------------------------------------------------- failures fall back


def test_egglog_panics_become_eggpu_errors():
    from egglog.bindings import EGraph

    from eggpu.optimizer.saturate import SaturationError, run_commands

    with pytest.raises(SaturationError, match="egglog failed"):
        run_commands(EGraph(), "(run-schedule (run no_such_ruleset))", "running rules")


def test_a_failing_stage_falls_back_and_the_cached_egraph_is_rebuilt(monkeypatch):
    import eggpu.optimizer.saturate as sat
    from eggpu.optimizer.saturate import SaturationError

    fn = vector_kernel(lambda b, x, a, c: b.op("mul", x, b.op("splat", b.const(8, i32), shape=x.type.shape)))
    real = sat.saturate

    def broken(eg, *a, **k):
        real(eg, *a, **k)  # leaves push levels behind, as a crash half-way would
        raise SaturationError("egglog failed while running rules: PanicException: boom")

    monkeypatch.setattr(sat, "saturate", broken)
    res = optimize(fn)
    assert res.fell_back and "boom" in res.reason and res.stop_reason is None
    monkeypatch.setattr(sat, "saturate", real)
    again = optimize(fn)
    assert not again.fell_back and again.validation.ok and again.egraph_nodes < 100
