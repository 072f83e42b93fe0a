"""Element dtypes and dtype categories.

The 13 compute dtypes of the kernel language, plus the three FP8 STORAGE dtypes. Each has a name
(``f32``), a kind (``b`` bool, ``i`` signed integer, ``u`` unsigned integer, ``f`` float, ``q``
8-bit storage float) and a width in bits. ``bf16`` maps to ``ml_dtypes.bfloat16`` in numpy
(imported lazily so ``import eggpu.ir`` stays light).

FP8 (``fp8e4nv`` = OCP e4m3fn, ``fp8e5`` = OCP e5m2; Triton's ``tl.float8e4nv``/``tl.float8e5``,
``ml_dtypes.float8_e4m3fn``/``float8_e5m2`` in numpy; and ``fp8e4b15`` = Triton's
``tl.float8e4b15``, e4m3 with bias 15 and no NaN/inf, held in numpy as its ``uint8`` codes since no
numpy dtype has that format) is storage only: such values are loaded,
stored, selected (``where``), bit-cast and converted to and from the float dtypes
(:mod:`eggpu.ir.fp8` states the conversions), never computed with. They are NOT in
:data:`ALL_DTYPES` nor in any category: no op family, optimizer schema entry or rule covers them.
"""

from __future__ import annotations

import math
import sys

from .errors import IRError
from .record import Frozen

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing on a cache hit
if TYPE_CHECKING:
    from typing import Any

    import numpy as np


class DType(Frozen):
    """A scalar element type. Compare by identity or equality; render with ``str``."""

    __slots__ = _fields = ("name", "kind", "bits")
    name: str
    kind: str  # 'b', 'i', 'u', 'f', 'q' (FP8 storage)
    bits: int

    def __init__(self, name: str, kind: str, bits: int):
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "bits", bits)

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return self.name

    @property
    def is_bool(self) -> bool:
        return self.kind == "b"

    @property
    def is_int(self) -> bool:
        """True for signed and unsigned integers (not bool)."""
        return self.kind in ("i", "u")

    @property
    def is_signed(self) -> bool:
        return self.kind == "i"

    @property
    def is_unsigned(self) -> bool:
        return self.kind == "u"

    @property
    def is_float(self) -> bool:
        return self.kind == "f"

    @property
    def is_fp8(self) -> bool:
        """True for the FP8 storage dtypes (no arithmetic; see the module docstring)."""
        return self.kind == "q"

    @property
    def np(self) -> np.dtype:
        """The numpy dtype holding values of this dtype (bf16 -> ml_dtypes.bfloat16)."""
        return numpy_dtype(self)

    @property
    def itemsize(self) -> int:
        return max(1, self.bits // 8)

    @property
    def primitive_bitwidth(self) -> int:
        """Triton's name for :attr:`bits` (``x.dtype.primitive_bitwidth`` in kernels)."""
        return self.bits

    @property
    def min(self) -> int | float:
        """Smallest finite value."""
        if self.is_bool:
            return 0
        if self.is_unsigned:
            return 0
        if self.is_signed:
            return -(1 << (self.bits - 1))
        return float(_finfo(self).min)

    @property
    def max(self) -> int | float:
        """Largest finite value."""
        if self.is_bool:
            return 1
        if self.is_unsigned:
            return (1 << self.bits) - 1
        if self.is_signed:
            return (1 << (self.bits - 1)) - 1
        return float(_finfo(self).max)


bool_ = DType("bool", "b", 1)
i8 = DType("i8", "i", 8)
i16 = DType("i16", "i", 16)
i32 = DType("i32", "i", 32)
i64 = DType("i64", "i", 64)
u8 = DType("u8", "u", 8)
u16 = DType("u16", "u", 16)
u32 = DType("u32", "u", 32)
u64 = DType("u64", "u", 64)
f16 = DType("f16", "f", 16)
bf16 = DType("bf16", "f", 16)
f32 = DType("f32", "f", 32)
f64 = DType("f64", "f", 64)
fp8e4nv = DType("fp8e4nv", "q", 8)  # OCP e4m3fn: bias 7, no inf, NaN 0x7F/0xFF, max 448
fp8e5 = DType("fp8e5", "q", 8)  # OCP e5m2: bias 15, inf 0x7C, max 57344
fp8e4b15 = DType("fp8e4b15", "q", 8)  # Triton's e4m3 with bias 15: no NaN/inf, max 1.875 (0x7F)

ALL_DTYPES: tuple[DType, ...] = (bool_, i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, f32, f64)
FLOAT_DTYPES: tuple[DType, ...] = (f16, bf16, f32, f64)
SIGNED_DTYPES: tuple[DType, ...] = (i8, i16, i32, i64)
UNSIGNED_DTYPES: tuple[DType, ...] = (u8, u16, u32, u64)
INT_DTYPES: tuple[DType, ...] = SIGNED_DTYPES + UNSIGNED_DTYPES
FP8_DTYPES: tuple[DType, ...] = (fp8e4nv, fp8e5, fp8e4b15)
"""The storage-only FP8 dtypes: outside ALL_DTYPES and every category (see the module docstring)."""
BY_NAME: dict[str, DType] = {d.name: d for d in ALL_DTYPES + FP8_DTYPES}

# Dtype categories (the bounds of dtype TypeVars), in the order DESIGN.md §3 lists them.
CATEGORIES: dict[str, tuple[DType, ...]] = {
    "Float": FLOAT_DTYPES,
    "Int": INT_DTYPES,
    "Num": INT_DTYPES + FLOAT_DTYPES,
    "Bool": (bool_,),
    "Dtype": ALL_DTYPES,
}

_NUMPY_NAMES = {
    "bool": "bool",
    "i8": "int8",
    "i16": "int16",
    "i32": "int32",
    "i64": "int64",
    "u8": "uint8",
    "u16": "uint16",
    "u32": "uint32",
    "u64": "uint64",
    "f16": "float16",
    "f32": "float32",
    "f64": "float64",
}


_ML_DTYPES_NAMES = {"bf16": "bfloat16", "fp8e4nv": "float8_e4m3fn", "fp8e5": "float8_e5m2"}


#: FP8 dtypes no numpy dtype describes: numpy holds their 8-bit codes as ``uint8``
_CODE_DTYPES = {"fp8e4b15": (-1.875, 1.875)}


def numpy_dtype(dt: DType) -> np.dtype:
    """The numpy dtype for ``dt`` (bf16 and FP8 from ml_dtypes; ``uint8`` codes for fp8e4b15)."""
    import numpy as np  # lazily: dtypes are needed on a cache hit, numpy is not

    if dt.name in _CODE_DTYPES:
        return np.dtype(np.uint8)

    if dt.name in _ML_DTYPES_NAMES:
        import ml_dtypes

        return np.dtype(getattr(ml_dtypes, _ML_DTYPES_NAMES[dt.name]))
    return np.dtype(_NUMPY_NAMES[dt.name])


def _finfo(dt: DType) -> Any:
    if dt.name in _CODE_DTYPES:
        from types import SimpleNamespace

        lo, hi = _CODE_DTYPES[dt.name]
        return SimpleNamespace(min=lo, max=hi)
    if dt.name in _ML_DTYPES_NAMES:
        import ml_dtypes

        return ml_dtypes.finfo(numpy_dtype(dt))
    import numpy as np

    return np.finfo(numpy_dtype(dt))


def loaded_numpy() -> Any:
    """The numpy module when something in this process already imported it, else None.

    A value can only be a numpy scalar, array or type when numpy is loaded, so code that merely
    recognizes numpy values (``isinstance(v, np.generic)``) asks this instead of importing numpy
    (~100 ms) on a path that never meets one (a compile of a kernel that reads no numpy constant).
    """
    return sys.modules.get("numpy")


def is_numpy_scalar(v: Any, kind: str = "") -> bool:
    """Whether ``v`` is a numpy scalar (``np.generic``); with ``kind``, one of that category:
    ``"bool"`` (``np.bool_``), ``"int"`` (``np.integer``), ``"float"`` (``np.floating``).
    Never imports numpy (see :func:`loaded_numpy`)."""
    np = loaded_numpy()
    if np is None:
        return False
    cls = {"": np.generic, "bool": np.bool_, "int": np.integer, "float": np.floating}[kind]
    return isinstance(v, cls)


def round_float(value: float, dt: DType) -> float:
    """``value`` rounded to the float dtype ``dt`` as numpy's ``astype`` from float64 rounds it
    (round-to-nearest-even, overflow to +-inf, -0.0 kept), as a Python float.

    f64 is the identity. Finite values and infinities of f32 and f16 go through :mod:`struct` (a
    C ``(float)`` cast, and CPython's correctly rounded half packing, which is what numpy's
    float64 -> float16 conversion computes); bf16 as ml_dtypes converts from float64: rounded once
    (:func:`round_once`; rounding through f32 first differed from ml_dtypes on values near a
    halfway point, e.g. 4.591844872822777e-41). So constant rounding in a compile does not import
    numpy; tests compare every path with numpy's. NaNs (whose payload bits numpy keeps and
    CPython's half packing drops) go through numpy.
    """
    import struct

    v = float(value)
    if dt.bits == 64:
        return v
    if v != v or dt.name not in ("f32", "f16", "bf16"):
        import numpy as np

        with np.errstate(all="ignore"):
            return float(np.asarray(v).astype(numpy_dtype(dt)).astype(np.float64))
    if dt.name == "bf16":  # ml_dtypes rounds float64 -> bfloat16 once, not through f32
        return round_once(v, dt)
    fmt = "<e" if dt.name == "f16" else "<f"
    try:
        r = struct.unpack(fmt, struct.pack(fmt, v))[0]
    except OverflowError:  # rounds past the largest finite value
        r = math.copysign(math.inf, v)
    return r


def round_once(value: float, dt: DType) -> float:
    """``value`` rounded once, to nearest even, to the float dtype ``dt`` (overflow to +-inf,
    subnormals kept, -0.0 kept), as a Python float: :func:`eggpu.ir.semantics.round_f64` for one
    value, computed exactly with integers (no numpy). Unlike :func:`round_float` this never rounds
    twice: bf16 is rounded from the double directly, not through f32. NaN is returned as given
    (callers that keep NaN payloads handle NaN themselves)."""
    v = float(value)
    if dt.bits == 64 or v != v or math.isinf(v) or v == 0.0:
        return v
    exp_bits, mant_bits = {"f32": (8, 23), "f16": (5, 10), "bf16": (8, 7)}[dt.name]
    emax = (1 << (exp_bits - 1)) - 1
    emin = 1 - emax
    num, den = abs(v).as_integer_ratio()  # den is a power of two
    e = math.frexp(abs(v))[1] - 1  # abs(v) in [2**e, 2**(e+1))
    q = max(e, emin) - mant_bits  # the exponent of one unit in the last place
    # n = abs(v) / 2**q, rounded half to even, in integers
    top, bottom = (num << -q, den) if q < 0 else (num, den << q)
    n, rem = divmod(top, bottom)
    if 2 * rem > bottom or (2 * rem == bottom and n & 1):
        n += 1
    if n.bit_length() - 1 + q > emax:  # n * 2**q >= 2**(emax + 1): past the largest finite value
        return math.copysign(math.inf, v)
    return math.copysign(math.ldexp(n, q), v)


def from_numpy(npdt: Any) -> DType:
    """The eggpu dtype for a numpy dtype (or anything ``np.dtype`` accepts)."""
    import numpy as np

    d = np.dtype(npdt)
    for name, mlname in _ML_DTYPES_NAMES.items():
        if d.name == mlname:
            return BY_NAME[name]
    for name, npname in _NUMPY_NAMES.items():
        if d.name == npname:
            return BY_NAME[name]
    raise IRError(f"numpy dtype {d} has no eggpu equivalent (supported: {', '.join(BY_NAME)})")


def parse_dtype(name: str) -> DType:
    """The dtype named ``name`` (``"f32"``, ``"bool"``); raises IRError naming the choices."""
    try:
        return BY_NAME[name]
    except KeyError:
        raise IRError(f"unknown dtype {name!r} (known: {', '.join(BY_NAME)})") from None


def _promote_fp8(a: DType, b: DType) -> DType:
    if a.is_fp8 and b.is_fp8:
        return f16
    other = b if a.is_fp8 else a
    if other.is_float:
        return f32 if other == bf16 else other
    raise IRError(f"no implicit conversion between {a} and {b}: FP8 is a storage dtype; "
                  f"convert it first (x.to(tl.float32))")


def float_of_width(bits: int) -> DType:
    return {16: f16, 32: f32, 64: f64}[bits]


def promote(a: DType, b: DType) -> DType:
    """Result dtype of a binary arithmetic op on two tensors, following Triton's rules.

    - float beats int/bool, except that bf16 with an integer or bool gives f32 (Triton: bf16
      only with bf16); two floats: the wider wins; f16 with bf16 gives f16 (Triton 3.9's
      ``computation_type_impl`` checks for fp16 before bf16: ``bf16 1e30 + f16 x`` is inf).
    - two integers of equal signedness: the wider; mixed signedness: the wider, and unsigned
      when the unsigned operand is at least as wide (C's usual arithmetic conversions).
    - bool with an integer gives the integer; bool with bool stays bool.
    - FP8 (Triton's rule): with a 16/32/64-bit float, that float (bf16: f32); two different FP8
      dtypes: f16; an FP8 dtype with itself stays FP8 (the op then refuses it: no FP8
      arithmetic); with an integer or bool: IRError (Triton refuses it too).
    """
    if a == b:
        return a
    if a.is_fp8 or b.is_fp8:
        return _promote_fp8(a, b)
    if a.is_float or b.is_float:
        if a.is_float and b.is_float:
            if a.bits == b.bits:  # f16 vs bf16: Triton converts to f16 before it looks at bf16
                return a if a.name == "f16" else b
            return a if a.bits > b.bits else b
        fl = a if a.is_float else b
        # Triton's computation_type_impl: bf16 survives only with bf16; with an integer or bool
        # tensor it computes in f32 (f16 with an integer stays f16)
        return f32 if fl.name == "bf16" else fl
    if a.is_bool:
        return b
    if b.is_bool:
        return a
    if a.kind == b.kind:
        return a if a.bits >= b.bits else b
    signed, unsigned = (a, b) if a.is_signed else (b, a)
    if unsigned.bits >= signed.bits:
        return unsigned
    return signed
