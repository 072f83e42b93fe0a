"""CUDA tensors read through PyTorch's ``data_ptr()`` protocol (no numpy: ``@eggpu.jit``'s launch
cache uses it, and a cache hit in a fresh process never imports numpy).

PyTorch builds a tensor's ``__cuda_array_interface__`` dict in Python at every access (slow), and
Triton reads tensors through ``data_ptr()``; eggpu's launchers read ``data_ptr()`` first too, and
``__cuda_array_interface__`` (CuPy, Numba) otherwise.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing on a cache hit
if TYPE_CHECKING:
    from typing import Any


__all__ = ["TORCH_DTYPES", "device_tensor", "tensor_key"]

TORCH_DTYPES = {
    "torch.bool": "bool", "torch.int8": "i8", "torch.int16": "i16", "torch.int32": "i32", "torch.int64": "i64",
    "torch.uint8": "u8", "torch.uint16": "u16", "torch.uint32": "u32", "torch.uint64": "u64",
    "torch.float16": "f16", "torch.bfloat16": "bf16", "torch.float32": "f32", "torch.float64": "f64",
    "torch.float8_e4m3fn": "fp8e4nv", "torch.float8_e5m2": "fp8e5",
}
"""``str(tensor.dtype)`` of PyTorch's dtypes -> eggpu dtype names."""


_DTYPE_NAMES: dict[Any, str | None] = {}
"""Memo of :data:`TORCH_DTYPES` by dtype object (PyTorch's are a few singletons)."""


def tensor_key(value: Any) -> tuple[int, str | None] | None:
    """``(address, eggpu dtype name or None)`` of a CUDA tensor read through ``data_ptr()``
    (``is_cuda``, ``data_ptr()``, ``dtype``), or None when ``value`` is not one."""
    if getattr(value, "is_cuda", None) is not True:
        return None
    try:
        address = int(value.data_ptr())
        dtype = value.dtype
    except (AttributeError, TypeError):
        return None
    try:
        return address, _DTYPE_NAMES[dtype]
    except (KeyError, TypeError):
        name = TORCH_DTYPES.get(str(dtype))
        if len(_DTYPE_NAMES) < 64:
            try:
                _DTYPE_NAMES[dtype] = name
            except TypeError:  # an unhashable dtype object
                pass
        return address, name


def device_tensor(value: Any) -> tuple[int, str | None, bool] | None:
    """``(address, eggpu dtype name or None, contiguous)`` of a CUDA tensor read through
    ``data_ptr()`` (PyTorch's protocol: ``is_cuda``, ``data_ptr()``, ``dtype``, and
    ``is_contiguous()`` when it has one), or None when ``value`` is not one (a CPU tensor, a
    numpy array, a CuPy array, anything else)."""
    key = tensor_key(value)
    if key is None:
        return None
    is_contiguous = getattr(value, "is_contiguous", None)
    return key[0], key[1], bool(is_contiguous()) if callable(is_contiguous) else True
