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
    with pytest.raises(LaunchError, match=r"^k takes 4 launch arguments \(x_ptr, y_ptr, n, eps\), got 3$"):
        check_args("k", PARAMS, ok_args()[:3])


def test_wrong_pointer_dtype_names_argument_and_dtypes() -> None:
    args = ok_args()
    args[1] = np.zeros(8, np.float64)
    with pytest.raises(LaunchError, match=r"^k: argument 'y_ptr' must point to f16 elements, got an array of f64$"):
        check_args("k", PARAMS, args)


def test_float_for_int_scalar() -> None:
    args = ok_args()
    args[2] = 8.5
    with pytest.raises(LaunchError, match=r"argument 'n' is i32, got the float 8.5 \(pass an int\)"):
        check_args("k", PARAMS, args)


def test_out_of_range_int() -> None:
    args = ok_args()
    args[2] = 2**31
    with pytest.raises(LaunchError, match=r"argument 'n' is i32; 2147483648 is out of range"):
        check_args("k", PARAMS, args)


def test_non_contiguous_array() -> None:
    args = ok_args()
    args[0] = np.zeros(16, np.float32)[::2]
    with pytest.raises(LaunchError, match=r"argument 'x_ptr' must be a C-contiguous array"):
        check_args("k", PARAMS, args)


def test_not_an_array() -> None:
    args = ok_args()
    args[0] = [1.0, 2.0]
    with pytest.raises(LaunchError, match=r"argument 'x_ptr' must be an array of f32 .* got list"):
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
    with pytest.raises(LaunchError, match="got a device array of f64"):
        check_args("k", PARAMS, args)
    args[0] = FakeDevice("<f4", strides=(8,))
    with pytest.raises(LaunchError, match="must be a contiguous array"):
        check_args("k", PARAMS, args)


def test_scalar_conversions() -> None:
    assert convert_scalar("w", f32, 3) == np.float32(3.0)
    with pytest.raises(LaunchError, match="is i32, got the bool True"):
        convert_scalar("w", i32, True)
    with pytest.raises(LaunchError, match="must be a i32 scalar, got str"):
        convert_scalar("w", i32, "3")


@pytest.mark.parametrize("grid,want", [(5, (5, 1, 1)), ((2, 3), (2, 3, 1)), ((1, 2, 3), (1, 2, 3))])
def test_grid_normalization(grid, want) -> None:
    assert normalize_grid(grid) == want


@pytest.mark.parametrize("grid", [0, (), (1, 2, 3, 4), (2, -1), 2.0])
def test_bad_grids(grid) -> None:
    with pytest.raises(LaunchError, match="grid must be 1 to 3 positive integers"):
        normalize_grid(grid)


def test_misaligned_device_pointer_is_rejected_before_launch() -> None:
    from eggpu.pipeline import _check_assumptions
    from eggpu.runtime import CheckedArg

    good = CheckedArg(PARAMS[0], "device", 4096)
    bad = CheckedArg(PARAMS[0], "device", 4100)
    _check_assumptions("k", {"x_ptr": "align16"}, [good])
    _check_assumptions("k", {}, [bad])
    with pytest.raises(LaunchError, match=r"k: argument 'x_ptr' must be 16-byte aligned .* got address 0x1004"):
        _check_assumptions("k", {"x_ptr": "align16"}, [bad])
