"""The peephole corpus measurement of issue #14 (bench/peephole.py): the corpus is well formed, the
independent counterexample check confirms real counterexamples and rejects wrong ones, and the
verifier meets the goal on a fast subset (the whole corpus: the slow tests)."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from bench import peephole
from bench.peephole_corpus import CORPUS, FL, INT, Entry
from bench.peephole_eval import DTYPES, Unconfirmed, confirm
from eggpu.optimizer.rules_loader import parse_rule


def test_corpus_is_well_formed():
    assert len(CORPUS) >= 120
    assert not [n for n, k in Counter(e.name for e in CORPUS).items() if k > 1]
    for e in CORPUS:
        assert e.source and set(e.dtypes) <= set(DTYPES), e.name
        parse_rule(e.text())  # loads in eggpu's rule language
    ints = sum(d in INT for e in CORPUS for d in e.dtypes)
    floats = sum(d in FL for e in CORPUS for d in e.dtypes)
    unsound = sum(e.expected(d) == "unsound" for e in CORPUS for d in e.dtypes)
    assert ints > 300 and floats > 150 and unsound > 200


def test_expected_per_dtype():
    e = Entry("abs-neg", "src", "(rewrite (Abs t (Neg t x)) (Abs t x))", ("i8", "u8", "f32"), ("u8",))
    assert [e.expected(d) for d in e.dtypes] == ["sound", "unsound", "sound"]
    assert Entry("a", "s", "(rewrite x x)", ("i8", "i16"), "all").expected("i16") == "unsound"


def _rule(text: str):
    return parse_rule(text[:-1] + ' :name "t")')


def test_confirm_recomputes_counterexamples():
    r = _rule("(rewrite (Add t x (ConstF t 0.0)) x :when ((IsFloat t)))")
    assert confirm(r, {"t": DTYPES["f32"]}, {"x": "-0.0 (f32)"}) == "lhs = 0.0, rhs = -0.0"
    with pytest.raises(Unconfirmed, match="both sides"):
        confirm(r, {"t": DTYPES["f32"]}, {"x": "1.5 (f32)"})
    r = _rule("(rewrite (Div t x x) (Const t 1) :when ((IsInt t)))")
    assert confirm(r, {"t": DTYPES["i16"]}, {"x": "0 (i16)"}) == "lhs = 0, rhs = 1"
    with pytest.raises(Unconfirmed):
        confirm(r, {"t": DTYPES["u8"]}, {"x": "7 (u8)"})


def test_confirm_checks_guards_and_i64_variables():
    r = _rule("(rewrite (Div t x (Const t c)) (Shr t x (Const t k)) :when ((IsSigned t) (> c 1) "
              "(= k (log2 (max c 1))) (= c (<< 1 k))))")
    i8 = {"t": DTYPES["i8"]}
    assert confirm(r, i8, {"x": "-1 (i8)", "c": "2 (i64)", "k": "1 (i64)"}) == "lhs = 0, rhs = -1"
    with pytest.raises(Unconfirmed, match="guard"):  # c = 3 is not a power of two
        confirm(r, i8, {"x": "-1 (i8)", "c": "3 (i64)", "k": "1 (i64)"})
    with pytest.raises(Unconfirmed, match="guard"):  # the range guard x >= 0 fails on x = -1
        confirm(_rule("(rewrite (Div t x (Const t 2)) (Shr t x (Const t 1)) :when ((IsSigned t) "
                      "(>= (LowerBound x) 0)))"), i8, {"x": "-1 (i8)"})
    with pytest.raises(Unconfirmed, match="guard"):  # NotNan
        confirm(_rule("(rewrite (Maximum t x (ConstF t -inf)) x :when ((IsFloat t) (NotNan x)))"),
                {"t": DTYPES["f16"]}, {"x": "nan (f16)"})


def test_classify():
    base = {"expected": "sound", "status": "proved"}
    assert peephole.classify(base) == "correct"
    assert peephole.classify({**base, "expected": "unsound"}) == "false-proof"
    assert peephole.classify({**base, "status": "refuted"}) == "false-refutation"
    assert peephole.classify({"expected": "unsound", "status": "refuted"}) == "correct"
    assert peephole.classify({"expected": "unsound", "status": "refuted", "unconfirmed": "x"}) == "false-refutation"
    assert peephole.classify({**base, "status": "proved-reduced-width"}) == "reduced-width"
    assert peephole.classify({**base, "status": "unknown"}) == "unknown"


def test_a_wrong_expectation_is_caught():
    """A corpus entry that expects the wrong verdict shows up as a false proof / refutation."""
    wrong = Entry("w", "test", "(rewrite (Add t x (ConstF t 0.0)) x :when ((IsFloat t)))", ("f16",))
    rows = peephole.check_entry(wrong)
    assert [r["verdict"] for r in rows] == ["false-refutation"]
    assert "recomputed" in rows[0] and rows[0]["recomputed"].startswith("lhs = 0.0")


def test_fast_subset_meets_the_goal(tmp_path):
    entries = [e for e in CORPUS if e.name in peephole.FAST_SUBSET]
    assert len(entries) == len(peephole.FAST_SUBSET) == 10
    rows, s = peephole.run(entries, workers=1)
    assert s["false_proof"] == 0 and s["false_refutation"] == 0, [r for r in rows if r["verdict"] != "correct"]
    assert s["decided_pct"] == 100.0 and s["goal_met"]
    assert s["proved"] > 0 and s["refuted"] > 0
    assert all("recomputed" in r for r in rows if r["status"] == "refuted")


@pytest.fixture(scope="module")
def corpus_summary(tmp_path_factory):
    """The whole corpus, once (about 13 minutes on 2 loaded cores)."""
    out = tmp_path_factory.mktemp("peephole") / "p.json"
    peephole.main(["--workers", "2", "--out", str(out)])
    return json.loads(out.read_text())["summary"]


@pytest.mark.slow
def test_corpus_no_false_verdicts(corpus_summary):
    s = corpus_summary
    assert s["instances"] == sum(len(e.dtypes) for e in CORPUS)
    assert s["false_proof"] == 0 and s["false_refutation"] == 0 and s["no_match"] == 0


@pytest.mark.slow
def test_corpus_meets_the_goal(corpus_summary):
    s = corpus_summary
    assert s["decided"] >= 0.98 * s["instances"]
    assert s["false_proof"] == 0 and s["false_refutation"] == 0
    assert s["goal_met"]


def test_results_file_roundtrip(tmp_path):
    rows = [{"rule": "a", "dtype": "i8", "expected": "sound", "status": "proved", "verdict": "correct",
             "strategy": "z3", "rlimit": 5, "seconds": 0.1, "detail": "dropped"},
            {"rule": "b", "dtype": "f32", "expected": "sound", "status": "unknown", "verdict": "unknown",
             "strategy": "", "rlimit": 7, "seconds": 2.0, "detail": "x" * 400}]
    peephole.write_results(tmp_path / "r.json", {"instances": 2}, rows)
    summary, back = peephole.read_results(tmp_path / "r.json")
    assert summary == {"instances": 2}
    assert "detail" not in back[0] and back[0]["rlimit"] == 5
    assert back[1]["detail"] == "x" * 300 and back[1]["verdict"] == "unknown"
