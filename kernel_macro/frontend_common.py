"""Shared pieces of the AST frontend (:mod:`~eggpu.kernel_macro.frontend`): the frame of a
function being lowered, markers for unavailable variables and bound methods, the operator and
unsupported-syntax tables, and small helpers on frontend values."""

from __future__ import annotations

import ast
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from eggpu.ir.dtypes import DType, promote

from . import language as tl
from .diagnostics import Source
from .frontend_ops import Semantic, Tensor

_MISSING = object()
_RET = "$ret"  # hidden variable holding an inlined helper's return value
_LANG_MODULES = frozenset({"eggpu.language", "eggpu.kernel_macro.language", tl.core.__name__, tl.standard.__name__})
_MATH_MODULE = tl.math.__name__
_LIBDEVICE_MODULE = tl.libdevice.__name__  # Triton's tl.extra.cuda.libdevice / triton.language.extra.libdevice
_MAX_UNROLL = 4096
_IR_HINT = "the operand types do not fit this operation; check dtypes and block shapes"


class Undefined:
    """Marks a variable that is not available here; reading it raises ``problem``/``hint``."""

    __slots__ = ("problem", "hint")

    def __init__(self, problem: str, hint: str):
        self.problem = problem
        self.hint = hint


class BoundMethod:
    """``x.to`` on a block, waiting for its call."""

    __slots__ = ("tensor", "name")

    def __init__(self, tensor: Tensor, name: str):
        self.tensor = tensor
        self.name = name


@dataclass
class Frame:
    """One function being lowered (the kernel or an inlined helper)."""

    fn: Any
    source: Source
    globals: dict[str, Any]
    closure: dict[str, Any]
    scope: dict[str, Any]
    is_kernel: bool
    loop_depth: int = 0
    call_note: str | None = None
    lanewise: bool = False  # a scalar function applied per element (kernel_macro/lanewise.py)
    assigned_cache: dict[int, list[str]] = field(default_factory=dict)


_BINOPS: dict[type, str] = {
    ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "truediv", ast.FloorDiv: "floordiv",
    ast.Mod: "mod", ast.BitAnd: "and", ast.BitOr: "or", ast.BitXor: "xor", ast.LShift: "lshift",
    ast.RShift: "rshift", ast.Pow: "pow",
}
_CMPOPS: dict[type, str] = {
    ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge", ast.Eq: "eq", ast.NotEq: "ne",
}
_UNARY: dict[type, str] = {ast.USub: "neg", ast.UAdd: "pos", ast.Invert: "invert", ast.Not: "not"}

_NESTED_DEF = ("nested function and class definitions are not supported in a kernel",
               "define the helper at module level (optionally marked @eggpu.jit) and call it; "
               "calls are inlined")
_COMPREHENSION = ("comprehensions are not supported in a kernel",
                  "unroll with `for i in tl.static_range(...)`, or build blocks with tl.arange")
_UNSUPPORTED: dict[type, tuple[str, str]] = {
    ast.Break: ("break is not supported in a kernel",
                "loops run a fixed number of iterations: compute the bound before the loop, or "
                "guard the rest of the body with an if or a mask"),
    ast.Continue: ("continue is not supported in a kernel",
                   "wrap the rest of the loop body in an if (or use a mask)"),
    ast.FunctionDef: _NESTED_DEF,
    ast.AsyncFunctionDef: _NESTED_DEF,
    ast.ClassDef: _NESTED_DEF,
    ast.Lambda: ("lambda is not supported in a kernel",
                 "define a helper function at module level (optionally marked @eggpu.jit) and call it"),
    ast.Global: ("global statements are not supported in a kernel",
                 "kernels cannot assign module variables: read module-level constants directly and "
                 "write results with tl.store"),
    ast.Nonlocal: ("nonlocal statements are not supported in a kernel",
                   "kernels cannot assign enclosing variables: write results with tl.store"),
    ast.With: ("with statements are not supported in a kernel",
               "write the body without the context manager"),
    ast.AsyncWith: ("async with is not supported in a kernel", "write the body without it"),
    ast.AsyncFor: ("async for is not supported in a kernel", "use `for i in range(...)`"),
    ast.Try: ("try statements are not supported in a kernel",
              "kernels cannot catch exceptions: guard with masks or if statements, and check "
              "compile-time conditions with tl.static_assert"),
    ast.Raise: ("raise is not supported in a kernel",
                "use tl.static_assert(condition, message) for compile-time checks"),
    ast.Import: ("import statements are not supported in a kernel", "import at module level"),
    ast.ImportFrom: ("import statements are not supported in a kernel", "import at module level"),
    ast.Delete: ("del is not supported in a kernel", "just stop using the variable"),
    ast.Match: ("match statements are not supported in a kernel",
                "use if/elif/else (compile-time conditions are folded)"),
    ast.Dict: ("dict literals are not supported in a kernel",
               "use separate variables (or a tuple) instead"),
    ast.Set: ("set literals are not supported in a kernel",
              "use separate variables (or a tuple) instead"),
    ast.ListComp: _COMPREHENSION,
    ast.SetComp: _COMPREHENSION,
    ast.DictComp: _COMPREHENSION,
    ast.GeneratorExp: _COMPREHENSION,
    ast.Yield: ("yield is not supported in a kernel",
                "kernels do not produce values: write results with tl.store(ptr + offs, value)"),
    ast.YieldFrom: ("yield is not supported in a kernel",
                    "kernels do not produce values: write results with tl.store(ptr + offs, value)"),
    ast.Await: ("await is not supported in a kernel", "kernels are not coroutines"),
    ast.JoinedStr: ("f-strings are not supported in a kernel", "kernels cannot format text"),
    ast.NamedExpr: ("assignment expressions (:=) are not supported in a kernel",
                    "assign on a separate line"),
    ast.Starred: ("starred expressions are only supported as call arguments (f(*shape))",
                  "unpack explicitly: a, b = t"),
    ast.Slice: ("slices are only supported as `:` in x[:, None] / x[None, :]",
                "blocks cannot be sliced; build the block you need with tl.arange and tl.load"),
}
if hasattr(ast, "TryStar"):
    _UNSUPPORTED[ast.TryStar] = _UNSUPPORTED[ast.Try]

_TENSOR_ATTRS = "x.to(dtype), x.dtype, x.type, x.shape, x.T and the methods x.sum(...), x.reshape(...), ... (tl.<name>(x, ...))"
_MATH_FOLDABLE = "math"  # math.* functions fold on compile-time numbers


def _describe_fn(fn: Any) -> str:
    mod = getattr(fn, "__module__", None) or getattr(type(fn), "__module__", "")
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__
    return f"{mod}.{name}" if mod and mod != "builtins" else name


def _same(a: Any, b: Any) -> bool:
    """True when two frontend values are the same (identical IR value or equal constant)."""
    if isinstance(a, Tensor) or isinstance(b, Tensor):
        return isinstance(a, Tensor) and isinstance(b, Tensor) and a.value is b.value
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    try:
        return bool(a == b) if not callable(a) else a is b
    except Exception:  # noqa: BLE001
        return a is b


def _literal_join_dtype(a: Any, b: Any) -> DType:
    """dtype of a variable that holds the literal ``a`` on one path and ``b`` on another."""
    da, db = Semantic.default_dtype(a), Semantic.default_dtype(b)
    return promote(da, db)


def _has_tensor(v: Any) -> bool:
    return isinstance(v, Tensor) or (isinstance(v, tuple) and any(_has_tensor(x) for x in v))


def _contains_return(stmts: Sequence[ast.stmt]) -> bool:
    for s in stmts:
        for n in ast.walk(s):
            if isinstance(n, ast.Return):
                return True
    return False

