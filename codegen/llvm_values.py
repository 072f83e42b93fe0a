"""LLVM types and constants of the lowering: the integer/float types, LLVM's ``bfloat`` (which
llvmlite lacks), float constants rounded exactly as the IR's dtypes round them (printed by bit
pattern, so a value never changes between Python and LLVM), vector splats of a constant, name
mangling for overloaded intrinsics, and tests for constant-true/false masks."""

from __future__ import annotations

import struct
from collections.abc import Callable

from llvmlite import ir

from eggpu.ir.dtypes import DType, bf16, f16, f32, f64, round_once
from eggpu.ir.errors import CodegenError

I1 = ir.IntType(1)
I8 = ir.IntType(8)
I16 = ir.IntType(16)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
F16 = ir.HalfType()
F32 = ir.FloatType()
F64 = ir.DoubleType()
VOID = ir.VoidType()


def _bf16_bits(value: float) -> int:
    """Round a Python float to bfloat16 (nearest even) and return its 16 bits."""
    return _float_bits(value, bf16)


class BFloatType(ir.types._BaseFloatType):
    """LLVM's ``bfloat`` (llvmlite has no such type); constants print as ``0xRXXXX``."""

    null = "0xR0000"
    intrinsic_name = "bf16"

    def __str__(self) -> str:
        return "bfloat"

    def format_constant(self, value: float) -> str:
        return f"0xR{_bf16_bits(value):04X}"


BFloatType._create_instance()
BF16 = BFloatType()
_FLOAT_DTYPE = {BFloatType: bf16, ir.HalfType: f16, ir.FloatType: f32, ir.DoubleType: f64}


def round_constant(value, dt: DType) -> float:
    """``value`` (a Python or numpy number) rounded once, to nearest even, to the float dtype ``dt``,
    as the Python float of the result: exactly what the interpreter does with a ``const``
    (:func:`eggpu.ir.semantics.round_f64`). A finite value beyond the range becomes a signed
    inf (also an integer too large for a double); -0.0 and NaN payloads are kept as numpy's
    conversions keep them.

    Values that are not NaN are rounded without numpy (:func:`eggpu.ir.dtypes.round_once`: the
    same single rounding, in integers, tested against ``round_f64``); NaNs take the numpy path,
    which keeps their payloads."""
    import math

    try:
        x = float(value)
    except OverflowError:
        x = math.inf if value > 0 else -math.inf
    if x == x and dt.name in _STRUCT_FORMATS:
        return round_once(x, dt)
    import numpy as np

    from eggpu.ir.semantics import round_f64

    with np.errstate(all="ignore"):
        return float(round_f64(np.asarray(x, dtype=np.float64), dt))


#: struct formats (value, bits) that hold each float dtype's values exactly; bf16 values are f32
#: values whose bits are the f32 bits' upper half
_STRUCT_FORMATS = {"f64": ("<d", "<Q"), "f32": ("<f", "<I"), "f16": ("<e", "<H"), "bf16": ("<f", "<I")}


def _float_bits(value, dt: DType) -> int:
    """The IEEE bits of ``value`` rounded to the float dtype ``dt`` (:func:`round_constant`)."""
    r = round_constant(value, dt)
    if r == r and dt.name in _STRUCT_FORMATS:  # exact in dt already: packing does not round
        fmt, ufmt = _STRUCT_FORMATS[dt.name]
        bits = struct.unpack(ufmt, struct.pack(fmt, r))[0]
        return bits >> 16 if dt.name == "bf16" else bits
    import numpy as np

    from eggpu.ir.semantics import round_f64

    r = round_f64(np.asarray(round_constant(value, f64), dtype=np.float64), dt)
    return int(np.asarray(r).reshape(1).view(f"u{dt.bits // 8}")[0])


class FloatConstant(ir.Constant):
    """A floating-point constant printed from its exact bits.

    llvmlite formats ``half``/``float`` constants through ``struct.pack``, which raises
    OverflowError for a value beyond the format (``1e9`` as f16) and drops NaN payloads. Here
    the value is rounded to the type once (round-to-nearest-even, overflow to inf: the
    interpreter's rule) and printed as LLVM's hexadecimal forms: ``0xHhhhh`` (half),
    ``0xRhhhh`` (bfloat), and for float/double the 16 lower-case hex digits of the (exactly widened)
    double, which is what llvmlite prints for in-range values, so existing PTX is unchanged.
    """

    def __init__(self, t: ir.Type, value):
        dt = _FLOAT_DTYPE[type(t)]
        super().__init__(t, 0.0)
        self.bits = _float_bits(value, dt)
        self.dtype = dt

    def _get_reference(self) -> str:
        if self.dtype == bf16:
            return f"0xR{self.bits:04X}"
        if self.dtype == f16:
            return f"0xH{self.bits:04X}"
        if self.dtype == f32:
            b = self.bits
            if b & 0x7F800000 == 0x7F800000:  # inf/NaN: widen by bits (a cast would quiet a NaN)
                wide = ((b >> 31) << 63) | (0x7FF << 52) | ((b & 0x7FFFFF) << 29)
            else:  # exact: widening an f32 to a double never rounds
                (wide,) = struct.unpack("<Q", struct.pack("<d", struct.unpack("<f", struct.pack("<I", b))[0]))
            return f"0x{wide:016x}"
        return f"0x{self.bits:016x}"


class SplatConstant(ir.Constant):
    """A vector constant with every lane equal, printed with LLVM's compact ``splat (T v)``."""

    def __init__(self, vtype: ir.VectorType, scalar: ir.Constant):
        self.type = vtype
        self.constant = scalar
        self.scalar = scalar

    def _get_reference(self) -> str:
        return f"splat ({self.scalar})"


def mangle(t: ir.Type) -> str:
    """The overloaded-intrinsic suffix of a type (``f32``, ``v128i32``, ``p1``)."""
    if isinstance(t, ir.VectorType):
        return f"v{t.count}{mangle(t.element)}"
    if isinstance(t, ir.PointerType):
        return f"p{t.addrspace}"
    if isinstance(t, ir.IntType):
        return f"i{t.width}"
    if isinstance(t, BFloatType):
        return "bf16"
    if isinstance(t, ir.HalfType):
        return "f16"
    if isinstance(t, ir.FloatType):
        return "f32"
    if isinstance(t, ir.DoubleType):
        return "f64"
    raise CodegenError(f"internal: cannot mangle LLVM type {t}")


def elem_type(t: ir.Type) -> ir.Type:
    """The element type of a vector type, or the type itself."""
    return t.element if isinstance(t, ir.VectorType) else t


# libdevice / libm names per op and float width.


def float16_bits(value: float, dt: DType) -> int:
    """The 16 bits of ``value`` rounded (nearest even, overflow to inf) to f16 or bf16."""
    return _float_bits(value, dt)


def _is_true(v: ir.Value) -> bool:
    if isinstance(v, SplatConstant):
        return _is_true(v.scalar)
    return isinstance(v, ir.Constant) and isinstance(v.type, ir.IntType) and v.type.width == 1 and v.constant in (1, True)


def _is_false(v: ir.Value) -> bool:
    if isinstance(v, SplatConstant):
        return _is_false(v.scalar)
    return isinstance(v, ir.Constant) and isinstance(v.type, ir.IntType) and v.type.width == 1 and v.constant in (0, False)


def is_const_true(v: ir.Value | None) -> bool:
    """True when ``v`` is None (no mask) or the constant true (scalar or splat)."""
    return v is None or _is_true(v)


def is_const_false(v: ir.Value | None) -> bool:
    return v is not None and _is_false(v)


def counted_loop(b: ir.IRBuilder, count: int, body: Callable[[ir.Value], None], prefix: str = "loop") -> None:
    """``for i in range(count): body(i)`` as an IR loop (i32 counter) at ``b``'s position; ``b``
    ends positioned after the loop. ``body`` may add blocks of its own."""
    pre, fn = b.block, b.block.parent
    head, bb, done = (fn.append_basic_block(f"{prefix}.{x}") for x in ("head", "body", "done"))
    b.branch(head)
    b.position_at_end(head)
    i = b.phi(I32)
    i.add_incoming(I32(0), pre)
    b.cbranch(b.icmp_unsigned("<", i, I32(count)), bb, done)
    b.position_at_end(bb)
    body(i)
    i.add_incoming(b.add(i, I32(1)), b.block)
    b.branch(head)
    b.position_at_end(done)
