"""The rest of Triton 3.x's device-side tensor descriptor API, on top of
:mod:`~eggpu.kernel_macro.block_pointers` (which has ``make_tensor_descriptor``, ``desc.load`` and
``desc.store``): the attributes ``desc.shape``, ``desc.strides``, ``desc.dtype``, ``desc.block_shape``
and the methods

* ``desc.atomic_add/min/max/and/or/xor(offsets, value)``: the atomic read-modify-write of each
  in-bounds element of the ``block_shape`` tile at ``offsets`` with the matching element of
  ``value`` (a block of that shape); out-of-bounds elements are not touched. Nothing is returned,
  as in Triton (its TMA reductions return no old values). The bitwise ones need an integer tensor.
* ``desc.gather(x_offsets, y_offset)`` on a 2-D descriptor of block shape ``[1, BN]``: the rows
  ``x_offsets`` (a 1-D i16/i32 block of ``R`` row indices, any order, repeats allowed), each read
  at columns ``y_offset .. y_offset + BN``: an ``[R, BN]`` block, out-of-bounds elements 0.
* ``desc.scatter(value, x_offsets, y_offset)``: the inverse, writing ``value`` (``[R, BN]``) to
  those rows; out-of-bounds elements are not written (with repeated rows the last one wins in
  eggpu; Triton leaves the order unspecified).

Like loads and stores, they are lowered to blocks of pointers and masks (no TMA). Triton's
hardware minimums (at least 8 gathered rows, a 32-byte row) are not required here.
"""

from __future__ import annotations

from typing import Any

from eggpu.ir.dtypes import i16, i32, i64

from .block_pointers import TensorDescriptor, _descriptor_at, pointers_and_mask, tf32_rounded
from .frontend_values import SemanticError, Tensor, describe

ATTRIBUTES = ("block_shape", "shape", "strides", "dtype")


def attribute(desc: TensorDescriptor, attr: str) -> Any:
    """``desc.<attr>`` for an attribute in :data:`ATTRIBUTES`: compile-time ints or scalars, a dtype."""
    lay = desc.layout
    return {"block_shape": lambda: lay.block_shape, "shape": lambda: tuple(lay.shape),
            "strides": lambda: tuple(lay.strides), "dtype": lambda: lay.base.dtype}[attr]()


def _tile_value(s: Any, desc: TensorDescriptor, value: Any, fn: str, shape: tuple[int, ...]) -> Tensor:
    if isinstance(value, Tensor) and value.is_block and tuple(value.shape) != tuple(shape):
        raise SemanticError(f"desc.{fn}: the value has shape {list(value.shape)}, the tile {list(shape)}",
                            "pass a block of the descriptor's block_shape")
    if not isinstance(value, Tensor) and not isinstance(value, int | float):
        raise SemanticError(f"desc.{fn} cannot use {describe(value)} as the value")
    return value


def _atomic(kind: str):
    def call(s: Any, desc: Any, offsets: Any, value: Any) -> None:
        fn = kind
        bp = _descriptor_at(desc, offsets, f"tensor_descriptor.{fn}", s)
        if kind in ("atomic_and", "atomic_or", "atomic_xor") and not bp.base.dtype.is_int:
            raise SemanticError(f"desc.{fn} needs an integer tensor, got a descriptor of {bp.base.dtype}")
        ptrs, mask = pointers_and_mask(s, bp, tuple(range(len(bp.block_shape))))
        s.atomic(kind, ptrs, _tile_value(s, desc, value, fn, bp.block_shape), mask)

    return call


def _rows(s: Any, desc: Any, x_offsets: Any, y_offset: Any, fn: str) -> tuple[Tensor, Tensor]:
    """The element pointers and in-bounds mask of a gather/scatter: ``[R, BN]``."""
    if not isinstance(desc, TensorDescriptor):
        raise SemanticError(f"desc.{fn} needs a tensor descriptor, got {describe(desc)}")
    lay = desc.layout
    if len(lay.block_shape) != 2 or lay.block_shape[0] != 1:
        raise SemanticError(f"desc.{fn} needs a 2-D descriptor of block_shape [1, BN], got "
                            f"{list(lay.block_shape)}", "make the descriptor with block_shape=[1, BN]")
    if not (isinstance(x_offsets, Tensor) and x_offsets.is_block and len(x_offsets.shape) == 1
            and x_offsets.dtype in (i16, i32)):
        shown = x_offsets.type if isinstance(x_offsets, Tensor) else describe(x_offsets)
        raise SemanticError(f"desc.{fn}: x_offsets must be a 1-D block of i16 or i32 row indices, got {shown}")
    ok = isinstance(y_offset, int) and not isinstance(y_offset, bool)
    if not ok and not (isinstance(y_offset, Tensor) and not y_offset.is_block and y_offset.dtype.is_int):
        raise SemanticError(f"desc.{fn}: y_offset must be an integer scalar, got {describe(y_offset)}")
    bn = lay.block_shape[1]
    rows = s.reshape(s.cast(x_offsets, i32), (x_offsets.shape[0], 1))
    cols = s.reshape(s.binary("add", s.arange(0, bn), y_offset), (1, bn))
    shape = (x_offsets.shape[0], bn)
    total = s.binary("add", s.binary("mul", s.cast(rows, i64), lay.strides[0]), s.cast(cols, i64))
    mask = s.binary("and", s.binary("and", s.binary("ge", rows, 0), s.binary("lt", rows, lay.shape[0])),
                    s.binary("and", s.binary("ge", cols, 0), s.binary("lt", cols, lay.shape[1])))
    return s.broadcast_to(s.binary("add", lay.base, total), shape), s.broadcast_to(mask, shape)


def gather(s: Any, desc: Any, x_offsets: Any, y_offset: Any) -> Tensor:
    ptrs, mask = _rows(s, desc, x_offsets, y_offset, "gather")
    return tf32_rounded(s, desc, s.load(ptrs, mask, 0 if desc.padding == "zero" else float("nan")))


def scatter(s: Any, desc: Any, value: Any, x_offsets: Any, y_offset: Any) -> None:
    ptrs, mask = _rows(s, desc, x_offsets, y_offset, "scatter")
    s.store(ptrs, _tile_value(s, desc, value, "scatter", tuple(ptrs.shape)), mask)


CALLS = {f"atomic_{k}": _atomic(f"atomic_{k}") for k in ("add", "min", "max", "and", "or", "xor")}
CALLS.update(gather=gather, scatter=scatter)
"""Descriptor methods: ``desc.<name>(*args)`` is ``CALLS[name](sem, desc, *args)``."""
