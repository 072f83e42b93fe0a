"""An unexpected exception inside the frontend (a bug in eggpu) is one located InternalCompilerError.

Failures are injected into the frontend's semantic layer; the error must name the kernel and the
exception, point at the innermost kernel statement with a caret, ask for a report, chain the
original exception, and leave eggpu's own errors untouched.
"""

from __future__ import annotations

import inspect
import pickle

import pytest

import eggpu
import eggpu.language as tl
from eggpu import CodegenError, EggpuError
from eggpu.kernel_macro import InternalCompilerError, KernelCompileError
from eggpu.kernel_macro.diagnostics import REPORT_HINT
from eggpu.kernel_macro.frontend_ops import Semantic

FILE = __file__


@eggpu.kernel
def doubles(x_ptr: tl.Pointer[tl.f32], BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(x_ptr + offs, x * 2.0)


@eggpu.jit
def _sum_times(x, n: tl.constexpr):
    acc = x
    for _ in range(n):
        acc = acc + x * 0.5
    return acc


@eggpu.kernel
def calls_helper(x_ptr: tl.Pointer[tl.f32], BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, _sum_times(tl.load(x_ptr + offs), 3))


def _line_of(fn, text: str) -> tuple[int, str]:
    lines, first = inspect.getsourcelines(getattr(fn, "fn", fn))
    i = next(i for i, ln in enumerate(lines) if text in ln)
    return first + i, lines[i].rstrip("\n")


def _inject(monkeypatch, exc: BaseException) -> None:
    """Make ``Semantic.binary`` raise ``exc`` on an operation with a float literal operand only."""
    real = Semantic.binary

    def broken(self, op, a, b):
        if isinstance(a, float) or isinstance(b, float):
            raise exc
        return real(self, op, a, b)

    monkeypatch.setattr(Semantic, "binary", broken)


def test_an_unexpected_exception_becomes_one_located_internal_error(monkeypatch):
    boom = RuntimeError("injected failure 41")
    _inject(monkeypatch, boom)
    k = doubles.Kernel(16)
    with pytest.raises(InternalCompilerError) as e:
        k.ir()
    err = e.value
    line, text = _line_of(doubles, "tl.store(x_ptr + offs, x * 2.0)")
    col = text.index("tl.store")
    assert str(err).splitlines() == [
        f"{FILE}:{line}:{col + 1}: internal error in eggpu while compiling kernel {k.name!r}: "
        "RuntimeError: injected failure 41",
        text,
        " " * col + "^",
        f"hint: {REPORT_HINT}",
    ]
    assert "please report it" in REPORT_HINT
    assert isinstance(err, KernelCompileError) and isinstance(err, EggpuError)
    assert err.__cause__ is boom
    again = pickle.loads(pickle.dumps(err))
    assert type(again) is InternalCompilerError and str(again) == str(err)


def test_the_innermost_statement_of_an_inlined_helper_is_blamed(monkeypatch):
    _inject(monkeypatch, KeyError("injected key 7"))
    k = calls_helper.Kernel(32)
    with pytest.raises(InternalCompilerError) as e:
        k.ir()
    line, text = _line_of(_sum_times, "acc = acc + x * 0.5")
    col = text.index("acc")
    out = str(e.value).splitlines()
    assert out[0] == (f"{FILE}:{line}:{col + 1}: internal error in eggpu while compiling kernel {k.name!r}: "
                      "KeyError: 'injected key 7'")
    assert out[1:3] == [text, " " * col + "^"]
    call_line, _ = _line_of(calls_helper, "_sum_times(tl.load")
    assert len(e.value.notes) == 1 and e.value.notes[0].startswith("in _sum_times(), inlined from calls_helper at ")
    assert f":{call_line}:" in e.value.notes[0]


def test_eggpu_errors_pass_through_unwrapped(monkeypatch):
    mine = CodegenError("injected codegen error 5")
    _inject(monkeypatch, mine)
    with pytest.raises(CodegenError) as e:
        doubles.Kernel(8).ir()
    assert e.value is mine and not isinstance(e.value, InternalCompilerError)


def test_user_mistakes_are_not_internal_errors():
    @eggpu.kernel
    def bad(x_ptr: tl.Pointer[tl.f32], BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, tl.load(x_ptr + offs) + "a")

    with pytest.raises(KernelCompileError) as e:
        bad.Kernel(4).ir()
    assert not isinstance(e.value, InternalCompilerError) and "internal error" not in str(e.value)


def test_a_compile_time_builtin_failing_on_constexprs_is_the_kernels_mistake():
    @eggpu.kernel
    def bad_min(x_ptr: tl.Pointer[tl.f32], BLOCK: tl.constexpr):
        offs = tl.arange(0, min(BLOCK, "8"))
        tl.store(x_ptr + offs, tl.load(x_ptr + offs))

    with pytest.raises(KernelCompileError) as e:
        bad_min.Kernel(4).ir()
    assert not isinstance(e.value, InternalCompilerError)
    line, text = _line_of(bad_min, 'min(BLOCK, "8")')
    col = text.index("min(")
    assert str(e.value).splitlines()[0] == (f"{FILE}:{line}:{col + 1}: min(): '<' not supported between "
                                            "instances of 'str' and 'int'")
