"""PTX emission (kernels, libdevice, FP contraction, errors) and ptxas reports.

ptxas tests skip with the reason when no ptxas is installed; the others need only llvmlite
(and libdevice for the libdevice tests).
"""

from __future__ import annotations

import re

import pytest
from llvmlite import ir

from eggpu.codegen import toolchain
from eggpu.codegen.ptx import (
    PtxOptions,
    emit_ptx,
    entry_point_name,
    fp_flags,
    mark_kernel,
)
from eggpu.codegen.ptxas import clear_cache, parse_ptxas_log, run_ptxas
from eggpu.codegen.target import GPU_TARGETS, get_target
from eggpu.ir.errors import CodegenError, ToolchainError

ENTRY = entry_point_name("tiny")
F32 = ir.FloatType()
I32 = ir.IntType(32)


def _have(find) -> str | None:
    try:
        find()
    except ToolchainError as exc:
        return str(exc)
    return None


_no_ptxas = _have(toolchain.find_ptxas)
_no_libdevice = _have(toolchain.find_libdevice)
needs_ptxas = pytest.mark.skipif(_no_ptxas is not None, reason=f"ptxas not found: {_no_ptxas}")
needs_libdevice = pytest.mark.skipif(
    _no_libdevice is not None, reason=f"libdevice not found: {_no_libdevice}"
)


def fma_module(libdevice: tuple[str, ...] = (), flags: tuple[str, ...] = ()) -> ir.Module:
    """``out[tid] = f(a[tid] * b + c)`` for each libdevice function name f in ``libdevice``."""
    m = ir.Module("tiny")
    gptr = ir.PointerType(addrspace=1)
    fn = ir.Function(m, ir.FunctionType(ir.VoidType(), [gptr, gptr, F32, F32]), ENTRY)
    tid_fn = ir.Function(m, ir.FunctionType(I32, []), "llvm.nvvm.read.ptx.sreg.tid.x")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    tid = b.call(tid_fn, [])
    x = b.load(b.gep(fn.args[1], [tid], source_etype=F32), typ=F32)
    v = b.fadd(b.fmul(x, fn.args[2], flags=flags), fn.args[3], flags=flags)
    for name in libdevice:
        callee = ir.Function(m, ir.FunctionType(F32, [F32]), name)
        v = b.call(callee, [v])
    b.store(v, b.gep(fn.args[0], [tid], source_etype=F32))
    b.ret_void()
    return m


def kernel_text(**kw) -> str:
    return str(mark_kernel(fma_module(**kw), ENTRY, 128))


def instructions(ptx: str) -> list[str]:
    return [ln.strip() for ln in ptx.splitlines() if ln.startswith("\t") and not ln.strip().startswith(".")]


# ---------------------------------------------------------------- kernels


def test_mark_kernel_on_llvmlite_module_gives_entry_and_reqntid():
    m = fma_module()
    assert mark_kernel(m, ENTRY, 256) is m
    assert m.get_global(ENTRY).calling_convention == "ptx_kernel"
    res = emit_ptx(str(m), "sm_90", entry=ENTRY)
    assert re.search(rf"^\.visible \.entry {ENTRY}\(", res.ptx, re.M)
    assert re.search(r"^\.reqntid 256, 1, 1$", res.ptx, re.M)
    assert re.search(r"^\.version 7\.8$", res.ptx, re.M)
    assert re.search(r"^\.target sm_90$", res.ptx, re.M)
    assert res.entry == ENTRY and res.target == get_target("sm_90")


def test_mark_kernel_is_idempotent_and_rejects_a_different_count():
    m = fma_module()
    mark_kernel(m, ENTRY, 128)
    mark_kernel(m, ENTRY, 128)
    assert len(m.get_named_metadata("nvvm.annotations").operands) == 4
    with pytest.raises(CodegenError, match="already a kernel of 128 threads, not 64"):
        mark_kernel(m, ENTRY, 64)


def test_mark_kernel_errors():
    with pytest.raises(CodegenError, match="no function definition named 'nope'"):
        mark_kernel(fma_module(), "nope", 128)
    with pytest.raises(CodegenError, match="no function definition named 'llvm.nvvm.read.ptx.sreg.tid.x'"):
        mark_kernel(fma_module(), "llvm.nvvm.read.ptx.sreg.tid.x", 128)
    with pytest.raises(CodegenError, match="num_threads must be 1..1024"):
        mark_kernel(fma_module(), ENTRY, 2048)
    with pytest.raises(CodegenError, match="expects an llvmlite.ir.Module or LLVM IR text"):
        mark_kernel(42, ENTRY, 128)


def test_mark_kernel_on_text_merges_existing_annotations():
    text = str(fma_module())
    text += '\n!nvvm.annotations = !{!0}\n!0 = !{ptr @"other", !"maxnreg", i32 64}\n'
    marked = mark_kernel(text, ENTRY, 64)
    assert "!nvvm.annotations = !{!0, !1, !2, !3, !4}" in marked
    assert f'!1 = !{{ptr @{ENTRY}, !"kernel", i32 1}}' in marked
    assert mark_kernel(marked, ENTRY, 64) == marked
    with pytest.raises(CodegenError, match="already a kernel of 64 threads"):
        mark_kernel(marked, ENTRY, 32)
    plain = mark_kernel(str(fma_module()), ENTRY, 96)
    res = emit_ptx(plain, "sm_80", entry=ENTRY)
    assert re.search(rf"^\.visible \.entry {ENTRY}\(", res.ptx, re.M)
    assert re.search(r"^\.reqntid 96, 1, 1$", res.ptx, re.M)


def test_unmarked_or_missing_entry_is_an_error():
    with pytest.raises(CodegenError, match="not a PTX kernel entry"):
        emit_ptx(str(fma_module()), "sm_80", entry=ENTRY)
    with pytest.raises(CodegenError, match="no definition of the entry function 'missing'"):
        emit_ptx(kernel_text(), "sm_80", entry="missing")


@pytest.mark.parametrize("name", ["sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_90a"])
def test_ptx_header_matches_target(name):
    t = get_target(name)
    res = emit_ptx(kernel_text(), t, entry=ENTRY)
    assert f".version {t.ptx_version_str}\n" in res.ptx
    assert f".target {name}\n" in res.ptx


def test_host_target_is_rejected():
    with pytest.raises(CodegenError, match="needs a GPU target"):
        emit_ptx(kernel_text(), "host", entry=ENTRY)


# ---------------------------------------------------------------- errors


def test_parse_error_is_a_codegen_error():
    with pytest.raises(CodegenError, match="does not parse"):
        emit_ptx("define void @k( {", "sm_80", entry="k")


def test_verifier_error_is_a_codegen_error_with_llvms_message():
    text = "define void @k() {\n  %a = add i32 %b, 1\n  %b = add i32 %a, 1\n  ret void\n}\n"
    with pytest.raises(CodegenError, match="verifier rejected the module.*does not dominate"):
        emit_ptx(text, "sm_80", entry="k")


# ---------------------------------------------------------------- floating point


def test_fmul_fadd_is_not_contracted_by_default():
    ptx = emit_ptx(kernel_text(), "sm_80", entry=ENTRY).ptx
    ops = instructions(ptx)
    assert not any(op.startswith("fma") for op in ops), ops
    assert any(op.startswith("mul.rn.f32") for op in ops)  # .rn also stops ptxas from fusing
    assert any(op.startswith("add.rn.f32") for op in ops)


def test_fast_math_flags_come_from_the_ir_not_from_emit_ptx():
    # emit_ptx compiles the flags it is given: its fast_math only sets nvvm-reflect-ftz
    plain = instructions(emit_ptx(kernel_text(), "sm_80", entry=ENTRY, fast_math=True).ptx)
    assert not any(op.startswith("fma") for op in plain), plain
    assert any(op.startswith("mul.rn.f32") for op in plain) and any(op.startswith("add.rn.f32") for op in plain)
    flagged = instructions(emit_ptx(kernel_text(flags=fp_flags(True)), "sm_80", entry=ENTRY, fast_math=True).ptx)
    assert any(op.startswith("fma.rn.f32") for op in flagged), flagged
    assert not any(op.startswith(("mul.rn.f32", "add.rn.f32", "mul.f32", "add.f32")) for op in flagged), flagged


def test_lowering_side_contract_flags_also_fuse():
    assert fp_flags(True) == ("contract",) and fp_flags(False) == ()
    ptx = emit_ptx(kernel_text(flags=fp_flags(True)), "sm_80", entry=ENTRY).ptx
    assert any(op.startswith("fma.rn.f32") for op in instructions(ptx))


# ---------------------------------------------------------------- libdevice


@needs_libdevice
def test_libdevice_linked_and_dead_stripped_before_optimization():
    text = kernel_text(libdevice=("__nv_expf",))
    res = emit_ptx(text, "sm_80", entry=ENTRY, options=PtxOptions(pipeline="none"))
    assert res.libdevice_functions_used == ("__nv_expf",)
    assert re.search(r"define internal .*@__nv_expf\(", res.llvm_ir_optimized)
    assert "__nv_sinf" not in res.llvm_ir_optimized
    assert "__nv_logf" not in res.llvm_ir_optimized
    defined = re.findall(r"^define [^@]*@([\w.]+)\(", res.llvm_ir_optimized, re.M)
    assert sorted(defined) == sorted([ENTRY, "__nv_expf"])
    assert "__nvvm_reflect" not in res.ptx  # NVVMReflect also runs in code generation


@needs_libdevice
def test_libdevice_optimized_module_keeps_only_the_entry():
    res = emit_ptx(kernel_text(libdevice=("__nv_expf", "__nv_logf")), "sm_90", entry=ENTRY)
    assert res.libdevice_functions_used == ("__nv_expf", "__nv_logf")
    defined = re.findall(r"^define [^@]*@([\w.]+)\(", res.llvm_ir_optimized, re.M)
    assert defined == [ENTRY]  # libdevice inlined, the rest stripped
    assert "__nv_sinf" not in res.llvm_ir_optimized
    assert "__nvvm_reflect" not in res.llvm_ir_optimized
    assert "ex2.approx" in res.ptx  # the core of __nv_expf
    assert ".func" not in res.ptx


@needs_libdevice
def test_nvvm_reflect_ftz_follows_fast_math():
    text = kernel_text(libdevice=("__nv_expf",))
    precise = instructions(emit_ptx(text, "sm_80", entry=ENTRY).ptx)
    fast = instructions(emit_ptx(text, "sm_80", entry=ENTRY, fast_math=True).ptx)
    assert not any(".ftz." in op for op in precise if op.startswith("fma"))
    assert any(op.startswith("fma.rn.ftz.f32") for op in fast)


def test_conflicting_reflect_ftz_flag_in_the_input_is_an_error():
    text = kernel_text() + '\n!llvm.module.flags = !{!100}\n!100 = !{i32 4, !"nvvm-reflect-ftz", i32 1}\n'
    with pytest.raises(CodegenError, match="nvvm-reflect-ftz.*conflicting"):
        emit_ptx(text, "sm_80", entry=ENTRY)
    emit_ptx(text, "sm_80", entry=ENTRY, fast_math=True)  # the same value links fine


def test_module_without_nv_functions_does_not_link_libdevice():
    res = emit_ptx(kernel_text(), "sm_80", entry=ENTRY)
    assert res.libdevice_functions_used == ()
    assert "__nv_" not in res.llvm_ir_optimized


@needs_libdevice
def test_unknown_libdevice_function():
    with pytest.raises(CodegenError, match="libdevice has no function.*__nv_no_such_thing"):
        emit_ptx(kernel_text(libdevice=("__nv_no_such_thing",)), "sm_80", entry=ENTRY)


def test_libdevice_needed_but_missing(monkeypatch, tmp_path):
    monkeypatch.setenv("EGGPU_LIBDEVICE", str(tmp_path / "missing.bc"))
    with pytest.raises(ToolchainError, match="EGGPU_LIBDEVICE"):
        emit_ptx(kernel_text(libdevice=("__nv_expf",)), "sm_80", entry=ENTRY)
    # a module that needs no libdevice does not look for it
    emit_ptx(kernel_text(), "sm_80", entry=ENTRY)


# ---------------------------------------------------------------- ptxas


SAMPLE_LOG = """\
ptxas info    : 11 bytes gmem, 8 bytes cmem[4]
ptxas info    : Compiling entry function 'k_entry_point' for 'sm_90'
ptxas info    : Function properties for k_entry_point
    48 bytes stack frame, 20 bytes spill stores, 24 bytes spill loads
ptxas info    : Used 40 registers, used 1 barriers, 1536 bytes smem, 368 bytes cmem[0]
ptxas info    : Compile time = 1.9 ms
ptxas info    : Function properties for __nv_expf
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
"""


def test_parse_ptxas_log():
    entry, helper = parse_ptxas_log(SAMPLE_LOG)
    assert entry.name == "k_entry_point" and entry.is_entry
    assert (entry.registers, entry.spills_stores, entry.spills_loads) == (40, 20, 24)
    assert (entry.shared_bytes, entry.stack_bytes, entry.barriers) == (1536, 48, 1)
    assert helper.name == "__nv_expf" and not helper.is_entry and helper.registers == 0


@needs_ptxas
def test_run_ptxas_reports_and_caches():
    clear_cache()
    ptx = emit_ptx(kernel_text(), "sm_90", entry=ENTRY).ptx
    report = run_ptxas(ptx, "sm_90")
    assert 1 <= report.registers <= 32
    assert report.spills == 0 and report.stack_bytes == 0 and report.shared_bytes == 0
    assert report.cubin[:4] == b"\x7fELF"
    assert "Compiling entry function" in report.log
    assert [f.name for f in report.functions if f.is_entry] == [ENTRY]
    assert run_ptxas(ptx, "sm_90") is report
    assert run_ptxas(ptx, get_target("sm_90a")) is not report


@needs_ptxas
def test_run_ptxas_error_carries_ptxas_message():
    bad = ".version 7.0\n.target sm_80\n.address_size 64\n.visible .entry k() { bogus_instr; }\n"
    with pytest.raises(CodegenError, match=r"ptxas rejected the PTX for sm_80(.|\n)*bogus_instr"):
        run_ptxas(bad, "sm_80")


@needs_ptxas
def test_run_ptxas_too_old_for_target(monkeypatch):
    import eggpu.codegen.ptxas as ptxas_mod

    monkeypatch.setattr(ptxas_mod, "ptxas_version", lambda path=None: (11, 8))
    with pytest.raises(CodegenError, match="CUDA 11.8.*PTX ISA 8.0 for sm_90a.*12.0 or newer"):
        run_ptxas("", "sm_90a")


@needs_ptxas
def test_ptxas_accepts_every_target_it_knows():
    known = toolchain.ptxas_supported_gpus()
    version = toolchain.ptxas_version()
    checked = []
    for name in GPU_TARGETS:
        t = get_target(name)
        if name not in known or version < t.min_cuda:
            continue
        report = run_ptxas(emit_ptx(kernel_text(libdevice=("__nv_expf",)), t, entry=ENTRY).ptx, t)
        assert report.registers > 0 and report.spills == 0
        checked.append(name)
    assert {"sm_80", "sm_90"} <= set(checked)


# ---------------------------------------------------------------- pipelines

LOOP_OVER_PRIVATE_ARRAY = """
define void @k(ptr addrspace(1) %p, i32 %n) {
entry:
  %arr = alloca [8 x float], align 4
  br label %loop
loop:
  %i = phi i32 [0, %entry], [%i1, %loop]
  %f = sitofp i32 %i to float
  %g = getelementptr [8 x float], ptr %arr, i32 0, i32 %i
  store float %f, ptr %g
  %i1 = add i32 %i, 1
  %c = icmp slt i32 %i1, 8
  br i1 %c, label %loop, label %done
done:
  %g3 = getelementptr [8 x float], ptr %arr, i32 0, i32 3
  %v = load float, ptr %g3
  store float %v, ptr addrspace(1) %p
  ret void
}
"""


def test_default_pipeline_is_light_and_unrolls_private_arrays_into_registers():
    assert PtxOptions().pipeline == "light"
    text = mark_kernel(LOOP_OVER_PRIVATE_ARRAY, "k", 32)
    res = emit_ptx(text, "sm_80", entry="k")
    assert "alloca" not in res.llvm_ir_optimized
    assert ".local" not in res.ptx and "__local_depot" not in res.ptx
    assert "store float 3.000000e+00" in res.llvm_ir_optimized
    unoptimized = emit_ptx(text, "sm_80", entry="k", options=PtxOptions(pipeline="none"))
    assert "alloca" in unoptimized.llvm_ir_optimized


@pytest.mark.parametrize("pipeline", ["none", "light", "O1", "O2", "O3"])
def test_every_pipeline_emits_valid_kernels(pipeline):
    res = emit_ptx(
        kernel_text(libdevice=("__nv_expf",)), "sm_90", entry=ENTRY, options=PtxOptions(pipeline=pipeline)
    )
    assert re.search(rf"^\.visible \.entry {ENTRY}\(", res.ptx, re.M)
    if pipeline != "none":
        assert "__nvvm_reflect" not in res.llvm_ir_optimized  # folded before optimization
        assert re.findall(r"^define [^@]*@([\w.]+)\(", res.llvm_ir_optimized, re.M) == [ENTRY]


def test_bad_options():
    with pytest.raises(CodegenError, match="pipeline must be one of none, light, O1, O2, O3"):
        PtxOptions(pipeline="O4")
    with pytest.raises(CodegenError, match="codegen_opt_level must be 0..3"):
        PtxOptions(codegen_opt_level=5)
    assert PtxOptions(sched4reg=True).cl_options()[0] == "-nvptx-sched4reg=true"


@needs_ptxas
def test_private_array_kernel_has_no_stack_frame():
    res = emit_ptx(mark_kernel(LOOP_OVER_PRIVATE_ARRAY, "k", 32), "sm_80", entry="k")
    report = run_ptxas(res.ptx, "sm_80")
    assert report.stack_bytes == 0 and report.spills == 0
