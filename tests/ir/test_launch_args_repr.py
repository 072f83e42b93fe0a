"""Launch errors quote a caller's value only as a short repr (eggpu.ir.launch_args.short_repr)."""

from __future__ import annotations

import numpy as np
import pytest

from eggpu.ir import Builder, f32, i32, i64, pointer, scalar
from eggpu.ir.errors import EggpuError, InterpreterError
from eggpu.ir.interp import interpret
from eggpu.ir.launch_args import REPR_CHARS, convert_scalar, normalize_grid, short_repr


class Custom(EggpuError):
    pass


def message(fn, *args) -> str:
    with pytest.raises(Custom) as e:
        fn(*args, Custom)
    return str(e.value)


def test_a_300_element_list_is_not_quoted_whole():
    big = list(range(300))
    assert (message(convert_scalar, "k", "n", i32, big)
            == "k: parameter 'n' (i32) expects an integer, got list [0, 1, 2, 3, 4, 5, ...]")
    assert (message(normalize_grid, "k", [7] * 300)
            == "k: grid [7, 7, 7, 7, 7, 7, ...] has 300 axes; a grid has at most 3 (x, y, z) and entries past "
               "the third may only be 1")
    text = "é" * 1000
    msg = message(convert_scalar, "k2", "x", f32, text)
    assert msg == f"k2: parameter 'x' (f32) expects a number, got str {short_repr(text)}" and len(msg) < 150


def test_long_and_huge_ints_are_summarized():
    assert (message(convert_scalar, "k", "n", i64, 3 * 10**100)
            == "k: parameter 'n' (i64): value 300000000000...000000 (101 digits) is out of range "
               "[-9223372036854775808, 9223372036854775807]")
    # beyond Python's int-to-str limit: a plain f-string would raise ValueError itself
    assert message(convert_scalar, "k", "n", i32, 2**20000) == \
        "k: parameter 'n' (i32): value <an int of 20001 bits> is out of range [-2147483648, 2147483647]"
    assert message(normalize_grid, "k", (-(10**90),)) == \
        "k: grid dimensions must be >= 0, got (-10000000000...000000 (91 digits),)"


def test_short_repr_bounds_every_value():
    class Loud:
        def __repr__(self):
            return "L" * 500

    for v in (Loud(), np.arange(300), {i: str(i) * 50 for i in range(50)}, ("ab" * 300,), b"\x00" * 400):
        r = short_repr(v)
        assert len(r) <= REPR_CHARS and "\n" not in r, r
    assert short_repr([1.5, "a"]) == "[1.5, 'a']"


def test_the_interpreter_launch_error_is_short():
    b = Builder("k", [("x", pointer(f32)), ("n", scalar(i32))])
    b.effect("store", b.param("x"), b.const(1.0, f32))
    fn = b.finish()
    with pytest.raises(InterpreterError) as e:
        interpret(fn, 1, list(range(300)), 3)
    assert str(e.value) == "k: parameter 'x' (ptr<f32>) expects a numpy array of f32, got list [0, 1, 2, 3, 4, 5, ...]"
