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


def test_never_executed_padding_is_dropped():
    """ptxas pads LDGSTS with ``@!PT LDS RZ, [RZ]`` (predicate never true): not counted."""
    padded = SASS.replace("        /*0030*/                   NOP ;\n",
                          "        /*0030*/              @!PT LDS RZ, [RZ] ;\n        /*0038*/              @P2 LDS R3, [R2] ;\n")
    assert mma_static.k_loop(padded) == ["LDSM", "HMMA", "LDS", "BRA"]


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


def test_eggpu_case_pipelined_with_facts():
    """num_stages=3 with the launch facts: the K loop copies by LDGSTS, waits (DEPBAR) and has one
    barrier, no shared-memory stores of its own; without facts the same call is not pipelined."""
    from bench.tools import find_tool

    if find_tool("nvdisasm") is None:
        pytest.skip("nvdisasm is not installed (pip install nvidia-cuda-nvdisasm)")
    row = mma_static.eggpu_case((64, 64, 32), "sm_80", facts=True, num_stages=3)
    assert row["pipelined"] == [True] and row["spill_stores"] == 0
    assert row["k_loop_shared"].get("LDGSTS", 0) > 0 and row["k_loop_bar"] == 1, row
    assert "STS" not in row["k_loop_shared"] and row["ptx_smem_traffic_in_loop"]["bar.sync"] == 1
    assert mma_static.eggpu_case((64, 64, 32), "sm_80", num_stages=3)["pipelined"] == [False]


def test_eggpu_wgmma_case_has_hgmma_in_its_k_loop():
    """The opt-in wgmma strategy (sm_90a): 2 HGMMA per 32-wide K step, no spills, loop found in PTX too."""
    from bench.tools import find_tool

    if find_tool("nvdisasm") is None:
        pytest.skip("nvdisasm is not installed (pip install nvidia-cuda-nvdisasm)")
    row = mma_static.eggpu_case((64, 64, 32), "sm_90a", dot_strategy="wgmma")
    assert row["dot"] == ["wgmma"] and row["spill_stores"] == 0 and row["spill_loads"] == 0
    assert row["k_loop_hmma"] == 2 and 0 < row["sass_k_loop"] < row["sass_total"]
    assert row["ptx_smem_traffic_in_loop"]["wgmma.mma_async"] == 2
