"""Python AST -> tensor IR: lowering one specialization of a ``@kernel`` function.

:func:`lower_kernel` parses the kernel's source (once per function, see
:class:`~eggpu.kernel_macro.diagnostics.Source`), binds the constexpr parameters to their values
and the other parameters to IR parameters, and walks the body statement by statement, building
IR with a :class:`~eggpu.ir.Builder` whose ``loc`` follows the current source line. Operations on
values are delegated to :class:`~eggpu.kernel_macro.frontend_ops.Semantic`; the ``tl.*``
functions to :data:`~eggpu.kernel_macro.builtins.IMPLS`.

Control flow:

* ``for i in range(lo, hi, step)`` becomes an IR ``for``. Variables assigned in the body that
  exist before the loop are loop-carried (block arguments + ``yield``). A carried variable keeps
  its type across iterations; one whose initial value is a Python literal takes the type it has
  after an iteration (``acc = 0.0`` then ``acc += block`` carries an f32 block), otherwise a type
  change is a CompileError. Variables first assigned in the body and the loop variable are not
  available after the loop.
* ``for i in tl.static_range(...)`` is unrolled (compile-time bounds).
* ``while cond:`` becomes an IR ``while`` with the same carried-variable rules
  (:mod:`~eggpu.kernel_macro.while_loops`).
* ``if`` on a compile-time condition compiles only the taken branch; on a runtime scalar it
  becomes an IR ``if`` yielding the variables either branch (re)assigned. A variable assigned in
  only one branch and not before is unavailable afterwards.
* ``return`` (no value) may appear in ``if`` branches outside loops: the statements after such an
  ``if`` move into the branch that does not return, so the result stays structured.
* Calls to ``@eggpu.jit`` functions, ``@kernel`` functions and plain functions of the calling
  function's module are inlined (arguments may be blocks or compile-time values; they may return
  a value or a tuple, also from early returns).

Everything else is a :class:`~eggpu.kernel_macro.diagnostics.KernelCompileError` at the source
position with a hint.
"""

from __future__ import annotations

import ast
import builtins as _py
import inspect
import math
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from eggpu.ir.builder import Builder
from eggpu.ir.dtypes import DType, bool_, from_numpy, i32, promote
from eggpu.ir.errors import CompileError, IRError
from eggpu.ir.graph import Function, Operation, Value
from eggpu.ir.types import BlockType, PointerType

from . import compat
from . import language as tl
from .builtins import COMBINE_FUNCTIONS, IMPLS, SIGNATURES
from .diagnostics import KernelCompileError, Source, did_you_mean
from .frontend_ops import Semantic, SemanticError, Tensor, describe, is_number
from .signature import _closure_vars
from .unsupported import MATH_UNSUPPORTED_HINT, TENSOR_METHODS, UNSUPPORTED, unsupported_reason

_MISSING = object()
_RET = "$ret"  # hidden variable holding an inlined helper's return value
_LANG_MODULES = frozenset({"eggpu.language", "eggpu.kernel_macro.language"})
_MATH_MODULE = tl.math.__name__
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

_TENSOR_ATTRS = "x.to(dtype), x.dtype, x.shape, x.T and the methods x.sum(...), x.reshape(...), ... (tl.<name>(x, ...))"
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


class CodeGenerator:
    """Lowers one kernel specialization; use :func:`lower_kernel`."""

    def __init__(self, fn: Any, name: str, params: Sequence[tuple[str, BlockType]],
                 consts: dict[str, Any], binding: dict[Any, DType]):
        self.b = Builder(name, list(params))
        self.sem = Semantic(self.b)
        self.binding = binding
        self.name = name
        scope: dict[str, Any] = dict(consts)
        for p in self.b.params:
            scope[p.name] = Tensor(p)
        src = Source.of(fn)
        self.frame = Frame(fn, src, fn.__globals__, _closure_vars(fn), scope, is_kernel=True)
        self.stack: list[Frame] = [self.frame]
        self._expr: dict[type, Callable[[Any], Any]] = {
            ast.Constant: self._constant, ast.Name: self._name, ast.Attribute: self._attribute,
            ast.Call: self._call, ast.BinOp: self._binop, ast.UnaryOp: self._unaryop,
            ast.BoolOp: self._boolop, ast.Compare: self._compare, ast.IfExp: self._ifexp,
            ast.Tuple: self._tuple, ast.List: self._list, ast.Subscript: self._subscript,
        }
        self._stmt: dict[type, Callable[[Any], None]] = {
            ast.Assign: self._assign, ast.AugAssign: self._augassign, ast.AnnAssign: self._annassign,
            ast.Expr: self._expr_stmt, ast.Pass: lambda node: None, ast.For: self._for,
            ast.Assert: self._assert, ast.While: self._while,
        }

    # ------------------------------------------------------------ entry

    def lower(self) -> Function:
        self.visit_body(self.frame.source.tree.body)
        self.b.function.grid_rank = self.sem.max_axis + 1
        try:
            return self.b.finish()
        except IRError as e:  # a frontend bug, not a user mistake
            raise CompileError(f"{self.name}: internal error: the generated IR does not verify: {e}") from e

    # ------------------------------------------------------------ diagnostics

    def error(self, node: ast.AST, problem: str, hint: str | None = None, col: int | None = None) -> KernelCompileError:
        err = self.frame.source.error(node, problem, hint, col)
        return err

    def unsupported(self, node: ast.AST) -> KernelCompileError:
        problem, hint = _UNSUPPORTED.get(
            type(node), (f"{type(node).__name__} is not supported in a kernel", "see the kernel language in DESIGN.md §2"))
        return self.error(node, problem, hint)

    def _located(self, node: ast.AST, e: Exception) -> KernelCompileError:
        if isinstance(e, SemanticError):
            return self.error(node, e.problem, e.hint)
        return self.error(node, f"invalid operation: {e}", _IR_HINT)

    # ------------------------------------------------------------ statements

    def visit_body(self, stmts: Sequence[ast.stmt]) -> bool:
        """Lower statements in order; True when the block ended in a return."""
        for i, s in enumerate(stmts):
            self.b.loc = self.frame.source.loc(s)
            if isinstance(s, ast.If):
                terminated, consumed = self._if(s, stmts[i + 1:])
                if terminated or consumed:
                    return terminated
                continue
            if isinstance(s, ast.Return):
                self._return(s)
                return True
            handler = self._stmt.get(type(s))
            if handler is None:
                raise self.unsupported(s)
            try:
                handler(s)
            except (SemanticError, IRError) as e:
                raise self._located(s, e) from None
        return False

    def _expr_stmt(self, node: ast.Expr) -> None:
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return  # docstring / comment string
        self.expr(node.value)

    def _assign(self, node: ast.Assign) -> None:
        for t in node.targets:
            self._check_target(t)
        value = self.expr(node.value)
        for t in node.targets:
            self._store(t, value)

    def _check_target(self, t: ast.expr) -> None:
        if isinstance(t, ast.Subscript):
            raise self.error(t, "assigning to an element of a block (x[...] = ...) is not supported",
                             "blocks are immutable values: write memory with tl.store(ptr + offs, value, "
                             "mask=...) or build a new block with tl.where")
        if isinstance(t, ast.Attribute):
            raise self.error(t, f"assigning to an attribute ({ast.unparse(t)} = ...) is not supported",
                             "kernel values are immutable: assign a new variable, and write results "
                             "with tl.store(ptr + offs, value)")
        if isinstance(t, ast.Starred):
            raise self.error(t, "starred assignment is not supported", "unpack explicitly: a, b = t")
        if isinstance(t, ast.Tuple | ast.List):
            for e in t.elts:
                self._check_target(e)
        elif not isinstance(t, ast.Name):
            raise self.error(t, f"cannot assign to {type(t).__name__}", "assign to a variable name")

    def _store(self, t: ast.expr, value: Any) -> None:
        if isinstance(t, ast.Name):
            self.frame.scope[t.id] = value
            return
        assert isinstance(t, ast.Tuple | ast.List)
        if isinstance(value, Tensor):
            raise self.error(t, f"cannot unpack {describe(value)}",
                             "only tuples (e.g. returned by a helper) can be unpacked")
        if not isinstance(value, tuple):
            raise self.error(t, f"cannot unpack {describe(value)}")
        if len(value) != len(t.elts):
            raise self.error(t, f"cannot unpack a tuple of {len(value)} into {len(t.elts)} names")
        for e, v in zip(t.elts, value):
            self._store(e, v)

    def _augassign(self, node: ast.AugAssign) -> None:
        self._check_target(node.target)
        if not isinstance(node.target, ast.Name):
            raise self.error(node.target, "augmented assignment needs a variable name")
        cur = self._name(node.target)
        rhs = self.expr(node.value)
        op = _BINOPS.get(type(node.op))
        if op is None:
            raise self.error(node, f"operator {type(node.op).__name__} is not supported",
                             "use tl.dot for matrix products")
        try:
            self.frame.scope[node.target.id] = self.sem.binary(op, cur, rhs)
        except (SemanticError, IRError) as e:
            raise self._located(node, e) from None

    def _annassign(self, node: ast.AnnAssign) -> None:
        self._check_target(node.target)
        ann = self.expr(node.annotation)
        if node.value is None:
            return
        value = self.expr(node.value)
        if ann is tl.constexpr:
            if _has_tensor(value):
                raise self.error(node.value, f"a tl.constexpr variable needs a compile-time value, got {describe(value)}",
                                 "compute it from tl.constexpr parameters and literals only")
        elif isinstance(ann, DType):
            value = self.sem.convert(value, ann)
        else:
            raise self.error(node.annotation, f"unsupported variable annotation {ast.unparse(node.annotation)}",
                             "annotate with tl.constexpr or a dtype (x: tl.f32 = ...), or drop the annotation")
        self._store(node.target, value)

    def _assert(self, node: ast.Assert) -> None:
        cond = self.expr(node.test)
        if _has_tensor(cond):
            raise self.error(node, "assert on a runtime value is not supported in a kernel",
                             "use tl.static_assert for compile-time checks; runtime values cannot be asserted")
        if not cond:
            msg = self.expr(node.msg) if node.msg is not None else ""
            raise self.error(node, f"assertion failed{': ' + str(msg) if msg else ''}")

    def _return(self, node: ast.Return) -> None:
        f = self.frame
        if f.loop_depth:
            raise self.error(node, "return inside a loop is not supported",
                             "loops run a fixed number of iterations: guard the rest of the body with an "
                             "if (or a mask), or compute the loop bound before the loop")
        value = None if node.value is None else self.expr(node.value)
        if f.is_kernel:
            if value is not None:
                raise self.error(node, "a kernel cannot return a value",
                                 "write results through a pointer: tl.store(out_ptr + offs, value, mask=mask)")
            return
        f.scope[_RET] = value

    # ------------------------------------------------------------ if

    def _if(self, node: ast.If, rest: Sequence[ast.stmt]) -> tuple[bool, bool]:
        """Lower an if statement; returns (terminated, consumed the rest of the block)."""
        cond = self.expr(node.test)
        has_return = _contains_return(node.body) or _contains_return(node.orelse)
        if not isinstance(cond, Tensor):
            if _has_tensor(cond):
                raise self.error(node.test, f"cannot use {describe(cond)} as a condition")
            branch = node.body if cond else node.orelse
            if has_return:  # the continuation depends on whether the taken branch returns
                return self.visit_body(list(branch) + list(rest)), True
            return self.visit_body(branch), False
        try:
            c = self.sem.condition(cond)
        except SemanticError as e:
            raise self.error(node.test, e.problem, e.hint) from None
        if has_return:
            if self.frame.loop_depth:
                ret = next(n for s in list(node.body) + list(node.orelse) for n in ast.walk(s)
                           if isinstance(n, ast.Return))
                self._return(ret)  # raises: return in a loop
            then = list(node.body) + ([] if node.body and isinstance(node.body[-1], ast.Return) else list(rest))
            orelse = list(node.orelse) + ([] if node.orelse and isinstance(node.orelse[-1], ast.Return) else list(rest))
            self._runtime_if(node, c, then, orelse, terminal=True)
            return True, True
        self._runtime_if(node, c, node.body, node.orelse, terminal=False)
        return False, False

    def _runtime_if(self, node: ast.If, cond: Tensor, then: Sequence[ast.stmt], orelse: Sequence[ast.stmt],
                    terminal: bool) -> None:
        f = self.frame
        before = f.scope
        loc = self.b.loc
        with self.b.region() as then_blk:
            f.scope = dict(before)
            self.visit_body(then)
            then_scope = f.scope
        with self.b.region() as else_blk:
            f.scope = dict(before)
            self.b.loc = loc
            self.visit_body(orelse)
            else_scope = f.scope
        f.scope = before
        self.b.loc = loc
        if terminal:
            names = [_RET] if not f.is_kernel else []
        else:
            names = list(dict.fromkeys(list(then_scope) + list(else_scope)))
        merged: list[tuple[str, list[tuple[Any, Any, BlockType]], Callable[[Any], Any]]] = []
        line = f.source.loc(node).line
        for n in names:
            a, c = then_scope.get(n, _MISSING), else_scope.get(n, _MISSING)
            if n == _RET:
                if not terminal:
                    continue
                a = None if a is _MISSING else a
                c = None if c is _MISSING else c
                if (a is None) != (c is None):
                    before[n] = Undefined("not every path returns a value", "")
                    continue
            if a is not _MISSING and c is not _MISSING and _same(a, c):
                before[n] = a
                continue
            if a is _MISSING or c is _MISSING or isinstance(a, Undefined) or isinstance(c, Undefined):
                where = "then" if c is _MISSING or isinstance(c, Undefined) else "else"
                before[n] = Undefined(
                    f"{n} is not defined on every path: it is assigned only in the {where} branch of the "
                    f"if at line {line}",
                    f"assign {n} before the if (or in both branches)")
                continue
            leaves, rebuild = self._plan_merge(node, n, a, c)
            merged.append((n, leaves, rebuild))
        flat = [leaf for _, leaves, _ in merged for leaf in leaves]
        try:
            then_vals = [self._materialize(a, t) for a, _, t in flat]
            else_vals = [self._materialize(c, t) for _, c, t in flat]
        except SemanticError as e:
            raise self.error(node, e.problem, e.hint) from None
        then_blk.ops.append(Operation("yield", tuple(then_vals), {}, (), (), loc))
        else_blk.ops.append(Operation("yield", tuple(else_vals), {}, (), (), loc))
        op = self.b.if_(cond.value, then_blk, else_blk, [t for _, _, t in flat])
        results = iter(op.results)
        for n, _, rebuild in merged:
            before[n] = rebuild(results)

    def _plan_merge(self, node: ast.AST, n: str, a: Any, c: Any):
        """The leaves (then value, else value, type) to yield for a variable, and a function that
        rebuilds the variable's value from the if's results (tuples merge element by element)."""
        if isinstance(a, tuple) and isinstance(c, tuple) and len(a) == len(c):
            parts = [self._plan_merge(node, n, x, y) for x, y in zip(a, c)]
            leaves = [leaf for p in parts for leaf in p[0]]
            return leaves, lambda it: tuple(p[1](it) for p in parts)
        if _same(a, c):
            return [], lambda it: a
        t = self._merge_type(node, n, a, c)
        return [(a, c, t)], lambda it: Tensor(next(it))

    def _merge_type(self, node: ast.AST, n: str, a: Any, c: Any) -> BlockType:
        what = "the return value" if n == _RET else n
        if isinstance(a, Tensor) and isinstance(c, Tensor):
            if a.type != c.type:
                raise self.error(
                    node, f"{what} has type {a.type} in the then branch but {c.type} in the else branch",
                    f"convert one side (e.g. {n if n != _RET else 'x'}.to(tl.{promote(a.dtype, c.dtype)})) "
                    f"so both branches produce one type")
            return a.type
        if isinstance(a, Tensor) and is_number(c):
            return a.type
        if isinstance(c, Tensor) and is_number(a):
            return c.type
        if is_number(a) and is_number(c):
            return BlockType(_literal_join_dtype(a, c), ())
        raise self.error(
            node, f"{what} is {describe(a)} in the then branch but {describe(c)} in the else branch",
            "a compile-time value cannot depend on a runtime condition; make the condition a "
            "tl.constexpr, or use blocks/numbers in both branches")

    def _materialize(self, v: Any, t: BlockType) -> Value:
        if isinstance(v, Tensor):
            assert v.type == t, (v.type, t)
            return v.value
        if isinstance(t.elem, PointerType):
            raise SemanticError(f"a variable holds a pointer ({t}) on one path and the number {v!r} on another",
                                "keep pointer variables pointers on every path")
        return self.sem.literal(v, t.dtype, t.shape).value

    # ------------------------------------------------------------ for

    def _for(self, node: ast.For) -> None:
        if node.orelse:
            raise self.error(node.orelse[0], "for ... else is not supported in a kernel",
                             "move the else body after the loop")
        it = node.iter
        if not isinstance(it, ast.Call):
            raise self.error(it, f"cannot loop over {ast.unparse(it)}",
                             "loops are `for i in range(lo, hi, step)` (runtime bounds) or "
                             "`for i in tl.static_range(...)` (unrolled)")
        fobj = self.expr(it.func)
        builtin = getattr(fobj, "__eggpu_builtin__", None)
        is_static = builtin == "static_range"
        if fobj is not _py.range and builtin not in ("static_range", "range"):
            raise self.error(it, f"cannot loop over {ast.unparse(it)}",
                             "loops are `for i in range(lo, hi, step)` (runtime bounds) or "
                             "`for i in tl.static_range(...)` (unrolled)")
        if builtin == "range":
            self._range_hints(it)
        elif it.keywords:
            raise self.error(it.keywords[0], f"{ast.unparse(it.func)}() takes no keyword arguments",
                             "write range(lo, hi, step)")
        args = [self.expr(a) for a in it.args]
        if not 1 <= len(args) <= 3:
            raise self.error(it, f"{ast.unparse(it.func)}() takes 1 to 3 arguments, got {len(args)}")
        lo, hi, step = (0, args[0], 1) if len(args) == 1 else (args[0], args[1], args[2] if len(args) == 3 else 1)
        if not isinstance(node.target, ast.Name):
            raise self.error(node.target, "the loop variable must be a single name", "write `for i in range(...)`")
        if is_static:
            self._static_for(node, it, lo, hi, step)
        else:
            self._runtime_for(node, it, lo, hi, step)

    def _while(self, node: ast.While) -> None:
        from .while_loops import lower_while

        lower_while(self, node)

    def _range_hints(self, it: ast.Call) -> None:
        """Check the keywords of ``tl.range(...)``: Triton's pipelining hints, accepted without effect."""
        bs = SIGNATURES["range"]
        hints = bs.params[3:]
        for kw in it.keywords:
            if kw.arg not in hints:
                dym = did_you_mean(kw.arg or "", hints)
                raise self.error(kw, f"tl.range() got an unexpected keyword argument {kw.arg!r}",
                                 (f"{dym[:-1]}=? " if dym else "") + f"the signature is {bs.text}")
            v = self.expr(kw.value)
            if _has_tensor(v):
                raise self.error(kw, f"tl.range({kw.arg}=...) needs a compile-time value, got {describe(v)}")

    def _static_for(self, node: ast.For, it: ast.Call, lo: Any, hi: Any, step: Any) -> None:
        for v, what in ((lo, "start"), (hi, "end"), (step, "step")):
            if not isinstance(v, int) or isinstance(v, bool):
                raise self.error(it, f"tl.static_range bounds must be compile-time ints; {what} is {describe(v)}",
                                 "use range(...) for a loop with runtime bounds")
        if step == 0:
            raise self.error(it, "tl.static_range step must not be zero")
        r = range(lo, hi, step)
        if len(r) > _MAX_UNROLL:
            raise self.error(it, f"tl.static_range would unroll {len(r)} iterations (limit {_MAX_UNROLL})",
                             "use range(...) for long loops")
        f = self.frame
        name = node.target.id  # type: ignore[attr-defined]
        f.loop_depth += 1
        try:
            for i in r:
                f.scope[name] = i
                self.visit_body(node.body)
        finally:
            f.loop_depth -= 1

    def _assigned_names(self, node: ast.For) -> list[str]:
        key = id(node)
        hit = self.frame.assigned_cache.get(key)
        if hit is None:
            found: dict[str, tuple[int, int]] = {}
            for s in node.body:
                for n in ast.walk(s):
                    if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.id not in found:
                        found[n.id] = (n.lineno, n.col_offset)
            hit = sorted(found, key=found.__getitem__)
            self.frame.assigned_cache[key] = hit
        return hit

    def _runtime_for(self, node: ast.For, it: ast.Call, lo: Any, hi: Any, step: Any) -> None:
        if isinstance(step, int) and not isinstance(step, bool) and step == 0:
            raise self.error(it, "range() step must not be zero")
        try:
            lo_t, hi_t, step_t, variable, wide_trips = self.sem.loop_bounds(lo, hi, step)
        except SemanticError as e:
            raise self.error(it, e.problem, e.hint) from None
        f = self.frame
        target = node.target.id  # type: ignore[attr-defined]
        before = f.scope
        loc = self.b.loc
        line = f.source.loc(node).line
        assigned = [n for n in self._assigned_names(node) if n != target]
        plan: dict[str, tuple] = {}
        for n in assigned:
            v = before.get(n, _MISSING)
            if v is _MISSING or isinstance(v, Undefined):
                continue
            if isinstance(v, Tensor):
                plan[n] = ("tensor", v.type, False)
            elif _has_tensor(v):
                plan[n] = ("tuple", v)
            else:
                plan[n] = ("const", v)
        counter = BlockType(i32, ()) if wide_trips is None else wide_trips.type
        for _attempt in range(6):
            blk, end_scope, next_k = self._loop_body(node, target, plan, before, variable, counter)
            new_plan = self._join_loop(node, plan, end_scope)
            if new_plan == plan:
                break
            plan = new_plan
        else:  # pragma: no cover - needs a pathological oscillation
            raise self.error(node, "cannot determine the types of the loop-carried variables",
                             "give every variable assigned in the loop its final type before the loop")
        f.scope = before
        self.b.loc = loc
        carried = [n for n, st in plan.items() if st[0] == "tensor"]
        try:
            inits = [self._materialize(before[n], plan[n][1]) for n in carried]
            yields = [self._materialize(end_scope[n], plan[n][1]) for n in carried]
        except SemanticError as e:
            raise self.error(node, e.problem, e.hint) from None
        if wide_trips is None:
            blk.ops.append(Operation("yield", tuple(yields), {}, (), (), loc))
            results = self.b.for_(lo_t.value, hi_t.value, step_t.value, inits, blk).results
        else:  # a wide loop: while k < trips over a counter of the loop's unsigned dtype
            blk.ops.append(Operation("yield", (next_k, *yields), {}, (), (), loc))
            with self.b.region([a.type for a in blk.args]) as cond_blk:
                self.b.yield_(self.b.op("lt", cond_blk.args[0], wide_trips.value))
            zero = self.b.const(0, counter.dtype)
            results = self.b.while_([zero, *inits], cond_blk, blk).results[1:]
        for n, r in zip(carried, results):
            before[n] = Tensor(r)
        for n in assigned:
            if n not in plan:
                before[n] = Undefined(
                    f"{n} is assigned inside the for loop at line {line} and is not available after it",
                    f"assign {n} before the loop so that it becomes a loop-carried value")
        before[target] = Undefined(
            f"{target} is the variable of the for loop at line {line} and is not available after it",
            "keep the value you need in a variable assigned before the loop")

    def _loop_body(self, node: ast.For, target: str, plan: dict[str, tuple], before: dict[str, Any],
                   variable: Callable[[Tensor], Tensor], counter: BlockType):
        """The loop body region (args: the counter, then the carried values), the scope at its end,
        and, for a wide loop (a counter wider than i32, lowered as a ``while``), the next counter."""
        f = self.frame
        carried = [n for n, st in plan.items() if st[0] == "tensor"]
        arg_types = [counter] + [plan[n][1] for n in carried]
        with self.b.region(arg_types) as blk:
            scope = dict(before)
            scope[target] = variable(Tensor(blk.args[0]))  # the i32 iv, or lo + k * step (wide loops)
            for n, a in zip(carried, blk.args[1:]):
                scope[n] = Tensor(a)
            f.scope = scope
            f.loop_depth += 1
            try:
                self.visit_body(node.body)
            finally:
                f.loop_depth -= 1
            end_scope = f.scope
            next_k = None
            if counter.dtype != i32:
                next_k = self.b.op("add", blk.args[0], self.b.const(1, counter.dtype))
        f.scope = before
        return blk, end_scope, next_k

    def _join_loop(self, node: ast.For, plan: dict[str, tuple], end_scope: dict[str, Any]) -> dict[str, tuple]:
        new: dict[str, tuple] = {}
        for n, st in plan.items():
            end = end_scope.get(n, _MISSING)
            if isinstance(end, Undefined):
                raise self.error(node, f"{n} may be undefined after an iteration of this loop: {end.problem}", end.hint)
            kind = st[0]
            if kind == "tuple":
                if not _same(st[1], end):
                    raise self.error(node, f"the tuple {n} cannot be reassigned in a runtime loop",
                                     "unpack it into separate variables before the loop")
                new[n] = st
            elif kind == "const":
                v0 = st[1]
                if _same(v0, end):
                    new[n] = st
                elif is_number(v0) and is_number(end):
                    new[n] = ("tensor", BlockType(_literal_join_dtype(v0, end), ()), True)
                elif is_number(v0) and isinstance(end, Tensor) and not end.is_pointer:
                    if isinstance(v0, float) and not end.dtype.is_float:
                        raise self.error(
                            node, f"{n} starts as the float literal {v0!r} before the loop but becomes "
                            f"{end.type} in it",
                            f"start it with an integer literal, or convert inside the loop: {n} = (...).to(tl.f32)")
                    new[n] = ("tensor", end.type, True)
                else:
                    raise self.error(
                        node, f"{n} is {describe(v0)} before the loop but {describe(end)} after an iteration",
                        "a compile-time value cannot change in a runtime loop; use tl.static_range to unroll, "
                        "or make it a block/scalar before the loop")
            else:
                _, t, flexible = st
                if isinstance(end, Tensor):
                    if end.type == t:
                        new[n] = st
                    elif flexible and not end.is_pointer:
                        new[n] = ("tensor", end.type, True)
                    else:
                        raise self.error(
                            self._last_assignment(node, n),
                            f"loop-carried variable {n} has type {t} before the loop but {end.type} "
                            f"after an iteration",
                            self._type_change_hint(n, end.type, t))
                elif is_number(end):
                    new[n] = st
                else:
                    raise self.error(node, f"loop-carried variable {n} has type {t} before the loop but is "
                                     f"{describe(end)} after an iteration",
                                     "keep one type for a variable assigned in a loop")
        return new

    @staticmethod
    def _last_assignment(node: ast.For, n: str) -> ast.AST:
        """The statement of the loop body that assigns ``n`` last (for diagnostics)."""
        best: ast.AST = node
        for s in ast.walk(node):
            if isinstance(s, ast.Assign | ast.AugAssign | ast.AnnAssign) and s is not node:
                targets = s.targets if isinstance(s, ast.Assign) else [s.target]
                if any(isinstance(x, ast.Name) and x.id == n for t in targets for x in ast.walk(t)):
                    if (s.lineno, s.col_offset) >= (getattr(best, "lineno", 0), getattr(best, "col_offset", 0)):
                        best = s
        return best

    @staticmethod
    def _type_change_hint(n: str, new: BlockType, old: BlockType) -> str:
        if isinstance(new.elem, PointerType) or isinstance(old.elem, PointerType):
            return f"keep {n} the same pointer type and shape in every iteration"
        shape = "[" + ", ".join(map(str, new.shape)) + "]"
        return (f"give {n} the loop's type before the loop, e.g. {n} = tl.zeros({shape}, dtype=tl.{new.dtype}), "
                f"or convert inside the loop with .to(tl.{old.dtype})")

    # ------------------------------------------------------------ expressions

    def expr(self, node: ast.expr) -> Any:
        h = self._expr.get(type(node))
        if h is None:
            raise self.unsupported(node)
        try:
            return h(node)
        except (SemanticError, IRError) as e:
            raise self._located(node, e) from None

    def _constant(self, node: ast.Constant) -> Any:
        v = node.value
        if v is None or isinstance(v, bool | int | float | str):
            return v
        raise self.error(node, f"{type(v).__name__} constants are not supported in a kernel")

    def _name(self, node: ast.Name) -> Any:
        n = node.id
        f = self.frame
        v = f.scope.get(n, _MISSING)
        if v is not _MISSING:
            if isinstance(v, Undefined):
                raise self.error(node, v.problem, v.hint)
            return v
        if n in f.closure:
            return self._outer_value(node, n, f.closure[n])
        if n in f.globals:
            return self._outer_value(node, n, f.globals[n])
        if hasattr(_py, n):
            return getattr(_py, n)
        known = [k for k in list(f.scope) + list(f.globals) if not k.startswith("$")]
        dym = did_you_mean(n, known)
        raise self.error(node, f"name {n!r} is not defined", dym or None)

    def _outer_value(self, node: ast.AST, n: str, v: Any) -> Any:
        """A module-level or closure value as a compile-time value."""
        if isinstance(v, bool | int | float | str | DType | tl.PointerAnnotation) or v is None:
            return v
        if isinstance(v, TypeVar):
            if v in self.binding:
                return self.binding[v]
            raise self.error(node, f"TypeVar {v.__name__} is not a dtype parameter of {self.name}",
                             "use a TypeVar that annotates one of the kernel's parameters, or a dtype")
        if isinstance(v, np.generic):
            return v.item()
        if isinstance(v, type) and issubclass(v, np.generic):
            try:
                return from_numpy(v)  # np.float32 used as a dtype
            except IRError:
                return v
        if isinstance(v, list):  # mutable: kernels read immutable constants only (docs/language.md)
            shown = repr(tuple(v)) if len(v) <= 4 else "(" + ", ".join(map(repr, v[:3])) + ", ...)"
            raise self.error(node, f"{n} is a list, which a kernel cannot read (lists are mutable)",
                             f"module-level values a kernel reads must be immutable constants: make it a tuple, "
                             f"{n} = {shown}")
        if isinstance(v, tuple):
            out = tuple(self._outer_value(node, n, x) for x in v)
            return out
        if isinstance(v, types.ModuleType | types.FunctionType | types.BuiltinFunctionType | type) or callable(v):
            return v
        raise self.error(node, f"{n} is a {type(v).__module__}.{type(v).__name__}, which a kernel cannot use",
                         "kernels can read compile-time constants (int, float, bool, dtype) from the module; "
                         "pass data as a pointer argument")

    def _attribute(self, node: ast.Attribute) -> Any:
        v = self.expr(node.value)
        attr = node.attr
        if isinstance(v, Tensor):
            if attr == "dtype":
                return v.lang_dtype
            if attr == "shape":
                return v.shape
            if attr == "T":
                return self.sem.trans(v, ())
            if attr == "to" or attr in TENSOR_METHODS:
                return BoundMethod(v, attr)
            if attr in UNSUPPORTED:
                raise self.error(node, f"the tensor method x.{attr}() is not supported by eggpu: {UNSUPPORTED[attr]}",
                                 col=self._attr_col(node))
            dym = did_you_mean(attr, list(TENSOR_METHODS) + ["to", "dtype", "shape", "T"], prefix="x.")
            raise self.error(node, f"blocks have no attribute {attr!r}", dym or f"blocks support {_TENSOR_ATTRS}",
                             col=self._attr_col(node))
        if isinstance(v, types.ModuleType):
            base = ast.unparse(node.value)
            if v.__name__ in _LANG_MODULES or v.__name__ == _MATH_MODULE:
                return self._language_attribute(node, v, base, attr)
            if not hasattr(v, attr):
                dym = did_you_mean(attr, [a for a in dir(v) if not a.startswith("_")], prefix=f"{base}.")
                raise self.error(node, f"module {v.__name__} has no attribute {attr!r}", dym or None,
                                 col=self._attr_col(node))
            return self._outer_value(node, f"{base}.{attr}", getattr(v, attr))
        if isinstance(v, DType | tl.PointerAnnotation | type):
            if attr.startswith("_") or not hasattr(v, attr):
                raise self.error(node, f"{describe(v) if not isinstance(v, type) else v.__name__} has no "
                                 f"attribute {attr!r}", col=self._attr_col(node))
            return self._outer_value(node, attr, getattr(v, attr))
        raise self.error(node, f"cannot read attribute {attr!r} of {describe(v)}", col=self._attr_col(node))

    def _language_attribute(self, node: ast.Attribute, mod: types.ModuleType, base: str, attr: str) -> Any:
        """``tl.<attr>`` or ``tl.math.<attr>``: a language name, or one error naming the missing feature."""
        names = mod.__all__
        if attr in names:
            return getattr(mod, attr)
        is_math = mod.__name__ == _MATH_MODULE
        reason = unsupported_reason(attr)
        if reason is not None:
            raise self.error(node, f"{base}.{attr} is not supported by eggpu: {reason}", col=self._attr_col(node))
        dym = did_you_mean(attr, names, prefix=f"{base}.")
        if is_math:
            raise self.error(node, f"{base}.{attr} is not supported by eggpu", dym or MATH_UNSUPPORTED_HINT,
                             col=self._attr_col(node))
        raise self.error(node, f"{base}.{attr} is not part of the kernel language",
                         dym or "see eggpu.language.__all__ for the available names",
                         col=self._attr_col(node))

    def _attr_col(self, node: ast.Attribute) -> int | None:
        if node.end_lineno != node.lineno or node.end_col_offset is None:
            return None
        text = self.frame.source.line_text(node.lineno)
        end = len(text.encode("utf-8")[: node.end_col_offset].decode("utf-8", errors="ignore"))
        return end - len(node.attr)

    def _tuple(self, node: ast.Tuple) -> tuple:
        return tuple(self._call_args(node.elts))

    def _list(self, node: ast.List) -> tuple:
        vals = tuple(self._call_args(node.elts))
        for v in vals:
            if _has_tensor(v):
                raise self.error(node, "lists of runtime values are not supported in a kernel",
                                 "a list literal may only hold compile-time values (a shape such as "
                                 "[BLOCK_M, BLOCK_N]); use separate variables or a tuple for blocks")
        return vals

    def _binop(self, node: ast.BinOp) -> Any:
        op = _BINOPS.get(type(node.op))
        left, right = self.expr(node.left), self.expr(node.right)
        if op is None:
            raise self.error(node, "the @ operator is not supported", "use tl.dot(a, b) for matrix products")
        return self.sem.binary(op, left, right)

    def _unaryop(self, node: ast.UnaryOp) -> Any:
        return self.sem.unary(_UNARY[type(node.op)], self.expr(node.operand))

    def _boolop(self, node: ast.BoolOp) -> Any:
        is_and = isinstance(node.op, ast.And)
        acc = self.expr(node.values[0])
        for vnode in node.values[1:]:
            if not isinstance(acc, Tensor):
                if _has_tensor(acc):
                    raise self.error(node, f"cannot use {describe(acc)} in and/or")
                if (is_and and not acc) or (not is_and and acc):
                    return acc  # Python short-circuit on a compile-time value
                acc = self.expr(vnode)
                continue
            rhs = self.expr(vnode)
            if not isinstance(rhs, Tensor):
                if (is_and and rhs) or (not is_and and not rhs):
                    acc = self.sem.cast(acc, bool_)
                    continue
                acc = bool(rhs)
                continue
            acc = self.sem.logical("and" if is_and else "or", acc, rhs)
        return acc

    def _compare(self, node: ast.Compare) -> Any:
        left = self.expr(node.left)
        result: Any = _MISSING
        for op, rnode in zip(node.ops, node.comparators):
            right = self.expr(rnode)
            if isinstance(op, ast.Is | ast.IsNot):
                r = (left is right) if not (isinstance(left, Tensor) or isinstance(right, Tensor)) else \
                    (isinstance(left, Tensor) and isinstance(right, Tensor) and left.value is right.value)
                r = r if isinstance(op, ast.Is) else not r
            elif isinstance(op, ast.In | ast.NotIn):
                if _has_tensor(left) or _has_tensor(right) or not isinstance(right, tuple | str):
                    raise self.error(node, "`in` needs compile-time values and a tuple",
                                     "compare blocks with == and combine with |")
                r = (left in right) if isinstance(op, ast.In) else (left not in right)
            else:
                r = self.sem.binary(_CMPOPS[type(op)], left, right)
            if result is _MISSING:
                result = r
            elif isinstance(result, Tensor) or isinstance(r, Tensor):
                result = self.sem.logical("and", result, r)
            else:
                result = result and r
            left = right
        return result

    def _ifexp(self, node: ast.IfExp) -> Any:
        cond = self.expr(node.test)
        if not isinstance(cond, Tensor):
            return self.expr(node.body) if cond else self.expr(node.orelse)
        return self.sem.where(cond, self.expr(node.body), self.expr(node.orelse))

    def _subscript(self, node: ast.Subscript) -> Any:
        v = self.expr(node.value)
        if isinstance(v, Tensor):
            return self._index_block(node, v)
        if isinstance(v, type) and hasattr(v, "__class_getitem__"):
            idx = self.expr(node.slice)
            try:
                return v[idx]
            except TypeError as e:
                raise self.error(node, str(e)) from None
        idx = self.expr(node.slice)
        if _has_tensor(idx):
            raise self.error(node.slice, "a tuple can only be indexed with a compile-time int")
        try:
            return v[idx]
        except (IndexError, KeyError, TypeError) as e:
            raise self.error(node, f"cannot index {describe(v)} with {idx!r}: {e}") from None

    def _index_block(self, node: ast.Subscript, v: Tensor) -> Tensor:
        items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        bad = ("indexing a block with x[i] is not supported",
               "blocks cannot be indexed: use x[:, None] / x[None, :] to add axes, tl.where to select "
               "lanes, tl.sum/tl.max to reduce, or tl.load(ptr + i) to read one element")
        full = sum(1 for it in items if isinstance(it, ast.Slice))
        if full > v.type.rank:
            raise self.error(node, f"too many ':' for a block of rank {v.type.rank}")
        out_axis = 0
        for it in items:
            if isinstance(it, ast.Constant) and it.value is None:
                v = Tensor(self.b.op("expand_dims", v.value, axis=out_axis))
                out_axis += 1
            elif isinstance(it, ast.Slice) and it.lower is None and it.upper is None and it.step is None:
                out_axis += 1
            else:
                raise self.error(it, *bad)
        return v

    # ------------------------------------------------------------ calls

    def _call_args(self, nodes: Sequence[ast.expr]) -> list[Any]:
        out: list[Any] = []
        for a in nodes:
            if isinstance(a, ast.Starred):
                v = self.expr(a.value)
                if not isinstance(v, tuple):
                    raise self.error(a, f"cannot unpack {describe(v)} with *", "only tuples can be unpacked")
                out.extend(v)
            else:
                out.append(self.expr(a))
        return out

    def _call(self, node: ast.Call) -> Any:
        fobj = self.expr(node.func)
        args = self._call_args(node.args)
        kwargs: dict[str, Any] = {}
        for kw in node.keywords:
            if kw.arg is None:
                raise self.error(kw, "**kwargs in calls is not supported in a kernel", "pass keywords explicitly")
            kwargs[kw.arg] = self.expr(kw.value)
        builtin = getattr(fobj, "__eggpu_builtin__", None)
        if builtin is not None:
            return self._call_builtin(node, builtin, args, kwargs)
        if isinstance(fobj, BoundMethod):
            return self._call_method(node, fobj, args, kwargs)
        target = getattr(fobj, "__eggpu_jit_target__", None)
        if isinstance(target, types.FunctionType):  # an @eggpu.jit function: inline its body
            return self._inline(node, target, args, kwargs)
        if fobj is tl.constexpr:
            if len(args) != 1 or kwargs or _has_tensor(args[0]):
                raise self.error(node, "tl.constexpr(v) takes one compile-time value")
            return args[0]
        if fobj is tl.dtype:
            if len(args) != 1 or kwargs or _has_tensor(args[0]):
                raise self.error(node, "tl.dtype(name) takes one compile-time dtype name, e.g. tl.dtype('float32')")
            try:
                return tl.dtype(args[0])
            except TypeError as e:
                raise self.error(node, str(e)) from None
        if isinstance(fobj, types.BuiltinFunctionType | type) and getattr(fobj, "__module__", None) == "builtins":
            return self._call_python_builtin(node, fobj, args, kwargs)
        if isinstance(fobj, types.FunctionType):
            if (getattr(fobj, "__eggpu_jit__", False) or getattr(fobj, "__eggpu_kernel__", None) is not None
                    or fobj.__module__ == self.frame.fn.__module__):
                return self._inline(node, fobj, args, kwargs)
        return self._call_foreign(node, fobj, args, kwargs)

    def _call_builtin(self, node: ast.Call, name: str, args: list[Any], kwargs: dict[str, Any],
                      method: bool = False) -> Any:
        """``tl.<name>(*args, **kwargs)``; ``method``: called as ``x.<name>(...)``, ``args[0]`` is ``x``."""
        if name in ("static_range", "range"):
            raise self.error(node, f"tl.{name} can only be used as the iterable of a for loop",
                             f"write `for i in tl.{name}(lo, hi)`")
        bs = SIGNATURES[name]
        shown = f"x.{name}" if method else f"tl.{name}"
        for kw in node.keywords:
            if kw.arg not in bs.keywords:
                dym = did_you_mean(kw.arg, bs.keywords)
                hint = (f"{dym[:-1]}=? " if dym else "") + f"the signature is {bs.text}"
                raise self.error(kw, f"{shown}() got an unexpected keyword argument {kw.arg!r}", hint)
        try:
            bound = bs.sig.bind(*args, **kwargs)
        except TypeError as e:
            raise self.error(node, f"{shown}(): {e}", f"the signature is {bs.text}") from None
        bound.apply_defaults()
        if name in COMBINE_FUNCTIONS:
            bound.arguments["combine_fn"] = self._combine_callable(node, bound.arguments["combine_fn"])
        try:
            return IMPLS[name](self.sem, bound.arguments)
        except SemanticError as e:
            raise self.error(self._arg_node(node, bs.params, e.arg, 1 if method else 0), e.problem, e.hint) from None
        except IRError as e:
            raise self._located(node, e) from None

    def _combine_callable(self, node: ast.Call, fobj: Any) -> Any:
        """``combine_fn`` of tl.reduce/tl.associative_scan as a Python callable that inlines it."""
        target = getattr(fobj, "__eggpu_jit_target__", None)
        fn = target if isinstance(target, types.FunctionType) else fobj
        if not isinstance(fn, types.FunctionType):
            return fobj  # the implementation reports a non-function combine_fn at the argument

        def call(*values: Any) -> Any:
            return self._inline(node, fn, list(values), {})

        return call

    @staticmethod
    def _arg_node(node: ast.Call, params: Sequence[str], arg: str | None, skip: int = 0) -> ast.AST:
        """The argument node of parameter ``arg`` (for the caret); ``skip`` parameters are not in
        the call's source (the receiver ``x`` of a method call ``x.sum(...)``)."""
        if arg is None:
            return node
        for kw in node.keywords:
            if kw.arg == arg:
                return kw
        if arg in params:
            i = list(params).index(arg) - skip
            if 0 <= i < len(node.args) and not any(isinstance(a, ast.Starred) for a in node.args[: i + 1]):
                return node.args[i]
        return node

    def _call_method(self, node: ast.Call, m: BoundMethod, args: list[Any], kwargs: dict[str, Any]) -> Any:
        if m.name == "to":
            def to(dtype: Any, fp_downcast_rounding: Any = None, bitcast: bool = False) -> Any:
                return dtype, fp_downcast_rounding, bitcast

            sig = "x.to(dtype, fp_downcast_rounding=None, bitcast=False)"
            try:
                dtype, rounding, bitcast = to(*args, **kwargs)
            except TypeError as e:
                raise self.error(node, f"x.to(): {e}", f"the signature is {sig}") from None
            try:
                compat.rounding({"fp_downcast_rounding": rounding}, "x.to")
                return self.sem.cast(m.tensor, dtype, bitcast)
            except SemanticError as e:
                raise self.error(node, e.problem, e.hint) from None
        # x.sum(axis) is tl.sum(x, axis): the receiver is the first argument
        return self._call_builtin(node, m.name, [m.tensor, *args], kwargs, method=True)

    def _call_python_builtin(self, node: ast.Call, fobj: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
        name = getattr(fobj, "__name__", str(fobj))
        if fobj is _py.print:
            raise self.error(node, "print() is not supported in a kernel",
                             "kernels have no stdout: store the values you want to see into an output buffer "
                             "with tl.store and inspect it after .interpret(...)")
        if fobj is _py.range:
            raise self.error(node, "range() can only be used as the iterable of a for loop",
                             "write `for i in range(lo, hi, step)`")
        if fobj in (_py.min, _py.max) and not kwargs and len(args) >= 2:
            if not any(_has_tensor(a) for a in args):
                return fobj(*args)
            op = "minimum" if fobj is _py.min else "maximum"
            acc = args[0]
            for a in args[1:]:
                acc = self.sem.binary(op, acc, a)
            return acc
        if fobj is _py.abs and len(args) == 1 and not kwargs:
            return self.sem.abs(args[0])
        if fobj in (_py.int, _py.float, _py.bool, _py.len, _py.isinstance) and not any(
                isinstance(a, Tensor) for a in args):
            try:
                return fobj(*args, **kwargs)
            except (TypeError, ValueError) as e:
                raise self.error(node, f"{name}(): {e}") from None
        if fobj in (_py.int, _py.float, _py.bool):
            target = {"int": "tl.i32", "float": "tl.f32", "bool": "tl.bool"}[name]
            raise self.error(node, f"{name}() of a runtime value is not supported",
                             f"convert blocks with x.to({target})")
        hint = f"use tl.{name}" if name in tl.__all__ else (
            "kernels use the language (eggpu.language) and helper functions only")
        raise self.error(node, f"the Python builtin {name}() is not supported in a kernel", hint)

    def _call_foreign(self, node: ast.Call, fobj: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
        text = ast.unparse(node.func)
        mod = getattr(fobj, "__module__", None)
        if mod == _MATH_FOLDABLE and not any(_has_tensor(a) for a in list(args) + list(kwargs.values())):
            try:
                return fobj(*args, **kwargs)
            except (TypeError, ValueError, OverflowError) as e:
                raise self.error(node, f"{text}(): {e}") from None
        if isinstance(fobj, DType):
            raise self.error(node, f"dtypes are not callable ({text}(...))", f"convert with x.to(tl.{fobj})")
        short = getattr(fobj, "__name__", "")
        if short in tl.__all__ and callable(getattr(tl, short)):
            hint = f"use tl.{short}(...) from the kernel language"
        else:
            hint = ("mark the helper @eggpu.jit (its body must use only the language) or define it in the "
                    "kernel's module; compute anything else outside the kernel and pass it as an argument")
        if isinstance(fobj, types.FunctionType):
            what = f"{_describe_fn(fobj)} is a plain function of another module"
        elif callable(fobj):
            what = f"{_describe_fn(fobj)} is not a kernel function"
        else:
            what = f"{describe(fobj)} is not callable"
        raise self.error(node, f"cannot call {text}() inside a kernel: {what}", hint)

    def _inline(self, node: ast.Call, fn: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
        if any(fr.fn is fn for fr in self.stack):
            raise self.error(node, f"recursive call of {fn.__name__}() is not supported",
                             "helpers are inlined; write the recursion as a loop")
        try:
            sig = inspect.signature(fn)
            bound = sig.bind(*args, **kwargs)
        except TypeError as e:
            raise self.error(node, f"{fn.__name__}(): {e}") from None
        bound.apply_defaults()
        src = Source.of(fn)
        call_loc = self.frame.source.loc(node)
        frame = Frame(fn, src, fn.__globals__, _closure_vars(fn), dict(bound.arguments), is_kernel=False,
                      call_note=f"in {fn.__name__}(), inlined from {self.frame.fn.__name__} at {call_loc}")
        saved_loc = self.b.loc
        self.stack.append(frame)
        self.frame = frame
        try:
            self.visit_body(src.tree.body)
        except KernelCompileError as e:
            e.note(frame.call_note)  # type: ignore[arg-type]
            raise
        finally:
            self.stack.pop()
            self.frame = self.stack[-1]
            self.b.loc = saved_loc
        ret = frame.scope.get(_RET)
        if isinstance(ret, Undefined):
            raise self.error(node, f"{fn.__name__}() does not return a value on every path",
                             "return a value in both branches of the if, or at the end of the function")
        return ret


def lower_kernel(fn: Any, name: str, params: Sequence[tuple[str, BlockType]], consts: dict[str, Any],
                 binding: dict[Any, DType]) -> Function:
    """Lower ``fn`` to a verified IR :class:`~eggpu.ir.Function` named ``name``.

    ``params`` are the runtime parameters (name, IR type) in order; ``consts`` the constexpr
    values by parameter name; ``binding`` maps dtype TypeVars to dtypes.
    """
    return CodeGenerator(fn, name, params, consts, binding).lower()


__all__ = ["CodeGenerator", "lower_kernel"]
