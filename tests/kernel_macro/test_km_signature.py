"""Kernel parameters are read from the code object as inspect.signature reads them (a cache hit
decorates kernels without importing inspect); anything but plain positional parameters is a
KernelSignatureError naming the kernel and the parameter."""

from __future__ import annotations

import functools
import inspect

import pytest

import eggpu
import eggpu.language as tl
from eggpu.kernel_macro.errors import KernelSignatureError
from eggpu.kernel_macro.signature import _NO_ANNOTATION, NO_DEFAULT, _positional_parameters, analyze


def plain(a, b: int, c: tl.constexpr = 3, d="x"):  # noqa: ANN001
    pass


def posonly(a: int, /, b: float = 2.5):
    pass


def nothing():
    pass


def _wrapped(x: tl.i32, y: tl.constexpr = 4):
    pass


@functools.wraps(_wrapped)
def wrapper(*args, **kwargs):  # inspect follows __wrapped__ to _wrapped's parameters
    pass


@pytest.mark.parametrize("fn", [plain, posonly, nothing, wrapper])
def test_parameters_match_inspect_signature(fn) -> None:
    want = [(p.name, _NO_ANNOTATION if p.annotation is p.empty else p.annotation,
             NO_DEFAULT if p.default is p.empty else p.default) for p in inspect.signature(fn).parameters.values()]
    got = [(p.name, p.annotation, p.default) for p in _positional_parameters(fn)]
    assert got == want
    assert repr(NO_DEFAULT) == "NO_DEFAULT"


def star_args(x: tl.i32, *rest: tl.i32):
    pass


def star_kwargs(x: tl.i32, **opts: tl.i32):
    pass


def kw_only(x: tl.i32, *, block: tl.constexpr):
    pass


def missing_first(x, *rest):  # noqa: ANN001 - the earlier parameter's error comes first
    pass


@pytest.mark.parametrize(("fn", "message"), [
    (star_args, "star_args: parameter *rest: 'tl.i32': kernels take plain positional parameters only"),
    (star_kwargs, "star_kwargs: parameter **opts: 'tl.i32': kernels take plain positional parameters only"),
    (kw_only, "kw_only: parameter block: 'tl.constexpr': kernels take plain positional parameters only"),
    (missing_first, "missing_first: parameter x has no annotation"),
])
def test_other_parameters_are_errors_in_parameter_order(fn, message: str) -> None:
    with pytest.raises(KernelSignatureError) as e:
        analyze(fn)
    assert str(e.value).startswith(message), str(e.value)


def test_a_kernel_default_is_bound_and_a_missing_argument_named() -> None:
    @eggpu.kernel
    def scaled(x_ptr: tl.Pointer[tl.f32], n: tl.i32, BLOCK: tl.constexpr = 64, SCALE: tl.constexpr = 2.0):
        offs = tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * SCALE, mask=offs < n)

    k = scaled.Kernel(128)
    assert k.consts == {"BLOCK": 128, "SCALE": 2.0}
    sig = analyze(scaled)
    assert [p.default for p in sig.params] == [NO_DEFAULT, NO_DEFAULT, 64, 2.0]
