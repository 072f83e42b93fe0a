"""Triton's ``tl.dtype`` queries on compile-time dtypes inside a kernel.

Triton kernels and their helpers branch on dtypes with methods (``x.dtype.is_floating()``,
``dtype.is_int_signed()``, ``x.dtype.is_fp16()``) and read widths as attributes
(``dtype.int_bitwidth``, ``dtype.primitive_bitwidth``). eggpu's dtypes are :class:`~eggpu.ir.dtypes.DType`
values whose own ``is_int``/``is_bool`` are properties, so the frontend maps Triton's spellings here:
:func:`attribute` answers ``dtype.<name>`` with a :class:`DTypeQuery` (called with no arguments,
it returns a compile-time bool) or a compile-time int, or ``None`` when Triton has no such name.
"""

from __future__ import annotations

from collections.abc import Callable

from eggpu.ir.dtypes import DType, bf16, bool_, f16, f32, f64, fp8e4b15, fp8e4nv, fp8e5

_EXACT = {"is_fp16": f16, "is_bf16": bf16, "is_fp32": f32, "is_fp64": f64, "is_int1": bool_,
          "is_fp8e4nv": fp8e4nv, "is_fp8e5": fp8e5, "is_fp8e4b15": fp8e4b15}
_EXACT.update({f"is_int{b}": DType(f"i{b}", "i", b) for b in (8, 16, 32, 64)})
_EXACT.update({f"is_uint{b}": DType(f"u{b}", "u", b) for b in (8, 16, 32, 64)})

PREDICATES: dict[str, Callable[[DType], bool]] = {
    **{name: (lambda d, want=want: d == want) for name, want in _EXACT.items()},
    "is_floating": lambda d: d.kind in ("f", "q"),
    "is_standard_floating": lambda d: d.kind == "f",
    "is_fp8": lambda d: d.kind == "q",
    "is_int": lambda d: d.kind in ("i", "u"),
    "is_int_signed": lambda d: d.kind == "i",
    "is_int_unsigned": lambda d: d.kind == "u",
    "is_bool": lambda d: d.kind == "b",
    "is_void": lambda d: False,
    "is_block": lambda d: False,
    "is_ptr": lambda d: False,
}
"""Triton's no-argument ``tl.dtype`` methods, as predicates on an eggpu dtype."""


class DTypeQuery:
    """``dtype.is_floating`` (not yet called): calling it with no arguments gives the answer."""

    def __init__(self, dtype: DType, name: str):
        self.dtype, self.name = dtype, name

    def __call__(self) -> bool:
        return PREDICATES[self.name](self.dtype)

    def __repr__(self) -> str:
        return f"{self.dtype}.{self.name}"


def attribute(dtype: DType, name: str) -> DTypeQuery | int | None:
    """``dtype.<name>`` as Triton spells it: a query method, ``int_bitwidth`` (integers and bool; the
    bit width), ``primitive_bitwidth`` (every dtype), or None when ``name`` is not one of these."""
    if name in PREDICATES:
        return DTypeQuery(dtype, name)
    if name == "primitive_bitwidth" or (name == "int_bitwidth" and dtype.kind in ("i", "u", "b")):
        return dtype.bits
    return None
