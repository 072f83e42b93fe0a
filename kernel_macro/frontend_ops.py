"""Semantics of the kernel language on frontend values (Triton's ``semantic.py`` in spirit).

Frontend values are either :class:`Tensor` (an IR value: a scalar or a block, possibly of
pointers) or *compile-time* Python values (``int``, ``float``, ``bool``, ``None``, a
:class:`~eggpu.ir.DType`, strings, tuples). :class:`Semantic` turns language operations on them
into IR through the :class:`~eggpu.ir.Builder`, making every implicit rule explicit:

* **Promotion** (Triton): two tensors promote with :func:`eggpu.ir.promote`. Python literals are
  weakly typed: an int literal with an int tensor takes the tensor's dtype (a
  :class:`SemanticError` if the value does not fit), an int or float literal with a float tensor
  takes the float dtype, a float literal with an int or bool tensor gives ``f32``; an int literal
  with a bool tensor gives ``i32``. Bool operands of arithmetic (``+ - * // % << >>``, unary
  ``-``, ordering comparisons, minimum/maximum) are promoted to ``i32``; ``& | ^`` keep bool.
* ``/`` on integers converts both sides to ``f32``; ``//`` and ``%`` on integers are the IR's
  truncating ``div``/``rem`` (C semantics); float ``//`` is ``floor(a / b)``; float ``%`` is
  ``rem`` (C ``fmod``).
* **Broadcasting** (numpy): a scalar is ``splat``; missing leading dims are added by ``reshape``;
  size-1 dims are ``broadcast``.
* Pointer ``+``/``-`` an integer is ``addptr`` (element offsets); a scalar pointer plus block
  offsets is splat to the offsets' shape.
* Compile-time operands fold in Python (Python semantics, including ``//`` and ``%``).

Errors are :class:`SemanticError` (problem, hint, and optionally the name of the offending
argument); the frontend turns them into located ``CompileError`` diagnostics.
"""

from __future__ import annotations

import math
import operator
from typing import Any

from eggpu.ir.builder import Builder
from eggpu.ir.dtypes import DType, bool_, f16, f32, i8, i16, i32, i64, promote, u32, u64
from eggpu.ir.ops import transcendental_ops

from .frontend_memory import Memory
from .frontend_values import SemanticError, Tensor, describe, fmt_shape, is_number
from .language import PointerAnnotation
from .pointer_casts import pointer_cast

_FOLD = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul, "truediv": operator.truediv,
    "floordiv": operator.floordiv, "mod": operator.mod, "and": operator.and_, "or": operator.or_,
    "xor": operator.xor, "lshift": operator.lshift, "rshift": operator.rshift, "lt": operator.lt,
    "le": operator.le, "gt": operator.gt, "ge": operator.ge, "eq": operator.eq, "ne": operator.ne,
    "pow": operator.pow, "minimum": min, "maximum": max,
}
_SYMBOL = {
    "add": "+", "sub": "-", "mul": "*", "truediv": "/", "floordiv": "//", "mod": "%", "and": "&",
    "or": "|", "xor": "^", "lshift": "<<", "rshift": ">>", "lt": "<", "le": "<=", "gt": ">",
    "ge": ">=", "eq": "==", "ne": "!=", "minimum": "tl.minimum", "maximum": "tl.maximum",
}
_IR_BINARY = {
    "add": "add", "sub": "sub", "mul": "mul", "mod": "rem", "and": "and", "or": "or", "xor": "xor",
    "lshift": "shl", "rshift": "shr", "lt": "lt", "le": "le", "gt": "gt", "ge": "ge", "eq": "eq",
    "ne": "ne", "minimum": "minimum", "maximum": "maximum",
}
_ARITH = frozenset({"add", "sub", "mul", "floordiv", "mod", "minimum", "maximum"})
_BITWISE = frozenset({"and", "or", "xor"})
_SHIFT = frozenset({"lshift", "rshift"})
_ORDER = frozenset({"lt", "le", "gt", "ge"})
_EQUALITY = frozenset({"eq", "ne"})

_SIGNED_OF_WIDTH = {8: i8, 16: i16, 32: i32, 64: i64}

#: unary float functions ``tl.<name>(x)`` that map to the IR op of the same name: the op table's
#: unary TRANSCENDENTAL ops plus sqrt and the roundings to integral (floor, ceil, trunc, rint, round)
FLOAT_FUNCTIONS = frozenset({"sqrt", "floor", "ceil", "trunc", "rint", "round", *transcendental_ops(1)})


class Semantic(Memory):
    """Builds IR for language operations; one per kernel being lowered."""

    def __init__(self, builder: Builder):
        self.b = builder
        self.max_axis = 0

    # ------------------------------------------------------------ literals

    @staticmethod
    def default_dtype(v: Any) -> DType:
        """dtype of a literal with no context: bool; int -> i32 (i64/u64 when larger); float -> f32."""
        if isinstance(v, bool):
            return bool_
        if isinstance(v, int):
            for dt in (i32, i64, u64):
                if dt.min <= v <= dt.max:
                    return dt
            raise SemanticError(f"integer literal {v} does not fit in 64 bits")
        if isinstance(v, float):
            return f32
        raise SemanticError(f"expected a number, got {describe(v)}")

    @staticmethod
    def fits(v: Any, dt: DType) -> bool:
        if dt.is_float:
            return True
        if isinstance(v, float):
            return False
        if dt.is_bool:
            return v in (0, 1)
        return dt.min <= int(v) <= dt.max

    def check_fits(self, v: Any, dt: DType) -> None:
        if not self.fits(v, dt):
            rng = f"{dt.min}..{dt.max}"
            raise SemanticError(
                f"the literal {v!r} does not fit in {dt} (range {rng})",
                f"convert the block to a wider dtype first, e.g. x.to(tl.{promote(dt, i64) if dt.is_int else i32})",
            )

    def const(self, v: Any, dt: DType) -> Tensor:
        return Tensor(self.b.const(v, dt))

    def literal(self, v: Any, dt: DType, shape: tuple[int, ...] = ()) -> Tensor:
        """The literal ``v`` as a tensor of ``dt`` (and ``shape``); checks that it fits."""
        self.check_fits(v, dt)
        return self.splat(self.const(v, dt), shape)

    def to_tensor(self, v: Any) -> Tensor:
        """A tensor for ``v`` (literals get their default dtype)."""
        if isinstance(v, Tensor):
            return v
        if is_number(v):
            return self.const(v, self.default_dtype(v))
        raise SemanticError(f"expected a block or a number, got {describe(v)}")

    def convert(self, v: Any, dt: DType) -> Tensor:
        """Convert a tensor or literal to dtype ``dt`` (value conversion, as ``tl.cast``)."""
        if isinstance(v, Tensor):
            return self.cast(v, dt)
        if is_number(v):
            if self.fits(v, dt):
                return self.const(v, dt)
            return self.cast(self.to_tensor(v), dt)
        raise SemanticError(f"expected a block or a number, got {describe(v)}")

    # ------------------------------------------------------------ shapes

    def splat(self, t: Tensor, shape: tuple[int, ...]) -> Tensor:
        if not shape or t.shape == shape:
            return t
        return Tensor(self.b.op("splat", t.value, shape=tuple(shape)))

    @staticmethod
    def broadcast_shapes(a: tuple[int, ...], b: tuple[int, ...], what: str = "") -> tuple[int, ...]:
        """numpy's broadcast of two shapes, or a SemanticError naming both."""
        if a == b:
            return a
        n = max(len(a), len(b))
        pa, pb = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
        out = []
        for x, y in zip(pa, pb):
            if x != y and x != 1 and y != 1:
                raise SemanticError(
                    f"cannot broadcast {what}shapes {fmt_shape(a)} and {fmt_shape(b)}",
                    "blocks combined in one operation need equal shapes or size-1 dims (x[:, None] "
                    "adds one); check the tl.arange bounds of both operands",
                )
            out.append(max(x, y))
        return tuple(out)

    def broadcast_to(self, t: Tensor, shape: tuple[int, ...]) -> Tensor:
        """Broadcast ``t`` to ``shape`` (numpy rules)."""
        shape = tuple(shape)
        if t.shape == shape:
            return t
        if not t.shape:
            return self.splat(t, shape)
        if len(t.shape) > len(shape) or self.broadcast_shapes(t.shape, shape) != shape:
            raise SemanticError(
                f"cannot broadcast a block of shape {fmt_shape(t.shape)} to shape {fmt_shape(shape)}",
                "only size-1 dims (and missing leading dims) can be broadcast",
            )
        if len(t.shape) < len(shape):
            t = Tensor(self.b.op("reshape", t.value, shape=(1,) * (len(shape) - len(t.shape)) + t.shape))
        if t.shape != shape:
            t = Tensor(self.b.op("broadcast", t.value, shape=shape))
        return t

    def broadcast_pair(self, a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
        if a.shape == b.shape:
            return a, b
        shape = self.broadcast_shapes(a.shape, b.shape)
        return self.broadcast_to(a, shape), self.broadcast_to(b, shape)

    def expand_dims(self, x: Any, axis: Any) -> Tensor:
        x = self.to_tensor(x)
        axes = axis if isinstance(axis, tuple) else (axis,)
        for a in axes:
            if not isinstance(a, int) or isinstance(a, bool):
                raise SemanticError(f"axis must be a compile-time int, got {describe(a)}", arg="axis")
        rank = len(x.shape) + len(axes)
        norm = sorted(a + rank if a < 0 else a for a in axes)
        for a in norm:
            if not 0 <= a < rank:
                raise SemanticError(f"axis {a} is out of range for the result of rank {rank}", arg="axis")
        for a in norm:
            x = Tensor(self.b.op("expand_dims", x.value, axis=a))
        return x

    @staticmethod
    def shape_arg(shape: Any, arg: str = "shape") -> tuple[int, ...]:
        """A compile-time shape: a tuple/list of positive ints (an int means a 1-D shape)."""
        if isinstance(shape, int) and not isinstance(shape, bool):
            shape = (shape,)
        if not isinstance(shape, tuple) or not all(
            isinstance(s, int) and not isinstance(s, bool) for s in shape
        ):
            raise SemanticError(
                f"a shape must be a list of compile-time ints, got {describe(shape)}",
                "use tl.constexpr values, e.g. [BLOCK_M, BLOCK_N] with BLOCK_M: tl.constexpr",
                arg=arg,
            )
        if any(s < 1 for s in shape):
            raise SemanticError(f"shape dims must be positive, got {fmt_shape(shape)}", arg=arg)
        return shape

    def reshape(self, x: Any, shape: Any) -> Tensor:
        x = self.to_tensor(x)
        shape = self.shape_arg(shape)
        n = math.prod(shape)
        if n != x.type.numel:
            raise SemanticError(
                f"cannot reshape a block of shape {fmt_shape(x.shape)} ({x.type.numel} elements) to "
                f"{fmt_shape(shape)} ({n} elements)",
                arg="shape",
            )
        if x.shape == shape:
            return x
        if not x.shape:
            return self.splat(x, shape)
        if not shape:
            raise SemanticError("cannot reshape a block to a scalar; use tl.sum(x) or tl.max(x)")
        return Tensor(self.b.op("reshape", x.value, shape=shape))

    def trans(self, x: Any, dims: tuple[Any, ...]) -> Tensor:
        x = self.to_tensor(x)
        if len(dims) == 1 and isinstance(dims[0], tuple):
            dims = dims[0]
        if x.type.rank < 2:
            raise SemanticError(f"tl.trans needs a block of rank >= 2, got {x.type}")
        perm = tuple(dims) if dims else tuple(reversed(range(x.type.rank)))
        if sorted(perm) != list(range(x.type.rank)):
            raise SemanticError(f"tl.trans dims {perm} are not a permutation of the {x.type.rank} axes")
        return Tensor(self.b.op("trans", x.value, perm=perm))

    # ------------------------------------------------------------ dtypes

    def cast(self, x: Any, dt: Any, bitcast: bool = False) -> Tensor:
        if isinstance(dt, PointerAnnotation) or isinstance(x, Tensor) and x.is_pointer:
            if isinstance(x, int) and not isinstance(x, bool):  # a literal address
                x = self.const(x, i64)
            return pointer_cast(self.b, self.to_tensor(x), dt)
        if not isinstance(dt, DType):
            raise SemanticError(f"expected a dtype such as tl.f32, got {describe(dt)}", arg="dtype")
        x = self.to_tensor(x)
        if bitcast:
            if x.dtype.bits != dt.bits:
                raise SemanticError(f"bitcast needs equal widths: {x.dtype} has {x.dtype.bits} bits, "
                                    f"{dt} has {dt.bits}", "use a value conversion (bitcast=False)")
            if x.dtype == dt:
                return x
            return Tensor(self.b.op("bitcast", x.value, dtype=dt))
        if x.dtype == dt:
            return x
        return Tensor(self.b.op("cast", x.value, dtype=dt))

    def _weak(self, lit: Any, tdt: DType) -> DType:
        """Result dtype of a tensor of ``tdt`` combined with the literal ``lit``."""
        if isinstance(lit, float):
            return tdt if tdt.is_float else f32
        if tdt.is_float:
            return tdt
        if tdt.is_bool:
            return bool_ if isinstance(lit, bool) else self.default_dtype(lit)
        return tdt

    def common_dtype(self, a: Any, b: Any) -> DType:
        """Triton's promotion of two operands (tensors or literals; at least one tensor)."""
        if isinstance(a, Tensor) and isinstance(b, Tensor):
            return promote(a.dtype, b.dtype)
        if isinstance(a, Tensor):
            return self._weak(b, a.dtype)
        return self._weak(a, b.dtype)

    def _operand(self, v: Any, dt: DType, shape: tuple[int, ...] = ()) -> Tensor:
        if isinstance(v, Tensor):
            return self.cast(v, dt)
        self.check_fits(v, dt)
        return self.const(v, dt)

    # ------------------------------------------------------------ binary / unary

    def binary(self, op: str, a: Any, b: Any) -> Any:
        """``a <op> b`` where op is a Python operator name (add, sub, ..., lt, eq, minimum)."""
        ta, tb = isinstance(a, Tensor), isinstance(b, Tensor)
        if not ta and not tb:
            return self._fold(op, a, b)
        for v in (a, b):
            if not isinstance(v, Tensor) and not is_number(v):
                raise SemanticError(
                    f"unsupported operand for {_SYMBOL.get(op, op)}: {describe(v)}",
                    "operands must be blocks, scalars or numbers",
                )
        if (ta and a.is_pointer) or (tb and b.is_pointer):
            return self._pointer_binary(op, a, b)
        if op == "pow":
            raise SemanticError("** is not supported on blocks",
                                "write x * x, or tl.exp2(y * tl.log2(x)) for a float power")
        dt = self.common_dtype(a, b)
        if op in _BITWISE:
            if dt.is_float:
                raise SemanticError(
                    f"{_SYMBOL[op]} needs integer or bool operands, got {self._dtypes_text(a, b)}",
                    "bitwise operators work on ints and bools; compare floats first (x > 0) or convert"
                    " with .to(tl.i32)",
                )
        elif op in _SHIFT:
            if dt.is_float:
                raise SemanticError(
                    f"{_SYMBOL[op]} needs integer operands, got {self._dtypes_text(a, b)}",
                    "shifts work on ints; convert with .to(tl.i32)",
                )
            if dt.is_bool:
                dt = i32
        elif op in _ARITH or op in _ORDER:
            if dt.is_bool:
                dt = i32
        elif op == "truediv":
            if not dt.is_float:
                dt = f32
        if op == "rshift" and dt.is_unsigned and self._signed_operand(a):
            return self._arithmetic_rshift(a, b, dt)
        x, y = self._operand(a, dt), self._operand(b, dt)
        x, y = self.broadcast_pair(x, y)
        if op == "truediv":
            return Tensor(self.b.op("div", x.value, y.value))
        if op == "floordiv":
            q = self.b.op("div", x.value, y.value)
            return Tensor(self.b.op("floor", q) if dt.is_float else q)
        return Tensor(self.b.op(_IR_BINARY[op], x.value, y.value))

    @staticmethod
    def _signed_operand(v: Any) -> bool:
        """True when ``v`` is a signed-integer tensor. (A literal left operand never needs the
        arithmetic shift: a negative one does not fit the unsigned result dtype, and Triton types a
        non-negative one too large for the signed range as unsigned.)"""
        return isinstance(v, Tensor) and v.dtype.is_signed

    def _arithmetic_rshift(self, a: Any, b: Any, dt: DType) -> Tensor:
        """``a >> b`` for a signed ``a`` whose promotion with ``b`` is the unsigned ``dt``.

        Triton picks the shift from the *left* operand before promotion (``tensor.__rshift__``:
        ``ashr`` when ``self`` is signed), then shifts the promoted (unsigned) bits. The IR's
        ``shr`` takes its kind from the operand dtype, so the shift is done in the signed dtype of
        ``dt``'s width and the bits are reinterpreted as ``dt``: i32 -8 >> u32 1 is 0xFFFFFFFC.
        """
        sdt = _SIGNED_OF_WIDTH[dt.bits]
        x = self._operand(a, sdt)  # sign-extends a narrower signed operand, as Triton's cast does
        if isinstance(b, Tensor):
            y = self.cast(b, dt)  # widen the amount as unsigned first (zero-extension) ...
            y = self.cast(y, sdt, bitcast=True)  # ... then reinterpret; the shift sees the same bits
        else:
            self.check_fits(b, dt)
            y = self.convert(b, sdt)
        x, y = self.broadcast_pair(x, y)
        r = Tensor(self.b.op("shr", x.value, y.value))
        return self.cast(r, dt, bitcast=True)

    @staticmethod
    def _dtypes_text(a: Any, b: Any) -> str:
        def one(v):
            return str(v.type) if isinstance(v, Tensor) else repr(v)

        return f"{one(a)} and {one(b)}"

    def _fold(self, op: str, a: Any, b: Any) -> Any:
        fn = _FOLD.get(op)
        if fn is None:
            raise SemanticError(f"operator {op} is not supported")
        try:
            return fn(a, b)
        except ZeroDivisionError:
            raise SemanticError(f"compile-time division by zero in {a!r} {_SYMBOL.get(op, op)} {b!r}") from None
        except TypeError:
            raise SemanticError(
                f"unsupported operands for {_SYMBOL.get(op, op)}: {describe(a)} and {describe(b)}"
            ) from None

    def _offset(self, v: Any) -> Tensor:
        if isinstance(v, Tensor):
            if v.is_pointer or not (v.dtype.is_int or v.dtype.is_bool):
                raise SemanticError(
                    f"a pointer offset must be an integer, got {v.type}",
                    "offsets count elements; convert with .to(tl.i32)",
                )
            return self.cast(v, i32) if v.dtype.is_bool else v
        if isinstance(v, int):
            return self.const(v, self.default_dtype(int(v)) if not isinstance(v, bool) else i32)
        raise SemanticError(f"a pointer offset must be an integer, got {describe(v)}")

    def _pointer_binary(self, op: str, a: Any, b: Any) -> Any:
        pa = isinstance(a, Tensor) and a.is_pointer
        pb = isinstance(b, Tensor) and b.is_pointer
        if op == "add" and pa != pb:
            ptr, off = (a, b) if pa else (b, a)
            return self.addptr(ptr, self._offset(off))
        if op == "sub" and pa and not pb:
            off = self._offset(b)
            if off.dtype.is_unsigned:
                off = self.cast(off, i64)
            return self.addptr(a, Tensor(self.b.op("neg", off.value)))
        if op in _EQUALITY and pa and pb:
            x, y = self.broadcast_pair(a, b)
            return Tensor(self.b.op(op, x.value, y.value))
        raise SemanticError(
            f"unsupported pointer arithmetic: {self._dtypes_text(a, b)} with {_SYMBOL.get(op, op)}",
            "pointers support ptr + offsets and ptr - offsets (integer element offsets)",
        )

    def addptr(self, ptr: Tensor, off: Tensor) -> Tensor:
        shape = self.broadcast_shapes(ptr.shape, off.shape)
        p, o = self.broadcast_to(ptr, shape), self.broadcast_to(off, shape)
        return Tensor(self.b.op("addptr", p.value, o.value))

    def unary(self, op: str, a: Any) -> Any:
        """``-a``, ``+a``, ``~a`` or ``not a``."""
        if not isinstance(a, Tensor):
            try:
                return {"neg": operator.neg, "pos": operator.pos, "invert": operator.invert,
                        "not": operator.not_}[op](a)
            except TypeError:
                raise SemanticError(f"unsupported operand for unary {op}: {describe(a)}") from None
        if a.is_pointer:
            raise SemanticError(f"unsupported operand for unary {op}: {a.type}")
        if op == "pos":
            return a
        if op == "neg":
            if a.dtype.is_bool:
                a = self.cast(a, i32)
            return Tensor(self.b.op("neg", a.value))
        if op == "invert":
            if a.dtype.is_float:
                raise SemanticError(f"~ needs an integer or bool operand, got {a.type}",
                                    "use `x == 0` for a logical not of a float")
            return Tensor(self.b.op("not", a.value))
        # logical not
        return Tensor(self.b.op("not", self.cast(a, bool_).value))

    def logical(self, op: str, a: Tensor | Any, b: Tensor | Any) -> Tensor:
        """``a and b`` / ``a or b`` on runtime values: both sides are evaluated (as ``&``/``|``)."""
        x, y = self.cast(self.to_tensor(a), bool_), self.cast(self.to_tensor(b), bool_)
        x, y = self.broadcast_pair(x, y)
        return Tensor(self.b.op(op, x.value, y.value))

    def where(self, cond: Any, x: Any, y: Any) -> Tensor:
        c = self.to_tensor(cond)
        if c.is_pointer:
            raise SemanticError(f"the condition of tl.where must be bool, got {c.type}", arg="condition")
        c = self.cast(c, bool_)
        if not isinstance(x, Tensor) and not isinstance(y, Tensor):
            x, y = self.to_tensor(x), self.to_tensor(y)
        for v, n in ((x, "x"), (y, "y")):
            if not isinstance(v, Tensor) and not is_number(v):
                raise SemanticError(f"tl.where: {n} must be a block or a number, got {describe(v)}", arg=n)
        if isinstance(x, Tensor) and x.is_pointer or isinstance(y, Tensor) and y.is_pointer:
            if not (isinstance(x, Tensor) and isinstance(y, Tensor) and x.type.elem == y.type.elem):
                raise SemanticError("tl.where on pointers needs two pointers of one type")
            tx, ty = x, y
        else:
            dt = self.common_dtype(x, y)
            tx, ty = self._operand(x, dt), self._operand(y, dt)
        shape = self.broadcast_shapes(self.broadcast_shapes(c.shape, tx.shape), ty.shape)
        c, tx, ty = (self.broadcast_to(v, shape) for v in (c, tx, ty))
        return Tensor(self.b.op("where", c.value, tx.value, ty.value))

    # ------------------------------------------------------------ math

    def float_unary(self, name: str, x: Any, shown_name: str | None = None) -> Tensor:
        """The IR op ``name`` on a float operand (``shown_name``: the language name for messages,
        ``tl.<it>`` unless it names its namespace, as ``libdevice.nearbyint``)."""
        t = self.const(float(x), f32) if is_number(x) else x
        if not isinstance(t, Tensor) or t.is_pointer or not t.dtype.is_float:
            shown = t.type if isinstance(t, Tensor) else describe(t)
            fn = shown_name or name
            fn = fn if "." in fn else f"tl.{fn}"
            raise SemanticError(f"{fn} needs a float operand, got {shown}",
                                f"convert first: {fn}(x.to(tl.f32))", arg="x")
        if name == "sigmoid":
            dt = t.dtype
            e = self.b.op("exp", self.b.op("neg", t.value))
            one = self.splat(self.const(1.0, dt), t.shape).value
            return Tensor(self.b.op("div", one, self.b.op("add", one, e)))
        return Tensor(self.b.op(name, t.value))

    def abs(self, x: Any) -> Any:
        if is_number(x):
            return abs(x)
        if not isinstance(x, Tensor) or x.is_pointer or x.dtype.is_bool:
            raise SemanticError(f"tl.abs needs a numeric operand, got {describe(x)}", arg="x")
        return Tensor(self.b.op("abs", x.value))

    def fma(self, x: Any, y: Any, z: Any) -> Tensor:
        ts = [v for v in (x, y, z) if isinstance(v, Tensor)]
        if not ts:
            x = self.to_tensor(float(x))
            ts = [x]
        dt = ts[0].dtype
        for t in ts[1:]:
            dt = promote(dt, t.dtype)
        for v in (x, y, z):
            if isinstance(v, float) and not dt.is_float:
                dt = f32
        if not dt.is_float:
            raise SemanticError(f"tl.fma needs float operands, got {dt}", "convert first with .to(tl.f32)")
        ops = [self._operand(float(v) if is_number(v) else v, dt) for v in (x, y, z)]
        shape = self.broadcast_shapes(self.broadcast_shapes(ops[0].shape, ops[1].shape), ops[2].shape)
        ops = [self.broadcast_to(o, shape) for o in ops]
        return Tensor(self.b.op("fma", *(o.value for o in ops)))

    # ------------------------------------------------------------ program model

    def axis_arg(self, axis: Any) -> int:
        if not isinstance(axis, int) or isinstance(axis, bool) or not 0 <= axis <= 2:
            raise SemanticError(f"axis must be a compile-time 0, 1 or 2, got {describe(axis)}", arg="axis")
        self.max_axis = max(self.max_axis, axis)
        return axis

    def program_id(self, axis: Any) -> Tensor:
        return Tensor(self.b.op("program_id", axis=self.axis_arg(axis)))

    def num_programs(self, axis: Any) -> Tensor:
        return Tensor(self.b.op("num_programs", axis=self.axis_arg(axis)))

    def arange(self, start: Any, end: Any) -> Tensor:
        for v, n in ((start, "start"), (end, "end")):
            if not isinstance(v, int) or isinstance(v, bool):
                raise SemanticError(
                    f"tl.arange bounds must be compile-time ints; {n} is {describe(v)}",
                    "block shapes are static: make the size a tl.constexpr parameter "
                    "(BLOCK: tl.constexpr), use tl.arange(0, BLOCK) and mask with offs < n",
                    arg=n,
                )
        if end <= start:
            raise SemanticError(f"tl.arange needs start < end, got start={start} end={end}", arg="end")
        return Tensor(self.b.op("arange", start=start, end=end))

    def full(self, shape: Any, value: Any, dtype: Any) -> Tensor:
        shape = self.shape_arg(shape) if shape != () else ()
        if not isinstance(dtype, DType):
            raise SemanticError(f"dtype must be a dtype such as tl.f32, got {describe(dtype)}", arg="dtype")
        if isinstance(value, Tensor):
            if value.is_block:
                raise SemanticError(f"the fill value must be a scalar, got {value.type}", arg="value")
            v = self.cast(value, dtype)
        elif is_number(value):
            v = self.convert(value, dtype)
        else:
            raise SemanticError(f"the fill value must be a number, got {describe(value)}", arg="value")
        return self.splat(v, shape)

    def cdiv(self, a: Any, b: Any) -> Any:
        if not isinstance(a, Tensor) and not isinstance(b, Tensor):
            if not all(isinstance(v, int) for v in (a, b)):
                raise SemanticError(f"tl.cdiv needs integers, got {describe(a)} and {describe(b)}")
            if b == 0:
                raise SemanticError("tl.cdiv: division by zero", arg="b")
            return -(-a // b)
        return self.binary("floordiv", self.binary("add", a, self.binary("sub", b, 1)), b)

    def loop_bounds(self, lo: Any, hi: Any, step: Any) -> tuple[Tensor, Tensor, Tensor, Any, Tensor | None]:
        """The IR ``for`` operands of ``range(lo, hi, step)`` and the loop-variable function
        (:func:`eggpu.kernel_macro.loops.loop_bounds`)."""
        from .loops import loop_bounds

        return loop_bounds(self, lo, hi, step)

    def condition(self, v: Tensor, what: str = "if statement") -> Tensor:
        """A bool scalar for a runtime ``if`` (or ``while``: ``what``)."""
        if v.is_block:
            raise SemanticError(
                f"the condition of an {what} must be a scalar, got a block ({v.type})" if what[0] in "aeiou"
                else f"the condition of a {what} must be a scalar, got a block ({v.type})",
                "per-lane conditions are written with tl.where(mask, a, b) or as the mask of "
                "tl.load/tl.store; use tl.sum/tl.max to reduce a block to a scalar",
            )
        if v.is_pointer:  # Triton: a pointer is true when not null (its int1 cast is `ptr != 0`)
            return self.binary("ne", self.cast(v, i64), 0)
        return self.cast(v, bool_)

    # ------------------------------------------------------------ reductions

    def reduce(self, kind: str, x: Any, axis: Any, keep_dims: Any, widen: bool = True) -> Tensor:
        """``tl.sum/max/min/argmax/argmin``. As Triton, ``sum`` of integers narrower than 32 bits
        (and bool) is i32/u32, ``max``/``min`` of dtypes narrower than 32 bits are f32 (floats) or
        i32 (integers, bool); ``widen=False`` (``tl.sum(dtype=...)``, ``return_indices=True``)
        reduces in the input's own dtype."""
        name = {"reduce_sum": "sum", "reduce_max": "max", "reduce_min": "min",
                "reduce_argmax": "argmax", "reduce_argmin": "argmin"}[kind]
        if not isinstance(x, Tensor) or not x.is_block or x.is_pointer:
            raise SemanticError(f"tl.{name} needs a block, got {describe(x)}", arg="input")
        if not isinstance(keep_dims, bool):
            raise SemanticError(f"keep_dims must be a compile-time bool, got {describe(keep_dims)}",
                                arg="keep_dims")
        if widen and kind == "reduce_sum" and (x.dtype.is_bool or (x.dtype.is_int and x.dtype.bits < 32)):
            x = self.cast(x, u32 if x.dtype.is_unsigned else i32)
        if widen and kind in ("reduce_max", "reduce_min") and x.dtype.bits < 32:
            # Triton's tl.max/tl.min (without return_indices): narrower floats reduce in f32,
            # narrower integers (unsigned and bool too) in i32, so the result has that dtype
            x = self.cast(x, f32 if x.dtype.is_float or x.dtype.is_fp8 else i32)
        if x.dtype.is_bool:
            raise SemanticError(f"tl.{name} needs a numeric block, got {x.type}",
                                "convert first: x.to(tl.i32)", arg="input")
        rank = x.type.rank
        if axis is None:
            flat = x if rank == 1 else self.reshape(x, (x.type.numel,))
            r = Tensor(self.b.op(kind, flat.value, axis=0))
            return self.splat(r, (1,) * rank) if keep_dims else r
        if not isinstance(axis, int) or isinstance(axis, bool):
            raise SemanticError(f"axis must be a compile-time int or None, got {describe(axis)}", arg="axis")
        a = axis + rank if axis < 0 else axis
        if not 0 <= a < rank:
            raise SemanticError(f"axis {axis} is out of range for a block of rank {rank}", arg="axis")
        r = Tensor(self.b.op(kind, x.value, axis=a))
        return Tensor(self.b.op("expand_dims", r.value, axis=a)) if keep_dims else r

    def dot(self, a: Any, b: Any, acc: Any, precision: str = "ieee") -> Tensor:
        """``tl.dot``; ``precision`` "tf32" applies to f32 operands only (others ignore it, as in Triton).

        FP8 operands (e4m3 and e5m2, in any combination) are converted to f16 first: exact for both
        formats, so the products are exact and the dot is the f16 dot (f32 accumulation)."""
        for v, n in ((a, "a"), (b, "b")):
            if not isinstance(v, Tensor) or v.type.rank != 2 or v.is_pointer:
                shown = v.type if isinstance(v, Tensor) else describe(v)
                raise SemanticError(f"tl.dot needs 2-D blocks, got {shown} for {n}",
                                    "add a dimension with x[:, None] / x[None, :]", arg=n)
        if a.shape[1] != b.shape[0]:
            raise SemanticError(
                f"tl.dot needs [M, K] x [K, N] blocks, got {fmt_shape(a.shape)} and {fmt_shape(b.shape)}"
            )
        if a.dtype.is_fp8 and b.dtype.is_fp8:  # any FP8 pair (as Triton): f16 holds both formats exactly
            a, b = self.cast(a, f16), self.cast(b, f16)
        elif a.dtype != b.dtype:
            dt = promote(a.dtype, b.dtype)
            a, b = self.cast(a, dt), self.cast(b, dt)
        if a.dtype.is_bool:
            raise SemanticError("tl.dot needs numeric blocks, got bool", "convert with .to(tl.i32)")
        out = f32 if a.dtype.is_float else i32
        pa = {"precision": "tf32"} if precision == "tf32" and a.dtype == f32 else {}
        if acc is None:
            return Tensor(self.b.op("dot", a.value, b.value, **pa))
        want = (a.shape[0], b.shape[1])
        acc_t = self.to_tensor(acc) if not isinstance(acc, Tensor) else acc
        acc_t = self.broadcast_to(acc_t, want)
        if acc_t.is_pointer or acc_t.dtype.is_bool:
            raise SemanticError(f"tl.dot: acc must be a numeric block, got {acc_t.type}", arg="acc")
        if acc_t.dtype == out:
            return Tensor(self.b.op("dot", a.value, b.value, acc_t.value, **pa))
        if acc_t.dtype.is_float and not out.is_float:  # integer product, float accumulator
            prod = self.cast(Tensor(self.b.op("dot", a.value, b.value, **pa)), acc_t.dtype)
            return Tensor(self.b.op("add", prod.value, acc_t.value))
        r = Tensor(self.b.op("dot", a.value, b.value, self.cast(acc_t, out).value, **pa))
        return self.cast(r, acc_t.dtype)


__all__ = ["FLOAT_FUNCTIONS", "Semantic", "SemanticError", "Tensor", "describe", "fmt_shape", "is_number"]
