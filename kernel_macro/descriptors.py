"""Host-side tensor descriptors: Triton's ``TensorDescriptor`` passed as a kernel argument.

``from eggpu.tools.tensor_descriptor import TensorDescriptor`` (Triton: ``from
triton.tools.tensor_descriptor import TensorDescriptor``) describes a strided tensor for
block-wise access: ``TensorDescriptor(base, shape, strides, block_shape, padding="zero")`` or
``TensorDescriptor.from_tensor(array, block_shape)``. Passed to an ``@eggpu.jit`` kernel it
becomes, in the kernel, the same value as ``tl.make_tensor_descriptor(base, shape, strides,
block_shape, padding)`` (:mod:`~eggpu.kernel_macro.block_pointers`): ``desc.load(offsets)``,
``desc.store(offsets, value)``.

A launch specializes on the descriptor as Triton does: ``block_shape``, the padding and the rank
are compile-time (a constexpr of the parameter's name holding :func:`encode`'s text), and the
kernel gets hidden runtime parameters ``{name}__base`` (the array), ``{name}__shape{i}`` and
``{name}__stride{i}`` (all but the last stride, which must be 1). A launch checks Triton's
constraints (rank 1..5, positive shape, strides but the last multiples of 16 bytes, the base
16-byte aligned) and refuses a descriptor that breaks one with a ``LaunchError``. Any object with ``base``,
``shape``, ``strides`` and ``block_shape`` attributes is taken as a descriptor (so Triton's own
class works too). eggpu does not use the TMA unit: the descriptor is lowered to pointers + masks.
``round_f32_to_tf32=True`` (Triton 3.5+, f32 tensors only) rounds every element a load or gather
through the descriptor reads to TF32 (10 mantissa bits, nearest even; inf and NaN kept), as
Triton's TMA loads through a TF32 tensor map do.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing on a cache hit
if TYPE_CHECKING:
    from typing import Any

MARK = "eggpu.tensor_descriptor:"
"""Prefix of the constexpr text that stands for a descriptor argument's compile-time part."""


class TensorDescriptor:
    """Triton's host-side tensor descriptor (``triton.tools.tensor_descriptor.TensorDescriptor``)."""

    def __init__(self, base: Any, shape: Any, strides: Any, block_shape: Any, padding: str = "zero",
                 round_f32_to_tf32: bool = False):
        self.base = base
        self.shape = list(shape)
        self.strides = list(strides)
        self.block_shape = list(block_shape)
        self.padding = padding
        self.round_f32_to_tf32 = round_f32_to_tf32

    @staticmethod
    def from_tensor(tensor: Any, block_shape: Any, padding: str = "zero",
                    round_f32_to_tf32: bool = False) -> TensorDescriptor:
        """The descriptor of a whole array (numpy: strides in elements from its byte strides; a
        tensor with ``.stride()``, e.g. torch: those)."""
        stride = getattr(tensor, "stride", None)
        strides = list(stride()) if callable(stride) else [s // tensor.itemsize for s in tensor.strides]
        return TensorDescriptor(tensor, list(tensor.shape), strides, block_shape, padding, round_f32_to_tf32)

    def __repr__(self) -> str:
        return (f"TensorDescriptor(shape={self.shape}, strides={self.strides}, block_shape={self.block_shape}, "
                f"padding={self.padding!r})")


def is_host_descriptor(v: Any) -> bool:
    return all(hasattr(v, a) for a in ("base", "shape", "strides", "block_shape")) and not isinstance(v, type)


def check(kernel: str, name: str, d: Any) -> str | None:
    """Why the descriptor ``d`` for parameter ``name`` cannot be launched, or None."""
    shape, strides, block = list(d.shape), list(d.strides), list(d.block_shape)
    if not shape or not len(shape) == len(strides) == len(block):
        return (f"{kernel}: parameter {name}: a tensor descriptor needs one shape, stride and block_shape entry "
                f"per dimension, got shape={shape}, strides={strides}, block_shape={block}")
    if not all(isinstance(x, int) and not isinstance(x, bool) for x in shape + strides + block):
        return f"{kernel}: parameter {name}: tensor descriptor shape, strides and block_shape must be ints"
    if strides[-1] != 1:
        return f"{kernel}: parameter {name}: a tensor descriptor's last stride must be 1, got strides={strides}"
    if len(shape) > 5:
        return f"{kernel}: parameter {name}: a tensor descriptor has 1 to 5 dimensions, got shape={shape}"
    if any(s <= 0 for s in shape):
        return f"{kernel}: parameter {name}: a tensor descriptor's shape must be positive, got shape={shape}"
    itemsize = _itemsize(d.base)
    bad = [s for s in strides[:-1] if itemsize is not None and (s * itemsize) % 16]
    if bad:
        return (f"{kernel}: parameter {name}: a tensor descriptor's strides must be multiples of 16 bytes, got "
                f"strides={strides} of {itemsize}-byte elements (pad the rows to a multiple of 16 bytes)")
    addr = _address(d.base)
    if addr is not None and addr % 16:
        return (f"{kernel}: parameter {name}: a tensor descriptor's base must be 16-byte aligned, its address is "
                f"{addr:#x} ({addr % 16} bytes past a multiple of 16)")
    if any(b <= 0 for b in block):
        return f"{kernel}: parameter {name}: block_shape={block} must be positive"
    if getattr(d, "padding", "zero") not in ("zero", "nan"):
        return f"{kernel}: parameter {name}: padding={d.padding!r} is not 'zero' or 'nan'"
    if getattr(d, "round_f32_to_tf32", False) and str(getattr(d.base, "dtype", "")) not in ("float32", "torch.float32"):
        return (f"{kernel}: parameter {name}: round_f32_to_tf32=True needs a float32 tensor, got "
                f"{getattr(d.base, 'dtype', type(d.base).__name__)}")
    return None


def _itemsize(base: Any) -> int | None:
    """Bytes per element of a descriptor's base (numpy/CuPy ``itemsize``, torch ``element_size()``)."""
    size = getattr(base, "itemsize", None)
    if isinstance(size, int):
        return size
    es = getattr(base, "element_size", None)
    return es() if callable(es) else None


def _address(base: Any) -> int | None:
    """The data address of a descriptor's base (numpy, torch ``data_ptr()``, CUDA array
    interface), or None when it has none of those."""
    ct = getattr(base, "ctypes", None)
    if ct is not None and hasattr(ct, "data"):
        return int(ct.data)
    dp = getattr(base, "data_ptr", None)
    if callable(dp):
        return int(dp())
    cai = getattr(base, "__cuda_array_interface__", None)
    return int(cai["data"][0]) if isinstance(cai, dict) else None


def encode(d: Any) -> str:
    """The compile-time part of a descriptor (rank, block shape, padding, TF32 rounding) as
    constexpr text."""
    tf32 = ";tf32" if getattr(d, "round_f32_to_tf32", False) else ""
    return f"{MARK}{','.join(map(str, d.block_shape))};{getattr(d, 'padding', 'zero')}{tf32}"


def decode(text: str) -> tuple[tuple[int, ...], str, bool] | None:
    """(block_shape, padding, round_f32_to_tf32) of :func:`encode`'s text, or None for any other value."""
    if not isinstance(text, str) or not text.startswith(MARK):
        return None
    block, padding, *rest = text[len(MARK):].split(";")
    return tuple(int(b) for b in block.split(",")), padding, rest == ["tf32"]


def _flat_base(base: Any) -> Any:
    """A strided numpy view (``agu[..., h:2 * h]``, as Triton's ``from_tensor`` of a torch view
    takes it) as the 1-D array over the memory it spans, starting at its first element: the
    descriptor's own strides address it, and pointer arguments are C-contiguous arrays indexed
    flat. Writes go to the original memory. Anything else is returned unchanged."""
    import numpy as np  # lazily: only launches with descriptors get here

    if not isinstance(base, np.ndarray) or base.flags.c_contiguous or base.size == 0:
        return base
    if any(st < 0 or st % base.itemsize for st in base.strides):
        return base  # the launch's contiguity check names the parameter
    span = 1 + sum((n - 1) * (st // base.itemsize) for n, st in zip(base.shape, base.strides))
    return np.lib.stride_tricks.as_strided(base, shape=(span,), strides=(base.itemsize,),
                                           writeable=base.flags.writeable)


def hidden_params(name: str, d: Any) -> list[tuple[str, Any]]:
    """The hidden runtime parameters of descriptor ``d`` for parameter ``name``: (name, value)."""
    out: list[tuple[str, Any]] = [(f"{name}__base", _flat_base(d.base))]
    out += [(f"{name}__shape{i}", s) for i, s in enumerate(d.shape)]
    out += [(f"{name}__stride{i}", s) for i, s in enumerate(list(d.strides)[:-1])]
    return out
