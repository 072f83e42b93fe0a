"""bench.ptx_identity: the variant list covers the library, and --compare reports every difference."""

from __future__ import annotations

import json

from bench import ptx_identity
from eggpu.kernels import LIBRARY


def test_variants_cover_every_kernel_dtype_size_and_target_once():
    labels = [label for label, _, _ in ptx_identity.variants(("sm_80", "sm_90"))]
    assert len(labels) == len(set(labels))
    expected = sum(len(lk.dtypes) * len(lk.sizes) for lk in LIBRARY) * 2
    assert len(labels) == expected
    assert {label.split("[")[0] for label in labels} == {lk.name for lk in LIBRARY}
    assert {label.rsplit(" ", 1)[1] for label in labels} == {"sm_80", "sm_90"}


def test_compare_names_changed_missing_and_extra_variants():
    before = {"a": "1", "b": "2", "c": "3"}
    now = {"a": "1", "b": "9", "d": "4"}
    assert ptx_identity.compare(now, before) == ["b", "c", "d"]
    assert ptx_identity.compare(before, dict(before)) == []


def test_main_writes_the_hashes_and_fails_on_a_difference(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(ptx_identity, "hashes", lambda targets, save_dir: {"k[f32] 10 sm_90": "ab", "x": "cd"})
    before = tmp_path / "before.json"
    before.write_text(json.dumps({"k[f32] 10 sm_90": "ab", "x": "ef"}))
    out = tmp_path / "now.json"
    assert ptx_identity.main([str(out), "--compare", str(before)]) == 1
    assert json.loads(out.read_text()) == {"k[f32] 10 sm_90": "ab", "x": "cd"}
    printed = capsys.readouterr().out
    assert "DIFFERS: x" in printed and "1 of 2 identical" in printed
    before.write_text(json.dumps({"k[f32] 10 sm_90": "ab", "x": "cd"}))
    assert ptx_identity.main([str(out), "--compare", str(before)]) == 0
