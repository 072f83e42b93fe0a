"""``codegen/ptx_selects.py``: a recurring ``selp.f32`` of two float immediates becomes
``selp.b32`` of their difference and zero plus ``add.s32`` of the second: the same bits in both
cases, so ptxas need not keep a constant in a register. The compile pipeline keeps the split PTX
only where ptxas gives it fewer registers (gelu, whose 8 unrolled ``erff`` calls share 7 pairs)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eggpu.codegen.ptx_selects import split_constant_selects

_BITS = st.integers(1, 0xFFFFFFFF)


def _eval(lines: list[str], pred: bool) -> int:
    """Run the two rewritten instructions on a 32-bit register (the only two forms emitted)."""
    reg = 0
    for line in lines:
        op, rest = line.split(None, 1)
        args = [a.strip() for a in rest.rstrip(";").split(",")]
        if op == "selp.b32":
            reg = int(args[1], 16) if pred else int(args[2], 16)
        elif op == "add.s32":
            reg = (reg + int(args[2], 16)) & 0xFFFFFFFF
        else:
            raise AssertionError(f"unexpected instruction {line!r}")
    return reg


@given(a=_BITS, b=_BITS, pred=st.booleans())
def test_split_select_gives_the_same_bits(a, b, pred):
    sel = f"\tselp.f32 \t%r7, 0f{a:08X}, 0f{b:08X}, %p3;"
    out = split_constant_selects(sel + "\n" + sel.replace("%r7", "%r8") + "\n")
    first = [ln.strip() for ln in out.splitlines()[:2]]
    assert _eval(first, pred) == (a if pred else b)
    assert "selp.f32" not in out


def test_a_pair_seen_once_and_pairs_with_zero_stay():
    once = "\tselp.f32 \t%r1, 0f3F800000, 0f40000000, %p1;\n"
    assert split_constant_selects(once) == once
    zero = "\tselp.f32 \t%r1, 0f3F800000, 0f00000000, %p1;\n" * 3
    assert split_constant_selects(zero) == zero
    f64 = "\tselp.f64 \t%rd1, 0d3FF0000000000000, 0d4000000000000000, %p1;\n" * 3
    assert split_constant_selects(f64) == f64


def test_negated_predicate_is_kept():
    sel = "\tselp.f32 \t%r1, 0f3F800000, 0f40000000, !%p2;\n"
    out = split_constant_selects(sel * 2)
    assert out.count("selp.b32 \t%r1, 0xFF800000, 0x00000000, !%p2;") == 2
    assert out.count("add.s32 \t%r1, %r1, 0x40000000;") == 2


def _gelu(target: str, **kw):
    import eggpu
    import eggpu.language as tl
    from eggpu.kernels import gelu_forward

    return eggpu.compile(gelu_forward.Kernel[tl.f32](1024), target=target, cache=False, **kw)


@pytest.mark.parametrize("target", ["sm_80", "sm_90"])
def test_gelu_keeps_the_split_ptx_because_it_needs_fewer_registers(target, ptxas_registers):
    ck = _gelu(target)
    from eggpu.codegen import compile_ptx_module  # the PTX before the pipeline's choice
    from eggpu.codegen.target import get_target

    raw = compile_ptx_module(ck.ir, get_target(target, num_warps=4), num_warps=4).ptx
    unsplit_regs = ptxas_registers(raw, target)
    assert "selp.f32" in raw and split_constant_selects(raw) == ck.ptx
    assert ck.report["ptxas"]["registers"] == ptxas_registers(ck.ptx, target) < unsplit_regs


def test_gelu_backward_keeps_the_ptx_where_the_split_frees_nothing(ptxas_registers):
    import eggpu
    import eggpu.language as tl
    from eggpu.kernels import gelu_backward

    ck = eggpu.compile(gelu_backward.Kernel[tl.f32](1024), target="sm_90", cache=False)
    split = split_constant_selects(ck.ptx)
    assert split != ck.ptx  # it has recurring pairs, and the unsplit PTX was kept
    assert ptxas_registers(split, "sm_90") >= ck.report["ptxas"]["registers"]


def _vector_add_ptx(target: str, block: int) -> str:
    import eggpu
    import eggpu.language as tl
    from eggpu.kernels import vector_add

    return eggpu.compile(vector_add.Kernel[tl.f32](block), target=target, cache=False, optimize=False).ptx


def test_run_ptxas_each_gives_each_text_its_own_report_in_order(ptxas_registers):
    from eggpu.codegen import ptxas

    a, b = _vector_add_ptx("sm_80", 128), _vector_add_ptx("sm_80", 1024)
    ptxas_registers(a, "sm_80")  # skips without ptxas
    ptxas.clear_cache()
    got = ptxas.run_ptxas_each([a, b, a], "sm_80")
    ptxas.clear_cache()
    want = [ptxas.run_ptxas(p, "sm_80") for p in (a, b, a)]
    assert [r.cubin for r in got] == [r.cubin for r in want]
    assert [r.registers for r in got] == [r.registers for r in want]
    assert got[0].cubin != got[1].cubin  # really two kernels: order is checked
    assert ptxas.run_ptxas_each([], "sm_80") == []


@pytest.mark.parametrize("bad_at", [0, 1])
def test_run_ptxas_each_raises_the_error_of_the_first_failing_text(ptxas_registers, bad_at):
    """Both texts are broken from ``bad_at`` on (each with its own marker): the error raised is
    the first broken text's, whichever process ends first."""
    from eggpu.codegen import ptxas
    from eggpu.ir.errors import CodegenError

    good = _vector_add_ptx("sm_90", 256)
    ptxas_registers(good, "sm_90")
    texts = [good, good.replace("256", "512")]
    for i in range(bad_at, 2):
        texts[i] = texts[i].replace("ret;", f"this_is_not_ptx_{i};", 1)
    with pytest.raises(CodegenError, match=f"(?s)ptxas rejected the PTX for sm_90.*this_is_not_ptx_{bad_at}'"):
        ptxas.run_ptxas_each(texts, "sm_90")
