"""``codegen/ptx_loops.py``: with ``PtxOptions(ptxas_unroll=False)`` every loop without
tensor-core instructions gets ``.pragma "nounroll"`` at its head (ptxas unrolls eggpu's short
row loops 4x, Triton's longer ones not); the default leaves the PTX as LLVM wrote it."""

from __future__ import annotations

import pytest

from eggpu.codegen.ptx import PtxOptions, emit_ptx
from eggpu.codegen.ptx_loops import no_unroll

PRAGMA = '.pragma "nounroll";'

LOOPS = """\
.visible .entry k()
{
\t@%p1 bra \t$L__BB0_4;
$L__BB0_2:
\tadd.s32 \t%r1, %r1, 1;
\tsetp.lt.s32 \t%p2, %r1, %r2;
\t@%p2 bra \t$L__BB0_2;
$L__BB0_3:
\tmma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%f1, %f2, %f3, %f4}, {%r1, %r2, %r3, %r4}, {%r5, %r6}, {%f1, %f2, %f3, %f4};
\t@%p3 bra \t$L__BB0_3;
$L__BB0_4:
\tbra.uni \t$L__BB0_5;
$L__BB0_5:
\tadd.s32 \t%r3, %r3, 1;
\t@!%p4 bra \t$L__BB0_5;
\tret;
}
"""


def test_only_backward_branch_targets_without_tensor_cores_are_marked():
    out = no_unroll(LOOPS)
    assert f"$L__BB0_2:\n\t{PRAGMA}\n" in out
    assert f"$L__BB0_5:\n\t{PRAGMA}\n" in out  # a negated predicate is a branch too
    assert f"$L__BB0_3:\n\t{PRAGMA}" not in out  # the mma loop is left to ptxas
    assert f"$L__BB0_4:\n\t{PRAGMA}" not in out  # a forward target is no loop
    assert out.count(PRAGMA) == 2
    assert no_unroll(out) == out  # a marked loop gets no second pragma


def test_ptx_without_loops_is_unchanged():
    text = ".visible .entry k()\n{\n\t@%p1 bra \t$L__BB0_2;\n\tadd.s32 \t%r1, %r1, 1;\n$L__BB0_2:\n\tret;\n}\n"
    assert no_unroll(text) == text


def _layer_norm_llvm_ir(target: str) -> tuple[str, str]:
    import eggpu
    import eggpu.language as tl
    from eggpu.kernels import layer_norm_forward

    ck = eggpu.compile(layer_norm_forward.Kernel[tl.f32](256), target=target, cache=False)
    return ck.llvm_ir, ck.ptx


@pytest.mark.parametrize("target", ["sm_80", "sm_90"])
def test_layer_norm_loops_marked_only_when_asked(target, ptxas_registers):
    llvm_ir, ptx = _layer_norm_llvm_ir(target)
    assert PRAGMA not in ptx  # the default: ptxas unrolls as it likes
    entry = "layer_norm_forward_entry_point"
    marked = emit_ptx(llvm_ir, target, entry=entry, options=PtxOptions(ptxas_unroll=False)).ptx
    assert marked.count(PRAGMA) == 3 and no_unroll(ptx) == marked  # mean, variance, normalize
    assert ptxas_registers(marked, target) <= ptxas_registers(ptx, target)
