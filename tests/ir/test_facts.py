"""Launch-time specialization facts (eggpu.ir.facts): text form, checks and their messages."""

from __future__ import annotations

import numpy as np
import pytest

from eggpu.ir import Builder, f32, i32, parse_function, pointer, print_function, scalar
from eggpu.ir.errors import InterpreterError, IRError, IRParseError, LaunchError
from eggpu.ir.facts import (
    Facts,
    check_launch,
    describe_fact,
    facts_for_args,
    parse_fact,
    substitute_constants,
)
from eggpu.ir.interp import interpret


def _fn():
    b = Builder("k", [("x", pointer(f32)), ("n", scalar(i32)), ("s", scalar(i32))])
    x, n, s = b.params
    off = b.op("add", n, s)
    b.effect("store", b.op("addptr", x, off), b.const(1.0, f32))
    return b.function


def test_text_round_trip_keeps_facts():
    fn = _fn()
    fn.facts = Facts.make({"n": ["eq1"], "s": ["div16"], "x": ["align16"]}, 1024)
    text = print_function(fn)
    assert "facts(%n: eq1, %s: div16, %x: align16, offsets_i32=1024)" in text
    assert parse_function(text).facts == fn.facts
    assert "facts" not in print_function(_fn())  # no facts: the header is unchanged


def test_parse_errors_name_the_fact():
    text = print_function(_fn()).replace("grid=1", "grid=1 facts(%s: div3x)")
    with pytest.raises(IRParseError, match="unknown specialization fact 'div3x'"):
        parse_function(text)
    with pytest.raises(IRParseError, match="unknown parameter %q"):
        parse_function(print_function(_fn()).replace("grid=1", "grid=1 facts(%q: div16)"))
    with pytest.raises(IRError, match="K must be in"):
        parse_fact("div1")


def test_describe_and_dict_form():
    assert describe_fact("div16") == "divisible by 16"
    assert describe_fact("align16") == "16-byte aligned"
    assert describe_fact("eq1") == "equal to 1"
    f = Facts.make({"s": ["div16"]}, 256)
    assert Facts.from_dict(f.as_dict()) == f
    assert f.divisor("s") == 16 and f.divisor("n") == 1 and f.program_id_max == (1 << 31) // 256 - 1
    with pytest.raises(IRError):
        Facts.from_dict({"*": ["offsets_i64=3"]})


def test_check_launch_names_kernel_argument_and_fact():
    f = Facts.make({"s": ["div16"], "n": ["eq1"], "x": ["align16"]}, 1024)
    names = ["x", "n", "s"]
    check_launch("k", f, names, [0x1000, 1, 32], (5, 1, 1), LaunchError)
    with pytest.raises(LaunchError, match=r"k: argument 's' must be divisible by 16 .*div16.*got 33"):
        check_launch("k", f, names, [0x1000, 1, 33], (5, 1, 1), LaunchError)
    with pytest.raises(LaunchError, match="argument 'n' must be equal to 1"):
        check_launch("k", f, names, [0x1000, 2, 32], (5, 1, 1), LaunchError)
    with pytest.raises(LaunchError, match="argument 'x' must be 16-byte aligned .*0x1004"):
        check_launch("k", f, names, [0x1004, 1, 32], (5, 1, 1), LaunchError)
    with pytest.raises(LaunchError, match="grid axis 0 has 2097153 programs.*offsets_i32"):
        check_launch("k", f, names, [0x1000, 1, 32], (2097153, 1, 1), LaunchError)


def test_automatic_facts_follow_triton():
    a = np.zeros(8, np.float32)
    got = facts_for_args(["a", "b", "c", "d", "e"], ["pointer", "int", "int", "int", "int"], [a, 32, 1, 7, True])
    assert got == {"a": ("align16",), "b": ("div16",), "c": ("eq1",)}
    assert facts_for_args(["b"], ["int"], [32], skip=["b"]) == {}
    misaligned = np.zeros(9, np.float32)[1:]
    assert facts_for_args(["a"], ["pointer"], [misaligned]) == {}


def test_eq1_parameters_become_constants():
    fn = _fn()
    fn.facts = Facts.make({"n": ["eq1"]})
    assert substitute_constants(fn) == 1
    text = print_function(fn)
    assert "%n_eq1 = const() {dtype=i32, value=1}" in text and "add(%n_eq1, %s)" in text


def test_interpreter_checks_the_facts():
    fn = _fn()
    fn.facts = Facts.make({"s": ["div16"]})
    x = np.zeros(64, np.float32)
    interpret(fn, 1, x, 1, 16)
    assert x[17] == 1.0
    with pytest.raises(InterpreterError, match="argument 's' must be divisible by 16"):
        interpret(fn, 1, x, 1, 17)
