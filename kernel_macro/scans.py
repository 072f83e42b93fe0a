"""Scans and reductions with a combine function: ``tl.associative_scan``, ``tl.reduce``,
``tl.cumsum``, ``tl.cumprod`` and ``tl.xor_sum``.

``combine_fn`` is an ``@eggpu.jit`` (or same-module) function of ``2 * k`` values returning ``k``
values (``k`` = 1 for a single input block, the tuple length otherwise); the frontend inlines it
where this module calls it. Both are built from the IR's ``gather`` and elementwise ops, so they
need no IR op of their own and work on any axis, in the interpreter, the optimizer and codegen:

* **scan** (inclusive, Hillis-Steele): for ``d = 1, 2, 4, ... < n`` every lane ``i >= d`` becomes
  ``combine(v[i - d], v[i])`` (``reverse=True``: lanes ``i + d < n`` become ``combine(v[i], v[i + d])``).
  The combine is applied to contiguous, adjacent ranges in order, so it needs to be associative
  but not commutative — exactly Triton's contract.
* **reduce** (pairwise tree): for ``s = 1, 2, 4, ... < n`` every lane ``i`` that is a multiple of
  ``2s`` with ``i + s < n`` becomes ``combine(v[i], v[i + s])``; lane 0 then holds the combination
  of the whole axis, in order.

``cumsum`` sums integers narrower than 32 bits in i32 (u32 when unsigned), like Triton's
``_pick_sum_dtype``; ``dtype=`` picks the accumulation dtype; both scans compute bf16 in f32
(Triton's ``_promote_bfloat16_to_float32``). Floating-point scans combine in a
tree order, so their rounding differs from a sequential sum (Triton's does too).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from eggpu.ir.dtypes import DType, bf16, f32, i32, u32

from .frontend_ops import Semantic, SemanticError, Tensor, describe
from .shuffles import axis_arg, gather_raw, iota, squeeze, take

Combine = Callable[[list[Tensor], list[Tensor]], list[Tensor]]


def _inputs(s: Semantic, v: Any, fn: str) -> tuple[list[Tensor], bool]:
    """The input blocks (one shape) and whether they came as a tuple."""
    is_tuple = isinstance(v, tuple)
    xs = list(v) if is_tuple else [v]
    if not xs:
        raise SemanticError(f"tl.{fn} needs at least one block", arg="input")
    for x in xs:
        if not isinstance(x, Tensor) or not x.is_block or x.is_pointer:
            shown = x.type if isinstance(x, Tensor) else describe(x)
            raise SemanticError(f"tl.{fn} needs blocks of values, got {shown}", arg="input")
        if x.shape != xs[0].shape:
            raise SemanticError(f"tl.{fn}: every input block needs one shape, got {xs[0].type} and {x.type}",
                                arg="input")
    return xs, is_tuple


def user_combine(s: Semantic, fn: Any, dtypes: list[DType], name: str) -> Combine:
    """Wrap the frontend's callable for ``combine_fn`` so that it returns one block per input,
    each converted to its input's dtype and broadcast to the operands' shape."""
    if not callable(fn):
        raise SemanticError(f"tl.{name}: combine_fn must be an @eggpu.jit function, got {describe(fn)}",
                            arg="combine_fn")

    def combine(left: list[Tensor], right: list[Tensor]) -> list[Tensor]:
        r = fn(*left, *right)
        rs = list(r) if isinstance(r, tuple) else [r]
        if len(rs) != len(dtypes):
            raise SemanticError(f"tl.{name}: combine_fn returned {len(rs)} value(s) for {len(dtypes)} input(s)",
                                "return one value per input block", arg="combine_fn")
        shape = left[0].shape
        return [s.broadcast_to(s.convert(v, dt), shape) for v, dt in zip(rs, dtypes)]

    return combine


def scan(s: Semantic, xs: list[Tensor], axis: int, combine: Combine, reverse: bool) -> list[Tensor]:
    """Inclusive scan of ``xs`` along ``axis`` (see the module docstring)."""
    shape = xs[0].shape
    n = shape[axis]
    i = iota(s, shape, axis)
    d = 1
    while d < n:
        if reverse:
            src = s.binary("minimum", s.binary("add", i, d), n - 1)
            valid = s.binary("lt", i, n - d)
        else:
            src = s.binary("maximum", s.binary("sub", i, d), 0)
            valid = s.binary("ge", i, d)
        other = [gather_raw(s, x, src, axis) for x in xs]
        new = combine(xs, other) if reverse else combine(other, xs)
        xs = [s.where(valid, a, b) for a, b in zip(new, xs)]
        d *= 2
    return xs


def tree_reduce(s: Semantic, xs: list[Tensor], axis: int, combine: Combine, keep_dims: bool) -> list[Tensor]:
    """Reduction of ``xs`` along ``axis`` in index order (see the module docstring)."""
    shape = xs[0].shape
    n = shape[axis]
    i = iota(s, shape, axis)
    step = 1
    while step < n:
        partner = s.binary("minimum", s.binary("add", i, step), n - 1)
        other = [gather_raw(s, x, partner, axis) for x in xs]
        new = combine(xs, other)
        active = s.binary("and", s.binary("eq", s.binary("and", i, 2 * step - 1), 0),
                          s.binary("lt", i, n - step))
        xs = [s.where(active, a, b) for a, b in zip(new, xs)]
        step *= 2
    firsts = [take(s, x, axis, 0) for x in xs]
    return firsts if keep_dims else [squeeze(s, x, axis) for x in firsts]


def _flatten_for_none_axis(s: Semantic, xs: list[Tensor], keep_dims: bool) -> tuple[list[Tensor], int, tuple]:
    shape = xs[0].shape
    flat = [s.reshape(x, (x.type.numel,)) if x.type.rank > 1 else x for x in xs]
    return flat, 0, shape


def _keep_dims(v: Any, fn: str) -> bool:
    if not isinstance(v, bool):
        raise SemanticError(f"tl.{fn}: keep_dims must be a compile-time bool, got {describe(v)}", arg="keep_dims")
    return v


def _reduce_impl(s: Semantic, v: Any, axis: Any, combine_fn: Any, keep_dims: Any, fn: str,
                 combine: Combine | None = None) -> Any:
    xs, is_tuple = _inputs(s, v, fn)
    keep = _keep_dims(keep_dims, fn)
    if combine is None:
        combine = user_combine(s, combine_fn, [x.dtype for x in xs], fn)
    if axis is None:
        rank = xs[0].type.rank
        flat, ax, _ = _flatten_for_none_axis(s, xs, keep)
        out = tree_reduce(s, flat, ax, combine, keep_dims=False)
        if keep:
            out = [s.splat(o, (1,) * rank) for o in out]
    else:
        ax = axis_arg(xs[0], axis, fn)
        out = tree_reduce(s, xs, ax, combine, keep)
    return tuple(out) if is_tuple else out[0]


def reduce(s: Semantic, a: dict[str, Any]) -> Any:
    return _reduce_impl(s, a["input"], a["axis"], a["combine_fn"], a["keep_dims"], "reduce")


def reduce_with(s: Semantic, a: dict[str, Any], fn: str, op: str) -> Any:
    """``tl.{fn}``: the bitwise ``op`` of an integer block along ``a["axis"]`` (None: all)."""
    x = a["input"]
    if isinstance(x, Tensor) and not x.is_pointer and not x.dtype.is_int:
        raise SemanticError(f"tl.{fn} needs an integer block, got {x.type}", arg="input")

    def combine(left: list[Tensor], right: list[Tensor]) -> list[Tensor]:
        return [s.binary(op, left[0], right[0])]

    return _reduce_impl(s, x, a["axis"], None, a["keep_dims"], fn, combine)


def xor_sum(s: Semantic, a: dict[str, Any]) -> Any:
    return reduce_with(s, a, "xor_sum", "xor")


def _reverse(v: Any, fn: str) -> bool:
    if not isinstance(v, bool):
        raise SemanticError(f"tl.{fn}: reverse must be a compile-time bool, got {describe(v)}", arg="reverse")
    return v


def associative_scan(s: Semantic, a: dict[str, Any]) -> Any:
    xs, is_tuple = _inputs(s, a["input"], "associative_scan")
    axis = axis_arg(xs[0], a["axis"], "associative_scan")
    combine = user_combine(s, a["combine_fn"], [x.dtype for x in xs], "associative_scan")
    out = scan(s, xs, axis, combine, _reverse(a["reverse"], "associative_scan"))
    return tuple(out) if is_tuple else out[0]


def _sum_dtype(x: Tensor, dtype: Any, fn: str) -> DType:
    if dtype is not None:
        if not isinstance(dtype, DType):
            raise SemanticError(f"tl.{fn}: dtype must be a dtype such as tl.float32, got {describe(dtype)}",
                                arg="dtype")
        return dtype
    if x.dtype.is_bool or (x.dtype.is_int and x.dtype.bits < 32):
        return u32 if x.dtype.is_unsigned or x.dtype.is_bool else i32
    return x.dtype


def _cumulative(op: str, fn: str, promote: bool):
    def impl(s: Semantic, a: dict[str, Any]) -> Tensor:
        (x,), _ = _inputs(s, a["input"], fn)
        axis = axis_arg(x, a["axis"], fn)
        if x.dtype == bf16:  # Triton's _promote_bfloat16_to_float32
            x = s.cast(x, f32)
        if promote:
            x = s.cast(x, _sum_dtype(x, a["dtype"], fn))
        elif x.dtype.is_bool:
            raise SemanticError(f"tl.{fn} needs a numeric block, got {x.type}", "convert first: x.to(tl.int32)",
                                arg="input")

        def combine(left: list[Tensor], right: list[Tensor]) -> list[Tensor]:
            return [s.binary(op, left[0], right[0])]

        return scan(s, [x], axis, combine, _reverse(a["reverse"], fn))[0]

    return impl


IMPLS: dict[str, Any] = {
    "reduce": reduce, "associative_scan": associative_scan, "xor_sum": xor_sum,
    "cumsum": _cumulative("add", "cumsum", True), "cumprod": _cumulative("mul", "cumprod", False),
}

__all__ = ["IMPLS", "scan", "tree_reduce", "user_combine", "i32"]
