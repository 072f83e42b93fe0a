"""``tl.dot_scaled``: Triton's microscaled (OCP MX) matrix product, as dequantize-then-dot.

Semantics (docs/language.md, "`dot_scaled`"): each operand is decoded exactly to f32 — FP8
(``"e4m3"``, ``"e5m2"``) and ``"bf16"``/``"fp16"`` by the exact conversion, ``"e2m1"`` (FP4:
sign, 2 exponent bits with bias 1, 1 mantissa bit; values 0, 0.5, 1, 1.5, 2, 3, 4, 6) from
nibbles, two per ``u8``, the first in the low nibble — then multiplied in f32 by its group's
scale ``2**(s - 127)`` (an e8m0 exponent ``s`` per 32 elements along K; ``s = 255`` is NaN,
``s = 0`` is ``2**-127``), rounded once to the compute dtype — bf16, or f16 when either format is
``"fp16"``, as Triton's emulation picks — and multiplied with :meth:`Semantic.dot`: exact
products, f32 accumulation, ``acc`` added after. For FP8 and FP4 values the f32 product with the
scale and its rounding to bf16 are exact unless the result leaves bf16's normal range.

The dequantization is built from existing IR ops (casts, integer bit operations, bitcasts,
reshapes, one multiply), so the interpreter, run_cpu and PTX share it, and the dot takes the
tensor-core strategy of a bf16/f16 dot where it applies.
"""

from __future__ import annotations

from typing import Any

from eggpu.ir.dtypes import DType, bf16, f16, f32, fp8e4nv, fp8e5, u8, u16, u32

from .frontend_ops import Semantic, SemanticError, Tensor, describe
from .frontend_values import fmt_shape
from .shuffles import join_tensors

FORMATS: dict[str, tuple[DType | None, DType]] = {
    "e4m3": (fp8e4nv, u8), "e5m2": (fp8e5, u8), "e2m1": (None, u8), "bf16": (bf16, u16), "fp16": (f16, u16),
}
"""Per format: the dtype of its values (None: packed ``u8`` only) and the unsigned dtype of its bits."""

GROUP = 32  # elements along K per e8m0 scale


def dot_scaled(s: Semantic, a: dict[str, Any]) -> Tensor:
    """The implementation of ``tl.dot_scaled`` (see the module docstring); SemanticError naming the
    argument for a format, dtype, shape, scale or accumulator eggpu (or Triton) does not accept."""
    for name in ("fast_math", "lhs_k_pack", "rhs_k_pack"):
        if not isinstance(a[name], bool):
            raise SemanticError(f"tl.dot_scaled: {name} must be a compile-time bool, got {describe(a[name])}",
                                arg=name)
    if a["out_dtype"] != f32:
        out = a["out_dtype"]
        raise SemanticError(f"tl.dot_scaled(out_dtype={out if isinstance(out, DType) else describe(out)}) is not "
                            "supported: the result is f32 (as in Triton)", "convert the result: tl.dot_scaled(...).to(...)",
                            arg="out_dtype")
    lf, rf = _format(a, "lhs_format"), _format(a, "rhs_format")
    lhs = _unpacked(s, a, "lhs", lf, 1 if a["lhs_k_pack"] else 0)
    rhs = _unpacked(s, a, "rhs", rf, 0 if a["rhs_k_pack"] else 1)
    (M, K), (K2, N) = lhs.shape, rhs.shape
    if K != K2:
        raise SemanticError(f"tl.dot_scaled needs [M, K] x [K, N] operands, got {fmt_shape(lhs.shape)} ({lf}) "
                            f"and {fmt_shape(rhs.shape)} ({rf}) after unpacking", arg="rhs")
    compute = f16 if "fp16" in (lf, rf) else bf16
    x = _dequantized(s, lhs, _scale(s, a, "lhs_scale", M, K), compute)
    y = _dequantized(s, rhs, _scale(s, a, "rhs_scale", N, K), compute, transpose_scale=True)
    acc = a["acc"]
    if acc is not None and not (isinstance(acc, Tensor) and acc.dtype == f32 and acc.shape == (M, N)):
        shown = acc.type if isinstance(acc, Tensor) else describe(acc)
        raise SemanticError(f"tl.dot_scaled: acc must be an f32[{M},{N}] block, got {shown}", arg="acc")
    return s.dot(x, y, acc)


def _format(a: dict[str, Any], arg: str) -> str:
    f = a[arg]
    if f not in FORMATS:
        known = ", ".join(repr(k) for k in FORMATS)
        raise SemanticError(f"tl.dot_scaled: {arg}={f!r} is not one of {known}", arg=arg)
    return f


def _unpacked(s: Semantic, a: dict[str, Any], side: str, fmt: str, pack_axis: int) -> Tensor:
    """The operand as a 2-D block of its format's values (``e2m1``: f32, unpacked along
    ``pack_axis``; FP8 bits bitcast to the FP8 dtype)."""
    v = a[side]
    if not isinstance(v, Tensor) or v.is_pointer or v.type.rank != 2:
        shown = v.type if isinstance(v, Tensor) else describe(v)
        why = ", batched (3-D) dot_scaled is not supported by eggpu" if isinstance(v, Tensor) and v.type.rank == 3 else ""
        raise SemanticError(f"tl.dot_scaled needs 2-D blocks, got {shown} for {side}{why}", arg=side)
    value_dt, bits_dt = FORMATS[fmt]
    if not a[f"{side}_k_pack"] and fmt != "e2m1":
        raise SemanticError(f"tl.dot_scaled: {side}_k_pack=False applies to 'e2m1' operands only, got {fmt!r}",
                            arg=f"{side}_k_pack")
    if v.dtype != value_dt and v.dtype != bits_dt:
        want = f"{value_dt} or its bits as {bits_dt}" if value_dt is not None else "u8 (two values per byte)"
        raise SemanticError(f"tl.dot_scaled: a {fmt!r} operand must be {want}, got {v.type} for {side}", arg=side)
    if fmt != "e2m1":
        return s.cast(v, value_dt, bitcast=True)
    codes = join_tensors(s, s.binary("and", v, 0xF), s.binary("rshift", v, 4))  # [R, C, 2]: low nibble first
    R, C = v.shape
    if pack_axis == 0:
        codes = s.reshape(s.trans(codes, (0, 2, 1)), (2 * R, C))
    else:
        codes = s.reshape(codes, (R, 2 * C))
    return _e2m1_to_f32(s, s.cast(codes, u32))


def _e2m1_to_f32(s: Semantic, c: Tensor) -> Tensor:
    """FP4 (e2m1) codes (``u32``, 0..15) to their f32 values, exactly, by building the f32 bits:
    exponent field ``e + 126`` and the mantissa bit as f32's top mantissa bit for ``e > 0``;
    ``0.5`` or ``0`` for the subnormal ``e = 0``."""
    e = s.binary("and", s.binary("rshift", c, 1), 3)
    m = s.binary("and", c, 1)
    normal = s.binary("or", s.binary("lshift", s.binary("add", e, 126), 23), s.binary("lshift", m, 22))
    mag = s.where(s.binary("eq", e, 0), s.binary("mul", m, 0x3F000000), normal)
    sign = s.binary("lshift", s.binary("rshift", c, 3), 31)
    return s.cast(s.binary("or", mag, sign), f32, bitcast=True)


def _scale(s: Semantic, a: dict[str, Any], arg: str, rows: int, K: int) -> Tensor | None:
    """The f32 factors ``2**(scale - 127)`` of a ``[rows, K // 32]`` e8m0 scale block, repeated to
    ``[rows, K]`` (None without a scale)."""
    v = a[arg]
    if v is None:
        return None
    if not isinstance(v, Tensor) or v.is_pointer or v.dtype != u8:
        shown = v.type if isinstance(v, Tensor) else describe(v)
        raise SemanticError(f"tl.dot_scaled: {arg} must be None or a u8 block of e8m0 exponents, got {shown}",
                            "load the scales as tl.uint8", arg=arg)
    if K % GROUP or v.shape != (rows, K // GROUP):
        raise SemanticError(f"tl.dot_scaled: {arg} must have shape [{rows}, K/{GROUP}] for K={K}, got "
                            f"{fmt_shape(v.shape)}" + (f" (K must be a multiple of {GROUP})" if K % GROUP else ""),
                            arg=arg)
    e = s.cast(v, u32)
    bits = s.where(s.binary("eq", e, 0), 0x00400000,  # 2**-127: an f32 subnormal
                   s.where(s.binary("eq", e, 255), 0x7FC00000, s.binary("lshift", e, 23)))
    f = s.cast(s.cast(bits, u32), f32, bitcast=True)
    groups = K // GROUP
    f = s.broadcast_to(s.reshape(f, (rows, groups, 1)), (rows, groups, GROUP))
    return s.reshape(f, (rows, K))


def _dequantized(s: Semantic, v: Tensor, scale: Tensor | None, compute: DType, transpose_scale: bool = False) -> Tensor:
    """``v * scale`` in f32, rounded once to ``compute`` (``v`` alone when there is no scale)."""
    if scale is None:
        return s.cast(v, compute)
    if transpose_scale:
        scale = s.trans(scale, ())
    return s.cast(s.binary("mul", s.cast(v, f32), scale), compute)


IMPLS = {"dot_scaled": dot_scaled}
