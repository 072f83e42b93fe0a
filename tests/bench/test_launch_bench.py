"""``python -m bench launch`` runs end to end and writes its JSON (slow: it compiles for eggpu and Triton)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_launch_benchmark_writes_timings_and_ratios(tmp_path):
    out = tmp_path / "launch.json"
    proc = subprocess.run([sys.executable, "-m", "bench", "launch", "--batches", "2", "--per-batch", "20",
                           "--out", str(out)], cwd=REPO, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    res = json.loads(out.read_text())
    t = res["timings"]
    for key in ("eggpu_ck_launch_torch", "eggpu_ck_launch_cupy", "eggpu_ck_launch_general", "eggpu_jit",
                "eggpu_jit_general"):
        assert t[key]["median_us"] > 0 and t[key]["min_us"] <= t[key]["median_us"]
    # every timed call reached the (fake) driver: 50 warm-up calls and 2 x 20 timed ones per eggpu path
    assert res["fake_driver_launches"] >= 5 * (50 + 2 * 20)
    if "triton_skipped" not in res:
        assert set(res["ratio_to_triton"]) == set(t) - {"triton_jit"}
        assert res["triton_stub_launches"] >= 50 + 2 * 20  # Triton's C launcher reached cuLaunchKernelEx
    assert res["meta"]["command"].startswith("python -m bench launch")


def test_the_report_states_the_launch_goal_from_the_launch_results():
    """bench.report's goal row for issue 16's host launch overhead (CPU side) reads
    ``python -m bench launch``'s results; none without them."""
    from bench.report import _launch_goal

    res = {"timings": {"eggpu_jit": {"median_us": 9.9}, "triton_jit": {"median_us": 9.0}},
           "meta": {"date": "2026-12-06T17:58:23Z"}}
    (row,) = _launch_goal(res)
    assert row["measured"] == "9.90 µs vs 9.00 µs (2026-12-06)" and row["ok"] is False
    assert abs(row["ratio"] - 1.1) < 1e-9
    assert _launch_goal(None) == [] and _launch_goal({"timings": {"eggpu_jit": {"median_us": 1.0}}}) == []
