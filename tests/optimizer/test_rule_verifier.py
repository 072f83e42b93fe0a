"""The z3 rule verifier: unsound rules are refuted with counterexamples, sound ones proved."""

from __future__ import annotations

import pytest

from eggpu.ir import f16, f32, i8, i32, i64, u32
from eggpu.optimizer import rule_verifier as rv
from eggpu.optimizer.proof_cache import ProofCache
from eggpu.optimizer.rules_loader import load_sources, parse_rule
from eggpu.testing import assert_rule_sound, assert_rule_unsound


def refuted(text: str, dtypes=None, timeout_ms: int = 20000) -> rv.DtypeResult:
    v = rv.verify_rule(text, dtypes=dtypes, timeout_ms=timeout_ms)
    r = v.first(rv.REFUTED)
    assert r is not None, f"expected a refutation, got {v.summary()}"
    assert v.refuted and not v.usable and v.status == rv.REFUTED
    return r


# ------------------------------------------------------------------ the negative list


def test_add_zero_float_is_refuted_by_negative_zero():
    r = refuted('(rewrite (Add t x (Splat t s (ConstF t 0.0))) x :when ((IsFloat t)) :name "add-zero")', [f32])
    assert r.key == "f32"
    assert r.counterexample == {"x": "-0.0 (f32)"}
    assert r.format_counterexample() == "x = -0.0 (f32)"
    assert "lhs = 0.0 (f32), rhs = -0.0 (f32)" in r.detail


def test_mul_zero_float_is_refuted():
    r = refuted('(rewrite (Mul t x (Splat t s (ConstF t 0.0))) (Splat t s (ConstF t 0.0)) :when ((IsFloat t)) :name "m0")', [f32])
    x = r.counterexample["x"]
    assert x.startswith(("-", "inf", "nan")) and x.endswith("(f32)")


def test_float_reassociation_is_refuted_in_exact_mode():
    r = refuted('(rewrite (Add t (Add t x y) z) (Add t x (Add t y z)) :when ((IsFloat t)) :name "assoc")', [f16])
    assert set(r.counterexample) == {"x", "y", "z"}


def test_x_div_x_is_refuted():
    r = refuted('(rewrite (Div t x x) (Splat t "8" (ConstF t 1.0)) :when ((IsFloat t)) :name "xx")', [f32])
    assert r.counterexample["x"].split()[0] in ("0.0", "-0.0", "inf", "-inf", "nan")


def test_signed_div_by_two_is_not_a_shift():
    r = refuted('(rewrite (Div t x (Splat t s (Const t 2))) (Shr t x (Splat t s (Const t 1))) :when ((IsSigned t)) :name "d2")', [i32])
    x = int(r.counterexample["x"].split()[0])
    assert x < 0 and x % 2 == 1  # negative odd: sdiv rounds toward zero, ashr toward -inf


def test_signed_rem_by_two_is_not_a_mask():
    r = refuted('(rewrite (Rem t x (Splat t s (Const t 2))) (And t x (Splat t s (Const t 1))) :when ((IsSigned t)) :name "r2")', [i32])
    assert int(r.counterexample["x"].split()[0]) < 0


def test_mul_div_cancel_is_refuted():
    r = refuted('(rewrite (Div t (Mul t x y) y) x :name "md")', [i32])
    assert set(r.counterexample) == {"x", "y"}


def test_shl_shl_needs_its_precondition():
    text = '(rewrite (Shl t (Shl t x a) b) (Shl t x (Add t a b)) :name "ss")'
    r = refuted(text, [i32])
    assert "rhs is undefined" in r.detail or "lhs =" in r.detail
    assert_rule_sound('(rewrite (Shl t (Shl t x (Splat t s (Const t a))) (Splat t s (Const t b))) '
                      '(Shl t x (Splat t s (Const t c))) :when ((IsInt t) (Width t w) (>= a 0) (>= b 0) '
                      '(= c (+ a b)) (< c w)) :name "ss-ok")', dtypes=[i8, i32])


# ------------------------------------------------------------------ positive rules and features


def test_ieee_valid_float_identities_are_proved():
    assert_rule_sound('(rewrite (Mul t x (Splat t s (ConstF t 1.0))) x :when ((IsFloat t)) :name "m1")')
    assert_rule_sound('(rewrite (Add t x (Splat t s (ConstF t -0.0))) x :when ((IsFloat t)) :name "an0")')
    assert_rule_sound('(rewrite (Sub t x (Splat t s (ConstF t 0.0))) x :when ((IsFloat t)) :name "s0")')


def test_dtypes_follow_guards_and_op_families():
    v = rv.verify_rule('(rewrite (Neg t (Neg t x)) x :name "nn")')
    assert sorted(r.key for r in v.results) == sorted(["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64",
                                                       "f16", "bf16", "f32", "f64"])
    assert v.summary() == "proved: i8..i64 u8..u64 f16..f64"
    v2 = rv.verify_rule('(rewrite (Shl t x (Splat t s (Const t 0))) x :name "shl0")')
    assert {r.key for r in v2.results} == {"i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"}
    v3 = rv.verify_rule('(rewrite (Add (I32) x (Const (I32) 0)) x :name "concrete")')
    assert [r.key for r in v3.results] == ["i32"]


def test_where_dtype_is_the_branches():
    v = rv.verify_rule('(rewrite (Where t c x x) x :name "ws")')
    assert v.usable and len(v.results) == 13


def test_range_guard_makes_signed_strength_reduction_sound():
    assert_rule_sound('(rewrite (Div t x (Splat t s (Const t 8))) (Shr t x (Splat t s (Const t 3))) '
                      ':when ((IsSigned t) (>= (LowerBound x) 0)) :name "d8")', dtypes=[i8, i32])
    cex = assert_rule_unsound('(rewrite (Div t x (Splat t s (Const t 8))) (Shr t x (Splat t s (Const t 3))) '
                              ':when ((IsSigned t) (>= (LowerBound x) -1)) :name "d8bad")', dtypes=[i32])
    assert cex["x"] == "-1 (i32)"


def test_egglog_panics_and_non_canonical_constants_are_refuted():
    r = refuted('(rewrite (Add t (Const t a) (Const t b)) (Const t (+ a b)) :when ((IsSigned t)) :name "f")', [i8])
    assert "rhs is undefined" in r.detail
    r2 = refuted('(rewrite (Mul t x (Splat t s (Const t c))) (Shl t x (Splat t s (Const t k))) '
                 ':when ((IsInt t) (= k (log2 c)) (= c (<< 1 k))) :name "lg")', [i32])
    assert "c" in r2.counterexample


def test_fast_math_rules_are_proved_over_the_reals_only():
    exact = '(rewrite (Add t (Mul t a b) c) (Fma t a b c) :when ((IsFloat t)) :name "fma-exact")'
    fast = '(rewrite (Add t (Mul t a b) c) (Fma t a b c) :when ((IsFloat t)) :ruleset fast_math :name "fma-fast")'
    assert rv.verify_rule(exact, dtypes=[f16]).refuted
    assert_rule_sound(fast)
    assert_rule_sound('(rewrite (Mul t (Exp t a) (Exp t b)) (Exp t (Add t a b)) :ruleset fast_math :name "ee")')
    assert_rule_unsound('(rewrite (Log t (Mul t a b)) (Add t (Log t a) (Log t b)) :ruleset fast_math :name "lab")')


def test_range_transfer_rules():
    good = ('(rule ((= e (Add t a b)) (IsSigned t) (Width t w) (= l (+ (LowerBound a) (LowerBound b))) '
            '(= h (+ (UpperBound a) (UpperBound b))) (>= (>> l (- w 1)) -1) (<= (>> h (- w 1)) 0)) '
            '((set (LowerBound e) l) (set (UpperBound e) h)) :ruleset ranges :name "ra")')
    assert_rule_sound(good, dtypes=[i8, i32])
    bad = ('(rule ((= e (Add t a b)) (IsInt t) (= la (LowerBound a)) (= lb (LowerBound b))) '
           '((set (LowerBound e) (+ la lb))) :ruleset ranges :name "ra-bad")')
    cex = assert_rule_unsound(bad, dtypes=[i8])
    assert "LowerBound(a)" in cex and "LowerBound(b)" in cex


def test_lane_mapping_mismatch_is_unknown_not_proved():
    text = ('(rewrite (Add t (Broadcast t "4,4" x) (Broadcast t "4,4" (Reshape t "4,1" x))) '
            '(Mul t (Broadcast t "4,4" x) (Splat t "4,4" (Const t 2))) :when ((IsInt t)) :name "lanes")')
    v = rv.verify_rule(text, dtypes=[i32])
    assert v.status == rv.UNKNOWN and not v.usable
    assert "different shape ops" in v.results[0].detail


def test_reductions_are_only_equal_by_structure():
    assert_rule_sound('(rewrite (ReduceSum t 0 (Where t c x x)) (ReduceSum t 0 x) :name "rs-where")', dtypes=[f32])
    # operands with equal simplified lane expressions are the same block
    assert_rule_sound('(rewrite (ReduceSum t 0 (Add t x y)) (ReduceSum t 0 (Add t y x)) :name "rs-comm")', dtypes=[i32])
    # anything deeper is not decided (and never claimed refuted)
    v = rv.verify_rule('(rewrite (ReduceSum t 0 (Mul t x (Splat t s (ConstF t 1.0)))) (ReduceSum t 0 x) :name "rs-m1")',
                       dtypes=[f32])
    assert v.status == rv.UNKNOWN and "by structure" in v.results[0].detail
    v2 = rv.verify_rule('(rewrite (ReduceSum t 0 (Splat t "128" x)) (ReduceSum t 0 (Splat t "64" x)) :name "rs-shape")',
                        dtypes=[f32])
    assert not v2.usable


def test_vacuous_dtypes_are_skipped():
    v = rv.verify_rule('(rewrite (Neg t x) (Neg t x) :when ((Width t w) (< w 16)) :name "narrow")')
    assert sorted(r.key for r in v.results) == ["i8", "u8"]


_DIV_POW2 = ('(rewrite (Div t x (Splat t s (Const t c))) (Shr t x (Splat t s (Const t k))) '
             ':when ((IsSigned t) (>= (LowerBound x) 0) (> c 1) (= k (log2 (max c 1))) (= c (<< 1 k))) :name "dp")')


def test_full_width_timeouts_are_proved_by_case_split():
    v = rv.verify_rule(_DIV_POW2, dtypes=[i64], timeout_ms=4000)
    (r,) = v.results
    assert r.status == rv.PROVED, r
    assert v.usable
    # budgets are resource units: the direct proof runs out of them on every machine
    assert "case split on k (65 cases)" in r.detail and r.strategy == "case-split", r


def test_reduced_width_and_sampling_is_reported_but_never_usable():
    r = rv.DtypeResult("i64", rv.PROVED_REDUCED, None, "full width timed out; proved at 8/16 bits")
    v = rv.RuleVerdict("dp", "x.egg:1", "exact", [rv.DtypeResult("i32", rv.PROVED), r])
    assert not v.usable and v.status == rv.PROVED_REDUCED
    assert "proved-reduced-width: i64" in v.summary()
    from eggpu.optimizer.rules_loader import parse_rule

    rule = parse_rule(_DIV_POW2)
    assert rv.usable_rules([rule], {"dp": v}, fast_math=False) == []
    # with almost no budget the verdict is whatever could be established, never a usable non-proof
    tiny = rv.verify_rule(_DIV_POW2, dtypes=[i64], timeout_ms=20)
    (t,) = tiny.results
    assert t.status in (rv.PROVED, rv.PROVED_REDUCED, rv.UNKNOWN)
    assert tiny.usable == (t.status == rv.PROVED)


def test_birewrite_checks_both_directions():
    assert_rule_sound('(birewrite (Sub t x (Neg t y)) (Add t x y) :name "bi")', dtypes=[i32, f32])
    safe = "(Add t x (Sub t y y))"
    risky = "(Add t x (Sub t (Div t y y) (Div t y y)))"
    # The IR is total (y / y is 0 at y == 0), so in exact mode both directions hold...
    assert_rule_sound(f'(birewrite {risky} {safe} :name "both-exact")', dtypes=[i32])
    # ...while over the reals (fast_math) y / y is undefined at y == 0: a rule may drop it, not add it
    fm = ":ruleset fast_math"
    assert_rule_sound(f'(rewrite {risky} {safe} {fm} :name "shrink")', dtypes=[f32])
    assert_rule_unsound(f'(rewrite {safe} {risky} {fm} :name "grow")', dtypes=[f32])
    cex = assert_rule_unsound(f'(birewrite {risky} {safe} {fm} :name "both")', dtypes=[f32])
    assert cex["y"] == "0 (f32, real)"


def test_assert_helpers_raise_with_details():
    with pytest.raises(AssertionError, match="x = -0.0"):
        assert_rule_sound('(rewrite (Add t x (Splat t s (ConstF t 0.0))) x :when ((IsFloat t)) :name "z")', dtypes=[f32])
    with pytest.raises(AssertionError, match="expected to be refuted"):
        assert_rule_unsound('(rewrite (Neg t (Neg t x)) x :name "nn")', dtypes=[u32])


# ------------------------------------------------------------------ cache, progress, usable set


def test_verify_rules_uses_the_cache_and_reports_progress(tmp_path):
    loaded = load_sources([("c.egg", '(rewrite (Neg t (Neg t x)) x :name "c1")\n'
                                     '(rewrite (Add t x (Splat t s (ConstF t 0.0))) x :when ((IsFloat t)) :name "c2")\n'
                                     '(rewrite (Add t (Mul t a b) c) (Fma t a b c) :when ((IsFloat t)) '
                                     ':ruleset fast_math :name "c3")\n')])
    cache = ProofCache(tmp_path)
    calls = []
    first = rv.verify_rules(loaded.rules, cache=cache, workers=1, progress=lambda d, t, v: calls.append((d, t, v.rule)))
    assert [c[:2] for c in calls] == [(1, 3), (2, 3), (3, 3)]
    assert {c[2] for c in calls} == {"c1", "c2", "c3"}
    assert not any(v.cached for v in first.values())
    assert len(cache) == 3 and (tmp_path / "proofs.json").exists()
    again = rv.verify_rules(loaded.rules, cache=ProofCache(tmp_path), workers=1)
    assert all(v.cached for v in again.values())
    assert again["c2"].refuted and again["c2"].counterexample == first["c2"].counterexample
    usable = rv.usable_rules(loaded.rules, again, fast_math=False)
    assert [r.name for r in usable] == ["c1"]
    assert [r.name for r in rv.usable_rules(loaded.rules, again, fast_math=True)] == ["c1", "c3"]


def test_cache_key_changes_with_the_rule_text(tmp_path):
    a = parse_rule('(rewrite (Neg t (Neg t x)) x :name "k")')
    b = parse_rule('(rewrite (Not t (Not t x)) x :name "k")')
    assert rv._cache_key(a, 1) != rv._cache_key(b, 1)


def test_env_cache_dir(tmp_path, monkeypatch):
    from eggpu.optimizer.proof_cache import cache_dir

    monkeypatch.delenv("EGGPU_PROOF_CACHE_DIR", raising=False)
    monkeypatch.setenv("EGGPU_CACHE_DIR", str(tmp_path))
    assert cache_dir() == tmp_path / "proofs"
    monkeypatch.setenv("EGGPU_PROOF_CACHE_DIR", str(tmp_path / "p"))
    assert cache_dir() == tmp_path / "p"


def test_verdict_json_roundtrip():
    v = rv.verify_rule('(rewrite (Add t x (Splat t s (ConstF t 0.0))) x :when ((IsFloat t)) :name "j")', dtypes=[f32])
    w = rv.RuleVerdict.from_json(v.to_json())
    assert w.summary() == v.summary() and w.counterexample == v.counterexample


def test_compress_keys():
    assert rv.compress_keys(["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"]) == "i8..i64 u8..u64"
    assert rv.compress_keys(["f32", "i32", "bool"]) == "bool i32 f32"
    assert rv.compress_keys(["t=i8,u=f16", "t=i8,u=f32", "t=i16,u=f16", "t=i16,u=f32"]) == "t in i8 i16 x u in f16 f32"


def _unknown_job(detail: str, calls: list):
    def job(args):
        rule, timeout_ms = args
        calls.append((rule.name, timeout_ms))
        return rv.RuleVerdict(rule.name, rule.location, rule.ruleset,
                              [rv.DtypeResult("i64", rv.UNKNOWN, None, detail)]).to_json()
    return job


def test_an_unknown_is_cached_under_its_budget(tmp_path, monkeypatch):
    # budgets are z3 resource units, so the same budget gives the same unknown in every process:
    # it is not paid for again; a larger budget tries again
    calls: list = []
    monkeypatch.setattr(rv, "_verify_job", _unknown_job("not decided within 7 ms of budget (resource limit)", calls))
    rule = parse_rule('(rewrite (Neg t (Neg t x)) x :name "u1")')
    first = rv.verify_rules([rule], cache=ProofCache(tmp_path), workers=1, timeout_ms=7)
    assert calls == [("u1", 7)] and not first["u1"].cached and first["u1"].status == rv.UNKNOWN
    again = rv.verify_rules([rule], cache=ProofCache(tmp_path), workers=1, timeout_ms=7)
    assert calls == [("u1", 7)] and again["u1"].cached and again["u1"].status == rv.UNKNOWN
    assert not again["u1"].usable
    rv.verify_rules([rule], cache=ProofCache(tmp_path), workers=1, timeout_ms=70)
    assert calls == [("u1", 7), ("u1", 70)]
    # the unknown entry never answers for the final-verdict key (a proof at the same budget wins)
    assert ProofCache(tmp_path).get(rv._cache_key(rule, 7)) is None


def _with_z3(monkeypatch, version: str) -> None:
    from eggpu.optimizer import proof_versions

    monkeypatch.setattr(proof_versions, "z3_version", lambda: version)


def test_a_decided_verdict_outlives_a_z3_upgrade_an_unknown_does_not(tmp_path, monkeypatch):
    """A proof or a refutation is a fact about the encoded formula, whichever z3 found it; an
    unknown is what one z3 reached within its own resource units, so another z3 tries again."""
    calls: list = []
    monkeypatch.setattr(rv, "_verify_job", _unknown_job("not decided within 7 ms of budget (resource limit)", calls))
    rule = parse_rule('(rewrite (Neg t (Neg t x)) x :name "u3")')
    _with_z3(monkeypatch, "4.13.0")
    rv.verify_rules([rule], cache=ProofCache(tmp_path), workers=1, timeout_ms=7)
    _with_z3(monkeypatch, "5.9.1")
    again = rv.verify_rules([rule], cache=ProofCache(tmp_path), workers=1, timeout_ms=7)
    assert calls == [("u3", 7), ("u3", 7)] and not again["u3"].cached

    proved = parse_rule('(rewrite (Not t (Not t x)) x :when ((IsInt t)) :name "p3")')
    monkeypatch.undo()
    _with_z3(monkeypatch, "4.13.0")
    first = rv.verify_rules([proved], cache=ProofCache(tmp_path), workers=1)["p3"]
    assert first.usable and not first.cached
    _with_z3(monkeypatch, "5.9.1")
    monkeypatch.setattr(rv, "_verify_job", _unknown_job("must not be asked", calls := []))
    later = rv.verify_rules([proved], cache=ProofCache(tmp_path), workers=1)["p3"]
    assert later.usable and later.cached and calls == []


def test_an_unknown_cut_by_the_wall_clock_is_never_cached(tmp_path, monkeypatch):
    from eggpu.optimizer.rule_budget import WALL_CAPPED

    calls: list = []
    monkeypatch.setattr(rv, "_verify_job", _unknown_job(f"not decided within 9 ms of budget ({WALL_CAPPED})", calls))
    rule = parse_rule('(rewrite (Not t (Not t x)) x :name "u2")')
    for _ in range(2):
        v = rv.verify_rules([rule], cache=ProofCache(tmp_path), workers=1, timeout_ms=9)
        assert not v["u2"].cached
    assert calls == [("u2", 9), ("u2", 9)]
    assert len(ProofCache(tmp_path)) == 0


def test_a_session_remembers_a_check_the_wall_clock_cut(monkeypatch):
    # a cap of ~1 ms on a query that needs far more: z3 stops on its timeout with units left, twice
    # (the retry), so the session is marked; the rlimit alone never marks it
    import z3

    from eggpu.optimizer import rule_budget as rb

    x, y = z3.BitVecs("x y", 64)  # factoring a 64-bit semiprime: hard for bit-blasting
    wide = z3.ZeroExt(64, x) * z3.ZeroExt(64, y)
    hard = [wide == (2**32 - 5) * (2**32 - 17), z3.UGT(x, 1), z3.UGT(y, 1)]
    sess = rb.Session()
    c = sess.check("qf_bv", 10, hard)
    assert c.result == z3.unknown and not c.wall_capped and not sess.wall_capped
    monkeypatch.setattr(rb, "WALL_MIN_MS", 5)
    monkeypatch.setattr(rb, "WALL_FACTOR", 0)
    monkeypatch.setattr(rb, "RETRY_FACTOR", 1)
    c = sess.check("qf_bv", 10**9, hard)
    assert c.result == z3.unknown and c.wall_capped and sess.wall_capped
    assert c.reason == rb.WALL_CAPPED
