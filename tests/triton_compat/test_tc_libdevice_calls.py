"""Triton's libdevice functions without an op of their own (``libdevice.nextafter``, ``ldexp``,
``float2int_rd``, ``add_rz``, ``fast_sinf``...; one ``libdevice`` op each) as a Triton kernel uses
them: interpret and run_cpu against numpy on ragged sizes, Triton's extern_elementwise dispatch
(literals, promotion), the located error for dtypes without an overload, and the located GPU-only
error of the fast_* approximations (their PTX compiles). Every symbol's values:
tests/codegen/test_libdevice_values.py."""

from __future__ import annotations

import numpy as np
import pytest

import eggpu
import eggpu.language as tl
from eggpu.language.extra import libdevice


@eggpu.jit
def _mixed(x_ptr, y_ptr, f_ptr, i_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x, y = tl.load(x_ptr + offs, mask=m), tl.load(y_ptr + offs, mask=m)
    tl.store(f_ptr + offs, libdevice.nextafter(x, y), mask=m)
    tl.store(f_ptr + n + offs, libdevice.ldexp(x, 3), mask=m)  # a literal exponent: i32, as Triton
    tl.store(f_ptr + 2 * n + offs, tl.extra.cuda.libdevice.add_rd(x, y), mask=m)
    tl.store(f_ptr + 3 * n + offs, libdevice.int_as_float(libdevice.float_as_int(x) + 1), mask=m)
    tl.store(i_ptr + offs, libdevice.float2int_rd(x), mask=m)
    tl.store(i_ptr + n + offs, libdevice.ilogb(x), mask=m)


@pytest.mark.parametrize("n", (1, 1000, 1001))
def test_libdevice_calls_in_a_triton_kernel_match_numpy(run_both, as_bits, n):
    rng = np.random.default_rng(n)
    x = (rng.standard_normal(n) * 100).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    edge = np.array([np.nan, -0.0, np.inf, -np.inf, 1e-45, 0.0, 2.5], np.float32)
    x[: min(n, 7)] = edge[: min(n, 7)]
    with np.errstate(all="ignore"):
        want_f = [np.nextafter(x, y), np.ldexp(x, 3), None, (x.view(np.int32) + 1).view(np.float32)]
        floor = np.floor(x.astype(np.float64))
        want_i0 = np.where(np.isnan(x), 0, np.clip(np.nan_to_num(floor, posinf=2**31, neginf=-2**31),
                                                    -2**31, 2**31 - 1)).astype(np.int32)
    _, e = np.frexp(x)
    want_i1 = np.where(np.isfinite(x) & (x != 0), e - 1, np.where(np.isinf(x), 2**31 - 1, -2**31)).astype(np.int32)
    args = (x, y, np.zeros(4 * n, np.float32), np.zeros(2 * n, np.int32), n)
    for device, (_, _, f, i) in run_both(_mixed, (eggpu.cdiv(n, 128),), *args, BLOCK=128).items():
        for k, w in enumerate(want_f):
            if w is not None:
                got = f[k * n:(k + 1) * n]
                same = (as_bits(got) == as_bits(w)) | (np.isnan(got) & np.isnan(w))
                assert same.all(), f"result {k} on {device}: {got[~same][:4]} vs {w[~same][:4]}"
        s = x.astype(np.float64) + y  # add_rd: the largest float <= x + y (exact in f64 here)
        r = f[2 * n:3 * n].astype(np.float64)
        ok = np.isnan(s) | ((r <= s) & (np.nextafter(f[2 * n:3 * n], np.float32(np.inf)) > s)) | (r == s)
        assert ok.all(), f"add_rd on {device}"
        np.testing.assert_array_equal(i[:n], want_i0, err_msg=f"float2int_rd on {device}")
        np.testing.assert_array_equal(i[n:], want_i1, err_msg=f"ilogb on {device}")


@eggpu.jit
def _promoted(x_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(o_ptr + offs, libdevice.nextafter(x, 0.0), mask=m)
    tl.store(o_ptr + n + offs, libdevice.jn(0, x) - libdevice.j0(x), mask=m)  # an i32 literal order


def test_dispatch_promotes_like_triton(run_both):
    """f64 with a float literal (f32) has no overload: promoted to f64 (__nv_nextafter), as Triton."""
    x = np.array([1.0, -2.0, 0.0, 5e-324], np.float64)
    for device, (_, o) in run_both(_promoted, (1,), x, np.zeros(8), 4, BLOCK=4).items():
        np.testing.assert_array_equal(o, np.concatenate([np.nextafter(x, 0.0), np.zeros(4)]), err_msg=device)
    ir = str(_promoted.specialize(x, np.zeros(8), 4, BLOCK=4).ir())
    assert 'symbol="__nv_nextafter"' in ir and 'symbol="__nv_jn"' in ir


@eggpu.jit
def _no_overload(x_ptr):
    x = tl.load(x_ptr)
    tl.store(x_ptr, libdevice.ldexp(x, 2))


def test_no_overload_is_a_located_error():
    with pytest.raises(eggpu.CompileError) as ei:
        _no_overload.specialize(np.zeros(1, np.int16)).ir()
    lines = str(ei.value).splitlines()
    assert lines[0].endswith("libdevice.ldexp has no overload for (i16, i32): it takes (f32, i32) or (f64, i32)"), lines
    assert "libdevice.ldexp(x, 2)" in lines[1] and "^" in lines[2]  # promoted to i32 first: still none
    assert lines[3] == "hint: convert the arguments first, e.g. x.to(tl.float32)"


@eggpu.jit
def _fast(x_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(o_ptr + offs, libdevice.fast_sinf(x) + libdevice.fast_dividef(x, 3.0), mask=m)


def test_fast_approximations_are_gpu_only_with_a_located_error_and_compile_to_ptx(monkeypatch):
    args = (np.ones(8, np.float32), np.zeros(8, np.float32), 8)
    for device, runner in (("interpret", "the numpy interpreter"), ("cpu", "run_cpu")):
        monkeypatch.setenv("EGGPU_JIT_DEVICE", device)
        with pytest.raises(eggpu.EggpuError) as ei:
            _fast[(1,)](*args, BLOCK=8)
        lines = str(ei.value).splitlines()
        assert "libdevice.fast_sinf (__nv_fast_sinf) is GPU-only: " + runner in lines[0], lines
        assert "a hardware approximation" in lines[0] and "libdevice.fast_sinf(x)" in lines[1]
        assert lines[2] == " " * lines[1].index("libdevice.fast_sinf") + "^", lines  # the call's column
    try:
        ck = eggpu.compile(_fast.specialize(*args, BLOCK=8), target="sm_90")
    except eggpu.EggpuError as e:  # a machine without NVIDIA's libdevice
        pytest.skip(str(e))
    assert "__nv_fast" not in ck.ptx and "sin.approx.f32" in ck.ptx


def test_the_libdevice_call_stubs_are_made_on_first_use_only():
    # a cache hit imports the language: it must not generate the ~140 stubs (a fresh process)
    import subprocess
    import sys

    code = ("import eggpu.language as tl\nfrom eggpu.kernel_macro import language as L\n"
            "assert L.EXTERN_FUNCTIONS._stubs is None and 'ldexp' in L.EXTERN_FUNCTIONS\n"
            "assert 'remainder' in L.LIBDEVICE_NAMES\n"
            "from eggpu.language.extra.cuda import libdevice\n"
            "assert libdevice.ldexp.__eggpu_builtin__ == 'libdevice.ldexp'\n"
            "assert L.EXTERN_FUNCTIONS._stubs is not None and libdevice.ldexp is L.EXTERN_FUNCTIONS['ldexp']\n"
            "assert not hasattr(libdevice, 'frexp')\nprint('ok')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


@eggpu.jit
def _bessel(k_ptr, x_ptr, j_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    k = tl.load(k_ptr + offs, mask=m)
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(j_ptr + offs, libdevice.jn(k, x), mask=m)
    tl.store(y_ptr + offs, libdevice.yn(k, x.to(tl.float64)), mask=m)


@eggpu.jit
def _bessel_scalar_order(x_ptr, y_ptr, order):
    tl.store(y_ptr, libdevice.yn(order, tl.load(x_ptr)))


def _libm(name: str, ctype):
    import ctypes
    import ctypes.util

    f = getattr(ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6"), name)
    f.argtypes, f.restype = [ctypes.c_int32, ctype], ctype
    return f


@pytest.mark.parametrize("n", (1, 1000, 1001))
def test_bessel_orders_up_to_the_limit_are_the_c_librarys(run_both, n):
    """jn/yn compute every order 0 <= k <= ORDER_LIMIT with libm's bits, the limit itself included,
    and a negative order is libdevice's NaN (bit for bit), where the C library would reflect."""
    import ctypes

    from eggpu.ir.libdevice_table import NEGATIVE_ORDER_NAN, ORDER_LIMIT

    rng = np.random.default_rng(n)
    k = rng.integers(-60, 61, n).astype(np.int32)
    k[: min(n, 3)] = [ORDER_LIMIT, -ORDER_LIMIT, 0][: min(n, 3)]
    x = (rng.standard_normal(n) * 30).astype(np.float32)
    x[1:4] = [0.0, -7.5, 2e5][: len(x[1:4])]
    jnf, yn = _libm("jnf", ctypes.c_float), _libm("yn", ctypes.c_double)
    nan_j = np.array(NEGATIVE_ORDER_NAN["__nv_jnf"], np.uint32).view(np.float32)
    nan_y = np.array(NEGATIVE_ORDER_NAN["__nv_yn"], np.uint64).view(np.float64)
    want_j = np.array([jnf(int(a), float(b)) if a >= 0 else nan_j for a, b in zip(k, x)], np.float32)
    want_y = np.array([yn(int(a), float(b)) if a >= 0 else nan_y for a, b in zip(k, x)], np.float64)
    args = (k, x, np.zeros(n, np.float32), np.zeros(n), n)
    for device, (_, _, j, y) in run_both(_bessel, (eggpu.cdiv(n, 256),), *args, BLOCK=256).items():
        np.testing.assert_array_equal(j.view(np.uint32), want_j.view(np.uint32), err_msg=f"jn on {device}")
        np.testing.assert_array_equal(y.view(np.uint64), want_y.view(np.uint64), err_msg=f"yn on {device}")


@pytest.mark.parametrize("n", (1000, 1001))
def test_a_bessel_order_beyond_the_limit_is_a_located_error(monkeypatch, n):
    """An order beyond ORDER_LIMIT (libm would take ~40 s per element at 2**31 - 1) is refused at
    once, by the interpreter and run_cpu in the same words: the kernel, the program, the first
    such lane, the function, the order, the source line with a caret."""
    from eggpu.ir.libdevice_table import ORDER_LIMIT

    k = np.arange(n, dtype=np.int32) % 7
    # program 1 meets 300 first (-ORDER_LIMIT - 1 and -2**31 at 200/201 are NaN, not errors)
    k[200], k[201], k[300], k[700], k[n - 1] = -ORDER_LIMIT - 1, -2**31, ORDER_LIMIT + 1, 2**31 - 1, ORDER_LIMIT + 3
    x = np.full(n, 1.5, np.float32)
    messages = {}
    for device in ("interpret", "cpu"):
        monkeypatch.setenv("EGGPU_JIT_DEVICE", device)
        with pytest.raises(eggpu.EggpuError) as ei:
            _bessel[(eggpu.cdiv(n, 256),)](k, x, np.zeros(n, np.float32), np.zeros(n), n, BLOCK=256)
        messages[device] = str(ei.value)
    assert messages["interpret"] == messages["cpu"], messages
    lines = messages["cpu"].splitlines()
    assert lines[0].startswith("_bessel: libdevice at ") and " in program 1: lane (44,): " in lines[0], lines
    assert f"libdevice.jn(n, x) (__nv_jnf) with the order n = {ORDER_LIMIT + 1}: " in lines[0], lines
    assert f"compute n <= {ORDER_LIMIT} only" in lines[0] and "launch the kernel on a CUDA GPU" in lines[0]
    assert "libdevice.jn(k, x)" in lines[1] and lines[2] == " " * lines[1].index("libdevice.jn") + "^", lines
    # the last program meets only ORDER_LIMIT + 3 (lanes past n are masked: their order is 0)
    k[300] = k[700] = 0
    monkeypatch.setenv("EGGPU_JIT_DEVICE", "cpu")
    with pytest.raises(eggpu.EggpuError, match=rf"in program 3: lane \({(n - 1) % 256},\): libdevice.jn\(n, x\) "
                                               rf"\(__nv_jnf\) with the order n = {ORDER_LIMIT + 3}: "):
        _bessel[(eggpu.cdiv(n, 256),)](k, x, np.zeros(n, np.float32), np.zeros(n), n, BLOCK=256)


@pytest.mark.parametrize("order", (2**31 - 1, 100_001))
def test_a_scalar_bessel_order_beyond_the_limit_names_no_lane(monkeypatch, order):
    for device in ("interpret", "cpu"):
        monkeypatch.setenv("EGGPU_JIT_DEVICE", device)
        with pytest.raises(eggpu.EggpuError) as ei:
            _bessel_scalar_order[(1,)](np.ones(1), np.zeros(1), order)
        first = str(ei.value).splitlines()[0]
        assert " in program 0: libdevice.yn(n, x) (__nv_yn) with the order n = " f"{order}: " in first, first
    monkeypatch.setenv("EGGPU_JIT_DEVICE", "cpu")
    y = np.zeros(1)
    _bessel_scalar_order[(1,)](np.full(1, 1e-3), y, 100_000)  # the limit itself: libm's -inf
    assert y[0] == _libm("yn", __import__("ctypes").c_double)(100_000, 1e-3)


@pytest.mark.parametrize("order", (-1, -2, -100_001, -2**31))
def test_a_negative_scalar_bessel_order_is_libdevices_nan(monkeypatch, order):
    """libdevice's ``__nv_yn`` returns NaN (0xFFF8000000000000) for every n < 0, where the C
    library reflects (``yn(-1, x) = -yn(1, x)``): interpret and run_cpu give the GPU's bits."""
    from eggpu.ir.libdevice_table import NEGATIVE_ORDER_NAN

    for device in ("interpret", "cpu"):
        monkeypatch.setenv("EGGPU_JIT_DEVICE", device)
        y = np.zeros(1)
        _bessel_scalar_order[(1,)](np.full(1, 0.75), y, order)
        assert int(y.view(np.uint64)[0]) == NEGATIVE_ORDER_NAN["__nv_yn"], (device, y)
