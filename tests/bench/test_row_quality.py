"""``bench.row_quality``: the SASS loop finder on hand-written nvdisasm text, and one real
measurement of a row kernel (eggpu and Triton) end to end. No performance number is asserted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.row_quality import main, markdown, sass_loops

SASS = """
        /*0000*/                   LDC R1, c[0x0][0x28] ;
.L_x_0:
        /*0010*/                   IADD3 R2, R2, 0x1, RZ ;
.L_x_1:
        /*0020*/                   FADD R3, R3, R4 ;
        /*0030*/                   NOP ;
        /*0040*/               @P1 BRA `(.L_x_1) ;
        /*0050*/              @!P0 BRA `(.L_x_0) ;
        /*0060*/               @P2 BRA `(.L_x_2) ;
        /*0070*/                   FMUL R3, R3, R3 ;
.L_x_2:
        /*0080*/                   EXIT ;
.L_x_3:
        /*0090*/                   BRA `(.L_x_3);
"""


def test_sass_loops_counts_backward_branches_only() -> None:
    # inner loop 0x20..0x40 (NOP not counted): 2; outer 0x10..0x50: 4; the forward branch to
    # .L_x_2 and the final self-branch are not loops
    assert sass_loops(SASS) == [2, 4]


def test_sass_loops_of_straight_line_code_is_empty() -> None:
    assert sass_loops("        /*0000*/                   EXIT ;\n") == []


def test_markdown_reports_ratios_to_triton() -> None:
    m = {"sass": 150, "registers": 20, "spills": 0, "loops": [60, 30], "loop_sass": 90, "ptx_math": {"max.f32": 2}}
    t = dict(m, sass=100, loops=[45, 15], loop_sass=60)
    text = markdown({"row_argmax": {"sm_90": {"eggpu": m, "triton": t, "eggpu_fast_math": {"error": "boom"}}}}, "cmd")
    assert "| row_argmax | eggpu | 150 | 60+30 | 20 | max.f32x2 | 1.50 | 1.50 |" in text
    assert "error: boom" in text


def _tools_present() -> bool:
    from bench.tools import find_tool
    from eggpu.codegen.toolchain import find_ptxas
    from eggpu.ir.errors import ToolchainError

    try:
        find_ptxas()
    except ToolchainError:
        return False
    return find_tool("nvdisasm") is not None


@pytest.mark.skipif(not _tools_present(), reason="needs ptxas and nvdisasm")
def test_main_measures_a_row_kernel_beside_triton(tmp_path: Path) -> None:
    pytest.importorskip("triton", reason="Triton is a benchmark-only dependency")
    assert main(["--kernels", "row_argmax", "--targets", "sm_80", "--out", str(tmp_path)]) == 0
    doc = json.loads((tmp_path / "row_quality.json").read_text())
    row = doc["results"]["row_argmax"]["sm_80"]
    for variant in ("eggpu", "eggpu_fast_math", "eggpu_launch", "eggpu_fast_math_launch", "triton", "triton_launch"):
        m = row[variant]
        assert "error" not in m, m
        assert m["sass"] > m["loop_sass"] > 0 and m["registers"] > 0, m  # the tile loop is found
        assert len(m["loops"]) >= 1
    assert "| row_argmax | triton |" in (tmp_path / "row_quality.md").read_text()


def test_write_docs_replaces_its_section_and_keeps_the_rest(tmp_path: Path) -> None:
    from bench.row_quality import BEGIN, END, write_docs

    md = tmp_path / "performance.md"
    md.write_text("# head\n\ntext before\n")
    m = {"sass": 7, "registers": 3, "spills": 0, "loops": [5], "loop_sass": 5, "ptx_math": {}}
    write_docs({"k": {"sm_80": {"triton": m}}}, "cmd one", md)
    write_docs({"k": {"sm_80": {"triton": dict(m, sass=9)}}}, "cmd two", md)
    text = md.read_text()
    assert text.startswith("# head\n\ntext before\n")
    assert text.count(BEGIN) == 1 and text.count(END) == 1
    assert "cmd two" in text and "cmd one" not in text and "| k | triton | 9 |" in text


def test_nounroll_variant_marks_every_row_loop_and_only_when_asked() -> None:
    from bench.row_quality import VARIANTS, variant_ptx
    from bench.suite import BY_KEY

    entry = BY_KEY["layer_norm_forward"]
    assert "eggpu_nounroll" not in VARIANTS  # not in the default table
    marked = variant_ptx(entry, "sm_90", "eggpu_nounroll")
    assert marked.count('.pragma "nounroll";') == 3  # mean, variance, normalize
    assert '.pragma "nounroll"' not in variant_ptx(entry, "sm_90", "eggpu")
    with pytest.raises(ValueError, match="eggpu_nounroll"):
        variant_ptx(entry, "sm_90", "eggpu_unrolled")
