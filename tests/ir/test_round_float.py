"""eggpu.ir.dtypes.round_float (constant rounding without numpy) against numpy's own conversions."""

from __future__ import annotations

import math
import struct

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from eggpu.ir.dtypes import (
    bf16,
    f16,
    f32,
    f64,
    is_numpy_scalar,
    loaded_numpy,
    numpy_dtype,
    round_float,
    round_once,
)

FLOATS = (f16, bf16, f32, f64)


def _numpy_round(v: float, dt) -> float:
    with np.errstate(all="ignore"):
        return float(np.asarray(v, dtype=np.float64).astype(numpy_dtype(dt)).astype(np.float64))


def _bits(x: float) -> bytes:
    return struct.pack("<d", x)


def _near_boundaries(draw_bits: int, nudge: int, sign: int) -> float:
    """A double a few f64 ulps away from an f32 value: the halfway cases of f32, f16 and bf16."""
    f = struct.unpack("<f", struct.pack("<I", draw_bits))[0]
    if not math.isfinite(f):
        return f
    return f * (1 + sign * 2.0 ** -nudge)


doubles = st.one_of(
    st.floats(allow_nan=False),
    st.builds(lambda b: struct.unpack("<d", struct.pack("<Q", b))[0], st.integers(0, 2**64 - 1)).filter(
        lambda x: x == x),
    st.builds(_near_boundaries, st.integers(0, 2**32 - 1), st.integers(8, 52), st.sampled_from((-1, 1))),
)


@settings(max_examples=3000, deadline=None)
@given(v=doubles, dt=st.sampled_from(FLOATS))
def test_round_float_is_numpys_conversion_bit_for_bit(v: float, dt) -> None:
    assert _bits(round_float(v, dt)) == _bits(_numpy_round(v, dt))


@pytest.mark.parametrize("dt", FLOATS, ids=str)
@pytest.mark.parametrize("v", [0.0, -0.0, math.inf, -math.inf, 65504.0, 65519.99, 65520.0, -65520.0,
                               3.4028234663852886e38, 3.4028235677973366e38, 1e39, -1e39, 3.3895313892515355e38,
                               3.3961775292304683e38, 2.9802322387695312e-08, 5.960464477539063e-08, 1e-46, 7e-46,
                               1.401298464324817e-45, 0.1, 1 / 3, 1e308])
def test_round_float_edges(v: float, dt) -> None:
    """Overflow to inf, the largest finite values, subnormals and halfway cases of each format."""
    assert _bits(round_float(v, dt)) == _bits(_numpy_round(v, dt))


@pytest.mark.parametrize("dt", FLOATS, ids=str)
def test_round_float_keeps_nan_payloads_as_numpy_does(dt) -> None:
    for bits in (0x7FF8000000000000, 0xFFF8000000000001, 0x7FF4000000000000, 0x7FFC0000DEADBEEF):
        v = struct.unpack("<d", struct.pack("<Q", bits))[0]
        assert _bits(round_float(v, dt)) == _bits(_numpy_round(v, dt))


def test_numpy_scalars_are_recognized_only_through_a_loaded_numpy() -> None:
    assert loaded_numpy() is np  # this module imported it
    assert is_numpy_scalar(np.float32(1.5), "float") and not is_numpy_scalar(np.float32(1.5), "int")
    assert is_numpy_scalar(np.int8(3), "int") and is_numpy_scalar(np.bool_(True), "bool")
    assert is_numpy_scalar(np.uint16(3)) and not is_numpy_scalar(3) and not is_numpy_scalar(1.5, "float")


def _round_f64(v: float, dt) -> float:
    from eggpu.ir.semantics import round_f64

    with np.errstate(all="ignore"):
        return float(round_f64(np.asarray([v], dtype=np.float64), dt)[0])


@settings(max_examples=3000, deadline=None)
@given(v=doubles, dt=st.sampled_from(FLOATS))
def test_round_once_is_the_interpreters_single_rounding_bit_for_bit(v: float, dt) -> None:
    """round_once (codegen's constants, no numpy) equals eggpu.ir.semantics.round_f64, which
    rounds bf16 once (through round-to-odd), unlike numpy's double rounding in round_float.
    NaNs are outside its contract (returned as given; codegen sends them to numpy)."""
    assume(v == v)
    assert _bits(round_once(v, dt)) == _bits(_round_f64(v, dt))


@pytest.mark.parametrize("dt", FLOATS, ids=str)
@pytest.mark.parametrize("v", [3.3895313892515355e38, 3.3961775292304683e38, 3.4028235677973366e38, 1e39,
                               65504.0, 65519.99, 65520.0, 2.0**-133, 2.0**-134, 1.5 * 2.0**-135, 2.0**-149,
                               2.0**-150, 2.0**-150 * 1.0000001, 5e-324, 1.7976931348623157e308, -0.0, 1.0 + 2.0**-8])
def test_round_once_edges(v: float, dt) -> None:
    assert _bits(round_once(v, dt)) == _bits(_round_f64(v, dt))
    assert _bits(round_once(-v, dt)) == _bits(_round_f64(-v, dt))
