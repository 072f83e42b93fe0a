"""Triton's block pointers (``tl.make_block_ptr``, ``tl.advance``, ``boundary_check=``,
``padding_option=``), lowered in the frontend to ordinary blocks of pointers and masks.

A block pointer is a compile-time frontend value (:class:`BlockPointer`) describing the tile
``block_shape`` at ``offsets`` of a tensor of ``shape`` and ``strides`` (in elements) starting at
the scalar pointer ``base``. It never reaches the IR: ``tl.load``/``tl.store`` of one build

* the element pointers ``base + sum_d (offsets[d] + arange(0, block_shape[d])) * strides[d]``,
  indexed per dimension and broadcast to ``block_shape``; the index of a dimension is computed
  in i32 (as Triton's offsets) and multiplied by its stride in i64, so large tensors do not wrap;
* the mask ``0 <= index_d < shape[d]`` for each dimension ``d`` in ``boundary_check`` (Triton
  checks both bounds); without ``boundary_check`` every element is accessed (no mask);
* ``padding_option``: ``""`` (out-of-bounds elements of a load are unspecified: eggpu gives 0 as
  for any masked load without ``other``), ``"zero"`` (0) or ``"nan"`` (NaN; float pointees only).

``order`` is Triton's layout hint (a permutation of the dimensions); it is checked and has no
effect on the result. In a runtime ``for`` or ``while`` loop a block pointer variable advanced by
the body is loop-carried through its offsets (the frontend carries them as scalars); its base, shape,
strides and block shape must stay the same.

Triton's device-side **tensor descriptors** (``tl.make_tensor_descriptor(base, shape, strides,
block_shape, padding_option="zero")``, ``desc.load(offsets)``, ``desc.store(offsets, value)``,
``tl.load_tensor_descriptor``/``tl.store_tensor_descriptor``) are lowered the same way: a load
reads the ``block_shape`` tile at ``offsets`` with every dimension bound-checked and out-of-bounds
elements filled by the padding (0, or NaN), a store writes the in-bounds elements. As in Triton
the last stride must be the compile-time 1, and the other compile-time constraints Triton states
are errors (:func:`_check_descriptor_layout`). eggpu does not use the TMA unit: the descriptor is
a frontend value; a host-side ``TensorDescriptor`` argument (:mod:`.descriptors`) becomes the same
value, built from hidden parameters by :func:`descriptor_argument`.
"""

from __future__ import annotations

from typing import Any

from eggpu.ir.dtypes import f32, i32, i64, u32

from .frontend_values import SemanticError, Tensor, describe

_PADDINGS = ("", "zero", "nan")


class BlockPointer:
    """A block pointer: a compile-time description of a tile (see the module docstring).

    ``shape``, ``strides`` and ``offsets`` hold one compile-time int or scalar integer
    :class:`Tensor` per dimension; ``block_shape`` and ``order`` are tuples of ints."""

    __slots__ = ("base", "shape", "strides", "offsets", "block_shape", "order")

    def __init__(self, base: Tensor, shape: tuple, strides: tuple, offsets: tuple,
                 block_shape: tuple[int, ...], order: tuple[int, ...]):
        self.base = base
        self.shape = shape
        self.strides = strides
        self.offsets = offsets
        self.block_shape = block_shape
        self.order = order

    def with_offsets(self, offsets: tuple) -> BlockPointer:
        return BlockPointer(self.base, self.shape, self.strides, tuple(offsets), self.block_shape, self.order)

    def same_layout(self, other: Any, same: Any) -> bool:
        """True when ``other`` is a block pointer that differs from this one in its offsets only
        (``same`` compares two frontend values)."""
        return (isinstance(other, BlockPointer) and same(self.base, other.base) and same(self.shape, other.shape)
                and same(self.strides, other.strides) and self.block_shape == other.block_shape
                and self.order == other.order)

    @property
    def described(self) -> str:
        """How messages name this value (:func:`~eggpu.kernel_macro.frontend_values.describe`)."""
        return f"a block pointer of block_shape {list(self.block_shape)} to {self.base.dtype}"

    def __repr__(self) -> str:
        return f"BlockPointer(block_shape={list(self.block_shape)}, {self.base.type})"


def hidden_offset(name: str, d: int) -> str:
    """The hidden variable that carries dimension ``d`` of block pointer ``name`` through a loop."""
    return f"$bp.{name}.{d}"


def _int_tuple(v: Any, what: str, n: int | None) -> tuple:
    """``v`` as a tuple of compile-time ints or scalar integer tensors (``n`` entries when given)."""
    if isinstance(v, int | Tensor) and not isinstance(v, bool):
        v = (v,)
    if not isinstance(v, tuple):
        raise SemanticError(f"tl.make_block_ptr: {what} must be a tuple, got {describe(v)}", arg=what)
    if n is not None and len(v) != n:
        raise SemanticError(f"tl.make_block_ptr: {what} has {len(v)} entries but block_shape has {n}",
                            "give shape, strides, offsets and order one entry per dimension of block_shape",
                            arg=what)
    for x in v:
        ok = isinstance(x, int) and not isinstance(x, bool)
        ok = ok or (isinstance(x, Tensor) and not x.is_block and not x.is_pointer and x.dtype.is_int)
        if not ok:
            raise SemanticError(f"tl.make_block_ptr: every entry of {what} must be an integer scalar, got "
                                f"{describe(x)}", arg=what)
    return v


def make_block_ptr(s: Any, a: dict[str, Any]) -> BlockPointer:
    base = a["base"]
    if not isinstance(base, Tensor) or not base.is_pointer or base.is_block:
        raise SemanticError(f"tl.make_block_ptr needs a scalar pointer as base, got {describe(base)}",
                            "pass the pointer parameter itself (x_ptr), possibly plus a scalar offset", arg="base")
    bs = a["block_shape"]
    bs = (bs,) if isinstance(bs, int) and not isinstance(bs, bool) else bs
    if not isinstance(bs, tuple) or not bs or not all(isinstance(x, int) and not isinstance(x, bool) and x > 0
                                                     for x in bs):
        raise SemanticError(f"tl.make_block_ptr: block_shape must be a tuple of positive compile-time ints, "
                            f"got {describe(bs) if not isinstance(bs, tuple) else bs}",
                            "use tl.constexpr sizes, e.g. block_shape=(BLOCK_M, BLOCK_K)", arg="block_shape")
    n = len(bs)
    shape = _int_tuple(a["shape"], "shape", n)
    strides = _int_tuple(a["strides"], "strides", n)
    offsets = _int_tuple(a["offsets"], "offsets", n)
    order = a["order"]
    order = (order,) if isinstance(order, int) and not isinstance(order, bool) else order
    if not isinstance(order, tuple) or sorted(order) != list(range(n)):
        raise SemanticError(f"tl.make_block_ptr: order must be a permutation of the {n} dimensions, got "
                            f"{order if isinstance(order, tuple) else describe(order)}",
                            f"e.g. order={tuple(range(n - 1, -1, -1))} for a row-major tensor", arg="order")
    offsets = tuple(_offset(s, o) for o in offsets)
    return BlockPointer(base, shape, strides, offsets, bs, order)


def _offset(s: Any, o: Any) -> Any:
    """An offset as Triton keeps it: a compile-time int, or an i32 scalar."""
    if isinstance(o, Tensor) and o.dtype != i32:
        return s.cast(o, i32)
    return o


def advance(s: Any, a: dict[str, Any]) -> BlockPointer:
    bp = a["base"]
    if not isinstance(bp, BlockPointer):
        raise SemanticError(f"tl.advance needs a block pointer (from tl.make_block_ptr), got {describe(bp)}",
                            "to move a block of pointers, add offsets to it: ptrs + delta", arg="base")
    n = len(bp.block_shape)
    deltas = a["offsets"]
    deltas = (deltas,) if isinstance(deltas, int | Tensor) and not isinstance(deltas, bool) else deltas
    if not isinstance(deltas, tuple) or len(deltas) != n:
        shown = f"{len(deltas)} entries" if isinstance(deltas, tuple) else describe(deltas)
        raise SemanticError(f"tl.advance: offsets must have one entry per dimension ({n}), got {shown}",
                            arg="offsets")
    for x in deltas:
        if not (isinstance(x, int) and not isinstance(x, bool)) and not (
                isinstance(x, Tensor) and not x.is_block and not x.is_pointer and x.dtype.is_int):
            raise SemanticError(f"tl.advance: every offset must be an integer scalar, got {describe(x)}",
                                arg="offsets")
    return bp.with_offsets(tuple(_offset(s, s.binary("add", o, d)) for o, d in zip(bp.offsets, deltas)))


def _boundary_dims(v: Any, n: int, fn: str) -> tuple[int, ...]:
    """Triton's canonical boundary_check: sorted distinct dimensions in ``range(n)``."""
    if v is None:
        return ()
    v = (v,) if isinstance(v, int) and not isinstance(v, bool) else v
    if not isinstance(v, tuple | list) or not all(isinstance(d, int) and not isinstance(d, bool) for d in v):
        raise SemanticError(f"tl.{fn}: boundary_check must be a tuple of dimensions, got {describe(v)}",
                            "e.g. boundary_check=(0, 1)", arg="boundary_check")
    for d in v:
        if not 0 <= d < n:
            raise SemanticError(f"tl.{fn}: boundary_check dimension {d} is out of range for a {n}-d block pointer",
                                f"dimensions are 0..{n - 1}", arg="boundary_check")
    return tuple(sorted(set(v)))


def _index(s: Any, bp: BlockPointer, d: int) -> Tensor:
    """``offsets[d] + arange(0, block_shape[d])`` shaped to broadcast along dimension ``d``."""
    ix = s.binary("add", s.arange(0, bp.block_shape[d]), bp.offsets[d])
    shape = tuple(bp.block_shape[d] if k == d else 1 for k in range(len(bp.block_shape)))
    return s.reshape(ix, shape)


def pointers_and_mask(s: Any, bp: BlockPointer, dims: tuple[int, ...]) -> tuple[Tensor, Tensor | None]:
    """The block of element pointers of ``bp`` and the mask of the ``dims`` bounds checks."""
    total = None
    mask = None
    for d in range(len(bp.block_shape)):
        ix = _index(s, bp, d)
        term = s.binary("mul", s.cast(ix, i64), bp.strides[d])
        total = term if total is None else s.binary("add", total, term)
        if d in dims:
            ok = s.binary("and", s.binary("ge", ix, 0), s.binary("lt", ix, bp.shape[d]))
            mask = ok if mask is None else s.binary("and", mask, ok)
    ptrs = s.broadcast_to(s.binary("add", bp.base, total), bp.block_shape)
    if mask is not None:
        mask = s.broadcast_to(mask, bp.block_shape)
    return ptrs, mask


def _no_mask(a: dict[str, Any], fn: str, names: tuple[str, ...]) -> None:
    for name in names:
        if a[name] is not None:
            raise SemanticError(f"tl.{fn}: {name}= cannot be used with a block pointer",
                                "bound-check with boundary_check=(dims...) and fill with "
                                "padding_option='zero' or 'nan'" if fn == "load" else
                                "bound-check with boundary_check=(dims...)", arg=name)


def load(s: Any, a: dict[str, Any]) -> Tensor:
    bp: BlockPointer = a["ptr"]
    _no_mask(a, "load", ("mask", "other"))
    pad = a["padding_option"]
    if pad is None:
        pad = ""
    if pad not in _PADDINGS:
        raise SemanticError(f"tl.load: padding_option={pad!r} is not one of '', 'zero', 'nan'",
                            arg="padding_option")
    if pad == "nan" and not bp.base.dtype.is_float:
        raise SemanticError(f"tl.load: padding_option='nan' needs a float block pointer, got {bp.base.type}",
                            "use padding_option='zero'", arg="padding_option")
    dims = _boundary_dims(a["boundary_check"], len(bp.block_shape), "load")
    ptrs, mask = pointers_and_mask(s, bp, dims)
    volatile = a.get("volatile", False)
    if mask is None:
        return s.load(ptrs, None, None, volatile)
    other = {"": None, "zero": 0, "nan": float("nan")}[pad]
    return s.load(ptrs, mask, other, volatile)


def store(s: Any, a: dict[str, Any]) -> None:
    bp: BlockPointer = a["ptr"]
    _no_mask(a, "store", ("mask",))
    dims = _boundary_dims(a["boundary_check"], len(bp.block_shape), "store")
    ptrs, mask = pointers_and_mask(s, bp, dims)
    value = a["value"]
    if isinstance(value, Tensor) and value.is_block and len(value.shape) != len(bp.block_shape):
        raise SemanticError(f"tl.store: a block of shape {list(value.shape)} cannot be stored through a block "
                            f"pointer of block_shape {list(bp.block_shape)}", arg="value")
    return s.store(ptrs, value, mask)


class TensorDescriptor:
    """A device-side tensor descriptor: a tile-less block pointer (see the module docstring)."""

    __slots__ = ("layout", "padding", "tf32")

    def __init__(self, layout: BlockPointer, padding: str, tf32: bool = False):
        self.layout = layout  # offsets unused: a descriptor is read at the offsets of each access
        self.padding = padding
        self.tf32 = tf32  # loads round f32 to TF32 (a host descriptor's round_f32_to_tf32=True)

    @property
    def block_shape(self) -> tuple[int, ...]:
        return self.layout.block_shape

    @property
    def described(self) -> str:
        return f"a tensor descriptor of block_shape {list(self.block_shape)} to {self.layout.base.dtype}"


METHODS = {"load": "load_tensor_descriptor", "store": "store_tensor_descriptor"}
"""Methods of a tensor descriptor in a kernel (``desc.load(offsets)``) and the functions they are."""


def make_tensor_descriptor(s: Any, a: dict[str, Any]) -> TensorDescriptor:
    fn = "make_tensor_descriptor"
    bs = a["block_shape"]
    n = len(bs) if isinstance(bs, tuple) else 1
    pad = a["padding_option"]
    if pad not in ("zero", "nan"):
        raise SemanticError(f"tl.{fn}: padding_option={pad!r} is not one of 'zero', 'nan'", arg="padding_option")
    args = {**a, "offsets": (0,) * n, "order": tuple(range(n - 1, -1, -1))}
    try:
        layout = make_block_ptr(s, args)
    except SemanticError as e:
        raise SemanticError(e.problem.replace("tl.make_block_ptr", f"tl.{fn}"), e.hint, e.arg) from None
    last = layout.strides[-1]
    if not (isinstance(last, int) and last == 1):
        raise SemanticError(f"tl.{fn}: the last stride must be the compile-time 1, got {describe(last)}",
                            "tensor descriptors address contiguous rows: pass strides=[..., 1]", arg="strides")
    _check_descriptor_layout(layout, fn)
    if pad == "nan" and not layout.base.dtype.is_float:
        raise SemanticError(f"tl.{fn}: padding_option='nan' needs a float tensor, got {layout.base.type}",
                            arg="padding_option")
    return TensorDescriptor(layout, pad)


_MAX_DESCRIPTOR_RANK = 5  # Triton's (the TMA unit's) limit


def _check_descriptor_layout(layout: BlockPointer, fn: str) -> None:
    """Triton's compile-time constraints on a device-side descriptor (its ``make_tensor_descriptor``
    raises on each): rank 1..5, a block row of at least 16 bytes, and strides known at compile
    time (all but the last) that are multiples of 16 bytes. Runtime strides and the base address
    cannot be checked here; Triton checks them only in its instrumentation mode."""
    n = len(layout.block_shape)
    if n > _MAX_DESCRIPTOR_RANK:
        raise SemanticError(f"tl.{fn}: a tensor descriptor has 1 to {_MAX_DESCRIPTOR_RANK} dimensions, got {n}",
                            arg="block_shape")
    elem = max(1, layout.base.dtype.bits // 8)
    row = layout.block_shape[-1] * elem
    if row < 16:
        raise SemanticError(f"tl.{fn}: the block's last dimension must span at least 16 bytes, got "
                            f"{layout.block_shape[-1]} x {elem} = {row} bytes",
                            f"use a last block dimension of at least {-(-16 // elem)} elements of "
                            f"{layout.base.dtype}", arg="block_shape")
    for st in layout.strides[:-1]:
        if isinstance(st, int) and (st * elem) % 16:
            raise SemanticError(f"tl.{fn}: strides must be multiples of 16 bytes, got a stride of {st} x {elem} "
                                f"= {st * elem} bytes", "pad the rows of the tensor to a multiple of 16 bytes",
                                arg="strides")


def _descriptor_at(desc: Any, offsets: Any, fn: str, s: Any) -> BlockPointer:
    if not isinstance(desc, TensorDescriptor):
        raise SemanticError(f"tl.{fn} needs a tensor descriptor (from tl.make_tensor_descriptor), got "
                            f"{describe(desc)}", arg="desc")
    n = len(desc.block_shape)
    offsets = (offsets,) if isinstance(offsets, int | Tensor) and not isinstance(offsets, bool) else offsets
    if not isinstance(offsets, tuple) or len(offsets) != n:
        shown = f"{len(offsets)} entries" if isinstance(offsets, tuple) else describe(offsets)
        raise SemanticError(f"tl.{fn}: offsets must have one entry per dimension ({n}), got {shown}", arg="offsets")
    for x in offsets:
        if not (isinstance(x, int) and not isinstance(x, bool)) and not (
                isinstance(x, Tensor) and not x.is_block and not x.is_pointer and x.dtype.is_int):
            raise SemanticError(f"tl.{fn}: every offset must be an integer scalar, got {describe(x)}", arg="offsets")
    return desc.layout.with_offsets(tuple(_offset(s, o) for o in offsets))


def descriptor_argument(s: Any, name: str, block_shape: tuple[int, ...], padding: str,
                        scope: dict[str, Any], tf32: bool = False) -> TensorDescriptor:
    """The descriptor of the host ``TensorDescriptor`` argument ``name`` (kernel_macro/descriptors.py),
    from its hidden parameters in ``scope``."""
    n = len(block_shape)
    base = scope[f"{name}__base"]
    shape = tuple(scope[f"{name}__shape{i}"] for i in range(n))
    strides = tuple(scope[f"{name}__stride{i}"] for i in range(n - 1)) + (1,)
    layout = BlockPointer(base, shape, strides, (0,) * n, block_shape, tuple(range(n - 1, -1, -1)))
    return TensorDescriptor(layout, padding, tf32)


def tf32_rounded(s: Any, desc: TensorDescriptor, x: Tensor) -> Tensor:
    """``x`` as a load through ``desc`` returns it: f32 rounded to TF32 when ``desc.tf32`` (to
    nearest even at 10 mantissa bits, inf and NaN unchanged; Triton's TF32 tensor-map loads),
    else ``x``."""
    if not desc.tf32 or x.dtype != f32:
        return x
    bits = s.cast(x, u32, bitcast=True)
    special = s.binary("eq", s.binary("and", bits, 0x7F800000), 0x7F800000)
    bias = s.binary("add", s.binary("and", s.binary("rshift", bits, 13), 1), 0xFFF)
    rounded = s.binary("and", s.binary("add", bits, bias), 0xFFFFE000)
    return s.cast(s.where(special, bits, rounded), f32, bitcast=True)


def load_tensor_descriptor(s: Any, a: dict[str, Any]) -> Tensor:
    bp = _descriptor_at(a["desc"], a["offsets"], "load_tensor_descriptor", s)
    ptrs, mask = pointers_and_mask(s, bp, tuple(range(len(bp.block_shape))))
    return tf32_rounded(s, a["desc"], s.load(ptrs, mask, 0 if a["desc"].padding == "zero" else float("nan")))


def store_tensor_descriptor(s: Any, a: dict[str, Any]) -> None:
    bp = _descriptor_at(a["desc"], a["offsets"], "store_tensor_descriptor", s)
    return store(s, {"ptr": bp, "value": a["value"], "mask": None, "boundary_check": tuple(range(len(bp.block_shape)))})


IMPLS = {"make_block_ptr": make_block_ptr, "advance": advance, "make_tensor_descriptor": make_tensor_descriptor,
         "load_tensor_descriptor": load_tensor_descriptor, "store_tensor_descriptor": store_tensor_descriptor}
