"""``tl.inline_asm_elementwise``: lowered to LLVM inline asm in PTX (accepted by ptxas); the numpy
interpreter and ``run_cpu`` refuse it with one located error; ``pack`` > 1 packs narrow elements
into 32-bit registers as Triton does; constraints that do not match the arguments, bool values
with ``pack`` > 1 and a non-positive ``pack`` are located compile errors."""

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
def _packed_bool(X, Z):
    x = tl.load(X + tl.arange(0, 16))
    z = tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [x > 0], dtype=tl.int32, is_pure=True, pack=2)
    tl.store(Z + tl.arange(0, 16), z)


@eggpu.jit
def _pack_zero(X, Z):
    x = tl.load(X + tl.arange(0, 16))
    z = tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [x], dtype=tl.int32, is_pure=True, pack=0)
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
    (_packed, "constraints '=r,r' must name 4 output(s) and 4 input(s) (4 elements of each, packed into 32-bit "
     "registers), got 1 and 1", '"=r,r"'),
    (_packed_bool, "tl.inline_asm_elementwise(pack=2): a bool argument cannot be packed into registers", "[x > 0]"),
    (_pack_zero, "tl.inline_asm_elementwise: pack must be a positive compile-time int, got the compile-time int 0",
     "pack=0"),
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


@eggpu.jit
def fp8e4b15_to_f16(X, Y, n, BLOCK: tl.constexpr):
    """Triton's own pack=4 asm (triton/language/extra/cuda/utils.py, convert_fp8e4b15_to_float16):
    four fp8 bytes in one b32 operand, four f16 results in two b32 registers."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs < n)
    y = tl.inline_asm_elementwise(
        "{ .reg .b32 a<2>, b<2>; prmt.b32 a0, 0, $2, 0x5746; and.b32 b0, a0, 0x7f007f00; "
        "and.b32 b1, a0, 0x00ff00ff; and.b32 a1, a0, 0x00800080; shr.b32 b0, b0, 1; add.u32 b1, b1, a1; "
        "lop3.b32 $0, b0, 0x80008000, a0, 0xf8; shl.b32 $1, b1, 7; }", "=r,=r,r", [x], dtype=tl.float16,
        is_pure=True, pack=4)
    tl.store(Y + offs, y, mask=offs < n)


@eggpu.jit
def halves_pack2(X, Y, Z, BLOCK: tl.constexpr):
    """pack=2 on f16 (two per b32) and i32 (one per register): 1 + 2 outputs, then 1 + 2 inputs."""
    offs = tl.arange(0, BLOCK)
    h = tl.load(X + offs)
    i = tl.load(Y + offs)
    r, s = tl.inline_asm_elementwise("{ mov.b32 $0, $3; add.s32 $1, $4, 1; add.s32 $2, $5, 2; }",
                                     "=r,=r,=r,r,r,r", [h, i], dtype=(tl.float16, tl.int32), is_pure=True, pack=2)
    tl.store(Z + offs, r.to(tl.float32) + s.to(tl.float32))


@pytest.mark.parametrize("target", ["sm_80", "sm_90"])
@pytest.mark.parametrize("n,block", [(1, 128), (1000, 1024), (1001, 1024)])
def test_pack4_packs_four_bytes_per_call_and_ptxas_accepts_it(target, n, block, ptxas_registers):
    codes = eggpu.reinterpret(np.zeros(n, np.uint8), tl.float8e4b15)
    ck = eggpu.compile(fp8e4b15_to_f16.specialize(codes, np.zeros(n, np.float16), n, BLOCK=block), target=target)
    per_thread = block // 128  # 4 warps: 1 or 8 elements per thread -> 1 (padded) or 2 asm calls
    assert sum("prmt.b32 a0, 0," in ln for ln in ck.ptx.splitlines()) == max(1, per_thread // 4)
    assert 'call {i32, i32} asm' in ck.llvm_ir and '"=r,=r,r"(i32 ' in ck.llvm_ir  # 2 results, 1 operand
    assert ptxas_registers(ck.ptx, target) > 0


def test_pack4_bytes_go_low_to_high_and_results_come_back_in_order():
    """The four elements of a call are packed element 0 in the low byte (Triton's vector order),
    and the results' halves unpack the same way: read off the LLVM IR of one call."""
    codes = eggpu.reinterpret(np.zeros(512, np.uint8), tl.float8e4b15)
    ck = eggpu.compile(fp8e4b15_to_f16.specialize(codes, np.zeros(512, np.float16), 512, BLOCK=512),
                       target="sm_90", optimize=False)
    ir_text = ck.llvm_ir
    assert "insertelement <4 x i8>" in ir_text and "bitcast <4 x i8>" in ir_text
    assert "bitcast i32" in ir_text and "to <2 x half>" in ir_text


@pytest.mark.parametrize("target", ["sm_80", "sm_90"])
def test_pack2_with_two_results_and_mixed_widths_assembles(target, ptxas_registers):
    h, i = np.zeros(256, np.float16), np.zeros(256, np.int32)
    ck = eggpu.compile(halves_pack2.specialize(h, i, np.zeros(256, np.float32), BLOCK=256), target=target)
    assert 'call {i32, i32, i32} asm' in ck.llvm_ir and '"=r,=r,=r,r,r,r"(i32 ' in ck.llvm_ir
    assert ptxas_registers(ck.ptx, target) > 0


@pytest.mark.parametrize("device, error", [("interpret", InterpreterError), ("cpu", CodegenError)])
def test_pack4_is_gpu_only_too(monkeypatch, device, error):
    monkeypatch.setenv("EGGPU_JIT_DEVICE", device)
    y = np.zeros(8, np.float16)
    with pytest.raises(error, match="fp8e4b15_to_f16: tl.inline_asm_elementwise is GPU-only"):
        fp8e4b15_to_f16[(1,)](eggpu.reinterpret(np.zeros(8, np.uint8), tl.float8e4b15), y, 8, BLOCK=8)
    assert not y.any()


def test_packed_asm_prints_and_parses_back():
    fn = halves_pack2.specialize(np.zeros(256, np.float16), np.zeros(256, np.int32), np.zeros(256, np.float32),
                                 BLOCK=256).ir()
    text = str(fn)
    assert "pack=2" in text and str(parse_function(text)) == text
