"""The egglog schema is generated from the op table and loads in egglog."""

from __future__ import annotations

import math

import pytest

from eggpu.ir import ALL_DTYPES, OPS, BlockType, f32, i32
from eggpu.ir.types import PointerType
from eggpu.optimizer import schema


def test_schema_text_loads_in_egglog():
    from egglog.bindings import EGraph

    eg = EGraph()
    eg.run_program(*eg.parse_program(schema.schema_text(), filename="<schema>"))


def test_schema_with_costs_loads_and_keeps_version():
    from egglog.bindings import EGraph

    text = schema.schema_text({"Div": 50, "Add": 1})
    assert "(constructor Div (DT Term Term) Term :cost 50)" in text
    eg = EGraph()
    eg.run_program(*eg.parse_program(text))
    assert schema.SCHEMA_VERSION == __import__("hashlib").sha256(schema.schema_text().encode()).hexdigest()[:16]


def test_every_pure_op_has_a_constructor_and_no_constructor_lacks_an_op():
    pure = {name for name, o in OPS.items() if o.is_pure}
    assert set(schema.OP_TO_CONSTRUCTOR) == pure
    for name, info in schema.CONSTRUCTORS.items():
        if info.op is None:
            assert name in ("Opaque", "OpaquePtr")
        else:
            assert OPS[info.op].is_pure
            assert name in schema.OP_TO_CONSTRUCTOR[info.op]
    assert not any(OPS[n].is_pure for n in ("load", "store", "atomic_add", "for", "if", "yield"))


def test_constructor_names_and_arities():
    c = schema.CONSTRUCTORS
    assert c["ReduceSum"].arg_sorts == ("DT", "i64", "Term")
    assert c["ProgramId"].arg_sorts == ("DT", "i64")
    assert c["Cast"].arg_sorts == ("DT", "DT", "Term")
    assert c["Splat"].arg_sorts == ("DT", "String", "Term")
    assert c["Dot"].arg_sorts == ("DT", "String", "Term", "Term", "Term")  # precision, a, b, acc
    assert c["Dot2"].arg_sorts == ("DT", "String", "Term", "Term")
    assert c["Addptr"].arg_sorts == ("DT", "DT", "Term", "Term")
    assert c["Where"].dtypes == ("operand1",)
    assert c["Const"].arg_sorts == ("DT", "i64") and c["ConstF"].arg_sorts == ("DT", "i64")
    for name, info in c.items():
        if info.op is not None and info.op not in ("const", "dot", "libdevice"):
            assert name == schema.pascal(info.op)
    # libdevice calls: one constructor per operand count, the symbol a String attribute
    assert c["Libdevice1"].arg_sorts == ("DT", "String", "Term")
    assert c["Libdevice"].arg_sorts == ("DT", "String", "Term", "Term", "Term", "Term")


def test_dot_precision_is_always_in_the_term():
    """An absent precision is encoded as its default, so a TF32 dot never shares a term with an exact one."""
    t = BlockType(f32, (16, 16))
    assert schema.term_head("dot", [t, t], t, {}) == ("Dot2", ["(F32)", '"ieee"'])
    assert schema.term_head("dot", [t, t], t, {"precision": "tf32"}) == ("Dot2", ["(F32)", '"tf32"'])
    assert schema.decode_attr("Name", '"tf32"') == "tf32"


def test_every_optional_attribute_of_a_pure_op_has_a_default():
    optional = {a for o in OPS.values() for a in o.optional_attrs if o.is_pure}
    assert set(schema.ATTR_DEFAULTS) == optional - schema.UNENCODED_ATTRS
    assert schema.UNENCODED_ATTRS <= optional  # no stale entry


def test_a_kernel_with_an_unencoded_attribute_is_returned_unoptimized():
    from eggpu.ir import Builder, f32, i64, scalar
    from eggpu.optimizer import optimize

    b = Builder("k", [("a", scalar(i64))])
    p = b.op("int_to_ptr", b.param("a"), dtype=f32, const=1)
    b.op("load", p)
    res = optimize(b.finish())
    assert res.fell_back and "int_to_ptr const (a conversion to a const pointer)" in res.reason


def test_dtype_constructors_roundtrip_and_family_facts():
    assert schema.DTYPE_CONSTRUCTORS[f32] == "F32"
    assert len(schema.DTYPE_CONSTRUCTORS) == len(ALL_DTYPES) == 13
    for d, name in schema.DTYPE_CONSTRUCTORS.items():
        assert schema.CONSTRUCTOR_DTYPES[name] == d
    text = schema.schema_text()
    assert "(IsSigned (I32))" in text and "(IsUnsigned (I32))" not in text
    assert "(Width (BF16) 16)" in text and "(IsFloat (BF16))" in text
    assert "(IsIntOrBool (Bool))" in text and "(IsNum (Bool))" not in text


@pytest.mark.parametrize("v", [0.0, -0.0, 1.0, -2.5, math.inf, -math.inf, 5e-324, 1.7976931348623157e308])
def test_float_bits_roundtrip(v):
    b = schema.float_bits(v)
    assert -(1 << 63) <= b < (1 << 63)
    assert schema.bits_float(b) == v and math.copysign(1, schema.bits_float(b)) == math.copysign(1, v)


def test_float_bits_keeps_negative_zero_and_nan_distinct():
    assert schema.float_bits(-0.0) != schema.float_bits(0.0)
    assert math.isnan(schema.bits_float(schema.float_bits(math.nan)))
    assert schema.float_bits(1.0) == 4607182418800017408


def test_const_payloads():
    from eggpu.ir import bool_, f16, u64

    assert schema.const_payload(True, bool_) == ("Const", 1)
    assert schema.const_payload(2**64 - 1, u64) == ("Const", -1)
    assert schema.const_value("Const", -1, u64) == 2**64 - 1
    ctor, bits = schema.const_payload(0.1, f16)  # rounded to f16 first
    assert ctor == "ConstF" and schema.bits_float(bits) == float(__import__("numpy").float16(0.1))
    with pytest.raises(Exception, match="out of range"):
        schema.const_payload(300, __import__("eggpu.ir", fromlist=["i8"]).i8)


def test_term_head_follows_the_contract():
    from eggpu.ir import i64

    assert schema.term_head("splat", [BlockType(f32)], BlockType(f32, (128,)), {"shape": (128,)}) == \
        ("Splat", ["(F32)", '"128"'])
    assert schema.term_head("lt", [BlockType(i32, (4,))] * 2, None, {}) == ("Lt", ["(I32)"])
    ptr = BlockType(PointerType(f32), (4,))
    assert schema.term_head("addptr", [ptr, BlockType(i64, (4,))], ptr, {}) == ("Addptr", ["(F32)", "(I64)"])
    assert schema.term_head("cast", [BlockType(i32)], BlockType(f32), {"dtype": f32}) == ("Cast", ["(I32)", "(F32)"])
    assert schema.term_head("program_id", [], BlockType(i32), {"axis": 0}) == ("ProgramId", ["(I32)", "0"])
    assert schema.term_head("const", [], BlockType(f32), {"value": -0.0, "dtype": f32}) == \
        ("ConstF", ["(F32)", str(schema.float_bits(-0.0))])
    assert schema.term_head("trans", [BlockType(f32, (2, 3))], None, {"perm": (1, 0)}) == ("Trans", ["(F32)", '"1,0"'])


def test_docs_constructor_table_matches_the_schema():
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "rules.md").read_text()
    begin = doc.index("<!-- constructors-table:begin")
    begin = doc.index("\n", begin) + 1
    end = doc.index("<!-- constructors-table:end -->")
    assert doc[begin:end] == schema.constructors_markdown(), "regenerate with schema.constructors_markdown()"
