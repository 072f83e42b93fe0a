"""Tests of the textual IR: printer, parser, structural equality and the generated op table doc."""

from __future__ import annotations

import importlib.util
import math
import re
import struct
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eggpu.ir import (
    ALL_DTYPES,
    OPS,
    BlockType,
    Builder,
    Function,
    IRError,
    IRParseError,
    Loc,
    bf16,
    block,
    bool_,
    f16,
    f32,
    f64,
    i8,
    i16,
    i32,
    i64,
    pointer,
    scalar,
    u8,
    u16,
    u32,
    u64,
)
from eggpu.ir.ops import ELEMENTWISE, FLOAT, NUM
from eggpu.ir.parser import parse_function, parse_type
from eggpu.ir.printer import op_table_markdown, print_function, print_type, splice_op_table
from eggpu.ir.structural import first_difference, structurally_equal

ROOT = Path(__file__).resolve().parents[2]


def _load_strategies():
    name = "eggpu_tests_ir_strategies"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name("strategies.py"))
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


random_programs = _load_strategies().random_programs


def nan_with_bits(bits: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", bits))[0]


def bits_of(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


SPECIAL_FLOATS = [0.0, -0.0, float("inf"), float("-inf"), float("nan"), -float("nan"),
                  nan_with_bits(0x7FF0000000000001), nan_with_bits(0xFFF4000000000ABC), 5e-324, -5e-324,
                  2.2250738585072009e-308, 1.401298464324817e-45, 0.1, 1e300, -1.5e-10, 1e16, 65504.0]

# ---------------------------------------------------------------- hand-built programs


def vector_add() -> Function:
    b = Builder("vector_add", [("x_ptr", pointer(f32)), ("y_ptr", pointer(f32)), ("out_ptr", pointer(f32)),
                               ("n", scalar(i32))])
    pid = b.op("program_id", axis=0)
    offs = b.op("add", b.op("splat", b.op("mul", pid, b.const(4, i32)), shape=(4,)), b.op("arange", start=0, end=4))
    mask = b.op("lt", offs, b.op("splat", b.param("n"), shape=(4,)))
    x = b.op("load", b.op("addptr", b.op("splat", b.param("x_ptr"), shape=(4,)), offs), mask)
    y = b.op("load", b.op("addptr", b.op("splat", b.param("y_ptr"), shape=(4,)), offs), mask)
    b.effect("store", b.op("addptr", b.op("splat", b.param("out_ptr"), shape=(4,)), offs), b.op("add", x, y), mask)
    return b.finish()


VECTOR_ADD_TEXT = """\
kernel vector_add(%x_ptr: ptr<f32>, %y_ptr: ptr<f32>, %out_ptr: ptr<f32>, %n: i32) grid=1 {
  %0 = program_id() {axis=0} : i32
  %1 = const() {dtype=i32, value=4} : i32
  %2 = mul(%0, %1) : i32
  %3 = splat(%2) {shape=(4)} : i32[4]
  %4 = arange() {end=4, start=0} : i32[4]
  %5 = add(%3, %4) : i32[4]
  %6 = splat(%n) {shape=(4)} : i32[4]
  %7 = lt(%5, %6) : bool[4]
  %8 = splat(%x_ptr) {shape=(4)} : ptr<f32>[4]
  %9 = addptr(%8, %5) : ptr<f32>[4]
  %10 = load(%9, %7) : f32[4]
  %11 = splat(%y_ptr) {shape=(4)} : ptr<f32>[4]
  %12 = addptr(%11, %5) : ptr<f32>[4]
  %13 = load(%12, %7) : f32[4]
  %14 = splat(%out_ptr) {shape=(4)} : ptr<f32>[4]
  %15 = addptr(%14, %5) : ptr<f32>[4]
  %16 = add(%10, %13) : f32[4]
  store(%15, %16, %7)
}"""


def _unary_ops(*families: str) -> list[str]:
    """The op table's unary elementwise ops (no attributes) whose family is one of ``families``."""
    return [n for n, d in OPS.items()
            if ELEMENTWISE in d.traits and d.arity == (1, 1) and not d.attrs and d.family in families]


def elementwise_zoo() -> Function:
    """Every elementwise, comparison, conversion op, on float, int and bool operands."""
    b = Builder("zoo", [("f", block(f32, 8)), ("g", block(f32, 8)), ("h", block(f32, 8)), ("i", block(i32, 8)),
                        ("j", block(i32, 8)), ("k", block(bool_, 8)), ("u", block(u16, 8))])
    f, g, h, i, j, k, u = b.params
    out = []
    for op in _unary_ops(FLOAT, NUM):
        out.append(b.op(op, f))
    for op in ("add", "sub", "mul", "div", "rem", "minimum", "maximum", "eq", "ne", "lt", "le", "gt", "ge", "atan2", "pow", "hypot"):
        out.append(b.op(op, f, g))
    for op in ("add", "div", "rem", "and", "or", "xor", "shl", "shr", "minimum", "maximum", "lt", "mulhi"):
        out.append(b.op(op, i, j))
    out += [b.op(op, i) for op in ("popc", "clz", "ffs", "brev")]
    out += [b.op("not", i), b.op("not", k), b.op("and", k, b.op("lt", f, g)), b.op("neg", u), b.op("shr", u, u)]
    out.append(b.op("fma", f, g, h))
    out.append(b.op("where", k, f, g))
    out.append(b.op("cast", f, dtype=bf16))
    out.append(b.op("cast", i, dtype=u8))
    out.append(b.op("bitcast", f, dtype=i32))
    out.append(b.op("bitcast", u, dtype=f16))
    out.append(b.op("libdevice", f, i, symbol="__nv_ldexpf"))  # the generic libdevice call
    out.append(b.op("libdevice", f, g, h, symbol="__nv_fmaf_rz"))
    return b.finish()


def all_dtypes_and_constants() -> Function:
    """A parameter and constants of every dtype, including special float constants."""
    b = Builder("dtypes", [(f"p_{d.name}", pointer(d)) for d in ALL_DTYPES]
                + [(f"s_{d.name}", scalar(d)) for d in ALL_DTYPES])
    for d in ALL_DTYPES:
        p, s = b.param(f"p_{d.name}"), b.param(f"s_{d.name}")
        b.effect("store", p, s)
        if d.is_float:
            for x in SPECIAL_FLOATS:
                b.effect("store", p, b.const(x, d))
        elif d.is_int:
            b.effect("store", p, b.const(d.min, d))
            b.effect("store", p, b.const(d.max, d))
        else:
            b.effect("store", p, b.const(True, d))
            b.effect("store", p, b.const(False, d))
    return b.finish()


def memory_and_atomics() -> Function:
    b = Builder("memory", [("p", pointer(f32)), ("q", pointer(i32)), ("m", pointer(bool_))], grid_rank=2)
    p, q, mp = b.params
    offs = b.op("add", b.op("arange", start=0, end=16),
                b.op("splat", b.op("mul", b.op("program_id", axis=1), b.op("num_programs", axis=0)), shape=(16,)))
    pb = b.op("addptr", b.op("splat", p, shape=(16,)), offs)
    qb = b.op("addptr", b.op("splat", q, shape=(16,)), b.op("cast", offs, dtype=i64))
    mask = b.op("load", b.op("addptr", b.op("splat", mp, shape=(16,)), offs))
    x0 = b.op("load", pb)
    x1 = b.op("load", pb, mask)
    x2 = b.op("load", pb, mask, b.op("splat", b.const(-0.0, f32), shape=(16,)))
    b.effect("store", pb, b.op("add", b.op("add", x0, x1), x2))
    b.effect("store", pb, x0, mask)
    b.op("atomic_add", pb, x1)
    b.op("atomic_add", pb, x1, mask)
    b.op("atomic_max", pb, x2, mask)
    b.op("atomic_min", qb, b.op("load", qb))
    old = b.op("atomic_xchg", qb, b.op("load", qb, mask), mask)
    b.op("atomic_cas", qb, old, b.op("splat", b.const(7, i32), shape=(16,)))
    b.op("atomic_cas", q, b.const(0, i32), b.const(1, i32))
    b.op("atomic_and", qb, b.op("load", qb), mask, sem="acquire")
    b.op("atomic_or", q, b.const(6, i32))
    b.op("atomic_xor", qb, b.op("load", qb), sem="release")
    # inline asm: strings with quotes, backslashes and PTX's $ operands survive the text form
    asm = b.op("inline_asm", x0, b.op("splat", b.const(2.0, f32), shape=(16,)), asm='fma.rn.f32 $0, $1, $2, $1; // "x"\\',
               constraints="=f,f,f", dtype=f32, pure=False)
    b.effect("store", pb, asm)
    # debug ops: a prefix with Triton's normalization and a message/source location with quotes
    b.effect("device_print", x0, b.op("program_id", axis=1), prefix=' x "0": ', hex=True)
    b.effect("device_print", prefix="pid only", hex=False)
    b.effect("device_assert", mask, b.op("lt", x0, x1), msg='x0 < "x1"', src="k.py:3:5")
    b.effect("device_assert", b.op("lt", b.const(1, i32), b.const(2, i32)), msg="", src="")
    return b.finish()


def shapes_reductions_dot() -> Function:
    b = Builder("matmul", [("a", block(f16, 4, 8)), ("bb", block(f16, 8, 2)), ("c", block(i8, 2, 3)),
                           ("d", block(i8, 3, 2)), ("v", block(f64, 8))])
    a, bb, c, d, v = b.params
    acc = b.op("dot", a, bb)
    acc2 = b.op("dot", a, bb, acc)
    idot = b.op("dot", c, d)
    b.op("reduce_sum", acc2, axis=0)
    b.op("reduce_max", acc2, axis=1)
    b.op("reduce_min", idot, axis=0)
    b.op("reduce_argmax", a, axis=1)
    b.op("reduce_argmin", v, axis=0)
    e = b.op("expand_dims", v, axis=0)
    b.op("broadcast", e, shape=(3, 8))
    b.op("reshape", a, shape=(2, 16))
    b.op("trans", a, perm=(1, 0))
    b.op("splat", b.op("reduce_sum", v, axis=0), shape=(2, 2))
    return b.finish()


def control_flow() -> Function:
    """A for with carried values, an if nested in it, an if nested in that, a zero-result if and loop."""
    b = Builder("control", [("x", pointer(f32)), ("n", scalar(i32)), ("flag", scalar(bool_))])
    x, n, flag = b.params
    zero, one = b.const(0, i32), b.const(1, i32)
    init = b.op("splat", b.const(0.0, f32), shape=(8,))
    with b.region([scalar(i32), block(f32, 8), scalar(i32)]) as body:
        iv, acc, cnt = body.args
        cond = b.op("lt", iv, b.const(3, i32))
        with b.region() as then:
            with b.region() as inner_then:
                b.yield_(b.op("add", acc, acc), cnt)
            with b.region() as inner_else:
                b.yield_(acc, b.op("add", cnt, one))
            inner = b.if_(flag, inner_then, inner_else, [block(f32, 8), scalar(i32)])
            b.yield_(*inner.results)
        with b.region() as else_:
            b.yield_(b.op("neg", acc), cnt)
        r = b.if_(cond, then, else_, [block(f32, 8), scalar(i32)])
        b.yield_(r.results[0], r.results[1])
    loop = b.for_(zero, n, one, [init, zero], body)
    with b.region() as t:
        b.effect("store", x, b.op("reduce_sum", loop.results[0], axis=0))
        b.yield_()
    with b.region() as e:
        b.yield_()
    b.if_(flag, t, e, [])
    with b.region([scalar(i32)]) as empty_loop:
        b.yield_()
    b.for_(n, zero, b.const(-1, i32), [], empty_loop)
    return b.finish()


def while_and_gather() -> Function:
    """A while loop carrying a scalar and a block (condition region and body region), and a gather."""
    b = Builder("whiles", [("x", pointer(f32)), ("n", scalar(i32))])
    x, n = b.params
    zero, one = b.const(0, i32), b.const(1, i32)
    idx = b.op("arange", start=0, end=8)
    data = b.op("load", b.op("addptr", b.op("splat", x, shape=(8,)), idx))
    with b.region([scalar(i32), block(f32, 8)]) as cond:
        b.yield_(b.op("lt", cond.args[0], n))
    with b.region([scalar(i32), block(f32, 8)]) as body:
        k, acc = body.args
        rev = b.op("sub", b.op("splat", b.const(7, i32), shape=(8,)), idx)
        b.yield_(b.op("add", k, one), b.op("add", acc, b.op("gather", acc, rev, axis=0)))
    loop = b.while_([zero, data], cond, body)
    b.effect("store", x, b.op("reduce_sum", loop.results[1], axis=0))
    return b.finish()


def raw_addresses() -> Function:
    """An address loaded from a table becomes a pointer (int_to_ptr); a pointer's address is stored (ptr_to_int)."""
    b = Builder("raw", [("table", pointer(i64)), ("out", pointer(u64))])
    table, out = b.params
    p = b.op("int_to_ptr", b.op("load", table), dtype=f16)
    offs = b.op("arange", start=0, end=4)
    ptrs = b.op("addptr", b.op("splat", p, shape=(4,)), offs)
    b.effect("store", b.op("addptr", b.op("splat", out, shape=(4,)), offs), b.op("ptr_to_int", ptrs, dtype=u64))
    return b.finish()


PROGRAMS = {f.__name__: f for f in (vector_add, elementwise_zoo, all_dtypes_and_constants, memory_and_atomics,
                                     shapes_reductions_dot, control_flow, while_and_gather, raw_addresses)}


# ---------------------------------------------------------------- round trips


def assert_round_trip(fn: Function) -> Function:
    text = print_function(fn)
    parsed = parse_function(text)
    assert print_function(parsed) == text
    diff = first_difference(fn, parsed)
    assert diff is None, diff
    assert structurally_equal(fn, parsed)
    return parsed


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_round_trip(name):
    assert_round_trip(PROGRAMS[name]())


def test_hand_built_programs_cover_every_op():
    used = {op.op for make in PROGRAMS.values() for op in make().walk()}
    assert used == set(OPS), f"not covered: {sorted(set(OPS) - used)}"


def test_every_dtype_is_covered():
    fn = all_dtypes_and_constants()
    printed = print_function(fn)
    for d in ALL_DTYPES:
        assert f"ptr<{d.name}>" in printed and f"dtype={d.name}," in printed


def test_golden_text():
    fn = vector_add()
    assert print_function(fn) == VECTOR_ADD_TEXT
    assert str(fn) == VECTOR_ADD_TEXT


def test_print_is_deterministic():
    assert print_function(control_flow()) == print_function(control_flow())


def test_region_layout():
    text = print_function(control_flow())
    assert "%4, %5 = for(%0, %n, %1, %3, %0) : f32[8], i32 {\n  ^(%6: i32, %7: f32[8], %8: i32):\n" in text
    assert "\n    } else {\n" in text
    assert "  if(%flag) {\n" in text  # zero results: no '=' and no ':'
    assert re.search(r"\n  for\(%n, %0, %\d+\) \{\n  \^\(%\d+: i32\):\n    yield\(\)\n  \}", text)


@pytest.mark.parametrize("x", SPECIAL_FLOATS, ids=lambda x: f"{bits_of(x):016x}")
@pytest.mark.parametrize("dt", [f16, bf16, f32, f64])
def test_float_constants_round_trip_bitwise(x, dt):
    b = Builder("k", [("p", pointer(dt))])
    b.effect("store", b.param("p"), b.const(x, dt))
    fn = b.finish()
    parsed = assert_round_trip(fn)
    (const,) = [op for op in parsed.walk() if op.op == "const"]
    assert isinstance(const.attrs["value"], float)
    assert bits_of(const.attrs["value"]) == bits_of(x)


def test_float_literal_forms():
    text = print_function(all_dtypes_and_constants())
    assert "value=-0.0}" in text and "value=nan}" in text and "value=inf}" in text and "value=-inf}" in text
    assert "value=nan(0xfff8000000000000)}" in text  # negative NaN keeps its sign
    assert "value=nan(0x7ff0000000000001)}" in text  # signalling payload kept
    assert "value=5e-324}" in text


def test_parser_accepts_hex_floats_comments_and_free_layout():
    text = ("// a comment\nkernel k(%p: ptr<f64>) {  %c = const() {value=0x1.8p+1, dtype=f64} : f64 // trailing\n"
            "store(%p, %c) }")
    fn = parse_function(text)
    (const,) = [op for op in fn.walk() if op.op == "const"]
    assert const.attrs["value"] == 3.0
    assert print_function(fn) == ("kernel k(%p: ptr<f64>) grid=1 {\n  %c = const() {dtype=f64, value=3.0} : f64\n"
                                  "  store(%p, %c)\n}")


def test_value_names():
    b = Builder("names", [("x", scalar(i32)), ("9lives", scalar(i32)), ("y z", scalar(i32))])
    x, nine, yz = b.params
    s = b.op("add", x, nine)
    s.name = "sum"
    t = b.op("add", s, yz)
    t.name = "sum"  # duplicate: uniquified
    u = b.op("mul", t, x)
    u.name = "sum_1"  # collides with the uniquified name
    w = b.op("mul", u, u)
    w.name = "7"  # numeric names are treated as unnamed
    b.op("sub", w, b.const(1, i32))
    fn = b.finish()
    text = print_function(fn)
    assert text.startswith("kernel names(%x: i32, %_9lives: i32, %y_z: i32) grid=1 {\n")
    assert "%sum = add(%x, %_9lives)" in text
    assert "%sum_1 = add(%sum, %y_z)" in text
    assert "%sum_1_1 = mul(%sum_1, %x)" in text
    assert "%0 = mul(%sum_1_1, %sum_1_1)" in text
    parsed = parse_function(text)
    assert [p.name for p in parsed.params] == ["x", "_9lives", "y_z"]
    assert print_function(parsed) == text
    reparsed = parse_function(print_function(parsed))
    assert structurally_equal(parsed, reparsed, names=True)
    numbered = [op.results[0] for op in parsed.walk() if op.op in ("const", "sub")]
    assert all(v.name is None for v in numbered)


def test_quoted_function_name():
    b = Builder("my kernel", [("p", pointer(i8))])
    b.effect("store", b.param("p"), b.const(-128, i8))
    fn = assert_round_trip(b.finish())
    assert fn.name == "my kernel"
    assert print_function(fn).startswith('kernel "my kernel"(%p: ptr<i8>) grid=1 {')


def test_locations_round_trip():
    fn = control_flow()
    for k, op in enumerate(fn.walk()):
        op.loc = Loc('dir/kern"el.py', 10 + k, k % 3)
    plain = print_function(fn)
    assert "loc(" not in plain
    text = print_function(fn, with_locs=True)
    assert 'loc("dir/kern\\"el.py":10:1)' in text
    parsed = parse_function(text)
    assert print_function(parsed, with_locs=True) == text
    assert print_function(parsed) == plain
    assert first_difference(fn, parsed, locs=True) is None


@pytest.mark.parametrize("t", [scalar(d) for d in ALL_DTYPES] + [block(bf16, 128), block(bool_, 2, 3),
                                                                    pointer(f16), block(pointer(f32).elem, 16, 32)])
def test_type_round_trip(t):
    assert parse_type(print_type(t)) == t


def test_print_type_forms():
    assert print_type(block(pointer(f32).elem, 16, 32)) == "ptr<f32>[16,32]"
    assert print_type(block(i32, 128)) == "i32[128]"
    assert print_type(u64) == "u64"
    assert parse_type(" ptr < u8 > [ 3 , 4 ] ") == BlockType(pointer(u8).elem, (3, 4))
    with pytest.raises(IRError):
        print_type("f32")


@pytest.mark.parametrize("text, message", [
    ("f33", "1:1: unknown type 'f33' (did you mean f32"),
    ("ptr<ptr<f32>>", "1:5: unknown type 'ptr'"),
    ("i32[0]", "1:5: dimension sizes must be positive"),
    ("i32[4", "1:6: expected ',' or ']'"),
    ("i32 i32", "1:5: unexpected 'i32' after the type"),
])
def test_parse_type_errors(text, message):
    with pytest.raises(IRParseError) as e:
        parse_type(text)
    assert str(e.value).startswith(message)


# ---------------------------------------------------------------- parse errors

BASE = """\
kernel k(%x: f32[4], %n: i32, %p: ptr<f32>[4]) grid=1 {
  %0 = add(%x, %x) : f32[4]
  store(%p, %0)
}"""

ERROR_CASES = {
    "unknown op": (BASE.replace("add(", "ad("), "2:8: unknown op 'ad' (did you mean", "ad("),
    "undefined value": (BASE.replace("add(%x, %x)", "add(%x, %y)"), "2:16: undefined value %y", "%y"),
    "bad type": (BASE.replace(": f32[4]\n", ": f33[4]\n"), "2:22: unknown type 'f33' (did you mean f32", "f33"),
    "wrong arity": (BASE.replace("add(%x, %x)", "add(%x, %x, %x)"), "2:8: add: takes 2 operands, got 3", "add"),
    "type mismatch": (BASE.replace(": f32[4]\n", ": f32[8]\n"),
                      "2:22: type mismatch: add gives (f32[4]), the text says (f32[8])", "f32[8]"),
    "operand type mismatch": (BASE.replace("add(%x, %x)", "add(%x, %n)"),
                              "2:8: add: operands must have one type, got f32[4], i32", "add"),
    "family": (BASE.replace("add(%x, %x)", "xor(%x, %x)"), "2:8: xor: does not accept f32 operands", "xor"),
    "missing yield": ("kernel k(%c: bool) {\n  if(%c) {\n  } else {\n    yield()\n  }\n}",
                      "3:3: region of 'if' must end with yield", "}"),
    "yield not last": ("kernel k(%c: bool, %n: i32) {\n  if(%c) {\n    yield()\n    %0 = neg(%n) : i32\n"
                       "  } else {\n    yield()\n  }\n}", "4:5: yield must be the last operation of its region", "%0"),
    "yield outside region": ("kernel k() {\n  yield()\n}", "2:3: yield outside a for/while/if region", "yield"),
    "yield types": ("kernel k(%c: bool, %n: i32) {\n  %0 = if(%c) : i32 {\n    yield(%c)\n  } else {\n"
                    "    yield(%n)\n  }\n}", "3:5: yield of (bool) in a region of 'if' that must yield (i32)", "yield"),
    "redefinition": (BASE.replace("%0 = add", "%x = add").replace("store(%p, %0)", "store(%p, %x)"),
                     "2:3: redefinition of value %x", "%x"),
    "not visible": ("kernel k(%c: bool, %n: i32) {\n  %0 = if(%c) : i32 {\n    %1 = neg(%n) : i32\n"
                    "    yield(%1)\n  } else {\n    yield(%1)\n  }\n}",
                    "6:11: value %1 is not visible here", "%1"),
    "result count": (BASE.replace("%0 = add(%x, %x) : f32[4]", "%0 = add(%x, %x)"),
                     "2:3: 1 result name(s) but 0 result type(s)", "%0"),
    "store has no result": (BASE.replace("store(%p, %0)", "%1 = store(%p, %0) : f32[4]"),
                            "3:24: store has 0 result(s), the text gives 1", "f32"),
    "missing attribute": (BASE.replace("add(%x, %x) : f32[4]", "splat(%n) : f32[4]"),
                          "2:8: splat: missing attribute 'shape'", "splat"),
    "bad attribute value": (BASE.replace("add(%x, %x) : f32[4]", "splat(%n) {shape=(4), x=flase} : i32[4]"),
                            "2:32: unknown attribute value 'flase' (did you mean false", "flase"),
    "unknown attribute": (BASE.replace("add(%x, %x) : f32[4]", "splat(%n) {shape=(4), x=1} : i32[4]"),
                          "2:8: splat: unknown attribute(s) ['x']", "splat"),
    "bad nan": (BASE.replace("add(%x, %x) : f32[4]", "const() {dtype=f32, value=nan(0x7ff0000000000000)} : f32"),
                "2:38: 0x7ff0000000000000 is not the bit pattern of a binary64 NaN", "0x7ff"),
    "for bounds": ("kernel k(%n: i64) {\n  for(%n, %n, %n) {\n  ^(%i: i32):\n    yield()\n  }\n}",
                   "2:7: for: lo must be an i32 scalar, got i64", "%n"),
    "for region args": ("kernel k(%n: i32) {\n  for(%n, %n, %n) {\n  ^(%i: i64):\n    yield()\n  }\n}",
                        "3:3: region of 'for' must take arguments (i32), got (i64)", "^"),
    "if condition": ("kernel k(%n: i32) {\n  if(%n) {\n    yield()\n  } else {\n    yield()\n  }\n}",
                     "2:6: if: condition must be a bool scalar, got i32", "%n"),
    "missing else": ("kernel k(%c: bool) {\n  if(%c) {\n    yield()\n  }\n}",
                     "5:1: if needs 2 regions: expected 'else', got '}'", "}"),
    "unexpected character": (BASE.replace("add(%x, %x)", "add(%x; %x)"), "2:14: unexpected character ';'", ";"),
    "unterminated": (BASE[: BASE.rindex("}")], "4:1: unexpected end of text: missing '}'", None),
    "trailing text": (BASE + "\nkernel", "5:1: unexpected 'kernel' after the end of the kernel", "kernel"),
    "missing kernel": ("func k() {}", "1:1: expected 'kernel', got 'func'", "func"),
    "bad grid": (BASE.replace("grid=1", "grid=4"), "1:53: grid rank must be 1, 2 or 3, got 4", "4"),
}


@pytest.mark.parametrize("case", sorted(ERROR_CASES))
def test_parse_errors(case):
    text, message, at = ERROR_CASES[case]
    with pytest.raises(IRParseError) as e:
        parse_function(text)
    msg = str(e.value)
    first, src, caret = msg.split("\n")
    assert first.startswith(message), msg
    line, col = map(int, re.match(r"(\d+):(\d+): ", first).groups())
    # the message quotes the offending line and puts the caret under the column it names
    assert src == "  " + text.split("\n")[line - 1]
    assert caret == "  " + " " * (col - 1) + "^"
    if at is not None:
        assert src[2 + col - 1:].startswith(at), msg


def test_parse_error_messages_are_distinct():
    messages = set()
    for text, _, _ in ERROR_CASES.values():
        with pytest.raises(IRParseError) as e:
            parse_function(text)
        messages.add(re.sub(r"^\d+:\d+: ", "", str(e.value).split("\n")[0]))
    assert len(messages) == len(ERROR_CASES)


def test_parse_error_is_an_ir_error():
    assert issubclass(IRParseError, IRError)


def test_verifier_errors_are_wrapped_with_a_position(monkeypatch):
    import eggpu.ir.parser as parser_mod

    def fail(fn):
        raise IRError(f"{fn.name}: something the parser's own checks missed")

    monkeypatch.setattr(parser_mod, "verify", fail)
    with pytest.raises(IRParseError, match=r"^1:1: k: something the parser's own checks missed\n"):
        parse_function(BASE)


# ---------------------------------------------------------------- structural equality


def _store_const(x, dt=f64, name="k"):
    b = Builder(name, [("p", pointer(dt))])
    b.effect("store", b.param("p"), b.const(x, dt))
    return b.finish()


def test_structural_equality_distinguishes():
    assert structurally_equal(_store_const(1.5), _store_const(1.5))
    assert structurally_equal(_store_const(math.nan), _store_const(math.nan))
    assert not structurally_equal(_store_const(0.0), _store_const(-0.0))
    assert not structurally_equal(_store_const(math.nan), _store_const(-math.nan))
    assert not structurally_equal(_store_const(1.5), _store_const(1.5, name="other"))
    assert not structurally_equal(_store_const(1, dt=i32), _store_const(1, dt=u32))
    assert "attributes differ" in first_difference(_store_const(2.0), _store_const(3.0))

    def sub(swap):
        b = Builder("s", [("x", scalar(i16)), ("y", scalar(i16)), ("p", pointer(i16))])
        x, y, p = b.params
        b.effect("store", p, b.op("sub", *((y, x) if swap else (x, y))))
        return b.finish()

    assert structurally_equal(sub(False), sub(False))
    assert "wired differently" in first_difference(sub(False), sub(True))
    # int 1, float 1.0 and bool True are different attribute values
    b1, b2 = Builder("c", []), Builder("c", [])
    b1.op("const", value=1, dtype=f32)
    b2.op("const", value=1.0, dtype=f32)
    assert not structurally_equal(b1.finish(), b2.finish())


def test_structural_equality_compares_regions_and_counts():
    f, g = control_flow(), control_flow()
    assert structurally_equal(f, g)
    loop = next(op for op in g.walk() if op.op == "for")
    loop.regions[0].ops.pop(0)
    assert first_difference(f, g) is not None
    g2 = control_flow()
    g2.body.ops.pop()
    assert "operations" in first_difference(f, g2)
    g3 = control_flow()
    g3.grid_rank = 2
    assert "grid" in first_difference(f, g3)


def test_names_only_compared_on_request():
    f, g = vector_add(), vector_add()
    g.params[0].name = "other"
    assert structurally_equal(f, g)
    assert not structurally_equal(f, g, names=True)


# ---------------------------------------------------------------- docs/ir.md


def _doc() -> str:
    return (ROOT / "docs" / "ir.md").read_text()


def test_doc_op_table_is_generated():
    doc = _doc()
    m = re.search(r"<!-- ops:begin -->\n(.*?)<!-- ops:end -->", doc, re.S)
    assert m, "docs/ir.md lacks the <!-- ops:begin --> / <!-- ops:end --> markers"
    assert m.group(1) == op_table_markdown(), "docs/ir.md op table is stale: run python -m eggpu.ir.printer docs/ir.md"
    assert splice_op_table(doc) == doc
    stale = doc.replace("| `add` |", "| `plus` |")
    assert splice_op_table(stale) == doc
    with pytest.raises(IRError):
        splice_op_table("no markers")


def test_op_table_lists_every_op():
    table = op_table_markdown()
    for name in OPS:
        assert f"| `{name}` |" in table
    rows = [r for r in table.splitlines() if r.startswith("| `")]
    assert len(rows) == len(OPS)
    assert all(r.count(" | ") == 6 for r in rows)  # literal '|' in cells is escaped


def test_doc_examples_round_trip():
    blocks = re.findall(r"```text\n(kernel .*?)\n```", _doc(), re.S)
    assert blocks, "docs/ir.md should hold at least one ```text kernel example"
    for text in blocks:
        assert print_function(parse_function(text), with_locs="loc(" in text) == text


# ---------------------------------------------------------------- property test


@settings(deadline=None, max_examples=150)
@given(random_programs())
def test_random_programs_round_trip(fn):
    text = print_function(fn)
    parsed = parse_function(text)
    assert print_function(parsed) == text
    diff = first_difference(fn, parsed, names=True)
    assert diff is None, diff


_PIECES = ["%0", "(", ")", "{", "}", ",", ":", "=", "-", "nan", "(0x1)", "f32", "ptr<", "[0]", "else", "yield()",
           "^(%z: i32):", 'loc("a":1:1)', '"', "0x", "1e", "1.5", "axis=1.5", "%", "\n"]


@settings(deadline=None, max_examples=200)
@given(st.sampled_from(sorted(PROGRAMS)), st.data())
def test_mutated_text_parses_or_fails_cleanly(name, data):
    """Damaged text either parses (and then round-trips) or raises IRParseError with line:col and caret."""
    text = print_function(PROGRAMS[name]())
    i = data.draw(st.integers(0, len(text) - 1))
    j = data.draw(st.integers(i, min(len(text), i + 8)))
    mutated = text[:i] + data.draw(st.sampled_from(["", *_PIECES])) + text[j:]
    try:
        fn = parse_function(mutated)
    except IRParseError as e:
        first, _src, caret = str(e).split("\n")
        assert re.match(r"\d+:\d+: \S", first) and caret.endswith("^")
    else:
        printed = print_function(fn)
        assert print_function(parse_function(printed)) == printed
