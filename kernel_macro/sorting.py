"""``tl.sort``, ``tl.topk``, ``tl.bitonic_merge`` (bitonic networks of gathers), ``tl.swizzle2d``
(grouped program ids) and ``tl.reduce_or``, built on existing IR ops so the interpreter, ``run_cpu``
and the PTX share them.

* ``sort(x, dim=None, descending=False)``: ``x`` sorted along ``dim`` (default: the last axis),
  whose length must be a power of 2 (as in Triton). Each of the ``k(k+1)/2`` steps of a bitonic
  sort of ``2**k`` elements pairs every lane with the lane whose index differs in one bit (a
  ``gather``) and keeps the smaller or the larger of the two by a ``where`` on ``<``/``>``: the
  result is always a permutation of ``x`` (equal values, ``-0.0``/``+0.0`` included, keep their
  bits). NaNs never compare, so they are kept but their positions are unspecified (numpy puts them
  last); a bool block sorts as 0/1.
* ``topk(x, k, dim=None, descending=True)``: the ``k`` largest elements along the last axis,
  largest first (``descending=False``: the smallest, smallest first), ``k`` a power of 2: the
  first ``k`` lanes of the sorted block (a ``gather``). Triton allows only the last axis.
* ``bitonic_merge(x, dim=None, descending=False)``: the last stage of the network alone (distances
  ``n/2 .. 1``): sorts a bitonic block along the last axis; any block comes out permuted.
* ``swizzle2d(i, j, size_i, size_j, size_g)``: the row-major index ``(i, j)`` of a ``size_i x
  size_j`` grid renumbered column-major within groups of ``size_g`` rows (the last group may have
  fewer), Triton's L2-friendly program order; ``(new_i, new_j)`` in the operands' integer type.
* ``reduce_or(input, axis, keep_dims=False)``: bitwise or of an integer block along ``axis``.
"""

from __future__ import annotations

from typing import Any

from eggpu.ir.dtypes import bool_, i8

from .frontend_ops import Semantic, SemanticError, Tensor, describe
from .scans import reduce_with
from .shuffles import axis_arg, block_arg, gather_raw, iota


def _descending(v: Any, fn: str) -> bool:
    if isinstance(v, bool) or (isinstance(v, int) and v in (0, 1)):
        return bool(v)
    raise SemanticError(f"tl.{fn}: descending must be a compile-time bool, got {describe(v)}", arg="descending")


def _power_of_2_dim(s: Semantic, a: dict[str, Any], fn: str, minor_only: bool) -> tuple[Tensor, int, bool]:
    """``(x, dim, is_bool)`` of a sort-like call: ``x`` (bool blocks as i8), its checked ``dim``
    (default: the last axis; Triton's topk and bitonic_merge allow only that one), whose length
    must be a power of 2."""
    x = block_arg(s, a["x"], fn, "x")
    dim = x.type.rank - 1 if a["dim"] is None else axis_arg(x, a["dim"], fn, "dim")
    if minor_only and dim != x.type.rank - 1:
        raise SemanticError(f"tl.{fn}: only the last dimension is supported (as in Triton), got dim={a['dim']}",
                            arg="dim")
    n = x.shape[dim]
    if n & (n - 1):
        raise SemanticError(f"tl.{fn} needs a power-of-2 length along dim {dim}, got {n}",
                            "pad the block to the next power of 2 with values that sort last", arg="x")
    is_bool = x.dtype.is_bool
    return (s.cast(x, i8) if is_bool else x), dim, is_bool


def _merge_stage(s: Semantic, x: Tensor, i: Tensor, stage: int, dim: int, up: Any, descending: bool) -> Tensor:
    """The compare-exchange steps of bitonic stage ``stage`` (distances ``2**(stage-1)`` .. 1):
    runs of ``2**stage`` lanes end sorted ascending where ``up`` holds (descending elsewhere),
    reversed when ``descending``."""
    for sub in range(stage - 1, -1, -1):
        d = 1 << sub
        partner = gather_raw(s, x, s.binary("xor", i, d), dim)
        lower = s.binary("eq", s.binary("and", i, d), 0)  # the first lane of its pair
        keep_min = s.binary("ne" if descending else "eq", lower, up)
        smaller = s.where(s.binary("lt", partner, x), partner, x)
        larger = s.where(s.binary("gt", partner, x), partner, x)
        x = s.where(keep_min, smaller, larger)
    return x


def _sorted(s: Semantic, x: Tensor, dim: int, descending: bool) -> Tensor:
    i = iota(s, x.shape, dim)
    for stage in range(1, x.shape[dim].bit_length()):
        # runs of 2**stage lanes are sorted ascending where bit `stage` of the index is 0
        x = _merge_stage(s, x, i, stage, dim, s.binary("eq", s.binary("and", i, 1 << stage), 0), descending)
    return x


def sort(s: Semantic, a: dict[str, Any]) -> Tensor:
    x, dim, is_bool = _power_of_2_dim(s, a, "sort", minor_only=False)
    x = _sorted(s, x, dim, _descending(a["descending"], "sort"))
    return s.cast(x, bool_) if is_bool else x


def topk(s: Semantic, a: dict[str, Any]) -> Tensor:
    """The ``k`` largest elements along the last dimension, largest first (``descending=False``:
    the ``k`` smallest, smallest first): the first ``k`` lanes of the sorted block."""
    x, dim, is_bool = _power_of_2_dim(s, a, "topk", minor_only=True)
    k, n = a["k"], x.shape[dim]
    if not isinstance(k, int) or isinstance(k, bool) or k < 1 or k & (k - 1) or k > n:
        raise SemanticError(f"tl.topk: k must be a compile-time power of 2 in [1, {n}], got {describe(k)}", arg="k")
    x = _sorted(s, x, dim, _descending(a["descending"], "topk"))
    x = gather_raw(s, x, iota(s, x.shape[:dim] + (k,), dim), dim)
    return s.cast(x, bool_) if is_bool else x


def bitonic_merge(s: Semantic, a: dict[str, Any]) -> Tensor:
    """Triton's last bitonic stage over the whole last dimension: compare-exchange at distances
    ``n/2, ..., 1``, each pair ordered ascending (descending when ``descending``). A bitonic
    input (e.g. an ascending half then a descending half) comes out sorted; any input comes out
    a permutation of itself."""
    x, dim, is_bool = _power_of_2_dim(s, a, "bitonic_merge", minor_only=True)
    n = x.shape[dim]
    if n > 1:
        x = _merge_stage(s, x, iota(s, x.shape, dim), n.bit_length() - 1, dim, True,
                         _descending(a["descending"], "bitonic_merge"))
    return s.cast(x, bool_) if is_bool else x


def swizzle2d(s: Semantic, a: dict[str, Any]) -> tuple[Any, Any]:
    i, j, size_i, size_j, size_g = (a[k] for k in ("i", "j", "size_i", "size_j", "size_g"))
    for name in ("i", "j", "size_i", "size_j", "size_g"):
        v = a[name]
        if isinstance(v, Tensor) and (v.is_pointer or not v.dtype.is_int) or isinstance(v, float):
            shown = v.type if isinstance(v, Tensor) else describe(v)
            raise SemanticError(f"tl.swizzle2d: {name} must be an integer, got {shown}", arg=name)
    flat = s.binary("add", s.binary("mul", i, size_j), j)  # row-major index
    per_group = s.binary("mul", size_g, size_j)  # lanes in a full group of rows
    first_row = s.binary("mul", s.binary("floordiv", flat, per_group), size_g)
    rows = s.binary("minimum", s.binary("sub", size_i, first_row), size_g)  # the last group may be short
    within = s.binary("mod", flat, per_group)
    return s.binary("add", first_row, s.binary("mod", within, rows)), s.binary("floordiv", within, rows)


def reduce_or(s: Semantic, a: dict[str, Any]) -> Any:
    return reduce_with(s, a, "reduce_or", "or")


IMPLS: dict[str, Any] = {"sort": sort, "topk": topk, "bitonic_merge": bitonic_merge, "swizzle2d": swizzle2d,
                         "reduce_or": reduce_or}

__all__ = ["IMPLS"]
