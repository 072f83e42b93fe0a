"""Fast-math flags are set through the IRBuilder (codegen.fp_flags), not by rewriting LLVM text.

The reference is the former text pass (kept here, as the oracle only): lower with the builder's
flags switched off, add ``contract`` to every ``fadd``/``fsub``/``fmul``/``fneg`` of the text,
emit. For every library kernel the PTX of the builder path must be identical, with and without
``fast_math``.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from llvmlite import ir

from eggpu.codegen import compile_ptx_module, emitter
from eggpu.codegen.fp_flags import FAST_MATH_FLAGS, FlaggedBuilder, fp_flags
from eggpu.codegen.lowering import lower_function
from eggpu.codegen.ptx import emit_ptx
from eggpu.codegen.target import get_target

F32 = ir.FloatType()
_FP_OP = re.compile(r"(=\s*(?:fadd|fsub|fmul|fneg))((?:\s+(?:fast|nnan|ninf|nsz|arcp|contract|afn|reassoc))*)(?=\s)")
_FP_LINE = re.compile(r"=\s*(fadd|fsub|fmul|fneg)\b([^%<]*)")


def _regex_contract(text: str) -> str:
    """The former ``ptx.add_contract_flags``: ``contract`` on every fp op lacking it (or ``fast``)."""

    def fix(m: re.Match[str]) -> str:
        flags = m.group(2).split()
        return m.group(0) if "contract" in flags or "fast" in flags else m.group(1) + m.group(2) + " contract"

    return _FP_OP.sub(fix, text)


def _library_cases():
    from eggpu.kernels import LIBRARY

    for lk in LIBRARY:
        for dt in lk.dtypes:
            yield pytest.param(lk, dt, id=f"{lk.name}-{dt}")


def _ir(lk, dt):
    case = lk.make_case(lk.sizes[0], dt, np.random.default_rng(0))
    return lk.instance(case).ir()


@pytest.mark.parametrize("lk,dt", list(_library_cases()))
def test_library_ptx_equals_the_text_pass(lk, dt, monkeypatch):
    fn = _ir(lk, dt)
    tgt = get_target("sm_90")
    builder = {fm: compile_ptx_module(fn, tgt, fast_math=fm) for fm in (False, True)}
    flagged = [m.group(2).split() for m in _FP_LINE.finditer(builder[True].llvm_ir)]
    assert all("contract" in f for f in flagged), flagged
    assert not any(_FP_LINE.search(line) and "contract" in line for line in builder[False].llvm_ir.splitlines())

    monkeypatch.setattr(emitter, "fp_flags", lambda fast_math: ())  # the lowering as it was
    for fm in (False, True):
        _m, lm = lower_function(fn, "ptx", tgt.num_warps, fast_math=fm, verify_llvm=False, sm=tgt.sm)
        text = _regex_contract(lm.llvm_ir) if fm else lm.llvm_ir
        assert emit_ptx(text, tgt, entry=lm.entry, fast_math=fm).ptx == builder[fm].ptx, f"fast_math={fm}"


def test_host_mode_adds_no_flags_under_fast_math():
    from eggpu.kernels import BY_NAME

    lk = BY_NAME["layer_norm_forward"]
    fn = _ir(lk, lk.dtypes[0])
    _m, lm = lower_function(fn, "host", 4, fast_math=True, verify_llvm=False, sm=90)
    assert _FP_LINE.search(lm.llvm_ir) and "contract" not in lm.llvm_ir


def _one_fn() -> tuple[ir.Module, ir.Block]:
    m = ir.Module("t")
    f = ir.Function(m, ir.FunctionType(F32, [F32, F32]), "f")
    return m, f.append_basic_block("entry")


def test_flagged_builder_merges_flags():
    _m, block = _one_fn()
    x, y = block.function.args
    b = FlaggedBuilder(block, fp_flags(True))
    assert FAST_MATH_FLAGS == ("contract",)
    assert b.fadd(x, y).flags == ["contract"]
    assert b.fsub(x, y, flags=("nnan",)).flags == ["nnan", "contract"]
    assert b.fmul(x, y, flags=("contract", "nsz")).flags == ["contract", "nsz"]
    assert b.fneg(x, flags=("fast",)).flags == ["fast"]
    assert b.fdiv(x, y).flags == []  # no afn/arcp: fdiv stays exact
    plain = FlaggedBuilder(block)
    assert plain.fadd(x, y).flags == [] and plain.fneg(x).flags == []
    text = str(block)
    assert "fadd contract float" in text and "fsub nnan contract float" in text and "fneg fast float" in text
