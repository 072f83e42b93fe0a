# ruff: noqa: F841, B007, F821
"""Every unsupported construct is a CompileError: ``file:line:col: problem``, the source line, a
caret under the column, and ``hint: ...``."""

from __future__ import annotations

import inspect
import json
import math

import numpy as np
import pytest

import eggpu
import eggpu.language as tl
from eggpu.kernel_macro.diagnostics import KernelCompileError

FILE = __file__

# ---------------------------------------------------------------- bad kernels


@eggpu.kernel
def uses_while(x_ptr: tl.Pointer[tl.f32], n: tl.i32):
    while n > 0:
        n = n - 1
    else:
        n = 3


@eggpu.kernel
def uses_print(x_ptr: tl.Pointer[tl.f32]):
    x = tl.load(x_ptr)
    print(x)


@eggpu.kernel
def uses_lambda(x_ptr: tl.Pointer[tl.f32]):
    f = lambda v: v * 2  # noqa: E731
    tl.store(x_ptr, f(tl.load(x_ptr)))


@eggpu.kernel
def uses_nested_def(x_ptr: tl.Pointer[tl.f32]):
    scale = 2.0

    def inner(v):
        return v * scale

    tl.store(x_ptr, inner(tl.load(x_ptr)))


@eggpu.kernel
def uses_list(x_ptr: tl.Pointer[tl.f32]):
    x = tl.load(x_ptr)
    vals = [x, x]


@eggpu.kernel
def uses_dict(x_ptr: tl.Pointer[tl.f32]):
    d = {"x": tl.load(x_ptr)}


@eggpu.kernel
def uses_set(x_ptr: tl.Pointer[tl.f32]):
    s = {1, 2}


@eggpu.kernel
def uses_list_comprehension(x_ptr: tl.Pointer[tl.f32]):
    xs = [tl.load(x_ptr + i) for i in range(4)]


@eggpu.kernel
def uses_generator(x_ptr: tl.Pointer[tl.f32]):
    total = sum(tl.load(x_ptr + i) for i in range(4))


@eggpu.kernel
def uses_try(x_ptr: tl.Pointer[tl.f32]):
    try:
        tl.store(x_ptr, 1.0)
    except Exception:
        pass


@eggpu.kernel
def runtime_arange(x_ptr: tl.Pointer[tl.f32], n: tl.i32):
    offs = tl.arange(0, n)


@eggpu.kernel
def runtime_zeros_shape(x_ptr: tl.Pointer[tl.f32], n: tl.i32):
    acc = tl.zeros((n,), dtype=tl.f32)


@eggpu.kernel
def runtime_list_shape(x_ptr: tl.Pointer[tl.f32], n: tl.i32):
    acc = tl.full([n], 1.0, tl.f32)


@eggpu.kernel
def calls_numpy(x_ptr: tl.Pointer[tl.f32]):
    y = np.exp(tl.load(x_ptr))


@eggpu.kernel
def calls_math(x_ptr: tl.Pointer[tl.f32]):
    y = math.exp(tl.load(x_ptr))


@eggpu.kernel
def calls_foreign(x_ptr: tl.Pointer[tl.f32]):
    y = json.dumps(tl.load(x_ptr))


def _not_language_only(v):
    return sorted(v)


@eggpu.kernel
def calls_python_helper(x_ptr: tl.Pointer[tl.f32]):
    y = _not_language_only(tl.load(x_ptr))


@eggpu.kernel
def wrong_load_keyword(x_ptr: tl.Pointer[tl.f32], BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, msk=offs < 4)


@eggpu.kernel
def float_mask(x_ptr: tl.Pointer[tl.f32], BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs.to(tl.f32)
    tl.store(x_ptr + offs, 1.0, mask=m)


@eggpu.kernel
def mismatched_shapes(x_ptr: tl.Pointer[tl.f32]):
    a = tl.load(x_ptr + tl.arange(0, 128))
    b = tl.load(x_ptr + tl.arange(0, 64))
    c = a + b


@eggpu.kernel
def unknown_attribute(x_ptr: tl.Pointer[tl.f32]):
    x = tl.exps(tl.load(x_ptr))


COUNTER = 0


@eggpu.kernel
def uses_global(x_ptr: tl.Pointer[tl.f32]):
    global COUNTER
    COUNTER = 1


@eggpu.kernel
def uses_with(x_ptr: tl.Pointer[tl.f32]):
    with open("x") as fh:
        tl.store(x_ptr, 1.0)


@eggpu.kernel
def uses_yield(x_ptr: tl.Pointer[tl.f32]):
    yield tl.load(x_ptr)


@eggpu.kernel
def assigns_attribute(x_ptr: tl.Pointer[tl.f32]):
    x_ptr.data = 1


@eggpu.kernel
def stores_subscript(x_ptr: tl.Pointer[tl.f32]):
    x = tl.load(x_ptr + tl.arange(0, 4))
    x[0] = 1


@eggpu.kernel
def uses_break(x_ptr: tl.Pointer[tl.f32], n: tl.i32):
    for i in range(n):
        break


@eggpu.kernel
def uses_continue(x_ptr: tl.Pointer[tl.f32], n: tl.i32):
    for i in range(n):
        continue


@eggpu.kernel
def returns_value(x_ptr: tl.Pointer[tl.f32]):
    return tl.load(x_ptr)


@eggpu.kernel
def one_branch(x_ptr: tl.Pointer[tl.f32], n: tl.i32):
    if n > 0:
        y = 1.0
    tl.store(x_ptr, y)


@eggpu.kernel
def loop_type_change(x_ptr: tl.Pointer[tl.f32], n: tl.i32):
    acc = tl.zeros([4], dtype=tl.f16)
    for i in range(n):
        acc += tl.load(x_ptr + tl.arange(0, 4))
    tl.store(x_ptr + tl.arange(0, 4), acc)


@eggpu.kernel
def loop_variable_after_loop(x_ptr: tl.Pointer[tl.f32], n: tl.i32):
    for i in range(n):
        t = i
    tl.store(x_ptr, t)


@eggpu.kernel
def return_in_loop(x_ptr: tl.Pointer[tl.f32], n: tl.i32):
    for i in range(n):
        if i > 3:
            return


@eggpu.kernel
def block_condition(x_ptr: tl.Pointer[tl.f32]):
    x = tl.load(x_ptr + tl.arange(0, 4))
    if x > 0:
        tl.store(x_ptr, 1.0)


@eggpu.kernel
def literal_does_not_fit(x_ptr: tl.Pointer[tl.i8]):
    x = tl.load(x_ptr)
    y = x + 300


@eggpu.kernel
def unknown_name(x_ptr: tl.Pointer[tl.f32]):
    x = tl.load(x_pt)


@eggpu.kernel
def matmul_operator(x_ptr: tl.Pointer[tl.f32]):
    a = tl.load(x_ptr + tl.arange(0, 4)[:, None] + tl.arange(0, 4)[None, :])
    b = a @ a


@eggpu.kernel
def static_range_runtime(x_ptr: tl.Pointer[tl.f32], n: tl.i32):
    for i in tl.static_range(n):
        tl.store(x_ptr + i, 1.0)


@eggpu.kernel
def block_index(x_ptr: tl.Pointer[tl.f32]):
    x = tl.load(x_ptr + tl.arange(0, 4))
    y = x[1]


@eggpu.kernel
def static_assert_fails(x_ptr: tl.Pointer[tl.f32], BLOCK: tl.constexpr):
    tl.static_assert(BLOCK % 32 == 0, "BLOCK must be a multiple of 32")


def _returns_sometimes(v):
    if v > 0.0:
        return v


@eggpu.kernel
def partial_return(x_ptr: tl.Pointer[tl.f32]):
    tl.store(x_ptr, _returns_sometimes(tl.load(x_ptr)))


@eggpu.kernel
def branch_types_differ(x_ptr: tl.Pointer[tl.f32], n: tl.i32):
    y = tl.load(x_ptr)
    if n > 0:
        y = n
    tl.store(x_ptr, y)


@eggpu.kernel
def branch_shapes_differ(x_ptr: tl.Pointer[tl.f32], n: tl.i32):
    offs = tl.arange(0, 8)
    y = tl.load(x_ptr + offs)
    if n > 3:
        y = tl.load(x_ptr)
    tl.store(x_ptr + offs, y)


# ---------------------------------------------------------------- checking helper


def check(fn, line_marker: str, problem: str, hint: str | None, *, col_marker: str | None = None,
          ctor=(), nth: int = 0) -> KernelCompileError:
    """Lower ``fn`` and assert the diagnostic's header, source line, caret and hint."""
    with pytest.raises(eggpu.CompileError) as ei:
        fn.Kernel(*ctor).ir()
    err = ei.value
    assert isinstance(err, KernelCompileError)
    lines, first = inspect.getsourcelines(fn)
    idx = [i for i, ln in enumerate(lines) if line_marker in ln][nth]
    text = lines[idx].rstrip("\n")
    col = text.index(col_marker if col_marker is not None else line_marker)
    msg = str(err).splitlines()
    assert msg[0] == f"{FILE}:{first + idx}:{col + 1}: {problem}"
    assert msg[1] == text
    assert msg[2] == " " * col + "^"
    if hint is None:
        assert len(msg) == 3 or not msg[3].startswith("hint:")
    else:
        assert msg[3] == f"hint: {hint}"
    assert err.loc.line == first + idx and err.loc.col == col and err.problem == problem
    return err


NESTED = ("nested function and class definitions are not supported in a kernel",
          "define the helper at module level (optionally marked @eggpu.jit) and call it; calls are inlined")
COMPREHENSION = ("comprehensions are not supported in a kernel",
                 "unroll with `for i in tl.static_range(...)`, or build blocks with tl.arange")


def test_while():
    # while loops are supported (tests/triton_compat/test_tc_while.py); while ... else is not
    check(uses_while, "n = 3", "while ... else is not supported in a kernel", "move the else body after the loop")


def test_print():
    check(uses_print, "print(x)", "print() is not supported in a kernel",
          "kernels have no stdout: store the values you want to see into an output buffer with tl.store and "
          "inspect it after .interpret(...)")


def test_lambda():
    check(uses_lambda, "lambda v", "lambda is not supported in a kernel",
          "define a helper function at module level (optionally marked @eggpu.jit) and call it")


def test_nested_def_closure():
    check(uses_nested_def, "def inner", *NESTED)


def test_list_of_blocks():
    check(uses_list, "vals = [x, x]", "lists of runtime values are not supported in a kernel",
          "a list literal may only hold compile-time values (a shape such as [BLOCK_M, BLOCK_N]); use separate "
          "variables or a tuple for blocks", col_marker="[x, x]")


def test_dict_literal():
    check(uses_dict, 'd = {"x"', "dict literals are not supported in a kernel",
          "use separate variables (or a tuple) instead", col_marker="{")


def test_set_literal():
    check(uses_set, "s = {1, 2}", "set literals are not supported in a kernel",
          "use separate variables (or a tuple) instead", col_marker="{")


def test_list_comprehension():
    check(uses_list_comprehension, "xs = [", *COMPREHENSION, col_marker="[")


def test_generator_expression():
    check(uses_generator, "total = sum(", *COMPREHENSION, col_marker="(tl.load")


def test_try():
    check(uses_try, "try:", "try statements are not supported in a kernel",
          "kernels cannot catch exceptions: guard with masks or if statements, and check compile-time conditions "
          "with tl.static_assert")


def test_runtime_arange_bound():
    check(runtime_arange, "tl.arange(0, n)", "tl.arange bounds must be compile-time ints; end is a scalar of "
          "type i32", "block shapes are static: make the size a tl.constexpr parameter (BLOCK: tl.constexpr), use "
          "tl.arange(0, BLOCK) and mask with offs < n", col_marker="n)")


def test_runtime_shape():
    check(runtime_zeros_shape, "tl.zeros((n,)", "a shape must be a list of compile-time ints, got a tuple of 1",
          "use tl.constexpr values, e.g. [BLOCK_M, BLOCK_N] with BLOCK_M: tl.constexpr", col_marker="(n,)")
    check(runtime_list_shape, "tl.full([n]", "lists of runtime values are not supported in a kernel",
          "a list literal may only hold compile-time values (a shape such as [BLOCK_M, BLOCK_N]); use separate "
          "variables or a tuple for blocks", col_marker="[n]")


def test_calling_numpy():
    check(calls_numpy, "np.exp(", "cannot call np.exp() inside a kernel: numpy.exp is not a kernel function",
          "use tl.exp(...) from the kernel language")


def test_calling_math_on_a_block():
    check(calls_math, "math.exp(", "cannot call math.exp() inside a kernel: math.exp is not a kernel function",
          "use tl.exp(...) from the kernel language")


def test_calling_a_foreign_python_function():
    check(calls_foreign, "json.dumps(", "cannot call json.dumps() inside a kernel: json.dumps is a plain function "
          "of another module",
          "mark the helper @eggpu.jit (its body must use only the language) or define it in the kernel's module; "
          "compute anything else outside the kernel and pass it as an argument")


def test_calling_a_helper_that_is_not_language_only():
    with pytest.raises(KernelCompileError) as ei:
        calls_python_helper.Kernel().ir()
    msg = str(ei.value).splitlines()
    lines, first = inspect.getsourcelines(_not_language_only)
    assert msg[0] == f"{FILE}:{first + 1}:12: the Python builtin sorted() is not supported in a kernel"
    assert msg[1] == "    return sorted(v)" and msg[2] == " " * 11 + "^"
    assert msg[3] == "hint: kernels use the language (eggpu.language) and helper functions only"
    klines, kfirst = inspect.getsourcelines(calls_python_helper)
    call_line = kfirst + next(i for i, ln in enumerate(klines) if "_not_language_only(" in ln)
    assert msg[4] == f"note: in _not_language_only(), inlined from calls_python_helper at {FILE}:{call_line}:9"


def test_wrong_load_keyword():
    check(wrong_load_keyword, "msk=", "tl.load() got an unexpected keyword argument 'msk'",
          "did you mean mask=? the signature is tl.load(ptr, mask=None, other=None, boundary_check=(), "
          "padding_option='', cache_modifier='', eviction_policy='', volatile=False)", ctor=(16,))


def test_mask_of_the_wrong_dtype():
    check(float_mask, "mask=m", "the mask of tl.store must be a bool block, got f32[16]",
          "build a mask with a comparison, e.g. mask = offs < n (or x != 0 from numbers)", ctor=(16,))


def test_mismatched_block_shapes():
    check(mismatched_shapes, "c = a + b", "cannot broadcast shapes [128] and [64]",
          "blocks combined in one operation need equal shapes or size-1 dims (x[:, None] adds one); check the "
          "tl.arange bounds of both operands", col_marker="a + b")


def test_unknown_language_attribute():
    check(unknown_attribute, "tl.exps", "tl.exps is not part of the kernel language", "did you mean tl.exp?",
          col_marker="exps")


def test_global():
    check(uses_global, "global COUNTER", "global statements are not supported in a kernel",
          "kernels cannot assign module variables: read module-level constants directly and write results with "
          "tl.store")


def test_nonlocal_in_a_kernel_defined_inside_a_function():
    count = 0

    @eggpu.kernel
    def uses_nonlocal(x_ptr: tl.Pointer[tl.f32]):
        nonlocal count
        count = 1

    check(uses_nonlocal, "nonlocal count", "nonlocal statements are not supported in a kernel",
          "kernels cannot assign enclosing variables: write results with tl.store")


def test_with():
    check(uses_with, "with open", "with statements are not supported in a kernel",
          "write the body without the context manager")


def test_yield():
    check(uses_yield, "yield tl.load", "yield is not supported in a kernel",
          "kernels do not produce values: write results with tl.store(ptr + offs, value)")


def test_attribute_assignment():
    check(assigns_attribute, "x_ptr.data = 1", "assigning to an attribute (x_ptr.data = ...) is not supported",
          "kernel values are immutable: assign a new variable, and write results with tl.store(ptr + offs, value)")


def test_subscript_store():
    check(stores_subscript, "x[0] = 1", "assigning to an element of a block (x[...] = ...) is not supported",
          "blocks are immutable values: write memory with tl.store(ptr + offs, value, mask=...) or build a new "
          "block with tl.where")


def test_break():
    check(uses_break, "        break", "break is not supported in a kernel",
          "loops run a fixed number of iterations: compute the bound before the loop, or guard the rest of the "
          "body with an if or a mask", col_marker="break")


def test_continue():
    check(uses_continue, "        continue", "continue is not supported in a kernel",
          "wrap the rest of the loop body in an if (or use a mask)", col_marker="continue")


def test_return_value():
    check(returns_value, "return tl.load", "a kernel cannot return a value",
          "write results through a pointer: tl.store(out_ptr + offs, value, mask=mask)")


def test_variable_defined_in_one_branch():
    lines, first = inspect.getsourcelines(one_branch)
    if_line = first + next(i for i, ln in enumerate(lines) if "if n > 0" in ln)
    check(one_branch, "tl.store(x_ptr, y)", f"y is not defined on every path: it is assigned only in the then "
          f"branch of the if at line {if_line}", "assign y before the if (or in both branches)", col_marker="y)")


def test_loop_carried_type_change():
    check(loop_type_change, "acc += tl.load", "loop-carried variable acc has type f16[4] before the loop but "
          "f32[4] after an iteration", "give acc the loop's type before the loop, e.g. acc = tl.zeros([4], "
          "dtype=tl.f32), or convert inside the loop with .to(tl.f16)")


def test_loop_local_used_after_the_loop():
    lines, first = inspect.getsourcelines(loop_variable_after_loop)
    for_line = first + next(i for i, ln in enumerate(lines) if "for i in" in ln)
    check(loop_variable_after_loop, "tl.store(x_ptr, t)", f"t is assigned inside the for loop at line {for_line} "
          f"and is not available after it", "assign t before the loop so that it becomes a loop-carried value",
          col_marker="t)")


def test_return_inside_a_loop():
    check(return_in_loop, "            return", "return inside a loop is not supported",
          "loops run a fixed number of iterations: guard the rest of the body with an if (or a mask), or compute "
          "the loop bound before the loop", col_marker="return")


def test_if_on_a_block():
    check(block_condition, "if x > 0", "the condition of an if statement must be a scalar, got a block (bool[4])",
          "per-lane conditions are written with tl.where(mask, a, b) or as the mask of tl.load/tl.store; use "
          "tl.sum/tl.max to reduce a block to a scalar", col_marker="x > 0")


def test_literal_that_does_not_fit():
    check(literal_does_not_fit, "x + 300", "the literal 300 does not fit in i8 (range -128..127)",
          "convert the block to a wider dtype first, e.g. x.to(tl.i64)", col_marker="x + 300")


def test_unknown_name():
    check(unknown_name, "x_pt)", "name 'x_pt' is not defined", "did you mean x_ptr?", col_marker="x_pt)")


def test_matmul_operator():
    check(matmul_operator, "a @ a", "the @ operator is not supported", "use tl.dot(a, b) for matrix products")


def test_static_range_with_runtime_bounds():
    check(static_range_runtime, "tl.static_range(n)", "tl.static_range bounds must be compile-time ints; end is a "
          "scalar of type i32", "use range(...) for a loop with runtime bounds")


def test_indexing_a_block():
    check(block_index, "x[1]", "indexing a block with x[i] is not supported",
          "blocks cannot be indexed: use x[:, None] / x[None, :] to add axes, tl.where to select lanes, "
          "tl.sum/tl.max to reduce, or tl.load(ptr + i) to read one element", col_marker="1]")


def test_static_assert():
    check(static_assert_fails, "tl.static_assert", "static assertion failed: BLOCK must be a multiple of 32", None,
          ctor=(48,))
    static_assert_fails.Kernel(64).ir()  # passes


def test_language_functions_outside_a_kernel():
    with pytest.raises(eggpu.KernelError) as ei:
        tl.program_id(0)
    assert str(ei.value).startswith(
        "tl.program_id can only be used inside a @kernel function; launch it with "
        "GeluForward[tl.f32](1024).interpret(grid, ...) or eggpu.compile(...)")
    with pytest.raises(eggpu.KernelError, match=r"^tl\.load can only be used inside a @kernel function"):
        tl.load(None)
    with pytest.raises(eggpu.KernelError, match=r"^tl\.exp can only be used"):
        tl.exp(1.0)


def test_helper_without_a_return_on_every_path():
    check(partial_return, "_returns_sometimes(tl.load", "_returns_sometimes() does not return a value on every "
          "path", "return a value in both branches of the if, or at the end of the function")


def test_branches_assign_different_types():
    check(branch_types_differ, "if n > 0", "y has type i32 in the then branch but f32 in the else branch",
          "convert one side (e.g. y.to(tl.f32)) so both branches produce one type")


def test_branches_assign_different_shapes():
    # found by the frontend fuzzer: the hint suggested a .to() that cannot make a scalar a block
    check(branch_shapes_differ, "if n > 3", "y has type f32 in the then branch but f32[8] in the else branch",
          "give both branches one shape (e.g. y = tl.broadcast_to(y, [8]) in the branch where it is a scalar)")


def test_compile_errors_pickle():
    import pickle

    with pytest.raises(KernelCompileError) as ei:
        calls_python_helper.Kernel().ir()
    back = pickle.loads(pickle.dumps(ei.value))
    assert str(back) == str(ei.value) and back.loc == ei.value.loc and back.notes == ei.value.notes


def test_load_other_without_mask_is_an_error() -> None:
    import eggpu
    import eggpu.language as tl

    @eggpu.kernel
    def other_no_mask(x_ptr: tl.Pointer[tl.f32], BLOCK: tl.constexpr):
        x = tl.load(x_ptr + tl.arange(0, BLOCK), other=5.0)
        tl.store(x_ptr + tl.arange(0, BLOCK), x)

    with pytest.raises(eggpu.CompileError, match=r"tl.load got other= without mask=") as e:
        other_no_mask.Kernel(4).ir()
    assert "hint: pass mask=... as well, or drop other=" in str(e.value)


def test_float_literal_loop_variable_becoming_int_names_the_change() -> None:
    import eggpu
    import eggpu.language as tl

    @eggpu.kernel
    def float_then_int(o_ptr: tl.Pointer[tl.i32], n: tl.i32):
        acc = 0.0
        for i in range(n):
            acc = i
        tl.store(o_ptr, acc)

    with pytest.raises(eggpu.CompileError, match=r"acc starts as the float literal 0\.0 before the loop but becomes i32 in it") as e:
        float_then_int.Kernel().ir()
    assert "hint: start it with an integer literal" in str(e.value)
