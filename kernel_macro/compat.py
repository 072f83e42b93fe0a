"""Triton's keyword arguments and the Triton-only language functions, on top of :class:`Semantic`.

Each function here is an implementation ``impl(sem, args)`` of :data:`eggpu.kernel_macro.builtins.IMPLS`
(``args``: the call's arguments bound to the language function's signature). Rules:

* a Triton *hint* (``cache_modifier=``, ``eviction_policy=``, ``tl.multiple_of``, ``tl.range``'s
  ``num_stages=``, ...) is checked for a value Triton accepts and has no effect on the result;
* a keyword whose Triton meaning eggpu implements exactly (``sum(dtype=)``,
  ``max(return_indices=True)``, ``propagate_nan=ALL``) is lowered to existing IR;
* a keyword value eggpu cannot honour (``tie_break_left=False``, ``volatile=True``,
  ``fp_downcast_rounding="rtz"``, ...) is a :class:`SemanticError` naming it,
  which the frontend reports at the keyword with a caret.
"""

from __future__ import annotations

import math
from typing import Any

from eggpu.ir.dtypes import DType, bf16, f16, f32, i16, i32, i64, u32, u64
from eggpu.ir.facts import Facts
from eggpu.ir.graph import Operation
from eggpu.ir.op_types import asm_registers
from eggpu.ir.ops import transcendental_ops

from . import block_pointers
from . import language as tl
from .frontend_ops import Semantic, SemanticError, Tensor, describe, is_number
from .frontend_values import fmt_shape

_LOAD_CACHE = ("", ".ca", ".cg", ".cv")
_STORE_CACHE = ("", ".wb", ".cg", ".cs", ".wt")
_EVICTION = ("", "evict_normal", "evict_first", "evict_last")
_SEMS = (None, "relaxed", "acquire", "release", "acq_rel")  # None: "acq_rel", Triton's default
_SCOPES = (None, "gpu", "cta", "sys")  # None: "gpu", Triton's default
_PRECISIONS = (None, "ieee", "tf32", "tf32x3", "bf16x3", "bf16x6", "hf32")


def _choice(a: dict[str, Any], name: str, allowed: tuple, fn: str) -> None:
    v = a[name]
    if v not in allowed:
        shown = ", ".join(repr(x) for x in allowed)
        raise SemanticError(f"tl.{fn}: {name}={v!r} is not one of {shown}", arg=name)


def _shown(v: Any) -> str:
    """A value in a message: a block by its type, a compile-time value as Python writes it."""
    return describe(v) if isinstance(v, Tensor) else repr(v)


def _not_supported(a: dict[str, Any], name: str, ok: Any, fn: str, why: str, hint: str | None = None) -> None:
    v = a[name]
    if v != ok and not (ok == () and v is None):
        raise SemanticError(f"tl.{fn}({name}={v!r}) is not supported by eggpu: {why}", hint, arg=name)


# ---------------------------------------------------------------- memory


_BLOCK_PTR_ONLY = "boundary_check= and padding_option= apply to block pointers (tl.make_block_ptr)"


def load(s: Semantic, a: dict[str, Any]) -> Tensor:
    _choice(a, "cache_modifier", _LOAD_CACHE, "load")
    _choice(a, "eviction_policy", _EVICTION, "load")
    if not isinstance(a["volatile"], bool):
        raise SemanticError(f"tl.load: volatile must be a compile-time bool, got {_shown(a['volatile'])}",
                            arg="volatile")
    if isinstance(a["ptr"], block_pointers.BlockPointer):
        return block_pointers.load(s, a)
    _not_supported(a, "boundary_check", (), "load", _BLOCK_PTR_ONLY, "use mask= (e.g. mask=offs < n)")
    _not_supported(a, "padding_option", "", "load", _BLOCK_PTR_ONLY, "use mask= and other=")
    return s.load(a["ptr"], a["mask"], a["other"], a["volatile"])


def store(s: Semantic, a: dict[str, Any]) -> None:
    _choice(a, "cache_modifier", _STORE_CACHE, "store")
    _choice(a, "eviction_policy", _EVICTION, "store")
    if isinstance(a["ptr"], block_pointers.BlockPointer):
        return block_pointers.store(s, a)
    _not_supported(a, "boundary_check", (), "store", _BLOCK_PTR_ONLY, "use mask= (e.g. mask=offs < n)")
    return s.store(a["ptr"], a["value"], a["mask"])


def _atomic_hints(a: dict[str, Any], fn: str) -> dict[str, str]:
    """The IR attributes for ``sem=`` and ``scope=``. Triton's defaults (``"acq_rel"``, ``"gpu"``)
    are the IR's too, so they are left out: the same ordering gives the same IR text."""
    if a["sem"] not in _SEMS:
        raise SemanticError(f"tl.{fn}(sem={a['sem']!r}) is not a memory ordering",
                            f"pass one of {', '.join(repr(x) for x in _SEMS[1:])}", arg="sem")
    if a["scope"] not in _SCOPES:
        raise SemanticError(f"tl.{fn}(scope={a['scope']!r}) is not a memory scope",
                            f"pass one of {', '.join(repr(x) for x in _SCOPES[1:])}", arg="scope")
    out = {}
    if a["sem"] not in (None, "acq_rel"):
        out["sem"] = a["sem"]
    if a["scope"] not in (None, "gpu"):
        out["scope"] = a["scope"]
    return out


def atomic(kind: str):
    def impl(s: Semantic, a: dict[str, Any]) -> Tensor:
        return s.atomic(kind, a["ptr"], a["val"], a["mask"], **_atomic_hints(a, kind))

    return impl


def atomic_cas(s: Semantic, a: dict[str, Any]) -> Tensor:
    return s.atomic_cas(a["ptr"], a["cmp"], a["val"], **_atomic_hints(a, "atomic_cas"))


# ---------------------------------------------------------------- compute


def _propagate(a: dict[str, Any], fn: str) -> bool:
    v = a["propagate_nan"]
    if v not in (tl.PropagateNan.NONE, tl.PropagateNan.ALL):
        raise SemanticError(f"tl.{fn}: propagate_nan must be tl.PropagateNan.NONE or tl.PropagateNan.ALL, got "
                            f"{describe(v)}", arg="propagate_nan")
    return v == tl.PropagateNan.ALL


def _nan_propagating(s: Semantic, op: str, x: Any, y: Any) -> Any:
    """``op`` (minimum/maximum) that returns NaN when either operand is NaN (Triton's
    ``PropagateNan.ALL``): ``where(isnan(x) | isnan(y), x + y, op(x, y))``."""
    r = s.binary(op, x, y)
    if not isinstance(r, Tensor) or not r.dtype.is_float:
        return r
    x, y = s.convert(x, r.dtype), s.convert(y, r.dtype)
    nan = s.binary("or", s.binary("ne", x, x), s.binary("ne", y, y))
    return s.where(nan, s.binary("add", x, y), r)


def minmax(op: str):
    def impl(s: Semantic, a: dict[str, Any]) -> Any:
        if _propagate(a, op):
            return _nan_propagating(s, op, a["x"], a["y"])
        return s.binary(op, a["x"], a["y"])

    return impl


def clamp(s: Semantic, a: dict[str, Any]) -> Any:
    if _propagate(a, "clamp"):
        return _nan_propagating(s, "minimum", _nan_propagating(s, "maximum", a["x"], a["min"]), a["max"])
    return s.binary("minimum", s.binary("maximum", a["x"], a["min"]), a["max"])


def cast(s: Semantic, a: dict[str, Any]) -> Tensor:
    if not isinstance(a["bitcast"], bool):
        raise SemanticError(f"bitcast must be a compile-time bool, got {describe(a['bitcast'])}", arg="bitcast")
    return converted(s, a["input"], a["dtype"], a["fp_downcast_rounding"], a["bitcast"], "tl.cast")


def converted(s: Semantic, x: Any, dt: Any, rounding: Any, bitcast: bool, fn: str) -> Tensor:
    """``x.to(dt, fp_downcast_rounding=rounding, bitcast=bitcast)`` (``fn`` names the call in messages).

    ``rounding`` is Triton's: None or ``"rtne"`` (round to nearest even, every conversion's
    default) or ``"rtz"`` (round toward zero), and only on a float -> narrower float conversion
    (Triton raises otherwise; a conversion to the same dtype is the value itself, also as Triton).
    """
    if rounding not in (None, "rtne", "rtz"):
        raise SemanticError(f"{fn}(fp_downcast_rounding={rounding!r}) is not one of None, 'rtne', 'rtz'",
                            arg="fp_downcast_rounding")
    if rounding is None or bitcast or not isinstance(dt, DType):
        if rounding is not None and bitcast:
            raise SemanticError(f"{fn}: fp_downcast_rounding= does not apply to a bitcast",
                                "drop fp_downcast_rounding= or bitcast=True", arg="fp_downcast_rounding")
        return s.cast(x, dt, bitcast)
    x = s.to_tensor(x)
    src = x.dtype
    if src == dt:
        return x
    if x.is_pointer or not (src.is_float and dt.is_float and dt.bits < src.bits) or src.is_fp8 or dt.is_fp8:
        raise SemanticError(f"{fn}(fp_downcast_rounding={rounding!r}) applies only to a float -> narrower float "
                            f"conversion, not {x.type if x.is_pointer else src} -> {dt}",
                            "drop fp_downcast_rounding= (FP8 conversions round to nearest even)"
                            if src.is_fp8 or dt.is_fp8 else "drop fp_downcast_rounding=",
                            arg="fp_downcast_rounding")
    if rounding == "rtne":
        return s.cast(x, dt)
    return _toward_zero(s, x, dt)


def _toward_zero(s: Semantic, x: Tensor, dt: DType) -> Tensor:
    """``x`` converted to the narrower float ``dt`` rounding toward zero, from existing ops.

    Round to nearest even picks one of the two ``dt`` values around ``x``; when it picked the one
    of larger magnitude (its exact widening back exceeds ``|x|``), the result toward zero is the
    next value toward zero, whose bits are one less (magnitude bits are ordered, whatever the sign).
    That also maps an overflow (nearest: inf) to the largest finite value, keeps inf, zeros and
    subnormals right, and leaves NaN as the nearest conversion makes it (a NaN compares false).
    Every op here is exact, so the result is bit-exact in the interpreter, run_cpu and PTX."""
    nearest = s.cast(x, dt)
    back = s.cast(nearest, x.dtype)
    away = s.binary("gt", s.abs(back), s.abs(x))
    bits = s.cast(nearest, {16: i16, 32: i32, 64: i64}[dt.bits], bitcast=True)
    stepped = s.cast(s.binary("sub", bits, 1), dt, bitcast=True)
    return s.where(away, stepped, nearest)


def _floats(s: Semantic, fn: str, x: Any, y: Any) -> tuple[Any, Any]:
    for v, n in ((x, "x"), (y, "y")):
        if isinstance(v, Tensor) and (v.is_pointer or not v.dtype.is_float) or not (isinstance(v, Tensor) or is_number(v)):
            shown = v.type if isinstance(v, Tensor) else describe(v)
            raise SemanticError(f"tl.{fn} needs float operands, got {shown} for {n}",
                                f"convert first: tl.{fn}(x.to(tl.f32), y.to(tl.f32))", arg=n)
    return x, y


def div_rn(s: Semantic, a: dict[str, Any]) -> Tensor:
    x, y = _floats(s, "div_rn", a["x"], a["y"])
    return s.binary("truediv", x, y)


def fdiv(s: Semantic, a: dict[str, Any]) -> Tensor:
    if not isinstance(a["ieee_rounding"], bool):
        raise SemanticError(f"ieee_rounding must be a compile-time bool, got {describe(a['ieee_rounding'])}",
                            arg="ieee_rounding")
    x, y = _floats(s, "fdiv", a["x"], a["y"])
    return s.binary("truediv", x, y)


def arith(name: str, op: str):
    """Triton's functional ``tl.add``/``tl.sub``/``tl.mul(x, y, sanitize_overflow=True)``: ``x + y``
    (``-``, ``*``) with the operators' meaning, pointers included. ``sanitize_overflow`` only
    matters to Triton under ``debug=True`` (an overflow assertion); eggpu's integers wrap."""

    def impl(s: Semantic, a: dict[str, Any]) -> Any:
        if not isinstance(a["sanitize_overflow"], bool):
            raise SemanticError(f"tl.{name}: sanitize_overflow must be a compile-time bool, got "
                                f"{describe(a['sanitize_overflow'])}", arg="sanitize_overflow")
        return s.binary(op, a["x"], a["y"])

    return impl


def _float_binary(name: str, build: Any = None):
    """libdevice's binary ``name(x, y)`` (the op table's binary TRANSCENDENTAL ops), operands in
    Triton's order, e.g. ``atan2(x, y)``: C's ``atan2`` with ``x`` the ordinate. Float operands,
    promoted and broadcast as ``+`` (a literal takes the block's dtype); ``build(s, x, y)`` makes
    the result of a function that is not one op of that name (fmod, copysign, fdim)."""

    def impl(s: Semantic, a: dict[str, Any]) -> Tensor:
        x, y = _floats(s, name, a["x"], a["y"])
        if not isinstance(x, Tensor) and not isinstance(y, Tensor):
            x = s.const(float(x), f32)
        dt = s.common_dtype(x, y)
        tx, ty = s.broadcast_pair(*(s._operand(float(v) if is_number(v) else v, dt) for v in (x, y)))
        if build is not None:
            return build(s, tx, ty)
        return Tensor(s.b.op(name, tx.value, ty.value))

    return impl


def _copysign(s: Semantic, x: Tensor, y: Tensor) -> Tensor:
    """``|x|`` with ``y``'s sign bit: abs and neg only touch the sign bit, NaNs included."""
    negative = s.binary("lt", s.cast(y, _SIGNED_OF_WIDTH[y.dtype.bits], bitcast=True), 0)
    ax = s.b.op("abs", x.value)
    return Tensor(s.b.op("where", negative.value, s.b.op("neg", ax), ax))


def _fdim(s: Semantic, x: Tensor, y: Tensor) -> Tensor:
    """``x > y ? x - y : x <= y ? +0 : x + y`` (the last: a NaN operand, giving NaN)."""
    a, b = x.value, y.value
    zero = s.splat(s.const(0.0, x.dtype), x.shape).value
    rest = s.b.op("where", s.b.op("le", a, b), zero, s.b.op("add", a, b))
    return Tensor(s.b.op("where", s.b.op("gt", a, b), s.b.op("sub", a, b), rest))


def inline_asm_elementwise(s: Semantic, a: dict[str, Any]) -> Tensor:
    """``tl.inline_asm_elementwise``: one ``inline_asm`` op over the broadcast arguments (one result
    per dtype, a tuple when there are several). With ``pack=k`` each asm call takes ``k`` elements
    of every argument and result, elements narrower than 32 bits packed into 32-bit registers as
    Triton packs them (:func:`eggpu.ir.op_types.asm_registers`). GPU only; the interpreter and
    run_cpu refuse it (see the op table)."""
    fn = "tl.inline_asm_elementwise"
    for name in ("asm", "constraints"):
        if not isinstance(a[name], str):
            raise SemanticError(f"{fn}: {name} must be a string, got {describe(a[name])}", arg=name)
    dtype = a["dtype"]
    dts = tuple(dtype) if isinstance(dtype, tuple | list) else (dtype,)
    if not dts or not all(isinstance(d, DType) for d in dts):
        raise SemanticError(f"{fn}: dtype must be a dtype such as tl.int32 or a tuple of them, got {describe(dtype)}",
                            arg="dtype")
    pack = a["pack"]
    if not isinstance(pack, int) or isinstance(pack, bool) or pack < 1:
        raise SemanticError(f"{fn}: pack must be a positive compile-time int, got {describe(pack)}", arg="pack")
    if pack > 1 and any(d.is_bool for d in dts):
        raise SemanticError(f"{fn}(pack={pack}): a bool result cannot be packed into registers",
                            "return tl.int8 and compare with 0, or pass pack=1", arg="dtype")
    args = a["args"]
    args = list(args) if isinstance(args, tuple | list) else [args]
    if not args:
        raise SemanticError(f"{fn} needs at least one argument in args", arg="args")
    ts = [s.to_tensor(v) for v in args]
    shape: tuple[int, ...] = ()
    for t in ts:
        shape = s.broadcast_shapes(shape, t.shape)
    if pack > 1 and any(t.dtype.is_bool for t in ts):
        raise SemanticError(f"{fn}(pack={pack}): a bool argument cannot be packed into registers",
                            "pass it as tl.int8 (x.to(tl.int8)), or pass pack=1", arg="args")
    outputs = [c for c in a["constraints"].split(",") if c.strip().startswith("=")]
    inputs = [c for c in a["constraints"].split(",") if c.strip() and not c.strip().startswith(("=", "~"))]
    want_out = sum(asm_registers(d, pack) for d in dts)
    want_in = sum(asm_registers(None if t.is_pointer else t.dtype, pack) for t in ts)
    if len(outputs) != want_out or len(inputs) != want_in:
        counts = (f"{want_out} output(s) (one per dtype) and {want_in} input(s) (one per argument)" if pack == 1 else
                  f"{want_out} output(s) and {want_in} input(s) ({pack} elements of each, packed into 32-bit "
                  f"registers)")
        raise SemanticError(f"{fn}: constraints {a['constraints']!r} must name {counts}, got {len(outputs)} and "
                            f"{len(inputs)}", arg="constraints")
    ops = [s.broadcast_to(t, shape).value for t in ts]
    attrs = {"asm": a["asm"], "constraints": a["constraints"], "dtype": dts if len(dts) > 1 else dts[0],
             "pure": bool(a["is_pure"])}
    if pack > 1:
        attrs["pack"] = pack
    op = s.b.create("inline_asm", ops, attrs)
    results = tuple(Tensor(r) for r in op.results)
    return results if len(results) > 1 else results[0]


def _classify(name: str):
    """libdevice's float classification ``name(x)`` from exact comparisons: ``isnan`` is ``x != x``
    (unordered), ``isinf`` is ``|x| == inf``, ``finitef``/``isfinited`` are ``|x| < inf`` (ordered:
    false on NaN), each a bool block as Triton's (int1); ``signbit`` is the sign bit of the bits
    (-0.0 and negative NaNs give 1), an i32 block as Triton's."""

    def impl(s: Semantic, a: dict[str, Any]) -> Tensor:
        x = a["x"]
        t = s.const(float(x), f32) if is_number(x) else x
        if not isinstance(t, Tensor) or t.is_pointer or not t.dtype.is_float:
            shown = t.type if isinstance(t, Tensor) else describe(t)
            raise SemanticError(f"libdevice.{name} needs a float operand, got {shown}",
                                f"convert first: libdevice.{name}(x.to(tl.f32))", arg="x")
        if name == "isnan":
            return Tensor(s.b.op("ne", t.value, t.value))
        if name == "signbit":
            bits = s.cast(t, _SIGNED_OF_WIDTH[t.dtype.bits], bitcast=True)
            return s.cast(s.binary("lt", bits, 0), i32)
        inf = s.splat(s.const(math.inf, t.dtype), t.shape).value
        return Tensor(s.b.op("eq" if name == "isinf" else "lt", s.b.op("abs", t.value), inf))

    return impl


_SIGNED_OF_WIDTH = {16: i16, 32: i32, 64: i64}


def _int_operand(name: str, x: Any) -> Tensor:
    if not isinstance(x, Tensor) or x.is_pointer or not x.dtype.is_int:
        shown = x.type if isinstance(x, Tensor) else describe(x)
        raise SemanticError(f"libdevice.{name} needs an integer block operand, got {shown}",
                            f"convert first: libdevice.{name}(x.to(tl.int32))", arg="x")
    return x


def _bit_count(name: str):
    """libdevice's ``popc``/``clz``/``ffs`` (i32 results, as Triton's) and ``brev`` (x's dtype)."""

    def impl(s: Semantic, a: dict[str, Any]) -> Tensor:
        r = Tensor(s.b.op(name, _int_operand(name, a["x"]).value))
        return r if name == "brev" or r.dtype == i32 else s.cast(r, i32)

    return impl


def mulhi(s: Semantic, a: dict[str, Any]) -> Tensor:
    x, y = a["x"], a["y"]
    if not isinstance(x, Tensor) and not isinstance(y, Tensor):
        x = s.to_tensor(x)
    dt = s.common_dtype(x, y)
    if not dt.is_int:
        raise SemanticError(f"libdevice.mulhi needs integer operands, got {dt}",
                            "convert the operands to an integer dtype first")
    tx, ty = s.broadcast_pair(s.convert(x, dt), s.convert(y, dt))
    return Tensor(s.b.op("mulhi", tx.value, ty.value))


def umulhi(s: Semantic, a: dict[str, Any]) -> Tensor:
    x, y = a["x"], a["y"]
    if not isinstance(x, Tensor) and not isinstance(y, Tensor):
        x = s.to_tensor(x)
    dt = s.common_dtype(x, y)
    if dt not in (i32, u32):
        hint = ("the 128-bit product of 64-bit integers is not available" if dt.bits == 64
                else "convert the operands to tl.int32 or tl.uint32 first")
        raise SemanticError(f"tl.umulhi needs 32-bit integer operands, got {dt}", hint)
    # Triton's umulhi is unsigned for both (MulhiUIOp, __nv_umulhi): the high word of the product
    # of the operands' 32-bit patterns read as unsigned, returned in the operands' dtype.
    words = [s.cast(s.convert(v, dt), u32, bitcast=True) if dt != u32 else s.convert(v, dt) for v in (x, y)]
    words = list(s.broadcast_pair(*words))
    hi = s.cast(s.binary("rshift", s.binary("mul", s.cast(words[0], u64), s.cast(words[1], u64)), 32), u32)
    return hi if dt == u32 else s.cast(hi, dt, bitcast=True)


# ---------------------------------------------------------------- shapes


def _shape(shape: tuple[Any, ...]) -> Any:
    """``reshape(x, (M, N))`` and ``reshape(x, M, N)`` both mean the shape (M, N)."""
    if len(shape) == 1 and isinstance(shape[0], tuple | list):
        return tuple(shape[0])
    return tuple(shape)


def reshape(s: Semantic, a: dict[str, Any]) -> Tensor:
    if not isinstance(a["can_reorder"], bool):
        raise SemanticError(f"can_reorder must be a compile-time bool, got {describe(a['can_reorder'])}",
                            arg="can_reorder")
    return s.reshape(a["input"], _shape(a["shape"]))


def view(s: Semantic, a: dict[str, Any]) -> Tensor:
    return s.reshape(a["input"], _shape(a["shape"]))


def ravel(s: Semantic, a: dict[str, Any]) -> Tensor:
    x = s.to_tensor(a["input"])
    return s.reshape(x, (x.type.numel,)) if x.shape else x


def broadcast_to(s: Semantic, a: dict[str, Any]) -> Tensor:
    return s.broadcast_to(s.to_tensor(a["input"]), s.shape_arg(_shape(a["shape"])))


def permute(s: Semantic, a: dict[str, Any]) -> Tensor:
    dims = _shape(a["dims"])
    if not dims:
        raise SemanticError("tl.permute needs the new order of the axes, e.g. tl.permute(x, 1, 0)",
                            "tl.trans(x) reverses the axes")
    return s.trans(a["input"], dims)


# ---------------------------------------------------------------- reductions


def sum_(s: Semantic, a: dict[str, Any]) -> Tensor:
    dt = a["dtype"]
    if dt is None:
        return s.reduce("reduce_sum", a["input"], a["axis"], a["keep_dims"])
    if not isinstance(dt, DType):
        raise SemanticError(f"tl.sum: dtype must be a dtype such as tl.float32, got {describe(dt)}", arg="dtype")
    x = a["input"]
    if isinstance(x, Tensor) and not x.is_pointer:
        x = s.cast(x, dt)
    return s.reduce("reduce_sum", x, a["axis"], a["keep_dims"], widen=False)


def reduce_with_indices(name: str):
    kind, arg_kind = f"reduce_{name}", f"reduce_arg{name}"

    def impl(s: Semantic, a: dict[str, Any]) -> Any:
        ri, left = a["return_indices"], a["return_indices_tie_break_left"]
        if not isinstance(ri, bool):
            raise SemanticError(f"return_indices must be a compile-time bool, got {describe(ri)}", arg="return_indices")
        values = s.reduce(kind, a["input"], a["axis"], a["keep_dims"], widen=not ri)
        if not ri:
            return values
        _tie_break(left, "return_indices_tie_break_left")
        return values, s.reduce(arg_kind, a["input"], a["axis"], a["keep_dims"])

    return impl


def _tie_break(v: Any, arg: str) -> None:
    """Triton's ``tie_break_left`` (a compile-time bool). True: the first of tied extrema.
    False ("tie_break_fast" in Triton): any of them, whichever Triton's reduction tree keeps — so
    the first is a valid answer, and eggpu gives it for both values."""
    if not isinstance(v, bool):
        raise SemanticError(f"{arg} must be a compile-time bool, got {_shown(v)}", arg=arg)


def arg_reduce(name: str):
    def impl(s: Semantic, a: dict[str, Any]) -> Tensor:
        _tie_break(a["tie_break_left"], "tie_break_left")
        return s.reduce(f"reduce_{name}", a["input"], a["axis"], a["keep_dims"])

    return impl


def softmax(s: Semantic, a: dict[str, Any]) -> Tensor:
    x = a["input"]
    if not isinstance(x, Tensor) or not x.is_block or x.is_pointer or not x.dtype.is_float:
        shown = x.type if isinstance(x, Tensor) else describe(x)
        raise SemanticError(f"tl.softmax needs a float block, got {shown}", arg="input")
    dim = 0 if a["dim"] is None else a["dim"]
    z = s.binary("sub", x, s.reduce("reduce_max", x, dim, True))
    num = s.float_unary("exp", z)
    return s.binary("truediv", num, s.reduce("reduce_sum", num, dim, True))


def _dot_precision(a: dict[str, Any]) -> str:
    """The IR ``precision`` of a ``tl.dot``: ``input_precision`` wins; else ``allow_tf32=True`` is
    ``"tf32"`` (Triton's older spelling); else ``"ieee"`` (eggpu's default, exact f32; Triton's
    default for f32 is TF32); ``"tf32x3"`` is three TF32 dots (:func:`_tf32x3_dot`). The bf16
    emulations (``bf16x3``, ``bf16x6``) and ``hf32`` are not supported."""
    p = a["input_precision"]
    if p is None:
        return "tf32" if a["allow_tf32"] is True else "ieee"
    if p not in ("ieee", "tf32", "tf32x3"):
        raise SemanticError(f"tl.dot(input_precision={p!r}) is not supported by eggpu: only 'ieee' (exact f32, "
                            "the default), 'tf32' (tensor cores on sm_80+) and 'tf32x3'", "use input_precision='ieee' "
                            "for full f32 accuracy", arg="input_precision")
    return p


def _tf32_split(s: Semantic, x: Tensor) -> tuple[Tensor, Tensor]:
    """``(big, small)``: ``big`` is the f32 block ``x`` rounded to TF32 as ``cvt.rna.tf32.f32``
    does (nearest, ties away from zero: half an ulp of the 13 dropped bits added to the magnitude,
    then those bits cleared), ``small = x - big`` (exact)."""
    bits = s.cast(x, u32, bitcast=True)
    big = s.cast(s.binary("and", s.binary("add", bits, 0x1000), 0xFFFFE000), f32, bitcast=True)
    return big, s.binary("sub", x, big)


def _tf32x3_dot(s: Semantic, x: Tensor, y: Tensor, acc: Any) -> Tensor:
    """Triton's ``input_precision="tf32x3"`` on f32 operands (its F32DotTC rewrite): each operand
    split by :func:`_tf32_split`, then ``small x big + big x small`` and ``big x big`` as TF32
    dots (tensor cores on sm_80+) accumulated in f32, then ``acc``: about f32 accuracy, not
    Triton's bits (its accumulation order inside the tensor cores differs)."""
    xb, xs = _tf32_split(s, x)
    yb, ys = _tf32_split(s, y)
    r = s.dot(xs, yb, None, precision="tf32")
    r = s.dot(xb, ys, r, precision="tf32")
    r = s.dot(xb, yb, r, precision="tf32")
    return r if acc is None else s.binary("add", r, acc)


def dot(s: Semantic, a: dict[str, Any]) -> Tensor:
    """``tl.dot`` with Triton's keywords. ``out_dtype`` follows Triton's rule: integer inputs give
    i32 and f32/bf16 inputs give f32 whatever it says (``out_dtype`` f32 or i32 for ints, f32 or
    f16 for floats); f16 (and FP8) inputs with ``out_dtype=f16`` give f16 — eggpu accumulates in f32 and
    rounds once to f16 (Triton accumulates in f16 on tensor cores, rounding after every product);
    ``acc`` must then be f16. ``out_dtype=bf16`` is refused, as in Triton."""
    _choice(a, "input_precision", _PRECISIONS, "dot")
    if a["allow_tf32"] not in (None, True, False):
        raise SemanticError(f"allow_tf32 must be a compile-time bool, got {describe(a['allow_tf32'])}", arg="allow_tf32")
    out = a["out_dtype"]
    x, y, acc = a["a"], a["b"], a["acc"]
    fp8 = all(isinstance(v, Tensor) and v.dtype.is_fp8 for v in (x, y))
    if fp8:
        _imprecise_acc(a["max_num_imprecise_acc"], x)
    else:
        _not_supported(a, "max_num_imprecise_acc", None, "dot", "it only applies to FP8 products")
    ints = isinstance(x, Tensor) and not (x.dtype.is_float or x.dtype.is_fp8)
    ok = (f32, i32) if ints else (f32, f16)
    if out not in ok:
        why = ("products accumulate in i32" if ints else
               "a bf16 result is not available (as in Triton)" if out == bf16 else "float products accumulate in f32")
        raise SemanticError(f"tl.dot(out_dtype={out}) is not supported by eggpu: {why}",
                            f"use out_dtype=tl.float32 and convert the result: tl.dot(a, b).to(tl.{out})"
                            if isinstance(out, DType) else None, arg="out_dtype")
    half = out == f16 and (fp8 or all(isinstance(v, Tensor) and v.dtype == f16 for v in (x, y)))
    if half and acc is not None and not (isinstance(acc, Tensor) and acc.dtype == f16):
        shown = acc.type if isinstance(acc, Tensor) else describe(acc)
        raise SemanticError(f"tl.dot(out_dtype=f16): acc must be an f16 block, got {shown}",
                            "pass an f16 accumulator (tl.zeros(..., dtype=tl.float16)) or drop out_dtype=", arg="acc")
    if isinstance(x, Tensor) and isinstance(y, Tensor) and x.type.rank == 3:
        r = _batched_dot(s, x, y, acc)
    else:
        p = _dot_precision(a)
        if p == "tf32x3" and all(isinstance(v, Tensor) and not v.is_pointer and v.dtype == f32 for v in (x, y)):
            r = _tf32x3_dot(s, x, y, acc)
        else:  # input_precision has no effect on other dtypes
            r = s.dot(x, y, acc, precision="ieee" if p == "tf32x3" else p)
    return s.cast(r, f16) if half and acc is None else r


def _imprecise_acc(v: Any, x: Tensor) -> None:
    """Triton's ``max_num_imprecise_acc`` of an FP8 dot (how many products Hopper's tensor cores may
    add in reduced precision before promoting to f32): an int in ``[0, K]`` or None. eggpu adds
    every product in f32, which every such value allows, so it is checked and has no effect."""
    k = x.shape[-1] if x.type.rank >= 2 else 0
    if v is None:
        return
    if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v <= k:
        raise SemanticError(f"tl.dot: max_num_imprecise_acc must be a compile-time int in [0, K={k}], got "
                            f"{describe(v)}", arg="max_num_imprecise_acc")


def _batched_dot(s: Semantic, x: Tensor, y: Tensor, acc: Any) -> Tensor:
    """Triton's 3-D ``tl.dot``, ``[B, M, K] x [B, K, N]``: a broadcast product summed over K, in f32
    for floats and i32 for integers as the 2-D dot accumulates (no tensor cores: the IR's ``dot``
    is 2-D); ``acc`` is added after."""
    if y.type.rank != 3 or x.shape[0] != y.shape[0] or x.shape[2] != y.shape[1]:
        raise SemanticError(f"tl.dot needs [B, M, K] x [B, K, N] blocks, got {fmt_shape(x.shape)} and "
                            f"{fmt_shape(y.shape)}", arg="b")
    if x.is_pointer or y.is_pointer or x.dtype.is_bool or y.dtype.is_bool:
        raise SemanticError(f"tl.dot needs numeric blocks, got {x.type} and {y.type}", "convert with .to(tl.i32)")
    out = f32 if any(v.dtype.is_float or v.dtype.is_fp8 for v in (x, y)) else i32  # FP8 -> f32: exact
    prod = s.binary("mul", s.expand_dims(s.cast(x, out), 3), s.expand_dims(s.cast(y, out), 1))  # [B, M, K, N]
    r = s.reduce("reduce_sum", prod, 2, False)
    return r if acc is None else s.binary("add", r, acc)


# ---------------------------------------------------------------- hints


def _hint_values(v: Any, fn: str) -> None:
    vals = v if isinstance(v, tuple) else (v,)
    if not vals or not all(isinstance(x, int) and not isinstance(x, bool) and x > 0 for x in vals):
        raise SemanticError(f"tl.{fn}: values must be positive compile-time ints (or a tuple of them), got "
                            f"{describe(v)}", arg="values")


def _param(s: Semantic, v: Any) -> Any:
    """The kernel parameter ``v`` is (an IR Value), or None."""
    for p in s.b.function.params:
        if p is v:
            return p
    return None


def _add_fact(s: Semantic, param: Any, fact: str) -> None:
    """Record a launch-time fact the kernel states about one of its parameters (checked at every
    launch, see :mod:`eggpu.ir.facts`)."""
    fn = s.b.function
    fn.facts = fn.facts.merged(Facts.make({param.name: [fact]}))


def hint(fn: str):
    """``tl.multiple_of(x, K)`` on a kernel parameter is the fact ``divK`` (integers) or
    ``alignK`` (pointers, bytes), checked at every launch; on any other value, and
    ``max_contiguous``/``max_constancy`` everywhere, a hint with no effect (the address analysis
    proves contiguity itself, and a fact about a computed value could not be checked at launch)."""

    def impl(s: Semantic, a: dict[str, Any]) -> Any:
        _hint_values(a["values"], fn)
        x = a["input"]
        if not isinstance(x, Tensor):
            raise SemanticError(f"tl.{fn} needs a block or scalar value, got {describe(x)}", arg="input")
        k = a["values"][0] if isinstance(a["values"], tuple) else a["values"]
        p = _param(s, x.value)
        if fn == "multiple_of" and p is not None and k >= 2 and x.type.is_scalar:
            if x.is_pointer:
                _add_fact(s, p, f"align{k}")
            elif x.dtype.is_int:
                _add_fact(s, p, f"div{k}")
        return x

    return impl


def _assumed_fact(s: Semantic, c: Any) -> tuple[Any, str] | None:
    """(parameter, fact) for ``tl.assume(p % K == 0)`` and ``tl.assume(p == 1)`` on an integer
    parameter ``p`` and a constant ``K >= 2``; None for any other condition."""
    op = c.owner
    if not isinstance(op, Operation) or op.op != "eq":
        return None
    lhs, rhs = op.operands

    def const(v: Any) -> int | None:
        o = v.owner
        return o.attrs["value"] if isinstance(o, Operation) and o.op == "const" else None

    p = _param(s, lhs)
    if p is not None and p.type.dtype.is_int and const(rhs) == 1:
        return p, "eq1"
    r = lhs.owner
    if const(rhs) == 0 and isinstance(r, Operation) and r.op == "rem":
        p, k = _param(s, r.operands[0]), const(r.operands[1])
        if p is not None and p.type.dtype.is_int and isinstance(k, int) and k >= 2:
            return p, f"div{k}"
    return None


def assume(s: Semantic, a: dict[str, Any]) -> None:
    """``tl.assume(cond)``: ``p % K == 0`` and ``p == 1`` on an integer parameter become launch
    facts (``divK``, ``eq1``), checked at every launch; any other condition is accepted and not
    used (eggpu assumes nothing it cannot check)."""
    c = a["cond"]
    if isinstance(c, Tensor):
        if c.is_pointer:
            raise SemanticError(f"tl.assume needs a condition, got {c.type}", arg="cond")
        if c.type.is_scalar:
            found = _assumed_fact(s, c.value)
            if found is not None:
                _add_fact(s, *found)
        return None
    if c is False:
        raise SemanticError("tl.assume(False): the assumed condition is false at compile time", arg="cond")
    if not isinstance(c, bool):
        raise SemanticError(f"tl.assume needs a condition, got {describe(c)}", arg="cond")
    return None


def static_print(s: Semantic, a: dict[str, Any]) -> None:
    def text(v: Any) -> str:
        return str(v.type) if isinstance(v, Tensor) else str(v)

    print(*(text(v) for v in a["values"]), sep=a["sep"], end=a["end"])
    return None


IMPLS: dict[str, Any] = {
    "load": load, "store": store,
    "atomic_add": atomic("atomic_add"), "atomic_max": atomic("atomic_max"), "atomic_min": atomic("atomic_min"),
    "atomic_xchg": atomic("atomic_xchg"), "atomic_cas": atomic_cas, "atomic_and": atomic("atomic_and"),
    "atomic_or": atomic("atomic_or"), "atomic_xor": atomic("atomic_xor"),
    "minimum": minmax("minimum"), "maximum": minmax("maximum"), "clamp": clamp, "cast": cast,
    "add": arith("add", "add"), "sub": arith("sub", "sub"), "mul": arith("mul", "mul"),
    "div_rn": div_rn, "fdiv": fdiv, "umulhi": umulhi, "inline_asm_elementwise": inline_asm_elementwise,
    **{name: _float_binary(name) for name in transcendental_ops(2)},
    "sqrt_rn": lambda s, a: s.float_unary("sqrt", a["x"], "sqrt_rn"),
    "nearbyint": lambda s, a: s.float_unary("rint", a["x"], "libdevice.nearbyint"),  # tl has no nearbyint
    "fmod": _float_binary("fmod", lambda s, x, y: Tensor(s.b.op("rem", x.value, y.value))),
    "copysign": _float_binary("copysign", _copysign), "fdim": _float_binary("fdim", _fdim),
    **{name: _bit_count(name) for name in ("popc", "clz", "ffs", "brev")}, "mulhi": mulhi,
    **{name: _classify(name) for name in ("isnan", "isinf", "finitef", "isfinited", "signbit")},
    "reshape": reshape, "view": view, "ravel": ravel, "broadcast_to": broadcast_to, "permute": permute,
    "sum": sum_, "max": reduce_with_indices("max"), "min": reduce_with_indices("min"),
    "argmax": arg_reduce("argmax"), "argmin": arg_reduce("argmin"), "softmax": softmax, "dot": dot,
    "multiple_of": hint("multiple_of"), "max_contiguous": hint("max_contiguous"),
    "max_constancy": hint("max_constancy"), "assume": assume, "debug_barrier": lambda s, a: None,
    "static_print": static_print,
}
