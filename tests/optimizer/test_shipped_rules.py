"""Every shipped rule (rules/*.egg) is proved by z3 for every dtype it can match.

The session fixture verifies the whole set once (through the proof cache: the first run proves
every rule for real, later runs read the cache); each rule then gets its own test case whose id
is the rule name. A rule left ``unknown`` under a loaded machine is re-verified with a larger
budget before the test fails.
"""

from __future__ import annotations

import time

import pytest

from eggpu.optimizer import rule_verifier as rv
from eggpu.optimizer.proof_cache import ProofCache
from eggpu.optimizer.rules_loader import load_rules

SHIPPED = load_rules(env=False).rules
FAMILIES = ("algebra", "strength", "address", "masks", "fold", "ranges", "fast_math")


@pytest.fixture(scope="session")
def shipped_verdicts():
    return rv.verify_rules(SHIPPED)


def test_at_least_60_named_rules_in_every_family():
    assert len(SHIPPED) >= 60
    for fam in FAMILIES:
        assert any(r.file == f"rules/{fam}.egg" for r in SHIPPED), fam
    assert all(r.ruleset == "fast_math" for r in SHIPPED if r.file == "rules/fast_math.egg")
    assert all(r.ruleset == "ranges" for r in SHIPPED if r.file == "rules/ranges.egg")


@pytest.mark.parametrize("rule", SHIPPED, ids=[r.name for r in SHIPPED])
def test_shipped_rule_is_proved(rule, shipped_verdicts):
    v = shipped_verdicts[rule.name]
    if not v.usable and not v.refuted:
        v = rv.verify_rule(rule, timeout_ms=30000)  # a timeout under load is not a failure yet
    assert v.results, f"{rule.location}: {rule.name} matches no dtype ({v.note})"
    assert v.usable, f"{rule.location}: {rule.name}: {v.summary()}; " + "; ".join(
        f"{r.key}: {r.format_counterexample()} {r.detail}" for r in v.results if r.status not in rv.USABLE)


def test_usable_rules_respect_fast_math(shipped_verdicts):
    exact = rv.usable_rules(SHIPPED, shipped_verdicts, fast_math=False)
    fast = rv.usable_rules(SHIPPED, shipped_verdicts, fast_math=True)
    assert not any(r.fast_math for r in exact)
    assert {r.name for r in fast} - {r.name for r in exact} == {r.name for r in SHIPPED if r.fast_math
                                                               and shipped_verdicts[r.name].usable}


def test_cached_verification_reuses_every_final_verdict(shipped_verdicts):
    # verdicts with an `unknown` dtype are cached under their budget only (another key); all others: the
    # second verification answers every one of them from the cache (no solver run)
    final = [r for r in SHIPPED if all(x.status != rv.UNKNOWN for x in shipped_verdicts[r.name].results)]
    assert len(final) >= 0.9 * len(SHIPPED)
    again = rv.verify_rules(final)
    assert all(v.cached for v in again.values())


def test_rules_check_cli_on_a_user_file(tmp_path):
    import io

    from eggpu.optimizer.rules_cli import check_rules

    f = tmp_path / "mine.egg"
    f.write_text('(rewrite (Neg t (Neg t x)) x :name "mine-neg-neg")\n'
                 '(rewrite (Add t x (Splat t s (ConstF t 0.0))) x :when ((IsFloat t)) :name "mine-add-zero")\n')
    out = io.StringIO()
    assert check_rules([f], out=out, use_cache=False, progress=False) == 1
    text = out.getvalue()
    assert "mine-neg-neg" in text and "proved: i8..i64 u8..u64 f16..f64" in text
    assert "mine-add-zero" in text and "x = -0.0 (f16)" in text and f"{f}:2" in text
    assert "1 refuted" in text
    bad = tmp_path / "bad.egg"
    bad.write_text('(rewrite (Ad t x y) x :name "a")\n')
    out = io.StringIO()
    assert check_rules([bad], out=out, use_cache=False) == 2
    assert f"{bad}:1: rule 'a': unknown constructor Ad (did you mean Add?)" in out.getvalue()


@pytest.mark.slow
def test_cold_verification_of_all_shipped_rules_is_under_a_minute(tmp_path):
    t0 = time.perf_counter()
    verdicts = rv.verify_rules(SHIPPED, cache=ProofCache(tmp_path))
    took = time.perf_counter() - t0
    assert not any(v.refuted for v in verdicts.values())
    assert took < 60, f"cold verification took {took:.1f}s"
