"""Every InterpreterError of the reference interpreter (continued from test_interp.py): the
message names the kernel, the argument or op, and the source location."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest
from interp_helpers import (
    atomic_kernel,
    interp_error,
    message,
    offsets_1d,
    ptr_at,
    scatter_kernel,
    splat,
    tile_reduce_kernel,
    vadd_kernel,
)

from eggpu.ir import Builder, block, bool_, f16, f32, i8, i32, pointer, scalar
from eggpu.ir.errors import InterpreterError
from eggpu.ir.interp import interpret
from eggpu.ir.ops import OPS

# ------------------------------------------------------------------ every InterpreterError


def test_error_wrong_number_of_arguments():
    fn = vadd_kernel(4)
    assert interp_error(fn, 1, np.zeros(4, np.float32)) == "vadd takes 4 argument(s) (x, y, out, n), got 1"


def test_error_pointer_param_given_a_non_array():
    fn = vadd_kernel(4)
    msg = interp_error(fn, 1, np.zeros(4, np.float32), [1.0, 2.0], np.zeros(4, np.float32), 4)
    assert "parameter 'y'" in msg and "ptr<f32>" in msg and "list" in msg and msg.startswith("vadd:")


def test_error_pointer_param_with_the_wrong_dtype_names_both_dtypes():
    fn = vadd_kernel(4)
    msg = interp_error(fn, 1, np.zeros(4, np.float32), np.zeros(4, np.float32), np.zeros(4, np.float64), 4)
    assert msg == "vadd: parameter 'out' (ptr<f32>) expects an array of f32, got an array of f64 (float64)"
    with pytest.raises(InterpreterError, match=r"parameter 'x' .*expects an array of f32, got an array of i16"):
        interpret(fn, 1, np.zeros(4, np.int16), np.zeros(4, np.float32), np.zeros(4, np.float32), 4)


def test_error_non_contiguous_array():
    fn = vadd_kernel(4)
    strided = np.zeros(8, np.float32)[::2]
    msg = interp_error(fn, 1, np.zeros(4, np.float32), strided, np.zeros(4, np.float32), 4)
    assert "parameter 'y'" in msg and "C-contiguous" in msg and "(8,)" in msg
    fortran = np.zeros((3, 2), np.float32, order="F")
    with pytest.raises(InterpreterError, match="parameter 'x' needs a C-contiguous array"):
        interpret(fn, 1, fortran, np.zeros(4, np.float32), np.zeros(4, np.float32), 4)


def test_error_scalar_param_conversions():
    fn = vadd_kernel(4)
    z = np.zeros(4, np.float32)
    assert interp_error(fn, 1, z, z, z, 2.5) == "vadd: parameter 'n' (i32) expects an integer, got float 2.5"
    msg = interp_error(fn, 1, z, z, z, np.float32(3.0))
    assert "parameter 'n' (i32) expects an integer" in msg and "float32" in msg
    msg = interp_error(fn, 1, z, z, z, 2**31)
    assert msg == "vadd: parameter 'n' (i32): value 2147483648 is out of range [-2147483648, 2147483647]"
    assert "value -2147483655 is out of range" in interp_error(fn, 1, z, z, z, -2**31 - 7)
    assert "parameter 'n' (i32) expects an integer, got str '12'" in interp_error(fn, 1, z, z, z, "12")
    msg = interp_error(fn, 1, z, z, z, np.array([3, 4]))
    assert "parameter 'n' (i32) expects a scalar, got an array of i64 (int64) with shape (2,)" in msg


def test_error_float_and_bool_scalar_params():
    b = Builder("fb", [("out", pointer(f16)), ("x", scalar(f16)), ("flag", scalar(bool_))])
    out, x, flag = b.params
    b.effect("store", out, b.op("where", flag, x, x))
    fn = b.finish()
    o = np.zeros(1, np.float16)
    msg = interp_error(fn, 1, o, 70000.0, True)
    assert "parameter 'x' (f16): value 70000.0 is out of range for f16 (max 65504.0)" in msg
    assert "parameter 'x' (f16): value 1000000 is out of range for f16" in interp_error(fn, 1, o, 10**6, True)
    assert "parameter 'flag' (bool) expects a bool, got int 2" in interp_error(fn, 1, o, 1.0, 2)
    assert "parameter 'x' (f16) expects a number, got NoneType None" in interp_error(fn, 1, o, None, True)


def test_error_bad_grid():
    fn = vadd_kernel(4)
    z = np.zeros(4, np.float32)
    for grid in [1.5, (2, "a"), (), True]:
        msg = interp_error(fn, grid, z, z, z, 4)
        assert msg == f"vadd: grid must be an int or a tuple of 1 to 3 ints, got {grid!r}"
    assert interp_error(fn, (3, -2), z, z, z, 4) == "vadd: grid dimensions must be >= 0, got (3, -2)"


def test_error_out_of_bounds_load_names_kernel_op_offset_and_size():
    fn = vadd_kernel(8)
    x = np.zeros(13, np.float32)
    y = np.zeros(20, np.float32)
    out = np.zeros(20, np.float32)
    with pytest.raises(InterpreterError) as e:
        interpret(fn, 3, x, y, out, 20)  # program 1 reads x[8..15]; x has 13 elements
    assert message(e) == ("vadd: load in program 1: out-of-bounds access: lane (5,) reads offset 13 of buffer 'x' "
                          "which has 13 element(s)")
    assert not isinstance(e.value, IndexError)


def test_error_out_of_bounds_store_and_negative_offset():
    fn = scatter_kernel(4)
    msg = interp_error(fn, 1, np.array([0, 1, 9, 2], np.int32), np.zeros(4, np.int32), np.zeros(6, np.int32), 4)
    assert msg == ("scatter: store in program 0: out-of-bounds access: lane (2,) writes offset 9 of buffer "
                   "'out' which has 6 element(s)")
    msg = interp_error(fn, 1, np.array([0, -3, 1, 2], np.int32), np.zeros(4, np.int32), np.zeros(6, np.int32), 4)
    assert "lane (1,) writes offset -3 of buffer 'out' which has 6 element(s)" in msg
    # a masked-off lane may hold any address
    out = np.zeros(6, np.int32)
    interpret(fn, 1, np.array([0, 1, 999, 2], np.int32), np.array([1, 2, 3, 4], np.int32), out, 2)
    assert out.tolist() == [1, 2, 0, 0, 0, 0]


def test_error_out_of_bounds_atomic_and_scalar_pointer():
    fn = atomic_kernel("atomic_add", 4)
    msg = interp_error(fn, 1, np.array([0, 1, 2, 7], np.int32), np.ones(4, np.int32), np.zeros(3, np.int32),
                       np.zeros(4, np.int32), 4)
    assert msg == ("atomics: atomic_add in program 0: out-of-bounds access: lane (3,) updates offset 7 of "
                   "buffer 'out' which has 3 element(s)")
    b = Builder("scal", [("p", pointer(i32)), ("k", scalar(i32))])
    p, k = b.params
    b.effect("store", b.op("addptr", p, k), b.const(1, i32))
    fn = b.finish()
    msg = interp_error(fn, 2, np.zeros(5, np.int32), 11)
    assert msg == ("scal: store in program 0: out-of-bounds access: writes offset 11 of buffer 'p' "
                   "which has 5 element(s)")


def test_error_out_of_bounds_2d_lane_and_grid_position():
    fn = tile_reduce_kernel(4, 4)
    a = np.zeros((6, 5), np.float32)
    # R=6, C=5 but colmax is too small for row block 1
    msg = interp_error(fn, (2, 2), a, np.zeros((2, 6), np.float32), np.zeros(7, np.float32), np.zeros(10, np.int32), 6, 5)
    assert msg == ("tile_reduce: store in program (1, 0): out-of-bounds access: lane (2,) writes offset 7 "
                   "of buffer 'colmax' which has 7 element(s)")


def test_error_read_only_buffer():
    fn = vadd_kernel(4)
    out = np.zeros(4, np.float32)
    out.flags.writeable = False
    msg = interp_error(fn, 1, np.zeros(4, np.float32), np.zeros(4, np.float32), out, 4)
    assert msg == "vadd: store in program 0: buffer 'out' is a read-only array"


@pytest.mark.parametrize("c", [True, False])
def test_a_scalar_where_between_different_buffers_picks_one(c):
    """Triton's test_where with scalar pointers: `tl.where(flag, a_ptr, b_ptr)` is one buffer."""
    b = Builder("pick", [("a", pointer(i32)), ("b", pointer(i32)), ("c", scalar(bool_))])
    pa, pb, cond = b.params
    offs = b.op("arange", start=0, end=2)
    picked = b.op("where", cond, pa, pb)
    b.effect("store", ptr_at(b, picked, offs), splat(b, b.const(1, i32), (2,)))
    xa, xb = np.zeros(2, np.int32), np.zeros(3, np.int32)
    interpret(b.finish(), 1, xa, xb, c)
    assert (xa.tolist(), xb.tolist()) == (([1, 1], [0, 0, 0]) if c else ([0, 0], [1, 1, 0]))


def test_a_where_between_different_buffers_lane_by_lane_keeps_each_lanes_buffer():
    """Triton allows it: each lane writes its own buffer (tests/triton_compat/test_tc_where_pointers.py
    has the kernels); a read-only one of them is still refused by name."""
    b = Builder("pick", [("a", pointer(i32)), ("b", pointer(i32))])
    pa, pb = b.params
    offs = b.op("arange", start=0, end=2)
    odd = b.op("eq", b.op("rem", offs, splat(b, b.const(2, i32), (2,))), splat(b, b.const(1, i32), (2,)))
    picked = b.op("where", odd, ptr_at(b, pa, offs), ptr_at(b, pb, offs))
    b.effect("store", picked, splat(b, b.const(1, i32), (2,)))
    fn = b.finish()
    xa, xb = np.zeros(2, np.int32), np.zeros(3, np.int32)
    interpret(fn, 1, xa, xb)
    assert (xa.tolist(), xb.tolist()) == ([0, 1], [1, 0, 0])
    xb.flags.writeable = False
    with pytest.raises(InterpreterError) as e:
        interpret(fn, 1, xa, xb)
    assert message(e) == "pick: store in program 0: buffer 'b' is a read-only array"


def test_inline_asm_is_refused_before_any_program_runs():
    """The interpreter cannot run PTX: one error naming the kernel and the feature, and no store."""
    b = Builder("asm_k", [("out", pointer(i32))])
    (out,) = b.params
    offs = offsets_1d(b, 4)
    v = b.op("inline_asm", offs, asm="mov.b32 $0, $1;", constraints="=r,r", dtype=i32, pure=True)
    b.effect("store", ptr_at(b, out, offs), v)
    dest = np.full(4, 7, np.int32)
    msg = interp_error(b.finish(), 1, dest)
    assert "asm_k: tl.inline_asm_elementwise is GPU-only: the numpy interpreter cannot run PTX" in msg
    assert dest.tolist() == [7, 7, 7, 7]


def test_error_const_out_of_range():
    b = Builder("badconst", [("p", pointer(i8))])
    (p,) = b.params
    b.effect("store", p, b.const(100, i8))
    fn = b.finish()
    fn.body.ops[0].attrs["value"] = 300  # bypasses the verifier's range check
    msg = interp_error(fn, 1, np.zeros(1, np.int8))
    assert msg == "badconst: const 300 is out of range for i8 [-128, 127]"


def test_error_messages_carry_the_source_location():
    from eggpu.ir import Loc

    b = Builder("located", [("p", pointer(i32))])
    (p,) = b.params
    b.loc = Loc("kern.py", 12, 4)
    b.effect("store", b.op("addptr", p, b.const(3, i32)), b.const(1, i32))
    fn = b.finish()
    with pytest.raises(InterpreterError, match=re.escape("located: store at kern.py:12:5 in program 0:")):
        interpret(fn, 1, np.zeros(2, np.int32))


def test_error_op_without_an_interpreter_rule(monkeypatch):
    b = Builder("negate", [("p", pointer(i32))])
    (p,) = b.params
    b.effect("store", p, b.op("neg", b.op("load", p)))
    fn = b.finish()
    monkeypatch.setitem(OPS, "neg", dataclasses.replace(OPS["neg"], reference=None))
    assert interp_error(fn, 1, np.zeros(1, np.int32)) == "negate: the interpreter has no rule for op 'neg'"


def test_error_pointer_operand_for_a_value_op():
    """An op that only makes sense on values, fed a pointer (bypassing the type rules)."""
    from eggpu.ir import Operation

    b = Builder("ptrneg", [("p", pointer(i32))])
    (p,) = b.params
    fn = b.finish()
    fn.body.ops.append(Operation("neg", (p,), {}, (p.type,)))
    assert interp_error(fn, 1, np.zeros(1, np.int32)) == "ptrneg: neg does not accept pointer operands"


def test_error_operand_used_before_definition():
    b = Builder("order", [("p", pointer(i32))])
    (p,) = b.params
    b.effect("store", p, b.op("add", b.op("load", p), b.const(1, i32)))
    fn = b.finish()
    fn.body.ops.reverse()  # the store now comes first
    msg = interp_error(fn, 1, np.zeros(1, np.int32))
    assert msg == "order: operand of store is used before it is defined"


def test_error_const_that_is_not_an_integer():
    b = Builder("fconst", [("p", pointer(i32))])
    (p,) = b.params
    b.effect("store", p, b.const(2, i32))
    fn = b.finish()
    fn.body.ops[0].attrs["value"] = 2.5  # bypasses the verifier's check
    assert interp_error(fn, 1, np.zeros(1, np.int32)) == "fconst: const 2.5 of dtype i32 is not an integer"


def test_block_params_and_pointer_block_params():
    b = Builder("blk", [("out", pointer(f32)), ("v", block(f32, 4))])
    out, v = b.params
    b.effect("store", ptr_at(b, out, b.op("arange", start=0, end=4)), b.op("mul", v, v))
    fn = b.finish()
    out = np.zeros(4, np.float32)
    interpret(fn, 1, out, np.array([1, 2, 3, 4], np.float32))
    assert out.tolist() == [1, 4, 9, 16]
    msg = interp_error(fn, 1, out, np.zeros(3, np.float32))
    assert msg == ("blk: parameter 'v' expects an array of f32 with shape (4,), "
                   "got an array of f32 (float32) with shape (3,)")
    from eggpu.ir import BlockType, PointerType

    b = Builder("pblk", [("ps", BlockType(PointerType(f32), (4,)))])
    fn = b.finish()
    msg = interp_error(fn, 1, np.zeros(4, np.float32))
    assert msg == "pblk: parameter 'ps' has the unsupported type ptr<f32>[4] (pointer blocks)"

