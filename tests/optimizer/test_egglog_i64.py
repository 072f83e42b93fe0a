"""egglog's binary i64 primitives (optimizer/egglog_i64.py): checked arithmetic, truncating
division, shifts defined for amounts in [0, 64), against exact integers and z3's bit-vectors."""

from __future__ import annotations

import pytest
import z3
from hypothesis import given
from hypothesis import strategies as st

from eggpu.optimizer.egglog_i64 import I64_MAX, I64_MIN, PRIMITIVES, I64Undefined, i64_binary

i64s = st.integers(I64_MIN, I64_MAX)


@pytest.mark.parametrize(("op", "a", "b", "want"), [
    ("+", 5, -7, -2), ("-", -3, 4, -7), ("*", -6, 7, -42), ("/", -7, 2, -3), ("%", -7, 2, -1), ("/", 7, -2, -3),
    ("%", 7, -2, 1), ("<<", 3, 2, 12), ("<<", 1, 63, I64_MIN), ("<<", 3, 63, I64_MIN), (">>", -9, 1, -5),
    ("&", 12, 10, 8), ("|", 12, 10, 14), ("^", 12, 10, 6), ("min", -1, 2, -1), ("max", -1, 2, 2),
    ("/", I64_MIN, 1, I64_MIN), ("+", I64_MAX, 0, I64_MAX),
])
def test_values(op, a, b, want):
    assert i64_binary(op, a, b) == want


@pytest.mark.parametrize(("op", "a", "b", "why"), [
    ("+", I64_MAX, 1, "i64 overflow"), ("-", I64_MIN, 1, "i64 overflow"), ("*", 1 << 32, 1 << 31, "i64 overflow"),
    ("/", 3, 0, "division by zero"), ("%", -4, 0, "division by zero"), ("/", I64_MIN, -1, "i64 overflow"),
    ("<<", 1, 64, "shift out of range"), (">>", 1, -1, "shift out of range"),
])
def test_where_egglog_panics(op, a, b, why):
    with pytest.raises(I64Undefined, match=f"^{why}$"):
        i64_binary(op, a, b)


def test_an_unknown_primitive_is_a_key_error():
    assert "log2" not in PRIMITIVES and {"+", "/", "<<", "min"} <= PRIMITIVES
    with pytest.raises(KeyError):
        i64_binary("log2", 8, 0)


@given(i64s, i64s)
def test_checked_arithmetic_is_exact_or_undefined(a, b):
    for op, exact in (("+", a + b), ("-", a - b), ("*", a * b)):
        if I64_MIN <= exact <= I64_MAX:
            assert i64_binary(op, a, b) == exact
        else:
            with pytest.raises(I64Undefined):
                i64_binary(op, a, b)


@given(i64s, i64s, st.integers(0, 63))
def test_division_and_shifts_match_z3_bitvectors(a, b, s):
    x, y, k = z3.BitVecVal(a, 64), z3.BitVecVal(b, 64), z3.BitVecVal(s, 64)
    cases = [("<<", s, x << k), (">>", s, x >> k)]
    if b != 0 and not (a == I64_MIN and b == -1):
        cases += [("/", b, x / y), ("%", b, z3.SRem(x, y))]
    for op, rhs, bv in cases:
        assert i64_binary(op, a, rhs) == z3.simplify(bv).as_signed_long(), op
