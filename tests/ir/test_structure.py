"""One structure rule for for/while/if (eggpu.ir.structure), read by the parser and the verifier."""

from __future__ import annotations

import pytest

from eggpu.ir import BlockType
from eggpu.ir.dtypes import bool_, f32, i32, i64
from eggpu.ir.errors import IRError
from eggpu.ir.parser import parse_function
from eggpu.ir.structure import RegionShape, StructureError, control_regions
from eggpu.ir.verifier import verify

I32, F32, BOOL = BlockType(i32, ()), BlockType(f32, (4,)), BlockType(bool_, ())


def test_region_shapes_of_each_control_op() -> None:
    assert control_regions("for", [I32, I32, I32, F32], [F32]) == (RegionShape((I32, F32), (F32,)),)
    assert control_regions("while", [F32, I32], [F32, I32]) == (RegionShape((F32, I32), (BOOL,)),
                                                               RegionShape((F32, I32), (F32, I32)))
    assert control_regions("if", [BOOL], [F32]) == (RegionShape((), (F32,)), RegionShape((), (F32,)))


@pytest.mark.parametrize("op, operands, results, message, operand, on_results", [
    ("for", [I32, BlockType(i64, ()), I32], [], "for: hi must be an i32 scalar, got i64", 1, False),
    ("for", [I32, I32], [], "for: needs lo, hi, step operands, got 2 operand(s)", None, False),
    ("for", [I32, I32, I32, F32], [I32], "for: result types (i32) must match the carried values (f32[4])",
     None, True),
    ("while", [I32], [], "while: result types () must match the carried values (i32)", None, True),
    ("if", [I32], [], "if: condition must be a bool scalar, got i32", 0, False),
    ("if", [BOOL, BOOL], [], "if: takes one condition operand, got 2", None, False),
    ("add", [I32, I32], [I32], "add: only for/while/if own regions", None, False),
])
def test_structure_errors_say_what_and_where(op, operands, results, message, operand, on_results) -> None:
    with pytest.raises(StructureError) as e:
        control_regions(op, operands, results)
    assert str(e.value) == message and e.value.operand == operand and e.value.on_results == on_results


LOOP = """kernel k(%n: i32, %x: f32) {
  %0 = for(%n, %n, %n, %x) : f32 {
  ^(%i: i32, %a: f32):
    yield(%a)
  }
}"""


def test_parser_and_verifier_apply_the_same_rule() -> None:
    fn = parse_function(LOOP)
    verify(fn)
    body = fn.body.ops[0].regions[0]
    body.args[1].type = BlockType(i64, ())  # the region now takes (i32, i64): the verifier objects
    with pytest.raises(IRError, match=r"k in for: region 0 arguments \(i32, i64\) must be \(i32, f32\)"):
        verify(fn)
    bad_text = LOOP.replace("for(%n, %n, %n, %x) : f32", "for(%n, %n, %n, %x) : i32")
    with pytest.raises(IRError, match=r"2:30: for: result types \(i32\) must match the carried values \(f32\)"):
        parse_function(bad_text)
