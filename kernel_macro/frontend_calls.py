"""Calls in the AST frontend: ``tl.*`` builtins (bound against their signatures), tensor methods
(``x.to``, ``x.sum(...)``), Python builtins that fold or map onto the language, ``math.*`` on
compile-time numbers, and inlining of helper functions (``@eggpu.jit``, ``@kernel`` or plain
functions of the kernel's module). :class:`Calls` is a mixin of the frontend's ``CodeGenerator``."""

from __future__ import annotations

import ast
import builtins as _py
import inspect
import types
from collections.abc import Sequence
from typing import Any

from eggpu.ir.dtypes import DType
from eggpu.ir.errors import IRError

from . import compat, descriptor_ops
from . import language as tl
from .builtins import COMBINE_FUNCTIONS, IMPLS, SIGNATURES
from .constexpr_function import ConstexprFunction, call_in_kernel
from .diagnostics import KernelCompileError, Source, did_you_mean
from .dtype_queries import DTypeQuery
from .frontend_common import (
    _MATH_FOLDABLE,
    _RET,
    BoundMethod,
    Frame,
    Undefined,
    _describe_fn,
    _has_tensor,
)
from .frontend_ops import SemanticError, Tensor, describe
from .signature import _closure_vars

_SCALAR_LIST_FUNCTIONS = frozenset({
    "make_block_ptr", "advance", "make_tensor_descriptor", "load_tensor_descriptor", "store_tensor_descriptor",
    *(f"desc.{n}" for n in descriptor_ops.CALLS)})
"""Functions whose list arguments may hold runtime scalars (Triton's ``shape=[M, N]``,
``desc.load([off_m, 0])``); elsewhere a list literal holds compile-time values only."""


class Calls:
    """Call lowering; mixed into :class:`~eggpu.kernel_macro.frontend.CodeGenerator`."""

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
        name = fobj.name if isinstance(fobj, BoundMethod) else getattr(fobj, "__eggpu_builtin__", None)
        saved, self.scalar_lists = self.scalar_lists, name in _SCALAR_LIST_FUNCTIONS
        saved_blocks, self.block_lists = self.block_lists, name == "inline_asm_elementwise"
        try:
            args = self._call_args(node.args)
            kwargs: dict[str, Any] = {}
            for kw in node.keywords:
                if kw.arg is None:
                    raise self.error(kw, "**kwargs in calls is not supported in a kernel", "pass keywords explicitly")
                kwargs[kw.arg] = self.expr(kw.value)
        finally:
            self.scalar_lists = saved
            self.block_lists = saved_blocks
        builtin = getattr(fobj, "__eggpu_builtin__", None)
        if builtin is not None:
            return self._call_builtin(node, builtin, args, kwargs)
        if isinstance(fobj, BoundMethod):
            return self._call_method(node, fobj, args, kwargs)
        target = getattr(fobj, "__eggpu_jit_target__", None)
        if isinstance(target, types.FunctionType):  # an @eggpu.jit function: inline its body
            return self._inline(node, target, args, kwargs)
        if isinstance(fobj, DTypeQuery):
            if args or kwargs:
                raise self.error(node, f"{ast.unparse(node.func)}() takes no arguments")
            return fobj()
        if fobj is tl.tensor:
            raise self.error(node, "tl.tensor(...) cannot be called: it is a type for annotations",
                             "make values with the language (tl.full, tl.zeros, tl.arange, tl.load, ...)")
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
        if fobj is tl.pointer_type or fobj is tl.const_pointer_type:  # a compile-time type: x.to(...)'s target
            if _has_tensor(tuple(args)) or _has_tensor(tuple(kwargs.values())):
                raise self.error(node, f"tl.{fobj.__name__}(dtype) takes a compile-time dtype, e.g. tl.float16")
            try:
                return fobj(*args, **kwargs)
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
            param = COMBINE_FUNCTIONS[name]
            bound.arguments[param] = self._combine_callable(node, bound.arguments[param])
        saved_loc = self.b.loc
        if name.startswith("libdevice."):  # the call's own column: a GPU-only function is refused there
            self.b.loc = self.frame.source.loc(node)
        try:
            return IMPLS[name](self.sem, bound.arguments)
        except SemanticError as e:
            raise self.error(self._arg_node(node, bs.params, e.arg, 1 if method else 0), e.problem, e.hint) from None
        except IRError as e:
            raise self._located(node, e) from None
        finally:
            self.b.loc = saved_loc

    def _combine_callable(self, node: ast.Call, fobj: Any) -> Any:
        """``combine_fn`` of tl.reduce/tl.associative_scan as a Python callable that inlines it."""
        target = getattr(fobj, "__eggpu_jit_target__", None)
        fn = target if isinstance(target, types.FunctionType) else fobj
        if not isinstance(fn, types.FunctionType):
            return fobj  # the implementation reports a non-function combine_fn at the argument

        def call(*values: Any) -> Any:
            return self._inline(node, fn, list(values), {}, lanewise=True)

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
        if m.name.startswith("desc."):  # desc.atomic_add(...), desc.gather(...): kernel_macro/descriptor_ops.py
            fn = descriptor_ops.CALLS[m.name[5:]]
            try:
                inspect.signature(fn).bind(self.sem, m.tensor, *args, **kwargs)
            except TypeError as e:
                raise self.error(node, f"{m.name}(): {e}") from None
            try:
                return fn(self.sem, m.tensor, *args, **kwargs)
            except SemanticError as e:
                raise self.error(node, e.problem, e.hint) from None
            except IRError as e:
                raise self._located(node, e) from None
        if m.name == "to":
            def to(dtype: Any, fp_downcast_rounding: Any = None, bitcast: bool = False) -> Any:
                return dtype, fp_downcast_rounding, bitcast

            sig = "x.to(dtype, fp_downcast_rounding=None, bitcast=False)"
            try:
                dtype, rounding, bitcast = to(*args, **kwargs)
            except TypeError as e:
                raise self.error(node, f"x.to(): {e}", f"the signature is {sig}") from None
            try:
                return compat.converted(self.sem, m.tensor, dtype, rounding, bitcast, "x.to")
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
                try:
                    return fobj(*args)
                except TypeError as e:  # e.g. min(BLOCK, "a"): the kernel's mistake, not eggpu's
                    raise self.error(node, f"{name}(): {e}") from None
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
        if isinstance(fobj, ConstexprFunction):
            return self._call_constexpr_function(node, text, fobj, args, kwargs)
        mod = getattr(fobj, "__module__", None)
        foldable = mod == _MATH_FOLDABLE or getattr(fobj, "__eggpu_fold__", False)  # tl.core.get_int_dtype, ...
        if foldable and not any(_has_tensor(a) for a in list(args) + list(kwargs.values())):
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

    def _call_constexpr_function(self, node: ast.Call, text: str, fobj: ConstexprFunction, args: list[Any],
                                 kwargs: dict[str, Any]) -> Any:
        """A ``constexpr_function`` runs as Python now, on compile-time values only (as in Triton)."""
        runtime = [a for a in list(args) + list(kwargs.values()) if _has_tensor(a)]
        if runtime:
            raise self.error(node, f"{text}() is a constexpr_function: its arguments must be compile-time values, "
                                   f"got {describe(runtime[0])}",
                             "pass tl.constexpr parameters or Python numbers; for a runtime value use tl.cdiv "
                             "or write the arithmetic in the kernel")
        try:
            return call_in_kernel(fobj, args, kwargs)  # dtypes with Triton's query methods
        except Exception as e:  # noqa: BLE001 - the user's function failed: located, not a traceback
            raise self.error(node, f"{text}(): {type(e).__name__}: {e}") from None

    def _inline(self, node: ast.Call, fn: Any, args: list[Any], kwargs: dict[str, Any], lanewise: bool = False) -> Any:
        """Inline ``fn(*args, **kwargs)`` and return its value; ``lanewise``: ``fn`` is a scalar function
        applied to each element of blocks (its ifs on per-element conditions select; so do those of
        the helpers it calls)."""
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
                      call_note=f"in {fn.__name__}(), inlined from {self.frame.fn.__name__} at {call_loc}",
                      lanewise=lanewise or self.frame.lanewise)
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
