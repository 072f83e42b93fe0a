"""``bench.tools.parse_sass``: instruction counts and the slow-path share, on hand-written
nvdisasm text (no toolchain needed)."""

from __future__ import annotations

from bench.tools import parse_sass

SASS = """
        .section        .text.k,"ax",@progbits
k:
        /*0000*/                   MUFU.RCP R4, R3 ;
        /*0010*/                   FCHK P0, R0, R3 ;
        /*0020*/              @!P0 BRA `(.L_x_4) ;
        /*0030*/                   CALL.REL.NOINC `($__internal_0_$__cuda_sm3x_div_rn_noftz_f32_slowpath) ;
.L_x_4:
        /*0040*/                   STG.E desc[UR4][R2.64], R0 ;
        /*0050*/                   EXIT ;
$__internal_0_$__cuda_sm3x_div_rn_noftz_f32_slowpath:
        /*0060*/                   SHF.R.U32.HI R12, RZ, 0x17, R3 ;
        /*0070*/                   NOP ;
        /*0080*/                   FFMA R1, R2, R3, R4 ;
        /*0090*/                   RET.REL.NODEC R4 `(k) ;
.L_x_9:
        /*00a0*/                   BRA `(.L_x_9);
"""


def test_slow_path_instructions_are_counted_and_reported_apart() -> None:
    s = parse_sass(SASS, "nvdisasm")
    # 6 in the kernel body, 3 in the subroutine (NOP not counted) and the trailing self-branch
    # after it: it follows a RET, not an EXIT, so the parser counts it (as it always did)
    assert s.instructions == 10
    assert s.slow_path_instructions == 4
    assert s.to_json()["slow_path_instructions"] == 4


def test_no_slow_path_without_the_subroutine() -> None:
    s = parse_sass("        /*0000*/                   FADD R1, R2, R3 ;\n        /*0010*/                   EXIT ;\n")
    assert (s.instructions, s.slow_path_instructions) == (2, 0)
