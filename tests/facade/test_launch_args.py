"""Launch-argument checking happens before any device is touched (no GPU needed)."""

from __future__ import annotations

import numpy as np
import pytest

from eggpu.ir import f16, f32, i32, pointer, scalar
from eggpu.ir.errors import LaunchError
from eggpu.runtime import Param, check_args, convert_scalar, normalize_grid

PARAMS = (Param("x_ptr", pointer(f32)), Param("y_ptr", pointer(f16)), Param("n", scalar(i32)),
          Param("eps", scalar(f32)))


def ok_args():
    return [np.zeros(8, np.float32), np.zeros(8, np.float16), 8, 1e-5]


def test_good_arguments_pass() -> None:
    checked = check_args("k", PARAMS, ok_args())
    assert [c.kind for c in checked] == ["host", "host", "scalar", "scalar"]
    assert checked[2].value.dtype == np.int32 and checked[3].value.dtype == np.float32


def test_wrong_count() -> None:
    with pytest.raises(LaunchError, match=r"^k takes 4 argument\(s\) \(x_ptr, y_ptr, n, eps\), got 3$"):
        check_args("k", PARAMS, ok_args()[:3])


def test_wrong_pointer_dtype_names_argument_and_dtypes() -> None:
    args = ok_args()
    args[1] = np.zeros(8, np.float64)
    with pytest.raises(LaunchError, match=r"^k: parameter 'y_ptr' \(ptr<f16>\) expects an array of f16, "
                       r"got an array of f64 \(float64\)$"):
        check_args("k", PARAMS, args)


def test_float_for_int_scalar() -> None:
    args = ok_args()
    args[2] = 8.5
    with pytest.raises(LaunchError, match=r"^k: parameter 'n' \(i32\) expects an integer, got float 8\.5$"):
        check_args("k", PARAMS, args)


def test_out_of_range_int() -> None:
    args = ok_args()
    args[2] = 2**31
    with pytest.raises(LaunchError, match=r"^k: parameter 'n' \(i32\): value 2147483648 is out of range "
                       r"\[-2147483648, 2147483647\]$"):
        check_args("k", PARAMS, args)


def test_non_contiguous_array() -> None:
    args = ok_args()
    args[0] = np.zeros(16, np.float32)[::2]
    with pytest.raises(LaunchError, match=r"^k: parameter 'x_ptr' needs a C-contiguous array \(got strides \(8,\) "
                       r"for shape \(8,\)\); pass np\.ascontiguousarray\(\.\.\.\) and copy the result back$"):
        check_args("k", PARAMS, args)


def test_not_an_array() -> None:
    args = ok_args()
    args[0] = [1.0, 2.0]
    with pytest.raises(LaunchError, match=r"^k: parameter 'x_ptr' \(ptr<f32>\) expects a numpy array of f32, "
                       r"got list \[1\.0, 2\.0\]$"):
        check_args("k", PARAMS, args)


def test_device_arrays_via_cuda_array_interface() -> None:
    class FakeDevice:
        def __init__(self, typestr, strides=None):
            self.__cuda_array_interface__ = {"shape": (4,), "typestr": typestr, "data": (4096, False),
                                             "strides": strides, "version": 3}

    args = ok_args()
    args[0] = FakeDevice("<f4")
    assert check_args("k", PARAMS, args)[0].value == 4096
    args[0] = FakeDevice("<f8")
    with pytest.raises(LaunchError, match=r"^k: parameter 'x_ptr' \(ptr<f32>\) expects an array of f32, "
                       r"got a device array of f64 \(float64\)$"):
        check_args("k", PARAMS, args)
    args[0] = FakeDevice("<f4", strides=(8,))
    with pytest.raises(LaunchError, match=r"^k: parameter 'x_ptr' needs a C-contiguous array \(got strides \(8,\) "
                       r"for shape \(4,\)\); pass a contiguous copy \(\.contiguous\(\) / cupy\.ascontiguousarray\)$"):
        check_args("k", PARAMS, args)


def test_scalar_conversions() -> None:
    assert convert_scalar("k", "w", f32, 3) == np.float32(3.0)
    assert type(convert_scalar("k", "w", f32, 3)) is np.float32
    # the interpreter's rules: a bool is an integer, a float never is
    one = convert_scalar("k", "w", i32, True)
    assert type(one) is np.int32 and one == 1
    with pytest.raises(LaunchError, match=r"^k: parameter 'w' \(i32\) expects an integer, got str '3'$"):
        convert_scalar("k", "w", i32, "3")
    with pytest.raises(LaunchError, match=r"^k: parameter 'w' \(i32\) expects an integer, got float 3\.0$"):
        convert_scalar("k", "w", i32, 3.0)


def test_float_scalar_that_overflows_is_rejected() -> None:
    args = ok_args()
    args[3] = 1e39
    with pytest.raises(LaunchError, match=r"^k: parameter 'eps' \(f32\): value 1e\+39 is out of range for f32 "
                       r"\(max 3\.4028234663852886e\+38\)$"):
        check_args("k", PARAMS, args)


@pytest.mark.parametrize("grid,want", [(5, (5, 1, 1)), ((2, 3), (2, 3, 1)), ((1, 2, 3), (1, 2, 3)),
                                       (0, (0, 1, 1)), ([4, np.int64(2)], (4, 2, 1))])
def test_grid_normalization(grid, want) -> None:
    assert normalize_grid("k", grid) == want


@pytest.mark.parametrize("grid", [(), 2.0, True, (2, "a")])
def test_bad_grids(grid) -> None:
    with pytest.raises(LaunchError) as e:
        normalize_grid("k", grid)
    assert str(e.value) == f"k: grid must be an int or a tuple of 1 to 3 ints, got {grid!r}"


def test_grid_dimension_range() -> None:
    with pytest.raises(LaunchError, match=r"^k: grid dimensions must be >= 0, got \(2, -1\)$"):
        normalize_grid("k", (2, -1))
    with pytest.raises(LaunchError, match=r"^k: grid dimensions must be at most 2147483647, got \(1, 2147483648\)$"):
        normalize_grid("k", (1, 2**31))
    assert normalize_grid("k", 2**31 - 1) == (2**31 - 1, 1, 1)


def test_empty_grid_launches_nothing() -> None:
    from eggpu.runtime import CudaRuntime

    rt = object.__new__(CudaRuntime)  # no driver: launching anything would fail on the missing attributes
    rt.launch("ptx", "entry", normalize_grid("k", (4, 0)), 128, check_args("k", PARAMS, ok_args()))


def test_misaligned_device_pointer_is_rejected_before_launch() -> None:
    from eggpu.pipeline import _check_assumptions
    from eggpu.runtime import CheckedArg

    good = CheckedArg(PARAMS[0], "device", 4096)
    bad = CheckedArg(PARAMS[0], "device", 4100)
    _check_assumptions("k", {"x_ptr": "align16"}, [good])
    _check_assumptions("k", {}, [bad])
    with pytest.raises(LaunchError, match=r"k: argument 'x_ptr' must be 16-byte aligned .* got address 0x1004"):
        _check_assumptions("k", {"x_ptr": "align16"}, [bad])


# ------------------------------------------------------------------ one wording for all three launchers


def _copy_kernel():
    from eggpu.ir import Builder, bool_

    b = Builder("copy1", [("x_ptr", pointer(f32)), ("out_ptr", pointer(f32)), ("n", scalar(i32)),
                          ("a", scalar(f16)), ("flag", scalar(bool_))])
    x, out = b.param("x_ptr"), b.param("out_ptr")
    pid = b.op("program_id", axis=0)
    b.effect("store", b.op("addptr", out, pid), b.op("load", b.op("addptr", x, pid)))
    return b.finish()


@pytest.fixture(scope="module")
def copy_kernel():
    from eggpu.codegen import build_host

    fn = _copy_kernel()
    return fn, build_host(fn)


def _bad_launches():
    z = np.zeros(4, np.float32)
    good = [z, z.copy(), 4, 0.5, True]

    def with_(i, v):
        args = list(good)
        args[i] = v
        return args

    return [
        (1, good[:4]),
        (1, with_(0, [1.0])),
        (1, with_(1, np.zeros(4, np.float64))),
        (1, with_(0, np.zeros(8, np.float32)[::2])),
        (1, with_(2, 4.0)),
        (1, with_(2, -2**31 - 1)),
        (1, with_(3, 1e5)),
        (1, with_(3, 10**6)),
        (1, with_(4, 2)),
        (1, with_(4, np.array([1, 0]))),
        ((1, 2, 3, 4), good),
        ((2, -1), good),
        (1.0, good),
    ]


@pytest.mark.parametrize("case", range(len(_bad_launches())))
def test_interpreter_host_and_runtime_word_errors_alike(copy_kernel, case) -> None:
    from eggpu.ir.errors import InterpreterError
    from eggpu.ir.interp import interpret

    fn, host = copy_kernel
    grid, args = _bad_launches()[case]
    params = [Param(p.name, p.type) for p in fn.params]
    with pytest.raises(InterpreterError) as e_interp:
        interpret(fn, grid, *args)
    with pytest.raises(LaunchError) as e_host:
        host.run(grid, *args)
    with pytest.raises(LaunchError) as e_runtime:
        normalize_grid(fn.name, grid)
        check_args(fn.name, params, args)
    assert str(e_interp.value).startswith("copy1")
    assert str(e_interp.value) == str(e_host.value) == str(e_runtime.value)


def test_host_and_runtime_accept_what_the_interpreter_accepts(copy_kernel) -> None:
    from eggpu.ir.interp import interpret

    fn, host = copy_kernel
    x = np.arange(4, dtype=np.float32)
    for grid, n, a, flag in [(4, np.int64(4), 3, 1), ([4], True, np.float64(0.1), np.bool_(False)),
                             ((2, 1), np.array(7, np.int16), 65504.0, 0), ((4, 0, 1), 0, float("inf"), True)]:
        outs = []
        for run in (lambda *a: interpret(fn, *a), host.run):
            out = np.zeros(4, np.float32)
            run(grid, x, out, n, a, flag)
            outs.append(out)
        params = [Param(p.name, p.type) for p in fn.params]
        normalize_grid(fn.name, grid)
        check_args(fn.name, params, [x, outs[0], n, a, flag])
        np.testing.assert_array_equal(outs[0], outs[1])
