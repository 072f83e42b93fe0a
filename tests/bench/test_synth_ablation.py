"""``python -m bench.synth_ablation``: which synthesized rules lower a kernel's cost on their own."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.synth_ablation import _without, ablate, main

REM = "syn-i32-rem-beside-div-768"


def test_without_drops_exactly_one_rule_line(tmp_path):
    text = ';; a\n(rewrite (A) (B) :name "syn-a")\n(rewrite (C) (D) :name "syn-ab")\n'
    out = Path(_without(text, "syn-a", tmp_path))
    assert out.read_text() == ';; a\n(rewrite (C) (D) :name "syn-ab")\n'  # syn-ab stays: whole name matched
    with pytest.raises(SystemExit, match="'syn-c' is not on exactly one line"):
        _without(text, "syn-c", tmp_path)


@pytest.mark.slow
def test_the_remainder_rule_wins_on_its_own_on_row_col_affine_and_nothing_on_bias_relu(capsys):
    res = ablate(_shipped(), ["poi_row_col_affine", "poi_bias_relu"], seconds=60)
    assert res["wins"] == {REM: ["naive/poi_row_col_affine"]}
    row = res["kernels"]["naive/poi_row_col_affine"]
    assert row["all"] < row["none"] - 1000 and row["without"][REM] == pytest.approx(row["none"])
    bias = res["kernels"]["naive/poi_bias_relu"]
    assert REM in bias["fired"] and bias["all"] == pytest.approx(bias["none"]) and not bias["without"]


def test_cli_reports_the_winners(capsys, monkeypatch):
    import bench.synth_ablation as m

    monkeypatch.setattr(m, "ablate", lambda *a, **k: {"kernels": {}, "wins": {REM: ["naive/poi_row_col_affine"]}})
    assert main(["--kernels", "poi_row_col_affine"]) == 0
    out = capsys.readouterr().out
    assert "1 synthesized rules each lower some kernel's cost on their own" in out
    assert f"{REM}: naive/poi_row_col_affine" in out


def _shipped() -> str:
    from eggpu.rules import shipped_files

    return next(str(f) for f in shipped_files() if f.name == "synthesized.egg")
