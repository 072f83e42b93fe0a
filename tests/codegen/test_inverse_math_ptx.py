"""asin, acos, atan, sinh, cosh, asinh, acosh, atanh, atan2, tan, log10, log1p, expm1, exp10, cbrt,
erfc, lgamma, tgamma, pow and hypot on the GPU: libdevice's ``__nv_*`` functions,
linked and inlined (no call left in the PTX), accepted by ptxas for every float dtype (f16/bf16
computed in f32). Their numbers are checked against numpy in
tests/triton_compat/test_tc_inverse_math.py and test_tc_libdevice_math.py (interpreter and host)."""

from __future__ import annotations

import re

import pytest

from eggpu.ir import Builder, bf16, f16, f32, f64, i8, i32, i64, pointer, scalar, u32

NEW_MATH = ("asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "atan2",
            "tan", "log10", "log1p", "expm1", "exp10", "cbrt", "erfc", "lgamma", "tgamma", "pow", "hypot")


def unary_kernel(op, dt, block=128):
    b = Builder(f"{op}_{dt}", [("x", pointer(dt)), ("o", pointer(dt)), ("n", scalar(i32))])
    offs = b.op("add", b.op("splat", b.op("mul", b.op("program_id", axis=0), b.const(block, i32)), shape=(block,)),
                b.op("arange", start=0, end=block))
    m = b.op("lt", offs, b.op("splat", b.param("n"), shape=(block,)))

    def at(name):
        return b.op("addptr", b.op("splat", b.param(name), shape=(block,)), offs)

    x = b.op("load", at("x"), m)
    b.effect("store", at("o"), b.op(op, x, x) if op in BINARY else b.op(op, x), m)
    return b.finish()


LIBDEVICE_MATH = ("tan", "log10", "log1p", "expm1", "exp10", "cbrt", "erfc", "lgamma", "tgamma", "pow", "hypot")
BINARY = ("atan2", "pow", "hypot", "mulhi")
CASES = [(op, "sm_90") for op in NEW_MATH] + [(op, "sm_80") for op in LIBDEVICE_MATH]
#: the exact roundings to integral and the PTX instruction each one is (no libdevice call)
ROUNDINGS = {"trunc": "cvt.rzi", "rint": "cvt.rni", "round": None}


@pytest.mark.parametrize("dt", (f32, f64, f16, bf16), ids=str)
@pytest.mark.parametrize("op,sm", CASES)
def test_inverse_and_hyperbolic_functions_compile_to_ptx(op, sm, dt, needs_ptxas):
    from eggpu.codegen import compile_ptx
    from eggpu.codegen.ptxas import run_ptxas

    ptx, _ = compile_ptx(unary_kernel(op, dt), sm)
    assert "__nv_" not in ptx, f"{op}[{dt}]: libdevice call left in the PTX"
    assert ".f64" in ptx if dt == f64 else ".f32" in ptx
    assert run_ptxas(ptx, sm).cubin


@pytest.mark.parametrize("sm", ("sm_80", "sm_90"))
@pytest.mark.parametrize("dt", (f32, f64, f16, bf16), ids=str)
@pytest.mark.parametrize("op", tuple(ROUNDINGS))
def test_roundings_to_integral_compile_to_ptx(op, dt, sm, needs_ptxas):
    """trunc and rint are one ``cvt.rzi``/``cvt.rni`` per element; round (ties away from zero) is
    LLVM's expansion of ``llvm.round``; none calls libdevice."""
    from eggpu.codegen import compile_ptx
    from eggpu.codegen.ptxas import run_ptxas

    ptx, _ = compile_ptx(unary_kernel(op, dt), sm)
    assert "__nv_" not in ptx and "call" not in ptx, f"{op}[{dt}]: a call in the PTX"
    if ROUNDINGS[op]:  # f16/bf16 may round in their own width (exact either way: LLVM narrows it)
        widths = ("f64",) if dt == f64 else ("f32", str(dt))
        assert any(re.search(rf"{ROUNDINGS[op]}(\.ftz)?\.{w}\.{w}\b", ptx) for w in widths), ptx
    assert run_ptxas(ptx, sm).cubin


BIT_OPS = {"popc": "popc.b", "clz": "clz.b", "brev": "brev.b", "ffs": None, "mulhi": "mul.hi."}


@pytest.mark.parametrize("sm", ("sm_80", "sm_90"))
@pytest.mark.parametrize("dt", (i32, i64, u32, i8), ids=str)
@pytest.mark.parametrize("op", tuple(BIT_OPS))
def test_integer_bit_functions_compile_to_ptx(op, dt, sm, needs_ptxas):
    """popc/clz/brev are PTX's own instructions (LLVM's ctpop/ctlz/bitreverse) and mulhi is
    mul.hi on 32 and 64 bits; ffs is cttz plus a select; no libdevice call."""
    from eggpu.codegen import compile_ptx
    from eggpu.codegen.ptxas import run_ptxas

    ptx, _ = compile_ptx(unary_kernel(op, dt), sm)
    assert "__nv_" not in ptx and "call" not in ptx, f"{op}[{dt}]: a call in the PTX"
    if BIT_OPS[op] and dt.bits >= 32:
        assert BIT_OPS[op] in ptx, ptx
    assert run_ptxas(ptx, sm).cubin


@pytest.mark.parametrize("fast_math", (False, True))
def test_libdevices_inner_square_roots_are_correctly_rounded(fast_math):
    """libdevice's hypotf asks ``__nvvm_reflect("__CUDA_PREC_SQRT")``; eggpu answers 1, as nvcc's
    default ``-prec-sqrt=true`` (:func:`eggpu.codegen.libdevice.prec_sqrt`), so its square root
    is ``sqrt.rn`` (within 1 ulp overall, tests/codegen/test_libdevice_host.py) and not
    ``sqrt.approx``; the same under ``fast_math`` (then with ``.ftz``)."""
    from eggpu.codegen import compile_ptx
    from eggpu.codegen.libdevice import prec_sqrt

    if not prec_sqrt():
        pytest.skip("this LLVM's NVVMReflect takes no __CUDA_PREC_SQRT answer (LLVM < 21)")
    ptx, _ = compile_ptx(unary_kernel("hypot", f32), "sm_90", fast_math=fast_math)
    sqrts = re.findall(r"\bsqrt\.[\w.]+", ptx)
    assert sqrts == ["sqrt.rn.ftz.f32" if fast_math else "sqrt.rn.f32"], sqrts
