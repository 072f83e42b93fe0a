"""The z3 resource units (and so the verdicts near a budget) of a rule proof or a translation
validation are a function of the query alone: the same in fresh processes under any
``PYTHONHASHSEED`` and after other queries in the same process — in particular after a
counterexample was read from a model. Reading a model once went through a translation into the main
z3 context, which copied the decl-plugin families the solver had registered; every later session
inherited them and the same float query spent other units (``mul-minus-one-float`` at f16:
48,992 alone, 81,510 after one refuted float rule). See :mod:`eggpu.optimizer.rule_budget`."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

_RULES_CHILD = """
import json, sys
sys.path.insert(0, {root!r})
from eggpu.ir.dtypes import BY_NAME
from eggpu.optimizer.rule_verifier import verify_rule
from eggpu.optimizer.rules_loader import load_rules
shipped = {{r.name: r for r in load_rules([], shipped=True, env=False).rules}}
out = []
for rule, dts in json.loads(sys.argv[1]):  # rule text, or the name of a shipped rule
    v = verify_rule(rule if rule.startswith("(") else shipped[rule], dtypes=[BY_NAME[d] for d in dts])
    out.append([[r.key, r.status, r.strategy, r.rlimit] for r in v.results])
print(json.dumps(out))
"""

_VALIDATE_CHILD = """
import json, sys
sys.path.insert(0, {root!r})
from tests.optimizer.test_solver_determinism import validation_cases
from eggpu.optimizer.validate import validate
out = []
for name in json.loads(sys.argv[1]):
    v = validate(*validation_cases()[name]())
    out.append([v.verdict, v.units, [list(s) for s in v.strategies], v.checks, v.solver_calls, v.detail])
print(json.dumps(out))
"""


def _child(script: str, job: list, hashseed: str) -> list:
    env = dict(os.environ, PYTHONHASHSEED=hashseed)
    out = subprocess.run([sys.executable, "-c", script.format(root=ROOT), json.dumps(job)], capture_output=True,
                         text=True, timeout=600, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


_MUL_MINUS_ONE = ('(rewrite (Mul t x (Splat t s (ConstF t -1.0))) (Neg t x) :when ((IsFloat t)) '
                  ':name "mul-minus-one-float")')
_MUL_TWO = '(rewrite (Mul t x (Splat t s (ConstF t 2.0))) (Add t x x) :when ((IsFloat t)) :name "mul-two-float")'
#: unsound float rules: z3 answers with a model, which the verifier reads for the counterexample
_REFUTED = [('(rewrite (Add t x (Splat t s (ConstF t 0.0))) x :when ((IsFloat t)) :name "add-zero")', ["f16", "f32"]),
            ('(rewrite (Add t (Add t x y) y) (Add t x (Add t y y)) :when ((IsFloat t)) :name "bad-assoc")', ["f16"])]
_TARGETS = [(_MUL_MINUS_ONE, ["f16", "bf16", "f32"]), (_MUL_TWO, ["f16", "f32"])]


def test_float_rule_units_do_not_depend_on_hash_seed_or_on_earlier_refutations():
    alone = _child(_RULES_CHILD, _TARGETS, "0")
    assert alone == _child(_RULES_CHILD, _TARGETS, "1")
    after = _child(_RULES_CHILD, _REFUTED + _TARGETS, "2")
    for results in after[:len(_REFUTED)]:  # the premise: each of them read a z3 model
        assert results and all(r[1] == "refuted" and r[2] == "z3-fp" for r in results), results
    assert after[len(_REFUTED):] == alone
    for results in alone:
        assert all(r[1] == "proved" and r[2] == "z3-fp" and r[3] > 0 for r in results), results


def validation_cases():
    """Named (before, after) pairs for the validation runs."""
    from eggpu.ir import f32

    from .test_validate import c, kernel

    def pair(before, after, dt=f32):
        return lambda: (kernel(before, dt), kernel(after, dt))

    return {
        # x + 0.0 -> x is wrong at x = -0.0: a counterexample read from a model
        "add_zero": pair(lambda b, x, y: b.op("add", x, c(b, 0.0, f32, x)), lambda b, x, y: x),
        # x * 2.0 -> x + x is right: float queries whose units are compared
        "mul_two": pair(lambda b, x, y: b.op("mul", x, c(b, 2.0, f32, x)), lambda b, x, y: b.op("add", x, x)),
        "half": pair(lambda b, x, y: b.op("div", x, c(b, 2.0, f32, x)), lambda b, x, y: b.op("mul", x, c(b, 0.5, f32, x))),
    }


def test_validation_units_do_not_depend_on_hash_seed_or_on_an_earlier_counterexample():
    targets = ["mul_two", "half"]
    alone = _child(_VALIDATE_CHILD, targets, "0")
    assert alone == _child(_VALIDATE_CHILD, targets, "1")
    after = _child(_VALIDATE_CHILD, ["add_zero", *targets], "2")
    assert after[0][0] == "invalid" and "differs at lane" in after[0][5], after[0]
    assert after[1:] == alone
    assert all(v[0] == "valid" and v[1] > 0 for v in alone), alone


@pytest.mark.slow
def test_shipped_float_rules_prove_with_the_same_units_in_any_order():
    """Every shipped rule with a float instance, proved in file order and in reverse order (with
    an unsound float rule first) in two processes: identical verdicts and units."""
    from eggpu.optimizer.rules_loader import load_rules

    names = [r.name for r in load_rules([], shipped=True, env=False).rules if "Float" in r.text or "ConstF" in r.text]
    assert len(names) >= 20
    job = [(n, ["f16", "bf16", "f32", "f64"]) for n in names]
    forward = _child(_RULES_CHILD, job, "0")
    backward = _child(_RULES_CHILD, _REFUTED + job[::-1], "1")[len(_REFUTED):][::-1]
    assert forward == backward
