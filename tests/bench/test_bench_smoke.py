"""Smoke test of the benchmark harness (``python -m bench``), so it cannot rot.

Runs the harness the way a user does, in a subprocess from the repository root, on one kernel
(vector add) with one repetition, and checks that every section produced numbers and that the
report and plots were written. It uses ``--no-optimize``: with the optimizer on, the first
compile from an empty cache proves the whole shipped rule set (minutes on a small machine),
which is what ``python -m bench`` measures but not what a smoke test can wait for. The
optimizer and proof sections are exercised by the full benchmark run. Nothing here asserts a
performance number.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

pytest.importorskip("triton", reason="Triton is a benchmark-only dependency (pip install -e '.[bench]')")
pytest.importorskip("matplotlib", reason="matplotlib is a benchmark-only dependency (pip install -e '.[bench]')")


def _have_ptxas() -> bool:
    from eggpu.codegen.toolchain import find_ptxas
    from eggpu.ir.errors import ToolchainError

    try:
        find_ptxas()
    except ToolchainError:
        return False
    return True


def test_quick_run_measures_every_section_and_writes_the_report(tmp_path: Path) -> None:
    out = tmp_path / "latest.json"
    docs = tmp_path / "docs"
    cmd = [sys.executable, "-m", "bench", "--quick", "--no-optimize", "--out", str(out), "--docs", str(docs)]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    res = json.loads(out.read_text())

    meta = res["meta"]
    assert meta["kernels"] == ["vector_add"] and meta["reps"] == 1
    assert meta["versions"]["triton"] and meta["versions"]["eggpu"]

    assert res["import"]["eggpu"]["median"] > 0
    assert res["frontend"]["vector_add"]["warm"]["median"] > 0
    comp = res["compile"]["vector_add"]
    for tool in ("eggpu", "triton"):
        for variant in ("cold", "hit"):
            assert comp[tool][variant]["total"]["median"] > 0, (tool, variant)
        assert comp[tool]["hit"]["cache"] == ["hit"], f"{tool}: the cache-hit run recompiled"
        assert comp[tool]["cold"]["cache"] == ["miss"], f"{tool}: the cold run found a cache entry"
    warm = res["warm"]["vector_add"]
    assert warm["eggpu"]["total"]["median"] > 0 and warm["triton"]["total"]["median"] > 0

    if _have_ptxas():
        for target in ("sm_80", "sm_90"):
            q = res["quality"]["vector_add"][target]
            for variant in ("eggpu_noopt", "triton", "triton_launch"):
                assert "error" not in q[variant], (target, variant, q[variant].get("error"))
                assert q[variant]["registers"] > 0 and q[variant]["ptx_lines"] > 0
                if q[variant]["sass"] is not None:
                    assert q[variant]["sass_instructions"] > 0

    cpu = res["cpu"]["vector_add"]
    assert "error" not in cpu, cpu.get("error")
    assert cpu["checked"] and cpu["eggpu"]["median"] > 0

    assert "skipped" in res["gpu"] or "kernels" in res["gpu"]

    md = (docs / "performance.md").read_text()
    assert "## Goals" in md and "vector_add" in md
    assert (docs / "img" / "compile_time.png").stat().st_size > 0
    assert (docs / "img" / "code_quality.png").stat().st_size > 0


def test_report_regenerates_from_saved_json(tmp_path: Path) -> None:
    """``python -m bench report`` renders a stored result (and merges GPU results) without measuring."""
    res = {
        "meta": {"date": "2026-01-01T00:00:00+00:00", "command": "python -m bench", "reps": 5, "targets": ["sm_90"]},
        "compile": {"vector_add": {
            "eggpu": {"cold": {"total": {"median": 900.0, "min": 800.0, "max": 1000.0}, "import": {"median": 300.0},
                               "import_kernels": {"median": 350.0}, "stages_ms": {"frontend": 50.0, "codegen": 150.0}},
                      "hit": {"total": {"median": 40.0, "min": 35.0, "max": 50.0}}},
            "triton": {"cold": {"total": {"median": 1200.0, "min": 1100.0, "max": 1300.0}},
                       "hit": {"total": {"median": 300.0, "min": 290.0, "max": 320.0}}},
        }},
    }
    gpu = {"device": "Test GPU", "capability": [9, 0], "copy": {"gbps": 4000.0}, "reps": 100,
           "kernels": {"vector_add": {"eggpu": {"median_ms": 0.05, "gbps": 3700.0, "fraction_of_copy": 0.925},
                                      "triton": {"median_ms": 0.05, "gbps": 3800.0}},
                       "layer_norm_forward": {"eggpu": {"median_ms": 0.056}, "triton": {"median_ms": 0.055},
                                              "eggpu_variants": {
                                                  "nounroll": {"median_ms": 0.051, "over_default": 0.91,
                                                               "over_triton": 0.93, "max_err": 2e-6},
                                                  "fast_math": {"error": "CompileError: boom"}}}},
           "naive": {"kernels": {"poi_gelu": {"eggpu_noopt": {"median_ms": 0.21}, "eggpu": {"median_ms": 0.2},
                                              "triton": {"error": "RuntimeError: bad"},
                                              "eggpu_over_noopt_time": 0.952}}}}
    jpath, gpath = tmp_path / "r.json", tmp_path / "gpu.json"
    jpath.write_text(json.dumps(res))
    gpath.write_text(json.dumps(gpu))
    docs = tmp_path / "docs"
    proc = subprocess.run([sys.executable, "-m", "bench", "report", "--json", str(jpath), "--gpu", str(gpath),
                           "--docs", str(docs)], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    md = (docs / "performance.md").read_text()
    # 900 / 1200 = 0.75 > 0.5: the cold-compile goal is reported as not met; 40 ms > 30 ms likewise
    assert "| cold compile (kernel cache empty, rule proofs cached) ≤ 0.5× Triton | vector_add | 900 ms vs 1200 ms | 0.75 | **NOT MET** |" in md
    assert "fresh-process cache hit" in md and "**NOT MET**" in md
    assert "GPU: vector add ≥ 90% of copy bandwidth | vector_add | 3700 GB/s of 4000 GB/s | 0.93 | met" in md
    assert json.loads(jpath.read_text())["gpu"]["device"] == "Test GPU"
    assert "| layer_norm_forward | nounroll | 0.051 | 0.91 | 0.93 | 2e-06 |" in md
    assert "| layer_norm_forward | fast_math | ERROR: CompileError: boom |" in md
    assert "| poi_gelu | 0.210 | 0.200 | ERROR | 0.95 | – |" in md and "- naive poi_gelu triton: `RuntimeError: bad`" in md
