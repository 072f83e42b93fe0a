"""``bench.mma_static``: the K-loop SASS finder on hand-written disassembly, and one real case."""

from __future__ import annotations

import pytest

from bench import mma_static

SASS = """
        /*0000*/                   MOV R1, c[0x0][0x28] ;
.L_x_0:
        /*0010*/                   LDSM.16.M88.4 R4, [R2] ;
        /*0020*/                   HMMA.16816.F32 R8, R4, R6, R8 ;
        /*0030*/                   NOP ;
        /*0040*/              @P0 BRA `(.L_x_0) ;
.L_x_1:
        /*0050*/                   IADD3 R0, R0, 0x1, RZ ;
        /*0060*/              @P1 BRA `(.L_x_1) ;
        /*0070*/                   EXIT ;
"""


def test_k_loop_is_the_loop_with_hmma():
    assert mma_static.k_loop(SASS) == ["LDSM", "HMMA", "BRA"]  # NOP dropped; the IADD3 loop has no HMMA
    assert mma_static.k_loop(SASS.replace("HMMA", "FFMA")) == []


def test_a_rotated_loop_extends_to_its_last_back_edge():
    rotated = SASS.replace("        /*0040*/              @P0 BRA `(.L_x_0) ;\n",
                           "        /*0040*/              @P0 BRA `(.L_x_0) ;\n        /*0048*/ LDG.E R2, [R4] ;\n"
                           "        /*0049*/ BRA `(.L_x_0) ;\n")
    assert mma_static.k_loop(rotated) == ["LDSM", "HMMA", "BRA", "LDG", "BRA"]


def test_eggpu_case_has_16_hmma_in_its_k_loop():
    from bench.tools import find_tool

    if find_tool("nvdisasm") is None:
        pytest.skip("nvdisasm is not installed (pip install nvidia-cuda-nvdisasm)")
    row = mma_static.eggpu_case((64, 64, 32), "sm_80")
    assert row["dot"] == ["mma_sync"] and row["spill_stores"] == 0
    assert row["k_loop_hmma"] == 16 and 0 < row["sass_k_loop"] < row["sass_total"]
    assert row["ptx_smem_traffic_in_loop"]["bar.sync"] == 2 and "ld.shared" not in row["ptx_smem_traffic_in_loop"]
