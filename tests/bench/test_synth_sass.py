"""``python -m bench.synth_sass``: the SASS acceptance check for synthesized rules. The verdict
logic on hand-made rows here; the check on the real kernels (which compiles them) is in
``tests/optimizer/test_synthesized_rules.py`` (slow)."""

from __future__ import annotations

import pytest

import bench.synth_sass as m
from bench.synth_sass import rule_lines, verdicts, without_shipped_synthesized


def test_rule_lines_skips_comments_and_keeps_whole_names():
    text = (';; (rewrite (A) (B) :name "syn-off")\n(rewrite (A) (B) :name "syn-a")\n'
            '  (rewrite (C) (D) :when ((>= (LowerBound x) 0)) :name "syn-ab")  \n;; provenance\n')
    assert rule_lines(text) == {"syn-a": '(rewrite (A) (B) :name "syn-a")',
                                "syn-ab": '(rewrite (C) (D) :when ((>= (LowerBound x) 0)) :name "syn-ab")'}


def _row(none: dict, alone: dict, fired_alone: list) -> dict:
    return {"fired": list(alone), "fired_alone": fired_alone, "none": none, "alone": alone}


def test_a_rule_that_lengthens_one_target_of_one_kernel_is_refused():
    kernels = {
        "naive/a": _row({"sm_80": 50, "sm_90": 54}, {"r1": {"sm_80": 50, "sm_90": 55}, "r2": {"sm_80": 49, "sm_90": 54}},
                        ["r1", "r2"]),
        "naive/b": _row({"sm_80": 61, "sm_90": 64}, {"r1": {"sm_80": 60, "sm_90": 63}}, ["r1"]),
    }
    v = verdicts(kernels, ["r1", "r2", "r3"])
    assert v["r1"]["verdict"] == "refused" and v["r1"]["lengthens"] == ["naive/a sm_90 54 -> 55"]
    assert v["r1"]["fired"] == ["naive/a", "naive/b"] and len(v["r1"]["shortens"]) == 2
    assert v["r2"] == {"verdict": "accepted", "fired": ["naive/a"], "lengthens": [],
                       "shortens": ["naive/a sm_80 50 -> 49"], "why": "never lengthens SASS; shortens naive/a sm_80 50 -> 49"}
    assert v["r3"]["verdict"] == "refused" and v["r3"]["why"] == "fires on no benchmark kernel"


def test_a_rule_that_fired_only_beside_others_does_not_count_as_firing():
    # r fired in the all-rules compile but not alone: its alone SASS is the baseline's, and no
    # kernel stands behind it
    kernels = {"naive/a": _row({"sm_80": 50}, {"r": {"sm_80": 50}}, [])}
    assert verdicts(kernels, ["r"])["r"]["verdict"] == "refused"
    kernels = {"naive/a": _row({"sm_80": 50}, {"r": {"sm_80": 50}}, ["r"])}
    assert verdicts(kernels, ["r"])["r"] == {"verdict": "accepted", "fired": ["naive/a"], "lengthens": [],
                                           "shortens": [], "why": "never lengthens SASS"}


def test_the_baseline_leaves_out_only_the_shipped_synthesized_file():
    import eggpu.optimizer.rules_loader as loader
    import eggpu.rules as rules_pkg

    before = [f.name for f in rules_pkg.shipped_files()]
    with without_shipped_synthesized():
        inside = [f.name for f in rules_pkg.shipped_files()]
        assert [f.name for f in loader.shipped_files()] == inside
    assert "synthesized.egg" in before and inside == [n for n in before if n != "synthesized.egg"]
    assert [f.name for f in rules_pkg.shipped_files()] == before


@pytest.mark.parametrize(("verdict", "rc"), [("accepted", 0), ("refused", 1)])
def test_cli_prints_verdicts_and_fails_on_a_refusal(verdict, rc, capsys, monkeypatch, tmp_path):
    res = {"kernels": {}, "targets": ["sm_80"],
           "rules": {"syn-x": {"verdict": verdict, "fired": [], "lengthens": [], "shortens": [], "why": "because"}}}
    monkeypatch.setattr(m, "measure", lambda *a, **k: res)
    out_json = tmp_path / "r.json"
    assert m.main(["--kernels", "poi_cat", "--json", str(out_json)]) == rc
    assert f"{verdict.upper()} syn-x: because" in capsys.readouterr().out
    assert out_json.exists()


def test_unknown_rule_names_are_refused_with_their_names(tmp_path):
    p = tmp_path / "s.egg"
    p.write_text('(rewrite (A) (B) :name "syn-a")\n')
    with pytest.raises(SystemExit, match="no rule named syn-b, syn-c in "):
        m.measure(str(p), rule_names=["syn-a", "syn-b", "syn-c"])
