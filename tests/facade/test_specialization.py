"""Launch-time specialization (issue 10, item 1): facts stated on compile, made by @eggpu.jit from
the arguments, or written in the kernel; each is in the cache key and the report, reaches code
generation, and is checked at every launch — a launch that breaks one never runs that code."""

from __future__ import annotations

import numpy as np
import pytest

import eggpu
import eggpu.language as tl
from eggpu.ir.errors import InterpreterError, KernelError, LaunchError


@eggpu.kernel
def scale_rows(x_ptr: tl.Pointer[tl.f32], y_ptr: tl.Pointer[tl.f32], n: tl.i32, stride: tl.i32,
               BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < n
    x = tl.load(x_ptr + row * stride + cols, mask=m, other=0.0)
    tl.store(y_ptr + row * stride + cols, x * 2.0, mask=m)


@eggpu.kernel
def stated_rows(x_ptr: tl.Pointer[tl.f32], y_ptr: tl.Pointer[tl.f32], n: tl.i32, stride: tl.i32,
                BLOCK: tl.constexpr):
    tl.assume(stride % 16 == 0)
    xp = tl.multiple_of(x_ptr, 16)
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < n
    tl.store(y_ptr + row * stride + cols, tl.load(xp + row * stride + cols, mask=m, other=0.0) * 2.0, mask=m)


@eggpu.jit
def jit_rows(x_ptr, y_ptr, n, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < n
    x = tl.load(x_ptr + row * stride + cols, mask=m, other=0.0)
    tl.store(y_ptr + row * stride + cols, x + 1.0, mask=m)


def _rows(n_rows: int, stride: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(stride)
    return rng.standard_normal((n_rows, stride)).astype(np.float32), np.zeros((n_rows, stride), np.float32)


def _vector_accesses(ptx: str) -> int:
    return sum(1 for line in ptx.splitlines() if ".global.v4" in line or ".global.v2" in line)


def test_div16_fact_vectorizes_and_is_checked_at_launch(tmp_path):
    k = scale_rows.Kernel(1024)
    plain = eggpu.compile(k, cache=tmp_path)
    spec = eggpu.compile(k, specialize={"stride": "div16"}, cache=tmp_path)
    assert spec.report["specialization"] == {"stride": ["div16"]} and plain.report["specialization"] == {}
    assert spec.cache_path != plain.cache_path  # the facts are part of the cache key
    assert _vector_accesses(plain.ptx) == 0 and _vector_accesses(spec.ptx) > 0
    assert "facts(%stride: div16)" in str(spec.ir)
    x, y = _rows(10, 784)
    spec.run_cpu(10, x, y, 781, 784)
    np.testing.assert_array_equal(y[:, :781], 2 * x[:, :781])
    x, y = _rows(10, 781)
    with pytest.raises(LaunchError, match=r"scale_rows: argument 'stride' must be divisible by 16 .*got 781"):
        spec.run_cpu(10, x, y, 781, 781)
    assert not y.any()  # nothing ran
    plain.run_cpu(10, x, y, 781, 781)  # the unspecialized code takes any stride
    np.testing.assert_array_equal(y[:, :781], 2 * x[:, :781])
    # a cache hit in this process keeps (and checks) the facts
    again = eggpu.compile(k, specialize={"stride": "div16"}, cache=tmp_path)
    assert again.report["cache"] == "hit"
    with pytest.raises(LaunchError, match="div16"):
        again.run_cpu(10, x, y, 781, 781)


def test_offsets_i32_fact_is_checked_against_the_grid(tmp_path):
    ck = eggpu.compile(scale_rows.Kernel(1024), offsets_i32=True, cache=tmp_path)
    assert ck.report["specialization"] == {"*": ["offsets_i32=1024"]}
    x, y = _rows(1, 10)
    with pytest.raises(LaunchError, match=r"grid axis 0 has 2097153 programs.*offsets_i32"):
        ck.run_cpu(2**21 + 1, x, y, 10, 10)
    ck.run_cpu(1, x, y, 10, 10)
    np.testing.assert_array_equal(y, 2 * x)


def test_bad_specialize_arguments_are_clear_errors():
    k = scale_rows.Kernel(1024)
    with pytest.raises(KernelError, match="names 'stridee', which is not a launch parameter"):
        eggpu.compile(k, specialize={"stridee": "div16"}, cache=False)
    with pytest.raises(KernelError, match="fact align16 does not apply to parameter 'stride'"):
        eggpu.compile(k, specialize={"stride": "align16"}, cache=False)
    with pytest.raises(KernelError, match="unknown specialization fact 'div'"):
        eggpu.compile(k, specialize={"stride": "div"}, cache=False)


def test_stated_facts_reach_the_ir_and_every_launch():
    k = stated_rows.Kernel(1024)
    assert k.ir().facts.as_dict() == {"stride": ["div16"], "x_ptr": ["align16"]}
    x, y = _rows(10, 800)
    k.interpret(10, x, y, 781, 800)
    np.testing.assert_array_equal(y[:, :781], 2 * x[:, :781])
    x, y = _rows(10, 781)
    with pytest.raises(InterpreterError, match="argument 'stride' must be divisible by 16"):
        k.interpret(10, x, y, 781, 781)
    ck = eggpu.compile(k, cache=False)
    assert _vector_accesses(ck.ptx) > 0
    with pytest.raises(LaunchError, match="argument 'stride' must be divisible by 16"):
        ck.run_cpu(10, x, y, 781, 781)
    xs = np.zeros(10 * 800 + 1, np.float32)[1:].reshape(10, 800)  # 4-byte, not 16-byte aligned
    with pytest.raises(LaunchError, match="argument 'x_ptr' must be 16-byte aligned"):
        ck.run_cpu(10, xs, np.zeros_like(xs), 781, 800)


@pytest.mark.parametrize("n, stride", [(1, 1), (1000, 1000), (1001, 1001), (781, 784), (10, 16)])
def test_jit_launch_gets_the_specialization_its_arguments_satisfy(n, stride):
    x, y = _rows(10, stride)
    ck = jit_rows[(10,)](x, y, n, stride, BLOCK=1024)
    np.testing.assert_array_equal(y[:, :n], x[:, :n] + 1.0)
    assert not y[:, n:].any()
    spec = ck.report["specialization"]
    assert ("div16" in spec.get("stride", ())) == (stride % 16 == 0)
    assert ("eq1" in spec.get("n", ())) == (n == 1)
    assert spec["x_ptr"] == ["align16"] and spec["*"] == ["offsets_i32=1024"]


def test_jit_misaligned_buffer_and_do_not_specialize():
    base = np.zeros(10 * 784 + 1, np.float32)
    x = base[1:].reshape(10, 784)
    x[:] = np.arange(x.size, dtype=np.float32).reshape(x.shape)
    y = np.zeros_like(x)
    ck = jit_rows[(10,)](x, y, 781, 784, BLOCK=1024)
    assert "x_ptr" not in ck.report["specialization"]  # the misaligned buffer is not promised aligned
    np.testing.assert_array_equal(y[:, :781], x[:, :781] + 1.0)
    free = eggpu.jit(do_not_specialize=["stride", 2])(jit_rows.fn)
    x, y = _rows(10, 784)
    ck = free[(10,)](x, y, 16, 784, BLOCK=1024)
    assert "stride" not in ck.report["specialization"] and "n" not in ck.report["specialization"]
    np.testing.assert_array_equal(y[:, :16], x[:, :16] + 1.0)


def test_do_not_specialize_ignores_what_is_not_a_parameter_with_a_warning():
    """Triton ignores a name or position that is no parameter (FlagGems copies one list onto kernels
    that lack some of its names); eggpu does too and says so. Other entries are refused."""
    from eggpu.kernel_macro.errors import DecoratorArgumentError
    from eggpu.kernel_macro.jitfunction import DoNotSpecializeWarning

    with pytest.warns(DoNotSpecializeWarning, match=r"on jit_rows: 'strid', 7 are no parameter name or position, "
                      r"ignored as Triton does \(parameters: x_ptr, y_ptr, n, stride, BLOCK\)"):
        free = eggpu.jit(do_not_specialize=["strid", "stride", 7])(jit_rows.fn)
    x, y = _rows(10, 784)
    ck = free[(10,)](x, y, 16, 784, BLOCK=1024)
    assert "stride" not in ck.report["specialization"] and "n" in ck.report["specialization"]
    np.testing.assert_array_equal(y[:, :16], x[:, :16] + 1.0)
    with pytest.raises(DecoratorArgumentError, match=r"on jit_rows: 1\.5 is neither a parameter name nor a position"):
        eggpu.jit(do_not_specialize=[1.5])(jit_rows.fn)
