"""Triton's element-reordering functions, built on the IR's ``gather`` and shape ops.

* ``gather(src, index, axis)``: the IR ``gather`` (an index outside the axis is clamped into it;
  Triton leaves it undefined);
* ``join(a, b)``: a new minor axis of size 2 (``where`` on that axis' coordinate), ``split(a)``
  its inverse (two gathers of a constant index), ``interleave(a, b)`` = ``join`` then merge the
  two minor axes;
* ``cat(a, b)``: ``a`` then ``b`` along axis 0 (Triton may reorder the elements with
  ``can_reorder=True``; eggpu keeps the order, which is one of the orders Triton allows);
* ``flip(x, dim)``: gather with the reversed index (``dim`` defaults to the last axis);
* ``histogram(x, num_bins, mask)``: i32 counts of the values ``0 .. num_bins-1`` of a 1-D integer
  block (a comparison block summed along the input axis, in chunks of bins); values outside the
  bins and masked-off lanes are not counted.
"""

from __future__ import annotations

from typing import Any

from eggpu.ir.dtypes import bool_, i8, i32

from .frontend_ops import Semantic, SemanticError, Tensor, describe, fmt_shape

_HISTOGRAM_LANES = 4096  # largest (values x bins) comparison block at once (its reduction stages it in shared memory)


def block_arg(s: Semantic, v: Any, fn: str, arg: str) -> Tensor:
    if not isinstance(v, Tensor) or not v.is_block or v.is_pointer:
        shown = v.type if isinstance(v, Tensor) else describe(v)
        raise SemanticError(f"tl.{fn} needs a block of values, got {shown}", arg=arg)
    return v


def axis_arg(x: Tensor, axis: Any, fn: str, arg: str = "axis") -> int:
    rank = x.type.rank
    if not isinstance(axis, int) or isinstance(axis, bool) or not -rank <= axis < rank:
        raise SemanticError(f"tl.{fn}: {arg} must be a compile-time int in [{-rank}, {rank}), got {describe(axis)}",
                            arg=arg)
    return axis % rank


def iota(s: Semantic, shape: tuple[int, ...], axis: int) -> Tensor:
    """i32 block of ``shape`` holding each lane's coordinate along ``axis``."""
    n = shape[axis]
    r = s.arange(0, n)
    view = tuple(n if d == axis else 1 for d in range(len(shape)))
    return s.broadcast_to(s.reshape(r, view) if len(shape) > 1 else r, shape)


def gather_raw(s: Semantic, src: Tensor, index: Tensor, axis: int) -> Tensor:
    return Tensor(s.b.op("gather", src.value, index.value, axis=axis))


def squeeze(s: Semantic, x: Tensor, axis: int) -> Tensor:
    """Drop the size-1 ``axis`` of ``x`` (a rank-1 block becomes a scalar, read with a one-lane
    ``reduce_max``, which returns its only element exactly)."""
    if x.type.rank > 1:
        return s.reshape(x, x.shape[:axis] + x.shape[axis + 1:])
    if x.dtype.is_bool:
        return s.cast(Tensor(s.b.op("reduce_max", s.cast(x, i8).value, axis=0)), bool_)
    return Tensor(s.b.op("reduce_max", x.value, axis=0))


def take(s: Semantic, x: Tensor, axis: int, k: int) -> Tensor:
    """``x[..., k, ...]`` along ``axis`` with that axis kept as size 1."""
    shape = x.shape[:axis] + (1,) + x.shape[axis + 1:]
    return gather_raw(s, x, s.literal(k, i32, shape), axis)


def gather(s: Semantic, a: dict[str, Any]) -> Tensor:
    src = block_arg(s, a["src"], "gather", "src")
    index = a["index"]
    if not isinstance(index, Tensor) or index.is_pointer or not index.dtype.is_int:
        shown = index.type if isinstance(index, Tensor) else describe(index)
        raise SemanticError(f"tl.gather: index must be an integer block, got {shown}", arg="index")
    axis = axis_arg(src, a["axis"], "gather")
    if index.type.rank != src.type.rank or any(
            d != axis and x != y for d, (x, y) in enumerate(zip(src.shape, index.shape))):
        raise SemanticError(f"tl.gather: index shape {fmt_shape(index.shape)} must equal the source shape "
                            f"{fmt_shape(src.shape)} except along axis {axis}", arg="index")
    return gather_raw(s, src, index, axis)


def _pair(s: Semantic, a: Any, b: Any, fn: str) -> tuple[Tensor, Tensor]:
    for v, n in ((a, "a"), (b, "b")):
        if isinstance(v, Tensor) and v.is_pointer:
            raise SemanticError(f"tl.{fn} does not accept pointers, got {v.type}", arg=n)
        if not isinstance(v, Tensor) and not isinstance(v, int | float):
            raise SemanticError(f"tl.{fn} needs blocks or numbers, got {describe(v)}", arg=n)
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        a = s.to_tensor(a)
    dt = s.common_dtype(a, b)
    ta, tb = s.convert(a, dt), s.convert(b, dt)
    return s.broadcast_pair(ta, tb)


def join_tensors(s: Semantic, a: Tensor, b: Tensor) -> Tensor:
    shape = a.shape + (2,)
    ea = s.broadcast_to(s.reshape(a, a.shape + (1,)) if a.shape else s.splat(a, (1,)), shape)
    eb = s.broadcast_to(s.reshape(b, b.shape + (1,)) if b.shape else s.splat(b, (1,)), shape)
    first = s.binary("eq", iota(s, shape, len(shape) - 1), 0)
    return s.where(first, ea, eb)


def join(s: Semantic, a: dict[str, Any]) -> Tensor:
    x, y = _pair(s, a["a"], a["b"], "join")
    return join_tensors(s, x, y)


def split(s: Semantic, a: dict[str, Any]) -> tuple[Tensor, Tensor]:
    x = block_arg(s, a["a"], "split", "a")
    if x.shape[-1] != 2:
        raise SemanticError(f"tl.split needs a block whose last dimension is 2, got shape {fmt_shape(x.shape)}",
                            "tl.join(a, b) builds such a block", arg="a")
    last = x.type.rank - 1
    return squeeze(s, take(s, x, last, 0), last), squeeze(s, take(s, x, last, 1), last)


def interleave(s: Semantic, a: dict[str, Any]) -> Tensor:
    x, y = _pair(s, a["a"], a["b"], "interleave")
    j = join_tensors(s, x, y)
    if j.type.rank == 1:
        return j
    return s.reshape(j, j.shape[:-2] + (j.shape[-2] * 2,))


def cat(s: Semantic, a: dict[str, Any]) -> Tensor:
    if not isinstance(a["can_reorder"], bool):
        raise SemanticError(f"can_reorder must be a compile-time bool, got {describe(a['can_reorder'])}",
                            arg="can_reorder")
    x = block_arg(s, a["input"], "cat", "input")
    y = block_arg(s, a["other"], "cat", "other")
    if x.shape[1:] != y.shape[1:]:
        raise SemanticError(f"tl.cat needs blocks that differ only in their first dimension, got "
                            f"{fmt_shape(x.shape)} and {fmt_shape(y.shape)}", arg="other")
    dt = s.common_dtype(x, y)
    x, y = s.cast(x, dt), s.cast(y, dt)
    n, m = x.shape[0], y.shape[0]
    shape = (n + m,) + x.shape[1:]
    i = iota(s, shape, 0)
    from_x = gather_raw(s, x, s.binary("minimum", i, n - 1), 0)
    from_y = gather_raw(s, y, s.binary("maximum", s.binary("sub", i, n), 0), 0)
    return s.where(s.binary("lt", i, n), from_x, from_y)


def flip(s: Semantic, a: dict[str, Any]) -> Tensor:
    x = block_arg(s, a["x"], "flip", "x")
    dim = x.type.rank - 1 if a["dim"] is None else axis_arg(x, a["dim"], "flip", "dim")
    n = x.shape[dim]
    return gather_raw(s, x, s.binary("sub", n - 1, iota(s, x.shape, dim)), dim)


def histogram(s: Semantic, a: dict[str, Any]) -> Tensor:
    x = block_arg(s, a["input"], "histogram", "input")
    bins = a["num_bins"]
    if x.type.rank != 1 or not x.dtype.is_int:
        raise SemanticError(f"tl.histogram needs a 1-D integer block, got {x.type}", arg="input")
    if not isinstance(bins, int) or isinstance(bins, bool) or bins < 1:
        raise SemanticError(f"tl.histogram: num_bins must be a positive compile-time int, got {describe(bins)}",
                            arg="num_bins")
    n = x.shape[0]
    mask = a["mask"]
    if mask is not None:
        mask = s.broadcast_to(s.cast(s.to_tensor(mask), bool_), x.shape)
    chunk = bins
    while chunk > 1 and (n * chunk > _HISTOGRAM_LANES or bins % chunk):
        chunk //= 2
    if bins % chunk:
        chunk = 1
    wide = s.cast(x, promote_index(x))
    col = s.reshape(wide, (n, 1))
    out: Tensor | None = None
    for c0 in range(0, bins, chunk):
        b = s.binary("add", iota(s, (n, chunk), 1), c0)
        hit = s.binary("eq", col, b)
        if mask is not None:
            hit = s.binary("and", hit, s.reshape(mask, (n, 1)))
        counts = Tensor(s.b.op("reduce_sum", s.cast(hit, i32).value, axis=0))
        if chunk == bins:
            return counts
        j = iota(s, (bins,), 0)
        placed = gather_raw(s, counts, s.binary("minimum", s.binary("maximum", s.binary("sub", j, c0), 0),
                                                chunk - 1), 0)
        inside = s.binary("and", s.binary("ge", j, c0), s.binary("lt", j, c0 + chunk))
        out = s.where(inside, placed, out if out is not None else s.literal(0, i32, (bins,)))
    assert out is not None
    return out


def promote_index(x: Tensor):
    """The dtype values are compared with bin numbers in (i32 unless wider)."""
    from eggpu.ir.dtypes import promote

    return promote(x.dtype, i32)


def squeeze_impl(s: Semantic, a: dict[str, Any]) -> Tensor:
    """Triton's ``tl.squeeze(x, dim)``: drop the length-1 dimension ``dim`` (negative counts from
    the end); a rank-1 block of one element becomes a scalar."""
    x = block_arg(s, a["x"], "squeeze", "x")
    dim = axis_arg(x, a["dim"], "squeeze", "dim")
    if x.shape[dim] != 1:
        raise SemanticError(f"tl.squeeze: dimension {dim} of the block has length {x.shape[dim]}, not 1",
                            arg="dim")
    return squeeze(s, x, dim)


def unsqueeze(s: Semantic, a: dict[str, Any]) -> Tensor:
    """Triton's ``tl.unsqueeze(x, dim)``: a length-1 dimension inserted at ``dim`` (in
    ``[-rank-1, rank]``), i.e. ``tl.expand_dims``."""
    x = s.to_tensor(a["x"])
    rank = x.type.rank + 1
    dim = a["dim"]
    if not isinstance(dim, int) or isinstance(dim, bool) or not -rank <= dim < rank:
        raise SemanticError(f"tl.unsqueeze: dim must be a compile-time int in [{-rank}, {rank}), got {describe(dim)}",
                            arg="dim")
    return s.expand_dims(x, dim)


IMPLS: dict[str, Any] = {
    "gather": gather, "join": join, "split": split, "interleave": interleave, "cat": cat, "flip": flip,
    "histogram": histogram, "squeeze": squeeze_impl, "unsqueeze": unsqueeze,
}

__all__ = ["IMPLS", "axis_arg", "block_arg", "gather_raw", "iota", "squeeze", "take"]
