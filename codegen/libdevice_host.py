"""libdevice's own code for run_cpu: the ``__nv_*`` functions whose result the GPU specifies bit for bit.

The PTX path links libdevice's bitcode (:mod:`.libdevice`); run_cpu used to call the C library
instead (``sinf`` for ``__nv_sinf``), whose bits differ from the GPU's by a few ulp. Most of
libdevice uses only arithmetic whose result PTX defines exactly (``fma.rn``, ``mul.rn``,
``d2i.hi``, ``f2i.rz`` ...), so this module builds that same code for the host:

1. the functions and everything they call are cut from libdevice (:func:`.libdevice.libdevice_subset`,
   with its process and disk caches) with the host's triple and data layout;
2. ``__nvvm_reflect`` is answered as the PTX path's NVVMReflect pass answers it without
   ``fast_math`` (:data:`REFLECT`: no flush to zero, precise sqrt as nvcc's default, so ``sqrt``
   inside libdevice is ``sqrt.rn``; ``__CUDA_ARCH`` is the kernel's GPU target's SM times 10:
   ``sinpif``/``cospif`` evaluate their polynomials differently above sm_82), and the branches
   not taken are folded away;
3. ``addrspace(1)`` (libdevice's constant tables) becomes the host's only address space;
4. every ``llvm.nvvm.*`` intrinsic still reached is replaced by its host definition of
   :data:`INTRINSICS` and every inline PTX ``asm`` by its definition of :data:`ASM` (same result
   bits; NaN payloads aside); any other ``llvm.*`` intrinsic must be in :data:`GENERIC`
   (target-independent LLVM semantics, the same on both targets).

A symbol *qualifies* when everything it reaches after step 2 is in those tables:
:data:`HOST_SYMBOLS` lists the ones the lowering may call (the ops' math functions and the
generic ``libdevice`` op's ``libm``/``exact`` symbols); a test recomputes the list from the
installed libdevice, so a new release that reaches an intrinsic without a host definition fails
it instead of silently changing run_cpu (at run time such a symbol keeps today's path:
:func:`host_symbol`). Symbols not listed (``*.approx*``, directed rounding) keep today's path:
the C library, or eggpu's reference for the generic op's ``exact`` symbols.

Costs: libdevice is read once per process (as the PTX path does); a host build is made once per
process, set of names and SM (3-40 ms) and kept as bitcode; the kernel links only the names it
declares (:func:`link_host_libdevice`). Under ``fast_math`` the GPU takes libdevice's flush-to-zero
branches (f32 operations inside f64 functions too), so a host build with ``fast_math`` keeps the
C library (:func:`host_symbol`; run_cpu itself builds without it).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from typing import Any

from eggpu.ir.errors import CodegenError, ToolchainError

__all__ = ["GENERIC", "HOST_SYMBOLS", "INTRINSICS", "REFLECT", "host_symbol", "link_host_libdevice"]

def _reflect() -> dict[str, int]:
    from .libdevice import prec_sqrt

    return {"__CUDA_FTZ": 0, "__CUDA_PREC_SQRT": prec_sqrt()}


REFLECT = _reflect()
"""``__nvvm_reflect`` answers, as LLVM's NVVMReflect gives them to the PTX path without ``fast_math``
(module flag ``nvvm-reflect-ftz`` 0; ``__CUDA_PREC_SQRT`` :func:`.libdevice.prec_sqrt`: 1 with
llvmlite's LLVM 22). ``__CUDA_ARCH`` (the SM times 10) is added per build (:func:`host_build`)."""
DEFAULT_SM = 90  # a host build without a GPU target answers __CUDA_ARCH as sm_90 (eggpu's default target)

_F, _D = "float", "double"

# name -> (return type, argument types, body using %a, %b, %c; the last line is the result).
# Semantics are PTX's (ISA "cvt", "fma", "mul", "abs", "min"/"max"): x86 code runs in
# round-to-nearest-even without flushing, so the .rn forms are IEEE operations; float->int
# conversions saturate and give 0 for NaN (LLVM's fptosi.sat/fptoui.sat do exactly that).
INTRINSICS: dict[str, tuple[str, tuple[str, ...], str]] = {
    "llvm.nvvm.fma.rn.f": (_F, (_F, _F, _F), "call float @llvm.fma.f32(float %a, float %b, float %c)"),
    "llvm.nvvm.fma.rn.d": (_D, (_D, _D, _D), "call double @llvm.fma.f64(double %a, double %b, double %c)"),
    "llvm.nvvm.mul.rn.f": (_F, (_F, _F), "fmul float %a, %b"),
    "llvm.nvvm.mul.rn.d": (_D, (_D, _D), "fmul double %a, %b"),
    "llvm.nvvm.add.rn.f": (_F, (_F, _F), "fadd float %a, %b"),
    "llvm.nvvm.add.rn.d": (_D, (_D, _D), "fadd double %a, %b"),
    "llvm.nvvm.div.rn.f": (_F, (_F, _F), "fdiv float %a, %b"),
    "llvm.nvvm.div.rn.d": (_D, (_D, _D), "fdiv double %a, %b"),
    "llvm.nvvm.rcp.rn.f": (_F, (_F,), "fdiv float 1.0, %a"),
    "llvm.nvvm.rcp.rn.d": (_D, (_D,), "fdiv double 1.0, %a"),
    "llvm.nvvm.sqrt.rn.f": (_F, (_F,), "call float @llvm.sqrt.f32(float %a)"),
    "llvm.nvvm.sqrt.rn.d": (_D, (_D,), "call double @llvm.sqrt.f64(double %a)"),
    "llvm.nvvm.fabs.f32": (_F, (_F,), "call float @llvm.fabs.f32(float %a)"),
    "llvm.nvvm.fabs.f64": (_D, (_D,), "call double @llvm.fabs.f64(double %a)"),
    "llvm.nvvm.trunc.f": (_F, (_F,), "call float @llvm.trunc.f32(float %a)"),
    "llvm.nvvm.trunc.d": (_D, (_D,), "call double @llvm.trunc.f64(double %a)"),
    "llvm.nvvm.floor.f": (_F, (_F,), "call float @llvm.floor.f32(float %a)"),
    "llvm.nvvm.floor.d": (_D, (_D,), "call double @llvm.floor.f64(double %a)"),
    "llvm.nvvm.ceil.f": (_F, (_F,), "call float @llvm.ceil.f32(float %a)"),
    "llvm.nvvm.ceil.d": (_D, (_D,), "call double @llvm.ceil.f64(double %a)"),
    # cvt.rni: round to the nearest integer, ties to even
    "llvm.nvvm.round.f": (_F, (_F,), "call float @llvm.roundeven.f32(float %a)"),
    "llvm.nvvm.round.d": (_D, (_D,), "call double @llvm.roundeven.f64(double %a)"),
    # the two 32-bit halves of a double, and a double from them (lo, hi)
    "llvm.nvvm.d2i.hi": ("i32", (_D,), "%w = bitcast double %a to i64\n%h = lshr i64 %w, 32\ntrunc i64 %h to i32"),
    "llvm.nvvm.d2i.lo": ("i32", (_D,), "%w = bitcast double %a to i64\ntrunc i64 %w to i32"),
    "llvm.nvvm.lohi.i2d": (_D, ("i32", "i32"), "%l = zext i32 %a to i64\n%h0 = zext i32 %b to i64\n"
                           "%h = shl i64 %h0, 32\n%w = or i64 %h, %l\nbitcast i64 %w to double"),
    "llvm.nvvm.f2i.rn": ("i32", (_F,), "%r = call float @llvm.roundeven.f32(float %a)\n"
                         "call i32 @llvm.fptosi.sat.i32.f32(float %r)"),
    "llvm.nvvm.f2i.rz": ("i32", (_F,), "call i32 @llvm.fptosi.sat.i32.f32(float %a)"),
    "llvm.nvvm.f2ui.rz": ("i32", (_F,), "call i32 @llvm.fptoui.sat.i32.f32(float %a)"),
    "llvm.nvvm.f2ll.rz": ("i64", (_F,), "call i64 @llvm.fptosi.sat.i64.f32(float %a)"),
    "llvm.nvvm.f2ll.rn": ("i64", (_F,), "%r = call float @llvm.roundeven.f32(float %a)\n"
                          "call i64 @llvm.fptosi.sat.i64.f32(float %r)"),
    "llvm.nvvm.d2i.rn": ("i32", (_D,), "%r = call double @llvm.roundeven.f64(double %a)\n"
                         "call i32 @llvm.fptosi.sat.i32.f64(double %r)"),
    "llvm.nvvm.d2i.rz": ("i32", (_D,), "call i32 @llvm.fptosi.sat.i32.f64(double %a)"),
    "llvm.nvvm.d2ll.rz": ("i64", (_D,), "call i64 @llvm.fptosi.sat.i64.f64(double %a)"),
    "llvm.nvvm.d2ll.rn": ("i64", (_D,), "%r = call double @llvm.roundeven.f64(double %a)\n"
                          "call i64 @llvm.fptosi.sat.i64.f64(double %r)"),
    "llvm.nvvm.f2ui.rn": ("i32", (_F,), "%r = call float @llvm.roundeven.f32(float %a)\n"
                          "call i32 @llvm.fptoui.sat.i32.f32(float %r)"),
    "llvm.nvvm.f2ull.rz": ("i64", (_F,), "call i64 @llvm.fptoui.sat.i64.f32(float %a)"),
    "llvm.nvvm.f2ull.rn": ("i64", (_F,), "%r = call float @llvm.roundeven.f32(float %a)\n"
                           "call i64 @llvm.fptoui.sat.i64.f32(float %r)"),
    "llvm.nvvm.d2ui.rz": ("i32", (_D,), "call i32 @llvm.fptoui.sat.i32.f64(double %a)"),
    "llvm.nvvm.d2ui.rn": ("i32", (_D,), "%r = call double @llvm.roundeven.f64(double %a)\n"
                          "call i32 @llvm.fptoui.sat.i32.f64(double %r)"),
    "llvm.nvvm.d2ull.rz": ("i64", (_D,), "call i64 @llvm.fptoui.sat.i64.f64(double %a)"),
    "llvm.nvvm.d2ull.rn": ("i64", (_D,), "%r = call double @llvm.roundeven.f64(double %a)\n"
                           "call i64 @llvm.fptoui.sat.i64.f64(double %r)"),
    "llvm.nvvm.ui2f.rn": (_F, ("i32",), "uitofp i32 %a to float"),
    "llvm.nvvm.ll2f.rn": (_F, ("i64",), "sitofp i64 %a to float"),
    "llvm.nvvm.ull2f.rn": (_F, ("i64",), "uitofp i64 %a to float"),
    "llvm.nvvm.ull2d.rn": (_D, ("i64",), "uitofp i64 %a to double"),
    # sad: c + |a - b| (the difference taken without overflow)
    "llvm.nvvm.sad.i": ("i32", ("i32", "i32", "i32"), "%lt = icmp slt i32 %a, %b\n%d1 = sub i32 %b, %a\n"
                        "%d2 = sub i32 %a, %b\n%d = select i1 %lt, i32 %d1, i32 %d2\nadd i32 %c, %d"),
    "llvm.nvvm.sad.ui": ("i32", ("i32", "i32", "i32"), "%lt = icmp ult i32 %a, %b\n%d1 = sub i32 %b, %a\n"
                         "%d2 = sub i32 %a, %b\n%d = select i1 %lt, i32 %d1, i32 %d2\nadd i32 %c, %d"),
    "llvm.nvvm.i2f.rn": (_F, ("i32",), "sitofp i32 %a to float"),
    "llvm.nvvm.i2d.rn": (_D, ("i32",), "sitofp i32 %a to double"),
    "llvm.nvvm.ui2d.rn": (_D, ("i32",), "uitofp i32 %a to double"),
    "llvm.nvvm.ll2d.rn": (_D, ("i64",), "sitofp i64 %a to double"),
    "llvm.nvvm.d2f.rn": (_F, (_D,), "fptrunc double %a to float"),
    # PTX .sat: clamp to [0, 1], NaN -> +0
    "llvm.nvvm.saturate.f": (_F, (_F,), "%lo = fcmp ogt float %a, 0.0\n%x = select i1 %lo, float %a, float 0.0\n"
                             "%hi = fcmp ogt float %x, 1.0\nselect i1 %hi, float 1.0, float %x"),
    "llvm.nvvm.mulhi.i": ("i32", ("i32", "i32"), "%x = sext i32 %a to i64\n%y = sext i32 %b to i64\n"
                          "%p = mul i64 %x, %y\n%h = lshr i64 %p, 32\ntrunc i64 %h to i32"),
    "llvm.nvvm.mulhi.ui": ("i32", ("i32", "i32"), "%x = zext i32 %a to i64\n%y = zext i32 %b to i64\n"
                           "%p = mul i64 %x, %y\n%h = lshr i64 %p, 32\ntrunc i64 %h to i32"),
}
"""``llvm.nvvm.*`` intrinsic -> its host definition with the GPU's result bits (NaN payloads aside:
the host propagates an input NaN's payload where the GPU gives its canonical NaN)."""

_I128 = ("%x = zext i64 %a to i128\n%y = zext i64 %b to i128\n")
_PAIR64 = ("%lo = trunc i128 %r to i64\n%s = lshr i128 %r, 64\n%hi = trunc i128 %s to i64\n"
           "%p = insertvalue { i64, i64 } poison, i64 %lo, 0\ninsertvalue { i64, i64 } %p, i64 %hi, 1")
_WIDE128 = ("%a0 = zext i64 %a to i128\n%a1 = zext i64 %b to i128\n%a2 = shl i128 %a1, 64\n%x = or i128 %a2, %a0\n"
            "%b0 = zext i64 %c to i128\n%b1 = zext i64 %d to i128\n%b2 = shl i128 %b1, 64\n%y = or i128 %b2, %b0\n")

ASM: dict[tuple[str, str], tuple[str, tuple[str, ...], str]] = {
    # (lo, hi) of the 64-bit a * b + c (mad.lo.cc then madc.hi: the carry chain)
    ("{ mad.lo.cc.u32 $0, $2, $3, $4; madc.hi.u32 $1, $2, $3, 0; }", "=r,=r,r,r,r"): (
        "{ i32, i32 }", ("i32", "i32", "i32"),
        "%x = zext i32 %a to i64\n%y = zext i32 %b to i64\n%z = zext i32 %c to i64\n%m = mul i64 %x, %y\n"
        "%r = add i64 %m, %z\n%lo = trunc i64 %r to i32\n%s = lshr i64 %r, 32\n%hi = trunc i64 %s to i32\n"
        "%p = insertvalue { i32, i32 } poison, i32 %lo, 0\ninsertvalue { i32, i32 } %p, i32 %hi, 1"),
    ("sub.rn.f32 $0, $1, $2;", "=f,f,f"): (_F, (_F, _F), "fsub float %a, %b"),
    ("sub.rn.f64 $0, $1, $2;", "=d,d,d"): (_D, (_D, _D), "fsub double %a, %b"),
    # setp.equ: equal or unordered
    ("{ .reg .pred __$$temp3; setp.equ.f64 __$$temp3, $1, $2; selp.f64 $0, $3, $4, __$$temp3;}", "=d,d,d,d,d"): (
        _D, (_D, _D, _D, _D), "%e = fcmp ueq double %a, %b\nselect i1 %e, double %c, double %d"),
    # the shift that brings the highest set bit to bit 31; 0xffffffff for 0
    ("bfind.shiftamt.u32 $0, $1;", "=r,r"): (
        "i32", ("i32",), "%z = icmp eq i32 %a, 0\n%n = call i32 @llvm.ctlz.i32(i32 %a, i1 true)\n"
        "select i1 %z, i32 -1, i32 %n"),
    # 128-bit (lo, hi) of the u64 product a * b (checked against a simulation of the carry chain
    # in tests/codegen/test_libdevice_host.py)
    ("{ .reg .u32 r0, r1, r2, r3, alo, ahi, blo, bhi; mov.b64 {alo,ahi}, $2; mov.b64 {blo,bhi}, $3; "
     "mul.lo.u32 r0, alo, blo; mul.hi.u32 r1, alo, blo; mad.lo.cc.u32 r1, alo, bhi, r1; "
     "madc.hi.u32 r2, alo, bhi, 0; mad.lo.cc.u32 r1, ahi, blo, r1; madc.hi.cc.u32 r2, ahi, blo, r2; "
     "madc.hi.u32 r3, ahi, bhi, 0; mad.lo.cc.u32 r2, ahi, bhi, r2; addc.u32 r3, r3, 0; "
     "mov.b64 $0, {r0,r1}; mov.b64 $1, {r2,r3}; }", "=l,=l,l,l"): (
        "{ i64, i64 }", ("i64", "i64"), _I128 + "%r = mul i128 %x, %y\n" + _PAIR64),
    # 128-bit a * b + c (c: u64)
    ("{ .reg .u32 r0, r1, r2, r3, alo, ahi, blo, bhi, clo, chi; mov.b64 {alo,ahi}, $2; mov.b64 {blo,bhi}, $3; "
     "mov.b64 {clo,chi}, $4; mad.lo.cc.u32 r0, alo, blo, clo; madc.hi.cc.u32 r1, alo, blo, chi; "
     "madc.hi.u32 r2, alo, bhi, 0; mad.lo.cc.u32 r1, alo, bhi, r1; madc.hi.cc.u32 r2, ahi, blo, r2; "
     "madc.hi.u32 r3, ahi, bhi, 0; mad.lo.cc.u32 r1, ahi, blo, r1; madc.lo.cc.u32 r2, ahi, bhi, r2; "
     "addc.u32 r3, r3, 0; mov.b64 $0, {r0,r1}; mov.b64 $1, {r2,r3}; }", "=l,=l,l,l,l"): (
        "{ i64, i64 }", ("i64", "i64", "i64"),
        _I128 + "%m = mul i128 %x, %y\n%z = zext i64 %c to i128\n%r = add i128 %m, %z\n" + _PAIR64),
    # 128-bit (a_lo, a_hi) +/- (b_lo, b_hi), modulo 2**128
    ("{ .reg .u32 r0, r1, r2, r3, a0, a1, a2, a3, b0, b1, b2, b3; mov.b64 {a0,a1}, $2; mov.b64 {a2,a3}, $3; "
     "mov.b64 {b0,b1}, $4; mov.b64 {b2,b3}, $5; add.cc.u32 r0, a0, b0; addc.cc.u32 r1, a1, b1; "
     "addc.cc.u32 r2, a2, b2; addc.u32 r3, a3, b3; mov.b64 $0, {r0,r1}; mov.b64 $1, {r2,r3}; }", "=l,=l,l,l,l,l"): (
        "{ i64, i64 }", ("i64",) * 4, _WIDE128 + "%r = add i128 %x, %y\n" + _PAIR64),
    ("{ .reg .u32 r0, r1, r2, r3, a0, a1, a2, a3, b0, b1, b2, b3; mov.b64 {a0,a1}, $2; mov.b64 {a2,a3}, $3; "
     "mov.b64 {b0,b1}, $4; mov.b64 {b2,b3}, $5; sub.cc.u32 r0, a0, b0; subc.cc.u32 r1, a1, b1; "
     "subc.cc.u32 r2, a2, b2; subc.u32 r3, a3, b3; mov.b64 $0, {r0,r1}; mov.b64 $1, {r2,r3}; }", "=l,=l,l,l,l,l"): (
        "{ i64, i64 }", ("i64",) * 4, _WIDE128 + "%r = sub i128 %x, %y\n" + _PAIR64),
}
"""libdevice's inline PTX (``asm``, keyed by its text with whitespace runs made one space, and its
constraints) -> host definition with the same bits. Only exact ones: ``rcp.approx``, ``rsqrt.approx``,
the directed-rounding subtractions and the ``.ftz`` ones stay out (a function that keeps one after
folding does not qualify)."""


def asm_key(text: str) -> str:
    """An ``asm`` string as LLVM prints it (``\\0A\\09`` escapes) with whitespace runs made one space."""
    return re.sub(r"(?:\\0A|\\09|\s)+", " ", text).strip()


GENERIC = frozenset({
    "llvm.fabs", "llvm.copysign", "llvm.fma", "llvm.sqrt", "llvm.trunc", "llvm.floor", "llvm.ceil",
    "llvm.ctlz", "llvm.cttz", "llvm.ctpop", "llvm.bitreverse", "llvm.smin", "llvm.smax", "llvm.umin",
    "llvm.umax", "llvm.abs", "llvm.memcpy", "llvm.convert.from.fp16", "llvm.fshl", "llvm.fshr",
    "llvm.roundeven", "llvm.fptosi.sat", "llvm.fptoui.sat",
})
"""Target-independent LLVM intrinsics libdevice may call (by name without the type suffix): exactly
specified by LangRef, so the host and NVPTX backends compute the same bits. ``llvm.tanh`` and the
other transcendental ones are not: the host lowers them to the C library."""

HOST_SYMBOLS = frozenset({
    # the ops' math functions (emitter._MATH): f32, then f64
    "__nv_atan2f", "__nv_cosf", "__nv_expm1f", "__nv_hypotf", "__nv_log10f", "__nv_log2f", "__nv_logf", "__nv_sinf",
    "__nv_atan2", "__nv_cos", "__nv_exp", "__nv_exp10", "__nv_exp2", "__nv_expm1", "__nv_sin", "__nv_sinh",
    # the generic libdevice op's symbols of host kind libm or exact (ir/libdevice_table.py)
    "__nv_cospi", "__nv_cospif", "__nv_dadd_rn", "__nv_dmul_rn", "__nv_double2float_rn",
    "__nv_double2hiint", "__nv_double2int_rn", "__nv_double2int_rz", "__nv_double2ll_rn",
    "__nv_double2ll_rz", "__nv_double2loint", "__nv_double2uint_rn", "__nv_double2uint_rz",
    "__nv_double2ull_rn", "__nv_double2ull_rz", "__nv_drcp_rn", "__nv_dsub_rn", "__nv_fadd_rn",
    "__nv_float2int_rn", "__nv_float2int_rz", "__nv_float2ll_rn", "__nv_float2ll_rz", "__nv_float2uint_rn",
    "__nv_float2uint_rz", "__nv_float2ull_rn", "__nv_float2ull_rz", "__nv_fma_rn", "__nv_fmaf_rn",
    "__nv_fmul_rn", "__nv_frcp_rn", "__nv_fsub_rn", "__nv_hadd", "__nv_hiloint2double", "__nv_ilogb",
    "__nv_ilogbf", "__nv_int2double_rn", "__nv_int2float_rn", "__nv_ldexp", "__nv_ldexpf",
    "__nv_ll2double_rn", "__nv_ll2float_rn", "__nv_llrint", "__nv_llrintf", "__nv_logb", "__nv_logbf",
    "__nv_mul24", "__nv_nextafter", "__nv_nextafterf", "__nv_remainder", "__nv_rhadd", "__nv_sad",
    "__nv_saturatef", "__nv_scalbn", "__nv_scalbnf", "__nv_sinpi", "__nv_sinpif", "__nv_uhadd",
    "__nv_uint2double_rn", "__nv_uint2float_rn", "__nv_ull2double_rn", "__nv_ull2float_rn", "__nv_umul24",
    "__nv_urhadd", "__nv_usad",
})
"""The ``__nv_*`` functions run_cpu runs from libdevice: of those the lowering may call on the host,
every one whose folded code reaches only :data:`INTRINSICS`, :data:`ASM` and :data:`GENERIC`
(recomputed from the installed libdevice by tests/codegen/test_libdevice_host.py). The ops' other
math functions reach ``ex2.approx`` (expf, tanhf, erff, ...), ``rcp.approx``/``rsqrt.approx``
(tanf, powf, atanf, asin, log, pow, ...), ``lg2.approx`` (cbrtf), directed rounding (``add.rz``:
log1pf, atanhf), and keep the C library. (``hypotf`` qualifies with the precise-sqrt answer,
:func:`.libdevice.prec_sqrt`: its square root is ``sqrt.rn``.)"""


def _generic_base(name: str) -> str:
    """``llvm.fma.f32`` -> ``llvm.fma``; ``llvm.memcpy.p0.p0.i64`` -> ``llvm.memcpy``."""
    parts = name.split(".")
    while len(parts) > 2 and re.fullmatch(r"(f|i|v\d+[if])\d+|p\d+|f16|bf16", parts[-1]):
        parts.pop()
    return ".".join(parts)


_LOCK = threading.Lock()
_LOCK_TM = threading.Lock()
_builds: dict[tuple, bytes] = {}  # (libdevice file key, names, __CUDA_ARCH) -> bitcode of the host build
_state: dict[str, Any] = {}

_REFLECT_CALL = re.compile(r"(%[\w.]+) = (?:tail )?call i32 @__nvvm_reflect\(ptr (@[\w.]+)\)[^\n]*")
_CSTRING = re.compile(r'^(@[\w.]+) = (?:[\w()]+ )*constant \[\d+ x i8\] c"([^"\\]*)\\00"', re.M)
_PREFIX = "__eggpu_nvvm."
_ASM_CALL = re.compile(r'call (\{[^}]*\}|[\w.]+) asm (sideeffect )?"((?:[^"\\]|\\.)*)", "([^"]*)"\(')
INLINE_ASM = "asm "
"""What :func:`reached` lists, followed by the PTX text, for inline PTX left without a host
definition (libdevice's directed-rounding subtractions are ``asm("sub.rz.f32 ...")``)."""


def host_symbol(name: str, *, fast_math: bool = False) -> bool:
    """Whether run_cpu calls libdevice's own ``name`` (``__nv_*``) rather than today's path (the
    C library, or eggpu's reference for the generic op's exact symbols): ``name`` is in
    :data:`HOST_SYMBOLS`, not ``fast_math`` (the GPU then takes libdevice's flush-to-zero
    branches, which the host build does not have), libdevice is installed and its ``name``
    qualifies (:func:`host_build` succeeds; checked once per process: another libdevice release
    whose ``name`` reaches an intrinsic without a host definition falls back to today's path)."""
    return name in HOST_SYMBOLS and not fast_math and _available() and _qualifies(name)


def _qualifies(name: str) -> bool:
    from .libdevice import file_key

    key = ("qualifies", file_key(), name)
    if key not in _state:
        try:
            host_build((name,))
            _state[key] = True
        except CodegenError:
            _state[key] = False
    return _state[key]


def _available() -> bool:
    if "available" not in _state:
        from .toolchain import find_libdevice

        try:
            find_libdevice()
            _state["available"] = True
        except ToolchainError:
            _state["available"] = False
    return _state["available"]


def host_text(text: str, reflect: dict[str, int] | None = None) -> str:
    """libdevice's LLVM text (a subset or the whole) made for the host, before folding:
    ``__nvvm_reflect`` calls replaced by their answers (``reflect``, default :data:`REFLECT` with
    the ``__CUDA_ARCH`` of :data:`DEFAULT_SM`),
    ``addrspace(1)`` dropped, ``alwaysinline`` dropped (the lowering calls these functions from a
    per-lane loop: one call site each), every ``llvm.nvvm.X`` renamed ``__eggpu_nvvm.X`` with a
    definition appended for those in :data:`INTRINSICS` (the others stay declarations: the
    checks after folding find them). CodegenError for a reflect question it cannot answer."""
    reflect = {**REFLECT, "__CUDA_ARCH": 10 * DEFAULT_SM} if reflect is None else reflect
    strings = dict(_CSTRING.findall(text))

    def answer(m: re.Match) -> str:
        question = strings.get(m.group(2))
        if question not in reflect:
            raise CodegenError(f"run_cpu's libdevice build cannot answer __nvvm_reflect({question!r})")
        return f"{m.group(1)} = add i32 0, {reflect[question]}"

    text = _REFLECT_CALL.sub(answer, text)
    asm_defs: dict[str, str] = {}

    def asm_call(m: re.Match) -> str:
        key = (asm_key(m.group(3)), m.group(4))
        entry = ASM.get(key)
        if entry is None or m.group(2):
            return m.group(0)  # stays: reached() reports it
        name = f"__eggpu_asm.{list(ASM).index(key)}"
        asm_defs[name] = _definition(name, *entry)
        return f"call {m.group(1)} @{name}("

    text = _ASM_CALL.sub(asm_call, text)
    text = text.replace(" addrspace(1)", "").replace("alwaysinline ", "")
    used = sorted(set(re.findall(r"@llvm\.nvvm\.([\w.]+)\(", text)))
    text = text.replace("@llvm.nvvm.", "@" + _PREFIX)
    defs = []
    for short in used:
        entry = INTRINSICS.get("llvm.nvvm." + short)
        if entry is None:
            continue
        text = re.sub(rf"^declare [^\n]*@{re.escape(_PREFIX + short)}\([^\n]*\n", "", text, flags=re.M)
        defs.append(_definition(_PREFIX + short, *entry))
    return text + "\n" + "\n".join(defs + list(asm_defs.values()))


def _definition(name: str, ret: str, args: tuple[str, ...], body: str) -> str:
    params = ", ".join(f"{t} %{v}" for t, v in zip(args, "abcd"))
    *lines, last = body.split("\n")
    lines = "".join(f"  {ln}\n" for ln in lines)
    return f"define internal {ret} @{name}({params}) alwaysinline {{\n{lines}  %res = {last}\n  ret {ret} %res\n}}\n"


def fold(text: str, keep: Sequence[str] | None, context: Any = None) -> Any:
    """Parse :func:`host_text`'s output and fold the branches the reflect answers decided
    (SCCP, CFG simplification), then drop what nothing reaches. ``keep``: the names to keep
    external (the rest is internalized first, so dead-code elimination may drop it); None keeps
    every definition (the whole-library scan of the tests). ``context``: the LLVM context to
    parse into (None: the global one)."""
    import llvmlite.binding as llvm

    from .libdevice import internalize

    try:
        mod = llvm.parse_assembly(text, context=context)
    except RuntimeError as exc:
        raise CodegenError(f"run_cpu's libdevice build produced invalid LLVM IR: {str(exc).strip()}") from exc
    if keep is not None:
        internalize(mod, keep)
    mpm = llvm.create_new_module_pass_manager()
    mpm.add_sccp_pass()
    mpm.add_simplify_cfg_pass()
    mpm.add_global_dead_code_eliminate_pass()
    mpm.add_strip_dead_prototype_pass()
    mpm.run(mod, _pass_builder())
    return mod


def unsupported(name: str) -> bool:
    """Whether a declaration ``name`` left in a folded host build has no exact host meaning: a
    ``llvm.nvvm`` intrinsic without a host definition, an LLVM intrinsic outside :data:`GENERIC`,
    inline PTX assembly (:data:`INLINE_ASM`), or any other function (libdevice defines all it
    calls but ``__nvvm_reflect``)."""
    if name.startswith("llvm."):
        return _generic_base(name) not in GENERIC
    return True


def reached(mod: Any) -> dict[str, set[str]]:
    """For each definition of the folded module ``mod``: the declarations it reaches (directly or
    through other definitions), with ``__eggpu_nvvm.X`` named back ``llvm.nvvm.X``."""
    text = str(mod)
    bodies = {m.group(1): m.group(2)
              for m in re.finditer(r"^define [^@]*@([\w.$]+)\((.*?)^}", text, re.S | re.M)}
    calls = {f: set(re.findall(r"@([\w.$]+)\(", body)) - {f} for f, body in bodies.items()}
    for f, body in bodies.items():
        for m in _ASM_CALL.finditer(body):  # PTX text (sub.rz.f32 ...): nothing the host can run
            calls[f].add(f'{INLINE_ASM}"{asm_key(m.group(3))}"')
    out: dict[str, set[str]] = {}

    def visit(f: str, seen: set[str]) -> None:
        for c in calls.get(f, ()):
            if c not in seen:
                seen.add(c)
                visit(c, seen)

    for f in bodies:
        seen: set[str] = set()
        visit(f, seen)
        out[f] = {("llvm.nvvm." + c[len(_PREFIX):]) if c.startswith(_PREFIX) else c
                  for c in seen if c not in bodies}
    return out


def _pass_builder():
    import llvmlite.binding as llvm

    tm = _target_machine()
    return llvm.create_pass_builder(tm, llvm.create_pipeline_tuning_options(speed_level=0))


def _target_machine():
    import llvmlite.binding as llvm

    with _LOCK_TM:
        if "tm" not in _state:
            llvm.initialize_native_target()
            llvm.initialize_native_asmprinter()
            _state["tm"] = llvm.Target.from_triple(llvm.get_process_triple()).create_target_machine()
        return _state["tm"]


def host_build(names: Sequence[str], sm: int | None = None) -> bytes:
    """Bitcode of libdevice's ``names`` (sorted ``__nv_*`` of :data:`HOST_SYMBOLS`) and all they
    reach, made for the host (the module docstring's steps), ``names`` external, the rest
    internal; ``sm``: the kernel's GPU target (its ``__CUDA_ARCH``; None: :data:`DEFAULT_SM`).
    Made once per process, set of names and SM. CodegenError when a name reaches an
    intrinsic without an exact host definition (a libdevice this module was not checked
    against: :func:`host_symbol` then says no); ToolchainError when libdevice is not installed."""
    from .libdevice import file_key, libdevice_subset

    names = tuple(names)
    arch = 10 * (DEFAULT_SM if sm is None else sm)
    key = (file_key(), names, arch)
    with _LOCK:
        data = _builds.get(key)
        if data is not None:
            return data
    import llvmlite.binding as llvm

    tm = _target_machine()
    # a context of its own: this runs while lowering, outside build_host's lock on the global one
    context = llvm.create_context()
    try:
        subset = libdevice_subset(names, tm.triple, str(tm.target_data), _pass_builder, context=context)
        try:
            text = str(subset)
        finally:
            subset.close()
        mod = fold(host_text(text, {**REFLECT, "__CUDA_ARCH": arch}), names, context)
        try:
            bad = sorted({d for n in names for d in reached(mod).get(n, ()) if unsupported(d)})
            data = mod.as_bitcode()
        finally:
            mod.close()  # the module before its context
    finally:
        context.close()
    if bad:
        raise CodegenError(f"run_cpu: libdevice's {', '.join(names)} reach {', '.join(bad)}, which have no "
                           "exact host definition (eggpu.codegen.libdevice_host.INTRINSICS)")
    with _LOCK:
        _builds[key] = data
    return data


def link_host_libdevice(mod: Any, sm: int | None = None) -> None:
    """Define the ``__nv_*`` functions ``mod`` (a host kernel's parsed module) declares with
    their host build for the GPU target ``sm`` (:func:`host_build`), linked in and made internal."""
    import llvmlite.binding as llvm

    names = sorted(f.name for f in mod.functions if f.is_declaration and f.name.startswith("__nv_"))
    if not names:
        return
    lib = llvm.parse_bitcode(host_build(names, sm))
    lib.triple, lib.data_layout = mod.triple, mod.data_layout
    try:
        mod.link_in(lib)
    except RuntimeError as exc:
        raise CodegenError(f"run_cpu: linking libdevice's {', '.join(names)} failed: {str(exc).strip()}") from exc
    for n in names:
        mod.get_function(n).linkage = llvm.Linkage.internal
