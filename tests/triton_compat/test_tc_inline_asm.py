"""``tl.inline_asm_elementwise``: lowered to LLVM inline asm in PTX (accepted by ptxas); the numpy
interpreter and ``run_cpu`` refuse it with one located error; Triton's arguments eggpu cannot honour
(``pack`` > 1, several results, constraints that do not match the arguments) are compile errors."""

from __future__ import annotations

import inspect
import os

import numpy as np
import pytest

import eggpu
import eggpu.language as tl
from bench import compat_core
from eggpu.ir.errors import CodegenError, InterpreterError
from eggpu.ir.parser import parse_function

# Triton's test_inline_asm kernel (a funnel shift), as the test_core catalogue has it; errors name
# its file (bench/compat_core_kernels2.py) and the line of its tl.inline_asm_elementwise call
inline_asm_kernel = compat_core.load("eggpu").inline_asm_kernel
KERNEL_FILE = inline_asm_kernel.fn.__code__.co_filename
_src, _start = inspect.getsourcelines(inline_asm_kernel.fn)
ASM_LINE = _start + next(i for i, ln in enumerate(_src) if "tl.inline_asm_elementwise(" in ln)


@eggpu.jit
def float_fma(X, Z, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs < N, other=0.0)
    # a scalar argument broadcasts against the block, as in Triton
    z = tl.inline_asm_elementwise("fma.rn.f32 $0, $1, $2, $1;", "=f,f,f", (x, 3.0), dtype=(tl.float32, ),
                                  is_pure=False, pack=1)
    tl.store(Z + offs, z, mask=offs < N)


def _ints():
    x = np.arange(128, dtype=np.int32)
    return x, x[::-1].copy(), np.zeros(128, np.int32)


@pytest.mark.parametrize("target", ["sm_80", "sm_90"])
def test_inline_asm_is_in_the_ptx_once_per_element_and_ptxas_accepts_it(target, ptxas_registers):
    x, y, z = _ints()
    ck = eggpu.compile(inline_asm_kernel.specialize(x, y, z, n=17, BLOCK=128), target=target)
    # 128 elements over 128 threads: one shf per thread, with registers in place of $0..$3
    lines = [ln.strip() for ln in ck.ptx.splitlines() if "shf.l.wrap.b32" in ln]
    assert len(lines) == 1 and "$" not in lines[0], lines
    assert ck.report["optimizer"]["validation"] == "valid"
    assert ptxas_registers(ck.ptx, target) > 0


def test_inline_asm_on_floats_broadcasts_a_scalar_and_keeps_side_effecting_asm(ptxas_registers):
    x = np.ones(1001, np.float32)
    ck = eggpu.compile(float_fma.specialize(x, x.copy(), 1001, BLOCK=1024), target="sm_90")
    # 1024 elements over 128 threads: 8 per thread, each its own asm call (never merged)
    assert sum("fma.rn.f32" in ln for ln in ck.ptx.splitlines()) == 8
    assert "sideeffect" in ck.llvm_ir
    assert ptxas_registers(ck.ptx, "sm_90") > 0


def test_the_ir_of_inline_asm_prints_and_parses_back():
    x, y, z = _ints()
    fn = inline_asm_kernel.specialize(x, y, z, n=5, BLOCK=128).ir()
    text = str(fn)
    assert 'inline_asm(' in text and '"shf.l.wrap.b32 $0, $1, $2, $3;"' in text
    assert str(parse_function(text)) == text


@pytest.mark.parametrize("device, error, runner", [("interpret", InterpreterError, "the numpy interpreter"),
                                                   ("cpu", CodegenError, "run_cpu")])
def test_interpret_and_run_cpu_refuse_inline_asm_with_the_source_line(monkeypatch, device, error, runner):
    monkeypatch.setenv("EGGPU_JIT_DEVICE", device)
    x, y, z = _ints()
    with pytest.raises(error) as info:
        inline_asm_kernel[(1,)](x, y, z, n=3, BLOCK=128)
    msg = str(info.value)
    first, line, caret = msg.splitlines()[:3]
    assert first.startswith(f"{KERNEL_FILE}:")
    assert "inline_asm_kernel: tl.inline_asm_elementwise is GPU-only" in first
    assert runner in first
    assert "tl.inline_asm_elementwise(" in line and caret.strip() == "^"
    assert not z.any()  # nothing ran


def test_the_interpreter_refuses_before_running_anything():
    assert os.environ.get("EGGPU_JIT_DEVICE") in (None, "", "cpu", "interpret", "gpu")
    x, y, z = _ints()
    k = inline_asm_kernel.specialize(x, y, z, n=3, BLOCK=128)
    with pytest.raises(InterpreterError, match="GPU-only"):
        k.interpret((1,), x, y, z)
    assert not z.any()


@eggpu.jit
def _packed(X, Z):
    x = tl.load(X + tl.arange(0, 16))
    z = tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [x], dtype=tl.int32, is_pure=True, pack=4)
    tl.store(Z + tl.arange(0, 16), z)


@eggpu.jit
def _two_results(X, Z):
    x = tl.load(X + tl.arange(0, 16))
    a, b = tl.inline_asm_elementwise("mov.b32 $0, $2; mov.b32 $1, $2;", "=r,r", [x],
                                     dtype=(tl.int32, tl.int32), is_pure=True, pack=1)
    tl.store(Z + tl.arange(0, 16), a + b)


@eggpu.jit
def _bad_constraints(X, Z):
    x = tl.load(X + tl.arange(0, 16))
    z = tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r,r", [x], dtype=tl.int32, is_pure=True, pack=1)
    tl.store(Z + tl.arange(0, 16), z)


@pytest.mark.parametrize("fn, problem, at", [
    (_packed, "tl.inline_asm_elementwise(pack=4) is not supported by eggpu: each asm call computes one element",
     "pack=4"),
    (_two_results, "constraints '=r,r' must name 2 output(s) (one per dtype) and 1 input(s) (one per argument), "
     "got 1 and 1", '"=r,r"'),
    (_bad_constraints, "constraints '=r,r,r' must name 1 output(s) (one per dtype) and 1 input(s) (one per "
     "argument), got 1 and 2",
     '"=r,r,r"'),
])
def test_what_eggpu_cannot_honour_is_a_located_compile_error(fn, problem, at):
    x = np.arange(16, dtype=np.int32)
    with pytest.raises(eggpu.CompileError) as info:
        fn.specialize(x, x.copy()).ir()
    first, line, caret = str(info.value).splitlines()[:3]
    assert first.startswith(f"{__file__}:") and problem in first
    assert line[caret.index("^"):].startswith(at)  # the caret points at the argument


def test_run_cpu_of_a_cached_kernel_still_names_the_source_line(monkeypatch, tmp_path):
    monkeypatch.setenv("EGGPU_CACHE_DIR", str(tmp_path / "cache"))
    x, y, z = _ints()
    spec = inline_asm_kernel.specialize(x, y, z, n=9, BLOCK=128)
    eggpu.compile(spec, target="sm_90")
    ck = eggpu.compile(spec, target="sm_90")
    assert ck.report["cache"] == "hit" and ck.report["gpu_only"][0][:3] == ["inline_asm", KERNEL_FILE, ASM_LINE]
    with pytest.raises(CodegenError) as info:
        ck.run_cpu((1,), x, y, z)
    first, line, caret = str(info.value).splitlines()[:3]
    assert first.startswith(f"{KERNEL_FILE}:{ASM_LINE}:") and "run_cpu (the host lowering) cannot run PTX" in first
    assert "tl.inline_asm_elementwise(" in line and caret.strip() == "^"


@eggpu.jit
def split_halves(X, LO, HI, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs < N, other=0)
    # two results, as Triton's test_inline_asm_multiple_outputs: the halves of each 32-bit word
    lo, hi = tl.inline_asm_elementwise("and.b32 $0, $2, 65535; shr.u32 $1, $2, 16;", "=r,=r,r", [x],
                                       dtype=(tl.uint32, tl.uint32), is_pure=True, pack=1)
    tl.store(LO + offs, lo, mask=offs < N)
    tl.store(HI + offs, hi, mask=offs < N)


@eggpu.jit
def load_through_asm(X, Z, BLOCK: tl.constexpr):
    # a pointer argument, as Triton's test_inline_asm_with_pointers
    ptrs = X + tl.arange(0, BLOCK)
    v = tl.inline_asm_elementwise("ld.global.b32 $0, [$1];", "=r,l", [ptrs], dtype=tl.int32, is_pure=False,
                                  pack=1)
    tl.store(Z + tl.arange(0, BLOCK), v)


@pytest.mark.parametrize("target", ["sm_80", "sm_90"])
def test_several_results_and_pointer_arguments_compile_and_assemble(target, ptxas_registers):
    x = np.zeros(1001, np.uint32)
    ck = eggpu.compile(split_halves.specialize(x, x.copy(), x.copy(), 1001, BLOCK=256), target=target)
    # 256 elements over 128 threads: two calls per thread, each with both instructions
    assert sum("shr.u32" in ln for ln in ck.ptx.splitlines()) == 2
    assert sum("and.b32" in ln and "65535" in ln for ln in ck.ptx.splitlines()) == 2
    assert ck.report["optimizer"]["validation"] == "valid"
    assert ptxas_registers(ck.ptx, target) > 0
    y = np.zeros(128, np.int32)
    ck2 = eggpu.compile(load_through_asm.specialize(y, y.copy(), BLOCK=128), target=target)
    assert sum("ld.global.b32" in ln for ln in ck2.ptx.splitlines()) == 1
    assert ptxas_registers(ck2.ptx, target) > 0


def test_several_results_print_and_parse_back():
    x = np.zeros(8, np.uint32)
    text = str(split_halves.specialize(x, x, x, 8, BLOCK=16).ir())
    assert "dtype=(u32,u32)" in text and str(parse_function(text)) == text
