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
import types
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from eggpu.ir.builder import Builder
from eggpu.ir.dtypes import DType, bool_, from_numpy, loaded_numpy
from eggpu.ir.errors import CompileError, EggpuError, IRError
from eggpu.ir.graph import Function
from eggpu.ir.types import BlockType

from . import debugging, descriptor_ops, descriptors, dtype_queries
from . import language as tl
from .block_pointers import METHODS as DESCRIPTOR_METHODS
from .block_pointers import TensorDescriptor, descriptor_argument
from .diagnostics import InternalCompilerError, KernelCompileError, Source, did_you_mean
from .frontend_calls import Calls
from .frontend_common import (
    _BINOPS,
    _CMPOPS,
    _IR_HINT,
    _LANG_MODULES,
    _LIBDEVICE_MODULE,
    _MATH_MODULE,
    _MISSING,
    _RET,
    _TENSOR_ATTRS,
    _UNARY,
    _UNSUPPORTED,
    BoundMethod,
    Frame,
    Undefined,
    _has_tensor,
)
from .frontend_control import ControlFlow
from .frontend_ops import Semantic, SemanticError, Tensor, describe
from .frontend_values import BlockTypeValue, is_number
from .signature import _closure_vars
from .unsupported import (
    LIBDEVICE_UNSUPPORTED_HINT,
    MATH_UNSUPPORTED_HINT,
    TENSOR_METHODS,
    UNSUPPORTED,
    unsupported_reason,
)


class CodeGenerator(ControlFlow, Calls):
    """Lowers one kernel specialization; use :func:`lower_kernel`."""

    def __init__(self, fn: Any, name: str, params: Sequence[tuple[str, BlockType]],
                 consts: dict[str, Any], binding: dict[Any, DType]):
        self.b = Builder(name, list(params))
        self.sem = Semantic(self.b)
        self.scalar_lists = False  # while lowering the arguments of a call that takes lists of runtime scalars
        self.block_lists = False  # while lowering the arguments of a call that takes a list of blocks
        self.binding = binding
        self.name = name
        scope: dict[str, Any] = dict(consts)
        for p in self.b.params:
            scope[p.name] = Tensor(p)
        for n, v in consts.items():  # host TensorDescriptor arguments (kernel_macro/descriptors.py)
            spec = descriptors.decode(v)
            if spec is not None:
                scope[n] = descriptor_argument(self.sem, n, spec[0], spec[1], scope, tf32=spec[2])
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
        """Lower statements in order; True when the block ended in a return.

        The one place where an unexpected exception (not an EggpuError, not a language error
        located further out) becomes an :class:`InternalCompilerError` at the innermost
        statement; the ones of enclosing blocks and inlining calls pass it through.
        """
        for i, s in enumerate(stmts):
            self.b.loc = self.frame.source.loc(s)
            try:
                done = self._statement(s, stmts[i + 1:])
            except (EggpuError, SemanticError):
                raise
            except Exception as e:  # noqa: BLE001 - a bug in eggpu: located and reported as one
                raise InternalCompilerError.wrap(self.frame.source, s, self.name, e) from e
            if done is not None:
                return done
        return False

    def _statement(self, s: ast.stmt, rest: Sequence[ast.stmt]) -> bool | None:
        """Lower statement ``s`` (``rest`` follows it in its block): True/False when the block
        ends here (a return / an ``if`` that consumed ``rest``), None to go on."""
        if isinstance(s, ast.If):
            terminated, consumed = self._if(s, rest)
            return terminated if terminated or consumed else None
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
        return None

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
            pass  # Triton binds a runtime value so annotated too (FlagGems' sort: `N: tl.constexpr = TILE * t`)
        elif isinstance(ann, DType):
            value = self.sem.convert(value, ann)
        elif ann is not tl.tensor:  # `x: tl.tensor = ...` (Triton's value type) only documents
            raise self.error(node.annotation, f"unsupported variable annotation {ast.unparse(node.annotation)}",
                             "annotate with tl.constexpr or a dtype (x: tl.f32 = ...), or drop the annotation")
        self._store(node.target, value)

    def _assert(self, node: ast.Assert) -> None:
        """A compile-time condition is checked now; a runtime one is Triton's ``tl.device_assert(cond,
        msg)``: checked on every lane when the kernel is compiled with ``debug=True``, removed otherwise."""
        cond = self.expr(node.test)
        if _has_tensor(cond):
            msg = self.expr(node.msg) if node.msg is not None else ""
            if not isinstance(msg, str):
                raise self.error(node.msg, f"the message of an assert on a runtime value must be a compile-time "
                                 f"string, got {describe(msg)}")
            try:
                debugging.device_assert(self.sem, {"cond": cond, "msg": msg, "mask": None})
            except SemanticError as e:
                raise self.error(node.test, e.problem, e.hint) from None
            return
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
        np = loaded_numpy()  # a numpy value exists only if numpy is loaded: never import it here
        if np is not None and isinstance(v, np.generic):
            return v.item()
        if np is not None and isinstance(v, type) and issubclass(v, np.generic):
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
            if attr == "numel":  # Triton: the element count, a compile-time int
                return v.type.numel
            if attr == "type":  # Triton: a scalar's type is its dtype (pointer type), a block's a block type
                return BlockTypeValue(v.lang_dtype, v.shape) if v.is_block else v.lang_dtype
            if attr == "T":
                return self.sem.trans(v, ())
            if attr == "to" or attr in TENSOR_METHODS:
                return BoundMethod(v, attr)
            if attr in UNSUPPORTED:
                raise self.error(node, f"the tensor method x.{attr}() is not supported by eggpu: {UNSUPPORTED[attr]}",
                                 col=self._attr_col(node))
            dym = did_you_mean(attr, list(TENSOR_METHODS) + ["to", "dtype", "type", "shape", "numel", "T"], prefix="x.")
            raise self.error(node, f"blocks have no attribute {attr!r}", dym or f"blocks support {_TENSOR_ATTRS}",
                             col=self._attr_col(node))
        if isinstance(v, TensorDescriptor):
            if attr in DESCRIPTOR_METHODS:
                return BoundMethod(v, DESCRIPTOR_METHODS[attr])  # type: ignore[arg-type]
            if attr in descriptor_ops.ATTRIBUTES:
                return descriptor_ops.attribute(v, attr)
            if attr in descriptor_ops.CALLS:
                return BoundMethod(v, f"desc.{attr}")  # type: ignore[arg-type]
            raise self.error(node, f"tensor descriptors have no attribute {attr!r}",
                             "they have load, store, atomic_add/min/max/and/or/xor, gather, scatter, "
                             "block_shape, shape, strides and dtype", col=self._attr_col(node))
        if isinstance(v, types.ModuleType):
            base = ast.unparse(node.value)
            if v.__name__ in _LANG_MODULES or v.__name__ in (_MATH_MODULE, _LIBDEVICE_MODULE):
                return self._language_attribute(node, v, base, attr)
            if not hasattr(v, attr):
                dym = did_you_mean(attr, [a for a in dir(v) if not a.startswith("_")], prefix=f"{base}.")
                raise self.error(node, f"module {v.__name__} has no attribute {attr!r}", dym or None,
                                 col=self._attr_col(node))
            return self._outer_value(node, f"{base}.{attr}", getattr(v, attr))
        if attr == "value" and (isinstance(v, DType | tl.PointerAnnotation | str) or is_number(v) or v is None):
            # Triton: compile-time values are `tl.constexpr` objects and `.value` unwraps one
            # (`dtype.value.is_floating()` in helpers that take a dtype); here they are plain values
            return v
        if isinstance(v, DType) and (query := dtype_queries.attribute(v, attr)) is not None:
            return query  # Triton's spellings: dtype.is_floating(), dtype.int_bitwidth
        if isinstance(v, DType | tl.PointerAnnotation | BlockTypeValue | type):
            if attr.startswith("_") or not hasattr(v, attr):
                shown = v.__name__ if isinstance(v, type) else describe(v) if isinstance(v, DType) else f"the type {v}"
                raise self.error(node, f"{shown} has no attribute {attr!r}", col=self._attr_col(node))
            return self._outer_value(node, attr, getattr(v, attr))
        if is_number(v) and (attr == "to" or attr in TENSOR_METHODS):
            # Triton: a method of a compile-time number (`acc = 0; acc = acc.to(tl.int64)`) applies
            # to the number as a scalar tensor of its default dtype (int -> i32 or i64, float -> f32)
            return BoundMethod(self.sem.to_tensor(v), attr)
        raise self.error(node, f"cannot read attribute {attr!r} of {describe(v)}", col=self._attr_col(node))

    def _language_attribute(self, node: ast.Attribute, mod: types.ModuleType, base: str, attr: str) -> Any:
        """``tl.<attr>`` or ``tl.math.<attr>``: a language name, or one error naming the missing feature."""
        names = mod.__all__
        if attr in names or attr in ("core", "standard") and mod.__name__ in _LANG_MODULES:
            return getattr(mod, attr)
        is_math = mod.__name__ in (_MATH_MODULE, _LIBDEVICE_MODULE)
        hint = LIBDEVICE_UNSUPPORTED_HINT if mod.__name__ == _LIBDEVICE_MODULE else MATH_UNSUPPORTED_HINT
        if is_math and attr in tl.LIBDEVICE_NAMES:  # tl.math.tan: Triton has it only in libdevice too
            hint = f"Triton's tl.math has no {attr} either: use tl.extra.cuda.libdevice.{attr}"
        reason = unsupported_reason(attr)
        if reason is not None:
            raise self.error(node, f"{base}.{attr} is not supported by eggpu: {reason}", col=self._attr_col(node))
        dym = did_you_mean(attr, names, prefix=f"{base}.")
        if is_math:
            raise self.error(node, f"{base}.{attr} is not supported by eggpu", dym or hint,
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
        if self.scalar_lists and all(not isinstance(v, Tensor) or not v.is_block for v in vals):
            return vals  # shapes/offsets of block pointers and tensor descriptors (frontend_calls.py)
        if self.block_lists:
            return vals  # tl.inline_asm_elementwise(..., [x, y], ...): read once, never mutated
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
        return self._runtime_ifexp(node, cond)

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


def lower_kernel(fn: Any, name: str, params: Sequence[tuple[str, BlockType]], consts: dict[str, Any],
                 binding: dict[Any, DType]) -> Function:
    """Lower ``fn`` to a verified IR :class:`~eggpu.ir.Function` named ``name``.

    ``params`` are the runtime parameters (name, IR type) in order; ``consts`` the constexpr
    values by parameter name; ``binding`` maps dtype TypeVars to dtypes.
    """
    return CodeGenerator(fn, name, params, consts, binding).lower()


__all__ = ["CodeGenerator", "lower_kernel"]
