"""The shared launch-argument rules (eggpu.ir.launch_args): every message, every accept/reject rule."""

from __future__ import annotations

import math

import numpy as np
import pytest

from eggpu.ir import bf16, bool_, f16, f32, f64, i8, i16, i32, i64, pointer, u8, u16, u32, u64
from eggpu.ir.errors import EggpuError, InterpreterError, LaunchError
from eggpu.ir.launch_args import (
    GRID_LIMIT,
    GRID_MAX,
    check_arg_count,
    check_host_array,
    contiguity_message,
    convert_scalar,
    describe,
    normalize_grid,
    np_name,
    param_names,
    pointer_dtype_message,
)


class Custom(EggpuError):
    """Stands for whichever error class a caller passes."""


def raised(fn, *args, error=Custom, **kw) -> str:
    """The message of the ``error`` that ``fn(*args, error, **kw)`` raises (and only that class)."""
    with pytest.raises(EggpuError) as e:
        fn(*args, error, **kw)
    assert type(e.value) is error
    return str(e.value)


# ------------------------------------------------------------------ descriptions


def test_np_name_adds_numpy_name_only_when_it_differs():
    assert np_name(np.dtype(np.float64)) == "f64 (float64)"
    assert np_name(np.dtype(np.uint16)) == "u16 (uint16)"
    assert np_name(np.dtype(bool)) == "bool"
    assert np_name(bf16.np) == "bf16 (bfloat16)"
    assert np_name(np.dtype(np.complex64)) == "complex64"  # no eggpu dtype


def test_describe():
    assert describe(np.zeros((2, 3), np.int16)) == "an array of i16 (int16) with shape (2, 3)"
    assert describe(np.float32(3.0)) == "a numpy float32 scalar np.float32(3.0)"
    assert describe(2.5) == "float 2.5"
    assert describe("12") == "str '12'"
    assert describe(None) == "NoneType None"


def test_param_names_fill_in_unnamed_parameters():
    class P:
        def __init__(self, name):
            self.name = name

    assert param_names([P("x"), P(None), P(""), P("n")]) == ["x", "arg1", "arg2", "n"]


def test_message_builders():
    assert (pointer_dtype_message("k7", "src", pointer(i8), np.dtype(np.uint8), what="a device array")
            == "k7: parameter 'src' (ptr<i8>) expects an array of i8, got a device array of u8 (uint8)")
    assert (contiguity_message("k7", "src", (16, 4), (3, 5), fix="try again")
            == "k7: parameter 'src' needs a C-contiguous array (got strides (16, 4) for shape (3, 5)); try again")


# ------------------------------------------------------------------ grid


@pytest.mark.parametrize("grid,want", [
    (7, ((7, 1, 1), 1)),
    (np.int32(9), ((9, 1, 1), 1)),
    ((3,), ((3, 1, 1), 1)),
    ((2, 5), ((2, 5, 1), 2)),
    ([4, np.uint8(6), 8], ((4, 6, 8), 3)),
    (0, ((0, 1, 1), 1)),
    ((6, 0), ((6, 0, 1), 2)),
    ((3, 5, 1, 1), ((3, 5, 1), 3)),
    ([2, 1, 7, np.int64(1), 1], ((2, 1, 7), 3)),
])
def test_grid_forms(grid, want):
    dims, rank = normalize_grid("g", grid, Custom)
    assert (dims, rank) == want
    assert all(type(d) is int for d in dims)


@pytest.mark.parametrize("grid", [(), 2.0, True, np.bool_(True), (2, False), (1, 1.0), "3", None,
                                  np.array([2, 2]), (1, 2, 3, 1.0)])
def test_grid_rejected_forms(grid):
    assert raised(normalize_grid, "gk", grid) == f"gk: grid must be an int or a tuple of 1 to 3 ints, got {grid!r}"


@pytest.mark.parametrize("grid", [(1, 2, 3, 4), (5, 1, 1, 1, 0)])
def test_grid_entries_past_the_third_must_be_one(grid):
    assert raised(normalize_grid, "gk", grid) == (f"gk: grid {grid!r} has {len(grid)} axes; a grid has at most 3 "
                                                  f"(x, y, z) and entries past the third may only be 1")


def test_grid_negative_and_limit():
    assert raised(normalize_grid, "gk", (4, -3)) == "gk: grid dimensions must be >= 0, got (4, -3)"
    assert raised(normalize_grid, "gk", -1, limit=10) == "gk: grid dimensions must be >= 0, got (-1,)"
    assert raised(normalize_grid, "gk", (1, 1, 10), limit=10) == "gk: grid dimensions must be at most 9, got (1, 1, 10)"
    assert normalize_grid("gk", (9, 9, 9), Custom, limit=10) == ((9, 9, 9), 3)
    assert GRID_LIMIT == 2**31

def test_grid_cuda_limits():
    """Every axis within CUDA's maxGridSize (x < 2**31, y and z <= 65535), with or without ``limit``.
    Regression: the interpreter accepted a 2**40 grid and ran for good."""
    assert GRID_MAX == (2**31 - 1, 65535, 65535)
    assert normalize_grid("gk", (2**31 - 1, 65535, 65535), Custom) == ((2**31 - 1, 65535, 65535), 3)
    assert raised(normalize_grid, "gk", 2**40) == (
        "gk: grid (1099511627776,) exceeds CUDA's limits: axis x has 1099511627776 programs, at most 2147483647 "
        "are allowed (x at most 2147483647, y and z at most 65535)")
    assert raised(normalize_grid, "hk", (1, 65536)) == (
        "hk: grid (1, 65536) exceeds CUDA's limits: axis y has 65536 programs, at most 65535 "
        "are allowed (x at most 2147483647, y and z at most 65535)")
    assert raised(normalize_grid, "hk", (3, 2, 70000), limit=2**31).startswith(
        "hk: grid (3, 2, 70000) exceeds CUDA's limits: axis z has 70000 programs, at most 65535")


# ------------------------------------------------------------------ argument count


def test_arg_count():
    check_arg_count("ck", ["a", "b"], (1, 2), Custom)
    assert raised(check_arg_count, "ck", ["a", "b"], (1,)) == "ck takes 2 argument(s) (a, b), got 1"
    assert raised(check_arg_count, "ck", [], (1, 2, 3)) == "ck takes 0 argument(s) (), got 3"


# ------------------------------------------------------------------ host arrays


def test_host_array_is_returned_unchanged():
    a = np.zeros((2, 3), np.float16)
    assert check_host_array("hk", "p", pointer(f16), a, Custom) is a
    ro = np.zeros(4, np.uint32)
    ro.flags.writeable = False
    assert check_host_array("hk", "p", pointer(u32), ro, Custom) is ro  # read-only is fine for inputs


def test_host_array_rejections():
    assert (raised(check_host_array, "hk", "dst", pointer(f32), [1.0, 2.0])
            == "hk: parameter 'dst' (ptr<f32>) expects a numpy array of f32, got list [1.0, 2.0]")
    assert (raised(check_host_array, "hk", "dst", pointer(f32), np.float32(1.0))
            == "hk: parameter 'dst' (ptr<f32>) expects a numpy array of f32, got a numpy float32 scalar np.float32(1.0)")
    assert (raised(check_host_array, "hk", "dst", pointer(bf16), np.zeros(3, np.float16))
            == "hk: parameter 'dst' (ptr<bf16>) expects an array of bf16, got an array of f16 (float16)")
    assert (raised(check_host_array, "hk", "dst", pointer(i64), np.zeros(3, np.complex128))
            == "hk: parameter 'dst' (ptr<i64>) expects an array of i64, got an array of complex128")
    fortran = np.zeros((3, 2), np.int16, order="F")
    assert (raised(check_host_array, "hk", "dst", pointer(i16), fortran)
            == "hk: parameter 'dst' needs a C-contiguous array (got strides (2, 6) for shape (3, 2)); "
               "pass np.ascontiguousarray(...) and copy the result back")
    ro = np.zeros(5, np.int8)
    ro.flags.writeable = False
    assert (raised(check_host_array, "hk", "dst", pointer(i8), ro, writable=True)
            == "hk: parameter 'dst' is a read-only array, but the kernel may write through it")


def test_host_array_dtype_is_checked_before_contiguity():
    strided_wrong = np.zeros(8, np.float64)[::2]
    assert "expects an array of f32, got an array of f64" in raised(
        check_host_array, "hk", "dst", pointer(f32), strided_wrong)


# ------------------------------------------------------------------ scalars: bool


def test_bool_parameter():
    for v in (True, np.bool_(False), 1, 0, np.int8(1), np.uint64(0), np.array(True)):
        r = convert_scalar("sk", "flag", bool_, v, Custom)
        assert type(r) is np.bool_ and r == bool(v)
    assert raised(convert_scalar, "sk", "flag", bool_, 2) == "sk: parameter 'flag' (bool) expects a bool, got int 2"
    assert (raised(convert_scalar, "sk", "flag", bool_, 1.0)
            == "sk: parameter 'flag' (bool) expects a bool, got float 1.0")
    assert (raised(convert_scalar, "sk", "flag", bool_, np.int16(-1))
            == "sk: parameter 'flag' (bool) expects a bool, got a numpy int16 scalar np.int16(-1)")


# ------------------------------------------------------------------ scalars: integers


@pytest.mark.parametrize("dt", [i8, i16, i32, i64, u8, u16, u32, u64])
def test_integer_range_edges(dt):
    for v in (dt.min, dt.max):
        r = convert_scalar("ik", "n", dt, v, Custom)
        assert type(r) is dt.np.type and int(r) == v
    assert (raised(convert_scalar, "ik", "n", dt, dt.max + 1)
            == f"ik: parameter 'n' ({dt}): value {dt.max + 1} is out of range [{dt.min}, {dt.max}]")
    assert (raised(convert_scalar, "ik", "n", dt, dt.min - 1)
            == f"ik: parameter 'n' ({dt}): value {dt.min - 1} is out of range [{dt.min}, {dt.max}]")


def test_integer_parameter_kinds():
    assert convert_scalar("ik", "n", i32, True, Custom) == 1  # bools are integers
    assert convert_scalar("ik", "n", u8, np.uint64(200), Custom) == 200
    assert convert_scalar("ik", "n", i16, np.array(-7, np.int64), Custom) == -7  # 0-d arrays are scalars
    assert raised(convert_scalar, "ik", "n", i32, 2.0) == "ik: parameter 'n' (i32) expects an integer, got float 2.0"
    assert (raised(convert_scalar, "ik", "n", i64, np.float16(3))
            == "ik: parameter 'n' (i64) expects an integer, got a numpy float16 scalar np.float16(3.0)")
    assert raised(convert_scalar, "ik", "n", u16, "12") == "ik: parameter 'n' (u16) expects an integer, got str '12'"
    assert (raised(convert_scalar, "ik", "n", i8, np.array([3, 4], np.int32))
            == "ik: parameter 'n' (i8) expects a scalar, got an array of i32 (int32) with shape (2,)")


# ------------------------------------------------------------------ scalars: floats


def test_float_parameter_kinds_and_types():
    for dt in (f16, bf16, f32, f64):
        for v in (True, 3, np.int64(-5), 0.5, np.float32(0.25), np.array(1.5)):
            r = convert_scalar("fk", "x", dt, v, Custom)
            assert type(r) is dt.np.type and float(r) == float(v)
    assert (raised(convert_scalar, "fk", "x", f32, None) == "fk: parameter 'x' (f32) expects a number, got NoneType None")
    assert (raised(convert_scalar, "fk", "x", f64, 1j) == "fk: parameter 'x' (f64) expects a number, got complex 1j")


def test_float_rounding_is_single_and_nearest_even():
    assert convert_scalar("fk", "x", f16, 2049, Custom) == 2048  # tie -> even
    assert convert_scalar("fk", "x", f16, 2051, Custom) == 2052
    # int -> f64 -> f32 would round twice (2**60 + 2**36 + 1 -> 2**60 + 2**36, a tie -> 2**60)
    assert int(convert_scalar("fk", "x", f32, 2**60 + 2**36 + 1, Custom)) == 2**60 + 2**37
    assert int(convert_scalar("fk", "x", f32, 2**64 - 1, Custom)) == 2**64  # u64 source
    assert float(convert_scalar("fk", "x", f32, 2**70, Custom)) == 2.0**70  # beyond 64 bits
    assert convert_scalar("fk", "x", bf16, 0.1, Custom) == bf16.np.type(0.1)


def test_float_overflow_is_rejected_but_inf_and_nan_pass():
    assert (raised(convert_scalar, "fk", "x", f16, 70000.0)
            == "fk: parameter 'x' (f16): value 70000.0 is out of range for f16 (max 65504.0)")
    assert (raised(convert_scalar, "fk", "x", bf16, np.float64(1e39))
            == f"fk: parameter 'x' (bf16): value 1e+39 is out of range for bf16 (max {bf16.max!r})")
    assert raised(convert_scalar, "fk", "x", f16, 10**6) == "fk: parameter 'x' (f16): value 1000000 is out of range for f16"
    assert (raised(convert_scalar, "fk", "x", f16, 2**64)
            == "fk: parameter 'x' (f16): value 1.8446744073709552e+19 is out of range for f16 (max 65504.0)")
    assert (raised(convert_scalar, "fk", "x", f64, 10**400)
            == "fk: parameter 'x' (f64): value 100000000000...000000 (401 digits) is out of range for f64")
    assert convert_scalar("fk", "x", f16, 65519.0, Custom) == 65504  # rounds down to the max
    assert convert_scalar("fk", "x", f16, math.inf, Custom) == np.inf
    assert np.isnan(convert_scalar("fk", "x", bf16, math.nan, Custom))


@pytest.mark.parametrize("error", [InterpreterError, LaunchError])
def test_the_callers_error_class_is_raised(error):
    assert raised(convert_scalar, "ek", "v", u8, 256, error=error) == "ek: parameter 'v' (u8): value 256 is out of range [0, 255]"
    assert raised(normalize_grid, "ek", (1, -5), error=error) == "ek: grid dimensions must be >= 0, got (1, -5)"
