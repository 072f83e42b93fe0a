"""The language surface: dtypes, categories, Pointer/constexpr annotations, non-string annotations,
IR locations, and the outside-kernel behaviour of the ``tl`` functions."""

import inspect
from typing import TypeVar

import numpy as np
import pytest

import eggpu
import eggpu.ir as ir
import eggpu.language as tl
from eggpu.kernel_macro import language as km_language

D = TypeVar("D", bound=tl.Float)


def test_dtypes_are_the_ir_dtypes():
    assert tl.f32 is ir.f32 and tl.bf16 is ir.bf16 and tl.bool is ir.bool_
    names = ["bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f16", "bf16", "f32", "f64"]
    assert [getattr(tl, n) for n in names] == list(ir.ALL_DTYPES)
    assert set(tl.__all__) == set(km_language.__all__)


def test_categories():
    assert tl.Float.DTYPES == (tl.f16, tl.bf16, tl.f32, tl.f64)
    assert tl.Int.DTYPES == (tl.i8, tl.i16, tl.i32, tl.i64, tl.u8, tl.u16, tl.u32, tl.u64)
    assert tl.Num.DTYPES == tl.Int.DTYPES + tl.Float.DTYPES and tl.Bool.DTYPES == (tl.bool,)
    assert len(tl.Dtype.DTYPES) == 13
    assert issubclass(tl.Int, tl.Num) and issubclass(tl.Float, tl.Num) and issubclass(tl.Bool, tl.Dtype)
    assert tl.Float.contains(tl.bf16) and not tl.Float.contains(tl.i32)
    assert D.__bound__ is tl.Float
    with pytest.raises(TypeError, match="dtype category"):
        tl.Float()


def test_pointer_and_constexpr_annotations():
    assert str(tl.Pointer[tl.f32]) == "Pointer[f32]" and repr(tl.Pointer[tl.f32]) == "Pointer[f32]"
    assert str(tl.Pointer[D]) == "Pointer[D]"
    assert tl.Pointer[tl.f32] == tl.Pointer[tl.f32] and hash(tl.Pointer[tl.f32]) == hash(tl.Pointer[tl.f32])
    assert tl.Pointer[tl.f32] != tl.Pointer[tl.f16]
    assert tl.Pointer[tl.f16].element_ty is tl.f16
    with pytest.raises(TypeError, match="tl.Pointer"):
        tl.Pointer[3]
    with pytest.raises(TypeError):
        tl.Pointer()
    assert tl.constexpr(5) == 5


@eggpu.kernel
def plain_annotations(x_ptr: tl.Pointer[D], y_ptr: tl.Pointer[tl.i64], n: tl.i32, BLOCK: tl.constexpr):
    # this module does not use `from __future__ import annotations`
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, (x * 2).to(tl.i64), mask=mask)


def test_non_string_annotations_and_locations():
    k = plain_annotations.Kernel[tl.f64](8)
    x = np.arange(5, dtype=np.float64)
    y = np.zeros(5, np.int64)
    k.interpret(1, x, y, 5)
    assert list(y) == [0, 2, 4, 6, 8]
    fn = k.ir()
    lines, first = inspect.getsourcelines(plain_annotations)
    store_line = first + next(i for i, ln in enumerate(lines) if "tl.store(" in ln)
    store = next(op for op in fn.walk() if op.op == "store")
    assert store.loc == ir.Loc(__file__, store_line, 4)
    load = next(op for op in fn.walk() if op.op == "load")
    assert load.loc.line == store_line - 1
    assert all(op.loc is not None and op.loc.file == __file__ for op in fn.walk())


def test_every_language_function_refuses_plain_python_calls():
    for name in tl.__all__:
        fn = getattr(tl, name)
        if not hasattr(fn, "__eggpu_builtin__"):
            continue
        params = inspect.signature(fn).parameters
        args = [None] * sum(1 for p in params.values() if p.default is p.empty and p.kind != p.VAR_POSITIONAL)
        with pytest.raises(eggpu.KernelError, match=rf"^tl\.{name} can only be used inside a @kernel function"):
            fn(*args)


@pytest.mark.parametrize(("name", "params", "doc_end"), [
    ("tan", ["x"], "Needs a float operand (convert ints with ``x.to(tl.f32)``)."),
    ("popc", ["x"], "as i32 (Triton's result dtype). Needs an integer operand."),
    ("atan2", ["x", "y"], "Float operands."),
    ("fma", ["x", "y", "z"], "rounded once (floats)."),
])
def test_math_table_stubs_look_hand_written(name, params, doc_end):
    """A row of the math-function table is a function named ``name`` with exactly its operands (so
    help() and the frontend's binding see them; a wrong count is Python's TypeError), its docstring
    plus its kind's sentence, found by the frontend and in tl.extra.libdevice."""
    from eggpu.kernel_macro.builtins import SIGNATURES

    fn = getattr(km_language, name)  # (tl.popc is only tl.extra.cuda.libdevice.popc)
    assert (fn.__name__, fn.__qualname__, fn.__module__) == (name, name, km_language.__name__)
    assert fn.__eggpu_builtin__ == name and km_language.BUILTIN_FUNCTIONS[name] is fn
    assert list(inspect.signature(fn).parameters) == params
    assert SIGNATURES[name].text == f"tl.{name}({', '.join(params)})"
    assert fn.__doc__.endswith(doc_end)
    assert getattr(tl.extra.cuda.libdevice, name) is fn
    with pytest.raises(TypeError, match=rf"{name}\(\) takes {len(params)} positional argument"):
        fn(*range(len(params) + 1))


def test_a_declared_function_checks_its_arguments_before_the_outside_error():
    """@_builtin owns a declaration's body: Python's argument check first, then the located error;
    the declaration's own function (its signature and docstring) stays reachable as __wrapped__."""
    with pytest.raises(TypeError, match=r"squeeze\(\) missing 1 required positional argument: 'dim'"):
        tl.squeeze(1.0)
    with pytest.raises(TypeError, match=r"load\(\) got an unexpected keyword argument 'masks'"):
        tl.load(None, masks=None)
    with pytest.raises(eggpu.KernelError, match=r"^tl\.squeeze can only be used inside a @kernel function"):
        tl.squeeze(1.0, 0)
    for name, fn in km_language.BUILTIN_FUNCTIONS.items():
        assert fn.__wrapped__.__name__ == name and fn.__doc__ == fn.__wrapped__.__doc__ and fn.__doc__, name
        assert fn.__wrapped__(*[None] * sum(1 for p in inspect.signature(fn).parameters.values()
                                            if p.default is p.empty and p.kind != p.VAR_POSITIONAL)) is None, name


def test_math_table_marks_exactly_the_transcendental_rows():
    """_FLOAT_T/_PLAIN_T rows are listed in TRANSCENDENTAL_STUBS in table order; others are not."""
    stubs = km_language.TRANSCENDENTAL_STUBS
    assert stubs[:4] == ["exp", "exp2", "log", "log2"] and stubs[-3:] == ["atan2", "pow", "hypot"]
    assert "sqrt" not in stubs and "popc" not in stubs and "fmod" not in stubs
    assert len(stubs) == len(set(stubs))
