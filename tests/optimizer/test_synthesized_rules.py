"""The shipped synthesized rules (``rules/synthesized.egg``, docs/rules.md §7).

One rule written by ``eggpu rules synthesize`` from the benchmark kernels is shipped:
``0.5 * (1.0 + x) => fma(x, 0.5, 0.5)`` at f32, which lowers gelu_backward's cost and its SASS.
Four more proved synthesized rules lowered the e-graph cost of naive kernels but lengthened or
did not change their SASS (docs/rules.md §7); they stay in the file as comments, and a test
below keeps them out of the loaded rules. The shipped rule:

- fires on its term and not at other constants or dtypes;
- is fully proved at f32 in ``rules/proofs.json`` (``test_shipped_proofs`` checks that file);
- fires on gelu_backward, which still computes what numpy does on ragged sizes (1, 1000, 1001).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import eggpu
from eggpu.optimizer.rules_loader import load_rules
from eggpu.testing import assert_rule_does_not_fire, assert_rule_fires

SYNTH = {r.name: r for r in load_rules(env=False).rules if r.file == "rules/synthesized.egg"}
NOT_SHIPPED = ("syn-i32-regroup-pow2", "syn-i32-mul-divrem-pow2", "syn-i32-mul-div-pow2",
               "syn-i32-rem-beside-div-768")


F = "(Opaque (F32) 1)"


def _fk(v: float, t: str = "F32") -> str:
    from eggpu.optimizer.schema import float_bits

    return f'(Splat ({t}) "16" (ConstF ({t}) {float_bits(v)}))'


FMA = ("syn-f32-half-one-plus-fma",
       f"(Mul (F32) {_fk(0.5)} (Add (F32) {_fk(1.0)} {F}))", f"(Fma (F32) {F} {_fk(0.5)} {_fk(0.5)})",
       [f"(Mul (F32) {_fk(0.25)} (Add (F32) {_fk(1.0)} {F}))",   # 0.25 * (1.0 + x): not the rule's constant
        f"(Mul (F32) {_fk(0.5)} (Add (F32) {_fk(2.0)} {F}))",
        "(Mul (F64) {} (Add (F64) {} (Opaque (F64) 1)))".format(_fk(0.5, "F64"), _fk(1.0, "F64"))])  # proved at f32 only


def test_only_the_rules_that_shorten_code_are_shipped():
    assert set(SYNTH) == {FMA[0]}
    text = (Path(__file__).resolve().parents[2] / "rules" / "synthesized.egg").read_text()
    for name in NOT_SHIPPED:  # kept as comments, with the measurements that keep them out
        assert f':name "{name}")' in text and name not in SYNTH


def test_the_f32_rule_fires_on_its_term_and_not_at_other_constants_or_dtypes():
    name, before, after, misses = FMA
    assert_rule_fires(SYNTH[name], before, after)
    for term in misses:
        assert_rule_does_not_fire(SYNTH[name], term)


def test_ships_fully_proved():
    from eggpu.optimizer import shipped_proofs

    found = [e for e in shipped_proofs.entries().values() if e["rule"] == FMA[0]]
    assert len(found) == 1 and [r["status"] for r in found[0]["results"]] == ["proved"]


@pytest.mark.parametrize("size", [1, 1000, 1001])
def test_the_f32_rule_fires_on_gelu_backward_and_the_kernel_stays_right(size):
    from eggpu.ir.dtypes import f32
    from eggpu.kernels import LIBRARY

    lk = next(k for k in LIBRARY if k.name == "gelu_backward")
    case = lk.make_case(size, f32, np.random.default_rng(size))
    ck = eggpu.compile(lk.instance(case), target="sm_90", cache=False)
    opt = ck.report["optimizer"]
    assert opt["rules_fired"].get(FMA[0], 0) >= 1 and opt["validation"] == "valid" and not opt["fell_back"]
    assert any(o.op == "fma" for o in ck.ir.walk())
    lk.check(case, case.run(ck.run_cpu))
