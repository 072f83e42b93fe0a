"""Translation validation's solver budgets are z3 resource units, not wall-clock time: the same
pair of functions gets the same verdict and the same unit count in every fresh process, a budget
too small gives ``unknown`` by resource count, and the optimizer then falls back saying why."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from eggpu.ir import i32, i64
from eggpu.optimizer import optimize
from eggpu.optimizer.validate import validate

from .test_validate import _fp_rem_kernel, c, kernel


def _xor_via_or_and(dt):
    """(x | y) - (x & y) == x ^ y: true at every width, but only a bit-level proof shows it."""
    before = kernel(lambda b, x, y: b.op("sub", b.op("or", x, y), b.op("and", x, y)), dt)
    after = kernel(lambda b, x, y: b.op("xor", x, y), dt)
    return before, after


def _rem8():
    """A kernel the shipped rules rewrite so that validation needs a solver query."""
    return kernel(lambda b, x, y: b.op("rem", b.op("and", x, c(b, 255, i32, x)), c(b, 8, i32, x)), i32)


def test_a_valid_rewrite_is_proved_within_budget_and_reports_units():
    before, after = _xor_via_or_and(i64)
    v = validate(before, after)
    assert v.verdict == "valid", v.detail
    assert v.units > 0 and v.strategy == "z3" and dict(v.strategies)["z3"] == v.units
    assert v.budget_units > v.units and not v.wall_capped
    d = v.as_dict()
    assert d["units"] == v.units and d["strategy"] == "z3" and d["verdict"] == "valid"
    json.dumps(d)  # JSON-able, for ck.report


def test_a_budget_too_small_gives_unknown_by_resource_count():
    before, after = _xor_via_or_and(i64)
    v = validate(before, after, timeout_ms=0)  # one millisecond's worth of units per check
    assert v.verdict == "unknown"
    assert "resource limit" in v.detail and "5000-unit z3 budget" in v.detail, v.detail
    assert not v.wall_capped and 0 < v.units <= v.budget_units
    # the same budget gives the same verdict and count again (in this process as well)
    w = validate(before, after, timeout_ms=0)
    assert (w.verdict, w.units, w.detail) == (v.verdict, v.units, v.detail)


def test_a_spent_total_budget_gives_unknown_and_says_so():
    before, after = _xor_via_or_and(i64)
    v = validate(before, after, total_seconds=0)  # 5000 units for the whole validation
    assert v.verdict == "unknown" and v.budget_units == 5000
    assert "the validation's budget of 5000 resource units is spent" in v.detail, v.detail


def test_optimize_falls_back_when_validation_runs_out_of_units(monkeypatch):
    import eggpu.optimizer.rule_budget as rb

    fn = _rem8()
    res = optimize(fn)
    assert not res.fell_back and res.validation.ok and res.validation.solver_calls >= 1 and res.validation.units > 0
    for k in rb.UNITS_PER_MS:  # the same budget in ms is now 50,000 times fewer units
        monkeypatch.setitem(rb.UNITS_PER_MS, k, 0.1)
    small = optimize(fn)
    assert small.fell_back and small.validation.verdict == "unknown"
    assert "translation validation: unknown" in small.reason and "resource limit" in small.reason, small.reason
    assert "units of a" in small.reason


def test_the_compile_report_keeps_strategy_and_units():
    import eggpu
    import eggpu.language as tl

    @eggpu.kernel
    def rem8(x_ptr: tl.Pointer[tl.i32], y_ptr: tl.Pointer[tl.i32]):
        offs = tl.arange(0, 8)
        tl.store(y_ptr + offs, (tl.load(x_ptr + offs) & 255) % 8)

    opt = eggpu.compile(rem8.__eggpu_kernel__(), cache=False).report["optimizer"]
    d = opt["validation_detail"]
    assert d["verdict"] == opt["validation"] == "valid" and not opt["fell_back"]
    assert d["strategy"] in ("none", "z3") and d["units"] == sum(d["units_by_strategy"].values())
    assert (d["units"] > 0) == (d["solver_calls"] > 0) and d["budget_units"] == 50_000_000
    json.dumps(opt)


_CHILD = """
import json, sys
sys.path.insert(0, {root!r})
from tests.optimizer.test_validate_budget import cases
from eggpu.optimizer.validate import validate
names = sys.argv[1].split(",")
out = {{}}
for name in names:
    v = validate(*cases()[name]())
    out[name] = [v.verdict, v.units, list(map(list, v.strategies)), v.checks, v.solver_calls, v.detail]
print(json.dumps(out))
"""


def cases():
    """Named (before, after) pairs for the fresh-process runs."""
    from eggpu.ir import f32

    def opt(fn):
        return lambda: (fn, optimize(fn, validate=False).function)

    return {
        "xor64": lambda: _xor_via_or_and(i64),
        "xor32": lambda: _xor_via_or_and(i32),
        "rem8": opt(_rem8()),
        "fp_rem": opt(_fp_rem_kernel()),
        "distribute_f32": lambda: (kernel(lambda b, x, y: b.op("mul", b.op("add", x, y), y), f32),
                                   kernel(lambda b, x, y: b.op("add", b.op("mul", x, y), b.op("mul", y, y)), f32)),
    }


def _fresh(names: list[str]) -> dict:
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = subprocess.run([sys.executable, "-c", _CHILD.format(root=root), ",".join(names)], capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_verdict_and_units_are_equal_in_fresh_processes():
    """Two fresh processes validating the same pairs: the same verdict, units and detail for every
    pair (the float distributivity pair runs out of units: ``unknown``, by count, in both)."""
    names = list(cases())
    a = _fresh(names)
    assert _fresh(names) == a
    assert a["xor64"][0] == "valid" and a["xor64"][1] > 0 and a["xor32"][0] == "valid"
    assert a["rem8"][0] == "valid" and a["fp_rem"][0] == "valid"
    assert a["distribute_f32"][0] == "unknown" and "resource limit" in a["distribute_f32"][5]


@pytest.mark.slow
def test_other_validations_before_do_not_change_verdicts():
    """Validating in the opposite order (other terms in z3's main context, other generalized proofs
    cached): the same verdicts, details and unit counts, float queries included (a model read after
    the fp_rem pair once changed the float pair's units by 2 %: see test_solver_determinism)."""
    names = list(cases())
    a, b = _fresh(names), _fresh(names[::-1])
    for name in names:
        assert a[name] == b[name], name
