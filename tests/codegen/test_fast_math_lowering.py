"""``fast_math`` division and exp on the GPU; the default stays IEEE.

Default: f32 (and f16/bf16, computed in f32) division is ``div.rn.f32`` (correctly rounded; its
SASS has a slow-path call for hard operands), ``exp`` is libdevice ``__nv_expf`` (range reduction
around ``ex2.approx``, 2 ulp). Under ``fast_math``: ``div.full.f32`` (2 ulp, no slow path, Triton's
default ``/``) and ``exp(x) = ex2.approx(x * log2(e))``. f64 division stays ``div.rn.f64``.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from eggpu.ir import Builder, bf16, f16, f32, f64, pointer

from .conftest import host_kernel
from .test_minmax import binary_kernel


def _divs(ptx: str) -> list[str]:
    return re.findall(r"^\s*(div\.\S+)\s", ptx, re.M)


@pytest.mark.parametrize("dt", (f32, f16, bf16), ids=str)
@pytest.mark.parametrize("target", ("sm_80", "sm_90"))
def test_division_is_ieee_by_default_and_div_full_under_fast_math(dt, target):
    from eggpu.codegen import compile_ptx

    default, _ = compile_ptx(binary_kernel("div", dt), target)
    fast, _ = compile_ptx(binary_kernel("div", dt), target, fast_math=True)
    assert _divs(default) and set(_divs(default)) == {"div.rn.f32"}, _divs(default)
    assert _divs(fast) and set(_divs(fast)) == {"div.full.f32"}, _divs(fast)


def test_f64_division_stays_ieee_under_fast_math():
    from eggpu.codegen import compile_ptx

    fast, _ = compile_ptx(binary_kernel("div", f64), "sm_90", fast_math=True)
    assert set(_divs(fast)) == {"div.rn.f64"}, _divs(fast)


def exp_kernel(n: int = 128):
    b = Builder("exp_k", [("x", pointer(f32)), ("o", pointer(f32))])
    offs = b.op("arange", start=0, end=n)
    x = b.op("load", b.op("addptr", b.op("splat", b.param("x"), shape=(n,)), offs))
    b.effect("store", b.op("addptr", b.op("splat", b.param("o"), shape=(n,)), offs), b.op("exp", x))
    return b.finish()


def test_exp_is_one_scaled_ex2_under_fast_math_only():
    from eggpu.codegen import compile_ptx

    default, _ = compile_ptx(exp_kernel(), "sm_90")
    fast, _ = compile_ptx(exp_kernel(), "sm_90", fast_math=True)
    # fast: exactly mul by log2(e) (0f3FB8AA3B) then ex2.approx, no range reduction
    assert re.search(r"mul\.\w+\.f32\s+(%r\d+), %r\d+, 0f3FB8AA3B;\s+ex2\.approx(?:\.ftz)?\.f32\s+%r\d+, \1;", fast)
    assert "fma" not in fast and fast.count("ex2.approx") == 1
    # default: libdevice's accurate expf (fma range reduction around ex2.approx)
    assert default.count("fma.rn") >= 2 and default.count("ex2.approx") == 1


def _tools_present() -> bool:
    from bench.tools import find_tool
    from eggpu.codegen.toolchain import find_ptxas
    from eggpu.ir.errors import ToolchainError

    try:
        find_ptxas()
    except ToolchainError:
        return False
    return find_tool("nvdisasm") is not None


@pytest.mark.skipif(not _tools_present(), reason="needs ptxas and nvdisasm")
@pytest.mark.parametrize("target", ("sm_80", "sm_90"))
def test_fast_math_division_has_no_slow_path_call(target):
    from bench.row_quality import disassemble
    from eggpu.codegen import compile_ptx
    from eggpu.codegen.ptxas import run_ptxas

    default, _ = compile_ptx(binary_kernel("div", f32), target)
    fast, _ = compile_ptx(binary_kernel("div", f32), target, fast_math=True)
    assert "CALL" in disassemble(run_ptxas(default, target).cubin)  # the div.rn slow path
    assert "CALL" not in disassemble(run_ptxas(fast, target).cubin)


def test_host_division_is_ieee_whatever_fast_math():
    """run_cpu executes IEEE division (div.full is a GPU instruction; it is within 2 ulp of this)."""
    fn = binary_kernel("div", f32)
    rng = np.random.default_rng(7)
    n = 1001
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    out = np.zeros(n, np.float32)
    host_kernel(fn).run((4,), x, y, out, n)
    np.testing.assert_array_equal(out, x / y)
